/*
 * A job for the NCCL 2.29/2.30 API's tests on the CPU backend: one process
 * per rank (RANK, WORLD_SIZE from the environment, the unique id through
 * IDFILE), one mode per feature.  It prints what NCCL returned, so that a
 * test sees what the program saw.
 *
 *   api_job IDFILE MODE
 * MODE:
 *   grow     ranks 0, 1 make a comm of 2 and all-reduce on it; rank 0's
 *            ncclCommGetUniqueId goes to IDFILE.grow; ranks 2, 3 join:
 *            ncclCommGrow to 4, then an all-reduce of 4 checked
 *   grownb   the same, every grow nonblocking: waited for with
 *            ncclCommGetAsyncError on the new comm
 *   growold  ranks of a comm call ncclCommGrow (to one more rank), which
 *            a 2.28 NCCL does not have: prints its result and goes on
 *   shrink   a comm of 4; rank 3 leaves, the others shrink to 3 and
 *            all-reduce, checked
 *   suspend  an all-reduce, ncclCommSuspend(NCCL_SUSPEND_MEM), one
 *            between (prints its result), ncclCommResume, two after
 *   suspendopen  rank 0 suspends with an all-reduce open that rank 1
 *            joins 2 s later; its stream is waited for, then resumed
 *   signals  3 rounds: rank 0 puts and signals to rank 1, which waits for
 *            both (one descriptor of opCnt 2); with 3 ranks rank 2 signals
 *            too, and rank 1's wait has a descriptor for each peer
 *   nosignal rank 1 waits for a signal rank 0 never sends
 *   params   (one rank) the parameter API and memory stats, printed
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include <nccl.h>

/* The 2.29/2.30 calls, whatever nccl.h the build has. */
#include "nccl_protos.h"
#include "idfile.h"

static char grow_path[4096];

static ncclResult_t grow_id(ncclUniqueId *id);
static ncclComm_t grow_parent;

static ncclResult_t grow_id(ncclUniqueId *id)
{
	return ncclCommGetUniqueId(grow_parent, id);
}

/* An all-reduce of n ranks' (rank + 1): each element is n (n + 1) / 2. */
static int allreduce(ncclComm_t comm, cudaStream_t s, int rank, int n, const char *what)
{
	float *buf, host[64];
	ncclResult_t r;

	for (int i = 0; i < 64; i++)
		host[i] = (float)(rank + 1);
	if (cudaMalloc((void **)&buf, sizeof(host)) ||
	    cudaMemcpy(buf, host, sizeof(host), cudaMemcpyHostToDevice))
		return -1;
	r = ncclAllReduce(buf, buf, 64, ncclFloat, ncclSum, comm, s);
	printf("%s allreduce returned %d\n", what, r);
	if (r == ncclSuccess && (cudaStreamSynchronize(s) ||
				 cudaMemcpy(host, buf, sizeof(host), cudaMemcpyDeviceToHost)))
		r = ncclUnhandledCudaError;
	cudaFree(buf);
	if (r != ncclSuccess)
		return r;
	if (host[0] != (float)(n * (n + 1) / 2)) {
		printf("%s allreduce: %g, expected %d\n", what, host[0], n * (n + 1) / 2);
		return -1;
	}
	return 0;
}

static int do_grow(const char *idfile, int rank, int blocking, cudaStream_t s)
{
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	ncclUniqueId id, gid;
	ncclComm_t comm = NULL, grown = NULL;
	ncclResult_t r, async = ncclInProgress;

	if (rank < 2) {
		if (get_id(idfile, rank, ncclGetUniqueId, &id) ||
		    ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess ||
		    allreduce(comm, s, rank, 2, "parent"))
			return 3;
		grow_parent = comm;
		/* Rank 0 hands the grow's id to the joiners. */
		if (rank == 0 && get_id(grow_path, 0, grow_id, &gid))
			return 3;
		config.blocking = blocking;
		r = ncclCommGrow(comm, 4, rank == 0 ? &gid : NULL, -1, &grown, &config);
	} else {
		if (get_id(grow_path, rank, grow_id, &gid))
			return 3;
		config.blocking = blocking;
		r = ncclCommGrow(NULL, 4, &gid, rank, &grown, &config);
	}
	printf("grow returned %d\n", r);
	/* Nonblocking: the comm is there, in progress until it is ready. */
	if (!blocking && grown && (r == ncclSuccess || r == ncclInProgress)) {
		while ((r = ncclCommGetAsyncError(grown, &async)) == ncclSuccess &&
		       async == ncclInProgress)
			usleep(1000);
		if (r == ncclSuccess)
			r = async;
		printf("grow ready %d\n", r);
	}
	if (r != ncclSuccess || allreduce(grown, s, rank, 4, "grown"))
		return 4;
	ncclCommDestroy(grown);
	if (comm)
		ncclCommDestroy(comm);
	return 0;
}

static int do_growold(const char *idfile, int rank, int n, cudaStream_t s)
{
	ncclUniqueId id;
	ncclComm_t comm, grown = NULL;
	ncclResult_t r;

	if (get_id(idfile, rank, ncclGetUniqueId, &id) ||
	    ncclCommInitRank(&comm, n, id, rank) != ncclSuccess)
		return 3;
	r = ncclCommGrow(comm, n + 1, NULL, -1, &grown, NULL);
	printf("grow returned %d\n", r);
	if (allreduce(comm, s, rank, n, "after"))
		return 4;
	ncclCommDestroy(comm);
	return 0;
}

static int do_shrink(const char *idfile, int rank, cudaStream_t s)
{
	ncclUniqueId id;
	ncclComm_t comm, small = NULL;
	int out = 3;
	ncclResult_t r;

	if (get_id(idfile, rank, ncclGetUniqueId, &id) ||
	    ncclCommInitRank(&comm, 4, id, rank) != ncclSuccess ||
	    allreduce(comm, s, rank, 4, "parent"))
		return 3;
	if (rank == 3) {
		printf("left\n");
		/* The others shrink while this rank is still a member. */
		sleep(1);
		ncclCommDestroy(comm);
		return 0;
	}
	r = ncclCommShrink(comm, &out, 1, &small, NULL, NCCL_SHRINK_DEFAULT);
	printf("shrink returned %d\n", r);
	if (r != ncclSuccess || allreduce(small, s, rank, 3, "shrunk"))
		return 4;
	ncclCommDestroy(small);
	ncclCommDestroy(comm);
	return 0;
}

static int do_suspend(const char *idfile, int rank, int n, cudaStream_t s)
{
	ncclUniqueId id;
	ncclComm_t comm;
	uint64_t v = 9;
	ncclResult_t r;

	if (get_id(idfile, rank, ncclGetUniqueId, &id) ||
	    ncclCommInitRank(&comm, n, id, rank) != ncclSuccess ||
	    allreduce(comm, s, rank, n, "before"))
		return 3;
	r = ncclCommSuspend(comm, NCCL_SUSPEND_MEM);
	printf("suspend returned %d\n", r);
	ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v);
	printf("suspended stat %llu\n", (unsigned long long)v);
	/* NCCL's answer, where the shim let it through (the CPU backend's
	 * says what a GPU would have done). */
	if (allreduce(comm, s, rank, n, "suspended") == ncclInternalError)
		printf("suspended allreduce: %s\n", ncclGetLastError(comm));
	r = ncclCommResume(comm);
	printf("resume returned %d\n", r);
	if (allreduce(comm, s, rank, n, "resumed") || allreduce(comm, s, rank, n, "resumed"))
		return 4;
	ncclCommDestroy(comm);
	return 0;
}

/* Rank 0 enters an all-reduce rank 1 joins 2 s later, and suspends its
 * comm meanwhile (the call stays open, its stream waited for before the
 * resume): its watchdog must not call the open call a hang. */
static int do_suspendopen(const char *idfile, int rank, int n, cudaStream_t s)
{
	ncclUniqueId id;
	ncclComm_t comm;
	float *buf;
	ncclResult_t r;

	if (get_id(idfile, rank, ncclGetUniqueId, &id) ||
	    ncclCommInitRank(&comm, n, id, rank) != ncclSuccess ||
	    cudaMalloc((void **)&buf, 256) || cudaMemset(buf, 0, 256))
		return 3;
	if (rank == 0) {
		r = ncclAllReduce(buf, buf, 64, ncclFloat, ncclSum, comm, s);
		if (r == ncclSuccess)
			r = ncclCommSuspend(comm, 0);
		sleep(3);
		if (r == ncclSuccess && cudaStreamSynchronize(s))
			r = ncclUnhandledCudaError;
		if (r == ncclSuccess)
			r = ncclCommResume(comm);
	} else {
		sleep(2);
		r = ncclAllReduce(buf, buf, 64, ncclFloat, ncclSum, comm, s);
		if (r == ncclSuccess && cudaStreamSynchronize(s))
			r = ncclUnhandledCudaError;
	}
	printf("suspendopen returned %d\n", r);
	if (r != ncclSuccess)
		return 4;
	ncclCommDestroy(comm);
	return 0;
}

static int do_signals(const char *idfile, int rank, int n, int rounds, cudaStream_t s)
{
	/* With a third rank, rank 1 also waits for its signal: a wait on two
	 * peers. */
	ncclWaitSignalDesc_t d[2] = { { .opCnt = 2, .peer = 0, .sigIdx = 0, .ctx = 0 },
				      { .opCnt = 1, .peer = 2, .sigIdx = 1, .ctx = 0 } };
	ncclUniqueId id;
	ncclComm_t comm;
	ncclWindow_t win;
	float *buf;
	ncclResult_t r = ncclSuccess;

	if (get_id(idfile, rank, ncclGetUniqueId, &id) ||
	    ncclCommInitRank(&comm, n, id, rank) != ncclSuccess ||
	    cudaMalloc((void **)&buf, 4096) ||
	    ncclCommWindowRegister(comm, buf, 4096, &win, NCCL_WIN_DEFAULT) != ncclSuccess)
		return 3;
	for (int i = 0; i < rounds && r == ncclSuccess; i++) {
		if (rank == 0) {
			r = ncclPutSignal(buf, 16, ncclFloat, 1, win, 0, 0, 0, 0, comm, s);
			if (r == ncclSuccess)
				r = ncclSignal(1, 0, 0, 0, comm, s);
		} else if (rank == 1) {
			r = ncclWaitSignal(n > 2 ? 2 : 1, d, comm, s);
		} else if (rank == 2) {
			r = ncclSignal(1, 1, 0, 0, comm, s);
		}
		if (r == ncclSuccess && cudaStreamSynchronize(s))
			r = ncclUnhandledCudaError;
	}
	printf("signals returned %d\n", r);
	if (r != ncclSuccess)
		return 4;
	ncclCommWindowDeregister(comm, win);
	ncclCommDestroy(comm);
	return 0;
}

static int do_params(void)
{
	static const char *const keys[] = { "NCCL_SOCKET_IFNAME", "NCCL_BUFFSIZE" };
	ncclParamHandle_t h;
	const char **table, *str;
	int64_t i64 = 0;
	uint32_t u32 = 0;
	int8_t i8 = 0;
	int len = 0;
	char raw[64];
	ncclResult_t r;

	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
		r = ncclParamGetParameter(keys[i], &str, &len);
		printf("param %s returned %d: %s (%d)\n", keys[i], r, r ? "" : str, len);
	}
	r = ncclParamBind(&h, "NCCL_BUFFSIZE");
	printf("bind returned %d\n", r);
	if (r == ncclSuccess) {
		/* Each call before its printf reads what it wrote. */
		r = ncclParamGetI64(h, &i64);
		printf("i64 returned %d: %lld\n", r, (long long)i64);
		r = ncclParamGetU32(h, &u32);
		printf("u32 returned %d: %u\n", r, u32);
		printf("i8 returned %d\n", ncclParamGetI8(h, &i8));
		r = ncclParamGet(h, raw, sizeof(raw), &len);
		printf("get returned %d: %d %s\n", r, len, r ? "" : raw);
		r = ncclParamGetStr(h, &str);
		printf("str returned %d: %s\n", r, r ? "" : str);
	}
	r = ncclParamGetAllParameterKeys(&table, &len);
	printf("keys returned %d: %d, first %s\n", r, len, r || !len ? "" : table[0]);
	ncclParamDumpAll();
	return 0;
}

static int do_memstats(int rank, int n, const char *idfile)
{
	ncclUniqueId id;
	ncclComm_t comm;
	uint64_t v[4] = { 0 };

	if (get_id(idfile, rank, ncclGetUniqueId, &id) ||
	    ncclCommInitRank(&comm, n, id, rank) != ncclSuccess)
		return 3;
	for (int i = 0; i < 4; i++) {
		ncclResult_t r = ncclCommMemStats(comm, (ncclCommMemStat_t)i, &v[i]);

		printf("stat %d returned %d: %llu\n", i, r, (unsigned long long)v[i]);
	}
	ncclCommDestroy(comm);
	return 0;
}

int main(int argc, char **argv)
{
	int rank = atoi(getenv("RANK") ? getenv("RANK") : "0");
	int n = atoi(getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : "1");
	cudaStream_t s;
	const char *mode;
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: api_job IDFILE MODE\n");
		return 2;
	}
	mode = argv[2];
	snprintf(grow_path, sizeof(grow_path), "%s.grow", argv[1]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (cudaSetDevice(0) || cudaStreamCreate(&s)) {
		fprintf(stderr, "api_job: no stream\n");
		return 3;
	}
	if (!strcmp(mode, "grow") || !strcmp(mode, "grownb"))
		rc = do_grow(argv[1], rank, !strcmp(mode, "grow"), s);
	else if (!strcmp(mode, "growold"))
		rc = do_growold(argv[1], rank, n, s);
	else if (!strcmp(mode, "shrink"))
		rc = do_shrink(argv[1], rank, s);
	else if (!strcmp(mode, "suspend"))
		rc = do_suspend(argv[1], rank, n, s);
	else if (!strcmp(mode, "suspendopen"))
		rc = do_suspendopen(argv[1], rank, n, s);
	else if (!strcmp(mode, "signals"))
		rc = do_signals(argv[1], rank, n, 3, s);
	else if (!strcmp(mode, "nosignal"))
		rc = do_signals(argv[1], rank, n, 1, s);
	else if (!strcmp(mode, "params"))
		rc = do_params();
	else if (!strcmp(mode, "memstats"))
		rc = do_memstats(rank, n, argv[1]);
	else {
		fprintf(stderr, "api_job: unknown mode %s\n", mode);
		return 2;
	}
	return rc;
}
