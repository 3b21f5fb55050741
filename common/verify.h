/*
 * Output verification's sampling rule (docs/verification.md), read by the
 * shim (NCCLGUARD_VERIFY) and by `ncclguard run --verify`, which refuses
 * a value before anything starts.  Every Nth call per communicator is
 * verified, by its seq, so that every rank picks the same calls without a
 * shared clock: N a power of two, so that a call tests its seq with a
 * mask and one branch.
 */
#ifndef NCCLGUARD_VERIFY_H
#define NCCLGUARD_VERIFY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A step of DDP makes tens to hundreds of all-reduces per comm a second:
 * one call in 1024 is one about every ten seconds. */
#define NG_VERIFY_DEFAULT 1024u
#define NG_VERIFY_MAX 32768u		/* the mask is 16 bits (core.h) */
#define NG_VERIFY_SLICES 4		/* slices of the output hashed */
#define NG_VERIFY_SLICE 1024u		/* bytes each; outputs up to 4 KiB whole */

/* "0" (off), "all" (1) or a power of two from 1 to NG_VERIFY_MAX into
 * *every; -1 with *why set otherwise. */
static inline int ng_verify_parse(const char *s, unsigned *every, const char **why)
{
	unsigned long v = 0;
	size_t i;

	if (!strcmp(s, "all")) {
		*every = 1;
		return 0;
	}
	for (i = 0; s[i] >= '0' && s[i] <= '9' && i < 6; i++)
		v = v * 10 + (unsigned long)(s[i] - '0');
	if (!i || s[i]) {
		*why = "expected 0 (off), all, or a power of two up to 32768";
		return -1;
	}
	if (v && ((v & (v - 1)) || v > NG_VERIFY_MAX)) {
		*why = "the period must be a power of two up to 32768 (every call tests its "
		       "seq with a mask)";
		return -1;
	}
	*every = (unsigned)v;
	return 0;
}

#endif
