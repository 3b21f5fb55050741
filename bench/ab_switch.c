/*
 * The shim's cost inside an unmodified NCCL client (nccl-tests'
 * all_reduce_perf), in one process: preloaded ahead of the shim, this
 * library takes the client's ncclAllReduce and sends blocks of calls
 * alternately straight to libnccl.so.2 and through the shim, so that the
 * client's own timing lines alternate between the two, as bench/ab_loop.c
 * does for a loop of our own.  Between processes all_reduce_perf's 8-byte
 * time varies by ±25% on our GPU VMs, far beyond the effect.
 *
 *   AB_SKIP=W AB_BLOCK=N+1 LD_PRELOAD=ab_switch.so:libncclguard.so \
 *       all_reduce_perf -b 8 -e 8 -w W -n N -N 2L -c 0
 *
 * all_reduce_perf -g 1 (one GPU per thread, -t threads; each thread
 * counts its own calls) makes W warm-up calls, then per line two timed
 * blocks (out-of-place, in-place) of one synchronising call and N timed
 * ones.  The warm-up alternates call by call; lines go direct, shim,
 * shim, direct (ABBA), both blocks of a line the same way, so that each
 * pair of lines compares the two on the same work (on one rank an
 * in-place all-reduce is no work for NCCL, 0.4 us against 8 us: the
 * columns cannot be mixed).  bench/gpu_overhead.sh MODE=arpab pairs
 * them.  At exit it says how many calls it saw, to check that blocks and
 * lines lined up.
 *
 * Both kinds pass through this wrapper; without the shim both are NCCL
 * itself: an A/A run, the noise floor.  With bench/null_profiler.c as
 * NCCL's profiler plugin, which hands over NCCL's event mask here, the
 * direct blocks run with the mask cleared: the profiler's cost in NCCL.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <nccl.h>

typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t,
				     ncclRedOp_t, ncclComm_t, cudaStream_t);

static allreduce_fn path[2];	/* 0: libnccl.so.2's own, 1: the next one (the shim) */
static unsigned long skip, block = 1, calls, via[2];	/* all threads */
static __thread unsigned long thread_calls;	/* all_reduce_perf -t: a rank each */
int *ab_switch_mask;		/* NCCL's profiler event mask, or NULL */
int ab_switch_mask_on;

static int resolve(void)
{
	void *lib = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);

	path[0] = lib ? (allreduce_fn)dlsym(lib, "ncclAllReduce") : NULL;
	path[1] = (allreduce_fn)dlsym(RTLD_NEXT, "ncclAllReduce");
	if (!path[0] || !path[1]) {
		fprintf(stderr, "ab_switch: ncclAllReduce not found (libnccl.so.2 %s)\n",
			lib ? "loaded" : "not loaded");
		return -1;
	}
	/* On the client's stdout, in order with its lines. */
	printf("ab_switch: direct %p, next %p%s; skip %lu, blocks of %lu\n",
		(void *)path[0], (void *)path[1],
		path[0] == path[1] ? " (the same: no shim, an A/A run)" : "", skip, block);
	return 0;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			   cudaStream_t stream)
{
	unsigned long k = thread_calls++, b;
	int kind;

	if (__builtin_expect(!path[0], 0) && resolve())
		return ncclSystemError;
	if (k < skip) {
		kind = k & 1;
	} else {
		b = (k - skip) / block;	/* of line b / 2 */
		kind = ((b / 2 + 1) >> 1) & 1;
	}
	__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&via[kind], 1, __ATOMIC_RELAXED);
	if (ab_switch_mask) {
		/* A plugin may add events after its init (ours adds the kernel's
		 * when it alone sees a comm): keep what it has asked for so far. */
		int cur = __atomic_load_n(ab_switch_mask, __ATOMIC_RELAXED);

		if (cur & ~ab_switch_mask_on)
			__atomic_or_fetch(&ab_switch_mask_on, cur, __ATOMIC_RELAXED);
		__atomic_store_n(ab_switch_mask, kind ? ab_switch_mask_on : 0, __ATOMIC_RELAXED);
	}
	return path[kind](sendbuff, recvbuff, count, datatype, op, comm, stream);
}

__attribute__((constructor)) static void ab_switch_init(void)
{
	const char *s = getenv("AB_SKIP"), *n = getenv("AB_BLOCK");

	skip = s ? strtoul(s, NULL, 10) : 0;
	block = n ? strtoul(n, NULL, 10) : 1;
	if (!block)
		block = 1;
}

__attribute__((destructor)) static void ab_switch_fini(void)
{
	printf("ab_switch: %lu calls (%lu direct, %lu through the next)\n",
		calls, via[0], via[1]);
	fflush(stdout);
}
