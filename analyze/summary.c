/*
 * The text summary: what the report could not see, findings in plain
 * words (worst first, each with its next step), then the bandwidth table in nccl-tests' layout and the time in NCCL per rank.
 */
#include <stdlib.h>

#include "an_priv.h"

/* Each finding, then what to do about it; notes need no step. */
static int findings(struct an_state *an, FILE *f)
{
	const struct an_finding *fd;
	int n = an_findings_list(an, &fd), real = 0;

	for (int i = 0; i < n; i++) {
		fprintf(f, "  %s %s\n", fd[i].severity == AN_SEV_BAD ? "!!" :
			fd[i].severity == AN_SEV_WARN ? " !" : "  ", fd[i].summary);
		if (fd[i].severity != AN_SEV_INFO) {
			fprintf(f, "     next: %s\n", fd[i].next_step);
			real++;
		}
	}
	return real;
}

/* Before anything else: a reader who stops at the first line still
 * learns that the report is not the whole story. */
static void incomplete(const struct an_state *an, FILE *f)
{
	if (!an->ninc)
		return;
	fputs("INCOMPLETE: this report could not see everything\n", f);
	for (int i = 0; i < an->ninc; i++)
		fprintf(f, "   ! %s: %s\n", an->inc[i].what, an->inc[i].detail);
	if (an->inc_more)
		fprintf(f, "   ! and %llu more\n", (unsigned long long)an->inc_more);
	fputc('\n', f);
}

void an_summary(struct an_state *an, FILE *f)
{
	int *order = an_rank_order(an);
	char a[32];
	int nranks = 0, chose = 0;

	incomplete(an, f);
	for (int i = 0; i < an->nprocs; i++)
		nranks += an->procs[i].has_info;
	fprintf(f, "ncclguard analyze: %d rank%s on %d host%s, %llu collectives matched",
		nranks, nranks == 1 ? "" : "s", an->nhosts, an->nhosts == 1 ? "" : "s",
		(unsigned long long)an->matched);
	/* Forced out of a full window: not seen on every rank. */
	if (an->forced)
		fprintf(f, " (%llu of them not seen on every rank)", (unsigned long long)an->forced);
	fprintf(f, ", %llu events, %llu lost\n\n", (unsigned long long)an->events,
		(unsigned long long)an->lost_events);
	fputs("Findings\n", f);
	if (!findings(an, f))
		fputs("     no hangs, mismatches, policy violations, stragglers or config "
		      "differences found\n", f);
	/* NCCL's choices, where its profiler plugin told them. */
	for (int i = 0; i < an->nrows; i++)
		chose |= an->rows[i].nchoice > 0;
	fputs("\nCollectives (time is per call; busbw with nccl-tests' factors)\n", f);
	fprintf(f, "  %-14s %10s %6s %8s %10s %10s %10s %10s %9s %9s%s\n", "op", "size",
		"ranks", "calls", "mean", "p50", "p99", "max", "algbw", "busbw",
		chose ? "  algo/proto/channels" : "");
	for (int i = 0; i < an->nrows; i++) {
		struct an_row *r = &an->rows[i];
		struct an_row_text t;

		an_row_text(r, &t);
		const struct an_choice *c = an_row_choice(r);
		char how[48] = "";

		if (chose)
			snprintf(how, sizeof(how), "  %s/%s/%d%s", c ? c->algo : "-",
				 c ? c->proto : "-", c ? c->nch : 0, r->nchoice > 1 ? " (mixed)" : "");
		fprintf(f, "  %-14s %10s %6d %8llu %10s %10s %10s %10s %9.2f %9.2f%s%s\n",
			an->ops[r->op], t.size, r->nranks, (unsigned long long)r->calls, t.mean,
			t.p50, t.p99, t.max, t.algbw,
			t.algbw * an_busbw_factor(an->ops[r->op], r->nranks), how,
			an_row_below_link(an, r) ? "  << slow" : "");
	}
	if (!an->nrows)
		fputs("  (none)\n", f);
	fputs("\nTime in NCCL (GPU busy in collectives / wall time)\n", f);
	{
		uint64_t calls = 0, timed = 0;

		for (int i = 0; i < an->nrows; i++) {
			calls += an->rows[i].calls;
			timed += an->rows[i].timed;
		}
		/* Sampled GPU timing (the shim's default below 1 MiB): say so
		 * rather than show a busy time that looks low. */
		if (timed < calls)
			fprintf(f, "  from the %llu of %llu calls that were GPU-timed "
				"(NCCLGUARD_SAMPLE=1 times every call)\n",
				(unsigned long long)timed, (unsigned long long)calls);
	}
	for (int k = 0; k < an->nprocs; k++) {
		const struct an_proc *p = &an->procs[order[k]];

		if (p->rank < 0)
			continue;
		an_fmt_ns((double)p->busy_ns, a, sizeof(a));
		fprintf(f, "  rank %-5lld %-24s %5.1f%%  (%s)\n", (long long)p->rank,
			p->info_host && *p->info_host ? p->info_host : an->hosts[p->host].name,
			100 * an_comm_fraction(p), a);
	}
	free(order);
}
