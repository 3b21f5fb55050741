/*
 * What /metrics counts beside the tracker, as events arrive: per process
 * its calls, the completions it timed and their time, its timeouts; per
 * op, size class and comm size the calls and the timed calls' time and
 * bus bytes (nccl-tests' factors, busbw.h); per host the events lost; per
 * host, device and counter the hardware changes.  Only with --metrics:
 * a watch without it pays nothing more per event.
 *
 * Completions are sampled by the shim, so the time in NCCL is that of the
 * calls timed, not of every call; rates and bandwidths are over those.
 */
#include <stdlib.h>
#include <string.h>

#include "busbw.h"
#include "lv_priv.h"

static struct lv_mx_proc *proc_of(struct lv_mx *mx, int proc)
{
	if (proc >= mx->nproc) {
		int n = proc + 1 > 2 * mx->nproc ? proc + 1 : 2 * mx->nproc;

		mx->proc = lv_xrealloc(mx->proc, n * sizeof(*mx->proc));
		memset(mx->proc + mx->nproc, 0, (n - mx->nproc) * sizeof(*mx->proc));
		mx->nproc = n;
	}
	return &mx->proc[proc];
}

static int op_of(struct lv_mx *mx, const char *op)
{
	for (int i = 0; i < mx->nops; i++)
		if (!strcmp(mx->ops[i], op))
			return i;
	if (mx->nops == LV_MX_OPS)
		return -1;
	mx->ops[mx->nops] = lv_xstrdup(op);
	return mx->nops++;
}

/* The row of a call; NULL past LV_MX_ROWS rows (counted). */
static struct lv_mx_row *row_of(struct lv_mx *mx, int j, const struct ev_rec_coll *r)
{
	int op = r->op ? op_of(mx, r->op) : -1;
	int sc = ng_size_class(r->bytes);
	struct lv_mx_row *w;

	for (int i = 0; i < mx->nrows; i++) {
		w = &mx->rows[i];
		if (w->op == op && w->size_class == sc && w->nranks == r->nranks && w->job == j)
			return w;
	}
	if (op < 0 || mx->nrows == LV_MX_ROWS) {
		mx->rows_over++;
		return NULL;
	}
	w = &mx->rows[mx->nrows++];
	memset(w, 0, sizeof(*w));
	w->job = j;
	w->op = op;
	w->size_class = sc;
	w->nranks = r->nranks;
	return w;
}

static void hw_change(struct lv_mx *mx, int host, int j, const struct ev_rec_hw *r)
{
	const char *dev = r->device ? r->device : "", *ctr = r->counter ? r->counter : "";
	struct lv_mx_hw *h;

	for (int i = 0; i < mx->nhw; i++) {
		h = &mx->hw[i];
		if (h->host == host && h->job == j && !strncmp(h->device, dev, sizeof(h->device) - 1) &&
		    !strncmp(h->counter, ctr, sizeof(h->counter) - 1))
			goto found;
	}
	if (mx->nhw == LV_MX_HW) {
		mx->hw_over++;
		return;
	}
	mx->hw = lv_xrealloc(mx->hw, (mx->nhw + 1) * sizeof(*mx->hw));
	h = &mx->hw[mx->nhw++];
	memset(h, 0, sizeof(*h));
	h->host = host;
	h->job = j;
	snprintf(h->device, sizeof(h->device), "%s", dev);
	snprintf(h->counter, sizeof(h->counter), "%s", ctr);
found:
	h->changes++;
	h->value = r->after;
}

void lv_mx_event(struct lv_state *st, int proc, int j, const struct ev_event *ev)
{
	struct lv_mx *mx = &st->mx;
	struct lv_mx_row *w;
	struct lv_mx_proc *p;

	if (!mx->on)
		return;
	if (ev->kind == EV_HW_CHANGE) {
		hw_change(mx, ev->src.host, j, &ev->r.hw);
		return;
	}
	if (proc < 0)
		return;
	p = proc_of(mx, proc);
	switch (ev->kind) {
	case EV_ENQ:
		p->calls++;
		if (ev->r.coll.seq && (w = row_of(mx, j, &ev->r.coll)))
			w->calls++;
		break;
	case EV_DONE:
		if (ev->r.coll.duration_ns <= 0)
			break;
		p->timed++;
		p->timed_ns += ev->r.coll.duration_ns;
		if (ev->r.coll.seq && (w = row_of(mx, j, &ev->r.coll))) {
			w->timed++;
			w->timed_ns += ev->r.coll.duration_ns;
			w->bus_bytes += (double)ev->r.coll.bytes *
					ng_busbw_factor(ev->r.coll.op, (int)ev->r.coll.nranks);
		}
		break;
	case EV_TIMEOUT:
		p->timeouts++;
		break;
	default:
		break;
	}
}

void lv_mx_lost(struct lv_state *st, int host, int discarded, uint64_t n)
{
	struct lv_mx *mx = &st->mx;

	if (!mx->on || host < 0)
		return;
	if (host >= mx->nlost) {
		mx->lost = lv_xrealloc(mx->lost, (host + 1) * sizeof(*mx->lost));
		memset(mx->lost + mx->nlost, 0, (host + 1 - mx->nlost) * sizeof(*mx->lost));
		mx->nlost = host + 1;
	}
	if (discarded)
		mx->lost[host].discarded += n;
	else
		mx->lost[host].implausible += n;
}

void lv_mx_free(struct lv_mx *mx)
{
	free(mx->proc);
	for (int i = 0; i < mx->nops; i++)
		free(mx->ops[i]);
	free(mx->lost);
	free(mx->hw);
	memset(mx, 0, sizeof(*mx));
}
