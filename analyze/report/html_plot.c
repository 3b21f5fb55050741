/*
 * Two plots of report.html: bus bandwidth against message size, a line
 * per op and comm size (or a point each, for one size), with the link's
 * speed where --link-gbps gives it; and the share of each rank's time
 * spent in NCCL.  Ticks fall on round numbers and keep apart.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static double row_busbw(const struct an_state *an, const struct an_row *r)
{
	double algbw = r->time_sum_ns > 0 ? (double)r->bytes_sum_timed / r->time_sum_ns : 0;

	return algbw * an_busbw_factor(an->ops[r->op], r->nranks);
}

static int plotted(const struct an_row *r)
{
	return r->timed && r->bucket >= 0 && r->time_sum_ns > 0;
}

/* The plot area: x in log2 size buckets x0..x1, y from 0 to y1. */
struct frame {
	int L, T, PW, PH;
	double x0, x1, y1, unit;	/* unit: GB/s per axis unit */
};

static double fx(const struct frame *fr, double b)
{
	return fr->L + (b - fr->x0) * fr->PW / (fr->x1 - fr->x0);
}

static double fy(const struct frame *fr, double gbps)
{
	return fr->T + fr->PH * (1 - gbps / fr->unit / fr->y1);
}

/* Sizes along x, every k-th bucket so that the labels keep apart. */
static void x_axis(const struct frame *fr, FILE *f)
{
	double per = fr->PW / (fr->x1 - fr->x0);
	int lo = fr->x0 < 0 ? 0 : (int)ceil(fr->x0), hi = (int)floor(fr->x1), k = 1;
	char lab[32];
	double widest = 0;

	for (int b = lo; b <= hi; b++) {
		an_fmt_bytes(1ULL << b, lab, sizeof(lab));
		if (an_html_text_w(lab, 11) > widest)
			widest = an_html_text_w(lab, 11);
	}
	while (per * k < widest + 14)
		k++;
	for (int b = lo; b <= hi; b++) {
		if (b % k)
			continue;
		an_fmt_bytes(1ULL << b, lab, sizeof(lab));
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#999\"/>"
			"<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">%s</text>\n",
			fx(fr, b), fx(fr, b), fr->T + fr->PH, fr->T + fr->PH + 4, fx(fr, b),
			fr->T + fr->PH + 20, lab);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ti\" text-anchor=\"middle\">message size "
		"(nccl-tests' size)</text>\n", fr->L + fr->PW / 2, fr->T + fr->PH + 42);
}

static void y_axis(const struct frame *fr, FILE *f, double step)
{
	char lab[32];

	for (int k = 0; k * step <= fr->y1 * (1 + 1e-9); k++) {
		double v = k * step;

		an_html_tick(v, step, lab, sizeof(lab));
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
			"<text x=\"%d\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%s</text>\n",
			fr->L, fr->L + fr->PW, fy(fr, v * fr->unit), fy(fr, v * fr->unit),
			fr->L - 6, fy(fr, v * fr->unit) + 4, lab);
	}
	fprintf(f, "<text x=\"14\" y=\"%d\" class=\"ti\" transform=\"rotate(-90 14 %d)\" "
		"text-anchor=\"middle\">bus bandwidth, %s</text>\n", fr->T + fr->PH / 2,
		fr->T + fr->PH / 2, fr->unit == 1 ? "GB/s" : "MB/s");
}

static void link_line(const struct an_state *an, const struct frame *fr, FILE *f)
{
	double y = fy(fr, an->opts.link_gbps);
	char lab[32];

	if (an->opts.link_gbps <= 0)
		return;
	an_html_tick(an->opts.link_gbps, an->opts.link_gbps >= 10 ? 1 : 0.1, lab, sizeof(lab));
	/* Above the line, or below it where the top of the plot is near. */
	fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
		"stroke-dasharray=\"6 4\"/><text x=\"%d\" y=\"%.1f\" class=\"ax\" "
		"text-anchor=\"end\">link %s GB/s (--link-gbps)</text>\n", fr->L, fr->L + fr->PW,
		y, y, fr->L + fr->PW - 4, y - 5 < fr->T + 12 ? y + 14 : y - 5, lab);
}

/* One op and comm size: rows i..j-1 (rows are sorted by op, comm size,
 * size).  Returns the points drawn. */
static int series(struct an_state *an, const struct frame *fr, FILE *f, int i, int j,
		  const char *col)
{
	char lab[32];
	int pts = 0;

	for (int k = i; k < j; k++)
		pts += plotted(&an->rows[k]);
	if (pts > 1) {
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
			col);
		for (int k = i; k < j; k++)
			if (plotted(&an->rows[k]))
				fprintf(f, "%.1f,%.1f ", fx(fr, an->rows[k].bucket),
					fy(fr, row_busbw(an, &an->rows[k])));
		fputs("\"/>\n", f);
	}
	for (int k = i; k < j; k++) {
		const struct an_row *r = &an->rows[k];

		if (!plotted(r))
			continue;
		an_fmt_bytes(1ULL << r->bucket, lab, sizeof(lab));
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>",
			fx(fr, r->bucket), fy(fr, row_busbw(an, r)), col);
		an_html_esc(f, an->ops[r->op]);
		fprintf(f, " %s on %d ranks: %.3g GB/s bus bandwidth, %llu calls</title>"
			"</circle>\n", lab, r->nranks, row_busbw(an, r),
			(unsigned long long)r->calls);
	}
	return pts;
}

/* The legend entry: the op's name cut so that the entry fits. */
static void legend(struct an_state *an, FILE *f, int x, int y, const struct an_row *r,
		   const char *col, int room)
{
	char tail[32];
	int fit;

	snprintf(tail, sizeof(tail), ", %d ranks", r->nranks);
	fit = (int)(room / (0.64 * 11)) - (int)strlen(tail);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
		"<text x=\"%d\" y=\"%d\" class=\"lg\">", x, y - 10, col, x + 18, y);
	an_html_esc_cut(f, an->ops[r->op], fit > 4 ? fit : 4);
	fprintf(f, "%s</text>\n", tail);
}

void an_html_bandwidth(struct an_state *an, FILE *f)
{
	struct frame fr = { .L = 72, .T = 16, .PW = 480, .PH = 270, .unit = 1 };
	const int R = 220, B = 50, pitch = 18;
	int bmin = 64, bmax = -1, nser = 0, sizes = 0, H, ser = 0;
	double ymax = 0, step;
	uint64_t seen = 0;

	for (int i = 0; i < an->nrows; i++) {
		const struct an_row *r = &an->rows[i];

		if (i == 0 || r->op != an->rows[i - 1].op || r->nranks != an->rows[i - 1].nranks)
			nser++;
		if (!plotted(r))
			continue;
		bmin = r->bucket < bmin ? r->bucket : bmin;
		bmax = r->bucket > bmax ? r->bucket : bmax;
		if (r->bucket < 64 && !(seen & (1ULL << r->bucket)))
			sizes++;
		if (r->bucket < 64)
			seen |= 1ULL << r->bucket;
		ymax = row_busbw(an, r) > ymax ? row_busbw(an, r) : ymax;
	}
	if (bmax < 0) {
		char hint[160];

		fprintf(f, "<p class=\"empty\">No collective was timed on the GPU, so there is no "
			"bandwidth to plot (%s).</p>\n", an_untimed_hint(an, hint, sizeof(hint)));
		return;
	}
	if (an->opts.link_gbps > ymax)
		ymax = an->opts.link_gbps;
	if (!(ymax > 0))
		ymax = 1;
	/* Below 1 GB/s the axis reads in MB/s. */
	if (ymax * 1.05 < 1)
		fr.unit = 1e-3;
	step = an_html_step(ymax * 1.05 / fr.unit, 5);
	fr.y1 = ceil(ymax * 1.05 / fr.unit / step - 1e-9) * step;
	/* One size: centred, a bucket of room either side. */
	fr.x0 = bmin == bmax ? bmin - 1 : bmin;
	fr.x1 = bmin == bmax ? bmax + 1 : bmax;
	H = fr.T + fr.PH + B;
	if (fr.T + 12 + nser * pitch + 8 > H)
		H = fr.T + 12 + nser * pitch + 8;
	if (sizes == 1)
		fputs("<p class=\"note\">One message size: one point per operation (the table "
		      "below has the numbers).</p>\n", f);
	an_html_svg(f, fr.L + fr.PW + R, H, "bus bandwidth by message size");
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
		"stroke=\"#ccc\"/>\n", fr.L, fr.T, fr.PW, fr.PH);
	y_axis(&fr, f, step);
	x_axis(&fr, f);
	link_line(an, &fr, f);
	for (int i = 0; i < an->nrows;) {
		int j = i;

		while (j < an->nrows && an->rows[j].op == an->rows[i].op &&
		       an->rows[j].nranks == an->rows[i].nranks)
			j++;
		if (series(an, &fr, f, i, j, an_html_color(ser))) {
			legend(an, f, fr.L + fr.PW + 14, fr.T + 12 + ser * pitch, &an->rows[i],
			       an_html_color(ser), R - 14 - 18 - 6);
			ser++;
		}
		i = j;
	}
	fputs("</svg>\n", f);
}

/* A rank's bar: its GPU time in NCCL collectives over its wall time. */
static void busy_bar(struct an_state *an, FILE *f, const struct an_proc *p, int y, int bar,
		     int L, int PW)
{
	double fr = an_comm_fraction(p);
	char busy[32], note[128];

	an_fmt_ns((double)an_busy_time(p), busy, sizeof(busy));
	an_busy_note(p, note, sizeof(note));
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"lg\" text-anchor=\"end\">rank %lld ",
		L - 8, y + bar - 3, (long long)p->rank);
	an_html_esc_cut(f, an_html_host(an, p), 18);
	fprintf(f, "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#eee\"/>"
		"<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#1f77b4\"/>"
		"<text x=\"%d\" y=\"%d\" class=\"lg\">%.1f%% (%s%s%s)</text>\n", L, y, PW, bar,
		L, y, fr * PW, bar, L + PW + 6, y + bar - 3, 100 * fr, busy, *note ? "; " : "",
		note);
}

static const struct an_state *busy_an;

static int cmp_busy(const void *a, const void *b)
{
	double x = an_comm_fraction(&busy_an->procs[*(const int *)a]);
	double y = an_comm_fraction(&busy_an->procs[*(const int *)b]);

	return (x > y) - (x < y);
}

/* Up to MANY ranks in rank order; past that the FEW least and most busy. */
#define BUSY_MANY	64
#define BUSY_FEW	12
void an_html_busy(struct an_state *an, FILE *f, const int *order, int n)
{
	const int L = 210, PW = 380;
	int R = 130, bar = n <= 32 ? 16 : 12, pitch = bar + 4, shown = 0, cut = 0, H, y = 6, k;
	int *pick = an_xcalloc((size_t)an->nprocs + 1, sizeof(*pick));
	uint64_t calls, timed;
	char hint[160];

	for (k = 0; k < an->nprocs; k++)
		if (an->procs[order[k]].rank >= 0)
			pick[shown++] = order[k];
	if (!shown) {
		fputs("<p class=\"empty\">No rank announced itself (process_info).</p>\n", f);
		goto out;
	}
	if (shown > BUSY_MANY) {
		cut = 1;
		busy_an = an;
		qsort(pick, shown, sizeof(*pick), cmp_busy);
		busy_an = NULL;
		memmove(pick + BUSY_FEW, pick + shown - BUSY_FEW, BUSY_FEW * sizeof(*pick));
		fprintf(f, "<p class=\"note\">%d ranks: the %d least and the %d most busy, "
			"the %d between not drawn.</p>\n", shown, BUSY_FEW, BUSY_FEW,
			shown - 2 * BUSY_FEW);
		shown = 2 * BUSY_FEW;
	}
	/* Room for a note beside a figure (an_busy_note()). */
	for (k = 0; k < shown; k++) {
		char note[128];

		if (*an_busy_note(&an->procs[pick[k]], note, sizeof(note)) &&
		    130 + 6 * (int)strlen(note) > R)
			R = 130 + 6 * (int)strlen(note);
	}
	H = y + shown * pitch + (cut ? pitch : 0) + 4;
	an_html_svg(f, L + PW + R, H, "time in NCCL per rank");
	for (k = 0; k < shown; k++) {
		if (cut && k == BUSY_FEW) {
			fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"lg\">&#x22ee;</text>\n", L,
				y + bar - 3);
			y += pitch;
		}
		busy_bar(an, f, &an->procs[pick[k]], y, bar, L, PW);
		y += pitch;
	}
	fputs("</svg>\n", f);
	an_rows_timed(an, &calls, &timed);
	fputs("<p class=\"cap\">The share of each rank's wall time (its first to its last "
	      "event) that its GPU spent in NCCL collectives", f);
	/* Sampled GPU timing: say how much of it is an estimate. */
	if (timed < calls)
		fprintf(f, "; %llu of %llu collectives were timed on the GPU, the others are "
			"counted at their rank's mean time for the same operation and size "
			"(%s)", (unsigned long long)timed, (unsigned long long)calls,
			an_untimed_hint(an, hint, sizeof(hint)));
	fputs(".</p>\n", f);
out:
	free(pick);
}
