/*
 * NCCL's environment plugin ABI: the shim serves it
 * (preload/enforce/envplugin.c) and the CPU backend calls it (sim/env.c).
 * Laid out as NVIDIA/nccl's src/include/plugin/env/env_v1.h (v2.28.7-1,
 * which added it) and env_v2.h (v2.30.7-1: v1's, with NCCL's logger
 * given to init).  nccl.h does not declare them.
 */
#ifndef NCCLGUARD_NCCL_ENV_PLUGIN_H
#define NCCLGUARD_NCCL_ENV_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_profiler.h"	/* ncclDebugLogger_t */

typedef struct {
	const char *name;
	ncclResult_t (*init)(uint8_t major, uint8_t minor, uint8_t patch, const char *suffix);
	ncclResult_t (*finalize)(void);
	const char *(*getEnv)(const char *name);
} ng_env_v1_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(uint8_t major, uint8_t minor, uint8_t patch, const char *suffix,
			     ncclDebugLogger_t logfn);
	ncclResult_t (*finalize)(void);
	const char *(*getEnv)(const char *name);
} ng_env_v2_t;

_Static_assert(offsetof(ng_env_v1_t, init) == sizeof(void *), "ncclEnv_v1_t layout");
_Static_assert(offsetof(ng_env_v1_t, getEnv) == 3 * sizeof(void *), "ncclEnv_v1_t layout");
_Static_assert(offsetof(ng_env_v2_t, init) == sizeof(void *), "ncclEnv_v2_t layout");
_Static_assert(offsetof(ng_env_v2_t, finalize) == 2 * sizeof(void *), "ncclEnv_v2_t layout");
_Static_assert(offsetof(ng_env_v2_t, getEnv) == 3 * sizeof(void *), "ncclEnv_v2_t layout");
_Static_assert(sizeof(ng_env_v2_t) == 4 * sizeof(void *), "ncclEnv_v2_t layout");

#endif
