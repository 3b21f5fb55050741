/*
 * The ncclguard events of a babeltrace2 message stream, as records.
 *
 * One decoder serves every reader of our traces: the analyzer
 * (analyze/read/read.c, traces on disk through src.ctf.fs) and `ncclguard
 * watch` (live/, an lttng-relayd's live sessions through
 * src.ctf.lttng-live).  Each event class is resolved once to member
 * indexes (a lookup by name would cost a string compare per field per
 * event); every value that sizes, indexes or is subtracted is bounded
 * here, so a corrupt trace reaches no reader's arithmetic.  Nothing of
 * the trace is kept beyond per-class and per-stream caches.
 *
 *   d = ev_decoder_new(host_id, ctx);
 *   per message: stream beginning -> ev_stream(); event -> ev_head(), and
 *   for an event the reader keeps, ev_body() (records valid until the
 *   next call);  ev_decoder_free(d).
 */
#ifndef NCCLGUARD_EVENTS_H
#define NCCLGUARD_EVENTS_H

#include <stdint.h>

/* babeltrace2's types, without its headers in every reader's files. */
struct bt_message;
struct bt_stream;

/* What a trace may say, past which a value is corrupt (a bit flip, a
 * torn write) and its event or field is dropped and counted. */
#define EV_NRANKS_MAX	(1 << 20)		/* ranks of a communicator */
#define EV_SEQ_MAX	(UINT64_C(1) << 48)	/* a call's seq or p2p seq */
#define EV_TS_MAX	(INT64_C(1) << 62)	/* ns: times and durations */

/* Why a value or an event was implausible (counted by kind). */
enum ev_why {
	EV_WHY_RANGE, EV_WHY_OP, EV_WHY_TYPE, EV_WHY_SIZE, EV_WHY_SEQ, EV_WHY_TIME,
	EV_WHY_RANK, EV_WHY_STRING, EV_WHY_COMM, EV_NWHY,
};

/* Where an event came from: a process is (host, vpid). */
struct ev_src {
	int host;		/* the reader's id of the trace's env.hostname */
	int64_t vpid;
	int64_t ts;		/* event time, ns from the clock origin */
	uint64_t job;		/* the event's job tag (common/job.h); 0: none or an
				 * older tracer */
};

struct ev_rec_proc {
	const char *host, *nccl_path, *gpu_pci_bus_id, *cpu_affinity;
	const char *socket_ifname, *env, *policy_digest, *rank_source;
	int64_t pid, rank, local_rank, world_size, nccl_version;
	int64_t cudart_version, driver_version, numa_node;
	int64_t timing_off;	/* NCCLGUARD_TIMING=0 (0 too from older tracers) */
	uint64_t verify_every;	/* outputs of every Nth call per comm verified;
				 * 0: off, or an older tracer */
};

struct ev_rec_init {
	uint64_t comm_hash, parent_hash;
	int64_t nranks, rank, result;
	const char *kind;	/* initrank, split, ..., plugin */
	const char *ident;	/* grow: "nccl" or "local"; else "" */
	int local_ident;	/* a grown comm named by the shim's own rule (ident "local") */
	int end;		/* comm_init_end (else comm_init_begin) */
	int plugin;		/* made by the shim's profiler plugin (kind "plugin") */
};

struct ev_rec_coll {		/* coll_enqueue and coll_complete */
	uint64_t comm_hash, seq, p2p_seq, count, bytes, stream;
	const char *op;
	int64_t datatype, root_or_peer, result, nranks;
	int64_t enter_ns, exit_ns;			/* enqueue; enter_ns
							 * the event's time if absent */
	int enter_coarse;		/* enter_ns is the shim's coarse time (not sampled) */
	int64_t gpu_start_ns, gpu_end_ns, duration_ns;	/* complete */
};

struct ev_rec_algo {		/* coll_algo: what NCCL chose */
	uint64_t comm_hash, seq, op_seq, bytes;
	const char *op, *algo, *proto;
	int64_t nchannels, nranks;
	int plugin_only;
};

struct ev_rec_misc {		/* timeout, policy, inject, comm_end, comm_state */
	uint64_t comm_hash, seq, waited_ns;
	const char *op, *kind, *action, *what, *detail;
	const char *key, *user_value, *effective_value;
	int64_t result;
};

struct ev_rec_hw {		/* hw_device, hw_change, hw_sample */
	const char *host, *device, *kind, *pci_path, *detail, *counter;
	uint64_t before, after, interval_ns, cost_ns;
	int64_t time_ns;	/* hw_change: the sample's time, trace clock */
	int64_t numa_node, flags, devices;
};

struct ev_rec_fp {		/* fingerprint */
	uint64_t comm_hash, seq, bytes, compared, hash;
	const char *op, *slices;
	int64_t datatype, redop, nranks;
};

struct ev_rec_hb {		/* heartbeat */
	const char *host, *waiting, *op;
	int64_t pid, rank, world_size, nranks, comm_rank;
	uint64_t comm_hash, last_seq, done_seq, wait_seq, waited_ns, period_ns;
};

struct ev_rec_census {		/* api_census */
	const char *path, *unknown, *error;
	int64_t nccl_version, n_exported, n_unknown, device_api;
};

enum ev_kind {
	EV_OTHER, EV_PROC, EV_INIT_BEGIN, EV_INIT_END, EV_COMM_END, EV_ENQ, EV_DONE,
	EV_TIMEOUT, EV_POLICY, EV_INJECT, EV_CALLSITE, EV_ALGO,
	EV_HW_DEVICE, EV_HW_CHANGE, EV_HW_SAMPLE, EV_FPRINT, EV_HEARTBEAT, EV_CENSUS,
	EV_COMM_STATE,
};

struct ev_event {
	enum ev_kind kind;
	struct ev_src src;
	const char *job_id;	/* process_info's and heartbeat's job_id; "" otherwise */
	union {
		struct ev_rec_proc proc;	/* EV_PROC */
		struct ev_rec_init init;	/* EV_INIT_BEGIN, EV_INIT_END */
		struct ev_rec_coll coll;	/* EV_ENQ, EV_DONE */
		struct ev_rec_algo algo;	/* EV_ALGO */
		struct ev_rec_misc misc;	/* EV_COMM_END, EV_TIMEOUT, EV_POLICY,
						 * EV_INJECT, EV_COMM_STATE */
		struct ev_rec_hw hw;		/* EV_HW_* */
		struct ev_rec_fp fp;		/* EV_FPRINT */
		struct ev_rec_hb hb;		/* EV_HEARTBEAT */
		struct ev_rec_census census;	/* EV_CENSUS */
	} r;
	/* ev_head() -> ev_body(): the payload and its class */
	const void *payload_, *class_;
};

struct ev_decoder;

/* host_id gives a trace's env.hostname ("unknown" if none) the reader's
 * number for it, once per stream.  NULL: out of memory. */
struct ev_decoder *ev_decoder_new(int (*host_id)(void *ctx, const char *hostname),
				  void *ctx);
void ev_decoder_free(struct ev_decoder *d);

/* A stream's beginning: its host and clock learnt.  -1: out of memory. */
int ev_stream(struct ev_decoder *d, const struct bt_stream *stream);

/* An event message: 1 with ev->kind, ev->src and ev->job_id filled for an
 * ncclguard event; 0 for any other event, or one whose time is out of
 * range (counted against its stream); -1: out of memory. */
int ev_head(struct ev_decoder *d, const struct bt_message *msg, struct ev_event *ev);

/* The record of an event ev_head() took: 1, or 0 when the event is
 * implausible (to be dropped; counted against its stream): a value that
 * sizes, indexes or is subtracted out of range, an op, type or size no
 * call has, a rank outside its communicator, a seq out of its stream's
 * order, a call's time outside its event's.  A value merely shown is
 * clamped instead, a string with a control character cleared.  Strings
 * stay valid until the next call. */
int ev_body(struct ev_decoder *d, struct ev_event *ev);

/* An event message dropped unread: its time is before its stream's
 * previous (the stream went back in time); counted against its stream. */
void ev_late_event(struct ev_decoder *d, const struct bt_message *msg);

/* Implausible values so far, in all streams. */
uint64_t ev_bad_values(const struct ev_decoder *d);
/* fn for each stream with implausible values: its name (NULL: none), how
 * many, and what: "N <kind>, ...; the first: <field value>". */
void ev_bad_streams(const struct ev_decoder *d,
		    void (*fn)(void *ctx, const char *stream, uint64_t n, const char *what),
		    void *ctx);

#endif
