/*
 * merge.c: a sink that orders the messages of many upstream ports by
 * time with a heap, in place of babeltrace2's flt.utils.muxer (which
 * scans every stream for each message).  Only the readers (read.c,
 * pread.c) use it.
 */
#ifndef NCCLGUARD_MERGE_H
#define NCCLGUARD_MERGE_H

#include <babeltrace2/babeltrace.h>

/* Each message in time order with its key (its time, or its stream's
 * last); back: an event earlier than one already handed out (its stream
 * went back in time: implausible).  Non-zero stops the graph with an
 * error. */
typedef int (*an_merge_fn)(void *ctx, const bt_message *msg, int64_t key, int back);
/* A stream that babeltrace2 could not read on (stream: its name, NULL
 * if unknown) after `events` events, and why: the rest of it is lost. */
typedef void (*an_merge_cut_fn)(void *ctx, const char *stream, uint64_t events,
				const char *why);

/* A merging sink with nports input ports ("in0"...) added to graph;
 * 0, or -1 with babeltrace2's error set. */
int an_merge_add(bt_graph *graph, uint64_t nports, an_merge_fn fn, an_merge_cut_fn cut,
		 void *ctx, const bt_component_sink **sink);

#endif
