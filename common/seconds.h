/*
 * A duration in seconds: the shim's NCCLGUARD_TIMEOUT and
 * NCCLGUARD_INIT_TIMEOUT, the policy file's [timeouts] init and
 * collective, `ncclguard run --timeout`.  One parser, so that a value means
 * the same wherever it is given.  It lives here, not in policy/, because
 * the shim reads its variables in preload/core, which may use common/ only.
 *
 * Accepted: a decimal number, nothing before or after it (600, 0.5, 2e3,
 * 1E+2), and "inf", "infinity" or "never" in any case.  Above one year is
 * "never": no deadline is that far, and a count of ns past 1.8e10 s does
 * not fit the 64 bits deadlines are kept in (a wrapped limit made every
 * call time out at once).  Refused: signs, spaces, units, hex, nan, 0,
 * which would report every call (today's meaning: refused everywhere), and
 * anything below 1 ms, which no call can meet either (1e-300 made every
 * call "not complete after 0.0 s").
 * The value is read digit by digit, not with strtod: the program's locale
 * may not use '.' for the decimal point.
 */
#ifndef NCCLGUARD_SECONDS_H
#define NCCLGUARD_SECONDS_H

#include <math.h>
#include <stdint.h>
#include <strings.h>

#define NG_SECONDS_NEVER 31536000.0	/* one year; above it, no timeout */
#define NG_SECONDS_MIN 0.001		/* 1 ms; below it, refused */

/* Whether s (a parsed value) means no timeout. */
static inline int ng_seconds_never(double s)
{
	return !(s <= NG_SECONDS_NEVER);
}

/* s as ns, never wrapping: UINT64_MAX (no deadline) for never. */
static inline uint64_t ng_seconds_ns(double s)
{
	if (ng_seconds_never(s))
		return UINT64_MAX;
	return s > 0 ? (uint64_t)(s * 1e9) : 0;
}

static inline int ng_seconds_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* 0 and *out (HUGE_VAL for never); else -1, *out untouched and *why a
 * phrase for the caller's message, which names where the value came from. */
static inline int ng_seconds_parse(const char *s, double *out, const char **why)
{
	const char *p = s;
	double v = 0;
	long exp = 0, e = 0;
	int digits = 0, neg = 0;

	*why = "expected a positive number of seconds or 'never'";
	if (!s || !*s)
		return -1;
	if (!strcasecmp(s, "inf") || !strcasecmp(s, "infinity") || !strcasecmp(s, "never")) {
		*out = HUGE_VAL;
		return 0;
	}
	for (; ng_seconds_digit(*p); p++, digits++)
		v = v * 10 + (*p - '0');
	if (*p == '.')
		for (p++; ng_seconds_digit(*p); p++, digits++, exp--)
			v = v * 10 + (*p - '0');
	if (!digits)
		return -1;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			neg = *p++ == '-';
		if (!ng_seconds_digit(*p))
			return -1;
		for (; ng_seconds_digit(*p); p++)
			if (e < 1000000)	/* past that, all the same */
				e = e * 10 + (*p - '0');
		exp += neg ? -e : e;
	}
	if (*p)
		return -1;
	/* v * 10^exp, stopping once it is past a year or gone to 0. */
	for (; exp > 0 && v > 0 && v <= NG_SECONDS_NEVER; exp--)
		v *= 10;
	for (; exp < 0 && v > 0; exp++)
		v /= 10;
	if (v == 0) {
		*why = "0 would report every call (for no timeout: never)";
		return -1;
	}
	/* The scaling above is inexact: 1e-3 must still pass. */
	if (v < NG_SECONDS_MIN * (1 - 1e-9)) {
		*why = "below 1 ms, which every call would exceed (the least is 0.001)";
		return -1;
	}
	*out = ng_seconds_never(v) ? HUGE_VAL : v;
	return 0;
}

#endif
