/*
 * The output fingerprints (docs/watch.md, "Data mismatches").  Every rank
 * of a sampled all-reduce, all-gather or broadcast hashes the same slices
 * of an output that must be bitwise the same on all of them, and writes
 * one fingerprint event, some time after the call, in no order across
 * processes.  So the fingerprints of one (comm, seq) are gathered until
 * the call is settled: every rank of the comm has written its own (the
 * event carries the comm's size), or LV_FP_SETTLE_S have passed since the
 * first one came (a rank died, its copy was dropped, the call was inside
 * a graph capture).  Then the ranks' hashes are grouped; more than one
 * group is a mismatch, queued for fpprint.c.
 *
 * Memory is bounded: LV_FP_PENDING calls per comm (the oldest is settled
 * early when one more comes), the last LV_FP_SETTLED settled seqs per
 * comm (a fingerprint for one of them is late, dropped), LV_FP_COMMS
 * comms (fingerprints of more are dropped), and every drop counted.
 */
#include <stdlib.h>
#include <string.h>

#include "fp_vote.h"
#include "job.h"
#include "lv_priv.h"

void lv_fp_comm_free(struct lv_fp_comm *fc)
{
	if (!fc)
		return;
	for (int i = 0; i < fc->npend; i++)
		free(fc->pend[i].m);
	free(fc);
}

void lv_fp_free(struct lv_fp *fp)
{
	for (int i = 0; i < fp->nqueue; i++) {
		free(fp->queue[i].procs);
		free(fp->queue[i].group);
	}
	fp->nqueue = 0;
}

int lv_fp_group(const struct lv_fp_mark *m, int n, int *grp)
{
	uint64_t *hash = lv_xcalloc(n, sizeof(*hash));
	void *scratch = lv_xcalloc(1, NG_FP_VOTE_SCRATCH(n));
	int ng, major;

	for (int i = 0; i < n; i++)
		hash[i] = m[i].hash;
	ng = ng_fp_vote(hash, n, grp, &major, scratch);
	free(hash);
	free(scratch);
	return ng;
}

static const struct lv_state *sort_st;

static int by_rank(const void *a, const void *b)
{
	const struct lv_fp_mark *x = a, *y = b;
	int64_t rx = sort_st->procs[x->proc].rank, ry = sort_st->procs[y->proc].rank;

	return rx < ry ? -1 : rx > ry;
}

/* A mismatch queued: its ranks in rank order within each group. */
static void queue_mismatch(struct lv_state *st, const struct lv_comm *c,
			   const struct lv_fp_call *k, const struct lv_fp_mark *m, int n)
{
	struct lv_fp_mismatch *q;
	int *grp = lv_xcalloc(n, sizeof(int));
	int ng = lv_fp_group(m, n, grp), big = 0;

	if (st->fp.nqueue == LV_FP_QUEUE) {
		st->fp.unprinted++;
		free(grp);
		return;
	}
	q = &st->fp.queue[st->fp.nqueue++];
	memset(q, 0, sizeof(*q));
	q->job = c->job;
	q->comm = c->hash;
	q->seq = k->seq;
	q->bytes = k->bytes;
	q->compared = k->compared;
	memcpy(q->op, k->op, sizeof(q->op));
	q->n = n;
	q->ngroups = ng;
	q->procs = lv_xcalloc(n, sizeof(int));
	q->group = lv_xcalloc(n, sizeof(int));
	/* m is in rank order: taken group by group, it stays so in each */
	for (int g = 0, o = 0; g < ng; g++)
		for (int i = 0; i < n; i++)
			if (grp[i] == g) {
				q->procs[o] = m[i].proc;
				q->group[o++] = g;
				big += !g;
			}
	q->majority = 2 * big > n;
	free(grp);
}

/* Call i of c compared and forgotten. */
static void settle_one(struct lv_state *st, struct lv_comm *c, int i)
{
	struct lv_fp_comm *fc = c->fp;
	struct lv_fp_call *k = &fc->pend[i];
	int n = 0, same = 1;

	fc->settled[fc->nsettled++ % LV_FP_SETTLED] = k->seq;
	/* a fingerprint is a rank's only once its process said its rank */
	for (int j = 0; j < k->n; j++) {
		if (st->procs[k->m[j].proc].rank < 0) {
			st->fp.unidentified++;
			continue;
		}
		k->m[n++] = k->m[j];
	}
	for (int j = 1; j < n; j++)
		same &= k->m[j].slices == k->m[0].slices;
	/* slices that differ hash different bytes: nothing to compare */
	if (n < 2 || !same) {
		fc->unpaired++;
	} else {
		int differ = 0;

		fc->compared++;
		for (int j = 1; j < n; j++)
			differ |= k->m[j].hash != k->m[0].hash;
		if (differ) {
			fc->mismatched++;
			sort_st = st;
			qsort(k->m, n, sizeof(*k->m), by_rank);
			queue_mismatch(st, c, k, k->m, n);
		}
	}
	free(k->m);
	fc->pend[i] = fc->pend[--fc->npend];
}

static int was_settled(const struct lv_fp_comm *fc, uint64_t seq)
{
	uint64_t first = fc->nsettled > LV_FP_SETTLED ? fc->nsettled - LV_FP_SETTLED : 0;

	for (uint64_t i = first; i < fc->nsettled; i++)
		if (fc->settled[i % LV_FP_SETTLED] == seq)
			return 1;
	return 0;
}

/* Room for one more pending call: the oldest settled early if full. */
static struct lv_fp_call *call_new(struct lv_state *st, struct lv_comm *c)
{
	struct lv_fp_comm *fc = c->fp;
	int old = 0;

	if (fc->npend == LV_FP_PENDING) {
		for (int i = 1; i < fc->npend; i++)
			if (fc->pend[i].first < fc->pend[old].first)
				old = i;
		st->fp.evicted++;
		settle_one(st, c, old);
	}
	return &fc->pend[fc->npend++];
}

void lv_fp_add(struct lv_state *st, struct lv_comm *c, int proc, const struct ev_rec_fp *r,
	       int64_t mono)
{
	struct lv_fp_comm *fc;
	struct lv_fp_call *k = NULL;
	int i;

	if (!c->fp) {
		if (st->fp.ncomms == LV_FP_COMMS) {
			st->fp.over_comms++;
			return;
		}
		c->fp = lv_xcalloc(1, sizeof(*c->fp));
		st->fp.ncomms++;
	}
	fc = c->fp;
	if (was_settled(fc, r->seq)) {
		st->fp.late++;
		return;
	}
	for (i = 0; i < fc->npend; i++)
		if (fc->pend[i].seq == r->seq) {
			k = &fc->pend[i];
			break;
		}
	if (!k) {
		k = call_new(st, c);
		memset(k, 0, sizeof(*k));
		k->seq = r->seq;
		k->bytes = r->bytes;
		k->compared = r->compared;
		k->first = mono;
		snprintf(k->op, sizeof(k->op), "%s", r->op ? r->op : "?");
		i = (int)(k - fc->pend);
	}
	/* one per process: a second (a session read twice) adds nothing */
	for (int j = 0; j < k->n; j++)
		if (k->m[j].proc == proc)
			return;
	if (k->n == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 8;
		k->m = lv_xrealloc(k->m, k->cap * sizeof(*k->m));
	}
	/* slices compared by their string's FNV-1a, as job ids are */
	k->m[k->n++] = (struct lv_fp_mark){ .proc = proc, .hash = r->hash,
					    .slices = ng_job_tag(r->slices) };
	if (r->nranks > k->nranks)
		k->nranks = r->nranks;
	if (k->n >= k->nranks)
		settle_one(st, c, i);
}

void lv_fp_settle(struct lv_state *st, int64_t mono)
{
	for (int ci = 0; ci < st->ncomms; ci++) {
		struct lv_comm *c = st->comms[ci];

		if (!c->fp)
			continue;
		/* backwards: settle_one moves the last into the hole */
		for (int i = c->fp->npend - 1; i >= 0; i--)
			if (mono - c->fp->pend[i].first >= LV_FP_SETTLE_S * 1000000000LL)
				settle_one(st, c, i);
	}
}
