/*
 * /metrics' body: the tracker (track.c), the straggler rule's lateness
 * (lv_proc) and the counts (mcount.c) in Prometheus' text format 0.0.4,
 * or in OpenMetrics 1.0, whose counter families are named without
 * _total and which ends with "# EOF".  docs/metrics.md lists every
 * family.
 *
 * Series are per job, host and rank (8 families), per host (events
 * lost), per job, per op and size class (LV_MX_ROWS rows at most) and
 * per hardware counter (LV_MX_HW at most): linear in ranks, bounded
 * elsewhere.  A rank is one series even when two processes claimed it
 * (a restart): the latest one's, since a scrape with two samples of one
 * series fails whole.  A stuck seq is a value, never a label: labels are
 * a series' name, and a new seq per hang would be a new series each.
 */
#include <stdlib.h>
#include <string.h>

#include "lv_priv.h"

#define INIT_SEQ	UINT64_MAX	/* track.c's hang_seq of a hung init */

struct out {
	FILE *f;
	int om;			/* OpenMetrics */
};

enum { GAUGE, COUNTER };

/* A family's HELP and TYPE; name without _total for a counter. */
static void family(struct out *o, const char *name, int type, const char *help)
{
	const char *sfx = type == COUNTER && !o->om ? "_total" : "";

	fprintf(o->f, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, sfx, help, name, sfx,
		type == COUNTER ? "counter" : "gauge");
}

/* A label value: backslash, double quote and newline escaped (both
 * formats). */
static void label(struct out *o, int first, const char *key, const char *v)
{
	fprintf(o->f, "%s%s=\"", first ? "{" : ",", key);
	for (; *v; v++) {
		if (*v == '\\')
			fputs("\\\\", o->f);
		else if (*v == '"')
			fputs("\\\"", o->f);
		else if (*v == '\n')
			fputs("\\n", o->f);
		else
			fputc(*v, o->f);
	}
	fputc('"', o->f);
}

static void label_int(struct out *o, int first, const char *key, long long v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lld", v);
	label(o, first, key, buf);
}

static const char *job_name(const struct lv_state *st, int j)
{
	return st->jobs[j].id[0] ? st->jobs[j].id : "none";
}

static const char *host_name(const struct lv_state *st, int h)
{
	return h >= 0 && h < st->nhosts ? st->hosts[h].name : "?";
}

static void name(struct out *o, const char *n, int type)
{
	fprintf(o->f, "%s%s", n, type == COUNTER ? "_total" : "");
}

static void val_u(struct out *o, uint64_t v)
{
	fprintf(o->f, "} %llu\n", (unsigned long long)v);
}

/* Nanoseconds as seconds, exactly. */
static void val_ns(struct out *o, int64_t ns)
{
	if (ns < 0)
		ns = 0;
	fprintf(o->f, "} %lld.%09lld\n", (long long)(ns / 1000000000),
		(long long)(ns % 1000000000));
}

static void val_d(struct out *o, double v)
{
	fprintf(o->f, "} %.10g\n", v);
}

/* What the tracker knows per process, gathered once per scrape. */
struct per_proc {
	uint64_t last_seq, hang_seq;
	int shown;		/* the series of its (job, host, rank) */
};

static struct per_proc *gather(const struct lv_state *st)
{
	struct per_proc *pp = lv_xcalloc(st->nprocs ? st->nprocs : 1, sizeof(*pp));
	struct ng_u64map seen = { 0 };

	for (int i = 0; i < st->ncomms; i++) {
		const struct lv_comm *c = st->comms[i];

		for (int k = 0; k < c->nm; k++) {
			const struct lv_member *m = &c->m[k];
			struct per_proc *p = &pp[m->proc];

			if (m->last_seq > p->last_seq)
				p->last_seq = m->last_seq;
			/* the ranks waiting in the hang reported */
			if (c->hang_seq && c->hang_seq != INIT_SEQ && m->last_seq >= c->hang_seq &&
			    c->hang_seq > p->hang_seq)
				p->hang_seq = c->hang_seq;
		}
	}
	/* the latest process of each (job, host, rank) */
	for (int i = st->nprocs - 1; i >= 0; i--) {
		const struct lv_proc *p = &st->procs[i];
		uint64_t key;

		if (p->job < 0 || p->rank < 0)
			continue;
		key = lv_mix(lv_mix((uint64_t)p->job, (uint64_t)p->host), (uint64_t)p->rank);
		if (ng_u64map_get(&seen, key) >= 0)
			continue;
		lv_map_put(&seen, key, i);
		pp[i].shown = 1;
	}
	ng_u64map_free(&seen);
	return pp;
}

static const struct lv_mx_proc no_counts;

static const struct lv_mx_proc *counts(const struct lv_state *st, int i)
{
	return i < st->mx.nproc ? &st->mx.proc[i] : &no_counts;
}

enum { F_LAST, F_CALLS, F_TIMED, F_TIME, F_LATE, F_STRAG, F_TIMEOUTS, F_HANG, F_NRANK };

static const struct {
	const char *name;
	int type;
	const char *help;
} rank_fam[F_NRANK] = {
	[F_LAST] = { "ncclguard_last_seq", GAUGE,
		     "The last collective the rank entered (its seq, the highest over its communicators)." },
	[F_CALLS] = { "ncclguard_calls", COUNTER, "NCCL calls the rank entered." },
	[F_TIMED] = { "ncclguard_timed_calls", COUNTER,
		      "Calls of the rank whose completion was timed (sampled)." },
	[F_TIME] = { "ncclguard_nccl_time_seconds", COUNTER,
		     "Time in NCCL of the rank's timed calls, seconds." },
	[F_LATE] = { "ncclguard_lateness_seconds", GAUGE,
		     "How late the rank arrives at its collectives now, seconds (0: not late)." },
	[F_STRAG] = { "ncclguard_straggler", GAUGE, "1 while the rank is named a straggler, else 0." },
	[F_TIMEOUTS] = { "ncclguard_timeouts", COUNTER, "Watchdog timeouts of the rank." },
	[F_HANG] = { "ncclguard_hang_seq", GAUGE,
		     "The seq of the hung collective the rank waits in, 0 when none." },
};

static void rank_value(struct out *o, const struct lv_state *st, const struct per_proc *pp,
		       int i, int f)
{
	const struct lv_mx_proc *c = counts(st, i);
	const struct lv_proc *p = &st->procs[i];

	switch (f) {
	case F_LAST:
		val_u(o, pp[i].last_seq);
		break;
	case F_CALLS:
		val_u(o, c->calls);
		break;
	case F_TIMED:
		val_u(o, c->timed);
		break;
	case F_TIME:
		val_ns(o, c->timed_ns);
		break;
	case F_LATE:
		val_ns(o, p->late_ns);
		break;
	case F_STRAG:
		val_u(o, p->straggler ? 1 : 0);
		break;
	case F_TIMEOUTS:
		val_u(o, c->timeouts);
		break;
	default:
		val_u(o, pp[i].hang_seq);
		break;
	}
}

static void per_rank(struct out *o, const struct lv_state *st)
{
	struct per_proc *pp = gather(st);

	for (int f = 0; f < F_NRANK; f++) {
		family(o, rank_fam[f].name, rank_fam[f].type, rank_fam[f].help);
		for (int i = 0; i < st->nprocs; i++) {
			const struct lv_proc *p = &st->procs[i];

			if (!pp[i].shown)
				continue;
			name(o, rank_fam[f].name, rank_fam[f].type);
			label(o, 1, "job", job_name(st, p->job));
			label(o, 0, "host", host_name(st, p->host));
			label_int(o, 0, "rank", p->rank);
			rank_value(o, st, pp, i, f);
		}
	}
	free(pp);
}

static void per_job(struct out *o, const struct lv_state *st)
{
	family(o, "ncclguard_hangs", GAUGE,
	       "Communicators of the job hung now (a collective or an init), as watch last reported.");
	for (int j = 0; j < st->njobs; j++) {
		uint64_t n = 0;

		for (int i = 0; i < st->ncomms; i++)
			n += st->comms[i]->job == j && st->comms[i]->hang_seq;
		name(o, "ncclguard_hangs", GAUGE);
		label(o, 1, "job", job_name(st, j));
		val_u(o, n);
	}
}

static void lost(struct out *o, const struct lv_state *st)
{
	static const char *const why[2] = { "implausible", "discarded" };

	family(o, "ncclguard_events_lost", COUNTER,
	       "Events of the host lost: dropped as implausible by watch, or discarded by the tracer.");
	for (int h = 0; h < st->mx.nlost; h++)
		for (int k = 0; k < 2; k++) {
			const struct lv_mx_lost *l = &st->mx.lost[h];

			name(o, "ncclguard_events_lost", COUNTER);
			label(o, 1, "host", host_name(st, h));
			label(o, 0, "reason", why[k]);
			val_u(o, k ? l->discarded : l->implausible);
		}
}

static void row_labels(struct out *o, const struct lv_state *st, const struct lv_mx_row *w)
{
	label(o, 1, "job", w->job >= 0 ? job_name(st, w->job) : "none");
	label(o, 0, "op", st->mx.ops[w->op]);
	/* the class's lower bound, bytes */
	label_int(o, 0, "size", w->size_class < 0 ? 0 : 1LL << w->size_class);
	label_int(o, 0, "nranks", w->nranks);
}

enum { R_CALLS, R_TIMED, R_TIME, R_BUS, R_BUSBW, R_N };

static const struct {
	const char *name;
	int type;
	const char *help;
} row_fam[R_N] = {
	[R_CALLS] = { "ncclguard_op_calls", COUNTER,
		      "Calls of the op and size class (size: its lower bound, bytes), every rank's." },
	[R_TIMED] = { "ncclguard_op_timed_calls", COUNTER,
		      "Calls of the op and size class whose completion was timed (sampled)." },
	[R_TIME] = { "ncclguard_op_time_seconds", COUNTER, "Time of those timed calls, seconds." },
	[R_BUS] = { "ncclguard_op_bus_bytes", COUNTER,
		    "Bytes of the timed calls times nccl-tests' bus bandwidth factor." },
	[R_BUSBW] = { "ncclguard_op_busbw_bytes_per_second", GAUGE,
		      "Bus bandwidth of the timed calls since watch began (nccl-tests' busbw)." },
};

static void per_op(struct out *o, const struct lv_state *st)
{
	for (int f = 0; f < R_N; f++) {
		family(o, row_fam[f].name, row_fam[f].type, row_fam[f].help);
		for (int i = 0; i < st->mx.nrows; i++) {
			const struct lv_mx_row *w = &st->mx.rows[i];

			name(o, row_fam[f].name, row_fam[f].type);
			row_labels(o, st, w);
			if (f == R_CALLS)
				val_u(o, w->calls);
			else if (f == R_TIMED)
				val_u(o, w->timed);
			else if (f == R_TIME)
				val_ns(o, w->timed_ns);
			else if (f == R_BUS)
				val_d(o, w->bus_bytes);
			else
				val_d(o, w->timed_ns > 0 ? w->bus_bytes * 1e9 / (double)w->timed_ns : 0);
		}
	}
}

static void hardware(struct out *o, const struct lv_state *st)
{
	for (int f = 0; f < 2; f++) {
		if (f)
			family(o, "ncclguard_hw_value", GAUGE,
			       "The hardware counter's latest value the host's sampler recorded.");
		else
			family(o, "ncclguard_hw_changes", COUNTER,
			       "Changes of the hardware counter the host's sampler recorded.");
		for (int i = 0; i < st->mx.nhw; i++) {
			const struct lv_mx_hw *h = &st->mx.hw[i];

			name(o, f ? "ncclguard_hw_value" : "ncclguard_hw_changes", f ? GAUGE : COUNTER);
			label(o, 1, "job", h->job >= 0 ? job_name(st, h->job) : "none");
			label(o, 0, "host", host_name(st, h->host));
			label(o, 0, "device", h->device);
			label(o, 0, "counter", h->counter);
			val_u(o, f ? h->value : h->changes);
		}
	}
}

static void self(struct out *o, const struct lv_state *st)
{
	family(o, "ncclguard_watch_events", COUNTER, "Events watch has read.");
	name(o, "ncclguard_watch_events", COUNTER);
	fputs(" ", o->f);
	fprintf(o->f, "%llu\n", (unsigned long long)st->events);
	family(o, "ncclguard_watch_rows_full", COUNTER,
	       "Events not counted by op or hardware counter: their table was full.");
	name(o, "ncclguard_watch_rows_full", COUNTER);
	label(o, 1, "table", "op");
	val_u(o, st->mx.rows_over);
	name(o, "ncclguard_watch_rows_full", COUNTER);
	label(o, 1, "table", "hardware");
	val_u(o, st->mx.hw_over);
}

int lv_mx_render(const struct lv_state *st, int fmt, char **out, size_t *len)
{
	struct out o = { .om = fmt == LV_MX_OPENMETRICS };

	*out = NULL;
	*len = 0;
	o.f = open_memstream(out, len);
	if (!o.f)
		return -1;
	per_rank(&o, st);
	per_job(&o, st);
	lost(&o, st);
	per_op(&o, st);
	hardware(&o, st);
	self(&o, st);
	if (o.om)
		fputs("# EOF\n", o.f);
	if (fclose(o.f)) {
		free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

const char *lv_mx_content_type(int fmt)
{
	return fmt == LV_MX_OPENMETRICS ?
	       "application/openmetrics-text; version=1.0.0; charset=utf-8" :
	       "text/plain; version=0.0.4; charset=utf-8";
}
