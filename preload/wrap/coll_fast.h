/*
 * The common case of a collective or point-to-point call (coll.c has the
 * rest), inlined into each generated wrapper (wrap.c): no calls, and the
 * arguments stay in registers.  Everything here runs on every call, so
 * every line of code and data it touches is a miss after NCCL's 5 us of
 * host code; the rare cases are coll.c's NG_COLD functions, which alone
 * may change errno.
 */
#ifndef NCCLGUARD_COLL_FAST_H
#define NCCLGUARD_COLL_FAST_H

#include "wrap.h"

int ng_coll_setup(void);
int ng_coll_capturing(cudaStream_t s);
const char *ng_coll_callsite(const void *ret);
int ng_coll_inject(struct ng_call *call);
void ng_coll_timing_start(struct ng_call *call);
void ng_coll_timing_end(struct ng_call *call, ncclResult_t r);
void ng_coll_record_inline(const struct ng_call *call);
void ng_coll_record_callsite(const struct ng_call *call);
void ng_coll_verify(const struct ng_call *call, void *out, int redop, ncclResult_t r);
ncclResult_t ng_coll_refuse(struct ng_comm *c, int fn);
void ng_wait_note(const struct ng_call *call, ...);

/*
 * Counters of a comm advance with a load and a store, not a locked
 * read-modify-write (~20 cycles each, a measurable part of the shim's
 * cost): NCCL forbids concurrent calls on one communicator, so its
 * calls are already serialised; the watchdog only reads.
 */
static inline uint64_t bump(uint64_t *v)
{
	uint64_t n = __atomic_load_n(v, __ATOMIC_RELAXED) + 1;

	__atomic_store_n(v, n, __ATOMIC_RELAXED);
	return n;
}

/* What the watchdog needs to name this call if it never completes.  The
 * values come as arguments, not read back from *call: loading fields just
 * stored there (a 16-byte copy over two 8-byte stores) stalled store
 * forwarding: a third of the shim's perf samples once. */
static inline uint64_t remember(struct ng_comm *c, int fn, uint64_t seq, uint64_t bytes,
				uint64_t enter_ns, cudaStream_t stream, const char *site)
{
	uint64_t i = bump(&c->ncalls);
	struct ng_recent *r = &c->recent[i & (NG_RECENT - 1)];

	__atomic_store_n(&r->index, 0, __ATOMIC_RELAXED);
	r->fn = fn;
	r->seq = seq;
	r->bytes = bytes;
	r->enter_ns = enter_ns;
	r->stream = stream;
	r->site = site;
	__atomic_store_n(&r->index, i, __ATOMIC_RELEASE);
	c->last_stream = stream;
	ng_prefetch_w(&c->recent[(i + 1) & (NG_RECENT - 1)]);
	return i;
}

/*
 * A recorded call's arrival time.  The TSC read costs the caller about
 * 25 ns, half a point of an 8-byte all-reduce on a GPU, so a collective
 * below sample_bytes reads it one call in NG_ARRIVAL_EVERY, by seq: the
 * same calls on every rank, which the analyzer's straggler statistics
 * compare.  The others carry the time the watchdog publishes (up to a
 * tick old), flagged coarse.  Large, grouped and point-to-point calls and
 * calls on an unknown comm (seq 0) are always stamped; a GPU-timed call
 * is stamped when its timing starts (ng_coll_timing_start).
 */
static inline void arrival(struct ng_call *call, int is_p2p, uint64_t seq)
{
	if (is_p2p || !(seq & (NG_ARRIVAL_EVERY - 1)) || call->bytes >= ng_cfg.sample_bytes ||
	    ng_group_depth) {
		call->rec_enter = ng_stamp(call->ticks);
		call->coarse = 0;
	} else {
		call->rec_enter = call->enter_ns;
		call->coarse = 1;
	}
}

/* A thread calls on one communicator after another: the last one found
 * saves the registry's line.  Records are never freed, and a destroyed
 * one is marked dead, so the cached pointer is safe to check. */
static inline struct ng_comm *comm_of(ncclComm_t h)
{
	struct ng_comm *c = ng_tls.last_comm;

	if (c && h == ng_tls.last_handle && !__atomic_load_n(&c->dead, __ATOMIC_RELAXED))
		return c;
	c = ng_comm_find(h);
	ng_tls.last_handle = h;
	ng_tls.last_comm = c;
	return c;
}

static inline __attribute__((always_inline)) int
ng_coll_begin_inline(struct ng_call *call, int fn, int is_p2p, uint64_t count,
		     ncclDataType_t dtype, int root, ncclComm_t comm,
		     cudaStream_t stream, int per_rank, const void *ret)
{
	struct ng_comm *c;
	uint64_t seq;

	call->active = 0;
	if (ng_in_shim)
		return 0;
	if (__builtin_expect(!__atomic_load_n(&ng_hot.first_call_done, __ATOMIC_ACQUIRE), 0) &&
	    !ng_coll_setup())
		return 0;
	if (__builtin_expect(ng_cfg.disabled, 0))
		return 0;
	ng_in_shim++;
	call->active = 1;
	call->fn = fn;
	/* The watchdog's deadlines are fine with a time up to a tick old; a
	 * precise one only when a session records it. */
	call->enter_ns = ng_coarse_now();
	call->trace = ng_trace_coll();
	/* Acquire: the mapping published before it is there for whichever
	 * thread converts the stamp. */
	if (call->trace)
		call->ticks = __atomic_load_n(&ng_hot.ticks, __ATOMIC_ACQUIRE);
	call->handle = comm;
	call->comm = c = comm_of(comm);
	/* A suspended comm's memory is released: NCCL would run the call
	 * on it.  Refused before it takes a seq (coll.c). */
	if (__builtin_expect(c && __atomic_load_n(&c->suspended, __ATOMIC_RELAXED), 0)) {
		call->active = 0;
		ng_in_shim--;
		call->result = ng_coll_refuse(c, fn);
		return 1;
	}
	call->count = count;
	call->dtype = dtype;
	call->root = root;
	call->stream = stream;
	call->nranks = c ? c->nranks : 0;
	call->bytes = count * ng_dtype_size(dtype) * (per_rank && c ? c->nranks : 1);
	call->seq = call->p2p_seq = 0;
	seq = 0;
	if (c) {
		if (is_p2p)
			seq = call->p2p_seq = bump(&c->p2p_seq);
		else
			seq = call->seq = bump(&c->seq);
	}
	if (call->trace)
		arrival(call, is_p2p, seq);
	call->captured = __builtin_expect(ng_hot.capture_seen, 0) ? ng_coll_capturing(stream) : 0;
	call->pending = NULL;
	call->index = 0;
	call->site = __builtin_expect(ng_cfg.stacks, 0) ? ng_coll_callsite(ret) : NULL;
	if (c && !call->captured)
		call->index = remember(c, fn, seq, call->bytes, call->enter_ns, stream, call->site);
	ng_hostcall_enter(fn, c ? c->hash : 0, seq, call->enter_ns);
	if (__builtin_expect(__atomic_load_n(&ng_hot.inject_active, __ATOMIC_RELAXED), 0) &&
	    ng_coll_inject(call))
		return 1;
	if (!ng_group_depth && c && c->pool && !call->captured && ng_timing_sampled(call))
		ng_coll_timing_start(call);
	return 0;
}

static inline __attribute__((always_inline)) void
ng_coll_end_inline(struct ng_call *call, ncclResult_t r)
{
	call->result = r;
	if (call->trace) {
		/* The host span only with the GPU time: a second TSC read
		 * costs about 25 ns, half a point of an 8-byte all-reduce. */
		call->rec_exit = call->pending || ng_group_depth ? ng_stamp(call->ticks) : 0;
		/* The event itself is written by the watchdog thread, off this
		 * path, and before the pending call below can complete. */
		if (__builtin_expect(ng_recbuf_push(call), 0))
			ng_coll_record_inline(call);
	}
	if (call->pending || ng_group_depth)
		ng_coll_timing_end(call, r);
	ng_hostcall_exit();
	if (__builtin_expect(call->site != NULL, 0) && call->comm && ng_hot.tp)
		ng_coll_record_callsite(call);
	ng_in_shim--;
}

#endif
