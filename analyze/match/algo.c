/*
 * What NCCL chose for each call (coll_algo, from its profiler plugin):
 * the algorithm, protocol and channel count per operation and size in
 * the collectives table, and the comms whose ranks chose differently for
 * the same operation and size.  Such ranks run different kernels that
 * expect different peers: the collective is slow or never ends, the
 * classic cause being settings (NCCL_ALGO, NCCL_PROTO, channel limits,
 * versions, topology) that differ across hosts.
 *
 * The shim writes a coll_algo per comm, op and size and per change, not
 * per call (NCCL chooses per size); they are kept per (comm, op, size,
 * process, choice).
 */
#include <stdlib.h>
#include <string.h>

#include "match.h"

static uint64_t key_of(const struct an_algo_rec *a)
{
	uint64_t h = 1469598103934665603ull;
	const unsigned char *p;
	uint64_t v[4] = { a->comm_hash, a->bytes, (uint64_t)a->op << 32 | (uint32_t)a->proc,
			  (uint64_t)a->nch };

	for (p = (const unsigned char *)v; p < (const unsigned char *)(v + 4); p++)
		h = (h ^ *p) * 1099511628211ull;
	for (p = (const unsigned char *)a->algo; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	for (p = (const unsigned char *)a->proto; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h | 1;
}

static int same(const struct an_algo_rec *a, const struct an_algo_rec *b)
{
	return a->comm_hash == b->comm_hash && a->bytes == b->bytes && a->op == b->op &&
	       a->proc == b->proc && a->nch == b->nch && !strcmp(a->algo, b->algo) &&
	       !strcmp(a->proto, b->proto);
}

static void row_add(struct an_row *r, const struct an_algo_rec *a)
{
	int i;

	for (i = 0; i < r->nchoice; i++)
		if (r->choice[i].nch == a->nch && !strcmp(r->choice[i].algo, a->algo) &&
		    !strcmp(r->choice[i].proto, a->proto))
			break;
	if (i == r->nchoice) {
		if (i == AN_ROW_CHOICES)
			return;		/* more than a row shows */
		memcpy(r->choice[i].algo, a->algo, sizeof(a->algo));
		memcpy(r->choice[i].proto, a->proto, sizeof(a->proto));
		r->choice[i].nch = a->nch;
		r->nchoice++;
	}
	r->choice[i].calls++;
}

void an_algo(struct an_state *an, const struct ev_src *src, const struct ev_rec_algo *r)
{
	struct an_proc *p = an_proc_get(an, src);
	struct an_algo_rec k = { 0 };
	uint64_t key;
	int32_t i;

	if (!p || !r->op || !*r->op)
		return;
	k.comm_hash = r->comm_hash;
	k.bytes = r->bytes;
	k.op = an_op_id(an, r->op);
	k.proc = (int)(p - an->procs);
	k.nch = r->nchannels;
	snprintf(k.algo, sizeof(k.algo), "%s", r->algo ? r->algo : "");
	snprintf(k.proto, sizeof(k.proto), "%s", r->proto ? r->proto : "");
	if (r->nranks > 0)
		row_add(an_row_get(an, k.op, k.bytes, (int)r->nranks), &k);
	else
		an->algo_no_row++;
	for (key = key_of(&k);; key++) {
		i = ng_u64map_get(&an->algo_map, key);
		if (i < 0)
			break;
		if (same(&an->algos[i], &k)) {
			an->algos[i].calls++;
			return;
		}
	}
	an->algos = an_xrealloc(an->algos, (size_t)(an->nalgos + 1) * sizeof(*an->algos));
	k.calls = 1;
	an->algos[an->nalgos] = k;
	an_map_put(&an->algo_map, key, an->nalgos++);
}

static int cmp_rec(const void *x, const void *y)
{
	const struct an_algo_rec *a = x, *b = y;

	if (a->comm_hash != b->comm_hash)
		return a->comm_hash < b->comm_hash ? -1 : 1;
	if (a->op != b->op)
		return a->op - b->op;
	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return a->proc - b->proc;
}

/* Ranks that chose differently for one (comm, op, size): each process's
 * most frequent choice is its own, and the group differs when two
 * processes' choices do (algorithm or channels; a protocol follows the
 * size). */
void an_algo_finish(struct an_state *an)
{
	int i = 0;

	if (an->algo_done)
		return;
	an->algo_done = 1;
	/* A size that only NCCL's choices name, never a call: a choice
	 * event's size damaged (its row shows no call). */
	for (int r = 0; r < an->nrows; r++)
		if (!an->rows[r].calls && an->rows[r].nchoice)
			i++;
	if (i)
		an_incomplete(an, AN_INC_events_implausible, "%d size%s only in NCCL's algorithm "
			      "choices, in no call: a damaged trace's (shown with no calls)", i,
			      i == 1 ? "" : "s");
	i = 0;
	for (int k = 0; k < an->nalgos; k++)
		an->algos[k].rank = an->procs[an->algos[k].proc].rank;
	if (an->nalgos)		/* qsort of NULL is undefined, even for 0 */
		qsort(an->algos, (size_t)an->nalgos, sizeof(*an->algos), cmp_rec);
	while (i < an->nalgos) {
		int j = i, differ = 0, n = 0;
		const struct an_algo_rec *ref = NULL;
		struct an_algo_mism *m;

		while (j < an->nalgos && an->algos[j].comm_hash == an->algos[i].comm_hash &&
		       an->algos[j].op == an->algos[i].op && an->algos[j].bytes == an->algos[i].bytes)
			j++;
		/* Each process's main choice, in the first of its records. */
		for (int k = i; k < j; k++) {
			struct an_algo_rec *a = &an->algos[k];

			if (k > i && a->proc == a[-1].proc)
				continue;
			for (int q = k + 1; q < j && an->algos[q].proc == a->proc; q++)
				if (an->algos[q].calls > a->calls) {
					struct an_algo_rec t = *a;

					*a = an->algos[q];
					an->algos[q] = t;
				}
			n++;
			if (!ref)
				ref = a;
			else if (ref->nch != a->nch || strcmp(ref->algo, a->algo))
				differ = 1;
		}
		if (differ && an->nalgo_mism < AN_ALGO_MISM_MAX) {
			an->algo_mism = an_xrealloc(an->algo_mism, (size_t)(an->nalgo_mism + 1) *
							   sizeof(*an->algo_mism));
			m = &an->algo_mism[an->nalgo_mism++];
			m->first = i;
			m->end = j;
			m->nprocs = n;
		} else if (differ) {
			an->algo_mism_more++;
		}
		i = j;
	}
}

const struct an_choice *an_row_choice(const struct an_row *r)
{
	const struct an_choice *best = NULL;

	for (int i = 0; i < r->nchoice; i++)
		if (!best || r->choice[i].calls > best->calls)
			best = &r->choice[i];
	return best;
}

int an_algo_is_ce(const char *algo)
{
	return algo && !strcmp(algo, "CE");
}

const char *an_algo_label(const char *algo)
{
	return an_algo_is_ce(algo) ? "copy engine (CE)" : algo;
}

void an_algo_free(struct an_state *an)
{
	free(an->algos);
	free(an->algo_mism);
	ng_u64map_free(&an->algo_map);
}
