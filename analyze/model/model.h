/*
 * What a job is made of, as the analyzer sees it, at the bottom of its
 * stages: hosts, processes, communicators, a process's part in one, the
 * collectives in flight (a slot per rank) and the rows they are counted
 * into; text formats, quantiles, allocation and the map.
 *
 * The stages, bottom first, each a folder whose files include only its
 * own header and those of the stages below it (tools/include_graph.sh
 * checks it; `tools/include_graph.sh --calls analyze/STAGE` prints a
 * stage's file graph): model, state, match, read, findings, report, and
 * analyze.c at the top (analyze.h, the module's public header).
 *
 * The reader turns the LTTng traces into records with every time already
 * on its trace's clock (ns from the clock origin).  The matcher keeps only
 * what is in flight: per communicator a window of collectives not yet seen
 * complete on every rank; a finished collective is accounted and dropped,
 * so memory grows with ranks and in-flight collectives, not with trace
 * length.  The writers read the aggregates once the trace is consumed; the
 * Chrome trace alone is written while reading, through an_opts.on_coll.
 */
#ifndef NCCLGUARD_AN_MODEL_H
#define NCCLGUARD_AN_MODEL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "events.h"
#include "json.h"
#include "straggle.h"
#include "u64map.h"

/* ---- records: reader -> matcher --------------------------------------- */

/* struct ev_src and struct ev_rec_*: events/events.h, the decoding shared
 * with `ncclguard watch`. */

struct an_p2p_op;

#define AN_MAX_OPS	32
#define AN_HEAT_BINS	96
#define AN_STRAG_WIN	NG_STRAG_WIN	/* a rank's collectives per straggler window */
#define AN_LIST_MAX	1000	/* rows kept of timeouts, injections, mismatches */

/* Durations of one stats row: exact while small, then a log histogram. */
#define AN_QS_EXACT	4096
#define AN_QS_SUB	64	/* histogram bins per octave (1.1% wide) */
#define AN_QS_BINS	(64 * AN_QS_SUB)
struct an_qs {
	uint64_t n;
	double sum, max;
	double *exact;		/* n <= AN_QS_EXACT */
	uint32_t *hist;		/* past that */
};

#define AN_ROW_CHOICES 4
struct an_choice {		/* an algorithm, protocol and channel count */
	char algo[16], proto[8];
	int nch;
	uint64_t calls;
};

struct an_row {			/* one op, size bucket and comm size */
	int op, bucket, nranks;
	uint64_t calls, timed, bytes_sum_timed;
	double time_sum_ns;	/* of timed calls */
	struct an_qs qs;	/* collective time, ns */
	struct an_choice choice[AN_ROW_CHOICES];	/* algo.c: NCCL's choices */
	int nchoice;
};


struct an_host {
	char *name;
	int64_t first_ts, last_ts;
	int64_t offset_ns;	/* added to this host's times: its clock error,
				 * as of the collective being accounted */
	int64_t offset_min, offset_max;	/* what it went through */
	int nsamples;		/* collectives it was estimated from */
	int64_t *samples;	/* reference end minus this host's end, the
				 * last AN_CLOCK_SAMPLES (a ring) */
	int settled;
	double clk_sum;		/* clock_sample's, for one collective */
	int clk_n;
	uint64_t streams, streams_ended;	/* early.c: the reader's streams of it */
};

struct an_rowtime {
	uint64_t timed, untimed;
	double dur_sum_ns;
};
struct an_proc {
	int host;
	int64_t vpid;
	int has_info;
	int plugin_only;	/* a comm seen only through NCCL's profiler plugin */
	int timing_off;		/* NCCLGUARD_TIMING=0: no completion comes from it */
	uint64_t verify_every;	/* outputs of every Nth call per comm verified, 0 off */
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
	/* Collectives the shim did not time (sampling): per row (by its index
	 * before an_sort_rows) this rank's timed and untimed calls, folded by
	 * an_busy_estimate into busy_est_ns, their estimated GPU time. */
	struct an_rowtime *rt;
	int nrt;
	int64_t busy_est_ns;
	uint64_t busy_unknown;		/* untimed calls of a row timed nowhere */
	/* The estimate: untimed calls counted, the timed calls whose mean
	 * they were given, and whether the wall time capped it. */
	uint64_t est_calls, est_timed;
	int est_capped;
	/* stragglers */
	uint64_t coll_calls, late_calls;
	int64_t late_first_ns, late_last_ns;	/* arrivals of its first and last late
						 * call, corrected; 0: none */
	double late_sum_ns, chance;	/* chance: sum of 1/n over its calls */
	int op1, opmixed;		/* one op in all its collectives? */
	double *heat_sum;		/* AN_HEAT_BINS */
	uint32_t *heat_n;
	/* straggle.c: the current window's lateness (against the others'
	 * median), the others' spread and the comm's cycle, one per call;
	 * the windows so far, those late, and the sum of the late ones'
	 * medians */
	int64_t win_late[AN_STRAG_WIN], win_noise[AN_STRAG_WIN], win_cycle[AN_STRAG_WIN];
	int win_fill;
	uint64_t nwin, nwin_late;
	double win_late_sum_ns;
};

/* A rank's part in one collective.  DONE: the rank is past it (its own
 * coll_complete, a later one, or a destroy); OWN: its own coll_complete
 * arrived, with or without times. */
enum { AN_S_ENQ = 1, AN_S_DONE = 2, AN_S_TIMED = 4, AN_S_DROP = 8, AN_S_OWN = 16,
       AN_S_COARSE = 32 /* its arrival time is the coarse clock's */ };
struct an_slot {
	int64_t enter_ns, exit_ns, gpu_start, gpu_end, dur;
	uint64_t count, stream, bytes;
	int32_t root, dtype;
	uint8_t flags, op;
};

struct an_entry {
	uint64_t seq;
	int nslots, nranks, nenq, ndone;
	struct an_entry *next;	/* pending list while clocks settle */
	struct an_comm *comm;
	struct an_slot slot[];
};

struct an_comm {
	uint64_t hash;
	int nranks;
	int nmembers, cap_members;
	int *members;		/* proc ids; a slot index is a member index */
	int *member_pc;		/* index in an->pcs of each member */
	int timeouts;		/* timeout events naming this comm */
	int64_t last_timeout_ts;	/* the latest of them */
	uint64_t stuck_seq;	/* lowest seq a timeout named: the ranks'
				 * watchdogs confirmed every call before it */
	/* in-flight window: ring of entries for seq lo, lo+1, ... */
	struct an_entry **ring;
	uint64_t lo;
	uint32_t head, cap;
	uint32_t nring;		/* seqs lo .. lo+nring-1 allocated or NULL */
	/* incomplete.c: ranks of this comm with no event in the trace (their
	 * stream lost or never written), and the first of them as a global
	 * rank (-1: only its comm rank is known) and as a comm rank */
	int no_events;
	int64_t no_events_rank, no_events_comm_rank;
	uint64_t forced;	/* collectives forced out of a full window */
	uint64_t forced_seen;	/* the same, seen on every rank */
	/* straggle.c: the last seq it saw here and when that collective
	 * could start at the earliest (its last rank's arrival) */
	uint64_t strag_seq;
	int64_t strag_start;
	int strag_known;
	/* early.c: the seq of the hang said while reading (0: none), and
	 * whether its first timeout was said */
	uint64_t early_seq;
	int early_timeout;
};


/* A rank's call on a comm, as the hang drawing shows it: times on the
 * reference host's clock (0: not known). */
#define AN_RECENT	6	/* accounted calls kept per rank and comm */
#define AN_AFTER	2	/* calls queued behind a hang kept for it */
struct an_call {
	uint64_t seq;
	int64_t enter_ns, exit_ns;	/* the host call */
	int64_t start_ns, end_ns;	/* on the GPU, where timed */
	uint8_t op, flags;		/* AN_S_* */
};

/* State of one proc on one comm. */
struct an_pc {
	int proc, member;
	struct an_comm *comm;
	int64_t comm_rank, nranks;
	uint64_t last_seq, done_seq, marked_seq, drop_seq;
	int init_begun, init_done, ended;
	int suspended;		/* ncclCommSuspend without its resume (comm_state) */
	int destroyed;		/* destroy or finalize: the calls before it are
				 * done, their completions may still follow */
	int64_t init_ts;
	/* Point-to-point: pending ops in p2p_seq order (p2p_head .. np2p),
	 * and per peer comm rank the sends and recvs posted so far. */
	struct an_p2p_op *p2p;
	int np2p, cap_p2p, p2p_head;
	uint64_t p2p_done, p2p_drop_seq;
	uint64_t coll_confirmed;	/* a timeout named this seq: calls before it ran */
	uint64_t *sent, *recvd;
	/* One-sided: signals sent (a put or a signal) and waited for (each
	 * waitsignal counts its opCnt), per peer comm rank. */
	uint64_t *sigsent, *sigwait;
	int npeers;
	uint64_t jump_seq;	/* a seq far past last_seq, kept until confirmed */
	uint64_t own_done_seq;	/* highest seq whose own coll_complete came */
	/* The last AN_RECENT calls accounted, a ring (nrecent: how many
	 * ever): what each rank did just before a hang. */
	struct an_call recent[AN_RECENT];
	uint32_t nrecent;
};


/* What a trace may say, past which a value is corrupt (a bit flip, a
 * torn write) and its event or field is dropped and counted. */
#define AN_NRANKS_MAX	EV_NRANKS_MAX		/* ranks of a communicator */
#define AN_SEQ_MAX	EV_SEQ_MAX		/* a call's seq or p2p seq */
#define AN_TS_MAX	EV_TS_MAX		/* ns: times and durations */
#define AN_WINDOW_MAX	16384			/* collectives in flight per comm */

#define AN_CLOCK_SAMPLES	32		/* per host before offsets settle,
						 * and in each median after */

/* ---- util.c: allocation that exits on failure, the map ---------------- */

void *an_xcalloc(size_t n, size_t sz);
void *an_xrealloc(void *p, size_t sz);
char *an_xstrdup(const char *s);	/* NULL gives "" */
int an_cmp_i64(const void *a, const void *b);
/* ng_u64map_put that ends the command when out of memory. */
void an_map_put(struct ng_u64map *m, uint64_t key, int32_t val);

/* An estimate or a row resting on fewer timed calls says how many. */
#define AN_FEW_TIMED	30

/* ---- quantile.c ------------------------------------------------------- */

void an_qs_add(struct an_qs *q, double v);
double an_qs_quantile(struct an_qs *q, double p);
void an_qs_free(struct an_qs *q);

/* ---- fmt.c: names and numbers as text --------------------------------- */

const char *an_dtype_name(int64_t dtype);
/* A collective in sentences, "all-reduces" (nccl_api.def's PLURAL). */
const char *an_op_plural(const char *op);
void an_version_str(int64_t code, char *buf, size_t len);
void an_fmt_bytes(uint64_t b, char *buf, size_t len);
void an_fmt_ns(double ns, char *buf, size_t len);
/* A trace time (ns since the epoch: LTTng's clocks are the real time's)
 * as UTC: "2025-01-01T12:03:41.234Z", or with clock_only "12:03:41.2". */
void an_fmt_utc(int64_t ns, int clock_only, char *buf, size_t len);
/* A table row as text, shared by the summary and the HTML report. */
struct an_row_text {
	char size[32], mean[32], p50[32], p99[32], max[32];
	double algbw;			/* GB/s over the timed calls */
	char note[96];			/* few timed calls: how many ("" if not) */
};
void an_row_text(struct an_row *r, struct an_row_text *t);

/* Point-to-point calls: sends and recvs, and the one-sided signals. */
static inline int an_is_p2p_op(const char *op)
{
	return op && (!strcmp(op, "send") || !strcmp(op, "recv") || !strcmp(op, "putsignal") ||
		      !strcmp(op, "signal") || !strcmp(op, "waitsignal"));
}

#endif
