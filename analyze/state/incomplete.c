/*
 * What the report could not see (report.json incomplete[]): each reason
 * once, in the order first met, bounded so a broken trace cannot grow it
 * without limit.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

static const char *const inc_names[] = {
#define NG_INCOMPLETE(what, meaning) [AN_INC_##what] = #what,
#include "incomplete.def"
};

void an_incomplete(struct an_state *an, enum an_inc_kind kind, const char *fmt, ...)
{
	char detail[512];
	va_list ap;
	int i;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	for (i = 0; i < an->ninc; i++)
		if (an->inc[i].kind == kind && !strcmp(an->inc[i].detail, detail))
			return;
	if (an->ninc >= AN_INCOMPLETE_MAX) {
		an->inc_more++;
		return;
	}
	an->inc = an_xrealloc(an->inc, (an->ninc + 1) * sizeof(*an->inc));
	an->inc[an->ninc].kind = kind;
	an->inc[an->ninc].what = inc_names[kind];
	an->inc[an->ninc].detail = an_xstrdup(detail);
	an->ninc++;
}

void an_incomplete_free(struct an_state *an)
{
	for (int i = 0; i < an->ninc; i++) {
		free(an->inc[i].detail);
	}
	free(an->inc);
	an->inc = NULL;
	an->ninc = 0;
}

void an_rank_ranges(const int64_t *r, int n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < n;) {
		int j = i;
		int w;

		while (j + 1 < n && r[j + 1] == r[j] + 1)
			j++;
		if (off + 32 >= len) {
			snprintf(buf + off, len - off, "...");
			return;
		}
		if (j > i)
			w = snprintf(buf + off, len - off, "%s%lld-%lld", i ? "," : "",
				     (long long)r[i], (long long)r[j]);
		else
			w = snprintf(buf + off, len - off, "%s%lld", i ? "," : "", (long long)r[i]);
		off += (size_t)w;
		i = j + 1;
	}
}

/*
 * Ranks the trace should hold but has no event of.  A process that
 * announced world_size N makes ranks 0..N-1 expected; a communicator of N
 * ranks expects N members.  A rank seen elsewhere in the trace but not on
 * a communicator is a hang's business (it never joined), not a gap in the
 * trace, so a communicator's missing ranks count only where they cannot
 * be anyone of the trace: a communicator over the world in rank order
 * names them, and one that every process of the trace belongs to
 * accounts for all.
 */
static void no_events_world(struct an_state *an, char *have, int64_t world)
{
	int64_t *miss = an_xcalloc((size_t)world, sizeof(*miss));
	int nmiss = 0, noinfo = 0;
	char list[256];

	for (int64_t r = 0; r < world; r++)
		if (!have[r])
			miss[nmiss++] = r;
	for (int i = 0; i < an->nprocs; i++)
		noinfo += !an->procs[i].has_info;
	if (nmiss) {
		an_rank_ranges(miss, nmiss, list, sizeof(list));
		an_incomplete(an, AN_INC_rank_without_events, "%s %s of %lld (world_size) %s no "
			      "events in the trace%s", nmiss == 1 ? "rank" : "ranks", list,
			      (long long)world, nmiss == 1 ? "has" : "have",
			      noinfo ? "; a process without process_info may be one of them" :
			      nmiss == 1 ? ": its stream is missing, or it never ran with ncclguard" :
			      ": their streams are missing (a host's trace not given?), or they "
			      "never ran with ncclguard");
	}
	free(miss);
}

static void no_events_comm(struct an_state *an, struct an_comm *c, const char *have,
			   int64_t world)
{
	char *seen, list[256];
	int world_order = 1, nonmembers = an->nprocs - c->nmembers, n = 0;
	int64_t *miss;

	if (c->nranks <= c->nmembers || c->nranks <= 0)
		return;
	seen = an_xcalloc((size_t)c->nranks, 1);
	miss = an_xcalloc((size_t)c->nranks, sizeof(*miss));
	for (int i = 0; i < c->nmembers; i++) {
		const struct an_proc *p = &an->procs[c->members[i]];
		const struct an_pc *pc = &an->pcs[c->member_pc[i]];

		if (pc->comm_rank >= 0 && pc->comm_rank < c->nranks)
			seen[pc->comm_rank] = 1;
		if (!p->has_info || pc->comm_rank != p->rank || p->world_size != c->nranks)
			world_order = 0;
	}
	for (int64_t r = 0; r < c->nranks; r++) {
		if (seen[r])
			continue;
		/* Over the world: comm rank r is rank r, known to have
		 * events or not. */
		if (world_order && world == c->nranks && have[r])
			continue;
		miss[n++] = r;
	}
	if (!world_order && nonmembers > 0)
		n = 0;	/* they may be processes of the trace that never joined */
	if (n) {
		c->no_events = n;
		c->no_events_comm_rank = miss[0];
		c->no_events_rank = world_order ? miss[0] : -1;
		/* The world's missing ranks are said once, by rank. */
		if (!world_order || world != c->nranks) {
			an_rank_ranges(miss, n, list, sizeof(list));
			an_incomplete(an, AN_INC_rank_without_events, "comm %016llx has %d ranks; comm "
				      "%s %s %s no events in the trace",
				      (unsigned long long)c->hash, c->nranks,
				      n == 1 ? "rank" : "ranks", list, n == 1 ? "has" : "have");
		}
	}
	free(seen);
	free(miss);
}

/* One comm rank in two processes: NCCL never makes it, a flipped pid in
 * a damaged trace (or two traces mixed) does, and then a member's calls
 * are split between a phantom and the real process. */
static void rank_twice(struct an_state *an, const struct an_comm *c)
{
	for (int i = 0; i < c->nmembers; i++) {
		int64_t r = an->pcs[c->member_pc[i]].comm_rank;

		if (r < 0)
			continue;
		for (int j = i + 1; j < c->nmembers; j++) {
			const struct an_proc *a = &an->procs[c->members[i]];
			const struct an_proc *b = &an->procs[c->members[j]];

			if (an->pcs[c->member_pc[j]].comm_rank != r || a->vpid == b->vpid)
				continue;
			an_incomplete(an, AN_INC_comm_rank_twice, "comm %016llx rank %lld is claimed "
				      "by two processes (pids %lld and %lld): a damaged trace "
				      "or traces of two runs mixed; what this comm's calls "
				      "show may be wrong", (unsigned long long)c->hash,
				      (long long)r, (long long)a->vpid, (long long)b->vpid);
			return;
		}
	}
}

void an_incomplete_scan(struct an_state *an)
{
	int64_t world = 0;
	char *have;

	for (int i = 0; i < an->nprocs; i++)
		if (an->procs[i].has_info && an->procs[i].world_size > world &&
		    an->procs[i].world_size <= (1 << 24))
			world = an->procs[i].world_size;
	have = an_xcalloc((size_t)world + 1, 1);
	for (int i = 0; i < an->nprocs; i++) {
		const struct an_proc *p = &an->procs[i];

		if (p->has_info && p->rank >= 0 && p->rank < world)
			have[p->rank] = 1;
	}
	if (world)
		no_events_world(an, have, world);
	for (int i = 0; i < an->ncomms; i++) {
		no_events_comm(an, an->comms[i], have, world);
		rank_twice(an, an->comms[i]);
	}
	free(have);
	if (an->unknown_end || an->unknown_p2p)
		an_incomplete(an, AN_INC_timing_off, "%llu collectives called by every rank and %llu "
			      "matched sends/recvs were not seen to complete: their ranks recorded "
			      "without GPU timing (NCCLGUARD_TIMING=0), so no completion comes; "
			      "not told apart from hangs",
			      (unsigned long long)an->unknown_end,
			      (unsigned long long)an->unknown_p2p);
	if (an->lost_events)
		an_incomplete(an, AN_INC_events_lost, "the tracer dropped %llu events (its ring buffers "
			      "were full: give LTTng bigger buffers); counts are lower bounds and a "
			      "call may look unfinished",
			      (unsigned long long)an->lost_events);
}
