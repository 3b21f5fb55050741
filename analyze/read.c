/*
 * Reading: one src.ctf.fs component per CTF trace found under the DIRs,
 * their streams ordered by time by merge.c's sink (a heap; babeltrace2's
 * flt.utils.muxer and a simple sink with NCCLGUARD_ANALYZE_MUXER=1).  The
 * sink has each ncclguard event decoded into a record (events/, shared
 * with `ncclguard watch`) and hands it to the matcher; nothing of the
 * trace is kept here.  With -j, the checked traces are read by worker
 * processes instead (pread.c), on the helpers read_priv.h declares.
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
#include "esc.h"
#include "events.h"
#include "graph.h"
#include "merge.h"
#include "read_priv.h"

/* What libbabeltrace2 may die of on a corrupt trace. */
static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };
#define NCRASH ((int)(sizeof(crash_sigs) / sizeof(crash_sigs[0])))

/* ---- errors ----------------------------------------------------------- */

static void print_bt_error(const char *what)
{
	char buf[2048];

	ev_bt_causes(buf, sizeof(buf));
	fprintf(stderr, "ncclguard analyze: %s\n%s", what, buf);
}

/* ---- per event -------------------------------------------------------- */

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


static int host_id(void *ctx, const char *name)
{
	return an_host_id(ctx, name);
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
		rd_progress(rd, 0);
	/* Another job's events never reach the matcher (job.c). */
	if (an_job_skip(rd->an, &ev.src, ev.kind == EV_PROC, ev.job_id))
		return 0;
	an_seen(rd->an, &ev.src);
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
static int consume(void *ctx, bt_message_array_const msgs, uint64_t count)
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
static int merged(void *ctx, const bt_message *msg, int64_t key, int back)
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

static void merged_cut(void *ctx, const char *stream, uint64_t events, const char *why)
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
		print_bt_error("cannot create the sink");
		return -1;
	}
	for (int i = 0; i < nsrc; i++) {
		uint64_t n = bt_component_source_get_output_port_count(srcs[i]);

		for (uint64_t p = 0; p < n; p++, k++)
			if (ev_connect(graph,
				       bt_component_source_borrow_output_port_by_index_const(srcs[i], p),
				       bt_component_sink_borrow_input_port_by_index_const(*sink, k))) {
				print_bt_error("cannot connect the streams to the sink");
				return -1;
			}
	}
	return 0;
}

/* ---- graph ------------------------------------------------------------ */

/* The trace's source, its streams connected to the muxer where one is
 * given (else merge.c's sink connects them). */
static int add_source(bt_graph *graph, const bt_component_class_source *cls,
		      const char *dir, int i, const bt_component_filter *muxer,
		      const bt_component_source **out_src)
{
	const bt_component_source *src = NULL;
	char name[32], what[4200];
	uint64_t p, nports;
	int r;

	snprintf(name, sizeof(name), "src%d", i);
	r = ev_add_source(graph, cls, EV_SOURCE_FS, name, dir, &src);
	if (r == -ENOMEM) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		return -1;
	}
	if (r) {
		snprintf(what, sizeof(what), "%s: not a readable CTF trace", dir);
		print_bt_error(what);
		return -1;
	}
	*out_src = src;
	nports = muxer ? bt_component_source_get_output_port_count(src) : 0;
	for (p = 0; p < nports; p++) {
		const bt_port_output *out =
			bt_component_source_borrow_output_port_by_index_const(src, p);
		/* The muxer always offers one free input port, its last. */
		const bt_port_input *in = bt_component_filter_borrow_input_port_by_index_const(
			muxer, bt_component_filter_get_input_port_count(muxer) - 1);

		if (ev_connect(graph, out, in)) {
			snprintf(what, sizeof(what), "%s: cannot connect its streams", dir);
			print_bt_error(what);
			return -1;
		}
	}
	return 0;
}

/* ---- the guard: checked files, a view, a child with a deadline -------- */

/* Said in incomplete[] and, where something was left out, on stderr. */
static void dropped(struct an_state *an, int say, enum an_inc_kind what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void dropped(struct an_state *an, int say, enum an_inc_kind what, const char *fmt, ...)
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
		const bt_component_source *src = NULL;
		int r = -ENOMEM;

		snprintf(name, sizeof(name), "src%d", i);
		if (graph)
			r = ev_add_source(graph, cls, EV_SOURCE_FS, name, dirs[i], &src);
		if (r == -ENOMEM) {
			snprintf(buf, sizeof(buf), "out of memory\n");
			ret = 1;
		} else if (r) {
			ev_bt_root(buf, sizeof(buf), 0);
			ret = 1;
		}
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
		dropped(an, 1, AN_INC_stream_unreadable, "%s: cannot list it: %s; skipped", dir,
			strerror(errno));
		return -1;
	}
	if (!tc.meta_ok) {
		dropped(an, 1, AN_INC_metadata_unreadable, "%s/metadata: %s: not a readable CTF "
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
			dropped(an, 0, AN_INC_stream_truncated, "%s/%s: empty (0 bytes)", dir, f->name);
		else if (f->state == AN_SF_CUT)
			dropped(an, 1, AN_INC_stream_truncated, "%s/%s: cut inside a packet: the "
				"%lld bytes of whole packets read, the last %lld skipped", dir,
				f->name, (long long)f->keep, (long long)(f->size - f->keep));
		else if (f->state == AN_SF_BAD)
			dropped(an, 1, AN_INC_stream_unreadable, "%s/%s: no whole packet in its %lld "
				"bytes; skipped", dir, f->name, (long long)f->size);
	}
	if (tc.nmissing)
		dropped(an, 0, AN_INC_stream_missing, "%s: %d per-CPU stream file%s missing: %s%s",
			dir, tc.nmissing, tc.nmissing == 1 ? "" : "s", tc.missing,
			tc.nmissing > 1 && strlen(tc.missing) > sizeof(tc.missing) - 48 ?
			", ..." : "");
	if (changed && !(in->view = rd_make_view(dir, &tc, use))) {
		dropped(an, 1, AN_INC_stream_unreadable, "%s: cannot leave out its bad files (%s); "
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
	view = rd_make_view(dir, &tc, one);
	if (!view || try_open(cls, view, secs, why, sizeof(why))) {
		if (!view)
			snprintf(why, sizeof(why), "cannot check it: %s", strerror(errno));
		rd_remove_view(view);
		dropped(an, 1, AN_INC_metadata_unreadable, "%s/metadata: %s; skipped", dir, why);
		goto out;
	}
	rd_remove_view(view);
	for (i = 0; i < tc.nf; i++) {
		if (!use[i])
			continue;
		one[i] = 1;
		view = rd_make_view(dir, &tc, one);
		one[i] = 0;
		if (view && !try_open(cls, view, secs, why, sizeof(why))) {
			rd_remove_view(view);
			continue;
		}
		rd_remove_view(view);
		use[i] = 0;
		dropped(an, 1, AN_INC_stream_unreadable, "%s/%s: %s; skipped", dir, tc.f[i].name,
			view ? why : "cannot check it");
	}
	rd_remove_view(in->view);
	in->dir = dir;
	in->view = rd_make_view(dir, &tc, use);
	if (!in->view || try_open(cls, in->view, secs, why, sizeof(why))) {
		dropped(an, 1, AN_INC_stream_unreadable, "%s: %s; skipped", dir,
			in->view ? why : "cannot leave out its bad files");
		goto out;
	}
	in->dir = in->view;
	ret = 0;
out:
	if (ret) {
		rd_remove_view(in->view);
		in->view = NULL;
	}
	free(use);
	free(one);
	an_tcheck_free(&tc);
	return ret;
}

void rd_say_stream(void *ctx, const char *name, uint64_t n, const char *what)
{
	struct counted *c = ctx;

	c->n += n;
	dropped(c->an, 1, AN_INC_events_implausible, "%s: %llu implausible (%s): the events "
		"dropped or the values cleared", name ? name : "a stream",
		(unsigned long long)n, what);
}

void rd_say_cut(struct an_state *an, const char *stream, uint64_t events, const char *why)
{
	dropped(an, 1, AN_INC_stream_unreadable, "%s: not readable after its first %llu events "
		"(babeltrace2: %s): the rest of it left out", stream ? stream : "a stream",
		(unsigned long long)events, why);
}

/* What the read left out or forced, once the graph is done, after the
 * streams with implausible values were said (c). */
void rd_say_rest(struct an_state *an, const struct counted *c)
{
	if (an->bad_values > c->n)
		dropped(an, 1, AN_INC_events_implausible, "%llu event%s named a size, rank, peer or "
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

static void say_counted(struct reader *rd)
{
	struct counted c = { .an = rd->an };

	rd->an->bad_values += ev_bad_values(rd->dec);
	ev_bad_streams(rd->dec, rd_say_stream, &c);
	rd_say_rest(rd->an, &c);
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
	const bt_plugin *ctf, *utils;
	const bt_component_class_source *fs_cls;
	const bt_component_class_filter *mux_cls;
	const bt_component_filter *muxer = NULL;
	const bt_component_sink *sink = NULL;
	struct reader rd = { .an = an, .progress = show_progress };
	struct ev_sink muxed_sink = { .fn = consume, .ctx = &rd };
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
	if (!(ctf = ev_bt_plugin("ctf")) || !(utils = ev_bt_plugin("utils"))) {
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
		r = rd_read_parallel(&rd, fs_cls, in, nin, jobs, ntraces);
		if (r < 0)
			goto out;
		if (!r) {
			rd_progress(&rd, 1);
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
		if (rd_connect_merge(graph, srcs, nin, merged, merged_cut, &rd, &sink))
			goto out;
	} else if (ev_add_sink(graph, "ncclguard", &muxed_sink, &sink)) {
		print_bt_error("cannot create the sink");
		goto out;
	} else if (ev_connect(graph,
			      bt_component_filter_borrow_output_port_by_name_const(muxer, "out"),
			      bt_component_sink_borrow_input_port_by_name_const(sink, "in"))) {
		print_bt_error("cannot connect the muxer to the sink");
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &rd.start);
	rd.last_progress = rd.start;
	if (rd_run_graph(graph, &rs)) {
		rd_progress(&rd, 1);
		fprintf(stderr, "ncclguard analyze: babeltrace2 crashed (signal %d) reading the "
			"trace%s after %llu events: corrupt trace\n", (int)rd_crash_sig,
			nin == 1 ? "" : "s", (unsigned long long)rd.nevents);
		/* its state is what the crash left: not to be released */
		graph = NULL;
		goto out;
	}
	rd_progress(&rd, 1);
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
	if (!rd.nevents && rd.an->disk_full) {
		/* run.json says why: the report says so, empty as it is */
		rd.an->no_events = 1;
		ret = 0;
		goto out;
	}
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
		rd_remove_view(in[i].view);
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
