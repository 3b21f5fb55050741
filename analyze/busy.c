/*
 * Busy time, the union of a rank's GPU intervals.  Completions come in the
 * order the watchdog saw them, not in GPU order (calls on other comms and
 * streams, group members, flushes): intervals are kept, and every
 * AN_BUSY_KEEP * 8 of them all but the latest AN_BUSY_KEEP are merged and
 * summed.  A later one that starts before what was summed is clipped to
 * it; AN_BUSY_KEEP calls of disorder is far more than the watchdog makes.
 */
#include <stdlib.h>
#include <string.h>

#include "an_priv.h"

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

double an_comm_fraction(const struct an_proc *p)
{
	int64_t wall;
	double f;

	if (p->last_ts <= p->first_ts)
		return 0;	/* no span (a process seen in no event) */
	wall = p->last_ts - p->first_ts;
	f = (double)p->busy_ns / (double)wall;
	return f > 1 ? 1 : f;
}
