/*
 * preload/core: what every part of libncclguard.so stands on: logging,
 * the configuration, the data every call reads (hot.c), clocks, the
 * launcher's rank, the real NCCL and CUDA functions, the entry points'
 * ids, and the event sink (the provider library, loaded at the first NCCL
 * call).  Nothing declared here is exported from the library (the
 * version script, ncclguard.map, exports only the wrapped entry points).  core/ uses nothing of the shim above it; ng_init and
 * ng_first_call, which wrappers call, are defined by preload/init.c.
 */
#ifndef NCCLGUARD_CORE_H
#define NCCLGUARD_CORE_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <nccl.h>
#include "nccl_newer.h"

#include <pthread.h>

#include "ringfile.h"
#include "tp_api.h"

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

/* Exit statuses of a guarded process (docs/cli.md, "A guarded process"). */
#define NG_EXIT_POLICY 3
#define NG_EXIT_TIMEOUT 4

/* ---- log.c ----------------------------------------------------------- */
/* verbose sits between info and debug: what every rank did that is the
 * same on every rank (the policy's per-setting decisions), worth reading
 * once but not once per rank. */
enum ng_level { NG_LOG_QUIET = 0, NG_LOG_INFO = 1, NG_LOG_VERBOSE = 2, NG_LOG_DEBUG = 3 };
/* `ncclguard[rank R pid P]: ...` on stderr; warnings print even when quiet. */
void ng_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ng_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define ng_info(...) ng_log(NG_LOG_INFO, __VA_ARGS__)
#define ng_verbose(...) ng_log(NG_LOG_VERBOSE, __VA_ARGS__)
#define ng_debug(...) ng_log(NG_LOG_DEBUG, __VA_ARGS__)
/* Warn once per call site. */
#define ng_warn_once(...)                                                      \
	do {                                                                   \
		static int ng__warned;                                         \
		if (!__atomic_exchange_n(&ng__warned, 1, __ATOMIC_RELAXED))    \
			ng_warn(__VA_ARGS__);                                  \
	} while (0)

/* ---- config.c: environment, overridden by the policy file ------------ */
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
	/* Seconds; HUGE_VAL: never.  Deadlines take ng_seconds_ns (seconds.h),
	 * which does not wrap. */
	double timeout_s;		/* collectives and host calls */
	double init_timeout_s;		/* communicator init and split */
	enum ng_action on_timeout;
	int tsc;			/* NCCLGUARD_CLOCK: the TSC where trusted */
	const char *inject;		/* NCCLGUARD_INJECT, NULL if unset */
	const char *dump_dir;		/* NCCLGUARD_DUMP_DIR, NULL if unset */
	double health_s;		/* NCCLGUARD_HEALTH_INTERVAL; 0: no sampler */
	unsigned verify_every;		/* NCCLGUARD_VERIFY; 0: off, 1: every call */
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
	/* A collective whose seq has these low bits all set goes to output
	 * verification's cold path (wrap.c): NCCLGUARD_VERIFY's N - 1, 0 for
	 * every call, 0xffff when off (one call in 65536 is turned away
	 * there).  Here, in the padding, so the line's layout is unchanged. */
	uint16_t verify_mask;
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

/* ---- clock.c --------------------------------------------------------- */
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
/* Keep a copy of the TSC mapping at m from now on (the flight ring
 * file's, for a reader once the process is gone); NULL: none. */
void ng_clock_mirror(struct ng_rf_ticks *m);
void ng_clock_init(void);		/* at the first NCCL call */
void ng_clock_tick(void);		/* the watchdog: recalibrate */

/* ---- rank.c ---------------------------------------------------------- */
struct ng_rank {
	int rank, local_rank, world_size;
	const char *source;		/* torchrun, slurm, ompi, mpich, comm, none */
};
extern struct ng_rank ng_rank;
/* getenv is a parameter so tests can present any launcher. */
void ng_rank_discover(struct ng_rank *out, char *(*get)(const char *));
/* A communicator told us our rank (first init wins if no launcher did). */
void ng_rank_from_comm(int rank, int nranks);

/* ---- init.c (preload/, above every module) --------------------------- */
/* One guarded initialisation, from the constructor and lazily from any
 * wrapper (another library's constructor may call NCCL before ours ran). */
void ng_init(void);
/* The first NCCL call of the process: load the tracer, emit process_info,
 * start the watchdog.  Cheap after the first time. */
void ng_first_call(void);
/* Whether any NCCL call went through a wrapper in this process: set by
 * ng_first_call unless NCCL's profiler plugin (wrap/profiler.c) calls it,
 * with ng_tls.in_plugin set. */
extern int ng_wrapper_seen;
/* ---- hot.c: the thread's state --------------------------------------- */
/* What a call reads of its thread, in one line and behind one GOT entry
 * (each initial-exec variable of a shared object is one more load). */
struct ng_rf_ring;
struct ng_tls {
	int in_shim;			/* re-entrancy guard */
	int group_depth;		/* ncclGroupStart nesting */
	ncclComm_t last_handle;		/* coll_fast.h: the last comm found */
	struct ng_comm *last_comm;
	struct ng_hostcall *slot;	/* hostcall.c: this thread's host call */
	struct ng_rf_ring *recbuf;	/* recbuf.c: this thread's ring */
	int slot_none, recbuf_none;	/* none left for this thread */
	int in_plugin;			/* NCCL's profiler plugin starts the shim */
} __attribute__((aligned(64)));
extern NG_TLS struct ng_tls ng_tls;
/* Re-entrancy guard: nonzero while this thread is inside the shim. */
#define ng_in_shim (ng_tls.in_shim)

#define ng_group_depth (ng_tls.group_depth)

/* ---- resolve.c: the real NCCL functions (from nccl_api.def) ---------- */
#define NCCL_PASS(ret, fail, name, params, args) ret(*name) params;
#define NCCL_PASS_VOID(name, params, args) void(*name) params;
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
/* Whether ng_resolve_nccl found NCCL (then the path is set), without
 * trying: safe from any thread, and at exit. */
int ng_nccl_resolved(void);
/* Whether a libnccl.so* is loaded; safe at exit (no dlopen). */
int ng_nccl_loaded(void);
/* The executable segment of the resolved NCCL, where its calls to its own
 * public functions come from; set by ng_resolve_nccl. */
extern uintptr_t ng_nccl_text_lo, ng_nccl_text_len;
int ng_nccl_text_set(const void *addr);
static inline int ng_from_nccl(const void *ret)
{
	return (uintptr_t)ret - __atomic_load_n(&ng_nccl_text_lo, __ATOMIC_RELAXED) <
	       __atomic_load_n(&ng_nccl_text_len, __ATOMIC_ACQUIRE);
}
/* ---- census.c: the functions of the library the shim forwards to ----- */
/* The API census, once per process: at the watchdog's first tick after
 * the resolve, or at exit.  Warns of functions no table knows; writes
 * api_census.  Cheap when done. */
void ng_census_tick(void);
void ng_census_reset_after_fork(void);

/* The resolver's building blocks, for unit tests. */
void *ng_resolve_symbol(const char *name, void **handle_io);
int ng_is_self(const void *addr);

/* ---- ops.c: one id per wrapped entry point --------------------------- */
#define NCCL_PASS(ret, fail, name, params, args) NG_FN_##name,
#define NCCL_PASS_VOID(name, params, args) NG_FN_##name,
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

/* ---- cudart.c: the CUDA runtime calls the shim itself makes ---------- */
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
	/* Output verification's copies (watchdog/verify.c). */
	cudaError_t (*cudaHostAlloc)(void **, size_t, unsigned);
	cudaError_t (*cudaMemcpyAsync)(void *, const void *, size_t, enum cudaMemcpyKind,
				       cudaStream_t);
	cudaError_t (*cudaLaunchHostFunc)(cudaStream_t, cudaHostFn_t, void *);
};
extern struct ng_real_cuda ng_cuda;
int ng_resolve_cuda(void);		/* 0 if the runtime was found */
/* A runtime symbol, resolved as the table is (the wrappers of wrap/cuda.c). */
void *ng_cuda_symbol(const char *name, void **handle_io);
const char *ng_cudart_path(void);

/* ---- trace.c: the event sink ----------------------------------------- */
/* A call's coll_enqueue record (struct ng_enq_rec, ringfile.h) goes to the
 * watchdog thread, which writes the event (an LTTng event costs the caller
 * 250-600 ns on our VMs). */
/* Load the provider library (at the first NCCL call; never unloaded). */
void ng_trace_load(void);
/* A policy event: buffered until the provider is loaded (the constructor
 * decides before it is). */
void ng_trace_policy(const char *key, const char *action,
		     const char *user_value, const char *effective_value);
/* The coll_enqueue event of a record. */
void ng_trace_enqueue(const struct ng_enq_rec *r);
/* A record's bytes: count x type, x nranks for per-rank counts. */
static inline uint64_t ng_enq_bytes(const struct ng_enq_rec *r)
{
	return r->count * ng_dtype_size(r->dtype) *
	       (ng_fn_per_rank[r->fn] && r->nranks > 0 ? (uint64_t)r->nranks : 1);
}
/* NCCL's profiler plugin records (NG_ENQ_PLUGIN) carry what NCCL chose
 * in exit; the names are NCCL's (ncclAlgoToString, ncclProtoToString). */
#define NG_PNAMES 16
#define NG_PINFO(algo, proto, nch, nwarps, op_seq)                             \
	((uint64_t)(algo) | (uint64_t)(proto) << 8 | (uint64_t)(nch) << 16 |     \
	 (uint64_t)(nwarps) << 24 | (uint64_t)(uint32_t)(op_seq) << 32)
#define NG_PINFO_ALGO(i) ((unsigned)((i) & 0xff))
#define NG_PINFO_PROTO(i) ((unsigned)((i) >> 8 & 0xff))
#define NG_PINFO_NCH(i) ((unsigned)((i) >> 16 & 0xff))
#define NG_PINFO_NWARPS(i) ((unsigned)((i) >> 24 & 0xff))
#define NG_PINFO_OPSEQ(i) ((uint64_t)((i) >> 32))
#define NG_PALGO_CE 8	/* ng_palgo_name's "CE": the copy engine */
#define NG_PPROTO_NONE 4	/* ng_pproto_name's "-": the copy engine's */
extern const char *const ng_palgo_name[NG_PNAMES];
extern const char *const ng_pproto_name[NG_PNAMES];
unsigned ng_palgo_id(const char *s);
unsigned ng_pproto_id(const char *s);


#endif
