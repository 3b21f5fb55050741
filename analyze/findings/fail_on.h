/*
 * The --fail-on names as bits, from findings.def: for fail_on in
 * analyze.h (the command line's) and for the findings that count for
 * them (findings.c), one enum for both.
 */
#ifndef NCCLGUARD_FAIL_ON_H
#define NCCLGUARD_FAIL_ON_H

/* The --fail-on names (findings.def), for fail_on: NG_FAIL(hang) is 1. */
enum {
#define NG_FAIL_ON(name, words) NG_FAIL_BIT_##name,
#include "findings.def"
	NG_FAIL_NAMES
};
#define NG_FAIL(name)	(1u << NG_FAIL_BIT_##name)
#define NG_FAIL_ANY	((1u << NG_FAIL_NAMES) - 1)

#endif
