/*
 * The straggler heat map of report.html: a row per rank, a column per
 * interval of the run, each cell as dark as the rank was late to its
 * collectives in that interval against the median rank.  The map keeps
 * one width whatever the number of intervals; rows thin out for large
 * jobs and then only every k-th rank is named (a straggler always); the
 * time axis has round ticks far enough apart to read, and the colour
 * scale is drawn under it.  Past HEAT_ROWS ranks, runs of neighbouring
 * ranks share a row showing the latest of them, so the page stays a few
 * hundred KB at thousands of ranks; a straggler or a rank a finding
 * names keeps a row of its own.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define HEAT_PW		640	/* px: the map's width */
#define HEAT_L		130	/* px: rank labels */
#define HEAT_T		8
#define HEAT_LABEL_H	14	/* px between two rank labels */
#define HEAT_TITLES	20000	/* cells with a tooltip at most: the page stays small */
#define HEAT_ROWS	512	/* rows at most: more ranks share rows */
#define HEAT_CELLS	16384	/* cells at most once ranks share rows */
#define HEAT_KEEP	(HEAT_ROWS / 4)	/* ranks kept on rows of their own, at most */
#define HEAT_KEEP_S	"128"		/* HEAT_KEEP, said on the page */
_Static_assert(HEAT_KEEP == 128, "HEAT_KEEP_S says HEAT_KEEP");

/* A row of the map: rows[first .. first+n-1], in rank order; imp 2: a
 * flagged straggler, 1: a rank a finding names (both alone on a row). */
struct hrow {
	int first, n;
	char imp;
};

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

/* Column c of a row: the mean lateness of its latest rank there (k.sum
 * is then that mean, k.n 1), with the calls of all of them in *calls. */
static struct col row_column(const struct an_state *an, const int *rows, const struct hrow *h,
			     int c, int g, uint32_t *calls)
{
	struct col worst = { 0, 0 };

	*calls = 0;
	if (h->n == 1) {
		worst = column(&an->procs[rows[h->first]], c, g);
		*calls = worst.n;
		return worst;
	}
	for (int i = h->first; i < h->first + h->n; i++) {
		struct col k = column(&an->procs[rows[i]], c, g);

		*calls += k.n;
		if (k.n && (!worst.n || late(k) > worst.sum)) {
			worst.sum = late(k);
			worst.n = 1;
		}
	}
	return worst;
}

static void row_name(const struct an_state *an, const int *rows, const struct hrow *h,
		     char *buf, size_t len)
{
	long long a = an->procs[rows[h->first]].rank;
	long long b = an->procs[rows[h->first + h->n - 1]].rank;

	if (h->n == 1)
		snprintf(buf, len, "rank %lld", a);
	else
		snprintf(buf, len, "ranks %lld-%lld", a, b);
}

/* White (on time) to dark red (the latest); no call: blue-grey. */
static void cell(FILE *f, const char *who, int many, struct col k, uint32_t calls, double vmax,
		 double x, double w, int y, int h, int title, double from_ns)
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
		if (many)
			fprintf(f, "<title>%s from %s: the latest of them %s late on average "
				"(%u calls)</title>", who, at, lab, calls);
		else
			fprintf(f, "<title>%s from %s: %s late on average (%u calls)</title>",
				who, at, lab, calls);
	}
	fputs("</rect>", f);
}

/* The colour of a grouped cell, in 16 steps so that neighbours merge. */
static void fill_of(struct col k, double vmax, char *buf, size_t len)
{
	double t = vmax > 0 ? floor(late(k) / vmax * 16 + 0.5) / 16 : 0;

	if (k.n)
		snprintf(buf, len, "#%02x%02x%02x", (int)(255 - 75 * t), (int)(255 - 230 * t),
			 (int)(255 - 230 * t));
	else
		snprintf(buf, len, "#e3e8ec");
}

/* A row of a grouped map without tooltips: neighbouring cells of one
 * colour drawn as one rect, most of a large healthy job being white. */
static void runs(FILE *f, const struct an_state *an, const int *rows, const struct hrow *h,
		 int cols, int g, double vmax, double cw, int y, int hgt)
{
	char fill[16], next[16];
	uint32_t calls;
	int c0 = 0;

	fill_of(row_column(an, rows, h, 0, g, &calls), vmax, fill, sizeof(fill));
	for (int c = 1; c <= cols; c++) {
		if (c < cols) {
			fill_of(row_column(an, rows, h, c, g, &calls), vmax, next, sizeof(next));
			if (!strcmp(next, fill))
				continue;
		}
		fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>",
			HEAT_L + c0 * cw, y, (c - c0) * cw + 0.3, hgt, fill);
		c0 = c;
		if (c < cols)
			memcpy(fill, next, sizeof(fill));
	}
}

/* Which rows get a label (lab[r] 1, or 2 for a straggler; 3: a straggler
 * marked but not named, too close to another): every straggler that keeps
 * HEAT_LABEL_H px from the one above, then every k-th row that keeps as
 * far from the labels placed. */
static void pick_labels(const struct hrow *hr, int n, int ch, char *lab)
{
	int every = (HEAT_LABEL_H + ch - 1) / ch, last = -HEAT_LABEL_H;

	for (int r = 0; r < n; r++) {
		lab[r] = 0;
		if (!hr[r].imp)
			continue;
		if (r * ch - last >= HEAT_LABEL_H)
			lab[r] = hr[r].imp == 2 ? 2 : 4;
		else
			lab[r] = hr[r].imp == 2 ? 3 : 0;
		if (lab[r] == 2 || lab[r] == 4)
			last = r * ch;
	}
	last = -HEAT_LABEL_H;
	for (int r = 0; r < n; r++) {
		int room = 1;

		if (lab[r] == 2 || lab[r] == 4)
			last = r * ch;
		if (lab[r] || r % every || r * ch - last < HEAT_LABEL_H)
			continue;
		for (int s = r + 1; s < n && (s - r) * ch < HEAT_LABEL_H && room; s++)
			room = lab[s] != 2 && lab[s] != 4;
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

/* The position in rows[] of a process with this rank, or -1. */
static int find_rank(const struct an_state *an, const int *rows, int n, int64_t rank)
{
	int lo = 0, hi = n - 1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		int64_t r = an->procs[rows[mid]].rank;

		if (r == rank)
			return mid;
		if (r < rank)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* Marks in imp[] the ranks kept alone: the flagged stragglers, then the
 * ranks the findings name, worst finding first, HEAT_KEEP at most.
 * Returns non-zero if some were left in their groups. */
static int keep_ranks(struct an_state *an, const int *rows, int n, char *imp)
{
	const struct an_finding *fd;
	int nf = an_findings_list(an, &fd), kept = 0, over = 0;

	for (int r = 0; r < n; r++)
		if (an_straggler_flagged(an, &an->procs[rows[r]])) {
			if (kept == HEAT_KEEP) {
				over++;
				continue;
			}
			imp[r] = 2;
			kept++;
		}
	for (int i = 0; i < nf; i++)
		for (int j = 0; j < fd[i].nranks; j++) {
			int r = find_rank(an, rows, n, fd[i].ranks[j]);

			if (r < 0 || imp[r] || an_straggler_flagged(an, &an->procs[rows[r]]))
				continue;
			if (kept == HEAT_KEEP) {
				over++;
				continue;
			}
			imp[r] = 1;
			kept++;
		}
	return over;
}

/* The rows for groups of per ranks (whole multiples of per in rank
 * order, a kept rank cut out alone); returns how many, or with
 * out NULL only counts. */
static int group(const char *imp, int n, int per, struct hrow *out)
{
	int nr = 0;

	for (int r = 0; r < n;) {
		int e = r + 1;

		if (!imp[r])
			while (e < n && !imp[e] && e / per == r / per)
				e++;
		if (out)
			out[nr] = (struct hrow){ .first = r, .n = e - r, .imp = imp[r] };
		nr++;
		r = e;
	}
	return nr;
}

void an_html_heat(struct an_state *an, FILE *f, const int *order)
{
	int used = 0, nrows = 0, nr, ch, W, H, title, flagged = 0, g, cols, per = 1, over = 0;
	int *rows = an_xcalloc((size_t)an->nprocs + 1, sizeof(*rows));
	char *lab = an_xcalloc((size_t)an->nprocs + 1, 1), worst[32], who[48];
	char *imp = an_xcalloc((size_t)an->nprocs + 1, 1);
	struct hrow *hr = NULL;
	double vmax = 0, cw, span;
	uint32_t calls;

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
	if (nrows > HEAT_ROWS) {
		over = keep_ranks(an, rows, nrows, imp);
		for (per = 2; per < nrows; per *= 2) {
			int n = group(imp, nrows, per, NULL);

			if (n <= HEAT_ROWS && (long)n * cols <= HEAT_CELLS)
				break;
		}
	} else {
		for (int r = 0; r < nrows; r++)
			imp[r] = an_straggler_flagged(an, &an->procs[rows[r]]) ? 2 : 0;
	}
	hr = an_xcalloc((size_t)nrows, sizeof(*hr));
	nr = group(imp, nrows, per, hr);
	for (int r = 0; r < nr; r++)
		for (int c = 0; c < cols; c++) {
			double v = late(row_column(an, rows, &hr[r], c, g, &calls));

			vmax = v > vmax ? v : vmax;
		}
	ch = nr <= 24 ? 16 : nr <= 64 ? 10 : nr <= 200 ? 5 : nr <= 600 ? 2 : 1;
	cw = (double)HEAT_PW / cols;
	span = (double)cols * g * (double)an->heat_w;
	/* Grouped: tooltips only on the rows of single ranks kept. */
	title = per > 1 ? -1 : (long)nr * cols <= HEAT_TITLES;
	W = HEAT_L + HEAT_PW + 24;
	H = HEAT_T + nr * ch + 78;
	pick_labels(hr, nr, ch, lab);
	an_html_svg(f, W, H, "lateness per rank over time");
	for (int r = 0; r < nr; r++) {
		int y = HEAT_T + r * ch;

		row_name(an, rows, &hr[r], who, sizeof(who));
		if (title < 0 && !hr[r].imp)
			runs(f, an, rows, &hr[r], cols, g, vmax, cw, y, ch > 5 ? ch - 1 : ch);
		else
			for (int c = 0; c < cols; c++) {
				struct col k = row_column(an, rows, &hr[r], c, g, &calls);

				cell(f, who, hr[r].n > 1, k, calls, vmax, HEAT_L + c * cw, cw + 0.3,
				     y, ch > 5 ? ch - 1 : ch, title != 0,
				     (double)c * g * (double)an->heat_w);
			}
		if (lab[r] == 2 || lab[r] == 3)
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"4\" height=\"%d\" "
				"fill=\"#c62828\"/>", HEAT_L - 6, y, ch > 2 ? ch : 2);
		if (lab[r] == 1 || lab[r] == 2 || lab[r] == 4)
			fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"hl%s\" text-anchor=\"end\">"
				"%s</text>", HEAT_L - 10, y + ch / 2 + 4,
				lab[r] == 2 ? " st" : "", who);
		fputc('\n', f);
	}
	time_axis(f, span, HEAT_T + nr * ch);
	scale(f, vmax, HEAT_T + nr * ch + 48);
	fputs("</svg>\n", f);
	an_fmt_ns(vmax, worst, sizeof(worst));
	fprintf(f, "<p class=\"cap\">Each cell: how late the rank arrived at its collectives in "
		"that interval, against the median rank (the mean over its calls then); the "
		"darkest is %s late.", worst);
	if (per > 1)
		fprintf(f, " <span class=\"grouped\">Rows grouped: %d ranks on %d rows, up to %d "
			"neighbouring ranks to a row, each cell the latest of them; %s keeps a row "
			"of its own%s. Each rank's own figures: stragglers[], comm_fraction[] and "
			"ranks[] in report.json.</span>", nrows, nr, per,
			over ? "the first " HEAT_KEEP_S " stragglers and ranks findings name: each" :
			"every straggler and every rank a finding names",
			over ? ", the others are in their groups" : "");
	else if (ch < HEAT_LABEL_H)
		fputs(" Not every rank is named: the rows are too thin.", f);
	if (flagged)
		fprintf(f, " Marked in red: %d straggler%s.", flagged, flagged == 1 ? "" : "s");
	fputs("</p>\n", f);
out:
	free(rows);
	free(lab);
	free(imp);
	free(hr);
}
