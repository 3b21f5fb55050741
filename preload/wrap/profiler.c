/*
 * NCCL's profiler plugin (NCCL_PROFILER_PLUGIN=/path/to/libncclguard.so):
 * the same library the preload uses, so that both ways in share one
 * recording path.  NCCL calls it from inside itself, so it sees programs
 * the preload cannot: those that call NCCL through dlsym'd pointers
 * (JAX/XLA) or link it statically.
 *
 * Per communicator NCCL calls init; a context records the comm's hash as
 * the trace knows it: ours when the init ran inside our wrapper (the
 * thread's host-call slot names it), else NCCL's commHash, which every
 * rank agrees on as well.  A comm a wrapper saw gets only what NCCL chose
 * (coll_algo); a comm only the plugin sees gets its calls recorded,
 * timed from NCCL's kernel channel events and watched (watchdog/pcoll.c).
 *
 * Events used: Group (a marker handle), Coll (seqNumber, func, count,
 * datatype, algo, proto, nChannels), P2p (func, count, datatype, peer),
 * KernelCh (GPU start and stop), and from v6 (NCCL 2.29) CeColl: a
 * collective NCCL runs on the copy engine, recorded as a Coll whose
 * algorithm is "CE", no protocol, no channels.  It has no KernelCh: it
 * ends at NCCL's stop (the copies enqueued), untimed on the GPU.  The
 * rest are not asked for: each proxy step event costs NCCL's proxy
 * thread, and CeSync and CeBatch only split a CeColl's host enqueue.
 */
#include <stdlib.h>
#include <string.h>

#include "wrap.h"
#include "nccl_profiler.h"

/* Asked of NCCL.  KernelCh makes NCCL add a proxy operation per channel
 * to every collective: it is what ends a call only the plugin sees.  A
 * comm a wrapper times needs neither it nor the sends and receives. */
#define MASK_WRAPPED (ncclProfileGroup | ncclProfileColl)
#define MASK_PLUGIN (ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh)

/* The entry point of a func NCCL names ("AllReduce"): nccl_api.def's
 * PROF column; an alias's "-" matches no func. */
static int fn_of(const char *func)
{
	static const struct {
		const char *name;
		int fn;
	} t[] = {
#define NCCL_COLL(name, op, params, args, count, dtype, root, comm, stream, per_rank, prof, ...) \
		{ #prof, NG_FN_##name },
#define NCCL_P2P(name, op, params, args, count, dtype, peer, comm, stream, prof) \
		{ #prof, NG_FN_##name },
#include "nccl_api.def"
	};
	static const char *seen[sizeof(t) / sizeof(t[0])];

	if (!func)
		return -1;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (__atomic_load_n(&seen[i], __ATOMIC_RELAXED) == func)
			return t[i].fn;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(t[i].name, func)) {
			__atomic_store_n(&seen[i], func, __ATOMIC_RELAXED);
			return t[i].fn;
		}
	return -1;
}

/* ncclDatatypeToString's names ("ncclFloat32") to ncclDataType_t. */
static int dtype_of(const char *s)
{
	static const char *const names[] = {
		[ncclInt8] = "ncclInt8", [ncclUint8] = "ncclUint8", [ncclInt32] = "ncclInt32",
		[ncclUint32] = "ncclUint32", [ncclInt64] = "ncclInt64",
		[ncclUint64] = "ncclUint64", [ncclFloat16] = "ncclFloat16",
		[ncclFloat32] = "ncclFloat32", [ncclFloat64] = "ncclFloat64",
		[ncclBfloat16] = "ncclBfloat16",
	};
	static const char *seen[sizeof(names) / sizeof(names[0])];

	if (!s)
		return ncclInt8;
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (__atomic_load_n(&seen[i], __ATOMIC_RELAXED) == s)
			return (int)i;
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i] && !strcmp(names[i], s)) {
			__atomic_store_n(&seen[i], s, __ATOMIC_RELAXED);
			return (int)i;
		}
	return ncclInt8;	/* unknown: counted as bytes */
}

static void say_plugin_only(void)
{
	ng_warn_once("this process is seen only through NCCL's profiler plugin (no NCCL call "
		     "went through LD_PRELOAD): its calls, GPU times and hangs are recorded; "
		     "policy, GPU pinning and fault injection need the preload");
}

static int asked;		/* the events asked of NCCL so far */

static int is_creation(int fn)
{
	return fn == NG_FN_ncclCommInitRank || fn == NG_FN_ncclCommInitRankConfig ||
	       fn == NG_FN_ncclCommInitAll || fn == NG_FN_ncclCommInitRankScalable ||
	       fn == NG_FN_ncclCommSplit || fn == NG_FN_ncclCommShrink || fn == NG_FN_ncclCommGrow;
}

/*
 * Whether a wrapper records this comm, and its hash as the wrapper has it.
 * NCCL calls init on the creating thread for a lone blocking init, where
 * our wrapper's host-call slot names the comm; on threads of its own for
 * several inits in a group or a nonblocking one: then any creation in
 * progress in a wrapper, or any wrapper call before, says the preload
 * sees this program's calls, and the hash is the creation's where only
 * one is in progress (else NCCL's: the annotations then carry NCCL's
 * hash, which all ranks agree on as well).
 */
static int wrapped_comm(uint64_t *hash)
{
	struct ng_hostcall *s = ng_tls.slot;
	int n = 0;

	if (s && __atomic_load_n(&s->enter_ns, __ATOMIC_ACQUIRE) && is_creation(s->fn)) {
		*hash = s->comm_hash;
		return 1;
	}
	for (int i = 0; i < NG_HOST_SLOTS; i++) {
		s = &ng_host_slots[i];
		if (__atomic_load_n(&s->enter_ns, __ATOMIC_ACQUIRE) && is_creation(s->fn) &&
		    (!n++ || s->comm_hash == *hash))
			*hash = s->comm_hash;
	}
	return n || __atomic_load_n(&ng_wrapper_seen, __ATOMIC_RELAXED);
}

static ncclResult_t init_ctx(void **context, int *mask, uint64_t nccl_hash, int nranks,
			     int rank)
{
	struct ng_pctx *x;
	uint64_t hash = nccl_hash;
	int saved = ng_in_shim, wrapped;

	*context = NULL;
	if (!__atomic_load_n(&ng_hot.initialized, __ATOMIC_ACQUIRE))
		ng_init();
	if (ng_cfg.disabled) {
		*mask = 0;
		return ncclSuccess;
	}
	ng_in_shim = 1;		/* what we call of NCCL or CUDA is ours */
	ng_tls.in_plugin = 1;
	ng_first_call();
	ng_tls.in_plugin = 0;
	wrapped = wrapped_comm(&hash);
	/* A grown comm is known by NCCL's hash: the wrapper registers it so. */
	if (wrapped && ng_grow_claim(nccl_hash))
		hash = nccl_hash;
	x = ng_pctx_new(!wrapped);
	if (!x) {
		ng_warn_once("profiler plugin: out of memory; a communicator goes unrecorded");
		ng_in_shim = saved;
		/* The mask is NCCL's for every comm: keep what others asked. */
		*mask = __atomic_load_n(&asked, __ATOMIC_RELAXED);
		return ncclSuccess;
	}
	x->nccl_hash = nccl_hash;
	x->nranks = nranks;
	x->rank = rank;
	x->hash = hash;
	if (!wrapped) {
		struct ng_ev_comm_init ev = {
			.comm_hash = nccl_hash, .nranks = nranks, .rank = rank, .cuda_dev = -1,
			.result = -1, .kind = "plugin", .comm_index = -1, .blocking = -1,
		};

		say_plugin_only();
		if (nranks == 1)
			ng_warn_once("a 1-rank communicator seen only through NCCL's profiler "
				     "plugin: NCCL reports none of its collectives to a plugin, so "
				     "they go unrecorded (preload libncclguard.so to record them)");
		ng_rank_from_comm(rank, nranks);
		ng_process_info_maybe();
		ng_emit_init(1, &ev);
		ev.result = 0;
		ng_emit_init(0, &ev);
	}
	ng_pctx_live(x);
	/* NCCL keeps one mask for all comms, the last init's: never take
	 * back the kernel events a comm only the plugin sees relies on. */
	__atomic_or_fetch(&asked, x->wrapped ? MASK_WRAPPED : MASK_PLUGIN, __ATOMIC_RELAXED);
	*mask = __atomic_load_n(&asked, __ATOMIC_RELAXED);
	*context = x;
	ng_in_shim = saved;
	return ncclSuccess;
}

/* A Coll event, whatever the version's layout: the fields are passed in. */
static void *coll_start(struct ng_pctx *x, uint64_t nccl_seq, const char *func, size_t count,
			int root, const char *dtype, unsigned nch, unsigned nwarps,
			const char *algo, const char *proto)
{
	int fn = fn_of(func);
	uint64_t info;

	if (fn < 0)
		return NULL;
	info = NG_PINFO(ng_palgo_id(algo), ng_pproto_id(proto), nch > 255 ? 255 : nch,
			nwarps > 255 ? 255 : nwarps, nccl_seq);
	return ng_pcoll_start(x, fn, 0, count, dtype_of(dtype), root, info);
}

/* A CeColl event (v6): a Coll on the copy engine.  Its seqNumber is
 * NCCL's CE sync counter, kept as NCCL's op_seq is, for the record only
 * (the analyzer matches choices on comm, op and size). */
static void *ce_start(struct ng_pctx *x, uint64_t nccl_seq, const char *func, size_t count,
		      int root, const char *dtype)
{
	int fn = fn_of(func);

	if (fn < 0)
		return NULL;
	return ng_pcoll_start(x, fn, 0, count, dtype_of(dtype), root,
			      NG_PINFO(NG_PALGO_CE, NG_PPROTO_NONE, 0, 0, nccl_seq));
}

/* A P2p event (a send or a receive): no algorithm; NCCL's channels. */
static void *p2p_start(struct ng_pctx *x, const char *func, size_t count, int peer,
		       const char *dtype, unsigned nch)
{
	int fn = fn_of(func);

	if (fn != NG_FN_ncclSend && fn != NG_FN_ncclRecv)
		return NULL;
	return ng_pcoll_start(x, fn, 1, count, dtype_of(dtype), peer,
			      NG_PINFO(0, 0, nch > 255 ? 255 : nch, 0, 0));
}

static void *kch_start(void *parent, unsigned channel, uint64_t gpu_ns)
{
	if (!parent || *(uint8_t *)parent != NG_PK_COLL)
		return NULL;
	return ng_pcoll_ch_start(parent, channel, gpu_ns);
}

static ncclResult_t stop_event(void *h)
{
	if (!h)
		return ncclSuccess;
	switch (*(uint8_t *)h) {
	case NG_PK_COLL:
		ng_pcoll_host_stop(h);
		break;
	case NG_PK_CH:
		ng_pcoll_ch_stop(h);
		break;
	default:
		break;
	}
	return ncclSuccess;
}

static ncclResult_t finalize(void *context)
{
	if (context)
		ng_pctx_end(context);
	return ncclSuccess;
}

/*
 * ---- v3: NCCL 2.26 ------------------------------------------------------
 * init knows no comm: each Coll names its commHash, and the context of
 * that hash is made at its first event (on NCCL's calling thread, once
 * per comm).  No GPU timer: KernelCh still ends a call.  The context NCCL
 * gets back is the table itself, a marker as v4's and v5's are.
 */
#define V3_COMMS 64
static struct {
	uint64_t hash;
	struct ng_pctx *x;
} v3_comms[V3_COMMS];
static int v3_ncomms;

static struct ng_pctx *v3_ctx(uint64_t hash, int rank)
{
	int n = __atomic_load_n(&v3_ncomms, __ATOMIC_ACQUIRE), m = 0;
	void *x = NULL;

	for (int i = 0; i < n; i++)
		if (v3_comms[i].hash == hash)
			return v3_comms[i].x;
	if (n >= V3_COMMS || init_ctx(&x, &m, hash, 0, rank) != ncclSuccess || !x)
		return NULL;
	v3_comms[n].hash = hash;
	v3_comms[n].x = x;
	__atomic_store_n(&v3_ncomms, n + 1, __ATOMIC_RELEASE);
	return x;
}

/*
 * startEvent, once per layout.  The three name the fields read here
 * alike, but for what the _vN macros say: where a Coll's comm comes from
 * (v3: its commHash), the name of its channel count, whether a P2p is
 * recorded (v3's carries no channel count: not) and the KernelCh's GPU
 * timer (v3: none).  The Group handle is the context, a marker: NCCL
 * passes it back as the parent and stops it.
 */
#define COMM_v6(context, d) ((struct ng_pctx *)(context))
#define COMM_v5 COMM_v6
#define COMM_v4 COMM_v6
#define COMM_v3(context, d) v3_ctx((d)->coll.commHash, (d)->rank)
#define NCH_v6 nChannels
#define NCH_v5 nChannels
#define NCH_v4 nChannels
#define NCH_v3 nMaxChannels
#define P2P_v6(context, d)                                                               \
	p2p_start(context, (d)->p2p.func, (d)->p2p.count, (d)->p2p.peer, (d)->p2p.datatype, \
		  (d)->p2p.nChannels)
#define P2P_v5 P2P_v6
#define P2P_v4 P2P_v6
#define P2P_v3(context, d) NULL
#define PTIMER_v6(d) ((d)->kernelCh.pTimer)
#define PTIMER_v5 PTIMER_v6
#define PTIMER_v4 PTIMER_v6
#define PTIMER_v3(d) 0

#define DEFINE_START(V)                                                                    \
	static ncclResult_t v##V##_start(void *context, void **h,                          \
					 ncclProfilerEventDescr_v##V##_t *d)                \
	{                                                                                  \
		struct ng_pctx *x;                                                         \
                                                                                           \
		*h = NULL;                                                                 \
		if (!context || !d)                                                        \
			return ncclSuccess;                                                \
		switch (d->type) {                                                         \
		case ncclProfileGroup:                                                     \
			*h = context;                                                      \
			break;                                                             \
		case ncclProfileColl:                                                      \
			x = COMM_v##V(context, d);                                         \
			if (x)                                                             \
				*h = coll_start(x, d->coll.seqNumber, d->coll.func,        \
						d->coll.count, d->coll.root,               \
						d->coll.datatype, d->coll.NCH_v##V,        \
						d->coll.nWarps, d->coll.algo, d->coll.proto); \
			break;                                                             \
		case ncclProfileP2p:                                                       \
			*h = P2P_v##V(context, d);                                         \
			break;                                                             \
		case ncclProfileKernelCh:                                                  \
			*h = kch_start(d->parentObj, d->kernelCh.channelId, PTIMER_v##V(d)); \
			break;                                                             \
		default:                                                                   \
			CE_v##V(context, h, d);                                            \
			break;                                                             \
		}                                                                          \
		return ncclSuccess;                                                        \
	}
/* Only v6 knows the copy engine's events; CeSync and CeBatch are not
 * asked for, and one that comes anyway gets no handle. */
#define CE_v6(context, h, d)                                                              \
	do {                                                                              \
		if ((d)->type == ncclProfileCeColl)                                       \
			*(h) = ce_start(context, (d)->ceColl.seqNumber, (d)->ceColl.func, \
					(d)->ceColl.count, (d)->ceColl.root,               \
					(d)->ceColl.datatype);                             \
	} while (0)
#define CE_v5(context, h, d) ((void)0)
#define CE_v4 CE_v5
#define CE_v3 CE_v5
DEFINE_START(6)
DEFINE_START(5)
DEFINE_START(4)
DEFINE_START(3)

/* ---- v6: NCCL 2.29, 2.30 ------------------------------------------------ */
static ncclResult_t v5_record(void *h, ncclProfilerEventState_t state,
			      ncclProfilerEventStateArgs_v5_t *a);

static ncclResult_t v6_init(void **context, uint64_t commId, int *mask, const char *name,
			    int nnodes, int nranks, int rank, ncclDebugLogger_t logfn)
{
	(void)name;
	(void)nnodes;
	(void)logfn;
	/* Asked of an NCCL that has it: a copy-engine collective of a
	 * wrapped comm is told as the others, one of a comm only the plugin
	 * sees is recorded; no other NCCL gets the bit. */
	__atomic_or_fetch(&asked, ncclProfileCeColl, __ATOMIC_RELAXED);
	return init_ctx(context, mask, commId, nranks, rank);
}

__attribute__((visibility("default"))) ncclProfiler_v6_t ncclProfiler_v6 = {
	.name = "ncclguard",
	.init = v6_init,
	.startEvent = v6_start,
	.stopEvent = stop_event,
	.recordEventState = v5_record,	/* v6's state args are v5's */
	.finalize = finalize,
};

/* ---- v5: NCCL 2.28 ------------------------------------------------------ */
static ncclResult_t v5_init(void **context, uint64_t commId, int *mask, const char *name,
			    int nnodes, int nranks, int rank, ncclDebugLogger_t logfn)
{
	(void)name;
	(void)nnodes;
	(void)logfn;
	return init_ctx(context, mask, commId, nranks, rank);
}

static ncclResult_t v5_record(void *h, ncclProfilerEventState_t state,
			      ncclProfilerEventStateArgs_v5_t *a)
{
	if (h && a && state == ncclProfilerKernelChStop && *(uint8_t *)h == NG_PK_CH)
		ng_pcoll_ch_time(h, a->kernelCh.pTimer);
	return ncclSuccess;
}

__attribute__((visibility("default"))) ncclProfiler_v5_t ncclProfiler_v5 = {
	.name = "ncclguard",
	.init = v5_init,
	.startEvent = v5_start,
	.stopEvent = stop_event,
	.recordEventState = v5_record,
	.finalize = finalize,
};

/* ---- v4: NCCL 2.27 ------------------------------------------------------ */
static ncclResult_t v4_init(void **context, int *mask, const char *name, uint64_t hash,
			    int nnodes, int nranks, int rank, ncclDebugLogger_t logfn)
{
	(void)name;
	(void)nnodes;
	(void)logfn;
	return init_ctx(context, mask, hash, nranks, rank);
}

__attribute__((visibility("default"))) ncclProfiler_v4_t ncclProfiler_v4 = {
	.name = "ncclguard",
	.init = v4_init,
	.startEvent = v4_start,
	.stopEvent = stop_event,
	.recordEventState = v5_record,	/* v4's state args are v5's */
	.finalize = finalize,
};

/* ---- v3: NCCL 2.26 ------------------------------------------------------ */
static ncclResult_t v3_init(void **context, int *mask)
{
	*context = &v3_comms;
	__atomic_or_fetch(&asked, __atomic_load_n(&ng_wrapper_seen, __ATOMIC_RELAXED) ?
				  MASK_WRAPPED : MASK_PLUGIN,
			  __ATOMIC_RELAXED);
	*mask = __atomic_load_n(&asked, __ATOMIC_RELAXED);
	return ncclSuccess;
}

static ncclResult_t v3_stop(void *h)
{
	return h == (void *)&v3_comms ? ncclSuccess : stop_event(h);
}

static ncclResult_t v3_record(void *h, ncclProfilerEventState_t state,
			      ncclProfilerEventStateArgs_v3_t *a)
{
	(void)h;
	(void)state;
	(void)a;
	return ncclSuccess;
}

static ncclResult_t v3_finalize(void *context)
{
	(void)context;
	return ncclSuccess;
}

__attribute__((visibility("default"))) ncclProfiler_v3_t ncclProfiler_v3 = {
	.name = "ncclguard",
	.init = v3_init,
	.startEvent = v3_start,
	.stopEvent = v3_stop,
	.recordEventState = v3_record,
	.finalize = v3_finalize,
};
