/*
 * A job for output verification's tests: one process per rank (RANK,
 * WORLD_SIZE from the environment, the unique id through IDFILE), ITERS
 * rounds of an all-reduce, an all-gather and a broadcast (seqs 3k+1, 3k+2,
 * 3k+3), each round waited for.  It checks nothing: an injected
 * corruption is the analyzer's to find.
 *
 *   verify_job IDFILE ITERS [--bytes N] [--group] [--nonblocking]
 *       [--capture K]
 *
 * --group: a round's three calls in one group.  --nonblocking: the comm is
 * nonblocking, and every call is waited out with ncclCommGetAsyncError.
 * --capture K: round K's calls are made while their stream is captured
 * (the graph is never launched).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "idfile.h"

static ncclResult_t settle(ncclComm_t comm, ncclResult_t r, int blocking)
{
	ncclResult_t async = ncclInProgress;

	if (blocking || (r != ncclSuccess && r != ncclInProgress))
		return r;
	while (!(r = ncclCommGetAsyncError(comm, &async)) && async == ncclInProgress)
		usleep(200);
	return r ? r : async;
}

int main(int argc, char **argv)
{
	int rank = atoi(getenv("RANK") ? getenv("RANK") : "0");
	int n = atoi(getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : "1");
	int iters, group = 0, blocking = 1, capture = -1;
	size_t bytes = 64 * 1024, count;
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	ncclUniqueId id;
	ncclComm_t comm;
	ncclResult_t r;
	cudaStream_t s;
	float *in, *out, *gathered, *host;

	if (argc < 3) {
		fprintf(stderr, "usage: verify_job IDFILE ITERS [--bytes N] [--group] "
			"[--nonblocking] [--capture K]\n");
		return 2;
	}
	iters = atoi(argv[2]);
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
			bytes = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--group"))
			group = 1;
		else if (!strcmp(argv[i], "--nonblocking"))
			blocking = 0;
		else if (!strcmp(argv[i], "--capture") && i + 1 < argc)
			capture = atoi(argv[++i]);
		else {
			fprintf(stderr, "verify_job: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	count = bytes / sizeof(float) / (size_t)n * (size_t)n;
	if (!count)
		count = (size_t)n;
	host = malloc(count * sizeof(float));
	if (!host || get_id(argv[1], rank, ncclGetUniqueId, &id) || cudaSetDevice(0) ||
	    cudaStreamCreate(&s) || cudaMalloc((void **)&in, count * sizeof(float)) ||
	    cudaMalloc((void **)&out, count * sizeof(float)) ||
	    cudaMalloc((void **)&gathered, count * sizeof(float))) {
		fprintf(stderr, "verify_job: setup failed\n");
		return 3;
	}
	config.blocking = blocking;
	r = ncclCommInitRankConfig(&comm, n, id, rank, &config);
	if ((r == ncclSuccess || r == ncclInProgress) && !blocking) {
		ncclResult_t async = ncclInProgress;

		while (!(r = ncclCommGetAsyncError(comm, &async)) && async == ncclInProgress)
			usleep(1000);
		r = r ? r : async;
	}
	if (r != ncclSuccess) {
		printf("init returned %d\n", r);
		return 10 + r;
	}
	for (int it = 1; it <= iters; it++) {
		cudaGraph_t graph = NULL;
		size_t part = count / (size_t)n;

		for (size_t i = 0; i < count; i++)
			host[i] = (float)(rank + 1) * 0.25f + (float)(i % 97) + (float)it;
		if (cudaMemcpy(in, host, count * sizeof(float), cudaMemcpyHostToDevice))
			return 3;
		if (it == capture && cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal))
			return 4;
		if (group)
			ncclGroupStart();
		r = settle(comm, ncclAllReduce(in, out, count, ncclFloat, ncclSum, comm, s),
			   blocking || group);
		if (!r)
			r = settle(comm, ncclAllGather(in + (size_t)rank * part, gathered, part,
						       ncclFloat, comm, s), blocking || group);
		if (!r)
			r = settle(comm, ncclBroadcast(in, out, count, ncclFloat, it % n, comm, s),
				   blocking || group);
		if (group)
			r = r ? r : settle(comm, ncclGroupEnd(), blocking);
		if (r != ncclSuccess) {
			printf("round %d returned %d\n", it, r);
			return 10 + r;
		}
		if (it == capture && cudaStreamEndCapture(s, &graph))
			return 4;
		if (cudaStreamSynchronize(s))
			return 3;
	}
	printf("rounds %d\n", iters);
	ncclCommDestroy(comm);
	return 0;
}
