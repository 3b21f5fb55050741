/*
 * The findings in plain words, worst first: hangs, mismatched calls,
 * stragglers, config differences, sizes far below the link, then notes.
 * The summary and the HTML report print the same sentences, after what
 * the report could not see (incomplete[], printed first by each writer).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "an_priv.h"

/* "all-reduces" for an op name, for sentences. */
static const char *op_plural(const char *op)
{
	static const struct { const char *op, *words; } names[] = {
		{ "allreduce", "all-reduces" }, { "allgather", "all-gathers" },
		{ "reducescatter", "reduce-scatters" }, { "broadcast", "broadcasts" },
		{ "reduce", "reduces" }, { "alltoall", "all-to-alls" },
		{ "gather", "gathers" }, { "scatter", "scatters" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(op, names[i].op))
			return names[i].words;
	return "collectives";
}

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

/* "rank 2's recv p2p seq 7 ... waiting for rank 1, which posted 3 of the
 * 4 sends to it". */
static void p2p_hang(struct an_state *an, const struct an_hang *h, struct line *l)
{
	int send = !strcmp(an->ops[h->op], "send");
	const char *want = send ? "recv" : "send";

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
	int32_t i = an_map_get(&an->comm_map, hash);

	return i >= 0 ? an->comms[i] : NULL;
}

static int hang_findings(struct an_state *an, an_finding_fn fn, void *ctx)
{
	for (int i = 0; i < an->nhangs; i++) {
		const struct an_hang *h = &an->hangs[i];
		struct line l = { .n = 0 };
		char age[32];

		an_fmt_ns((double)h->age_ns, age, sizeof(age));
		if (h->p2p) {
			p2p_hang(an, h, &l);
			add(&l, "; %s for %s at the end of the trace",
			    h->timed_out ? "timed out, stuck" : "stuck", age);
			no_events_note(&l, comm_of(an, h->comm_hash));
			fn(ctx, AN_SEV_BAD, l.buf);
			continue;
		}
		if (h->seq)
			add(&l, "hang: %s seq %llu on comm %016llx never completed: ",
			    an->ops[h->op], (unsigned long long)h->seq,
			    (unsigned long long)h->comm_hash);
		else
			add(&l, "hang: init of comm %016llx never finished: ",
			    (unsigned long long)h->comm_hash);
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
		fn(ctx, AN_SEV_BAD, l.buf);
	}
	return an->nhangs;
}

static int mismatch_findings(struct an_state *an, an_finding_fn fn, void *ctx)
{
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
		fn(ctx, AN_SEV_BAD, l.buf);
	}
	if (an->mism_total > (uint64_t)shown) {
		char buf[128];

		snprintf(buf, sizeof(buf), "mismatch: %llu mismatched collectives in all (%d shown)",
			 (unsigned long long)an->mism_total, shown);
		fn(ctx, AN_SEV_BAD, buf);
	}
	return (int)an->mism_total;
}

static int config_findings(struct an_state *an, an_finding_fn fn, void *ctx)
{
	for (int i = 0; i < an->ncfg; i++) {
		const struct an_cfg_key *c = &an->cfg[i];
		struct line l = { .n = 0 };
		int j = 0, groups = 0;

		add(&l, "config: %s differs across ranks:", c->key);
		while (j < c->n) {
			int k = j;

			while (k < c->n && !strcmp(c->val[k], c->val[j]))
				k++;
			add(&l, "%s \"%s\" on ", groups++ ? ";" : "", c->val[j]);
			add_ranks(&l, &c->rank[j], k - j);
			j = k;
		}
		fn(ctx, AN_SEV_WARN, l.buf);
	}
	return an->ncfg;
}

static int straggler_findings(struct an_state *an, an_finding_fn fn, void *ctx)
{
	int *order = an_rank_order(an), n = 0;

	for (int k = 0; k < an->nprocs; k++) {
		const struct an_proc *p = &an->procs[order[k]];
		struct line l = { .n = 0 };
		char late[32];

		if (!an_straggler_flagged(an, p))
			continue;
		an_fmt_ns(p->late_sum_ns / (double)p->late_calls, late, sizeof(late));
		/* Without process_info a process has no rank: name it. */
		if (p->rank >= 0)
			add(&l, "straggler: rank %lld", (long long)p->rank);
		else
			add(&l, "straggler: process %s:%lld (rank unknown: no process_info)",
			    an->hosts[p->host].name, (long long)p->vpid);
		add(&l, " arrived last in %.0f%% of %s (%llu of %llu), %s late on average",
		    100.0 * (double)p->late_calls / (double)p->coll_calls,
		    p->opmixed ? "its collectives" : op_plural(an->ops[p->op1]),
		    (unsigned long long)p->late_calls, (unsigned long long)p->coll_calls, late);
		/* The first of its comms that lacks a rank's events. */
		for (int i = 0; i < an->npcs; i++)
			if (an->pcs[i].proc == order[k] && an->pcs[i].comm->no_events) {
				no_events_note(&l, an->pcs[i].comm);
				break;
			}
		fn(ctx, AN_SEV_WARN, l.buf);
		n++;
	}
	free(order);
	return n;
}

int an_findings(struct an_state *an, an_finding_fn fn, void *ctx)
{
	char buf[512], a[32], b[32];
	int n = 0;

	n += hang_findings(an, fn, ctx);
	n += mismatch_findings(an, fn, ctx);
	n += straggler_findings(an, fn, ctx);
	n += config_findings(an, fn, ctx);
	for (int i = 0; i < an->nrows; i++) {
		const struct an_row *r = &an->rows[i];

		if (!an_row_below_link(an, r))
			continue;
		an_fmt_bytes(r->bucket < 0 ? 0 : 1ULL << r->bucket, a, sizeof(a));
		snprintf(buf, sizeof(buf), "slow: %s of %s on %d ranks reaches %.1f GB/s bus "
			 "bandwidth, under half the %.1f GB/s link", an->ops[r->op], a, r->nranks,
			 (double)r->bytes_sum_timed / r->time_sum_ns *
			 an_busbw_factor(an->ops[r->op], r->nranks), an->opts.link_gbps);
		fn(ctx, AN_SEV_WARN, buf);
		n++;
	}
	for (int i = 0; i < an->nhosts; i++) {
		const struct an_host *h = &an->hosts[i];

		if (i == an->ref_host || !h->nsamples)
			continue;
		an_fmt_ns((double)llabs(h->offset_ns), a, sizeof(a));
		snprintf(b, sizeof(b), "%s", an->hosts[an->ref_host].name);
		snprintf(buf, sizeof(buf), "clock: host %s's clock is %s %s of %s's (from %d "
			 "collectives); corrected", h->name, a, h->offset_ns < 0 ? "ahead" : "behind",
			 b, h->nsamples);
		fn(ctx, AN_SEV_INFO, buf);
	}
	if (an->inflight_end && !an->inflight_p2p) {
		snprintf(buf, sizeof(buf), "in flight: %llu collectives had not completed when the "
			 "trace ended", (unsigned long long)an->inflight_end);
		fn(ctx, AN_SEV_INFO, buf);
	} else if (an->inflight_p2p) {
		snprintf(buf, sizeof(buf), "in flight: %llu collectives and %llu sends/recvs had not "
			 "completed when the trace ended", (unsigned long long)an->inflight_end,
			 (unsigned long long)an->inflight_p2p);
		fn(ctx, AN_SEV_INFO, buf);
	}
	if (an->p2p_forgotten) {
		snprintf(buf, sizeof(buf), "sends/recvs: %llu pending for long were forgotten (%d "
			 "kept per rank and comm): a hang among them is not reported",
			 (unsigned long long)an->p2p_forgotten, AN_P2P_PENDING_MAX);
		fn(ctx, AN_SEV_WARN, buf);
	}
	return n;
}
