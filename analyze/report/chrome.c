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
 * Each collective's events are formatted into one buffer by hand (no
 * stdio on this path) and handed to chrome_sel.c, which keeps them all
 * (--chrome-all) or what fits the cap: the end of the trace, windows
 * around findings and a sample (the names and tracks of every rank are
 * always written).  --ranks and --chrome-window filter before that.
 *
 * A kernel cannot start before its call: a GPU slice that the clock
 * mapping puts before its enqueue (by the mapping's error, up to
 * milliseconds) is drawn from the enqueue, the shift in its args, and
 * the trace's otherData says how many were moved and by how much.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

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
#define EV_ROOM	 512		/* an event's text past its op name */

struct an_chrome {
	FILE *f;
	struct an_csel *sel;
	struct an_chrome_opts o;
	int err;
	int64_t t0;
	uint64_t flows;		/* ids of call -> GPU slice flows */
	uint64_t moved;		/* GPU slices drawn from their enqueue */
	int64_t moved_max;	/* ns */
	struct chrome_proc *procs;
	int nprocs;
	char *buf;		/* the collective being formatted */
	size_t len, cap;
	uint64_t seen_mism;	/* findings met so far: a new one is pinned */
	int seen_timeouts;
	int64_t last_begin;
};

struct an_chrome *an_chrome_new(FILE *f, const struct an_chrome_opts *o)
{
	struct an_chrome *ch = an_xcalloc(1, sizeof(*ch));

	ch->f = f;
	ch->o = *o;
	if (!ch->o.cap)
		ch->o.cap = AN_CHROME_CAP;
	ch->sel = an_csel_new(f, ch->o.cap, ch->o.all, AN_CHROME_WIN_NS);
	ch->last_begin = INT64_MIN;
	return ch;
}

void an_chrome_free(struct an_chrome *ch)
{
	if (!ch)
		return;
	for (int i = 0; i < ch->nprocs; i++)
		free(ch->procs[i].tracks);
	free(ch->procs);
	an_csel_free(ch->sel);
	free(ch->buf);
	free(ch);
}

/* Room for one more event of `extra` bytes past EV_ROOM, after ",\n". */
static char *room(struct an_chrome *ch, size_t extra)
{
	size_t need = ch->len + 2 + EV_ROOM + extra;

	if (need > ch->cap) {
		ch->cap = need > 2 * ch->cap ? need : 2 * ch->cap;
		ch->buf = an_xrealloc(ch->buf, ch->cap);
	}
	if (ch->len) {
		ch->buf[ch->len++] = ',';
		ch->buf[ch->len++] = '\n';
	}
	return ch->buf + ch->len;
}

static char *put(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

/* A call's slice up to its args' seq and bytes: the host's enqueue
 * (flow_out to its GPU slice) or the GPU's (flow_in); the caller adds
 * the rest of the args and closes them. */
static char *slice(char *p, const char *cat, const char *op, int pid, int tid, int64_t ts,
		   int64_t dur, uint64_t flow, const char *dir, uint64_t seq, uint64_t bytes)
{
	p = put(p, "{\"ph\":\"X\",\"cat\":\"");
	p = put(p, cat);
	p = put(p, "\",\"name\":\"");
	p = put(p, op);
	p = put(p, "\",\"pid\":");
	p = an_put_i64(p, pid);
	p = put(p, ",\"tid\":");
	p = an_put_i64(p, tid);
	p = put(p, ",\"ts\":");
	p = an_put_milli(p, ts);
	p = put(p, ",\"dur\":");
	p = an_put_milli(p, dur);
	if (flow) {
		p = put(p, ",\"bind_id\":\"0x");
		p = an_put_hex(p, flow, 0);
		p = put(p, "\",\"");
		p = put(p, dir);
		p = put(p, "\":true");
	}
	p = put(p, ",\"args\":{\"seq\":");
	p = an_put_u64(p, seq);
	p = put(p, ",\"bytes\":");
	return an_put_u64(p, bytes);
}

/* Metadata goes to the file at once, whatever is kept of the slices. */
static void meta(struct an_chrome *ch, const char *text, size_t len)
{
	an_csel_write(ch->sel, text, len);
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
	char name[512], *text = NULL;
	size_t len = 0;
	FILE *m;
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
	/* Once per rank: stdio is fine here. */
	m = open_memstream(&text, &len);
	if (!m) {
		ch->err = 1;
		return cp->pid;
	}
	fprintf(m, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":",
		cp->pid);
	ng_json_str(m, name);
	fputs("}},\n", m);
	fprintf(m, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,"
		"\"args\":{\"sort_index\":%d}},\n", cp->pid, cp->pid);
	fprintf(m, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
		"\"args\":{\"name\":\"host: NCCL calls\"}}", cp->pid, HOST_TID);
	if (fclose(m))
		ch->err = 1;
	else
		meta(ch, text, len);
	free(text);
	return cp->pid;
}

static int track(struct an_chrome *ch, struct chrome_proc *cp, uint64_t comm, uint64_t stream)
{
	struct track *t;
	char text[256];
	int i, n;

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
	n = snprintf(text, sizeof(text), "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,"
		     "\"tid\":%d,\"args\":{\"name\":\"GPU: comm %016llx stream 0x%llx\"}}",
		     cp->pid, t->tid, (unsigned long long)comm, (unsigned long long)stream);
	meta(ch, text, (size_t)n);
	return t->tid;
}

static void start(struct an_chrome *ch, const struct an_state *an)
{
	int64_t t0 = INT64_MAX;

	if (ch->t0)
		return;
	if (fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", ch->f) == EOF)
		ch->err = 1;
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

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int rank_wanted(const struct an_chrome *ch, int64_t rank)
{
	if (!ch->o.nranks)
		return 1;
	return bsearch(&rank, ch->o.ranks, (size_t)ch->o.nranks, sizeof(rank), cmp_i64) != NULL;
}

/* --chrome-window: a slice is kept when it overlaps the window. */
static int time_wanted(const struct an_chrome *ch, int64_t begin, int64_t end)
{
	if (ch->o.win_to_ns < 0)
		return 1;
	return end - ch->t0 >= ch->o.win_from_ns && begin - ch->t0 <= ch->o.win_to_ns;
}

/* Findings met since the last collective: windows kept around them. */
static void pin_findings(struct an_chrome *ch, const struct an_state *an,
			 const struct an_entry *e, int64_t begin)
{
	char why[96];

	if (an->mism_total > ch->seen_mism) {
		ch->seen_mism = an->mism_total;
		snprintf(why, sizeof(why), "mismatch: comm %016llx seq %llu",
			 (unsigned long long)e->comm->hash, (unsigned long long)e->seq);
		an_csel_pin(ch->sel, begin, why);
	}
	for (; ch->seen_timeouts < an->ntimeouts; ch->seen_timeouts++) {
		const struct an_timeout_row *t = &an->timeouts[ch->seen_timeouts];
		int64_t ts = t->ts;

		/* While reading, a timeout's rank is its proc id. */
		if (t->rank >= 0 && t->rank < an->nprocs)
			ts += an->hosts[an->procs[t->rank].host].offset_ns;
		snprintf(why, sizeof(why), "timeout: comm %016llx seq %llu",
			 (unsigned long long)t->comm_hash, (unsigned long long)t->seq);
		an_csel_pin(ch->sel, ts, why);
	}
}

void an_chrome_coll(void *ctx, const struct an_state *an, const struct an_entry *e)
{
	struct an_chrome *ch = ctx;
	int64_t begin = INT64_MAX;
	int i;

	start(ch, an);
	ch->len = 0;
	/* Slots past the members are ranks absent from the traces. */
	for (i = 0; i < e->nslots && i < e->comm->nmembers; i++) {
		const struct an_slot *s = &e->slot[i];
		int proc = e->comm->members[i];
		int64_t off = an->hosts[an->procs[proc].host].offset_ns;
		const char *op = an->ops[s->op];
		size_t oplen = strlen(op);
		struct chrome_proc *cp;
		int pid, tid;
		char *p;

		if (!(s->flags & (AN_S_ENQ | AN_S_TIMED)))
			continue;
		if (!rank_wanted(ch, an->procs[proc].rank))
			continue;
		/* A coarse arrival (the shim's published time, up to a tick
		 * old) would put the call milliseconds early: none drawn. */
		int host = (s->flags & AN_S_ENQ) && !(s->flags & AN_S_COARSE);
		int gpu = (s->flags & AN_S_TIMED) && s->gpu_end >= s->gpu_start && s->gpu_start > 0;
		/* The shim measures the host span with the GPU time only
		 * (exit_ns 0 otherwise). */
		int64_t span = s->exit_ns >= s->enter_ns && s->exit_ns > 0 ?
			s->exit_ns - s->enter_ns : 0;

		if (ch->o.win_to_ns >= 0) {
			int64_t b = host ? s->enter_ns : s->gpu_start;
			int64_t en = gpu && s->gpu_end > b + span ? s->gpu_end : b + span;

			if (!time_wanted(ch, b + off, en + off))
				continue;
		}
		cp = chrome_proc(ch, an, proc);
		if (!cp)
			return;
		pid = chrome_pid(ch, an, proc, cp);
		tid = track(ch, cp, e->comm->hash, s->stream);
		uint64_t flow = host && gpu ? ++ch->flows : 0;

		if (host) {
			if (s->enter_ns + off < begin)
				begin = s->enter_ns + off;
			p = slice(room(ch, oplen), "enqueue", op, pid, HOST_TID,
				  s->enter_ns + off - ch->t0, span, flow, "flow_out", e->seq, s->bytes);
			if (span) {
				p = put(p, ",\"host_us\":");
				p = an_put_milli(p, span);
			}
			p = put(p, "}}");
			ch->len = (size_t)(p - ch->buf);
		}
		if (gpu) {
			int64_t dur = s->gpu_end - s->gpu_start, b = s->gpu_start, moved = 0;
			double busbw = dur > 0 ? (double)s->bytes *
				an_busbw_factor(op, e->nranks) / (double)dur : 0;

			if (host && b < s->enter_ns) {
				moved = s->enter_ns - b;
				b = s->enter_ns;
				ch->moved++;
				if (moved > ch->moved_max)
					ch->moved_max = moved;
			}
			if (b + off < begin)
				begin = b + off;
			p = slice(room(ch, oplen), "nccl", op, pid, tid, b + off - ch->t0, dur,
				  flow, "flow_in", e->seq, s->bytes);
			p = put(p, ",\"busbw_gbps\":");
			p = an_put_fix3(p, busbw);
			p = put(p, ",\"comm\":\"");
			p = an_put_hex(p, e->comm->hash, 16);
			*p++ = '"';
			if (moved) {
				p = put(p, ",\"moved_us\":");
				p = an_put_milli(p, moved);
			}
			p = put(p, "}}");
			ch->len = (size_t)(p - ch->buf);
		}
	}
	if (begin == INT64_MAX) {
		an_csel_filtered(ch->sel);
		return;
	}
	pin_findings(ch, an, e, begin);
	if (begin > ch->last_begin)
		ch->last_begin = begin;
	an_csel_put(ch->sel, e->comm->hash ^ e->seq * 0x9e3779b97f4a7c15ULL, begin,
		    ch->buf, ch->len);
}

/* The timeouts, on the host track of the rank that reported each. */
static void timeouts(struct an_chrome *ch, const struct an_state *an)
{
	for (int i = 0; i < an->ntimeouts; i++) {
		const struct an_timeout_row *t = &an->timeouts[i];
		struct chrome_proc *cp;
		int proc = -1, pid;
		char *text = NULL;
		size_t len = 0;
		int64_t ts;
		FILE *m;

		for (int k = 0; k < an->nprocs && proc < 0; k++)
			if (an->procs[k].rank == t->rank && t->rank >= 0)
				proc = k;
		if (proc < 0 || !rank_wanted(ch, t->rank) || !(cp = chrome_proc(ch, an, proc)))
			continue;
		pid = chrome_pid(ch, an, proc, cp);	/* may write its names first */
		ts = t->ts + an->hosts[an->procs[proc].host].offset_ns;
		m = open_memstream(&text, &len);
		if (!m) {
			ch->err = 1;
			return;
		}
		fprintf(m, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"timeout\",\"name\":"
			"\"timeout: %s seq %llu\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
			"\"args\":{\"waited_s\":%.1f,\"action\":", t->op ? t->op : "?",
			(unsigned long long)t->seq, pid, HOST_TID,
			ts > ch->t0 ? (double)(ts - ch->t0) / 1e3 : 0.0, (double)t->waited_ns / 1e9);
		ng_json_str(m, t->action ? t->action : "");
		fprintf(m, ",\"comm\":\"%016llx\"}}", (unsigned long long)t->comm_hash);
		if (fclose(m))
			ch->err = 1;
		else
			meta(ch, text, len);
		free(text);
	}
}

int an_chrome_end(struct an_chrome *ch, const struct an_state *an)
{
	FILE *f = ch->f;
	uint64_t left, one_in, calls, timed;
	char hint[160];

	start(ch, an);
	/* A finding after the last collective is in the end's window. */
	an_csel_flush(ch->sel);
	timeouts(ch, an);
	/* Hangs as global marks at the end of the trace. */
	for (int i = 0; i < an->nhangs; i++) {
		char text[256];
		int n = snprintf(text, sizeof(text), "{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"hang\","
				 "\"name\":\"hang: %s seq %llu comm %016llx\",\"pid\":0,\"tid\":0,"
				 "\"ts\":%.3f}", an->ops[an->hangs[i].op],
				 (unsigned long long)an->hangs[i].seq,
				 (unsigned long long)an->hangs[i].comm_hash,
				 an->last_ts > ch->t0 ? (double)(an->last_ts - ch->t0) / 1e3 : 0.0);

		meta(ch, text, n < (int)sizeof(text) ? (size_t)n : sizeof(text) - 1);
	}
	fputs("\n],\"otherData\":{\"gpu_slices_moved\":", f);
	fprintf(f, "%llu", (unsigned long long)ch->moved);
	an_rows_timed(an, &calls, &timed);
	/* Sampled GPU timing: few GPU slices is the sampling, not the job. */
	fprintf(f, ",\"collectives\":%llu,\"gpu_timed\":%llu", (unsigned long long)calls,
		(unsigned long long)timed);
	if (timed < calls)
		fprintf(f, ",\"timing_note\":\"GPU slices are drawn for the %llu of %llu "
			"collectives the shim timed (%s)\"", (unsigned long long)timed,
			(unsigned long long)calls, an_untimed_hint(an, hint, sizeof(hint)));
	if (ch->moved)
		fprintf(f, ",\"note\":\"%llu GPU slices are drawn from their call's enqueue: the "
			"mapping of GPU times onto the host clock put them up to %.1f us before it\"",
			(unsigned long long)ch->moved, (double)ch->moved_max / 1e3);
	fputc(',', f);
	an_csel_other(ch->sel, ch->t0, ch->last_begin == INT64_MIN ? ch->t0 : ch->last_begin);
	if (ch->o.nranks) {
		fputs(",\"ranks\":[", f);
		for (int i = 0; i < ch->o.nranks; i++)
			fprintf(f, "%s%lld", i ? "," : "", (long long)ch->o.ranks[i]);
		fputc(']', f);
	}
	if (ch->o.win_to_ns >= 0)
		fprintf(f, ",\"window_us\":[%.3f,%.3f]", (double)ch->o.win_from_ns / 1e3,
			(double)ch->o.win_to_ns / 1e3);
	left = an_csel_left_out(ch->sel, &one_in);
	if (left)
		fprintf(f, ",\"selection_note\":\"%llu collectives are left out to keep the file "
			"under %llu MiB: kept are the end of the trace, the windows around findings "
			"and 1 in %llu of the rest; --chrome-all writes every one\"",
			(unsigned long long)left, (unsigned long long)(ch->o.cap >> 20),
			(unsigned long long)one_in);
	fputs("}}\n", f);
	if (ferror(f) || ch->err || an_csel_failed(ch->sel))
		return -1;
	return 0;
}
