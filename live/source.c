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

#include "lv_priv.h"

struct lv_session {
	struct lv_state *st;
	int sess;
	char *url;
	bt_graph *graph;
	struct ev_decoder *dec;
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
		return 0;
	case BT_MESSAGE_TYPE_MESSAGE_ITERATOR_INACTIVITY: {
		int64_t ts = snapshot_ns(
			bt_message_message_iterator_inactivity_borrow_clock_snapshot_const(msg));

		if (ts > 0)
			lv_clock_at(s->st, s->sess, ts, mono, 0);
		return 0;
	}
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		return ev_stream(s->dec, bt_message_stream_beginning_borrow_stream_const(msg));
	default:
		return 0;
	}
}

static bt_graph_simple_sink_component_consume_func_status
consume(bt_message_iterator *it, void *data)
{
	struct lv_session *s = data;
	bt_message_array_const msgs;
	bt_graph_simple_sink_component_consume_func_status ret =
		BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
	uint64_t count = 0, i;
	int64_t mono;

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
	mono = lv_mono_ns();
	/* the reports read the tracker from the other thread */
	pthread_mutex_lock(&s->st->lock);
	for (i = 0; i < count; i++) {
		if (ret == BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK &&
		    handle(s, msgs[i], mono))
			ret = BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
		bt_message_put_ref(msgs[i]);
	}
	pthread_mutex_unlock(&s->st->lock);
	return ret;
}

static bt_value *source_params(const char *url)
{
	bt_value *params = bt_value_map_create(), *inputs = NULL;

	if (!params)
		return NULL;
	if (bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) !=
	    BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK ||
	    bt_value_array_append_string_element(inputs, url) !=
	    BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK ||
	    /* A destroyed session ends its graph, rather than waiting for
	     * another of its name (the component's default). */
	    bt_value_map_insert_string_entry(params, "session-not-found-action", "end") !=
	    BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK) {
		bt_value_put_ref(params);
		return NULL;
	}
	return params;
}

struct lv_session *lv_session_open(struct lv_state *st, int sess, const char *url)
{
	const bt_component_class_source *cls;
	const bt_component_source *src = NULL;
	const bt_component_sink *sink = NULL;
	struct lv_session *s = lv_xcalloc(1, sizeof(*s));
	bt_value *params = NULL;
	char why[512];

	s->st = st;
	s->sess = sess;
	s->url = lv_xstrdup(url);
	cls = lv_live_class(why, sizeof(why));
	if (!cls)
		goto fail;
	s->dec = ev_decoder_new(host_id, st);
	s->graph = bt_graph_create(0);
	params = source_params(url);
	if (!s->dec || !s->graph || !params) {
		snprintf(why, sizeof(why), "out of memory");
		goto fail;
	}
	if (bt_graph_add_source_component(s->graph, cls, "live", params, BT_LOGGING_LEVEL_NONE,
					  &src) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_simple_sink_component(s->graph, "ncclguard-watch", NULL, consume, NULL,
					       s, &sink) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_connect_ports(s->graph,
				   bt_component_source_borrow_output_port_by_name_const(src, "out"),
				   bt_component_sink_borrow_input_port_by_name_const(sink, "in"),
				   NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
		lv_bt_error(why, sizeof(why));
		goto fail;
	}
	bt_value_put_ref(params);
	return s;
fail:
	fprintf(stderr, "ncclguard watch: %s: %s\n", url, *why ? why : "cannot read it");
	bt_value_put_ref(params);
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
			lv_bt_error(why, len);
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
