/*
 * Decoding: an event class resolved once to the member indexes of the
 * fields we read (struct evclass), a stream's host, process and clock
 * offset learnt once (struct streaminfo), then per event a few borrows by
 * index.  Field names are those of tracer/tp_api.h.
 */
#include <babeltrace2/babeltrace.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "u64map.h"

static const char *const kind_names[] = {
	[EV_PROC] = "ncclguard:process_info",
	[EV_INIT_BEGIN] = "ncclguard:comm_init_begin",
	[EV_INIT_END] = "ncclguard:comm_init_end",
	[EV_COMM_END] = "ncclguard:comm_end",
	[EV_ENQ] = "ncclguard:coll_enqueue",
	[EV_DONE] = "ncclguard:coll_complete",
	[EV_TIMEOUT] = "ncclguard:timeout",
	[EV_POLICY] = "ncclguard:policy",
	[EV_INJECT] = "ncclguard:inject",
	[EV_CALLSITE] = "ncclguard:callsite",
	[EV_ALGO] = "ncclguard:coll_algo",
};
#define NKINDS ((int)(sizeof(kind_names) / sizeof(kind_names[0])))

/* Every payload field we read, by its name in tracer/tp_api.h. */
#define FIELDS(X) \
	X(host) X(pid) X(rank) X(local_rank) X(world_size) X(nccl_version) \
	X(nccl_path) X(cudart_version) X(driver_version) X(gpu_pci_bus_id) \
	X(numa_node) X(cpu_affinity) X(socket_ifname) X(env) X(policy_digest) \
	X(rank_source) X(comm_hash) X(parent_hash) X(nranks) X(result) X(kind) \
	X(seq) X(p2p_seq) X(op) X(count) X(datatype) X(bytes) X(root_or_peer) \
	X(stream) X(enter_ns) X(exit_ns) X(enter_coarse) X(gpu_start_ns) X(gpu_end_ns) \
	X(duration_ns) X(waited_ns) X(action) X(what) X(key) X(user_value) \
	X(effective_value) X(detail) X(job) X(job_id) X(op_seq) X(algo) X(proto) \
	X(nchannels) X(plugin_only) X(timing_off)

#define X(name) F_##name,
enum field { FIELDS(X) NF };
#undef X
#define X(name) #name,
static const char *const field_names[NF] = { FIELDS(X) };
#undef X

struct evclass {
	const bt_event_class *ec;
	enum ev_kind kind;
	int idx[NF];		/* payload member index, -1 if absent */
	int vpid_idx;		/* in the common context, -1 if absent */
};

struct streaminfo {
	const bt_stream *stream;
	int host;
	int64_t offset_ns;	/* clock origin offset: raw monotonic -> trace clock */
	int64_t env_vpid;	/* per-pid buffers name the process in env */
	uint64_t bad;		/* events dropped or clamped: values out of range */
	char first_bad[64];	/* the first such value */
};

/* Strings longer than this are cut (the env of process_info is the
 * longest a shim writes, a few KiB). */
#define STR_MAX		65536

struct ev_decoder {
	int (*host_id)(void *ctx, const char *hostname);
	void *ctx;
	/* An event class's, a stream's address -> its index below. */
	struct ng_u64map class_map, stream_map;
	struct evclass *classes;
	int nclasses;
	struct streaminfo *streams;
	int nstreams;
	struct streaminfo *cur;	/* the stream of the event being read */
	uint64_t bad_values;
	char *strbuf[NF];	/* cut copies of over-long strings */
};

/* ---- classes and streams ---------------------------------------------- */

static int resolve_class(struct ev_decoder *d, const bt_event_class *ec)
{
	const char *name = bt_event_class_get_name(ec);
	const bt_field_class *payload = bt_event_class_borrow_payload_field_class_const(ec);
	const bt_stream_class *sc = bt_event_class_borrow_stream_class_const(ec);
	const bt_field_class *ctx = bt_stream_class_borrow_event_common_context_field_class_const(sc);
	struct evclass *cls, *grown;
	uint64_t i, n;
	int k;

	grown = realloc(d->classes, (d->nclasses + 1) * sizeof(*d->classes));
	if (!grown)
		return -1;
	d->classes = grown;
	cls = &d->classes[d->nclasses];
	memset(cls, 0, sizeof(*cls));
	cls->ec = ec;
	for (k = 0; k < NF; k++)
		cls->idx[k] = -1;
	cls->vpid_idx = -1;
	cls->kind = EV_OTHER;
	for (k = 1; name && k < NKINDS; k++)
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
	if (ng_u64map_put(&d->class_map, (uintptr_t)ec, d->nclasses))
		return -1;
	return d->nclasses++;
}

static int stream_index(struct ev_decoder *d, const bt_stream *stream)
{
	int i = ng_u64map_get(&d->stream_map, (uintptr_t)stream);
	const bt_trace *trace;
	const bt_value *v;
	const bt_clock_class *cc;
	struct streaminfo *si, *grown;
	const char *host = "unknown";

	if (i >= 0)
		return i;
	grown = realloc(d->streams, (d->nstreams + 1) * sizeof(*d->streams));
	if (!grown)
		return -1;
	d->streams = grown;
	si = &d->streams[d->nstreams];
	memset(si, 0, sizeof(*si));
	trace = bt_stream_borrow_trace_const(stream);
	v = bt_trace_borrow_environment_entry_value_by_name_const(trace, "hostname");
	if (v && bt_value_get_type(v) == BT_VALUE_TYPE_STRING)
		host = bt_value_string_get(v);
	si->host = d->host_id(d->ctx, host);
	v = bt_trace_borrow_environment_entry_value_by_name_const(trace, "vpid");
	if (v && bt_value_get_type(v) == BT_VALUE_TYPE_SIGNED_INTEGER)
		si->env_vpid = bt_value_integer_signed_get(v);
	si->stream = stream;
	cc = bt_stream_class_borrow_default_clock_class_const(bt_stream_borrow_class_const(stream));
	if (cc) {
		int64_t sec;
		uint64_t cycles, freq = bt_clock_class_get_frequency(cc);
		double ns;

		bt_clock_class_get_offset(cc, &sec, &cycles);
		ns = freq ? (double)cycles * 1e9 / (double)freq : 0;
		/* An offset the trace's times cannot be on (centuries) is
		 * corrupt metadata: times are taken as they are. */
		if (sec >= 0 && sec < 4000000000LL && ns < 1e18)
			si->offset_ns = sec * 1000000000LL +
				(int64_t)(freq == 1000000000ULL ? cycles : (uint64_t)ns);
		if (si->offset_ns > EV_TS_MAX / 4 * 3 || !(sec >= 0 && sec < 4000000000LL && ns < 1e18)) {
			si->offset_ns = 0;
			si->bad++;
			snprintf(si->first_bad, sizeof(si->first_bad), "clock offset %lld s",
				 (long long)sec);
		}
	}
	if (ng_u64map_put(&d->stream_map, (uintptr_t)stream, d->nstreams))
		return -1;
	return d->nstreams++;
}

int ev_stream(struct ev_decoder *d, const struct bt_stream *stream)
{
	return stream_index(d, stream) < 0 ? -1 : 0;
}

/* ---- fields ----------------------------------------------------------- */

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

/* An event's value out of range: counted against its stream. */
static void bad_value(struct ev_decoder *d, enum field k, int64_t v)
{
	struct streaminfo *si = d->cur;

	d->bad_values++;
	if (!si)
		return;
	if (!si->bad++)
		snprintf(si->first_bad, sizeof(si->first_bad), "%s %lld", field_names[k],
			 (long long)v);
}

/* Field k if within [lo, hi]; else `dflt`, counted (and *bad set, where
 * the event is to be dropped). */
static int64_t fi_in(struct ev_decoder *d, const bt_field *p, const struct evclass *c,
		     enum field k, int64_t lo, int64_t hi, int64_t dflt, int *bad)
{
	int64_t v = fi(p, c, k);

	if (v >= lo && v <= hi)
		return v;
	bad_value(d, k, v);
	if (bad)
		*bad = 1;
	return dflt;
}

/* A time field on the trace's clock: 0 when absent; a raw value or a sum
 * past EV_TS_MAX is corrupt and would overflow the differences taken of
 * it later. */
static int64_t ft(struct ev_decoder *d, const bt_field *p, const struct evclass *c,
		  enum field k, int *bad)
{
	int64_t v = fi(p, c, k), off = d->cur->offset_ns;

	if (!v)
		return 0;
	if (v < 0 || v > EV_TS_MAX || v > EV_TS_MAX - off) {
		bad_value(d, k, v);
		*bad = 1;
		return 0;
	}
	return v + off;
}

static const char *fs(struct ev_decoder *d, const bt_field *payload, const struct evclass *c,
		      enum field k)
{
	const bt_field *f;
	const char *v;

	if (c->idx[k] < 0)
		return "";
	f = bt_field_structure_borrow_member_field_by_index_const(payload, c->idx[k]);
	if (bt_field_get_class_type(f) != BT_FIELD_CLASS_TYPE_STRING)
		return "";
	v = bt_field_string_get_value(f);
	if (!v)
		return "";
	if (strnlen(v, STR_MAX + 1) <= STR_MAX)
		return v;
	bad_value(d, k, (int64_t)strlen(v));
	if (!d->strbuf[k] && !(d->strbuf[k] = malloc(STR_MAX + 1)))
		return "";
	memcpy(d->strbuf[k], v, STR_MAX);
	d->strbuf[k][STR_MAX] = '\0';
	return d->strbuf[k];
}

/* ---- events ----------------------------------------------------------- */

int ev_head(struct ev_decoder *d, const struct bt_message *m, struct ev_event *ev)
{
	const bt_message *msg = m;
	const bt_event *e = bt_message_event_borrow_event_const(msg);
	const bt_event_class *ec = bt_event_borrow_class_const(e);
	int ci = ng_u64map_get(&d->class_map, (uintptr_t)ec);
	const struct evclass *c;
	const bt_field *p, *ctx;
	int sidx;

	if (ci < 0 && (ci = resolve_class(d, ec)) < 0)
		return -1;
	c = &d->classes[ci];
	if (c->kind == EV_OTHER)
		return 0;
	sidx = stream_index(d, bt_event_borrow_stream_const(e));
	if (sidx < 0)
		return -1;
	d->cur = &d->streams[sidx];
	ev->kind = c->kind;
	ev->src.host = d->cur->host;
	ev->src.vpid = d->cur->env_vpid;
	ev->src.ts = 0;
	ctx = bt_event_borrow_common_context_field_const(e);
	if (ctx && c->vpid_idx >= 0)
		ev->src.vpid = int_of(bt_field_structure_borrow_member_field_by_index_const(
			ctx, c->vpid_idx));
	if (bt_message_event_borrow_stream_class_default_clock_class_const(msg)) {
		int64_t ns;

		if (bt_clock_snapshot_get_ns_from_origin(
			    bt_message_event_borrow_default_clock_snapshot_const(msg), &ns) ==
		    BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK)
			ev->src.ts = ns;
	}
	/* Event times bound every difference a reader takes. */
	if (ev->src.ts < 0 || ev->src.ts > EV_TS_MAX) {
		bad_value(d, F_enter_ns, ev->src.ts);
		return 0;
	}
	p = bt_event_borrow_payload_field_const(e);
	if (!p)
		return 0;
	ev->src.job = (uint64_t)fi(p, c, F_job);
	ev->job_id = c->kind == EV_PROC ? fs(d, p, c, F_job_id) : "";
	ev->payload_ = p;
	ev->class_ = c;
	return 1;
}

int ev_body(struct ev_decoder *d, struct ev_event *ev)
{
	const bt_field *p = ev->payload_;
	const struct evclass *c = ev->class_;
	int bad = 0;

	/* Every value that sizes, indexes or is subtracted is bounded here:
	 * an event with one out of range is dropped (and counted against
	 * its stream), one merely printed is clamped. */
#define IN(f, lo, hi, dflt) fi_in(d, p, c, F_##f, lo, hi, dflt, &bad)
#define KEEP(f, lo, hi, dflt) fi_in(d, p, c, F_##f, lo, hi, dflt, NULL)
#define S(f) fs(d, p, c, F_##f)
	switch (ev->kind) {
	case EV_PROC:
		ev->r.proc = (struct ev_rec_proc){
			.host = S(host), .nccl_path = S(nccl_path),
			.gpu_pci_bus_id = S(gpu_pci_bus_id), .cpu_affinity = S(cpu_affinity),
			.socket_ifname = S(socket_ifname), .env = S(env),
			.policy_digest = S(policy_digest), .rank_source = S(rank_source),
			.pid = KEEP(pid, 0, INT32_MAX, 0),
			.rank = KEEP(rank, -1, EV_NRANKS_MAX - 1, -1),
			.local_rank = KEEP(local_rank, -1, EV_NRANKS_MAX - 1, -1),
			.world_size = KEEP(world_size, 0, EV_NRANKS_MAX, 0),
			.nccl_version = KEEP(nccl_version, 0, INT32_MAX, 0),
			.cudart_version = KEEP(cudart_version, 0, INT32_MAX, 0),
			.driver_version = KEEP(driver_version, 0, INT32_MAX, 0),
			.numa_node = c->idx[F_numa_node] >= 0 ?
				KEEP(numa_node, -1, INT32_MAX, -1) : -1,
			.timing_off = c->idx[F_timing_off] >= 0 ? KEEP(timing_off, 0, 1, 0) : 0,
		};
		break;
	case EV_INIT_BEGIN:
	case EV_INIT_END:
		ev->r.init = (struct ev_rec_init){
			.comm_hash = (uint64_t)fi(p, c, F_comm_hash),
			.parent_hash = (uint64_t)fi(p, c, F_parent_hash),
			.nranks = IN(nranks, 0, EV_NRANKS_MAX, 0),
			.rank = IN(rank, -1, EV_NRANKS_MAX - 1, -1),
			.result = fi(p, c, F_result), .end = ev->kind == EV_INIT_END,
			.plugin = !strcmp(S(kind), "plugin"),
		};
		break;
	case EV_ALGO:
		ev->r.algo = (struct ev_rec_algo){
			.comm_hash = (uint64_t)fi(p, c, F_comm_hash),
			.seq = (uint64_t)IN(seq, 0, (int64_t)EV_SEQ_MAX, 0),
			.op_seq = (uint64_t)fi(p, c, F_op_seq),
			.bytes = (uint64_t)fi(p, c, F_bytes),
			.op = S(op), .algo = S(algo), .proto = S(proto),
			.nchannels = IN(nchannels, 0, 255, 0),
			.nranks = IN(nranks, 0, EV_NRANKS_MAX, 0),
			.plugin_only = fi(p, c, F_plugin_only) != 0,
		};
		break;
	case EV_ENQ:
	case EV_DONE:
		ev->r.coll = (struct ev_rec_coll){
			.comm_hash = (uint64_t)fi(p, c, F_comm_hash),
			.seq = (uint64_t)IN(seq, 0, (int64_t)EV_SEQ_MAX, 0),
			.p2p_seq = (uint64_t)IN(p2p_seq, 0, (int64_t)EV_SEQ_MAX, 0),
			.count = (uint64_t)fi(p, c, F_count), .bytes = (uint64_t)fi(p, c, F_bytes),
			.stream = (uint64_t)fi(p, c, F_stream), .op = S(op),
			.datatype = KEEP(datatype, -1, INT32_MAX, -1),
			.root_or_peer = c->idx[F_root_or_peer] >= 0 ?
				IN(root_or_peer, -1, EV_NRANKS_MAX - 1, -1) : -1,
			.result = fi(p, c, F_result),
			.nranks = IN(nranks, 0, EV_NRANKS_MAX, 0),
			.enter_ns = ft(d, p, c, F_enter_ns, &bad),
			.exit_ns = ft(d, p, c, F_exit_ns, &bad),
			.enter_coarse = fi(p, c, F_enter_coarse) != 0,
			.gpu_start_ns = ft(d, p, c, F_gpu_start_ns, &bad),
			.gpu_end_ns = ft(d, p, c, F_gpu_end_ns, &bad),
			.duration_ns = IN(duration_ns, 0, EV_TS_MAX, 0),
		};
		if (ev->kind == EV_ENQ && !ev->r.coll.enter_ns)
			ev->r.coll.enter_ns = ev->src.ts;
		break;
	case EV_COMM_END:
	case EV_TIMEOUT:
	case EV_POLICY:
	case EV_INJECT:
		ev->r.misc = (struct ev_rec_misc){
			.comm_hash = (uint64_t)fi(p, c, F_comm_hash),
			.seq = (uint64_t)IN(seq, 0, (int64_t)EV_SEQ_MAX, 0),
			.waited_ns = (uint64_t)KEEP(waited_ns, 0, EV_TS_MAX, 0),
			.op = S(op), .kind = S(kind), .action = S(action),
			.what = S(what), .detail = S(detail), .key = S(key),
			.user_value = S(user_value), .effective_value = S(effective_value),
			.result = fi(p, c, F_result),
		};
		break;
	default:
		return 0;
	}
#undef IN
#undef KEEP
#undef S
	return !bad;
}

/* ---- the decoder ------------------------------------------------------ */

struct ev_decoder *ev_decoder_new(int (*host_id)(void *ctx, const char *hostname), void *ctx)
{
	struct ev_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->host_id = host_id;
	d->ctx = ctx;
	return d;
}

void ev_decoder_free(struct ev_decoder *d)
{
	if (!d)
		return;
	for (int i = 0; i < NF; i++)
		free(d->strbuf[i]);
	free(d->classes);
	free(d->streams);
	ng_u64map_free(&d->class_map);
	ng_u64map_free(&d->stream_map);
	free(d);
}

uint64_t ev_bad_values(const struct ev_decoder *d)
{
	return d->bad_values;
}

void ev_bad_streams(const struct ev_decoder *d,
		    void (*fn)(void *ctx, const char *stream, uint64_t n, const char *first),
		    void *ctx)
{
	for (int i = 0; i < d->nstreams; i++) {
		const struct streaminfo *si = &d->streams[i];

		if (si->bad)
			fn(ctx, bt_stream_get_name(si->stream), si->bad, si->first_bad);
	}
}
