/*
 * The straggler rule, from per-call figures only: each rank's lateness
 * against the others in one call, and whether a window of a rank's calls
 * is late by enough to matter.  The analyzer (after the job) and watch
 * (as calls arrive) judge by it alike (docs/design.md, "Stragglers").
 */
#ifndef NCCLGUARD_STRAGGLE_H
#define NCCLGUARD_STRAGGLE_H

#include <stddef.h>
#include <stdint.h>

#define NG_STRAG_WIN		4	/* a rank's calls per window */
#define NG_STRAG_MIN_WIN	2	/* late windows, at least, of a straggler */

/* The scratch ng_strag_call needs for n arrivals, in bytes: the caller
 * allocates it, by its own rule for running out of memory. */
#define NG_STRAG_SCRATCH(n) (2 * (size_t)(n) * sizeof(int64_t))

/* One call's arrivals enter[0..n), n >= 2: dev[i], rank i's lateness
 * against the lower median of the others' arrivals; spread[i], the
 * others' spread: the lower median of how far each of them is from its
 * own others (0 with two ranks: no spread to compare with). */
void ng_strag_call(const int64_t *enter, int n, int64_t *dev, int64_t *spread, void *scratch);

/* A full window of NG_STRAG_WIN calls of one rank: its lateness, the
 * others' spread and the comm's cycle (one call's start to the next,
 * INT64_MAX where unknown) in each (the arrays are reordered).  Whether
 * it is late; *med, its median lateness. */
int ng_strag_window(int64_t *late, int64_t *spread, int64_t *cycle, int64_t *med);

/* Whether a rank late in nlate of its nwin windows is a straggler. */
int ng_strag_flagged(uint64_t nwin, uint64_t nlate);

#endif
