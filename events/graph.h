/*
 * babeltrace2's graph as our readers set it up: the analyzer (analyze/,
 * traces on disk through src.ctf.fs) and `ncclguard watch` (live/, an
 * lttng-relayd's sessions through src.ctf.lttng-live).  The pieces, in
 * the order a reader takes them:
 *
 *   p = ev_bt_plugin("ctf");  cls = its source class "fs" or "lttng-live"
 *   g = bt_graph_create(0);
 *   ev_add_source(g, cls, kind, name, input, &src)  (one per input)
 *   ev_add_sink(g, name, &sink, &snk)  (or the analyzer's merge.c sink)
 *   ev_connect(g, out, in)  per port;  run it (bt_graph_run/_run_once)
 *
 * Each says only 0 or -1 and leaves babeltrace2's error on the thread,
 * for the caller to say in its own words (ev_bt_causes, ev_bt_root).
 */
#ifndef NCCLGUARD_EVENTS_GRAPH_H
#define NCCLGUARD_EVENTS_GRAPH_H

#include <babeltrace2/babeltrace.h>
#include <errno.h>
#include <stddef.h>

/* A ctf source and the parameters it takes. */
enum ev_source {
	EV_SOURCE_FS,		/* a trace folder, its clocks from the epoch */
	EV_SOURCE_LIVE,		/* a live session's URL, ended with it */
};

/* A plugin ("ctf", "utils"), found once a process: finding one loads
 * every plugin, which costs more than reading a small trace.  NULL: not
 * there (babeltrace2's error on the thread). */
const bt_plugin *ev_bt_plugin(const char *name);

/* A source of class cls reading input (a folder for EV_SOURCE_FS, a URL
 * for EV_SOURCE_LIVE): 0, -ENOMEM (its parameters), or -1 (refused). */
int ev_add_source(bt_graph *graph, const bt_component_class_source *cls,
		  enum ev_source kind, const char *name, const char *input,
		  const bt_component_source **src);

/* A simple sink: fn has each batch of messages, which the sink releases
 * after it; fn's -1 stops the graph (as out of memory). */
struct ev_sink {
	int (*fn)(void *ctx, bt_message_array_const msgs, uint64_t n);
	void *ctx;
};

/* The sink, with its one input port "in"; it must outlive the graph. */
int ev_add_sink(bt_graph *graph, const char *name, struct ev_sink *sink,
		const bt_component_sink **out);
int ev_connect(bt_graph *graph, const bt_port_output *out, const bt_port_input *in);

/* babeltrace2's causes of the current error, outermost first, one per
 * line ("  cause\n"), into buf; the error is taken. */
void ev_bt_causes(char *buf, size_t len);
/* Its root cause's first line (what names the fault), into buf; where
 * no component gave one, "" or, with any, the library's first. */
void ev_bt_root(char *buf, size_t len, int any);

#endif
