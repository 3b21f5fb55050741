/*
 * One live session: a graph of its own, src.ctf.lttng-live -> our simple
 * sink, run a little at a time (bt_graph_run_once) by watch.c in turn with
 * the others.  A graph per session rather than one muxer over all: the
 * muxer would hold every host's events until the slowest session's
 * arrive, and a graph cannot take a component once it has run, while
 * hosts' sessions appear as the job starts on them.
 *
 * The relayd's beacons reach us as inactivity messages: they carry the
 * session's clock while its streams are quiet, which is what tells a rank
 * that waits from a host that stopped sending.
 */
#include <babeltrace2/babeltrace.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "lv_priv.h"

struct lv_session {
	struct lv_state *st;
	int sess;
	char *url;
	bt_graph *graph;
	struct ev_decoder *dec;
	struct ev_sink sink;
	int ended;
};

static int host_id(void *ctx, const char *name)
{
	return lv_host_id(ctx, name);
}

static int64_t snapshot_ns(const bt_clock_snapshot *cs)
{
	int64_t ns;

	if (!cs || bt_clock_snapshot_get_ns_from_origin(cs, &ns) !=
	    BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK)
		return 0;
	return ns;
}

/* Events the tracer lost (its buffers full), for /metrics: counted
 * against the stream's host (its trace's env.hostname). */
static void discarded(struct lv_session *s, const bt_message *msg)
{
	const bt_stream *stream = bt_message_discarded_events_borrow_stream_const(msg);
	const bt_value *v = bt_trace_borrow_environment_entry_value_by_name_const(
		bt_stream_borrow_trace_const(stream), "hostname");
	uint64_t n = 1;		/* a loss of unknown size: one at least */

	if (!s->st->mx.on)
		return;
	if (bt_message_discarded_events_get_count(msg, &n) != BT_PROPERTY_AVAILABILITY_AVAILABLE)
		n = 1;
	lv_mx_lost(s->st, lv_host_id(s->st, v && bt_value_is_string(v) ?
				     bt_value_string_get(v) : "unknown"), 1, n);
}

static int handle(struct lv_session *s, const bt_message *msg, int64_t mono)
{
	struct ev_event ev;
	int r;

	switch (bt_message_get_type(msg)) {
	case BT_MESSAGE_TYPE_EVENT:
		r = ev_head(s->dec, msg, &ev);
		if (r <= 0)
			return r;
		if (ev.src.ts)
			lv_clock_at(s->st, s->sess, ev.src.ts, mono, 1);
		/* a value out of range: the event is dropped (the analyzer
		 * says which afterwards) */
		if (ev_body(s->dec, &ev))
			lv_event(s->st, s->sess, &ev);
		else
			lv_mx_lost(s->st, ev.src.host, 0, 1);
		return 0;
	case BT_MESSAGE_TYPE_MESSAGE_ITERATOR_INACTIVITY: {
		int64_t ts = snapshot_ns(
			bt_message_message_iterator_inactivity_borrow_clock_snapshot_const(msg));

		if (ts > 0)
			lv_clock_at(s->st, s->sess, ts, mono, 0);
		return 0;
	}
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		discarded(s, msg);
		return 0;
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		return ev_stream(s->dec, bt_message_stream_beginning_borrow_stream_const(msg));
	default:
		return 0;
	}
}

/* The sink's batch, handled under the lock: the reports read the
 * tracker from the other thread. */
static int consume(void *ctx, bt_message_array_const msgs, uint64_t count)
{
	struct lv_session *s = ctx;
	int64_t mono = lv_mono_ns();
	int ret = 0;

	pthread_mutex_lock(&s->st->lock);
	for (uint64_t i = 0; i < count && !ret; i++)
		ret = handle(s, msgs[i], mono) ? -1 : 0;
	pthread_mutex_unlock(&s->st->lock);
	return ret;
}

struct lv_session *lv_session_open(struct lv_state *st, int sess, const char *url)
{
	const bt_component_class_source *cls;
	const bt_component_source *src = NULL;
	const bt_component_sink *sink = NULL;
	struct lv_session *s = lv_xcalloc(1, sizeof(*s));
	char why[512];
	int r;

	s->st = st;
	s->sess = sess;
	s->url = lv_xstrdup(url);
	cls = lv_live_class(why, sizeof(why));
	if (!cls)
		goto fail;
	s->dec = ev_decoder_new(host_id, st);
	s->graph = bt_graph_create(0);
	s->sink = (struct ev_sink){ .fn = consume, .ctx = s };
	r = s->dec && s->graph ?
	    ev_add_source(s->graph, cls, EV_SOURCE_LIVE, "live", url, &src) : -ENOMEM;
	if (r == -ENOMEM) {
		snprintf(why, sizeof(why), "out of memory");
		goto fail;
	}
	if (r || ev_add_sink(s->graph, "ncclguard-watch", &s->sink, &sink) ||
	    ev_connect(s->graph, bt_component_source_borrow_output_port_by_name_const(src, "out"),
		       bt_component_sink_borrow_input_port_by_name_const(sink, "in"))) {
		ev_bt_root(why, sizeof(why), 1);
		goto fail;
	}
	return s;
fail:
	fprintf(stderr, "ncclguard watch: %s: %s\n", url, *why ? why : "cannot read it");
	lv_session_close(s);
	return NULL;
}

int lv_session_step(struct lv_session *s, int budget, char *why, size_t len)
{
	int got = 0;

	if (len)
		why[0] = '\0';
	if (s->ended)
		return LV_STEP_ENDED;
	while (budget-- > 0) {
		switch (bt_graph_run_once(s->graph)) {
		case BT_GRAPH_RUN_ONCE_STATUS_OK:
			got = 1;
			continue;
		case BT_GRAPH_RUN_ONCE_STATUS_AGAIN:
			return got;
		case BT_GRAPH_RUN_ONCE_STATUS_END:
			s->ended = 1;
			return LV_STEP_ENDED;
		case BT_GRAPH_RUN_ONCE_STATUS_MEMORY_ERROR:
		case BT_GRAPH_RUN_ONCE_STATUS_ERROR:
		default:
			ev_bt_root(why, len, 1);
			if (len && !*why)
				snprintf(why, len, "reading it failed");
			s->ended = 1;
			/* LTTNG_VIEWER_ATTACH_ALREADY, as src.ctf.lttng-live says it */
			return strstr(why, "already a viewer attached") ? LV_STEP_HELD :
			       LV_STEP_FAILED;
		}
	}
	return got;
}

void lv_session_close(struct lv_session *s)
{
	if (!s)
		return;
	bt_graph_put_ref(s->graph);
	ev_decoder_free(s->dec);
	free(s->url);
	free(s);
}
