/*
 * The API census: which functions a libnccl exports that ncclguard does
 * not expect (docs/design.md, "The API census").  Expected are the rows of
 * nccl_api.def (interposed) and of nccl_unwrapped.def (deliberately not);
 * anything else is a newer NCCL's, whose calls go to NCCL unseen.
 * Pure: the shim's census (preload/core/census.c) and the tests run it.
 */
#ifndef NCCLGUARD_NCCL_CENSUS_H
#define NCCLGUARD_NCCL_CENSUS_H

#include <stddef.h>

enum ng_census_class {
	NG_CENSUS_API,		/* a row of nccl_api.def */
	NG_CENSUS_DEVICE,	/* nccl_unwrapped.def, the device API */
	NG_CENSUS_OTHER,	/* nccl_unwrapped.def, anything else */
	NG_CENSUS_UNKNOWN,	/* none of ours */
};

/* What a name (nccl*) is to ncclguard. */
enum ng_census_class ng_census_class(const char *name);

/* Names listed in `unknown`, at most; past them the count says more. */
#define NG_CENSUS_NAMES 16

struct ng_census {
	int error;			/* 0, else an enum ng_elf_err */
	unsigned n_exported;		/* nccl* functions exported */
	unsigned n_unknown;		/* of them, NG_CENSUS_UNKNOWN */
	unsigned n_listed;		/* of those, named in `unknown` */
	int device_api;			/* one of them is the device API's */
	char unknown[512];		/* the first unknown ones, "a,b,c" */
	const char *how;		/* "sections" or "dynamic" */
};

/* The census of the library file at path: 0, or -1 with c->error set. */
int ng_census_file(const char *path, struct ng_census *c);

/* ncclGetVersion's code as "2.28.9" ("unknown" if <= 0). */
void ng_census_version(int code, char *buf, size_t len);

#endif
