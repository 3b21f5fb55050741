/*
 * report.json ("schema": "ncclguard-report/1"; docs/design.md, "The
 * analyzer's findings").  Every key is written even when empty; 64-bit
 * hashes are hex strings (a JSON number loses them past 2^53).  Beyond
 * the keys every report reader relies on: nranks, timed and
 * below_link in a collectives row, timed_out and age_s in a hang, host and
 * pid in a straggler (rank null where no process_info named it),
 * rank_state in a hung collective (AN_RS_* names per rank),
 * clock_offsets[], and at the top events, job, other_job_events and
 * incomplete[]; hardware[] only where the trace holds the host samplers'
 * events (docs/hardware.md), verification[] only where ranks verified
 * outputs (docs/verification.md).
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "version.h"

static void end_list(FILE *f, int n)
{
	fputs(n ? "\n  ],\n" : "],\n", f);
}

static void hash(FILE *f, uint64_t h)
{
	fprintf(f, "\"0x%016llx\"", (unsigned long long)h);
}

static const char *host_of(const struct an_state *an, const struct an_proc *p)
{
	return p->info_host && *p->info_host ? p->info_host : an->hosts[p->host].name;
}

/* A rank, or null for a process without process_info (known by host:pid). */
static void json_rank(FILE *f, int64_t rank)
{
	if (rank >= 0)
		fprintf(f, "%lld", (long long)rank);
	else
		fputs("null", f);
}

static void ranks(struct an_state *an, FILE *f, const int *order)
{
	char ver[32];

	int first = 1;

	fputs("  \"ranks\": [", f);
	for (int k = 0; k < an->nprocs; k++) {
		const struct an_proc *p = &an->procs[order[k]];

		if (!p->has_info)
			continue;
		an_version_str(p->nccl_version, ver, sizeof(ver));
		fprintf(f, "%s\n    {\"rank\": %lld, \"host\": ", first ? "" : ",",
			(long long)p->rank);
		ng_json_str(f, host_of(an, p));
		fprintf(f, ", \"pid\": %lld, \"nccl_version\": ", (long long)p->pid);
		ng_json_str(f, ver);
		fputs(", \"nccl_path\": ", f);
		ng_json_str(f, p->nccl_path);
		fprintf(f, ", \"driver_version\": %lld, \"gpu_pci_bus_id\": ",
			(long long)p->driver_version);
		ng_json_str(f, p->gpu_pci_bus_id);
		fprintf(f, ", \"numa_node\": %lld, \"socket_ifname\": ", (long long)p->numa_node);
		ng_json_str(f, p->socket_ifname);
		fputc('}', f);
		first = 0;
	}
	end_list(f, !first);
}

static void choice_json(FILE *f, const struct an_row *r);

static void collectives(struct an_state *an, FILE *f)
{
	fputs("  \"collectives\": [", f);
	for (int i = 0; i < an->nrows; i++) {
		struct an_row *r = &an->rows[i];
		double algbw = r->time_sum_ns > 0 ? (double)r->bytes_sum_timed / r->time_sum_ns : 0;
		double busbw = algbw * an_busbw_factor(an->ops[r->op], r->nranks);
		double n = r->qs.n ? (double)r->qs.n : 1;

		fprintf(f, "%s\n    {\"op\": ", i ? "," : "");
		ng_json_str(f, an->ops[r->op]);
		fprintf(f, ", \"bytes\": %llu, \"nranks\": %d, \"calls\": %llu, \"timed\": %llu, "
			"\"time_us\": {\"mean\": %.3f, ", r->bucket < 0 ? 0ULL : 1ULL << r->bucket,
			r->nranks, (unsigned long long)r->calls, (unsigned long long)r->timed,
			r->qs.sum / n / 1e3);
		/* One timed call has no percentiles (an_row_text()). */
		if (r->timed == 1)
			fputs("\"p50\": null, \"p99\": null, ", f);
		else
			fprintf(f, "\"p50\": %.3f, \"p99\": %.3f, ", an_qs_quantile(&r->qs, 0.5) / 1e3,
				an_qs_quantile(&r->qs, 0.99) / 1e3);
		fprintf(f, "\"max\": %.3f}, \"algbw_gbps\": %.3f, \"busbw_gbps\": %.3f, "
			"\"below_link\": %s", r->qs.max / 1e3, algbw, busbw,
			an_row_below_link(an, r) ? "true" : "false");
		choice_json(f, r);
		fputc('}', f);
	}
	end_list(f, an->nrows);
}

/* A choice's algorithm and protocol; the copy engine's says so in words
 * and has no protocol (null). */
static void choice_algo_json(FILE *f, const char *algo, const char *proto)
{
	ng_json_str(f, algo);
	if (an_algo_is_ce(algo)) {
		fputs(", \"algo_label\": ", f);
		ng_json_str(f, an_algo_label(algo));
		fputs(", \"proto\": null", f);
		return;
	}
	fputs(", \"proto\": ", f);
	ng_json_str(f, proto);
}

/* What NCCL chose for the row (its profiler plugin's coll_algo, written
 * once per comm, op, size and change): the choice most processes told,
 * or nulls; and every choice when there were several. */
static void choice_json(FILE *f, const struct an_row *r)
{
	const struct an_choice *c = an_row_choice(r);

	if (!c) {
		fputs(", \"algo\": null, \"proto\": null, \"nchannels\": null", f);
		return;
	}
	fputs(", \"algo\": ", f);
	choice_algo_json(f, c->algo, c->proto);
	fprintf(f, ", \"nchannels\": %d", c->nch);
	if (r->nchoice < 2)
		return;
	fputs(", \"choices\": [", f);
	for (int i = 0; i < r->nchoice; i++) {
		fputs(i ? ", {\"algo\": " : "{\"algo\": ", f);
		choice_algo_json(f, r->choice[i].algo, r->choice[i].proto);
		fprintf(f, ", \"nchannels\": %d}", r->choice[i].nch);
	}
	fputc(']', f);
}

/* Comms whose ranks chose differently for one op and size. */
static void algo_mismatches(struct an_state *an, FILE *f)
{
	fputs("  \"algo_mismatches\": [", f);
	for (int i = 0; i < an->nalgo_mism; i++) {
		const struct an_algo_mism *m = &an->algo_mism[i];
		const struct an_algo_rec *a = &an->algos[m->first];
		int first = 1;

		fprintf(f, "%s\n    {\"comm_hash\": ", i ? "," : "");
		hash(f, a->comm_hash);
		fputs(", \"op\": ", f);
		ng_json_str(f, an->ops[a->op]);
		fprintf(f, ", \"bytes\": %llu, \"by_rank\": {", (unsigned long long)a->bytes);
		for (int k = m->first; k < m->end; k++) {
			const struct an_algo_rec *b = &an->algos[k];
			const struct an_proc *p = &an->procs[b->proc];

			if (k > m->first && b->proc == b[-1].proc)
				continue;
			if (p->rank >= 0)
				fprintf(f, "%s\"%lld\": {\"algo\": ", first ? "" : ", ",
					(long long)p->rank);
			else
				fprintf(f, "%s\"pid %lld\": {\"algo\": ", first ? "" : ", ",
					(long long)p->vpid);
			choice_algo_json(f, b->algo, b->proto);
			fprintf(f, ", \"nchannels\": %d}", b->nch);
			first = 0;
		}
		fputs("}}", f);
	}
	end_list(f, an->nalgo_mism);
}

static void stragglers(struct an_state *an, FILE *f, const int *order)
{
	int first = 1;

	fputs("  \"stragglers\": [", f);
	for (int k = 0; k < an->nprocs; k++) {
		const struct an_proc *p = &an->procs[order[k]];

		if (!an_straggler_flagged(an, p))
			continue;
		fprintf(f, "%s\n    {\"rank\": ", first ? "" : ",");
		json_rank(f, p->rank);
		fputs(", \"host\": ", f);
		ng_json_str(f, host_of(an, p));
		fprintf(f, ", \"pid\": %lld, \"late_calls\": %llu, \"mean_late_us\": %.3f, "
			"\"share\": %.4f}", (long long)p->pid,
			(unsigned long long)p->late_calls, p->late_sum_ns / (double)p->late_calls / 1e3,
			(double)p->late_calls / (double)p->coll_calls);
		first = 0;
	}
	end_list(f, !first);
}

static void rank_list(FILE *f, const int64_t *r, int n)
{
	fputc('[', f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%lld", i ? ", " : "", (long long)r[i]);
	fputc(']', f);
}

/* The GPU of the hang whose health, in the dumps, differs from its
 * peers' (null: none stands out, or no dump had GPU health). */
static void suspect_gpu(const struct an_state *an, const struct an_hang *h, FILE *f)
{
	int64_t all[h->nwait + h->nmiss + 1], rank;
	const struct an_gpu_health *g;
	const struct an_dump *d;
	char why[256];

	memcpy(all, h->wait, h->nwait * sizeof(*all));
	memcpy(all + h->nwait, h->miss, h->nmiss * sizeof(*all));
	fputs(", \"suspect_gpu\": ", f);
	if (!an_dump_sick_gpu(an, all, h->nwait + h->nmiss, &rank, &d, &g, why, sizeof(why))) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"rank\": %lld, \"host\": ", (long long)rank);
	ng_json_str(f, d->host);
	fputs(", \"pci_bus_id\": ", f);
	ng_json_str(f, g->bus);
	fputs(", \"why\": ", f);
	ng_json_str(f, why);
	fputc('}', f);
}

static void hangs(struct an_state *an, FILE *f)
{
	fputs("  \"hangs\": [", f);
	for (int i = 0; i < an->nhangs; i++) {
		struct an_hang *h = &an->hangs[i];

		qsort(h->wait, h->nwait, sizeof(*h->wait), an_cmp_i64);
		qsort(h->miss, h->nmiss, sizeof(*h->miss), an_cmp_i64);
		fprintf(f, "%s\n    {\"comm_hash\": ", i ? "," : "");
		hash(f, h->comm_hash);
		fputs(", \"op\": ", f);
		ng_json_str(f, an->ops[h->op]);
		fprintf(f, ", \"seq\": %llu, \"waiting_ranks\": ", (unsigned long long)h->seq);
		rank_list(f, h->wait, h->nwait);
		fputs(", \"missing_ranks\": ", f);
		rank_list(f, h->miss, h->nmiss);
		if (h->p2p)	/* seq is the p2p seq; peer -1: not in the trace */
			fprintf(f, ", \"p2p\": true, \"peer\": %lld, \"peer_comm_rank\": %lld, "
				"\"ordinal\": %llu, \"peer_posted\": %llu", (long long)h->peer,
				(long long)h->peer_comm_rank, (unsigned long long)h->ordinal,
				(unsigned long long)h->peer_posted);
		else if (!h->seq) {	/* an init: its comm ranks, known even off the world */
			fputs(", \"missing_comm_ranks\": ", f);
			rank_list(f, h->miss_comm, h->nmiss_comm);
		}
		fputs(", \"last_seq_by_rank\": {", f);
		for (int j = 0; j < h->nlast; j++)
			fprintf(f, "%s\"%lld\": %llu", j ? ", " : "", (long long)h->last_rank[j],
				(unsigned long long)h->last_seq[j]);
		fputc('}', f);
		if (h->nstate) {	/* where each rank is: AN_RS_* names */
			fputs(", \"rank_state\": {", f);
			for (int j = 0; j < h->nstate; j++) {
				fprintf(f, "%s\"%lld\": ", j ? ", " : "", (long long)h->state_rank[j]);
				ng_json_str(f, an_rank_state_name(h->state[j]));
			}
			fputc('}', f);
		}
		suspect_gpu(an, h, f);
		fprintf(f, ", \"timed_out\": %s, \"age_s\": %.3f}",
			h->timed_out ? "true" : "false", (double)h->age_ns / 1e9);
	}
	end_list(f, an->nhangs);
}

/* A stopped rank's calls after its last confirmed one, per comm. */
static void unconfirmed(const struct an_state *an, FILE *f)
{
	fputs("  \"unconfirmed\": [", f);
	for (int i = 0; i < an->nunconf; i++) {
		const struct an_unconf *u = &an->unconf[i];
		int64_t *w;
		int n;

		fprintf(f, "%s\n    {\"comm_hash\": ", i ? "," : "");
		hash(f, u->comm_hash);
		fputs(", \"op\": ", f);
		ng_json_str(f, an->ops[u->op]);
		fputs(", \"rank\": ", f);
		json_rank(f, an->procs[u->proc].rank);
		fprintf(f, ", \"killed\": %s, \"last_confirmed_seq\": %llu, "
			"\"first_seq\": %llu, \"last_seq\": %llu, \"calls\": %llu",
			u->killed ? "true" : "false",
			(unsigned long long)u->confirmed_seq, (unsigned long long)u->first_seq,
			(unsigned long long)u->last_seq, (unsigned long long)u->calls);
		n = an_unconf_waiting(an, u, &w);
		fputs(", \"timed_out_ranks\": ", f);
		rank_list(f, w, n);
		fputc('}', f);
		free(w);
	}
	end_list(f, an->nunconf);
}

/* The hang dumps read, each a process's own account of where it was
 * stuck: "gpu" a call queued and not complete, "host_call" inside the
 * host call. */
static void hang_dumps(struct an_state *an, FILE *f)
{
	fputs("  \"hang_dumps\": [", f);
	for (int i = 0; i < an->ndumps; i++) {
		const struct an_dump *d = &an->dumps[i];

		fprintf(f, "%s\n    {\"path\": ", i ? "," : "");
		ng_json_str(f, d->path);
		fputs(", \"host\": ", f);
		ng_json_str(f, d->host);
		fprintf(f, ", \"pid\": %lld, \"rank\": ", (long long)d->pid);
		if (d->rank >= 0)
			fprintf(f, "%lld", (long long)d->rank);
		else
			fputs("null", f);
		fputs(", \"reason\": ", f);
		ng_json_str(f, d->reason);
		fputs(", \"action\": ", f);
		if (d->action)
			ng_json_str(f, d->action);
		else
			fputs("null", f);
		fputs(", \"timeout_s\": ", f);
		if (d->timeout_s >= 0)
			fprintf(f, "%g", d->timeout_s);
		else
			fputs("null", f);
		fputs(", \"calls\": [", f);
		for (int k = 0; k < d->ncalls; k++) {
			const struct an_dump_call *c = &d->calls[k];

			fprintf(f, "%s{\"where\": \"%s\", \"comm_hash\": ", k ? ", " : "",
				c->where == AN_DUMP_HOST ? "host_call" : "gpu");
			hash(f, c->comm_hash);
			fprintf(f, ", \"seq\": %llu, \"p2p_seq\": %llu, \"op\": ",
				(unsigned long long)c->seq, (unsigned long long)c->p2p_seq);
			ng_json_str(f, c->op);
			fprintf(f, ", \"waited_s\": %.3f}", c->waited_s);
		}
		fprintf(f, "], \"calls_more\": %llu}", (unsigned long long)d->calls_more);
	}
	end_list(f, an->ndumps);
	fprintf(f, "  \"hang_dumps_other_job\": %llu,\n", (unsigned long long)an->dumps_other_job);
}

/* Every finding once, worst first: the list the summary prints. */
static void findings(struct an_state *an, FILE *f)
{
	const struct an_finding *fd;
	int n = an_findings_list(an, &fd);

	fputs("  \"findings\": [", f);
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s\n    {\"kind\": ", i ? "," : "");
		ng_json_str(f, fd[i].kind);
		fputs(", \"severity\": ", f);
		ng_json_str(f, an_severity_name(fd[i].severity));
		fputs(", \"summary\": ", f);
		ng_json_str(f, fd[i].summary);
		fputs(", \"ranks\": [", f);
		for (int j = 0; j < fd[i].nranks; j++) {
			fputs(j ? ", " : "", f);
			json_rank(f, fd[i].ranks[j]);
		}
		fputs("], \"hosts\": [", f);
		for (int j = 0; j < fd[i].nhosts; j++) {
			fputs(j ? ", " : "", f);
			ng_json_str(f, fd[i].hosts[j]);
		}
		fputs("], \"next_step\": ", f);
		ng_json_str(f, fd[i].next_step);
		fputc('}', f);
	}
	end_list(f, n);
}

static void mismatches(struct an_state *an, FILE *f)
{
	fputs("  \"mismatches\": [", f);
	for (int i = 0; i < an->nmism; i++) {
		struct an_mismatch *m = &an->mism[i];

		fprintf(f, "%s\n    {\"comm_hash\": ", i ? "," : "");
		hash(f, m->comm_hash);
		fprintf(f, ", \"seq\": %llu, \"by_rank\": {", (unsigned long long)m->seq);
		for (int j = 0; j < m->n; j++) {
			fprintf(f, "%s\"%lld\": {\"op\": ", j ? ", " : "", (long long)m->rank[j]);
			ng_json_str(f, an->ops[m->op[j]]);
			fprintf(f, ", \"count\": %llu, \"datatype\": \"%s\", \"root_or_peer\": %d}",
				(unsigned long long)m->count[j], an_dtype_name(m->dtype[j]), m->root[j]);
		}
		fputs("}}", f);
	}
	end_list(f, an->nmism);
}

static void config(struct an_state *an, FILE *f)
{
	fputs("  \"config_mismatches\": [", f);
	for (int i = 0; i < an->ncfg; i++) {
		struct an_cfg_key *c = &an->cfg[i];

		fprintf(f, "%s\n    {\"key\": ", i ? "," : "");
		ng_json_str(f, c->key);
		fputs(", \"values\": {", f);
		for (int j = 0; j < c->n; j++) {
			if (!j || strcmp(c->val[j], c->val[j - 1])) {
				if (j)
					fputs("], ", f);
				ng_json_str(f, c->val[j]);
				fputs(": [", f);
			} else {
				fputs(", ", f);
			}
			fprintf(f, "%lld", (long long)c->rank[j]);
		}
		fputs(c->n ? "]}}" : "}}", f);
	}
	end_list(f, an->ncfg);
}

/* What the report could not see, near the top; "job" is the job reported
 * (null: events without a job id) and other_job_events what other jobs'
 * events were dropped. */
static void incomplete(struct an_state *an, FILE *f)
{
	const char *job = an_job_id(an);

	fputs("  \"job\": ", f);
	if (*job)
		ng_json_str(f, job);
	else
		fputs("null", f);
	fprintf(f, ",\n  \"other_job_events\": %llu,\n  \"incomplete\": [",
		(unsigned long long)an->job_dropped);
	for (int i = 0; i < an->ninc; i++) {
		fprintf(f, "%s\n    {\"what\": ", i ? "," : "");
		ng_json_str(f, an->inc[i].what);
		fputs(", \"detail\": ", f);
		ng_json_str(f, an->inc[i].detail);
		fputc('}', f);
	}
	if (an->inc_more)
		fprintf(f, "%s\n    {\"what\": \"more\", \"detail\": \"%llu more not listed\"}",
			an->ninc ? "," : "", (unsigned long long)an->inc_more);
	end_list(f, an->ninc || an->inc_more);
}

/* The processes' API census, only where the trace has it, so that a
 * trace without it reads as before: how many took it, how many could
 * not, and whether traffic the device API starts on the GPU (never
 * recorded) may have happened. */
static void census(const struct an_state *an, FILE *f)
{
	const struct an_census *c = &an->census;

	if (!c->procs)
		return;
	fprintf(f, "  \"api_census\": {\"processes\": %d, \"failed\": %d, "
		"\"device_api_processes\": %d, \"gpu_initiated_unrecorded\": %s},\n",
		c->procs, c->failed_procs, c->device_procs, c->device_procs ? "true" : "false");
}

/* What the hardware sampler saw change (docs/hardware.md); only where the
 * trace holds its events, so a trace without them reads as before. */
static void hardware(const struct an_state *an, FILE *f)
{
	const struct an_hw *hw = &an->hw;
	char t[48];

	if (!hw->nsmp && !hw->nchg && !hw->ndev)
		return;
	fputs("  \"hardware\": [", f);
	for (int i = 0; i < hw->nchg; i++) {
		const struct an_hw_change *c = &hw->chg[i];

		fprintf(f, "%s\n    {\"host\": ", i ? "," : "");
		ng_json_str(f, c->host);
		fputs(", \"device\": ", f);
		ng_json_str(f, c->device);
		fputs(", \"counter\": ", f);
		ng_json_str(f, c->counter);
		an_fmt_utc(c->time_ns, 0, t, sizeof(t));
		fprintf(f, ", \"before\": %llu, \"after\": %llu, \"time\": \"%s\", \"ranks\": ",
			(unsigned long long)c->before, (unsigned long long)c->after, t);
		rank_list(f, c->ranks, c->nranks);
		if (c->flags & NG_HW_SATURATED)
			fputs(", \"saturated\": true", f);
		if (c->flags & NG_HW_AT_START)
			fputs(", \"at_start\": true", f);
		if (c->flags & NG_HW_RESET)
			fputs(", \"reset\": true", f);
		fputc('}', f);
	}
	end_list(f, hw->nchg);
}

/* Per comm, the sampled calls compared across ranks, those whose outputs
 * differed and those with one rank's fingerprint only or of different
 * slices; only where ranks ran with verification. */
static void verification(const struct an_state *an, FILE *f)
{
	const struct an_verify *v = &an->verify;

	if (!an_verify_on(an))
		return;
	fputs("  \"verification\": [", f);
	for (int i = 0; i < v->ncomm; i++) {
		fprintf(f, "%s\n    {\"comm_hash\": ", i ? "," : "");
		hash(f, v->comm[i].hash);
		fprintf(f, ", \"compared\": %llu, \"mismatched\": %llu, \"unpaired\": %llu}",
			(unsigned long long)v->comm[i].compared,
			(unsigned long long)v->comm[i].mismatched,
			(unsigned long long)v->comm[i].unpaired);
	}
	end_list(f, v->ncomm);
}

int an_report_json(struct an_state *an, FILE *f)
{
	int *order = an_rank_order(an);
	int i, first;

	fprintf(f, "{\n  \"schema\": \"ncclguard-report/1\",\n"
		"  \"generator\": \"ncclguard %s\",\n  \"events\": %llu,\n",
		NCCLGUARD_VERSION, (unsigned long long)an->events);
	incomplete(an, f);
	census(an, f);
	findings(an, f);
	ranks(an, f, order);
	collectives(an, f);
	stragglers(an, f, order);
	hangs(an, f);
	unconfirmed(an, f);
	hang_dumps(an, f);
	mismatches(an, f);
	algo_mismatches(an, f);
	config(an, f);
	fputs("  \"comm_fraction\": [", f);
	for (i = 0, first = 1; i < an->nprocs; i++) {
		const struct an_proc *p = &an->procs[order[i]];

		if (p->rank < 0)
			continue;
		/* busy_s within the wall time; the estimate's untimed calls,
		 * the timed ones whose mean they got, and its cap */
		fprintf(f, "%s\n    {\"rank\": %lld, \"fraction\": %.4f, \"timed_fraction\": %.4f, "
			"\"busy_s\": %.6f, \"estimated_calls\": %llu, \"estimate_timed_calls\": %llu, "
			"\"capped\": %s}", first ? "" : ",", (long long)p->rank, an_comm_fraction(p),
			an_comm_fraction_timed(p), (double)an_busy_time(p) / 1e9,
			(unsigned long long)p->est_calls, (unsigned long long)p->est_timed,
			p->est_capped ? "true" : "false");
		first = 0;
	}
	end_list(f, !first);
	fputs("  \"timeouts\": [", f);
	for (i = 0; i < an->ntimeouts; i++) {
		struct an_timeout_row *t = &an->timeouts[i];

		fprintf(f, "%s\n    {\"rank\": %lld, \"comm_hash\": ", i ? "," : "",
			(long long)t->rank);
		hash(f, t->comm_hash);
		fprintf(f, ", \"seq\": %llu, \"op\": ", (unsigned long long)t->seq);
		ng_json_str(f, t->op);
		fprintf(f, ", \"waited_s\": %.3f, \"action\": ", (double)t->waited_ns / 1e9);
		ng_json_str(f, t->action);
		fputs(", \"what\": ", f);
		ng_json_str(f, t->what);
		fputc('}', f);
	}
	end_list(f, an->ntimeouts);
	fputs("  \"injections\": [", f);
	for (i = 0; i < an->ninjects; i++) {
		struct an_inject_row *in = &an->injects[i];

		fprintf(f, "%s\n    {\"rank\": %lld, \"kind\": ", i ? "," : "", (long long)in->rank);
		ng_json_str(f, in->kind);
		fputs(", \"comm_hash\": ", f);
		hash(f, in->comm_hash);
		fprintf(f, ", \"seq\": %llu, \"op\": ", (unsigned long long)in->seq);
		ng_json_str(f, in->op);
		fputs(", \"detail\": ", f);
		ng_json_str(f, in->detail);
		fputc('}', f);
	}
	end_list(f, an->ninjects);
	fputs("  \"policy\": [", f);
	for (i = 0; i < an->npolicy; i++) {
		struct an_policy_row *r = &an->policy[i];

		fprintf(f, "%s\n    {\"key\": ", i ? "," : "");
		ng_json_str(f, r->key);
		fputs(", \"action\": ", f);
		ng_json_str(f, r->action);
		fputs(", \"user_value\": ", f);
		ng_json_str(f, r->user_value);
		fputs(", \"effective_value\": ", f);
		ng_json_str(f, r->effective_value);
		fputs(", \"ranks\": ", f);
		rank_list(f, r->ranks, r->nranks);
		fputc('}', f);
	}
	end_list(f, an->npolicy);
	hardware(an, f);
	verification(an, f);
	fprintf(f, "  \"lost_events\": %llu,\n  \"clock_offsets\": [",
		(unsigned long long)an->lost_events);
	for (i = 0; i < an->nhosts; i++) {
		fprintf(f, "%s\n    {\"host\": ", i ? "," : "");
		ng_json_str(f, an->hosts[i].name);
		fprintf(f, ", \"offset_us\": %.3f, \"samples\": %d, \"reference\": %s}",
			(double)an->hosts[i].offset_ns / 1e3, an->hosts[i].nsamples,
			i == an->ref_host ? "true" : "false");
	}
	fputs(an->nhosts ? "\n  ]\n}\n" : "]\n}\n", f);
	free(order);
	return ferror(f) ? -1 : 0;
}
