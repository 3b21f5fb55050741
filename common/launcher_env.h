/*
 * The launchers' variables (launcher_env.def) as arrays, and how their
 * numbers read.  Static: the shim and the matrix each take a copy, and
 * neither links the other.
 */
#ifndef NCCLGUARD_LAUNCHER_ENV_H
#define NCCLGUARD_LAUNCHER_ENV_H

#include <stddef.h>
#include <stdlib.h>

struct ng_launcher {
	const char *name, *rank, *size, *local;
};

static const struct ng_launcher ng_launchers[] = {
#define NG_LAUNCHER(name, rank, size, local) { name, rank, size, local },
#include "launcher_env.def"
};
#define NG_NLAUNCHERS ((int)(sizeof(ng_launchers) / sizeof(ng_launchers[0])))

/* VAR, STEP: the job's name is VAR's value, then ".STEP's" where set. */
static const char *const ng_launcher_jobs[][2] = {
#define NG_LAUNCHER_JOB(var, step) { var, step },
#include "launcher_env.def"
};
#define NG_NLAUNCHER_JOBS ((int)(sizeof(ng_launcher_jobs) / sizeof(ng_launcher_jobs[0])))

/* A launcher's count: a decimal from 0 to 2^24, else -1 (unset, empty,
 * or not a number: that launcher did not start us). */
static inline int ng_launcher_int(const char *s, int *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	v = strtol(s, &end, 10);
	if (*end || v < 0 || v > 1 << 24)
		return -1;
	*out = (int)v;
	return 0;
}

#endif
