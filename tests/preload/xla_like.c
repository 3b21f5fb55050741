/*
 * A rank that calls NCCL as XLA does: libnccl.so.2 opened under its own
 * handle (RTLD_LOCAL | RTLD_DEEPBIND), every call through a pointer from
 * dlsym(handle, ...), so no preloaded wrapper ever sees one.  Only NCCL's
 * profiler plugin can.
 *
 *   xla_like IDFILE ITERS [BYTES [SKIP_RANK SKIP_CALL]]
 *
 * RANK and WORLD_SIZE from the environment; XLA_RING=1 adds to each step
 * a send to the next rank and a receive from the previous, in a group;
 * XLA_ALLGATHER=1 an all-gather of the buffer's shares.  Rank SKIP_RANK does not make
 * its all-reduce number SKIP_CALL (from 1), nor any after: it sleeps, as
 * a rank stuck outside NCCL, and the others hang in that call.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

/* AddressSanitizer refuses RTLD_DEEPBIND (its interceptors would be
 * bypassed); RTLD_LOCAL alone still hides NCCL from the preloaded shim. */
#ifdef __SANITIZE_ADDRESS__
#define XLA_DLOPEN (RTLD_NOW | RTLD_LOCAL)
#else
#define XLA_DLOPEN (RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)
#endif
#include <nccl.h>

#include "idfile.h"

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);

	if (!p) {
		fprintf(stderr, "xla_like: no %s\n", name);
		exit(2);
	}
	return p;
}

int main(int argc, char **argv)
{
	idfile_getter unique_id;
	ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int);
	ncclResult_t (*allreduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
				  ncclComm_t, cudaStream_t);
	ncclResult_t (*allgather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
				  cudaStream_t);
	ncclResult_t (*destroy)(ncclComm_t);
	ncclResult_t (*gstart)(void), (*gend)(void);
	ncclResult_t (*send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
	ncclResult_t (*recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
	int ring = getenv("XLA_RING") && !strcmp(getenv("XLA_RING"), "1");
	int gather = getenv("XLA_ALLGATHER") && !strcmp(getenv("XLA_ALLGATHER"), "1");
	cudaError_t (*cmalloc)(void **, size_t);
	cudaError_t (*cmemset)(void *, int, size_t);
	cudaError_t (*setdev)(int);
	cudaError_t (*ndev)(int *);
	cudaError_t (*mkstream)(cudaStream_t *);
	cudaError_t (*sync)(cudaStream_t);
	int rank = atoi(getenv("RANK") ? getenv("RANK") : "0");
	int world = atoi(getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : "1");
	int iters, skip_rank = -1, skip_call = 0, n = 0;
	size_t bytes = 4096;
	void *nccl, *cudart, *buf = NULL, *rbuf = NULL;
	cudaStream_t s;
	ncclUniqueId id;
	ncclComm_t comm;

	if (argc < 3) {
		fprintf(stderr, "usage: xla_like IDFILE ITERS [BYTES [SKIP_RANK SKIP_CALL]]\n");
		return 2;
	}
	iters = atoi(argv[2]);
	if (argc > 3)
		bytes = strtoul(argv[3], NULL, 0);
	if (argc > 5) {
		skip_rank = atoi(argv[4]);
		skip_call = atoi(argv[5]);
	}
	cudart = dlopen("libcudart.so.13", XLA_DLOPEN);
	nccl = dlopen("libnccl.so.2", XLA_DLOPEN);
	if (!cudart || !nccl) {
		fprintf(stderr, "xla_like: %s\n", dlerror());
		return 2;
	}
	unique_id = sym(nccl, "ncclGetUniqueId");
	init = sym(nccl, "ncclCommInitRank");
	allreduce = sym(nccl, "ncclAllReduce");
	allgather = sym(nccl, "ncclAllGather");
	destroy = sym(nccl, "ncclCommDestroy");
	gstart = sym(nccl, "ncclGroupStart");
	gend = sym(nccl, "ncclGroupEnd");
	send = sym(nccl, "ncclSend");
	recv = sym(nccl, "ncclRecv");
	cmalloc = sym(cudart, "cudaMalloc");
	cmemset = sym(cudart, "cudaMemset");
	setdev = sym(cudart, "cudaSetDevice");
	ndev = sym(cudart, "cudaGetDeviceCount");
	mkstream = sym(cudart, "cudaStreamCreate");
	sync = sym(cudart, "cudaStreamSynchronize");

	/* A GPU each, as a launcher would give (on a GPU host too). */
	if (ndev(&n) == cudaSuccess && n > 0)
		setdev(rank % n);
	if (get_id(argv[1], rank, unique_id, &id) || init(&comm, world, id, rank) != ncclSuccess ||
	    cmalloc(&buf, bytes) != cudaSuccess || cmalloc(&rbuf, bytes) != cudaSuccess ||
	    mkstream(&s) != cudaSuccess) {
		fprintf(stderr, "xla_like: rank %d: setup failed\n", rank);
		return 1;
	}
	if (cmemset(buf, 0, bytes) != cudaSuccess) {
		fprintf(stderr, "xla_like: rank %d: cudaMemset failed\n", rank);
		return 1;
	}
	for (int i = 1; i <= iters; i++) {
		if (rank == skip_rank && i == skip_call) {
			fprintf(stderr, "xla_like: rank %d: skipping call %d\n", rank, i);
			sleep(3);
			return 0;
		}
		if (allreduce(buf, buf, bytes / 4, ncclFloat32, ncclSum, comm, s) != ncclSuccess ||
		    sync(s) != cudaSuccess) {
			fprintf(stderr, "xla_like: rank %d: call %d failed\n", rank, i);
			return 1;
		}
		/* Each rank's share of the buffer, gathered into rbuf. */
		if (gather && (allgather(buf, rbuf, bytes / 4 / (size_t)world, ncclFloat32, comm,
					 s) != ncclSuccess || sync(s) != cudaSuccess)) {
			fprintf(stderr, "xla_like: rank %d: all-gather %d failed\n", rank, i);
			return 1;
		}
		if (ring && (gstart() != ncclSuccess ||
			     send(buf, bytes, ncclInt8, (rank + 1) % world, comm, s) != ncclSuccess ||
			     recv(rbuf, bytes, ncclInt8, (rank + world - 1) % world, comm, s) !=
				     ncclSuccess ||
			     gend() != ncclSuccess || sync(s) != cudaSuccess)) {
			fprintf(stderr, "xla_like: rank %d: ring %d failed\n", rank, i);
			return 1;
		}
	}
	destroy(comm);
	printf("xla_like: rank %d: %d calls done\n", rank, iters);
	return 0;
}
