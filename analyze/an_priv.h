/*
 * The analyzer's insides, shared by its files and by no one else (the
 * module's one public header is analyze.h).
 *
 * The files in stages, from the top; each calls only files below it
 * (tools/include_graph.sh checks it from the objects; `--calls analyze`
 * prints the graph).  Each stage is meant to become a folder with its own
 * small header:
 *
 *   top
 *   analyze.c      ng_analyze(): outputs checked, traces found once each,
 *                  run records read, then read, finish, the writers
 *   free.c         the state freed whole, each stage's part by its owner
 *
 *   writers
 *   report_json.c chrome.c summary.c            the writers
 *   chrome_sel.c   what the Chrome trace keeps under its cap
 *   numfmt.c       numbers as text without stdio (the Chrome trace)
 *   html.c         report.html; its sections: html_hang.c html_plot.c
 *                  html_heat.c html_table.c, on html_axis.c
 *
 *   findings
 *   findings.c     the findings as sentences (summary, HTML)
 *
 *   read
 *   read.c         babeltrace2 -> records (struct ev_rec_*): the checks,
 *                  the one graph
 *   pread.c        read.c's read by worker processes (-j)
 *   readbase.c     what both stand on (read_priv.h): events to the
 *                  matcher, the crash guard, sinks, views, what was left
 *                  out
 *   merge.c        the time-ordering sink (merge.h)
 *   recs.c         records through a pipe, worker to merger (recs.h)
 *   flight.c       a dead process's calls from its copied flight ring file
 *   runrec.c       DIR/run.json, the record `ncclguard run` leaves
 *   relaysess.c    which of a relay's session folders to read: those the
 *                  run records name
 *   job.c          one job per report: other jobs' events dropped in read.c
 *
 *   match
 *   early.c        hangs and timeouts said while reading, before the end
 *   finish.c       the end of the trace: hangs; the tables put in order
 *   dumps.c        the hang dumps: where each stuck process was waiting
 *   match.c        collectives matched across ranks, a window per comm
 *   p2p.c          sends and recvs: pending per rank, the hung ones at the end
 *   clock.c        hosts' clock offsets; finished collectives held for them
 *   account.c      a finished collective into the rows, mismatches, stragglers
 *   algo.c         what NCCL chose per call; comms whose ranks chose apart
 *   stats.c straggle.c busy.c config.c    rows, stragglers, time in NCCL, config
 *
 *   state, and what every stage uses
 *   state.c        hosts, processes, comms; the records that only fill tables
 *   incomplete.c   what the report could not see (incomplete[])
 *   traces.c       where the traces and the files beside them are (read,
 *                  the hang dumps)
 *   fmt.c quantile.c util.c      text formats, quantiles, allocation and the map
 *
 * read.c turns the LTTng traces into records with every time already on its
 * trace's clock (ns from the clock origin).  The matcher keeps only what is
 * in flight: per communicator a window of collectives not yet seen complete
 * on every rank; a finished collective is accounted and dropped, so memory
 * grows with ranks and in-flight collectives, not with trace length.  The
 * writers read the aggregates once the trace is consumed; the Chrome trace
 * alone is written while reading, through an_opts.on_coll.
 */
#ifndef NCCLGUARD_AN_PRIV_H
#define NCCLGUARD_AN_PRIV_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "analyze.h"
#include "events.h"
#include "json.h"
#include "u64map.h"

/* ---- records: reader -> matcher --------------------------------------- */

/* struct ev_src and struct ev_rec_*: events/events.h, the decoding shared
 * with `ncclguard watch`. */

/* ---- the analysis ---------------------------------------------------- */

/* One job seen in the trace (job.c): its tag, its id as process_info
 * names it, how many processes announced themselves in it and how many
 * events it has. */
#define AN_JOBS_MAX	16
#define AN_JOB_ID_MAX	64
struct an_job {
	uint64_t tag, nproc, events;
	char id[AN_JOB_ID_MAX];
};
/* How job_keep was chosen. */
enum { AN_JOB_NONE, AN_JOB_FIRST, AN_JOB_MOST, AN_JOB_RECORD, AN_JOB_USER };

struct an_state;
struct an_entry;

struct an_opts {
	double link_gbps;	/* 0: no link check */
	/* Handed each collective once it is accounted, before it is freed:
	 * how the Chrome trace streams out (chrome.c) without the matcher
	 * calling a writer.  NULL: nobody. */
	void (*on_coll)(void *ctx, const struct an_state *an, const struct an_entry *e);
	void *on_coll_ctx;
};

#define AN_MAX_OPS	32
#define AN_HEAT_BINS	96
#define AN_STRAG_WIN	4	/* a rank's collectives per straggler window */
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

/* algo.c: one choice of one process for one (comm, op, size). */
struct an_algo_rec {
	uint64_t comm_hash, bytes, calls;
	int64_t rank;			/* set by an_algo_finish, for the order */
	int op, proc, nch;
	char algo[16], proto[8];
};
/* A (comm, op, size) whose processes chose differently: algos[first,
 * end) once sorted, each process's main choice first among its own. */
#define AN_ALGO_MISM_MAX 64
struct an_algo_mism {
	int first, end, nprocs;
};

/* One process_info field that differs across ranks, or a host's own
 * setting (NCCL_HOSTID) that breaks its rule: `why` says which. */
struct an_cfg_key {
	char *key;
	const char *why;	/* "differs across ranks", or the per-host rule broken */
	int per_host;		/* a host's own setting (NCCL_HOSTID) */
	int n;			/* (value, rank) pairs sorted by value, rank */
	char **val;
	int64_t *rank;
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

#define AN_P2P_PENDING_MAX 65536	/* sends/recvs kept pending per rank and comm */

/* A send or recv not yet known complete (its own completion, a later
 * one's on the comm, or the comm's destroy). */
struct an_p2p_op {
	uint64_t p2p_seq, coll_before;	/* the comm's last seq when it came */
	uint64_t ordinal;		/* of its kind to its peer: 1, 2, ... */
	int64_t enter_ns;
	int32_t peer;			/* comm rank */
	uint8_t op, send;
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
	int npeers;
	uint64_t jump_seq;	/* a seq far past last_seq, kept until confirmed */
	uint64_t own_done_seq;	/* highest seq whose own coll_complete came */
	/* The last AN_RECENT calls accounted, a ring (nrecent: how many
	 * ever): what each rank did just before a hang. */
	struct an_call recent[AN_RECENT];
	uint32_t nrecent;
};

/* One member of a hung comm as the drawing shows it: its calls around
 * the hung seq (in seq order: the last accounted, its own part in the
 * hung one, those it queued behind), and for an init when it began. */
struct an_hang_row {
	int64_t rank;
	int proc;
	int64_t init_ns;	/* comm_init_begin, corrected; 0: none */
	int ncalls;
	struct an_call calls[AN_RECENT + 1 + AN_AFTER];
};

/* Calls a stopped rank entered after its last confirmed one (finish.c):
 * the trace cannot tell whether they completed, so none is a hang. */
struct an_unconf {
	uint64_t comm_hash, confirmed_seq, first_seq, last_seq, calls;
	int proc;		/* proc id */
	int op, killed;		/* killed: its flight ring was recovered */
};

/* The ranks whose watchdogs fired on u's comm, u's own aside, sorted
 * (*out allocated; after an_finish). */
int an_unconf_waiting(const struct an_state *an, const struct an_unconf *u, int64_t **out);

struct an_hang {
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
	/* A collective: each member's state (AN_RS_*), in rank order; the
	 * seq its injected drop skipped where that is why (0: none). */
	int nstate;
	int64_t *state_rank;
	uint8_t *state;
	uint64_t *drop_seq;
	/* Every member, in rank order, for the drawing (html_hang.c). */
	struct an_hang_row *rows;
	int nrows;
};

/* Where a rank is in a hung collective, as precisely as the trace says. */
enum {
	AN_RS_WAITING,		/* entered, no completion: waiting on the GPU */
	AN_RS_HOST,		/* stuck inside the host call (watchdog, stall) */
	AN_RS_NEVER,		/* never entered it */
	AN_RS_AHEAD,		/* completed its own call of that seq: out of step */
	AN_RS_EXITED,		/* its comm_end came */
	AN_RS_KILLED,		/* died: its flight ring was recovered */
	AN_RS_N
};
/* "waiting", "in_host_call", ...: stable for report.json readers. */
const char *an_rank_state_name(int state);

struct an_mismatch {
	uint64_t comm_hash, seq;
	int n;
	int64_t *rank;
	int *op;
	uint64_t *count;
	int32_t *dtype, *root;
};

struct an_timeout_row {
	int64_t rank;
	uint64_t comm_hash, seq, waited_ns;
	char *op, *action, *what;
	int64_t ts;
};

struct an_inject_row {
	int64_t rank;
	uint64_t comm_hash, seq;
	char *kind, *op, *detail;
};

struct an_policy_row {
	char *key, *action, *user_value, *effective_value;
	int nranks;
	int64_t *ranks;
};

struct an_state {
	struct an_opts opts;
	char *ops[AN_MAX_OPS];
	int nops;

	struct an_host *hosts;
	int nhosts;
	struct an_proc *procs;
	int nprocs;
	struct ng_u64map proc_map, comm_map, pc_map;

	int ncomms;
	struct an_comm **comms;
	struct an_pc *pcs;
	int npcs;

	/* accounting */
	struct an_row *rows;
	int nrows;
	uint64_t events, lost_events, coll_calls, p2p_calls, late_events;
	uint64_t p2p_forgotten;	/* pending sends/recvs past the window */
	uint64_t inflight_p2p;	/* sends/recvs running at the end, not hung */
	uint64_t unknown_p2p;	/* and matched, on ranks that time nothing */
	uint64_t matched, straggle_calls, untimed, forced;
	uint64_t bad_values;	/* events or fields dropped: out of range */
	int finishing;		/* end of trace: nothing more to wait for */
	int64_t first_ts, last_ts;

	/* clock alignment: finished entries wait here until offsets settle */
	struct an_entry *pend_head, *pend_tail;
	int npend, settled, ref_host;

	/* heat map: bin i covers [heat_t0 + i*w, +w) */
	int64_t heat_t0, heat_w;

	/* findings */
	struct an_hang *hangs;
	int nhangs;
	struct an_mismatch *mism;
	int nmism;
	uint64_t mism_total;
	struct an_timeout_row *timeouts;
	int ntimeouts;
	struct an_inject_row *injects;
	int ninjects;
	struct an_policy_row *policy;
	int npolicy;
	struct an_unconf *unconf;
	int nunconf;
	uint64_t inflight_end;	/* collectives in flight when the trace ended */
	uint64_t unknown_end;	/* and entered by ranks that time nothing */
	struct an_cfg_key *cfg;
	int ncfg;
	struct an_finding *findings;	/* findings.c, built once */
	int nfindings, findings_built;
	/* run.json said the disk filled (runrec.c); the trace then held no
	 * event at all (read.c): the summary says why first */
	int disk_full, no_events;

	/* job.c: the jobs the trace holds; only job_keep's events are read */
	struct an_job jobs[AN_JOBS_MAX];
	int njobs, job_how;	/* AN_JOB_* */
	uint64_t job_keep, job_dropped, jobs_more;	/* jobs_more: past AN_JOBS_MAX */

	/* incomplete.c: what the report could not see */
	struct an_incomplete *inc;
	int ninc;
	uint64_t inc_more;	/* reasons past AN_INCOMPLETE_MAX */

	/* algo.c: what NCCL chose, from its profiler plugin */
	struct an_algo_rec *algos;
	int nalgos;
	struct ng_u64map algo_map;
	struct an_algo_mism *algo_mism;
	int nalgo_mism, algo_done;
	uint64_t algo_mism_more, algo_no_row;

	/* dumps.c: the hang dumps of the run's hang/ folders, by path */
	struct an_dump *dumps;
	int ndumps;
	uint64_t dumps_more;	/* past AN_DUMPS_MAX */
	uint64_t dumps_other_job;	/* of another job: not kept */

	/* early.c: findings said while reading (NULL: none); early_clear:
	 * over a progress line */
	FILE *early_out;
	int early_clear, early_armed;
	uint64_t early_next;		/* an->events of the next scan */
	int early_ntimeouts;		/* timeout rows looked at */
};

#define AN_INCOMPLETE_MAX	256
#define AN_SUMMARY_LIST	16	/* findings of one kind, rows of a list, shown */

/* The kinds of incomplete[] (incomplete.def): AN_INC_disk_full... */
enum an_inc_kind {
#define NG_INCOMPLETE(what, meaning) AN_INC_##what,
#include "incomplete.def"
	AN_INC_N
};

/* One thing the report could not see: its kind, and `what` its name
 * (incomplete.def's, not to be freed). */
struct an_incomplete {
	enum an_inc_kind kind;
	const char *what;
	char *detail;
};

/* What a trace may say, past which a value is corrupt (a bit flip, a
 * torn write) and its event or field is dropped and counted. */
#define AN_NRANKS_MAX	EV_NRANKS_MAX		/* ranks of a communicator */
#define AN_SEQ_MAX	EV_SEQ_MAX		/* a call's seq or p2p seq */
#define AN_TS_MAX	EV_TS_MAX		/* ns: times and durations */
#define AN_WINDOW_MAX	16384			/* collectives in flight per comm */

#define AN_CLOCK_SAMPLES	32		/* per host before offsets settle,
						 * and in each median after */
#define AN_HANG_AGE_NS		1000000000LL	/* in flight this long at the end */

/* ---- util.c: allocation that exits on failure, the map ---------------- */

void *an_xcalloc(size_t n, size_t sz);
void *an_xrealloc(void *p, size_t sz);
char *an_xstrdup(const char *s);	/* NULL gives "" */
int an_cmp_i64(const void *a, const void *b);
/* ng_u64map_put that ends the command when out of memory. */
void an_map_put(struct ng_u64map *m, uint64_t key, int32_t val);

/* ---- incomplete.c ----------------------------------------------------- */

void an_incomplete(struct an_state *an, enum an_inc_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void an_incomplete_free(struct an_state *an);
/* End of trace: ranks without events (an_comm.no_events), lost events. */
void an_incomplete_scan(struct an_state *an);
/* "0-3,7" for a sorted list of ranks, cut short with "..." to fit. */
void an_rank_ranges(const int64_t *r, int n, char *buf, size_t len);

/* ---- job.c: one job per report ---------------------------------------- */

/* Keep the job whose id is `id` (how: AN_JOB_RECORD or AN_JOB_USER;
 * "none" is the job of events without a tag, "#HEX" a tag), or the job
 * of tag `tag` (id NULL, AN_JOB_MOST: a second reading). */
void an_job_want(struct an_state *an, const char *id, uint64_t tag, int how);
/* read.c, for every event: 1 if it belongs to another job (dropped and
 * counted).  proc_info: the event is a process_info, job_id its job id
 * ("" for an older tracer). */
int an_job_skip(struct an_state *an, const struct ev_src *src, int proc_info,
		const char *job_id);
/* After reading: 0 if the job kept is the one to report; 1 if another
 * should be (its tag in *tag: read again with AN_JOB_MOST); -1 if the
 * job the user asked for has no event (why, on stderr). */
int an_job_settle(struct an_state *an, uint64_t *tag);
/* other_job in incomplete[] when the trace held several. */
void an_job_note(struct an_state *an);
/* The kept job's id ("" if none). */
const char *an_job_id(const struct an_state *an);

/* ---- runrec.c: DIR/run.json, the record `ncclguard run` leaves -------- */

struct an_runrec {
	char *schema, *job, *host, *status, *disk_detail, *consumer_error;
	char *session, *session_host;	/* the session its run made ("": none) */
	int disk_full;			/* -1: not said */
	int lost_unknown;		/* -1: not said */
	int recorded;			/* 0: the run recorded nothing; -1: not said */
	int exit_status;		/* the job's; -1: not said */
	double free_start, free_end;	/* free_bytes_start, _end; -1: not said */
};
/* A flat JSON object of strings, numbers, booleans and nulls, read by
 * common/json_read.c: fn is called once per member, in order (type 's',
 * 'n', 'b' or 'z'; num holds a number or a boolean's 0/1).  Returns 0, or
 * -1 with why in err (fn's own where fn refused). */
int an_flat_json(const char *buf, size_t len,
		 int (*fn)(void *ctx, const char *key, int type, const char *str, double num),
		 void *ctx, char *err, size_t errlen);
/* Reads DIR/run.json: 1 read, 0 absent, -1 unreadable (why in err). */
int an_runrec_read(const char *dir, struct an_runrec *rr, char *err, size_t errlen);
void an_runrec_free(struct an_runrec *rr);
/* incomplete[] entries for what the record says went wrong. */
void an_runrec_note(struct an_state *an, const char *dir, const struct an_runrec *rr);

/* ---- relaysess.c: which of a relay's session folders to read -------- */

struct an_sess {
	char *folder;		/* RELAYDIR/<host>/<name>-<date>-<time> */
	char *host, *name;
	char *job;		/* a run record's job id */
	int first;		/* the folder's first trace in the list */
};
struct an_sessions {
	struct an_sess *s;	/* from the run records: host, name, job */
	int n;
};
void an_sessions_add(struct an_sessions *ss, const char *host, const char *name,
		     const char *job);
void an_sessions_free(struct an_sessions *ss);
/* keep[i] for each trace path: 0 for one in a relay's session folder that
 * no record of `rec` names, or whose host and name another folder has
 * too; each said in incomplete[] (session_unverified) where it claims
 * the job.  With no record naming a session, every one is kept and one
 * session_unverified entry says none was checked. */
void an_sessions_keep(struct an_state *an, char *const *paths, int n,
		      const struct an_sessions *rec, int *keep);

/* ---- quantile.c ------------------------------------------------------- */

void an_qs_add(struct an_qs *q, double v);
double an_qs_quantile(struct an_qs *q, double p);
void an_qs_free(struct an_qs *q);

/* ---- numfmt.c: numbers into a buffer, no stdio (the Chrome trace) ---- */

char *an_put_u64(char *p, uint64_t v);
char *an_put_i64(char *p, int64_t v);
char *an_put_milli(char *p, int64_t v);	/* v / 1000, three decimals */
char *an_put_fix3(char *p, double x);		/* "%.3f" */
char *an_put_hex(char *p, uint64_t v, int width);

/* ---- chrome_sel.c: which collectives the Chrome trace keeps ---------- */

struct an_csel;
struct an_csel *an_csel_new(FILE *f, uint64_t cap, int all, int64_t win_ns);
void an_csel_free(struct an_csel *s);
/* Text straight to the file (names, tracks, the end's marks). */
void an_csel_write(struct an_csel *s, const char *text, size_t len);
uint64_t an_csel_written(const struct an_csel *s);
/* One collective's events, beginning at ts; key picks it for the sample. */
void an_csel_put(struct an_csel *s, uint64_t key, int64_t ts, const char *text, size_t len);
void an_csel_filtered(struct an_csel *s);	/* one left out by --ranks/--chrome-window */
void an_csel_pin(struct an_csel *s, int64_t ts, const char *why);
void an_csel_flush(struct an_csel *s);
int an_csel_failed(const struct an_csel *s);
void an_csel_other(struct an_csel *s, int64_t t0, int64_t last);
uint64_t an_csel_left_out(const struct an_csel *s, uint64_t *one_in);

/* ---- fmt.c: names and numbers as text --------------------------------- */

const char *an_dtype_name(int64_t dtype);
void an_version_str(int64_t code, char *buf, size_t len);
void an_fmt_bytes(uint64_t b, char *buf, size_t len);
void an_fmt_ns(double ns, char *buf, size_t len);
/* A table row as text, shared by the summary and the HTML report. */
struct an_row_text {
	char size[32], mean[32], p50[32], p99[32], max[32];
	double algbw;			/* GB/s over the timed calls */
	char note[96];			/* few timed calls: how many ("" if not) */
};
void an_row_text(struct an_row *r, struct an_row_text *t);

/* ---- state.c ---------------------------------------------------------- */

struct an_state *an_new(const struct an_opts *opts);
/* What state.c fills, and the state itself; an_free (free.c) frees the
 * rest first, each part by the file that owns it, then calls this. */
void an_state_free(struct an_state *an);
/* free.c: the whole state, every stage's part of it. */
void an_free(struct an_state *an);
int an_host_id(struct an_state *an, const char *name);
int an_op_id(struct an_state *an, const char *op);
struct an_proc *an_proc_get(struct an_state *an, const struct ev_src *src);
/* algo.c */
void an_algo(struct an_state *an, const struct ev_src *src, const struct ev_rec_algo *r);
void an_algo_finish(struct an_state *an);	/* before the report or the findings */
void an_algo_free(struct an_state *an);
/* The row's most frequent choice; NULL: none recorded. */
const struct an_choice *an_row_choice(const struct an_row *r);
struct an_proc *an_proc_find(const struct an_state *an, const struct ev_src *src);	/* NULL: none */
struct an_comm *an_comm_get(struct an_state *an, uint64_t hash, int64_t nranks);
/* The proc's part in a comm, made (and the proc a member) at first sight. */
struct an_pc *an_pc_for(struct an_state *an, const struct ev_src *src,
			uint64_t hash, int64_t nranks);
/* Ranks sorted by rank (procs without process_info last). */
int *an_rank_order(const struct an_state *an);
void an_seen(struct an_state *an, const struct ev_src *src);
/* The process's, its host's and the trace's time span take in src->ts
 * (an_seen also counts the event). */
void an_span(struct an_state *an, const struct ev_src *src);
void an_process_info(struct an_state *an, const struct ev_src *src,
		     const struct ev_rec_proc *r);
void an_policy(struct an_state *an, const struct ev_src *src,
	       const struct ev_rec_misc *r);
void an_inject(struct an_state *an, const struct ev_src *src,
	       const struct ev_rec_misc *r);
void an_lost(struct an_state *an, uint64_t n);

static inline int an_is_p2p_op(const char *op)
{
	return op && (!strcmp(op, "send") || !strcmp(op, "recv"));
}

/* ---- stats.c: bandwidth rows ------------------------------------------ */

double an_busbw_factor(const char *op, int nranks);
int an_size_bucket(uint64_t bytes);
struct an_row *an_row_get(struct an_state *an, int op, uint64_t bytes, int nranks);
/* One call of the row, timed when ns > 0; returns whether it was. */
int an_row_add(struct an_row *row, uint64_t bytes, double ns);
/* Times a call already counted (a send counted at its enqueue). */
int an_row_time(struct an_row *row, uint64_t bytes, double ns);
/* Collective calls over the rows, and how many of them were GPU-timed. */
void an_rows_timed(const struct an_state *an, uint64_t *calls, uint64_t *timed);
/* Why calls went untimed, for the notes that say so: the sampling, or GPU
 * timing turned off in some processes (where sampling changes nothing). */
const char *an_untimed_hint(const struct an_state *an, char *buf, size_t len);
void an_sort_rows(struct an_state *an);
int an_row_below_link(const struct an_state *an, const struct an_row *r);

/* ---- straggle.c ------------------------------------------------------- */

/* Lateness of each enqueued slot against the median arrival; returns the
 * index of the last one, or -1 if fewer than two ranks arrived. */
int an_lateness(const int64_t *enter, int n, int64_t *late_ns);
void an_straggle(struct an_state *an, const struct an_entry *e);
int an_straggler_flagged(const struct an_state *an, const struct an_proc *p);
/* A flagged rank's measured lateness per call, in ns. */
double an_straggler_late_ns(const struct an_proc *p);

/* ---- busy.c: time in NCCL --------------------------------------------- */

void an_busy_add(struct an_proc *p, int64_t start, int64_t end);
void an_busy_fold(struct an_proc *p, int keep);
void an_busy_count(struct an_proc *p, int row, const struct an_slot *s);
void an_busy_late(struct an_proc *p, int row, double dur_ns);
void an_busy_estimate(struct an_state *an);
double an_comm_fraction(const struct an_proc *p);
int64_t an_busy_time(const struct an_proc *p);
/* An estimate or a row resting on fewer timed calls says how many. */
#define AN_FEW_TIMED	30
const char *an_busy_note(const struct an_proc *p, char *buf, size_t len);
double an_comm_fraction_timed(const struct an_proc *p);

/* ---- config.c --------------------------------------------------------- */

void an_config_mismatches(struct an_state *an);

/* ---- account.c -------------------------------------------------------- */

/* A collective every rank is done with: counted, compared, freed. */
void an_account(struct an_state *an, struct an_entry *e);

/* ---- clock.c ---------------------------------------------------------- */

/* A finished collective: accounted at once when the hosts' clocks are
 * aligned, else sampled and held until they are. */
void an_clock_finished(struct an_state *an, struct an_entry *e);
/* Offsets from the samples so far; the held collectives accounted. */
void an_clock_settle(struct an_state *an);

/* ---- p2p.c ------------------------------------------------------------ */

void an_p2p_enqueue(struct an_state *an, const struct ev_src *src,
		    const struct ev_rec_coll *r);
void an_p2p_complete(struct an_state *an, const struct ev_src *src,
		     const struct ev_rec_coll *r);
void an_p2p_settle(struct an_pc *pc);
/* A timeout named send or recv p2p_seq: the calls before it are done;
 * returns the first collective seq that may not be (0: unknown). */
uint64_t an_p2p_timeout(struct an_pc *pc, uint64_t p2p_seq);
/* End of trace: the sends and recvs of c still pending, hangs or not. */
void an_p2p_finish(struct an_state *an, struct an_comm *c);

/* ---- match.c ---------------------------------------------------------- */

void an_comm_init(struct an_state *an, const struct ev_src *src,
		  const struct ev_rec_init *r);
void an_comm_end(struct an_state *an, const struct ev_src *src,
		 const struct ev_rec_misc *r);
void an_enqueue(struct an_state *an, const struct ev_src *src,
		const struct ev_rec_coll *r);
void an_complete(struct an_state *an, const struct ev_src *src,
		 const struct ev_rec_coll *r);
void an_timeout(struct an_state *an, const struct ev_src *src,
		const struct ev_rec_misc *r);
/* The window's front (finish.c closes what is left of it). */
struct an_entry **an_ring_at(struct an_comm *c, uint64_t off);
int an_entry_ready(const struct an_entry *e);
void an_pop_front(struct an_state *an, struct an_comm *c, int forced);

/* ---- early.c: findings said while reading ----------------------------- */

/* The reader's part, in the order it reads (the matcher's time order):
 * before any event, how many streams each host's traces hold; when a
 * stream's last event has been handed over, that it ended; and after each
 * event, an_early_tick().  A reader that cannot tell a stream's end says
 * nothing: no early hang is then said. */
void an_streams_expect(struct an_state *an, int host, uint64_t n);
void an_stream_ended(struct an_state *an, int host);
void an_early_scan(struct an_state *an);
static inline void an_early_tick(struct an_state *an)
{
	if (an->early_out && (an->early_ntimeouts != an->ntimeouts ||
			      (an->early_armed && an->events >= an->early_next)))
		an_early_scan(an);
}
/* The test itself, for any tracker of the matcher's state: 1 if comm c's
 * oldest unfinished collective can no longer complete, every member having
 * entered it or said all it will (ended(ctx, proc)) behind it, with the
 * global ranks of each side in out's wait and miss (room for c->nmembers
 * each), its seq and op. */
struct an_early_hang {
	uint64_t seq;
	int op, nwait, nmiss;
	int64_t *wait, *miss;
};
int an_early_hang(struct an_state *an, struct an_comm *c, int (*ended)(void *ctx, int proc),
		  void *ctx, struct an_early_hang *out);
/* After an_finish: each hang said early is among those found, or is
 * said not to be. */
void an_early_confirm(struct an_state *an);

/* ---- finish.c --------------------------------------------------------- */

/* End of trace: hangs found, the tables in the order they are printed. */
void an_finish(struct an_state *an);

/* ---- read.c, traces.c ------------------------------------------------- */

/* Finds the CTF traces under each dir and feeds their events to `an`,
 * decoded by `jobs` processes where more than one (read.c, pread.c).
 * Returns 0, or -1 after printing why on stderr. */
int an_read_traces(const char *const *dirs, int ndirs, struct an_state *an,
		   int show_progress, int jobs);
/* Collects directories holding a CTF `metadata` file under `dir`. */
int an_find_traces(const char *dir, char ***out, int *n);
/* The files `want` accepts in each dir's <sub>/ folder and its host
 * folders' (DIR/<host>/<sub>/): real paths, sorted, each once (a folder
 * given twice reaches a file twice).  Returns how many; an_paths_free. */
int an_find_files(const char *const *dirs, int ndirs, const char *sub,
		  int (*want)(const char *name), char ***out);
void an_paths_free(char **paths, int n);
/* env.hostname of a trace, from its metadata file; NULL if not found. */
char *an_metadata_hostname(const char *tracedir);

/* ---- dumps.c --------------------------------------------------------- */

/* A hang dump (preload/watchdog/hang.c): a process's own account of what it
 * was stuck in when its watchdog fired. */
enum { AN_DUMP_GPU, AN_DUMP_HOST };
struct an_dump_call {
	uint64_t comm_hash, seq;
	uint64_t p2p_seq;	/* AN_DUMP_GPU: a send's or recv's, else 0 */
	char op[32];		/* allreduce, send...: for a host call, from its name */
	char call[48];		/* AN_DUMP_HOST: the function (ncclAllReduce), else "" */
	int where;		/* GPU: queued, waiting on the GPU; HOST: inside the host call */
	double waited_s;	/* how long it had waited when the dump was written */
};
/* NVML's view of a GPU when the watchdog fired (-1: not given). */
struct an_gpu_health {
	char bus[32];
	int64_t util, throttle, ecc, retired, replays;
};
#define AN_DUMP_GPUS_MAX	8
struct an_dump {
	char *path;		/* realpath of the file */
	struct an_gpu_health gpu[AN_DUMP_GPUS_MAX];
	int ngpu;		/* 0: the dump has no GPU health */
	char *host, *reason, *action;	/* action NULL if absent */
	char *job;		/* NULL: the dump names none */
	int64_t pid, rank;	/* rank -1: the process did not know it */
	double timeout_s;	/* -1: never */
	struct an_dump_call *calls;	/* GPU ones first, in the dump's order */
	int ncalls;
	uint64_t calls_more;	/* past AN_DUMP_CALLS_MAX */
};
#define AN_DUMPS_MAX		4096
#define AN_DUMP_CALLS_MAX	256

/* The ncclguard-hang-*.json files of <DIR>/hang/ and <DIR>/<host>/hang/,
 * each once, into an->dumps[] sorted by path; one not read is said in
 * incomplete[] (hang_dump_unreadable).  NCCLGUARD_LOG=debug says on
 * stderr what each held. */
void an_dumps_read(const char *const *dirs, int ndirs, struct an_state *an);
/* The GPU among the hung collective's ranks' dumps whose health differs
 * from its peers' (busy while stuck, clocks held down, ECC errors, retired
 * pages, PCIe replays): 1 with its rank, dump and the reasons in words,
 * else 0.  ranks[]: the collective's ranks. */
int an_dump_sick_gpu(const struct an_state *an, const int64_t *ranks, int nranks,
		     int64_t *rank, const struct an_dump **dump, const struct an_gpu_health **gpu,
		     char *why, size_t whylen);
/* Before an_finish: a dump whose process's timeout events are not in the
 * trace (its last events never reached it) gives the timeouts it names,
 * so the hang is still found, and is said in incomplete[]
 * (timeout_not_in_trace). */
void an_dumps_check(struct an_state *an);
/* One dump's text: 0, or -1 with why in err (d is then empty). */
int an_dump_parse(const char *buf, size_t len, struct an_dump *d, char *err, size_t errlen);
void an_dump_clear(struct an_dump *d);
void an_dumps_free(struct an_state *an);
/* Where the dumps of a (global) rank say it waits on comm's seq (0: any
 * seq; p2p: seq may be a p2p seq): AN_DUMP_HOST inside the host call
 * (which wins), AN_DUMP_GPU queued, AN_DUMP_NOT_IN it has a dump that
 * names no such call, AN_DUMP_NONE it has none. */
enum { AN_DUMP_NONE = -2, AN_DUMP_NOT_IN = -1 };
int an_dump_where(const struct an_state *an, int64_t rank, uint64_t comm_hash, uint64_t seq,
		  int p2p);

/* ---- flight.c -------------------------------------------------------- */

/* The calls dead processes left in their flight rings (<DIR>/flight/),
 * after the traces: the ones the trace lacks, as coll_enqueue records. */
void an_flight_read(const char *const *dirs, int ndirs, struct an_state *an);
/* A trace's stream file as an_trace_check() found it. */
enum { AN_SF_OK, AN_SF_EMPTY, AN_SF_CUT, AN_SF_BAD };
struct an_sfile {
	char *name;		/* in the trace's folder */
	off_t size, keep;	/* keep: the bytes of whole packets */
	int state;
	int cpu;		/* N of CHANNEL_N, else -1 */
	size_t chan_len;	/* length of CHANNEL */
};
struct an_tcheck {
	int meta_ok;		/* packetized metadata whole, not empty */
	char meta_why[160];	/* else why */
	struct an_sfile *f;	/* sorted by name */
	int nf;
	uint64_t bytes;		/* metadata and streams */
	int nmissing;		/* CHANNEL_N files that should be there */
	char missing[256];	/* the first of them */
};
/* The files of the trace in `dir`: the metadata whole, each stream file
 * whole packets (LTTng's layout), no CHANNEL_N missing.  -1: the folder
 * cannot be listed. */
int an_trace_check(const char *dir, struct an_tcheck *tc);
void an_tcheck_free(struct an_tcheck *tc);

/* ---- findings.c ------------------------------------------------------- */

enum { AN_SEV_INFO, AN_SEV_WARN, AN_SEV_BAD };

/* The kinds (findings.def). */
enum an_kind {
#define NG_FINDING(kind, fail_on, severity, builder, meaning) AN_FK_##kind,
#include "findings.def"
	AN_FK_N
};

/* One finding, as every writer shows it.  kind is its findings.def name;
 * ranks sorted, -1 for a process without process_info; hosts point into
 * an_state. */
struct an_finding {
	const char *kind, *next_step;
	enum an_kind id;
	int severity;
	char *summary;
	int nranks, nhosts;
	int64_t *ranks;
	const char **hosts;
	int64_t weight;		/* which to show first where the summary cuts a
				 * long list of one kind (a clock's offset) */
};
/* The findings, worst first, built on the first call (after an_finish)
 * and kept until an_free; returns how many, *out the array. */
int an_findings_list(struct an_state *an, const struct an_finding **out);
/* Which of the n findings a reader is shown: all of a kind when few, else
 * the AN_SUMMARY_LIST of most weight (a clock line per host is 512 at 512
 * hosts); report.json keeps every one.  show[] and more[] start zeroed;
 * more[i]: how many of its kind were left out, on the last one shown. */
void an_findings_pick(const struct an_finding *fd, int n, char *show, int *more);
void an_findings_free(struct an_state *an);
const char *an_severity_name(int severity);	/* error, warning, info */
/* The --fail-on names (NG_FAIL() bits) the findings count for: a kind's
 * own, where its builder did not say it below the kind's severity. */
unsigned an_findings_fail(struct an_state *an);

typedef void (*an_finding_fn)(void *ctx, int severity, const char *line);
/* The same list as sentences; returns how many are not notes. */
int an_findings(struct an_state *an, an_finding_fn fn, void *ctx);

/* ---- writers ---------------------------------------------------------- */

int an_report_json(struct an_state *an, FILE *f);
int an_report_html(struct an_state *an, FILE *f);

/* ---- html_*.c: the sections of report.html (html.c: the page) -------- */

/* html_axis.c: text from a trace escaped (cut to max characters with an
 * ellipsis), ticks at round numbers and their labels, text widths. */
void an_html_esc(FILE *f, const char *s);
void an_html_esc_cut(FILE *f, const char *s, int max);
int an_html_chars(const char *s);
double an_html_text_w(const char *s, double px);
double an_html_step(double span, int most);
void an_html_tick(double v, double step, char *buf, size_t len);
void an_html_tick_ns(double ns, double step, double range, int sign, char *buf, size_t len);
void an_html_svg(FILE *f, int w, int h, const char *label);
const char *an_html_color(int i);
const char *an_html_host(const struct an_state *an, const struct an_proc *p);
/* html_plot.c: bus bandwidth against size; each rank's time in NCCL. */
void an_html_bandwidth(struct an_state *an, FILE *f);
void an_html_busy(struct an_state *an, FILE *f, const int *order, int n);
/* html_heat.c: the rank x time map of lateness. */
void an_html_heat(struct an_state *an, FILE *f, const int *order);
/* html_hang.c: each hang drawn, rank by rank, on a time axis. */
void an_html_hangs(struct an_state *an, FILE *f);
/* html_table.c: collectives per op; timeouts, injections, policy; ranks. */
void an_html_collectives(struct an_state *an, FILE *f);
void an_html_timeouts(struct an_state *an, FILE *f);
void an_html_injections(struct an_state *an, FILE *f);
void an_html_policy(struct an_state *an, FILE *f);
void an_html_ranks(struct an_state *an, FILE *f, const int *order);
void an_summary(struct an_state *an, FILE *f);
/* chrome.c: what the Chrome trace holds (analyze.h's chrome_* options). */
#define AN_CHROME_CAP		(64ULL << 20)	/* bytes, by default */
#define AN_CHROME_WIN_NS	1000000000LL	/* kept each side of a finding */
struct an_chrome_opts {
	uint64_t cap;			/* bytes; 0: AN_CHROME_CAP */
	int all;			/* every collective, no cap */
	int64_t win_from_ns, win_to_ns;	/* on the trace's timeline; to < 0: none */
	const int64_t *ranks;		/* sorted; nranks 0: all */
	int nranks;
};
struct an_chrome *an_chrome_new(FILE *f, const struct an_chrome_opts *o);
/* an_opts.on_coll: ctx is the struct an_chrome. */
void an_chrome_coll(void *ctx, const struct an_state *an, const struct an_entry *e);
/* The hangs and the closing bracket; returns -1 if anything failed. */
int an_chrome_end(struct an_chrome *ch, const struct an_state *an);
void an_chrome_free(struct an_chrome *ch);

#endif
