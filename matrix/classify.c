/*
 * Slow pairs and what they share (docs/matrix.md, "Slow pairs").  A pair
 * is slow below --expect-gbps, or below NG_MX_SLOW_SHARE of the median
 * bus bandwidth of its link class (both ranks on one host, or not), when
 * the class has NG_MX_MEDIAN_MIN measured pairs or more: fewer give no
 * median worth the name.  A rank is named when at least two of its pairs
 * are slow and they are half its measured pairs or more, or it is in
 * every slow pair (two or more); a host, when there are several and two
 * or more of its ranks are named.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matrix.h"

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	if (!n)
		return NAN;
	qsort(v, (size_t)n, sizeof(*v), dcmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int same_host(const struct ng_mx *m, int a, int b)
{
	return !strcmp(m->ranks[a].host, m->ranks[b].host);
}

static void reset(struct ng_mx *m)
{
	for (int i = 0; i < m->nsuspect_hosts; i++)
		free(m->suspect_hosts[i]);
	free(m->suspect_hosts);
	free(m->suspects);
	free(m->slow);
	m->suspect_hosts = NULL;
	m->suspects = NULL;
	m->slow = NULL;
	m->nslow = m->nsuspects = m->nsuspect_hosts = 0;
}

/* Whether r is the lowest joined rank of its host. */
static int host_first(const struct ng_mx *m, int r)
{
	if (!m->ranks[r].joined)
		return 0;
	for (int q = 0; q < r; q++)
		if (m->ranks[q].joined && same_host(m, q, r))
			return 0;
	return 1;
}

/* A host with two or more named ranks: what is slow is shared by them
 * (a NIC, a PCIe switch), not one GPU.  With a single host there is
 * nothing to tell apart. */
static int name_hosts(struct ng_mx *m, const char *named)
{
	int n = m->n, nhosts = 0;

	for (int h = 0; h < n; h++)
		nhosts += host_first(m, h);
	for (int h = 0; h < n && nhosts >= 2; h++) {
		int k = 0;

		if (!host_first(m, h))
			continue;
		for (int r = h; r < n; r++)
			k += m->ranks[r].joined && named[r] && same_host(m, r, h);
		if (k >= 2) {
			char *s = strdup(m->ranks[h].host);

			if (!s)
				return -1;
			m->suspect_hosts[m->nsuspect_hosts++] = s;
		}
	}
	return 0;
}

int ng_mx_classify(struct ng_mx *m)
{
	int n = m->n, ns = 0, no = 0;
	double *same = NULL, *other = NULL;
	int *pairs = NULL, *slow = NULL;
	char *named = NULL;
	int ret = -1;

	reset(m);
	same = malloc(((size_t)n * n / 2 + 1) * sizeof(*same));
	other = malloc(((size_t)n * n / 2 + 1) * sizeof(*other));
	pairs = calloc((size_t)n, sizeof(*pairs));
	slow = calloc((size_t)n, sizeof(*slow));
	named = calloc((size_t)n, 1);
	m->slow = malloc(((size_t)n * n / 2 + 1) * sizeof(*m->slow));
	m->suspects = calloc((size_t)n + 1, sizeof(*m->suspects));
	m->suspect_hosts = calloc((size_t)n + 1, sizeof(*m->suspect_hosts));
	if (!same || !other || !pairs || !slow || !named || !m->slow || !m->suspects ||
	    !m->suspect_hosts)
		goto out;
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++) {
			double bw = m->busbw[a * n + b];

			if (isnan(bw))
				continue;
			if (same_host(m, a, b))
				same[ns++] = bw;
			else
				other[no++] = bw;
		}
	m->median_same = median(same, ns);
	m->median_other = median(other, no);
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++) {
			double bw = m->busbw[a * n + b];
			int sh = same_host(m, a, b), cnt = sh ? ns : no;
			double med = sh ? m->median_same : m->median_other;
			int below_expect = m->expect_gbps > 0 && bw < m->expect_gbps;
			int below_med = cnt >= NG_MX_MEDIAN_MIN && bw < NG_MX_SLOW_SHARE * med;

			if (isnan(bw))
				continue;
			pairs[a]++;
			pairs[b]++;
			if (!below_expect && !below_med)
				continue;
			m->slow[m->nslow++] = (struct ng_mx_slow){
				.a = a, .b = b, .busbw_gbps = bw,
				.expected_gbps = below_expect ? m->expect_gbps : med,
			};
			slow[a]++;
			slow[b]++;
		}
	for (int r = 0; r < n; r++) {
		int in_all = m->nslow >= 2 && slow[r] == m->nslow;

		if ((slow[r] >= 2 && 2 * slow[r] >= pairs[r]) || in_all) {
			named[r] = 1;
			m->suspects[m->nsuspects++] = (struct ng_mx_suspect){
				.rank = r, .slow_pairs = slow[r], .pairs = pairs[r],
			};
		}
	}
	if (name_hosts(m, named))
		goto out;
	ret = 0;
out:
	free(named);
	free(slow);
	free(pairs);
	free(other);
	free(same);
	return ret;
}
