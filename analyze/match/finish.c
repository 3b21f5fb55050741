/*
 * The end of the trace.  What is left in a comm's window is in flight:
 * calls some rank finished, or that the watchdogs confirmed (those before
 * the lowest seq a timeout names), are closed; those a stopped member
 * entered after its last confirmed one are unconfirmed, not hung; the
 * first other one that timed out or sat for AN_HANG_AGE_NS is a hang,
 * with what was queued behind it; the rest were cut off by the trace's
 * end.  A collective a timeout names that the window closed (a rank out
 * of step completed its own call of that seq) is a hang too, unless a
 * stopped member explains the timeout.  Each rank's state in a hung
 * collective is told apart as far as the trace allows.  An init begun and
 * never finished is a hang the same way.  Then the tables are put in the
 * order the writers print them, and what the trace lacks is noted.
 */
#include <stdlib.h>
#include <string.h>

#include "match.h"

/* How early a coarse arrival (enter_coarse) can be: the shim's published
 * time is a watchdog tick (5-20 ms) and a jiffy old at most. */
#define COARSE_LAG_NS	25000000LL

/* Begun and not known finished.  A nonblocking comm ends twice, and a
 * trace may lack the second end (lost, or recorded before it was written):
 * one used or ended is past its init. */
static int in_init(const struct an_pc *pc)
{
	return pc->init_begun && !pc->init_done && !pc->last_seq && !pc->np2p && !pc->ended;
}

/* The ranks that never began a hung init: what a job hung in
 * init_process_group needs named.  Comm ranks are known from the members'
 * comm_init_begin; they are global ranks too where the comm spans the
 * world in rank order, as the default process group does. */
static void init_missing(struct an_state *an, struct an_comm *c, struct an_hang *h)
{
	int world = c->nranks > 0, i;
	char *seen;

	if (c->nranks <= 0)
		return;
	seen = an_xcalloc((size_t)c->nranks, 1);
	for (i = 0; i < c->nmembers; i++) {
		struct an_proc *p = &an->procs[c->members[i]];
		struct an_pc *pc = &an->pcs[c->member_pc[i]];

		if (pc->comm_rank >= 0 && pc->comm_rank < c->nranks)
			seen[pc->comm_rank] = 1;
		if (pc->comm_rank != p->rank || p->world_size != c->nranks)
			world = 0;
	}
	h->miss_comm = an_xcalloc((size_t)c->nranks, sizeof(*h->miss_comm));
	for (i = 0; i < c->nranks; i++)
		if (!seen[i])
			h->miss_comm[h->nmiss_comm++] = i;
	free(seen);
	if (!world)
		return;
	free(h->miss);
	h->miss = an_xcalloc((size_t)h->nmiss_comm + 1, sizeof(*h->miss));
	for (i = 0; i < h->nmiss_comm; i++) {
		int traced = 0;

		for (int j = 0; j < an->nprocs && !traced; j++)
			traced = an->procs[j].rank == h->miss_comm[i];
		h->miss[h->nmiss++] = h->miss_comm[i];
		h->miss_untraced += !traced;
	}
	h->unknown_missing = 0;
}

const char *an_rank_state_name(int state)
{
	static const char *const names[AN_RS_N] = {
		"waiting", "in_host_call", "never_entered", "out_of_step", "exited", "killed",
	};

	return state >= 0 && state < AN_RS_N ? names[state] : "unknown";
}

/* A timeout from proc on comm `hash` naming seq (or no seq): its what. */
static const char *timeout_what(const struct an_state *an, int proc, uint64_t hash,
				uint64_t seq)
{
	const char *what = NULL;

	for (int i = 0; i < an->ntimeouts; i++) {
		const struct an_timeout_row *t = &an->timeouts[i];

		if (t->rank != proc || t->comm_hash != hash || (t->seq && t->seq != seq))
			continue;
		/* Stuck in the host call says more than waiting. */
		if (!what || !strcmp(t->what, "host"))
			what = t->what;
	}
	return what;
}

/* An injected stall of proc's call seq on comm `hash`. */
static int stalled(const struct an_state *an, int proc, uint64_t hash, uint64_t seq)
{
	for (int i = 0; i < an->ninjects; i++) {
		const struct an_inject_row *in = &an->injects[i];

		if (in->rank == proc && in->comm_hash == hash && in->seq == seq &&
		    !strcmp(in->kind, "stall"))
			return 1;
	}
	return 0;
}

/* The process died: flight.c recovered its ring ("..., pid N) ended"). */
static int killed(const struct an_state *an, const struct an_proc *p)
{
	char pat[48];

	snprintf(pat, sizeof(pat), "pid %lld)", (long long)(p->has_info ? p->pid : p->vpid));
	for (int i = 0; i < an->ninc; i++)
		if (an->inc[i].kind == AN_INC_calls_recovered && strstr(an->inc[i].detail, pat))
			return 1;
	return 0;
}

/* Member i's state in the hung collective seq (slot s if the window
 * still held it). */
static int rank_state(const struct an_state *an, const struct an_comm *c, int i,
		      const struct an_pc *pc, const struct an_slot *s, uint64_t seq)
{
	int proc = c->members[i];
	const char *what = timeout_what(an, proc, c->hash, seq);
	/* The process's own account, where it wrote a hang dump. */
	int dump = an_dump_where(an, an->procs[proc].rank, c->hash, seq, 0);

	/* Stuck on the host, or out of step by an injected drop: what it
	 * is doing says more than its dying later (on_timeout=exit). */
	if ((what && !strcmp(what, "host")) || stalled(an, proc, c->hash, seq) ||
	    dump == AN_DUMP_HOST)
		return AN_RS_HOST;
	if (pc->drop_seq <= seq)
		return AN_RS_NEVER;
	if (killed(an, &an->procs[proc]))
		return AN_RS_KILLED;
	if (s && (s->flags & AN_S_ENQ) && !(s->flags & (AN_S_DROP | AN_S_OWN)))
		return AN_RS_WAITING;
	if (what || dump == AN_DUMP_GPU || (!s && pc->last_seq >= seq && pc->done_seq < seq))
		return AN_RS_WAITING;
	if (pc->done_seq >= seq && pc->last_seq >= seq)
		return AN_RS_AHEAD;
	if (pc->ended)
		return AN_RS_EXITED;
	return AN_RS_NEVER;
}

static struct an_pc *member_pc(struct an_state *an, struct an_comm *c, int i)
{
	uint64_t key = ((uint64_t)c->members[i] << 32) ^
		(uint64_t)ng_u64map_get(&an->comm_map, c->hash);

	return &an->pcs[ng_u64map_get(&an->pc_map, key)];
}

static int cmp_call(const void *a, const void *b)
{
	const struct an_call *x = a, *y = b;

	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Member i's part in window entry e, as a call on the corrected clock. */
static void slot_call(const struct an_state *an, const struct an_entry *e, int i,
		      struct an_hang_row *row)
{
	const struct an_slot *s;
	int64_t off = an->hosts[an->procs[row->proc].host].offset_ns;
	struct an_call *k;

	if (!e || i >= e->nslots || !(e->slot[i].flags & AN_S_ENQ))
		return;
	s = &e->slot[i];
	k = &row->calls[row->ncalls++];
	k->seq = e->seq;
	k->op = s->op;
	k->flags = s->flags;
	k->enter_ns = s->enter_ns + off;
	k->exit_ns = s->exit_ns > 0 ? s->exit_ns + off : 0;
	if ((s->flags & AN_S_TIMED) && s->gpu_start > 0 && s->gpu_end > s->gpu_start) {
		k->start_ns = s->gpu_start + off;
		k->end_ns = s->gpu_end + off;
	}
}

/* Member i's row of the drawing: its last accounted calls, its part in
 * the hung one (e) and in those queued behind it (after). */
static void hang_row(const struct an_state *an, const struct an_comm *c, int i,
		     const struct an_pc *pc, const struct an_entry *e,
		     struct an_entry *const *after, int nafter, struct an_hang_row *row)
{
	uint32_t n = pc->nrecent < AN_RECENT ? pc->nrecent : AN_RECENT;

	row->rank = an->procs[c->members[i]].rank;
	row->proc = c->members[i];
	if (pc->init_begun)
		row->init_ns = pc->init_ts + an->hosts[an->procs[row->proc].host].offset_ns;
	for (uint32_t k = 0; k < n; k++)
		row->calls[row->ncalls++] = pc->recent[(pc->nrecent - n + k) % AN_RECENT];
	qsort(row->calls, row->ncalls, sizeof(*row->calls), cmp_call);
	slot_call(an, e, i, row);
	for (int k = 0; k < nafter; k++)
		slot_call(an, after[k], i, row);
}

static int cmp_row(const void *a, const void *b)
{
	const struct an_hang_row *x = a, *y = b;

	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* A hung collective seq of c (e: its window entry, if still held, and
 * after the first of those queued behind it; NULL and seq 0: an init). */
static void add_hang(struct an_state *an, struct an_comm *c, const struct an_entry *e,
		     struct an_entry *const *after, int nafter, uint64_t seq, int op,
		     uint64_t queued_after, int64_t age, int timed_out)
{
	struct an_hang *h;
	int i;

	an->hangs = an_xrealloc(an->hangs, (an->nhangs + 1) * sizeof(*an->hangs));
	h = &an->hangs[an->nhangs++];
	memset(h, 0, sizeof(*h));
	h->comm_hash = c->hash;
	h->seq = seq;
	h->op = op;
	h->queued_after = queued_after;
	h->age_ns = age;
	h->timed_out = timed_out;
	h->wait = an_xcalloc(c->nmembers, sizeof(*h->wait));
	h->miss = an_xcalloc(c->nmembers, sizeof(*h->miss));
	h->last_rank = an_xcalloc(c->nmembers, sizeof(*h->last_rank));
	h->last_seq = an_xcalloc(c->nmembers, sizeof(*h->last_seq));
	h->rows = an_xcalloc(c->nmembers, sizeof(*h->rows));
	if (seq) {
		h->state_rank = an_xcalloc(c->nmembers, sizeof(*h->state_rank));
		h->state = an_xcalloc(c->nmembers, sizeof(*h->state));
		h->drop_seq = an_xcalloc(c->nmembers, sizeof(*h->drop_seq));
	}
	for (i = 0; i < c->nmembers; i++) {
		struct an_proc *p = &an->procs[c->members[i]];
		struct an_pc *pc = member_pc(an, c, i);
		const struct an_slot *s = e && i < e->nslots ? &e->slot[i] : NULL;
		int st;

		h->last_rank[h->nlast] = p->rank;
		h->last_seq[h->nlast++] = pc->last_seq;
		hang_row(an, c, i, pc, e, after, nafter, &h->rows[h->nrows++]);
		if (!seq) {
			if (in_init(pc))
				h->wait[h->nwait++] = p->rank;
			continue;
		}
		st = rank_state(an, c, i, pc, s, seq);
		h->state_rank[h->nstate] = p->rank;
		h->drop_seq[h->nstate] = st == AN_RS_NEVER && pc->drop_seq <= seq ?
			pc->drop_seq : 0;
		h->state[h->nstate++] = (uint8_t)st;
		/* In the call (on the GPU or stuck on the host), or not. */
		if (st == AN_RS_WAITING || st == AN_RS_HOST)
			h->wait[h->nwait++] = p->rank;
		else
			h->miss[h->nmiss++] = p->rank;
	}
	if (c->nranks > c->nmembers)
		h->unknown_missing = c->nranks - c->nmembers;
	if (!seq)
		init_missing(an, c, h);
	qsort(h->rows, h->nrows, sizeof(*h->rows), cmp_row);
	/* last_seq_by_rank and the states in rank order */
	for (i = 1; i < h->nlast; i++)
		for (int j = i; j > 0 && h->last_rank[j] < h->last_rank[j - 1]; j--) {
			int64_t r = h->last_rank[j];
			uint64_t s = h->last_seq[j];

			h->last_rank[j] = h->last_rank[j - 1];
			h->last_seq[j] = h->last_seq[j - 1];
			h->last_rank[j - 1] = r;
			h->last_seq[j - 1] = s;
		}
	for (i = 1; i < h->nstate; i++)
		for (int j = i; j > 0 && h->state_rank[j] < h->state_rank[j - 1]; j--) {
			int64_t r = h->state_rank[j];
			uint64_t d = h->drop_seq[j];
			uint8_t st = h->state[j];

			h->state_rank[j] = h->state_rank[j - 1];
			h->drop_seq[j] = h->drop_seq[j - 1];
			h->state[j] = h->state[j - 1];
			h->state_rank[j - 1] = r;
			h->drop_seq[j - 1] = d;
			h->state[j - 1] = st;
		}
}

/* A hang only the watchdogs saw: a timeout names a collective of c that
 * some member never finished, though the window closed it (a rank out of
 * step completed its own call of that seq, or the entry was lost). */
static void timeout_hang(struct an_state *an, struct an_comm *c)
{
	const struct an_timeout_row *first = NULL;
	int i, open = 0;

	for (i = 0; i < an->ntimeouts; i++) {
		const struct an_timeout_row *t = &an->timeouts[i];

		if (t->comm_hash != c->hash || !t->seq || an_is_p2p_op(t->op) ||
		    !strcmp(t->what, "init"))
			continue;
		if (!first || t->seq < first->seq)
			first = t;
	}
	if (!first)
		return;
	/* Open while a rank that timed out on it never saw it complete, or
	 * its watchdog ended it (abort, exit): the completion an abort
	 * flushes out is no sign that the call ran. */
	for (i = 0; i < an->ntimeouts; i++) {
		const struct an_timeout_row *t = &an->timeouts[i];
		int32_t k = ng_u64map_get(&an->pc_map, ((uint64_t)t->rank << 32) ^
					  (uint64_t)ng_u64map_get(&an->comm_map, c->hash));

		if (t->comm_hash == c->hash && t->seq == first->seq && k >= 0)
			open += an->pcs[k].own_done_seq < first->seq ||
				(t->action && strcmp(t->action, "warn"));
	}
	if (!open)
		return;		/* a slow call that finished after its timeout */
	add_hang(an, c, NULL, NULL, 0, first->seq, an_op_id(an, first->op), 0,
		 an->last_ts - first->ts + (int64_t)first->waited_ns, 1);
}

/* Member i of c stopped while its peers waited: its process was killed
 * (its flight ring was recovered), or it wrote nothing after the first
 * timeout on c and had none of its own.  Alive and waiting, its own
 * watchdog would have fired; alive and elsewhere, its calls completed. */
static int stopped(const struct an_state *an, const struct an_comm *c, int i)
{
	int proc = c->members[i];
	int64_t first = INT64_MAX;

	if (killed(an, &an->procs[proc]))
		return 1;
	/* A list cut short may lack the member's own timeout. */
	if (!c->timeouts || an->ntimeouts >= AN_LIST_MAX)
		return 0;
	for (int k = 0; k < an->ntimeouts; k++) {
		const struct an_timeout_row *t = &an->timeouts[k];

		if (t->rank == proc)
			return 0;
		if (t->comm_hash == c->hash && t->ts < first)
			first = t->ts;
	}
	return first != INT64_MAX && an->procs[proc].last_ts < first;
}

/* A call e that a stopped member entered after its last confirmed one:
 * it may have completed or not, so it is counted as unconfirmed, never
 * named hung.  A hang needs evidence: a timeout, or peers seen waiting
 * in a call some member never entered. */
static int unconfirmed(struct an_state *an, struct an_comm *c, const struct an_entry *e,
		       const char *stop)
{
	struct an_unconf *u;
	int i, k;

	for (i = 0; i < e->nslots && i < c->nmembers; i++)
		if (stop[i] && (e->slot[i].flags & AN_S_ENQ) && !(e->slot[i].flags & AN_S_DROP) &&
		    e->seq > member_pc(an, c, i)->done_seq)
			break;
	if (i >= e->nslots || i >= c->nmembers)
		return 0;
	for (k = 0; k < an->nunconf; k++)
		if (an->unconf[k].comm_hash == c->hash && an->unconf[k].proc == c->members[i])
			break;
	if (k == an->nunconf) {
		an->unconf = an_xrealloc(an->unconf, (an->nunconf + 1) * sizeof(*an->unconf));
		u = &an->unconf[an->nunconf++];
		memset(u, 0, sizeof(*u));
		u->comm_hash = c->hash;
		u->proc = c->members[i];
		/* e is the window's front: every call before it was closed */
		u->confirmed_seq = e->seq - 1;
		u->first_seq = e->seq;
		u->op = e->slot[i].op;
		u->killed = killed(an, &an->procs[u->proc]);
	}
	u = &an->unconf[k];
	u->last_seq = e->seq;
	u->calls++;
	return 1;
}

/* A member of c stopped with calls unconfirmed (unconfirmed() above). */
static int stopped_on(const struct an_state *an, const struct an_comm *c)
{
	for (int k = 0; k < an->nunconf; k++)
		if (an->unconf[k].comm_hash == c->hash)
			return 1;
	return 0;
}

/* Every member entered e and none of them times its calls
 * (NCCLGUARD_TIMING=0): whether it completed is not in the trace.  A
 * member that never entered it, or one that times its calls, still
 * tells a hang. */
static int unknowable(const struct an_state *an, const struct an_entry *e)
{
	const struct an_comm *c = e->comm;
	int n = e->nranks > 0 ? e->nranks : c->nranks, seen = 0;

	for (int i = 0; i < e->nslots && i < c->nmembers; i++) {
		if (!(e->slot[i].flags & AN_S_ENQ) || (e->slot[i].flags & AN_S_DROP))
			continue;
		if (!an->procs[c->members[i]].timing_off)
			return 0;
		seen++;
	}
	return n > 0 && seen >= n;
}

static void finish_comm(struct an_state *an, struct an_comm *c)
{
	struct an_entry *hang = NULL, *behind[AN_AFTER];
	uint64_t after = 0;
	int nbehind = 0;
	int64_t age = 0;
	int op = 0, timed_out = 0;
	/* once per member, not per call left in the window */
	char *stop = an_xcalloc((size_t)c->nmembers + 1, 1);
	int susp = an_comm_suspended(an, c);

	for (int i = 0; i < c->nmembers; i++)
		stop[i] = (char)stopped(an, c, i);

	while (c->nring) {
		struct an_entry *e = *an_ring_at(c, 0);
		int64_t first;

		if (!e) {
			an_pop_front(an, c, 0);
			continue;
		}
		if (hang) {
			/* Queued behind the hang: never ran.  The first few
			 * are drawn with it. */
			after++;
			*an_ring_at(c, 0) = NULL;
			if (nbehind < AN_AFTER)
				behind[nbehind++] = e;
			else
				free(e);
			an_pop_front(an, c, 0);
			continue;
		}
		/* Some rank finished it, so every rank took part; or it went
		 * untimed (sampled) but the watchdogs confirmed it: their
		 * timeouts name the first call they could not confirm. */
		if (e->ndone > 0 || an_entry_ready(e) || e->seq < c->stuck_seq) {
			an_pop_front(an, c, 0);
			continue;
		}
		if (unconfirmed(an, c, e, stop)) {
			an_pop_front(an, c, 0);
			continue;
		}
		/* The youngest arrival's age; nothing to say of a seq that no
		 * rank was seen to enter (only lost events make one). */
		age = INT64_MAX;
		first = INT64_MAX;
		for (int i = 0; i < e->nslots; i++) {
			if (!(e->slot[i].flags & AN_S_ENQ))
				continue;
			if (an->last_ts - e->slot[i].enter_ns < age) {
				age = an->last_ts - e->slot[i].enter_ns;
				op = e->slot[i].op;
			}
			/* A coarse arrival may predate a timeout that came just
			 * before the call: give it the clock's lag. */
			int64_t began = e->slot[i].enter_ns +
				(e->slot[i].flags & AN_S_COARSE ? COARSE_LAG_NS : 0);

			if (began < first)
				first = began;
		}
		/* A timeout speaks for this call only if it came after the call
		 * began: an earlier one that resolved (a slow call under
		 * on_timeout=warn) says nothing of the calls cut off by the
		 * trace's end. */
		timed_out = c->timeouts && c->last_timeout_ts >= first;
		/* Called by every rank, completion unknown: counted as a
		 * call, and the report says it cannot tell. */
		if (age != INT64_MAX && !timed_out && unknowable(an, e)) {
			an->unknown_end++;
			an_pop_front(an, c, 0);
			continue;
		}
		if (age != INT64_MAX && !susp && (timed_out || age >= AN_HANG_AGE_NS)) {
			hang = e;
			*an_ring_at(c, 0) = NULL;
			an_pop_front(an, c, 0);
			continue;
		}
		/* Trace stopped while it ran: in flight, not hung. */
		if (age != INT64_MAX)
			an->inflight_end++;
		*an_ring_at(c, 0) = NULL;
		free(e);
		an_pop_front(an, c, 0);
	}
	if (hang) {
		add_hang(an, c, hang, behind, nbehind, hang->seq, op, after, age, timed_out);
		free(hang);
		for (int i = 0; i < nbehind; i++)
			free(behind[i]);
	} else if (c->timeouts && !stopped_on(an, c) && !susp) {
		/* With a member stopped, the others' watchdogs name the
		 * oldest call they could not confirm: the stop explains
		 * them, and the unconfirmed finding names them. */
		timeout_hang(an, c);
	}
	free(stop);
}

static void finish_inits(struct an_state *an)
{
	for (int ci = 0; ci < an->ncomms; ci++) {
		struct an_comm *c = an->comms[ci];
		int64_t oldest = INT64_MAX;
		int waiting = 0, timed_out;

		for (int i = 0; i < c->nmembers; i++) {
			uint64_t key = ((uint64_t)c->members[i] << 32) ^ (uint64_t)ci;
			struct an_pc *pc = &an->pcs[ng_u64map_get(&an->pc_map, key)];

			if (in_init(pc)) {
				waiting++;
				if (pc->init_ts < oldest)
					oldest = pc->init_ts;
			}
		}
		timed_out = c->timeouts && c->last_timeout_ts >= oldest;
		if (waiting && (timed_out || an->last_ts - oldest >= AN_HANG_AGE_NS))
			add_hang(an, c, NULL, NULL, 0, 0, an_op_id(an, "init"), 0,
				 an->last_ts - oldest, timed_out);
	}
}

int an_unconf_waiting(const struct an_state *an, const struct an_unconf *u, int64_t **out)
{
	int64_t *w = an_xcalloc((size_t)an->ntimeouts + 1, sizeof(*w));
	int n = 0;

	for (int i = 0; i < an->ntimeouts; i++) {
		const struct an_timeout_row *t = &an->timeouts[i];
		int dup = t->comm_hash != u->comm_hash || t->rank == an->procs[u->proc].rank;

		for (int k = 0; k < n && !dup; k++)
			dup = w[k] == t->rank;
		if (!dup)
			w[n++] = t->rank;
	}
	qsort(w, (size_t)n, sizeof(*w), an_cmp_i64);
	*out = w;
	return n;
}

static int cmp_hang(const void *a, const void *b)
{
	const struct an_hang *x = a, *y = b;

	if (x->comm_hash != y->comm_hash)
		return x->comm_hash < y->comm_hash ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_timeout(const void *a, const void *b)
{
	const struct an_timeout_row *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->ts > y->ts) - (x->ts < y->ts);
}

void an_finish(struct an_state *an)
{
	int i, j;

	an->finishing = 1;
	if (!an->settled)
		an_clock_settle(an);
	for (i = 0; i < an->ncomms; i++) {
		finish_comm(an, an->comms[i]);
		an_p2p_finish(an, an->comms[i]);
	}
	finish_inits(an);
	if (an->nhangs)
		qsort(an->hangs, an->nhangs, sizeof(*an->hangs), cmp_hang);
	for (i = 0; i < an->ntimeouts; i++)
		an->timeouts[i].rank = an->procs[an->timeouts[i].rank].rank;
	if (an->ntimeouts)
		qsort(an->timeouts, an->ntimeouts, sizeof(*an->timeouts), cmp_timeout);
	for (i = 0; i < an->nprocs; i++)
		an_busy_fold(&an->procs[i], 0);
	an_busy_estimate(an);		/* before the rows are sorted */
	/* Timeouts, injections and policy rows were keyed by proc id. */
	for (i = 0; i < an->ninjects; i++)
		an->injects[i].rank = an->procs[an->injects[i].rank].rank;
	for (i = 0; i < an->npolicy; i++) {
		struct an_policy_row *r = &an->policy[i];

		for (j = 0; j < r->nranks; j++)
			r->ranks[j] = an->procs[r->ranks[j]].rank;
		qsort(r->ranks, r->nranks, sizeof(*r->ranks), an_cmp_i64);
	}
	an_sort_rows(an);
	an_config_mismatches(an);
	an_algo_finish(an);
	an_incomplete_scan(an);
	an_census_finish(an);
	an_hw_finish(an);
	an_verify_finish(an);
}

/* The hangs and the unconfirmed calls an_finish found. */
void an_finish_free(struct an_state *an)
{
	int i;

	for (i = 0; i < an->nhangs; i++) {
		free(an->hangs[i].wait);
		free(an->hangs[i].miss);
		free(an->hangs[i].miss_comm);
		free(an->hangs[i].last_rank);
		free(an->hangs[i].last_seq);
		free(an->hangs[i].state_rank);
		free(an->hangs[i].state);
		free(an->hangs[i].drop_seq);
		free(an->hangs[i].rows);
	}
	free(an->hangs);
	free(an->unconf);
}
