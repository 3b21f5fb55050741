/*
 * Reading: one src.ctf.fs component per CTF trace found under the DIRs,
 * their streams ordered by time by merge.c's sink (a heap; babeltrace2's
 * flt.utils.muxer and a simple sink with NCCLGUARD_ANALYZE_MUXER=1).  The
 * sink has each ncclguard event decoded into a record (events/, shared
 * with `ncclguard watch`) and hands it to the matcher; nothing of the
 * trace is kept here.
 *
 * babeltrace2 refuses a whole trace for one bad stream file, spins for
 * ever on some cut metadata and may crash on worse.  So each trace is
 * checked first (traces.c: whole packets, no empty or missing files) and
 * opened once in a child under a deadline (try_open()); what fails is
 * narrowed to the metadata or the stream files at fault, those are left
 * out (a view: a temporary folder of links to the rest), and what was
 * left out is said in incomplete[].  Every value an event gives is
 * bounded before the matcher sees it (ev_body()).
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

#include "an_priv.h"
#include "events.h"
#include "merge.h"
#include "recs.h"

/* What libbabeltrace2 may die of on a corrupt trace. */
static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };
#define NCRASH ((int)(sizeof(crash_sigs) / sizeof(crash_sigs[0])))

struct reader {
	struct an_state *an;
	struct ev_decoder *dec;
	int progress;		/* a progress line on stderr */
	uint64_t nevents;
	struct timespec last_progress, start;
	int failed;
};

/* ---- errors ----------------------------------------------------------- */

/* babeltrace2's causes of the current error, one per line, into buf. */
static void bt_error_text(char *buf, size_t len)
{
	const bt_error *err = bt_current_thread_take_error();
	uint64_t n, i, shown = 0;
	size_t at = 0;

	buf[0] = '\0';
	if (!err)
		return;
	n = bt_error_get_cause_count(err);
	/* Outermost first, down to the root cause, as babeltrace2 prints
	 * them; the library's own causes only repeat addresses. */
	for (i = n; i-- > 0 && shown < 5 && at < len;) {
		const bt_error_cause *c = bt_error_borrow_cause_by_index(err, i);
		const char *msg = bt_error_cause_get_message(c);
		const char *nl = strchr(msg, '\n');
		int w;

		if (bt_error_cause_get_actor_type(c) == BT_ERROR_CAUSE_ACTOR_TYPE_UNKNOWN)
			continue;
		w = snprintf(buf + at, len - at, "  %.*s\n",
			     nl ? (int)(nl - msg) : (int)strlen(msg), msg);
		if (w < 0)
			break;
		at += (size_t)w;
		shown++;
	}
	bt_error_release(err);
}

/* The root cause of the current error, its first line: what names the
 * fault (the outer ones name the folder, here a view's). */
static void bt_error_root(char *buf, size_t len)
{
	const bt_error *err = bt_current_thread_take_error();
	const char *msg = NULL;

	buf[0] = '\0';
	if (!err)
		return;
	for (uint64_t i = 0; i < bt_error_get_cause_count(err) && !msg; i++) {
		const bt_error_cause *c = bt_error_borrow_cause_by_index(err, i);

		if (bt_error_cause_get_actor_type(c) != BT_ERROR_CAUSE_ACTOR_TYPE_UNKNOWN)
			msg = bt_error_cause_get_message(c);
	}
	if (msg)
		snprintf(buf, len, "%.*s", (int)strcspn(msg, "\n"), msg);
	bt_error_release(err);
}

static void print_bt_error(const char *what)
{
	char buf[2048];

	bt_error_text(buf, sizeof(buf));
	fprintf(stderr, "ncclguard analyze: %s\n%s", what, buf);
}

/* ---- per event -------------------------------------------------------- */

static void progress(struct reader *rd, int done)
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


static int host_id(void *ctx, const char *name)
{
	return an_host_id(ctx, name);
}

/* A decoded event to the matcher. */
static void apply(struct an_state *an, struct ev_event *ev)
{
	switch (ev->kind) {
	case EV_PROC:
		an_process_info(an, &ev->src, &ev->r.proc);
		break;
	case EV_INIT_BEGIN:
	case EV_INIT_END:
		an_comm_init(an, &ev->src, &ev->r.init);
		/* Made by the shim's profiler plugin: no wrapper saw this comm. */
		if (ev->r.init.end && ev->r.init.plugin) {
			struct an_proc *pr = an_proc_get(an, &ev->src);

			if (pr)
				pr->plugin_only = 1;
			/* NCCL runs a 1-rank comm's collectives as local copies
			 * and tells a plugin nothing of them. */
			if (ev->r.init.nranks == 1)
				an_incomplete(an, "plugin_one_rank",
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
	case EV_TIMEOUT:
		an_timeout(an, &ev->src, &ev->r.misc);
		break;
	case EV_POLICY:
		an_policy(an, &ev->src, &ev->r.misc);
		break;
	case EV_INJECT:
		an_inject(an, &ev->src, &ev->r.misc);
		break;
	default:
		break;
	}
}

static int handle_event(struct reader *rd, const bt_message *msg)
{
	struct ev_event ev;
	int ret = ev_head(rd->dec, msg, &ev);

	if (ret <= 0)
		return ret;
	rd->nevents++;
	if (!(rd->nevents & 0xffff))
		progress(rd, 0);
	/* Another job's events never reach the matcher (job.c). */
	if (an_job_skip(rd->an, &ev.src, ev.kind == EV_PROC, ev.job_id))
		return 0;
	an_seen(rd->an, &ev.src);
	if (!ev_body(rd->dec, &ev))
		return 0;
	apply(rd->an, &ev);
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
		an_incomplete(rd->an, "events_lost", "%s: packets missing (%llu)",
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
 * (in_sink) is ours and kills the process as it would. */
static sigjmp_buf crash_jmp;
static volatile sig_atomic_t in_sink, crash_sig;

static void on_crash(int sig)
{
	if (in_sink) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	crash_sig = sig;
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

/* The graph run to its end; -1 if babeltrace2 crashed (crash_sig). */
static int run_graph(bt_graph *graph, bt_graph_run_status *rs)
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

static int handled(struct reader *rd, const bt_message *msg)
{
	int ret;

	in_sink = 1;
	ret = handle(rd, msg);
	in_sink = 0;
	return ret;
}

static bt_graph_simple_sink_component_consume_func_status
consume(bt_message_iterator *it, void *data)
{
	struct reader *rd = data;
	bt_message_array_const msgs;
	bt_graph_simple_sink_component_consume_func_status ret =
		BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
	uint64_t count = 0, i;

	switch (bt_message_iterator_next(it, &msgs, &count)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_ERROR:
	default:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	for (i = 0; i < count; i++) {
		if (ret == BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK &&
		    handled(rd, msgs[i])) {
			rd->failed = 1;
			ret = BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
		}
		bt_message_put_ref(msgs[i]);
	}
	return ret;
}

/* merge.c's sink hands each message here, in time order. */
static int merged(void *ctx, const bt_message *msg, int64_t key)
{
	struct reader *rd = ctx;

	(void)key;
	if (!handled(rd, msg))
		return 0;
	rd->failed = 1;
	return -1;
}

/* The trace's streams into one merge.c sink, ordered by a heap: the
 * muxer's scan of every stream per message is the read's cost at a few
 * hundred stream files.  NCCLGUARD_ANALYZE_MUXER=1 reads through
 * babeltrace2's muxer instead, the reference the tests compare with. */
static int connect_merge(bt_graph *graph, const bt_component_source **srcs, int nsrc,
			 an_merge_fn fn, void *ctx, const bt_component_sink **sink)
{
	uint64_t nports = 0, k = 0;

	for (int i = 0; i < nsrc; i++)
		nports += bt_component_source_get_output_port_count(srcs[i]);
	if (an_merge_add(graph, nports, fn, ctx, sink)) {
		print_bt_error("cannot create the sink");
		return -1;
	}
	for (int i = 0; i < nsrc; i++) {
		uint64_t n = bt_component_source_get_output_port_count(srcs[i]);

		for (uint64_t p = 0; p < n; p++, k++)
			if (bt_graph_connect_ports(graph,
				    bt_component_source_borrow_output_port_by_index_const(srcs[i], p),
				    bt_component_sink_borrow_input_port_by_index_const(*sink, k),
				    NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
				print_bt_error("cannot connect the streams to the sink");
				return -1;
			}
	}
	return 0;
}

/* ---- graph ------------------------------------------------------------ */

static bt_value *source_params(const char *dir)
{
	bt_value *params = bt_value_map_create(), *inputs = NULL;

	if (!params)
		return NULL;
	if (bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) !=
	    BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK ||
	    bt_value_array_append_string_element(inputs, dir) !=
	    BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK ||
	    /* Hosts' clocks have different UUIDs; the muxer refuses to order
	     * them unless their origin is the epoch (LTTng's offset is). */
	    bt_value_map_insert_bool_entry(params, "force-clock-class-origin-unix-epoch",
					   BT_TRUE) != BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK) {
		bt_value_put_ref(params);
		return NULL;
	}
	return params;
}

/* The trace's source, its streams connected to the muxer where one is
 * given (else merge.c's sink connects them). */
static int add_source(bt_graph *graph, const bt_component_class_source *cls,
		      const char *dir, int i, const bt_component_filter *muxer,
		      const bt_component_source **out_src)
{
	bt_value *params = source_params(dir);
	const bt_component_source *src = NULL;
	char name[32], what[4200];
	uint64_t p, nports;
	int ret = -1;

	if (!params) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		goto out;
	}
	snprintf(name, sizeof(name), "src%d", i);
	if (bt_graph_add_source_component(graph, cls, name, params, BT_LOGGING_LEVEL_NONE,
					  &src) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		snprintf(what, sizeof(what), "%s: not a readable CTF trace", dir);
		print_bt_error(what);
		goto out;
	}
	*out_src = src;
	nports = muxer ? bt_component_source_get_output_port_count(src) : 0;
	for (p = 0; p < nports; p++) {
		const bt_port_output *out =
			bt_component_source_borrow_output_port_by_index_const(src, p);
		/* The muxer always offers one free input port, its last. */
		const bt_port_input *in = bt_component_filter_borrow_input_port_by_index_const(
			muxer, bt_component_filter_get_input_port_count(muxer) - 1);

		if (bt_graph_connect_ports(graph, out, in, NULL) !=
		    BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
			snprintf(what, sizeof(what), "%s: cannot connect its streams", dir);
			print_bt_error(what);
			goto out;
		}
	}
	ret = 0;
out:
	bt_value_put_ref(params);
	return ret;
}

/* ---- the guard: checked files, a view, a child with a deadline -------- */

/* A trace as the graph reads it: its folder, or a view of it. */
struct input {
	const char *dir;	/* what src.ctf.fs reads */
	char *view;		/* a temporary folder to remove, or NULL */
	const char *orig;	/* the trace's folder, where dir is a part of it */
	uint64_t bytes;
	int host;		/* the matcher's id of its host, -1 if unnamed */
};

/* Said in incomplete[] and, where something was left out, on stderr. */
static void dropped(struct an_state *an, int say, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void dropped(struct an_state *an, int say, const char *what, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	an_incomplete(an, what, "%s", detail);
	if (say)
		fprintf(stderr, "ncclguard analyze: %s\n", detail);
}

/* Opening a trace parses its metadata and indexes its packets: a few
 * seconds, and one more per 32 MiB. */
static unsigned deadline_s(uint64_t bytes)
{
	return 5 + (unsigned)(bytes >> 25 < 600 ? bytes >> 25 : 600);
}

/* The child's part of try_open(): 0 if src.ctf.fs takes every dir. */
static int open_in_child(const bt_component_class_source *cls, const char *const *dirs, int n,
			 int fd)
{
	bt_graph *graph = bt_graph_create(0);
	char buf[1024], name[32];
	int ret = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && !ret; i++) {
		bt_value *params = source_params(dirs[i]);
		const bt_component_source *src = NULL;

		snprintf(name, sizeof(name), "src%d", i);
		if (!graph || !params) {
			snprintf(buf, sizeof(buf), "out of memory\n");
			ret = 1;
		} else if (bt_graph_add_source_component(graph, cls, name, params,
							 BT_LOGGING_LEVEL_NONE, &src) !=
			   BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
			bt_error_root(buf, sizeof(buf));
			ret = 1;
		}
		bt_value_put_ref(params);
	}
	if (write(fd, buf, strlen(buf)) < 0)
		ret = 1;
	return ret;
}

/* Can src.ctf.fs open every dir within `secs`?  Asked in a child, which
 * the alarm ends if it spins and whose crash is its own.  0: yes; else
 * why. */
static int try_open_many(const bt_component_class_source *cls, const char *const *dirs,
			 int ndirs, unsigned secs, char *why, size_t len)
{
	const char *dir = dirs[0];
	char buf[1024];
	size_t got = 0;
	int fds[2], status;
	sigset_t set;
	ssize_t n;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC)) {
		snprintf(why, len, "cannot check it: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(why, len, "cannot check it: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (!pid) {
		close(fds[0]);
		/* the default actions: a crash or the alarm ends the child,
		 * whatever handlers the parent had (a fuzzer's, our guard's) */
		for (int i = 0; i < NCRASH; i++)
			signal(crash_sigs[i], SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, SIGALRM);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		alarm(secs);
		_exit(open_in_child(cls, dirs, ndirs, fds[1]));
	}
	close(fds[1]);
	while (got < sizeof(buf) - 1) {
		n = read(fds[0], buf + got, sizeof(buf) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			snprintf(why, len, "cannot check it: %s", strerror(errno));
			return -1;
		}
	}
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
		snprintf(why, len, "babeltrace2 still parsing it after %u s", secs);
		return -1;
	}
	if (WIFSIGNALED(status)) {
		snprintf(why, len, "babeltrace2 crashed on it (signal %d)", WTERMSIG(status));
		return -1;
	}
	/* A cause that only names the folder (a view's) says nothing more. */
	if (strstr(buf, dir))
		buf[0] = '\0';
	snprintf(why, len, "not a readable CTF trace%s%s", *buf ? ": " : "", buf);
	return -1;
}

static int try_open(const bt_component_class_source *cls, const char *dir, unsigned secs,
		    char *why, size_t len)
{
	return try_open_many(cls, &dir, 1, secs, why, len);
}

static void remove_view(char *view)
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
static char *make_view(const char *dir, const struct an_tcheck *tc, const char *use)
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
	remove_view(view);
	return NULL;
}

/* The trace in `dir` as the graph may read it, what cannot be read left
 * out and said; -1 if nothing of it can be. */
static int open_trace(struct an_state *an, const bt_component_class_source *cls,
		      const char *dir, struct input *in, int opened)
{
	char why[1200], *use = NULL, *one = NULL, *view;
	struct an_tcheck tc;
	int i, changed = 0, ret = -1;
	unsigned secs;

	in->dir = dir;
	in->orig = dir;
	in->view = NULL;
	in->bytes = 0;
	if (an_trace_check(dir, &tc)) {
		dropped(an, 1, "stream_unreadable", "%s: cannot list it: %s; skipped", dir,
			strerror(errno));
		return -1;
	}
	if (!tc.meta_ok) {
		dropped(an, 1, "metadata_unreadable", "%s/metadata: %s: not a readable CTF "
			"trace; skipped", dir, tc.meta_why);
		goto out;
	}
	secs = deadline_s(tc.bytes);
	in->bytes = tc.bytes;
	use = calloc((size_t)tc.nf + 1, 1);
	one = calloc((size_t)tc.nf + 1, 1);
	if (!use || !one) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		goto out;
	}
	for (i = 0; i < tc.nf; i++) {
		const struct an_sfile *f = &tc.f[i];

		use[i] = f->state == AN_SF_OK || f->state == AN_SF_CUT;
		changed |= f->state == AN_SF_CUT || f->state == AN_SF_BAD;
		if (f->state == AN_SF_EMPTY)
			/* nothing of it is lost in reading: only said */
			dropped(an, 0, "stream_truncated", "%s/%s: empty (0 bytes)", dir, f->name);
		else if (f->state == AN_SF_CUT)
			dropped(an, 1, "stream_truncated", "%s/%s: cut inside a packet: the "
				"%lld bytes of whole packets read, the last %lld skipped", dir,
				f->name, (long long)f->keep, (long long)(f->size - f->keep));
		else if (f->state == AN_SF_BAD)
			dropped(an, 1, "stream_unreadable", "%s/%s: no whole packet in its %lld "
				"bytes; skipped", dir, f->name, (long long)f->size);
	}
	if (tc.nmissing)
		dropped(an, 0, "stream_missing", "%s: %d per-CPU stream file%s missing: %s%s",
			dir, tc.nmissing, tc.nmissing == 1 ? "" : "s", tc.missing,
			tc.nmissing > 1 && strlen(tc.missing) > sizeof(tc.missing) - 48 ?
			", ..." : "");
	if (changed && !(in->view = make_view(dir, &tc, use))) {
		dropped(an, 1, "stream_unreadable", "%s: cannot leave out its bad files (%s); "
			"skipped", dir, strerror(errno));
		goto out;
	}
	if (in->view)
		in->dir = in->view;
	/* Opened already with all the others, as it is: no child of its own. */
	if (!in->view && opened) {
		ret = 0;
		goto out;
	}
	if (!try_open(cls, in->dir, secs, why, sizeof(why))) {
		ret = 0;
		goto out;
	}
	/* Which part: the metadata alone, then each stream file alone. */
	view = make_view(dir, &tc, one);
	if (!view || try_open(cls, view, secs, why, sizeof(why))) {
		if (!view)
			snprintf(why, sizeof(why), "cannot check it: %s", strerror(errno));
		remove_view(view);
		dropped(an, 1, "metadata_unreadable", "%s/metadata: %s; skipped", dir, why);
		goto out;
	}
	remove_view(view);
	for (i = 0; i < tc.nf; i++) {
		if (!use[i])
			continue;
		one[i] = 1;
		view = make_view(dir, &tc, one);
		one[i] = 0;
		if (view && !try_open(cls, view, secs, why, sizeof(why))) {
			remove_view(view);
			continue;
		}
		remove_view(view);
		use[i] = 0;
		dropped(an, 1, "stream_unreadable", "%s/%s: %s; skipped", dir, tc.f[i].name,
			view ? why : "cannot check it");
	}
	remove_view(in->view);
	in->dir = dir;
	in->view = make_view(dir, &tc, use);
	if (!in->view || try_open(cls, in->view, secs, why, sizeof(why))) {
		dropped(an, 1, "stream_unreadable", "%s: %s; skipped", dir,
			in->view ? why : "cannot leave out its bad files");
		goto out;
	}
	in->dir = in->view;
	ret = 0;
out:
	if (ret) {
		remove_view(in->view);
		in->view = NULL;
	}
	free(use);
	free(one);
	an_tcheck_free(&tc);
	return ret;
}

/* A stream with values out of range, said once the graph is done. */
struct counted {
	struct an_state *an;
	uint64_t n;
};

static void say_stream(void *ctx, const char *name, uint64_t n, const char *first)
{
	struct counted *c = ctx;

	c->n += n;
	dropped(c->an, 1, "stream_unreadable", "%s: %llu value%s out of range (the first: "
		"%s): %s", name ? name : "a stream", (unsigned long long)n, n == 1 ? "" : "s",
		first, "their events dropped or the values cleared");
}

/* What the read left out or forced, once the graph is done, after the
 * streams with values out of range were said (c). */
static void say_rest(struct an_state *an, const struct counted *c)
{
	if (an->bad_values > c->n)
		dropped(an, 1, "stream_unreadable", "%llu event%s named a size, rank, peer or "
			"seq its communicator cannot have: ignored",
			(unsigned long long)(an->bad_values - c->n),
			an->bad_values - c->n == 1 ? "" : "s");
	for (int i = 0; i < an->ncomms; i++)
		if (an->comms[i]->forced)
			an_incomplete(an, "window_exceeded", "comm %016llx: %llu collectives "
				      "more than %d in flight were matched as they stood",
				      (unsigned long long)an->comms[i]->hash,
				      (unsigned long long)an->comms[i]->forced, AN_WINDOW_MAX);
	if (an->p2p_forgotten)
		an_incomplete(an, "window_exceeded", "%llu sends and recvs more than %d "
			      "pending on a rank were forgotten",
			      (unsigned long long)an->p2p_forgotten, AN_P2P_PENDING_MAX);
}

static void say_counted(struct reader *rd)
{
	struct counted c = { .an = rd->an };

	rd->an->bad_values += ev_bad_values(rd->dec);
	ev_bad_streams(rd->dec, say_stream, &c);
	say_rest(rd->an, &c);
}


/* ---- the parallel reader: workers, each a graph over its part ---------- */

/*
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

static int worker_merged(void *ctx, const bt_message *msg, int64_t key)
{
	struct worker *w = ctx;
	int ret;

	w->key = key;
	in_sink = 1;
	ret = worker_msg(w, msg);
	in_sink = 0;
	if (ret)
		w->failed = 1;
	return ret ? -1 : 0;
}

static void worker_bad(void *ctx, const char *name, uint64_t n, const char *first)
{
	struct worker *w = ctx;
	char buf[PATH_MAX + 256];
	struct rec r = { .type = REC_BAD, .n = n, .str2 = first };

	r.str = name ? real_name(w, name, buf, sizeof(buf)) : NULL;
	r.id = !name;
	wput(w, &r);
}

/* The worker's end on a failure: what the matcher's process prints. */
static int worker_fail(struct worker *w, int code, int status, const char *what)
{
	char causes[2048];
	struct rec r = { .type = REC_FAIL, .code = code, .status = status, .str = what,
			 .str2 = causes };

	causes[0] = '\0';
	if (code != REC_FAIL_CRASH)
		bt_error_text(causes, sizeof(causes));
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
		bt_value *params = source_params(w->parts[i].dir);
		char name[32];

		snprintf(name, sizeof(name), "src%d", i);
		if (!params || bt_graph_add_source_component(graph, cls, name, params,
							     BT_LOGGING_LEVEL_NONE, &srcs[i]) !=
		    BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
			bt_value_put_ref(params);
			snprintf(what, sizeof(what), "%s: not a readable CTF trace",
				 w->parts[i].orig);
			return worker_fail(w, REC_FAIL_SETUP, 0, what);
		}
		bt_value_put_ref(params);
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
	if (connect_merge(graph, srcs, w->nparts, worker_merged, w, &sink))
		return worker_fail(w, REC_FAIL_SETUP, 0, "cannot connect the streams to the sink");
	if (run_graph(graph, &rs))
		return worker_fail(w, REC_FAIL_CRASH, crash_sig, "");
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
		out[made].view = make_view(in->dir, &tc, use);
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
			remove_view(out[i].view);
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

static int is_crash(int sig)
{
	for (int i = 0; i < NCRASH; i++)
		if (crash_sigs[i] == sig)
			return 1;
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
				progress(rd, 0);
			if (an_job_skip(an, &r.ev.src, r.ev.kind == EV_PROC, r.ev.job_id))
				break;
			an_seen(an, &r.ev.src);
			if (r.ok) {
				apply(an, &r.ev);
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
			an_incomplete(an, "events_lost", "%s: packets missing (%llu)", r.str,
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
		case REC_BADSUM:
			an->bad_values += r.n;
			break;
		case REC_END:
			pl->done[w] = 1;
			break;
		case REC_FAIL:
			pl->done[w] = 1;
			progress(rd, 1);
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

		progress(rd, 1);
		while (waitpid(pl->pid[w], &status, 0) < 0 && errno == EINTR)
			;
		pl->pid[w] = -1;
		if (WIFSIGNALED(status) && is_crash(WTERMSIG(status)))
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
	goto out;
broken:
	progress(rd, 1);
	fprintf(stderr, "ncclguard analyze: a reader's records do not parse (out of "
		"memory?)\n");
out:
	rec_in_free(m);
	return ret;
}

/* Reads the inputs with `jobs` workers: 0, -1 (why said), or 1 where
 * they make one part only (the single graph reads them). */
static int read_parallel(struct reader *rd, const bt_component_class_source *cls,
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
			say_stream(&c, pl.bad[w][i].name, pl.bad[w][i].n, pl.bad[w][i].first);
	say_rest(rd->an, &c);
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
		remove_view(parts[i].view);
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

/* The traces checked by `groups` children at once, each opening a
 * contiguous group of them (a child per trace costs ~6 ms, and one for
 * all of them is the read's longest serial step): ok[i] where trace i's
 * group opened. */
static void check_groups(const bt_component_class_source *cls, char **traces, int n,
			 int groups, char *ok)
{
	pid_t *pid = calloc((size_t)groups, sizeof(*pid));

	if (!pid)
		return;
	fflush(NULL);
	for (int g = 0; g < groups; g++) {
		int lo = (int)((long long)n * g / groups), hi = (int)((long long)n * (g + 1) / groups);

		pid[g] = fork();
		if (!pid[g]) {
			char why[1200];

			_exit(try_open_many(cls, (const char *const *)traces + lo, hi - lo,
					    5 + (unsigned)(hi - lo) / 16, why, sizeof(why)) ? 1 : 0);
		}
	}
	for (int g = 0; g < groups; g++) {
		int lo = (int)((long long)n * g / groups), hi = (int)((long long)n * (g + 1) / groups);
		int status = -1;

		if (pid[g] < 0)
			continue;
		while (waitpid(pid[g], &status, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(status) && !WEXITSTATUS(status))
			memset(ok + lo, 1, (size_t)(hi - lo));
	}
	free(pid);
}

int an_read_traces(const char *const *dirs, int ndirs, struct an_state *an,
		   int show_progress, int jobs)
{
	/* Loaded once a process: finding them loads every plugin, which
	 * costs more than reading a small trace (the fuzzer reads many). */
	static const bt_plugin *ctf, *utils;
	const bt_component_class_source *fs_cls;
	const bt_component_class_filter *mux_cls;
	const bt_component_filter *muxer = NULL;
	const bt_component_sink *sink = NULL;
	struct reader rd = { .an = an, .progress = show_progress };
	struct input *in = NULL;
	const bt_component_source **srcs = NULL;
	const char *mux;
	bt_graph *graph = NULL;
	char **traces = NULL;
	int ntraces = 0, nin = 0, i, ret = -1, muxed;
	char *opened = NULL;
	int *in_host = NULL;
	bt_graph_run_status rs;

	for (i = 0; i < ndirs; i++) {
		struct stat st;
		int before = ntraces;

		if (stat(dirs[i], &st)) {
			fprintf(stderr, "ncclguard analyze: %s: %s\n", dirs[i], strerror(errno));
			goto out;
		}
		if (!S_ISDIR(st.st_mode)) {
			fprintf(stderr, "ncclguard analyze: %s: not a directory "
				"(give the trace directory `ncclguard run -o` wrote)\n", dirs[i]);
			goto out;
		}
		if (an_find_traces(dirs[i], &traces, &ntraces)) {
			fprintf(stderr, "ncclguard analyze: %s: cannot read: %s\n", dirs[i],
				strerror(errno));
			goto out;
		}
		if (ntraces == before) {
			fprintf(stderr, "ncclguard analyze: %s: no trace found (no CTF `metadata` "
				"file under it): was the job recorded with `ncclguard run -o %s`?\n",
				dirs[i], dirs[i]);
			goto out;
		}
	}
	if ((!ctf && bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, &ctf) !=
		     BT_PLUGIN_FIND_STATUS_OK) ||
	    (!utils && bt_plugin_find("utils", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE,
				      &utils) != BT_PLUGIN_FIND_STATUS_OK)) {
		print_bt_error("babeltrace2's ctf and utils plugins are missing "
			       "(install the babeltrace2 package)");
		goto out;
	}
	fs_cls = bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs");
	mux_cls = bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer");
	if (!fs_cls || !mux_cls) {
		fputs("ncclguard analyze: babeltrace2 has no src.ctf.fs or flt.utils.muxer\n",
		      stderr);
		goto out;
	}
	mux = getenv("NCCLGUARD_ANALYZE_MUXER");
	muxed = mux && !strcmp(mux, "1");
	in = calloc((size_t)ntraces + 1, sizeof(*in));
	in_host = calloc((size_t)ntraces + 1, sizeof(*in_host));
	rd.dec = ev_decoder_new(host_id, an);
	if (!in || !in_host || !rd.dec) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		goto out;
	}
	/* A child per trace costs ~6 ms (3 s of a 512-host job's 6.5): one
	 * child first opens them all (with -j, one per group of them at
	 * once); only where that fails does each trace get its own, to find
	 * the one at fault. */
	opened = calloc((size_t)ntraces + 1, 1);
	if (!opened) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		goto out;
	}
	if (ntraces > 1 && jobs > 1 && !muxed)
		check_groups(fs_cls, traces, ntraces, jobs < ntraces ? jobs : ntraces, opened);
	else if (ntraces > 1) {
		char why[1200];

		memset(opened, !try_open_many(fs_cls, (const char *const *)traces, ntraces,
					      5 + (unsigned)ntraces / 16, why, sizeof(why)),
		       (size_t)ntraces);
	}
	for (i = 0; i < ntraces; i++)
		if (!open_trace(an, fs_cls, traces[i], &in[nin], opened[i])) {
			char *h = an_metadata_hostname(traces[i]);

			/* hosts numbered in DIR order: the first is the
			 * clock reference */
			/* (-1: its streams' ends are not counted, and no
			 * early hang is said of its ranks) */
			in_host[nin] = h ? an_host_id(an, h) : -1;
			in[nin].host = in_host[nin];
			free(h);
			nin++;
		}
	/* Nothing readable is an error; part of it is a report that says
	 * what it could not see. */
	if (!nin) {
		fprintf(stderr, "ncclguard analyze: could not read any of the %d trace%s under",
			ntraces, ntraces == 1 ? "" : "s");
		for (i = 0; i < ndirs; i++)
			fprintf(stderr, " %s", dirs[i]);
		fputs("\n", stderr);
		goto out;
	}
	/* The muxer is the reference: always the single graph. */
	if (jobs > 1 && !muxed) {
		int r;

		clock_gettime(CLOCK_MONOTONIC, &rd.start);
		rd.last_progress = rd.start;
		r = read_parallel(&rd, fs_cls, in, nin, jobs, ntraces);
		if (r < 0)
			goto out;
		if (!r) {
			progress(&rd, 1);
			goto read;
		}
	}
	graph = bt_graph_create(0);
	srcs = calloc((size_t)nin, sizeof(*srcs));
	if (!graph || !srcs) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		goto out;
	}
	if (muxed &&
	    bt_graph_add_filter_component(graph, mux_cls, "muxer", NULL, BT_LOGGING_LEVEL_NONE,
					  &muxer) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		print_bt_error("cannot create the muxer");
		goto out;
	}
	for (i = 0; i < nin; i++) {
		if (add_source(graph, fs_cls, in[i].dir, i, muxer, &srcs[i]))
			goto out;
		an_streams_expect(an, in_host[i],
				  bt_component_source_get_output_port_count(srcs[i]));
	}
	if (!muxer) {
		if (connect_merge(graph, srcs, nin, merged, &rd, &sink))
			goto out;
	} else if (bt_graph_add_simple_sink_component(graph, "ncclguard", NULL, consume, NULL,
						      &rd, &sink) !=
		   BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		print_bt_error("cannot create the sink");
		goto out;
	} else if (bt_graph_connect_ports(graph,
				bt_component_filter_borrow_output_port_by_name_const(muxer, "out"),
				bt_component_sink_borrow_input_port_by_name_const(sink, "in"),
				NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
		print_bt_error("cannot connect the muxer to the sink");
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &rd.start);
	rd.last_progress = rd.start;
	if (run_graph(graph, &rs)) {
		progress(&rd, 1);
		fprintf(stderr, "ncclguard analyze: babeltrace2 crashed (signal %d) reading the "
			"trace%s after %llu events: corrupt trace\n", (int)crash_sig,
			nin == 1 ? "" : "s", (unsigned long long)rd.nevents);
		/* its state is what the crash left: not to be released */
		graph = NULL;
		goto out;
	}
	progress(&rd, 1);
	switch (rs) {
	case BT_GRAPH_RUN_STATUS_OK:
		break;
	case BT_GRAPH_RUN_STATUS_MEMORY_ERROR:
		print_bt_error(rd.failed ? "out of memory" : "out of memory reading the trace");
		goto out;
	default:
		if (ntraces == 1) {
			char what[4200];

			snprintf(what, sizeof(what), "%s: corrupt trace", traces[0]);
			print_bt_error(what);
		} else {
			print_bt_error("corrupt trace");
		}
		goto out;
	}
	say_counted(&rd);
read:
	if (!rd.nevents) {
		fprintf(stderr, "ncclguard analyze: no ncclguard events in %d trace%s under",
			ntraces, ntraces == 1 ? "" : "s");
		for (i = 0; i < ndirs; i++)
			fprintf(stderr, " %s", dirs[i]);
		fputs(" (was libncclguard.so preloaded, and did the job call NCCL?)\n", stderr);
		goto out;
	}
	ret = 0;
out:
	bt_graph_put_ref(graph);
	for (i = 0; i < nin; i++)
		remove_view(in[i].view);
	free(in);
	free(in_host);
	free(opened);
	free(srcs);
	for (i = 0; i < ntraces; i++)
		free(traces[i]);
	free(traces);
	ev_decoder_free(rd.dec);
	return ret;
}
