/*
 * Reading: one src.ctf.fs component per CTF trace found under the DIRs,
 * their streams ordered by time by merge.c's sink (a heap; babeltrace2's
 * flt.utils.muxer and a simple sink with NCCLGUARD_ANALYZE_MUXER=1).  The
 * sink has each ncclguard event decoded into a record (events/, shared
 * with `ncclguard watch`) and hands it to the matcher; nothing of the
 * trace is kept here.  With -j, the checked traces are read by worker
 * processes instead (pread.c); both stand on readbase.c (read_priv.h).
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

#include "read.h"
#include "esc.h"
#include "events.h"
#include "graph.h"
#include "merge.h"
#include "read_priv.h"

/* The decoder's hosts are the matcher's. */
static int host_id(void *ctx, const char *name)
{
	return an_host_id(ctx, name);
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
		rd_bt_error(what);
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
			rd_bt_error(what);
			return -1;
		}
	}
	return 0;
}

/* ---- the guard: checked files, a view, a child with a deadline -------- */

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
		rd_crash_default();
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
		rd_dropped(an, 1, AN_INC_stream_unreadable, "%s: cannot list it: %s; skipped", dir,
			strerror(errno));
		return -1;
	}
	if (!tc.meta_ok) {
		rd_dropped(an, 1, AN_INC_metadata_unreadable, "%s/metadata: %s: not a readable CTF "
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
			rd_dropped(an, 0, AN_INC_stream_truncated, "%s/%s: empty (0 bytes)", dir, f->name);
		else if (f->state == AN_SF_CUT)
			rd_dropped(an, 1, AN_INC_stream_truncated, "%s/%s: cut inside a packet: the "
				"%lld bytes of whole packets read, the last %lld skipped", dir,
				f->name, (long long)f->keep, (long long)(f->size - f->keep));
		else if (f->state == AN_SF_BAD)
			rd_dropped(an, 1, AN_INC_stream_unreadable, "%s/%s: no whole packet in its %lld "
				"bytes; skipped", dir, f->name, (long long)f->size);
	}
	if (tc.nmissing)
		rd_dropped(an, 0, AN_INC_stream_missing, "%s: %d per-CPU stream file%s missing: %s%s",
			dir, tc.nmissing, tc.nmissing == 1 ? "" : "s", tc.missing,
			tc.nmissing > 1 && strlen(tc.missing) > sizeof(tc.missing) - 48 ?
			", ..." : "");
	if (changed && !(in->view = rd_make_view(dir, &tc, use))) {
		rd_dropped(an, 1, AN_INC_stream_unreadable, "%s: cannot leave out its bad files (%s); "
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
		rd_dropped(an, 1, AN_INC_metadata_unreadable, "%s/metadata: %s; skipped", dir, why);
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
		rd_dropped(an, 1, AN_INC_stream_unreadable, "%s/%s: %s; skipped", dir, tc.f[i].name,
			view ? why : "cannot check it");
	}
	rd_remove_view(in->view);
	in->dir = dir;
	in->view = rd_make_view(dir, &tc, use);
	if (!in->view || try_open(cls, in->view, secs, why, sizeof(why))) {
		rd_dropped(an, 1, AN_INC_stream_unreadable, "%s: %s; skipped", dir,
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
	struct ev_sink muxed_sink = { .fn = rd_consume, .ctx = &rd };
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
		rd_bt_error("babeltrace2's ctf and utils plugins are missing "
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
		rd_bt_error("cannot create the muxer");
		goto out;
	}
	for (i = 0; i < nin; i++) {
		if (add_source(graph, fs_cls, in[i].dir, i, muxer, &srcs[i]))
			goto out;
		an_streams_expect(an, in_host[i],
				  bt_component_source_get_output_port_count(srcs[i]));
	}
	if (!muxer) {
		if (rd_connect_merge(graph, srcs, nin, rd_merged, rd_merged_cut, &rd, &sink))
			goto out;
	} else if (ev_add_sink(graph, "ncclguard", &muxed_sink, &sink)) {
		rd_bt_error("cannot create the sink");
		goto out;
	} else if (ev_connect(graph,
			      bt_component_filter_borrow_output_port_by_name_const(muxer, "out"),
			      bt_component_sink_borrow_input_port_by_name_const(sink, "in"))) {
		rd_bt_error("cannot connect the muxer to the sink");
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
		rd_bt_error(rd.failed ? "out of memory" : "out of memory reading the trace");
		goto out;
	default:
		if (ntraces == 1) {
			char what[4200];

			snprintf(what, sizeof(what), "%s: corrupt trace", traces[0]);
			rd_bt_error(what);
		} else {
			rd_bt_error("corrupt trace");
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
