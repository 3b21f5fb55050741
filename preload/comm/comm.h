/*
 * preload/comm: the communicator registry.  A record per communicator the
 * program made, found lock-free by handle on every call: its identity
 * (the hash all ranks agree on), its sequence numbers, the recent calls
 * the watchdog names when one is stuck, and its timing state.
 */
#ifndef NCCLGUARD_COMM_H
#define NCCLGUARD_COMM_H

#include "core.h"

#define NG_MAX_DEVICES 64
#define NG_DEFERRED_MAX 64
#define NG_RECENT 128		/* power of two */
struct ng_pool;
struct ng_pending;
/* A call as the watchdog needs it to name what is stuck. */
struct ng_recent {			/* one cache line each */
	uint64_t index;			/* published last: 0 while being written */
	int fn;
	uint64_t seq, bytes, enter_ns;
	cudaStream_t stream;
	const char *site;
} __attribute__((aligned(64)));
/* The latest call of a kind whose record the watchdog's drain wrote
 * (watchdog/confirm.c): what a probe after it confirms in the trace. */
struct ng_confirm {
	uint64_t seq, bytes;		/* seq or p2p_seq; 0: none */
	cudaStream_t stream;
	int fn, nranks, root;
};
struct ng_comm {
	/* What every call reads or writes, in one cache line: NCCL's 5 us of
	 * host code per call evicts the shim's data, so each line is a miss. */
	uint64_t hash;
	uint64_t seq, p2p_seq;		/* last issued (one writer: NCCL's rule) */
	uint64_t ncalls;		/* calls issued (app thread) */
	struct ng_pool *pool;		/* timing events of cuda_dev, NULL: untimed */
	cudaStream_t last_stream;
	uint64_t sample_cls_tat;	/* sample_tat[sample_cls], kept here */
	int nranks;
	uint8_t dead;			/* destroyed or aborted */
	uint8_t sample_cls;		/* the size class of the last call */
	uint8_t suspended;		/* ncclCommSuspend: calls refused (wrap_comm.c) */
	/* Timed calls only. */
	uint64_t last_timed_call __attribute__((aligned(64)));
	/* A record is reused only by a later comm at the same address (registry.c),
	 * so a thread's cached (handle, record) pair stays right. */
	ncclComm_t handle;
	int pending_out;		/* timed calls of this comm not yet put back */
	uint64_t parent_hash;
	int rank, cuda_dev;
	int index;			/* creation order in this process */
	int blocking;
	uint64_t split_count;		/* children made from this comm */
	int revoked;
	int aborted_by_us;		/* watchdog action abort: report to the program */
	int abort_done;			/* ncclCommAbort returned */
	uint64_t abort_started_ns;
	/* A nonblocking creation that returned ncclInProgress: when it was
	 * entered, until ncclCommGetAsyncError says the comm is ready or
	 * failed (0 then); the watchdog times it as a blocking init's host
	 * call.  Its kind, for the comm_init_end written then. */
	uint64_t init_pending_ns;
	const char *init_kind;
	const char *init_ident;		/* a grow's: which rule named it (wrap_comm.c) */
	int init_reported;
	/* The watchdog's, away from the caller's line: calls known complete
	 * (from timed calls and probes); a call is stuck when it stays past
	 * done_calls for longer than the timeout. */
	uint64_t done_calls __attribute__((aligned(64)));
	uint64_t last_done_seq;		/* last completed collective */
	uint64_t last_done_p2p;		/* and send or recv (p2p_seq) */
	/* Collective, point-to-point; odd generation: being written.  And
	 * what the probe out (one at a time) confirms when it completes. */
	struct ng_confirm conf[2], probe_conf[2];
	unsigned conf_gen;
	uint64_t reported_call;
	int probe_out;
	/* The heartbeat's: done_calls as it last read it, and when it moved
	 * (a comm with calls open waits from then, not from the oldest
	 * call's entry: a deep queue that drains is no wait). */
	uint64_t hb_done_calls, hb_moved_ns;
	/* Rate sampling, per power-of-two size class: a loop of small calls
	 * does not use up the samples of the other sizes.  The last class's
	 * entry lives in the per-call line (sample_cls_tat). */
	uint64_t sample_tat[64];
	/* Calls of sample_bytes or more, per size class, and groups whose
	 * first member on a stream is one: the same counts on every rank,
	 * which pick the ones timed (timing.c). */
	uint64_t big_calls[64];
	uint64_t big_groups;
	struct ng_recent recent[NG_RECENT];
	pthread_mutex_t lock;		/* deferred[] only */
	int ndeferred;
	struct ng_pending *deferred[NG_DEFERRED_MAX];	/* nonblocking, InProgress */
	uint64_t dead_ns;		/* when it was marked dead */
	int refuse_warned;		/* a refused call of a suspension warned of */
};
uint64_t ng_hash_bytes(const void *p, size_t n, uint64_t seed);
uint64_t ng_hash_unique_id(const ncclUniqueId *id);
uint64_t ng_hash_split(uint64_t parent, int color, uint64_t split_counter);
struct ng_comm *ng_comm_add(ncclComm_t h, uint64_t hash, uint64_t parent,
			    int nranks, int rank, int cuda_dev, int blocking);
/* Lock-free; NULL for a communicator created before we were loaded. */
struct ng_comm *ng_comm_find(ncclComm_t h);
void ng_comm_forget(ncclComm_t h);
/* Visit every known live communicator (watchdog, dumps). */
void ng_comm_foreach(void (*fn)(struct ng_comm *, void *), void *arg);
/* A destroyed comm's record is reused by a later comm at the same address
 * once it has been dead this long, with no timed call pending. */
#define NG_COMM_GRACE_NS 5000000000ull
void ng_comm_reset_after_fork(void);	/* every inherited comm is dead */
#endif
