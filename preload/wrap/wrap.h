/*
 * preload/wrap: the exported entry points.  wrap.c generates the NCCL
 * wrappers from common/nccl_api.def; collectives and point-to-point calls
 * run coll_fast.h inline, the rest of their life in coll.c; the
 * communicator calls are wrap_comm.c's; the CUDA calls wrap/cuda.c's.
 */
#ifndef NCCLGUARD_WRAP_H
#define NCCLGUARD_WRAP_H

#include "watchdog.h"

/* Returns nonzero when the wrapper must return call->result without
 * calling NCCL (an injected fault). */
int ng_coll_begin(struct ng_call *call, int fn, int is_p2p, uint64_t count,
		  ncclDataType_t dtype, int root, ncclComm_t comm,
		  cudaStream_t stream, int per_rank, const void *ret);
void ng_coll_end(struct ng_call *call, ncclResult_t r);
/* The real function is missing: warn once, the table's failure value. */
void ng_missing(int fn);
/* The first wrapped CUDA call that failed, with the runtime's words
 * ("cudaGetDeviceCount failed: no CUDA-capable device is detected
 * (cudaErrorNoDevice)"), "" if none: for the note at exit of a rank that
 * made no NCCL call (init.c). */
extern char ng_cuda_failed[160];
/* NCCL's profiler init for a comm ncclCommGrow is making: its hash names
 * the grown comm; 1 if a grow in progress took it (wrap_comm.c). */
int ng_grow_claim(uint64_t nccl_hash);
/* Hand-written wrappers of the NCCL_HOOK entries (wrap_comm.c). */
#define NCCL_HOOK(ret, fail, name, op, params, args) ret ngw_##name params;
#include "nccl_api.def"

#endif
