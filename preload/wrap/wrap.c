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

#define NCCL_PASS_VOID(name, params, args)                                    \
	NG_EXPORT void name params                                            \
	{                                                                     \
		if (__builtin_expect(!ng_real.name, 0) &&                     \
		    ensure(NG_FN_##name, (void *const *)&ng_real.name))       \
			return;                                               \
		ng_real.name args;                                            \
	}

/* NCCL's own calls to its API (resolve.c) go straight back to it. */
#define NCCL_HOOK(ret, fail, name, op, params, args)                          \
	NG_EXPORT ret name params                                             \
	{                                                                     \
		if (ng_from_nccl(__builtin_return_address(0)) && ng_real.name) \
			return ng_real.name args;                             \
		return ngw_##name args;                                       \
	}

/* Output verification: a collective's seq with the mask's bits all set
 * goes to the cold path, one branch for the rest; an op with no common
 * output (NG_NO_OUT) compiles to nothing. */
struct ng_out {
	void *buf;
	int redop;
};
#define NG_OUT(buf, redop) ((struct ng_out){ (buf), (int)(redop) })
#define NG_NO_OUT ((struct ng_out){ NULL, -1 })
#define NG_VERIFY(call, out, r)                                               \
	do {                                                                  \
		struct ng_out ng_o = out;                                     \
		if (__builtin_expect(((uint16_t)(call)->seq & ng_hot.verify_mask) == \
				     ng_hot.verify_mask, 0) && ng_o.buf)      \
			ng_coll_verify(call, ng_o.buf, ng_o.redop, r);        \
	} while (0)

#define NG_UNPAREN(...) __VA_ARGS__
#define NG_FORWARD(name, ng_p2p, ng_count, ng_dtype, ng_root, ng_comm, ng_stream, ng_per_rank, args, out) \
	{                                                                     \
		struct ng_call ng_c;                                          \
		ncclResult_t ng_r;                                            \
		if (ng_coll_begin_inline(&ng_c, NG_FN_##name, ng_p2p, ng_count, \
					 ng_dtype, ng_root, ng_comm, ng_stream, \
					 ng_per_rank, __builtin_return_address(0))) \
			return ng_c.result;                                   \
		/* A wait on several peers: what it waits for (coll.c). */   \
		if (NG_FN_##name == NG_FN_ncclWaitSignal &&                   \
		    __builtin_expect(ng_c.active && ng_c.trace && ng_c.root < 0, 0)) \
			ng_wait_note(&ng_c, NG_UNPAREN args);                 \
		if (__builtin_expect(!ng_real.name, 0) &&                     \
		    ensure(NG_FN_##name, (void *const *)&ng_real.name)) {     \
			ng_r = ncclSystemError;                               \
		} else {                                                      \
			ng_r = ng_real.name args;                             \
		}                                                             \
		if (ng_c.active) {                                            \
			ng_coll_end_inline(&ng_c, ng_r);                      \
			NG_VERIFY(&ng_c, out, ng_r);                          \
		}                                                             \
		return ng_r;                                                  \
	}

#define NCCL_COLL(name, op, params, args, count, dtype, root, comm, stream, per_rank, prof, \
		  busbw, plural, out)                                         \
	NG_EXPORT NG_HOT ncclResult_t name params                             \
	NG_FORWARD(name, 0, count, dtype, root, comm, stream, per_rank, args, out)

#define NCCL_P2P(name, op, params, args, count, dtype, peer, comm, stream, ...) \
	NG_EXPORT NG_HOT ncclResult_t name params                               \
	NG_FORWARD(name, 1, count, dtype, peer, comm, stream, 0, args, NG_NO_OUT)

/* ncclWaitSignal's columns: the signals it waits for (its count), and
 * its one peer (-1 for several: the watchdog then names the wait without
 * a peer, and the analyzer pairs it with nothing). */
static inline uint64_t ng_wait_count(int n, const ncclWaitSignalDesc_t *d)
{
	uint64_t k = 0;

	for (int i = 0; d && i < n; i++)
		k += d[i].opCnt > 0 ? (uint64_t)d[i].opCnt : 0;
	return k;
}

static inline int ng_wait_peer(int n, const ncclWaitSignalDesc_t *d)
{
	int peer = d && n > 0 ? d[0].peer : -1;

	for (int i = 1; d && i < n; i++)
		if (d[i].peer != peer)
			return -1;
	return peer;
}

#include "nccl_api.def"
