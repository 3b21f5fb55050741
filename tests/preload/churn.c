/*
 * A program that makes and drops communicators all along, as a job that
 * builds a new group per step does:
 *
 *   churn N SLEEP_S
 *
 * N one-rank communicators in turn (init, one all-reduce, destroy), then
 * SLEEP_S seconds with none, then one more whose all-reduce takes 3 s on
 * the device (the CPU backend's NCCLSIM_LATENCY_US), waited for.  Under
 * the shim with a 1 s timeout that last call must be reported.  Nothing
 * is allocated between the last destroy and the last init (stdout's
 * buffer and the variable are made before), so that the last comm gets
 * the memory, and the address, of the one before it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include <nccl.h>

static int one(int k, int late, int slow_next)
{
	ncclUniqueId id;
	ncclComm_t comm;
	cudaStream_t s;
	float *buf;
	int rc = 1;

	if (ncclGetUniqueId(&id) || ncclCommInitRank(&comm, 1, id, 0)) {
		fprintf(stderr, "churn: comm %d: init failed\n", k);
		return 1;
	}
	if (cudaStreamCreate(&s) || cudaMalloc((void **)&buf, 64 * sizeof(float)))
		goto out_comm;
	if (ncclAllReduce(buf, buf, 64, ncclFloat, ncclSum, comm, s) ||
	    cudaStreamSynchronize(s)) {
		fprintf(stderr, "churn: comm %d: all-reduce failed\n", k);
		goto out_buf;
	}
	if (late)
		printf("churn: comm %d waited for\n", k);
	/* The next comm's all-reduce takes 3 s. */
	if (slow_next && setenv("NCCLSIM_LATENCY_US", "3000000", 1))
		goto out_buf;
	rc = 0;
out_buf:
	cudaFree(buf);
	cudaStreamDestroy(s);
out_comm:
	if (ncclCommDestroy(comm))
		rc = 1;
	return rc;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3100, idle = argc > 2 ? atoi(argv[2]) : 6;

	struct timespec t0, t1;

	printf("churn: %d communicators, then one after %d s\n", n, idle);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int k = 0; k < n; k++)
		if (one(k, 0, k == n - 1))
			return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* Made before the sleep: the last comm must get the memory of the
	 * one before it, so nothing is allocated from here on (stdout's
	 * buffer exists). */
	printf("churn: made in %ld ms\n", (long)((t1.tv_sec - t0.tv_sec) * 1000 +
						(t1.tv_nsec - t0.tv_nsec) / 1000000));
	fflush(stdout);
	sleep((unsigned)idle);
	return one(n, 1, 0);
}
