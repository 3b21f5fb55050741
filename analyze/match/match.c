/*
 * Matching across ranks.  A collective is (comm_hash, seq): each comm keeps
 * a window of the seqs some rank has touched and no rank has closed.  A
 * rank has "done" seq s once it completed s or any later seq on that comm
 * (sampled GPU timing leaves calls in between without coll_complete) or
 * destroyed the comm.  The front of the window is accounted once every
 * rank enqueued and is done with it; what is left at the end of the trace
 * is in flight, less the calls the ranks' watchdogs confirmed (those before
 * the lowest seq a timeout event names: with sampled timing the last
 * completion can be far behind), and the first such collective of a comm
 * that timed out or sat for a second is a hang (finish.c).
 *
 * A rank's coll_complete events need not come in seq order, nor before its
 * comm_end: the shim's watchdog emits them per stream as the GPU gets there,
 * a group on a nonblocking comm is timed only once the comm leaves
 * InProgress, and a short job's last completions come from the flush at
 * exit, after the destroy.  A call a rank is done with only by implication
 * therefore waits for its own completion (held()) for HOLD_SEQS more seqs of
 * that rank, or after a destroy until the end of the trace, so it keeps its
 * time; and a completion of a seq already closed is late, never the start
 * of a new window (lo only grows).
 *
 * The window holds RING_MAX seqs.  Past that (a rank queued that many calls
 * behind one that never ran, or no completions at all) the oldest are
 * accounted as they stand, counted in the comm's `forced`; but the oldest
 * call no rank finished stays, pinned in the front slot, since it is the
 * one a hang names (force_front()).
 *
 * A closed collective goes to the clocks (clock.c), which account it once
 * every host has a clock offset.  Sends and recvs are p2p.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "match.h"

#define RING_MIN	64
#define RING_MAX	AN_WINDOW_MAX	/* in-flight seqs per comm before forcing */
#define HOLD_SEQS	16		/* wait this far for an own completion */
/* A rank's seqs count up by one; lost events leave gaps, but one this far
 * past its last seq is a corrupt value until a second event confirms it. */
#define SEQ_JUMP_MAX	(1ULL << 24)

/* ---- entries ---------------------------------------------------------- */

static struct an_entry *entry_new(struct an_comm *c, uint64_t seq)
{
	/* Slots for the ranks the trace holds, not the size the comm claims:
	 * a host's share of a large job needs no room for the rest, and
	 * entry_slot() grows it when another member appears. */
	int n = c->nmembers > 1 ? c->nmembers : 1;
	struct an_entry *e;

	e = an_xcalloc(1, sizeof(*e) + n * sizeof(struct an_slot));
	e->seq = seq;
	e->nslots = n;
	e->nranks = c->nranks;
	e->comm = c;
	return e;
}

struct an_entry **an_ring_at(struct an_comm *c, uint64_t off)
{
	return &c->ring[(c->head + off) & (c->cap - 1)];
}

int an_entry_ready(const struct an_entry *e)
{
	int n = e->nranks > 0 ? e->nranks : e->comm->nranks;

	/* A rank done with it but never seen to enter it lost that event
	 * (or the trace started later): held() waits for it a while. */
	return n > 0 && e->nenq > 0 && e->ndone >= n;
}

/* Some rank is done with e by implication only (a later completion or a
 * destroy) and its own completion, or its enqueue, may still come: wait
 * for it (see the top of the file). */
static int held(const struct an_state *an, const struct an_entry *e)
{
	const struct an_comm *c = e->comm;

	if (an->finishing)
		return 0;
	for (int i = 0; i < e->nslots && i < c->nmembers; i++) {
		uint8_t f = e->slot[i].flags;
		const struct an_pc *pc;

		if (!(f & AN_S_DONE) || (f & AN_S_DROP) || ((f & AN_S_OWN) && (f & AN_S_ENQ)))
			continue;
		pc = &an->pcs[c->member_pc[i]];
		if (pc->destroyed || pc->done_seq < e->seq + HOLD_SEQS)
			return 1;
	}
	return 0;
}

/* The front seq has no entry and every rank completed HOLD_SEQS past it. */
static int hole_passed(const struct an_state *an, const struct an_comm *c)
{
	if (an->finishing)
		return 1;
	if (!c->nmembers)
		return 0;
	for (int i = 0; i < c->nmembers; i++)
		if (an->pcs[c->member_pc[i]].done_seq < c->lo + HOLD_SEQS)
			return 0;
	return 1;
}

void an_pop_front(struct an_state *an, struct an_comm *c, int forced)
{
	struct an_entry *e = *an_ring_at(c, 0);

	*an_ring_at(c, 0) = NULL;
	c->head = (c->head + 1) & (c->cap - 1);
	c->lo++;
	c->nring--;
	if (e) {
		/* A call every rank entered (always so on a comm of one) was
		 * seen on every rank: only its completion may come late. */
		if (forced && e->nenq >= (e->nranks > 0 ? e->nranks : c->nmembers)) {
			c->forced_seen++;
		} else {
			an->forced += forced;
			c->forced += forced;
		}
		an_clock_finished(an, e);
	}
}

/* The front slot holds an older seq than lo: force_front() pinned it. */
static struct an_entry *pinned(struct an_comm *c)
{
	struct an_entry *e = c->nring ? *an_ring_at(c, 0) : NULL;

	return e && e->seq != c->lo ? e : NULL;
}

/* Room in a full window: the front seq is accounted as it stands.  If no
 * rank finished the front call it may be the one that hung, and later
 * calls queued behind it: it stays in the front slot and the next seq
 * goes in its place, so that the hang found at the end names the call
 * that never ran.  The front slot's own seq (lo) was closed then. */
static void force_front(struct an_state *an, struct an_comm *c)
{
	struct an_entry *e = *an_ring_at(c, 0);

	if (e && c->nring > 1 && e->ndone == 0 && !an_entry_ready(e)) {
		*an_ring_at(c, 0) = *an_ring_at(c, 1);
		*an_ring_at(c, 1) = e;
	}
	an_pop_front(an, c, 1);
}

static void try_front(struct an_state *an, struct an_comm *c)
{
	while (c->nring) {
		struct an_entry *e = *an_ring_at(c, 0);

		if (e && an_entry_ready(e) && !held(an, e)) {
			an_pop_front(an, c, 0);
			continue;
		}
		/* A seq nobody recorded (lost events, a trace started mid-run)
		 * must not stall the rest, once every rank is well past it; its
		 * events may also just come late (the shim writes a group's
		 * events once it is timed). */
		if (!e && hole_passed(an, c)) {
			an_pop_front(an, c, 0);
			continue;
		}
		break;
	}
}

/* The slot of seq's entry, the entry made if `create`; NULL when seq was
 * already closed. */
static struct an_entry **entry_get(struct an_state *an, struct an_comm *c,
				   uint64_t seq, int create)
{
	struct an_entry **slot, *pin;
	uint64_t off;

	if (!c->cap) {
		c->cap = RING_MIN;
		c->ring = an_xcalloc(c->cap, sizeof(*c->ring));
	}
	pin = pinned(c);
	if (pin && seq == pin->seq)
		return an_ring_at(c, 0);
	/* Seqs start at 1 and lo only grows: a seq below it was closed (a
	 * late event).  A trace that starts mid-run leaves holes, given up
	 * as the ranks move past them (try_front()) or, past RING_MAX, at
	 * once (below). */
	if (seq < c->lo || (pin && seq == c->lo))
		return NULL;
	off = seq - c->lo;
	while (off >= c->cap) {
		if (!create)
			return NULL;
		if (c->cap < RING_MAX) {
			struct an_entry **big = an_xcalloc(c->cap * 2, sizeof(*big));

			for (uint32_t i = 0; i < c->nring; i++)
				big[i] = *an_ring_at(c, i);
			free(c->ring);
			c->ring = big;
			c->head = 0;
			c->cap *= 2;
			continue;
		}
		/* Bounded memory: account the oldest as it stands. */
		while (c->nring > !!pinned(c) && off >= c->cap) {
			force_front(an, c);
			off--;
		}
		if (!c->nring) {
			c->lo = seq;
			off = 0;
		} else if (off >= c->cap) {
			/* Only the pinned call is left: it stays in front, and
			 * the seqs up to this one are closed. */
			c->lo = seq - 1;
			off = 1;
		}
	}
	slot = an_ring_at(c, off);
	if (!*slot && create) {
		*slot = entry_new(c, seq);
		if (off + 1 > c->nring)
			c->nring = off + 1;
	}
	return *slot ? slot : NULL;
}

static struct an_slot *entry_slot(struct an_entry **ep, int member)
{
	struct an_entry *e = *ep;

	if (member >= e->nslots) {
		struct an_entry **ref = NULL;
		struct an_comm *c = e->comm;
		int n = member + 1 > c->nmembers ? member + 1 : c->nmembers;

		for (uint32_t i = 0; i < c->nring; i++)
			if (*an_ring_at(c, i) == e)
				ref = an_ring_at(c, i);
		e = an_xrealloc(e, sizeof(*e) + n * sizeof(struct an_slot));
		memset(&e->slot[e->nslots], 0, (n - e->nslots) * sizeof(struct an_slot));
		e->nslots = n;
		if (ref)
			*ref = e;
		*ep = e;
	}
	return &e->slot[member];
}

static void mark_done(struct an_entry *e, struct an_slot *s)
{
	if (!(s->flags & AN_S_DONE)) {
		s->flags |= AN_S_DONE;
		e->ndone++;
	}
}

/* Every seq up to `upto` is done on this rank. */
static void mark_upto(struct an_pc *pc, uint64_t upto)
{
	struct an_comm *c = pc->comm;
	struct an_entry *pin = pinned(c);
	uint64_t q;

	if (upto > pc->done_seq)
		pc->done_seq = upto;
	/* The pinned call is older than lo, where the loop below starts. */
	if (pin && pin->seq > pc->marked_seq && pin->seq <= upto) {
		struct an_slot *s = entry_slot(an_ring_at(c, 0), pc->member);

		if (!(s->flags & AN_S_DROP))
			mark_done(*an_ring_at(c, 0), s);
	}
	q = pc->marked_seq + 1 > c->lo ? pc->marked_seq + 1 : c->lo;
	for (; q <= upto && q - c->lo < c->nring; q++) {
		struct an_entry *e = *an_ring_at(c, q - c->lo);

		if (e) {
			struct an_slot *s = entry_slot(an_ring_at(c, q - c->lo), pc->member);

			if (!(s->flags & AN_S_DROP))
				mark_done(*an_ring_at(c, q - c->lo), s);
		}
	}
	if (upto > pc->marked_seq)
		pc->marked_seq = upto;
	an_p2p_settle(pc);
}

/* ---- records ---------------------------------------------------------- */

/* Whether seq can be this rank's: at most SEQ_JUMP_MAX past its last
 * seq, unless a second event confirms the jump (lost events).  A corrupt
 * seq would otherwise move the window past every call in flight. */
static int seq_plausible(struct an_state *an, struct an_pc *pc, uint64_t seq)
{
	if (!pc->last_seq || seq <= pc->last_seq + SEQ_JUMP_MAX)
		return 1;
	if (pc->jump_seq && seq >= pc->jump_seq && seq - pc->jump_seq <= HOLD_SEQS) {
		pc->jump_seq = 0;
		return 1;
	}
	pc->jump_seq = seq;
	an->bad_values++;
	return 0;
}

/* The comm's size as the comm knows it (state.c keeps the first). */
static void entry_size(struct an_entry *e)
{
	if (e->comm->nranks > e->nranks)
		e->nranks = e->comm->nranks;
}

void an_comm_init(struct an_state *an, const struct ev_src *src,
		  const struct ev_rec_init *r)
{
	struct an_pc *pc;

	if (!r->comm_hash)
		return;
	pc = an_pc_for(an, src, r->comm_hash, r->nranks);
	/* A nonblocking split's size and rank come with its second end.  A
	 * rank outside the size is corrupt (read.c bounded the size). */
	if (r->nranks > 0 && r->rank >= 0 && r->rank < r->nranks) {
		pc->comm_rank = r->rank;
		pc->nranks = r->nranks;
	} else if (r->nranks > 0) {
		an->bad_values++;
	}
	if (r->end) {
		/* A nonblocking creation ends twice: returning ncclInProgress
		 * (7), then when ready, or never: a hang like a blocking one's. */
		if (r->result != 7)
			pc->init_done = 1;
	} else {
		pc->init_begun = 1;
		pc->init_ts = src->ts;
	}
}

void an_comm_state(struct an_state *an, const struct ev_src *src,
		   const struct ev_rec_misc *r)
{
	struct an_pc *pc;

	if (!r->comm_hash || r->result != 0 || !r->kind)
		return;
	if (strcmp(r->kind, "suspended") && strcmp(r->kind, "resumed"))
		return;
	pc = an_pc_for(an, src, r->comm_hash, 0);
	pc->suspended = !strcmp(r->kind, "suspended");
}

void an_comm_end(struct an_state *an, const struct ev_src *src,
		 const struct ev_rec_misc *r)
{
	struct an_pc *pc;

	if (!r->comm_hash)
		return;
	pc = an_pc_for(an, src, r->comm_hash, 0);
	pc->ended = 1;
	/* destroy and finalize wait for the GPU: the untimed tail is done;
	 * abort and revoke do not.  Its completions may follow (held()). */
	if (r->kind && (!strcmp(r->kind, "destroy") || !strcmp(r->kind, "finalize"))) {
		pc->destroyed = 1;
		mark_upto(pc, pc->last_seq);
		try_front(an, pc->comm);
	}
}

void an_enqueue(struct an_state *an, const struct ev_src *src,
		const struct ev_rec_coll *r)
{
	struct an_entry *e, **ep;
	struct an_slot *s;
	struct an_pc *pc;

	if (!r->comm_hash)
		return;
	if (!r->seq) {
		an_p2p_enqueue(an, src, r);
		return;
	}
	pc = an_pc_for(an, src, r->comm_hash, r->nranks);
	if (!seq_plausible(an, pc, r->seq))
		return;
	an->coll_calls++;
	if (r->seq > pc->last_seq)
		pc->last_seq = r->seq;
	ep = entry_get(an, pc->comm, r->seq, 1);
	if (!ep) {
		an->late_events++;
		return;
	}
	s = entry_slot(ep, pc->member);
	e = *ep;
	if (s->flags & AN_S_ENQ)
		return;		/* duplicate */
	s->flags |= AN_S_ENQ;
	e->nenq++;
	entry_size(e);
	s->enter_ns = r->enter_ns;
	s->exit_ns = r->exit_ns;
	if (r->enter_coarse)
		s->flags |= AN_S_COARSE;
	s->count = r->count;
	s->bytes = r->bytes;
	s->stream = r->stream;
	s->root = (int32_t)r->root_or_peer;
	s->dtype = (int32_t)r->datatype;
	s->op = (uint8_t)an_op_id(an, r->op);
	/* A dropped call never reaches NCCL: its peers wait for it. */
	if (pc->drop_seq == r->seq || (r->result != 0 && r->result != 7))
		s->flags |= AN_S_DROP;
	/* Done already: a later seq completed first, or the comm was destroyed
	 * before this event came (the shim may write it late, from its
	 * watchdog or its exit flush). */
	if ((r->seq <= pc->done_seq || pc->destroyed) && !(s->flags & AN_S_DROP))
		mark_done(e, s);
	try_front(an, pc->comm);
}

/* A completion of a call already accounted.  On a comm of one rank the
 * window closes untimed calls before their completions come (a burst of
 * fast calls between two timed ones); its time is the collective's, so
 * the row and the rank still get it.  Elsewhere it is only counted. */
static void late_time(struct an_state *an, struct an_proc *p, const struct an_pc *pc,
		      const struct ev_rec_coll *r)
{
	struct an_row *row;
	double dur = r->duration_ns > 0 ? (double)r->duration_ns :
		(r->gpu_end_ns > r->gpu_start_ns ? (double)(r->gpu_end_ns - r->gpu_start_ns) : 0);

	an->late_events++;
	if (pc->comm->nranks != 1 || r->gpu_end_ns <= 0 || dur <= 0)
		return;
	row = an_row_get(an, an_op_id(an, r->op), r->bytes, 1);
	if (an_row_time(row, r->bytes, dur))
		an_busy_late(p, (int)(row - an->rows), dur);
}

void an_complete(struct an_state *an, const struct ev_src *src,
		 const struct ev_rec_coll *r)
{
	struct an_proc *p = an_proc_get(an, src);
	struct an_entry *e, **ep;
	struct an_slot *s;
	struct an_pc *pc;

	if (r->gpu_end_ns > r->gpu_start_ns && r->gpu_start_ns > 0)
		an_busy_add(p, r->gpu_start_ns, r->gpu_end_ns);
	if (!r->comm_hash)
		return;
	if (!r->seq) {
		an_p2p_complete(an, src, r);
		return;
	}
	pc = an_pc_for(an, src, r->comm_hash, r->nranks);
	if (!seq_plausible(an, pc, r->seq))
		return;
	ep = entry_get(an, pc->comm, r->seq, 1);
	if (!ep) {
		late_time(an, p, pc, r);
		return;
	}
	s = entry_slot(ep, pc->member);
	e = *ep;
	entry_size(e);
	if (!s->bytes)
		s->bytes = r->bytes;
	if (!(s->flags & AN_S_ENQ) && !s->op)
		s->op = (uint8_t)an_op_id(an, r->op);
	if (!s->stream)
		s->stream = r->stream;
	s->gpu_start = r->gpu_start_ns;
	s->gpu_end = r->gpu_end_ns;
	s->dur = r->duration_ns > 0 ? r->duration_ns :
		(r->gpu_end_ns > r->gpu_start_ns ? r->gpu_end_ns - r->gpu_start_ns : 0);
	if (r->gpu_end_ns > 0)
		s->flags |= AN_S_TIMED;
	/* Its own completion, even after a later one marked the seqs up to
	 * it (mark_upto() covers each seq once). */
	s->flags |= AN_S_OWN;
	if (r->seq > pc->own_done_seq)
		pc->own_done_seq = r->seq;
	if (!(s->flags & AN_S_DROP))
		mark_done(e, s);
	mark_upto(pc, r->seq);
	try_front(an, pc->comm);
}

void an_timeout(struct an_state *an, const struct ev_src *src,
		const struct ev_rec_misc *r)
{
	struct an_proc *p = an_proc_get(an, src);
	struct an_timeout_row *t;

	if (r->comm_hash) {
		struct an_comm *c = an_comm_get(an, r->comm_hash, 0);
		struct an_pc *pc = an_pc_for(an, src, r->comm_hash, 0);
		uint64_t stuck = 0;

		c->timeouts++;
		if (src->ts > c->last_timeout_ts)
			c->last_timeout_ts = src->ts;
		/* A watchdog names the oldest call of the comm it could not
		 * confirm: every call before it ran, of either kind. */
		if (r->seq && an_is_p2p_op(r->op)) {
			stuck = an_p2p_timeout(pc, r->seq);
		} else if (r->seq) {
			stuck = r->seq;
			if (r->seq > pc->coll_confirmed)
				pc->coll_confirmed = r->seq;
		}
		an_p2p_settle(pc);
		if (stuck && (!c->stuck_seq || stuck < c->stuck_seq))
			c->stuck_seq = stuck;
	}
	if (an->ntimeouts >= AN_LIST_MAX)
		return;
	an->timeouts = an_xrealloc(an->timeouts, (an->ntimeouts + 1) * sizeof(*an->timeouts));
	t = &an->timeouts[an->ntimeouts++];
	t->rank = (int)(p - an->procs);	/* proc id; a rank once the trace is read */
	t->comm_hash = r->comm_hash;
	t->seq = r->seq;
	t->waited_ns = r->waited_ns;
	t->op = an_xstrdup(r->op);
	t->action = an_xstrdup(r->action);
	t->what = an_xstrdup(r->what);
	t->ts = src->ts;
}
