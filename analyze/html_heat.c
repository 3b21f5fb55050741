/*
 * The straggler heat map of report.html: a row per rank, a column per
 * interval of the run, each cell as dark as the rank was late to its
 * collectives in that interval against the median rank.  The map keeps
 * one width whatever the number of intervals; rows thin out for large
 * jobs and then only every k-th rank is named (a straggler always); the
 * time axis has round ticks far enough apart to read, and the colour
 * scale is drawn under it.
 */
#include <math.h>
#include <stdlib.h>

#include "an_priv.h"

#define HEAT_PW		640	/* px: the map's width */
#define HEAT_L		130	/* px: rank labels */
#define HEAT_T		8
#define HEAT_LABEL_H	14	/* px between two rank labels */
#define HEAT_TITLES	20000	/* cells with a tooltip at most: the page stays small */

/* Column c: bins c*g .. c*g+g-1 of a rank, summed. */
struct col {
	double sum;
	uint32_t n;
};

static struct col column(const struct an_proc *p, int c, int g)
{
	struct col k = { 0, 0 };

	for (int b = c * g; b < c * g + g && b < AN_HEAT_BINS; b++) {
		k.sum += p->heat_sum[b];
		k.n += p->heat_n[b];
	}
	return k;
}

static double late(struct col k)
{
	return k.n ? k.sum / k.n : 0;
}

/* Bins per column: as few merged as leave four columns in five with a
 * call, or at most 16 columns. */
static int bins_per_col(const struct an_state *an, const int *rows, int nrows, int used)
{
	int g = 1;

	for (;; g *= 2) {
		int cols = (used + g - 1) / g, full = 0;

		if (cols <= 16)
			return g;
		for (int c = 0; c < cols; c++) {
			int any = 0;

			for (int r = 0; r < nrows && !any; r++)
				any = column(&an->procs[rows[r]], c, g).n > 0;
			full += any;
		}
		if (full * 5 >= cols * 4)
			return g;
	}
}

/* White (on time) to dark red (the latest); no call: blue-grey. */
static void cell(FILE *f, const struct an_proc *p, struct col k, double vmax, double x,
		 double w, int y, int h, int title, double from_ns)
{
	double t = vmax > 0 ? late(k) / vmax : 0;
	char lab[32], at[32];

	if (k.n)
		fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
			"fill=\"rgb(%d,%d,%d)\">", x, y, w, h, (int)(255 - 75 * t),
			(int)(255 - 230 * t), (int)(255 - 230 * t));
	else
		fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
			"fill=\"#e3e8ec\">", x, y, w, h);
	if (title) {
		an_fmt_ns(late(k), lab, sizeof(lab));
		an_fmt_ns(from_ns, at, sizeof(at));
		fprintf(f, "<title>rank %lld from %s: %s late on average (%u calls)</title>",
			(long long)p->rank, at, lab, k.n);
	}
	fputs("</rect>", f);
}

/* Which rows get a label (lab[r] 1, or 2 for a straggler; 3: a straggler
 * marked but not named, too close to another): every straggler that keeps
 * HEAT_LABEL_H px from the one above, then every k-th row that keeps as
 * far from the labels placed. */
static void pick_labels(struct an_state *an, const int *rows, int n, int ch, char *lab)
{
	int every = (HEAT_LABEL_H + ch - 1) / ch, last = -HEAT_LABEL_H;

	for (int r = 0; r < n; r++) {
		lab[r] = 0;
		if (!an_straggler_flagged(an, &an->procs[rows[r]]))
			continue;
		lab[r] = r * ch - last >= HEAT_LABEL_H ? 2 : 3;
		if (lab[r] == 2)
			last = r * ch;
	}
	last = -HEAT_LABEL_H;
	for (int r = 0; r < n; r++) {
		int room = 1;

		if (lab[r] == 2)
			last = r * ch;
		if (lab[r] || r % every || r * ch - last < HEAT_LABEL_H)
			continue;
		for (int s = r + 1; s < n && (s - r) * ch < HEAT_LABEL_H && room; s++)
			room = lab[s] != 2;
		if (room) {
			lab[r] = 1;
			last = r * ch;
		}
	}
}

static void time_axis(FILE *f, double span, int y)
{
	double step = an_html_step(span, HEAT_PW / 90);
	char lab[32];

	for (int k = 0; k * step <= span * (1 + 1e-9); k++) {
		double x = HEAT_L + k * step / span * HEAT_PW;

		an_html_tick_ns(k * step, step, span, 0, lab, sizeof(lab));
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#999\"/>"
			"<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">%s</text>\n",
			x, x, y, y + 4, x, y + 17, lab);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ti\" text-anchor=\"middle\">time since the "
		"first collective</text>\n", HEAT_L + HEAT_PW / 2, y + 36);
}

static void scale(FILE *f, double vmax, int y)
{
	char lab[32];

	an_fmt_ns(vmax, lab, sizeof(lab));
	fprintf(f, "<defs><linearGradient id=\"ng-heat-scale\"><stop offset=\"0\" "
		"stop-color=\"rgb(255,255,255)\"/><stop offset=\"1\" "
		"stop-color=\"rgb(180,25,25)\"/></linearGradient></defs>\n"
		"<rect x=\"%d\" y=\"%d\" width=\"200\" height=\"10\" "
		"fill=\"url(#ng-heat-scale)\" stroke=\"#bbb\"/>"
		"<text x=\"%d\" y=\"%d\" class=\"ax\">on time</text>"
		"<text x=\"%d\" y=\"%d\" class=\"ax\" text-anchor=\"end\">%s late</text>\n"
		"<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"10\" fill=\"#e3e8ec\"/>"
		"<text x=\"%d\" y=\"%d\" class=\"ax\">no collective then</text>\n",
		HEAT_L, y, HEAT_L, y + 24, HEAT_L + 200, y + 24, lab, HEAT_L + 240, y,
		HEAT_L + 260, y + 9);
}

void an_html_heat(struct an_state *an, FILE *f, const int *order)
{
	int used = 0, nrows = 0, ch, W, H, title, flagged = 0, g, cols;
	int *rows = an_xcalloc((size_t)an->nprocs + 1, sizeof(*rows));
	char *lab = an_xcalloc((size_t)an->nprocs + 1, 1), worst[32];
	double vmax = 0, cw, span;

	for (int k = 0; k < an->nprocs; k++) {
		const struct an_proc *p = &an->procs[order[k]];

		if (p->rank < 0)
			continue;
		rows[nrows++] = order[k];
		flagged += an_straggler_flagged(an, p);
		for (int b = 0; b < AN_HEAT_BINS; b++)
			if (p->heat_n[b])
				used = b + 1 > used ? b + 1 : used;
	}
	if (!used || !nrows) {
		fputs("<p class=\"empty\">No collective was seen on every rank of its "
		      "communicator with each rank's own arrival time: nothing to compare."
		      "</p>\n", f);
		goto out;
	}
	g = bins_per_col(an, rows, nrows, used);
	cols = (used + g - 1) / g;
	for (int r = 0; r < nrows; r++)
		for (int c = 0; c < cols; c++) {
			double v = late(column(&an->procs[rows[r]], c, g));

			vmax = v > vmax ? v : vmax;
		}
	ch = nrows <= 24 ? 16 : nrows <= 64 ? 10 : nrows <= 200 ? 5 : nrows <= 600 ? 2 : 1;
	cw = (double)HEAT_PW / cols;
	span = (double)cols * g * (double)an->heat_w;
	title = (long)nrows * cols <= HEAT_TITLES;
	W = HEAT_L + HEAT_PW + 24;
	H = HEAT_T + nrows * ch + 78;
	pick_labels(an, rows, nrows, ch, lab);
	an_html_svg(f, W, H, "lateness per rank over time");
	for (int r = 0; r < nrows; r++) {
		const struct an_proc *p = &an->procs[rows[r]];
		int y = HEAT_T + r * ch;

		for (int c = 0; c < cols; c++)
			cell(f, p, column(p, c, g), vmax, HEAT_L + c * cw, cw + 0.3, y,
			     ch > 5 ? ch - 1 : ch, title, (double)c * g * (double)an->heat_w);
		if (lab[r] >= 2)
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"4\" height=\"%d\" "
				"fill=\"#c62828\"/>", HEAT_L - 6, y, ch > 2 ? ch : 2);
		if (lab[r] == 1 || lab[r] == 2)
			fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"hl%s\" text-anchor=\"end\">"
				"rank %lld</text>", HEAT_L - 10, y + ch / 2 + 4,
				lab[r] == 2 ? " st" : "", (long long)p->rank);
		fputc('\n', f);
	}
	time_axis(f, span, HEAT_T + nrows * ch);
	scale(f, vmax, HEAT_T + nrows * ch + 48);
	fputs("</svg>\n", f);
	an_fmt_ns(vmax, worst, sizeof(worst));
	fprintf(f, "<p class=\"cap\">Each cell: how late the rank arrived at its collectives in "
		"that interval, against the median rank (the mean over its calls then); the "
		"darkest is %s late.", worst);
	if (ch < HEAT_LABEL_H)
		fputs(" Not every rank is named: the rows are too thin.", f);
	if (flagged)
		fprintf(f, " Marked in red: %d straggler%s.", flagged, flagged == 1 ? "" : "s");
	fputs("</p>\n", f);
out:
	free(rows);
	free(lab);
}
