/*
 * Confirmations in the trace.  A call the sampling left untimed has no
 * coll_complete of its own: the analyzer takes it as done once its rank
 * completes a later call of the comm.  After a comm's last timed call
 * nothing follows, and a trace that goes on (a checkpoint, an evaluation,
 * another comm) would show those calls in flight, then hung after a
 * second.  The watchdog's probe confirms them on the GPU; it now says so
 * in the trace, with a coll_complete without times for the latest call
 * of each kind it covers, which the analyzer extends to the calls before.
 *
 * Only calls whose records the drain wrote are confirmed: they returned,
 * so, outside a group and a graph capture, their work is on their stream
 * ahead of a probe recorded after, and their enqueue is in this trace.
 */
#include <string.h>

#include "timing.h"

/* Notes are taken under the drain's lock, by whichever thread drains:
 * the cache is theirs, and the watchdog reads a comm's notes through its
 * generation count.  A miss walks the registry. */
#define CACHE 256
static struct ng_comm *cache[CACHE];

struct by_hash {
	uint64_t hash;
	struct ng_comm *c;
};

static void match_hash(struct ng_comm *c, void *arg)
{
	struct by_hash *b = arg;

	if (!b->c && c->hash == b->hash)
		b->c = c;
}

static struct ng_comm *comm_by_hash(uint64_t hash)
{
	struct ng_comm **slot = &cache[(hash ^ (hash >> 32)) & (CACHE - 1)];
	struct by_hash b = { .hash = hash };

	if (*slot && (*slot)->hash == hash && !__atomic_load_n(&(*slot)->dead, __ATOMIC_RELAXED))
		return *slot;
	ng_comm_foreach(match_hash, &b);
	if (b.c)
		*slot = b.c;
	return b.c;
}

void ng_confirm_note(const struct ng_enq_rec *r)
{
	struct ng_comm *c;
	struct ng_confirm *k;
	int p2p = !!(r->flags & NG_ENQ_P2P);

	if (r->group_depth || (r->flags & (NG_ENQ_CAPTURED | NG_ENQ_PLUGIN)) || !r->comm_hash ||
	    r->result != ncclSuccess || !(c = comm_by_hash(r->comm_hash)))
		return;
	k = &c->conf[p2p];
	if (r->seq <= k->seq)
		return;
	__atomic_store_n(&c->conf_gen, c->conf_gen + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	k->fn = r->fn;
	k->nranks = r->nranks;
	k->root = r->root;
	k->stream = (cudaStream_t)(uintptr_t)r->stream;
	k->bytes = ng_enq_bytes(r);
	k->seq = r->seq;
	__atomic_store_n(&c->conf_gen, c->conf_gen + 1, __ATOMIC_RELEASE);
}

/* When the probe is recorded, on `stream`: the calls it will confirm. */
void ng_confirm_take(struct ng_comm *c, cudaStream_t stream)
{
	unsigned g = __atomic_load_n(&c->conf_gen, __ATOMIC_ACQUIRE);
	struct ng_confirm *p = c->probe_conf;

	memset(p, 0, sizeof(c->probe_conf));
	if ((g & 1) || !ng_trace_coll())
		return;
	memcpy(p, c->conf, sizeof(c->probe_conf));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&c->conf_gen, __ATOMIC_RELAXED) != g) {
		memset(p, 0, sizeof(c->probe_conf));	/* the next probe, then */
		return;
	}
	for (int k = 0; k < 2; k++)
		if (p[k].stream != stream)
			p[k].seq = 0;	/* another stream: not behind the probe */
}

/* The probe completed: what it confirms that no completion has said. */
void ng_confirm_emit(struct ng_comm *c)
{
	uint64_t *done[2] = { &c->last_done_seq, &c->last_done_p2p };

	if (!ng_trace_coll())
		return;
	for (int k = 0; k < 2; k++) {
		const struct ng_confirm *n = &c->probe_conf[k];
		struct ng_ev_coll_complete ev = { 0 };

		if (!n->seq || n->seq <= *done[k])
			continue;
		ev.comm_hash = c->hash;
		ev.seq = k ? 0 : n->seq;
		ev.p2p_seq = k ? n->seq : 0;
		ev.op = ng_fn_op[n->fn];
		ev.bytes = n->bytes;
		ev.stream = (uint64_t)(uintptr_t)n->stream;
		ev.nranks = n->nranks;
		ev.root_or_peer = n->root;
		ng_hot.tp->coll_complete(&ev);
		__atomic_store_n(done[k], n->seq, __ATOMIC_RELAXED);	/* hang.c reads */
	}
}
