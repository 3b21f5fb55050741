/*
 * A profiler plugin of before NCCL 2.29, for tests/sim/test_profiler_load.sh:
 * it exports ncclProfiler_v5 and ncclProfiler_v4, not _v6, and says on
 * stderr which one was called; built with -DPROF_NONE it exports none.
 * It asks for no event.
 */
#include <stdio.h>

#include "nccl_profiler.h"

#ifndef PROF_NONE
static ncclResult_t init_v5(void **context, uint64_t commId, int *mask, const char *name,
			    int nnodes, int nranks, int rank, ncclDebugLogger_t logfn)
{
	(void)commId, (void)name, (void)nnodes, (void)nranks, (void)logfn;
	*context = NULL;
	*mask = 0;
	fprintf(stderr, "prof_old: v5 init, rank %d\n", rank);
	return ncclSuccess;
}

static ncclResult_t init_v4(void **context, int *mask, const char *name, uint64_t hash,
			    int nnodes, int nranks, int rank, ncclDebugLogger_t logfn)
{
	(void)name, (void)hash, (void)nnodes, (void)nranks, (void)logfn;
	*context = NULL;
	*mask = 0;
	fprintf(stderr, "prof_old: v4 init, rank %d\n", rank);
	return ncclSuccess;
}

static ncclResult_t start_v5(void *c, void **h, ncclProfilerEventDescr_v5_t *d)
{
	(void)c, (void)d;
	*h = NULL;
	return ncclSuccess;
}

static ncclResult_t start_v4(void *c, void **h, ncclProfilerEventDescr_v4_t *d)
{
	(void)c, (void)d;
	*h = NULL;
	return ncclSuccess;
}

static ncclResult_t stop(void *h)
{
	(void)h;
	return ncclSuccess;
}

static ncclResult_t record(void *h, ncclProfilerEventState_t s, ncclProfilerEventStateArgs_v5_t *a)
{
	(void)h, (void)s, (void)a;
	return ncclSuccess;
}

static ncclResult_t fini(void *c)
{
	(void)c;
	return ncclSuccess;
}

__attribute__((visibility("default"))) ncclProfiler_v5_t ncclProfiler_v5 = {
	.name = "prof_old", .init = init_v5, .startEvent = start_v5, .stopEvent = stop,
	.recordEventState = record, .finalize = fini,
};
__attribute__((visibility("default"))) ncclProfiler_v4_t ncclProfiler_v4 = {
	.name = "prof_old", .init = init_v4, .startEvent = start_v4, .stopEvent = stop,
	.recordEventState = record, .finalize = fini,
};
#else
__attribute__((visibility("default"))) int prof_old_none;
#endif
