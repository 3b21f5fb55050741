/*
 * matrix.html: one self-contained page (no script, no external file): two
 * heat maps, bus bandwidth and latency, with ranks grouped by host, then
 * the slow pairs, what they share, the failed pairs and the ranks.  Every
 * name and reason is escaped: they come from other hosts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "mx_priv.h"
#include "version.h"

static void esc(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int n;

	while (p && *p) {
		switch (*p) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			if (*p >= 0x20 && *p < 0x7f) {
				fputc(*p, f);
			} else if (*p >= 0x80 && (n = ng_utf8_len(p))) {
				fwrite(p, 1, (size_t)n, f);
				p += n;
				continue;
			} else {
				fputs("&#xfffd;", f);
			}
		}
		p++;
	}
}

static const char *reason(const struct ng_mx *m, int a, int b)
{
	return m->reason[(a < b ? a : b) * m->n + (a < b ? b : a)];
}

static int is_slow(const struct ng_mx *m, int a, int b)
{
	for (int i = 0; i < m->nslow; i++)
		if ((m->slow[i].a == a && m->slow[i].b == b) || (m->slow[i].a == b && m->slow[i].b == a))
			return 1;
	return 0;
}

static const char style[] =
	"body{font-family:sans-serif;margin:1.5em;color:#222}"
	"table{border-collapse:collapse;margin:.5em 0 1.5em}"
	"td,th{padding:2px 6px;font-size:12px;text-align:right;border:1px solid #eee}"
	"th{background:#f4f4f4}th.host{text-align:center;background:#e6ecf5}"
	"td.d{background:#fff}td.f{background:#bbb;color:#600;text-align:center}"
	"td.s{font-weight:bold;outline:2px solid #900;outline-offset:-2px}"
	".gl{border-left:3px solid #555}.gt td,.gt th{border-top:3px solid #555}"
	".bad{color:#900}.warn{color:#a60}.list td{text-align:left}"
	".legend span{display:inline-block;width:2.5em;text-align:center;font-size:11px}";

/* Red (worst) to green (best); frac in [0, 1], 1 best. */
static void color(FILE *f, double frac)
{
	if (!isfinite(frac))
		frac = 1;
	frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
	fprintf(f, "hsl(%d,70%%,72%%)", (int)lround(120 * frac));
}

/* Colour by ratio to the best pair, so that a tenth of the best is red
 * and the best's near equals are green, whatever the spread. */
struct scale {
	double lo, hi;
	int higher_better;
};

static double frac_of(const struct scale *s, double v)
{
	return s->higher_better ? v / s->hi : s->lo / v;
}

static void heatmap(FILE *f, const struct ng_mx *m, const int *order, const int *group,
		    int ngroups, const double *v, const char *unit, int higher_better)
{
	struct scale s = { INFINITY, -INFINITY, higher_better };

	for (int i = 0; i < m->n * m->n; i++)
		if (isfinite(v[i]) && v[i] > 0) {
			s.lo = fmin(s.lo, v[i]);
			s.hi = fmax(s.hi, v[i]);
		}
	fputs("<table><tr><th></th><th></th>", f);
	for (int g = 0, i = 0; g < ngroups; g++) {
		int k = 0, first = i;

		for (; i < m->n && group[i] == g; i++)
			k++;
		fprintf(f, "<th class=\"host%s\" colspan=\"%d\">", g ? " gl" : "", k);
		if (m->ranks[order[first]].joined)
			esc(f, m->ranks[order[first]].host);
		else
			fputs("never joined", f);
		fputs("</th>", f);
	}
	fputs("</tr>\n<tr><th></th><th>rank</th>", f);
	for (int j = 0; j < m->n; j++)
		fprintf(f, "<th%s>%d</th>", j && group[j] != group[j - 1] ? " class=\"gl\"" : "",
			order[j]);
	fputs("</tr>\n", f);
	for (int i = 0; i < m->n; i++) {
		int a = order[i];

		fprintf(f, "<tr%s>", i && group[i] != group[i - 1] ? " class=\"gt\"" : "");
		if (!i || group[i] != group[i - 1]) {
			int k = 0, first = i;

			for (int q = i; q < m->n && group[q] == group[i]; q++)
				k++;
			fprintf(f, "<th class=\"host\" rowspan=\"%d\">", k);
			if (m->ranks[order[first]].joined)
				esc(f, m->ranks[order[first]].host);
			else
				fputs("never joined", f);
			fputs("</th>", f);
		}
		fprintf(f, "<th>%d</th>", a);
		for (int j = 0; j < m->n; j++) {
			int b = order[j];
			double x = v[a * m->n + b];
			const char *gl = j && group[j] != group[j - 1] ? " gl" : "";

			if (a == b) {
				fprintf(f, "<td class=\"d%s\"></td>", gl);
				continue;
			}
			if (reason(m, a, b)) {
				fprintf(f, "<td class=\"f%s\" title=\"%d-%d failed: ", gl, a, b);
				esc(f, reason(m, a, b));
				fputs("\">&#x2717;</td>", f);
				continue;
			}
			if (!isfinite(x)) {
				fprintf(f, "<td class=\"d%s\">?</td>", gl);
				continue;
			}
			fprintf(f, "<td class=\"%s%s\" style=\"background:", is_slow(m, a, b) ? "s" : "", gl);
			color(f, frac_of(&s, x));
			fprintf(f, "\" title=\"rank %d (", a);
			esc(f, m->ranks[a].host);
			fprintf(f, ") - rank %d (", b);
			esc(f, m->ranks[b].host);
			fprintf(f, "): %.4g %s%s\">%.3g</td>", x, unit, is_slow(m, a, b) ? ", slow" : "", x);
		}
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
	if (s.lo <= s.hi) {
		fputs("<p class=\"legend\">", f);
		for (int i = 0; i <= 4; i++) {
			double fr = i / 4.0;

			fputs("<span style=\"background:", f);
			color(f, fr);
			fprintf(f, "\">%d%%</span>", i * 25);
		}
		fprintf(f, " of the best pair's %s (%.4g)</p>\n", higher_better ? "bandwidth" :
			"latency, inverted", higher_better ? s.hi : s.lo);
	}
}

void ng_mx_write_html(FILE *f, const struct ng_mx *m)
{
	int *order = malloc((size_t)(m->n ? m->n : 1) * sizeof(int));
	int *group = malloc((size_t)(m->n ? m->n : 1) * sizeof(int));
	int ngroups, npairs = m->n * (m->n - 1) / 2, nhosts = 0;
	char size[32];

	if (!order || !group) {
		fputs("<!DOCTYPE html><p>out of memory</p>\n", f);
		goto out;
	}
	ngroups = mx_host_order(m, order, group);
	for (int i = 0; i < m->n; i++)
		nhosts += m->ranks[order[i]].joined && (!i || group[i] != group[i - 1]);
	mx_fmt_bytes(size, sizeof(size), m->bytes);
	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
		"<title>ncclguard matrix</title><style>%s</style></head><body>\n", style);
	fprintf(f, "<h1>ncclguard matrix</h1>\n<p>%d ranks on %d host%s, %d pairs in %d rounds; "
		"bus bandwidth of a %s all-reduce, latency of an 8 B one (median); %d iterations "
		"each; timeout %g s. ncclguard %s.</p>\n", m->n, nhosts, nhosts == 1 ? "" : "s",
		npairs, ng_mx_rounds(m->n), size, m->iters, m->timeout_s, NCCLGUARD_VERSION);
	fputs("<ul>\n", f);
	if (m->nfailed)
		fprintf(f, "<li class=\"bad\">%d pair%s failed</li>\n", m->nfailed,
			m->nfailed == 1 ? "" : "s");
	if (m->nslow)
		fprintf(f, "<li class=\"warn\">%d pair%s slow (below %g &times; the median of their "
			"link class%s)</li>\n", m->nslow, m->nslow == 1 ? "" : "s", NG_MX_SLOW_SHARE,
			m->expect_gbps > 0 ? ", or below --expect-gbps" : "");
	for (int i = 0; i < m->nsuspects; i++) {
		const struct ng_mx_suspect *s = &m->suspects[i];

		fprintf(f, "<li class=\"warn\">common to the slow pairs: rank %d (host ", s->rank);
		esc(f, m->ranks[s->rank].host);
		fputs(", GPU ", f);
		esc(f, m->ranks[s->rank].busid);
		fprintf(f, "): %d of its %d pairs slow</li>\n", s->slow_pairs, s->pairs);
	}
	for (int i = 0; i < m->nsuspect_hosts; i++) {
		fputs("<li class=\"warn\">common to the slow pairs: host ", f);
		esc(f, m->suspect_hosts[i]);
		fputs("</li>\n", f);
	}
	if (!m->nfailed && !m->nslow)
		fputs("<li>every pair measured, none slow</li>\n", f);
	fputs("</ul>\n", f);
	if (m->n >= 2) {
		fputs("<h2>Bus bandwidth, GB/s</h2>\n", f);
		heatmap(f, m, order, group, ngroups, m->busbw, "GB/s", 1);
		fputs("<h2>Latency, &micro;s</h2>\n", f);
		heatmap(f, m, order, group, ngroups, m->lat_us, "us", 0);
	}
	if (m->nslow) {
		fputs("<h2>Slow pairs</h2>\n<table class=\"list\"><tr><th>pair</th><th>GB/s</th>"
		      "<th>expected</th></tr>\n", f);
		for (int i = 0; i < m->nslow; i++)
			fprintf(f, "<tr><td>%d-%d</td><td>%.4g</td><td>%.4g</td></tr>\n", m->slow[i].a,
				m->slow[i].b, m->slow[i].busbw_gbps, m->slow[i].expected_gbps);
		fputs("</table>\n", f);
	}
	if (m->nfailed) {
		fputs("<h2>Failed pairs</h2>\n<table class=\"list\"><tr><th>pair</th><th>reason</th>"
		      "</tr>\n", f);
		for (int a = 0; a < m->n; a++)
			for (int b = a + 1; b < m->n; b++) {
				if (!reason(m, a, b))
					continue;
				fprintf(f, "<tr><td>%d-%d</td><td>", a, b);
				esc(f, reason(m, a, b));
				fputs("</td></tr>\n", f);
			}
		fputs("</table>\n", f);
	}
	fputs("<h2>Ranks</h2>\n<table class=\"list\"><tr><th>rank</th><th>host</th>"
	      "<th>GPU (PCI bus id)</th></tr>\n", f);
	for (int r = 0; r < m->n; r++) {
		fprintf(f, "<tr><td>%d</td><td>", r);
		if (m->ranks[r].joined)
			esc(f, m->ranks[r].host);
		else
			fputs("<span class=\"bad\">never joined</span>", f);
		fputs("</td><td>", f);
		esc(f, m->ranks[r].busid);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n</body></html>\n", f);
out:
	free(order);
	free(group);
}
