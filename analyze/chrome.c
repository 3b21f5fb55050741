/*
 * Chrome trace-event JSON ({"traceEvents":[...]}), written while the trace
 * is read: each accounted collective adds its ranks' host calls and GPU
 * slices (X, in us), a flow from a call to its GPU slice where both were
 * timed.  One process per rank named "rank R host:pid": track 1 is the
 * host's NCCL calls, one track after it per communicator stream on the
 * GPU.  Timeouts are instant events on the host track, hangs global ones.
 * Times are on the reference host's clock, from a base taken when the
 * first slice is written, so the numbers stay small enough for full
 * precision.
 *
 * A kernel cannot start before its call: a GPU slice that the clock
 * mapping puts before its enqueue (by the mapping's error, up to
 * milliseconds) is drawn from the enqueue, the shift in its args, and
 * the trace's otherData says how many were moved and by how much.
 */
#include <stdlib.h>
#include <string.h>

#include "an_priv.h"

struct track {
	uint64_t comm_hash, stream;
	int tid;
};

/* What the trace knows of a proc (the analysis's proc of that index). */
struct chrome_proc {
	int pid;		/* -1 until its first event */
	int ntracks;
	struct track *tracks;
};

#define HOST_TID 1		/* the host's calls; GPU tracks after it */

struct an_chrome {
	FILE *f;
	int first, err;
	int64_t t0;
	uint64_t flows;		/* ids of call -> GPU slice flows */
	uint64_t moved;		/* GPU slices drawn from their enqueue */
	int64_t moved_max;	/* ns */
	struct chrome_proc *procs;
	int nprocs;
};

struct an_chrome *an_chrome_new(FILE *f)
{
	struct an_chrome *ch = an_xcalloc(1, sizeof(*ch));

	ch->f = f;
	ch->first = 1;
	return ch;
}

void an_chrome_free(struct an_chrome *ch)
{
	if (!ch)
		return;
	for (int i = 0; i < ch->nprocs; i++)
		free(ch->procs[i].tracks);
	free(ch->procs);
	free(ch);
}

static void sep(struct an_chrome *ch)
{
	fputs(ch->first ? "\n" : ",\n", ch->f);
	ch->first = 0;
}

static double us(const struct an_chrome *ch, int64_t t)
{
	return (double)(t - ch->t0) / 1e3;
}

/* Procs appear as the trace is read: grow to the analysis's count. */
static struct chrome_proc *chrome_proc(struct an_chrome *ch, const struct an_state *an, int i)
{
	if (i >= ch->nprocs) {
		struct chrome_proc *grown = realloc(ch->procs, (size_t)an->nprocs * sizeof(*grown));

		if (!grown) {
			ch->err = 1;
			return NULL;
		}
		ch->procs = grown;
		for (int k = ch->nprocs; k < an->nprocs; k++)
			ch->procs[k] = (struct chrome_proc){ .pid = -1 };
		ch->nprocs = an->nprocs;
	}
	return &ch->procs[i];
}

static int chrome_pid(struct an_chrome *ch, const struct an_state *an, int proc,
		      struct chrome_proc *cp)
{
	const struct an_proc *p = &an->procs[proc];
	FILE *f = ch->f;
	char name[512];
	int pid, taken;

	if (cp->pid >= 0)
		return cp->pid;
	/* A rank's pid is its rank; procs without process_info go after.  A
	 * rank seen in two processes (a launcher's restart) gets a pid of
	 * its own for each: sharing one merged their tracks and names. */
	pid = p->rank >= 0 && p->rank < (1 << 20) ? (int)p->rank : (1 << 24) + proc;
	do {
		taken = 0;
		for (int i = 0; i < ch->nprocs && !taken; i++)
			taken = i != proc && ch->procs[i].pid == pid;
		if (taken)
			pid += 1 << 20;
	} while (taken);
	cp->pid = pid;
	snprintf(name, sizeof(name), "rank %lld %s:%lld", (long long)p->rank,
		 p->info_host && *p->info_host ? p->info_host : an->hosts[p->host].name,
		 (long long)p->pid);
	sep(ch);
	fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":",
		cp->pid);
	ng_json_str(f, name);
	fputs("}}", f);
	sep(ch);
	fprintf(f, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,"
		"\"args\":{\"sort_index\":%d}}", cp->pid, cp->pid);
	sep(ch);
	fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
		"\"args\":{\"name\":\"host: NCCL calls\"}}", cp->pid, HOST_TID);
	return cp->pid;
}

static int track(struct an_chrome *ch, struct chrome_proc *cp, uint64_t comm, uint64_t stream)
{
	struct track *t;
	int i;

	for (i = 0; i < cp->ntracks; i++)
		if (cp->tracks[i].comm_hash == comm && cp->tracks[i].stream == stream)
			return cp->tracks[i].tid;
	t = realloc(cp->tracks, (cp->ntracks + 1) * sizeof(*t));
	if (!t) {
		ch->err = 1;
		return 0;
	}
	cp->tracks = t;
	t = &cp->tracks[cp->ntracks++];
	t->comm_hash = comm;
	t->stream = stream;
	t->tid = HOST_TID + cp->ntracks;
	sep(ch);
	fprintf(ch->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
		"\"args\":{\"name\":\"GPU: comm %016llx stream 0x%llx\"}}", cp->pid, t->tid,
		(unsigned long long)comm, (unsigned long long)stream);
	return t->tid;
}

static void start(struct an_chrome *ch, const struct an_state *an)
{
	int64_t t0 = INT64_MAX;

	if (ch->t0)
		return;
	fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", ch->f);
	for (int i = 0; i < an->nhosts; i++)
		if (an->hosts[i].first_ts != INT64_MAX &&
		    an->hosts[i].first_ts + an->hosts[i].offset_ns < t0)
			t0 = an->hosts[i].first_ts + an->hosts[i].offset_ns;
	if (t0 == INT64_MAX)
		t0 = 0;
	ch->t0 = t0 - t0 % 1000000000LL;	/* a whole second */
	if (!ch->t0)
		ch->t0 = 1;
}

void an_chrome_coll(void *ctx, const struct an_state *an, const struct an_entry *e)
{
	struct an_chrome *ch = ctx;
	FILE *f = ch->f;
	int i;

	start(ch, an);
	/* Slots past the members are ranks absent from the traces. */
	for (i = 0; i < e->nslots && i < e->comm->nmembers; i++) {
		const struct an_slot *s = &e->slot[i];
		int proc = e->comm->members[i];
		int64_t off = an->hosts[an->procs[proc].host].offset_ns;
		const char *op = an->ops[s->op];
		struct chrome_proc *cp;
		int pid, tid;

		if (!(s->flags & (AN_S_ENQ | AN_S_TIMED)))
			continue;
		cp = chrome_proc(ch, an, proc);
		if (!cp)
			return;
		pid = chrome_pid(ch, an, proc, cp);
		tid = track(ch, cp, e->comm->hash, s->stream);
		/* A coarse arrival (the shim's published time, up to a tick
		 * old) would put the call milliseconds early: none drawn. */
		int host = (s->flags & AN_S_ENQ) && !(s->flags & AN_S_COARSE);
		int gpu = (s->flags & AN_S_TIMED) && s->gpu_end >= s->gpu_start && s->gpu_start > 0;
		uint64_t flow = host && gpu ? ++ch->flows : 0;

		if (host) {
			/* The shim measures the host span with the GPU time only
			 * (exit_ns 0 otherwise). */
			int64_t span = s->exit_ns >= s->enter_ns && s->exit_ns > 0 ?
				s->exit_ns - s->enter_ns : 0;

			sep(ch);
			fprintf(f, "{\"ph\":\"X\",\"cat\":\"enqueue\",\"name\":\"%s\",\"pid\":%d,"
				"\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", op, pid, HOST_TID,
				us(ch, s->enter_ns + off), (double)span / 1e3);
			if (flow)
				fprintf(f, ",\"bind_id\":\"0x%llx\",\"flow_out\":true",
					(unsigned long long)flow);
			fprintf(f, ",\"args\":{\"seq\":%llu,\"bytes\":%llu",
				(unsigned long long)e->seq, (unsigned long long)s->bytes);
			if (span)
				fprintf(f, ",\"host_us\":%.3f", (double)span / 1e3);
			fputs("}}", f);
		}
		if (gpu) {
			int64_t dur = s->gpu_end - s->gpu_start, begin = s->gpu_start, moved = 0;
			double busbw = dur > 0 ? (double)s->bytes *
				an_busbw_factor(op, e->nranks) / (double)dur : 0;

			if (host && begin < s->enter_ns) {
				moved = s->enter_ns - begin;
				begin = s->enter_ns;
				ch->moved++;
				if (moved > ch->moved_max)
					ch->moved_max = moved;
			}
			sep(ch);
			fprintf(f, "{\"ph\":\"X\",\"cat\":\"nccl\",\"name\":\"%s\",\"pid\":%d,"
				"\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", op, pid, tid,
				us(ch, begin + off), (double)dur / 1e3);
			if (flow)
				fprintf(f, ",\"bind_id\":\"0x%llx\",\"flow_in\":true",
					(unsigned long long)flow);
			fprintf(f, ",\"args\":{\"seq\":%llu,\"bytes\":%llu,\"busbw_gbps\":%.3f,"
				"\"comm\":\"%016llx\"", (unsigned long long)e->seq,
				(unsigned long long)s->bytes, busbw, (unsigned long long)e->comm->hash);
			if (moved)
				fprintf(f, ",\"moved_us\":%.3f", (double)moved / 1e3);
			fputs("}}", f);
		}
	}
	if (ferror(f))
		ch->err = 1;
}

/* The timeouts, on the host track of the rank that reported each. */
static void timeouts(struct an_chrome *ch, const struct an_state *an)
{
	for (int i = 0; i < an->ntimeouts; i++) {
		const struct an_timeout_row *t = &an->timeouts[i];
		struct chrome_proc *cp;
		int proc = -1, pid;
		int64_t ts;

		for (int k = 0; k < an->nprocs && proc < 0; k++)
			if (an->procs[k].rank == t->rank && t->rank >= 0)
				proc = k;
		if (proc < 0 || !(cp = chrome_proc(ch, an, proc)))
			continue;
		pid = chrome_pid(ch, an, proc, cp);	/* may write its names first */
		ts = t->ts + an->hosts[an->procs[proc].host].offset_ns;
		sep(ch);
		fprintf(ch->f, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"timeout\",\"name\":"
			"\"timeout: %s seq %llu\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
			"\"args\":{\"waited_s\":%.1f,\"action\":", t->op ? t->op : "?",
			(unsigned long long)t->seq, pid, HOST_TID, ts > ch->t0 ? us(ch, ts) : 0.0,
			(double)t->waited_ns / 1e9);
		ng_json_str(ch->f, t->action ? t->action : "");
		fprintf(ch->f, ",\"comm\":\"%016llx\"}}", (unsigned long long)t->comm_hash);
	}
}

int an_chrome_end(struct an_chrome *ch, const struct an_state *an)
{
	FILE *f = ch->f;

	start(ch, an);
	timeouts(ch, an);
	/* Hangs as global marks at the end of the trace. */
	for (int i = 0; i < an->nhangs; i++) {
		sep(ch);
		fprintf(f, "{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"hang\",\"name\":\"hang: %s seq %llu "
			"comm %016llx\",\"pid\":0,\"tid\":0,\"ts\":%.3f}", an->ops[an->hangs[i].op],
			(unsigned long long)an->hangs[i].seq,
			(unsigned long long)an->hangs[i].comm_hash,
			an->last_ts > ch->t0 ? us(ch, an->last_ts) : 0.0);
	}
	fputs("\n],\"otherData\":{\"gpu_slices_moved\":", f);
	fprintf(f, "%llu", (unsigned long long)ch->moved);
	if (ch->moved)
		fprintf(f, ",\"note\":\"%llu GPU slices are drawn from their call's enqueue: the "
			"mapping of GPU times onto the host clock put them up to %.1f us before it\"",
			(unsigned long long)ch->moved, (double)ch->moved_max / 1e3);
	fputs("}}\n", f);
	if (ferror(f) || ch->err)
		return -1;
	return 0;
}
