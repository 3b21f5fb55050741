/*
 * The progress tracker.  Every collective has a per-communicator seq that
 * all ranks share (docs/design.md, "Interposition"), so the ranks of a
 * communicator are in step when their last entered seqs agree.  When they do
 * not, the lowest of them, L, names the pending collective L+1: the ranks
 * past L wait in it, the ranks at L have not entered it.  That is a hang
 * once the first rank's entry into L+1 is older than --stuck on its own
 * host's clock.  An init begun and not finished is the same on the init.
 *
 * Times: an event's time and the times it carries are on its host's trace
 * clock; hosts' clocks differ, so a wait is measured on the waiting
 * rank's host only, against that host's latest time (the last event or
 * relayd beacon of its session, carried forward on our monotonic clock).
 * Neither our own clock nor the offset between hosts enters it.
 *
 * Completions are sampled by the shim (a few a second per communicator),
 * so done_seq only ever shows progress, never its absence.
 *
 * A watch that attached late knows the waiting ranks by their
 * heartbeats (beat.c), which stand for the events it missed.
 */
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "lv_priv.h"

#define INIT_SEQ	UINT64_MAX	/* hang_seq of a hung init */

void lv_state_init(struct lv_state *st, const struct ng_watch_opts *opts)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_init(&st->lock, NULL);
	st->opts = *opts;
	st->mx.on = opts->metrics != NULL;
	if (opts->job) {
		st->want_job = 1;
		st->want_tag = strcmp(opts->job, "none") ? ng_job_tag(opts->job) : 0;
	}
}

void lv_state_free(struct lv_state *st)
{
	for (int i = 0; i < st->nhosts; i++)
		free(st->hosts[i].name);
	free(st->hosts);
	for (int i = 0; i < st->ncomms; i++) {
		struct lv_comm *c = st->comms[i];

		free(c->m);
		free(c->ring);
		lv_fp_comm_free(c->fp);
		lv_strag_comm_free(c->strag);
		ng_u64map_free(&c->member_of);
		free(c);
	}
	free(st->comms);
	free(st->procs);
	free(st->clocks);
	free(st->timeouts);
	lv_hw_free(&st->hw);
	lv_fp_free(&st->fp);
	lv_mx_free(&st->mx);
	for (int i = 0; i < st->nops; i++)
		free(st->ops[i]);
	ng_u64map_free(&st->proc_map);
	ng_u64map_free(&st->comm_map);
	ng_u64map_free(&st->host_map);
	pthread_mutex_destroy(&st->lock);
}

/* Hosts are few (one per session): a list. */
int lv_host_id(struct lv_state *st, const char *name)
{
	for (int i = 0; i < st->nhosts; i++)
		if (!strcmp(st->hosts[i].name, name))
			return i;
	st->hosts = lv_xrealloc(st->hosts, (st->nhosts + 1) * sizeof(*st->hosts));
	memset(&st->hosts[st->nhosts], 0, sizeof(*st->hosts));
	st->hosts[st->nhosts].name = lv_xstrdup(name);
	return st->nhosts++;
}

static int op_id(struct lv_state *st, const char *op)
{
	for (int i = 0; i < st->nops; i++)
		if (!strcmp(st->ops[i], op))
			return i;
	if (st->nops == LV_OPS_MAX)
		return LV_OPS_MAX - 1;
	st->ops[st->nops] = lv_xstrdup(op);
	return st->nops++;
}

const char *lv_op_name(const struct lv_state *st, int op)
{
	return op >= 0 && op < st->nops ? st->ops[op] : "?";
}

static int job_of(struct lv_state *st, uint64_t tag)
{
	for (int i = 0; i < st->njobs; i++)
		if (st->jobs[i].tag == tag)
			return i;
	if (st->njobs == LV_JOBS_MAX)
		return -1;
	st->jobs[st->njobs].tag = tag;
	return st->njobs++;
}

int lv_shown_job(const struct lv_state *st)
{
	int best = -1;

	for (int i = 0; i < st->njobs; i++) {
		if (st->want_job) {
			if (st->jobs[i].tag == st->want_tag)
				return i;
			continue;
		}
		if (best < 0 || st->jobs[i].nproc > st->jobs[best].nproc)
			best = i;
	}
	return best;
}

static struct lv_proc *proc_get(struct lv_state *st, int sess, const struct ev_src *src)
{
	uint64_t key = lv_mix((uint64_t)src->host, (uint64_t)src->vpid);
	int32_t i = ng_u64map_get(&st->proc_map, key);
	struct lv_proc *p;

	if (i >= 0)
		return &st->procs[i];
	st->procs = lv_xrealloc(st->procs, (st->nprocs + 1) * sizeof(*st->procs));
	p = &st->procs[st->nprocs];
	memset(p, 0, sizeof(*p));
	p->host = src->host;
	p->sess = sess;
	p->vpid = src->vpid;
	p->pid = src->vpid;
	p->rank = -1;
	p->job = job_of(st, src->job);
	if (p->job >= 0)
		st->jobs[p->job].nproc++;
	lv_map_put(&st->proc_map, key, st->nprocs);
	return &st->procs[st->nprocs++];
}

static struct lv_comm *comm_get(struct lv_state *st, int job, uint64_t hash, int64_t nranks)
{
	uint64_t key = lv_mix(hash, (uint64_t)job);
	int32_t i = ng_u64map_get(&st->comm_map, key);
	struct lv_comm *c;

	if (i >= 0) {
		c = st->comms[i];
		if (nranks > c->nranks)
			c->nranks = nranks;
		return c;
	}
	c = lv_xcalloc(1, sizeof(*c));
	c->hash = hash;
	c->job = job;
	c->nranks = nranks;
	c->ring = lv_xcalloc(LV_RING, sizeof(*c->ring));
	st->comms = lv_xrealloc(st->comms, (st->ncomms + 1) * sizeof(*st->comms));
	st->comms[st->ncomms] = c;
	lv_map_put(&st->comm_map, key, st->ncomms++);
	return c;
}

static struct lv_member *member_get(struct lv_comm *c, int proc)
{
	int32_t i = ng_u64map_get(&c->member_of, (uint64_t)proc);
	struct lv_member *m;

	if (i >= 0)
		return &c->m[i];
	if (c->nm == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 8;
		c->m = lv_xrealloc(c->m, c->cap * sizeof(*c->m));
	}
	m = &c->m[c->nm];
	memset(m, 0, sizeof(*m));
	m->proc = proc;
	m->comm_rank = -1;
	lv_map_put(&c->member_of, (uint64_t)proc, c->nm);
	return &c->m[c->nm++];
}

static void timeout_note(struct lv_state *st, int proc, const struct ev_rec_misc *r)
{
	struct lv_timeout *t;

	if (st->ntimeouts >= 256) {
		st->timeouts_more++;
		return;
	}
	st->timeouts = lv_xrealloc(st->timeouts, (st->ntimeouts + 1) * sizeof(*st->timeouts));
	t = &st->timeouts[st->ntimeouts++];
	t->proc = proc;
	t->comm = r->comm_hash;
	t->seq = r->seq;
	t->waited_ns = r->waited_ns;
	snprintf(t->op, sizeof(t->op), "%s", r->op);
	snprintf(t->action, sizeof(t->action), "%s", r->action);
	snprintf(t->what, sizeof(t->what), "%s", r->what);
}

static void enqueue(struct lv_state *st, int pi, const struct ev_rec_coll *r)
{
	struct lv_proc *p = &st->procs[pi];
	struct lv_comm *c = comm_get(st, p->job, r->comm_hash, r->nranks);
	struct lv_member *m = member_get(c, pi);
	struct lv_slot *s = &c->ring[r->seq & (LV_RING - 1)];

	if (r->seq > m->last_seq) {
		m->last_seq = r->seq;
		m->last_enter = r->enter_ns;
	}
	/* The earliest entry, where times compare: on one host's clock.
	 * Across hosts the first to reach us stands. */
	if (s->seq != r->seq) {
		s->op = (uint8_t)op_id(st, r->op);
		s->seq = r->seq;
		s->enter = r->enter_ns;
		s->proc = pi;
	} else if (r->enter_ns < s->enter && st->procs[s->proc].sess == p->sess) {
		s->enter = r->enter_ns;
		s->proc = pi;
	}
	lv_strag_enter(st, c, (int)(m - c->m), r);
}

void lv_event(struct lv_state *st, int sess, const struct ev_event *ev)
{
	struct lv_proc *p;
	struct lv_comm *c;
	struct lv_member *m;
	int pi;

	st->events++;
	if (st->want_job && ev->src.job != st->want_tag) {
		st->dropped++;
		return;
	}
	/* The host's sampler: its host's, not a rank's (no process kept). */
	if (ev->kind == EV_HW_CHANGE || ev->kind == EV_HW_DEVICE || ev->kind == EV_HW_SAMPLE) {
		int j = job_of(st, ev->src.job);

		if (j < 0)
			return;
		if (ev->kind == EV_HW_CHANGE)
			lv_hw_change(&st->hw, ev->src.host, j, &ev->r.hw);
		else if (ev->kind == EV_HW_DEVICE)
			lv_hw_device(&st->hw, ev->src.host, j, &ev->r.hw);
		else
			lv_hw_sample(&st->hw, ev->src.host, j, &ev->r.hw);
		lv_mx_event(st, -1, j, ev);
		return;
	}
	p = proc_get(st, sess, &ev->src);
	if (p->job < 0)
		return;
	pi = (int)(p - st->procs);
	if (ev->src.ts > p->heard_ts)
		p->heard_ts = ev->src.ts;
	switch (ev->kind) {
	case EV_PROC: {
		struct lv_job *j = &st->jobs[p->job];

		p->has_info = 1;
		p->rank = ev->r.proc.rank;
		if (ev->r.proc.pid)
			p->pid = ev->r.proc.pid;
		if (ev->r.proc.world_size > j->world_size)
			j->world_size = ev->r.proc.world_size;
		if (!j->id[0] && ev->job_id[0])
			snprintf(j->id, sizeof(j->id), "%s", ev->job_id);
		break;
	}
	case EV_INIT_BEGIN:
	case EV_INIT_END:
		c = comm_get(st, p->job, ev->r.init.comm_hash, ev->r.init.nranks);
		m = member_get(c, pi);
		if (ev->r.init.rank >= 0)
			m->comm_rank = ev->r.init.rank;
		if (ev->kind == EV_INIT_END)
			m->init_end = ev->src.ts ? ev->src.ts : 1;
		else
			m->init_begin = ev->src.ts ? ev->src.ts : 1;
		break;
	case EV_ENQ:
		if (ev->r.coll.seq)
			enqueue(st, pi, &ev->r.coll);
		break;
	case EV_DONE:
		if (!ev->r.coll.seq)
			break;
		c = comm_get(st, p->job, ev->r.coll.comm_hash, ev->r.coll.nranks);
		m = member_get(c, pi);
		if (ev->r.coll.seq > m->done_seq)
			m->done_seq = ev->r.coll.seq;
		/* its enqueue lost or before we attached: it entered it
		 * (an untimed call's completion has no GPU start) */
		if (ev->r.coll.seq > m->last_seq) {
			m->last_seq = ev->r.coll.seq;
			m->last_enter = ev->r.coll.gpu_start_ns ? (int64_t)ev->r.coll.gpu_start_ns :
								  ev->src.ts;
		}
		break;
	case EV_COMM_END:
		c = comm_get(st, p->job, ev->r.misc.comm_hash, 0);
		member_get(c, pi)->ended = 1;
		break;
	case EV_TIMEOUT:
		timeout_note(st, pi, &ev->r.misc);
		break;
	case EV_FPRINT:
		c = comm_get(st, p->job, ev->r.fp.comm_hash, ev->r.fp.nranks);
		lv_fp_add(st, c, pi, &ev->r.fp, lv_mono_ns());
		break;
	case EV_HEARTBEAT: {
		struct ev_rec_coll entered;

		c = ev->r.hb.comm_hash ? comm_get(st, p->job, ev->r.hb.comm_hash, ev->r.hb.nranks) :
					 NULL;
		if (lv_beat(st, p, c, c ? member_get(c, pi) : NULL, ev, &entered))
			enqueue(st, pi, &entered);
		break;
	}
	default:
		break;
	}
	lv_mx_event(st, pi, p->job, ev);
}

void lv_clock_at(struct lv_state *st, int sess, int64_t ts, int64_t mono, int event)
{
	struct lv_clock *k;

	if (sess >= st->nclocks) {
		st->clocks = lv_xrealloc(st->clocks, (sess + 1) * sizeof(*st->clocks));
		memset(st->clocks + st->nclocks, 0, (sess + 1 - st->nclocks) * sizeof(*st->clocks));
		st->nclocks = sess + 1;
	}
	k = &st->clocks[sess];
	if (ts >= k->ts) {
		k->ts = ts;
		k->mono = mono;
	}
	if (event && ts > k->last_event_ts)
		k->last_event_ts = ts;
}

int64_t lv_sess_now(const struct lv_state *st, int sess, int64_t mono)
{
	const struct lv_clock *k;

	if (sess < 0 || sess >= st->nclocks || !st->clocks[sess].ts)
		return 0;
	k = &st->clocks[sess];
	return k->ts + (mono - k->mono);
}

/* ---- hangs ------------------------------------------------------------ */

/* How long proc has waited since t, on its host's clock; -1: unknown. */
static double waited(const struct lv_state *st, int proc, int64_t t, int64_t mono)
{
	int64_t now = lv_sess_now(st, st->procs[proc].sess, mono);

	if (!now || !t)
		return -1;
	return now > t ? (double)(now - t) / 1e9 : 0;
}

/* The job's processes that announced a rank and are no member of c: on a
 * communicator of the whole job they have not joined it. */
static void absent_procs(const struct lv_state *st, const struct lv_comm *c, struct lv_hang *h)
{
	if (c->nranks != st->jobs[c->job].world_size)
		return;
	for (int i = 0; i < st->nprocs; i++) {
		const struct lv_proc *p = &st->procs[i];

		if (p->job != c->job || !p->has_info || p->rank < 0 ||
		    ng_u64map_get(&c->member_of, (uint64_t)i) >= 0)
			continue;
		h->miss[h->nmiss++] = i;
	}
}

static void hang_alloc(const struct lv_state *st, const struct lv_comm *c, struct lv_hang *h)
{
	memset(h, 0, sizeof(*h));
	h->comm = c;
	h->wait = lv_xcalloc(c->nm, sizeof(int));
	h->miss = lv_xcalloc(c->nm + st->nprocs, sizeof(int));
}

static void hang_done(struct lv_hang *h)
{
	int64_t seen = h->nwait + h->nmiss;

	h->unseen = h->comm->nranks > seen ? h->comm->nranks - seen : 0;
}

/* An init some members began long ago and have not finished. */
static int init_hang(struct lv_state *st, struct lv_comm *c, int64_t mono, struct lv_hang *h)
{
	double oldest = -1;
	int64_t began = 0;
	int open = 0;

	for (int i = 0; i < c->nm; i++) {
		double w;

		const struct lv_member *m = &c->m[i];

		if (!m->init_begin || m->init_end || m->last_seq)
			continue;
		open++;
		w = waited(st, m->proc, m->init_begin, mono);
		if (w > oldest) {
			oldest = w;
			began = m->init_begin;
		}
	}
	if (!open || oldest < st->opts.stuck_s)
		return 0;
	hang_alloc(st, c, h);
	h->op = "init";
	h->waited_s = oldest;
	h->began = began;
	for (int i = 0; i < c->nm; i++)
		if (c->m[i].init_begin && !c->m[i].init_end && !c->m[i].last_seq)
			h->wait[h->nwait++] = c->m[i].proc;
	absent_procs(st, c, h);
	hang_done(h);
	return 1;
}

/* The pending collective of c, if it has waited past --stuck. */
static int coll_hang(struct lv_state *st, struct lv_comm *c, int64_t mono, struct lv_hang *h)
{
	uint64_t lo = UINT64_MAX, hi = 0, pend;
	const struct lv_slot *s;
	double w;

	for (int i = 0; i < c->nm; i++) {
		if (c->m[i].last_seq < lo)
			lo = c->m[i].last_seq;
		if (c->m[i].last_seq > hi)
			hi = c->m[i].last_seq;
	}
	/* all in step: pending only where heartbeats say so */
	pend = !c->nm ? 0 : hi > lo ? lo + 1 : lv_beat_pending(c, hi, mono);
	if (!pend) {
		c->pending_seq = 0;
		return 0;
	}
	if (c->pending_seq != pend) {
		c->pending_seq = pend;
		c->pending_seen = mono;
	}
	s = &c->ring[pend & (LV_RING - 1)];
	/* its slot reused by a later seq: since we saw it pending */
	w = s->seq == pend ? waited(st, s->proc, s->enter, mono) : -1;
	if (w < 0)
		w = (double)(mono - c->pending_seen) / 1e9;
	if (w < st->opts.stuck_s)
		return 0;
	hang_alloc(st, c, h);
	h->seq = pend;
	h->op = s->seq == pend ? lv_op_name(st, s->op) : "?";
	h->waited_s = w;
	h->began = s->seq == pend ? s->enter : 0;
	for (int i = 0; i < c->nm; i++) {
		if (c->m[i].last_seq >= pend)
			h->wait[h->nwait++] = c->m[i].proc;
		else
			h->miss[h->nmiss++] = c->m[i].proc;
	}
	/* its entry forgotten: as long ago as it has waited */
	if (!h->began && h->nwait) {
		int64_t now = lv_sess_now(st, st->procs[h->wait[0]].sess, mono);

		h->began = now ? now - (int64_t)(w * 1e9) : 0;
	}
	absent_procs(st, c, h);
	hang_done(h);
	return 1;
}

int lv_hangs(struct lv_state *st, int j, int64_t mono, struct lv_hang **out)
{
	struct lv_hang *h = NULL;
	int n = 0;

	for (int i = 0; i < st->ncomms; i++) {
		struct lv_comm *c = st->comms[i];
		struct lv_hang one;
		uint64_t key;

		if (c->job != j)
			continue;
		if (init_hang(st, c, mono, &one))
			key = INIT_SEQ;
		else if (coll_hang(st, c, mono, &one))
			key = one.seq;
		else {
			if (c->hang_seq)
				c->resolved_seq = c->hang_seq;
			c->hang_seq = 0;
			continue;
		}
		one.is_new = c->hang_seq != key;
		if (one.is_new && c->hang_seq)
			c->resolved_seq = c->hang_seq;
		c->hang_seq = key;
		h = lv_xrealloc(h, (n + 1) * sizeof(*h));
		h[n++] = one;
	}
	*out = h;
	return n;
}

void lv_hangs_free(struct lv_hang *h, int n)
{
	for (int i = 0; i < n; i++) {
		free(h[i].wait);
		free(h[i].miss);
		free(h[i].unseen_rank);
		free(h[i].silent);
	}
	free(h);
}
