/*
 * The GPU that stands out among a hung collective's ranks' hang dumps:
 * busy while its peers wait, clocks held down, memory errors (NVML's view
 * when the watchdog fired, preload/watchdog/hang.c).  One finding's
 * evidence, for the findings and report.json.
 */
#include <stdio.h>
#include <stdlib.h>

#include "findings.h"
#include "nvml_abi.h"

static int64_t median_of(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), an_cmp_i64);
	return v[(n - 1) / 2];
}

/* How g differs from the median of its peers, in words; 0 if it does not.
 * Thresholds: what a healthy GPU waiting in NCCL never shows. */
static int differs(const struct an_gpu_health *g, const int64_t *peer_util,
		   const int64_t *peer_thr, const int64_t *peer_err, int npeers,
		   char *why, size_t len)
{
	int64_t u[64], t[64], e[64];
	int n = 0, nu = 0, nt = 0, ne = 0;

	for (int i = 0; i < npeers && i < 64; i++) {
		if (peer_util[i] >= 0)
			u[nu++] = peer_util[i];
		if (peer_thr[i] >= 0)
			t[nt++] = peer_thr[i] & ~(int64_t)NG_NVML_THROTTLE_BENIGN;
		if (peer_err[i] >= 0)
			e[ne++] = peer_err[i];
	}
	why[0] = '\0';
	if (g->util >= 90 && nu && median_of(u, nu) <= 10)
		n += snprintf(why + n, len - n, "%sbusy %lld%% while stuck (its peers %lld%%)",
			      n ? ", " : "", (long long)g->util, (long long)median_of(u, nu));
	if (g->throttle > 0 && (g->throttle & ~(int64_t)NG_NVML_THROTTLE_BENIGN) &&
	    nt && !median_of(t, nt) && n < (int)len)
		n += snprintf(why + n, len - n, "%sclocks held down (reasons 0x%llx; its peers none)",
			      n ? ", " : "", (unsigned long long)g->throttle);
	{
		int64_t err = (g->ecc > 0 ? g->ecc : 0) + (g->retired > 0 ? g->retired : 0);

		if (err > 0 && ne && !median_of(e, ne) && n < (int)len)
			n += snprintf(why + n, len - n, "%s%lld uncorrected ECC errors or retired "
				      "pages (its peers none)", n ? ", " : "", (long long)err);
	}
	return n > 0;
}

int an_dump_sick_gpu(const struct an_state *an, const int64_t *ranks, int nranks,
		     int64_t *rank, const struct an_dump **dump, const struct an_gpu_health **gpu,
		     char *why, size_t whylen)
{
	const struct an_dump *dd[64];
	char words[256];
	int n = 0, found = 0;

	/* One dump per rank of the collective, with health. */
	for (int i = 0; i < an->ndumps && n < 64; i++) {
		const struct an_dump *d = &an->dumps[i];
		int in = 0;

		for (int k = 0; k < nranks && !in; k++)
			in = ranks[k] == d->rank;
		for (int k = 0; k < n && in; k++)
			in = dd[k]->rank != d->rank;
		if (in && d->ngpu && d->rank >= 0)
			dd[n++] = d;
	}
	if (n < 2)
		return 0;	/* nothing to compare with */
	for (int i = 0; i < n; i++) {
		int64_t pu[64], pt[64], pe[64];
		int np = 0;

		for (int k = 0; k < n; k++) {
			const struct an_gpu_health *o = &dd[k]->gpu[0];

			if (k == i)
				continue;
			pu[np] = o->util;
			pt[np] = o->throttle;
			pe[np++] = (o->ecc > 0 ? o->ecc : 0) + (o->retired > 0 ? o->retired : 0);
		}
		if (!differs(&dd[i]->gpu[0], pu, pt, pe, np, words, sizeof(words)))
			continue;
		/* Two or more that differ: no single GPU stands out. */
		if (found++)
			return 0;
		snprintf(why, whylen, "%s", words);
		*rank = dd[i]->rank;
		*dump = dd[i];
		*gpu = &dd[i]->gpu[0];
	}
	return found;
}
