/*
 * Durations of a bandwidth row in bounded memory: exact while there are
 * few, then a log histogram whose bins are 1.1% wide.
 */
#include <math.h>
#include <stdlib.h>

#include "model.h"

static int hist_bin(double v)
{
	int oct, sub;
	double m;

	if (v < 1)
		return 0;
	m = frexp(v, &oct);		/* v = m * 2^oct, m in [0.5, 1) */
	oct -= 1;
	sub = (int)((m * 2 - 1) * AN_QS_SUB);
	if (sub >= AN_QS_SUB)
		sub = AN_QS_SUB - 1;
	if (oct >= 64)
		return AN_QS_BINS - 1;
	return oct * AN_QS_SUB + sub;
}

static double hist_mid(int bin)
{
	int oct = bin / AN_QS_SUB, sub = bin % AN_QS_SUB;

	return ldexp(1 + (sub + 0.5) / AN_QS_SUB, oct);
}

void an_qs_add(struct an_qs *q, double v)
{
	if (q->n == 0 || v > q->max)
		q->max = v;
	q->sum += v;
	if (!q->hist && q->n < AN_QS_EXACT) {
		if (!q->exact)
			q->exact = an_xcalloc(AN_QS_EXACT, sizeof(double));
		q->exact[q->n++] = v;
		return;
	}
	if (!q->hist) {
		q->hist = an_xcalloc(AN_QS_BINS, sizeof(uint32_t));
		for (uint64_t i = 0; i < q->n; i++)
			q->hist[hist_bin(q->exact[i])]++;
		free(q->exact);
		q->exact = NULL;
	}
	q->hist[hist_bin(v)]++;
	q->n++;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest rank: the smallest value with at least p of the samples at or
 * below it.  Exact below AN_QS_EXACT samples, within 1.1% above. */
double an_qs_quantile(struct an_qs *q, double p)
{
	uint64_t k, seen = 0;

	if (!q->n)
		return 0;
	k = (uint64_t)ceil(p * (double)q->n);
	if (k < 1)
		k = 1;
	if (k > q->n)
		k = q->n;
	if (q->exact) {
		qsort(q->exact, q->n, sizeof(double), cmp_double);
		return q->exact[k - 1];
	}
	for (int i = 0; i < AN_QS_BINS; i++) {
		seen += q->hist[i];
		if (seen >= k) {
			double v = hist_mid(i);

			return v > q->max ? q->max : v;
		}
	}
	return q->max;
}

void an_qs_free(struct an_qs *q)
{
	free(q->exact);
	free(q->hist);
	q->exact = NULL;
	q->hist = NULL;
}
