/*
 * Hosts' clocks differ.  Collectives end at nearly the same instant on
 * every rank, so the ends of the first finished collectives give each
 * host's offset to the reference host (the first DIR's); until every host
 * has AN_CLOCK_SAMPLES of them (or PEND_MAX collectives wait), finished
 * collectives are held, then accounted on the corrected clocks.
 */
#include <stdlib.h>
#include <string.h>

#include "an_priv.h"

#define PEND_MAX	1024		/* finished collectives held for clocks */

/* The gap between the reference host's mean end of e and another host's
 * is that host's error. */
static void clock_sample(struct an_state *an, const struct an_entry *e)
{
	int i, n = e->nslots < e->comm->nmembers ? e->nslots : e->comm->nmembers;
	struct an_host *ref = &an->hosts[an->ref_host];

	/* Per-host sums live in the hosts: any number of them. */
	for (i = 0; i < n; i++) {
		struct an_host *h = &an->hosts[an->procs[e->comm->members[i]].host];

		if (e->slot[i].flags & AN_S_TIMED) {
			h->clk_sum += (double)e->slot[i].gpu_end;
			h->clk_n++;
		}
	}
	for (i = 0; i < n; i++) {
		struct an_host *h = &an->hosts[an->procs[e->comm->members[i]].host];

		if (!h->clk_n)
			continue;
		if (ref->clk_n && h != ref && h->nsamples < AN_CLOCK_SAMPLES)
			h->samples[h->nsamples++] = (int64_t)(ref->clk_sum / ref->clk_n -
							      h->clk_sum / h->clk_n);
		if (h != ref) {
			h->clk_sum = 0;
			h->clk_n = 0;
		}
	}
	ref->clk_sum = 0;
	ref->clk_n = 0;
}

void an_clock_settle(struct an_state *an)
{
	struct an_entry *e, *next;
	int i;

	for (i = 0; i < an->nhosts; i++) {
		struct an_host *h = &an->hosts[i];

		if (i == an->ref_host || h->settled)
			continue;
		if (h->nsamples) {
			int64_t *tmp = an_xcalloc(h->nsamples, sizeof(*tmp));

			memcpy(tmp, h->samples, h->nsamples * sizeof(*tmp));
			qsort(tmp, h->nsamples, sizeof(*tmp), an_cmp_i64);
			h->offset_ns = tmp[(h->nsamples - 1) / 2];
			free(tmp);
		}
		h->settled = 1;
	}
	an->settled = 1;
	for (e = an->pend_head; e; e = next) {
		next = e->next;
		an_account(an, e);
	}
	an->pend_head = an->pend_tail = NULL;
	an->npend = 0;
}

static void maybe_settle(struct an_state *an)
{
	int i;

	if (an->npend >= PEND_MAX) {
		an_clock_settle(an);
		return;
	}
	for (i = 0; i < an->nhosts; i++)
		if (i != an->ref_host && an->hosts[i].nsamples < AN_CLOCK_SAMPLES)
			return;
	an_clock_settle(an);
}

void an_clock_finished(struct an_state *an, struct an_entry *e)
{
	if (an->settled) {
		an_account(an, e);
		return;
	}
	clock_sample(an, e);
	e->next = NULL;
	if (an->pend_tail)
		an->pend_tail->next = e;
	else
		an->pend_head = e;
	an->pend_tail = e;
	an->npend++;
	maybe_settle(an);
}
