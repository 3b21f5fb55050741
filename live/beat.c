/*
 * Heartbeats.  A viewer reads a live session from where it attaches, and
 * a rank that waits writes nothing more, so a watch that came late knows
 * a waiting rank by its heartbeats only: every period (2 s) while one of
 * its calls or inits has waited a second, one per communicator, with who
 * the process is and where the communicator stands.  Each makes the
 * process, the communicator and the member as process_info, comm_init
 * and the call's enqueue would have, so the hang rules of track.c apply
 * unchanged; what only a beat says (the seq waited in, when it came) is
 * kept for lv_beat_pending() and silent.c.
 */
#include <string.h>

#include "lv_priv.h"
#include "op_words.h"

#define PERIOD_MAX_NS	600000000000LL	/* a longer one is taken as this */

static int64_t period_of(const struct ev_rec_hb *b)
{
	int64_t p = (int64_t)b->period_ns;

	if (p <= 0)
		return LV_BEAT_PERIOD_NS;
	return p < PERIOD_MAX_NS ? p : PERIOD_MAX_NS;
}

/* Who the process is, as process_info says it. */
static void beat_proc(struct lv_state *st, struct lv_proc *p, const struct ev_event *ev)
{
	const struct ev_rec_hb *b = &ev->r.hb;
	struct lv_job *j = &st->jobs[p->job];

	if (b->rank >= 0) {
		p->rank = b->rank;
		p->has_info = 1;
	}
	if (b->pid)
		p->pid = b->pid;
	if (b->world_size > j->world_size)
		j->world_size = b->world_size;
	if (!j->id[0] && ev->job_id[0])
		snprintf(j->id, sizeof(j->id), "%s", ev->job_id);
	if (ev->src.ts > p->beat_ts)
		p->beat_ts = ev->src.ts;
	p->beat_period = period_of(b);
}

int lv_beat(struct lv_state *st, struct lv_proc *p, struct lv_comm *c, struct lv_member *m,
	    const struct ev_event *ev, struct ev_rec_coll *entered)
{
	const struct ev_rec_hb *b = &ev->r.hb;
	int64_t began = ev->src.ts > (int64_t)b->waited_ns ? ev->src.ts - (int64_t)b->waited_ns : 0;
	int in_coll = !strcmp(b->waiting, "collective");
	uint64_t last = b->last_seq;

	/* A rank held inside the host call of a collective has not entered
	 * it as the tracker counts (its enqueue is written as the call
	 * returns): its peers wait for it. */
	if (!strcmp(b->waiting, "host") && ng_op_plural(b->op) && b->wait_seq &&
	    b->wait_seq <= last)
		last = b->wait_seq - 1;
	beat_proc(st, p, ev);
	if (!c || !m)
		return 0;
	if (!c->beat_first)
		c->beat_first = lv_mono_ns();
	if (p->beat_period > c->beat_period)
		c->beat_period = p->beat_period;
	if (b->comm_rank >= 0)
		m->comm_rank = b->comm_rank;
	if (b->done_seq > m->done_seq)
		m->done_seq = b->done_seq;
	if (last > m->last_seq)
		m->last_seq = last;
	if (!strcmp(b->waiting, "init")) {
		if (!m->init_begin && !m->init_end)
			m->init_begin = began ? began : 1;
		m->beat_wait = 0;
		return 0;
	}
	m->beat_wait = in_coll ? b->wait_seq : 0;
	/* its entry into the call it waits in: when it began waiting */
	if (!in_coll || !b->wait_seq || !began ||
	    c->ring[b->wait_seq & (LV_RING - 1)].seq == b->wait_seq)
		return 0;
	memset(entered, 0, sizeof(*entered));
	entered->comm_hash = b->comm_hash;
	entered->nranks = b->nranks;
	entered->seq = b->wait_seq;
	entered->op = b->op;
	entered->enter_ns = began;
	return 1;
}

uint64_t lv_beat_pending(const struct lv_comm *c, uint64_t seq, int64_t mono)
{
	int64_t settle = (c->beat_period ? c->beat_period : LV_BEAT_PERIOD_NS) + LV_BEAT_SETTLE_NS;
	int waits = 0;

	if (!seq || c->nranks <= c->nm || !c->beat_first || mono - c->beat_first < settle)
		return 0;
	for (int i = 0; i < c->nm; i++) {
		if (c->m[i].done_seq >= seq)
			return 0;
		waits |= c->m[i].beat_wait == seq;
	}
	return waits ? seq : 0;
}
