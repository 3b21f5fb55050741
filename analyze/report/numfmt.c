/*
 * Numbers as JSON text without stdio: the Chrome trace writes several per
 * event, millions of events, and fprintf's format parsing and locale work
 * were a third of the analyzer's profile.  Each function writes at p and
 * returns the end; the caller has room (an_put_* need at most 24 bytes).
 */
#include <math.h>
#include <stdio.h>

#include "report.h"

char *an_put_u64(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

char *an_put_i64(char *p, int64_t v)
{
	if (v < 0) {
		*p++ = '-';
		return an_put_u64(p, -(uint64_t)v);
	}
	return an_put_u64(p, (uint64_t)v);
}

/* v / 1000 with three decimals ("12.345"): ns as us, as "%.3f" of
 * v / 1e3 prints it (exact: both are the decimal value). */
char *an_put_milli(char *p, int64_t v)
{
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	unsigned frac = (unsigned)(u % 1000);

	if (v < 0)
		*p++ = '-';
	p = an_put_u64(p, u / 1000);
	*p++ = '.';
	*p++ = (char)('0' + frac / 100);
	*p++ = (char)('0' + frac / 10 % 10);
	*p++ = (char)('0' + frac % 10);
	return p;
}

/* A double with three decimals, rounded half away from zero; one too
 * large for the fixed point (or not finite, which JSON cannot say) goes
 * through snprintf, or is 0. */
char *an_put_fix3(char *p, double x)
{
	if (!isfinite(x))
		x = 0;
	if (fabs(x) >= 9e15)
		return p + snprintf(p, 24, "%.3e", x);
	return an_put_milli(p, (int64_t)llround(x * 1000.0));
}

/* Lower-case hex, zero-padded to at least `width` digits. */
char *an_put_hex(char *p, uint64_t v, int width)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	while (n < width && n < 16)
		tmp[n++] = '0';
	while (n)
		*p++ = tmp[--n];
	return p;
}
