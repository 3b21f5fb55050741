/*
 * The output fingerprints of sampled calls (docs/verification.md): every
 * rank of an all-reduce, all-gather or broadcast must hold the same
 * output, so the fingerprints of one (comm, seq) are compared across its
 * ranks.  A call's are kept until every rank of the comm wrote one (each
 * rank's watchdog writes it some time after the call, in no order across
 * processes), then compared and freed; the rest at the end of the trace.
 */
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "fp_vote.h"
#include "state.h"

static uint64_t call_key(uint64_t comm_hash, uint64_t seq)
{
	uint64_t h = comm_hash ^ (seq + 0x9e3779b97f4a7c15ULL);

	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
	return h ^ (h >> 31);
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* "OFF+LEN,OFF+LEN": one slice per comma, and one more. */
static int slice_count(const char *s)
{
	int n = s && *s;

	for (; s && *s; s++)
		n += *s == ',';
	return n;
}

static int call_is(const struct an_fp_call *c, uint64_t comm_hash, uint64_t seq)
{
	return c->comm_hash == comm_hash && c->seq == seq;
}

static int call_find(const struct an_verify *v, uint64_t comm_hash, uint64_t seq)
{
	int32_t i = ng_u64map_get(&v->call_map, call_key(comm_hash, seq));

	if (i < 0 || call_is(&v->call[i], comm_hash, seq))
		return i;
	for (i = 0; i < v->ncall; i++)		/* another call has its key */
		if (call_is(&v->call[i], comm_hash, seq))
			return i;
	return -1;
}

static int comm_get(struct an_verify *v, uint64_t hash)
{
	int32_t i = ng_u64map_get(&v->comm_map, hash);

	if (i >= 0)
		return i;
	v->comm = an_xrealloc(v->comm, (v->ncomm + 1) * sizeof(*v->comm));
	memset(&v->comm[v->ncomm], 0, sizeof(*v->comm));
	v->comm[v->ncomm].hash = hash;
	an_map_put(&v->comm_map, hash, v->ncomm);
	return v->ncomm++;
}

static int call_add(struct an_verify *v, uint64_t comm_hash, uint64_t seq, int nranks)
{
	uint64_t key = call_key(comm_hash, seq);
	struct an_fp_call *c;

	if (v->ncall == v->cap_call) {
		v->cap_call = v->cap_call ? 2 * v->cap_call : 64;
		v->call = an_xrealloc(v->call, (size_t)v->cap_call * sizeof(*v->call));
	}
	c = &v->call[v->ncall];
	memset(c, 0, sizeof(*c));
	c->comm_hash = comm_hash;
	c->seq = seq;
	c->nranks = nranks;
	c->comm = comm_get(v, comm_hash);
	if (ng_u64map_get(&v->call_map, key) < 0)
		an_map_put(&v->call_map, key, v->ncall);
	return v->ncall++;
}

static int same_what(const struct an_fp_what *a, const struct an_fp_what *b)
{
	return a->op == b->op && a->bytes == b->bytes && a->compared == b->compared &&
		a->slices == b->slices;
}

static void mism_add(struct an_verify *v, const struct an_fp_call *c, const int *grp, int ngrp,
		     int major)
{
	struct an_fp_mism *m;
	int k = 0;

	if (v->nmism >= AN_FP_MISM_MAX) {
		v->mism_more++;
		return;
	}
	v->mism = an_xrealloc(v->mism, (v->nmism + 1) * sizeof(*v->mism));
	m = &v->mism[v->nmism++];
	memset(m, 0, sizeof(*m));
	m->comm_hash = c->comm_hash;
	m->seq = c->seq;
	m->bytes = c->what.bytes;
	m->compared = c->what.compared;
	m->op = c->what.op;
	m->nslices = c->what.nslices;
	m->majority = major;
	m->ngrp = ngrp;
	m->n = c->nfp;
	m->proc = an_xcalloc((size_t)c->nfp, sizeof(*m->proc));
	m->grp = an_xcalloc((size_t)c->nfp, sizeof(*m->grp));
	for (int g = 0; g < ngrp; g++)
		for (int i = 0; i < c->nfp; i++)
			if (grp[i] == g) {
				m->proc[k] = c->fp[i].proc;
				m->grp[k++] = g;
			}
}

static int cmp_fp(const void *a, const void *b)
{
	const struct an_fp *x = a, *y = b;

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	return x->nth - y->nth;
}

/* A process's second fingerprint of one call (a damaged or replayed
 * trace) is dropped here, once, rather than looked for at each arrival
 * among thousands of ranks; its first stays. */
static void one_per_proc(struct an_fp_call *c)
{
	int n = 0;

	if (c->nfp < 2)
		return;
	qsort(c->fp, (size_t)c->nfp, sizeof(*c->fp), cmp_fp);
	for (int i = 0; i < c->nfp; i++)
		if (!n || c->fp[i].proc != c->fp[n - 1].proc)
			c->fp[n++] = c->fp[i];
	c->nfp = n;
}

static void settle(struct an_verify *v, struct an_fp_call *c)
{
	struct an_vcomm *vc = &v->comm[c->comm];
	uint64_t *hash;
	void *scratch;
	int *grp, ngrp, major;

	c->settled = 1;
	one_per_proc(c);
	if (c->nfp < 2 || c->other) {
		vc->unpaired++;
		goto out;
	}
	vc->compared++;
	hash = an_xcalloc((size_t)c->nfp, sizeof(*hash));
	grp = an_xcalloc((size_t)c->nfp, sizeof(*grp));
	scratch = an_xcalloc(1, NG_FP_VOTE_SCRATCH(c->nfp));
	for (int i = 0; i < c->nfp; i++)
		hash[i] = c->fp[i].hash;
	ngrp = ng_fp_vote(hash, c->nfp, grp, &major, scratch);
	free(scratch);
	if (ngrp > 1) {
		vc->mismatched++;
		mism_add(v, c, grp, ngrp, major);
	}
	free(hash);
	free(grp);
out:
	free(c->fp);
	c->fp = NULL;
	c->nfp = 0;
}

void an_fprint(struct an_state *an, const struct ev_src *src, const struct ev_rec_fp *r)
{
	struct an_verify *v = &an->verify;
	struct an_proc *p = an_proc_find(an, src);
	struct an_fp_what w;
	struct an_fp_call *c;
	int proc, i;

	/* A process known by its fingerprints alone has their span, as
	 * every process has its events'. */
	if (!p) {
		p = an_proc_get(an, src);
		an_span(an, src);
	}
	proc = (int)(p - an->procs);
	v->fps++;
	if (r->nranks < 2)
		return;		/* a comm of one rank: nothing to compare with */
	i = call_find(v, r->comm_hash, r->seq);
	if (i < 0) {
		if (v->ncall >= AN_FP_CALLS_MAX) {
			v->calls_more++;
			return;
		}
		i = call_add(v, r->comm_hash, r->seq, (int)r->nranks);
	}
	c = &v->call[i];
	if (c->settled)
		return;		/* every rank's came already: a duplicate */
	w = (struct an_fp_what){ an_op_id(an, r->op), slice_count(r->slices), r->bytes,
				 r->compared, str_hash(r->slices) };
	if (!c->nfp)
		c->what = w;
	else if (!same_what(&c->what, &w))
		c->other = 1;
	/* room for 4, then doubled at each power of two */
	if (c->nfp >= 4 ? !(c->nfp & (c->nfp - 1)) : !c->nfp)
		c->fp = an_xrealloc(c->fp, (size_t)(c->nfp ? 2 * c->nfp : 4) * sizeof(*c->fp));
	c->fp[c->nfp] = (struct an_fp){ proc, c->nfp, r->hash };
	c->nfp++;
	if (c->nfp >= c->nranks)
		settle(v, c);
}

void an_verify_finish(struct an_state *an)
{
	struct an_verify *v = &an->verify;

	for (int i = 0; i < v->ncall; i++)
		if (!v->call[i].settled)
			settle(v, &v->call[i]);
	free(v->call);
	v->call = NULL;
	v->ncall = v->cap_call = 0;
	ng_u64map_free(&v->call_map);
	if (v->calls_more)
		an_incomplete(an, AN_INC_verify_unkept, "%llu output fingerprints of calls past "
			      "the first %d sampled were not compared",
			      (unsigned long long)v->calls_more, AN_FP_CALLS_MAX);
	if (v->mism_more)
		an_incomplete(an, AN_INC_verify_unkept, "%llu calls whose ranks held different "
			      "outputs, past the first %d, are counted in verification[] and "
			      "named by no finding", (unsigned long long)v->mism_more,
			      AN_FP_MISM_MAX);
}

int an_verify_on(const struct an_state *an)
{
	if (an->verify.fps)
		return 1;
	for (int i = 0; i < an->nprocs; i++)
		if (an->procs[i].verify_every)
			return 1;
	return 0;
}

void an_verify_free(struct an_state *an)
{
	struct an_verify *v = &an->verify;

	for (int i = 0; i < v->ncall; i++)
		free(v->call[i].fp);
	for (int i = 0; i < v->nmism; i++) {
		free(v->mism[i].proc);
		free(v->mism[i].grp);
	}
	free(v->call);
	free(v->comm);
	free(v->mism);
	ng_u64map_free(&v->call_map);
	ng_u64map_free(&v->comm_map);
	memset(v, 0, sizeof(*v));
}
