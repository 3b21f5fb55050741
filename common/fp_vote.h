/*
 * The ranks of one verified call grouped by the output they hold: the
 * analyzer's data_mismatch finding and `watch`'s line take their majority
 * (or its absence) from one rule.
 */
#ifndef NCCLGUARD_FP_VOTE_H
#define NCCLGUARD_FP_VOTE_H

#include <stdint.h>

/* The scratch ng_fp_vote needs for n fingerprints, in bytes: the caller
 * allocates it, by its own rule for running out of memory. */
#define NG_FP_VOTE_SCRATCH(n) (((size_t)(n) + 1) * (sizeof(uint64_t) + 3 * sizeof(int)))

/* Groups hash[0..n) by value: grp[i] is i's group, 0 the largest, ties
 * in the order first met.  The number of groups; *major is whether the
 * largest holds more than half. */
int ng_fp_vote(const uint64_t *hash, int n, int *grp, int *major, void *scratch);

#endif
