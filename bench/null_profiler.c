/*
 * An NCCL profiler plugin (interface v5, NCCL 2.26 and later) that does
 * nothing: what NCCL itself spends per call to feed a profiler, the floor
 * of timing collectives through NCCL_PROFILER_PLUGIN instead of our shim
 * (issue 7 lists it as an option).  A plugin that recorded anything would
 * add its own work on top.
 *
 *   NCCL_PROFILER_PLUGIN=null_profiler.so NULL_PROF_MASK=0x200 client
 *
 * NULL_PROF_MASK is the event mask it asks for (default 0x200, collective
 * API events; NCCL then also starts a group API event per call).  The
 * mask is NCCL's one global, read at each call: preloaded, bench/ab_switch.c
 * takes it over (ab_switch_mask) and clears it for its direct blocks, so
 * the client's lines compare calls with and without the events in one
 * process.  At exit it says how many events NCCL started, by type.
 *
 * Only the layout it relies on is declared here (NCCL's ext-profiler
 * headers are not installed with the library): the v5 function table, and
 * the event type as an event descriptor's first field.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int nccl_result;	/* ncclResult_t; 0 is ncclSuccess */

struct prof_descr {
	uint64_t type;		/* one ncclProfile* bit */
};

struct profiler_v5 {
	const char *name;
	nccl_result (*init)(void **context, uint64_t comm_id, int *mask, const char *comm_name,
			    int nnodes, int nranks, int rank, void *logfn);
	nccl_result (*start_event)(void *context, void **handle, struct prof_descr *d);
	nccl_result (*stop_event)(void *handle);
	nccl_result (*record_event_state)(void *handle, int state, void *args);
	nccl_result (*finalize)(void *context);
};

static unsigned long started[64], stopped, states;
static char handle_dummy;	/* NCCL skips an event's children when its handle is NULL */
static int on_mask = 0x200;

static nccl_result prof_init(void **context, uint64_t comm_id, int *mask, const char *comm_name,
			     int nnodes, int nranks, int rank, void *logfn)
{
	int **take = dlsym(RTLD_DEFAULT, "ab_switch_mask");
	int *take_on = dlsym(RTLD_DEFAULT, "ab_switch_mask_on");
	const char *m = getenv("NULL_PROF_MASK");

	(void)comm_id, (void)comm_name, (void)nnodes, (void)nranks, (void)rank, (void)logfn;
	if (m && *m)
		on_mask = (int)strtol(m, NULL, 0);
	*mask = on_mask;
	*context = &handle_dummy;
	if (take && take_on) {
		*take_on = on_mask;
		*take = mask;
	}
	return 0;
}

static nccl_result prof_start(void *context, void **handle, struct prof_descr *d)
{
	(void)context;
	started[d->type ? __builtin_ctzll(d->type) : 63]++;
	*handle = &handle_dummy;
	return 0;
}

static nccl_result prof_stop(void *handle)
{
	(void)handle;
	stopped++;
	return 0;
}

static nccl_result prof_state(void *handle, int state, void *args)
{
	(void)handle, (void)state, (void)args;
	states++;
	return 0;
}

static nccl_result prof_finalize(void *context)
{
	(void)context;
	return 0;
}

__attribute__((visibility("default"))) struct profiler_v5 ncclProfiler_v5 = {
	.name = "null",
	.init = prof_init,
	.start_event = prof_start,
	.stop_event = prof_stop,
	.record_event_state = prof_state,
	.finalize = prof_finalize,
};

__attribute__((destructor)) static void null_profiler_fini(void)
{
	printf("null_profiler: mask 0x%x;", on_mask);
	for (int i = 0; i < 64; i++)
		if (started[i])
			printf(" type 0x%llx: %lu", 1ull << i, started[i]);
	printf("; %lu stopped, %lu state records\n", stopped, states);
	fflush(stdout);
}
