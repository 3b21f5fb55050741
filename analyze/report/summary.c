/*
 * The text summary: what the report could not see, findings in plain
 * words (worst first, each with its next step), then the bandwidth table in nccl-tests' layout and the time in NCCL per rank.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "esc.h"

/* Each finding, then what to do about it; notes need no step. */
static int findings(struct an_state *an, FILE *f)
{
	const struct an_finding *fd;
	int n = an_findings_list(an, &fd), real = 0;
	char *show = an_xcalloc((size_t)n + 1, 1);
	int *more = an_xcalloc((size_t)n + 1, sizeof(*more));

	an_findings_pick(fd, n, show, more);
	for (int i = 0; i < n; i++) {
		real += fd[i].severity != AN_SEV_INFO;
		if (!show[i])
			continue;
		/* Findings quote hosts, environments and names from traces. */
		fprintf(f, "  %s ", fd[i].severity == AN_SEV_BAD ? "!!" :
			fd[i].severity == AN_SEV_WARN ? " !" : "  ");
		ng_esc_put(f, fd[i].summary);
		fputc('\n', f);
		if (fd[i].severity != AN_SEV_INFO) {
			fputs("     next: ", f);
			ng_esc_put(f, fd[i].next_step);
			fputc('\n', f);
		}
		if (more[i] > 0)
			fprintf(f, "     ... and %d more %s findings (see findings[] in report.json)\n",
				more[i], fd[i].kind);
	}
	free(show);
	free(more);
	return real;
}

/* Before anything else: a reader who stops at the first line still
 * learns that the report is not the whole story. */
static void incomplete(const struct an_state *an, FILE *f)
{
	if (!an->ninc)
		return;
	if (an->no_events)
		fputs("INCOMPLETE: the trace holds no events: the disk was full (run.json)\n", f);
	else
		fputs("INCOMPLETE: this report could not see everything\n", f);
	for (int i = 0; i < an->ninc && i < AN_SUMMARY_LIST; i++) {
		/* Details quote run records, session and folder names. */
		fprintf(f, "   ! %s: ", an->inc[i].what);
		ng_esc_put(f, an->inc[i].detail);
		fputc('\n', f);
	}
	if (an->inc_more || an->ninc > AN_SUMMARY_LIST)
		fprintf(f, "   ! and %llu more (see incomplete[] in report.json)\n",
			(unsigned long long)an->inc_more +
			(an->ninc > AN_SUMMARY_LIST ? an->ninc - AN_SUMMARY_LIST : 0));
	fputc('\n', f);
}

static const struct an_state *by_frac_an;

static int cmp_frac(const void *a, const void *b)
{
	double x = an_comm_fraction(&by_frac_an->procs[*(const int *)a]);
	double y = an_comm_fraction(&by_frac_an->procs[*(const int *)b]);

	return x < y ? -1 : x > y;
}

static void busy_rank(const struct an_state *an, FILE *f, const struct an_proc *p)
{
	char a[32], note[128], host[256];

	an_fmt_ns((double)an_busy_time(p), a, sizeof(a));
	an_busy_note(p, note, sizeof(note));
	ng_esc_str(host, sizeof(host), p->info_host && *p->info_host ? p->info_host :
		   an->hosts[p->host].name);
	fprintf(f, "  rank %-5lld %-24s %5.1f%%  (%s%s%s)\n", (long long)p->rank, host,
		100 * an_comm_fraction(p), a, *note ? "; " : "", note);
}

/* Every rank while few; past AN_SUMMARY_LIST the least and the most busy
 * half each, in that order (comm_fraction[] of report.json has them all). */
static void busy_ranks(const struct an_state *an, FILE *f, const int *order)
{
	int *r = an_xcalloc((size_t)an->nprocs + 1, sizeof(*r));
	int n = 0, half = AN_SUMMARY_LIST / 2;

	for (int k = 0; k < an->nprocs; k++)
		if (an->procs[order[k]].rank >= 0)
			r[n++] = order[k];
	if (n <= AN_SUMMARY_LIST) {
		for (int k = 0; k < n; k++)
			busy_rank(an, f, &an->procs[r[k]]);
		free(r);
		return;
	}
	by_frac_an = an;
	qsort(r, (size_t)n, sizeof(*r), cmp_frac);
	fprintf(f, "  %d ranks: the %d least and the %d most (median %.1f%%):\n", n, half, half,
		100 * an_comm_fraction(&an->procs[r[n / 2]]));
	for (int k = 0; k < half; k++)
		busy_rank(an, f, &an->procs[r[k]]);
	fputs("  ...\n", f);
	for (int k = n - half; k < n; k++)
		busy_rank(an, f, &an->procs[r[k]]);
	fprintf(f, "  ... and %d more ranks (see comm_fraction[] in report.json)\n", n - 2 * half);
	free(r);
}

#define SUMMARY_HW_ROWS	8	/* counter changes listed; report.json has them all */

/* What the hardware samplers saw change, in brief; only where the trace
 * holds their events. */
static void hardware(const struct an_state *an, FILE *f)
{
	const struct an_hw *hw = &an->hw;

	if (!hw->nsmp && !hw->nchg && !hw->ndev)
		return;
	fprintf(f, "\nHardware (%d counter change%s on %d sampled host%s)\n", hw->nchg,
		hw->nchg == 1 ? "" : "s", hw->nsmp, hw->nsmp == 1 ? "" : "s");
	for (int i = 0; i < hw->nchg && i < SUMMARY_HW_ROWS; i++) {
		const struct an_hw_change *c = &hw->chg[i];
		char t[32], host[64], dev[96], ctr[64], r[128];

		an_fmt_utc(c->time_ns, 1, t, sizeof(t));
		an_rank_ranges(c->ranks, c->nranks, r, sizeof(r));
		fprintf(f, "  %s  %s %s %s %llu -> %llu%s  ranks %s\n", t,
			ng_esc_str(host, sizeof(host), c->host),
			ng_esc_str(dev, sizeof(dev), c->device),
			ng_esc_str(ctr, sizeof(ctr), c->counter), (unsigned long long)c->before,
			(unsigned long long)c->after,
			c->flags & NG_HW_SATURATED ? " (saturated)" : "", c->nranks ? r : "none");
	}
	if (hw->nchg > SUMMARY_HW_ROWS)
		fprintf(f, "  ... and %d more (see hardware[] in report.json)\n",
			hw->nchg - SUMMARY_HW_ROWS);
}

void an_summary(struct an_state *an, FILE *f)
{
	int *order = an_rank_order(an);
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
	fprintf(f, ", %llu events, %llu lost\n", (unsigned long long)an->events,
		(unsigned long long)an->lost_events);
	/* What no interposer sees, where the trace says it may have happened. */
	if (an->census.device_procs)
		fprintf(f, "Not recorded: GPU-initiated traffic (the libnccl of %d process%s "
			"exports NCCL's device API, whose kernels communicate without a host "
			"call)\n", an->census.device_procs,
			an->census.device_procs == 1 ? "" : "es");
	if (an_verify_on(an)) {
		char v[512];

		an_verify_sentence(an, v, sizeof(v));
		fprintf(f, "%s\n", v);
	}
	fputc('\n', f);
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
		char how[160] = "", op[128], algo[72], proto[40];
		int ce = c && an_algo_is_ce(c->algo);

		/* The copy engine has no protocol: "-", not an empty name. */
		if (chose)
			snprintf(how, sizeof(how), "  %s/%s/%d%s",
				 ng_esc_str(algo, sizeof(algo), c ? an_algo_label(c->algo) : "-"),
				 ng_esc_str(proto, sizeof(proto), c && !ce ? c->proto : "-"),
				 c ? c->nch : 0, r->nchoice > 1 ? " (mixed)" : "");
		fprintf(f, "  %-14s %10s %6d %8llu %10s %10s %10s %10s %9.2f %9.2f%s%s\n",
			ng_esc_str(op, sizeof(op), an->ops[r->op]), t.size, r->nranks, (unsigned long long)r->calls, t.mean,
			t.p50, t.p99, t.max, t.algbw,
			t.algbw * an_busbw_factor(an->ops[r->op], r->nranks), how,
			an_row_below_link(an, r) ? "  << slow" : "");
		if (*t.note)
			fprintf(f, "  %-14s %10s ^ %s\n", "", "", t.note);
	}
	if (!an->nrows)
		fputs("  (none)\n", f);
	fputs("\nTime in NCCL (GPU busy in collectives / wall time)\n", f);
	{
		uint64_t calls, timed, unknown = 0;
		char hint[160];

		an_rows_timed(an, &calls, &timed);
		for (int i = 0; i < an->nprocs; i++)
			unknown += an->procs[i].busy_unknown;
		/* Sampled GPU timing (the shim's default): say how much of
		 * the figure is an estimate. */
		if (timed < calls)
			fprintf(f, "  %llu of %llu collectives GPU-timed; the others counted at "
				"their rank's mean time for the same operation and size "
				"(%s)\n", (unsigned long long)timed, (unsigned long long)calls,
				an_untimed_hint(an, hint, sizeof(hint)));
		if (unknown)
			fprintf(f, "  %llu untimed calls of sizes timed on no rank are not counted\n",
				(unsigned long long)unknown);
	}
	busy_ranks(an, f, order);
	hardware(an, f);
	free(order);
}
