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
 * that timed out or sat for a second is a hang.
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
 * Hosts' clocks differ: finished collectives wait on a pending list until
 * every host has a clock offset (clock_sample(), settle()).
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"

#define RING_MIN	64
#define RING_MAX	16384		/* in-flight seqs per comm before forcing */
#define PEND_MAX	1024		/* finished collectives held for clocks */
#define CLOCK_SAMPLES	32		/* per host before offsets settle */
#define HANG_AGE_NS	1000000000LL	/* in flight this long at the end */
/* How early a coarse arrival (enter_coarse) can be: the shim's published
 * time is a watchdog tick (5-20 ms) and a jiffy old at most. */
#define COARSE_LAG_NS	25000000LL
#define HOLD_SEQS	16		/* wait this far for an own completion */

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);

	if (!p) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

static void *xrealloc(void *p, size_t sz)
{
	p = realloc(p, sz ? sz : 1);
	if (!p) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");

	if (!d) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		exit(1);
	}
	return d;
}

/* ---- map -------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

int32_t an_map_get(const struct an_map *m, uint64_t key)
{
	uint32_t i;

	if (!m->cap)
		return -1;
	for (i = mix(key) & (m->cap - 1); m->vals[i] >= 0; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return m->vals[i];
	return -1;
}

void an_map_put(struct an_map *m, uint64_t key, int32_t val)
{
	uint32_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct an_map big = { 0 };

		big.cap = m->cap ? m->cap * 2 : 64;
		big.keys = xcalloc(big.cap, sizeof(*big.keys));
		big.vals = xcalloc(big.cap, sizeof(*big.vals));
		memset(big.vals, 0xff, big.cap * sizeof(*big.vals));
		for (i = 0; i < m->cap; i++)
			if (m->vals[i] >= 0)
				an_map_put(&big, m->keys[i], m->vals[i]);
		free(m->keys);
		free(m->vals);
		*m = big;
	}
	for (i = mix(key) & (m->cap - 1); m->vals[i] >= 0; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return;
		}
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
}

void an_map_free(struct an_map *m)
{
	free(m->keys);
	free(m->vals);
}

/* ---- lookups ---------------------------------------------------------- */

int an_op_id(struct an_state *an, const char *op)
{
	int i;

	if (!op || !*op)
		op = "unknown";
	for (i = 0; i < an->nops; i++)
		if (!strcmp(an->ops[i], op))
			return i;
	if (an->nops == AN_MAX_OPS)
		return AN_MAX_OPS - 1;	/* an "other" bucket: only junk gets here */
	an->ops[an->nops] = xstrdup(an->nops == AN_MAX_OPS - 1 ? "other" : op);
	/* Writers print op names unescaped: keep them plain. */
	for (char *q = an->ops[an->nops]; *q; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
		      (*q >= '0' && *q <= '9') || *q == '_' || *q == '-'))
			*q = '_';
	return an->nops++;
}

int an_host_id(struct an_state *an, const char *name)
{
	int i;

	for (i = 0; i < an->nhosts; i++)
		if (!strcmp(an->hosts[i].name, name))
			return i;
	an->hosts = xrealloc(an->hosts, (an->nhosts + 1) * sizeof(*an->hosts));
	memset(&an->hosts[i], 0, sizeof(an->hosts[i]));
	an->hosts[i].name = xstrdup(name);
	an->hosts[i].first_ts = INT64_MAX;
	an->hosts[i].last_ts = INT64_MIN;
	an->hosts[i].samples = xcalloc(CLOCK_SAMPLES, sizeof(int64_t));
	an->hosts[i].settled = i == 0;
	an->nhosts++;
	return i;
}

static struct an_proc *proc_get(struct an_state *an, const struct an_src *src)
{
	uint64_t key = ((uint64_t)src->host << 40) ^ (uint64_t)(src->vpid & 0xffffffffffLL);
	int32_t i = an_map_get(&an->proc_map, key);
	struct an_proc *p;

	if (i >= 0)
		return &an->procs[i];
	an->procs = xrealloc(an->procs, (an->nprocs + 1) * sizeof(*an->procs));
	p = &an->procs[an->nprocs];
	memset(p, 0, sizeof(*p));
	p->host = src->host;
	p->vpid = src->vpid;
	p->pid = src->vpid;
	p->rank = -1;
	p->numa_node = -1;
	p->first_ts = INT64_MAX;
	p->last_ts = INT64_MIN;
	p->folded_until = INT64_MIN;
	p->heat_sum = xcalloc(AN_HEAT_BINS, sizeof(double));
	p->heat_n = xcalloc(AN_HEAT_BINS, sizeof(uint32_t));
	p->chrome_pid = -1;
	an_map_put(&an->proc_map, key, an->nprocs);
	return &an->procs[an->nprocs++];
}

static struct an_comm *comm_get(struct an_state *an, uint64_t hash, int64_t nranks)
{
	int32_t i = an_map_get(&an->comm_map, hash);
	struct an_comm *c;

	if (i >= 0) {
		c = an->comms[i];
		if (nranks > c->nranks)
			c->nranks = (int)nranks;
		return c;
	}
	c = xcalloc(1, sizeof(*c));
	c->hash = hash;
	c->nranks = nranks > 0 ? (int)nranks : 0;
	c->lo = 1;
	an->comms = xrealloc(an->comms, (an->ncomms + 1) * sizeof(*an->comms));
	an->comms[an->ncomms] = c;
	an_map_put(&an->comm_map, hash, an->ncomms++);
	return c;
}

/* A proc joins a comm the first time it is seen on it. */
static struct an_pc *pc_get(struct an_state *an, int proc, struct an_comm *c, int comm_idx)
{
	uint64_t key = ((uint64_t)proc << 32) ^ (uint64_t)comm_idx;
	int32_t i = an_map_get(&an->pc_map, key);
	struct an_pc *pc;

	if (i >= 0)
		return &an->pcs[i];
	an->pcs = xrealloc(an->pcs, (an->npcs + 1) * sizeof(*an->pcs));
	pc = &an->pcs[an->npcs];
	memset(pc, 0, sizeof(*pc));
	pc->proc = proc;
	pc->comm = c;
	pc->comm_rank = -1;
	pc->drop_seq = UINT64_MAX;
	pc->p2p_drop_seq = UINT64_MAX;
	if (c->nmembers == c->cap_members) {
		c->cap_members = c->cap_members ? c->cap_members * 2 : 8;
		c->members = xrealloc(c->members, c->cap_members * sizeof(*c->members));
		c->member_pc = xrealloc(c->member_pc, c->cap_members * sizeof(*c->member_pc));
	}
	pc->member = c->nmembers;
	c->member_pc[c->nmembers] = an->npcs;
	c->members[c->nmembers++] = proc;
	an_map_put(&an->pc_map, key, an->npcs);
	return &an->pcs[an->npcs++];
}

static struct an_pc *pc_for(struct an_state *an, const struct an_src *src,
			    uint64_t hash, int64_t nranks)
{
	struct an_proc *p = proc_get(an, src);
	struct an_comm *c = comm_get(an, hash, nranks);

	return pc_get(an, (int)(p - an->procs), c, an_map_get(&an->comm_map, hash));
}

/* ---- entries ---------------------------------------------------------- */

static struct an_entry *entry_new(struct an_comm *c, uint64_t seq)
{
	int n = c->nmembers > c->nranks ? c->nmembers : c->nranks;
	struct an_entry *e;

	if (n < 1)
		n = 1;
	e = xcalloc(1, sizeof(*e) + n * sizeof(struct an_slot));
	e->seq = seq;
	e->nslots = n;
	e->nranks = c->nranks;
	e->comm = c;
	return e;
}

static struct an_entry **ring_at(struct an_comm *c, uint64_t off)
{
	return &c->ring[(c->head + off) & (c->cap - 1)];
}

static int ready(const struct an_entry *e)
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

static void finalize(struct an_state *an, struct an_entry *e);

static void pop_front(struct an_state *an, struct an_comm *c, int forced)
{
	struct an_entry *e = *ring_at(c, 0);

	*ring_at(c, 0) = NULL;
	c->head = (c->head + 1) & (c->cap - 1);
	c->lo++;
	c->nring--;
	if (e) {
		an->forced += forced;
		finalize(an, e);
	}
}

static void try_front(struct an_state *an, struct an_comm *c)
{
	while (c->nring) {
		struct an_entry *e = *ring_at(c, 0);

		if (e && ready(e) && !held(an, e)) {
			pop_front(an, c, 0);
			continue;
		}
		/* A seq nobody recorded (lost events, a trace started mid-run)
		 * must not stall the rest, once every rank is well past it; its
		 * events may also just come late (the shim writes a group's
		 * events once it is timed). */
		if (!e && hole_passed(an, c)) {
			pop_front(an, c, 0);
			continue;
		}
		break;
	}
}

/* The entry for seq, made if `create`; NULL when seq was already closed. */
static struct an_entry *entry_get(struct an_state *an, struct an_comm *c,
				  uint64_t seq, int create)
{
	struct an_entry **slot;
	uint64_t off;

	if (!c->cap) {
		c->cap = RING_MIN;
		c->ring = xcalloc(c->cap, sizeof(*c->ring));
	}
	/* Seqs start at 1 and lo only grows: a seq below it was closed (a
	 * late event).  A trace that starts mid-run leaves holes, given up
	 * as the ranks move past them (try_front()) or, past RING_MAX, at
	 * once (below). */
	if (seq < c->lo)
		return NULL;
	off = seq - c->lo;
	while (off >= c->cap) {
		if (!create)
			return NULL;
		if (c->cap < RING_MAX) {
			struct an_entry **big = xcalloc(c->cap * 2, sizeof(*big));

			for (uint32_t i = 0; i < c->nring; i++)
				big[i] = *ring_at(c, i);
			free(c->ring);
			c->ring = big;
			c->head = 0;
			c->cap *= 2;
			continue;
		}
		/* Bounded memory: account the oldest as it stands. */
		while (c->nring && off >= c->cap) {
			pop_front(an, c, 1);
			off--;
		}
		if (!c->nring) {
			c->lo = seq;
			off = 0;
		}
	}
	slot = ring_at(c, off);
	if (!*slot && create) {
		*slot = entry_new(c, seq);
		if (off + 1 > c->nring)
			c->nring = off + 1;
	}
	return *slot;
}

static struct an_slot *entry_slot(struct an_entry **ep, int member)
{
	struct an_entry *e = *ep;

	if (member >= e->nslots) {
		struct an_entry **ref = NULL;
		struct an_comm *c = e->comm;
		int n = member + 1 > c->nmembers ? member + 1 : c->nmembers;

		for (uint32_t i = 0; i < c->nring; i++)
			if (*ring_at(c, i) == e)
				ref = ring_at(c, i);
		e = xrealloc(e, sizeof(*e) + n * sizeof(struct an_slot));
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

static int is_p2p_op(const char *op)
{
	return op && (!strcmp(op, "send") || !strcmp(op, "recv"));
}

/* Pending sends and recvs that are done: up to the latest p2p completion,
 * enqueued before a collective that completed (one stream, in order), or
 * all of them once the comm is destroyed. */
static void p2p_settle(struct an_pc *pc)
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

/* Every seq up to `upto` is done on this rank. */
static void mark_upto(struct an_state *an, struct an_pc *pc, uint64_t upto)
{
	struct an_comm *c = pc->comm;
	uint64_t q;

	if (upto > pc->done_seq)
		pc->done_seq = upto;
	q = pc->marked_seq + 1 > c->lo ? pc->marked_seq + 1 : c->lo;
	for (; q <= upto && q - c->lo < c->nring; q++) {
		struct an_entry *e = *ring_at(c, q - c->lo);

		if (e) {
			struct an_slot *s = entry_slot(ring_at(c, q - c->lo), pc->member);

			if (!(s->flags & AN_S_DROP))
				mark_done(*ring_at(c, q - c->lo), s);
		}
	}
	if (upto > pc->marked_seq)
		pc->marked_seq = upto;
	p2p_settle(pc);
	(void)an;
}

/* ---- clock alignment -------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Collectives end at nearly the same instant on every rank: the gap between
 * the reference host's mean end and another host's is that host's error. */
static void clock_sample(struct an_state *an, const struct an_entry *e)
{
	int i, n = e->nslots < e->comm->nmembers ? e->nslots : e->comm->nmembers;
	struct an_host *ref = &an->hosts[an->ref_host];

	/* Per-host sums live in the hosts: any number of them. */
	for (i = 0; i < n; i++) {
		struct an_host *h = &an->hosts[an->procs[e->comm->members[i]].host];

		if (e->slot[i].flags & AN_S_TIMED) {
			h->clk_sum += (double)e->slot[i].gpu_end;
			h->clk_n++;
		}
	}
	for (i = 0; i < n; i++) {
		struct an_host *h = &an->hosts[an->procs[e->comm->members[i]].host];

		if (!h->clk_n)
			continue;
		if (ref->clk_n && h != ref && h->nsamples < CLOCK_SAMPLES)
			h->samples[h->nsamples++] = (int64_t)(ref->clk_sum / ref->clk_n -
							      h->clk_sum / h->clk_n);
		if (h != ref) {
			h->clk_sum = 0;
			h->clk_n = 0;
		}
	}
	ref->clk_sum = 0;
	ref->clk_n = 0;
}

static void account(struct an_state *an, struct an_entry *e);

static void settle(struct an_state *an)
{
	struct an_entry *e, *next;
	int i;

	for (i = 0; i < an->nhosts; i++) {
		struct an_host *h = &an->hosts[i];

		if (i == an->ref_host || h->settled)
			continue;
		if (h->nsamples) {
			int64_t *tmp = xcalloc(h->nsamples, sizeof(*tmp));

			memcpy(tmp, h->samples, h->nsamples * sizeof(*tmp));
			qsort(tmp, h->nsamples, sizeof(*tmp), cmp_i64);
			h->offset_ns = tmp[(h->nsamples - 1) / 2];
			free(tmp);
		}
		h->settled = 1;
	}
	an->settled = 1;
	for (e = an->pend_head; e; e = next) {
		next = e->next;
		account(an, e);
	}
	an->pend_head = an->pend_tail = NULL;
	an->npend = 0;
}

static void maybe_settle(struct an_state *an)
{
	int i;

	if (an->npend >= PEND_MAX) {
		settle(an);
		return;
	}
	for (i = 0; i < an->nhosts; i++)
		if (i != an->ref_host && an->hosts[i].nsamples < CLOCK_SAMPLES)
			return;
	settle(an);
}

/* ---- accounting ------------------------------------------------------- */

static int64_t corrected(const struct an_state *an, const struct an_entry *e, int i, int64_t t)
{
	return t + an->hosts[an->procs[e->comm->members[i]].host].offset_ns;
}

static void check_mismatch(struct an_state *an, const struct an_entry *e)
{
	const struct an_slot *ref = NULL;
	struct an_mismatch *m;
	int i, diff = 0, n = 0;

	for (i = 0; i < e->nslots; i++) {
		const struct an_slot *s = &e->slot[i];

		if (!(s->flags & AN_S_ENQ) || (s->flags & AN_S_DROP))
			continue;
		n++;
		if (!ref)
			ref = s;
		else if (s->op != ref->op || s->count != ref->count ||
			 s->dtype != ref->dtype || s->root != ref->root)
			diff = 1;
	}
	if (!diff)
		return;
	an->mism_total++;
	if (an->nmism >= AN_LIST_MAX)
		return;
	an->mism = xrealloc(an->mism, (an->nmism + 1) * sizeof(*an->mism));
	m = &an->mism[an->nmism++];
	m->comm_hash = e->comm->hash;
	m->seq = e->seq;
	m->n = 0;
	m->rank = xcalloc(n, sizeof(*m->rank));
	m->op = xcalloc(n, sizeof(*m->op));
	m->count = xcalloc(n, sizeof(*m->count));
	m->dtype = xcalloc(n, sizeof(*m->dtype));
	m->root = xcalloc(n, sizeof(*m->root));
	for (i = 0; i < e->nslots; i++) {
		const struct an_slot *s = &e->slot[i];

		if (!(s->flags & AN_S_ENQ) || (s->flags & AN_S_DROP))
			continue;
		m->rank[m->n] = an->procs[e->comm->members[i]].rank;
		m->op[m->n] = s->op;
		m->count[m->n] = s->count;
		m->dtype[m->n] = s->dtype;
		m->root[m->n] = s->root;
		m->n++;
	}
}

/* Stragglers: who arrived last, by how much past the (lower) median. */
static void straggle(struct an_state *an, const struct an_entry *e)
{
	int64_t enter[e->nslots], late[e->nslots];
	int idx[e->nslots];
	int i, n = 0, last;
	int64_t tmid = 0;

	for (i = 0; i < e->nslots; i++) {
		const struct an_slot *s = &e->slot[i];

		/* Arrivals are compared only where every rank stamped its
		 * own (the shim stamps the same calls on every rank). */
		if ((s->flags & AN_S_ENQ) && (s->flags & AN_S_COARSE))
			return;
		if ((s->flags & AN_S_ENQ) && !(s->flags & AN_S_DROP)) {
			idx[n] = i;
			enter[n++] = corrected(an, e, i, s->enter_ns);
		}
	}
	if (n < 2 || n < e->nranks)
		return;
	last = an_lateness(enter, n, late);
	if (last < 0)
		return;
	an->straggle_calls++;
	for (i = 0; i < n; i++) {
		struct an_proc *p = &an->procs[e->comm->members[idx[i]]];

		p->coll_calls++;
		p->chance += 1.0 / n;
		if (p->coll_calls == 1)
			p->op1 = e->slot[idx[i]].op;
		else if (p->op1 != e->slot[idx[i]].op)
			p->opmixed = 1;
		if (late[i] == 0)
			tmid = enter[i];
	}
	for (i = 0; i < n; i++)
		an_heat_add(an, &an->procs[e->comm->members[idx[i]]], tmid,
			    late[i] > 0 ? late[i] : 0);
	an->procs[e->comm->members[idx[last]]].late_calls++;
	an->procs[e->comm->members[idx[last]]].late_sum_ns += (double)late[last];
}

static void account(struct an_state *an, struct an_entry *e)
{
	const struct an_slot *first = NULL;
	double best = -1;
	uint64_t bytes = 0;
	struct an_row *row;
	int i;

	for (i = 0; i < e->nslots; i++) {
		const struct an_slot *s = &e->slot[i];

		if (!first && (s->flags & AN_S_ENQ) && !(s->flags & AN_S_DROP))
			first = s;
		if ((s->flags & AN_S_TIMED) && s->dur > 0 && (best < 0 || s->dur < best))
			best = (double)s->dur;
		if (!bytes && s->bytes)
			bytes = s->bytes;
	}
	if (!first)
		first = &e->slot[0];
	if (first->bytes)
		bytes = first->bytes;
	an->matched++;
	check_mismatch(an, e);
	straggle(an, e);
	/* The collective's time is its shortest GPU duration: the ranks that
	 * arrived early also waited for the last one, which straggle()
	 * reports on its own. */
	row = an_row_get(an, first->op, bytes, e->nranks > 0 ? e->nranks : e->comm->nranks);
	row->calls++;
	if (best > 0) {
		row->timed++;
		row->bytes_sum_timed += bytes;
		row->time_sum_ns += best;
		an_qs_add(&row->qs, best);
	} else {
		an->untimed++;
	}
	if (an->opts.chrome)
		an_chrome_entry(an, e);
	free(e);
}

static void finalize(struct an_state *an, struct an_entry *e)
{
	if (an->settled) {
		account(an, e);
		return;
	}
	clock_sample(an, e);
	e->next = NULL;
	if (an->pend_tail)
		an->pend_tail->next = e;
	else
		an->pend_head = e;
	an->pend_tail = e;
	an->npend++;
	maybe_settle(an);
}

/* ---- records ---------------------------------------------------------- */

struct an_state *an_new(const struct an_opts *opts)
{
	struct an_state *an = xcalloc(1, sizeof(*an));

	if (opts)
		an->opts = *opts;
	an->first_ts = INT64_MAX;
	an->last_ts = INT64_MIN;
	an->chrome_first = 1;
	an->heat_w = 1000000;	/* 1 ms bins, doubled as the trace grows */
	an->heat_t0 = INT64_MIN;
	return an;
}

void an_seen(struct an_state *an, const struct an_src *src)
{
	struct an_proc *p = proc_get(an, src);
	struct an_host *h = &an->hosts[src->host];

	an->events++;
	if (src->ts < p->first_ts)
		p->first_ts = src->ts;
	if (src->ts > p->last_ts)
		p->last_ts = src->ts;
	if (src->ts < h->first_ts)
		h->first_ts = src->ts;
	if (src->ts > h->last_ts)
		h->last_ts = src->ts;
	if (src->ts < an->first_ts)
		an->first_ts = src->ts;
	if (src->ts > an->last_ts)
		an->last_ts = src->ts;
}

#define SETSTR(field, v) do { free(p->field); p->field = xstrdup(v); } while (0)

void an_process_info(struct an_state *an, const struct an_src *src,
			const struct an_rec_proc *r)
{
	struct an_proc *p = proc_get(an, src);

	p->has_info = 1;
	p->rank = r->rank;
	p->pid = r->pid ? r->pid : src->vpid;
	p->local_rank = r->local_rank;
	p->world_size = r->world_size;
	p->nccl_version = r->nccl_version;
	p->cudart_version = r->cudart_version;
	p->driver_version = r->driver_version;
	p->numa_node = r->numa_node;
	SETSTR(info_host, r->host && *r->host ? r->host : an->hosts[src->host].name);
	SETSTR(nccl_path, r->nccl_path);
	SETSTR(gpu_pci_bus_id, r->gpu_pci_bus_id);
	SETSTR(socket_ifname, r->socket_ifname);
	SETSTR(env, r->env);
	SETSTR(policy_digest, r->policy_digest);
	SETSTR(rank_source, r->rank_source);
}

void an_comm_init(struct an_state *an, const struct an_src *src,
		     const struct an_rec_init *r)
{
	struct an_pc *pc;

	if (!r->comm_hash)
		return;
	pc = pc_for(an, src, r->comm_hash, r->nranks);
	/* A nonblocking split's size and rank come with its second end. */
	if (r->nranks > 0) {
		pc->comm_rank = r->rank;
		pc->nranks = r->nranks;
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

/* Begun and not known finished.  A nonblocking comm ends twice, and a
 * trace may lack the second end (lost, or recorded before it was written):
 * one used or ended is past its init. */
static int in_init(const struct an_pc *pc)
{
	return pc->init_begun && !pc->init_done && !pc->last_seq && !pc->np2p && !pc->ended;
}

void an_comm_end(struct an_state *an, const struct an_src *src,
		    const struct an_rec_misc *r)
{
	struct an_pc *pc;

	if (!r->comm_hash)
		return;
	pc = pc_for(an, src, r->comm_hash, 0);
	pc->ended = 1;
	/* destroy and finalize wait for the GPU: the untimed tail is done;
	 * abort and revoke do not.  Its completions may follow (held()). */
	if (r->kind && (!strcmp(r->kind, "destroy") || !strcmp(r->kind, "finalize"))) {
		pc->destroyed = 1;
		mark_upto(an, pc, pc->last_seq);
		try_front(an, pc->comm);
	}
}

/* A send or recv as it is posted: pending until known done, and counted
 * per peer, so that a hung one can be matched with what its peer posted
 * (the k-th send from a to b meets b's k-th recv from a). */
static void p2p_enqueue(struct an_state *an, const struct an_src *src,
			const struct an_rec_coll *r, int op)
{
	struct an_pc *pc;
	struct an_p2p_op *o;
	int peer = (int)r->root_or_peer, send = r->op && !strcmp(r->op, "send");
	uint64_t *count;

	if (!r->p2p_seq || !is_p2p_op(r->op) || peer < 0 || peer >= (1 << 24))
		return;
	pc = pc_for(an, src, r->comm_hash, r->nranks);
	if (peer >= pc->npeers) {
		/* nranks as the trace says, within reason: a corrupt one must
		 * not make an array of gigabytes. */
		int n = peer + 1 > r->nranks || r->nranks > (1 << 24) ? peer + 1 : (int)r->nranks;

		pc->sent = xrealloc(pc->sent, (size_t)n * sizeof(*pc->sent));
		pc->recvd = xrealloc(pc->recvd, (size_t)n * sizeof(*pc->recvd));
		memset(pc->sent + pc->npeers, 0, (size_t)(n - pc->npeers) * sizeof(*pc->sent));
		memset(pc->recvd + pc->npeers, 0, (size_t)(n - pc->npeers) * sizeof(*pc->recvd));
		pc->npeers = n;
	}
	/* Dropped (never reached NCCL) or failed: its peer waits for it. */
	if (r->p2p_seq == pc->p2p_drop_seq || (r->result != 0 && r->result != 7))
		return;
	count = send ? &pc->sent[peer] : &pc->recvd[peer];
	++*count;
	if (pc->destroyed || r->p2p_seq <= pc->p2p_done)
		return;
	/* Bounded, as the collectives' window is: with no completions at all
	 * (NCCLGUARD_TIMING=0, graphs) every call would stay until the
	 * destroy.  The oldest is forgotten, and with it any finding. */
	if (pc->np2p - pc->p2p_head >= AN_P2P_PENDING_MAX) {
		pc->p2p_head++;
		an->p2p_forgotten++;
		p2p_settle(pc);
	}
	if (pc->np2p == pc->cap_p2p) {
		pc->cap_p2p = pc->cap_p2p ? pc->cap_p2p * 2 : 64;
		pc->p2p = xrealloc(pc->p2p, (size_t)pc->cap_p2p * sizeof(*pc->p2p));
	}
	o = &pc->p2p[pc->np2p++];
	memset(o, 0, sizeof(*o));
	o->p2p_seq = r->p2p_seq;
	o->coll_before = pc->last_seq;
	o->ordinal = *count;
	o->enter_ns = r->enter_ns;
	o->peer = peer;
	o->op = (uint8_t)op;
	o->send = (uint8_t)send;
}

static void p2p(struct an_state *an, const struct an_src *src, const struct an_rec_coll *r,
		int complete)
{
	struct an_proc *p = proc_get(an, src);
	struct an_pc *pc;
	struct an_row *row;
	int op = an_op_id(an, r->op);

	if (!complete) {
		an->p2p_calls++;
		p2p_enqueue(an, src, r, op);
		return;
	}
	if (r->p2p_seq) {
		pc = pc_for(an, src, r->comm_hash, r->nranks);
		if (r->p2p_seq > pc->p2p_done)
			pc->p2p_done = r->p2p_seq;
		p2p_settle(pc);
	}
	/* Per call, not per pair: a send row times the sends. */
	if (r->op && !strcmp(r->op, "send")) {
		row = an_row_get(an, op, r->bytes, 2);
		row->calls++;
		if (r->duration_ns > 0) {
			row->timed++;
			row->bytes_sum_timed += r->bytes;
			row->time_sum_ns += (double)r->duration_ns;
			an_qs_add(&row->qs, (double)r->duration_ns);
		}
	}
	(void)p;
}

void an_enqueue(struct an_state *an, const struct an_src *src,
		   const struct an_rec_coll *r)
{
	struct an_entry *e, **ep;
	struct an_slot *s;
	struct an_pc *pc;

	if (!r->comm_hash)
		return;
	if (!r->seq) {
		p2p(an, src, r, 0);
		return;
	}
	an->coll_calls++;
	pc = pc_for(an, src, r->comm_hash, r->nranks);
	if (r->seq > pc->last_seq)
		pc->last_seq = r->seq;
	e = entry_get(an, pc->comm, r->seq, 1);
	if (!e) {
		an->late_events++;
		return;
	}
	ep = ring_at(pc->comm, r->seq - pc->comm->lo);
	s = entry_slot(ep, pc->member);
	e = *ep;
	if (s->flags & AN_S_ENQ)
		return;		/* duplicate */
	s->flags |= AN_S_ENQ;
	e->nenq++;
	if (r->nranks > e->nranks)
		e->nranks = (int)r->nranks;
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

/*
 * Busy time, the union of a rank's GPU intervals.  Completions come in the
 * order the watchdog saw them, not in GPU order (calls on other comms and
 * streams, group members, flushes): intervals are kept, and every
 * AN_BUSY_KEEP * 8 of them all but the latest AN_BUSY_KEEP are merged and
 * summed.  A later one that starts before what was summed is clipped to
 * it; AN_BUSY_KEEP calls of disorder is far more than the watchdog makes.
 */
#define AN_BUSY_KEEP 1024

static int cmp_iv(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

static void busy_fold(struct an_proc *p, int keep)
{
	int n = 0, i;

	if (!p->niv)
		return;
	qsort(p->iv, (size_t)p->niv, 2 * sizeof(*p->iv), cmp_iv);
	for (i = 0; i < p->niv; i++) {	/* merge in place */
		int64_t *a = &p->iv[2 * i];

		if (n && a[0] <= p->iv[2 * n - 1]) {
			if (a[1] > p->iv[2 * n - 1])
				p->iv[2 * n - 1] = a[1];
			continue;
		}
		p->iv[2 * n] = a[0];
		p->iv[2 * n + 1] = a[1];
		n++;
	}
	for (i = 0; i < n - keep; i++) {
		p->busy_ns += p->iv[2 * i + 1] - p->iv[2 * i];
		p->folded_until = p->iv[2 * i + 1];
	}
	if (i > 0)
		memmove(p->iv, p->iv + 2 * i, (size_t)(n - i) * 2 * sizeof(*p->iv));
	p->niv = n - i;
}

static void busy_add(struct an_proc *p, int64_t start, int64_t end)
{
	if (end <= p->folded_until)
		return;
	if (start < p->folded_until)
		start = p->folded_until;
	if (p->niv == p->cap_iv) {
		p->cap_iv = p->cap_iv ? p->cap_iv * 2 : 64;
		p->iv = xrealloc(p->iv, (size_t)p->cap_iv * 2 * sizeof(*p->iv));
	}
	p->iv[2 * p->niv] = start;
	p->iv[2 * p->niv + 1] = end;
	if (++p->niv >= AN_BUSY_KEEP * 8)
		busy_fold(p, AN_BUSY_KEEP);
}

void an_complete(struct an_state *an, const struct an_src *src,
		    const struct an_rec_coll *r)
{
	struct an_proc *p = proc_get(an, src);
	struct an_entry *e, **ep;
	struct an_slot *s;
	struct an_pc *pc;

	if (r->gpu_end_ns > r->gpu_start_ns && r->gpu_start_ns > 0)
		busy_add(p, r->gpu_start_ns, r->gpu_end_ns);
	if (!r->comm_hash)
		return;
	if (!r->seq) {
		p2p(an, src, r, 1);
		return;
	}
	pc = pc_for(an, src, r->comm_hash, r->nranks);
	e = entry_get(an, pc->comm, r->seq, 1);
	if (!e) {
		an->late_events++;
		return;
	}
	ep = ring_at(pc->comm, r->seq - pc->comm->lo);
	s = entry_slot(ep, pc->member);
	e = *ep;
	if (r->nranks > e->nranks)
		e->nranks = (int)r->nranks;
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
	if (!(s->flags & AN_S_DROP))
		mark_done(e, s);
	mark_upto(an, pc, r->seq);
	try_front(an, pc->comm);
}

void an_timeout(struct an_state *an, const struct an_src *src,
		   const struct an_rec_misc *r)
{
	struct an_proc *p = proc_get(an, src);
	struct an_timeout_row *t;

	if (r->comm_hash) {
		struct an_comm *c = comm_get(an, r->comm_hash, 0);
		struct an_pc *pc = pc_for(an, src, r->comm_hash, 0);
		uint64_t stuck = 0;

		c->timeouts++;
		if (src->ts > c->last_timeout_ts)
			c->last_timeout_ts = src->ts;
		/* A watchdog names the oldest call of the comm it could not
		 * confirm: every call before it ran, of either kind. */
		if (r->seq && is_p2p_op(r->op)) {
			for (int k = pc->p2p_head; k < pc->np2p; k++)
				if (pc->p2p[k].p2p_seq == r->seq) {
					stuck = pc->p2p[k].coll_before + 1;
					break;
				}
			if (r->seq - 1 > pc->p2p_done)
				pc->p2p_done = r->seq - 1;
		} else if (r->seq) {
			stuck = r->seq;
			if (r->seq > pc->coll_confirmed)
				pc->coll_confirmed = r->seq;
		}
		p2p_settle(pc);
		if (stuck && (!c->stuck_seq || stuck < c->stuck_seq))
			c->stuck_seq = stuck;
	}
	if (an->ntimeouts >= AN_LIST_MAX)
		return;
	an->timeouts = xrealloc(an->timeouts, (an->ntimeouts + 1) * sizeof(*an->timeouts));
	t = &an->timeouts[an->ntimeouts++];
	t->rank = (int)(p - an->procs);	/* proc id; a rank once the trace is read */
	t->comm_hash = r->comm_hash;
	t->seq = r->seq;
	t->waited_ns = r->waited_ns;
	t->op = xstrdup(r->op);
	t->action = xstrdup(r->action);
	t->what = xstrdup(r->what);
	t->ts = src->ts;
}

void an_policy(struct an_state *an, const struct an_src *src,
		  const struct an_rec_misc *r)
{
	struct an_proc *p = proc_get(an, src);
	struct an_policy_row *row = NULL;
	int i, pid = (int)(p - an->procs);

	for (i = 0; i < an->npolicy; i++) {
		struct an_policy_row *q = &an->policy[i];

		if (!strcmp(q->key, r->key ? r->key : "") &&
		    !strcmp(q->action, r->action ? r->action : "") &&
		    !strcmp(q->user_value, r->user_value ? r->user_value : "") &&
		    !strcmp(q->effective_value, r->effective_value ? r->effective_value : "")) {
			row = q;
			break;
		}
	}
	if (!row) {
		if (an->npolicy >= AN_LIST_MAX)
			return;
		an->policy = xrealloc(an->policy, (an->npolicy + 1) * sizeof(*an->policy));
		row = &an->policy[an->npolicy++];
		memset(row, 0, sizeof(*row));
		row->key = xstrdup(r->key);
		row->action = xstrdup(r->action);
		row->user_value = xstrdup(r->user_value);
		row->effective_value = xstrdup(r->effective_value);
	}
	for (i = 0; i < row->nranks; i++)
		if (row->ranks[i] == pid)
			return;
	row->ranks = xrealloc(row->ranks, (row->nranks + 1) * sizeof(*row->ranks));
	row->ranks[row->nranks++] = pid;
}

void an_inject(struct an_state *an, const struct an_src *src,
		  const struct an_rec_misc *r)
{
	struct an_proc *p = proc_get(an, src);
	struct an_inject_row *in;

	if (r->comm_hash && r->seq && r->kind &&
	    (!strcmp(r->kind, "drop") || !strcmp(r->kind, "error"))) {
		struct an_pc *pc = pc_for(an, src, r->comm_hash, 0);

		/* A send's or recv's seq is its p2p seq. */
		if (is_p2p_op(r->op))
			pc->p2p_drop_seq = r->seq;
		else
			pc->drop_seq = r->seq;
	}
	if (an->ninjects >= AN_LIST_MAX)
		return;
	an->injects = xrealloc(an->injects, (an->ninjects + 1) * sizeof(*an->injects));
	in = &an->injects[an->ninjects++];
	in->rank = (int)(p - an->procs);
	in->comm_hash = r->comm_hash;
	in->seq = r->seq;
	in->kind = xstrdup(r->kind);
	in->op = xstrdup(r->op);
	in->detail = xstrdup(r->detail);
}

void an_lost(struct an_state *an, uint64_t n)
{
	an->lost_events += n;
}

/* ---- end of trace ----------------------------------------------------- */

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
	seen = xcalloc((size_t)c->nranks, 1);
	for (i = 0; i < c->nmembers; i++) {
		struct an_proc *p = &an->procs[c->members[i]];
		struct an_pc *pc = &an->pcs[c->member_pc[i]];

		if (pc->comm_rank >= 0 && pc->comm_rank < c->nranks)
			seen[pc->comm_rank] = 1;
		if (pc->comm_rank != p->rank || p->world_size != c->nranks)
			world = 0;
	}
	h->miss_comm = xcalloc((size_t)c->nranks, sizeof(*h->miss_comm));
	for (i = 0; i < c->nranks; i++)
		if (!seen[i])
			h->miss_comm[h->nmiss_comm++] = i;
	free(seen);
	if (!world)
		return;
	free(h->miss);
	h->miss = xcalloc((size_t)h->nmiss_comm + 1, sizeof(*h->miss));
	for (i = 0; i < h->nmiss_comm; i++) {
		int traced = 0;

		for (int j = 0; j < an->nprocs && !traced; j++)
			traced = an->procs[j].rank == h->miss_comm[i];
		h->miss[h->nmiss++] = h->miss_comm[i];
		h->miss_untraced += !traced;
	}
	h->unknown_missing = 0;
}

static void add_hang(struct an_state *an, struct an_comm *c, const struct an_entry *e,
		     int op, uint64_t queued_after, int64_t age, int timed_out)
{
	struct an_hang *h;
	int i;

	an->hangs = xrealloc(an->hangs, (an->nhangs + 1) * sizeof(*an->hangs));
	h = &an->hangs[an->nhangs++];
	memset(h, 0, sizeof(*h));
	h->comm_hash = c->hash;
	h->seq = e ? e->seq : 0;
	h->op = op;
	h->queued_after = queued_after;
	h->age_ns = age;
	h->timed_out = timed_out;
	h->wait = xcalloc(c->nmembers, sizeof(*h->wait));
	h->miss = xcalloc(c->nmembers, sizeof(*h->miss));
	h->last_rank = xcalloc(c->nmembers, sizeof(*h->last_rank));
	h->last_seq = xcalloc(c->nmembers, sizeof(*h->last_seq));
	for (i = 0; i < c->nmembers; i++) {
		struct an_proc *p = &an->procs[c->members[i]];
		uint64_t key = ((uint64_t)c->members[i] << 32) ^
			(uint64_t)an_map_get(&an->comm_map, c->hash);
		struct an_pc *pc = &an->pcs[an_map_get(&an->pc_map, key)];
		const struct an_slot *s = e && i < e->nslots ? &e->slot[i] : NULL;

		h->last_rank[h->nlast] = p->rank;
		h->last_seq[h->nlast++] = pc->last_seq;
		if (e) {
			if (s && (s->flags & AN_S_ENQ) && !(s->flags & AN_S_DROP))
				h->wait[h->nwait++] = p->rank;
			else
				h->miss[h->nmiss++] = p->rank;
		} else {
			if (in_init(pc))
				h->wait[h->nwait++] = p->rank;
		}
	}
	if (c->nranks > c->nmembers)
		h->unknown_missing = c->nranks - c->nmembers;
	if (!e)
		init_missing(an, c, h);
	/* last_seq_by_rank in rank order */
	for (i = 1; i < h->nlast; i++)
		for (int j = i; j > 0 && h->last_rank[j] < h->last_rank[j - 1]; j--) {
			int64_t r = h->last_rank[j];
			uint64_t s = h->last_seq[j];

			h->last_rank[j] = h->last_rank[j - 1];
			h->last_seq[j] = h->last_seq[j - 1];
			h->last_rank[j - 1] = r;
			h->last_seq[j - 1] = s;
		}
}

static void finish_comm(struct an_state *an, struct an_comm *c)
{
	struct an_entry *hang = NULL;
	uint64_t after = 0;
	int64_t age = 0;
	int op = 0, timed_out = 0;

	while (c->nring) {
		struct an_entry *e = *ring_at(c, 0);
		int64_t first;

		if (!e) {
			pop_front(an, c, 0);
			continue;
		}
		if (hang) {
			/* Queued behind the hang: never ran. */
			after++;
			*ring_at(c, 0) = NULL;
			free(e);
			pop_front(an, c, 0);
			continue;
		}
		/* Some rank finished it, so every rank took part; or it went
		 * untimed (sampled) but the watchdogs confirmed it: their
		 * timeouts name the first call they could not confirm. */
		if (e->ndone > 0 || ready(e) || e->seq < c->stuck_seq) {
			pop_front(an, c, 0);
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
		if (age != INT64_MAX && (timed_out || age >= HANG_AGE_NS)) {
			hang = e;
			*ring_at(c, 0) = NULL;
			pop_front(an, c, 0);
			continue;
		}
		/* Trace stopped while it ran: in flight, not hung. */
		if (age != INT64_MAX)
			an->inflight_end++;
		*ring_at(c, 0) = NULL;
		free(e);
		pop_front(an, c, 0);
	}
	if (hang) {
		add_hang(an, c, hang, op, after, age, timed_out);
		free(hang);
	}
}

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
	return o->send ? peer->recvd[pc->comm_rank] : peer->sent[pc->comm_rank];
}

static void add_p2p_hang(struct an_state *an, struct an_comm *c, struct an_pc *pc,
			 const struct an_p2p_op *o, const int64_t *wait, int nwait,
			 int timed_out)
{
	struct an_pc *peer = member_with_comm_rank(an, c, o->peer);
	struct an_hang *h;

	an->hangs = xrealloc(an->hangs, (an->nhangs + 1) * sizeof(*an->hangs));
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
	h->wait = xcalloc((size_t)nwait, sizeof(*h->wait));
	memcpy(h->wait, wait, (size_t)nwait * sizeof(*wait));
	h->nwait = nwait;
	h->miss = xcalloc(1, sizeof(*h->miss));
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

/* How many sends (send = 1) or recvs to comm rank `to` pc is known to have
 * completed: all it posted but those still pending. */
static uint64_t p2p_settled(const struct an_pc *pc, int send, int64_t to)
{
	for (int k = pc->p2p_head; k < pc->np2p; k++)
		if (pc->p2p[k].send == send && pc->p2p[k].peer == to)
			return pc->p2p[k].ordinal - 1;
	if (to < 0 || to >= pc->npeers)
		return 0;
	return send ? pc->sent[to] : pc->recvd[to];
}

/* A call whose match on the peer is known complete completed too (its
 * own completion may have gone untimed), and so did everything before it
 * on its rank; that can settle more of the peer's calls: round again
 * until nothing moves. */
#define AN_P2P_SCAN_MAX 4096
static void p2p_settle_by_peers(struct an_state *an, struct an_comm *c)
{
	for (int pass = 0, moved = 1; moved && pass < 64; pass++) {
		moved = 0;
		for (int i = 0; i < c->nmembers; i++) {
			struct an_pc *pc = &an->pcs[c->member_pc[i]];
			int last = -1, end;

			p2p_settle(pc);
			end = pc->np2p - pc->p2p_head > AN_P2P_SCAN_MAX ?
				pc->p2p_head + AN_P2P_SCAN_MAX : pc->np2p;
			for (int k = pc->p2p_head; k < end && pc->comm_rank >= 0; k++) {
				const struct an_p2p_op *o = &pc->p2p[k];
				struct an_pc *peer = member_with_comm_rank(an, c, o->peer);

				if (peer && p2p_settled(peer, !o->send, pc->comm_rank) >= o->ordinal)
					last = k;
			}
			if (last >= 0) {
				pc->p2p_head = last + 1;
				moved = 1;
			}
		}
	}
}

static void finish_p2p(struct an_state *an, struct an_comm *c)
{
	int64_t *wait = xcalloc((size_t)c->nmembers + 1, sizeof(*wait));
	struct an_pc *first = NULL;
	int nwait = 0, nreported = 0, first_timed = 0;

	p2p_settle_by_peers(an, c);

	for (int i = 0; i < c->nmembers; i++) {
		struct an_pc *pc = &an->pcs[c->member_pc[i]];
		const struct an_p2p_op *o;
		int timed_out;

		p2p_settle(pc);
		if (pc->p2p_head >= pc->np2p)
			continue;
		o = &pc->p2p[pc->p2p_head];
		timed_out = c->timeouts && c->last_timeout_ts >= o->enter_ns;
		if (!timed_out && an->last_ts - o->enter_ns < HANG_AGE_NS) {
			an->inflight_p2p++;
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

static void finish_inits(struct an_state *an)
{
	for (int ci = 0; ci < an->ncomms; ci++) {
		struct an_comm *c = an->comms[ci];
		int64_t oldest = INT64_MAX;
		int waiting = 0, timed_out;

		for (int i = 0; i < c->nmembers; i++) {
			uint64_t key = ((uint64_t)c->members[i] << 32) ^ (uint64_t)ci;
			struct an_pc *pc = &an->pcs[an_map_get(&an->pc_map, key)];

			if (in_init(pc)) {
				waiting++;
				if (pc->init_ts < oldest)
					oldest = pc->init_ts;
			}
		}
		timed_out = c->timeouts && c->last_timeout_ts >= oldest;
		if (waiting && (timed_out || an->last_ts - oldest >= HANG_AGE_NS))
			add_hang(an, c, NULL, an_op_id(an, "init"), 0, an->last_ts - oldest,
				 timed_out);
	}
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

int an_finish(struct an_state *an)
{
	int i, j;

	an->finishing = 1;
	if (!an->settled)
		settle(an);
	for (i = 0; i < an->ncomms; i++) {
		finish_comm(an, an->comms[i]);
		finish_p2p(an, an->comms[i]);
	}
	finish_inits(an);
	if (an->nhangs)
		qsort(an->hangs, an->nhangs, sizeof(*an->hangs), cmp_hang);
	for (i = 0; i < an->ntimeouts; i++)
		an->timeouts[i].rank = an->procs[an->timeouts[i].rank].rank;
	if (an->ntimeouts)
		qsort(an->timeouts, an->ntimeouts, sizeof(*an->timeouts), cmp_timeout);
	for (i = 0; i < an->nprocs; i++)
		busy_fold(&an->procs[i], 0);
	/* Timeouts, injections and policy rows were keyed by proc id. */
	for (i = 0; i < an->ninjects; i++)
		an->injects[i].rank = an->procs[an->injects[i].rank].rank;
	for (i = 0; i < an->npolicy; i++) {
		struct an_policy_row *r = &an->policy[i];

		for (j = 0; j < r->nranks; j++)
			r->ranks[j] = an->procs[r->ranks[j]].rank;
		qsort(r->ranks, r->nranks, sizeof(*r->ranks), cmp_i64);
	}
	an_sort_rows(an);
	an_config_mismatches(an);
	if (an->opts.chrome)
		return an_chrome_close(an);
	return 0;
}

static const struct an_state *order_an;

static int cmp_rank(const void *a, const void *b)
{
	const struct an_proc *x = &order_an->procs[*(const int *)a];
	const struct an_proc *y = &order_an->procs[*(const int *)b];
	int64_t rx = x->rank < 0 ? INT64_MAX : x->rank, ry = y->rank < 0 ? INT64_MAX : y->rank;

	if (rx != ry)
		return rx < ry ? -1 : 1;
	if (x->host != y->host)
		return x->host - y->host;
	return (x->vpid > y->vpid) - (x->vpid < y->vpid);
}

int *an_rank_order(const struct an_state *an)
{
	int *idx = xcalloc(an->nprocs, sizeof(*idx));

	for (int i = 0; i < an->nprocs; i++)
		idx[i] = i;
	order_an = an;
	qsort(idx, an->nprocs, sizeof(*idx), cmp_rank);
	order_an = NULL;
	return idx;
}

void an_free(struct an_state *an)
{
	int i, j;

	if (!an)
		return;
	while (an->pend_head) {
		struct an_entry *e = an->pend_head;

		an->pend_head = e->next;
		free(e);
	}
	for (i = 0; i < an->ncomms; i++) {
		struct an_comm *c = an->comms[i];

		for (uint32_t k = 0; k < c->nring; k++)
			free(*ring_at(c, k));
		free(c->ring);
		free(c->members);
		free(c->member_pc);
		free(c);
	}
	free(an->comms);
	for (i = 0; i < an->nprocs; i++) {
		struct an_proc *p = &an->procs[i];

		free(p->info_host);
		free(p->nccl_path);
		free(p->gpu_pci_bus_id);
		free(p->socket_ifname);
		free(p->env);
		free(p->policy_digest);
		free(p->rank_source);
		free(p->heat_sum);
		free(p->iv);
		free(p->heat_n);
		free(p->tracks);
	}
	free(an->procs);
	for (i = 0; i < an->nhosts; i++) {
		free(an->hosts[i].name);
		free(an->hosts[i].samples);
	}
	free(an->hosts);
	for (i = 0; i < an->nops; i++)
		free(an->ops[i]);
	for (i = 0; i < an->nrows; i++)
		an_qs_free(&an->rows[i].qs);
	free(an->rows);
	for (i = 0; i < an->nhangs; i++) {
		free(an->hangs[i].wait);
		free(an->hangs[i].miss);
		free(an->hangs[i].miss_comm);
		free(an->hangs[i].last_rank);
		free(an->hangs[i].last_seq);
	}
	free(an->hangs);
	for (i = 0; i < an->nmism; i++) {
		free(an->mism[i].rank);
		free(an->mism[i].op);
		free(an->mism[i].count);
		free(an->mism[i].dtype);
		free(an->mism[i].root);
	}
	free(an->mism);
	for (i = 0; i < an->ntimeouts; i++) {
		free(an->timeouts[i].op);
		free(an->timeouts[i].action);
		free(an->timeouts[i].what);
	}
	free(an->timeouts);
	for (i = 0; i < an->ninjects; i++) {
		free(an->injects[i].kind);
		free(an->injects[i].op);
		free(an->injects[i].detail);
	}
	free(an->injects);
	for (i = 0; i < an->npolicy; i++) {
		free(an->policy[i].key);
		free(an->policy[i].action);
		free(an->policy[i].user_value);
		free(an->policy[i].effective_value);
		free(an->policy[i].ranks);
	}
	free(an->policy);
	for (i = 0; i < an->ncfg; i++) {
		for (j = 0; j < an->cfg[i].n; j++)
			free(an->cfg[i].val[j]);
		free(an->cfg[i].key);
		free(an->cfg[i].val);
		free(an->cfg[i].rank);
	}
	free(an->cfg);
	an_map_free(&an->proc_map);
	an_map_free(&an->comm_map);
	an_map_free(&an->pc_map);
	for (i = 0; i < an->npcs; i++) {
		free(an->pcs[i].p2p);
		free(an->pcs[i].sent);
		free(an->pcs[i].recvd);
	}
	free(an->pcs);
	free(an);
}
