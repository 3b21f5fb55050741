/*
 * Findings said while reading (an_state.early_out), before the whole trace
 * is read: a hang whose outcome the rest of the trace can no longer change,
 * and the first watchdog timeout of each comm.  The final report is made
 * as before; an early line is only ever a finding it will hold.
 *
 * The reader hands events over in time order and says when a stream's last
 * event has gone (an_stream_ended()).  A host whose every stream ended
 * has said all it will: a rank there that did not enter a collective never
 * will.  So a collective of comm C at seq N is said to hang once
 *   - it is the oldest of C's window that no rank is done with, some rank
 *     entered it and none is done with it (what finish.c looks at first);
 *   - every member of C is known (C's size of them), and each either
 *     entered N or is on a host whose streams all ended, behind N (its
 *     last seq on C is below N) or with N dropped: so N can never run, nor
 *     be entered by anyone again, and no rank will ever finish it;
 *   - its youngest arrival is AN_HANG_AGE_NS old on the reader's clock
 *     (finish.c's test, which the end of the trace only makes older);
 *   - no timeout named a later seq of C (those before it are closed at
 *     the end), no event was lost so far (a lost enqueue would make a
 *     rank that entered look absent), and the job reported is settled
 *     (--job or the run record's: a second reading for another job would
 *     make the line about a job the report is not).
 * Hangs of an init, of sends and receives, and hangs where every rank
 * entered (a GPU or network hang: a completion may still come) are left
 * to the end.  After an_finish() each line said is checked against the
 * hangs found (an_early_confirm()): a difference would be a bug, and is
 * said rather than left standing.
 *
 * Costs: a scan of the comms at each host's end and then every
 * EARLY_EVERY events once any host has ended; the reader's an_early_tick()
 * per event is a compare or two.
 *
 * `ncclguard watch` could call an_early_hang() on its own tracker with
 * "ended" meaning "no event from this rank for --stuck seconds": the same
 * test, with a live stream's silence for a stream's end.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"

#define EARLY_EVERY	65536ULL	/* events between scans once a host ended */

void an_streams_expect(struct an_state *an, int host, uint64_t n)
{
	if (host >= 0 && host < an->nhosts)
		an->hosts[host].streams += n;
}

static int host_ended(const struct an_state *an, int host)
{
	const struct an_host *h = &an->hosts[host];

	return h->streams > 0 && h->streams_ended >= h->streams;
}

static int job_settled(const struct an_state *an)
{
	return an->job_how == AN_JOB_USER || an->job_how == AN_JOB_RECORD ||
		an->job_how == AN_JOB_MOST;
}

/* Events lost anywhere so far: a rank absent from a collective may have
 * entered it in what was lost. */
static int gaps(const struct an_state *an)
{
	if (an->lost_events || an->inc_more)
		return 1;
	for (int i = 0; i < an->ninc; i++)
		if (an->inc[i].kind == AN_INC_events_lost)
			return 1;
	return 0;
}

static void say(struct an_state *an, const char *line)
{
	/* over the progress line, which the reader redraws */
	fprintf(an->early_out, "%sncclguard analyze: early: %s\n",
		an->early_clear ? "\r\033[K" : "", line);
	fflush(an->early_out);
}

/* "ranks 0-2" / "rank 3" into buf at *at. */
static void put_ranks(char *buf, size_t len, size_t *at, const int64_t *r, int n)
{
	char ranges[256];
	int w;

	an_rank_ranges(r, n, ranges, sizeof(ranges));
	w = snprintf(buf + *at, len - *at, "%s %s", n == 1 ? "rank" : "ranks", ranges);
	if (w > 0)
		*at = *at + (size_t)w < len ? *at + (size_t)w : len - 1;
}

static struct an_pc *member_pc(struct an_state *an, struct an_comm *c, int i)
{
	return &an->pcs[c->member_pc[i]];
}

int an_early_hang(struct an_state *an, struct an_comm *c, int (*ended)(void *ctx, int proc),
		  void *ctx, struct an_early_hang *out)
{
	struct an_entry *e = NULL;
	int64_t youngest = INT64_MIN;
	int nwait = 0, nmiss = 0;

	if (c->nranks <= 0 || c->nmembers < c->nranks || !c->nring)
		return 0;
	for (uint32_t off = 0; off < c->nring && !e; off++) {
		struct an_entry *x = *an_ring_at(c, off);

		if (x && !x->ndone && !an_entry_ready(x))
			e = x;
	}
	if (!e || !e->nenq || (c->stuck_seq && c->stuck_seq > e->seq))
		return 0;
	for (int i = 0; i < c->nmembers; i++) {
		const struct an_slot *s = i < e->nslots ? &e->slot[i] : NULL;
		const struct an_pc *pc = member_pc(an, c, i);
		int proc = c->members[i];

		if (s && (s->flags & AN_S_ENQ) && !(s->flags & AN_S_DROP)) {
			if (s->enter_ns > youngest)
				youngest = s->enter_ns;
			out->wait[nwait++] = an->procs[proc].rank;
			continue;
		}
		/* Dropped: it returned without calling NCCL, for good.  Else
		 * it must have said all it will, behind this seq. */
		if (!(s && (s->flags & AN_S_DROP)) &&
		    (!ended(ctx, proc) || pc->last_seq >= e->seq))
			return 0;
		out->miss[nmiss++] = an->procs[proc].rank;
	}
	if (!nmiss || youngest == INT64_MIN || an->last_ts - youngest < AN_HANG_AGE_NS)
		return 0;
	out->seq = e->seq;
	out->op = 0;
	for (int i = 0; i < e->nslots; i++)
		if (e->slot[i].flags & AN_S_ENQ) {
			out->op = e->slot[i].op;
			break;
		}
	out->nwait = nwait;
	out->nmiss = nmiss;
	return 1;
}

static int proc_ended(void *ctx, int proc)
{
	struct an_state *an = ctx;

	return host_ended(an, an->procs[proc].host);
}

static void early_hang(struct an_state *an, struct an_comm *c)
{
	struct an_early_hang h = { 0 };
	char line[1024], when[32];
	size_t at = 0;
	int w;

	h.wait = an_xcalloc((size_t)c->nmembers + 1, sizeof(*h.wait));
	h.miss = an_xcalloc((size_t)c->nmembers + 1, sizeof(*h.miss));
	if (!an_early_hang(an, c, proc_ended, an, &h))
		goto out;
	c->early_seq = h.seq;
	qsort(h.wait, (size_t)h.nwait, sizeof(*h.wait), an_cmp_i64);
	qsort(h.miss, (size_t)h.nmiss, sizeof(*h.miss), an_cmp_i64);
	an_fmt_ns((double)(an->last_ts - an->first_ts), when, sizeof(when));
	w = snprintf(line, sizeof(line), "hang: %s seq %" PRIu64 " on comm %016" PRIx64
		     " never completed: ", an->ops[h.op], h.seq, c->hash);
	at = w > 0 ? (size_t)w : 0;
	if (h.nwait) {
		put_ranks(line, sizeof(line), &at, h.wait, h.nwait);
		w = snprintf(line + at, sizeof(line) - at, " waiting, ");
		at += w > 0 && at + (size_t)w < sizeof(line) ? (size_t)w : 0;
	}
	put_ranks(line, sizeof(line), &at, h.miss, h.nmiss);
	snprintf(line + at, sizeof(line) - at, " never entered it before %s trace ended "
		 "(at %s into the trace, %" PRIu64 " events read)",
		 h.nmiss == 1 ? "its" : "their", when, an->events);
	say(an, line);
out:
	free(h.wait);
	free(h.miss);
}

/* The first timeout of a comm: a row of the report's timeouts[]. */
static void early_timeout(struct an_state *an, const struct an_timeout_row *t)
{
	int32_t k = t->comm_hash ? ng_u64map_get(&an->comm_map, t->comm_hash) : -1;
	char line[512], when[32], waited[32];
	struct an_comm *c;

	if (k < 0 || an->comms[k]->early_timeout)
		return;
	c = an->comms[k];
	c->early_timeout = 1;
	an_fmt_ns((double)(t->ts - an->first_ts), when, sizeof(when));
	an_fmt_ns((double)t->waited_ns, waited, sizeof(waited));
	char what[96];

	if (!strcmp(t->op, "init") || !t->seq)
		snprintf(what, sizeof(what), "the %s of comm %016" PRIx64, *t->op ? t->op : "call",
			 c->hash);
	else
		snprintf(what, sizeof(what), "%s %sseq %" PRIu64 " on comm %016" PRIx64, t->op,
			 an_is_p2p_op(t->op) ? "p2p " : "", t->seq, c->hash);
	snprintf(line, sizeof(line), "timeout: rank %lld's watchdog gave up on %s after %s "
		 "(action %s; at %s into the trace, %" PRIu64 " events read)",
		 (long long)an->procs[t->rank].rank, what, waited,
		 *t->action ? t->action : "unknown", when, an->events);
	say(an, line);
}

void an_early_scan(struct an_state *an)
{
	if (an->early_armed && an->events >= an->early_next)
		an->early_next = an->events + EARLY_EVERY;
	if (!an->early_out || !job_settled(an))
		return;
	for (; an->early_ntimeouts < an->ntimeouts; an->early_ntimeouts++)
		early_timeout(an, &an->timeouts[an->early_ntimeouts]);
	if (!an->early_armed || gaps(an))
		return;
	for (int i = 0; i < an->ncomms; i++)
		if (!an->comms[i]->early_seq)
			early_hang(an, an->comms[i]);
}

void an_stream_ended(struct an_state *an, int host)
{
	if (host < 0 || host >= an->nhosts)
		return;
	an->hosts[host].streams_ended++;
	if (!host_ended(an, host))
		return;
	an->early_armed = 1;
	an->early_next = 0;
	an_early_scan(an);
}

void an_early_confirm(struct an_state *an)
{
	if (!an->early_out)
		return;
	for (int i = 0; i < an->ncomms; i++) {
		const struct an_comm *c = an->comms[i];
		int found = 0;

		if (!c->early_seq)
			continue;
		for (int k = 0; k < an->nhangs && !found; k++)
			found = an->hangs[k].comm_hash == c->hash && an->hangs[k].seq == c->early_seq;
		if (!found)
			fprintf(an->early_out, "ncclguard analyze: early: the hang of comm %016" PRIx64
				" seq %" PRIu64 " said above is not what the whole trace shows; the "
				"report's findings are\n", c->hash, c->early_seq);
	}
}
