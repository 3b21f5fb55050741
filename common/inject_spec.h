/*
 * Fault injection specs (docs/design.md, "Fault injection"), parsed where
 * they are used (the shim, at start) and where they are given (`ncclguard
 * run --inject`, before anything starts), by the same rules:
 *   "KIND:key=value,...;KIND:..."
 * KIND is delay (ms=N), drop, stall, error (code=NAME) or corrupt (one
 * byte of the call's output changed after it); match keys are rank, op,
 * seq, every, comm, count.
 */
#ifndef NCCLGUARD_INJECT_SPEC_H
#define NCCLGUARD_INJECT_SPEC_H

#include <stddef.h>

#include <nccl.h>
#include "nccl_newer.h"

#define NG_INJECT_MAX 16

enum ng_inject_kind { NG_INJ_NONE = 0, NG_INJ_DELAY, NG_INJ_DROP, NG_INJ_STALL, NG_INJ_ERROR,
		       NG_INJ_CORRUPT };

struct ng_inject_rule {
	enum ng_inject_kind kind;
	long rank, seq, every, comm, count, ms;	/* -1: any / unset */
	char op[32];
	ncclResult_t code;
};

/* Every rule of `spec` into out[NG_INJECT_MAX] and *n; -1 with the bad
 * part named in err if any rule does not parse or could never fire. */
int ng_inject_spec_parse(const char *spec, struct ng_inject_rule *out, int *n, char *err,
			 size_t errlen);
const char *ng_inject_kind_name(enum ng_inject_kind kind);
const char *ng_inject_code_name(ncclResult_t code);

#endif
