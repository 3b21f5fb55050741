/*
 * The exported NCCL entry points, generated from nccl_api.def.  PASS calls
 * are forwarded as they are; COLL and P2P calls go through coll.c; HOOK
 * calls go to their hand-written ngw_* in wrap_comm.c.
 */
#include <errno.h>

#include "coll_fast.h"

/* First use of a PASS entry: NCCL may only now be loaded. */
static int ensure(int fn, void *const *slot)
{
	if (*slot)
		return 0;
	ng_init();
	ng_first_call();
	ng_resolve_nccl();
	if (*slot)
		return 0;
	ng_missing(fn);
	return -1;
}

#define NCCL_PASS(ret, fail, name, params, args)                              \
	NG_EXPORT ret name params                                             \
	{                                                                     \
		if (__builtin_expect(!ng_real.name, 0) &&                     \
		    ensure(NG_FN_##name, (void *const *)&ng_real.name))       \
			return fail;                                          \
		return ng_real.name args;                                     \
	}

/* NCCL's own calls to its API (resolve.c) go straight back to it. */
#define NCCL_HOOK(ret, fail, name, op, params, args)                          \
	NG_EXPORT ret name params                                             \
	{                                                                     \
		if (ng_from_nccl(__builtin_return_address(0)) && ng_real.name) \
			return ng_real.name args;                             \
		return ngw_##name args;                                       \
	}

#define NG_FORWARD(name, ng_p2p, ng_count, ng_dtype, ng_root, ng_comm, ng_stream, ng_per_rank, args) \
	{                                                                     \
		struct ng_call ng_c;                                          \
		ncclResult_t ng_r;                                            \
		if (ng_coll_begin_inline(&ng_c, NG_FN_##name, ng_p2p, ng_count, \
					 ng_dtype, ng_root, ng_comm, ng_stream, \
					 ng_per_rank, __builtin_return_address(0))) \
			return ng_c.result;                                   \
		if (__builtin_expect(!ng_real.name, 0) &&                     \
		    ensure(NG_FN_##name, (void *const *)&ng_real.name)) {     \
			ng_r = ncclSystemError;                               \
		} else {                                                      \
			ng_r = ng_real.name args;                             \
		}                                                             \
		if (ng_c.active)                                              \
			ng_coll_end_inline(&ng_c, ng_r);                      \
		return ng_r;                                                  \
	}

#define NCCL_COLL(name, op, params, args, count, dtype, root, comm, stream, per_rank, ...) \
	NG_EXPORT NG_HOT ncclResult_t name params                             \
	NG_FORWARD(name, 0, count, dtype, root, comm, stream, per_rank, args)

#define NCCL_P2P(name, op, params, args, count, dtype, peer, comm, stream, ...) \
	NG_EXPORT NG_HOT ncclResult_t name params                               \
	NG_FORWARD(name, 1, count, dtype, peer, comm, stream, 0, args)

#include "nccl_api.def"
