/*
 * NCCL's profiler plugin, called as NCCL 2.28 calls it (src/plugin/
 * profiler.cc): NCCL_PROFILER_PLUGIN names the library (unset:
 * libnccl-profiler.so, if there is one; "none": off), which is dlopened
 * RTLD_NOW|RTLD_LOCAL and looked up as ncclProfiler_v5.  Per comm: init
 * as it joins, finalize as it is freed.  Per launch, on the launching
 * thread: a Group event per comm, a Coll event per collective (parent the
 * group; seqNumber NCCL's count of that function on the comm, from 0;
 * algorithm, protocol and channels from the tuning model below), a P2p
 * event per send or receive (one channel), the launch, then the Colls'
 * and the group's stops.  On the stream's worker,
 * as NCCL's proxy thread reports a kernel's channels: a KernelCh per
 * channel when the launch starts (pTimer: the realtime clock, as the
 * GPU's global timer counts), its KernelChStop state and stop when it
 * ends.  A collective whose peer never comes never ends: its channels
 * stay started, as on a GPU.  Proxy ops and steps are not emulated.
 *
 * Which ncclProfiler_vN follows the version the backend says it is
 * (NCCLSIM_VERSION, ncclGetVersion): as NCCL 2.29 and 2.30 do, v6 first,
 * then v5, v4, v3, the first the library has; 2.28 from v5, 2.27 from v4.
 * NCCLSIM_PROFILER_VERSION=6, 5, 4 or 3 asks for that one alone: v4 and
 * v3 are called as NCCL 2.27 and 2.26 would, through ncclProfiler_v4 (no
 * parentGroup) or ncclProfiler_v3 (init knows no comm, each Coll and P2p
 * names its commHash; no GPU timer, no KernelChStop state).  The events
 * are made as v6's and narrowed to the older layout at the call.
 * NCCL_DEBUG=INFO says which was loaded, in NCCL's words.
 *
 * Copy-engine collectives (NCCLSIM_CE_COLL=1, version 2.29 or later): the
 * all-gathers and all-to-alls run "on the copy engine", as NCCL runs them
 * on symmetric windows (src/ce_coll.cc).  As NCCL, through v6 they are a
 * CeColl event (parentObj the CollApi event: none asked for here), its
 * CeSync and CeBatch children if asked, started at the launch and stopped
 * once the copies are enqueued; no Coll, no KernelCh, no seqNumber of
 * their function.  Through v5 and older a plugin hears nothing of them.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libnccl.h"

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded;			/* 0 not tried, 1 loaded, -1 none */
static int abi;				/* 6, 5, 4 or 3: which ncclProfiler_vN */
static union {
	void *any;
	ncclProfiler_v6_t *v6;
	ncclProfiler_v5_t *v5;
	ncclProfiler_v4_t *v4;
	ncclProfiler_v3_t *v3;
} prof;
static int mask;			/* eActivationMask: NCCL's ncclProfilerEventMask */

static const char *dtype_name(ncclDataType_t t)
{
	switch (t) {
	case ncclInt8: return "ncclInt8";
	case ncclUint8: return "ncclUint8";
	case ncclInt32: return "ncclInt32";
	case ncclUint32: return "ncclUint32";
	case ncclInt64: return "ncclInt64";
	case ncclUint64: return "ncclUint64";
	case ncclFloat16: return "ncclFloat16";
	case ncclFloat32: return "ncclFloat32";
	case ncclFloat64: return "ncclFloat64";
	case ncclBfloat16: return "ncclBfloat16";
	default: return "Unknown";
	}
}

/* NCCL_DEBUG=INFO (or TRACE): NCCL's INFO lines. */
static int debug_info(void)
{
	const char *d = getenv("NCCL_DEBUG");

	return d && (!strcasecmp(d, "INFO") || !strcasecmp(d, "TRACE"));
}

static void load(void)
{
	const char *name = getenv("NCCL_PROFILER_PLUGIN");
	const char *v = getenv("NCCLSIM_PROFILER_VERSION");
	int ver = sim_version(), forced = v && *v, first;
	char alt[256], sym[32];
	void *h;

	pthread_mutex_lock(&load_lock);
	if (loaded)
		goto out;
	loaded = -1;
	if (name && !strcasecmp(name, "none"))
		goto out;
	first = forced ? atoi(v) : ver >= 22900 ? 6 : ver >= 22800 ? 5 : ver >= 22700 ? 4 : 3;
	if (first < 3 || first > 6) {
		fprintf(stderr, "ncclsim: NCCLSIM_PROFILER_VERSION=%s: not 3, 4, 5 or 6\n", v);
		goto out;
	}
	h = dlopen(name && *name ? name : "libnccl-profiler.so", RTLD_NOW | RTLD_LOCAL);
	if (!h && name && *name) {
		snprintf(alt, sizeof(alt), "libnccl-profiler-%s.so", name);
		h = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
	}
	if (!h) {
		if (name && *name)
			fprintf(stderr, "ncclsim: profiler plugin %s not loaded: %s\n", name,
				dlerror());
		goto out;
	}
	/* As NCCL: the newest this version knows, then older ones. */
	for (abi = first; abi >= (forced ? first : 3) && !prof.any; abi--) {
		snprintf(sym, sizeof(sym), "ncclProfiler_v%d", abi);
		prof.any = dlsym(h, sym);
	}
	abi++;
	if (!prof.any) {
		if (forced)
			fprintf(stderr, "ncclsim: %s has no %s\n", name ? name : "plugin", sym);
		else
			fprintf(stderr, "ncclsim: %s has no ncclProfiler_v%d..v3\n",
				name ? name : "plugin", first);
		dlclose(h);
		goto out;
	}
	/* Every version's struct starts with its name. */
	if (debug_info())
		fprintf(stderr, "ncclsim: NCCL INFO PROFILER/Plugin: Loaded %s (v%d)\n",
			*(const char *const *)prof.any, abi);
	loaded = 1;
out:
	pthread_mutex_unlock(&load_lock);
}

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The plugin's entry points, as the ABI asked for takes them. */
static ncclResult_t p_init(struct ncclComm *c, int *m)
{
	switch (abi) {
	case 6:
		return prof.v6->init(&c->prof_ctx, c->prof_hash, m, NULL, 1, c->nranks, c->rank,
				     NULL);
	case 5:
		return prof.v5->init(&c->prof_ctx, c->prof_hash, m, NULL, 1, c->nranks, c->rank,
				     NULL);
	case 4:
		return prof.v4->init(&c->prof_ctx, m, NULL, c->prof_hash, 1, c->nranks, c->rank,
				     NULL);
	default:
		return prof.v3->init(&c->prof_ctx, m);
	}
}

/* The Coll and P2p fields v4 and v3 share with v5, by name. */
#define NARROW_COLL(o, i)                                                  \
	do {                                                               \
		(o).seqNumber = (i).seqNumber;                             \
		(o).func = (i).func;                                       \
		(o).sendBuff = (i).sendBuff;                               \
		(o).recvBuff = (i).recvBuff;                               \
		(o).count = (i).count;                                     \
		(o).root = (i).root;                                       \
		(o).datatype = (i).datatype;                               \
		(o).nWarps = (i).nWarps;                                   \
		(o).algo = (i).algo;                                       \
		(o).proto = (i).proto;                                     \
	} while (0)
#define NARROW_P2P(o, i)                                                   \
	do {                                                               \
		(o).func = (i).func;                                       \
		(o).buff = (i).buff;                                       \
		(o).datatype = (i).datatype;                               \
		(o).count = (i).count;                                     \
		(o).peer = (i).peer;                                       \
	} while (0)

/* v6 only adds to v5's union, within its size: v5's events are v6's
 * bytes. */
_Static_assert(sizeof(ncclProfilerEventDescr_v5_t) == sizeof(ncclProfilerEventDescr_v6_t),
	       "v5 is v6's prefix");

/* A v6 event, narrowed to the older layouts (c: its comm).  The copy
 * engine's events are never made for those. */
static void p_start(struct ncclComm *c, void **h, ncclProfilerEventDescr_v6_t *d)
{
	ncclProfilerEventDescr_v5_t d5;
	ncclProfilerEventDescr_v4_t d4;
	ncclProfilerEventDescr_v3_t d3;

	if (abi == 6) {
		prof.v6->startEvent(c->prof_ctx, h, d);
		return;
	}
	if (abi == 5) {
		memcpy(&d5, d, sizeof(d5));
		prof.v5->startEvent(c->prof_ctx, h, &d5);
		return;
	}
	if (abi == 4) {
		memset(&d4, 0, sizeof(d4));
		d4.type = (uint8_t)d->type;
		d4.parentObj = d->parentObj;
		d4.rank = d->rank;
		if (d->type == ncclProfileColl) {
			NARROW_COLL(d4.coll, d->coll);
			d4.coll.nChannels = d->coll.nChannels;
		} else if (d->type == ncclProfileP2p) {
			NARROW_P2P(d4.p2p, d->p2p);
			d4.p2p.nChannels = d->p2p.nChannels;
		} else if (d->type == ncclProfileKernelCh) {
			d4.kernelCh.channelId = d->kernelCh.channelId;
			d4.kernelCh.pTimer = d->kernelCh.pTimer;
		}
		prof.v4->startEvent(c->prof_ctx, h, &d4);
		return;
	}
	memset(&d3, 0, sizeof(d3));
	d3.type = (uint8_t)d->type;
	d3.parentObj = d->parentObj;
	d3.rank = d->rank;
	if (d->type == ncclProfileColl) {
		NARROW_COLL(d3.coll, d->coll);
		d3.coll.commHash = c->prof_hash;
		d3.coll.nMaxChannels = d->coll.nChannels;
	} else if (d->type == ncclProfileP2p) {
		NARROW_P2P(d3.p2p, d->p2p);
		d3.p2p.commHash = c->prof_hash;
	} else if (d->type == ncclProfileKernelCh) {
		d3.kernelCh.channelId = d->kernelCh.channelId;
	}
	prof.v3->startEvent(c->prof_ctx, h, &d3);
}

static void p_stop(void *h)
{
	if (abi == 6)
		prof.v6->stopEvent(h);
	else if (abi == 5)
		prof.v5->stopEvent(h);
	else if (abi == 4)
		prof.v4->stopEvent(h);
	else
		prof.v3->stopEvent(h);
}

static void p_finalize(void *ctx)
{
	if (abi == 6)
		prof.v6->finalize(ctx);
	else if (abi == 5)
		prof.v5->finalize(ctx);
	else if (abi == 4)
		prof.v4->finalize(ctx);
	else
		prof.v3->finalize(ctx);
}

void sim_prof_comm_init(struct ncclComm *c, const char *name)
{
	if (!loaded)
		load();
	if (loaded != 1)
		return;
	/* NCCL's commHash hashes the unique id: every rank agrees on it. */
	c->prof_hash = fnv(name);
	/* NCCL hands every plugin init its one global mask, which a plugin
	 * may keep and change later. */
	if (p_init(c, &mask) != ncclSuccess)
		c->prof_ctx = NULL;
}

void sim_prof_comm_fini(struct ncclComm *c)
{
	if (prof.any && c->prof_ctx)
		p_finalize(c->prof_ctx);
	c->prof_ctx = NULL;
}

/* The tuning model: NCCL_ALGO / NCCL_PROTO name the first choice (as in
 * "NCCL_ALGO=Tree"); else Ring, and LL below 64 KiB, LL128 below 1 MiB,
 * Simple above.  Channels: one per MiB from NCCL_MIN_NCHANNELS (1) to
 * NCCL_MAX_NCHANNELS (4). */
static void choose(const struct sim_op *op, char *algo, char *proto, int *nch)
{
	const char *a = sim_getenv("NCCL_ALGO"), *p = sim_getenv("NCCL_PROTO");
	const char *lo = sim_getenv("NCCL_MIN_NCHANNELS"), *hi = sim_getenv("NCCL_MAX_NCHANNELS");
	uint64_t bytes = op->busbytes;
	int min = lo ? atoi(lo) : 1, max = hi ? atoi(hi) : 4, i;

	if (a && *a && a[0] != '^' && op->kind == SIM_ALLREDUCE) {
		for (i = 0; a[i] && a[i] != ',' && i < 15; i++)
			algo[i] = (char)toupper((unsigned char)a[i]);
		algo[i] = 0;
	} else {
		strcpy(algo, "RING");
	}
	if (p && *p && p[0] != '^') {
		for (i = 0; p[i] && p[i] != ',' && i < 15; i++)
			proto[i] = (char)toupper((unsigned char)p[i]);
		proto[i] = 0;
	} else {
		strcpy(proto, bytes < 65536 ? "LL" : bytes < 1048576 ? "LL128" : "SIMPLE");
	}
	max = max < 1 ? 1 : max > SIM_PROF_CH ? SIM_PROF_CH : max;
	min = min < 1 ? 1 : min > max ? max : min;
	*nch = (int)(1 + (bytes >> 20));
	*nch = *nch < min ? min : *nch > max ? max : *nch;
}

/* NCCL's strings are static: keep ours so for the plugin's sake. */
static const char *intern(const char *s)
{
	static const char *const known[] = {
		"RING", "TREE", "NVLS", "NVLS_TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "PAT",
		"LL", "LL128", "SIMPLE",
	};

	for (unsigned i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(known[i], s))
			return known[i];
	return "UNKNOWN";
}

/* NCCLSIM_CE_COLL=1: all-gathers and all-to-alls on the copy engine.
 * NCCL 2.29 is the first whose plugin hears of them; asked of an older
 * version, the knob is refused once, aloud, and the calls run as kernels. */
static int ce_coll(void)
{
	static int on = -1;
	const char *v;
	int o = __atomic_load_n(&on, __ATOMIC_RELAXED);

	if (o >= 0)
		return o;
	v = getenv("NCCLSIM_CE_COLL");
	o = v && !strcmp(v, "1");
	if (o && sim_version() < 22900) {
		fprintf(stderr, "ncclsim: NCCLSIM_CE_COLL=1 needs NCCLSIM_VERSION 22900 or later "
			"(copy-engine collectives reach a profiler from NCCL 2.29): ignored\n");
		o = 0;
	}
	__atomic_store_n(&on, o, __ATOMIC_RELAXED);
	return o;
}

/* A copy-engine collective, as NCCL's ncclLaunchCeColl tells a v6 plugin:
 * the CeColl event, then (if asked) a ready sync, one batch of copies to
 * the other ranks and a completion sync, each started and stopped as it
 * is enqueued.  The CeColl is stopped at the launch's end. */
static void ce_start(struct ncclComm *c, struct sim_op *op, int m)
{
	ncclProfilerEventDescr_v6_t d;
	void *child;

	if (abi != 6 || !(m & (ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch)))
		return;
	memset(&d, 0, sizeof(d));
	d.type = ncclProfileCeColl;
	d.parentObj = NULL;	/* no CollApi event asked for */
	d.rank = c->rank;
	d.ceColl.seqNumber = c->prof_ce_seq;
	d.ceColl.func = sim_kind_name(op->kind);
	d.ceColl.sendBuff = op->sendbuf;
	d.ceColl.recvBuff = op->recvbuf;
	d.ceColl.count = op->count;
	d.ceColl.root = op->root;
	d.ceColl.datatype = dtype_name(op->type);
	d.ceColl.syncStrategy = "UC";	/* no NVLS multicast here */
	d.ceColl.ceSeqNum = (uint32_t)c->prof_ce_seq;
	d.ceColl.stream = op->stream;
	p_start(c, &op->prof_coll, &d);
	/* Two syncs per collective, each a step of NCCL's counter. */
	c->prof_ce_seq += 2;
	if (!op->prof_coll)
		return;
	for (int k = 0; k < 3; k++) {
		int type = k == 1 ? ncclProfileCeBatch : ncclProfileCeSync;

		if (!(m & type))
			continue;
		memset(&d, 0, sizeof(d));
		d.type = (uint64_t)type;
		d.parentObj = op->prof_coll;
		d.rank = c->rank;
		if (type == ncclProfileCeSync) {
			d.ceCollSync.isComplete = k == 2;
			d.ceCollSync.nRanks = c->nranks;
		} else {
			/* A copy to each other rank: bus bytes, for these. */
			d.ceCollBatch.numOps = c->nranks - 1;
			d.ceCollBatch.totalBytes = op->busbytes;
		}
		child = NULL;
		p_start(c, &child, &d);
		if (child)
			p_stop(child);
	}
}

void sim_prof_launch_begin(struct sim_op *ops, int nops, void **groups)
{
	int m = __atomic_load_n(&mask, __ATOMIC_RELAXED);

	if (!prof.any)
		return;
	for (int i = 0; i < nops; i++) {
		struct sim_op *op = &ops[i];
		struct ncclComm *c = op->comm;
		ncclProfilerEventDescr_v6_t d;
		char algo[16], proto[16];
		void *g;
		int nch;

		groups[i] = NULL;
		op->prof_mask = m;	/* NCCL reads it once per task, at enqueue */
		op->prof_ce = (op->kind == SIM_ALLGATHER || op->kind == SIM_ALLTOALL) &&
			      c && c->nranks > 1 && ce_coll();
		if (!c || !c->prof_ctx)
			continue;
		/* NCCL runs a collective of a 1-rank comm as a local copy, with
		 * no kernel plan: a plugin hears nothing of it (taskAppend()). */
		if (c->nranks == 1 && !sim_kind_sends(op->kind) && !sim_kind_recvs(op->kind))
			continue;
		/* A group event per comm of the launch: the first op of each. */
		for (int k = 0; k < i; k++)
			if (ops[k].comm == c) {
				groups[i] = (void *)-1;	/* not this op's to stop */
				break;
			}
		if (!groups[i] && (m & (ncclProfileGroup | ncclProfileColl | ncclProfileP2p |
					ncclProfileKernelCh))) {
			memset(&d, 0, sizeof(d));
			d.type = ncclProfileGroup;
			d.rank = c->rank;
			p_start(c, &groups[i], &d);
		}
		g = groups[i] != (void *)-1 ? groups[i] : NULL;
		for (int k = 0; k < i && !g; k++)
			if (ops[k].comm == c && groups[k] != (void *)-1)
				g = groups[k];
		if (op->prof_ce) {
			ce_start(c, op, m);
			continue;
		}
		if (sim_kind_sends(op->kind) || sim_kind_recvs(op->kind)) {
			/* NCCL counts no seqNumber for these. */
			if (!(m & (ncclProfileP2p | ncclProfileKernelCh)))
				continue;
			memset(&d, 0, sizeof(d));
			d.type = ncclProfileP2p;
			d.rank = c->rank;
			d.p2p.func = sim_kind_name(op->kind);
			d.p2p.buff = sim_kind_sends(op->kind) ? (void *)op->sendbuf : op->recvbuf;
			d.p2p.datatype = dtype_name(op->type);
			d.p2p.count = op->count;
			d.p2p.peer = op->root;
			d.p2p.nChannels = 1;
			d.p2p.parentGroup = g;
			p_start(c, &op->prof_coll, &d);
			op->prof_nch = 1;
			continue;
		}
		if (m & (ncclProfileColl | ncclProfileKernelCh)) {
			choose(op, algo, proto, &nch);
			memset(&d, 0, sizeof(d));
			d.type = ncclProfileColl;
			d.parentObj = NULL;	/* no CollApi event asked for */
			d.rank = c->rank;
			d.coll.seqNumber = c->prof_seq[op->kind];
			d.coll.func = sim_kind_name(op->kind);
			d.coll.sendBuff = op->sendbuf;
			d.coll.recvBuff = op->recvbuf;
			d.coll.count = op->count;
			d.coll.root = op->root;
			d.coll.datatype = dtype_name(op->type);
			d.coll.nChannels = (uint8_t)nch;
			d.coll.nWarps = 16;
			d.coll.algo = intern(algo);
			d.coll.proto = intern(proto);
			d.coll.parentGroup = g;
			p_start(c, &op->prof_coll, &d);
			op->prof_nch = nch;
		}
		c->prof_seq[op->kind]++;
	}
}

void sim_prof_launch_end(struct sim_op *ops, int nops, void **groups)
{
	if (!prof.any)
		return;
	for (int i = 0; i < nops; i++)
		if (ops[i].prof_coll)
			p_stop(ops[i].prof_coll);
	for (int i = 0; i < nops; i++)
		if (groups[i] && groups[i] != (void *)-1)
			p_stop(groups[i]);
}

static uint64_t gpu_timer(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sim_prof_kernel_start(struct sim_op *op)
{
	ncclProfilerEventDescr_v6_t d;
	uint64_t t = gpu_timer();

	if (!prof.any || !op->prof_coll || op->prof_ce || !(op->prof_mask & ncclProfileKernelCh))
		return;
	for (int ch = 0; ch < op->prof_nch; ch++) {
		memset(&d, 0, sizeof(d));
		d.type = ncclProfileKernelCh;
		d.parentObj = op->prof_coll;
		d.rank = op->comm->rank;
		d.kernelCh.channelId = (uint8_t)ch;
		d.kernelCh.pTimer = t;
		p_start(op->comm, &op->prof_ch[ch], &d);
	}
}

void sim_prof_kernel_end(struct sim_op *op)
{
	ncclProfilerEventStateArgs_v5_t a;

	if (!prof.any)
		return;
	memset(&a, 0, sizeof(a));
	a.kernelCh.pTimer = gpu_timer();
	for (int ch = 0; ch < op->prof_nch; ch++) {
		if (!op->prof_ch[ch])
			continue;
		/* v4's state args are v5's; v3 has no KernelChStop state. */
		if (abi == 6)
			prof.v6->recordEventState(op->prof_ch[ch], ncclProfilerKernelChStop, &a);
		else if (abi == 5)
			prof.v5->recordEventState(op->prof_ch[ch], ncclProfilerKernelChStop, &a);
		else if (abi == 4)
			prof.v4->recordEventState(op->prof_ch[ch], ncclProfilerKernelChStop, &a);
		p_stop(op->prof_ch[ch]);
		op->prof_ch[ch] = NULL;
	}
}
