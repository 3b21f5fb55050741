/*
 * What the parts of libncclguard.so offer each other.  Nothing declared
 * here is exported from the library (-fvisibility=hidden and the version
 * script export only the wrapped entry points).
 */
#ifndef NCCLGUARD_H
#define NCCLGUARD_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <nccl.h>

#include <pthread.h>

#include "tp_api.h"
#include "ring.h"

#define NG_EXPORT __attribute__((visibility("default")))
#define NG_TLS __thread __attribute__((tls_model("initial-exec")))
#define NG_UNUSED __attribute__((unused))
/* The per-call path in .text.hot, its rare cases in .text.unlikely: the
 * lines a call runs are then few and together. */
#define NG_HOT __attribute__((hot))
#define NG_COLD __attribute__((cold, noinline))

/* Take the line for writing now, during the 5 us of NCCL's own code, so
 * the next call's store to it does not wait for the watchdog's core to
 * give it up.  (A no-op on x86 CPUs without PREFETCHW.) */
static inline void ng_prefetch_w(const void *p)
{
#if defined(__x86_64__)
	__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/* Exit statuses of DESIGN.md section 3. */
#define NG_EXIT_POLICY 3
#define NG_EXIT_TIMEOUT 4

/* ---- log.c ---------------------------------------------------------- */
enum ng_level { NG_LOG_QUIET = 0, NG_LOG_INFO = 1, NG_LOG_DEBUG = 2 };
/* `ncclguard[rank R pid P]: ...` on stderr; warnings print even when quiet. */
void ng_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ng_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define ng_info(...) ng_log(NG_LOG_INFO, __VA_ARGS__)
#define ng_debug(...) ng_log(NG_LOG_DEBUG, __VA_ARGS__)
/* Warn once per call site. */
#define ng_warn_once(...)                                                      \
	do {                                                                   \
		static int ng__warned;                                         \
		if (!__atomic_exchange_n(&ng__warned, 1, __ATOMIC_RELAXED))    \
			ng_warn(__VA_ARGS__);                                  \
	} while (0)

/* ---- config.c: environment, overridden by the policy file ------------- */
enum ng_action { NG_ACT_WARN = 0, NG_ACT_ABORT, NG_ACT_EXIT };
struct ng_config {
	/* Read by every call: first, in ng_hot's cache line (hot.c). */
	int disabled;
	int stacks;
	/* GPU timing of calls below sample_bytes: with sample_gap_ns set, at
	 * most one per gap on average per comm and size class (bursts of
	 * NG_SAMPLE_BURST), else 1 in sample_every.  Calls of sample_bytes or
	 * more: every one. */
	uint64_t sample_gap_ns;
	uint64_t sample_bytes;
	long sample_every;
	int log_level;
	int timing;			/* NCCLGUARD_TIMING=0: no GPU events at all */
	double timeout_s;		/* collectives and host calls */
	double init_timeout_s;		/* communicator init and split */
	enum ng_action on_timeout;
	int tsc;			/* NCCLGUARD_CLOCK: the TSC where trusted */
	const char *inject;		/* NCCLGUARD_INJECT, NULL if unset */
	const char *dump_dir;		/* NCCLGUARD_DUMP_DIR, NULL if unset */
};

/* ---- hot.c: the state every intercepted call reads ------------------- */
/* NCCL's ~5 us of host code between two calls evicts the shim's data, so
 * each cache line and page a call touches is a miss on the next one: the
 * flags every call reads and the first 24 bytes of the configuration
 * share one line (40 + 24), next to ng_real in the same page. */
struct ng_hot_flags {
	unsigned char initialized;	/* ng_init done */
	unsigned char first_call_done;	/* ng_first_call done */
	unsigned char capture_seen;	/* the program began a stream capture */
	unsigned char inject_active;	/* NCCLGUARD_INJECT has rules */
	unsigned char ticks;		/* recorded times are TSC ticks (clock.c) */
	const struct ng_tp_ops *tp;	/* NULL: no provider, no events */
	const int *coll_state[2];	/* tp's, set before tp */
	uint64_t coarse_ns;		/* the watchdog's; 0: read the clock */
};
struct ng_hotcfg {
	struct ng_hot_flags hot;
	struct ng_config cfg;
} __attribute__((aligned(64)));
extern struct ng_hotcfg ng_hotcfg;
#define ng_hot (ng_hotcfg.hot)
#define ng_cfg (ng_hotcfg.cfg)
/* Does a session record coll_enqueue or coll_complete now? */
static inline int ng_trace_coll(void)
{
	return __atomic_load_n(&ng_hot.tp, __ATOMIC_ACQUIRE) &&
	       (__atomic_load_n(ng_hot.coll_state[0], __ATOMIC_RELAXED) |
		__atomic_load_n(ng_hot.coll_state[1], __ATOMIC_RELAXED));
}
void ng_config_from_env(struct ng_config *cfg);
int ng_parse_action(const char *s, enum ng_action *out);
const char *ng_action_name(enum ng_action a);

/* ---- clock.c ---------------------------------------------------------- */
uint64_t ng_now_ns(void);		/* CLOCK_MONOTONIC, the trace clock */
uint64_t ng_now_coarse_ns(void);	/* CLOCK_MONOTONIC_COARSE: ms, 5 ns a read */
/*
 * The time an unrecorded call carries (its deadlines, its sampling): while
 * the program makes calls the watchdog publishes CLOCK_MONOTONIC_COARSE
 * in the hot line every NG_BUSY_POLL_MS tick, which spares each call the
 * vDSO's code and data (a handful of cache misses after NCCL's host code).
 * The value is milliseconds old: a tick, the clock's jiffy, the
 * watchdog's wake-up.  During the watchdog's own work and once the calls
 * stop it publishes 0, and calls read the clock themselves.
 */
static inline uint64_t ng_coarse_now(void)
{
	uint64_t t = __atomic_load_n(&ng_hot.coarse_ns, __ATOMIC_RELAXED);

	return __builtin_expect(t != 0, 1) ? t : ng_now_coarse_ns();
}
/* CLOCK_MONOTONIC from the TSC where it is invariant and calibrated,
 * else clock_gettime. */
uint64_t ng_clock_ns(void);
int ng_clock_tsc(void);			/* ng_clock_ns reads the TSC now */
/*
 * A recorded call's host time, taken as cheaply as can be: where clock.c
 * maps the TSC onto CLOCK_MONOTONIC (ng_hot.ticks), the raw counter,
 * which the watchdog converts when it writes the event; else
 * clock_gettime's ns.  The call keeps which of the two it took, and its
 * exit time is of the same kind.  Converting on the watchdog spares the
 * caller the mapping's cache line, its seqlock and a 128-bit multiply.
 */
static inline uint64_t ng_stamp(int ticks)
{
#if defined(__x86_64__)
	if (__builtin_expect(ticks, 1))
		return __builtin_ia32_rdtsc();
#endif
	(void)ticks;
	return ng_now_ns();
}
/* Stamps taken with ng_hot.ticks set, put on CLOCK_MONOTONIC in place
 * (the mapping the watchdog keeps, its latest); 0 stays 0. */
void ng_clock_from_ticks(uint64_t *t, int n);
void ng_clock_reset_after_fork(void);
void ng_clock_init(void);		/* at the first NCCL call */
void ng_clock_tick(void);		/* the watchdog: recalibrate */

/* ---- rank.c ----------------------------------------------------------- */
struct ng_rank {
	int rank, local_rank, world_size;
	const char *source;		/* torchrun, slurm, ompi, mpich, comm, none */
};
extern struct ng_rank ng_rank;
/* getenv is a parameter so tests can present any launcher. */
void ng_rank_discover(struct ng_rank *out, char *(*get)(const char *));
/* A communicator told us our rank (first init wins if no launcher did). */
void ng_rank_from_comm(int rank, int nranks);

/* ---- init.c ----------------------------------------------------------- */
/* One guarded initialisation, from the constructor and lazily from any
 * wrapper (another library's constructor may call NCCL before ours ran). */
void ng_init(void);
/* The first NCCL call of the process: load the tracer, emit process_info,
 * start the watchdog.  Cheap after the first time. */
void ng_first_call(void);
/* What a call reads of its thread, in one line and behind one GOT entry
 * (each initial-exec variable of a shared object is one more load). */
struct ng_recbuf;
struct ng_tls {
	int in_shim;			/* re-entrancy guard */
	int group_depth;		/* ncclGroupStart nesting */
	ncclComm_t last_handle;		/* coll.c: the last comm found */
	struct ng_comm *last_comm;
	struct ng_hostcall *slot;	/* coll.c: this thread's host call */
	struct ng_recbuf *recbuf;	/* recbuf.c: this thread's ring */
	int slot_none, recbuf_none;	/* none left for this thread */
} __attribute__((aligned(64)));
extern NG_TLS struct ng_tls ng_tls;
/* Re-entrancy guard: nonzero while this thread is inside the shim. */
#define ng_in_shim (ng_tls.in_shim)

/* ---- resolve.c: the real NCCL functions (from nccl_api.def) ----------- */
#define NCCL_PASS(ret, fail, name, params, args) ret(*name) params;
#define NCCL_HOOK(ret, fail, name, op, params, args) ret(*name) params;
#define NCCL_COLL(name, op, params, args, ...) ncclResult_t(*name) params;
#define NCCL_P2P(name, op, params, args, ...) ncclResult_t(*name) params;
struct ng_real_nccl {
#include "nccl_api.def"
};
extern struct ng_real_nccl ng_real;
/* Resolve the table once: RTLD_NEXT, dlopen(NOLOAD) libnccl.so.2, pnccl*,
 * NCCLGUARD_NCCL_LIBRARY; never ourselves.  Returns 0 if NCCL was found. */
int ng_resolve_nccl(void);
/* Path of the library the table resolved to ("" if none). */
const char *ng_nccl_path(void);
/* The executable segment of the resolved NCCL, where its calls to its own
 * public functions come from; set by ng_resolve_nccl. */
extern uintptr_t ng_nccl_text_lo, ng_nccl_text_len;
int ng_nccl_text_set(const void *addr);
static inline int ng_from_nccl(const void *ret)
{
	return (uintptr_t)ret - __atomic_load_n(&ng_nccl_text_lo, __ATOMIC_RELAXED) <
	       __atomic_load_n(&ng_nccl_text_len, __ATOMIC_ACQUIRE);
}
/* The resolver's building blocks, for unit tests. */
void *ng_resolve_symbol(const char *name, void **handle_io);
int ng_is_self(const void *addr);

/* ---- ops.h: one id per wrapped entry point ---------------------------- */
#define NCCL_PASS(ret, fail, name, params, args) NG_FN_##name,
#define NCCL_HOOK(ret, fail, name, op, params, args) NG_FN_##name,
#define NCCL_COLL(name, op, params, args, ...) NG_FN_##name,
#define NCCL_P2P(name, op, params, args, ...) NG_FN_##name,
enum ng_fn {
#include "nccl_api.def"
	NG_FN_COUNT
};
extern const char *const ng_fn_name[NG_FN_COUNT];	/* "ncclAllReduce" */
extern const char *const ng_fn_op[NG_FN_COUNT];	/* "allreduce", "-" */
extern const unsigned char ng_fn_per_rank[NG_FN_COUNT];	/* count is per rank */
/* Is `op` an operation name of some entry point?  (injection specs) */
int ng_op_known(const char *op);
/* Bytes per element, 0 if unknown: log2 of each size packed two bits
 * per type, so a call reads no table. */
#define NG_DT_LOG2(t, l) ((uint32_t)(l) << (2 * (t)))
#define NG_DT_SIZES (NG_DT_LOG2(ncclInt8, 0) | NG_DT_LOG2(ncclUint8, 0) |        \
		     NG_DT_LOG2(ncclInt32, 2) | NG_DT_LOG2(ncclUint32, 2) |      \
		     NG_DT_LOG2(ncclInt64, 3) | NG_DT_LOG2(ncclUint64, 3) |      \
		     NG_DT_LOG2(ncclFloat16, 1) | NG_DT_LOG2(ncclFloat32, 2) |   \
		     NG_DT_LOG2(ncclFloat64, 3) | NG_DT_LOG2(ncclBfloat16, 1) |  \
		     NG_DT_LOG2(ncclFloat8e4m3, 0) | NG_DT_LOG2(ncclFloat8e5m2, 0))
static inline size_t ng_dtype_size(ncclDataType_t t)
{
	_Static_assert(ncclNumTypes <= 16, "two bits per type in a 32-bit word");
	return (unsigned)t < ncclNumTypes ? (size_t)1 << ((NG_DT_SIZES >> (2 * t)) & 3) : 0;
}

/* ---- cudart.c: the CUDA runtime calls the shim itself makes ----------- */
struct ng_real_cuda {
	cudaError_t (*cudaSetDevice)(int);
	cudaError_t (*cudaGetDevice)(int *);
	cudaError_t (*cudaEventCreateWithFlags)(cudaEvent_t *, unsigned);
	cudaError_t (*cudaEventDestroy)(cudaEvent_t);
	cudaError_t (*cudaEventRecord)(cudaEvent_t, cudaStream_t);
	cudaError_t (*cudaEventRecordWithFlags)(cudaEvent_t, cudaStream_t, unsigned);
	cudaError_t (*cudaEventQuery)(cudaEvent_t);
	cudaError_t (*cudaEventElapsedTime)(float *, cudaEvent_t, cudaEvent_t);
	cudaError_t (*cudaEventSynchronize)(cudaEvent_t);
	cudaError_t (*cudaStreamIsCapturing)(cudaStream_t, enum cudaStreamCaptureStatus *);
	cudaError_t (*cudaThreadExchangeStreamCaptureMode)(enum cudaStreamCaptureMode *);
	cudaError_t (*cudaRuntimeGetVersion)(int *);
	cudaError_t (*cudaDriverGetVersion)(int *);
	cudaError_t (*cudaDeviceGetPCIBusId)(char *, int, int);
	cudaError_t (*cudaGetLastError)(void);
	cudaError_t (*cudaStreamCreateWithFlags)(cudaStream_t *, unsigned);
};
extern struct ng_real_cuda ng_cuda;
int ng_resolve_cuda(void);		/* 0 if the runtime was found */
const char *ng_cudart_path(void);

/* ---- comm.c: communicators, sequence numbers, identity ---------------- */
#define NG_MAX_DEVICES 64
#define NG_DEFERRED_MAX 64
#define NG_RECENT 128		/* power of two */
struct ng_pool;
struct ng_flight;
/* A call as the watchdog needs it to name what is stuck. */
struct ng_recent {			/* one cache line each */
	uint64_t index;			/* published last: 0 while being written */
	int fn;
	uint64_t seq, bytes, enter_ns;
	cudaStream_t stream;
	const char *site;
} __attribute__((aligned(64)));
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
	/* Timed calls only. */
	uint64_t last_timed_call __attribute__((aligned(64)));
	/* A record is reused only by a later comm at the same address (comm.c),
	 * so a thread's cached (handle, record) pair stays right. */
	ncclComm_t handle;
	int flights_out;		/* flights of this comm not yet put back */
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
	int init_reported;
	/* The watchdog's, away from the caller's line: calls known complete
	 * (from timed calls and probes); a call is stuck when it stays past
	 * done_calls for longer than the timeout. */
	uint64_t done_calls __attribute__((aligned(64)));
	uint64_t last_done_seq;		/* last completed collective */
	uint64_t reported_call;
	int probe_out;
	/* Rate sampling, per power-of-two size class: a loop of small calls
	 * does not use up the samples of the other sizes.  The last class's
	 * entry lives in the per-call line (sample_cls_tat). */
	uint64_t sample_tat[64];
	struct ng_recent recent[NG_RECENT];
	pthread_mutex_t lock;		/* deferred[] only */
	int ndeferred;
	struct ng_flight *deferred[NG_DEFERRED_MAX];	/* nonblocking, InProgress */
	uint64_t dead_ns;		/* when it was marked dead */
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
 * once it has been dead this long, with no timing flight out. */
#define NG_COMM_GRACE_NS 5000000000ull
void ng_comm_reset_after_fork(void);	/* every inherited comm is dead */
/* A nonblocking split or shrink not ready after limit_ns (wrap_comm.c),
 * each reported once: 1 and *late filled, else 0. */
struct ng_split_late {
	ncclComm_t parent;
	uint64_t hash, t0;
	const char *kind;
	int grouped;			/* made in a group, not nonblocking */
};
int ng_splits_overdue(uint64_t now, uint64_t limit_ns, struct ng_split_late *late);
void ng_splits_dump(FILE *f, uint64_t now);	/* JSON objects, comma-separated */
void ng_splits_reset_after_fork(void);

/* ---- coll.c: the life of one collective or p2p call ------------------- */
struct ng_call {
	int fn;
	int active;			/* 0: plain pass-through, no bookkeeping */
	struct ng_comm *comm;
	ncclComm_t handle;
	uint64_t seq, p2p_seq;
	uint64_t enter_ns;		/* deadlines, sampling: ms-old will do */
	uint64_t rec_enter, rec_exit;	/* recorded (ng_stamp); rec_exit 0: none */
	uint64_t count, bytes;
	int dtype, root, nranks;
	cudaStream_t stream;
	int captured;
	uint64_t index;			/* the comm's call counter, coll and p2p */
	ncclResult_t result;		/* when the call is not forwarded */
	struct ng_flight *flight;
	const char *site;		/* symbolised call site, NCCLGUARD_STACKS=1 */
	int trace;			/* a session records coll_enqueue */
	int ticks;			/* rec_* are TSC ticks, else ns */
	int coarse;			/* rec_enter is enter_ns: arrival not sampled */
};
/* Returns nonzero when the wrapper must return call->result without
 * calling NCCL (an injected fault). */
int ng_coll_begin(struct ng_call *call, int fn, int is_p2p, uint64_t count,
		  ncclDataType_t dtype, int root, ncclComm_t comm,
		  cudaStream_t stream, int per_rank, const void *ret);
void ng_coll_end(struct ng_call *call, ncclResult_t r);
/* The real function is missing: warn once, the table's failure value. */
void ng_missing(int fn);
/* The thread's current host call, watched for host-side hangs. */
struct ng_hostcall {
	int fn;
	uint64_t comm_hash, seq;
	uint64_t enter_ns;		/* 0: idle */
	int tid;
	int reported;
	int taken;			/* by a live thread; freed at its exit */
};
#define NG_HOST_SLOTS 256
extern struct ng_hostcall ng_host_slots[NG_HOST_SLOTS];
void ng_host_enter(int fn, uint64_t comm_hash, uint64_t seq);
void ng_host_exit(void);
void ng_host_slots_reset_after_fork(void);
#define ng_group_depth (ng_tls.group_depth)

/* Hand-written wrappers of the NCCL_HOOK entries (wrap_comm.c). */
#define NCCL_HOOK(ret, fail, name, op, params, args) ret ngw_##name params;
#include "nccl_api.def"

/* ---- timing.c: GPU timing events ------------------------------------- */
struct ng_ev {
	cudaEvent_t ev;
	struct ng_pool *pool;
	struct ng_ring *home;		/* the pool's free timing events or markers */
	int refs;
};
struct ng_pool {
	int dev;
	cudaStream_t anchor_stream;
	struct ng_ev *evs;
	struct ng_ring free;		/* timing events */
	struct ng_ring marks;		/* cudaEventDisableTiming: completion only */
	/* Written by the watchdog only once running. */
	struct ng_ev *anchor, *spare_anchor;
	uint64_t anchor_host_ns, spare_host_ns;
	int spare_pending;
};
struct ng_flight {
	struct ng_comm *comm;
	uint64_t seq, p2p_seq;
	int fn;
	uint64_t bytes;
	cudaStream_t stream;
	struct ng_ev *start, *end;	/* start NULL: end is a marker, no times */
	uint64_t enter_ns;
	int root;
	const char *site;
	uint64_t index;			/* comm call index it confirms */
	int probe;			/* a watchdog probe, not a call */
};
/* A call's coll_enqueue record on its way to the watchdog thread, which
 * writes the event (an LTTng event costs the caller 250-600 ns on our
 * VMs): one cache line, so the caller dirties one line per call. */
#define NG_ENQ_CAPTURED 1
#define NG_ENQ_P2P 2
#define NG_ENQ_TICKS 4		/* enter and exit are TSC ticks (ng_stamp) */
#define NG_ENQ_COARSE 8		/* enter is the published coarse time, in ns */
/* A small collective's arrival is stamped one call in this many (by seq,
 * power of two); the others carry the coarse time (coll_fast.h). */
#define NG_ARRIVAL_EVERY 8
struct ng_enq_rec {
	uint64_t comm_hash, seq, count, stream, enter, exit;
	int32_t root, nranks;
	uint8_t fn, dtype, group_depth, flags;
	int32_t result;
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct ng_enq_rec) == 64, "a record is one cache line");
extern struct ng_ring ng_flight_queue;
/* Record a probe after the last call of the comm (watchdog thread). */
int ng_timing_probe(struct ng_comm *c, uint64_t index);
extern uint64_t ng_timing_dropped;
void ng_timing_init(void);		/* at the first NCCL call */
int ng_timing_comm_ready(struct ng_comm *c);
struct ng_pool *ng_timing_pool(int dev);
void ng_timing_before(struct ng_call *call);
void ng_timing_after(struct ng_call *call, ncclResult_t r);
void ng_timing_group_member(struct ng_call *call, ncclResult_t r);
void ng_timing_group_end(ncclResult_t r);
#define NG_SAMPLE_BURST 256	/* per size class; a pool times 1023 calls at once */
/* Two timing events cost the caller ~3 us on an H200 host: small calls are
 * sampled (config.c) and the watchdog probes the stream to confirm the
 * ones in between (watchdog.c).  A sampled call is timed while a session
 * records, and marked otherwise.  Rate sampling is GCRA over the comm's
 * calls of one power-of-two size class: a call conforms unless its class
 * is NG_SAMPLE_BURST gaps ahead of schedule.  Once the program captures
 * graphs, probes are unsafe, so every call is sampled.  Needs call->comm. */
static inline int ng_timing_sampled(const struct ng_call *call)
{
	struct ng_comm *c = call->comm;
	uint64_t now = call->enter_ns, tat;
	unsigned cls;

	if (call->bytes >= ng_cfg.sample_bytes ||
	    __atomic_load_n(&ng_hot.capture_seen, __ATOMIC_RELAXED))
		return 1;
	if (!ng_cfg.sample_gap_ns)
		return ng_cfg.sample_every <= 1 ||
		       (call->index - 1) % (uint64_t)ng_cfg.sample_every == 0;
	cls = 63 - __builtin_clzll(call->bytes | 1);
	if (__builtin_expect(cls != c->sample_cls, 0)) {
		c->sample_tat[c->sample_cls] = c->sample_cls_tat;
		c->sample_cls_tat = c->sample_tat[cls];
		c->sample_cls = (uint8_t)cls;
	}
	tat = c->sample_cls_tat;
	if (tat > now + NG_SAMPLE_BURST * ng_cfg.sample_gap_ns)
		return 0;
	c->sample_cls_tat = (tat > now ? tat : now) + ng_cfg.sample_gap_ns;
	return 1;
}
/* Per-thread rings of coll_enqueue records for the watchdog (recbuf.c;
 * the push, inlined into the wrappers, in recbuf.h);
 * threads beyond NG_RECBUFS_MAX at once write their events themselves. */
#define NG_RECBUFS_MAX 256
void ng_recbuf_init(void (*emit)(const struct ng_enq_rec *));
int ng_recbuf_drain(void);
int ng_recbuf_count(void);		/* rings made so far */
void ng_recbuf_wait(int ms, int idle);
void ng_recbuf_wake_if_idle(void);	/* a flight for the watchdog */
void ng_recbuf_reset_after_fork(void);
extern uint64_t ng_recbuf_full;		/* pushes that found the ring full */
void ng_timing_defer(struct ng_comm *c, struct ng_flight *f);
void ng_timing_undefer(struct ng_comm *c, ncclResult_t state);
void ng_timing_close(struct ng_flight *f);
void ng_flight_put(struct ng_flight *f);
void ng_ev_put(struct ng_ev *e);
void ng_timing_reset_after_fork(void);

/* ---- callsite.c ------------------------------------------------------ */
/* Symbolised stack of the caller whose return address is `ret`, cached. */
const char *ng_callsite(const void *ret);

/* ---- watchdog.c ------------------------------------------------------- */
void ng_watchdog_start(void);
void ng_watchdog_reset_after_fork(void);
/* Dump the in-flight table (timeouts, exit action). */
void ng_watchdog_dump(const char *reason);

/* ---- inject.c: fault injection (DESIGN.md section 5) ------------------ */
enum ng_inject_kind { NG_INJ_NONE = 0, NG_INJ_DELAY, NG_INJ_DROP, NG_INJ_STALL, NG_INJ_ERROR };
/* Parse the spec; 0 when valid (or NULL), else prints what is wrong. */
int ng_inject_init(const char *spec);
/* For a call about to be made: performs delays and stalls itself, returns
 * NG_INJ_DROP or NG_INJ_ERROR (with *result) when the call must not go on. */
int ng_inject_check(int fn, const char *op, struct ng_comm *c, uint64_t seq,
		    ncclResult_t *result);
/* For tests: parse into a fresh table without touching the active one. */
int ng_inject_parse(const char *spec, char *err, size_t errlen);

/* ---- policy.c: the site policy (DESIGN.md section 4) ------------------ */
/* Constructor: load NCCLGUARD_POLICY or /etc/ncclguard.conf, apply it
 * (environment, pinning, affinity), override ng_cfg's timeouts.  On a
 * violation with action fail it prints the fix and _exit(3)s. */
void ng_policy_init(void);
/* Before ncclGetUniqueId and every init or split: the program may have
 * changed its environment since. `where` names the call. */
void ng_policy_recheck(const char *where);
/* A cudaSetDevice by the program (reported if outside the pin); returns
 * the device to pass on. */
int ng_policy_set_device(int dev);
/* For process_info. */
const char *ng_policy_path(void);
const char *ng_policy_digest(void);

/* ---- trace.c: events (buffered until the provider is loaded) ---------- */
void ng_trace_load(void);
void ng_process_info_maybe(void);
void ng_trace_enqueue(const struct ng_enq_rec *r);
void ng_trace_policy(const char *key, const char *action,
		     const char *user_value, const char *effective_value);

#endif
