/*
 * Reading: one src.ctf.fs component per CTF trace found under the DIRs,
 * all into one flt.utils.muxer, into our simple sink.  The sink turns each
 * ncclguard event into a record and hands it to the matcher; nothing of the
 * trace is kept here beyond per-stream and per-event-class caches.
 *
 * Field lookup by name costs a string compare per field per event, so each
 * event class is resolved once to member indexes (struct evclass).
 */
#include <babeltrace2/babeltrace.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "an_priv.h"

enum kind {
	K_OTHER, K_PROC, K_INIT_BEGIN, K_INIT_END, K_COMM_END, K_ENQ, K_DONE,
	K_TIMEOUT, K_POLICY, K_INJECT, K_CALLSITE,
};

static const char *const kind_names[] = {
	[K_PROC] = "ncclguard:process_info",
	[K_INIT_BEGIN] = "ncclguard:comm_init_begin",
	[K_INIT_END] = "ncclguard:comm_init_end",
	[K_COMM_END] = "ncclguard:comm_end",
	[K_ENQ] = "ncclguard:coll_enqueue",
	[K_DONE] = "ncclguard:coll_complete",
	[K_TIMEOUT] = "ncclguard:timeout",
	[K_POLICY] = "ncclguard:policy",
	[K_INJECT] = "ncclguard:inject",
	[K_CALLSITE] = "ncclguard:callsite",
};

/* Every payload field we read, by its name in tracer/tp_api.h. */
#define FIELDS(X) \
	X(host) X(pid) X(rank) X(local_rank) X(world_size) X(nccl_version) \
	X(nccl_path) X(cudart_version) X(driver_version) X(gpu_pci_bus_id) \
	X(numa_node) X(cpu_affinity) X(socket_ifname) X(env) X(policy_digest) \
	X(rank_source) X(comm_hash) X(parent_hash) X(nranks) X(result) X(kind) \
	X(seq) X(p2p_seq) X(op) X(count) X(datatype) X(bytes) X(root_or_peer) \
	X(stream) X(enter_ns) X(exit_ns) X(enter_coarse) X(gpu_start_ns) X(gpu_end_ns) \
	X(duration_ns) X(waited_ns) X(action) X(what) X(key) X(user_value) \
	X(effective_value) X(detail) X(job) X(job_id)

#define X(name) F_##name,
enum field { FIELDS(X) NF };
#undef X
#define X(name) #name,
static const char *const field_names[NF] = { FIELDS(X) };
#undef X

struct evclass {
	enum kind kind;
	int idx[NF];		/* payload member index, -1 if absent */
	int vpid_idx;		/* in the common context, -1 if absent */
};

struct streaminfo {
	int host;
	int64_t offset_ns;	/* clock origin offset: raw monotonic -> trace clock */
	int64_t env_vpid;	/* per-pid buffers name the process in env */
};

struct reader {
	struct an_state *an;
	int progress;		/* a progress line on stderr */
	struct an_map class_map, stream_map;
	struct evclass *classes;
	int nclasses;
	struct streaminfo *streams;
	int nstreams;
	uint64_t nevents;
	struct timespec last_progress, start;
	int failed;
};

/* ---- errors ----------------------------------------------------------- */

static void print_bt_error(const char *what)
{
	const bt_error *err = bt_current_thread_take_error();
	uint64_t n, i, shown = 0;

	fprintf(stderr, "ncclguard analyze: %s\n", what);
	if (!err)
		return;
	n = bt_error_get_cause_count(err);
	/* Outermost first, down to the root cause, as babeltrace2 prints
	 * them; the library's own causes only repeat addresses. */
	for (i = n; i-- > 0 && shown < 5;) {
		const bt_error_cause *c = bt_error_borrow_cause_by_index(err, i);
		const char *msg = bt_error_cause_get_message(c);
		const char *nl = strchr(msg, '\n');

		if (bt_error_cause_get_actor_type(c) == BT_ERROR_CAUSE_ACTOR_TYPE_UNKNOWN)
			continue;
		fprintf(stderr, "  %.*s\n", nl ? (int)(nl - msg) : (int)strlen(msg), msg);
		shown++;
	}
	bt_error_release(err);
}

/* ---- per event -------------------------------------------------------- */

static int resolve_class(struct reader *rd, const bt_event_class *ec)
{
	const char *name = bt_event_class_get_name(ec);
	const bt_field_class *payload = bt_event_class_borrow_payload_field_class_const(ec);
	const bt_stream_class *sc = bt_event_class_borrow_stream_class_const(ec);
	const bt_field_class *ctx = bt_stream_class_borrow_event_common_context_field_class_const(sc);
	struct evclass *cls, *grown;
	uint64_t i, n;
	int k;

	grown = realloc(rd->classes, (rd->nclasses + 1) * sizeof(*rd->classes));
	if (!grown)
		return -1;
	rd->classes = grown;
	cls = &rd->classes[rd->nclasses];
	memset(cls, 0, sizeof(*cls));
	for (k = 0; k < NF; k++)
		cls->idx[k] = -1;
	cls->vpid_idx = -1;
	cls->kind = K_OTHER;
	for (k = 1; name && k < (int)(sizeof(kind_names) / sizeof(kind_names[0])); k++)
		if (!strcmp(name, kind_names[k]))
			cls->kind = k;
	if (payload && bt_field_class_get_type(payload) == BT_FIELD_CLASS_TYPE_STRUCTURE) {
		n = bt_field_class_structure_get_member_count(payload);
		for (i = 0; i < n; i++) {
			const char *m = bt_field_class_structure_member_get_name(
				bt_field_class_structure_borrow_member_by_index_const(payload, i));

			for (k = 0; k < NF; k++)
				if (!strcmp(m, field_names[k]))
					cls->idx[k] = (int)i;
		}
	}
	if (ctx && bt_field_class_get_type(ctx) == BT_FIELD_CLASS_TYPE_STRUCTURE) {
		n = bt_field_class_structure_get_member_count(ctx);
		for (i = 0; i < n; i++)
			if (!strcmp(bt_field_class_structure_member_get_name(
				bt_field_class_structure_borrow_member_by_index_const(ctx, i)), "vpid"))
				cls->vpid_idx = (int)i;
	}
	an_map_put(&rd->class_map, (uint64_t)(uintptr_t)ec, rd->nclasses);
	return rd->nclasses++;
}

static int64_t int_of(const bt_field *f)
{
	bt_field_class_type t;

	if (!f)
		return 0;
	t = bt_field_get_class_type(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		return (int64_t)bt_field_integer_unsigned_get_value(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
		return bt_field_integer_signed_get_value(f);
	if (t == BT_FIELD_CLASS_TYPE_BOOL)
		return bt_field_bool_get_value(f);
	return 0;
}

static int64_t fi(const bt_field *payload, const struct evclass *c, enum field k)
{
	if (c->idx[k] < 0)
		return 0;
	return int_of(bt_field_structure_borrow_member_field_by_index_const(payload, c->idx[k]));
}

static const char *fs(const bt_field *payload, const struct evclass *c, enum field k)
{
	const bt_field *f;

	if (c->idx[k] < 0)
		return "";
	f = bt_field_structure_borrow_member_field_by_index_const(payload, c->idx[k]);
	if (bt_field_get_class_type(f) != BT_FIELD_CLASS_TYPE_STRING)
		return "";
	return bt_field_string_get_value(f);
}

static int stream_info(struct reader *rd, const bt_stream *stream)
{
	int32_t i = an_map_get(&rd->stream_map, (uint64_t)(uintptr_t)stream);
	const bt_trace *trace;
	const bt_value *v;
	const bt_clock_class *cc;
	struct streaminfo *si, *grown;
	const char *host = "unknown";

	if (i >= 0)
		return i;
	grown = realloc(rd->streams, (rd->nstreams + 1) * sizeof(*rd->streams));
	if (!grown)
		return -1;
	rd->streams = grown;
	si = &rd->streams[rd->nstreams];
	memset(si, 0, sizeof(*si));
	trace = bt_stream_borrow_trace_const(stream);
	v = bt_trace_borrow_environment_entry_value_by_name_const(trace, "hostname");
	if (v && bt_value_get_type(v) == BT_VALUE_TYPE_STRING)
		host = bt_value_string_get(v);
	si->host = an_host_id(rd->an, host);
	v = bt_trace_borrow_environment_entry_value_by_name_const(trace, "vpid");
	if (v && bt_value_get_type(v) == BT_VALUE_TYPE_SIGNED_INTEGER)
		si->env_vpid = bt_value_integer_signed_get(v);
	cc = bt_stream_class_borrow_default_clock_class_const(bt_stream_borrow_class_const(stream));
	if (cc) {
		int64_t sec;
		uint64_t cycles, freq = bt_clock_class_get_frequency(cc);

		bt_clock_class_get_offset(cc, &sec, &cycles);
		si->offset_ns = sec * 1000000000LL +
			(int64_t)(freq == 1000000000ULL ? cycles :
				  (uint64_t)((double)cycles * 1e9 / (double)freq));
	}
	an_map_put(&rd->stream_map, (uint64_t)(uintptr_t)stream, rd->nstreams);
	return rd->nstreams++;
}

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

static int handle_event(struct reader *rd, const bt_message *msg)
{
	const bt_event *ev = bt_message_event_borrow_event_const(msg);
	const bt_event_class *ec = bt_event_borrow_class_const(ev);
	int32_t ci = an_map_get(&rd->class_map, (uint64_t)(uintptr_t)ec);
	const struct evclass *c;
	const bt_field *p, *ctx;
	struct streaminfo *si;
	struct an_src src;
	int sidx;

	if (ci < 0 && (ci = resolve_class(rd, ec)) < 0)
		return -1;
	c = &rd->classes[ci];
	if (c->kind == K_OTHER)
		return 0;
	sidx = stream_info(rd, bt_event_borrow_stream_const(ev));
	if (sidx < 0)
		return -1;
	si = &rd->streams[sidx];
	src.host = si->host;
	src.vpid = si->env_vpid;
	src.ts = 0;
	ctx = bt_event_borrow_common_context_field_const(ev);
	if (ctx && c->vpid_idx >= 0)
		src.vpid = int_of(bt_field_structure_borrow_member_field_by_index_const(ctx, c->vpid_idx));
	if (bt_message_event_borrow_stream_class_default_clock_class_const(msg)) {
		int64_t ns;

		if (bt_clock_snapshot_get_ns_from_origin(
			    bt_message_event_borrow_default_clock_snapshot_const(msg), &ns) ==
		    BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK)
			src.ts = ns;
	}
	p = bt_event_borrow_payload_field_const(ev);
	if (!p)
		return 0;
	rd->nevents++;
	if (!(rd->nevents & 0xffff))
		progress(rd, 0);
	/* Another job's events never reach the matcher (job.c). */
	src.job = (uint64_t)fi(p, c, F_job);
	if (an_job_skip(rd->an, &src, c->kind == K_PROC, fs(p, c, F_job_id)))
		return 0;
	an_seen(rd->an, &src);

#define T(f) (fi(p, c, F_##f) ? fi(p, c, F_##f) + si->offset_ns : 0)
	switch (c->kind) {
	case K_PROC: {
		struct an_rec_proc r = {
			.host = fs(p, c, F_host), .nccl_path = fs(p, c, F_nccl_path),
			.gpu_pci_bus_id = fs(p, c, F_gpu_pci_bus_id),
			.cpu_affinity = fs(p, c, F_cpu_affinity),
			.socket_ifname = fs(p, c, F_socket_ifname), .env = fs(p, c, F_env),
			.policy_digest = fs(p, c, F_policy_digest),
			.rank_source = fs(p, c, F_rank_source),
			.pid = fi(p, c, F_pid), .rank = fi(p, c, F_rank),
			.local_rank = fi(p, c, F_local_rank), .world_size = fi(p, c, F_world_size),
			.nccl_version = fi(p, c, F_nccl_version),
			.cudart_version = fi(p, c, F_cudart_version),
			.driver_version = fi(p, c, F_driver_version),
			.numa_node = c->idx[F_numa_node] >= 0 ? fi(p, c, F_numa_node) : -1,
		};
		an_process_info(rd->an, &src, &r);
		break;
	}
	case K_INIT_BEGIN:
	case K_INIT_END: {
		struct an_rec_init r = {
			.comm_hash = (uint64_t)fi(p, c, F_comm_hash),
			.parent_hash = (uint64_t)fi(p, c, F_parent_hash),
			.nranks = fi(p, c, F_nranks), .rank = fi(p, c, F_rank),
			.result = fi(p, c, F_result), .end = c->kind == K_INIT_END,
		};
		an_comm_init(rd->an, &src, &r);
		break;
	}
	case K_ENQ:
	case K_DONE: {
		struct an_rec_coll r = {
			.comm_hash = (uint64_t)fi(p, c, F_comm_hash),
			.seq = (uint64_t)fi(p, c, F_seq), .p2p_seq = (uint64_t)fi(p, c, F_p2p_seq),
			.count = (uint64_t)fi(p, c, F_count), .bytes = (uint64_t)fi(p, c, F_bytes),
			.stream = (uint64_t)fi(p, c, F_stream), .op = fs(p, c, F_op),
			.datatype = fi(p, c, F_datatype),
			.root_or_peer = c->idx[F_root_or_peer] >= 0 ? fi(p, c, F_root_or_peer) : -1,
			.result = fi(p, c, F_result), .nranks = fi(p, c, F_nranks),
			.enter_ns = T(enter_ns), .exit_ns = T(exit_ns),
			.enter_coarse = fi(p, c, F_enter_coarse) != 0,
			.gpu_start_ns = T(gpu_start_ns), .gpu_end_ns = T(gpu_end_ns),
			.duration_ns = fi(p, c, F_duration_ns),
		};
		if (c->kind == K_ENQ) {
			if (!r.enter_ns)
				r.enter_ns = src.ts;
			an_enqueue(rd->an, &src, &r);
		} else {
			an_complete(rd->an, &src, &r);
		}
		break;
	}
	case K_COMM_END:
	case K_TIMEOUT:
	case K_POLICY:
	case K_INJECT: {
		struct an_rec_misc r = {
			.comm_hash = (uint64_t)fi(p, c, F_comm_hash),
			.seq = (uint64_t)fi(p, c, F_seq), .waited_ns = (uint64_t)fi(p, c, F_waited_ns),
			.op = fs(p, c, F_op), .kind = fs(p, c, F_kind), .action = fs(p, c, F_action),
			.what = fs(p, c, F_what), .detail = fs(p, c, F_detail), .key = fs(p, c, F_key),
			.user_value = fs(p, c, F_user_value),
			.effective_value = fs(p, c, F_effective_value),
			.result = fi(p, c, F_result),
		};
		if (c->kind == K_COMM_END)
			an_comm_end(rd->an, &src, &r);
		else if (c->kind == K_TIMEOUT)
			an_timeout(rd->an, &src, &r);
		else if (c->kind == K_POLICY)
			an_policy(rd->an, &src, &r);
		else
			an_inject(rd->an, &src, &r);
		break;
	}
	default:
		break;
	}
#undef T
	return 0;
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
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		return stream_info(rd, bt_message_stream_beginning_borrow_stream_const(msg)) < 0 ?
			-1 : 0;
	default:
		return 0;
	}
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
		    handle(rd, msgs[i])) {
			rd->failed = 1;
			ret = BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
		}
		bt_message_put_ref(msgs[i]);
	}
	return ret;
}

/* ---- graph ------------------------------------------------------------ */

static int add_source(bt_graph *graph, const bt_component_class_source *cls,
		      const char *dir, int i, const bt_component_filter *muxer)
{
	bt_value *params = bt_value_map_create(), *inputs = NULL;
	const bt_component_source *src = NULL;
	char name[32], what[4200];
	uint64_t p, nports;
	int ret = -1;

	if (!params)
		goto out;
	if (bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) !=
	    BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK ||
	    bt_value_array_append_string_element(inputs, dir) !=
	    BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK ||
	    /* Hosts' clocks have different UUIDs; the muxer refuses to order
	     * them unless their origin is the epoch (LTTng's offset is). */
	    bt_value_map_insert_bool_entry(params, "force-clock-class-origin-unix-epoch",
					   BT_TRUE) != BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK) {
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
	nports = bt_component_source_get_output_port_count(src);
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

int an_read_traces(const char *const *dirs, int ndirs, struct an_state *an,
		   int show_progress)
{
	const bt_plugin *ctf = NULL, *utils = NULL;
	const bt_component_class_source *fs_cls;
	const bt_component_class_filter *mux_cls;
	const bt_component_filter *muxer = NULL;
	const bt_component_sink *sink = NULL;
	struct reader rd = { .an = an, .progress = show_progress };
	bt_graph *graph = NULL;
	char **traces = NULL;
	int ntraces = 0, i, ret = -1;
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
	for (i = 0; i < ntraces; i++) {
		char *h = an_metadata_hostname(traces[i]);

		if (h)
			an_host_id(an, h);
		free(h);
	}
	if (bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, &ctf) !=
	    BT_PLUGIN_FIND_STATUS_OK ||
	    bt_plugin_find("utils", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, &utils) !=
	    BT_PLUGIN_FIND_STATUS_OK) {
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
	graph = bt_graph_create(0);
	if (!graph) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		goto out;
	}
	if (bt_graph_add_filter_component(graph, mux_cls, "muxer", NULL, BT_LOGGING_LEVEL_NONE,
					  &muxer) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		print_bt_error("cannot create the muxer");
		goto out;
	}
	for (i = 0; i < ntraces; i++)
		if (add_source(graph, fs_cls, traces[i], i, muxer))
			goto out;
	if (bt_graph_add_simple_sink_component(graph, "ncclguard", NULL, consume, NULL, &rd,
					       &sink) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		print_bt_error("cannot create the sink");
		goto out;
	}
	if (bt_graph_connect_ports(graph,
				   bt_component_filter_borrow_output_port_by_name_const(muxer, "out"),
				   bt_component_sink_borrow_input_port_by_name_const(sink, "in"),
				   NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
		print_bt_error("cannot connect the muxer to the sink");
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &rd.start);
	rd.last_progress = rd.start;
	do {
		rs = bt_graph_run(graph);
	} while (rs == BT_GRAPH_RUN_STATUS_AGAIN);
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
	bt_plugin_put_ref(ctf);
	bt_plugin_put_ref(utils);
	for (i = 0; i < ntraces; i++)
		free(traces[i]);
	free(traces);
	free(rd.classes);
	free(rd.streams);
	an_map_free(&rd.class_map);
	an_map_free(&rd.stream_map);
	return ret;
}
