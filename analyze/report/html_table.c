/*
 * The tables of report.html.  Collectives: one block per op and comm
 * size, worst first, open while a screenful of rows allows, its line of
 * totals always shown; in it the sizes worst first (under half the link,
 * then by the time they took), the first few and the rest folded.
 * Timeouts, injections and policy decisions: the ranks that share one
 * event on one row.  The ranks: who ran where with what.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define TB_SHOWN	10	/* sizes of an op shown before the fold */
#define TB_OPEN_ROWS	20	/* rows shown open, worst op first, before a click */

static double row_busbw(const struct an_state *an, const struct an_row *r)
{
	double algbw = r->time_sum_ns > 0 ? (double)r->bytes_sum_timed / r->time_sum_ns : 0;

	return algbw * an_busbw_factor(an->ops[r->op], r->nranks);
}

static const struct an_state *worst_an;

/* Worst first: under half the link, then timed before untimed, then the
 * time the size took, then its calls. */
static int cmp_worst(const void *a, const void *b)
{
	const struct an_row *x = &worst_an->rows[*(const int *)a];
	const struct an_row *y = &worst_an->rows[*(const int *)b];
	int sx = an_row_below_link(worst_an, x), sy = an_row_below_link(worst_an, y);

	if (sx != sy)
		return sy - sx;
	if (!x->timed != !y->timed)
		return !x->timed - !y->timed;
	if (x->qs.sum != y->qs.sum)
		return x->qs.sum < y->qs.sum ? 1 : -1;
	return (x->calls < y->calls) - (x->calls > y->calls);
}

static void size_row(struct an_state *an, FILE *f, int i, double total)
{
	struct an_row *r = &an->rows[i];
	struct an_row_text t;

	an_row_text(r, &t);
	fprintf(f, "<tr%s><td>%s</td><td>%llu", an_row_below_link(an, r) ? " class=\"slow\"" : "",
		t.size, (unsigned long long)r->calls);
	if (*t.note)	/* beside the times it qualifies */
		fprintf(f, " <small>(%s)</small>", t.note);
	/* NCCL ran it on the copy engine: said, as NCCL's kernels' choices
	 * are not shown here. */
	if (an_row_choice(r) && an_algo_is_ce(an_row_choice(r)->algo))
		fprintf(f, " <small>(%s)</small>", an_algo_label(an_row_choice(r)->algo));
	fprintf(f, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%.3g</td><td>%.3g</td><td>",
		t.mean, t.p50, t.p99, t.max, t.algbw, row_busbw(an, r));
	if (r->timed && total > 0)
		fprintf(f, "%.1f%%", 100 * r->qs.sum / total);
	else
		fputs("-", f);
	fputs("</td></tr>\n", f);
}

static void size_head(FILE *f)
{
	fputs("<table class=\"sizes\"><tr><th>size</th><th>calls</th><th>mean</th><th>p50</th>"
	      "<th>p99</th><th>max</th><th>algbw GB/s</th><th>busbw GB/s</th>"
	      "<th>share of time</th></tr>\n", f);
}

/* One op on one comm size: rows i..j-1, and what its line says. */
struct group {
	int i, j, slow;
	uint64_t calls, timed;
	double total, peak;
};

static struct group group_of(const struct an_state *an, int i, int j)
{
	struct group g = { .i = i, .j = j };

	for (int k = i; k < j; k++) {
		const struct an_row *r = &an->rows[k];

		g.calls += r->calls;
		g.timed += r->timed;
		g.total += r->qs.sum;
		g.slow += an_row_below_link(an, r);
		if (r->timed && row_busbw(an, r) > g.peak)
			g.peak = row_busbw(an, r);
	}
	return g;
}

/* Worst first: more sizes under half the link, then more time. */
static int cmp_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->slow != y->slow)
		return y->slow - x->slow;
	return (x->total < y->total) - (x->total > y->total);
}

static void op_block(struct an_state *an, FILE *f, const struct group *g, int open)
{
	int n = g->j - g->i, *idx = an_xcalloc((size_t)n, sizeof(*idx));
	char took[32];

	for (int k = 0; k < n; k++)
		idx[k] = g->i + k;
	worst_an = an;
	qsort(idx, n, sizeof(*idx), cmp_worst);
	worst_an = NULL;
	an_fmt_ns(g->total, took, sizeof(took));
	fprintf(f, "<details class=\"op\"%s><summary><b>", open ? " open" : "");
	an_html_esc(f, an->ops[an->rows[g->i].op]);
	fprintf(f, "</b> on %d ranks &middot; %d size%s &middot; %llu calls &middot; %s timed "
		"(%llu calls) &middot; peak busbw %.3g GB/s", an->rows[g->i].nranks, n,
		n == 1 ? "" : "s", (unsigned long long)g->calls, took, (unsigned long long)g->timed,
		g->peak);
	if (g->slow)
		fprintf(f, " &middot; <span class=\"bad\">%d size%s under half the link</span>",
			g->slow, g->slow == 1 ? "" : "s");
	fputs("</summary>\n", f);
	size_head(f);
	for (int k = 0; k < n && k < TB_SHOWN; k++)
		size_row(an, f, idx[k], g->total);
	fputs("</table>\n", f);
	if (n > TB_SHOWN) {
		fprintf(f, "<details class=\"more\"><summary>the other %d sizes</summary>\n",
			n - TB_SHOWN);
		size_head(f);
		for (int k = TB_SHOWN; k < n; k++)
			size_row(an, f, idx[k], g->total);
		fputs("</table></details>\n", f);
	}
	fputs("</details>\n", f);
	free(idx);
}

void an_html_collectives(struct an_state *an, FILE *f)
{
	struct group *g;
	int ng = 0;

	if (!an->nrows) {
		fputs("<p class=\"empty\">No collective completed on every rank.</p>\n", f);
		return;
	}
	fputs("<p class=\"note\">One block per operation and communicator size, the worst "
	      "first; in each, the worst sizes first: under half the link (--link-gbps), then "
	      "by the time they took. Times are per call, bandwidth with nccl-tests' "
	      "factors.</p>\n", f);
	g = an_xcalloc((size_t)an->nrows, sizeof(*g));
	/* rows are sorted by op, comm size, size */
	for (int i = 0; i < an->nrows;) {
		int j = i;

		while (j < an->nrows && an->rows[j].op == an->rows[i].op &&
		       an->rows[j].nranks == an->rows[i].nranks)
			j++;
		g[ng++] = group_of(an, i, j);
		i = j;
	}
	qsort(g, ng, sizeof(*g), cmp_group);
	/* The worst ops open while their rows fit TB_OPEN_ROWS. */
	for (int k = 0, room = TB_OPEN_ROWS; k < ng; k++) {
		int rows = g[k].j - g[k].i < TB_SHOWN ? g[k].j - g[k].i : TB_SHOWN;

		op_block(an, f, &g[k], rows <= room);
		room = rows <= room ? room - rows : 0;
	}
	free(g);
}

/* Ranks as "0-3,7", from an unsorted list that may repeat them. */
static void ranks_text(const int64_t *r, int n, char *buf, size_t len)
{
	int64_t *s = an_xcalloc((size_t)n + 1, sizeof(*s));
	int m = 0;

	memcpy(s, r, (size_t)n * sizeof(*s));
	qsort(s, n, sizeof(*s), an_cmp_i64);
	for (int i = 0; i < n; i++)
		if (!m || s[m - 1] != s[i])
			s[m++] = s[i];
	an_rank_ranges(s, m, buf, len);
	free(s);
}

static int same(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

void an_html_timeouts(struct an_state *an, FILE *f)
{
	char *done = an_xcalloc((size_t)an->ntimeouts + 1, 1), list[256], w[32];
	int64_t *r = an_xcalloc((size_t)an->ntimeouts + 1, sizeof(*r));

	if (!an->ntimeouts) {
		fputs("<p class=\"empty\">No watchdog timeout fired (NCCLGUARD_TIMEOUT, "
		      "--timeout).</p>\n", f);
		goto out;
	}
	fputs("<table class=\"txt\"><tr><th>comm</th><th>seq</th><th>op</th><th>stuck in</th>"
	      "<th>action</th><th>ranks</th><th>waited</th></tr>\n", f);
	for (int i = 0; i < an->ntimeouts; i++) {
		const struct an_timeout_row *t = &an->timeouts[i];
		uint64_t waited = 0;
		int n = 0;

		if (done[i])
			continue;
		for (int k = i; k < an->ntimeouts; k++) {
			const struct an_timeout_row *u = &an->timeouts[k];

			if (done[k] || u->comm_hash != t->comm_hash || u->seq != t->seq ||
			    !same(u->op, t->op) || !same(u->what, t->what) ||
			    !same(u->action, t->action))
				continue;
			done[k] = 1;
			r[n++] = u->rank;
			waited = u->waited_ns > waited ? u->waited_ns : waited;
		}
		ranks_text(r, n, list, sizeof(list));
		an_fmt_ns((double)waited, w, sizeof(w));
		fprintf(f, "<tr><td>%016llx</td><td>%llu</td><td>",
			(unsigned long long)t->comm_hash, (unsigned long long)t->seq);
		an_html_esc(f, t->op);
		fputs("</td><td>", f);
		an_html_esc(f, t->what);
		fputs("</td><td>", f);
		an_html_esc(f, t->action);
		fprintf(f, "</td><td>%s</td><td>%s</td></tr>\n", list, w);
	}
	fputs("</table>\n", f);
	if (an->ntimeouts >= AN_LIST_MAX)
		fprintf(f, "<p class=\"note\">Only the first %d timeouts are kept.</p>\n",
			AN_LIST_MAX);
out:
	free(done);
	free(r);
}

void an_html_injections(struct an_state *an, FILE *f)
{
	char *done = an_xcalloc((size_t)an->ninjects + 1, 1), list[256], seqs[256];
	int64_t *r = an_xcalloc((size_t)an->ninjects + 1, sizeof(*r));
	int64_t *s = an_xcalloc((size_t)an->ninjects + 1, sizeof(*s));

	if (!an->ninjects) {
		fputs("<p class=\"empty\">No fault was injected (--inject, NCCLGUARD_INJECT)."
		      "</p>\n", f);
		goto out;
	}
	fputs("<table class=\"txt\"><tr><th>kind</th><th>detail</th><th>op</th><th>comm</th>"
	      "<th>seqs</th><th>ranks</th><th>times</th></tr>\n", f);
	for (int i = 0; i < an->ninjects; i++) {
		const struct an_inject_row *in = &an->injects[i];
		int n = 0;

		if (done[i])
			continue;
		for (int k = i; k < an->ninjects; k++) {
			const struct an_inject_row *u = &an->injects[k];

			if (done[k] || u->comm_hash != in->comm_hash || !same(u->kind, in->kind) ||
			    !same(u->op, in->op) || !same(u->detail, in->detail))
				continue;
			done[k] = 1;
			r[n] = u->rank;
			s[n++] = (int64_t)u->seq;
		}
		ranks_text(r, n, list, sizeof(list));
		ranks_text(s, n, seqs, sizeof(seqs));
		fputs("<tr><td>", f);
		an_html_esc(f, in->kind);
		fputs("</td><td>", f);
		an_html_esc(f, in->detail);
		fputs("</td><td>", f);
		an_html_esc(f, in->op);
		fprintf(f, "</td><td>%016llx</td><td>%s</td><td>%s</td><td>%d</td></tr>\n",
			(unsigned long long)in->comm_hash, seqs, list, n);
	}
	fputs("</table>\n", f);
	if (an->ninjects >= AN_LIST_MAX)
		fprintf(f, "<p class=\"note\">Only the first %d injections are kept.</p>\n",
			AN_LIST_MAX);
out:
	free(done);
	free(r);
	free(s);
}

void an_html_policy(struct an_state *an, FILE *f)
{
	char list[256];

	if (!an->npolicy) {
		fputs("<p class=\"empty\">No policy decision was recorded (no policy file, or "
		      "it changed nothing).</p>\n", f);
		return;
	}
	fputs("<table class=\"txt\"><tr><th>setting</th><th>action</th><th>the job's value</th>"
	      "<th>effective value</th><th>ranks</th></tr>\n", f);
	for (int i = 0; i < an->npolicy; i++) {
		const struct an_policy_row *p = &an->policy[i];

		ranks_text(p->ranks, p->nranks, list, sizeof(list));
		fprintf(f, "<tr%s><td>", !strcmp(p->action, "violation") ? " class=\"slow\"" : "");
		an_html_esc(f, p->key);
		fputs("</td><td>", f);
		an_html_esc(f, p->action);
		fputs("</td><td>", f);
		an_html_esc(f, p->user_value);
		fputs("</td><td>", f);
		an_html_esc(f, p->effective_value);
		fprintf(f, "</td><td>%s</td></tr>\n", list);
	}
	fputs("</table>\n", f);
}

static void clocks(struct an_state *an, FILE *f)
{
	fputs("<h3>Clocks</h3>\n<table><tr><th>host</th><th>offset applied</th>"
	      "<th>samples</th></tr>\n", f);
	for (int i = 0; i < an->nhosts; i++) {
		fputs("<tr><td>", f);
		an_html_esc(f, an->hosts[i].name);
		fprintf(f, "%s</td><td>%+.3f ms</td><td>%d</td></tr>\n",
			i == an->ref_host ? " (reference)" : "",
			(double)an->hosts[i].offset_ns / 1e6, an->hosts[i].nsamples);
	}
	fputs("</table>\n", f);
}

#define RANK_ROWS	512	/* rows of the ranks' table at most */

/* Whether rank q goes on p's row of a grouped table: same host, NCCL,
 * NUMA node and interface, the next rank. */
static int same_row(const struct an_state *an, const struct an_proc *p,
		    const struct an_proc *q, const struct an_proc *last)
{
	return q->rank == last->rank + 1 && !strcmp(an_html_host(an, p), an_html_host(an, q)) &&
	       p->nccl_version == q->nccl_version && p->numa_node == q->numa_node &&
	       same(p->socket_ifname, q->socket_ifname);
}

/* Past RANK_ROWS ranks a row per run of neighbouring ranks alike. */
static void rank_groups(struct an_state *an, FILE *f, const int *order, int n)
{
	int rows = 0, k = 0;
	char ver[32];

	while (k < an->nprocs && rows < RANK_ROWS) {
		const struct an_proc *p = &an->procs[order[k]], *last = p;
		int e = k + 1, m = 1;

		if (!p->has_info) {
			k++;
			continue;
		}
		for (; e < an->nprocs && an->procs[order[e]].has_info &&
		       same_row(an, p, &an->procs[order[e]], last); e++, m++)
			last = &an->procs[order[e]];
		an_version_str(p->nccl_version, ver, sizeof(ver));
		if (m == 1)
			fprintf(f, "<tr><td>%lld</td><td>", (long long)p->rank);
		else
			fprintf(f, "<tr><td>%lld-%lld</td><td>", (long long)p->rank,
				(long long)last->rank);
		an_html_esc(f, an_html_host(an, p));
		if (m == 1) {
			fprintf(f, "</td><td>%lld</td><td>%s</td><td>", (long long)p->pid, ver);
			an_html_esc(f, p->gpu_pci_bus_id);
		} else {
			fprintf(f, "</td><td>%d</td><td>%s</td><td>%d GPUs", m, ver, m);
		}
		fprintf(f, "</td><td>%lld</td><td>", (long long)p->numa_node);
		an_html_esc(f, p->socket_ifname);
		fputs("</td></tr>\n", f);
		rows++;
		k = e;
	}
	fputs("</table>\n", f);
	fprintf(f, "<p class=\"note\">%d ranks: a row per run of neighbouring ranks on one "
		"host with the same NCCL, NUMA node and interface (pids: how many)%s. Each "
		"rank's own pid and GPU: ranks[] in report.json.</p>\n", n,
		k < an->nprocs ? ", the first 512 rows" : "");
}

void an_html_ranks(struct an_state *an, FILE *f, const int *order)
{
	int n = 0;
	char ver[32];

	for (int k = 0; k < an->nprocs; k++)
		n += an->procs[k].has_info;
	if (!n) {
		fputs("<p class=\"empty\">No rank announced itself (process_info).</p>\n", f);
		return;
	}
	fprintf(f, "<details%s><summary>%d rank%s on %d host%s</summary>\n<table class=\"txt\">"
		"<tr><th>rank</th><th>host</th><th>pid</th><th>NCCL</th><th>GPU</th><th>NUMA</th>"
		"<th>interface</th></tr>\n", n <= 16 ? " open" : "", n, n == 1 ? "" : "s",
		an->nhosts, an->nhosts == 1 ? "" : "s");
	if (n > RANK_ROWS) {
		rank_groups(an, f, order, n);
		fputs("</details>\n", f);
		goto clocks;
	}
	for (int k = 0; k < an->nprocs; k++) {
		const struct an_proc *p = &an->procs[order[k]];

		if (!p->has_info)
			continue;
		an_version_str(p->nccl_version, ver, sizeof(ver));
		fprintf(f, "<tr><td>%lld</td><td>", (long long)p->rank);
		an_html_esc(f, an_html_host(an, p));
		fprintf(f, "</td><td>%lld</td><td>%s</td><td>", (long long)p->pid, ver);
		an_html_esc(f, p->gpu_pci_bus_id);
		fprintf(f, "</td><td>%lld</td><td>", (long long)p->numa_node);
		an_html_esc(f, p->socket_ifname);
		fputs("</td></tr>\n", f);
	}
	fputs("</table></details>\n", f);
clocks:
	if (an->nhosts > 1)
		clocks(an, f);
}
