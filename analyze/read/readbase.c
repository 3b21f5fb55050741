/*
 * What both readers stand on, read.c (one graph) and pread.c (workers,
 * -j): each event to the matcher, the guard against a crash inside
 * babeltrace2, the sinks and their connection to merge.c, the views of a
 * trace with some stream files left out, and what the read left out said
 * in incomplete[].
 */
#include <babeltrace2/babeltrace.h>
#include <dirent.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "read.h"
#include "esc.h"
#include "events.h"
#include "graph.h"
#include "merge.h"
#include "read_priv.h"

/* What libbabeltrace2 may die of on a corrupt trace. */
static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };
#define NCRASH ((int)(sizeof(crash_sigs) / sizeof(crash_sigs[0])))

void rd_crash_default(void)
{
	for (int i = 0; i < NCRASH; i++)
		signal(crash_sigs[i], SIG_DFL);
}

/* ---- errors and progress --------------------------------------------- */

void rd_bt_error(const char *what)
{
	char buf[2048];

	ev_bt_causes(buf, sizeof(buf));
	fprintf(stderr, "ncclguard analyze: %s\n%s", what, buf);
}

void rd_progress(struct reader *rd, int done)
{
	struct timespec now;
	double dt;

	if (!rd->progress)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	dt = (double)(now.tv_sec - rd->last_progress.tv_sec) +
		(double)(now.tv_nsec - rd->last_progress.tv_nsec) / 1e9;
	if (!done && dt < 0.5)
		return;
	rd->last_progress = now;
	dt = (double)(now.tv_sec - rd->start.tv_sec) +
		(double)(now.tv_nsec - rd->start.tv_nsec) / 1e9;
	if (done)
		fputs("\r\033[K", stderr);
	else
		fprintf(stderr, "\rncclguard analyze: %.1f M events read, %.1f M/s ",
			(double)rd->nevents / 1e6, dt > 0 ? (double)rd->nevents / 1e6 / dt : 0);
}

/* A decoded event to the matcher. */
void rd_apply(struct an_state *an, struct ev_event *ev)
{
	switch (ev->kind) {
	case EV_PROC:
		an_process_info(an, &ev->src, &ev->r.proc);
		break;
	case EV_INIT_BEGIN:
	case EV_INIT_END:
		an_comm_init(an, &ev->src, &ev->r.init);
		/* Named without NCCL's hash: the parent's ranks and the joiners
		 * each have a hash of their own for one comm. */
		if (ev->r.init.end && ev->r.init.local_ident)
			an_incomplete(an, AN_INC_grow_unjoined,
				      "a communicator made by ncclCommGrow was named without NCCL's "
				      "comm hash (no profiler plugin of ours at its init): its "
				      "joining ranks cannot be matched with its existing ones, and "
				      "each half shows as a comm of its own; record with "
				      "NCCL_PROFILER_PLUGIN=libncclguard.so (as `ncclguard run` "
				      "sets it)");
		/* Made by the shim's profiler plugin: no wrapper saw this comm. */
		if (ev->r.init.end && ev->r.init.plugin) {
			struct an_proc *pr = an_proc_get(an, &ev->src);

			if (pr)
				pr->plugin_only = 1;
			/* NCCL runs a 1-rank comm's collectives as local copies
			 * and tells a plugin nothing of them. */
			if (ev->r.init.nranks == 1)
				an_incomplete(an, AN_INC_plugin_one_rank,
					      "a 1-rank communicator seen only through NCCL's "
					      "profiler plugin: NCCL reports none of its collectives "
					      "to a plugin, so its calls are not in this report "
					      "(the preload records them)");
		}
		break;
	case EV_ENQ:
		an_enqueue(an, &ev->src, &ev->r.coll);
		break;
	case EV_ALGO:
		an_algo(an, &ev->src, &ev->r.algo);
		break;
	case EV_DONE:
		an_complete(an, &ev->src, &ev->r.coll);
		break;
	case EV_COMM_END:
		an_comm_end(an, &ev->src, &ev->r.misc);
		break;
	case EV_COMM_STATE:
		an_comm_state(an, &ev->src, &ev->r.misc);
		break;
	case EV_TIMEOUT:
		an_timeout(an, &ev->src, &ev->r.misc);
		break;
	case EV_POLICY:
		an_policy(an, &ev->src, &ev->r.misc);
		break;
	case EV_INJECT:
		an_inject(an, &ev->src, &ev->r.misc);
		break;
	case EV_HW_DEVICE:
	case EV_HW_CHANGE:
	case EV_HW_SAMPLE:
		an_hw(an, &ev->src, ev->kind, &ev->r.hw);
		break;
	case EV_FPRINT:
		an_fprint(an, &ev->src, &ev->r.fp);
		break;
	case EV_CENSUS:
		an_census(an, &ev->src, &ev->r.census);
		break;
	default:
		break;
	}
}

/* Counted; its process's and the trace's span taken in, but for the
 * hardware sampler's (its process is no rank, and its last sample is no
 * rank's event: the trace ends with the ranks'), a fingerprint (the
 * watchdog writes it up to a second after its call) and the API census
 * (the watchdog's too, at its first tick or at exit). */
void rd_seen(struct an_state *an, const struct ev_event *ev)
{
	if (ev->kind == EV_HW_DEVICE || ev->kind == EV_HW_CHANGE || ev->kind == EV_HW_SAMPLE ||
	    ev->kind == EV_FPRINT || ev->kind == EV_CENSUS)
		an->events++;
	else
		an_seen(an, &ev->src);
}

static int handle_event(struct reader *rd, const bt_message *msg)
{
	struct ev_event ev;
	int ret = ev_head(rd->dec, msg, &ev);

	if (ret <= 0)
		return ret;
	rd->nevents++;
	if (!(rd->nevents & 0xffff))
		rd_progress(rd, 0);
	/* Another job's events never reach the matcher (job.c). */
	if (an_job_skip(rd->an, &ev.src, ev.kind == EV_PROC, ev.job_id))
		return 0;
	rd_seen(rd->an, &ev);
	if (!ev_body(rd->dec, &ev))
		return 0;
	rd_apply(rd->an, &ev);
	an_early_tick(rd->an);
	return 0;
}

/* The reader's id of a stream's host, as the decoder names it. */
static int stream_host(struct reader *rd, const bt_stream *st)
{
	const bt_value *v = bt_trace_borrow_environment_entry_value_by_name_const(
		bt_stream_borrow_trace_const(st), "hostname");

	return an_host_id(rd->an, v && bt_value_get_type(v) == BT_VALUE_TYPE_STRING ?
			  bt_value_string_get(v) : "unknown");
}

static int handle(struct reader *rd, const bt_message *msg)
{
	uint64_t n;

	switch (bt_message_get_type(msg)) {
	case BT_MESSAGE_TYPE_EVENT:
		return handle_event(rd, msg);
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		if (bt_message_discarded_events_get_count(msg, &n) ==
		    BT_PROPERTY_AVAILABILITY_AVAILABLE)
			an_lost(rd->an, n);
		return 0;
	case BT_MESSAGE_TYPE_DISCARDED_PACKETS: {
		/* A gap in a stream's packet numbers: its events are gone. */
		const bt_stream *st = bt_message_discarded_packets_borrow_stream_const(msg);
		const char *name = bt_stream_get_name(st);

		if (bt_message_discarded_packets_get_count(msg, &n) !=
		    BT_PROPERTY_AVAILABILITY_AVAILABLE)
			n = 0;
		an_incomplete(rd->an, AN_INC_events_lost, "%s: packets missing (%llu)",
			      name ? name : "a stream", (unsigned long long)n);
		return 0;
	}
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		return ev_stream(rd->dec, bt_message_stream_beginning_borrow_stream_const(msg));
	case BT_MESSAGE_TYPE_STREAM_END:
		/* In time order: the stream's last event went before it. */
		an_stream_ended(rd->an, stream_host(rd, bt_message_stream_end_borrow_stream_const(msg)));
		return 0;
	default:
		return 0;
	}
}

/* ---- a crash inside babeltrace2 while the graph runs ------------------- */

/* Decoding a corrupt packet can make libbabeltrace2 abort (a failed
 * precondition) or fault.  It has no state of ours on its stack then:
 * the read jumps back to an_read_traces(), which leaves the graph as it
 * is and fails the read with that said.  A fault in our own sink code
 * (rd_in_sink) is ours and kills the process as it would. */
static sigjmp_buf crash_jmp;
volatile sig_atomic_t rd_in_sink, rd_crash_sig;

static void on_crash(int sig)
{
	if (rd_in_sink) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	rd_crash_sig = sig;
	siglongjmp(crash_jmp, 1);
}

static void crash_guard(int on, struct sigaction *old)
{
	static char altstack[65536];
	struct sigaction sa;
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };

	if (!on) {
		for (int i = 0; i < NCRASH; i++)
			sigaction(crash_sigs[i], &old[i], NULL);
		return;
	}
	/* a fault from a runaway recursion needs a stack of its own */
	sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < NCRASH; i++)
		sigaction(crash_sigs[i], &sa, &old[i]);
}

/* The graph run to its end; -1 if babeltrace2 crashed (rd_crash_sig). */
int rd_run_graph(bt_graph *graph, bt_graph_run_status *rs)
{
	struct sigaction old[NCRASH];

	crash_guard(1, old);
	if (sigsetjmp(crash_jmp, 1)) {
		crash_guard(0, old);
		return -1;
	}
	do {
		*rs = bt_graph_run(graph);
	} while (*rs == BT_GRAPH_RUN_STATUS_AGAIN);
	crash_guard(0, old);
	return 0;
}

int rd_is_crash(int sig)
{
	for (int i = 0; i < NCRASH; i++)
		if (crash_sigs[i] == sig)
			return 1;
	return 0;
}

static int handled(struct reader *rd, const bt_message *msg)
{
	int ret;

	rd_in_sink = 1;
	ret = handle(rd, msg);
	rd_in_sink = 0;
	return ret;
}

/* The muxer's sink: a batch of messages in time order. */
int rd_consume(void *ctx, bt_message_array_const msgs, uint64_t count)
{
	struct reader *rd = ctx;

	for (uint64_t i = 0; i < count; i++)
		if (handled(rd, msgs[i])) {
			rd->failed = 1;
			return -1;
		}
	return 0;
}

/* merge.c's sink hands each message here, in time order; an event of a
 * stream gone back in time is dropped, counted. */
int rd_merged(void *ctx, const bt_message *msg, int64_t key, int back)
{
	struct reader *rd = ctx;

	(void)key;
	if (back && bt_message_get_type(msg) == BT_MESSAGE_TYPE_EVENT) {
		ev_late_event(rd->dec, msg);
		return 0;
	}
	if (!handled(rd, msg))
		return 0;
	rd->failed = 1;
	return -1;
}

void rd_merged_cut(void *ctx, const char *stream, uint64_t events, const char *why)
{
	struct reader *rd = ctx;

	rd_say_cut(rd->an, stream, events, why);
}

/* The trace's streams into one merge.c sink, ordered by a heap: the
 * muxer's scan of every stream per message is the read's cost at a few
 * hundred stream files.  NCCLGUARD_ANALYZE_MUXER=1 reads through
 * babeltrace2's muxer instead, the reference the tests compare with. */
int rd_connect_merge(bt_graph *graph, const bt_component_source **srcs, int nsrc,
		     an_merge_fn fn, an_merge_cut_fn cut, void *ctx,
		     const bt_component_sink **sink)
{
	uint64_t nports = 0, k = 0;

	for (int i = 0; i < nsrc; i++)
		nports += bt_component_source_get_output_port_count(srcs[i]);
	if (an_merge_add(graph, nports, fn, cut, ctx, sink)) {
		rd_bt_error("cannot create the sink");
		return -1;
	}
	for (int i = 0; i < nsrc; i++) {
		uint64_t n = bt_component_source_get_output_port_count(srcs[i]);

		for (uint64_t p = 0; p < n; p++, k++)
			if (ev_connect(graph,
				       bt_component_source_borrow_output_port_by_index_const(srcs[i], p),
				       bt_component_sink_borrow_input_port_by_index_const(*sink, k))) {
				rd_bt_error("cannot connect the streams to the sink");
				return -1;
			}
	}
	return 0;
}

void rd_dropped(struct an_state *an, int say, enum an_inc_kind what, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	an_incomplete(an, what, "%s", detail);
	if (say) {
		/* It may quote the trace. */
		fputs("ncclguard analyze: ", stderr);
		ng_esc_put(stderr, detail);
		fputc('\n', stderr);
	}
}

void rd_remove_view(char *view)
{
	char path[PATH_MAX + 256];
	struct dirent *d;
	DIR *dh;

	if (!view)
		return;
	dh = opendir(view);
	while (dh && (d = readdir(dh))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", view, d->d_name);
		unlink(path);
	}
	if (dh)
		closedir(dh);
	rmdir(view);
	free(view);
}

/* The first `keep` bytes of `from` as `to`: the whole packets of a file
 * cut short. */
static int copy_head(const char *from, const char *to, off_t keep)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, ret = -1;

	if (in < 0)
		goto out;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		goto out;
	while (keep > 0) {
		ssize_t n = read(in, buf, keep < (off_t)sizeof(buf) ? (size_t)keep : sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || write(out, buf, (size_t)n) != n)
			goto out;
		keep -= n;
	}
	ret = 0;
out:
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out))
		ret = -1;
	return ret;
}

/* A temporary folder that src.ctf.fs reads as the trace in `dir` with
 * only the stream files `use` marks, cut ones as their whole packets
 * (the LTTng index is left out: it describes the files as they were). */
char *rd_make_view(const char *dir, const struct an_tcheck *tc, const char *use)
{
	char abs[PATH_MAX], from[PATH_MAX + 256], to[PATH_MAX + 256];
	const char *tmp = getenv("TMPDIR");
	char *view;

	if (!realpath(dir, abs))
		return NULL;
	if (asprintf(&view, "%s/ncclguard-view-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
		return NULL;
	if (!mkdtemp(view)) {
		free(view);
		return NULL;
	}
	snprintf(from, sizeof(from), "%s/metadata", abs);
	snprintf(to, sizeof(to), "%s/metadata", view);
	if (symlink(from, to))
		goto fail;
	for (int i = 0; i < tc->nf; i++) {
		if (!use[i])
			continue;
		snprintf(from, sizeof(from), "%s/%s", abs, tc->f[i].name);
		snprintf(to, sizeof(to), "%s/%s", view, tc->f[i].name);
		if (tc->f[i].state == AN_SF_CUT ? copy_head(from, to, tc->f[i].keep) :
		    symlink(from, to))
			goto fail;
	}
	return view;
fail:
	rd_remove_view(view);
	return NULL;
}

void rd_say_stream(void *ctx, const char *name, uint64_t n, const char *what)
{
	struct counted *c = ctx;

	c->n += n;
	rd_dropped(c->an, 1, AN_INC_events_implausible, "%s: %llu implausible (%s): the events "
		"dropped or the values cleared", name ? name : "a stream",
		(unsigned long long)n, what);
}

void rd_say_cut(struct an_state *an, const char *stream, uint64_t events, const char *why)
{
	rd_dropped(an, 1, AN_INC_stream_unreadable, "%s: not readable after its first %llu events "
		"(babeltrace2: %s): the rest of it left out", stream ? stream : "a stream",
		(unsigned long long)events, why);
}

/* What the read left out or forced, once the graph is done, after the
 * streams with implausible values were said (c). */
void rd_say_rest(struct an_state *an, const struct counted *c)
{
	if (an->bad_values > c->n)
		rd_dropped(an, 1, AN_INC_events_implausible, "%llu event%s named a size, rank, peer or "
			"seq its communicator cannot have: ignored",
			(unsigned long long)(an->bad_values - c->n),
			an->bad_values - c->n == 1 ? "" : "s");
	for (int i = 0; i < an->ncomms; i++)
		if (an->comms[i]->forced)
			an_incomplete(an, AN_INC_window_exceeded, "comm %016llx: %llu collectives "
				      "more than %d in flight were matched as they stood",
				      (unsigned long long)an->comms[i]->hash,
				      (unsigned long long)an->comms[i]->forced, AN_WINDOW_MAX);
	/* Seen on every rank, closed before their completions came: their
	 * times are lost, but on a comm of one rank (match.c keeps them). */
	for (int i = 0; i < an->ncomms; i++)
		if (an->comms[i]->forced_seen && an->comms[i]->nranks != 1)
			an_incomplete(an, AN_INC_window_exceeded, "comm %016llx: %llu collectives "
				      "more than %d in flight were closed before their "
				      "completions came; the times of those timed are not "
				      "counted", (unsigned long long)an->comms[i]->hash,
				      (unsigned long long)an->comms[i]->forced_seen, AN_WINDOW_MAX);
	if (an->p2p_forgotten)
		an_incomplete(an, AN_INC_window_exceeded, "%llu sends and recvs more than %d "
			      "pending on a rank were forgotten",
			      (unsigned long long)an->p2p_forgotten, AN_P2P_PENDING_MAX);
}
