/*
 * Prints what a program compiled against a set of CUDA and NCCL headers
 * gets from them: sizes, and the fields the initializer macros set.
 * test_abi.sh builds it against the real headers and against the
 * project's own (common/abi/) and compares the two outputs.
 */
#include <stdio.h>

#include <cuda.h>
#include <cuda_runtime.h>
#include <nccl.h>

int main(void)
{
	ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
	ncclSimInfo_t s = NCCL_SIM_INFO_INITIALIZER;

	printf("sizeof ncclConfig_t %zu ncclSimInfo_t %zu ncclUniqueId %zu\n", sizeof(c),
	       sizeof(s), sizeof(ncclUniqueId));
	printf("sizeof cudaDeviceProp %zu cudaPointerAttributes %zu cudaUUID_t %zu\n",
	       sizeof(struct cudaDeviceProp), sizeof(struct cudaPointerAttributes),
	       sizeof(cudaUUID_t));
	printf("sizeof enums %zu %zu %zu %zu %zu\n", sizeof(ncclResult_t), sizeof(ncclRedOp_t),
	       sizeof(ncclDataType_t), sizeof(cudaError_t), sizeof(CUresult));
	printf("config size %zu magic %#x version %u blocking %d cga %d min %d max %d net %p "
	       "split %d tc %d name %p collnet %d cta %d shrink %d nvls %d netpeer %d nvlc %d\n",
	       c.size, c.magic, c.version, c.blocking, c.cgaClusterSize, c.minCTAs, c.maxCTAs,
	       (const void *)c.netName, c.splitShare, c.trafficClass, (const void *)c.commName,
	       c.collnetEnable, c.CTAPolicy, c.shrinkShare, c.nvlsCTAs, c.nChannelsPerNetPeer,
	       c.nvlinkCentricSched);
	printf("siminfo size %zu magic %#x version %u time %g\n", s.size, s.magic, s.version,
	       (double)s.estimatedTime);
	printf("version %d %d.%d.%d cudart %d cuda %d\n", NCCL_VERSION_CODE, NCCL_MAJOR, NCCL_MINOR,
	       NCCL_PATCH, CUDART_VERSION, CUDA_VERSION);
	printf("streams %p %p\n", (void *)cudaStreamLegacy, (void *)cudaStreamPerThread);
	return 0;
}
