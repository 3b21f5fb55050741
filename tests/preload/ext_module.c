/* Loaded the way PyTorch loads NCCL: this module links libnccl.so.2 and is
 * itself dlopened RTLD_LOCAL by tests/preload/ext_driver.c, so NCCL is in a
 * local scope where dlsym(RTLD_NEXT) from a preloaded library cannot see it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "idfile.h"

int ext_run(const char *idfile, int iters)
{
	int rank = atoi(getenv("RANK")), n = atoi(getenv("WORLD_SIZE"));
	ncclUniqueId id;
	ncclComm_t comm;
	cudaStream_t s;
	float *buf, host[256];
	int bad = 0;

	if (get_id(idfile, rank, ncclGetUniqueId, &id) || cudaSetDevice(0) || cudaStreamCreate(&s) ||
	    cudaMalloc((void **)&buf, sizeof(host)))
		return 10;
	if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess)
		return 11;
	for (int it = 0; it < iters; it++) {
		for (int i = 0; i < 256; i++)
			host[i] = (float)(rank + 1) * (i + it);
		cudaMemcpy(buf, host, sizeof(host), cudaMemcpyHostToDevice);
		if (ncclAllReduce(buf, buf, 256, ncclFloat, ncclSum, comm, s) != ncclSuccess)
			return 12;
		cudaStreamSynchronize(s);
		cudaMemcpy(host, buf, sizeof(host), cudaMemcpyDeviceToHost);
		for (int i = 0; i < 256; i++)
			bad += host[i] != (float)(n * (n + 1) / 2) * (i + it);
	}
	ncclCommDestroy(comm);
	printf("rank %d: %s\n", rank, bad ? "WRONG" : "sum ok");
	return bad ? 13 : 0;
}
