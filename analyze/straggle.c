/*
 * Stragglers: who arrives last at each collective, by how much past the
 * median, whether a rank is last more often than chance, and the rank x
 * time heat map of lateness.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_priv.h"

/* Lateness against the lower median: with two ranks that is the gap
 * between them; with several, a group of slow ranks all count as late,
 * where "minus the second-to-last" would call them all on time. */
int an_lateness(const int64_t *enter, int n, int64_t *late_ns)
{
	int64_t sorted[n > 0 ? n : 1], mid;
	int last = 0, i;

	if (n < 2)
		return -1;
	memcpy(sorted, enter, n * sizeof(*enter));
	qsort(sorted, n, sizeof(*sorted), an_cmp_i64);
	mid = sorted[(n - 1) / 2];
	for (i = 0; i < n; i++) {
		late_ns[i] = enter[i] - mid;
		if (enter[i] > enter[last])
			last = i;
	}
	return last;
}

/*
 * Last far more often than chance, at least three times, and late by
 * enough to matter (10 us on average).  "More often than chance": under
 * chance a rank is last in a collective of n ranks with probability 1/n;
 * the Chernoff bound exp(-N KL(k/N || q)) on being last k times of N (q
 * the mean chance) must be under 0.001 shared among all the ranks tested.
 * Three standard deviations per rank, as before, flagged a few ranks of
 * every 256-rank job with nothing but jitter: each rank is a test, and
 * the tail of a count with a mean under one is far from normal.
 */
#define AN_STRAGGLER_ALPHA 0.001
int an_straggler_flagged(const struct an_state *an, const struct an_proc *p)
{
	double n = (double)p->coll_calls, k = (double)p->late_calls, q, f, kl;

	if (p->late_calls < 3 || !p->coll_calls || p->late_sum_ns / k < 10e3)
		return 0;
	q = p->chance / n;
	f = k / n;
	if (q <= 0 || q >= 1 || f <= q)
		return 0;
	kl = f * log(f / q) + (f < 1 ? (1 - f) * log((1 - f) / (1 - q)) : 0);
	return -n * kl < log(AN_STRAGGLER_ALPHA / (an->nprocs > 1 ? an->nprocs : 1));
}

/* The heat map: bin i of every rank covers [heat_t0 + i * heat_w, + heat_w). */
static void heat_add(struct an_state *an, struct an_proc *p, int64_t t, int64_t late_ns)
{
	int64_t bin;

	if (an->heat_t0 == INT64_MIN)
		an->heat_t0 = t;
	bin = t < an->heat_t0 ? 0 : (t - an->heat_t0) / an->heat_w;
	while (bin >= AN_HEAT_BINS) {
		/* Twice as wide: merge neighbours, for every rank. */
		for (int i = 0; i < an->nprocs; i++) {
			struct an_proc *q = &an->procs[i];

			for (int k = 0; k < AN_HEAT_BINS / 2; k++) {
				q->heat_sum[k] = q->heat_sum[2 * k] + q->heat_sum[2 * k + 1];
				q->heat_n[k] = q->heat_n[2 * k] + q->heat_n[2 * k + 1];
			}
			memset(&q->heat_sum[AN_HEAT_BINS / 2], 0,
			       AN_HEAT_BINS / 2 * sizeof(double));
			memset(&q->heat_n[AN_HEAT_BINS / 2], 0,
			       AN_HEAT_BINS / 2 * sizeof(uint32_t));
		}
		an->heat_w *= 2;
		bin = (t - an->heat_t0) / an->heat_w;
	}
	p->heat_sum[bin] += (double)late_ns;
	p->heat_n[bin]++;
}

/* Slot i's time t on the reference host's clock. */
static int64_t corrected(const struct an_state *an, const struct an_entry *e, int i, int64_t t)
{
	return t + an->hosts[an->procs[e->comm->members[i]].host].offset_ns;
}

/* Who arrived last, by how much past the (lower) median. */
void an_straggle(struct an_state *an, const struct an_entry *e)
{
	int64_t *enter, *late;
	int *idx;
	int i, n = 0, last;
	int64_t tmid = 0;

	for (i = 0; i < e->nslots; i++) {
		const struct an_slot *s = &e->slot[i];

		/* Arrivals are compared only where every rank stamped its
		 * own (the shim stamps the same calls on every rank). */
		if ((s->flags & AN_S_ENQ) && (s->flags & AN_S_COARSE))
			return;
		n += (s->flags & AN_S_ENQ) && !(s->flags & AN_S_DROP);
	}
	if (n < 2 || n < e->nranks)
		return;
	/* On the heap: a slot per rank, and a job's ranks outgrow a stack. */
	enter = an_xcalloc((size_t)n, sizeof(*enter));
	late = an_xcalloc((size_t)n, sizeof(*late));
	idx = an_xcalloc((size_t)n, sizeof(*idx));
	for (i = 0, n = 0; i < e->nslots; i++) {
		const struct an_slot *s = &e->slot[i];

		if ((s->flags & AN_S_ENQ) && !(s->flags & AN_S_DROP)) {
			idx[n] = i;
			enter[n++] = corrected(an, e, i, s->enter_ns);
		}
	}
	last = an_lateness(enter, n, late);
	if (last < 0)
		goto out;
	an->straggle_calls++;
	for (i = 0; i < n; i++) {
		struct an_proc *p = &an->procs[e->comm->members[idx[i]]];

		p->coll_calls++;
		p->chance += 1.0 / n;
		if (p->coll_calls == 1)
			p->op1 = e->slot[idx[i]].op;
		else if (p->op1 != e->slot[idx[i]].op)
			p->opmixed = 1;
		if (late[i] == 0)
			tmid = enter[i];
	}
	for (i = 0; i < n; i++)
		heat_add(an, &an->procs[e->comm->members[idx[i]]], tmid,
			 late[i] > 0 ? late[i] : 0);
	an->procs[e->comm->members[idx[last]]].late_calls++;
	an->procs[e->comm->members[idx[last]]].late_sum_ns += (double)late[last];
out:
	free(enter);
	free(late);
	free(idx);
}
