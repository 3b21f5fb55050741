/*
 * Decoding: an event class resolved once to the member indexes of the
 * fields we read (struct evclass), a stream's host, process and clock
 * offset learnt once (struct streaminfo), then per event a few borrows by
 * index.  Field names are those of tracer/tp_api.h.
 */
#include <babeltrace2/babeltrace.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "u64map.h"

/* The ops an event may name (nccl_api.def's): a call's (coll or p2p),
 * with whether its count is per rank (bytes are then count x type size
 * x nranks), and the others a timeout or an injection may name. */
#define NCCL_HOOK(ret, fail, name, op, params, args) { #op, 0, 0 },
#define NCCL_COLL(name, op, params, args, count, dtype, root, comm, stream, per_rank, ...) \
	{ #op, 1, per_rank },
#define NCCL_P2P(name, op, params, args, ...) { #op, 1, 0 },
static const struct { const char *op; int call, per_rank; } known_ops[] = {
#include "nccl_api.def"
};
#define NOPS ((int)(sizeof(known_ops) / sizeof(known_ops[0])))

/* Bytes of an element by ncclDataType_t, as the shim computes them;
 * types past the table are NCCL's newer ones, whose bytes the shim
 * writes as 0. */
static const uint8_t type_size[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
#define NTYPES ((int64_t)(sizeof(type_size) / sizeof(type_size[0])))
#define TYPE_MAX 64		/* past this, not an ncclDataType_t */

/* NCCL's algorithm and protocol names as the shim writes them ("" and
 * "other" for ones it does not know). */
static const char *const algo_names[] = {
	"", "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT",
	"other",
};
static const char *const proto_names[] = { "", "LL", "LL128", "SIMPLE", "other" };

/* Why an event was implausible, as incomplete[] counts them. */
static const char *const why_names[EV_NWHY] = {
	[EV_WHY_RANGE] = "a value out of range",
	[EV_WHY_OP] = "an unknown op",
	[EV_WHY_TYPE] = "an unknown data type",
	[EV_WHY_SIZE] = "a size its count and type cannot make",
	[EV_WHY_SEQ] = "a seq out of order",
	[EV_WHY_TIME] = "a time out of order",
	[EV_WHY_RANK] = "a rank outside its communicator",
	[EV_WHY_STRING] = "a string not printable",
	[EV_WHY_COMM] = "a comm hash a few bits from another's",
};

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
	int64_t first_ts;	/* its first event's time; -1 before */
	uint64_t bad;		/* events dropped or clamped: implausible */
	uint64_t why[EV_NWHY];	/* of them, by kind */
	char first_bad[64];	/* the first such value */
};

/* A process's seqs of one comm and kind in one stream: they only grow. */
struct seqtrack {
	uint64_t comm, last, prev;
	int64_t vpid, last_ts;
	int stream, kind, n;	/* n: seqs taken (up to 2) */
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
	int cur_idx;
	struct ng_u64map seq_map;
	struct seqtrack *seqs;
	int nseqs;
	/* comm hashes met, and their events: index into comms */
	struct ng_u64map comm_map;
	struct { uint64_t hash, n; } *comms;
	int ncomms;
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
	si->first_ts = -1;
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
			si->why[EV_WHY_RANGE]++;
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

/* An event's implausible value: counted against its stream, by kind. */
static void bad_why(struct ev_decoder *d, enum ev_why why, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void bad_why(struct ev_decoder *d, enum ev_why why, const char *fmt, ...)
{
	struct streaminfo *si = d->cur;
	va_list ap;

	d->bad_values++;
	if (!si)
		return;
	si->why[why]++;
	if (!si->bad++) {
		va_start(ap, fmt);
		vsnprintf(si->first_bad, sizeof(si->first_bad), fmt, ap);
		va_end(ap);
	}
}

static void bad_value(struct ev_decoder *d, enum field k, int64_t v)
{
	bad_why(d, EV_WHY_RANGE, "%s %lld", field_names[k], (long long)v);
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
		bad_why(d, EV_WHY_TIME, "%s %lld", field_names[k], (long long)v);
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
	/* The shim writes no control character but tabs and newlines: one
	 * is a flipped bit, and the string is not shown. */
	for (const unsigned char *c = (const unsigned char *)v; *c; c++)
		if ((*c < 0x20 && *c != '\t' && *c != '\n') || *c == 0x7f) {
			bad_why(d, EV_WHY_STRING, "%s byte 0x%02x", field_names[k], *c);
			return "";
		}
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
		bad_why(d, EV_WHY_TIME, "time %lld", (long long)ev->src.ts);
		return 0;
	}
	d->cur_idx = sidx;
	if (d->cur->first_ts < 0)
		d->cur->first_ts = ev->src.ts;
	p = bt_event_borrow_payload_field_const(e);
	if (!p)
		return 0;
	ev->src.job = (uint64_t)fi(p, c, F_job);
	ev->job_id = c->kind == EV_PROC ? fs(d, p, c, F_job_id) : "";
	ev->payload_ = p;
	ev->class_ = c;
	return 1;
}

/* ---- plausibility ----------------------------------------------------- */

/* What a call can carry: its bytes (a GPU's memory many times over), and
 * how far a seq can run ahead of the stream's previous one (a call takes
 * more than SEQ_NS_PER_CALL; SEQ_SLACK covers clock steps). */
#define BYTES_MAX	(UINT64_C(1) << 44)
#define SEQ_NS_PER_CALL	50
#define SEQ_SLACK	4096
/* A call's own times lie between its stream's start (less a long hang)
 * and its event (plus the GPU clock's mapping error). */
#define TIME_BEFORE_NS	(INT64_C(3600) * 1000000000)
#define TIME_AFTER_NS	(INT64_C(10) * 1000000000)

static int op_index(const char *op, int call)
{
	for (int i = 0; i < NOPS; i++)
		if ((known_ops[i].call || !call) && !strcmp(known_ops[i].op, op))
			return i;
	return -1;
}

/* A named op must be one the shim names (call: a call's).  The name is
 * shown with what is not printable ASCII as '?': it is a damaged one. */
static int op_ok(struct ev_decoder *d, const char *op, int call)
{
	char shown[24];
	size_t i;

	if (strcmp(op, "-") && op_index(op, call) >= 0)
		return 1;
	for (i = 0; op[i] && i < sizeof(shown) - 1; i++)
		shown[i] = op[i] >= 0x20 && op[i] < 0x7f ? op[i] : '?';
	shown[i] = '\0';
	bad_why(d, EV_WHY_OP, "op \"%s\"", shown);
	return 0;
}

/* An enqueue's count, type and bytes: what the shim computed of them. */
static int size_ok(struct ev_decoder *d, const struct ev_rec_coll *c)
{
	int i = op_index(c->op, 1);
	uint64_t want;

	if (c->bytes > BYTES_MAX) {
		bad_why(d, EV_WHY_SIZE, "bytes %llu", (unsigned long long)c->bytes);
		return 0;
	}
	if (c->datatype == -1)
		return 1;	/* none recorded */
	if (c->datatype < 0 || c->datatype >= TYPE_MAX) {
		bad_why(d, EV_WHY_TYPE, "datatype %lld", (long long)c->datatype);
		return 0;
	}
	if (c->datatype >= NTYPES)
		return c->bytes == 0 || (bad_why(d, EV_WHY_SIZE, "bytes %llu",
						 (unsigned long long)c->bytes), 0);
	if (__builtin_mul_overflow(c->count, (uint64_t)type_size[c->datatype], &want) ||
	    (i >= 0 && known_ops[i].per_rank && c->nranks > 0 &&
	     __builtin_mul_overflow(want, (uint64_t)c->nranks, &want)) ||
	    want != c->bytes) {
		bad_why(d, EV_WHY_SIZE, "count %llu bytes %llu", (unsigned long long)c->count,
			(unsigned long long)c->bytes);
		return 0;
	}
	return 1;
}

/* A rank, root or peer of a communicator of nranks (0: not said). */
static int rank_ok(struct ev_decoder *d, int64_t rank, int64_t nranks)
{
	if (!nranks || rank < nranks)
		return 1;
	bad_why(d, EV_WHY_RANK, "rank %lld of %lld", (long long)rank, (long long)nranks);
	return 0;
}

/* A call's own time t (0: absent) within what its event allows. */
static int time_ok(struct ev_decoder *d, const struct ev_event *ev, int64_t t, const char *what)
{
	int64_t lo = d->cur->first_ts - TIME_BEFORE_NS;

	if (!t || (t >= lo && t <= ev->src.ts + TIME_AFTER_NS))
		return 1;
	bad_why(d, EV_WHY_TIME, "%s %lld ns from its event", what,
		(long long)(t - ev->src.ts));
	return 0;
}

/* The times of a call, in order. */
static int times_ok(struct ev_decoder *d, const struct ev_event *ev)
{
	const struct ev_rec_coll *c = &ev->r.coll;

	if (!time_ok(d, ev, c->enter_ns, "enter_ns") || !time_ok(d, ev, c->exit_ns, "exit_ns") ||
	    !time_ok(d, ev, c->gpu_start_ns, "gpu_start_ns") ||
	    !time_ok(d, ev, c->gpu_end_ns, "gpu_end_ns"))
		return 0;
	if ((c->exit_ns && c->enter_ns > c->exit_ns) ||
	    (c->gpu_end_ns && c->gpu_start_ns > c->gpu_end_ns)) {
		bad_why(d, EV_WHY_TIME, "%s after its end", c->exit_ns && c->enter_ns > c->exit_ns ?
			"enter_ns" : "gpu_start_ns");
		return 0;
	}
	return 1;
}

static struct seqtrack *seq_track(struct ev_decoder *d, uint64_t comm, int64_t vpid, int kind)
{
	uint64_t key = comm ^ ((uint64_t)vpid * UINT64_C(0x9e3779b97f4a7c15)) ^
		((uint64_t)d->cur_idx << 40) ^ (uint64_t)kind;
	int i = ng_u64map_get(&d->seq_map, key);
	struct seqtrack *t, *grown;

	if (i >= 0) {
		t = &d->seqs[i];
		/* another's key: not tracked rather than mixed */
		return t->comm == comm && t->vpid == vpid && t->stream == d->cur_idx &&
			t->kind == kind ? t : NULL;
	}
	grown = realloc(d->seqs, (size_t)(d->nseqs + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	d->seqs = grown;
	if (ng_u64map_put(&d->seq_map, key, d->nseqs))
		return NULL;
	t = &d->seqs[d->nseqs++];
	*t = (struct seqtrack){ .comm = comm, .vpid = vpid, .stream = d->cur_idx, .kind = kind };
	return t;
}

/* A process's enqueues of a comm come in seq order in each stream, and
 * no faster than calls can be made; its completions may come out of
 * order (a group's), but none runs that far ahead.  An enqueue ahead of
 * its neighbours is known only by the next: counted then, as the event
 * already went to the reader. */
static int seq_ok(struct ev_decoder *d, const struct ev_event *ev)
{
	const struct ev_rec_coll *c = &ev->r.coll;
	int p2p = !c->seq, done = ev->kind == EV_DONE;
	uint64_t seq = p2p ? c->p2p_seq : c->seq, room;
	struct seqtrack *t;

	if (!seq)
		return 1;
	t = seq_track(d, c->comm_hash, ev->src.vpid, p2p + 2 * done);
	if (!t)
		return 1;
	if (t->n && seq > t->last) {
		room = ev->src.ts > t->last_ts ?
			(uint64_t)(ev->src.ts - t->last_ts) / SEQ_NS_PER_CALL : 0;
		if (seq - t->last > room + SEQ_SLACK) {
			bad_why(d, EV_WHY_SEQ, "seq %llu after %llu", (unsigned long long)seq,
				(unsigned long long)t->last);
			return 0;
		}
	} else if (t->n && done) {
		return 1;
	} else if (t->n) {
		if (t->n < 2 || seq <= t->prev) {
			bad_why(d, EV_WHY_SEQ, "seq %llu after %llu", (unsigned long long)seq,
				(unsigned long long)t->last);
			return 0;
		}
		bad_why(d, EV_WHY_SEQ, "seq %llu between %llu and %llu",
			(unsigned long long)t->last, (unsigned long long)t->prev,
			(unsigned long long)seq);
		t->last = t->prev;
	}
	t->prev = t->last;
	t->last = seq;
	t->last_ts = ev->src.ts;
	if (t->n < 2)
		t->n++;
	return 1;
}

/* Comm hashes are random 64-bit values: one a few bits from a known
 * comm's (with more than one event) is that comm's with flipped bits. */
#define COMM_NEAR_BITS	3

static int comm_ok(struct ev_decoder *d, uint64_t hash)
{
	int i = ng_u64map_get(&d->comm_map, hash);
	void *grown;

	if (i >= 0) {
		d->comms[i].n++;
		return 1;
	}
	for (i = 0; i < d->ncomms; i++)
		if (d->comms[i].n > 1 &&
		    __builtin_popcountll(d->comms[i].hash ^ hash) <= COMM_NEAR_BITS) {
			bad_why(d, EV_WHY_COMM, "comm_hash %016llx", (unsigned long long)hash);
			return 0;
		}
	grown = realloc(d->comms, (size_t)(d->ncomms + 1) * sizeof(*d->comms));
	if (!grown)
		return 1;	/* unchecked rather than failed */
	d->comms = grown;
	if (ng_u64map_put(&d->comm_map, hash, d->ncomms))
		return 1;
	d->comms[d->ncomms].hash = hash;
	d->comms[d->ncomms++].n = 1;
	return 1;
}

static int name_in(const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return 1;
	return 0;
}

/* NCCL's choice for a call: names it has, a size a call can carry. */
static int algo_ok(struct ev_decoder *d, const struct ev_rec_algo *a)
{
	if (!op_ok(d, a->op, 1) || !comm_ok(d, a->comm_hash))
		return 0;
	if (!name_in(a->algo, algo_names, sizeof(algo_names) / sizeof(algo_names[0])) ||
	    !name_in(a->proto, proto_names, sizeof(proto_names) / sizeof(proto_names[0]))) {
		bad_why(d, EV_WHY_STRING, "algo or proto of %.8s/%.8s", a->algo, a->proto);
		return 0;
	}
	if (a->bytes > BYTES_MAX) {
		bad_why(d, EV_WHY_SIZE, "bytes %llu", (unsigned long long)a->bytes);
		return 0;
	}
	return 1;
}

/* A call event's values together: what a call can carry, in order. */
static int call_ok(struct ev_decoder *d, const struct ev_event *ev)
{
	const struct ev_rec_coll *c = &ev->r.coll;

	if (!op_ok(d, c->op, 1) || !comm_ok(d, c->comm_hash))
		return 0;
	if (ev->kind == EV_ENQ ? !size_ok(d, c) : c->bytes > BYTES_MAX) {
		if (ev->kind != EV_ENQ)
			bad_why(d, EV_WHY_SIZE, "bytes %llu", (unsigned long long)c->bytes);
		return 0;
	}
	return rank_ok(d, c->root_or_peer, c->nranks) && times_ok(d, ev) && seq_ok(d, ev);
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
		if (!rank_ok(d, ev->r.proc.rank, ev->r.proc.world_size))
			return 0;
		/* the process names itself: its pid is its events' vpid */
		if (ev->src.vpid > 0 && ev->r.proc.pid && ev->r.proc.pid != ev->src.vpid) {
			bad_why(d, EV_WHY_RANGE, "pid %lld of process %lld",
				(long long)ev->r.proc.pid, (long long)ev->src.vpid);
			ev->r.proc.pid = ev->src.vpid;
		}
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
		if (!bad && (!rank_ok(d, ev->r.init.rank, ev->r.init.nranks) ||
			     !comm_ok(d, ev->r.init.comm_hash)))
			return 0;
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
		if (!bad && !algo_ok(d, &ev->r.algo))
			return 0;
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
		if (!bad && !call_ok(d, ev))
			return 0;
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
		/* a timeout or an injection names the call's op, or what the
		 * watchdog's probe knows of it */
		if (!bad && (ev->kind == EV_TIMEOUT || ev->kind == EV_INJECT) &&
		    ((*ev->r.misc.op && strcmp(ev->r.misc.op, "collective") &&
		      strcmp(ev->r.misc.op, "unknown") && !op_ok(d, ev->r.misc.op, 0)) ||
		     (ev->r.misc.comm_hash && !comm_ok(d, ev->r.misc.comm_hash))))
			return 0;
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
	free(d->seqs);
	ng_u64map_free(&d->seq_map);
	free(d->comms);
	ng_u64map_free(&d->comm_map);
	ng_u64map_free(&d->class_map);
	ng_u64map_free(&d->stream_map);
	free(d);
}

uint64_t ev_bad_values(const struct ev_decoder *d)
{
	return d->bad_values;
}

void ev_late_event(struct ev_decoder *d, const struct bt_message *m)
{
	const bt_event *e = bt_message_event_borrow_event_const(m);
	int sidx = stream_index(d, bt_event_borrow_stream_const(e));

	d->cur = sidx >= 0 ? &d->streams[sidx] : NULL;
	bad_why(d, EV_WHY_TIME, "time before its stream's last");
}

void ev_bad_streams(const struct ev_decoder *d,
		    void (*fn)(void *ctx, const char *stream, uint64_t n, const char *what),
		    void *ctx)
{
	for (int i = 0; i < d->nstreams; i++) {
		const struct streaminfo *si = &d->streams[i];
		char what[512];
		size_t at = 0;

		if (!si->bad)
			continue;
		for (int k = 0; k < EV_NWHY && at < sizeof(what); k++)
			if (si->why[k])
				at += (size_t)snprintf(what + at, sizeof(what) - at, "%s%llu %s",
						       at ? ", " : "",
						       (unsigned long long)si->why[k],
						       why_names[k]);
		if (at < sizeof(what))
			snprintf(what + at, sizeof(what) - at, "; the first: %s", si->first_bad);
		fn(ctx, bt_stream_get_name(si->stream), si->bad, what);
	}
}
