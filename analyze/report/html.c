/*
 * report.html: one self-contained page (no script, no external file) that
 * opens offline.  At the top the verdict: the worst finding in one
 * sentence with its next step, or "healthy" with what was checked and
 * what the trace could not show.  Then what the report could not see,
 * the findings as cards (the list the summary and report.json show), the
 * hangs drawn, the plots, the tables.  Each part is a <section> with a
 * stable id; html_*.c draw them.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "version.h"

static const char css[] =
	"body{font:14px/1.45 system-ui,sans-serif;margin:24px 32px;color:#222;max-width:1100px}\n"
	"h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;"
	"border-bottom:1px solid #ddd;padding-bottom:3px}h3{font-size:15px;margin:16px 0 4px}\n"
	".meta,.cap,.note,.empty{color:#555}.cap{font-size:13px;max-width:820px}\n"
	"nav{margin:8px 0 0;font-size:13px}nav a{margin-right:12px;color:#1f5fa8}\n"
	".verdict{margin:18px 0 8px;padding:14px 18px;border-radius:6px;border-left:8px solid}\n"
	".verdict p{margin:4px 0}.verdict .head{font-size:19px;font-weight:600}\n"
	".verdict.ok{background:#e8f5e9;border-color:#2e7d32}"
	".verdict.bad{background:#fdecea;border-color:#c62828}"
	".verdict.warn{background:#fff6e5;border-color:#ef8f00}\n"
	".card{margin:8px 0;padding:8px 12px;border:1px solid #ddd;border-left:6px solid #999;"
	"border-radius:4px;background:#fafafa}\n"
	".card.bad{border-left-color:#c62828}.card.warn{border-left-color:#ef8f00}"
	".card.info{border-left-color:#90a4ae;color:#444}\n"
	".card p{margin:3px 0}.card .who,.card .next{font-size:13px;color:#444}\n"
	".badge{display:inline-block;font-size:11px;font-weight:600;text-transform:uppercase;"
	"padding:1px 6px;border-radius:3px;margin-right:6px;color:#fff;background:#78909c}\n"
	".bad .badge{background:#c62828}.warn .badge{background:#e08600}\n"
	"span.bad{color:#c62828;font-weight:600}\n"
	"table{border-collapse:collapse;margin:4px 0 8px}td,th{padding:3px 10px;"
	"border-bottom:1px solid #ddd;text-align:right}th{background:#f0f0f0}\n"
	"td:first-child,th:first-child,table.txt td,table.txt th{text-align:left}\n"
	"tr.slow td{background:#fff0e0}"
	"td.st{color:#c62828;font-weight:600}\n"
	"details.op{margin:6px 0;border:1px solid #e0e0e0;border-radius:4px;padding:4px 8px}\n"
	"details summary{cursor:pointer}details.more{margin:0 0 6px}\n"
	"ul.inc li{margin:2px 0}\n"
	"svg.plot{display:block;margin:6px 0}\n"
	"svg text{font-family:system-ui,sans-serif}"
	"svg text.ax{font-size:11px;fill:#555}svg text.lg{font-size:12px;fill:#222}\n"
	"svg text.ti{font-size:12px;fill:#333}svg text.hl{font-size:11px;fill:#222}\n"
	"svg text.st{fill:#c62828;font-weight:600}svg text.sq{font-size:10px;fill:#444}\n"
	"svg text.sq.hung{fill:#b34700;font-weight:600}\n"
	"svg rect.done{fill:#5b8db8}svg rect.host{fill:#b9cfe3}svg line.enq{stroke:#333}\n"
	"svg rect.wait{fill:#f4a261;stroke:#b34700}\n"
	"svg rect.queued{fill:#ddd;stroke:#999;stroke-dasharray:2 2}\n"
	"svg rect.drop{fill:#c62828}svg rect.miss{fill:#fdecea;stroke:#c62828;"
	"stroke-dasharray:5 3}\n"
	"svg path.tmo{fill:#6a1b9a}svg line.zero{stroke:#b34700;stroke-dasharray:3 3}\n"
	".legend{font-size:12px;color:#444}.legend .k{display:inline-block;width:14px;height:10px;"
	"margin:0 4px 0 10px;vertical-align:middle}\n"
	".k.done{background:#5b8db8}.k.host{background:#b9cfe3}.k.enq{width:2px;height:14px;"
	"background:#333}.k.wait{background:#f4a261;border:1px solid #b34700}"
	".k.queued{background:#ddd;border:1px dashed #999}.k.drop{background:#c62828}"
	".k.miss{background:#fdecea;border:1px dashed #c62828}.k.tmo{background:#6a1b9a;"
	"width:8px}\n"
	".hang{margin:10px 0 18px}\n";

/* The sections, in page order: id, heading, link text. */
enum { S_FINDINGS, S_HANGS, S_BANDWIDTH, S_STRAGGLERS, S_BUSY, S_COLLECTIVES, S_TIMEOUTS,
       S_HARDWARE, S_VERIFY, S_INJECTIONS, S_POLICY, S_RANKS, S_N };
static const struct { const char *id, *title, *nav; } sections[S_N] = {
	[S_FINDINGS] = { "findings", "Findings", "findings" },
	[S_HANGS] = { "hangs", "Hangs", "hangs" },
	[S_BANDWIDTH] = { "bandwidth", "Bus bandwidth by message size", "bandwidth" },
	[S_STRAGGLERS] = { "stragglers", "Stragglers: lateness per rank over time",
			   "stragglers" },
	[S_BUSY] = { "nccl-time", "Time in NCCL per rank", "time in NCCL" },
	[S_COLLECTIVES] = { "collectives", "Collectives by operation and size", "collectives" },
	[S_TIMEOUTS] = { "timeouts", "Watchdog timeouts", "timeouts" },
	[S_HARDWARE] = { "hardware", "Hardware counter changes", "hardware" },
	[S_VERIFY] = { "verification", "Output verification", "verification" },
	[S_INJECTIONS] = { "injections", "Injected faults", "injections" },
	[S_POLICY] = { "policy", "Policy decisions", "policy" },
	[S_RANKS] = { "ranks", "Ranks", "ranks" },
};

static const char *sev_class(int severity)
{
	return severity == AN_SEV_BAD ? "bad" : severity == AN_SEV_WARN ? "warn" : "info";
}

/* "hang: allreduce ..." less its "hang: ": the kind is on the badge. */
static const char *without_kind(const char *s)
{
	const char *c = strstr(s, ": ");

	return c && c - s <= 12 && !memchr(s, ',', (size_t)(c - s)) ? c + 2 : s;
}

static void kind_name(FILE *f, const char *kind)
{
	for (const char *p = kind; *p; p++)
		fputc(*p == '_' ? ' ' : *p, f);
}

static void who(const struct an_finding *fd, FILE *f)
{
	if (!fd->nranks && !fd->nhosts)
		return;
	fputs("<p class=\"who\">", f);
	if (fd->nranks) {
		fputs(fd->nranks == 1 ? "rank " : "ranks ", f);
		for (int j = 0; j < fd->nranks && j < 32; j++) {
			if (fd->ranks[j] < 0)
				fprintf(f, "%s?", j ? ", " : "");
			else
				fprintf(f, "%s%lld", j ? ", " : "", (long long)fd->ranks[j]);
		}
		if (fd->nranks > 32)
			fprintf(f, " and %d more", fd->nranks - 32);
	}
	if (fd->nhosts) {
		fputs(fd->nranks ? " on " : "", f);
		for (int j = 0; j < fd->nhosts && j < 8; j++) {
			fputs(j ? ", " : "", f);
			an_html_esc(f, fd->hosts[j]);
		}
		if (fd->nhosts > 8)
			fprintf(f, " and %d more hosts", fd->nhosts - 8);
	}
	fputs("</p>\n", f);
}

static void card(const struct an_finding *fd, FILE *f)
{
	fprintf(f, "<div class=\"card %s\"><p><span class=\"badge\">", sev_class(fd->severity));
	kind_name(f, fd->kind);
	fputs("</span>", f);
	an_html_esc(f, without_kind(fd->summary));
	fputs("</p>\n", f);
	who(fd, f);
	if (fd->severity != AN_SEV_INFO) {
		fputs("<p class=\"next\"><b>Next:</b> ", f);
		an_html_esc(f, fd->next_step);
		fputs("</p>\n", f);
	}
	fputs("</div>\n", f);
}

/* What a healthy verdict rests on, and what it could not see. */
static void checked(struct an_state *an, FILE *f, int nranks)
{
	uint64_t calls, timed;

	an_rows_timed(an, &calls, &timed);
	fprintf(f, "<p>Checked: %llu collectives matched across %d rank%s for hangs, "
		"mismatched calls and stragglers (%llu with every rank's own arrival time)",
		(unsigned long long)an->matched, nranks, nranks == 1 ? "" : "s",
		(unsigned long long)an->straggle_calls);
	if (an->p2p_calls)
		fprintf(f, "; %llu sends and receives for hangs",
			(unsigned long long)an->p2p_calls);
	fputs("; policy and settings across ranks", f);
	if (an->opts.link_gbps > 0)
		fprintf(f, "; every size against half the %.1f GB/s link", an->opts.link_gbps);
	fputs(".</p>\n<p>Not seen:", f);
	if (an->opts.link_gbps <= 0)
		fputs(" the link's speed (give --link-gbps to check bandwidth against it);", f);
	if (timed < calls)
		fprintf(f, " GPU times of %llu of %llu calls (sampled; NCCLGUARD_SAMPLE=1 times "
			"every call);", (unsigned long long)(calls - timed),
			(unsigned long long)calls);
	if (an->untimed && timed >= calls)
		fprintf(f, " GPU times of %llu collectives;", (unsigned long long)an->untimed);
	if (an->census.device_procs)
		fprintf(f, " GPU-initiated traffic (the libnccl of %d process%s exports NCCL's "
			"device API);", an->census.device_procs,
			an->census.device_procs == 1 ? "" : "es");
	fputs(" what the job did outside NCCL.</p>\n", f);
}

static void verdict(struct an_state *an, FILE *f, int nranks)
{
	const struct an_finding *fd;
	int n = an_findings_list(an, &fd), real = 0;

	for (int i = 0; i < n; i++)
		real += fd[i].severity != AN_SEV_INFO;
	if (real) {
		fprintf(f, "<section id=\"verdict\" class=\"verdict %s\"><p class=\"head\">",
			sev_class(fd[0].severity));
		an_html_esc(f, fd[0].summary);
		fputs("</p>\n<p><b>Next:</b> ", f);
		an_html_esc(f, fd[0].next_step);
		fputs("</p>\n", f);
		if (real > 1)
			fprintf(f, "<p><a href=\"#findings\">%d more finding%s below</a>.</p>\n",
				real - 1, real == 2 ? "" : "s");
		fputs("</section>\n", f);
		return;
	}
	if (!an->matched && !an->p2p_calls) {
		fputs("<section id=\"verdict\" class=\"verdict warn\"><p class=\"head\">Nothing to "
		      "judge: the trace holds no collective and no send or receive.</p>\n"
		      "<p><b>Next:</b> Check that the job called NCCL under ncclguard (LD_PRELOAD, "
		      "ncclguard run) and that the trace folder is the right one.</p>"
		      "</section>\n", f);
		return;
	}
	fprintf(f, "<section id=\"verdict\" class=\"verdict ok\"><p class=\"head\">Healthy: no "
		"hang, mismatched call, policy violation, differing setting or straggler found."
		"</p>\n");
	checked(an, f, nranks);
	fputs("</section>\n", f);
}

static void incomplete(const struct an_state *an, FILE *f)
{
	if (!an->ninc)
		return;
	fputs("<section id=\"incomplete\"><h2>Incomplete: this report could not see everything"
	      "</h2>\n<ul class=\"inc\">\n", f);
	for (int i = 0; i < an->ninc; i++) {
		fputs("<li><b>", f);
		an_html_esc(f, an->inc[i].what);
		fputs("</b>: ", f);
		an_html_esc(f, an->inc[i].detail);
		fputs("</li>\n", f);
	}
	if (an->inc_more)
		fprintf(f, "<li>and %llu more</li>\n", (unsigned long long)an->inc_more);
	fputs("</ul></section>\n", f);
}

/* As many of a kind as the summary shows, the rest counted. */
static void findings(struct an_state *an, FILE *f)
{
	const struct an_finding *fd;
	int n = an_findings_list(an, &fd);
	char *show = an_xcalloc((size_t)n + 1, 1);
	int *more = an_xcalloc((size_t)n + 1, sizeof(*more));

	if (!n)
		fputs("<p class=\"empty\">None.</p>\n", f);
	an_findings_pick(fd, n, show, more);
	for (int i = 0; i < n; i++) {
		if (!show[i])
			continue;
		card(&fd[i], f);
		if (more[i] > 0) {
			fprintf(f, "<p class=\"more\">... and %d more ", more[i]);
			an_html_esc(f, fd[i].kind);
			fputs(" findings (see findings[] in report.json)</p>\n", f);
		}
	}
	free(show);
	free(more);
}

/* The hardware's section only where the trace holds the sampler's events,
 * verification's where ranks ran with it: a trace without them gives the
 * page it always gave. */
static int shown(const struct an_state *an, int s)
{
	if (s == S_VERIFY)
		return an_verify_on(an);
	return s != S_HARDWARE || an->hw.nsmp || an->hw.nchg || an->hw.ndev;
}

static void section(struct an_state *an, FILE *f, int s, const int *order, int nranks)
{
	fprintf(f, "<section id=\"%s\"><h2>%s</h2>\n", sections[s].id, sections[s].title);
	switch (s) {
	case S_FINDINGS: findings(an, f); break;
	case S_HANGS: an_html_hangs(an, f); break;
	case S_BANDWIDTH: an_html_bandwidth(an, f); break;
	case S_STRAGGLERS: an_html_heat(an, f, order); break;
	case S_BUSY: an_html_busy(an, f, order, nranks); break;
	case S_COLLECTIVES: an_html_collectives(an, f); break;
	case S_TIMEOUTS: an_html_timeouts(an, f); break;
	case S_HARDWARE: an_html_hardware(an, f); break;
	case S_VERIFY: an_html_verify(an, f); break;
	case S_INJECTIONS: an_html_injections(an, f); break;
	case S_POLICY: an_html_policy(an, f); break;
	case S_RANKS: an_html_ranks(an, f, order); break;
	}
	fputs("</section>\n", f);
}

int an_report_html(struct an_state *an, FILE *f)
{
	int *order = an_rank_order(an);
	int nranks = 0;

	for (int i = 0; i < an->nprocs; i++)
		nranks += an->procs[i].rank >= 0;
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		"<meta name=\"generator\" content=\"ncclguard %s\">\n<title>ncclguard report"
		"</title>\n<style>\n%s</style></head><body>\n<h1>ncclguard report</h1>\n",
		NCCLGUARD_VERSION, css);
	fprintf(f, "<p class=\"meta\">%d rank%s on %d host%s &middot; %llu collectives matched",
		nranks, nranks == 1 ? "" : "s", an->nhosts, an->nhosts == 1 ? "" : "s",
		(unsigned long long)an->matched);
	if (an->forced)
		fprintf(f, " (%llu of them not seen on every rank)",
			(unsigned long long)an->forced);
	fprintf(f, " &middot; %llu events, %llu lost", (unsigned long long)an->events,
		(unsigned long long)an->lost_events);
	if (*an_job_id(an)) {
		fputs(" &middot; job ", f);
		an_html_esc(f, an_job_id(an));
	}
	fprintf(f, " &middot; ncclguard %s</p>\n<nav>", NCCLGUARD_VERSION);
	for (int s = 0; s < S_N; s++)
		if (shown(an, s))
			fprintf(f, "<a href=\"#%s\">%s</a>", sections[s].id, sections[s].nav);
	fputs("</nav>\n", f);
	verdict(an, f, nranks);
	incomplete(an, f);
	for (int s = 0; s < S_N; s++)
		if (shown(an, s))
			section(an, f, s, order, nranks);
	fputs("</body></html>\n", f);
	free(order);
	return ferror(f) ? -1 : 0;
}
