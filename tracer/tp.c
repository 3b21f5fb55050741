/*
 * libncclguard-tp.so: the `ncclguard` LTTng-UST provider and the table of
 * functions the shim calls through (tp_api.h).  The tracepoint definitions
 * and the probes live together here, so the library needs nothing from its
 * loader but a dlopen: liblttng-ust's constructor registers the process
 * with the session daemon (waiting up to LTTNG_UST_REGISTER_TIMEOUT for the
 * session's channels), then our constructor registers the probes, which
 * attaches them to any session already recording (lttng_ust_probe_register
 * fixes up pending enablers), so a provider opened mid-run records from its
 * first event.  Never dlclose this library (linked -z nodelete): LTTng-UST
 * does not support unloading a provider.  Only `ncclguard_tp_ops` is
 * exported (tp.map).
 *
 * The shim's times are CLOCK_MONOTONIC, LTTng's own clock.  A site may
 * replace LTTng's clock with a plugin (LTTNG_UST_CLOCK_PLUGIN: a PTP or
 * hardware clock): events are then stamped with the plugin's clock, and
 * the times they carry are moved onto it here (clock_shift()), so that
 * the analyzer maps both with the trace's one clock offset.
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "ncclguard_tp.h"
#include "job.h"

#include <lttng/ust-clock.h>
#include <stdlib.h>
#include <time.h>

/* The `job` field of every event.  A fork keeps it, as it keeps its job. */
uint64_t ncclguard_tp_job;

/* Before any event: a loader other than the shim (a test, a benchmark)
 * then records its environment's job as the shim would. */
__attribute__((constructor))
static void job_from_env(void)
{
	__atomic_store_n(&ncclguard_tp_job, ng_job_tag(ng_job_id_env()), __ATOMIC_RELAXED);
}

/* LTTng's clock where a plugin replaces it; NULL: CLOCK_MONOTONIC. */
static lttng_ust_clock_read64_function trace_clock;
static uint64_t trace_clock_hz;

/* liblttng-ust's constructor, which loads the plugin, has run: it is a
 * dependency of this library. */
__attribute__((constructor))
static void clock_from_env(void)
{
	const char *plugin = getenv("LTTNG_UST_CLOCK_PLUGIN");
	lttng_ust_clock_read64_function read64;
	lttng_ust_clock_freq_function freq;

	if (!plugin || !*plugin || lttng_ust_trace_clock_get_read64_cb(&read64) ||
	    lttng_ust_trace_clock_get_freq_cb(&freq))
		return;
	trace_clock_hz = freq();
	if (trace_clock_hz)
		trace_clock = read64;
}

/* LTTng's clock minus CLOCK_MONOTONIC now, in ns.  Taken per event, not
 * once: a plugin's clock may be steered (PTP) while monotonic is not. */
static int64_t clock_shift(void)
{
	uint64_t c = trace_clock(), ns;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns = trace_clock_hz == 1000000000ULL ? c :
		(uint64_t)((long double)c * 1e9L / (long double)trace_clock_hz);
	return (int64_t)ns - ((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

/* A time on LTTng's clock; 0 stays "not measured". */
static uint64_t shifted(uint64_t t, int64_t d)
{
	return t ? (uint64_t)((int64_t)t + d) : 0;
}

static void op_set_job(uint64_t tag)
{
	__atomic_store_n(&ncclguard_tp_job, tag, __ATOMIC_RELAXED);
}

/* Per event: op_<event>, which records it.  The times of an event
 * (events.def's time() fields, CLOCK_MONOTONIC) are moved onto a clock
 * plugin's clock first, into a copy; ntimes_<layout> counts them, so
 * that an event without stays a bare tracepoint call.  NG_TP_TIME and
 * NG_TP_OTHER say what to make of a field of either sort, per pass. */
#define NG_TP_DEC_raw(m) NG_TP_OTHER
#define NG_TP_DEC_flag(m) NG_TP_OTHER
#define NG_TP_DEC_text(m) NG_TP_OTHER
#define NG_TP_DEC_time(m) NG_TP_TIME
#define NG_TP_DEC_in(rg, m) NG_TP_OTHER
#define NG_TP_DEC_keep(rg, m) NG_TP_OTHER
#define NG_TP_DEC_skip NG_TP_OTHER
#define NG_EV_F(kind, ctype, name, dec) NG_TP_DEC_##dec(name)
#define NG_TP_OTHER(name)

#define NG_TP_TIME(name) + 1
#define NG_EV(layout, fields) enum { ntimes_##layout = 0 fields };
#define NG_EV_CLASS(layout, fields) NG_EV(layout, fields)
#include "events.def"
#undef NG_TP_TIME

#define NG_TP_TIME(name) to->name = shifted(e->name, d);
#define NG_TP_SHIFT_DEF(layout, fields)						\
	static inline void shift_##layout(struct ng_ev_##layout *to,		\
					  const struct ng_ev_##layout *e)	\
	{									\
		int64_t d __attribute__((unused)) = clock_shift();		\
										\
		*to = *e;							\
		fields								\
	}
#define NG_EV(layout, fields) NG_TP_SHIFT_DEF(layout, fields)
#define NG_EV_CLASS(layout, fields) NG_TP_SHIFT_DEF(layout, fields)
#include "events.def"
#undef NG_EV_F
#undef NG_TP_TIME
#undef NG_TP_OTHER

#define NG_TP_OP(name, layout)						\
	static void op_##name(const struct ng_ev_##layout *e)		\
	{								\
		struct ng_ev_##layout moved;				\
									\
		if (ntimes_##layout && trace_clock) {			\
			shift_##layout(&moved, e);			\
			e = &moved;					\
		}							\
		lttng_ust_tracepoint(ncclguard, name, e);		\
	}
#define NG_EV(name, fields) NG_TP_OP(name, name)
#define NG_EV_OF(name, layout) NG_TP_OP(name, layout)
#include "events.def"

__attribute__((visibility("default")))
const struct ng_tp_ops ncclguard_tp_ops = {
	.abi = NG_TP_ABI,
#define NG_EV(name, fields) .name = op_##name,
#define NG_EV_OF(name, layout) .name = op_##name,
#include "events.def"
	/* What lttng_ust_tracepoint_enabled() reads. */
	.coll_state = {
		&lttng_ust_tracepoint_ncclguard___coll_enqueue.state,
		&lttng_ust_tracepoint_ncclguard___coll_complete.state,
	},
	.set_job = op_set_job,
};
