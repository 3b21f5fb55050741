/*
 * Helpers the shim's unit tests share (tests/preload/): calibrating the
 * recorded clock, and the CPU backend's CUDA runtime (build/sim), found
 * beside the test binary and resolved at run time as the shim resolves
 * the process's own, with a way to hold one of its streams.
 */
#ifndef NCCLGUARD_NGTEST_H
#define NCCLGUARD_NGTEST_H

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

/* Past the clock's first calibration window (30 ms), as the watchdog's
 * ticks would take it. */
static inline void ngt_calibrate(void)
{
	struct timespec ts = { 0, 2000000 };

	ng_clock_init();
	for (int i = 0; i < 15; i++) {
		nanosleep(&ts, NULL);
		ng_clock_tick();
	}
}

/* build/sim/libcudart.so.13 for build/tests/test_X: loaded global, so
 * that ng_resolve_cuda finds it as it finds a framework's.  NULL if
 * missing. */
static inline void *ngt_load_sim_cudart(void)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	char *slash;

	if (n <= 0)
		return NULL;
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (!slash)
		return NULL;
	snprintf(slash, sizeof(path) - (size_t)(slash - path), "/../sim/libcudart.so.13");
	return dlopen(path, RTLD_NOW | RTLD_GLOBAL);
}

/* A host function that holds its stream, as a kernel waiting for a peer
 * would, until *open. */
static inline void ngt_gate_fn(void *open)
{
	struct timespec ms = { 0, 1000000 };

	while (!__atomic_load_n((int *)open, __ATOMIC_ACQUIRE))
		nanosleep(&ms, NULL);
}

/* Hold stream s from here until *open; 0 if held. */
static inline int ngt_gate(void *sim, cudaStream_t s, int *open)
{
	cudaError_t (*launch)(cudaStream_t, cudaHostFn_t, void *);

	*(void **)&launch = dlsym(sim, "cudaLaunchHostFunc");
	return launch && launch(s, ngt_gate_fn, open) == cudaSuccess ? 0 : -1;
}

#endif
