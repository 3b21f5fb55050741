/*
 * The life of one collective or point-to-point call: sequence number,
 * injection, GPU timing, host-side watch and the coll_enqueue event.  This
 * is the hot path of every intercepted call: no locks, no allocation, no
 * CUDA call beyond the two event records (and a capture query once the
 * program has captured a graph at all).
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ncclguard.h"

struct ng_hostcall ng_host_slots[NG_HOST_SLOTS];
static int host_slots_used;
static NG_TLS struct ng_hostcall *my_slot;
static NG_TLS int my_slot_none;

static struct ng_hostcall *slot(void)
{
	int i;

	if (my_slot || my_slot_none)
		return my_slot;
	i = __atomic_fetch_add(&host_slots_used, 1, __ATOMIC_RELAXED);
	if (i >= NG_HOST_SLOTS) {
		my_slot_none = 1;
		return NULL;
	}
	my_slot = &ng_host_slots[i];
	my_slot->tid = (int)syscall(SYS_gettid);
	return my_slot;
}

void ng_host_enter_at(int fn, uint64_t comm_hash, uint64_t seq, uint64_t now)
{
	struct ng_hostcall *s = slot();

	if (!s || s->enter_ns)	/* nested: keep the outer call */
		return;
	s->fn = fn;
	s->comm_hash = comm_hash;
	s->seq = seq;
	s->reported = 0;
	__atomic_store_n(&s->enter_ns, now ? now : 1, __ATOMIC_RELEASE);
}

void ng_host_enter(int fn, uint64_t comm_hash, uint64_t seq)
{
	ng_host_enter_at(fn, comm_hash, seq, ng_now_ns());
}

void ng_host_exit(void)
{
	if (my_slot)
		__atomic_store_n(&my_slot->enter_ns, 0, __ATOMIC_RELEASE);
}

void ng_missing(int fn)
{
	ng_warn_once("an NCCL entry point is missing from the loaded library "
		     "(first: %s); such calls fail", ng_fn_name[fn]);
}

/*
 * Counters of a comm advance with a load and a store, not a locked
 * read-modify-write (~20 cycles each, a measurable part of the shim's
 * ~50 ns): NCCL forbids concurrent calls on one communicator, so its
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
 * forwarding: a third of ng_coll_begin's perf samples. */
static uint64_t remember(struct ng_comm *c, int fn, uint64_t seq, uint64_t bytes,
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

/* A thread calls on one communicator after another: the last one found
 * saves the registry's line.  Records are never freed, and a destroyed
 * one is marked dead, so the cached pointer is safe to check. */
static NG_TLS ncclComm_t last_handle;
static NG_TLS struct ng_comm *last_comm;

static struct ng_comm *comm_of(ncclComm_t h)
{
	struct ng_comm *c = last_comm;

	if (c && h == last_handle && !__atomic_load_n(&c->dead, __ATOMIC_RELAXED))
		return c;
	c = ng_comm_find(h);
	last_handle = h;
	last_comm = c;
	return c;
}

static int capturing(cudaStream_t s)
{
	enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;

	if (!__atomic_load_n(&ng_hot.capture_seen, __ATOMIC_RELAXED) ||
	    !ng_cuda.cudaStreamIsCapturing)
		return 0;
	if (ng_cuda.cudaStreamIsCapturing(s, &st) != cudaSuccess)
		return 0;
	return st != cudaStreamCaptureStatusNone;
}

int ng_coll_begin(struct ng_call *call, int fn, int is_p2p, uint64_t count,
		  ncclDataType_t dtype, int root, ncclComm_t comm,
		  cudaStream_t stream, int per_rank, const void *ret)
{
	struct ng_comm *c;
	int inj;

	call->active = 0;
	if (ng_in_shim)
		return 0;
	if (!__atomic_load_n(&ng_hot.initialized, __ATOMIC_ACQUIRE))
		ng_init();
	if (ng_cfg.disabled)
		return 0;
	if (!__atomic_load_n(&ng_hot.first_call_done, __ATOMIC_ACQUIRE))
		ng_first_call();
	call->saved_errno = errno;
	ng_in_shim++;
	call->active = 1;
	call->fn = fn;
	/* A precise clock only when a session records the times; the
	 * watchdog's deadlines are fine with the coarse one (5 ns, not 30). */
	call->trace = ng_trace_coll();
	call->enter_ns = call->trace ? ng_clock_ns() : ng_now_coarse_ns();
	call->handle = comm;
	call->comm = c = comm_of(comm);
	call->count = count;
	call->dtype = dtype;
	call->root = root;
	call->stream = stream;
	call->nranks = c ? c->nranks : 0;
	call->bytes = count * ng_dtype_size(dtype) * (per_rank && c ? c->nranks : 1);
	call->seq = call->p2p_seq = 0;
	if (c) {
		if (is_p2p)
			call->p2p_seq = bump(&c->p2p_seq);
		else
			call->seq = bump(&c->seq);
	}
	call->captured = capturing(stream);
	call->flight = NULL;
	call->index = 0;
	call->site = ng_cfg.stacks ? ng_callsite(ret) : NULL;
	if (c && !call->captured)
		call->index = remember(c, fn, call->seq ? call->seq : call->p2p_seq,
				       call->bytes, call->enter_ns, stream, call->site);
	ng_host_enter_at(fn, c ? c->hash : 0, call->seq ? call->seq : call->p2p_seq,
			 call->enter_ns);
	if (__atomic_load_n(&ng_hot.inject_active, __ATOMIC_RELAXED)) {
		inj = ng_inject_check(fn, ng_fn_op[fn], c,
				      call->seq ? call->seq : call->p2p_seq,
				      &call->result);
		if (inj == NG_INJ_DROP || inj == NG_INJ_ERROR) {
			ng_coll_end(call, call->result);
			return 1;
		}
		/* An injected delay makes a slow rank: it arrives late. */
		if (inj == NG_INJ_DELAY)
			call->enter_ns = call->trace ? ng_clock_ns() : ng_now_coarse_ns();
	}
	if (!ng_group_depth)
		ng_timing_before(call);
	errno = call->saved_errno;
	return 0;
}

void ng_coll_end(struct ng_call *call, ncclResult_t r)
{
	int saved = errno;

	call->exit_ns = 0;
	if (call->trace) {
		uint64_t t = ng_clock_ns();

		/* A recalibration in between may step the clock back by ns. */
		call->exit_ns = t > call->enter_ns ? t : call->enter_ns;
	}
	call->result = r;
	/* The event itself is written by the watchdog thread, off this path,
	 * and before the flight below can complete. */
	if (call->trace && ng_recbuf_push(call)) {
		struct ng_enq_rec rec;	/* no ring for this thread: write it here */

		ng_enq_fill(&rec, call);
		ng_trace_enqueue(&rec);
	}
	if (ng_group_depth)
		ng_timing_group_member(call, r);
	else
		ng_timing_after(call, r);
	ng_host_exit();
	if (ng_hot.tp) {
		if (call->site && call->comm) {
			struct ng_ev_callsite ev = {
				.comm_hash = call->comm->hash,
				.seq = call->seq ? call->seq : call->p2p_seq,
				.frames = call->site,
			};

			ng_hot.tp->callsite(&ev);
		}
	}
	ng_in_shim--;
	errno = saved;
}
