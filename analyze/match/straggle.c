/*
 * Stragglers: who arrives last at each collective, each rank's lateness
 * against the others' median, whether it is late consistently and by
 * enough to matter, and the rank x time heat map of lateness.
 */
#include <stdlib.h>
#include <string.h>

#include "match.h"
#include "straggle.h"

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
 * A straggler is late consistently and by enough to matter: the rule
 * (common/straggle.h) judges windows of a rank's collectives, whatever
 * its comm.
 */
int an_straggler_flagged(const struct an_state *an, const struct an_proc *p)
{
	(void)an;
	/* late_calls: the writers divide by it */
	return p->late_calls && ng_strag_flagged(p->nwin, p->nwin_late);
}

/* The measured lateness: the mean of the late windows' medians. */
double an_straggler_late_ns(const struct an_proc *p)
{
	return p->nwin_late ? p->win_late_sum_ns / (double)p->nwin_late : 0;
}

/* One call's lateness and the others' spread; a full window is judged. */
static void window_add(struct an_proc *p, int64_t late, int64_t noise, int64_t cycle)
{
	int64_t med;

	p->win_late[p->win_fill] = late;
	p->win_noise[p->win_fill] = noise;
	p->win_cycle[p->win_fill++] = cycle;
	if (p->win_fill == AN_STRAG_WIN) {
		p->win_fill = 0;
		p->nwin++;
		if (ng_strag_window(p->win_late, p->win_noise, p->win_cycle, &med)) {
			p->nwin_late++;
			p->win_late_sum_ns += (double)med;
		}
	}
	/* The writers print late_sum_ns / late_calls: make that the
	 * measured lateness, not the mean gap of the calls it was last. */
	p->late_sum_ns = an_straggler_late_ns(p) * (double)p->late_calls;
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

/*
 * Who arrived last, by how much past the (lower) median; and each rank's
 * lateness against the median of the others, for the windows.
 *
 * A rank's arrival is when it could have taken part: its enqueue, or the
 * earliest start of the comm's previous collective if that is later.
 * Enqueues are asynchronous: the punctual ranks queue calls ahead of a
 * slow one, which then falls further behind at every call; their own
 * enqueue times would make its lateness grow with the job instead of
 * measuring its delay per call.
 */
void an_straggle(struct an_state *an, const struct an_entry *e)
{
	struct an_comm *c = e->comm;
	int64_t *enter, *late, *dev, *spread;
	void *scratch;
	int *idx;
	int i, n = 0, last;
	int64_t tmid = 0, prev = INT64_MIN, start, cycle;

	for (i = 0; i < e->nslots; i++) {
		const struct an_slot *s = &e->slot[i];

		/* Arrivals are compared only where every rank stamped its
		 * own (the shim stamps the same calls on every rank). */
		if ((s->flags & AN_S_ENQ) && (s->flags & AN_S_COARSE))
			goto unknown;
		n += (s->flags & AN_S_ENQ) && !(s->flags & AN_S_DROP);
	}
	if (n < 2 || n < e->nranks)
		goto unknown;
	if (c->strag_known && c->strag_seq + 1 == e->seq)
		prev = c->strag_start;
	/* On the heap: a slot per rank, and a job's ranks outgrow a stack. */
	enter = an_xcalloc((size_t)n, sizeof(*enter));
	late = an_xcalloc((size_t)n, sizeof(*late));
	dev = an_xcalloc((size_t)n, sizeof(*dev));
	spread = an_xcalloc((size_t)n, sizeof(*spread));
	scratch = an_xcalloc(1, NG_STRAG_SCRATCH(n));
	idx = an_xcalloc((size_t)n, sizeof(*idx));
	for (i = 0, n = 0; i < e->nslots; i++) {
		const struct an_slot *s = &e->slot[i];

		if ((s->flags & AN_S_ENQ) && !(s->flags & AN_S_DROP)) {
			int64_t t = corrected(an, e, i, s->enter_ns);

			idx[n] = i;
			enter[n++] = t > prev ? t : prev;
		}
	}
	last = an_lateness(enter, n, late);
	if (last < 0)
		goto out;
	start = enter[last];
	/* Unknown without the previous start: taken as long (1 ms floor). */
	cycle = prev != INT64_MIN ? start - prev : INT64_MAX;
	an->straggle_calls++;
	/* Each rank against the lower median of the others' arrivals. */
	ng_strag_call(enter, n, dev, spread, scratch);
	for (i = 0; i < n; i++) {
		struct an_proc *p = &an->procs[e->comm->members[idx[i]]];

		p->coll_calls++;
		p->chance += 1.0 / n;
		if (i == last) {
			p->late_calls++;
			/* the span of its late calls: hardware near it (hw findings) */
			if (!p->late_first_ns || enter[i] < p->late_first_ns)
				p->late_first_ns = enter[i];
			if (enter[i] > p->late_last_ns)
				p->late_last_ns = enter[i];
		}
		window_add(p, dev[i], spread[i], cycle);
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
	c->strag_seq = e->seq;
	c->strag_start = start;
	c->strag_known = 1;
out:
	free(enter);
	free(late);
	free(dev);
	free(spread);
	free(scratch);
	free(idx);
	return;
unknown:
	c->strag_known = 0;
}
