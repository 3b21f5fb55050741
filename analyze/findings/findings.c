/*
 * The findings, built once into one list, worst first, the builders run
 * in findings.def's order: hangs, mismatched calls, policy violations,
 * what the report could not see, config differences, stragglers, sizes
 * far below the link, then notes.  Each has a sentence, the ranks and
 * hosts it concerns and one line on what to do next; the summary,
 * report.json's findings[] and the HTML report show the same list.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "findings.h"

struct line {
	char buf[2048];
	size_t n;
};

static void add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (l->n >= sizeof(l->buf) - 1)
		return;
	va_start(ap, fmt);
	w = vsnprintf(l->buf + l->n, sizeof(l->buf) - l->n, fmt, ap);
	va_end(ap);
	if (w > 0)
		l->n += (size_t)w < sizeof(l->buf) - l->n ? (size_t)w : sizeof(l->buf) - l->n - 1;
}

/* A process by its rank; without process_info it has none: by host:pid. */
static void add_proc(const struct an_state *an, struct line *l, const struct an_proc *p)
{
	if (p->rank >= 0)
		add(l, "rank %lld", (long long)p->rank);
	else
		add(l, "process %s:%lld (rank unknown: no process_info)", an->hosts[p->host].name,
		    (long long)p->vpid);
}

/* A process that sent no process_info has no rank (-1): "?", said once. */
static void add_ranks(struct line *l, const int64_t *r, int n)
{
	int unknown = 0;

	add(l, n == 1 ? "rank " : "ranks ");
	for (int i = 0; i < n; i++) {
		if (i && i >= 8 && n > 10) {
			add(l, " and %d more", n - i);
			break;
		}
		if (r[i] < 0) {
			add(l, "%s?", i ? "," : "");
			unknown = 1;
		} else {
			add(l, "%s%lld", i ? "," : "", (long long)r[i]);
		}
	}
	if (unknown)
		add(l, " (?: a process whose process_info is not in the trace)");
}

/* A finding of its kind's severity; the builder may say another after. */
static void push(struct an_state *an, enum an_kind kind, const char *summary,
		 const int64_t *ranks, int n, const char *next_step)
{
	an_finding_push(an, kind, summary, ranks, n, next_step);
}

/* A process without a rank: its host is known all the same. */
static void push_proc(struct an_state *an, enum an_kind kind, const char *summary,
		      const struct an_proc *p, const char *next_step)
{
	struct an_finding *f;

	push(an, kind, summary, &p->rank, 1, next_step);
	f = &an->findings[an->nfindings - 1];
	if (!f->nhosts)
		f->hosts[f->nhosts++] = p->info_host && *p->info_host ? p->info_host :
			an->hosts[p->host].name;
}

/* "rank 2's recv p2p seq 7 ... waiting for rank 1, which posted 3 of the
 * 4 sends to it". */
static void p2p_hang(struct an_state *an, const struct an_hang *h, struct line *l)
{
	const char *op = an->ops[h->op];
	int send = !strcmp(op, "send") || !strcmp(op, "putsignal") || !strcmp(op, "signal");
	/* A wait's count is of signals: a put or a signal each. */
	const char *want = !strcmp(op, "waitsignal") ? "signal" :
			   strcmp(op, "send") && send ? "signal wait" : send ? "recv" : "send";

	add(l, "hang: %s p2p seq %llu on comm %016llx never completed: ", an->ops[h->op],
	    (unsigned long long)h->seq, (unsigned long long)h->comm_hash);
	add_ranks(l, h->wait, h->nwait);
	add(l, " waiting");
	if (h->nwait > 1) {
		add(l, ", each stuck send and recv with its match posted");
		return;
	}
	if (h->peer >= 0)
		add(l, " for rank %lld", (long long)h->peer);
	else
		add(l, " for comm rank %lld (not in the trace)", (long long)h->peer_comm_rank);
	if (h->peer_posted < h->ordinal)
		add(l, ", which posted only %llu of the %llu %ss %s it",
		    (unsigned long long)h->peer_posted, (unsigned long long)h->ordinal, want,
		    send ? "from" : "to");
	else
		add(l, ", which posted the matching %s", want);
}

/* A finding drawn on a comm that lacks a rank's events: say so, and which. */
static void no_events_note(struct line *l, const struct an_comm *c)
{
	if (!c || !c->no_events)
		return;
	if (c->no_events_rank >= 0)
		add(l, "; rank %lld", (long long)c->no_events_rank);
	else
		add(l, "; comm rank %lld of comm %016llx", (long long)c->no_events_comm_rank,
		    (unsigned long long)c->hash);
	if (c->no_events > 1)
		add(l, " and %d more ranks", c->no_events - 1);
	add(l, " %s no events in the trace: this finding may be wrong",
	    c->no_events > 1 ? "have" : "has");
}

static const struct an_comm *comm_of(const struct an_state *an, uint64_t hash)
{
	int32_t i = ng_u64map_get(&an->comm_map, hash);

	return i >= 0 ? an->comms[i] : NULL;
}

/* "ranks 0,2,3 waiting on the GPU, rank 1 never entered it (...)". */
static void hang_states(const struct an_hang *h, struct line *l)
{
	static const char *const words[AN_RS_N] = {
		[AN_RS_WAITING] = "waiting (entered, no completion)",
		[AN_RS_HOST] = "stuck inside the host call",
		[AN_RS_NEVER] = "never entered it",
		/* parenthesized: one string, not two elements a comma went missing from */
		[AN_RS_AHEAD] = ("completed its own call of that seq: its calls are out of step "
				 "with the others' (a skipped or extra call)"),
		[AN_RS_EXITED] = "exited (its comm_end came)",
		[AN_RS_KILLED] = "killed (its flight ring was recovered)",
	};
	int64_t r[h->nstate];
	char done[h->nstate];
	int groups = 0;

	memset(done, 0, sizeof(done));
	for (int st = 0; st < AN_RS_N; st++)
		for (int i = 0; i < h->nstate; i++) {
			int n = 0;

			if (done[i] || h->state[i] != st)
				continue;
			/* One group per state, and per dropped seq. */
			for (int j = i; j < h->nstate; j++)
				if (!done[j] && h->state[j] == st && h->drop_seq[j] == h->drop_seq[i]) {
					done[j] = 1;
					r[n++] = h->state_rank[j];
				}
			add(l, groups++ ? ", " : "");
			add_ranks(l, r, n);
			add(l, " %s", words[st]);
			if (h->drop_seq[i] == h->seq)
				add(l, " (dropped by injection)");
			else if (h->drop_seq[i])
				add(l, " (%s seq %llu was dropped by injection: %s calls are out of "
				    "step since)", n == 1 ? "its" : "their",
				    (unsigned long long)h->drop_seq[i], n == 1 ? "its" : "their");
		}
}

/* What to do about a hang, from the ranks' states. */
static const char *hang_next(const struct an_state *an, const struct an_hang *h)
{
	int host = 0, never = 0, gone = 0;

	for (int i = 0; i < h->nstate; i++) {
		host |= h->state[i] == AN_RS_HOST;
		never |= h->state[i] == AN_RS_NEVER || h->state[i] == AN_RS_AHEAD;
		gone |= h->state[i] == AN_RS_EXITED || h->state[i] == AN_RS_KILLED;
	}
	if (h->p2p && strstr(an->ops[h->op], "signal"))
		return "Have the peer signal (ncclSignal, ncclPutSignal) as many times as "
		       "the waiting rank waits for (NCCLGUARD_STACKS=1 records the call sites).";
	if (h->p2p)
		return "Match every send with a recv on the peer, in the same order "
		       "(NCCLGUARD_STACKS=1 records the call sites).";
	if (!h->seq)
		return "Start the missing ranks, or check that every rank gets the same "
		       "unique id and world size.";
	if (host)
		return "Find what blocks the stuck rank inside its NCCL call (gdb or py-spy "
		       "on it; its own account is in hang_dumps[] of report.json).";
	if (never)
		return "Find why the ranks not in it skipped or reordered a collective: "
		       "compare the ranks' call sequences (NCCLGUARD_STACKS=1 records call sites).";
	if (gone)
		return "Find why the rank that left ended early (its stderr, exit status, "
		       "OOM killer) before the others finished.";
	return "Every rank entered it: check the network and GPUs (NCCL_DEBUG=WARN, "
	       "link errors, ncclguard doctor).";
}

static const char sick_next[] = "Check that GPU: `ncclguard doctor` on its host (gpu.ecc, "
	"gpu.pcie_link, driver.log) and `nvidia-smi -q -d PERFORMANCE,ECC`; take the host out "
	"of the job if it happens again.";

/* A GPU of the hung collective whose health, in its rank's hang dump,
 * differs from its peers': named as the likely cause. */
static int sick_gpu(const struct an_state *an, const int64_t *ranks, int n, struct line *l)
{
	const struct an_gpu_health *g;
	const struct an_dump *d;
	char why[256];
	int64_t rank;

	if (!an_dump_sick_gpu(an, ranks, n, &rank, &d, &g, why, sizeof(why)))
		return 0;
	add(l, "; likely cause: rank %lld's GPU %s on %s, unlike its peers': %s",
	    (long long)rank, g->bus, d->host, why);
	return 1;
}

static void hang_findings(struct an_state *an)
{
	for (int i = 0; i < an->nhangs; i++) {
		const struct an_hang *h = &an->hangs[i];
		struct line l = { .n = 0 };
		char age[32];
		int64_t all[h->nwait + h->nmiss + 1];

		memcpy(all, h->wait, h->nwait * sizeof(*all));
		memcpy(all + h->nwait, h->miss, h->nmiss * sizeof(*all));
		an_fmt_ns((double)h->age_ns, age, sizeof(age));
		if (h->p2p) {
			p2p_hang(an, h, &l);
			add(&l, "; %s for %s at the end of the trace",
			    h->timed_out ? "timed out, stuck" : "stuck", age);
			no_events_note(&l, comm_of(an, h->comm_hash));
			push(an, AN_FK_hang, l.buf, all, h->nwait + h->nmiss, hang_next(an, h));
			continue;
		}
		if (h->seq)
			add(&l, "hang: %s seq %llu on comm %016llx never completed: ",
			    an->ops[h->op], (unsigned long long)h->seq,
			    (unsigned long long)h->comm_hash);
		else
			add(&l, "hang: init of comm %016llx never finished: ",
			    (unsigned long long)h->comm_hash);
		if (h->nstate) {
			hang_states(h, &l);
		} else {
			if (h->nwait) {
				add_ranks(&l, h->wait, h->nwait);
				add(&l, " waiting");
			}
			if (h->nmiss) {
				add(&l, h->nwait ? ", " : "");
				add_ranks(&l, h->miss, h->nmiss);
				add(&l, " never entered it");
				if (h->miss_untraced)
					add(&l, " (%d not in the trace)", h->miss_untraced);
			} else if (h->nmiss_comm) {
				add(&l, h->nwait ? ", " : "");
				add(&l, "comm ");
				add_ranks(&l, h->miss_comm, h->nmiss_comm);
				add(&l, " never entered it");
			}
		}
		if (h->unknown_missing && !h->nmiss_comm)
			add(&l, ", %lld rank%s never seen in the trace", (long long)h->unknown_missing,
			    h->unknown_missing == 1 ? "" : "s");
		if (h->nlast && h->seq) {
			add(&l, " (last seq by rank:");
			for (int j = 0; j < h->nlast && j < 16; j++)
				add(&l, " %lld:%llu", (long long)h->last_rank[j],
				    (unsigned long long)h->last_seq[j]);
			add(&l, "%s)", h->nlast > 16 ? " ..." : "");
		}
		add(&l, "; %s for %s at the end of the trace",
		    h->timed_out ? "timed out, stuck" : "stuck", age);
		if (h->queued_after)
			add(&l, ", %llu more queued behind it", (unsigned long long)h->queued_after);
		no_events_note(&l, comm_of(an, h->comm_hash));
		push(an, AN_FK_hang, l.buf, all, h->nwait + h->nmiss,
		     sick_gpu(an, all, h->nwait + h->nmiss, &l) ? sick_next : hang_next(an, h));
	}
}

static void mismatch_findings(struct an_state *an)
{
	static const char next[] = "Make every rank call the same collective with the same "
		"count, type and root at this point (NCCLGUARD_STACKS=1 shows each call site).";
	int shown = an->nmism < 5 ? an->nmism : 5;

	for (int i = 0; i < shown; i++) {
		const struct an_mismatch *m = &an->mism[i];
		struct line l = { .n = 0 };
		int done[m->n];

		memset(done, 0, sizeof(done));
		add(&l, "mismatch: comm %016llx seq %llu:", (unsigned long long)m->comm_hash,
		    (unsigned long long)m->seq);
		/* Group ranks that called the same thing. */
		for (int j = 0; j < m->n; j++) {
			int64_t ranks[m->n];
			int n = 0;

			if (done[j])
				continue;
			for (int k = j; k < m->n; k++)
				if (!done[k] && m->op[k] == m->op[j] && m->count[k] == m->count[j] &&
				    m->dtype[k] == m->dtype[j] && m->root[k] == m->root[j]) {
					done[k] = 1;
					ranks[n++] = m->rank[k];
				}
			add(&l, j ? "; " : " ");
			add_ranks(&l, ranks, n);
			add(&l, " called %s count %llu %s", an->ops[m->op[j]],
			    (unsigned long long)m->count[j], an_dtype_name(m->dtype[j]));
			if (m->root[j] >= 0)
				add(&l, " root/peer %d", m->root[j]);
		}
		push(an, AN_FK_mismatch, l.buf, m->rank, m->n, next);
	}
	if (an->mism_total > (uint64_t)shown) {
		char buf[128];

		snprintf(buf, sizeof(buf), "mismatch: %llu mismatched collectives in all (%d shown)",
			 (unsigned long long)an->mism_total, shown);
		push(an, AN_FK_mismatch, buf, NULL, 0, next);
	}
}

/* Policy rows with action "violation": the policy refused the job's setting. */
static void policy_findings(struct an_state *an)
{
	for (int i = 0; i < an->npolicy; i++) {
		const struct an_policy_row *r = &an->policy[i];
		struct line l = { .n = 0 };

		if (strcmp(r->action, "violation"))
			continue;
		add(&l, "policy: %s violates the policy on ", r->key);
		add_ranks(&l, r->ranks, r->nranks);
		add(&l, " (value \"%s\", policy \"%s\")", r->user_value, r->effective_value);
		push(an, AN_FK_policy, l.buf, r->ranks, r->nranks,
		     "Set what the policy wants in the job's environment, or change the "
		     "policy file (ncclguard policy check FILE shows its plan).");
	}
}

/* One finding for everything in incomplete[]: the details are there. */
static void incomplete_finding(struct an_state *an)
{
	struct line l = { .n = 0 };
	uint64_t n = (uint64_t)an->ninc + an->inc_more;

	if (!n)
		return;
	add(&l, "incomplete: the report could not see everything (%llu note%s: ",
	    (unsigned long long)n, n == 1 ? "" : "s");
	for (int i = 0; i < an->ninc; i++) {
		int dup = 0;

		for (int j = 0; j < i && !dup; j++)
			dup = an->inc[j].kind == an->inc[i].kind;
		if (!dup)
			add(&l, "%s%s", i ? ", " : "", an->inc[i].what);
	}
	add(&l, "); findings may miss what it lacks");
	push(an, AN_FK_incomplete, l.buf, NULL, 0,
	     "Read incomplete[] in report.json; where events were lost or a rank's "
	     "stream is missing, record again with more disk or buffer space.");
}

/* Ranks of a comm that ran one op and size with different algorithms or
 * channel counts (algo.c). */
static void algo_findings(struct an_state *an)
{
	for (int i = 0; i < an->nalgo_mism; i++) {
		const struct an_algo_mism *m = &an->algo_mism[i];
		const struct an_algo_rec *a = &an->algos[m->first];
		struct line l = { .n = 0 };
		int64_t *ranks = an_xcalloc((size_t)m->nprocs + 1, sizeof(*ranks));
		int n = 0;
		char size[32];

		an_fmt_bytes(a->bytes, size, sizeof(size));
		add(&l, "algorithm mismatch: ranks of comm %016llx ran %s of %s differently:",
		    (unsigned long long)a->comm_hash, an->ops[a->op], size);
		for (int k = m->first; k < m->end; k++) {
			const struct an_algo_rec *b = &an->algos[k];
			int64_t r = an->procs[b->proc].rank;

			if (k > m->first && b->proc == b[-1].proc)
				continue;
			ranks[n++] = r;
			add(&l, "%s rank %lld %s/%s %d ch", n > 1 ? "," : "", (long long)r,
			    an_algo_label(b->algo), an_algo_is_ce(b->algo) ? "-" : b->proto, b->nch);
		}
		push(an, AN_FK_algo_mismatch, l.buf, ranks, n,
		     "Ranks that run different algorithms or channel counts wait on peers that "
		     "never come, or crawl: give every rank the same NCCL_ALGO, NCCL_PROTO and "
		     "NCCL_*_NCHANNELS, NCCL version and topology (see config_mismatches; "
		     "`ncclguard doctor --compare` across hosts).");
		free(ranks);
	}
	if (an->algo_mism_more) {
		char buf[160];

		snprintf(buf, sizeof(buf), "algorithm mismatch: %llu more op sizes not listed",
			 (unsigned long long)an->algo_mism_more);
		push(an, AN_FK_algo_mismatch, buf, NULL, 0,
		     "See algo_mismatches in report.json.");
	}
}

static void config_findings(struct an_state *an)
{
	for (int i = 0; i < an->ncfg; i++) {
		const struct an_cfg_key *c = &an->cfg[i];
		struct line l = { .n = 0 };
		int j = 0, groups = 0;

		add(&l, "config: %s %s:", c->key, c->why);
		while (j < c->n) {
			int k = j;

			while (k < c->n && !strcmp(c->val[k], c->val[j]))
				k++;
			add(&l, "%s \"%s\" on ", groups++ ? ";" : "", c->val[j]);
			add_ranks(&l, &c->rank[j], k - j);
			j = k;
		}
		push(an, AN_FK_config, l.buf, c->rank, c->n,
		     c->per_host ?
		     "NCCL takes the ranks of one NCCL_HOSTID for one host: give every rank "
		     "of a host the same id and each host its own, or leave it unset." :
		     "Give every rank the same setting (launch script, container image, "
		     "NCCL library).");
	}
}

static void straggler_findings(struct an_state *an)
{
	int *order = an_rank_order(an);

	for (int k = 0; k < an->nprocs; k++) {
		const struct an_proc *p = &an->procs[order[k]];
		struct line l = { .n = 0 };
		char late[32];

		if (!an_straggler_flagged(an, p))
			continue;
		an_fmt_ns(p->late_sum_ns / (double)p->late_calls, late, sizeof(late));
		add(&l, "straggler: ");
		add_proc(an, &l, p);
		add(&l, " arrived last in %.0f%% of %s (%llu of %llu), %s late on average",
		    100.0 * (double)p->late_calls / (double)p->coll_calls,
		    p->opmixed ? "its collectives" : an_op_plural(an->ops[p->op1]),
		    (unsigned long long)p->late_calls, (unsigned long long)p->coll_calls, late);
		/* The first of its comms that lacks a rank's events. */
		for (int i = 0; i < an->npcs; i++)
			if (an->pcs[i].proc == order[k] && an->pcs[i].comm->no_events) {
				no_events_note(&l, an->pcs[i].comm);
				break;
			}
		push_proc(an, AN_FK_straggler, l.buf, p,
			  "Look at what the late rank does between collectives (data loading, "
			  "CPU affinity, a slower GPU or link).");
	}
	free(order);
}

static void slow_findings(struct an_state *an)
{
	char buf[512], a[32];

	for (int i = 0; i < an->nrows; i++) {
		const struct an_row *r = &an->rows[i];

		if (!an_row_below_link(an, r))
			continue;
		an_fmt_bytes(r->bucket < 0 ? 0 : 1ULL << r->bucket, a, sizeof(a));
		snprintf(buf, sizeof(buf), "slow: %s of %s on %d ranks reaches %.1f GB/s bus "
			 "bandwidth, under half the %.1f GB/s link", an->ops[r->op], a, r->nranks,
			 (double)r->bytes_sum_timed / r->time_sum_ns *
			 an_busbw_factor(an->ops[r->op], r->nranks), an->opts.link_gbps);
		push(an, AN_FK_slow, buf, NULL, 0,
		     "Check the transport NCCL chose (NCCL_DEBUG=INFO) and the interfaces "
		     "it uses (NCCL_SOCKET_IFNAME, NCCL_IB_HCA).");
	}
}

static void plugin_findings(struct an_state *an)
{
	int64_t *ranks = an_xcalloc((size_t)an->nprocs + 1, sizeof(*ranks));
	int n = 0;
	struct line l = { .n = 0 };

	for (int i = 0; i < an->nprocs; i++)
		if (an->procs[i].plugin_only)
			ranks[n++] = an->procs[i].rank;
	if (n) {
		qsort(ranks, (size_t)n, sizeof(*ranks), an_cmp_i64);
		add(&l, "plugin only: ");
		add_ranks(&l, ranks, n);
		add(&l, " made NCCL calls no wrapper saw (through dlsym'd pointers, or "
		    "NCCL linked statically): recorded through NCCL's profiler plugin, "
		    "without policy, GPU pinning or fault injection");
		push(an, AN_FK_plugin_only, l.buf, ranks, n,
		     "Preload the library as well (ncclguard run does) where the policy "
		     "or injection must apply; JAX/XLA's calls stay out of its reach.");
	}
	free(ranks);
}

static void forgotten_findings(struct an_state *an)
{
	char buf[512];

	if (!an->p2p_forgotten)
		return;
	snprintf(buf, sizeof(buf), "sends/recvs: %llu pending for long were forgotten (%d "
		 "kept per rank and comm): a hang among them is not reported",
		 (unsigned long long)an->p2p_forgotten, AN_P2P_PENDING_MAX);
	push(an, AN_FK_sends_forgotten, buf, NULL, 0,
	     "Check that every send has its recv; record a shorter run to see them all.");
}

static void clock_findings(struct an_state *an)
{
	char buf[512], a[32], b[32];
	int n;

	for (int i = 0; i < an->nhosts; i++) {
		const struct an_host *h = &an->hosts[i];

		if (i == an->ref_host || h->last_ts < h->first_ts)
			continue;
		snprintf(b, sizeof(b), "%s", an->hosts[an->ref_host].name);
		/* Its times stay on its own clock: said, not guessed. */
		if (!h->nsamples) {
			snprintf(buf, sizeof(buf), "clock: host %s shares no timed collective with "
				 "%s: its times are not corrected", h->name, b);
			push(an, AN_FK_clock, buf, NULL, 0,
			     "Compare its times with the others' with care; record GPU timing "
			     "(NCCLGUARD_SAMPLE) of a communicator it shares with the first host "
			     "given.");
			an->findings[an->nfindings - 1].severity = AN_SEV_WARN;
			continue;
		}
		an_fmt_ns((double)llabs(h->offset_ns), a, sizeof(a));
		n = snprintf(buf, sizeof(buf), "clock: host %s's clock is %s %s %s's (from %d "
			     "collectives", h->name, a, h->offset_ns < 0 ? "ahead of" : "behind",
			     b, h->nsamples);
		/* a drift the correction followed: worth knowing, under 0.1 ms not */
		if (h->offset_max - h->offset_min > 100000 && n > 0 && n < (int)sizeof(buf)) {
			an_fmt_ns((double)(h->offset_max - h->offset_min), a, sizeof(a));
			n += snprintf(buf + n, sizeof(buf) - n, "; it moved by %s during the "
				      "trace", a);
		}
		if (n > 0 && n < (int)sizeof(buf))
			snprintf(buf + n, sizeof(buf) - n, "); corrected");
		push(an, AN_FK_clock, buf, NULL, 0,
		     "Nothing: the times are corrected; keep the hosts' clocks in sync (NTP/PTP).");
		an->findings[an->nfindings - 1].weight = llabs(h->offset_ns);
	}
}

static void inflight_findings(struct an_state *an)
{
	char buf[512];

	if (an->inflight_end && !an->inflight_p2p) {
		snprintf(buf, sizeof(buf), "in flight: %llu collectives had not completed when the "
			 "trace ended", (unsigned long long)an->inflight_end);
		push(an, AN_FK_in_flight, buf, NULL, 0,
		     "Nothing, unless the job should have finished: then record until it ends.");
	} else if (an->inflight_p2p) {
		snprintf(buf, sizeof(buf), "in flight: %llu collectives and %llu sends/recvs had not "
			 "completed when the trace ended", (unsigned long long)an->inflight_end,
			 (unsigned long long)an->inflight_p2p);
		push(an, AN_FK_in_flight, buf, NULL, 0,
		     "Nothing, unless the job should have finished: then record until it ends.");
	}
}

/* A stopped rank's calls after its last confirmed one, per comm: said
 * unconfirmed, so that no reader takes the first of them for a hang.
 * Peers whose watchdogs fired on the comm wait for the stopped rank:
 * the job is stuck, and the finding says so. */
static void unconfirmed_findings(struct an_state *an)
{
	for (int i = 0; i < an->nunconf; i++) {
		const struct an_unconf *u = &an->unconf[i];
		const struct an_proc *p = &an->procs[u->proc];
		int64_t *w = NULL;
		int nw = an_unconf_waiting(an, u, &w);
		struct line l = { 0 };

		add(&l, "unconfirmed: ");
		add_proc(an, &l, p);
		add(&l, " %s after its %s seq %llu on comm %016llx; its "
		    "last confirmed call is seq %llu, so its %llu call%s from seq %llu on may "
		    "have completed or not (the trace cannot tell) and none is named hung",
		    u->killed ? "was killed (its flight ring was recovered)" :
		    "stopped (no event after its peers' watchdogs fired, none of its own)",
		    an->ops[u->op], (unsigned long long)u->last_seq,
		    (unsigned long long)u->comm_hash, (unsigned long long)u->confirmed_seq,
		    (unsigned long long)u->calls, u->calls == 1 ? "" : "s",
		    (unsigned long long)u->first_seq);
		if (nw) {
			add(&l, "; ");
			add_ranks(&l, w, nw);
			add(&l, " timed out waiting on the comm (their watchdogs name the oldest "
			    "call they could not confirm)");
		}
		push_proc(an, AN_FK_unconfirmed, l.buf, p,
			  "Find why the rank stopped (its log, the scheduler's, dmesg for the OOM "
			  "killer); NCCLGUARD_SAMPLE=1 confirms every call, at a cost.");
		/* No peer waits on it: the job may go on, not stuck. */
		if (!nw)
			an->findings[an->nfindings - 1].severity = AN_SEV_WARN;
		free(w);
	}
}

/* Worst first; within a severity, the order they were made in (an
 * insertion sort: stable, and the list is short). */
static void sort_findings(struct an_finding *f, int n)
{
	for (int i = 1; i < n; i++) {
		struct an_finding x = f[i];
		int j = i;

		for (; j > 0 && f[j - 1].severity < x.severity; j--)
			f[j] = f[j - 1];
		f[j] = x;
	}
}

const char *an_severity_name(int severity)
{
	return severity == AN_SEV_BAD ? "error" : severity == AN_SEV_WARN ? "warning" : "info";
}

int an_findings_list(struct an_state *an, const struct an_finding **out)
{
	if (!an->findings_built) {
		an->findings_built = 1;
#define NG_FINDING(kind, fail_on, severity, builder, meaning) builder(an);
#include "findings.def"
		sort_findings(an->findings, an->nfindings);
	}
	*out = an->findings;
	return an->nfindings;
}

void an_findings_free(struct an_state *an)
{
	for (int i = 0; i < an->nfindings; i++) {
		free(an->findings[i].summary);
		free(an->findings[i].ranks);
		free(an->findings[i].hosts);
	}
	free(an->findings);
	an->findings = NULL;
	an->nfindings = 0;
	an->findings_built = 0;
}

unsigned an_findings_fail(struct an_state *an)
{
	const struct an_finding *f;
	int n = an_findings_list(an, &f);
	unsigned k = 0;

	for (int i = 0; i < n; i++)
		k |= an_finding_fail_on(&f[i]);
	return k;
}

int an_findings(struct an_state *an, an_finding_fn fn, void *ctx)
{
	const struct an_finding *f;
	int n = an_findings_list(an, &f), real = 0;

	for (int i = 0; i < n; i++) {
		fn(ctx, f[i].severity, f[i].summary);
		real += f[i].severity != AN_SEV_INFO;
	}
	return real;
}

static const struct an_finding *by_weight_fd;

static int cmp_weight(const void *a, const void *b)
{
	const struct an_finding *x = &by_weight_fd[*(const int *)a];
	const struct an_finding *y = &by_weight_fd[*(const int *)b];

	if (x->weight != y->weight)
		return x->weight < y->weight ? 1 : -1;
	return *(const int *)a - *(const int *)b;
}

void an_findings_pick(const struct an_finding *fd, int n, char *show, int *more)
{
	int *idx = an_xcalloc((size_t)n + 1, sizeof(*idx));

	for (int i = 0; i < n; i++) {
		int k = 0, last = -1;

		if (show[i] || more[i] < 0)
			continue;
		for (int j = i; j < n; j++)
			if (!strcmp(fd[j].kind, fd[i].kind))
				idx[k++] = j;
		if (k > AN_SUMMARY_LIST) {
			by_weight_fd = fd;
			qsort(idx, (size_t)k, sizeof(*idx), cmp_weight);
		}
		for (int j = 0; j < k; j++) {
			if (j < AN_SUMMARY_LIST) {
				show[idx[j]] = 1;
				if (idx[j] > last)
					last = idx[j];
			} else {
				more[idx[j]] = -1;	/* looked at, not shown */
			}
		}
		if (k > AN_SUMMARY_LIST)
			more[last] = k - AN_SUMMARY_LIST;
	}
	free(idx);
}
