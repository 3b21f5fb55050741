/*
 * A collective every rank is done with, on aligned clocks: its calls
 * compared across ranks (a mismatch), its arrivals for stragglers, its
 * time in its bandwidth row, each rank's part in its recent calls; then
 * handed to an_opts.on_coll and freed.
 */
#include <stdlib.h>

#include "match.h"

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
	an->mism = an_xrealloc(an->mism, (an->nmism + 1) * sizeof(*an->mism));
	m = &an->mism[an->nmism++];
	m->comm_hash = e->comm->hash;
	m->seq = e->seq;
	m->n = 0;
	m->rank = an_xcalloc(n, sizeof(*m->rank));
	m->op = an_xcalloc(n, sizeof(*m->op));
	m->count = an_xcalloc(n, sizeof(*m->count));
	m->dtype = an_xcalloc(n, sizeof(*m->dtype));
	m->root = an_xcalloc(n, sizeof(*m->root));
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

/* Each rank's part, kept in its last few calls on the comm: what a hang
 * found at the end shows before the call that hung. */
static void remember(struct an_state *an, const struct an_entry *e)
{
	const struct an_comm *c = e->comm;

	for (int i = 0; i < e->nslots && i < c->nmembers; i++) {
		const struct an_slot *s = &e->slot[i];
		struct an_pc *pc = &an->pcs[c->member_pc[i]];
		int64_t off = an->hosts[an->procs[c->members[i]].host].offset_ns;
		struct an_call *k;

		if (!(s->flags & AN_S_ENQ))
			continue;
		k = &pc->recent[pc->nrecent++ % AN_RECENT];
		k->seq = e->seq;
		k->op = s->op;
		k->flags = s->flags;
		k->enter_ns = s->enter_ns + off;
		k->exit_ns = s->exit_ns > 0 ? s->exit_ns + off : 0;
		k->start_ns = k->end_ns = 0;
		if ((s->flags & AN_S_TIMED) && s->gpu_start > 0 && s->gpu_end > s->gpu_start) {
			k->start_ns = s->gpu_start + off;
			k->end_ns = s->gpu_end + off;
		}
	}
}

void an_account(struct an_state *an, struct an_entry *e)
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
	an_straggle(an, e);
	remember(an, e);
	/* The collective's time is its shortest GPU duration: the ranks that
	 * arrived early also waited for the last one, which an_straggle()
	 * reports on its own. */
	row = an_row_get(an, first->op, bytes, e->nranks > 0 ? e->nranks : e->comm->nranks);
	if (!an_row_add(row, bytes, best))
		an->untimed++;
	for (i = 0; i < e->nslots && i < e->comm->nmembers; i++)
		an_busy_count(&an->procs[e->comm->members[i]], (int)(row - an->rows), &e->slot[i]);
	if (an->opts.on_coll)
		an->opts.on_coll(an->opts.on_coll_ctx, an, e);
	free(e);
}

/* The mismatches an_account found. */
void an_account_free(struct an_state *an)
{
	int i;

	for (i = 0; i < an->nmism; i++) {
		free(an->mism[i].rank);
		free(an->mism[i].op);
		free(an->mism[i].count);
		free(an->mism[i].dtype);
		free(an->mism[i].root);
	}
	free(an->mism);
}
