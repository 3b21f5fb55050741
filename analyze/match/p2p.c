/*
 * Point-to-point: sends and recvs carry a p2p seq of their own, apart from
 * the collectives' seqs.  Each rank's calls on a comm stay pending until
 * known done: its own completion or a later one's, a collective after them
 * that completed (one stream, in order), a timeout naming a later call, or
 * the comm's destroy.  They are also counted per peer, so that a hung one
 * can be matched with what its peer posted: the k-th send from a to b
 * meets b's k-th recv from a.  The one-sided calls (2.29) are counted
 * apart, in signals: the k-th put or signal from a to b meets b's wait
 * that brings b's count of signals from a to k (a wait counts its
 * opCnt).  A wait on several peers (peer -1) cannot be matched: it is
 * counted as a call, not paired.
 */
#include <stdlib.h>
#include <string.h>

#include "match.h"

/* A member left the comm suspended (ncclCommSuspend, no resume): the
 * calls open at the end wait on a comm that runs nothing by design. */
int an_comm_suspended(const struct an_state *an, const struct an_comm *c)
{
	for (int i = 0; i < c->nmembers; i++)
		if (an->pcs[c->member_pc[i]].suspended)
			return 1;
	return 0;
}

/* Pending sends and recvs that are done: up to the latest p2p completion,
 * enqueued before a collective that completed (one stream, in order), or
 * all of them once the comm is destroyed. */
void an_p2p_settle(struct an_pc *pc)
{
	while (pc->p2p_head < pc->np2p) {
		const struct an_p2p_op *o = &pc->p2p[pc->p2p_head];

		if (o->p2p_seq > pc->p2p_done && o->coll_before >= pc->done_seq &&
		    o->coll_before >= pc->coll_confirmed && !pc->destroyed)
			break;
		pc->p2p_head++;
	}
	if (pc->p2p_head > 1024 && pc->p2p_head * 2 > pc->np2p) {
		memmove(pc->p2p, pc->p2p + pc->p2p_head,
			(size_t)(pc->np2p - pc->p2p_head) * sizeof(*pc->p2p));
		pc->np2p -= pc->p2p_head;
		pc->p2p_head = 0;
	}
}

static int p2p_kind(const char *op)
{
	if (!op)
		return -1;
	if (!strcmp(op, "send"))
		return AN_P2P_SEND;
	if (!strcmp(op, "recv"))
		return AN_P2P_RECV;
	if (!strcmp(op, "putsignal") || !strcmp(op, "signal"))
		return AN_P2P_SIGNAL;
	if (!strcmp(op, "waitsignal"))
		return AN_P2P_WAIT;
	return -1;
}

/* The count of kind to or from comm rank peer (peer < pc->npeers). */
static uint64_t *p2p_count(const struct an_pc *pc, int kind, int peer)
{
	switch (kind) {
	case AN_P2P_SEND: return &pc->sent[peer];
	case AN_P2P_RECV: return &pc->recvd[peer];
	case AN_P2P_SIGNAL: return &pc->sigsent[peer];
	default: return &pc->sigwait[peer];
	}
}

/* The kind a call of kind meets on its peer. */
static int p2p_match(int kind)
{
	switch (kind) {
	case AN_P2P_SEND: return AN_P2P_RECV;
	case AN_P2P_RECV: return AN_P2P_SEND;
	case AN_P2P_SIGNAL: return AN_P2P_WAIT;
	default: return AN_P2P_SIGNAL;
	}
}

static uint64_t *grow_peers(uint64_t *a, int from, int n)
{
	a = an_xrealloc(a, (size_t)n * sizeof(*a));
	memset(a + from, 0, (size_t)(n - from) * sizeof(*a));
	return a;
}

/* A send or recv as it is posted: pending until known done, and counted
 * per peer. */
void an_p2p_enqueue(struct an_state *an, const struct ev_src *src,
		    const struct ev_rec_coll *r)
{
	struct an_pc *pc;
	struct an_p2p_op *o;
	int op = an_op_id(an, r->op);
	int peer = (int)r->root_or_peer, kind = p2p_kind(r->op);
	int send = kind == AN_P2P_SEND;
	uint64_t *count;

	an->p2p_calls++;
	if (!r->p2p_seq || kind < 0)
		return;
	/* A wait on several peers: no one peer to pair it with. */
	if (kind == AN_P2P_WAIT && r->root_or_peer == -1)
		return;
	pc = an_pc_for(an, src, r->comm_hash, r->nranks);
	/* A peer is a rank of the comm (read.c bounded it by AN_NRANKS_MAX). */
	if (r->root_or_peer < 0 || r->root_or_peer >= AN_NRANKS_MAX ||
	    (pc->comm->nranks > 0 && r->root_or_peer >= pc->comm->nranks)) {
		an->bad_values++;
		return;
	}
	if (peer >= pc->npeers) {
		/* Doubling up to the comm's size: the counts grow with the
		 * peers the rank talks to, not with what an event claims. */
		int n = pc->npeers ? pc->npeers : 8;

		while (n <= peer)
			n *= 2;
		if (pc->comm->nranks > 0 && n > pc->comm->nranks)
			n = pc->comm->nranks;
		if (n > AN_NRANKS_MAX)
			n = AN_NRANKS_MAX;
		pc->sent = grow_peers(pc->sent, pc->npeers, n);
		pc->recvd = grow_peers(pc->recvd, pc->npeers, n);
		pc->sigsent = grow_peers(pc->sigsent, pc->npeers, n);
		pc->sigwait = grow_peers(pc->sigwait, pc->npeers, n);
		pc->npeers = n;
	}
	/* Dropped (never reached NCCL) or failed: its peer waits for it. */
	if (r->p2p_seq == pc->p2p_drop_seq || (r->result != 0 && r->result != 7))
		return;
	count = p2p_count(pc, kind, peer);
	/* A wait for several signals is one call that needs them all. */
	*count += kind == AN_P2P_WAIT ? (r->count ? r->count : 1) : 1;
	/* Every send is a call of its row; completions add the times of
	 * those the sampling timed. */
	if (send)
		an_row_add(an_row_get(an, op, r->bytes, 2), r->bytes, 0);
	if (pc->destroyed || r->p2p_seq <= pc->p2p_done)
		return;
	/* Bounded, as the collectives' window is: with no completions at all
	 * (NCCLGUARD_TIMING=0, graphs) every call would stay until the
	 * destroy.  The oldest is forgotten, and with it any finding. */
	if (pc->np2p - pc->p2p_head >= AN_P2P_PENDING_MAX) {
		pc->p2p_head++;
		an->p2p_forgotten++;
		an_p2p_settle(pc);
	}
	if (pc->np2p == pc->cap_p2p) {
		pc->cap_p2p = pc->cap_p2p ? pc->cap_p2p * 2 : 64;
		pc->p2p = an_xrealloc(pc->p2p, (size_t)pc->cap_p2p * sizeof(*pc->p2p));
	}
	o = &pc->p2p[pc->np2p++];
	memset(o, 0, sizeof(*o));
	o->p2p_seq = r->p2p_seq;
	o->coll_before = pc->last_seq;
	o->ordinal = *count;
	o->enter_ns = r->enter_ns;
	o->peer = peer;
	o->op = (uint8_t)op;
	o->send = (uint8_t)kind;
}

void an_p2p_complete(struct an_state *an, const struct ev_src *src,
		     const struct ev_rec_coll *r)
{
	int op = an_op_id(an, r->op);

	if (r->p2p_seq) {
		struct an_pc *pc = an_pc_for(an, src, r->comm_hash, r->nranks);

		if (r->p2p_seq > pc->p2p_done)
			pc->p2p_done = r->p2p_seq;
		an_p2p_settle(pc);
	}
	/* Per call, not per pair: a send row times the sends. */
	if (r->op && !strcmp(r->op, "send"))
		an_row_time(an_row_get(an, op, r->bytes, 2), r->bytes, (double)r->duration_ns);
}

uint64_t an_p2p_timeout(struct an_pc *pc, uint64_t p2p_seq)
{
	uint64_t stuck = 0;

	for (int k = pc->p2p_head; k < pc->np2p; k++)
		if (pc->p2p[k].p2p_seq == p2p_seq) {
			stuck = pc->p2p[k].coll_before + 1;
			break;
		}
	if (p2p_seq - 1 > pc->p2p_done)
		pc->p2p_done = p2p_seq - 1;
	return stuck;
}

/* ---- end of trace ----------------------------------------------------- */

static struct an_pc *member_with_comm_rank(struct an_state *an, struct an_comm *c, int64_t cr)
{
	for (int i = 0; i < c->nmembers; i++)
		if (an->pcs[c->member_pc[i]].comm_rank == cr)
			return &an->pcs[c->member_pc[i]];
	return NULL;
}

/* How many calls matching o's kind the peer posted to pc's rank. */
static uint64_t peer_posted(const struct an_pc *peer, const struct an_pc *pc,
			    const struct an_p2p_op *o)
{
	if (!peer || pc->comm_rank < 0 || pc->comm_rank >= peer->npeers)
		return 0;
	return *p2p_count(peer, p2p_match(o->send), (int)pc->comm_rank);
}

/* How many of a rank's pending sends and recvs a scan looks at. */
#define AN_P2P_SCAN_MAX 4096

/* pc and the peers of its pending calls time nothing (NCCLGUARD_TIMING=0)
 * and every one of those calls was matched: whether they completed is not
 * in the trace.  An unmatched one still tells a hang.  The first
 * AN_P2P_SCAN_MAX pending calls are looked at, as when settling. */
static int p2p_unknowable(struct an_state *an, struct an_comm *c, const struct an_pc *pc)
{
	int end = pc->np2p - pc->p2p_head > AN_P2P_SCAN_MAX ? pc->p2p_head + AN_P2P_SCAN_MAX :
		  pc->np2p;

	if (!an->procs[pc->proc].timing_off)
		return 0;
	for (int k = pc->p2p_head; k < end; k++) {
		const struct an_p2p_op *u = &pc->p2p[k];
		const struct an_pc *peer = member_with_comm_rank(an, c, u->peer);

		if (!peer || !an->procs[peer->proc].timing_off || peer_posted(peer, pc, u) < u->ordinal)
			return 0;
	}
	return 1;
}

static void add_p2p_hang(struct an_state *an, struct an_comm *c, struct an_pc *pc,
			 const struct an_p2p_op *o, const int64_t *wait, int nwait,
			 int timed_out)
{
	struct an_pc *peer = member_with_comm_rank(an, c, o->peer);
	struct an_hang *h;

	an->hangs = an_xrealloc(an->hangs, (an->nhangs + 1) * sizeof(*an->hangs));
	h = &an->hangs[an->nhangs++];
	memset(h, 0, sizeof(*h));
	h->comm_hash = c->hash;
	h->seq = o->p2p_seq;
	h->op = o->op;
	h->age_ns = an->last_ts - o->enter_ns;
	h->timed_out = timed_out;
	h->p2p = 1;
	h->peer_comm_rank = o->peer;
	h->peer = peer ? an->procs[peer->proc].rank : -1;
	h->ordinal = o->ordinal;
	h->peer_posted = peer_posted(peer, pc, o);
	h->wait = an_xcalloc((size_t)nwait, sizeof(*h->wait));
	memcpy(h->wait, wait, (size_t)nwait * sizeof(*wait));
	h->nwait = nwait;
	h->miss = an_xcalloc(1, sizeof(*h->miss));
	if (h->peer_posted < h->ordinal && h->peer >= 0)
		h->miss[h->nmiss++] = h->peer;
	else if (h->peer_posted < h->ordinal)
		h->unknown_missing = 1;
}

/*
 * Sends and recvs still pending at the end, past the hang age or a
 * timeout: a rank whose peer never posted the matching call is the
 * missing one (a pipeline stage that skipped a send).  Each such pair is
 * reported; where every stuck call has its match posted, one report
 * names them all (a transfer that never ran, a cycle of waits).
 */
#define AN_P2P_HANGS_MAX 16

/* How many calls of kind to comm rank `to` pc is known to have
 * completed: all it posted but those still pending (a wait's ordinal
 * counts its signals: the ones before it are its previous ordinal). */
static uint64_t p2p_settled(const struct an_pc *pc, int kind, int64_t to)
{
	uint64_t before = 0;

	for (int k = pc->p2p_head; k < pc->np2p; k++)
		if (pc->p2p[k].send == kind && pc->p2p[k].peer == to) {
			if (kind != AN_P2P_WAIT)
				return pc->p2p[k].ordinal - 1;
			/* The pending wait's first signal: past what completed. */
			for (int j = pc->p2p_head - 1; j >= 0; j--)
				if (pc->p2p[j].send == kind && pc->p2p[j].peer == to) {
					before = pc->p2p[j].ordinal;
					break;
				}
			return before;
		}
	if (to < 0 || to >= pc->npeers)
		return 0;
	return *p2p_count(pc, kind, (int)to);
}

/* A call whose match on the peer is known complete completed too (its
 * own completion may have gone untimed), and so did everything before it
 * on its rank; that can settle more of the peer's calls: round again
 * until nothing moves. */
static void p2p_settle_by_peers(struct an_state *an, struct an_comm *c)
{
	for (int pass = 0, moved = 1; moved && pass < 64; pass++) {
		moved = 0;
		for (int i = 0; i < c->nmembers; i++) {
			struct an_pc *pc = &an->pcs[c->member_pc[i]];
			int last = -1, end;

			an_p2p_settle(pc);
			end = pc->np2p - pc->p2p_head > AN_P2P_SCAN_MAX ?
				pc->p2p_head + AN_P2P_SCAN_MAX : pc->np2p;
			for (int k = pc->p2p_head; k < end && pc->comm_rank >= 0; k++) {
				const struct an_p2p_op *o = &pc->p2p[k];
				struct an_pc *peer = member_with_comm_rank(an, c, o->peer);

				if (peer && p2p_settled(peer, p2p_match(o->send), pc->comm_rank) >=
					    o->ordinal)
					last = k;
			}
			if (last >= 0) {
				pc->p2p_head = last + 1;
				moved = 1;
			}
		}
	}
}

void an_p2p_finish(struct an_state *an, struct an_comm *c)
{
	int64_t *wait = an_xcalloc((size_t)c->nmembers + 1, sizeof(*wait));
	struct an_pc *first = NULL;
	int nwait = 0, nreported = 0, first_timed = 0;

	p2p_settle_by_peers(an, c);
	/* Suspended at the end: nothing of it runs, nothing of it hangs. */
	if (an_comm_suspended(an, c)) {
		free(wait);
		return;
	}

	for (int i = 0; i < c->nmembers; i++) {
		struct an_pc *pc = &an->pcs[c->member_pc[i]];
		const struct an_p2p_op *o;
		int timed_out;

		an_p2p_settle(pc);
		if (pc->p2p_head >= pc->np2p)
			continue;
		o = &pc->p2p[pc->p2p_head];
		timed_out = c->timeouts && c->last_timeout_ts >= o->enter_ns;
		if (!timed_out && an->last_ts - o->enter_ns < AN_HANG_AGE_NS) {
			an->inflight_p2p++;
			continue;
		}
		if (!timed_out && p2p_unknowable(an, c, pc)) {
			an->unknown_p2p += (uint64_t)(pc->np2p - pc->p2p_head);
			continue;
		}
		wait[nwait++] = an->procs[pc->proc].rank;
		if (!first || pc->comm_rank < first->comm_rank) {
			first = pc;
			first_timed = timed_out;
		}
		/* The first of its pending calls that its peer never matched:
		 * in a group, the send that waits may be held by that recv. */
		for (int k = pc->p2p_head; k < pc->np2p && nreported < AN_P2P_HANGS_MAX; k++) {
			const struct an_p2p_op *u = &pc->p2p[k];
			int64_t me = an->procs[pc->proc].rank;

			if (peer_posted(member_with_comm_rank(an, c, u->peer), pc, u) >= u->ordinal)
				continue;
			add_p2p_hang(an, c, pc, u, &me, 1, timed_out);
			nreported++;
			break;
		}
	}
	if (!nreported && first)
		add_p2p_hang(an, c, first, &first->p2p[first->p2p_head], wait, nwait, first_timed);
	free(wait);
}
