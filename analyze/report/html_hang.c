/*
 * Each hang of report.html drawn: a row per rank of the hung comm with
 * its last calls around the hung one on a time axis, the hung call
 * running on to the end of the trace where the rank waits in it, the
 * ranks not in it marked (never entered, exited, killed), the watchdogs'
 * timeouts as ticks, and each rank's state in words beside its row.  The
 * axis is cut in two where the wait dwarfs the calls: the calls at a
 * scale that shows them, then the wait, squeezed, to the end of the
 * trace.  A hung send or recv is a table.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define HG_L	150	/* px: rank labels */
#define HG_PA	400	/* the calls */
#define HG_GAP	16	/* the cut */
#define HG_PB	130	/* the wait, to the end of the trace */
#define HG_S	250	/* each rank's state */
#define HG_T	6
#define HG_ROW	30
#define HG_ROWS	12	/* ranks drawn at most */
#define HG_W	(HG_L + HG_PA + HG_GAP + HG_PB + HG_S)

struct axis {
	int64_t a0, a1, end, zero;	/* the calls' span, the trace's end, time zero */
	int cut;			/* the wait squeezed past the cut */
};

static double tx(const struct axis *ax, int64_t t)
{
	if (t < ax->a0)
		t = ax->a0;
	if (t > ax->end)
		t = ax->end;
	if (!ax->cut)
		return HG_L + (double)(t - ax->a0) / (double)(ax->end - ax->a0) *
			(HG_PA + HG_GAP + HG_PB);
	if (t <= ax->a1)
		return HG_L + (double)(t - ax->a0) / (double)(ax->a1 - ax->a0) * HG_PA;
	return HG_L + HG_PA + HG_GAP + (double)(t - ax->a1) / (double)(ax->end - ax->a1) * HG_PB;
}

/* Text placed on a line: intervals taken, so that labels never overlap. */
struct lane {
	double lo[64], hi[64];
	int n;
};

static int lane_take(struct lane *ln, double lo, double hi)
{
	for (int i = 0; i < ln->n; i++)
		if (lo < ln->hi[i] + 4 && hi > ln->lo[i] - 4)
			return 0;
	if (ln->n == 64)
		return 0;
	ln->lo[ln->n] = lo;
	ln->hi[ln->n++] = hi;
	return 1;
}

static int row_state(const struct an_hang *h, int64_t rank)
{
	for (int i = 0; i < h->nstate; i++)
		if (h->state_rank[i] == rank)
			return h->state[i];
	return -1;
}

static int in_list(const int64_t *r, int n, int64_t rank)
{
	for (int i = 0; i < n; i++)
		if (r[i] == rank)
			return 1;
	return 0;
}

/* A row of the drawing: a member of the comm, or a rank that should be
 * and never began its init (no row of the hang: proc -1 if no process
 * of the trace has that rank). */
struct drow {
	const struct an_hang_row *row;	/* NULL: not a member */
	int64_t rank;
	int proc, in;			/* in: in the hung call or init */
};

static void state_words(const struct an_hang *h, const struct drow *d, char *buf, size_t len)
{
	uint64_t drop = 0;

	for (int i = 0; i < h->nstate; i++)
		if (h->state_rank[i] == d->rank)
			drop = h->drop_seq[i];
	if (!h->seq) {
		snprintf(buf, len, "%s", d->in ? "in its init" : d->proc < 0 ?
			 "never began its init (no events)" : "never began its init");
		return;
	}
	switch (row_state(h, d->rank)) {
	case AN_RS_WAITING: snprintf(buf, len, "waiting in it on the GPU"); break;
	case AN_RS_HOST: snprintf(buf, len, "stuck inside the host call"); break;
	case AN_RS_NEVER:
		if (drop == h->seq)
			snprintf(buf, len, "never entered it (dropped)");
		else if (drop)
			snprintf(buf, len, "never entered (dropped seq %llu)",
				 (unsigned long long)drop);
		else
			snprintf(buf, len, "never entered it");
		break;
	case AN_RS_AHEAD: snprintf(buf, len, "out of step: ran its own seq %llu",
				   (unsigned long long)h->seq); break;
	case AN_RS_EXITED: snprintf(buf, len, "exited (its comm_end came)"); break;
	case AN_RS_KILLED: snprintf(buf, len, "killed (flight ring read)"); break;
	default: snprintf(buf, len, "unknown"); break;
	}
}

/* The span the calls take, time zero (the first arrival at the hung
 * call, or the first init), and whether the wait is cut short. */
static void make_axis(const struct an_state *an, const struct an_hang *h,
		      const struct drow *rows, int n, struct axis *ax)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN, zero = INT64_MAX, span;

	for (int r = 0; r < n; r++) {
		const struct an_hang_row *row = rows[r].row;

		if (!row)
			continue;
		if (!h->seq && row->init_ns > 0 && rows[r].in) {
			lo = row->init_ns < lo ? row->init_ns : lo;
			hi = row->init_ns > hi ? row->init_ns : hi;
			zero = row->init_ns < zero ? row->init_ns : zero;
		}
		for (int k = 0; h->seq && k < row->ncalls; k++) {
			const struct an_call *c = &row->calls[k];

			lo = c->enter_ns < lo ? c->enter_ns : lo;
			hi = c->enter_ns > hi ? c->enter_ns : hi;
			hi = c->exit_ns > hi ? c->exit_ns : hi;
			hi = c->end_ns > hi ? c->end_ns : hi;
			if (c->seq == h->seq && c->enter_ns < zero)
				zero = c->enter_ns;
		}
	}
	if (lo == INT64_MAX)
		lo = hi = an->last_ts;
	if (zero == INT64_MAX)
		zero = lo;
	span = hi - lo > 1000 ? hi - lo : 1000;
	ax->a0 = lo - span / 25;
	ax->a1 = hi + span / 16;
	ax->end = an->last_ts > ax->a1 ? an->last_ts : ax->a1 + 1;
	ax->zero = zero;
	ax->cut = ax->end - ax->a1 > (ax->a1 - ax->a0) / 2;
}

/* The axis under the rows: round ticks against time zero, the end of
 * the trace, and the cut. */
static void draw_axis(FILE *f, const struct axis *ax, int y, uint64_t seq)
{
	int64_t top = ax->cut ? ax->a1 : ax->end;
	double range = (double)(llabs(ax->a0 - ax->zero) > llabs(top - ax->zero) ?
				llabs(ax->a0 - ax->zero) : llabs(top - ax->zero));
	double step = an_html_step((double)(top - ax->a0), (ax->cut ? HG_PA :
				   HG_PA + HG_GAP + HG_PB) / 90);
	int64_t k0 = (int64_t)((double)(ax->a0 - ax->zero) / step) - 1;
	struct lane ln = { .n = 0 };
	char lab[48], end[32];
	double x, w;

	an_fmt_ns((double)(ax->end - ax->zero), end, sizeof(end));
	snprintf(lab, sizeof(lab), "end +%s", end);
	w = an_html_text_w(lab, 11);
	x = tx(ax, ax->end);
	lane_take(&ln, x - w, x);
	fprintf(f, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#999\"/>"
		"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#999\"/>"
		"<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"end\">%s</text>\n",
		HG_L, x, y, y, x, x, y, y + 4, x, y + 17, lab);
	if (ax->cut)
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"9\" fill=\"#fff\"/>"
			"<path d=\"M%d %d l6 -9 M%d %d l6 -9\" stroke=\"#777\"/>\n",
			HG_L + HG_PA + 2, y - 4, HG_GAP - 4, HG_L + HG_PA + 2, y + 4,
			HG_L + HG_PA + 8, y + 4);
	for (int64_t k = k0; k < k0 + 1000; k++) {
		int64_t t = ax->zero + (int64_t)((double)k * step);

		if (t < ax->a0)
			continue;
		if (t > top)
			break;
		an_html_tick_ns((double)(t - ax->zero), step, range, 1, lab, sizeof(lab));
		x = tx(ax, t);
		w = an_html_text_w(lab, 11);
		if (!lane_take(&ln, x - w / 2, x + w / 2))
			continue;
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#999\"/>"
			"<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">%s</text>\n",
			x, x, y, y + 4, x, y + 17, lab);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ti\" text-anchor=\"middle\">time from the ",
		HG_L + HG_PA / 2, y + 36);
	if (seq)
		fprintf(f, "first arrival at seq %llu</text>\n", (unsigned long long)seq);
	else
		fputs("first rank's init</text>\n", f);
}

/* A seq's number over its bar, where it does not run into another. */
static void seq_label(FILE *f, struct lane *ln, double x, int y, uint64_t seq, int hung)
{
	char lab[32];
	double w;

	snprintf(lab, sizeof(lab), hung ? "seq %llu" : "%llu", (unsigned long long)seq);
	w = an_html_text_w(lab, 10);
	if (x + w > HG_L + HG_PA + HG_GAP + HG_PB)
		x = HG_L + HG_PA + HG_GAP + HG_PB - w;
	if (lane_take(ln, x, x + w))
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"sq%s\">%s</text>", x, y + 11,
			hung ? " hung" : "", lab);
}

/* Where a call's label goes: where its bar starts. */
static double call_x(const struct axis *ax, const struct an_call *c, int wait)
{
	return tx(ax, !wait && c->start_ns ? c->start_ns : c->enter_ns);
}

/* A call: its time on the GPU where timed (the host's enqueue a tick
 * over it), else its host call; the hung one from its enqueue to the end
 * of the trace; a dropped or queued one a small box. */
static void call_bar(const struct an_state *an, FILE *f, const struct axis *ax,
		     const struct drow *d, const struct an_call *c, int y, int wait, int queued)
{
	double x = call_x(ax, c, wait), w = 0;
	const char *cls, *what;

	if (c->flags & AN_S_DROP) {
		cls = "drop";
		what = "dropped by injection";
	} else if (wait) {
		cls = "wait";
		what = "entered, never completed";
		w = tx(ax, ax->end) - x;
	} else if (queued) {
		cls = "queued";
		what = "queued behind the hung call";
	} else if (c->start_ns) {
		cls = "done";
		what = "its time on the GPU";
		w = tx(ax, c->end_ns) - x;
	} else {
		cls = "host";
		what = "completed; its host call (not timed on the GPU)";
		w = c->exit_ns > c->enter_ns ? tx(ax, c->exit_ns) - x : 0;
	}
	if (w < 4)
		w = 4;
	if (c->start_ns && !wait)
		fprintf(f, "<line class=\"enq\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>",
			tx(ax, c->enter_ns), tx(ax, c->enter_ns), y + 12, y + 28);
	fprintf(f, "<rect class=\"%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"12\"><title>"
		"rank %lld: ", cls, x, y + 14, w, (long long)d->rank);
	an_html_esc(f, c->op < an->nops ? an->ops[c->op] : "?");
	fprintf(f, " seq %llu, %s</title></rect>", (unsigned long long)c->seq, what);
}

/* The watchdogs' timeouts on this rank and comm: a tick over its row. */
static void timeout_ticks(const struct an_state *an, const struct an_hang *h, FILE *f,
			  const struct axis *ax, const struct drow *d, int y)
{
	int64_t off = an->hosts[an->procs[d->proc].host].offset_ns;
	char w[32];

	for (int i = 0; i < an->ntimeouts; i++) {
		const struct an_timeout_row *t = &an->timeouts[i];
		double x;

		if (t->comm_hash != h->comm_hash || t->rank != d->rank)
			continue;
		x = tx(ax, t->ts + off);
		an_fmt_ns((double)t->waited_ns, w, sizeof(w));
		fprintf(f, "<path class=\"tmo\" d=\"M%.1f %d l-5 -8 h10 z\"><title>rank %lld: "
			"watchdog timeout after %s (", x, y + 13, (long long)d->rank, w);
		an_html_esc(f, t->action);
		fputs(")</title></path>", f);
	}
}

static void row_label(const struct an_state *an, const struct an_hang *h, FILE *f,
		      const struct drow *d, int y)
{
	const struct an_hang_row *row = d->row;

	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"hl%s\" text-anchor=\"end\">rank %lld",
		HG_L - 8, y + 12, d->in ? "" : " st", (long long)d->rank);
	if (d->proc >= 0) {
		fputc(' ', f);
		an_html_esc_cut(f, an_html_host(an, &an->procs[d->proc]), 10);
	}
	fprintf(f, "</text><text x=\"%d\" y=\"%d\" class=\"ax\" text-anchor=\"end\">",
		HG_L - 8, y + 26);
	if (d->proc < 0)
		fputs("no events", f);
	else if (h->seq && row && row->ncalls)
		fprintf(f, "last seq %llu", (unsigned long long)row->calls[row->ncalls - 1].seq);
	else if (h->seq)
		fputs("no call seen", f);
	fputs("</text>", f);
}

static void draw_row(const struct an_state *an, const struct an_hang *h, FILE *f,
		     const struct axis *ax, const struct drow *d, int y)
{
	const struct an_hang_row *row = d->row;
	struct lane ln = { .n = 0 };
	int hung = -1, n = row && h->seq ? row->ncalls : 0;
	char words[64];

	row_label(an, h, f, d, y);
	if (!d->in)	/* the call it never made, from the first arrival on */
		fprintf(f, "<rect class=\"miss\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"12\">"
			"<title>rank %lld is not in it</title></rect>", tx(ax, ax->zero), y + 14,
			tx(ax, ax->end) - tx(ax, ax->zero), (long long)d->rank);
	if (!h->seq && d->in && row && row->init_ns > 0)
		fprintf(f, "<rect class=\"wait\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"12\">"
			"<title>rank %lld: in its init</title></rect>", tx(ax, row->init_ns),
			y + 14, tx(ax, ax->end) - tx(ax, row->init_ns), (long long)d->rank);
	for (int k = 0; k < n; k++) {
		const struct an_call *c = &row->calls[k];
		int wait = c->seq == h->seq && d->in;

		call_bar(an, f, ax, d, c, y, wait, c->seq > h->seq);
		if (c->seq == h->seq)
			hung = k;
	}
	if (d->proc >= 0)
		timeout_ticks(an, h, f, ax, d, y);
	/* Numbers: the hung call's first, then the latest ones. */
	if (hung >= 0)
		seq_label(f, &ln, call_x(ax, &row->calls[hung], d->in), y, h->seq, 1);
	for (int k = n - 1; k >= 0; k--)
		if (k != hung)
			seq_label(f, &ln, call_x(ax, &row->calls[k], 0), y, row->calls[k].seq, 0);
	state_words(h, d, words, sizeof(words));
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"hl%s\">%s</text>\n",
		HG_L + HG_PA + HG_GAP + HG_PB + 12, y + 24, d->in ? "" : " st", words);
}

static int cmp_drow(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;

	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The members, and for an init the ranks that never began it; then
 * every rank not in the call and those in it, up to HG_ROWS, in rank
 * order.  Returns how many are drawn; *all how many there were. */
static int pick_rows(const struct an_state *an, const struct an_hang *h, struct drow *rows,
		     int *all)
{
	int n = 0, kept = 0;

	for (int i = 0; i < h->nrows; i++) {
		const struct an_hang_row *row = &h->rows[i];
		int st = row_state(h, row->rank);

		rows[n++] = (struct drow){ .row = row, .rank = row->rank, .proc = row->proc,
			.in = h->seq ? st == AN_RS_WAITING || st == AN_RS_HOST :
			in_list(h->wait, h->nwait, row->rank) };
	}
	for (int i = 0; !h->seq && i < h->nmiss; i++) {
		int proc = -1, dup = 0;

		for (int k = 0; k < n && !dup; k++)
			dup = rows[k].rank == h->miss[i];
		for (int k = 0; k < an->nprocs && proc < 0; k++)
			if (an->procs[k].rank == h->miss[i])
				proc = k;
		if (!dup)
			rows[n++] = (struct drow){ .row = NULL, .rank = h->miss[i], .proc = proc };
	}
	*all = n;
	/* Those not in it first, then those in it, in place. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = kept; i < n && kept < HG_ROWS; i++)
			if (rows[i].in == pass) {
				struct drow t = rows[kept];

				rows[kept++] = rows[i];
				rows[i] = t;
			}
	qsort(rows, kept, sizeof(*rows), cmp_drow);
	return kept;
}

static void draw_hang(const struct an_state *an, const struct an_hang *h, FILE *f)
{
	struct drow *rows = an_xcalloc((size_t)(h->nrows + h->nmiss) + 1, sizeof(*rows));
	int all, n = pick_rows(an, h, rows, &all), H = HG_T + n * HG_ROW + 48;
	struct axis ax;

	make_axis(an, h, rows, n, &ax);
	an_html_svg(f, HG_W, H, "the hang, rank by rank");
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" class=\"zero\"/>\n",
		tx(&ax, ax.zero), tx(&ax, ax.zero), HG_T, HG_T + n * HG_ROW);
	for (int r = 0; r < n; r++)
		draw_row(an, h, f, &ax, &rows[r], HG_T + r * HG_ROW);
	draw_axis(f, &ax, HG_T + n * HG_ROW + 2, h->seq);
	fputs("</svg>\n<p class=\"legend\"><span class=\"k done\"></span>on the GPU "
	      "<span class=\"k enq\"></span>enqueued "
	      "<span class=\"k host\"></span>host call (not GPU-timed) "
	      "<span class=\"k wait\"></span>entered, never completed "
	      "<span class=\"k queued\"></span>queued behind it "
	      "<span class=\"k drop\"></span>dropped by injection "
	      "<span class=\"k miss\"></span>not in it "
	      "<span class=\"k tmo\"></span>watchdog timeout; numbers are seqs</p>\n", f);
	if (all > n)
		fprintf(f, "<p class=\"note\">%d more ranks in it, not drawn.</p>\n", all - n);
	free(rows);
}

/* A send or recv that never completed: who waits, on whom. */
static void p2p_table(const struct an_state *an, const struct an_hang *h, FILE *f)
{
	int send = !strcmp(an->ops[h->op], "send");

	fputs("<table class=\"txt\"><tr><th>rank</th><th>state</th></tr>\n", f);
	for (int i = 0; i < h->nwait; i++)
		fprintf(f, "<tr><td>%lld</td><td>waiting in its %s p2p seq %llu</td></tr>\n",
			(long long)h->wait[i], h->nwait == 1 ? an->ops[h->op] : send ? "send" : "recv",
			(unsigned long long)h->seq);
	if (h->nwait == 1) {
		if (h->peer >= 0)
			fprintf(f, "<tr><td class=\"st\">%lld</td>", (long long)h->peer);
		else
			fprintf(f, "<tr><td class=\"st\">comm rank %lld</td>",
				(long long)h->peer_comm_rank);
		fprintf(f, "<td>its peer: posted %llu of the %llu %ss it needs</td></tr>\n",
			(unsigned long long)h->peer_posted, (unsigned long long)h->ordinal,
			!strcmp(an->ops[h->op], "waitsignal") ? "signal" :
			!strcmp(an->ops[h->op], "putsignal") || !strcmp(an->ops[h->op], "signal") ?
			"signal wait" : send ? "recv" : "send");
	}
	fputs("</table>\n", f);
}

void an_html_hangs(struct an_state *an, FILE *f)
{
	char age[32];

	if (!an->nhangs) {
		fputs("<p class=\"empty\">No hang: every collective, send and receive that began "
		      "either completed or was still running, for less than a second and with no "
		      "watchdog timeout, when the trace ended.</p>\n", f);
		return;
	}
	for (int i = 0; i < an->nhangs; i++) {
		const struct an_hang *h = &an->hangs[i];

		an_fmt_ns((double)h->age_ns, age, sizeof(age));
		fprintf(f, "<div class=\"hang\" id=\"hang-%d\"><h3>", i + 1);
		if (h->seq) {
			an_html_esc(f, an->ops[h->op]);
			fprintf(f, " %sseq %llu", h->p2p ? "p2p " : "", (unsigned long long)h->seq);
		} else {
			fputs("init", f);
		}
		fprintf(f, " on comm %016llx</h3>\n<p class=\"meta\">%s for %s at the end of the "
			"trace", (unsigned long long)h->comm_hash,
			h->timed_out ? "timed out, stuck" : "stuck", age);
		if (h->queued_after)
			fprintf(f, " &middot; %llu more queued behind it",
				(unsigned long long)h->queued_after);
		if (h->unknown_missing)
			fprintf(f, " &middot; %lld rank%s of the comm never seen in the trace",
				(long long)h->unknown_missing, h->unknown_missing == 1 ? "" : "s");
		fputs("</p>\n", f);
		if (h->p2p)
			p2p_table(an, h, f);
		else if (h->nrows || h->nmiss)
			draw_hang(an, h, f);
		else
			fputs("<p class=\"empty\">No rank of the comm is in the trace.</p>\n", f);
		fputs("</div>\n", f);
	}
}
