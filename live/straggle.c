/*
 * Live stragglers: the analyzer's rule (common/straggle.h) applied as
 * arrivals come.  A rank's arrival at a collective is its coll_enqueue's
 * enter_ns, or the last arrival at the comm's previous collective if
 * that is later (a rank cannot start before the one before has gathered
 * everyone, and punctual ranks queue calls ahead of a slow one); a coarse
 * enter time is no measurement, and its call is not judged.  Once every
 * member entered a call, each rank's lateness against the others and
 * their spread go into its windows of NG_STRAG_WIN calls on that comm.
 *
 * The analyzer judges a rank over the whole job; a live rule must say
 * when it starts and when it ends, so it judges the member's last
 * LV_STRAG_WINS windows: named once LV_STRAG_NAME of them (and half of
 * those judged) are late, ended once fewer than LV_STRAG_END are.  The
 * gap between the two keeps a rank at the edge from being named and
 * ended over and over.
 *
 * Times: enter_ns is on its host's trace clock, compared across hosts as
 * it is; the analyzer corrects each host's offset first (docs/watch.md,
 * "Stragglers").  Memory: per comm, lv_strag_ncalls() calls awaiting
 * arrivals (a call still incomplete when its slot is needed again is
 * dropped, unjudged, as the analyzer drops a call some rank has no
 * arrival in) and per member its windows.
 */
#include <stdlib.h>
#include <string.h>

#include "lv_priv.h"

static void call_reset(struct lv_strag_call *k, int cap, uint64_t seq)
{
	k->seq = seq;
	k->n = 0;
	k->coarse = 0;
	for (int i = 0; i < cap; i++)
		k->enter[i] = INT64_MIN;
}

void lv_strag_comm_free(struct lv_strag_comm *sc)
{
	if (!sc)
		return;
	for (int i = 0; i < sc->ncalls; i++)
		free(sc->calls[i].enter);
	free(sc->calls);
	free(sc->m);
	free(sc->enter);
	free(sc->dev);
	free(sc->spread);
	free(sc->scratch);
	free(sc);
}

/* For a comm of cap members; what it held is dropped. */
static struct lv_strag_comm *comm_new(int cap)
{
	struct lv_strag_comm *sc = lv_xcalloc(1, sizeof(*sc));

	sc->cap = cap;
	sc->ncalls = lv_strag_ncalls(cap);
	sc->calls = lv_xcalloc(sc->ncalls, sizeof(*sc->calls));
	for (int i = 0; i < sc->ncalls; i++) {
		sc->calls[i].enter = lv_xcalloc(cap, sizeof(int64_t));
		call_reset(&sc->calls[i], cap, 0);
	}
	sc->m = lv_xcalloc(cap, sizeof(*sc->m));
	sc->enter = lv_xcalloc(cap, sizeof(int64_t));
	sc->dev = lv_xcalloc(cap, sizeof(int64_t));
	sc->spread = lv_xcalloc(cap, sizeof(int64_t));
	sc->scratch = lv_xcalloc(1, NG_STRAG_SCRATCH(cap));
	return sc;
}

static void queue(struct lv_state *st, const struct lv_comm *c, int proc, int start,
		  int64_t late_ns, int late_wins, int wins)
{
	struct lv_strag_change *q;

	if (st->strag.nqueue == LV_STRAG_QUEUE) {
		st->strag.unprinted++;
		return;
	}
	q = &st->strag.queue[st->strag.nqueue++];
	q->proc = proc;
	q->job = c->job;
	q->start = start;
	q->comm = c->hash;
	q->late_ns = late_ns;
	q->late_wins = late_wins;
	q->wins = wins;
}

/* Whether proc is named a straggler on any comm. */
static int named_anywhere(const struct lv_state *st, int proc)
{
	for (int i = 0; i < st->ncomms; i++) {
		const struct lv_comm *c = st->comms[i];
		int32_t mi;

		if (!c->strag)
			continue;
		mi = ng_u64map_get(&c->member_of, (uint64_t)proc);
		if (mi >= 0 && mi < c->strag->cap && c->strag->m[mi].named)
			return 1;
	}
	return 0;
}

/* A window of member mi judged: its last windows weighed. */
static void window_done(struct lv_state *st, struct lv_comm *c, int mi, int late, int64_t med)
{
	struct lv_strag_member *w = &c->strag->m[mi];
	int proc = c->m[mi].proc, wins, nlate = 0;
	int64_t sum = 0;

	w->was_late[w->nwin % LV_STRAG_WINS] = (uint8_t)late;
	w->med[w->nwin % LV_STRAG_WINS] = med;
	w->nwin++;
	wins = w->nwin < LV_STRAG_WINS ? (int)w->nwin : LV_STRAG_WINS;
	for (int i = 0; i < wins; i++)
		if (w->was_late[i]) {
			nlate++;
			sum += w->med[i];
		}
	st->procs[proc].late_ns = late && med > 0 ? med : 0;
	if (!w->named && nlate >= LV_STRAG_NAME && ng_strag_flagged((uint64_t)wins, (uint64_t)nlate)) {
		w->named = 1;
		st->procs[proc].straggler = 1;
		queue(st, c, proc, 1, sum / nlate, nlate, wins);
	} else if (w->named && nlate < LV_STRAG_END) {
		w->named = 0;
		st->procs[proc].straggler = named_anywhere(st, proc);
		queue(st, c, proc, 0, nlate ? sum / nlate : 0, nlate, wins);
	}
}

/* Every member entered call k: each one's lateness into its window. */
static void judge(struct lv_state *st, struct lv_comm *c, struct lv_strag_call *k)
{
	struct lv_strag_comm *sc = c->strag;
	int n = (int)c->nranks;
	int64_t prev = INT64_MIN, start = INT64_MIN, cycle;

	if (sc->prev_seq && sc->prev_seq + 1 == k->seq)
		prev = sc->prev_start;
	for (int i = 0; i < n; i++) {
		sc->enter[i] = k->enter[i] > prev ? k->enter[i] : prev;
		if (sc->enter[i] > start)
			start = sc->enter[i];
	}
	cycle = prev != INT64_MIN ? start - prev : INT64_MAX;
	sc->prev_seq = k->seq;
	sc->prev_start = start;
	ng_strag_call(sc->enter, n, sc->dev, sc->spread, sc->scratch);
	for (int i = 0; i < n; i++) {
		struct lv_strag_member *w = &sc->m[i];
		int64_t med;
		int late;

		w->late[w->fill] = sc->dev[i];
		w->spread[w->fill] = sc->spread[i];
		w->cycle[w->fill++] = cycle;
		if (w->fill < NG_STRAG_WIN)
			continue;
		w->fill = 0;
		late = ng_strag_window(w->late, w->spread, w->cycle, &med);
		window_done(st, c, i, late, med);
	}
}

void lv_strag_enter(struct lv_state *st, struct lv_comm *c, int mi, const struct ev_rec_coll *r)
{
	struct lv_strag_call *k;

	/* Two ranks at least; a comm grown past what is held starts over. */
	if (c->nranks < 2)
		return;
	if (!c->strag || c->strag->cap < c->nranks) {
		lv_strag_comm_free(c->strag);
		c->strag = comm_new((int)c->nranks);
	}
	if (mi >= c->nranks)
		return;
	k = &c->strag->calls[r->seq % (uint64_t)c->strag->ncalls];
	if (k->seq != r->seq) {
		/* its slot taken by a later call: this one is dropped */
		if (k->seq > r->seq)
			return;
		call_reset(k, c->strag->cap, r->seq);
	}
	if (k->n < 0 || k->enter[mi] != INT64_MIN)
		return;
	k->enter[mi] = r->enter_ns;
	k->coarse |= r->enter_coarse;
	if (++k->n < c->nranks)
		return;
	k->n = -1;
	if (!k->coarse)
		judge(st, c, k);
}
