/*
 * The straggler rule (straggle.h).  A window is late when the median of
 * its lateness is over the floor and over NOISE times the median spread
 * of the other ranks in the same calls.  The floor is a sixteenth of the
 * comm's median cycle (from one collective's start to the next), within
 * 10 us and 1 ms: 50 us matters between collectives 400 us apart, not
 * between ones 20 ms apart.  Medians, because a loaded machine
 * deschedules any rank for a time slice now and then: a few calls of a
 * window late by milliseconds move a mean, not a median.  A rank is a
 * straggler when at least MIN_WIN of its windows, and half of them, are
 * late: a burst of bad luck on one rank, which every healthy job on a
 * shared machine has, does not last half the job.
 */
#include <stdlib.h>
#include <string.h>

#include "straggle.h"

#define FLOOR_MIN_NS	10000
#define FLOOR_MAX_NS	1000000
#define FLOOR_DIV	16
#define NOISE		3

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int64_t median(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	return v[(n - 1) / 2];
}

/* The lower median of sorted[0..n) without one instance of v. */
static int64_t others_median(const int64_t *sorted, int n, int64_t v)
{
	int m = (n - 2) / 2;

	return v <= sorted[m] ? sorted[m + 1] : sorted[m];
}

void ng_strag_call(const int64_t *enter, int n, int64_t *dev, int64_t *spread, void *scratch)
{
	int64_t *sorted = scratch, *sdev = sorted + n;
	int i;

	memcpy(sorted, enter, (size_t)n * sizeof(*enter));
	qsort(sorted, (size_t)n, sizeof(*sorted), cmp_i64);
	for (i = 0; i < n; i++) {
		dev[i] = enter[i] - others_median(sorted, n, enter[i]);
		sdev[i] = dev[i] < 0 ? -dev[i] : dev[i];
	}
	qsort(sdev, (size_t)n, sizeof(*sdev), cmp_i64);
	for (i = 0; i < n; i++)
		spread[i] = n > 2 ? others_median(sdev, n, dev[i] < 0 ? -dev[i] : dev[i]) : 0;
}

int ng_strag_window(int64_t *late, int64_t *spread, int64_t *cycle, int64_t *med)
{
	int64_t s, floor_ns;

	*med = median(late, NG_STRAG_WIN);
	s = median(spread, NG_STRAG_WIN);
	floor_ns = median(cycle, NG_STRAG_WIN) / FLOOR_DIV;
	if (floor_ns < FLOOR_MIN_NS)
		floor_ns = FLOOR_MIN_NS;
	if (floor_ns > FLOOR_MAX_NS)
		floor_ns = FLOOR_MAX_NS;
	return *med >= floor_ns && *med > NOISE * s;
}

int ng_strag_flagged(uint64_t nwin, uint64_t nlate)
{
	return nlate >= NG_STRAG_MIN_WIN && 2 * nlate >= nwin;
}
