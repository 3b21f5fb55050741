/*
 * Chrome trace-event JSON ({"traceEvents":[...]}), written while the trace
 * is read: each accounted collective adds its ranks' GPU slices (X, in us)
 * and host enqueue marks (i).  One process per rank named "rank R
 * host:pid", one track (tid) per communicator stream.  Times are on the
 * reference host's clock, from a base taken when the first slice is
 * written, so the numbers stay small enough for full precision.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"

static void sep(struct an_state *an)
{
	fputs(an->chrome_first ? "\n" : ",\n", an->opts.chrome);
	an->chrome_first = 0;
}

static double us(const struct an_state *an, int64_t t)
{
	return (double)(t - an->chrome_t0) / 1e3;
}

static int chrome_pid(struct an_state *an, struct an_proc *p)
{
	FILE *f = an->opts.chrome;
	char name[512];
	int pid, taken;

	if (p->chrome_pid >= 0)
		return p->chrome_pid;
	/* A rank's pid is its rank; procs without process_info go after.  A
	 * rank seen in two processes (a launcher's restart) gets a pid of
	 * its own for each: sharing one merged their tracks and names. */
	pid = p->rank >= 0 && p->rank < (1 << 20) ? (int)p->rank :
		(1 << 24) + (int)(p - an->procs);
	do {
		taken = 0;
		for (int i = 0; i < an->nprocs && !taken; i++)
			taken = &an->procs[i] != p && an->procs[i].chrome_pid == pid;
		if (taken)
			pid += 1 << 20;
	} while (taken);
	p->chrome_pid = pid;
	snprintf(name, sizeof(name), "rank %lld %s:%lld", (long long)p->rank,
		 p->info_host && *p->info_host ? p->info_host : an->hosts[p->host].name,
		 (long long)p->pid);
	sep(an);
	fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":",
		p->chrome_pid);
	ng_json_str(f, name);
	fputs("}}", f);
	sep(an);
	fprintf(f, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,"
		"\"args\":{\"sort_index\":%d}}", p->chrome_pid, p->chrome_pid);
	return p->chrome_pid;
}

static int track(struct an_state *an, struct an_proc *p, uint64_t comm, uint64_t stream)
{
	struct an_track *t;
	int i;

	for (i = 0; i < p->ntracks; i++)
		if (p->tracks[i].comm_hash == comm && p->tracks[i].stream == stream)
			return p->tracks[i].tid;
	t = realloc(p->tracks, (p->ntracks + 1) * sizeof(*t));
	if (!t) {
		an->chrome_err = 1;
		return 0;
	}
	p->tracks = t;
	t = &p->tracks[p->ntracks++];
	t->comm_hash = comm;
	t->stream = stream;
	t->tid = p->ntracks;
	sep(an);
	fprintf(an->opts.chrome, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
		"\"args\":{\"name\":\"comm %016llx stream 0x%llx\"}}", p->chrome_pid, t->tid,
		(unsigned long long)comm, (unsigned long long)stream);
	return t->tid;
}

static void start(struct an_state *an)
{
	int64_t t0 = INT64_MAX;

	if (an->chrome_t0)
		return;
	fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", an->opts.chrome);
	for (int i = 0; i < an->nhosts; i++)
		if (an->hosts[i].first_ts != INT64_MAX &&
		    an->hosts[i].first_ts + an->hosts[i].offset_ns < t0)
			t0 = an->hosts[i].first_ts + an->hosts[i].offset_ns;
	if (t0 == INT64_MAX)
		t0 = 0;
	an->chrome_t0 = t0 - t0 % 1000000000LL;	/* a whole second */
	if (!an->chrome_t0)
		an->chrome_t0 = 1;
}

void an_chrome_entry(struct an_state *an, const struct an_entry *e)
{
	FILE *f = an->opts.chrome;
	int i;

	start(an);
	/* Slots past the members are ranks absent from the traces. */
	for (i = 0; i < e->nslots && i < e->comm->nmembers; i++) {
		const struct an_slot *s = &e->slot[i];
		struct an_proc *p = &an->procs[e->comm->members[i]];
		int64_t off = an->hosts[p->host].offset_ns;
		const char *op = an->ops[s->op];
		int pid, tid;

		if (!(s->flags & (AN_S_ENQ | AN_S_TIMED)))
			continue;
		pid = chrome_pid(an, p);
		tid = track(an, p, e->comm->hash, s->stream);
		/* A coarse arrival (the shim's published time, up to a tick
		 * old) would put the marker milliseconds early: none. */
		if ((s->flags & AN_S_ENQ) && !(s->flags & AN_S_COARSE)) {
			sep(an);
			fprintf(f, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"enqueue\",\"name\":\"%s\","
				"\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"args\":{\"seq\":%llu,\"bytes\":%llu",
				op, pid, tid, us(an, s->enter_ns + off),
				(unsigned long long)e->seq, (unsigned long long)s->bytes);
			/* The shim measures the host span with the GPU time only
			 * (exit_ns 0 otherwise). */
			if (s->exit_ns >= s->enter_ns && s->exit_ns > 0)
				fprintf(f, ",\"host_us\":%.3f", (double)(s->exit_ns - s->enter_ns) / 1e3);
			fputs("}}", f);
		}
		if ((s->flags & AN_S_TIMED) && s->gpu_end >= s->gpu_start && s->gpu_start > 0) {
			int64_t dur = s->gpu_end - s->gpu_start;
			double busbw = dur > 0 ? (double)s->bytes *
				an_busbw_factor(op, e->nranks) / (double)dur : 0;

			sep(an);
			fprintf(f, "{\"ph\":\"X\",\"cat\":\"nccl\",\"name\":\"%s\",\"pid\":%d,"
				"\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"seq\":%llu,"
				"\"bytes\":%llu,\"busbw_gbps\":%.3f,\"comm\":\"%016llx\"}}",
				op, pid, tid, us(an, s->gpu_start + off), (double)dur / 1e3,
				(unsigned long long)e->seq, (unsigned long long)s->bytes, busbw,
				(unsigned long long)e->comm->hash);
		}
	}
	if (ferror(f))
		an->chrome_err = 1;
}

int an_chrome_close(struct an_state *an)
{
	FILE *f = an->opts.chrome;

	start(an);
	/* Hangs as global marks at the end of the trace. */
	for (int i = 0; i < an->nhangs; i++) {
		sep(an);
		fprintf(f, "{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"hang\",\"name\":\"hang: %s seq %llu "
			"comm %016llx\",\"pid\":0,\"tid\":0,\"ts\":%.3f}", an->ops[an->hangs[i].op],
			(unsigned long long)an->hangs[i].seq,
			(unsigned long long)an->hangs[i].comm_hash,
			an->last_ts > an->chrome_t0 ? us(an, an->last_ts) : 0.0);
	}
	fputs("\n]}\n", f);
	if (ferror(f) || an->chrome_err)
		return -1;
	return 0;
}
