/*
 * preload/watchdog: what the shim watches and records of each call: GPU
 * timing (timing.c), the records on their way to the watchdog thread
 * (recbuf.c), the watchdog and its hang report, the host calls in
 * progress, communicators coming into being and splits pending, fault
 * injection, call sites, process_info.
 */
#ifndef NCCLGUARD_WATCHDOG_H
#define NCCLGUARD_WATCHDOG_H

#include "comm.h"
#include "inject_spec.h"

/* ---- a call, as the watchdog layer sees it --------------------------- */
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
	struct ng_pending *pending;
	const char *site;		/* symbolised call site, NCCLGUARD_STACKS=1 */
	int trace;			/* a session records coll_enqueue */
	int ticks;			/* rec_* are TSC ticks, else ns */
	int coarse;			/* rec_enter is enter_ns: arrival not sampled */
};
/* A small collective's arrival is stamped one call in this many (by seq,
 * power of two); the others carry the coarse time (coll_fast.h). */
#define NG_ARRIVAL_EVERY 8

/* ---- hostcall.c: the call each thread is inside, for host-side hangs --- */
/* struct ng_hostcall is in ringfile.h: under `ncclguard run` the slots
 * live in the flight ring file (ringfile.c), so that the call a killed
 * process was inside is known after it. */
#define NG_HOST_SLOTS NG_RF_SLOTS
extern struct ng_hostcall *ng_host_slots;
/* Move the slots to `to` (NG_HOST_SLOTS of them, zeroed): before any
 * thread took one. */
int ng_host_slots_move(struct ng_hostcall *to);
void ng_host_enter(int fn, uint64_t comm_hash, uint64_t seq);
void ng_host_exit(void);
void ng_host_slots_reset_after_fork(void);
/* The first call of a thread claims a slot (NULL: none left); enter and
 * exit are inline, on the per-call path. */
struct ng_hostcall *ng_coll_slot_claim(void);
static inline void ng_hostcall_enter(int fn, uint64_t comm_hash, uint64_t seq,
				     uint64_t now)
{
	struct ng_hostcall *s = ng_tls.slot;

	if (__builtin_expect(!s, 0) && !(s = ng_coll_slot_claim()))
		return;
	if (s->enter_ns)	/* nested: keep the outer call */
		return;
	s->fn = fn;
	s->comm_hash = comm_hash;
	s->seq = seq;
	s->reported = 0;
	__atomic_store_n(&s->enter_ns, now ? now : 1, __ATOMIC_RELEASE);
}

static inline void ng_hostcall_exit(void)
{
	if (ng_tls.slot)
		__atomic_store_n(&ng_tls.slot->enter_ns, 0, __ATOMIC_RELEASE);
}

/* ---- timing.c: GPU timing events (its pending calls and pools: timing.h) -- */
void ng_timing_init(void);		/* at the first NCCL call */
int ng_timing_comm_ready(struct ng_comm *c);
void ng_timing_before(struct ng_call *call);
void ng_timing_after(struct ng_call *call, ncclResult_t r);
void ng_timing_group_member(struct ng_call *call, ncclResult_t r);
void ng_timing_group_end(ncclResult_t r);
#define NG_SAMPLE_BURST 256	/* per size class; a pool times 1023 calls at once */
#define NG_BIG_STRIDE_MAX 256	/* large calls: at least one in this many timed */
/* Two timing events cost the caller about 3.5 us: small calls are
 * sampled (config.c) and the watchdog probes the stream to confirm the
 * ones in between (watchdog.c).  A sampled call is timed while a session
 * records, and marked otherwise; every call of sample_bytes or more is
 * sampled, and some of them are timed (timing.c).  Rate sampling is GCRA
 * over the comm's calls of one power-of-two size class: a call conforms
 * unless its class is NG_SAMPLE_BURST gaps ahead of schedule.  Once the
 * program captures graphs, probes are unsafe, so every call is sampled.
 * Needs call->comm. */
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
void ng_recbuf_wake_if_idle(void);	/* a pending call for the watchdog */
void ng_recbuf_reset_after_fork(void);
uint64_t ng_recbuf_pending(void);	/* records not yet written */
/* confirm.c: each record the drain wrote, under the drain's lock. */
void ng_confirm_note(const struct ng_enq_rec *r);

/* ---- ringfile.c: the flight ring file (common/ringfile.h) ------------- */
/* Open this process's file under NCCLGUARD_FLIGHT_DIR (at the first NCCL
 * call; nothing when unset or on failure, with a warning).  pending: the
 * records not yet written; at exit the file is removed only when none
 * are (and no host call is open). */
void ng_ringfile_open(uint64_t (*pending)(void));
/* A ring in the file for a new thread; NULL: none (the caller allocates
 * one in memory). */
struct ng_rf_ring *ng_ringfile_ring(void);
void ng_ringfile_reset_after_fork(void);
extern uint64_t ng_recbuf_full;		/* pushes that found the ring full */
void ng_timing_undefer(struct ng_comm *c, ncclResult_t state);
void ng_timing_reset_after_fork(void);

/* ---- callsite.c ------------------------------------------------------ */
/* Symbolised stack of the caller whose return address is `ret`, cached. */
const char *ng_callsite(const void *ret);

/* ---- watchdog.c ------------------------------------------------------ */
void ng_watchdog_start(void);
void ng_watchdog_reset_after_fork(void);
/* Dump the in-flight table (timeouts, exit action). */
void ng_watchdog_dump(const char *reason);

/* ---- hang.c: the hang report ----------------------------------------- */
/* ncclguard-hang-rank<R>-pid<P>.json: `inflight(i)` for i < n are the
 * calls in flight on the GPU. */
void ng_hang_write(const char *reason, const struct ng_pending *(*inflight)(int i), int n);
/* The hang dump's "gpu_health": NVML's view of each GPU the comms use. */
void ng_gpu_health_write(FILE *f);

/* ---- inject.c: fault injection (docs/design.md, "Fault injection") - */
/* Parse the spec; 0 when valid (or NULL), else prints what is wrong. */
int ng_inject_init(const char *spec);
/* For a call about to be made: performs delays and stalls itself, returns
 * NG_INJ_DROP or NG_INJ_ERROR (with *result) when the call must not go on. */
int ng_inject_check(int fn, const char *op, struct ng_comm *c, uint64_t seq,
		    ncclResult_t *result);
/* For tests: parse into a fresh table without touching the active one. */
int ng_inject_parse(const char *spec, char *err, size_t errlen);
/* Logs how many times each rule fired, where not every firing was logged
 * (at exit). */
void ng_inject_report(void);

/* A corrupt rule fires on this call (after it): 1, the inject event written. */
int ng_inject_corrupt(const char *op, struct ng_comm *c, uint64_t seq);
extern int ng_inject_corrupting;	/* a corrupt rule is armed */

/* ---- verify.c: output fingerprints (docs/verification.md) ------------ */
void ng_verify_init(void);		/* after the injection rules: the mask */
void ng_verify_comm_ready(struct ng_comm *c);
/* After the real call: `out` is its output, redop its ncclRedOp_t or -1. */
void ng_verify_call(const struct ng_call *call, void *out, int redop, ncclResult_t r);
void ng_verify_group_end(ncclResult_t r);	/* this thread's outermost group */
void ng_verify_undefer(struct ng_comm *c, ncclResult_t state);
int ng_verify_poll(void);		/* watchdog: copies still on their way */
void ng_verify_reset_after_fork(void);
extern uint64_t ng_verify_dropped;	/* sampled calls left unverified */

/* ---- heartbeat.c: a waiting rank's position, repeated ----------------- */
/* The watchdog's tick: beats when one is due. */
void ng_heartbeat_tick(uint64_t now);
/* A blocking init's size and rank, for the beats written while it waits
 * (lifecycle.c, at its comm_init_begin and _end). */
void ng_heartbeat_init_begin(uint64_t hash, int nranks, int rank);
void ng_heartbeat_init_end(uint64_t hash);
void ng_heartbeat_reset_after_fork(void);
/* A call that makes a communicator. */
static inline int ng_fn_is_init(int fn)
{
	return fn == NG_FN_ncclCommInitRank || fn == NG_FN_ncclCommInitRankConfig ||
	       fn == NG_FN_ncclCommInitAll || fn == NG_FN_ncclCommInitRankScalable ||
	       fn == NG_FN_ncclCommSplit || fn == NG_FN_ncclCommShrink;
}

/* ---- lifecycle.c: communicators coming into being -------------------- */
/* comm_init_begin (begin) or comm_init_end. */
void ng_emit_init(int begin, const struct ng_ev_comm_init *ev);
/* A creation returned r (ncclSuccess or ncclInProgress: a comm to
 * register); emits comm_init_end and, once a rank is known, process_info. */
void ng_comm_created(ncclComm_t h, uint64_t hash, uint64_t parent, int nranks, int rank,
		     int blocking, ncclResult_t r, struct ng_ev_comm_init *ev, uint64_t t0);

/* ---- splits.c: splits and shrinks whose comm comes later ------------- */
void ng_split_pending(ncclComm_t *out, ncclComm_t parent,
		      const struct ng_ev_comm_init *ev, uint64_t t0, int in_group);
/* ncclCommGetAsyncError(comm) said state; c: comm's record, if any. */
void ng_splits_resolve(ncclComm_t comm, struct ng_comm *c, ncclResult_t state, int dropped);
void ng_splits_group_end(ncclResult_t r);	/* this thread's outermost group */
void ng_splits_drop(ncclComm_t parent);		/* destroyed or aborted */
/* A nonblocking split or shrink not ready after limit_ns,
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

/* ---- process_info.c -------------------------------------------------- */
/* Once per process, when a rank is known and a provider is loaded. */
void ng_process_info_maybe(void);

/* ---- pcoll.c: collectives seen through NCCL's profiler plugin -------- */
/* Event handles given to NCCL point at one of these; each starts with its
 * kind, so stopEvent tells them apart. */
enum { NG_PK_GROUP = 1, NG_PK_COLL, NG_PK_CH };
enum { NG_PS_FREE = 0, NG_PS_LIVE, NG_PS_DONE };
#define NG_PCOLL_SLOTS 256	/* calls in flight per comm; power of two */
#define NG_PCH_MAX 64		/* NCCL's MAXCHANNELS */
#define NG_PTOLD 64		/* choices remembered per comm; power of two */

struct ng_pcoll;
struct ng_pch {
	uint8_t kind;			/* NG_PK_CH */
	struct ng_pcoll *coll;
};
struct ng_pctx;
struct ng_pcoll {
	uint8_t kind;			/* NG_PK_COLL */
	int state;			/* NG_PS_*, atomic */
	struct ng_pctx *ctx;
	uint64_t seq, ord, count, enter_ns, info;	/* ord: the comm's call order */
	int fn, dtype, root, p2p;	/* root: the peer of a send or recv */
	int host_stopped, ch_started, ch_stopped;	/* atomic */
	uint64_t gpu_start, gpu_end;	/* NCCL's GPU timer, ns; atomic */
	int reported;			/* watchdog */
	struct ng_pch ch[NG_PCH_MAX];
};
struct ng_pctx {
	uint8_t kind;			/* NG_PK_GROUP: the comm's group handle */
	uint64_t hash;			/* the comm's, as every trace event has it */
	uint64_t nccl_hash;		/* NCCL's commHash */
	int nranks, rank;
	int wrapped;			/* a wrapper records its calls */
	uint64_t seq, p2p_seq, ord;
	struct {			/* the choices told, by op and size */
		uint64_t bytes, info;
		int fn;
	} told[NG_PTOLD];
	int kch_seen;			/* NCCL reports its kernels' channels */
	int dead;			/* 0 live, 1 finalized, 2 being made */
	struct ng_pctx *next;
	struct ng_pcoll *slot;		/* NG_PCOLL_SLOTS, where tracked */
};
extern uint64_t ng_pcoll_dropped;
/* A context; track: the plugin records and watches its calls (else a
 * wrapper does, and it is `wrapped`).  NULL: out of memory. */
struct ng_pctx *ng_pctx_new(int track);
void ng_pctx_live(struct ng_pctx *x);
void ng_pctx_end(struct ng_pctx *x);
int ng_pctx_any(void);			/* NCCL loaded the plugin at all */
/* A collective began on the host; NULL: not tracked (a wrapper records
 * it, or the table is full). */
struct ng_pcoll *ng_pcoll_start(struct ng_pctx *x, int fn, int p2p, uint64_t count, int dtype,
				int root, uint64_t info);
void ng_pcoll_host_stop(struct ng_pcoll *c);
struct ng_pch *ng_pcoll_ch_start(struct ng_pcoll *c, unsigned channel, uint64_t gpu_ns);
void ng_pcoll_ch_time(struct ng_pch *ch, uint64_t gpu_ns);
void ng_pcoll_ch_stop(struct ng_pch *ch);
struct ng_pcoll_late {
	uint64_t hash, seq, bytes, enter_ns, info;
	int fn, nranks, started, p2p, peer;
};
int ng_pcoll_overdue(uint64_t now, uint64_t limit_ns, struct ng_pcoll_late *late);
void ng_pcoll_reset_after_fork(void);

/* The push of a record, inlined into the wrappers. */
#include "recbuf.h"

#endif
