/*
 * Host cost of an intercepted NCCL call: a single-rank loop of small
 * all-reduces, timing only the host side of the calls (the stream is
 * drained every `batch` calls, outside the timed region).  Run by
 * bench/host_overhead.sh with and without the shim, interleaved.
 *
 *   host_overhead [calls] [batch] [bytes]
 *
 * Prints "ns_per_call N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cuda_runtime.h>
#include <nccl.h>

#define CHECK(x)                                                               \
	do {                                                                   \
		int rc_ = (int)(x);                                            \
		if (rc_) {                                                     \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__,    \
				__LINE__, #x, rc_);                            \
			exit(1);                                               \
		}                                                              \
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 200000;
	long batch = argc > 2 ? atol(argv[2]) : 500;
	size_t bytes = argc > 3 ? (size_t)atol(argv[3]) : 8;
	size_t count = bytes / sizeof(float) ? bytes / sizeof(float) : 1;
	ncclUniqueId id;
	ncclComm_t comm;
	cudaStream_t s;
	float *buf;
	double host = 0;

	CHECK(cudaSetDevice(0));
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMalloc((void **)&buf, count * sizeof(float)));
	CHECK(ncclGetUniqueId(&id));
	CHECK(ncclCommInitRank(&comm, 1, id, 0));
	for (long i = 0; i < 1000; i++)	/* warm-up */
		CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, s));
	CHECK(cudaStreamSynchronize(s));
	for (long done = 0; done < calls; done += batch) {
		double t0 = now();

		for (long i = 0; i < batch; i++)
			CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, s));
		host += now() - t0;
		CHECK(cudaStreamSynchronize(s));
	}
	printf("ns_per_call %.1f\n", host * 1e9 / calls);
	CHECK(ncclCommDestroy(comm));
	CHECK(cudaFree(buf));
	return 0;
}
