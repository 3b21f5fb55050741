/*
 * The parallel reader (an_read_traces() with -j, read.c): workers, each
 * a graph over its part, and the merge of their records.
 *
 * With -j N, the streams are read by N worker processes, each with a
 * graph and merge.c's heap over a contiguous part of them (whole traces,
 * or a large trace's stream files in ranges by name, through views), so
 * that the order of the ports is the single graph's.  A worker decodes
 * each event (events/) into a record and writes the records in time order
 * to a pipe; this process merges the pipes by time, ties to the lower
 * worker, which gives the single graph's order, and runs the matcher on
 * them as the single graph's sink would.
 *
 * Processes, not threads: libbabeltrace2 does not say that two graphs
 * may run in two threads, and a crash in one is then its worker's alone.
 * The job to keep, where the first event names it, is agreed on before
 * any record is written: each worker sends its first event's time and
 * job (hello) and waits, so that it leaves out the bodies of another
 * job's events as the matcher will.
 */
#include <babeltrace2/babeltrace.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "read.h"
#include "events.h"
#include "read_priv.h"
#include "recs.h"

struct worker {
	struct rec_out *out;
	struct ev_decoder *dec;
	const struct input *parts;
	int nparts;
	int hello_fd, ctl_fd;
	int keep_known;
	uint64_t keep;
	int64_t key;		/* of the message being handled */
	char **hosts;
	int nhosts;
	int failed;
};

struct hello {
	int64_t key;
	uint64_t job;
	int32_t has;		/* an event: key and job are its */
};

static int wput(struct worker *w, struct rec *r)
{
	r->key = w->key;
	if (rec_put(w->out, r))
		w->failed = 1;
	return w->failed ? -1 : 0;
}

/* A host name to the worker's number, sent the first time. */
static int worker_host(void *ctx, const char *name)
{
	struct worker *w = ctx;
	struct rec r = { .type = REC_HOST, .str = name };
	char **grown;

	for (int i = 0; i < w->nhosts; i++)
		if (!strcmp(w->hosts[i], name))
			return i;
	grown = realloc(w->hosts, (size_t)(w->nhosts + 1) * sizeof(*grown));
	if (!grown || !(grown[w->nhosts] = strdup(name))) {
		if (grown)
			w->hosts = grown;
		w->failed = 1;
		return 0;
	}
	w->hosts = grown;
	r.id = w->nhosts;
	wput(w, &r);
	return w->nhosts++;
}

/* The first event (or none): said, then the job to keep awaited. */
static int say_hello(struct worker *w, int has, uint64_t job)
{
	struct hello h = { .key = w->key, .job = job, .has = has };
	ssize_t n;

	if (w->keep_known)
		return 0;
	w->keep_known = 1;
	if (write(w->hello_fd, &h, sizeof(h)) != (ssize_t)sizeof(h))
		return -1;
	if (has) {
		do
			n = read(w->ctl_fd, &w->keep, sizeof(w->keep));
		while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof(w->keep))
			return -1;
	}
	rec_hold(w->out, 0);
	return 0;
}

/* A stream's name as the trace's folder gives it, not its view's. */
static const char *real_name(const struct worker *w, const char *name, char *buf, size_t len)
{
	if (!name)
		return "a stream";
	for (int i = 0; i < w->nparts; i++) {
		const struct input *p = &w->parts[i];
		size_t n = strlen(p->dir);

		if (p->orig != p->dir && !strncmp(name, p->dir, n) && name[n] == '/') {
			snprintf(buf, len, "%s%s", p->orig, name + n);
			return buf;
		}
	}
	return name;
}

static int worker_msg(struct worker *w, const bt_message *msg)
{
	struct rec r = { .type = REC_EVENT };
	char buf[PATH_MAX + 256];
	uint64_t n;
	int ret;

	switch (bt_message_get_type(msg)) {
	case BT_MESSAGE_TYPE_EVENT:
		ret = ev_head(w->dec, msg, &r.ev);
		if (ret <= 0)
			return ret;
		if (say_hello(w, 1, r.ev.src.job))
			return -1;
		r.skip = r.ev.src.job != w->keep;
		r.ok = !r.skip && ev_body(w->dec, &r.ev);
		return wput(w, &r);
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		if (bt_message_discarded_events_get_count(msg, &n) !=
		    BT_PROPERTY_AVAILABILITY_AVAILABLE)
			return 0;
		r = (struct rec){ .type = REC_LOST, .n = n };
		return wput(w, &r);
	case BT_MESSAGE_TYPE_DISCARDED_PACKETS: {
		const bt_stream *st = bt_message_discarded_packets_borrow_stream_const(msg);

		if (bt_message_discarded_packets_get_count(msg, &n) !=
		    BT_PROPERTY_AVAILABILITY_AVAILABLE)
			n = 0;
		r = (struct rec){ .type = REC_PKTS, .n = n,
			.str = real_name(w, bt_stream_get_name(st), buf, sizeof(buf)) };
		return wput(w, &r);
	}
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		if (ev_stream(w->dec, bt_message_stream_beginning_borrow_stream_const(msg)))
			return -1;
		return w->failed ? -1 : 0;
	case BT_MESSAGE_TYPE_STREAM_END: {
		/* In time order: the stream's last event went before it. */
		const bt_value *v = bt_trace_borrow_environment_entry_value_by_name_const(
			bt_stream_borrow_trace_const(bt_message_stream_end_borrow_stream_const(msg)),
			"hostname");

		r = (struct rec){ .type = REC_SEND,
			.str = v && bt_value_get_type(v) == BT_VALUE_TYPE_STRING ?
				bt_value_string_get(v) : "unknown" };
		return wput(w, &r);
	}
	default:
		return 0;
	}
}

static int worker_merged(void *ctx, const bt_message *msg, int64_t key, int back)
{
	struct worker *w = ctx;
	int ret;

	w->key = key;
	/* a stream gone back in time: its event dropped, counted */
	if (back && bt_message_get_type(msg) == BT_MESSAGE_TYPE_EVENT) {
		ev_late_event(w->dec, msg);
		return 0;
	}
	rd_in_sink = 1;
	ret = worker_msg(w, msg);
	rd_in_sink = 0;
	if (ret)
		w->failed = 1;
	return ret ? -1 : 0;
}

/* What befell a stream (NULL: the whole trace), to the matcher. */
static void worker_stream_rec(struct worker *w, enum rec_type type, const char *stream, uint64_t n,
			      const char *what)
{
	char buf[PATH_MAX + 256];
	struct rec r = { .type = type, .n = n, .str2 = what };

	r.str = stream ? real_name(w, stream, buf, sizeof(buf)) : NULL;
	r.id = !stream;
	wput(w, &r);
}

/* A stream babeltrace2 could not read on: its loss. */
static void worker_cut(void *ctx, const char *stream, uint64_t events, const char *why)
{
	worker_stream_rec(ctx, REC_CUT, stream, events, why);
}

/* A stream's implausible events: how many, and the first. */
static void worker_bad(void *ctx, const char *name, uint64_t n, const char *first)
{
	worker_stream_rec(ctx, REC_BAD, name, n, first);
}

/* The worker's end on a failure: what the matcher's process prints. */
static int worker_fail(struct worker *w, int code, int status, const char *what)
{
	char causes[2048];
	struct rec r = { .type = REC_FAIL, .code = code, .status = status, .str = what,
			 .str2 = causes };

	causes[0] = '\0';
	if (code != REC_FAIL_CRASH)
		ev_bt_causes(causes, sizeof(causes));
	say_hello(w, 0, 0);
	w->failed = 0;
	wput(w, &r);
	return rec_flush(w->out) ? 1 : 0;
}

/* The worker's life: a graph over its parts, its records to data_fd. */
static int worker_run(struct worker *w, const bt_component_class_source *cls, int data_fd,
		      const struct input *trace0)
{
	const bt_component_source **srcs = calloc((size_t)w->nparts, sizeof(*srcs));
	const bt_component_sink *sink = NULL;
	bt_graph *graph = bt_graph_create(0);
	bt_graph_run_status rs;
	char what[4200];
	struct rec r;

	w->out = rec_out_new(data_fd);
	w->dec = ev_decoder_new(worker_host, w);
	if (!w->out)
		return 1;
	/* Held until the job to keep is known: this process must not block
	 * on its pipe while the matcher's waits for its hello. */
	rec_hold(w->out, !w->keep_known);
	if (!srcs || !graph || !w->dec)
		return worker_fail(w, REC_FAIL_SETUP, 0, "out of memory");
	for (int i = 0; i < w->nparts; i++) {
		char name[32];

		snprintf(name, sizeof(name), "src%d", i);
		if (ev_add_source(graph, cls, EV_SOURCE_FS, name, w->parts[i].dir, &srcs[i])) {
			snprintf(what, sizeof(what), "%s: not a readable CTF trace",
				 w->parts[i].orig);
			return worker_fail(w, REC_FAIL_SETUP, 0, what);
		}
	}
	/* Each part's streams, ahead of every event (the least key): the
	 * matcher counts a host's streams before any of them ends. */
	w->key = INT64_MIN;
	for (int i = 0; i < w->nparts; i++)
		if (w->parts[i].host >= 0) {
			r = (struct rec){ .type = REC_EXPECT, .id = w->parts[i].host,
				.n = bt_component_source_get_output_port_count(srcs[i]) };
			if (wput(w, &r))
				return 1;
		}
	if (rd_connect_merge(graph, srcs, w->nparts, worker_merged, worker_cut, w, &sink))
		return worker_fail(w, REC_FAIL_SETUP, 0, "cannot connect the streams to the sink");
	if (rd_run_graph(graph, &rs))
		return worker_fail(w, REC_FAIL_CRASH, rd_crash_sig, "");
	switch (rs) {
	case BT_GRAPH_RUN_STATUS_OK:
		break;
	case BT_GRAPH_RUN_STATUS_MEMORY_ERROR:
		return worker_fail(w, REC_FAIL_GRAPH, 0, w->failed ? "out of memory" :
				   "out of memory reading the trace");
	default:
		if (trace0)
			snprintf(what, sizeof(what), "%s: corrupt trace", trace0->orig);
		else
			snprintf(what, sizeof(what), "corrupt trace");
		return worker_fail(w, REC_FAIL_GRAPH, 0, what);
	}
	if (say_hello(w, 0, 0))
		return 1;
	ev_bad_streams(w->dec, worker_bad, w);
	r = (struct rec){ .type = REC_BADSUM, .n = ev_bad_values(w->dec) };
	wput(w, &r);
	r = (struct rec){ .type = REC_END };
	wput(w, &r);
	if (w->failed || rec_flush(w->out))
		return 1;
	return 0;
}

/* ---- the matcher's side ------------------------------------------------ */

/* A large trace whose files are all whole, named CHANNEL_CPU (one stream
 * each: no rotated chunks to keep together), into k views of contiguous
 * ranges of its files by name; 0, or -1 to read it whole. */
static int split_trace(const struct input *in, int k, struct input *out, int *nout)
{
	struct an_tcheck tc;
	uint64_t total = 0, cum = 0, from = 0;
	char *use = NULL;
	int i, p = 0, first = 0, made = 0, ret = -1;

	if (an_trace_check(in->dir, &tc))
		return -1;
	for (i = 0; i < tc.nf; i++) {
		if (tc.f[i].state != AN_SF_OK || tc.f[i].cpu < 0)
			goto out;
		total += (uint64_t)tc.f[i].size;
	}
	if (!tc.meta_ok || tc.nf < 2 || !total)
		goto out;
	if (k > tc.nf)
		k = tc.nf;
	use = calloc((size_t)tc.nf, 1);
	if (!use)
		goto out;
	for (i = 0; i < tc.nf; i++) {
		cum += (uint64_t)tc.f[i].size;
		/* a range ends at its share of the bytes, leaving a file for
		 * each range after it */
		if (i + 1 < tc.nf && tc.nf - i - 1 > k - p - 1 &&
		    cum * (uint64_t)k < total * (uint64_t)(p + 1))
			continue;
		memset(use, 0, (size_t)tc.nf);
		memset(use + first, 1, (size_t)(i + 1 - first));
		out[made] = *in;
		out[made].view = rd_make_view(in->dir, &tc, use);
		if (!out[made].view)
			goto out;
		out[made].dir = out[made].view;
		out[made].orig = in->dir;
		out[made].bytes = cum - from;
		from = cum;
		made++;
		p++;
		first = i + 1;
		if (p == k && i + 1 < tc.nf)
			break;
	}
	if (first != tc.nf)
		goto out;
	*nout = made;
	ret = 0;
out:
	if (ret)
		for (i = 0; i < made; i++)
			rd_remove_view(out[i].view);
	free(use);
	an_tcheck_free(&tc);
	return ret;
}

/* The parts the workers read, in the single graph's order of ports: the
 * inputs, those larger than a worker's share split. */
static struct input *make_parts(const struct input *in, int nin, int jobs, int *nparts)
{
	struct input *parts;
	uint64_t total = 0;
	int n = 0;

	for (int i = 0; i < nin; i++)
		total += in[i].bytes;
	parts = calloc((size_t)nin + (size_t)jobs * 2 + 1, sizeof(*parts));
	if (!parts)
		return NULL;
	for (int i = 0; i < nin; i++) {
		/* this trace's share of the workers, rounded */
		uint64_t want = total ? (in[i].bytes * (uint64_t)jobs * 2 + total) / (total * 2) : 1;
		int got;

		if (want >= 2 && !in[i].view && n + (int)want <= nin + jobs * 2 &&
		    !split_trace(&in[i], (int)want, &parts[n], &got)) {
			n += got;
			continue;
		}
		parts[n] = in[i];
		parts[n].view = NULL;	/* in[i]'s to remove */
		n++;
	}
	*nparts = n;
	return parts;
}

struct badrec {
	char *name, *first;
	uint64_t n;
};

struct pool {
	int nw;
	pid_t *pid;
	int *data, *hello, *ctl;
	int *done;		/* sent REC_END or REC_FAIL */
	int **hmap, *nh;	/* each worker's host numbers -> an_host_id() */
	struct badrec **bad;
	int *nbad;
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The job to keep where the first event names it (job.c): the first of
 * the workers' first events, ties to the lower worker, as the single
 * graph meets it. */
static void agree_job(struct pool *pl)
{
	struct hello h, best = { .has = 0 };
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;

	for (int w = 0; w < pl->nw; w++) {
		ssize_t n;

		do
			n = read(pl->hello[w], &h, sizeof(h));
		while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof(h))
			continue;	/* it died: the merge says so */
		if (h.has && (!best.has || h.key < best.key))
			best = h;
	}
	/* a worker that died since must not kill this process */
	sigaction(SIGPIPE, &ign, &old);
	for (int w = 0; w < pl->nw; w++)
		if (write(pl->ctl[w], &best.job, sizeof(best.job)) < 0)
			continue;
	sigaction(SIGPIPE, &old, NULL);
}

static int start_workers(struct pool *pl, const bt_component_class_source *cls,
			 struct input *parts, const int *first, const int *count,
			 const struct input *trace0, const struct an_state *an)
{
	for (int w = 0; w < pl->nw; w++) {
		int d[2], h[2], c[2];

		if (pipe2(d, O_CLOEXEC) || pipe2(h, O_CLOEXEC) || pipe2(c, O_CLOEXEC)) {
			fprintf(stderr, "ncclguard analyze: cannot start the readers: %s\n",
				strerror(errno));
			return -1;
		}
		/* fewer switches between the matcher and the workers */
		fcntl(d[0], F_SETPIPE_SZ, 1 << 20);
		fflush(NULL);
		pl->pid[w] = fork();
		if (pl->pid[w] < 0) {
			fprintf(stderr, "ncclguard analyze: cannot start the readers: %s\n",
				strerror(errno));
			close(d[0]), close(d[1]), close(h[0]), close(h[1]), close(c[0]),
				close(c[1]);
			return -1;
		}
		if (!pl->pid[w]) {
			struct worker wk = {
				.parts = &parts[first[w]], .nparts = count[w],
				.hello_fd = h[1], .ctl_fd = c[0],
				.keep_known = an->job_how != AN_JOB_NONE, .keep = an->job_keep,
			};

			for (int k = 0; k < w; k++) {
				close(pl->data[k]);
				close(pl->hello[k]);
				close(pl->ctl[k]);
			}
			close(d[0]);
			close(h[0]);
			close(c[1]);
			signal(SIGPIPE, SIG_DFL);
			_exit(worker_run(&wk, cls, d[1], trace0));
		}
		close(d[1]);
		close(h[1]);
		close(c[0]);
		pl->data[w] = d[0];
		pl->hello[w] = h[0];
		pl->ctl[w] = c[1];
	}
	return 0;
}

/* Records in time order to the matcher; 0, or -1 with why said. */
static int merge_workers(struct reader *rd, struct pool *pl, int nin)
{
	struct an_state *an = rd->an;
	struct rec_in *m = rec_in_new(pl->data, pl->nw);
	struct rec r;
	int w, got, ret = -1;

	if (!m) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		return -1;
	}
	while ((got = rec_next(m, &r, &w)) > 0) {
		switch (r.type) {
		case REC_EVENT:
			if (r.ev.src.host < 0 || r.ev.src.host >= pl->nh[w])
				goto broken;
			r.ev.src.host = pl->hmap[w][r.ev.src.host];
			rd->nevents++;
			if (!(rd->nevents & 0xffff))
				rd_progress(rd, 0);
			if (an_job_skip(an, &r.ev.src, r.ev.kind == EV_PROC, r.ev.job_id))
				break;
			rd_seen(an, &r.ev);
			if (r.ok) {
				rd_apply(an, &r.ev);
				an_early_tick(an);
			}
			break;
		case REC_EXPECT:
			an_streams_expect(an, r.id, r.n);
			break;
		case REC_SEND:
			an_stream_ended(an, an_host_id(an, r.str));
			break;
		case REC_HOST: {
			int *g = realloc(pl->hmap[w], (size_t)(pl->nh[w] + 1) * sizeof(*g));

			if (!g || r.id != pl->nh[w]) {
				if (g)
					pl->hmap[w] = g;
				goto broken;
			}
			pl->hmap[w] = g;
			g[pl->nh[w]++] = an_host_id(an, r.str);
			break;
		}
		case REC_LOST:
			an_lost(an, r.n);
			break;
		case REC_PKTS:
			an_incomplete(an, AN_INC_events_lost, "%s: packets missing (%llu)", r.str,
				      (unsigned long long)r.n);
			break;
		case REC_BAD: {
			struct badrec *b = realloc(pl->bad[w], (size_t)(pl->nbad[w] + 1) *
						   sizeof(*b));

			if (!b)
				goto broken;
			pl->bad[w] = b;
			b[pl->nbad[w]++] = (struct badrec){
				.name = r.id ? NULL : an_xstrdup(r.str),
				.first = an_xstrdup(r.str2), .n = r.n };
			break;
		}
		case REC_CUT:
			rd_say_cut(an, r.id ? NULL : r.str, r.n, r.str2);
			break;
		case REC_BADSUM:
			an->bad_values += r.n;
			break;
		case REC_END:
			pl->done[w] = 1;
			break;
		case REC_FAIL:
			pl->done[w] = 1;
			rd_progress(rd, 1);
			if (r.code == REC_FAIL_CRASH)
				fprintf(stderr, "ncclguard analyze: babeltrace2 crashed (signal %d) "
					"reading the trace%s after %llu events: corrupt trace\n",
					r.status, nin == 1 ? "" : "s",
					(unsigned long long)rd->nevents);
			else
				fprintf(stderr, "ncclguard analyze: %s\n%s", r.str, r.str2);
			goto out;
		default:
			goto broken;
		}
	}
	if (!got) {
		ret = 0;
		goto out;
	}
	/* Its pipe ended before its end: the worker died. */
	{
		int status = 0;

		rd_progress(rd, 1);
		while (waitpid(pl->pid[w], &status, 0) < 0 && errno == EINTR)
			;
		pl->pid[w] = -1;
		if (WIFSIGNALED(status) && rd_is_crash(WTERMSIG(status)))
			fprintf(stderr, "ncclguard analyze: babeltrace2 crashed (signal %d) "
				"reading the trace%s after %llu events: corrupt trace\n",
				WTERMSIG(status), nin == 1 ? "" : "s",
				(unsigned long long)rd->nevents);
		else if (WIFSIGNALED(status))
			fprintf(stderr, "ncclguard analyze: a reader was killed (signal %d) "
				"after %llu events\n", WTERMSIG(status),
				(unsigned long long)rd->nevents);
		else
			fprintf(stderr, "ncclguard analyze: a reader ended (status %d) after "
				"%llu events without its records\n", WEXITSTATUS(status),
				(unsigned long long)rd->nevents);
	}
#ifdef NG_FUZZ_WORKER_DEATH
	/* a worker's fault is ours to see (fuzz/fuzz_trace.c) */
	abort();
#endif
	goto out;
broken:
	rd_progress(rd, 1);
	fprintf(stderr, "ncclguard analyze: a reader's records do not parse (out of "
		"memory?)\n");
out:
	rec_in_free(m);
	return ret;
}

/* Reads the inputs with `jobs` workers: 0, -1 (why said), or 1 where
 * they make one part only (the single graph reads them). */
int rd_read_parallel(struct reader *rd, const bt_component_class_source *cls,
		     struct input *in, int nin, int jobs, int ntraces)
{
	struct input *parts;
	struct pool pl = { 0 };
	struct counted c = { .an = rd->an };
	int nparts = 0, *first = NULL, *count = NULL, ret = -1, w;
	uint64_t total = 0, cum = 0;

	parts = make_parts(in, nin, jobs, &nparts);
	if (!parts) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		return -1;
	}
	if (nparts < 2) {
		ret = 1;
		goto out;
	}
	pl.nw = jobs < nparts ? jobs : nparts;
	first = calloc((size_t)pl.nw, sizeof(*first));
	count = calloc((size_t)pl.nw, sizeof(*count));
	pl.pid = calloc((size_t)pl.nw, sizeof(*pl.pid));
	pl.data = calloc((size_t)pl.nw, sizeof(*pl.data));
	pl.hello = calloc((size_t)pl.nw, sizeof(*pl.hello));
	pl.ctl = calloc((size_t)pl.nw, sizeof(*pl.ctl));
	pl.done = calloc((size_t)pl.nw, sizeof(*pl.done));
	pl.hmap = calloc((size_t)pl.nw, sizeof(*pl.hmap));
	pl.nh = calloc((size_t)pl.nw, sizeof(*pl.nh));
	pl.bad = calloc((size_t)pl.nw, sizeof(*pl.bad));
	pl.nbad = calloc((size_t)pl.nw, sizeof(*pl.nbad));
	if (!first || !count || !pl.pid || !pl.data || !pl.hello || !pl.ctl || !pl.done ||
	    !pl.hmap || !pl.nh || !pl.bad || !pl.nbad) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		goto out;
	}
	for (w = 0; w < pl.nw; w++) {
		pl.pid[w] = -1;
		pl.data[w] = pl.hello[w] = pl.ctl[w] = -1;
	}
	/* Contiguous parts to each worker, about its share of the bytes. */
	for (int i = 0; i < nparts; i++)
		total += parts[i].bytes;
	w = 0;
	for (int i = 0; i < nparts; i++) {
		if (count[w] && w + 1 < pl.nw &&
		    (cum * (uint64_t)pl.nw >= total * (uint64_t)(w + 1) ||
		     nparts - i <= pl.nw - w - 1)) {
			w++;
			first[w] = i;
		}
		count[w]++;
		cum += parts[i].bytes;
	}
	pl.nw = w + 1;
	if (getenv("NCCLGUARD_ANALYZE_VERBOSE"))
		fprintf(stderr, "ncclguard analyze: %d readers over %d parts of %d trace%s\n",
			pl.nw, nparts, nin, nin == 1 ? "" : "s");
	if (start_workers(&pl, cls, parts, first, count, ntraces == 1 ? &in[0] : NULL, rd->an))
		goto out;
	if (rd->an->job_how == AN_JOB_NONE)
		agree_job(&pl);
	if (merge_workers(rd, &pl, nin))
		goto out;
	for (w = 0; w < pl.nw; w++)
		for (int i = 0; i < pl.nbad[w]; i++)
			rd_say_stream(&c, pl.bad[w][i].name, pl.bad[w][i].n, pl.bad[w][i].first);
	rd_say_rest(rd->an, &c);
	ret = 0;
out:
	for (w = 0; pl.pid && w < pl.nw; w++) {
		int status;

		close_fd(&pl.data[w]);
		close_fd(&pl.hello[w]);
		close_fd(&pl.ctl[w]);
		if (pl.pid[w] <= 0)
			continue;
		/* one that has not ended is stopped: its read no longer counts */
		if (!pl.done[w] || ret)
			kill(pl.pid[w], SIGKILL);
		while (waitpid(pl.pid[w], &status, 0) < 0 && errno == EINTR)
			;
	}
	for (w = 0; pl.bad && w < pl.nw; w++) {
		for (int i = 0; i < pl.nbad[w]; i++) {
			free(pl.bad[w][i].name);
			free(pl.bad[w][i].first);
		}
		free(pl.bad[w]);
		free(pl.hmap[w]);
	}
	for (int i = 0; i < nparts; i++)
		rd_remove_view(parts[i].view);
	free(parts);
	free(first);
	free(count);
	free(pl.pid);
	free(pl.data);
	free(pl.hello);
	free(pl.ctl);
	free(pl.done);
	free(pl.hmap);
	free(pl.nh);
	free(pl.bad);
	free(pl.nbad);
	return ret;
}
