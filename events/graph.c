/*
 * The babeltrace2 graph's pieces both readers use (graph.h): the plugins,
 * a ctf source with its parameters, a simple sink that hands over
 * batches, and the error texts.  How the pieces are joined and run stays
 * the reader's: the analyzer runs one graph to its end under a crash
 * guard, `ncclguard watch` steps one graph per session.
 */
#include <babeltrace2/babeltrace.h>
#include <stdio.h>
#include <string.h>

#include "graph.h"

const bt_plugin *ev_bt_plugin(const char *name)
{
	static const bt_plugin *ctf, *utils;
	const bt_plugin **p = !strcmp(name, "ctf") ? &ctf : !strcmp(name, "utils") ? &utils :
			      NULL;

	if (!p)
		return NULL;
	if (!*p && bt_plugin_find(name, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, p) !=
	    BT_PLUGIN_FIND_STATUS_OK)
		*p = NULL;
	return *p;
}

static bt_value *source_params(enum ev_source kind, const char *input)
{
	bt_value *params = bt_value_map_create(), *inputs = NULL;
	int bad;

	if (!params)
		return NULL;
	bad = bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) !=
	      BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK ||
	      bt_value_array_append_string_element(inputs, input) !=
	      BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK;
	if (!bad && kind == EV_SOURCE_FS)
		/* Hosts' clocks have different UUIDs; the muxer refuses to
		 * order them unless their origin is the epoch (LTTng's
		 * offset is). */
		bad = bt_value_map_insert_bool_entry(params, "force-clock-class-origin-unix-epoch",
						     BT_TRUE) != BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK;
	else if (!bad)
		/* A destroyed session ends its graph, rather than waiting
		 * for another of its name (the component's default). */
		bad = bt_value_map_insert_string_entry(params, "session-not-found-action",
						       "end") != BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK;
	if (bad) {
		bt_value_put_ref(params);
		return NULL;
	}
	return params;
}

int ev_add_source(bt_graph *graph, const bt_component_class_source *cls,
		  enum ev_source kind, const char *name, const char *input,
		  const bt_component_source **src)
{
	bt_value *params = source_params(kind, input);
	int ret;

	if (!params)
		return -ENOMEM;
	ret = bt_graph_add_source_component(graph, cls, name, params, BT_LOGGING_LEVEL_NONE,
					    src) == BT_GRAPH_ADD_COMPONENT_STATUS_OK ? 0 : -1;
	bt_value_put_ref(params);
	return ret;
}

static bt_graph_simple_sink_component_consume_func_status
consume(bt_message_iterator *it, void *data)
{
	struct ev_sink *sink = data;
	bt_message_array_const msgs;
	uint64_t count = 0, i;
	int r;

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
	r = sink->fn(sink->ctx, msgs, count);
	for (i = 0; i < count; i++)
		bt_message_put_ref(msgs[i]);
	return r ? BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR :
		   BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

int ev_add_sink(bt_graph *graph, const char *name, struct ev_sink *sink,
		const bt_component_sink **out)
{
	return bt_graph_add_simple_sink_component(graph, name, NULL, consume, NULL, sink, out) ==
	       BT_GRAPH_ADD_COMPONENT_STATUS_OK ? 0 : -1;
}

int ev_connect(bt_graph *graph, const bt_port_output *out, const bt_port_input *in)
{
	return bt_graph_connect_ports(graph, out, in, NULL) ==
	       BT_GRAPH_CONNECT_PORTS_STATUS_OK ? 0 : -1;
}

void ev_bt_causes(char *buf, size_t len)
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

void ev_bt_root(char *buf, size_t len, int any)
{
	const bt_error *err = bt_current_thread_take_error();
	const char *msg = NULL;

	if (len)
		buf[0] = '\0';
	if (!err)
		return;
	/* The outer causes name the input (for the analyzer, a view's
	 * folder); the root names what went wrong (a refused connection). */
	for (uint64_t i = 0; i < bt_error_get_cause_count(err) && !msg; i++) {
		const bt_error_cause *c = bt_error_borrow_cause_by_index(err, i);

		if (bt_error_cause_get_actor_type(c) != BT_ERROR_CAUSE_ACTOR_TYPE_UNKNOWN)
			msg = bt_error_cause_get_message(c);
	}
	if (!msg && any && bt_error_get_cause_count(err))
		msg = bt_error_cause_get_message(bt_error_borrow_cause_by_index(err, 0));
	if (msg)
		snprintf(buf, len, "%.*s", (int)strcspn(msg, "\n"), msg);
	bt_error_release(err);
}
