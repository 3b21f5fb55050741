/*
 * What the two readers share: read.c (the checks, the single graph) and
 * pread.c (the same read by worker processes, with -j), both on
 * readbase.c.  Only they use it.
 */
#ifndef NCCLGUARD_READ_PRIV_H
#define NCCLGUARD_READ_PRIV_H

#include <babeltrace2/babeltrace.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

#include "read.h"
#include "events.h"
#include "graph.h"
#include "merge.h"

struct reader {
	struct an_state *an;
	struct ev_decoder *dec;
	int progress;		/* a progress line on stderr */
	uint64_t nevents;
	struct timespec last_progress, start;
	int failed;
};

/* A trace as the graph reads it: its folder, or a view of it. */
struct input {
	const char *dir;	/* what src.ctf.fs reads */
	char *view;		/* a temporary folder to remove, or NULL */
	const char *orig;	/* the trace's folder, where dir is a part of it */
	uint64_t bytes;
	int host;		/* the matcher's id of its host, -1 if unnamed */
};

/* A stream with values out of range, said once the graph is done. */
struct counted {
	struct an_state *an;
	uint64_t n;
};

/* ---- readbase.c ------------------------------------------------------- */

/* babeltrace2's error causes, after what, on stderr. */
void rd_bt_error(const char *what);

/* The progress line, at most twice a second; done: cleared. */
void rd_progress(struct reader *rd, int done);
/* A decoded event to the matcher. */
void rd_apply(struct an_state *an, struct ev_event *ev);
/* An event counted and its process's span taken in (not the sampler's). */
void rd_seen(struct an_state *an, const struct ev_event *ev);

/* Set while our sink code runs (a fault there is ours, not
 * babeltrace2's); the signal of babeltrace2's crash. */
extern volatile sig_atomic_t rd_in_sink, rd_crash_sig;
/* The graph run to its end; -1 if babeltrace2 crashed (rd_crash_sig). */
int rd_run_graph(bt_graph *graph, bt_graph_run_status *rs);
/* 1 if sig is one libbabeltrace2 may die of on a corrupt trace. */
int rd_is_crash(int sig);
/* Those signals back to their default (a child that opens a trace). */
void rd_crash_default(void);

/* The sinks' functions (ctx: struct reader): a batch of messages in
 * time order (the muxer's sink), one message (merge.c's), a stream cut. */
int rd_consume(void *ctx, bt_message_array_const msgs, uint64_t count);
int rd_merged(void *ctx, const bt_message *msg, int64_t key, int back);
void rd_merged_cut(void *ctx, const char *stream, uint64_t events, const char *why);

/* Said in incomplete[] and, where something was left out, on stderr. */
void rd_dropped(struct an_state *an, int say, enum an_inc_kind what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The sources' ports into one merge.c sink; 0, or -1 with why said. */
int rd_connect_merge(bt_graph *graph, const bt_component_source **srcs, int nsrc,
		     an_merge_fn fn, an_merge_cut_fn cut, void *ctx,
		     const bt_component_sink **sink);

/* A view of the trace in dir with only the stream files `use` marks;
 * removed (and freed) by rd_remove_view(), which takes NULL. */
char *rd_make_view(const char *dir, const struct an_tcheck *tc, const char *use);
void rd_remove_view(char *view);

/* A stream's implausible values said (ctx: struct counted); then the
 * rest the read left out or forced. */
void rd_say_stream(void *ctx, const char *name, uint64_t n, const char *what);
/* A stream babeltrace2 could not read on after `events` events. */
void rd_say_cut(struct an_state *an, const char *stream, uint64_t events, const char *why);
void rd_say_rest(struct an_state *an, const struct counted *c);

/* ---- pread.c ---------------------------------------------------------- */

/* Reads the inputs with `jobs` workers: 0, -1 (why said), or 1 where
 * they make one part only (the single graph reads them). */
int rd_read_parallel(struct reader *rd, const bt_component_class_source *cls,
		     struct input *in, int nin, int jobs, int ntraces);

#endif
