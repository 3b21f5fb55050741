/*
 * The text report: what was measured, the two matrices with ranks grouped
 * by host (up to TEXT_MAX_RANKS; beyond, a line per rank), the slow pairs
 * and what they share, the failed pairs with their reasons.  Names and
 * reasons come from other hosts: escaped (esc.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "esc.h"
#include "mx_priv.h"

#define TEXT_MAX_RANKS 24

static int is_slow(const struct ng_mx *m, int a, int b)
{
	for (int i = 0; i < m->nslow; i++)
		if ((m->slow[i].a == a && m->slow[i].b == b) || (m->slow[i].a == b && m->slow[i].b == a))
			return 1;
	return 0;
}

static const char *reason(const struct ng_mx *m, int a, int b)
{
	return m->reason[(a < b ? a : b) * m->n + (a < b ? b : a)];
}

/* Three significant digits, never an exponent: 0.0284, 9.61, 412, 41182. */
static void fmt(char *buf, size_t len, double x)
{
	int dec = x >= 100 ? 0 : x >= 10 ? 1 : x >= 1 ? 2 : x >= 0.1 ? 3 : 4;

	snprintf(buf, len, "%.*f", dec, x);
}

static void cell(const struct ng_mx *m, const double *v, int a, int b, char *buf, size_t len)
{
	if (a == b)
		snprintf(buf, len, "-");
	else if (reason(m, a, b))
		snprintf(buf, len, "FAIL");
	else if (isnan(v[a * m->n + b]))
		snprintf(buf, len, "?");
	else
		fmt(buf, len, v[a * m->n + b]);
}

/* mark: flag the slow pairs with '*' (the bandwidth table). */
static void table(FILE *f, const struct ng_mx *m, const int *order, const int *group,
		  const double *v, const char *title, int mark)
{
	char buf[64];
	int w = 4;

	for (int a = 0; a < m->n; a++)
		for (int b = 0; b < m->n; b++) {
			cell(m, v, a, b, buf, sizeof(buf));
			w = (int)strlen(buf) > w ? (int)strlen(buf) : w;
		}
	fprintf(f, "\n%s\n      rank", title);
	for (int j = 0; j < m->n; j++)
		fprintf(f, "%s %*d ", j && group[j] != group[j - 1] ? " |" : "", w, order[j]);
	fputc('\n', f);
	for (int i = 0; i < m->n; i++) {
		int a = order[i];

		if (i && group[i] != group[i - 1])
			fputc('\n', f);
		if (m->ranks[a].joined)
			fprintf(f, " h%-3d %4d", group[i], a);
		else
			fprintf(f, " ?    %4d", a);
		for (int j = 0; j < m->n; j++) {
			int b = order[j];

			if (j && group[j] != group[j - 1])
				fputs(" |", f);
			cell(m, v, a, b, buf, sizeof(buf));
			fprintf(f, " %*s%c", w, buf, mark && a != b && is_slow(m, a, b) ? '*' : ' ');
		}
		fputc('\n', f);
	}
}

/* One line per rank when the matrices would not fit a screen. */
static void per_rank(FILE *f, const struct ng_mx *m)
{
	fprintf(f, "\nper rank: bus bandwidth to the others, GB/s (min / median), slow and failed "
		"pairs\n");
	for (int a = 0; a < m->n; a++) {
		double *v = malloc((size_t)m->n * sizeof(*v)), mn = INFINITY;
		int k = 0, slow = 0, failed = 0;

		if (!v)
			return;
		for (int b = 0; b < m->n; b++) {
			if (b == a)
				continue;
			failed += reason(m, a, b) != NULL;
			slow += is_slow(m, a, b);
			if (!isnan(m->busbw[a * m->n + b])) {
				v[k++] = m->busbw[a * m->n + b];
				mn = fmin(mn, v[k - 1]);
			}
		}
		for (int i = 1; i < k; i++)	/* insertion sort: n is small */
			for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
				double t = v[j];

				v[j] = v[j - 1];
				v[j - 1] = t;
			}
		if (k)
			fprintf(f, "  rank %4d  %8.2f / %8.2f  %d slow  %d failed\n", a, mn,
				k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2, slow, failed);
		else
			fprintf(f, "  rank %4d  no pair measured  %d failed\n", a, failed);
		free(v);
	}
}

void ng_mx_write_text(FILE *f, const struct ng_mx *m)
{
	int *order = malloc((size_t)m->n * sizeof(int)), *group = malloc((size_t)m->n * sizeof(int));
	int npairs = m->n * (m->n - 1) / 2, measured = 0, ngroups;
	char size[32];

	if (!order || !group) {
		free(order);
		free(group);
		fprintf(f, "ncclguard matrix: out of memory\n");
		return;
	}
	ngroups = mx_host_order(m, order, group);
	for (int a = 0; a < m->n; a++)
		for (int b = a + 1; b < m->n; b++)
			measured += !isnan(m->busbw[a * m->n + b]);
	mx_fmt_bytes(size, sizeof(size), m->bytes);
	fprintf(f, "ncclguard matrix: %d rank%s, %d pair%s in %d round%s; busbw of a %s all-reduce, "
		"latency of an 8 B one, %d iterations each\n", m->n, m->n == 1 ? "" : "s", npairs,
		npairs == 1 ? "" : "s", ng_mx_rounds(m->n), ng_mx_rounds(m->n) == 1 ? "" : "s", size,
		m->iters);
	for (int g = 0, i = 0; g < ngroups; g++) {
		if (m->ranks[order[i]].joined) {
			fprintf(f, "  h%d ", g);
			ng_esc_put(f, m->ranks[order[i]].host);
			fputs(": ranks", f);
		} else {
			fputs("  never joined: ranks", f);
		}
		for (; i < m->n && group[i] == g; i++)
			fprintf(f, " %d", order[i]);
		fputc('\n', f);
	}
	if (m->n >= 2 && m->n <= TEXT_MAX_RANKS) {
		table(f, m, order, group, m->busbw, "bus bandwidth, GB/s (* slow)", 1);
		table(f, m, order, group, m->lat_us, "latency, us (median)", 0);
	} else if (m->n > TEXT_MAX_RANKS) {
		per_rank(f, m);
	}
	if (m->nslow) {
		fprintf(f, "\nslow pairs: below %g x the median of their link class", NG_MX_SLOW_SHARE);
		if (m->expect_gbps > 0)
			fprintf(f, ", or below --expect-gbps %g", m->expect_gbps);
		fputs(":\n", f);
		for (int i = 0; i < m->nslow; i++) {
			const struct ng_mx_slow *s = &m->slow[i];

			fprintf(f, "  %d-%d  %.3g GB/s, expected %.3g (%s)\n", s->a, s->b, s->busbw_gbps,
				s->expected_gbps, m->expect_gbps > 0 && s->expected_gbps == m->expect_gbps ?
				"--expect-gbps" : strcmp(m->ranks[s->a].host, m->ranks[s->b].host) ?
				"median between hosts" : "median within a host");
		}
		for (int i = 0; i < m->nsuspects; i++) {
			const struct ng_mx_suspect *s = &m->suspects[i];

			fprintf(f, "common to the slow pairs: rank %d (host ", s->rank);
			ng_esc_put(f, m->ranks[s->rank].host);
			fputs(", GPU ", f);
			ng_esc_put(f, m->ranks[s->rank].busid[0] ? m->ranks[s->rank].busid : "?");
			fprintf(f, "): %d of its %d pairs slow\n", s->slow_pairs, s->pairs);
		}
		for (int i = 0; i < m->nsuspect_hosts; i++) {
			fputs("common to the slow pairs: host ", f);
			ng_esc_put(f, m->suspect_hosts[i]);
			fputc('\n', f);
		}
		if (!m->nsuspects && !m->nsuspect_hosts)
			fprintf(f, "no rank or host is common to the slow pairs\n");
	}
	if (m->nfailed) {
		fprintf(f, "\nfailed pairs:\n");
		for (int a = 0; a < m->n; a++)
			for (int b = a + 1; b < m->n; b++)
				if (reason(m, a, b)) {
					fprintf(f, "  %d-%d  ", a, b);
					ng_esc_put(f, reason(m, a, b));
					fputc('\n', f);
				}
	}
	fprintf(f, "\n%d pair%s: %d measured, %d failed, %d slow\n", npairs, npairs == 1 ? "" : "s",
		measured, m->nfailed, m->nslow);
	free(order);
	free(group);
}
