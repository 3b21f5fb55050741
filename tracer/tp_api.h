/*
 * The boundary between the shim (preload/) and its tracepoint provider
 * (build/lib/libncclguard-tp.so).  The shim never links liblttng-ust: it
 * dlopens the provider at the first NCCL call, looks up `ncclguard_tp_ops`
 * and calls through it.  Events are passed as pointers to these structs
 * because a tracepoint takes at most 10 arguments.
 *
 * All *_ns times are CLOCK_MONOTONIC nanoseconds, the clock LTTng-UST
 * stamps events with, so the analyzer maps them to the trace clock by the
 * same offset it applies to event timestamps.  Where a clock plugin
 * replaces LTTng's clock, the provider moves them onto it (tp.c).
 *
 * Every event also carries `job`, the tag of the process's job id
 * (common/job.h, 0: none): it is no member of the structs below but one
 * value per process, set through set_job before the first event, which
 * the session's filter `job == TAG` selects a job by.
 */
#ifndef NCCLGUARD_TP_API_H
#define NCCLGUARD_TP_API_H

#include <stdint.h>

/* 4: set_job, the `job` field of every event, process_info's job_id.
 * 5: coll_algo (NCCL's profiler plugin: algorithm, protocol, channels).
 * 6: process_info's timing_off. */
#define NG_TP_ABI 6

struct ng_ev_process_info {
	const char *host;
	int pid, rank, local_rank, world_size;
	int nccl_version;		/* ncclGetVersion code, 0 if unknown */
	const char *nccl_path;		/* dladdr of the resolved ncclGetVersion */
	int cudart_version, driver_version;
	const char *gpu_pci_bus_id;
	int numa_node;			/* -1 if unknown */
	const char *cpu_affinity;	/* cpulist, "0-15,32-47" */
	const char *socket_ifname;	/* NCCL_SOCKET_IFNAME as NCCL will see it */
	const char *env;		/* NCCL_* variables, "K=V;K=V" */
	const char *policy_path;	/* "" if none */
	const char *policy_digest;	/* sha256 hex of the file, "" if none */
	const char *rank_source;	/* torchrun, slurm, ompi, mpich, comm, none */
	const char *job_id;		/* NCCLGUARD_JOB or SLURM_JOB_ID, "" if none */
	int timing_off;			/* NCCLGUARD_TIMING=0: no coll_complete comes */
};

struct ng_ev_comm_init {
	uint64_t comm_hash, parent_hash;	/* parent 0 for a root comm */
	int nranks, rank, cuda_dev;
	int result;				/* -1 at begin */
	uint64_t duration_ns;			/* 0 at begin */
	const char *kind;			/* initrank, initconfig, initall, scalable, split, shrink */
	int comm_index;				/* creation order in this process, from 0 */
	int blocking;				/* config.blocking as NCCL will see it */
};

struct ng_ev_comm_end {
	uint64_t comm_hash;
	const char *kind;		/* destroy, finalize, abort, revoke */
	int result;
};

struct ng_ev_coll_enqueue {
	uint64_t comm_hash;
	uint64_t seq;			/* collective sequence, 0 for p2p */
	uint64_t p2p_seq;		/* p2p sequence, 0 for collectives */
	const char *op;			/* allreduce, send, ... */
	uint64_t count;
	int datatype;			/* ncclDataType_t */
	uint64_t bytes;			/* nccl-tests size */
	int root_or_peer;		/* -1 if none */
	uint64_t stream;
	int group_depth;		/* depth at the call, 0 outside a group */
	int captured;			/* stream was being captured into a graph */
	int result;
	int nranks;
	int redop;			/* ncclRedOp_t, -1 if none */
	uint64_t enter_ns, exit_ns;	/* host entry and exit (0: not measured) */
	int enter_coarse;		/* enter_ns is the watchdog's coarse time */
};

struct ng_ev_coll_complete {
	uint64_t comm_hash;
	uint64_t seq, p2p_seq;
	const char *op;
	uint64_t bytes;
	uint64_t stream;
	uint64_t gpu_start_ns, gpu_end_ns, duration_ns;
	int nranks;
	int root_or_peer;
};

/* What NCCL chose, from its profiler plugin: written for the first call
 * of each op and size on a comm, and again when the choice changes (NCCL
 * chooses per size).  seq is ours where the plugin alone saw the call (it
 * then also wrote its coll_enqueue), else 0; op_seq is NCCL's count of
 * that operation on the comm, from 0. */
struct ng_ev_coll_algo {
	uint64_t comm_hash;
	uint64_t seq, p2p_seq;
	const char *op;
	uint64_t op_seq;
	uint64_t bytes;
	const char *algo;		/* Ring, Tree, NVLS, ...; "" for p2p */
	const char *proto;		/* LL, LL128, Simple */
	int nchannels, nwarps;
	int nranks;
	int plugin_only;		/* no wrapper saw this comm */
};

struct ng_ev_timeout {
	uint64_t comm_hash;
	uint64_t seq;
	const char *op;
	uint64_t waited_ns;
	const char *action;		/* warn, abort, exit */
	const char *what;		/* collective, init, host */
};

struct ng_ev_policy {
	const char *key, *action, *user_value, *effective_value;
};

struct ng_ev_inject {
	const char *kind;		/* delay, drop, stall, error */
	uint64_t comm_hash, seq;
	const char *op;
	const char *detail;		/* "ms=50", "code=ncclSystemError" */
};

struct ng_ev_callsite {
	uint64_t comm_hash, seq;
	const char *frames;		/* "fn+0x12 (lib.so);fn2+0x40 (exe)" */
};

struct ng_tp_ops {
	int abi;
	void (*process_info)(const struct ng_ev_process_info *);
	void (*comm_init_begin)(const struct ng_ev_comm_init *);
	void (*comm_init_end)(const struct ng_ev_comm_init *);
	void (*comm_end)(const struct ng_ev_comm_end *);
	void (*coll_enqueue)(const struct ng_ev_coll_enqueue *);
	void (*coll_complete)(const struct ng_ev_coll_complete *);
	void (*timeout)(const struct ng_ev_timeout *);
	void (*policy)(const struct ng_ev_policy *);
	void (*inject)(const struct ng_ev_inject *);
	void (*callsite)(const struct ng_ev_callsite *);
	/* The enabled state of coll_enqueue and coll_complete (nonzero while
	 * a session records them), read by the shim on every call: a load,
	 * not a call into this library. */
	const int *coll_state[2];
	/* The job tag stamped on every later event of this process (and of
	 * its forks).  The provider starts with its environment's tag, so
	 * a loader that never calls this still records its job. */
	void (*set_job)(uint64_t tag);
	void (*coll_algo)(const struct ng_ev_coll_algo *);
};

/* Exported by libncclguard-tp.so. */
extern const struct ng_tp_ops ncclguard_tp_ops;

#endif
