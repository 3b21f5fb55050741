/*
 * What watch prints: every report, the job's progress per host and
 * communicator (each rank's last collective entered), the hangs, the
 * watchdogs' timeouts since the last report.  Text groups ranks at the
 * same seq ("ranks 0-7 at seq 1520"); --json writes one object per line,
 * "type" first: progress (hangs included), hang (once, when found),
 * hang_resolved, timeout, note, end, hwprint.c's hardware and
 * hardware_unseen, and fpprint.c's data_mismatch.  Key names follow report.json's.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "esc.h"
#include "json.h"
#include "lv_priv.h"

static const char *host_name(const struct lv_state *st, int proc)
{
	return st->hosts[st->procs[proc].host].name;
}

/* "rank 3" or "pid 1234" (a process that has not said its rank). */
static void who(const struct lv_state *st, int proc, char *buf, size_t len)
{
	const struct lv_proc *p = &st->procs[proc];

	if (p->rank >= 0)
		snprintf(buf, len, "rank %lld", (long long)p->rank);
	else
		snprintf(buf, len, "pid %lld", (long long)p->pid);
}

static const struct lv_state *sort_st;

/* Host, then rank (processes without one last, by pid). */
static int by_host_rank(const void *a, const void *b)
{
	const struct lv_proc *p = &sort_st->procs[*(const int *)a];
	const struct lv_proc *q = &sort_st->procs[*(const int *)b];
	int h = strcmp(sort_st->hosts[p->host].name, sort_st->hosts[q->host].name);

	if (h)
		return h;
	if ((p->rank < 0) != (q->rank < 0))
		return p->rank < 0 ? 1 : -1;
	if (p->rank != q->rank)
		return p->rank < q->rank ? -1 : 1;
	return p->pid < q->pid ? -1 : p->pid > q->pid;
}

static void sort_procs(const struct lv_state *st, int *v, int n)
{
	sort_st = st;
	qsort(v, n, sizeof(*v), by_host_rank);
}

/* Rank, then pid (processes without a rank last). */
static int by_rank(const void *a, const void *b)
{
	const struct lv_proc *p = &sort_st->procs[*(const int *)a];
	const struct lv_proc *q = &sort_st->procs[*(const int *)b];

	if ((p->rank < 0) != (q->rank < 0))
		return p->rank < 0 ? 1 : -1;
	if (p->rank != q->rank)
		return p->rank < q->rank ? -1 : 1;
	return p->pid < q->pid ? -1 : p->pid > q->pid;
}

/* The ranks of procs v[0..n) as "0-3,7", in rank order, processes
 * without a rank as "pid P"; host: only those on that host (-1: all). */
static void rank_list(FILE *f, const struct lv_state *st, const int *v, int n, int host)
{
	int *w = lv_xcalloc(n, sizeof(int)), m = 0, first = 1;

	for (int i = 0; i < n; i++)
		if (host < 0 || st->procs[v[i]].host == host)
			w[m++] = v[i];
	sort_st = st;
	qsort(w, m, sizeof(*w), by_rank);
	for (int i = 0; i < m;) {
		const struct lv_proc *p = &st->procs[w[i]];
		int j = i + 1;

		if (p->rank < 0) {
			fprintf(f, "%spid %lld", first ? "" : ",", (long long)p->pid);
		} else {
			while (j < m && st->procs[w[j]].rank == st->procs[w[j - 1]].rank + 1)
				j++;
			if (j - i > 1)
				fprintf(f, "%s%lld-%lld", first ? "" : ",", (long long)p->rank,
					(long long)st->procs[w[j - 1]].rank);
			else
				fprintf(f, "%s%lld", first ? "" : ",", (long long)p->rank);
		}
		first = 0;
		i = j;
	}
	free(w);
}

/* Where procs v (sorted by host) are: " (nodeA)" if on one host, else
 * " (nodeA: 0-1, nodeB: 2)". */
static void by_host(FILE *f, const struct lv_state *st, const int *v, int n)
{
	if (!n)
		return;
	if (st->procs[v[0]].host == st->procs[v[n - 1]].host) {
		fputs(" (", f);
		ng_esc_put(f, st->hosts[st->procs[v[0]].host].name);
		fputc(')', f);
		return;
	}
	for (int i = 0; i < n;) {
		int h = st->procs[v[i]].host, j = i;

		while (j < n && st->procs[v[j]].host == h)
			j++;
		fputs(i ? ", " : " (", f);
		ng_esc_put(f, st->hosts[h].name);
		fputs(": ", f);
		rank_list(f, st, v + i, j - i, h);
		i = j;
	}
	fputc(')', f);
}

void lv_note(struct lv_state *st, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (st->opts.json) {
		fputs("{\"type\": \"note\", \"note\": ", st->opts.out);
		ng_json_str(st->opts.out, buf);
		fputs("}\n", st->opts.out);
	} else {
		/* Notes quote session names and URLs from the relay. */
		fputs("ncclguard watch: ", st->opts.out);
		ng_esc_put(st->opts.out, buf);
		fputc('\n', st->opts.out);
	}
	fflush(st->opts.out);
}

static const char *job_name(const struct lv_state *st, int j, char *buf, size_t len)
{
	if (st->jobs[j].id[0])
		return st->jobs[j].id;
	if (!st->jobs[j].tag)
		return "none";
	snprintf(buf, len, "#%016llx", (unsigned long long)st->jobs[j].tag);
	return buf;
}

/* ---- JSON ------------------------------------------------------------- */

/* "rank": R, "host": H, "pid": P (no braces). */
static void json_proc(FILE *f, const struct lv_state *st, int proc)
{
	const struct lv_proc *p = &st->procs[proc];

	fputs("\"rank\": ", f);
	if (p->rank >= 0)
		fprintf(f, "%lld", (long long)p->rank);
	else
		fputs("null", f);
	fputs(", \"host\": ", f);
	ng_json_str(f, host_name(st, proc));
	fprintf(f, ", \"pid\": %lld", (long long)p->pid);
}

static void json_ranks(FILE *f, const struct lv_state *st, const int *v, int n)
{
	int first = 1;

	fputc('[', f);
	for (int i = 0; i < n; i++) {
		if (st->procs[v[i]].rank < 0)
			continue;
		fprintf(f, "%s%lld", first ? "" : ", ", (long long)st->procs[v[i]].rank);
		first = 0;
	}
	fputc(']', f);
}

/* Why a missing rank is missing: it left the communicator (comm_end), it
 * has not entered the call, or it never joined the communicator. */
static const char *miss_state(const struct lv_hang *h, int proc)
{
	int32_t m = ng_u64map_get(&h->comm->member_of, (uint64_t)proc);

	if (m < 0)
		return "not_joined";
	return h->comm->m[m].ended ? "exited" : "not_entered";
}

static void json_hang(FILE *f, const struct lv_state *st, const struct lv_hang *h)
{
	fprintf(f, "{\"comm_hash\": \"0x%016llx\", \"op\": ", (unsigned long long)h->comm->hash);
	ng_json_str(f, h->op);
	fprintf(f, ", \"seq\": %llu, \"waited_s\": %.1f, \"waiting_ranks\": ",
		(unsigned long long)h->seq, h->waited_s);
	json_ranks(f, st, h->wait, h->nwait);
	fputs(", \"missing_ranks\": ", f);
	json_ranks(f, st, h->miss, h->nmiss);
	fputs(", \"waiting\": [", f);
	for (int i = 0; i < h->nwait; i++) {
		fputs(i ? ", {" : "{", f);
		json_proc(f, st, h->wait[i]);
		fputc('}', f);
	}
	fputs("], \"missing\": [", f);
	for (int i = 0; i < h->nmiss; i++) {
		fputs(i ? ", {" : "{", f);
		json_proc(f, st, h->miss[i]);
		fprintf(f, ", \"state\": \"%s\"}", miss_state(h, h->miss[i]));
	}
	fprintf(f, "], \"unseen_ranks\": %lld, ", (long long)h->unseen);
	lv_silent_json(f, st, h);
	lv_hw_hang_json(f, st, h);
	fputc('}', f);
}

static void json_progress(struct lv_state *st, int j, const int *v, int n, double rate,
			  double behind, const struct lv_hang *h, int nh, int nsess_open,
			  int nheld)
{
	FILE *f = st->opts.out;
	char buf[32];

	fprintf(f, "{\"type\": \"progress\", \"time\": %.3f, \"job\": ",
		(double)lv_real_ns() / 1e9);
	if (j >= 0)
		ng_json_str(f, job_name(st, j, buf, sizeof(buf)));
	else
		fputs("null", f);
	fprintf(f, ", \"sessions\": %d, \"events\": %llu, \"events_per_s\": %.0f, "
		"\"behind_s\": ", nsess_open, (unsigned long long)st->events, rate);
	if (behind >= 0)
		fprintf(f, "%.2f", behind);
	else
		fputs("null", f);
	fprintf(f, ", \"sessions_held\": %d, \"doubled_hosts\": [", nheld);
	for (int i = 0, k = 0; i < st->nhosts; i++)
		if (st->hosts[i].doubled) {
			fputs(k++ ? ", " : "", f);
			ng_json_str(f, st->hosts[i].name);
		}
	fputs("], \"ranks\": [", f);
	for (int i = 0; i < n; i++) {
		int first = 1;

		fputs(i ? ", {" : "{", f);
		json_proc(f, st, v[i]);
		fputs(", \"comms\": [", f);
		for (int k = 0; k < st->ncomms; k++) {
			const struct lv_comm *c = st->comms[k];
			int32_t m = c->job == j ? ng_u64map_get(&c->member_of, (uint64_t)v[i]) : -1;

			if (m < 0)
				continue;
			fprintf(f, "%s{\"comm_hash\": \"0x%016llx\", \"seq\": %llu, \"done_seq\": "
				"%llu}", first ? "" : ", ", (unsigned long long)c->hash,
				(unsigned long long)c->m[m].last_seq,
				(unsigned long long)c->m[m].done_seq);
			first = 0;
		}
		fputs("]}", f);
	}
	fputs("], \"hangs\": [", f);
	for (int i = 0; i < nh; i++) {
		fputs(i ? ", " : "", f);
		json_hang(f, st, &h[i]);
	}
	fputs("], ", f);
	lv_fp_report_json(f, st, j);
	fputs("}\n", f);
}

/* ---- text ------------------------------------------------------------- */

/* One line per host and comm: runs of ranks at the same seq. */
static void text_host_comm(FILE *f, const struct lv_state *st, const struct lv_comm *c,
			   const int *v, int n, int host)
{
	char name[256];
	int shown = 0;

	for (int i = 0; i < n;) {
		int32_t m = ng_u64map_get(&c->member_of, (uint64_t)v[i]);
		uint64_t seq, done;
		int j = i + 1;

		if (st->procs[v[i]].host != host || m < 0) {
			i++;
			continue;
		}
		seq = c->m[m].last_seq;
		done = c->m[m].done_seq;
		while (j < n && st->procs[v[j]].host == host) {
			int32_t mj = ng_u64map_get(&c->member_of, (uint64_t)v[j]);

			if (mj < 0 || c->m[mj].last_seq != seq)
				break;
			if (c->m[mj].done_seq < done)
				done = c->m[mj].done_seq;
			j++;
		}
		if (!shown)
			fprintf(f, "  %-16s comm %016llx:",
				ng_esc_str(name, sizeof(name), st->hosts[host].name),
				(unsigned long long)c->hash);
		fprintf(f, "%s %s ", shown ? "," : "", j - i > 1 ? "ranks" : "rank");
		rank_list(f, st, v + i, j - i, host);
		/* done: the group's least completion seen, a lower bound
		 * (completions are sampled) */
		if (seq && done && done < seq)
			fprintf(f, " at seq %llu (done %llu)", (unsigned long long)seq,
				(unsigned long long)done);
		else if (seq)
			fprintf(f, " at seq %llu", (unsigned long long)seq);
		else
			fputs(" before the first collective", f);
		shown = 1;
		i = j;
	}
	if (shown)
		fputc('\n', f);
}

static void text_hang(FILE *f, const struct lv_state *st, const struct lv_hang *h)
{
	int nexit = 0, njoin = 0;

	fprintf(f, "  %s comm %016llx ", h->is_new ? "HANG" : "hang",
		(unsigned long long)h->comm->hash);
	ng_esc_put(f, h->op);
	if (h->seq)
		fprintf(f, " seq %llu", (unsigned long long)h->seq);
	fprintf(f, ", waiting %.0f s: %s ", h->waited_s, h->nwait == 1 ? "rank" : "ranks");
	rank_list(f, st, h->wait, h->nwait, -1);
	by_host(f, st, h->wait, h->nwait);
	fputs(h->nwait == 1 ? " waits" : " wait", f);
	if (h->nmiss) {
		fprintf(f, "; missing: %s ", h->nmiss == 1 ? "rank" : "ranks");
		rank_list(f, st, h->miss, h->nmiss, -1);
		by_host(f, st, h->miss, h->nmiss);
		for (int i = 0; i < h->nmiss; i++) {
			nexit += !strcmp(miss_state(h, h->miss[i]), "exited");
			njoin += !strcmp(miss_state(h, h->miss[i]), "not_joined");
		}
		if (nexit)
			fprintf(f, " (%d ended the communicator)", nexit);
		if (njoin)
			fprintf(f, " (%d never joined it)", njoin);
	}
	if (h->unseen && !lv_unseen_text(f, h))
		fprintf(f, "; %lld more rank%s of the communicator not seen", (long long)h->unseen,
			h->unseen == 1 ? "" : "s");
	lv_silent_text(f, st, h);
	lv_hw_hang_text(f, st, h);
	fputc('\n', f);
}

static void timeouts(struct lv_state *st)
{
	FILE *f = st->opts.out;
	char w[32], host[256], op[128], action[128];

	for (int i = 0; i < st->ntimeouts; i++) {
		const struct lv_timeout *t = &st->timeouts[i];

		if (st->opts.json) {
			fputs("{\"type\": \"timeout\", ", f);
			json_proc(f, st, t->proc);
			fprintf(f, ", \"comm_hash\": \"0x%016llx\", \"seq\": %llu, \"op\": ",
				(unsigned long long)t->comm, (unsigned long long)t->seq);
			ng_json_str(f, t->op);
			fprintf(f, ", \"waited_s\": %.1f, \"action\": ", (double)t->waited_ns / 1e9);
			ng_json_str(f, t->action);
			fputs(", \"what\": ", f);
			ng_json_str(f, t->what);
			fputs("}\n", f);
			continue;
		}
		who(st, t->proc, w, sizeof(w));
		/* Host, op and action come from the trace. */
		fprintf(f, "  timeout: %s (%s) waited %.1f s in %s seq %llu of comm %016llx "
			"(%s)\n", w, ng_esc_str(host, sizeof(host), host_name(st, t->proc)),
			(double)t->waited_ns / 1e9, ng_esc_str(op, sizeof(op), t->op),
			(unsigned long long)t->seq, (unsigned long long)t->comm,
			ng_esc_str(action, sizeof(action), t->action));
	}
	if (st->timeouts_more)
		lv_note(st, "%llu more timeouts not shown", (unsigned long long)st->timeouts_more);
	st->ntimeouts = 0;
	st->timeouts_more = 0;
}

static void resolved(struct lv_state *st, int j)
{
	FILE *f = st->opts.out;

	for (int i = 0; i < st->ncomms; i++) {
		struct lv_comm *c = st->comms[i];
		int init = c->resolved_seq == UINT64_MAX;

		if (c->job != j || !c->resolved_seq)
			continue;
		if (st->opts.json)
			fprintf(f, "{\"type\": \"hang_resolved\", \"comm_hash\": \"0x%016llx\", "
				"\"op\": \"%s\", \"seq\": %llu}\n", (unsigned long long)c->hash,
				init ? "init" : "collective",
				init ? 0ULL : (unsigned long long)c->resolved_seq);
		else if (init)
			fprintf(f, "  resolved: the init of comm %016llx finished\n",
				(unsigned long long)c->hash);
		else
			fprintf(f, "  resolved: comm %016llx seq %llu: every rank is past it\n",
				(unsigned long long)c->hash, (unsigned long long)c->resolved_seq);
		c->resolved_seq = 0;
	}
}

/* Hosts whose sessions at the relay are doubled, and sessions another
 * viewer holds: what the report cannot vouch for. */
static void text_doubt(FILE *f, const struct lv_state *st, int nheld)
{
	for (int i = 0; i < st->nhosts; i++)
		if (st->hosts[i].doubled)
			fprintf(f, "  %-16s two sessions of one name at the relay: ranks may be "
				"counted twice (DOUBLED)\n", st->hosts[i].name);
	if (nheld)
		fprintf(f, "  %d session%s held by another live viewer (LTTng allows one): "
			"not shown\n", nheld, nheld == 1 ? "" : "s");
}

void lv_report(struct lv_state *st, int64_t mono, int nsess_open, int nsess, int nheld,
	       int final)
{
	FILE *f = st->opts.out;
	int j = lv_shown_job(st), n = 0, nh = 0, nhosts = 0, ncomms = 0;
	int *v = lv_xcalloc(st->nprocs, sizeof(int));
	struct lv_hang *h = NULL;
	double dt = (double)(mono - (st->mono_at_report ? st->mono_at_report : st->mono_start)) / 1e9;
	double rate = dt > 0 ? (double)(st->events - st->events_at_report) / dt : 0;
	double behind = -1;
	int64_t real = lv_real_ns();
	char buf[32], tbuf[16], url[1024];
	time_t now = time(NULL);
	struct tm tm;

	/* what came since the last tick, before the report that follows it */
	lv_hw_print_new(st);
	/* the last: every call still waiting compared with what came */
	lv_fp_print_new(st, final ? INT64_MAX : mono);
	st->mono_at_report = mono;
	st->events_at_report = st->events;
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", localtime_r(&now, &tm));
	if (j >= 0) {
		unsigned char *host_seen = lv_xcalloc(st->nhosts + 1, 1);

		for (int i = 0; i < st->nprocs; i++)
			if (st->procs[i].job == j) {
				v[n++] = i;
				nhosts += !host_seen[st->procs[i].host];
				host_seen[st->procs[i].host] = 1;
			}
		free(host_seen);
		for (int i = 0; i < st->ncomms; i++)
			ncomms += st->comms[i]->job == j;
		sort_procs(st, v, n);
		nh = lv_hangs(st, j, mono, &h);
		for (int i = 0; i < nh; i++) {
			sort_procs(st, h[i].wait, h[i].nwait);
			sort_procs(st, h[i].miss, h[i].nmiss);
		}
		lv_silent_hangs(st, h, nh, mono);
		/* How far the newest event read is behind our clock: exact
		 * where the hosts' clocks agree with ours (NTP). */
		for (int s = 0; s < st->nclocks; s++)
			if (st->clocks[s].last_event_ts) {
				double b = (double)(real - st->clocks[s].last_event_ts) / 1e9;

				if (b > behind)
					behind = b;
			}
	}
	for (int i = 0; i < nh; i++)
		if (h[i].is_new) {
			st->hangs_reported++;
			if (st->opts.json) {
				fprintf(f, "{\"type\": \"hang\", \"job\": ");
				ng_json_str(f, job_name(st, j, buf, sizeof(buf)));
				fputs(", \"hang\": ", f);
				json_hang(f, st, &h[i]);
				fputs("}\n", f);
			}
		}
	if (st->opts.json) {
		resolved(st, j);
		timeouts(st);
		json_progress(st, j, v, n, rate, behind, h, nh, nsess_open, nheld);
		goto out;
	}
	if (j < 0) {
		fprintf(f, "[%s] %s: %d of %d session%s open, no ncclguard event of %s yet\n",
			tbuf, ng_esc_str(url, sizeof(url), st->opts.url), nsess_open, nsess, nsess == 1 ? "" : "s",
			st->want_job ? "that job" : "any job");
		text_doubt(f, st, nheld);
		goto out;
	}
	fprintf(f, "[%s] job %s: %d host%s, %d rank%s, %d comm%s; %.0f events/s", tbuf,
		ng_esc_str(url, sizeof(url), job_name(st, j, buf, sizeof(buf))), nhosts, nhosts == 1 ? "" : "s", n,
		n == 1 ? "" : "s", ncomms, ncomms == 1 ? "" : "s", rate);
	if (behind >= 0)
		fprintf(f, ", %.1f s behind", behind);
	if (nsess_open < nsess)
		fprintf(f, "; %d of %d sessions ended", nsess - nsess_open, nsess);
	fputs(final ? " (last report)\n" : "\n", f);
	text_doubt(f, st, nheld);
	/* v is sorted by host: each host's lines once, in name order */
	for (int i = 0; i < n; i++) {
		int hi = st->procs[v[i]].host;

		if (i && st->procs[v[i - 1]].host == hi)
			continue;
		for (int k = 0; k < st->ncomms; k++)
			if (st->comms[k]->job == j)
				text_host_comm(f, st, st->comms[k], v, n, hi);
	}
	lv_fp_report_text(f, st, j);
	for (int i = 0; i < nh; i++)
		text_hang(f, st, &h[i]);
	resolved(st, j);
	timeouts(st);
out:
	fflush(f);
	lv_hangs_free(h, nh);
	free(v);
}
