/*
 * What every part of report.html needs: text from a trace escaped, ticks
 * at round numbers, tick labels with as many decimals as the step needs,
 * and a width estimate for text, so that labels are placed where they do
 * not run into each other.
 */
#include <math.h>
#include <string.h>

#include "report.h"

/* Bytes that are not UTF-8 (a host name, an environment from another
 * host) and control characters become U+FFFD, so that the page stays
 * one encoding and a trace cannot inject markup. */
static void esc_n(FILE *f, const char *s, int max)
{
	const unsigned char *p = (const unsigned char *)s;
	int n, chars = 0;

	while (p && *p) {
		if (max > 0 && chars == max - 1 && an_html_chars((const char *)p) > 1) {
			fputs("&#x2026;", f);
			return;
		}
		chars++;
		switch (*p) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		case '\t': case '\n': fputc(*p, f); break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				fputs("&#xfffd;", f);
			} else if (*p < 0x80) {
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

void an_html_esc(FILE *f, const char *s)
{
	esc_n(f, s, 0);
}

void an_html_esc_cut(FILE *f, const char *s, int max)
{
	esc_n(f, s, max);
}

/* Characters, not bytes: a byte that starts no UTF-8 sequence counts one. */
int an_html_chars(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int n = 0, k;

	while (p && *p) {
		k = *p < 0x80 ? 1 : ng_utf8_len(p);
		p += k ? k : 1;
		n++;
	}
	return n;
}

/* The page's sans-serif (DejaVu Sans where nothing else is installed)
 * averages under 0.62 em a character for digits and lower case; 0.64
 * errs wide, so that labels spaced by it keep apart. */
double an_html_text_w(const char *s, double px)
{
	return 0.64 * px * an_html_chars(s);
}

/* 1, 2 or 5 times a power of ten: the smallest such step that cuts span
 * into at most `most` parts. */
double an_html_step(double span, int most)
{
	double raw, mag, norm;

	if (!(span > 0) || most < 1)
		return 1;
	raw = span / most;
	mag = pow(10, floor(log10(raw)));
	norm = raw / mag;
	if (norm <= 1)
		return mag;
	if (norm <= 2)
		return 2 * mag;
	if (norm <= 5)
		return 5 * mag;
	return 10 * mag;
}

/* Decimals that tell ticks `step` apart: 0.25 -> 2, 5 -> 0. */
static int decimals(double step)
{
	int d = 0;

	while (d < 9 && fabs(step * pow(10, d) - floor(step * pow(10, d) + 0.5)) > 1e-6)
		d++;
	return d;
}

void an_html_tick(double v, double step, char *buf, size_t len)
{
	if (fabs(v) < step * 1e-6)
		v = 0;		/* no "-0" */
	snprintf(buf, len, "%.*f", decimals(step), v);
}

/* A time tick in the unit the axis reads best in, the unit of `range`
 * (the largest time the axis shows): "0.5 ms", "3 ms", not "3000 us".
 * sign: "+" before positive values (times against an instant). */
void an_html_tick_ns(double ns, double step, double range, int sign, char *buf, size_t len)
{
	static const struct { double div; const char *unit; } u[] = {
		{ 1e9, "s" }, { 1e6, "ms" }, { 1e3, "us" }, { 1, "ns" },
	};
	int i = 0;

	while (i < 3 && fabs(range) < u[i].div)
		i++;
	if (fabs(ns) < step * 1e-6)
		ns = 0;
	snprintf(buf, len, "%s%.*f %s", sign && ns > 0 ? "+" : "", decimals(step / u[i].div),
		 ns / u[i].div, u[i].unit);
}

/* An inline plot W x H px, named for screen readers. */
void an_html_svg(FILE *f, int w, int h, const char *label)
{
	fprintf(f, "<svg class=\"plot\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"role=\"img\" aria-label=\"%s\">\n", w, h, w, h, label);
}

const char *an_html_color(int i)
{
	static const char *const palette[] = {
		"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
		"#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
	};
	int n = (int)(sizeof(palette) / sizeof(palette[0]));

	return palette[(i % n + n) % n];
}

const char *an_html_host(const struct an_state *an, const struct an_proc *p)
{
	return p->info_host && *p->info_host ? p->info_host : an->hosts[p->host].name;
}
