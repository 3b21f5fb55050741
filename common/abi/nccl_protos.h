/*
 * Every entry point of common/nccl_api.def declared as ncclX and as its
 * strong alias pncclX, as nccl.h declares them.  No include guard: nccl.h
 * here expands it once, and tests/common/abi_check.c once more after the
 * real nccl.h, where a prototype unlike the real one does not compile.
 */
#include "nccl_newer.h"

#define NG_ABI_PROTO2(ret, name, params) ret name params; ret p##name params;
#define NCCL_PASS(ret, fail, name, params, args) NG_ABI_PROTO2(ret, name, params)
#define NCCL_PASS_VOID(name, params, args) NG_ABI_PROTO2(void, name, params)
#define NCCL_HOOK(ret, fail, name, op, params, args) NG_ABI_PROTO2(ret, name, params)
#define NCCL_COLL(name, op, params, args, count, dtype, root, comm, stream, scale, ...) \
	NG_ABI_PROTO2(ncclResult_t, name, params)
#define NCCL_P2P(name, op, params, args, count, dtype, peer, comm, stream, ...) \
	NG_ABI_PROTO2(ncclResult_t, name, params)
#include "../nccl_api.def"
#undef NG_ABI_PROTO2
