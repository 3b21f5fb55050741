/*
 * A thread's ring of coll_enqueue records (recbuf.c has the rest): the
 * push is inlined into each wrapper, as coll_fast.h is, so a recorded
 * call makes no call of the shim's own.
 */
#ifndef NCCLGUARD_RECBUF_H
#define NCCLGUARD_RECBUF_H

/* Included at the end of watchdog.h, whose types it uses. */

/* A ring is struct ng_rf_ring (common/ringfile.h): in the flight ring
 * file under `ncclguard run`, else in memory. */
#define NG_RECBUF_SIZE NG_RF_RING		/* power of two; 512 KiB */

struct ng_rf_ring *ng_recbuf_claim(void);
void ng_recbuf_make_room(struct ng_rf_ring *b, uint64_t t);

static inline void ng_enq_fill(struct ng_enq_rec *r, const struct ng_call *call)
{
	r->comm_hash = call->comm ? call->comm->hash : 0;
	r->seq = call->seq ? call->seq : call->p2p_seq;
	r->count = call->count;
	r->stream = (uint64_t)(uintptr_t)call->stream;
	r->enter = call->rec_enter;
	r->exit = call->rec_exit;
	r->root = call->root;
	r->nranks = call->nranks;
	r->fn = (uint8_t)call->fn;
	r->dtype = (uint8_t)call->dtype;
	r->group_depth = ng_group_depth > 255 ? 255 : (uint8_t)ng_group_depth;
	r->flags = (call->captured ? NG_ENQ_CAPTURED : 0) | (call->p2p_seq ? NG_ENQ_P2P : 0) |
		   (call->ticks ? NG_ENQ_TICKS : 0) | (call->coarse ? NG_ENQ_COARSE : 0);
	r->result = call->result;
}

/* -1: this thread has no ring (the caller writes the event itself). */
static inline __attribute__((always_inline)) int ng_recbuf_push(const struct ng_call *call)
{
	struct ng_rf_ring *b = ng_tls.recbuf;
	uint64_t t;

	if (__builtin_expect(!b, 0) && !(b = ng_recbuf_claim()))
		return -1;
	t = b->tail;
	if (__builtin_expect(t - b->head_seen >= NG_RECBUF_SIZE / 2, 0))
		ng_recbuf_make_room(b, t);
	ng_enq_fill(&b->rec[t & (NG_RECBUF_SIZE - 1)], call);
	__atomic_store_n(&b->tail, t + 1, __ATOMIC_RELEASE);
	ng_prefetch_w(&b->rec[(t + 1) & (NG_RECBUF_SIZE - 1)]);
	return 0;
}

/* A record made elsewhere (NCCL's profiler plugin, pcoll.c). */
static inline int ng_recbuf_push_rec(const struct ng_enq_rec *r)
{
	struct ng_rf_ring *b = ng_tls.recbuf;
	uint64_t t;

	if (!b && !(b = ng_recbuf_claim()))
		return -1;
	t = b->tail;
	if (t - b->head_seen >= NG_RECBUF_SIZE / 2)
		ng_recbuf_make_room(b, t);
	b->rec[t & (NG_RECBUF_SIZE - 1)] = *r;
	__atomic_store_n(&b->tail, t + 1, __ATOMIC_RELEASE);
	return 0;
}

#endif
