/*
 * Hosts' clocks differ.  Collectives end at nearly the same instant on
 * every rank, so the ends of the collectives two hosts share give one
 * host's offset to the reference host (the first DIR's): the median of
 * its last AN_CLOCK_SAMPLES samples.  Until every host has that many (or
 * PEND_MAX collectives wait), finished collectives are held, then
 * accounted on the corrected clocks.
 *
 * The offset keeps following the samples after that, one median per new
 * sample, rather than stay what the first collectives said: those are the
 * worst to judge by (a rank's GPU-to-host time mapping is at its least
 * settled then: measured 2-5 ms off in the first 40 calls of a CPU-backend
 * run, 0.5 ms by the end), and hosts' clocks drift apart over a long job.
 * Each collective is accounted with the offset of its time; the report
 * gives the last one and, where it moved, by how much.
 *
 * "Nearly" excludes one rank: the last to arrive never waited.  The
 * others end when it arrives plus the time to notice it (a kernel's poll,
 * a host thread's wake-up: microseconds on a GPU, milliseconds on a
 * loaded CPU backend); it ends without that.  A straggler is the last
 * every time, so its host's ends would come out early, every time, and
 * the median would keep the bias (measured: a 250 ms skew read as 242.5
 * ms with a 20 ms straggler on the skewed host).  So each collective's
 * shortest GPU slice, the last arrival's (durations need no common
 * clock), is left out of the sample.
 */
#include <stdlib.h>
#include <string.h>

#include "match.h"

#define PEND_MAX	1024		/* finished collectives held for clocks */

/* The median of a host's last samples becomes its offset. */
static void follow(struct an_host *h)
{
	int n = h->nsamples < AN_CLOCK_SAMPLES ? h->nsamples : AN_CLOCK_SAMPLES;
	int64_t tmp[AN_CLOCK_SAMPLES];

	if (!n)
		return;
	memcpy(tmp, h->samples, n * sizeof(*tmp));
	qsort(tmp, n, sizeof(*tmp), an_cmp_i64);
	h->offset_ns = tmp[(n - 1) / 2];
	if (!h->settled || h->offset_ns < h->offset_min)
		h->offset_min = h->offset_ns;
	if (!h->settled || h->offset_ns > h->offset_max)
		h->offset_max = h->offset_ns;
	h->settled = 1;
}

/* The gap between the reference host's mean end of e and another host's
 * is that host's error. */
static void clock_sample(struct an_state *an, const struct an_entry *e)
{
	int i, n = e->nslots < e->comm->nmembers ? e->nslots : e->comm->nmembers;
	struct an_host *ref = &an->hosts[an->ref_host];
	int last = -1, ntimed = 0;

	for (i = 0; i < n; i++)
		if (e->slot[i].flags & AN_S_TIMED) {
			ntimed++;
			if (last < 0 || e->slot[i].dur < e->slot[last].dur)
				last = i;
		}
	/* with two ranks, the other's end alone is no less biased */
	if (ntimed < 3)
		last = -1;
	/* Per-host sums live in the hosts: any number of them. */
	for (i = 0; i < n; i++) {
		struct an_host *h = &an->hosts[an->procs[e->comm->members[i]].host];

		if (i != last && (e->slot[i].flags & AN_S_TIMED)) {
			h->clk_sum += (double)e->slot[i].gpu_end;
			h->clk_n++;
		}
	}
	for (i = 0; i < n; i++) {
		struct an_host *h = &an->hosts[an->procs[e->comm->members[i]].host];

		if (!h->clk_n)
			continue;
		if (ref->clk_n && h != ref) {
			h->samples[h->nsamples++ % AN_CLOCK_SAMPLES] =
				(int64_t)(ref->clk_sum / ref->clk_n - h->clk_sum / h->clk_n);
			if (an->settled)
				follow(h);
		}
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

		if (i != an->ref_host && !h->settled)
			follow(h);
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
	clock_sample(an, e);
	if (an->settled) {
		an_account(an, e);
		return;
	}
	e->next = NULL;
	if (an->pend_tail)
		an->pend_tail->next = e;
	else
		an->pend_head = e;
	an->pend_tail = e;
	an->npend++;
	maybe_settle(an);
}
