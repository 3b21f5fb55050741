/*
 * report.html: one self-contained page (no script, no external file) with
 * the findings, inline SVG plots (bus bandwidth against size per op, time
 * in NCCL per rank, a rank x time straggler heat map) and the tables.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_priv.h"
#include "version.h"

static const char *const palette[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
	"#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};
#define NPAL (int)(sizeof(palette) / sizeof(palette[0]))

/* As ng_json_str: bytes that are not UTF-8 (a host name, an environment
 * from another host) become U+FFFD, so that the page stays one encoding. */
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
		default:
			if (*p < 0x80) {
				fputc(*p, f);
			} else if ((n = ng_utf8_len(p))) {
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

static void finding(void *ctx, int severity, const char *line)
{
	FILE *f = ctx;

	fprintf(f, "<li class=\"%s\">", severity == AN_SEV_BAD ? "bad" :
		severity == AN_SEV_WARN ? "warn" : "info");
	esc(f, line);
	fputs("</li>\n", f);
}

static double row_busbw(const struct an_state *an, const struct an_row *r)
{
	double algbw = r->time_sum_ns > 0 ? (double)r->bytes_sum_timed / r->time_sum_ns : 0;

	return algbw * an_busbw_factor(an->ops[r->op], r->nranks);
}

/* Bus bandwidth against size, one line per op and comm size, log2 x. */
static void plot_busbw(struct an_state *an, FILE *f)
{
	const int W = 760, H = 340, L = 60, R = 170, T = 20, B = 40;
	int bmin = 64, bmax = -1, series = 0;
	double ymax = 0;
	char lab[32];

	for (int i = 0; i < an->nrows; i++) {
		const struct an_row *r = &an->rows[i];

		if (!r->timed || r->bucket < 0)
			continue;
		if (r->bucket < bmin)
			bmin = r->bucket;
		if (r->bucket > bmax)
			bmax = r->bucket;
		if (row_busbw(an, r) > ymax)
			ymax = row_busbw(an, r);
	}
	if (bmax < 0) {
		fputs("<p>No timed collectives.</p>\n", f);
		return;
	}
	if (an->opts.link_gbps > ymax)
		ymax = an->opts.link_gbps;
	ymax = ymax > 0 ? ymax * 1.1 : 1;
	if (bmax == bmin)
		bmax = bmin + 1;
#define X(b) (L + (double)((b) - bmin) * (W - L - R) / (bmax - bmin))
#define Y(v) (T + (H - T - B) * (1 - (v) / ymax))
	fprintf(f, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", W, H, W, H);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
		"stroke=\"#ccc\"/>\n", L, T, W - L - R, H - T - B);
	for (int k = 0; k <= 4; k++) {
		double v = ymax * k / 4;

		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
			"<text x=\"%d\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%.1f</text>\n",
			L, W - R, Y(v), Y(v), L - 6, Y(v) + 4, v);
	}
	for (int b = bmin; b <= bmax; b++) {
		int step = (bmax - bmin) > 12 ? 2 : 1;

		if ((b - bmin) % step)
			continue;
		an_fmt_bytes(1ULL << b, lab, sizeof(lab));
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">%s</text>\n",
			X(b), H - B + 16, lab);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">message size "
		"(nccl-tests size)</text>\n", L + (W - L - R) / 2, H - 6);
	fprintf(f, "<text x=\"14\" y=\"%d\" class=\"ax\" transform=\"rotate(-90 14 %d)\" "
		"text-anchor=\"middle\">busbw GB/s</text>\n", T + (H - T - B) / 2, T + (H - T - B) / 2);
	if (an->opts.link_gbps > 0)
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" "
			"stroke-dasharray=\"6 4\"/><text x=\"%d\" y=\"%.1f\" class=\"ax\">link "
			"%.1f GB/s</text>\n", L, W - R, Y(an->opts.link_gbps), Y(an->opts.link_gbps),
			L + 6, Y(an->opts.link_gbps) - 5, an->opts.link_gbps);
	/* rows are sorted by op, nranks, size: a series is a run of them */
	for (int i = 0; i < an->nrows;) {
		int j = i, pts = 0;
		const char *col = palette[series % NPAL];

		while (j < an->nrows && an->rows[j].op == an->rows[i].op &&
		       an->rows[j].nranks == an->rows[i].nranks)
			j++;
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
		for (int k = i; k < j; k++)
			if (an->rows[k].timed && an->rows[k].bucket >= 0) {
				fprintf(f, "%.1f,%.1f ", X(an->rows[k].bucket), Y(row_busbw(an, &an->rows[k])));
				pts++;
			}
		fputs("\"/>\n", f);
		for (int k = i; k < j; k++) {
			const struct an_row *r = &an->rows[k];

			if (!r->timed || r->bucket < 0)
				continue;
			an_fmt_bytes(1ULL << r->bucket, lab, sizeof(lab));
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%s %s "
				"on %d ranks: %.2f GB/s busbw, %llu calls</title></circle>\n",
				X(r->bucket), Y(row_busbw(an, r)), col, an->ops[r->op], lab, r->nranks,
				row_busbw(an, r), (unsigned long long)r->calls);
		}
		if (pts)
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
				"<text x=\"%d\" y=\"%d\" class=\"lg\">%s, %d ranks</text>\n",
				W - R + 10, T + 8 + series * 18, col, W - R + 28, T + 18 + series * 18,
				an->ops[an->rows[i].op], an->rows[i].nranks);
		series += pts > 0;
		i = j;
	}
	fputs("</svg>\n", f);
#undef X
#undef Y
}

static const char *host_of(const struct an_state *an, const struct an_proc *p)
{
	return p->info_host && *p->info_host ? p->info_host : an->hosts[p->host].name;
}

static void plot_comm(struct an_state *an, FILE *f, const int *order, int n)
{
	const int W = 760, L = 230, R = 90, bar = 18, gap = 6;
	int H = 30 + n * (bar + gap), y = 10;
	char busy[32];

	fprintf(f, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", W, H, W, H);
	for (int k = 0; k < an->nprocs; k++) {
		const struct an_proc *p = &an->procs[order[k]];
		double fr = an_comm_fraction(p);

		if (p->rank < 0)
			continue;
		an_fmt_ns((double)p->busy_ns, busy, sizeof(busy));
		fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"lg\" text-anchor=\"end\">rank %lld ",
			L - 8, y + 13, (long long)p->rank);
		esc(f, host_of(an, p));
		fprintf(f, ":%lld</text>", (long long)p->pid);
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#eee\"/>",
			L, y, W - L - R, bar);
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#1f77b4\">"
			"<title>%s in NCCL</title></rect>", L, y, fr * (W - L - R), bar, busy);
		fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"lg\">%.1f%%</text>\n", W - R + 6, y + 13,
			100 * fr);
		y += bar + gap;
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\">share of each rank's wall time its GPU "
		"spent in NCCL collectives</text>\n</svg>\n", L, H - 6);
}

/* Rank x time: how late each rank arrived against the median rank. */
static void plot_heat(struct an_state *an, FILE *f, const int *order, int n)
{
	const int L = 110, T = 10, cell_h = 16;
	int used = 0, cell_w, W, H;
	double vmax = 0;
	char lab[32];

	for (int k = 0; k < an->nprocs; k++) {
		const struct an_proc *p = &an->procs[k];

		for (int b = 0; b < AN_HEAT_BINS; b++)
			if (p->heat_n[b]) {
				double v = p->heat_sum[b] / p->heat_n[b];

				if (b + 1 > used)
					used = b + 1;
				if (v > vmax)
					vmax = v;
			}
	}
	if (!used || !n) {
		fputs("<p>No collective was seen on every rank of its communicator.</p>\n", f);
		return;
	}
	cell_w = 640 / used > 24 ? 24 : (640 / used < 4 ? 4 : 640 / used);
	W = L + used * cell_w + 20;
	H = T + n * cell_h + 50;
	fprintf(f, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", W, H, W, H);
	for (int k = 0, row = 0; k < an->nprocs; k++) {
		const struct an_proc *p = &an->procs[order[k]];
		int y = T + row * cell_h;

		if (p->rank < 0)
			continue;
		fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"lg\" text-anchor=\"end\">rank %lld</text>\n",
			L - 6, y + 12, (long long)p->rank);
		for (int b = 0; b < used; b++) {
			double v = p->heat_n[b] ? p->heat_sum[b] / p->heat_n[b] : 0;
			double t = vmax > 0 ? v / vmax : 0;
			int g = (int)(255 - 200 * t), rr = (int)(255 - 40 * t);

			an_fmt_ns(v, lab, sizeof(lab));
			if (!p->heat_n[b])
				rr = g = 0xf0;
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
				"fill=\"rgb(%d,%d,%d)\"><title>rank %lld, %.2f s: %s late on "
				"average (%u calls)</title></rect>", L + b * cell_w, y, cell_w, cell_h - 1,
				rr, g, g, (long long)p->rank,
				(double)b * (double)an->heat_w / 1e9, lab, p->heat_n[b]);
		}
		fputc('\n', f);
		row++;
	}
	for (int b = 0; b <= used; b += used > 8 ? used / 8 : 1)
		fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">%.2f s</text>\n",
			L + b * cell_w, T + n * cell_h + 14, (double)b * (double)an->heat_w / 1e9);
	an_fmt_ns(vmax, lab, sizeof(lab));
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\">time since the first collective; "
		"darkest = %s later than the median rank</text>\n</svg>\n", L, H - 8, lab);
}

static void tables(struct an_state *an, FILE *f)
{

	fputs("<h2>Collectives</h2>\n<table><tr><th>op</th><th>size</th><th>ranks</th>"
	      "<th>calls</th><th>mean</th><th>p50</th><th>p99</th><th>max</th>"
	      "<th>algbw GB/s</th><th>busbw GB/s</th></tr>\n", f);
	for (int i = 0; i < an->nrows; i++) {
		struct an_row *r = &an->rows[i];
		struct an_row_text t;

		an_row_text(r, &t);
		fprintf(f, "<tr%s><td>%s</td><td>%s</td><td>%d</td><td>%llu</td><td>%s</td>"
			"<td>%s</td><td>%s</td><td>%s</td><td>%.2f</td><td>%.2f</td></tr>\n",
			an_row_below_link(an, r) ? " class=\"slow\"" : "", an->ops[r->op], t.size,
			r->nranks, (unsigned long long)r->calls, t.mean, t.p50, t.p99, t.max,
			t.algbw, row_busbw(an, r));
	}
	fputs("</table>\n", f);
	if (an->nhosts > 1) {
		fputs("<h2>Clocks</h2>\n<table><tr><th>host</th><th>offset applied</th>"
		      "<th>samples</th></tr>\n", f);
		for (int i = 0; i < an->nhosts; i++) {
			fputs("<tr><td>", f);
			esc(f, an->hosts[i].name);
			fprintf(f, "%s</td><td>%+.3f ms</td><td>%d</td></tr>\n",
				i == an->ref_host ? " (reference)" : "",
				(double)an->hosts[i].offset_ns / 1e6, an->hosts[i].nsamples);
		}
		fputs("</table>\n", f);
	}
}

int an_report_html(struct an_state *an, FILE *f)
{
	int *order = an_rank_order(an);
	int nranks = 0;

	for (int i = 0; i < an->nprocs; i++)
		nranks += an->procs[i].rank >= 0;
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<title>ncclguard report</title>\n<style>\n"
	      "body{font:14px/1.45 system-ui,sans-serif;margin:24px 32px;color:#222;max-width:1100px}\n"
	      "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}\n"
	      ".meta{color:#666}ul.f{padding-left:0;list-style:none}\n"
	      "ul.f li{padding:4px 8px;margin:3px 0;border-left:4px solid #999;background:#f6f6f6}\n"
	      "ul.f li.bad{border-color:#c62828;background:#fdecea}\n"
	      "ul.f li.warn{border-color:#ef8f00;background:#fff6e5}\n"
	      "table{border-collapse:collapse}td,th{padding:3px 10px;border-bottom:1px solid #ddd;"
	      "text-align:right}th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}\n"
	      "tr.slow td{background:#fff0e0}h2.inc{color:#c62828}\n"
	      "svg text.ax{font-size:11px;fill:#555}svg text.lg{font-size:12px;fill:#222}\n"
	      "</style></head><body>\n<h1>ncclguard report</h1>\n", f);
	fprintf(f, "<p class=\"meta\">%d ranks on %d host%s &middot; %llu collectives matched",
		nranks, an->nhosts, an->nhosts == 1 ? "" : "s", (unsigned long long)an->matched);
	if (an->forced)
		fprintf(f, " (%llu of them not seen on every rank)", (unsigned long long)an->forced);
	fprintf(f, " &middot; %llu events, %llu lost &middot; ncclguard %s</p>\n",
		(unsigned long long)an->events, (unsigned long long)an->lost_events,
		NCCLGUARD_VERSION);
	if (an->ninc) {
		fputs("<h2 class=\"inc\">Incomplete: this report could not see everything</h2>\n"
		      "<ul class=\"f\">\n", f);
		for (int i = 0; i < an->ninc; i++) {
			fputs("<li class=\"bad\"><b>", f);
			esc(f, an->inc[i].what);
			fputs("</b>: ", f);
			esc(f, an->inc[i].detail);
			fputs("</li>\n", f);
		}
		if (an->inc_more)
			fprintf(f, "<li class=\"bad\">and %llu more</li>\n",
				(unsigned long long)an->inc_more);
		fputs("</ul>\n", f);
	}
	fputs("<h2>Findings</h2>\n<ul class=\"f\">\n", f);
	if (!an_findings(an, finding, f))
		fputs("<li>No hangs, mismatches, stragglers or config differences found.</li>\n", f);
	fputs("</ul>\n<h2>Bus bandwidth by message size</h2>\n", f);
	plot_busbw(an, f);
	fputs("<h2>Time in NCCL per rank</h2>\n", f);
	plot_comm(an, f, order, nranks);
	fputs("<h2>Stragglers: lateness per rank over time</h2>\n", f);
	plot_heat(an, f, order, nranks);
	tables(an, f);
	fputs("</body></html>\n", f);
	free(order);
	return ferror(f) ? -1 : 0;
}
