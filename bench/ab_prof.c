/*
 * NCCL's profiler plugin interface switched block by block, for a plugin
 * that records (libncclguard.so): an NCCL profiler plugin (v5) that
 * forwards every call to the plugin AB_PROF_INNER names and hands NCCL's
 * event mask to bench/ab_switch.c, as bench/null_profiler.c does.  The
 * direct blocks then run with the mask cleared (NCCL calls no plugin),
 * the others with the mask the inner plugin asked for: inside one
 * process, the cost of recording through the plugin, which a comparison
 * between processes cannot resolve (all_reduce_perf's 8-byte time varies
 * by ±25% between processes on our GPU VMs).
 *
 *   NCCL_PROFILER_PLUGIN=ab_prof.so AB_PROF_INNER=libncclguard.so \
 *       LD_PRELOAD=ab_switch.so all_reduce_perf ...
 *
 * The forwarding costs one indirect call per event.  At exit it says how
 * many events it forwarded, so a run whose plugin never started is seen.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int nccl_result;	/* ncclResult_t; 0 is ncclSuccess, 3 internal error */

struct profiler_v5 {
	const char *name;
	nccl_result (*init)(void **context, uint64_t comm_id, int *mask, const char *comm_name,
			    int nnodes, int nranks, int rank, void *logfn);
	nccl_result (*start_event)(void *context, void **handle, void *descr);
	nccl_result (*stop_event)(void *handle);
	nccl_result (*record_event_state)(void *handle, int state, void *args);
	nccl_result (*finalize)(void *context);
};

static struct profiler_v5 *inner;
/* approximate: NCCL's threads count without a lock (one would cost) */
static unsigned long started, inits;

static int load(void)
{
	const char *path = getenv("AB_PROF_INNER");
	void *lib;

	if (inner)
		return 0;
	if (!path || !*path) {
		fprintf(stderr, "ab_prof: AB_PROF_INNER is not set\n");
		return -1;
	}
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);	/* as NCCL opens a plugin */
	inner = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
	if (!inner) {
		fprintf(stderr, "ab_prof: no ncclProfiler_v5 in %s: %s\n", path, dlerror());
		return -1;
	}
	return 0;
}

static nccl_result prof_init(void **context, uint64_t comm_id, int *mask, const char *comm_name,
			     int nnodes, int nranks, int rank, void *logfn)
{
	int **take = dlsym(RTLD_DEFAULT, "ab_switch_mask");
	int *take_on = dlsym(RTLD_DEFAULT, "ab_switch_mask_on");
	nccl_result ret;

	if (load())
		return 3;
	ret = inner->init(context, comm_id, mask, comm_name, nnodes, nranks, rank, logfn);
	if (ret)
		return ret;
	inits++;
	/* The mask is NCCL's one global; the inner plugin only ever adds to it. */
	if (take && take_on) {
		*take_on = *mask;
		*take = mask;
	}
	return 0;
}

static nccl_result prof_start(void *context, void **handle, void *descr)
{
	started++;
	return inner->start_event(context, handle, descr);
}

static nccl_result prof_stop(void *handle)
{
	return inner->stop_event(handle);
}

static nccl_result prof_state(void *handle, int state, void *args)
{
	return inner->record_event_state(handle, state, args);
}

static nccl_result prof_finalize(void *context)
{
	return inner->finalize(context);
}

__attribute__((visibility("default"))) struct profiler_v5 ncclProfiler_v5 = {
	.name = "ab_prof",
	.init = prof_init,
	.start_event = prof_start,
	.stop_event = prof_stop,
	.record_event_state = prof_state,
	.finalize = prof_finalize,
};

__attribute__((destructor)) static void ab_prof_fini(void)
{
	printf("ab_prof: %lu comms, about %lu events forwarded\n", inits, started);
	fflush(stdout);
}
