/* The exported NCCL entry points, one per line of common/nccl_api.def:
 * ncclX is weak and forwards to the strong pncclX, as real NCCL's weak
 * aliases do, so a shim that calls pncclX never lands in itself.  A table
 * line without a pncclX in sim/ fails the link (-z defs). */
#include "sim.h"

#define NCCL_PASS(ret, fail, name, params, args)                             \
	__attribute__((weak)) ret name params { return p##name args; }
#define NCCL_PASS_VOID(name, params, args)                                   \
	__attribute__((weak)) void name params { p##name args; }
#define NCCL_HOOK(ret, fail, name, op, params, args)                         \
	__attribute__((weak)) ret name params { return p##name args; }
#define NCCL_COLL(name, op, params, args, count, dtype, root, comm, stream, scale, ...) \
	__attribute__((weak)) ncclResult_t name params { return p##name args; }
#define NCCL_P2P(name, op, params, args, count, dtype, peer, comm, stream, ...)   \
	__attribute__((weak)) ncclResult_t name params { return p##name args; }
#include "nccl_api.def"
