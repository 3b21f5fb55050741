/*
 * Busy time, the union of a rank's GPU intervals.  Completions come in the
 * order the watchdog saw them, not in GPU order (calls on other comms and
 * streams, group members, flushes): intervals are kept, and every
 * AN_BUSY_KEEP * 8 of them all but the latest AN_BUSY_KEEP are merged and
 * summed.  A later one that starts before what was summed is clipped to
 * it; AN_BUSY_KEEP calls of disorder is far more than the watchdog makes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"

#define AN_BUSY_KEEP 1024

static int cmp_iv(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

void an_busy_fold(struct an_proc *p, int keep)
{
	int n = 0, i;

	if (!p->niv)
		return;
	qsort(p->iv, (size_t)p->niv, 2 * sizeof(*p->iv), cmp_iv);
	for (i = 0; i < p->niv; i++) {	/* merge in place */
		int64_t *a = &p->iv[2 * i];

		if (n && a[0] <= p->iv[2 * n - 1]) {
			if (a[1] > p->iv[2 * n - 1])
				p->iv[2 * n - 1] = a[1];
			continue;
		}
		p->iv[2 * n] = a[0];
		p->iv[2 * n + 1] = a[1];
		n++;
	}
	for (i = 0; i < n - keep; i++) {
		p->busy_ns += p->iv[2 * i + 1] - p->iv[2 * i];
		p->folded_until = p->iv[2 * i + 1];
	}
	if (i > 0)
		memmove(p->iv, p->iv + 2 * i, (size_t)(n - i) * 2 * sizeof(*p->iv));
	p->niv = n - i;
}

void an_busy_add(struct an_proc *p, int64_t start, int64_t end)
{
	if (end <= p->folded_until)
		return;
	if (start < p->folded_until)
		start = p->folded_until;
	if (p->niv == p->cap_iv) {
		p->cap_iv = p->cap_iv ? p->cap_iv * 2 : 64;
		p->iv = an_xrealloc(p->iv, (size_t)p->cap_iv * 2 * sizeof(*p->iv));
	}
	p->iv[2 * p->niv] = start;
	p->iv[2 * p->niv + 1] = end;
	if (++p->niv >= AN_BUSY_KEEP * 8)
		an_busy_fold(p, AN_BUSY_KEEP);
}

/* One rank's part in a matched collective of row `row`. */
void an_busy_count(struct an_proc *p, int row, const struct an_slot *s)
{
	struct an_rowtime *t;

	if (!(s->flags & AN_S_ENQ) || (s->flags & AN_S_DROP))
		return;
	if (row >= p->nrt) {
		int n = row + 8;

		p->rt = an_xrealloc(p->rt, (size_t)n * sizeof(*p->rt));
		memset(p->rt + p->nrt, 0, (size_t)(n - p->nrt) * sizeof(*p->rt));
		p->nrt = n;
	}
	t = &p->rt[row];
	if ((s->flags & AN_S_TIMED) && s->dur > 0) {
		t->timed++;
		t->dur_sum_ns += (double)s->dur;
	} else {
		t->untimed++;
	}
}

/* A call counted untimed whose time came once it was accounted
 * (late_time() in match.c): timed after all. */
void an_busy_late(struct an_proc *p, int row, double dur_ns)
{
	struct an_rowtime *t;

	if (row >= p->nrt || !p->rt[row].untimed)
		return;
	t = &p->rt[row];
	t->untimed--;
	t->timed++;
	t->dur_sum_ns += dur_ns;
}

/*
 * The shim times a sample of the calls (small ones by rate, large ones on
 * a schedule), so the union of the timed intervals leaves most of a long
 * job's time in NCCL out.  Each untimed collective is counted at this
 * rank's mean time for the row (op, size, comm size), which includes the
 * rank's usual wait for the others, or failing that at the row's time
 * over all ranks.  As if it overlapped nothing: an upper side estimate.
 * A mean of few timed calls may be far from the others' (the first call
 * of a size, under valgrind, took 1.28 s where the rest took
 * microseconds): the estimate says how many it rests on, and is capped
 * at what the wall time leaves, since a rank's calls run one after the
 * other on its streams at most as long as it lived.
 */
void an_busy_estimate(struct an_state *an)
{
	for (int i = 0; i < an->nprocs; i++) {
		struct an_proc *p = &an->procs[i];
		int64_t span = p->last_ts - p->first_ts;
		double est = 0;

		for (int r = 0; r < p->nrt && r < an->nrows; r++) {
			const struct an_rowtime *t = &p->rt[r];
			const struct an_row *row = &an->rows[r];

			if (!t->untimed)
				continue;
			if (t->timed) {
				est += (double)t->untimed * t->dur_sum_ns / (double)t->timed;
				p->est_timed += t->timed;
			} else if (row->timed) {
				est += (double)t->untimed * row->time_sum_ns / (double)row->timed;
				p->est_timed += row->timed;
			} else {
				p->busy_unknown += t->untimed;
				continue;
			}
			p->est_calls += t->untimed;
		}
		if (span > 0 && p->busy_ns + est > (double)span) {
			est = p->busy_ns < span ? (double)(span - p->busy_ns) : 0;
			p->est_capped = 1;
		}
		p->busy_est_ns = (int64_t)est;
		free(p->rt);
		p->rt = NULL;
		p->nrt = 0;
	}
}

static double fraction(const struct an_proc *p, int64_t busy)
{
	double f;

	if (p->last_ts <= p->first_ts)
		return 0;	/* no span (a process seen in no event) */
	f = (double)busy / (double)(p->last_ts - p->first_ts);
	return f > 1 ? 1 : f;
}

/* A rank's GPU time in collectives, within its wall time: GPU times are
 * put on the host clock through anchors, so a timed interval may reach
 * a little past the rank's first or last event; what it is a share of
 * bounds it. */
int64_t an_busy_time(const struct an_proc *p)
{
	int64_t busy = p->busy_ns + p->busy_est_ns, span = p->last_ts - p->first_ts;

	return span > 0 && busy > span ? span : busy;
}

/* What a rank's figure needs said beside it ("" when nothing): how many
 * timed calls an estimate rests on, when few, and a cap. */
const char *an_busy_note(const struct an_proc *p, char *buf, size_t len)
{
	int few = p->est_calls && p->est_timed < AN_FEW_TIMED;

	snprintf(buf, len, "%s", "");
	if (few)
		snprintf(buf, len, "%llu untimed at the mean of %llu timed call%s%s",
			 (unsigned long long)p->est_calls, (unsigned long long)p->est_timed,
			 p->est_timed == 1 ? "" : "s", p->est_capped ? ", capped at wall time" : "");
	else if (p->est_capped)
		snprintf(buf, len, "capped at wall time");
	return buf;
}

/* GPU time in NCCL over wall time, untimed collectives estimated. */
double an_comm_fraction(const struct an_proc *p)
{
	return fraction(p, an_busy_time(p));
}

/* The same from the timed calls alone. */
double an_comm_fraction_timed(const struct an_proc *p)
{
	return fraction(p, p->busy_ns);
}
