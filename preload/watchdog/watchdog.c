/*
 * The watchdog: one thread that polls and never blocks on an event or on
 * NCCL.  It takes finished calls off the pending queue, emits coll_complete with
 * GPU times, and checks deadlines: a collective not complete after the
 * timeout, a host call (init, group end, a first collective setting up
 * connections) that has not returned.  Each stuck item is reported once:
 * a stderr line, a `timeout` event, a JSON dump of the in-flight table;
 * then the action (warn, abort, exit).  An abort that has not ended the
 * hang within its grace period ends in exit: a revoked or aborted comm
 * cannot free a thread stuck in the host.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "health.h"
#include "seconds.h"
#include "timing.h"

#define NG_PENDING_MAX 16384
#define NG_BUSY_POLL_MS 5
#define NG_QUIET_POLL_MS 20		/* between a job's bursts of calls */
#define NG_IDLE_POLL_MS 100
#define NG_ANCHOR_EVERY_NS 1000000000ull
#define NG_ANCHOR_RETRY_NS 100000000ull
/* How long an aborted or revoked comm has to let go of the call that was
 * stuck before the process exits; see grace_ns. */
#define NG_ABORT_GRACE_S 10
#define NG_EXIT_FLUSH_NS 500000000ull

struct pending {
	struct ng_pending *f;
};

static pthread_t thread;
static int running;
static int atexit_done;
static struct pending pend[NG_PENDING_MAX];
static int npend;
static int cur_dev = -1;

/* ---- time ------------------------------------------------------------ */

static void set_dev(int dev)
{
	if (dev != cur_dev && ng_cuda.cudaSetDevice && ng_cuda.cudaSetDevice(dev) == cudaSuccess)
		cur_dev = dev;
}

/* A new anchor every second (elapsed times stay small for the float
 * milliseconds cudaEventElapsedTime returns), or as soon as possible while
 * the one in use was not seen complete.  One not seen complete within
 * ng_timing_anchor's wait is not used: the old one stays. */
static void reanchor(struct ng_pool *p, uint64_t now)
{
	struct ng_ev *old = p->anchor;
	uint64_t host_ns;

	if (now - p->anchor_try_ns < (p->anchor_loose ? NG_ANCHOR_RETRY_NS : NG_ANCHOR_EVERY_NS))
		return;
	p->anchor_try_ns = now;
	if (ng_timing_anchor(p, p->spare_anchor, &host_ns))
		return;
	p->anchor = p->spare_anchor;
	p->anchor_host_ns = host_ns;
	p->anchor_loose = 0;
	p->spare_anchor = old;
}

/* ---- reports --------------------------------------------------------- */

static void fmt_bytes(char *buf, size_t len, uint64_t b)
{
	if (b >= (1ull << 30))
		snprintf(buf, len, "%.1f GiB", b / 1073741824.0);
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", b / 1048576.0);
	else if (b >= 1024)
		snprintf(buf, len, "%.1f KiB", b / 1024.0);
	else
		snprintf(buf, len, "%llu B", (unsigned long long)b);
}

/* A CLOCK_MONOTONIC time as local wall-clock time of day. */
static void fmt_when(char *buf, size_t len, uint64_t mono_ns)
{
	struct timespec rt;
	struct tm tm;
	uint64_t now = ng_now_ns();
	time_t secs;
	long ms;

	clock_gettime(CLOCK_REALTIME, &rt);
	int64_t real_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - (int64_t)(now - mono_ns);

	secs = (time_t)(real_ns / 1000000000);
	ms = (long)((real_ns % 1000000000) / 1000000);
	localtime_r(&secs, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%03ld", tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

static void emit_timeout(uint64_t hash, uint64_t seq, const char *op, uint64_t waited,
			 const char *what)
{
	struct ng_ev_timeout ev = {
		.comm_hash = hash, .seq = seq, .op = op, .waited_ns = waited,
		.action = ng_action_name(ng_cfg.on_timeout), .what = what,
	};

	if (ng_hot.tp)
		ng_hot.tp->timeout(&ev);
	/* The host's hardware, at the moment it matters most. */
	ng_health_kick();
}

/* The in-flight table, for the hang report. */
static const struct ng_pending *inflight_at(int i)
{
	return pend[i].f;
}

void ng_watchdog_dump(const char *reason)
{
	ng_hang_write(reason, inflight_at, npend);
}

/* ---- actions --------------------------------------------------------- */

static void *abort_thread(void *arg)
{
	struct ng_comm *c = arg;

	ng_real.ncclCommAbort(c->handle);
	__atomic_store_n(&c->abort_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The last resort: the report, then _exit(4).  The calls that led here
 * belong in the trace. */
static __attribute__((noreturn)) void exit_timeout(const char *reason)
{
	ng_recbuf_drain();
	ng_watchdog_dump(reason);
	ng_health_stop();
	_exit(NG_EXIT_TIMEOUT);
}

static void do_exit(const char *reason)
{
	ng_recbuf_drain();
	ng_watchdog_dump(reason);
	ng_inject_report();
	ng_warn("exiting with status %d (NCCLGUARD_ON_TIMEOUT=exit)", NG_EXIT_TIMEOUT);
	/* _exit runs no atexit: the host's last sample is taken here */
	ng_health_stop();
	_exit(NG_EXIT_TIMEOUT);
}

/*
 * How long an abort or a revoke has to end the hang it was for: as long
 * as the timeout that caught it, at least 1 s (ncclCommAbort tears down
 * connections and proxy threads) and at most NG_ABORT_GRACE_S.  A comm
 * that has not let go in as long as the job gave the call itself will
 * not; a short timeout (a test's, a job that wants to fail fast) asks
 * for a short wait, a long one waits NG_ABORT_GRACE_S.
 */
static uint64_t grace_ns(double timeout_s)
{
	double s = ng_seconds_never(timeout_s) ? NG_ABORT_GRACE_S : timeout_s;

	if (s < 1)
		s = 1;
	if (s > NG_ABORT_GRACE_S)
		s = NG_ABORT_GRACE_S;
	return (uint64_t)(s * 1e9);
}

static __attribute__((noreturn)) void let_go_exit(uint64_t hash, uint64_t grace,
						    const char *reason)
{
	ng_warn("comm %016llx did not let go %.1f s after abort; exiting with status %d",
		(unsigned long long)hash, grace / 1e9, NG_EXIT_TIMEOUT);
	exit_timeout(reason);
}

/* Revoke keeps the program's handle valid; abort frees it, so we answer
 * the program's later calls on it ourselves (wrap_comm.c).  Either may
 * leave the hang as it was (an abort of a blocking comm can itself hang;
 * a revoke cannot end a call stuck in the host): abort_started_ns marks
 * the comm for check_let_go. */
static void do_abort(struct ng_comm *c)
{
	pthread_t t;
	pthread_attr_t attr;

	if (!c || c->revoked || __atomic_load_n(&c->aborted_by_us, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&c->dead, __ATOMIC_ACQUIRE))
		return;
	c->abort_started_ns = ng_now_ns();
	if (ng_real.ncclCommRevoke) {
		if (ng_real.ncclCommRevoke(c->handle, 0) == ncclSuccess) {
			__atomic_store_n(&c->revoked, 1, __ATOMIC_RELEASE);
			ng_warn("revoked comm %016llx: its pending and later calls fail",
				(unsigned long long)c->hash);
			return;
		}
	}
	__atomic_store_n(&c->aborted_by_us, 1, __ATOMIC_RELEASE);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, abort_thread, c)) {
		pthread_attr_destroy(&attr);
		ng_warn("cannot start the abort of comm %016llx; exiting with status %d",
			(unsigned long long)c->hash, NG_EXIT_TIMEOUT);
		exit_timeout("abort failed to start");
	}
	pthread_attr_destroy(&attr);
	ng_warn("aborting comm %016llx; ncclCommGetAsyncError reports ncclRemoteError to the program",
		(unsigned long long)c->hash);
}

static void act(struct ng_comm *c, const char *reason)
{
	switch (ng_cfg.on_timeout) {
	case NG_ACT_EXIT:
		do_exit(reason);
		break;
	case NG_ACT_ABORT:
		ng_watchdog_dump(reason);
		do_abort(c);
		break;
	default:
		ng_watchdog_dump(reason);
		break;
	}
}

struct by_hash {
	uint64_t hash;
	int found;
};

static void abort_hash_cb(struct ng_comm *c, void *arg)
{
	struct by_hash *b = arg;

	if (c->hash == b->hash) {
		do_abort(c);
		b->found++;
	}
}

/* The grace period of comm c: that of the timeout that caught it. */
static uint64_t comm_grace_ns(const struct ng_comm *c)
{
	return grace_ns(c->init_reported ? ng_cfg.init_timeout_s : ng_cfg.timeout_s);
}

/*
 * A comm we aborted or revoked must let go of what was stuck: the abort
 * thread's ncclCommAbort returns, and every call in flight on the GPU from
 * before the revoke completes or fails.  Past its grace period, exit.
 * (The host calls stuck on it are check_host_calls'.)
 */
static void check_let_go(struct ng_comm *c, uint64_t now)
{
	uint64_t t0 = c->abort_started_ns, grace;

	if (!t0 || t0 >= now || now - t0 < (grace = comm_grace_ns(c)))
		return;
	if (__atomic_load_n(&c->aborted_by_us, __ATOMIC_ACQUIRE)) {
		if (!__atomic_load_n(&c->abort_done, __ATOMIC_ACQUIRE))
			let_go_exit(c->hash, grace, "abort did not return");
		return;
	}
	for (int i = 0; i < npend; i++)
		if (pend[i].f->comm == c && pend[i].f->enter_ns < t0)
			let_go_exit(c->hash, grace, "revoked comm did not let go");
}

/* The first call of a comm not known to be complete has waited too long. */
static void report_call(struct ng_comm *c, const struct ng_recent *r, uint64_t waited)
{
	char size[32], when[32];
	const char *op = ng_fn_op[r->fn];
	int p2p = r->fn == NG_FN_ncclSend || r->fn == NG_FN_ncclRecv;

	fmt_bytes(size, sizeof(size), r->bytes);
	fmt_when(when, sizeof(when), r->enter_ns);
	ng_warn("%s %s %llu on comm %016llx (%d ranks, %s) not complete after %.1f s; "
		"enqueued at %s on stream %p; call site %s; action %s",
		op, p2p ? "p2p_seq" : "seq", (unsigned long long)r->seq,
		(unsigned long long)c->hash, c->nranks, size, waited / 1e9, when,
		(void *)r->stream, r->site ? r->site : "unknown (NCCLGUARD_STACKS=1 records it)",
		ng_action_name(ng_cfg.on_timeout));
	emit_timeout(c->hash, r->seq, op, waited, "collective");
	act(c, "collective timeout");
}

/* The same when the call's record was overwritten by NG_RECENT later
 * calls (enqueued behind it without a wait): named by its place before the
 * oldest call remembered, `v`, whose age bounds its own. */
static void report_lost(struct ng_comm *c, uint64_t u, const struct ng_recent *v,
			uint64_t waited)
{
	char when[32], seq[48] = "";
	uint64_t behind = v->index - u;

	/* Without p2p calls or captures, calls and seqs advance together. */
	if (!__atomic_load_n(&c->p2p_seq, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&ng_hot.capture_seen, __ATOMIC_RELAXED) && v->seq > behind)
		snprintf(seq, sizeof(seq), " seq %llu", (unsigned long long)(v->seq - behind));
	fmt_when(when, sizeof(when), v->enter_ns);
	ng_warn("collective%s on comm %016llx (%d ranks) not confirmed complete after more "
		"than %.1f s; its record was overwritten by later calls: the oldest remembered, %llu calls "
		"after it, is %s seq %llu, enqueued at %s on stream %p; action %s",
		seq, (unsigned long long)c->hash, c->nranks, waited / 1e9,
		(unsigned long long)behind, ng_fn_op[v->fn], (unsigned long long)v->seq, when,
		(void *)v->stream, ng_action_name(ng_cfg.on_timeout));
	emit_timeout(c->hash, *seq ? v->seq - behind : 0, *seq ? "collective" : "unknown", waited,
		     "collective");
	act(c, "collective timeout");
}

/* A nonblocking creation still in progress past the init timeout: the
 * same hang as a blocking init's host call that has not returned, but
 * the call did return, so only the comm (or, for a split, its parent)
 * knows.  The action is on `on`: the comm, or the split's parent. */
static void report_init(struct ng_comm *on, uint64_t hash, const char *kind, int grouped,
			uint64_t t, uint64_t now)
{
	char when[32];

	fmt_when(when, sizeof(when), t);
	ng_warn("comm %016llx (%s %s) still initializing after %.1f s "
		"(created at %s): a hang in communicator init (a rank that never joined?); "
		"action %s",
		(unsigned long long)hash, grouped ? "grouped" : "nonblocking", kind ? kind : "init",
		(now - t) / 1e9, when, ng_action_name(ng_cfg.on_timeout));
	emit_timeout(hash, 0, "init", now - t, "init");
	if (on || ng_cfg.on_timeout != NG_ACT_ABORT)
		act(on, "init timeout");
	else
		ng_watchdog_dump("init timeout");
}

static void check_init(struct ng_comm *c, uint64_t now)
{
	uint64_t t = __atomic_load_n(&c->init_pending_ns, __ATOMIC_ACQUIRE);

	/* A comm the program already calls on is past its init, polled or
	 * not. */
	if (!t || c->init_reported || t >= now || __atomic_load_n(&c->ncalls, __ATOMIC_RELAXED) ||
	    now - t < ng_seconds_ns(ng_cfg.init_timeout_s))
		return;
	c->init_reported = 1;
	report_init(c, c->hash, c->init_kind, 0, t, now);
}

/* Without CUDA: no pending calls, only inits and aborts to watch. */
static void check_init_cb(struct ng_comm *c, void *arg)
{
	check_let_go(c, *(uint64_t *)arg);
	check_init(c, *(uint64_t *)arg);
}

/* The splits whose comm NCCL has not handed over yet (the comms that
 * returned in progress are check_comm's, or check_init_cb's without CUDA). */
static void check_splits(uint64_t now)
{
	struct ng_split_late l;

	while (ng_splits_overdue(now, ng_seconds_ns(ng_cfg.init_timeout_s), &l))
		report_init(ng_comm_find(l.parent), l.hash, l.kind, l.grouped, l.t0, now);
}

#define NG_PROBE_AFTER_NS 50000000ull

/* Per comm: is its oldest unconfirmed call late, and should the stream be
 * probed to confirm the untimed calls behind the last timed one? */
static void check_comm(struct ng_comm *c, void *arg)
{
	uint64_t now = *(uint64_t *)arg;
	uint64_t issued = __atomic_load_n(&c->ncalls, __ATOMIC_ACQUIRE);
	uint64_t u = c->done_calls + 1, lost = 0;
	struct ng_recent r;

	check_let_go(c, now);
	check_init(c, now);
	/* A suspended comm runs nothing: what it has open is no hang. */
	if (u > issued || !c->pool || __atomic_load_n(&c->suspended, __ATOMIC_RELAXED))
		return;
	if (issued - u >= NG_RECENT) {
		/* u's record is overwritten: judge by the oldest one kept,
		 * which u is older than. */
		lost = u;
		u = issued - NG_RECENT + 1;
	}
	r = c->recent[u & (NG_RECENT - 1)];
	if (__atomic_load_n(&c->recent[u & (NG_RECENT - 1)].index, __ATOMIC_ACQUIRE) != u ||
	    r.index != u || r.enter_ns >= now)
		return;		/* overwritten, being written, or newer than this tick */
	if (!c->probe_out && !__atomic_load_n(&ng_hot.capture_seen, __ATOMIC_RELAXED) &&
	    __atomic_load_n(&c->last_timed_call, __ATOMIC_RELAXED) < issued &&
	    now - r.enter_ns > NG_PROBE_AFTER_NS && !c->revoked &&
	    !__atomic_load_n(&c->aborted_by_us, __ATOMIC_ACQUIRE)) {
		set_dev(c->pool->dev);
		if (!ng_timing_probe(c, issued))
			c->probe_out = 1;
	}
	if (c->reported_call < (lost ? lost : u) &&
	    now - r.enter_ns > ng_seconds_ns(ng_cfg.timeout_s)) {
		c->reported_call = lost ? lost : u;
		if (lost)
			report_lost(c, lost, &r, now - r.enter_ns);
		else
			report_call(c, &r, now - r.enter_ns);
	}
}

/*
 * The host calls the abort action acted on, by slot: a revoke or an abort
 * cannot end a call stuck in the host (an injected stall, a wait inside
 * the shim or NCCL that no longer looks at the comm), and a call with no
 * comm yet (an init, a group end) has nothing to abort.  If the same call
 * is still inside after the grace period, exit.
 */
static struct {
	uint64_t enter_ns;		/* the call's; 0: none held */
	uint64_t deadline;
	uint64_t comm_hash;		/* the comm aborted for it, 0: none */
} held[NG_HOST_SLOTS];

static void check_held(int i, const struct ng_hostcall *s, uint64_t t, uint64_t now)
{
	uint64_t grace;

	if (!held[i].enter_ns)
		return;
	if (t != held[i].enter_ns || !s->reported) {
		held[i].enter_ns = 0;		/* it returned */
		return;
	}
	if (now < held[i].deadline)
		return;
	grace = grace_ns(ng_fn_is_init(s->fn) ? ng_cfg.init_timeout_s : ng_cfg.timeout_s);
	if (held[i].comm_hash)
		let_go_exit(held[i].comm_hash, grace, "host call did not return");
	ng_warn("host call %s did not return %.1f s after its timeout, and it has no comm "
		"to abort; exiting with status %d", ng_fn_name[s->fn], grace / 1e9,
		NG_EXIT_TIMEOUT);
	exit_timeout("host call did not return");
}

static void check_host_calls(uint64_t now)
{
	for (int i = 0; i < NG_HOST_SLOTS; i++) {
		struct ng_hostcall *s = &ng_host_slots[i];
		uint64_t t = __atomic_load_n(&s->enter_ns, __ATOMIC_ACQUIRE);
		double limit;
		char when[32];

		check_held(i, s, t, now);
		/* t may be newer than this tick's `now`: not late. */
		if (!t || s->reported || t >= now)
			continue;
		limit = ng_fn_is_init(s->fn) ? ng_cfg.init_timeout_s : ng_cfg.timeout_s;
		if (now - t < ng_seconds_ns(limit))
			continue;
		s->reported = 1;
		fmt_when(when, sizeof(when), t);
		char seq[32] = "";

		if (s->seq)
			snprintf(seq, sizeof(seq), " seq %llu", (unsigned long long)s->seq);
		ng_warn("host call %s%s (comm %016llx) has not returned after %.1f s "
			"(entered at %s, thread %d): a host-side hang%s; action %s",
			ng_fn_name[s->fn], seq,
			(unsigned long long)s->comm_hash, (now - t) / 1e9, when, s->tid,
			ng_fn_is_init(s->fn) ? " in communicator init (a rank that never joined?)" : "",
			ng_action_name(ng_cfg.on_timeout));
		emit_timeout(s->comm_hash, s->seq, ng_fn_op[s->fn], now - t,
			     ng_fn_is_init(s->fn) ? "init" : "host");
		if (ng_cfg.on_timeout == NG_ACT_EXIT)
			do_exit(ng_fn_is_init(s->fn) ? "init timeout" : "host call timeout");
		ng_watchdog_dump(ng_fn_is_init(s->fn) ? "init timeout" : "host call timeout");
		if (ng_cfg.on_timeout != NG_ACT_ABORT)
			continue;
		/* Its comm, if it has one yet (an init's does not exist,
		 * though the call carries its hash; ncclCommInitAll's comms
		 * share theirs: all are stuck). */
		struct by_hash b = { .hash = s->comm_hash };

		if (b.hash)
			ng_comm_foreach(abort_hash_cb, &b);
		held[i].enter_ns = t;
		held[i].deadline = now + grace_ns(limit);
		held[i].comm_hash = b.found ? b.hash : 0;
	}
}

/* ---- completions ----------------------------------------------------- */

/* A time read against the pool's anchor event, on the host's clock. */
static uint64_t host_ns(const struct ng_pool *p, float ms)
{
	return (uint64_t)((int64_t)p->anchor_host_ns + (int64_t)((double)ms * 1e6));
}

/*
 * 0: emitted; -1: its events are not complete after all.  A recorded call
 * that was not timed (the large calls' schedule) still gets its
 * coll_complete, without times: the analyzer would otherwise take a call
 * of the trace's last second, untimed and with no timed call after it,
 * for a hang.  A probe writes the same for the untimed calls it covers
 * (confirm.c).
 */
static int complete(struct ng_pending *f)
{
	struct ng_pool *p = f->comm->pool;
	struct ng_ev_coll_complete ev;

	if ((f->start || f->traced) && !f->probe && ng_trace_coll()) {
		float s_ms = 0, e_ms = 0;
		cudaError_t es = cudaErrorInvalidValue, ee = cudaErrorInvalidValue;

		/* Two reads against the anchor give both ends and the duration. */
		if (f->start) {
			es = ng_cuda.cudaEventElapsedTime(&s_ms, p->anchor->ev, f->start->ev);
			ee = ng_cuda.cudaEventElapsedTime(&e_ms, p->anchor->ev, f->end->ev);
		}
		if (es == cudaErrorNotReady || ee == cudaErrorNotReady)
			return -1;
		ev.comm_hash = f->comm->hash;
		ev.seq = f->seq;
		ev.p2p_seq = f->p2p_seq;
		ev.op = ng_fn_op[f->fn];
		ev.bytes = f->bytes;
		ev.stream = (uint64_t)(uintptr_t)f->stream;
		ev.gpu_start_ns = es == cudaSuccess ? host_ns(p, s_ms) : 0;
		ev.gpu_end_ns = ee == cudaSuccess ? host_ns(p, e_ms) : 0;
		ev.duration_ns = ev.gpu_start_ns && ev.gpu_end_ns > ev.gpu_start_ns ?
			ev.gpu_end_ns - ev.gpu_start_ns : 0;
		ev.nranks = f->comm->nranks;
		ev.root_or_peer = f->root;
		ng_hot.tp->coll_complete(&ev);
	}
	if (f->probe) {
		ng_confirm_emit(f->comm);
		f->comm->probe_out = 0;
	}
	if (f->index > f->comm->done_calls)
		f->comm->done_calls = f->index;
	if (f->p2p_seq > f->comm->last_done_p2p)
		f->comm->last_done_p2p = f->p2p_seq;
	if (f->seq) {
		uint64_t prev = __atomic_load_n(&f->comm->last_done_seq, __ATOMIC_RELAXED);

		if (f->seq > prev)
			__atomic_store_n(&f->comm->last_done_seq, f->seq, __ATOMIC_RELAXED);
	}
	ng_pending_put(f);
	return 0;
}

/* A failed stream (aborted comm, revoked): no times. */
static void failed(struct ng_pending *f)
{
	ng_cuda.cudaGetLastError();
	if (f->probe)
		f->comm->probe_out = 0;
	ng_pending_put(f);
}

static cudaError_t query(struct ng_pending *f)
{
	set_dev(f->comm->pool->dev);
	return ng_cuda.cudaEventQuery(f->end->ev);
}

static int same_stream(const struct ng_pending *a, const struct ng_pending *b)
{
	return a->stream == b->stream && a->comm->pool == b->comm->pool;
}

static int idx[NG_PENDING_MAX];
static char seen[NG_PENDING_MAX];

/* The pending calls of one stream, in the order they were submitted:
 * a thread records an event and then submits it, so for one thread per
 * stream (what frameworks do) that is the order on the stream and they
 * complete in it; bisection finds the first one still running in log2(n)
 * queries (an 8-byte all-reduce loop puts ~1000 calls on the GPU per
 * poll).  A probe comes from this thread, racing the program's
 * submissions, so it is queried itself: a probe taken as done too early
 * would hide a hang.  Returns 1 if some are still running. */
static int poll_stream(int first, char *gone)
{
	int m = 0, lo, hi;

	for (int i = first; i < npend; i++)
		if (!seen[i] && same_stream(pend[i].f, pend[first].f)) {
			seen[i] = 1;
			idx[m++] = i;
		}
	lo = 0;
	hi = m;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		cudaError_t q = query(pend[idx[mid]].f);

		if (q == cudaSuccess) {
			lo = mid + 1;
		} else if (q == cudaErrorNotReady) {
			hi = mid;
		} else {
			/* A failed stream: no order to rely on, drop what failed. */
			for (int k = 0; k < m; k++) {
				struct ng_pending *f = pend[idx[k]].f;

				q = query(f);
				if (q == cudaSuccess) {
					if (!complete(f))
						gone[idx[k]] = 1;
				} else if (q != cudaErrorNotReady) {
					failed(f);
					gone[idx[k]] = 1;
				}
			}
			return 1;
		}
	}
	for (int k = 0; k < lo; k++) {
		struct ng_pending *f = pend[idx[k]].f;

		if (f->probe && query(f) != cudaSuccess)
			continue;
		if (!complete(f))
			gone[idx[k]] = 1;
	}
	return lo < m;
}

static int poll_pending(void)
{
	static char gone[NG_PENDING_MAX];
	struct ng_pending *f;
	int out = 0;

	if (!__atomic_load_n(&ng_pending_queue.cells, __ATOMIC_ACQUIRE))
		return 0;	/* no communicator timed yet (or NCCLGUARD_TIMING=0) */
	while (npend < NG_PENDING_MAX && (f = ng_queue_pop(&ng_pending_queue))) {
		pend[npend].f = f;
		npend++;
	}
	/* A pending call is submitted after its call's enqueue record is in a
	 * ring: writing the rings now puts every enqueue before its
	 * completion. */
	ng_recbuf_drain();
	memset(seen, 0, npend);
	memset(gone, 0, npend);
	for (int i = 0; i < npend; i++)
		if (!seen[i])
			poll_stream(i, gone);
	for (int i = 0; i < npend; i++)
		if (!gone[i])
			pend[out++] = pend[i];
	npend = out;
	return npend;
}

/* Collectives only NCCL's profiler plugin saw (pcoll.c): no handle of
 * ours to abort, so `abort` can only warn and dump. */
static void check_plugin(uint64_t now)
{
	struct ng_pcoll_late l;
	char size[32], when[32], peer[32];

	while (ng_pcoll_overdue(now, ng_seconds_ns(ng_cfg.timeout_s), &l)) {
		fmt_bytes(size, sizeof(size), l.bytes);
		fmt_when(when, sizeof(when), l.enter_ns);
		if (l.p2p)
			snprintf(peer, sizeof(peer), " (peer %d)", l.peer);
		else
			peer[0] = 0;
		ng_warn("%s %s %llu%s on comm %016llx (%d ranks, %s) not complete after "
			"%.1f s; enqueued at %s; %s (seen through NCCL's profiler plugin); action %s",
			ng_fn_op[l.fn], l.p2p ? "p2p_seq" : "seq", (unsigned long long)l.seq,
			peer, (unsigned long long)l.hash,
			l.nranks, size, (now - l.enter_ns) / 1e9, when,
			l.started ? "its kernel started and never ended"
				  : "its kernel never started",
			ng_action_name(ng_cfg.on_timeout));
		emit_timeout(l.hash, l.seq, ng_fn_op[l.fn], now - l.enter_ns, "collective");
		if (ng_cfg.on_timeout == NG_ACT_EXIT)
			do_exit("collective timeout");
		if (ng_cfg.on_timeout == NG_ACT_ABORT)
			ng_warn_once("abort needs the preload (LD_PRELOAD): the plugin holds no "
				     "communicator handle; warning only");
		ng_watchdog_dump("collective timeout");
	}
}

static void anchor_all(uint64_t now)
{
	for (int d = 0; d < NG_MAX_DEVICES; d++) {
		struct ng_pool *p = ng_timing_pool(d);

		if (p) {
			set_dev(d);
			reanchor(p, now);
		}
	}
}

static void add_calls(struct ng_comm *c, void *arg)
{
	*(uint64_t *)arg += __atomic_load_n(&c->seq, __ATOMIC_RELAXED) +
			    __atomic_load_n(&c->p2p_seq, __ATOMIC_RELAXED);
}

/* How long the time stays published after the last call: a program's
 * calls come in bursts (a training step's), and a call after the
 * withdrawal reads the clock until the watchdog's next tick, up to its
 * idle poll. */
#define NG_PUBLISH_LINGER_NS 100000000ull
static uint64_t calls_seen, last_call_ns;

/*
 * Publish the time for the program's calls until the next tick
 * (ng_coarse_now) and say how soon that tick must come: NG_BUSY_POLL_MS
 * while calls come, NG_QUIET_POLL_MS in a gap between them (a 200 Hz
 * watchdog through the gaps cost 0.5% of a core), and once the gap
 * passes NG_PUBLISH_LINGER_NS, 0: the time is withdrawn, the idle poll
 * follows, and calls read the clock.  The time is milliseconds old: a
 * tick, the coarse clock's jiffy, the watchdog's wake-up.
 */
static int publish_time(void)
{
	uint64_t sum = 0, now = ng_now_coarse_ns();
	int poll_ms;

	ng_comm_foreach(add_calls, &sum);
	if (sum != calls_seen) {
		calls_seen = sum;
		last_call_ns = now;
		poll_ms = NG_BUSY_POLL_MS;
	} else if (last_call_ns && now - last_call_ns < NG_PUBLISH_LINGER_NS) {
		poll_ms = NG_QUIET_POLL_MS;
	} else {
		last_call_ns = 0;
		poll_ms = 0;
	}
	__atomic_store_n(&ng_hot.coarse_ns, poll_ms ? now : 0, __ATOMIC_RELAXED);
	return poll_ms;
}

/* Serialises the watchdog's ticks with the exit flush. */
static pthread_mutex_t tick_lock = PTHREAD_MUTEX_INITIALIZER;
static int exiting;

static void *watchdog_main(void *arg)
{
	enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
	int mode_set = 0;
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	ng_in_shim = 1;		/* nothing this thread calls is the program's */
	for (;;) {
		uint64_t now = ng_now_ns();
		int busy, wait_ms, time_ms;

		pthread_mutex_lock(&tick_lock);
		if (exiting) {
			pthread_mutex_unlock(&tick_lock);
			return NULL;
		}
		/* Its work may block (CUDA's locks): calls read the clock
		 * until publish_time. */
		__atomic_store_n(&ng_hot.coarse_ns, 0, __ATOMIC_RELAXED);
		busy = 0;
		if (ng_cuda.cudaEventQuery) {
			if (!mode_set && ng_cuda.cudaThreadExchangeStreamCaptureMode) {
				ng_cuda.cudaThreadExchangeStreamCaptureMode(&mode);
				mode_set = 1;
			}
			busy = poll_pending();
			busy += ng_verify_poll();
			ng_comm_foreach(check_comm, &now);
			anchor_all(now);
		} else {
			ng_comm_foreach(check_init_cb, &now);	/* one pass over the comms */
		}
		busy += ng_recbuf_drain();	/* untimed calls' records */
		check_host_calls(now);
		ng_heartbeat_tick(now);
		ng_census_tick();
		check_splits(now);
		if (ng_pctx_any())
			check_plugin(now);
		ng_clock_tick();
		time_ms = publish_time();	/* last: the tick's work may be long */
		pthread_mutex_unlock(&tick_lock);
		wait_ms = busy ? NG_BUSY_POLL_MS : time_ms ? time_ms : NG_IDLE_POLL_MS;
		/* A timed call wakes a longer sleep (its events are recycled
		 * sooner); on the short poll the caller is spared the futex. */
		ng_recbuf_wait(wait_ms, wait_ms > NG_BUSY_POLL_MS);
	}
	return NULL;
}

/* At exit (an atexit handler registered after the CUDA runtime's, so it
 * runs while CUDA still works): the last calls of a program have usually
 * completed by now but the watchdog has not seen them; emit them, waiting
 * a little for the stragglers, and stop the watchdog. */
static void flush_at_exit(void)
{
	uint64_t deadline = ng_now_ns() + NG_EXIT_FLUSH_NS;
	int saved = ng_in_shim;

	if (!running)
		return;
	pthread_mutex_lock(&tick_lock);
	exiting = 1;
	__atomic_store_n(&ng_hot.coarse_ns, 0, __ATOMIC_RELAXED);	/* no more ticks */
	ng_in_shim = 1;
	cur_dev = -1;
	ng_census_tick();	/* a process shorter than a tick */
	ng_recbuf_drain();
	while (ng_cuda.cudaEventQuery && poll_pending() + ng_verify_poll() > 0 &&
	       ng_now_ns() < deadline) {
		struct timespec ts = { 0, 1000000L };

		nanosleep(&ts, NULL);
	}
	ng_in_shim = saved;
	pthread_mutex_unlock(&tick_lock);
	ng_debug("exit: %llu calls went untimed (event pool or rings full); "
		 "%llu enqueue records found their thread's ring full (drained there)",
		 (unsigned long long)ng_timing_dropped, (unsigned long long)ng_recbuf_full);
	/* Said where the user sees it: a report can only tell the calls
	 * no rank fingerprinted from the calls never sampled by this. */
	if (ng_verify_dropped)
		ng_warn("output verification: %llu sampled calls went unverified (pinned "
			"slots or markers ran out: calls came faster than the watchdog "
			"hashes; a larger NCCLGUARD_VERIFY samples fewer)",
			(unsigned long long)ng_verify_dropped);
}

void ng_watchdog_start(void)
{
	pthread_attr_t attr;

	if (running)
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&thread, &attr, watchdog_main, NULL)) {
		ng_warn("cannot start the watchdog thread: no timing, no hang detection");
	} else {
		/* Named, so that top and perf tell its time from the program's. */
		pthread_setname_np(thread, "ncclguard-wd");
		running = 1;
		if (!atexit_done) {
			atexit(flush_at_exit);
			atexit_done = 1;
		}
	}
	pthread_attr_destroy(&attr);
}

void ng_watchdog_reset_after_fork(void)
{
	running = 0;
	exiting = 0;
	ng_hot.coarse_ns = 0;		/* the parent's watchdog published it */
	last_call_ns = 0;
	pthread_mutex_init(&tick_lock, NULL);
	npend = 0;
	cur_dev = -1;
	memset(held, 0, sizeof(held));	/* the parent's calls */
}
