/*
 * Aggregates: bandwidth rows per op and size, quantiles in bounded memory,
 * lateness and the straggler test, the straggler heat map, config diffs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"

/* nccl-tests' factors: the bytes each rank moves over the bus, relative to
 * the nccl-tests size (the total for allgather, reducescatter, alltoall). */
double an_busbw_factor(const char *op, int nranks)
{
	double n = nranks > 0 ? nranks : 1;

	if (!op)
		return 1;
	if (!strcmp(op, "allreduce"))
		return 2 * (n - 1) / n;
	if (!strcmp(op, "allgather") || !strcmp(op, "reducescatter") ||
	    !strcmp(op, "alltoall") || !strcmp(op, "gather") || !strcmp(op, "scatter"))
		return (n - 1) / n;
	return 1;	/* broadcast, reduce, send, recv */
}

/* Power-of-two bucket: the row of `bytes` is [2^b, 2^(b+1)). */
int an_size_bucket(uint64_t bytes)
{
	int b = -1;

	while (bytes) {
		bytes >>= 1;
		b++;
	}
	return b;
}

/* ---- quantiles -------------------------------------------------------- */

static int hist_bin(double v)
{
	int oct, sub;
	double m;

	if (v < 1)
		return 0;
	m = frexp(v, &oct);		/* v = m * 2^oct, m in [0.5, 1) */
	oct -= 1;
	sub = (int)((m * 2 - 1) * AN_QS_SUB);
	if (sub >= AN_QS_SUB)
		sub = AN_QS_SUB - 1;
	if (oct >= 64)
		return AN_QS_BINS - 1;
	return oct * AN_QS_SUB + sub;
}

static double hist_mid(int bin)
{
	int oct = bin / AN_QS_SUB, sub = bin % AN_QS_SUB;

	return ldexp(1 + (sub + 0.5) / AN_QS_SUB, oct);
}

int an_qs_add(struct an_qs *q, double v)
{
	if (q->n == 0 || v > q->max)
		q->max = v;
	q->sum += v;
	if (!q->hist && q->n < AN_QS_EXACT) {
		if (!q->exact) {
			q->exact = calloc(AN_QS_EXACT, sizeof(double));
			if (!q->exact)
				return -1;
		}
		q->exact[q->n++] = v;
		return 0;
	}
	if (!q->hist) {
		q->hist = calloc(AN_QS_BINS, sizeof(uint32_t));
		if (!q->hist)
			return -1;
		for (uint64_t i = 0; i < q->n; i++)
			q->hist[hist_bin(q->exact[i])]++;
		free(q->exact);
		q->exact = NULL;
	}
	q->hist[hist_bin(v)]++;
	q->n++;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest rank: the smallest value with at least p of the samples at or
 * below it.  Exact below AN_QS_EXACT samples, within 1.1% above. */
double an_qs_quantile(struct an_qs *q, double p)
{
	uint64_t k, seen = 0;

	if (!q->n)
		return 0;
	k = (uint64_t)ceil(p * (double)q->n);
	if (k < 1)
		k = 1;
	if (k > q->n)
		k = q->n;
	if (q->exact) {
		qsort(q->exact, q->n, sizeof(double), cmp_double);
		return q->exact[k - 1];
	}
	for (int i = 0; i < AN_QS_BINS; i++) {
		seen += q->hist[i];
		if (seen >= k) {
			double v = hist_mid(i);

			return v > q->max ? q->max : v;
		}
	}
	return q->max;
}

void an_qs_free(struct an_qs *q)
{
	free(q->exact);
	free(q->hist);
	q->exact = NULL;
	q->hist = NULL;
}

/* ---- rows ------------------------------------------------------------- */

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
	r = realloc(an->rows, (an->nrows + 1) * sizeof(*r));
	if (!r) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		exit(1);
	}
	an->rows = r;
	r = &an->rows[an->nrows];
	memset(r, 0, sizeof(*r));
	r->op = op;
	r->bucket = b;
	r->nranks = nranks;
	last = an->nrows++;
	return r;
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

/* ---- stragglers ------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Lateness against the lower median: with two ranks that is the gap
 * between them; with several, a group of slow ranks all count as late,
 * where "minus the second-to-last" would call them all on time. */
int an_lateness(const int64_t *enter, int n, int64_t *late_ns)
{
	int64_t sorted[n > 0 ? n : 1], mid;
	int last = 0, i;

	if (n < 2)
		return -1;
	memcpy(sorted, enter, n * sizeof(*enter));
	qsort(sorted, n, sizeof(*sorted), cmp_i64);
	mid = sorted[(n - 1) / 2];
	for (i = 0; i < n; i++) {
		late_ns[i] = enter[i] - mid;
		if (enter[i] > enter[last])
			last = i;
	}
	return last;
}

/*
 * Last far more often than chance, at least three times, and late by
 * enough to matter (10 us on average).  "More often than chance": under
 * chance a rank is last in a collective of n ranks with probability 1/n;
 * the Chernoff bound exp(-N KL(k/N || q)) on being last k times of N (q
 * the mean chance) must be under 0.001 shared among all the ranks tested.
 * Three standard deviations per rank, as before, flagged a few ranks of
 * every 256-rank job with nothing but jitter: each rank is a test, and
 * the tail of a count with a mean under one is far from normal.
 */
#define AN_STRAGGLER_ALPHA 0.001
int an_straggler_flagged(const struct an_state *an, const struct an_proc *p)
{
	double n = (double)p->coll_calls, k = (double)p->late_calls, q, f, kl;

	if (p->late_calls < 3 || !p->coll_calls || p->late_sum_ns / k < 10e3)
		return 0;
	q = p->chance / n;
	f = k / n;
	if (q <= 0 || q >= 1 || f <= q)
		return 0;
	kl = f * log(f / q) + (f < 1 ? (1 - f) * log((1 - f) / (1 - q)) : 0);
	return -n * kl < log(AN_STRAGGLER_ALPHA / (an->nprocs > 1 ? an->nprocs : 1));
}

void an_heat_add(struct an_state *an, struct an_proc *p, int64_t t, int64_t late_ns)
{
	int64_t bin;

	if (an->heat_t0 == INT64_MIN)
		an->heat_t0 = t;
	bin = t < an->heat_t0 ? 0 : (t - an->heat_t0) / an->heat_w;
	while (bin >= AN_HEAT_BINS) {
		/* Twice as wide: merge neighbours, for every rank. */
		for (int i = 0; i < an->nprocs; i++) {
			struct an_proc *q = &an->procs[i];

			for (int k = 0; k < AN_HEAT_BINS / 2; k++) {
				q->heat_sum[k] = q->heat_sum[2 * k] + q->heat_sum[2 * k + 1];
				q->heat_n[k] = q->heat_n[2 * k] + q->heat_n[2 * k + 1];
			}
			memset(&q->heat_sum[AN_HEAT_BINS / 2], 0,
			       AN_HEAT_BINS / 2 * sizeof(double));
			memset(&q->heat_n[AN_HEAT_BINS / 2], 0,
			       AN_HEAT_BINS / 2 * sizeof(uint32_t));
		}
		an->heat_w *= 2;
		bin = (t - an->heat_t0) / an->heat_w;
	}
	p->heat_sum[bin] += (double)late_ns;
	p->heat_n[bin]++;
}

double an_comm_fraction(const struct an_proc *p)
{
	int64_t wall = p->last_ts - p->first_ts;
	double f;

	if (wall <= 0)
		return 0;
	f = (double)p->busy_ns / (double)wall;
	return f > 1 ? 1 : f;
}

/* ---- names ------------------------------------------------------------ */

const char *an_dtype_name(int64_t dtype)
{
	static const char *const names[] = {
		"int8", "uint8", "int32", "uint32", "int64", "uint64",
		"float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2",
	};

	if (dtype >= 0 && dtype < (int64_t)(sizeof(names) / sizeof(names[0])))
		return names[dtype];
	return "unknown";
}

/* ncclGetVersion's code: major*10000 + minor*100 + patch since 2.9,
 * major*1000 + minor*100 + patch before. */
void an_version_str(int64_t code, char *buf, size_t len)
{
	if (code <= 0)
		snprintf(buf, len, "unknown");
	else if (code >= 10000)
		snprintf(buf, len, "%lld.%lld.%lld", (long long)(code / 10000),
			 (long long)(code % 10000 / 100), (long long)(code % 100));
	else
		snprintf(buf, len, "%lld.%lld.%lld", (long long)(code / 1000),
			 (long long)(code % 1000 / 100), (long long)(code % 100));
}

/* ---- config mismatches ------------------------------------------------ */

struct kv {
	char *val;
	int64_t rank;
};

static int cmp_kv(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;
	int c = strcmp(x->val, y->val);

	if (c)
		return c;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The value of NCCL_X in "K=V;K=V", or NULL. */
static char *env_value(const char *env, const char *key)
{
	size_t klen = strlen(key);
	const char *p = env;

	while (p && *p) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len > klen && !strncmp(p, key, klen) && p[klen] == '=')
			return strndup(p + klen + 1, len - klen - 1);
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

static char *field_value(const struct an_proc *p, const char *key)
{
	char buf[64];

	if (!strcmp(key, "nccl_version")) {
		an_version_str(p->nccl_version, buf, sizeof(buf));
		return strdup(buf);
	}
	if (!strcmp(key, "nccl_path"))
		return strdup(p->nccl_path ? p->nccl_path : "");
	if (!strcmp(key, "driver_version") || !strcmp(key, "cudart_version")) {
		snprintf(buf, sizeof(buf), "%lld", (long long)(key[0] == 'd' ?
			 p->driver_version : p->cudart_version));
		return strdup(buf);
	}
	if (!strcmp(key, "socket_ifname"))
		return strdup(p->socket_ifname ? p->socket_ifname : "");
	if (!strcmp(key, "policy_digest"))
		return strdup(p->policy_digest ? p->policy_digest : "");
	{
		char *v = env_value(p->env, key);

		return v ? v : strdup("(unset)");
	}
}

static void cfg_add_key(struct an_state *an, const char *key)
{
	struct kv *kv = calloc(an->nprocs ? an->nprocs : 1, sizeof(*kv));
	struct an_cfg_key *c;
	int n = 0, i, distinct = 0;

	if (!kv)
		return;
	for (i = 0; i < an->nprocs; i++) {
		if (!an->procs[i].has_info)
			continue;
		kv[n].val = field_value(&an->procs[i], key);
		if (!kv[n].val)
			break;
		kv[n++].rank = an->procs[i].rank;
	}
	qsort(kv, n, sizeof(*kv), cmp_kv);
	for (i = 0; i < n; i++)
		if (!i || strcmp(kv[i].val, kv[i - 1].val))
			distinct++;
	c = distinct > 1 ? realloc(an->cfg, (an->ncfg + 1) * sizeof(*an->cfg)) : NULL;
	if (!c) {
		for (i = 0; i < n; i++)
			free(kv[i].val);
		free(kv);
		return;
	}
	an->cfg = c;
	c = &an->cfg[an->ncfg++];
	c->key = strdup(key);
	c->n = n;
	c->val = calloc(n, sizeof(*c->val));
	c->rank = calloc(n, sizeof(*c->rank));
	for (i = 0; i < n; i++) {
		if (c->val)
			c->val[i] = kv[i].val;
		else
			free(kv[i].val);
		if (c->rank)
			c->rank[i] = kv[i].rank;
	}
	if (!c->key || !c->val || !c->rank) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		exit(1);
	}
	free(kv);
}

/* process_info fields and NCCL_* variables that differ across ranks. */
void an_config_mismatches(struct an_state *an)
{
	static const char *const fixed[] = {
		"nccl_version", "nccl_path", "driver_version", "cudart_version",
		"socket_ifname", "policy_digest",
	};
	char **names = NULL;
	int nnames = 0, i;

	for (i = 0; i < (int)(sizeof(fixed) / sizeof(fixed[0])); i++)
		cfg_add_key(an, fixed[i]);
	/* The union of NCCL_* names set on any rank. */
	for (i = 0; i < an->nprocs; i++) {
		const char *p = an->procs[i].env;

		while (p && *p) {
			const char *eq = strchr(p, '='), *end = strchr(p, ';');
			char *name, **grown;
			int k;

			if (!eq || (end && end < eq))
				break;
			name = strndup(p, eq - p);
			for (k = 0; name && k < nnames; k++)
				if (!strcmp(names[k], name))
					break;
			if (name && k == nnames && (grown = realloc(names, (nnames + 1) * sizeof(*names)))) {
				names = grown;
				names[nnames++] = name;
			} else {
				free(name);
			}
			p = end ? end + 1 : NULL;
		}
	}
	if (nnames)
		qsort(names, nnames, sizeof(*names), cmp_str);
	for (i = 0; i < nnames; i++) {
		cfg_add_key(an, names[i]);
		free(names[i]);
	}
	free(names);
}

void an_row_text(struct an_row *r, struct an_row_text *t)
{
	t->algbw = r->time_sum_ns > 0 ? (double)r->bytes_sum_timed / r->time_sum_ns : 0;
	an_fmt_bytes(r->bucket < 0 ? 0 : 1ULL << r->bucket, t->size, sizeof(t->size));
	if (!r->timed) {	/* sampled timing skipped every call of this row */
		strcpy(t->mean, "-");
		strcpy(t->p50, "-");
		strcpy(t->p99, "-");
		strcpy(t->max, "-");
		return;
	}
	an_fmt_ns(r->qs.n ? r->qs.sum / (double)r->qs.n : 0, t->mean, sizeof(t->mean));
	an_fmt_ns(an_qs_quantile(&r->qs, 0.5), t->p50, sizeof(t->p50));
	an_fmt_ns(an_qs_quantile(&r->qs, 0.99), t->p99, sizeof(t->p99));
	an_fmt_ns(r->qs.max, t->max, sizeof(t->max));
}
