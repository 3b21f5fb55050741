/*
 * The analysis's whole state (struct an_state), above the model: the
 * hosts, processes and communicators met (state.c), the job kept (job.c),
 * what the report could not see (incomplete.c, incomplete.def), the hang
 * dumps kept (hangdump.c), the hardware sampler's events (hw.c) and the
 * output fingerprints (verify.c).  The stages above fill their parts of it.
 */
#ifndef NCCLGUARD_AN_STATE_H
#define NCCLGUARD_AN_STATE_H

#include "hw.h"
#include "model.h"

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
struct an_hang;
struct an_mismatch;
struct an_unconf;
struct an_cfg_key;
struct an_finding;
struct an_algo_rec;
struct an_algo_mism;
struct an_dump;

struct an_opts {
	double link_gbps;	/* 0: no link check */
	/* Handed each collective once it is accounted, before it is freed:
	 * how the Chrome trace streams out (chrome.c) without the matcher
	 * calling a writer.  NULL: nobody. */
	void (*on_coll)(void *ctx, const struct an_state *an, const struct an_entry *e);
	void *on_coll_ctx;
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

/* hw.c: what the host's hardware sampler wrote.  One device it watched
 * (hw_device; made up from a change whose device it never announced). */
struct an_hw_dev {
	char *host, *device, *pci_path, *unseen;
	enum ng_hw_dev kind;
	int64_t numa_node;
	int smp;		/* its host's sampler (an_hw.smp) */
	int tied, nranks;	/* ranks that use it, found at the first change */
	int64_t *ranks;		/* sorted */
};
/* One counter's change (hw_change), with the ranks that use its device. */
struct an_hw_change {
	char *host, *device, *counter;
	uint64_t before, after;
	int64_t time_ns;	/* its host's clock; the reference host's after an_hw_finish */
	int src_host;		/* the trace host it came from, for its clock */
	int smp;		/* its host's sampler (an_hw.smp) */
	int ctr;		/* enum ng_hw_ctr, -1: a counter this build does not know */
	int flags;		/* NG_HW_* */
	int dev;		/* index in an_hw.dev, after an_hw_finish */
	int nranks;
	int64_t *ranks;		/* sorted */
};
/* One host's sampler: its hw_sample events. */
struct an_hw_host {
	char *host;
	int starts, ends, timeouts;
	int64_t last_ns;	/* its last event, its own clock */
};
#define AN_HW_CHANGES_MAX	100000
#define AN_HW_DEVS_MAX		(1 << 20)
struct an_hw {
	struct an_hw_dev *dev;
	int ndev;
	struct ng_u64map dev_map;	/* hash of host and device -> dev */
	struct an_hw_change *chg;
	int nchg;
	uint64_t chg_more;	/* past AN_HW_CHANGES_MAX */
	struct an_hw_host *smp;
	int nsmp;
};

/* verify.c: the output fingerprints of sampled calls (docs/verification.md),
 * compared across the ranks of each (comm, seq).  One rank's: */
struct an_fp {
	int proc, nth;		/* nth: its place among the call's, as they came */
	uint64_t hash;
};
/* What a fingerprint hashed: only those of the same can be compared. */
struct an_fp_what {
	int op, nslices;	/* op: an_state.ops */
	uint64_t bytes, compared, slices;	/* slices: a hash of the list */
};
/* One (comm, seq), its fingerprints kept until every rank of the comm
 * wrote one (or the trace ends), then compared and freed; what the first
 * hashed, and whether another hashed something else. */
struct an_fp_call {
	uint64_t comm_hash, seq;
	struct an_fp_what what;
	int comm;		/* an_verify.comm */
	int nranks, settled, other;
	struct an_fp *fp;
	int nfp;
};
/* One comm's counts (report.json's verification[]): (comm, seq) compared
 * across two or more ranks, those that differed, and those with a single
 * rank's fingerprint or fingerprints of different slices. */
struct an_vcomm {
	uint64_t hash, compared, mismatched, unpaired;
};
/* One (comm, seq) whose ranks held different outputs: the reporting
 * processes, by output (grp 0 the largest); majority: group 0 holds more
 * than half of them. */
struct an_fp_mism {
	uint64_t comm_hash, seq, bytes, compared;
	int op, nslices, majority, n, ngrp;
	int *proc, *grp;
};
#define AN_FP_CALLS_MAX		(1 << 22)
#define AN_FP_MISM_MAX		1024	/* each holds its ranks, 32 KiB at 4,096 ranks */
struct an_verify {
	struct an_fp_call *call;
	int ncall, cap_call;
	struct ng_u64map call_map;	/* mixed (comm, seq) -> call */
	struct an_vcomm *comm;
	int ncomm;
	struct ng_u64map comm_map;	/* comm_hash -> comm */
	struct an_fp_mism *mism;
	int nmism;
	uint64_t fps;			/* fingerprints read */
	uint64_t calls_more, mism_more;	/* past the caps */
};

/* census.c: the API census of the processes (api_census events) */
#define AN_CENSUS_SETS_MAX	64
struct an_census_set {
	int64_t version, n_unknown;
	char *unknown, *error, *path;	/* path: the first process's */
	int procs;
};
struct an_census {
	struct an_census_set *sets;	/* with unknown functions, or failed */
	int nsets;
	int procs;			/* processes that took the census */
	int device_procs;		/* of them, with the device API */
	int failed_procs;		/* of them, that could not */
	uint64_t sets_more;		/* past AN_CENSUS_SETS_MAX */
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

	/* hw.c: the hardware sampler's devices and counter changes */
	struct an_hw hw;

	/* verify.c: the output fingerprints */
	struct an_verify verify;

	/* census.c: the processes' API census */
	struct an_census census;

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

/* ---- hangdump.c: the hang dumps kept --------------------------------- */

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
void an_dump_clear(struct an_dump *d);
void an_dumps_free(struct an_state *an);
/* Where the dumps of a (global) rank say it waits on comm's seq (0: any
 * seq; p2p: seq may be a p2p seq): AN_DUMP_HOST inside the host call
 * (which wins), AN_DUMP_GPU queued, AN_DUMP_NOT_IN it has a dump that
 * names no such call, AN_DUMP_NONE it has none. */
enum { AN_DUMP_NONE = -2, AN_DUMP_NOT_IN = -1 };
int an_dump_where(const struct an_state *an, int64_t rank, uint64_t comm_hash, uint64_t seq,
		  int p2p);

/* ---- incomplete.c ----------------------------------------------------- */

void an_incomplete(struct an_state *an, enum an_inc_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void an_incomplete_free(struct an_state *an);
/* End of trace: ranks without events (an_comm.no_events), lost events. */
void an_incomplete_scan(struct an_state *an);
/* "0-3,7" for a sorted list of ranks, cut short with "..." to fit. */
void an_rank_ranges(const int64_t *r, int n, char *buf, size_t len);

/* ---- hw.c: the hardware sampler's events ----------------------------- */

struct ev_rec_hw;
/* One hw_device, hw_change or hw_sample event (kind: EV_HW_*). */
void an_hw(struct an_state *an, const struct ev_src *src, int kind, const struct ev_rec_hw *r);
/* End of trace, once the clocks are settled: changes on the reference
 * clock and in time order, tied to the ranks that use their device
 * (common/hw_tie.h), and incomplete[] told what the samplers missed. */
void an_hw_finish(struct an_state *an);
void an_hw_free(struct an_state *an);
/* A change's device in words: "mlx5_0 port 1", "NVLink 3 of GPU
 * 0000:1a:00.0", "GPU 0000:1a:00.0", "eth0"; buf returned. */
const char *an_hw_dev_words(const struct an_hw_change *c, char *buf, size_t len);

/* ---- census.c: the API census ---------------------------------------- */

struct ev_rec_census;
void an_census(struct an_state *an, const struct ev_src *src, const struct ev_rec_census *r);
/* End of trace: incomplete[] told of functions not interposed (api_unknown). */
void an_census_finish(struct an_state *an);
void an_census_free(struct an_state *an);

/* ---- verify.c: output fingerprints ---------------------------------- */

struct ev_rec_fp;
void an_fprint(struct an_state *an, const struct ev_src *src, const struct ev_rec_fp *r);
/* End of trace: the calls not every rank wrote a fingerprint of compared
 * among those that did. */
void an_verify_finish(struct an_state *an);
void an_verify_free(struct an_state *an);
/* Whether the report speaks of verification: a process ran with it, or
 * a fingerprint is in the trace. */
int an_verify_on(const struct an_state *an);

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

/* ---- state.c ---------------------------------------------------------- */

struct an_state *an_new(const struct an_opts *opts);
/* What state.c fills, and the state itself; an_free (free.c) frees the
 * rest first, each part by the file that owns it, then calls this. */
void an_state_free(struct an_state *an);
int an_host_id(struct an_state *an, const char *name);
int an_op_id(struct an_state *an, const char *op);
struct an_proc *an_proc_get(struct an_state *an, const struct ev_src *src);
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

#endif
