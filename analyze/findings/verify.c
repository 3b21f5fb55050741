/*
 * data_mismatch findings (docs/verification.md): the ranks whose output of
 * a sampled call differs from the majority's, or, where no output is held
 * by more than half of the ranks that reported, all of them.  One finding
 * per comm and set of ranks named: its first call in full, then how many
 * of the comm's verified calls differed and the other calls' seqs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "findings.h"
#include "op_words.h"

#define LIST_RANKS	8	/* ranks of one output named in a sentence */
#define LIST_OUTPUTS	4	/* outputs of a call without majority named */
#define LIST_SEQS	8	/* other seqs named */

/* One mismatched call as the finding sees it: its ranks by output, each
 * output's ranks sorted, and the ranks it names. */
struct call {
	const struct an_fp_mism *m;
	int64_t *rank;		/* m->proc's ranks, in m's order */
	int64_t *named;
	int nnamed;
};

static const char *op_words(const struct an_state *an, int op, char *buf, size_t len)
{
	const char *w = ng_op_word(an->ops[op], buf, len);

	return w ? w : "collective";
}

static void call_make(const struct an_state *an, const struct an_fp_mism *m, struct call *c)
{
	c->m = m;
	c->rank = an_xcalloc((size_t)m->n + 1, sizeof(*c->rank));
	c->named = an_xcalloc((size_t)m->n + 1, sizeof(*c->named));
	for (int i = 0; i < m->n; i++) {
		c->rank[i] = an->procs[m->proc[i]].rank;
		if (!m->majority || m->grp[i])
			c->named[c->nnamed++] = c->rank[i];
	}
	/* m keeps each output's processes together: sort within each */
	for (int i = 0, j; i < m->n; i = j) {
		for (j = i; j < m->n && m->grp[j] == m->grp[i]; j++)
			;
		qsort(c->rank + i, (size_t)(j - i), sizeof(*c->rank), an_cmp_i64);
	}
	qsort(c->named, (size_t)c->nnamed, sizeof(*c->named), an_cmp_i64);
}

static int same_finding(const struct call *a, const struct call *b)
{
	return a->m->comm_hash == b->m->comm_hash && a->m->majority == b->m->majority &&
		a->nnamed == b->nnamed &&
		!memcmp(a->named, b->named, (size_t)a->nnamed * sizeof(*a->named));
}

static int cmp_call(const void *a, const void *b)
{
	const struct an_fp_mism *x = ((const struct call *)a)->m;
	const struct an_fp_mism *y = ((const struct call *)b)->m;

	if (x->comm_hash != y->comm_hash)
		return x->comm_hash < y->comm_hash ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const char *rank_host(const struct an_state *an, int64_t rank)
{
	for (int i = 0; i < an->nprocs; i++)
		if (an->procs[i].rank == rank && rank >= 0) {
			const struct an_proc *p = &an->procs[i];

			return p->info_host && *p->info_host ? p->info_host : an->hosts[p->host].name;
		}
	return NULL;
}

/* "rank 2 (host-b)", "ranks 0, 1, 3": at most LIST_RANKS of them. */
static void put_ranks(FILE *f, const struct an_state *an, const int64_t *r, int n, int hosts)
{
	fputs(n == 1 ? "rank " : "ranks ", f);
	for (int i = 0; i < n; i++) {
		const char *h = hosts ? rank_host(an, r[i]) : NULL;

		if (i == LIST_RANKS) {
			fprintf(f, " and %d more", n - i);
			break;
		}
		if (r[i] >= 0)
			fprintf(f, "%s%lld", i ? ", " : "", (long long)r[i]);
		else
			fprintf(f, "%s?", i ? ", " : "");
		if (h)
			fprintf(f, " (%s)", h);
	}
}

static void put_size(FILE *f, const struct an_fp_mism *m)
{
	char b[32], c[32];

	an_fmt_bytes(m->bytes, b, sizeof(b));
	an_fmt_bytes(m->compared, c, sizeof(c));
	if (m->compared == m->bytes)
		fprintf(f, "(%s, all of it compared)", b);
	else
		fprintf(f, "(%s, %s compared in %d slice%s)", b, c, m->nslices,
			m->nslices == 1 ? "" : "s");
}

/* The first call in full: who differs from whom, or that none holds a
 * majority and which ranks hold which output. */
static void put_first(FILE *f, const struct an_state *an, const struct call *c)
{
	const struct an_fp_mism *m = c->m;
	char op[64];
	int i = 0, g = 0;

	op_words(an, m->op, op, sizeof(op));
	if (m->majority) {
		while (i < m->n && !m->grp[i])
			i++;
		fputs("data mismatch: ", f);
		put_ranks(f, an, c->named, c->nnamed, 1);
		fprintf(f, " held %s %s output%s from ", m->ngrp > 2 ? "other" : "a different",
			op, m->ngrp > 2 ? "s" : "");
		if (i > LIST_RANKS) {	/* a large comm: its majority as ranges */
			char r[160];

			an_rank_ranges(c->rank, i, r, sizeof(r));
			fprintf(f, "the %d ranks %s", i, r);
		} else {
			put_ranks(f, an, c->rank, i, 0);
		}
		fprintf(f, " at seq %llu on comm %016llx ", (unsigned long long)m->seq,
			(unsigned long long)m->comm_hash);
		put_size(f, m);
		return;
	}
	fprintf(f, "data mismatch: no majority in the %s output at seq %llu on comm %016llx ", op,
		(unsigned long long)m->seq, (unsigned long long)m->comm_hash);
	put_size(f, m);
	fputs(": ", f);
	for (i = 0; i < m->n && g < LIST_OUTPUTS; g++) {
		int j = i;

		while (j < m->n && m->grp[j] == g)
			j++;
		fputs(g ? ", " : "", f);
		put_ranks(f, an, c->rank + i, j - i, 0);
		fputs(j - i == 1 ? " holds " : " hold ", f);
		fputs(g ? "another" : "one output", f);
		i = j;
	}
	if (g < m->ngrp)
		fprintf(f, ", and %d more outputs", m->ngrp - g);
	fputs("; the check cannot tell which is wrong", f);
}

static const struct an_vcomm *vcomm(const struct an_verify *v, uint64_t hash)
{
	int32_t i = ng_u64map_get(&v->comm_map, hash);

	return i < 0 ? NULL : &v->comm[i];
}

static const char *const step_one =
	"run a GPU memory and link test on the named rank's host (dcgmi diag -r 3, or "
	"cuda memtest), read its ECC and NVLink error counters (nvidia-smi -q -d ECC, "
	"nvidia-smi nvlink -e); or check that the program does not write the output buffer "
	"from another stream while the collective runs";
static const char *const step_all =
	"the check cannot tell which rank is wrong: run a GPU memory and link test on each "
	"named host (dcgmi diag -r 3, or cuda memtest), read their ECC and NVLink error "
	"counters (nvidia-smi -q -d ECC, nvidia-smi nvlink -e); or check that the program "
	"does not write the output buffer from another stream while the collective runs";

/* The finding of calls c[first] and those after it that name the same
 * ranks (marked used). */
static void finding(struct an_state *an, struct call *c, int n, int first, char *used)
{
	const struct an_vcomm *vc = vcomm(&an->verify, c[first].m->comm_hash);
	struct an_finding *fd;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int more = 0, listed = 0;

	if (!f)
		return;
	put_first(f, an, &c[first]);
	if (vc)
		fprintf(f, "; %llu of %llu verified calls on this comm differed",
			(unsigned long long)vc->mismatched, (unsigned long long)vc->compared);
	for (int j = first + 1; j < n && c[j].m->comm_hash == c[first].m->comm_hash; j++) {
		if (used[j] || !same_finding(&c[first], &c[j]))
			continue;
		used[j] = 1;
		if (listed == LIST_SEQS) {
			more++;
			continue;
		}
		fprintf(f, "%s%llu", listed ? ", " : "; the same at seq ",
			(unsigned long long)c[j].m->seq);
		listed++;
	}
	if (more)
		fprintf(f, " and %d more", more);
	if (fclose(f) || !buf) {
		free(buf);
		return;
	}
	fd = an_finding_push(an, AN_FK_data_mismatch, buf, c[first].named, c[first].nnamed,
			     c[first].m->majority ? step_one : step_all);
	fd->weight = 1 + listed + more;
	free(buf);
}

void an_verify_findings(struct an_state *an)
{
	const struct an_verify *v = &an->verify;
	struct call *c;
	char *used;

	if (!v->nmism)
		return;
	c = an_xcalloc((size_t)v->nmism, sizeof(*c));
	used = an_xcalloc((size_t)v->nmism, 1);
	for (int i = 0; i < v->nmism; i++)
		call_make(an, &v->mism[i], &c[i]);
	qsort(c, (size_t)v->nmism, sizeof(*c), cmp_call);
	for (int i = 0; i < v->nmism; i++)
		if (!used[i]) {
			used[i] = 1;
			finding(an, c, v->nmism, i, used);
		}
	for (int i = 0; i < v->nmism; i++) {
		free(c[i].rank);
		free(c[i].named);
	}
	free(c);
	free(used);
}
