/*
 * Decoding: an event class resolved once to the member indexes of its
 * fields (struct evclass), a stream's host, process and clock offset
 * learnt once (struct streaminfo), then per event a few borrows by index.
 * The events, their fields and what each is read as into which record
 * member are common/events.def's; what the values may be together is
 * plausible.c's.
 */
#include <babeltrace2/babeltrace.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "plausible.h"
#include "u64map.h"

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

/* What a field is read as (events.def's DECODE column). */
enum how { HOW_SKIP, HOW_RAW, HOW_FLAG, HOW_TEXT, HOW_TIME, HOW_IN, HOW_KEEP };

/* The ranges of in() and keep(): [lo, hi], the default an implausible
 * value is replaced with, and the value of a field an older tracer's
 * event lacks. */
#define RANGES(X) \
	X(rank, -1, EV_NRANKS_MAX - 1, -1, 0)	/* a rank of a communicator */ \
	X(peer, -1, EV_NRANKS_MAX - 1, -1, -1)	/* a root or peer, -1 if none */ \
	X(nranks, 0, EV_NRANKS_MAX, 0, 0) \
	X(seq, 0, (int64_t)EV_SEQ_MAX, 0, 0) \
	X(ns, 0, EV_TS_MAX, 0, 0)		/* a duration */ \
	X(pos, 0, INT32_MAX, 0, 0)		/* a pid, a version code */ \
	X(node, -1, INT32_MAX, -1, -1)		/* a NUMA node, -1 if unknown */ \
	X(bit, 0, 1, 0, 0) \
	X(type, -1, INT32_MAX, -1, 0)		/* an ncclDataType_t, -1 if none */ \
	X(chans, 0, 255, 0, 0)			/* NCCL's channels */
#define X(name, lo, hi, dflt, absent) R_##name,
enum { RANGES(X) };
#undef X
#define X(name, lo, hi, dflt, absent) { lo, hi, dflt, absent },
static const struct { int64_t lo, hi, dflt, absent; } ranges[] = { RANGES(X) };
#undef X

/* How a decoded value is stored, by its record member's type. */
enum store { ST_U64, ST_I64, ST_INT, ST_STR };
#define STORE_OF(lv) _Generic((lv), uint64_t: ST_U64, int64_t: ST_I64, int: ST_INT, \
			      const char *: ST_STR)

/* A field of an event as events.def has it, and where its value goes:
 * the member at `off` of struct ev_event. */
struct row {
	const char *field;
	enum how how;
	int range;
	enum store store;
	size_t off;
};
/* A text() row goes into a string member, any other into an integer:
 * else the array's size is -1 and the build fails. */
#define ROW(h, rg, m) .how = h, .range = rg, .off = offsetof(struct ev_event, r.m), \
	.store = STORE_OF(((struct ev_event *)0)->r.m) + 0 * sizeof(char[ \
		((h) == HOW_TEXT) == (STORE_OF(((struct ev_event *)0)->r.m) == ST_STR) ? 1 : -1])
#define DEC_raw(m) ROW(HOW_RAW, 0, m)
#define DEC_flag(m) ROW(HOW_FLAG, 0, m)
#define DEC_text(m) ROW(HOW_TEXT, 0, m)
#define DEC_time(m) ROW(HOW_TIME, 0, m)
#define DEC_in(rg, m) ROW(HOW_IN, R_##rg, m)
#define DEC_keep(rg, m) ROW(HOW_KEEP, R_##rg, m)
#define DEC_skip .how = HOW_SKIP
#define NG_EV_F(kind, ctype, name, dec) { .field = #name, DEC_##dec },

/* Fields an event may have (process_info has the most). */
#define ROWS_MAX 24
#define NROWS(rows) ((int)(sizeof(rows) / sizeof(struct row)))

/* rows_<event or layout>: its fields, in events.def's order. */
#define ROWS(name, ...) \
	static const struct row rows_##name[] = { __VA_ARGS__ }; \
	_Static_assert(NROWS(rows_##name) <= ROWS_MAX, "ROWS_MAX");
#define NG_EV(name, fields) ROWS(name, fields)
#define NG_EV_CLASS(layout, fields) ROWS(layout, fields)
#include "events.def"

/* The record each event is read into, so that members no field of the
 * event fills start as 0 or "". */
enum rec {
	REC_PROC, REC_INIT, REC_COLL, REC_ALGO, REC_MISC, REC_HW, REC_FP, REC_HB, REC_CENSUS,
	REC_NONE, NRECS
};

/* Each event's kind (events.h) and record. */
#define OF_process_info		EV_PROC, REC_PROC
#define OF_comm_init_begin	EV_INIT_BEGIN, REC_INIT
#define OF_comm_init_end	EV_INIT_END, REC_INIT
#define OF_comm_end		EV_COMM_END, REC_MISC
#define OF_coll_enqueue		EV_ENQ, REC_COLL
#define OF_coll_complete	EV_DONE, REC_COLL
#define OF_coll_algo		EV_ALGO, REC_ALGO
#define OF_timeout		EV_TIMEOUT, REC_MISC
#define OF_policy		EV_POLICY, REC_MISC
#define OF_inject		EV_INJECT, REC_MISC
#define OF_callsite		EV_CALLSITE, REC_NONE
#define OF_hw_device		EV_HW_DEVICE, REC_HW
#define OF_hw_change		EV_HW_CHANGE, REC_HW
#define OF_hw_sample		EV_HW_SAMPLE, REC_HW
#define OF_fingerprint		EV_FPRINT, REC_FP
#define OF_heartbeat		EV_HEARTBEAT, REC_HB
#define OF_api_census		EV_CENSUS, REC_CENSUS
#define OF_comm_state		EV_COMM_STATE, REC_MISC
#define OF_signal_wait		EV_OTHER, REC_NONE	/* not read: for a trace's reader */

static const struct evdef {
	const char *name;
	const struct row *rows;
	int nrows;
	enum ev_kind kind;
	enum rec rec;
} evdefs[] = {
#define NG_EV(name, fields) { "ncclguard:" #name, rows_##name, NROWS(rows_##name), OF_##name },
#define NG_EV_OF(name, layout) \
	{ "ncclguard:" #name, rows_##layout, NROWS(rows_##layout), OF_##name },
#include "events.def"
};
#undef NG_EV_F
#define NDEFS ((int)(sizeof(evdefs) / sizeof(evdefs[0])))

struct evclass {
	const bt_event_class *ec;
	enum ev_kind kind;
	int def;		/* its evdefs[] entry, -1 if none of ours */
	int idx[ROWS_MAX];	/* payload member index of each row, -1 if absent */
	int job_idx, job_id_idx;	/* and of `job`, `job_id` */
	int vpid_idx;		/* in the common context, -1 if absent */
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
	struct ev_checks chk;	/* plausible.c's: the current stream, seqs, comms */
	/* cut copies of over-long strings: a row's, and job_id's */
	char *strbuf[NDEFS][ROWS_MAX], *job_id_buf;
	/* Each event's rows read, in the order of its record's members:
	 * which of an event's implausible values is named first stays
	 * what it was when each record was filled member by member. */
	uint8_t order[NDEFS][ROWS_MAX], nread[NDEFS];
	struct ev_event blank[NRECS];	/* each record's members 0 or "" */
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
	for (k = 0; k < ROWS_MAX; k++)
		cls->idx[k] = -1;
	cls->job_idx = cls->job_id_idx = cls->vpid_idx = -1;
	cls->kind = EV_OTHER;
	cls->def = -1;
	for (k = 0; name && k < NDEFS; k++)
		if (!strcmp(name, evdefs[k].name)) {
			cls->kind = evdefs[k].kind;
			cls->def = k;
		}
	if (cls->def >= 0 && payload &&
	    bt_field_class_get_type(payload) == BT_FIELD_CLASS_TYPE_STRUCTURE) {
		const struct evdef *def = &evdefs[cls->def];

		n = bt_field_class_structure_get_member_count(payload);
		for (i = 0; i < n; i++) {
			const char *m = bt_field_class_structure_member_get_name(
				bt_field_class_structure_borrow_member_by_index_const(payload, i));

			for (k = 0; k < def->nrows; k++)
				if (!strcmp(m, def->rows[k].field))
					cls->idx[k] = (int)i;
			if (!strcmp(m, "job"))
				cls->job_idx = (int)i;
			if (!strcmp(m, "job_id"))
				cls->job_id_idx = (int)i;
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

/* The integer of payload member idx; 0 if absent (idx -1). */
static int64_t fi(const bt_field *payload, int idx)
{
	if (idx < 0)
		return 0;
	return int_of(bt_field_structure_borrow_member_field_by_index_const(payload, idx));
}

static void bad_value(struct ev_decoder *d, const char *name, int64_t v)
{
	ev_bad(&d->chk, EV_WHY_RANGE, "%s %lld", name, (long long)v);
}

/* Row w's integer if within its range; else the range's default,
 * counted (and *bad set, where the event is to be dropped). */
static int64_t fi_in(struct ev_decoder *d, const bt_field *p, int idx, const struct row *w,
		     int *bad)
{
	int64_t v;

	if (idx < 0)
		return ranges[w->range].absent;
	v = fi(p, idx);
	if (v >= ranges[w->range].lo && v <= ranges[w->range].hi)
		return v;
	bad_value(d, w->field, v);
	if (w->how == HOW_IN)
		*bad = 1;
	return ranges[w->range].dflt;
}

/* A time field on the trace's clock: 0 when absent; a raw value or a sum
 * past EV_TS_MAX is corrupt and would overflow the differences taken of
 * it later. */
static int64_t ft(struct ev_decoder *d, const bt_field *p, int idx, const char *name, int *bad)
{
	int64_t v = fi(p, idx), off = d->chk.cur->offset_ns;

	if (!v)
		return 0;
	if (v < 0 || v > EV_TS_MAX || v > EV_TS_MAX - off) {
		ev_bad(&d->chk, EV_WHY_TIME, "%s %lld", name, (long long)v);
		*bad = 1;
		return 0;
	}
	return v + off;
}

/* The string of payload member idx ("" if absent), named `name`; one
 * over-long is cut into *buf. */
static const char *fs(struct ev_decoder *d, const bt_field *payload, int idx, const char *name,
		      char **buf)
{
	const bt_field *f;
	const char *v;

	if (idx < 0)
		return "";
	f = bt_field_structure_borrow_member_field_by_index_const(payload, idx);
	if (bt_field_get_class_type(f) != BT_FIELD_CLASS_TYPE_STRING)
		return "";
	v = bt_field_string_get_value(f);
	/* An empty string is its length, 0: babeltrace2 2.0's live source
	 * reuses a field whose buffer still holds an earlier event's text. */
	if (!v || !bt_field_string_get_length(f))
		return "";
	/* The shim writes no control character but tabs and newlines: one
	 * is a flipped bit, and the string is not shown. */
	for (const unsigned char *c = (const unsigned char *)v; *c; c++)
		if ((*c < 0x20 && *c != '\t' && *c != '\n') || *c == 0x7f) {
			ev_bad(&d->chk, EV_WHY_STRING, "%s byte 0x%02x", name, *c);
			return "";
		}
	if (strnlen(v, STR_MAX + 1) <= STR_MAX)
		return v;
	bad_value(d, name, (int64_t)strlen(v));
	if (!*buf && !(*buf = malloc(STR_MAX + 1)))
		return "";
	memcpy(*buf, v, STR_MAX);
	(*buf)[STR_MAX] = '\0';
	return *buf;
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
	d->chk.cur = &d->streams[sidx];
	ev->kind = c->kind;
	ev->src.host = d->chk.cur->host;
	ev->src.vpid = d->chk.cur->env_vpid;
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
		ev_bad(&d->chk, EV_WHY_TIME, "time %lld", (long long)ev->src.ts);
		return 0;
	}
	d->chk.cur_idx = sidx;
	if (d->chk.cur->first_ts < 0)
		d->chk.cur->first_ts = ev->src.ts;
	p = bt_event_borrow_payload_field_const(e);
	if (!p)
		return 0;
	ev->src.job = (uint64_t)fi(p, c->job_idx);
	ev->job_id = c->kind == EV_PROC || c->kind == EV_HEARTBEAT ? fs(d, p, c->job_id_idx, "job_id", &d->job_id_buf) : "";
	ev->payload_ = p;
	ev->class_ = c;
	return 1;
}

/* Row w's value into its member of ev. */
static void store(struct ev_event *ev, const struct row *w, int64_t v, const char *str)
{
	char *at = (char *)ev + w->off;

	switch (w->store) {
	case ST_U64:
		*(uint64_t *)at = (uint64_t)v;
		break;
	case ST_I64:
		*(int64_t *)at = v;
		break;
	case ST_INT:
		*(int *)at = (int)v;
		break;
	case ST_STR:
		*(const char **)at = str;
		break;
	}
}

/* The event's fields into its record, each as events.def says.  Every
 * value that sizes, indexes or is subtracted is bounded here: an event
 * with one out of range is dropped (*bad set, counted against its
 * stream), one merely shown is clamped. */
static void read_rows(struct ev_decoder *d, const bt_field *p, const struct evclass *c,
		      struct ev_event *ev, int *bad)
{
	const struct evdef *def = &evdefs[c->def];

	ev->r = d->blank[def->rec].r;
	for (int i = 0; i < d->nread[c->def]; i++) {
		int k = d->order[c->def][i], idx = c->idx[k];
		const struct row *w = &def->rows[k];
		const char *str = NULL;
		int64_t v = 0;

		switch (w->how) {
		case HOW_RAW:
			v = fi(p, idx);
			break;
		case HOW_FLAG:
			v = fi(p, idx) != 0;
			break;
		case HOW_TEXT:
			str = fs(d, p, idx, w->field, &d->strbuf[c->def][k]);
			break;
		case HOW_TIME:
			v = ft(d, p, idx, w->field, bad);
			break;
		case HOW_IN:
		case HOW_KEEP:
			v = fi_in(d, p, idx, w, bad);
			break;
		case HOW_SKIP:
			continue;
		}
		store(ev, w, v, str);
	}
}

int ev_body(struct ev_decoder *d, struct ev_event *ev)
{
	const bt_field *p = ev->payload_;
	const struct evclass *c = ev->class_;
	int bad = 0;

	read_rows(d, p, c, ev, &bad);
	if (ev->kind == EV_INIT_BEGIN || ev->kind == EV_INIT_END) {
		ev->r.init.end = ev->kind == EV_INIT_END;
		ev->r.init.plugin = !strcmp(ev->r.init.kind, "plugin");
		ev->r.init.local_ident = !strcmp(ev->r.init.ident, "local");
	}
	if (!ev_plausible(&d->chk, ev, bad))
		return 0;
	if (ev->kind == EV_ENQ && !ev->r.coll.enter_ns)
		ev->r.coll.enter_ns = ev->src.ts;
	return !bad;
}

/* ---- the decoder ------------------------------------------------------ */

/* d->order and d->nread: each event's rows read, by member offset. */
static void order_rows(struct ev_decoder *d)
{
	for (int e = 0; e < NDEFS; e++) {
		const struct evdef *def = &evdefs[e];
		uint8_t *o = d->order[e];
		int n = 0;

		for (int k = 0; k < def->nrows; k++) {
			int at;

			if (def->rows[k].how == HOW_SKIP)
				continue;
			for (at = n++; at > 0 && def->rows[o[at - 1]].off > def->rows[k].off; at--)
				o[at] = o[at - 1];
			o[at] = (uint8_t)k;
		}
		d->nread[e] = (uint8_t)n;
	}
}

/* d->blank: each record with its string members "", from the text rows
 * of every event read into it. */
static void blank_records(struct ev_decoder *d)
{
	for (int e = 0; e < NDEFS; e++)
		for (int k = 0; k < evdefs[e].nrows; k++)
			if (evdefs[e].rows[k].how == HOW_TEXT)
				store(&d->blank[evdefs[e].rec], &evdefs[e].rows[k], 0, "");
}

struct ev_decoder *ev_decoder_new(int (*host_id)(void *ctx, const char *hostname), void *ctx)
{
	struct ev_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->host_id = host_id;
	d->ctx = ctx;
	order_rows(d);
	blank_records(d);
	return d;
}

void ev_decoder_free(struct ev_decoder *d)
{
	if (!d)
		return;
	for (int e = 0; e < NDEFS; e++)
		for (int k = 0; k < ROWS_MAX; k++)
			free(d->strbuf[e][k]);
	free(d->job_id_buf);
	free(d->classes);
	free(d->streams);
	ev_checks_free(&d->chk);
	ng_u64map_free(&d->class_map);
	ng_u64map_free(&d->stream_map);
	free(d);
}

uint64_t ev_bad_values(const struct ev_decoder *d)
{
	return d->chk.bad_values;
}

void ev_late_event(struct ev_decoder *d, const struct bt_message *m)
{
	const bt_event *e = bt_message_event_borrow_event_const(m);
	int sidx = stream_index(d, bt_event_borrow_stream_const(e));

	d->chk.cur = sidx >= 0 ? &d->streams[sidx] : NULL;
	ev_bad(&d->chk, EV_WHY_TIME, "time before its stream's last");
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

