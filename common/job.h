/*
 * A job's identity.  A trace holds one job: the shim stamps every event
 * with the tag of its job id, `ncclguard run` records only its own tag,
 * and the analyzer keeps one job and says when it saw others.
 *
 * The id is NCCLGUARD_JOB, else the launcher's (launcher_env.def's
 * NG_LAUNCHER_JOB_ID), else none (tag 0); `ncclguard run`
 * sets NCCLGUARD_JOB for its command when neither is set.
 */
#ifndef NCCLGUARD_JOB_H
#define NCCLGUARD_JOB_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* FNV-1a, 64 bits; never 0 for a non-empty id (0 means "no job"). */
static inline uint64_t ng_job_tag(const char *id)
{
	uint64_t h = 0xcbf29ce484222325ull;

	if (!id || !*id)
		return 0;
	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 0x100000001b3ull;
	return h ? h : 1;
}

/* The job id of this process's environment; NULL: none. */
static inline const char *ng_job_id_env(void)
{
	static const char *const vars[] = {
		"NCCLGUARD_JOB",
#define NG_LAUNCHER_JOB_ID(var) var,
#include "launcher_env.def"
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		if (v && *v)
			return v;
	}
	return NULL;
}

#endif
