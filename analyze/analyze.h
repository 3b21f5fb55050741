/*
 * `ncclguard analyze`: the module boundary.
 *
 * read.c turns the LTTng traces into records (struct ng_rec_*) with every
 * time already on its trace's clock (ns from the clock origin), and feeds
 * them to the matcher (match.c).  The matcher keeps only what is in flight:
 * per communicator a window of collectives not yet seen complete on every
 * rank; a finished collective is accounted (stats.c) and dropped, so memory
 * grows with ranks and in-flight collectives, not with trace length.  The
 * writers (report_json.c, chrome.c, html.c, summary.c) read the aggregates
 * once the trace is consumed; chrome.c alone writes while reading.
 */
#ifndef NCCLGUARD_ANALYZE_H
#define NCCLGUARD_ANALYZE_H

#include <stdint.h>
#include <stdio.h>

#include "json.h"

/* ---- records: reader -> matcher --------------------------------------- */

/* Where an event came from: a process is (host, vpid). */
struct ng_src {
	int host;		/* ng_an_host() id of the trace's env.hostname */
	int64_t vpid;
	int64_t ts;		/* event time, ns from the clock origin */
};

struct ng_rec_proc {
	const char *host, *nccl_path, *gpu_pci_bus_id, *cpu_affinity;
	const char *socket_ifname, *env, *policy_digest, *rank_source;
	int64_t pid, rank, local_rank, world_size, nccl_version;
	int64_t cudart_version, driver_version, numa_node;
};

struct ng_rec_init {
	uint64_t comm_hash, parent_hash;
	int64_t nranks, rank, result;
	int end;		/* comm_init_end (else comm_init_begin) */
};

struct ng_rec_coll {		/* coll_enqueue and coll_complete */
	uint64_t comm_hash, seq, p2p_seq, count, bytes, stream;
	const char *op;
	int64_t datatype, root_or_peer, result, nranks;
	int64_t enter_ns, exit_ns;			/* enqueue */
	int enter_coarse;		/* enter_ns is the shim's coarse time (not sampled) */
	int64_t gpu_start_ns, gpu_end_ns, duration_ns;	/* complete */
};

struct ng_rec_misc {		/* timeout, policy, inject, comm_end */
	uint64_t comm_hash, seq, waited_ns;
	const char *op, *kind, *action, *what, *detail;
	const char *key, *user_value, *effective_value;
	int64_t result;
};

/* ---- options and the analysis ----------------------------------------- */

struct ng_an_opts {
	double link_gbps;	/* 0: no link check */
	FILE *chrome;		/* NULL: no Chrome trace */
};

#define NG_MAX_OPS	32
#define NG_HEAT_BINS	96
#define NG_LIST_MAX	1000	/* rows kept of timeouts, injections, mismatches */

/* Durations of one stats row: exact while small, then a log histogram. */
#define NG_QS_EXACT	4096
#define NG_QS_SUB	64	/* histogram bins per octave (1.1% wide) */
#define NG_QS_BINS	(64 * NG_QS_SUB)
struct ng_qs {
	uint64_t n;
	double sum, max;
	double *exact;		/* n <= NG_QS_EXACT */
	uint32_t *hist;		/* past that */
};

struct ng_row {			/* one op, size bucket and comm size */
	int op, bucket, nranks;
	uint64_t calls, timed, bytes_sum_timed;
	double time_sum_ns;	/* of timed calls */
	struct ng_qs qs;	/* collective time, ns */
};

/* uint64 key -> index; open addressing, never shrinks. */
struct ng_map {
	uint64_t *keys;
	int32_t *vals;		/* -1: empty */
	uint32_t cap, n;
};

/* One process_info field that differs across ranks. */
struct ng_cfg_key {
	char *key;
	int n;			/* (value, rank) pairs sorted by value, rank */
	char **val;
	int64_t *rank;
};

struct ng_host {
	char *name;
	int64_t first_ts, last_ts;
	int64_t offset_ns;	/* added to this host's times: its clock error */
	int nsamples;
	int64_t *samples;	/* reference end minus this host's end */
	int settled;
	double clk_sum;		/* clock_sample's, for one collective */
	int clk_n;
};

struct ng_proc {
	int host;
	int64_t vpid;
	int has_info;
	int64_t rank;		/* -1 until process_info */
	char *info_host, *nccl_path, *gpu_pci_bus_id, *socket_ifname, *env;
	char *policy_digest, *rank_source;
	int64_t pid, local_rank, world_size, nccl_version, cudart_version;
	int64_t driver_version, numa_node;
	int64_t first_ts, last_ts;
	/* union of GPU busy intervals: those before folded_until are summed
	 * in busy_ns, the rest kept (start, end pairs) in any order */
	int64_t busy_ns, folded_until;
	int64_t *iv;
	int niv, cap_iv;
	/* stragglers */
	uint64_t coll_calls, late_calls;
	double late_sum_ns, chance;	/* chance: sum of 1/n over its calls */
	int op1, opmixed;		/* one op in all its collectives? */
	double *heat_sum;		/* NG_HEAT_BINS */
	uint32_t *heat_n;
	int chrome_pid;
	int ntracks;
	struct ng_track *tracks;
};

struct ng_track {
	uint64_t comm_hash, stream;
	int tid;
};

/* A rank's part in one collective.  DONE: the rank is past it (its own
 * coll_complete, a later one, or a destroy); OWN: its own coll_complete
 * arrived, with or without times. */
enum { NG_S_ENQ = 1, NG_S_DONE = 2, NG_S_TIMED = 4, NG_S_DROP = 8, NG_S_OWN = 16,
       NG_S_COARSE = 32 /* its arrival time is the coarse clock's */ };
struct ng_slot {
	int64_t enter_ns, exit_ns, gpu_start, gpu_end, dur;
	uint64_t count, stream, bytes;
	int32_t root, dtype;
	uint8_t flags, op;
};

struct ng_entry {
	uint64_t seq;
	int nslots, nranks, nenq, ndone;
	struct ng_entry *next;	/* pending list while clocks settle */
	struct ng_comm *comm;
	struct ng_slot slot[];
};

struct ng_comm {
	uint64_t hash;
	int nranks;
	int nmembers, cap_members;
	int *members;		/* proc ids; a slot index is a member index */
	int *member_pc;		/* index in ng_an.pcs of each member */
	int timeouts;		/* timeout events naming this comm */
	int64_t last_timeout_ts;	/* the latest of them */
	uint64_t stuck_seq;	/* lowest seq a timeout named: the ranks'
				 * watchdogs confirmed every call before it */
	/* in-flight window: ring of entries for seq lo, lo+1, ... */
	struct ng_entry **ring;
	uint64_t lo;
	uint32_t head, cap;
	uint32_t nring;		/* seqs lo .. lo+nring-1 allocated or NULL */
};

#define NG_P2P_PENDING_MAX 65536	/* sends/recvs kept pending per rank and comm */

/* A send or recv not yet known complete (its own completion, a later
 * one's on the comm, or the comm's destroy). */
struct ng_p2p_op {
	uint64_t p2p_seq, coll_before;	/* the comm's last seq when it came */
	uint64_t ordinal;		/* of its kind to its peer: 1, 2, ... */
	int64_t enter_ns;
	int32_t peer;			/* comm rank */
	uint8_t op, send;
};

/* State of one proc on one comm. */
struct ng_pc {
	int proc, member;
	struct ng_comm *comm;
	int64_t comm_rank, nranks;
	uint64_t last_seq, done_seq, marked_seq, drop_seq;
	int init_begun, init_done, ended;
	int destroyed;		/* destroy or finalize: the calls before it are
				 * done, their completions may still follow */
	int64_t init_ts;
	/* Point-to-point: pending ops in p2p_seq order (p2p_head .. np2p),
	 * and per peer comm rank the sends and recvs posted so far. */
	struct ng_p2p_op *p2p;
	int np2p, cap_p2p, p2p_head;
	uint64_t p2p_done, p2p_drop_seq;
	uint64_t coll_confirmed;	/* a timeout named this seq: calls before it ran */
	uint64_t *sent, *recvd;
	int npeers;
};

struct ng_hang {
	uint64_t comm_hash, seq, queued_after;
	int op;
	int nwait, nmiss, nlast;
	int64_t *wait, *miss;	/* global ranks */
	int64_t *last_rank;
	uint64_t *last_seq;
	int64_t age_ns, unknown_missing;
	int timed_out;
	/* An init: the comm ranks that never began it.  Where the comm is
	 * the world (each member's comm rank is its global rank) they are
	 * in miss as well, and miss_untraced counts those of them no
	 * process of the trace claims. */
	int nmiss_comm, miss_untraced;
	int64_t *miss_comm;
	/* A send or recv (seq is its p2p seq): its peer's global rank (-1:
	 * not in the trace), and how many of its kind the peer posted to
	 * this rank against this one's ordinal. */
	int p2p;
	int64_t peer, peer_comm_rank;
	uint64_t ordinal, peer_posted;
};

struct ng_mismatch {
	uint64_t comm_hash, seq;
	int n;
	int64_t *rank;
	int *op;
	uint64_t *count;
	int32_t *dtype, *root;
};

struct ng_timeout_row {
	int64_t rank;
	uint64_t comm_hash, seq, waited_ns;
	char *op, *action, *what;
	int64_t ts;
};

struct ng_inject_row {
	int64_t rank;
	uint64_t comm_hash, seq;
	char *kind, *op, *detail;
};

struct ng_policy_row {
	char *key, *action, *user_value, *effective_value;
	int nranks;
	int64_t *ranks;
};

struct ng_an {
	struct ng_an_opts opts;
	char *ops[NG_MAX_OPS];
	int nops;

	struct ng_host *hosts;
	int nhosts;
	struct ng_proc *procs;
	int nprocs;
	struct ng_map proc_map, comm_map, pc_map;

	int ncomms;
	struct ng_comm **comms;
	struct ng_pc *pcs;
	int npcs;

	/* accounting */
	struct ng_row *rows;
	int nrows;
	uint64_t events, lost_events, coll_calls, p2p_calls, late_events;
	uint64_t p2p_forgotten;	/* pending sends/recvs past the window */
	uint64_t inflight_p2p;	/* sends/recvs running at the end, not hung */
	uint64_t matched, straggle_calls, untimed, forced;
	int finishing;		/* end of trace: nothing more to wait for */
	int64_t first_ts, last_ts;

	/* clock alignment: finished entries wait here until offsets settle */
	struct ng_entry *pend_head, *pend_tail;
	int npend, settled, ref_host;

	/* heat map: bin i covers [heat_t0 + i*w, +w) */
	int64_t heat_t0, heat_w;

	/* findings */
	struct ng_hang *hangs;
	int nhangs;
	struct ng_mismatch *mism;
	int nmism;
	uint64_t mism_total;
	struct ng_timeout_row *timeouts;
	int ntimeouts;
	struct ng_inject_row *injects;
	int ninjects;
	struct ng_policy_row *policy;
	int npolicy;
	uint64_t inflight_end;	/* collectives in flight when the trace ended */
	struct ng_cfg_key *cfg;
	int ncfg;

	/* chrome */
	int chrome_first;
	int64_t chrome_t0;
	int chrome_err;
	int next_chrome_pid;
};

/* match.c */
int32_t ng_map_get(const struct ng_map *m, uint64_t key);
void ng_map_put(struct ng_map *m, uint64_t key, int32_t val);
void ng_map_free(struct ng_map *m);
struct ng_an *ng_an_new(const struct ng_an_opts *opts);
void ng_an_free(struct ng_an *an);
int ng_an_host(struct ng_an *an, const char *name);
void ng_an_seen(struct ng_an *an, const struct ng_src *src);
void ng_an_process_info(struct ng_an *an, const struct ng_src *src,
			const struct ng_rec_proc *r);
void ng_an_comm_init(struct ng_an *an, const struct ng_src *src,
		     const struct ng_rec_init *r);
void ng_an_comm_end(struct ng_an *an, const struct ng_src *src,
		    const struct ng_rec_misc *r);
void ng_an_enqueue(struct ng_an *an, const struct ng_src *src,
		   const struct ng_rec_coll *r);
void ng_an_complete(struct ng_an *an, const struct ng_src *src,
		    const struct ng_rec_coll *r);
void ng_an_timeout(struct ng_an *an, const struct ng_src *src,
		   const struct ng_rec_misc *r);
void ng_an_policy(struct ng_an *an, const struct ng_src *src,
		  const struct ng_rec_misc *r);
void ng_an_inject(struct ng_an *an, const struct ng_src *src,
		  const struct ng_rec_misc *r);
void ng_an_lost(struct ng_an *an, uint64_t n);
int ng_an_finish(struct ng_an *an);
int ng_an_op_id(struct ng_an *an, const char *op);
/* Ranks sorted by rank (procs without process_info last). */
int *ng_an_rank_order(const struct ng_an *an);

/* stats.c */
double ng_busbw_factor(const char *op, int nranks);
int ng_size_bucket(uint64_t bytes);
int ng_qs_add(struct ng_qs *q, double v);
double ng_qs_quantile(struct ng_qs *q, double p);
void ng_qs_free(struct ng_qs *q);
struct ng_row *ng_row_get(struct ng_an *an, int op, uint64_t bytes, int nranks);
/* Lateness of each enqueued slot against the median arrival; returns the
 * index of the last one, or -1 if fewer than two ranks arrived. */
int ng_lateness(const int64_t *enter, int n, int64_t *late_ns);
int ng_straggler_flagged(const struct ng_an *an, const struct ng_proc *p);
void ng_heat_add(struct ng_an *an, struct ng_proc *p, int64_t t, int64_t late_ns);
void ng_an_sort_rows(struct ng_an *an);
const char *ng_dtype_name(int64_t dtype);
void ng_version_str(int64_t code, char *buf, size_t len);
double ng_comm_fraction(const struct ng_proc *p);
void ng_config_mismatches(struct ng_an *an);

/* chrome.c */
void ng_chrome_entry(struct ng_an *an, const struct ng_entry *e);
int ng_chrome_close(struct ng_an *an);

/* report_json.c */
int ng_report_json(struct ng_an *an, FILE *f);
int ng_row_below_link(const struct ng_an *an, const struct ng_row *r);

/* html.c */
int ng_report_html(struct ng_an *an, FILE *f);

/* summary.c */
enum { NG_SEV_INFO, NG_SEV_WARN, NG_SEV_BAD };
typedef void (*ng_finding_fn)(void *ctx, int severity, const char *line);
/* The findings in plain words, worst first; returns how many. */
int ng_findings(struct ng_an *an, ng_finding_fn fn, void *ctx);
void ng_fmt_bytes(uint64_t b, char *buf, size_t len);
/* A table row as text, shared by the summary and the HTML report. */
struct ng_row_text {
	char size[32], mean[32], p50[32], p99[32], max[32];
	double algbw;			/* GB/s over the timed calls */
};
void ng_row_text(struct ng_row *r, struct ng_row_text *t);
void ng_fmt_ns(double ns, char *buf, size_t len);
void ng_summary(struct ng_an *an, FILE *f);

/* read.c */
struct ng_read_opts {
	int progress;		/* stderr is a terminal */
};
/* Finds the CTF traces under each dir and feeds their events to `an`.
 * Returns 0, or -1 after printing why on stderr. */
int ng_read_traces(char *const *dirs, int ndirs, struct ng_an *an,
		   const struct ng_read_opts *opts);
/* Collects directories holding a CTF `metadata` file under `dir`. */
int ng_find_traces(const char *dir, char ***out, int *n);

#endif
