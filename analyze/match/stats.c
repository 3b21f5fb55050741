/*
 * Bandwidth rows: one per op, power-of-two size and comm size, with the
 * collective's time; bus bandwidth with nccl-tests' factors.
 */
#include <stdlib.h>
#include <string.h>

#include "busbw.h"
#include "match.h"

/* nccl-tests' factors, shared with watch's /metrics (busbw.h). */
double an_busbw_factor(const char *op, int nranks)
{
	return ng_busbw_factor(op, nranks);
}

/* Power-of-two bucket: the row of `bytes` is [2^b, 2^(b+1)). */
int an_size_bucket(uint64_t bytes)
{
	return ng_size_class(bytes);
}

struct an_row *an_row_get(struct an_state *an, int op, uint64_t bytes, int nranks)
{
	static __thread int last = -1;
	int b = an_size_bucket(bytes), i;
	struct an_row *r;

	if (last >= 0 && last < an->nrows) {
		r = &an->rows[last];
		if (r->op == op && r->bucket == b && r->nranks == nranks)
			return r;
	}
	for (i = 0; i < an->nrows; i++) {
		r = &an->rows[i];
		if (r->op == op && r->bucket == b && r->nranks == nranks) {
			last = i;
			return r;
		}
	}
	an->rows = an_xrealloc(an->rows, (an->nrows + 1) * sizeof(*r));
	r = &an->rows[an->nrows];
	memset(r, 0, sizeof(*r));
	r->op = op;
	r->bucket = b;
	r->nranks = nranks;
	last = an->nrows++;
	return r;
}

int an_row_add(struct an_row *row, uint64_t bytes, double ns)
{
	row->calls++;
	return an_row_time(row, bytes, ns);
}

int an_row_time(struct an_row *row, uint64_t bytes, double ns)
{
	if (ns <= 0)
		return 0;
	/* A call seen only by its completion (its enqueue lost, or made
	 * before the session): counted here. */
	if (row->timed >= row->calls)
		row->calls++;
	row->timed++;
	row->bytes_sum_timed += bytes;
	row->time_sum_ns += ns;
	an_qs_add(&row->qs, ns);
	return 1;
}

void an_rows_timed(const struct an_state *an, uint64_t *calls, uint64_t *timed)
{
	*calls = *timed = 0;
	for (int i = 0; i < an->nrows; i++) {
		/* Collectives: time in NCCL counts no sends. */
		if (an_is_p2p_op(an->ops[an->rows[i].op]))
			continue;
		*calls += an->rows[i].calls;
		*timed += an->rows[i].timed;
	}
}

const char *an_untimed_hint(const struct an_state *an, char *buf, size_t len)
{
	int off = 0, known = 0;

	/* A process without its process_info (a trace joined late) says
	 * nothing either way. */
	for (int i = 0; i < an->nprocs; i++) {
		known += an->procs[i].has_info != 0;
		off += an->procs[i].has_info && an->procs[i].timing_off;
	}
	if (!off)
		return "NCCLGUARD_SAMPLE=1 times every call";
	if (off == known)
		snprintf(buf, len, "GPU timing was off: NCCLGUARD_TIMING=0");
	else
		snprintf(buf, len, "GPU timing was off in %d of %d processes: NCCLGUARD_TIMING=0; "
			 "NCCLGUARD_SAMPLE=1 times every call in the others", off, known);
	return buf;
}

static const struct an_state *sort_an;

static int cmp_row(const void *a, const void *b)
{
	const struct an_row *x = a, *y = b;
	int c = strcmp(sort_an->ops[x->op], sort_an->ops[y->op]);

	if (c)
		return c;
	if (x->nranks != y->nranks)
		return x->nranks - y->nranks;
	return x->bucket - y->bucket;
}

void an_sort_rows(struct an_state *an)
{
	sort_an = an;
	if (an->nrows)
		qsort(an->rows, an->nrows, sizeof(*an->rows), cmp_row);
	sort_an = NULL;
}

/* A row is far below the link when a large message (1 MiB and up, past
 * the latency-bound sizes) gets less than half of it. */
int an_row_below_link(const struct an_state *an, const struct an_row *r)
{
	double algbw = r->time_sum_ns > 0 ? (double)r->bytes_sum_timed / r->time_sum_ns : 0;

	return an->opts.link_gbps > 0 && r->timed && r->bucket >= 20 &&
		algbw * an_busbw_factor(an->ops[r->op], r->nranks) < 0.5 * an->opts.link_gbps;
}
