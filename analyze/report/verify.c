/*
 * Output verification in the reports (docs/verification.md): the
 * summary's line, how many calls were compared and how often ranks
 * sampled, and report.html's table of it per comm.  Both only where a
 * process ran with verification or a fingerprint is in the trace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define HTML_VERIFY_ROWS	1000	/* comms shown; report.json keeps every one */

static const char *ordinal(uint64_t n)
{
	if (n % 100 >= 11 && n % 100 <= 13)
		return "th";
	return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

/* "every 1024th", "every 64th to 1024th", "every": how often the ranks
 * with verification on sampled; the ranks with it off in *off, of *nr
 * ranks. */
static void period(const struct an_state *an, char *buf, size_t len, int64_t *off, int *noff,
		   int *nr)
{
	uint64_t lo = 0, hi = 0;

	*noff = *nr = 0;
	for (int i = 0; i < an->nprocs; i++) {
		const struct an_proc *p = &an->procs[i];
		uint64_t n = p->verify_every;

		if (!p->has_info || p->rank < 0)
			continue;
		(*nr)++;
		if (!n) {
			off[(*noff)++] = p->rank;
			continue;
		}
		lo = !lo || n < lo ? n : lo;
		hi = n > hi ? n : hi;
	}
	qsort(off, (size_t)*noff, sizeof(*off), an_cmp_i64);
	if (!hi)	/* fingerprints from processes that did not say how often */
		snprintf(buf, len, "every Nth");
	else if (hi == 1)
		snprintf(buf, len, "every");
	else if (lo == hi || lo == 1)
		snprintf(buf, len, "every %llu%s", (unsigned long long)hi, ordinal(hi));
	else
		snprintf(buf, len, "every %llu%s to %llu%s", (unsigned long long)lo, ordinal(lo),
			 (unsigned long long)hi, ordinal(hi));
}

void an_verify_sentence(const struct an_state *an, char *buf, size_t len)
{
	const struct an_verify *v = &an->verify;
	uint64_t compared = 0, mism = 0, unpaired = 0;
	int64_t *off = an_xcalloc((size_t)an->nprocs + 1, sizeof(*off));
	int comms = 0, noff, nr, w;
	char every[64], r[128];

	for (int i = 0; i < v->ncomm; i++) {
		compared += v->comm[i].compared;
		mism += v->comm[i].mismatched;
		unpaired += v->comm[i].unpaired;
		comms += v->comm[i].compared > 0;
	}
	period(an, every, sizeof(every), off, &noff, &nr);
	if (compared)
		w = snprintf(buf, len, "verification: %llu call%s compared on %d comm%s (%s "
			     "all-reduce, all-gather, broadcast per comm), %llu mismatched",
			     (unsigned long long)compared, compared == 1 ? "" : "s", comms,
			     comms == 1 ? "" : "s", every, (unsigned long long)mism);
	else if (unpaired)
		w = snprintf(buf, len, "verification on (%s call per comm), no call compared: "
			     "the ranks' fingerprints never met", every);
	else
		w = snprintf(buf, len, "verification on (%s call per comm), no call compared: "
			     "the comms made fewer calls", every);
	if (unpaired && w > 0 && (size_t)w < len)
		w += snprintf(buf + w, len - (size_t)w, "; %llu sampled call%s with one rank's "
			      "fingerprint only or different slices", (unsigned long long)unpaired,
			      unpaired == 1 ? "" : "s");
	/* some ranks off among others on: their calls went unchecked */
	if (noff && noff < nr && w > 0 && (size_t)w < len) {
		an_rank_ranges(off, noff, r, sizeof(r));
		snprintf(buf + w, len - (size_t)w, "; off on rank%s %s", noff == 1 ? "" : "s", r);
	}
	free(off);
}

void an_html_verify(struct an_state *an, FILE *f)
{
	const struct an_verify *v = &an->verify;
	char line[512];

	an_verify_sentence(an, line, sizeof(line));
	fputs("<p class=\"cap\">", f);
	an_html_esc(f, line);
	fputs(". A finding names the ranks whose output differed.</p>\n", f);
	if (!v->ncomm)
		return;
	fputs("<table class=\"txt\"><tr><th>comm</th><th>calls compared</th><th>mismatched</th>"
	      "<th>unpaired</th></tr>\n", f);
	for (int i = 0; i < v->ncomm && i < HTML_VERIFY_ROWS; i++) {
		const struct an_vcomm *c = &v->comm[i];

		fprintf(f, "<tr%s><td>%016llx</td><td>%llu</td><td>%llu</td><td>%llu</td></tr>\n",
			c->mismatched ? " class=\"slow\"" : "", (unsigned long long)c->hash,
			(unsigned long long)c->compared, (unsigned long long)c->mismatched,
			(unsigned long long)c->unpaired);
	}
	fputs("</table>\n", f);
	if (v->ncomm > HTML_VERIFY_ROWS)
		fprintf(f, "<p class=\"note\">The first %d of %d comms; report.json's "
			"verification[] has every one.</p>\n", HTML_VERIFY_ROWS, v->ncomm);
}
