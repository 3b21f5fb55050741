/*
 * The time-ordering sink (merge.h).  babeltrace2's muxer compares the
 * next message of every upstream stream for each message it emits: its
 * cost per event grows with the stream files (4.2 us at 128, 23 us at
 * 1,024, most of it that scan).  Here each input port keeps the batch
 * its iterator gave and a heap orders the ports by the time of their
 * next message: log2(ports) compares per message.
 *
 * The key of a message is its default clock snapshot where it has one
 * (events); other messages (stream and packet bounds, discarded counts)
 * take their port's last key, so they come out in place among that
 * stream's events, as the muxer emits them.  Equal keys come out in port
 * order; a stream whose time goes back is an error, as in the muxer.
 * A consume call hands out at most BURST messages so that the
 * graph's loop (and its interruption) keeps running.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyheap.h"
#include "merge.h"

#define BURST	4096

struct mport {
	bt_message_iterator *it;
	bt_message_array_const msgs;
	uint64_t count, pos;
	int64_t key;		/* of msgs[pos] */
	int done;
	uint64_t events;	/* handed out */
	char *stream;		/* its stream's name, once begun */
};

struct merge {
	an_merge_fn fn;
	an_merge_cut_fn cut;
	void *ctx;
	uint64_t nports;
	struct mport *ports;
	struct an_keyheap heap;	/* port indexes, least key first */
	int64_t last;		/* the latest key handed out */
	int started;
};

struct merge_init {
	uint64_t nports;
	an_merge_fn fn;
	an_merge_cut_fn cut;
	void *ctx;
};

/* The key of the port's next message (see the top). */
static void key_of(struct mport *p)
{
	const bt_message *msg = p->msgs[p->pos];
	int64_t ns;

	if (bt_message_get_type(msg) != BT_MESSAGE_TYPE_EVENT ||
	    !bt_message_event_borrow_stream_class_default_clock_class_const(msg))
		return;
	if (bt_clock_snapshot_get_ns_from_origin(
		    bt_message_event_borrow_default_clock_snapshot_const(msg), &ns) ==
	    BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK)
		p->key = ns;
}

enum fill { FILL_GOT, FILL_END, FILL_AGAIN, FILL_BROKEN, FILL_NOMEM };

/* The port's next batch.  babeltrace2's error of a broken stream is
 * taken here: the port's loss is the reader's to say. */
static enum fill refill(struct mport *p, char *why, size_t len)
{
	const bt_error *err;

	p->pos = 0;
	p->count = 0;
	switch (bt_message_iterator_next(p->it, &p->msgs, &p->count)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		if (p->count)
			return FILL_GOT;
		snprintf(why, len, "no message from its reader");
		return FILL_BROKEN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		p->done = 1;
		return FILL_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return FILL_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
		return FILL_NOMEM;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_ERROR:
	default:
		break;
	}
	p->done = 1;
	why[0] = '\0';
	err = bt_current_thread_take_error();
	if (err) {
		/* the root cause names the fault; its text up to the first
		 * colon, as the rest is addresses */
		uint64_t n = bt_error_get_cause_count(err);
		const char *msg = n ? bt_error_cause_get_message(
			bt_error_borrow_cause_by_index(err, 0)) : "";

		snprintf(why, len, "%.*s", (int)strcspn(msg, ":\n"), msg);
		bt_error_release(err);
	}
	if (!why[0])
		snprintf(why, len, "not decodable");
	return FILL_BROKEN;
}

/* A port's stream broken: told, and left out from here on. */
static void port_broken(struct merge *m, struct mport *p, const char *why)
{
	if (m->cut)
		m->cut(m->ctx, p->stream, p->events, why);
}

/* Every port's first batch, once, into the heap.  A port that says AGAIN
 * is asked again on the next call; those done are left out. */
static int start(struct merge *m)
{
	char why[256];

	for (uint64_t i = 0; i < m->nports; i++) {
		struct mport *p = &m->ports[i];

		if (p->done || p->count)
			continue;
		switch (refill(p, why, sizeof(why))) {
		case FILL_GOT:
			key_of(p);
			an_kh_push(&m->heap, p->key, (uint32_t)i);
			break;
		case FILL_END:
			break;
		case FILL_BROKEN:
			port_broken(m, p, why);
			break;
		case FILL_AGAIN:
			return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_AGAIN;
		case FILL_NOMEM:
		default:
			return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
		}
	}
	m->started = 1;
	return 0;
}

/* The stream's name kept from its beginning, for a loss to name it. */
static void note_stream(struct mport *p, const bt_message *msg)
{
	const char *name;

	if (p->stream || bt_message_get_type(msg) != BT_MESSAGE_TYPE_STREAM_BEGINNING)
		return;
	name = bt_stream_get_name(bt_message_stream_beginning_borrow_stream_const(msg));
	if (name)
		p->stream = strdup(name);
}

static bt_component_class_sink_consume_method_status
merge_consume(bt_self_component_sink *self)
{
	struct merge *m = bt_self_component_get_data(bt_self_component_sink_as_self_component(self));
	char why[256];
	int r;

	/* an AGAIN port is asked again on the next call */
	if (!m->started && (r = start(m)) != 0)
		return (bt_component_class_sink_consume_method_status)r;
	for (int n = 0; n < BURST; n++) {
		struct mport *p;
		const bt_message *msg;
		int failed;

		if (!m->heap.n)
			return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_END;
		p = &m->ports[an_kh_top(&m->heap)];
		if (p->pos == p->count) {
			/* Its batch is spent: the next one, then its place
			 * (AGAIN leaves it on top, asked on the next call). */
			switch (refill(p, why, sizeof(why))) {
			case FILL_GOT:
				key_of(p);
				an_kh_top_key(&m->heap, p->key);
				break;
			case FILL_BROKEN:
				port_broken(m, p, why);
				/* fall through */
			case FILL_END:
				an_kh_pop(&m->heap);
				break;
			case FILL_AGAIN:
				return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_AGAIN;
			case FILL_NOMEM:
			default:
				return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
			}
			continue;
		}
		msg = p->msgs[p->pos++];
		note_stream(p, msg);
		/* Merged sorted streams only go back when one of them does:
		 * that event is implausible, the stream's later ones stand. */
		if (p->key < m->last) {
			failed = m->fn(m->ctx, msg, p->key, 1);
		} else {
			m->last = p->key;
			failed = m->fn(m->ctx, msg, p->key, 0);
		}
		p->events += bt_message_get_type(msg) == BT_MESSAGE_TYPE_EVENT;
		bt_message_put_ref(msg);
		if (failed)
			return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
		if (p->pos < p->count) {
			key_of(p);
			an_kh_top_key(&m->heap, p->key);
		}
	}
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

static bt_component_class_initialize_method_status
merge_init(bt_self_component_sink *self, bt_self_component_sink_configuration *conf,
	   const bt_value *params, void *data)
{
	const struct merge_init *in = data;
	struct merge *m;
	char name[32];

	(void)conf;
	(void)params;
	m = calloc(1, sizeof(*m));
	if (!m)
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	m->fn = in->fn;
	m->cut = in->cut;
	m->ctx = in->ctx;
	m->nports = in->nports;
	m->ports = calloc(in->nports ? in->nports : 1, sizeof(*m->ports));
	m->heap.e = calloc(in->nports ? in->nports : 1, sizeof(*m->heap.e));
	bt_self_component_set_data(bt_self_component_sink_as_self_component(self), m);
	if (!m->ports || !m->heap.e)
		return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	for (uint64_t i = 0; i < in->nports; i++) {
		snprintf(name, sizeof(name), "in%llu", (unsigned long long)i);
		switch (bt_self_component_sink_add_input_port(self, name, NULL, NULL)) {
		case BT_SELF_COMPONENT_ADD_PORT_STATUS_OK:
			break;
		case BT_SELF_COMPONENT_ADD_PORT_STATUS_MEMORY_ERROR:
			return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
		default:
			return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
		}
	}
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

static bt_component_class_sink_graph_is_configured_method_status
merge_configured(bt_self_component_sink *self)
{
	struct merge *m = bt_self_component_get_data(bt_self_component_sink_as_self_component(self));

	for (uint64_t i = 0; i < m->nports; i++) {
		bt_self_component_port_input *port =
			bt_self_component_sink_borrow_input_port_by_index(self, i);

		switch (bt_message_iterator_create_from_sink_component(self, port,
								       &m->ports[i].it)) {
		case BT_MESSAGE_ITERATOR_CREATE_FROM_SINK_COMPONENT_STATUS_OK:
			break;
		case BT_MESSAGE_ITERATOR_CREATE_FROM_SINK_COMPONENT_STATUS_MEMORY_ERROR:
			return BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_MEMORY_ERROR;
		default:
			return BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_ERROR;
		}
	}
	return BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_OK;
}

static void merge_finalize(bt_self_component_sink *self)
{
	struct merge *m = bt_self_component_get_data(bt_self_component_sink_as_self_component(self));

	if (!m)
		return;
	for (uint64_t i = 0; m->ports && i < m->nports; i++) {
		struct mport *p = &m->ports[i];

		for (uint64_t k = p->pos; k < p->count; k++)
			bt_message_put_ref(p->msgs[k]);
		bt_message_iterator_put_ref(p->it);
		free(p->stream);
	}
	free(m->ports);
	free(m->heap.e);
	free(m);
}

int an_merge_add(bt_graph *graph, uint64_t nports, an_merge_fn fn, an_merge_cut_fn cut,
		 void *ctx, const bt_component_sink **sink)
{
	struct merge_init in = { .nports = nports, .fn = fn, .cut = cut, .ctx = ctx };
	bt_component_class_sink *cls;
	int ret = -1;

	if (nports >= UINT32_MAX)
		return -1;
	cls = bt_component_class_sink_create("ncclguard-merge", merge_consume);
	if (!cls)
		return -1;
	if (bt_component_class_sink_set_initialize_method(cls, merge_init) ||
	    bt_component_class_sink_set_graph_is_configured_method(cls, merge_configured) ||
	    bt_component_class_sink_set_finalize_method(cls, merge_finalize))
		goto out;
	if (bt_graph_add_sink_component_with_initialize_method_data(
		    graph, cls, "ncclguard", NULL, &in, BT_LOGGING_LEVEL_NONE, sink) ==
	    BT_GRAPH_ADD_COMPONENT_STATUS_OK)
		ret = 0;
out:
	bt_component_class_sink_put_ref(cls);
	return ret;
}
