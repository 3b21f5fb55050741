/*
 * The writers: report.json (report_json.c), the summary (summary.c),
 * report.html (html.c and its sections html_*.c) and the Chrome trace
 * (chrome.c, chrome_sel.c, numfmt.c), from the findings and the matcher's
 * state (findings.h).
 */
#ifndef NCCLGUARD_AN_REPORT_H
#define NCCLGUARD_AN_REPORT_H

#include <stdio.h>

#include "findings.h"

int an_report_json(struct an_state *an, FILE *f);
int an_report_html(struct an_state *an, FILE *f);

/* ---- html_*.c: the sections of report.html (html.c: the page) -------- */

/* html_axis.c: text from a trace escaped (cut to max characters with an
 * ellipsis), ticks at round numbers and their labels, text widths. */
void an_html_esc(FILE *f, const char *s);
void an_html_esc_cut(FILE *f, const char *s, int max);
int an_html_chars(const char *s);
double an_html_text_w(const char *s, double px);
double an_html_step(double span, int most);
void an_html_tick(double v, double step, char *buf, size_t len);
void an_html_tick_ns(double ns, double step, double range, int sign, char *buf, size_t len);
void an_html_svg(FILE *f, int w, int h, const char *label);
const char *an_html_color(int i);
const char *an_html_host(const struct an_state *an, const struct an_proc *p);
/* html_plot.c: bus bandwidth against size; each rank's time in NCCL. */
void an_html_bandwidth(struct an_state *an, FILE *f);
void an_html_busy(struct an_state *an, FILE *f, const int *order, int n);
/* html_heat.c: the rank x time map of lateness. */
void an_html_heat(struct an_state *an, FILE *f, const int *order);
/* html_hang.c: each hang drawn, rank by rank, on a time axis. */
void an_html_hangs(struct an_state *an, FILE *f);
/* html_table.c: collectives per op; timeouts, injections, policy; ranks. */
void an_html_collectives(struct an_state *an, FILE *f);
void an_html_timeouts(struct an_state *an, FILE *f);
void an_html_injections(struct an_state *an, FILE *f);
void an_html_policy(struct an_state *an, FILE *f);
void an_html_ranks(struct an_state *an, FILE *f, const int *order);
/* html_hw.c: the hardware sampler's counter changes, with their ranks. */
void an_html_hardware(struct an_state *an, FILE *f);
/* verify.c: output verification, the summary's line (an_verify_on) and
 * the HTML's table per comm. */
void an_verify_sentence(const struct an_state *an, char *buf, size_t len);
void an_html_verify(struct an_state *an, FILE *f);
void an_summary(struct an_state *an, FILE *f);
/* chrome.c: what the Chrome trace holds (analyze.h's chrome_* options). */
#define AN_CHROME_CAP		(64ULL << 20)	/* bytes, by default */
#define AN_CHROME_WIN_NS	1000000000LL	/* kept each side of a finding */
struct an_chrome_opts {
	uint64_t cap;			/* bytes; 0: AN_CHROME_CAP */
	int all;			/* every collective, no cap */
	int64_t win_from_ns, win_to_ns;	/* on the trace's timeline; to < 0: none */
	const int64_t *ranks;		/* sorted; nranks 0: all */
	int nranks;
};
struct an_chrome *an_chrome_new(FILE *f, const struct an_chrome_opts *o);
/* an_opts.on_coll: ctx is the struct an_chrome. */
void an_chrome_coll(void *ctx, const struct an_state *an, const struct an_entry *e);
/* The hangs and the closing bracket; returns -1 if anything failed. */
int an_chrome_end(struct an_chrome *ch, const struct an_state *an);
void an_chrome_free(struct an_chrome *ch);

/* ---- numfmt.c: numbers into a buffer, no stdio (the Chrome trace) ---- */

char *an_put_u64(char *p, uint64_t v);
char *an_put_i64(char *p, int64_t v);
char *an_put_milli(char *p, int64_t v);	/* v / 1000, three decimals */
char *an_put_fix3(char *p, double x);		/* "%.3f" */
char *an_put_hex(char *p, uint64_t v, int width);

/* ---- chrome_sel.c: which collectives the Chrome trace keeps ---------- */

struct an_csel;
struct an_csel *an_csel_new(FILE *f, uint64_t cap, int all, int64_t win_ns);
void an_csel_free(struct an_csel *s);
/* Text straight to the file (names, tracks, the end's marks). */
void an_csel_write(struct an_csel *s, const char *text, size_t len);
uint64_t an_csel_written(const struct an_csel *s);
/* One collective's events, beginning at ts; key picks it for the sample. */
void an_csel_put(struct an_csel *s, uint64_t key, int64_t ts, const char *text, size_t len);
void an_csel_filtered(struct an_csel *s);	/* one left out by --ranks/--chrome-window */
void an_csel_pin(struct an_csel *s, int64_t ts, const char *why);
void an_csel_flush(struct an_csel *s);
int an_csel_failed(const struct an_csel *s);
void an_csel_other(struct an_csel *s, int64_t t0, int64_t last);
uint64_t an_csel_left_out(const struct an_csel *s, uint64_t *one_in);

#endif
