/*
 * The collectives NCCL's profiler plugin tells us of (wrap/profiler.c is
 * the ABI; this is what it records and what the watchdog watches).
 *
 * Each communicator NCCL initialises gets a context, and one the plugin
 * alone sees a fixed table of slots, made at init, never on NCCL's hot
 * path.  A collective takes the
 * slot of its sequence number; its host event (Coll) and its kernel
 * channel events (KernelCh, from NCCL's proxy thread, with GPU
 * timestamps) count on the slot, and whichever ends last completes it.
 * Records go through the calling thread's ring as the wrappers' do, and
 * the watchdog writes the events.  Contexts are never freed (a late
 * event or the watchdog may hold one): a finalized one is reused by the
 * next init.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "watchdog.h"

static struct ng_pctx *contexts;	/* pushed at the head, never unlinked */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
uint64_t ng_pcoll_dropped;		/* collectives not tracked: table full */

struct ng_pctx *ng_pctx_new(int track)
{
	struct ng_pctx *x;

	pthread_mutex_lock(&ctx_lock);
	for (x = contexts; x; x = x->next)
		if (__atomic_load_n(&x->dead, __ATOMIC_ACQUIRE) == 1)
			break;
	if (x) {
		/* dead stays set while it is cleared: the watchdog skips the
		 * context until it is published again (ng_pctx_live). */
		x->hash = x->nccl_hash = x->seq = x->p2p_seq = x->ord = 0;
		x->nranks = x->rank = x->wrapped = x->kch_seen = 0;
		memset(x->told, 0, sizeof(x->told));
	} else {
		x = calloc(1, sizeof(*x));
		if (!x)
			goto out;
		x->kind = NG_PK_GROUP;
		x->dead = 2;
		x->next = contexts;
		__atomic_store_n(&contexts, x, __ATOMIC_RELEASE);
	}
	x->dead = 2;		/* taken, not yet live: ng_pctx_live */
	/* The table only for a comm whose calls the plugin tracks: a comm a
	 * wrapper records costs no more than this context. */
	if (track && !x->slot && !(x->slot = calloc(NG_PCOLL_SLOTS, sizeof(*x->slot)))) {
		x->dead = 1;
		x = NULL;
		goto out;
	}
	if (track) {
		memset(x->slot, 0, NG_PCOLL_SLOTS * sizeof(*x->slot));
		for (int i = 0; i < NG_PCOLL_SLOTS; i++) {
			x->slot[i].kind = NG_PK_COLL;
			x->slot[i].ctx = x;
			for (int c = 0; c < NG_PCH_MAX; c++) {
				x->slot[i].ch[c].kind = NG_PK_CH;
				x->slot[i].ch[c].coll = &x->slot[i];
			}
		}
	}
	x->wrapped = !track;
out:
	pthread_mutex_unlock(&ctx_lock);
	return x;
}

void ng_pctx_live(struct ng_pctx *x)
{
	__atomic_store_n(&x->dead, 0, __ATOMIC_RELEASE);
}

void ng_pctx_end(struct ng_pctx *x)
{
	__atomic_store_n(&x->dead, 1, __ATOMIC_RELEASE);
}

int ng_pctx_any(void)
{
	return __atomic_load_n(&contexts, __ATOMIC_ACQUIRE) != NULL;
}

/* Push a record through this thread's ring, or write it here. */
static void push(const struct ng_enq_rec *r)
{
	if (ng_recbuf_push_rec(r))
		ng_trace_enqueue(r);
}

static void fill(struct ng_enq_rec *r, const struct ng_pcoll *c, uint8_t flags)
{
	memset(r, 0, sizeof(*r));
	r->comm_hash = c->ctx->hash;
	r->seq = c->seq;
	r->count = c->count;
	r->enter = c->enter_ns;
	r->exit = c->info;
	r->root = c->root;
	r->nranks = c->ctx->nranks;
	r->fn = (uint8_t)c->fn;
	r->dtype = (uint8_t)c->dtype;
	r->flags = NG_ENQ_PLUGIN | (c->p2p ? NG_ENQ_P2P : 0) | flags;
}

/*
 * Whether NCCL's choice for this op and size is news for the comm: it
 * chooses per size, so one coll_algo per choice (and per change) tells the
 * analyzer all it uses, at a fraction of the records.  The comm's calls
 * are serialised by NCCL: no lock.
 */
static int news(struct ng_pctx *x, int fn, uint64_t bytes, uint64_t info)
{
	unsigned i = (unsigned)((bytes * 0x9e3779b97f4a7c15ull) >> 58 ^ (unsigned)fn) &
		     (NG_PTOLD - 1);
	uint64_t choice = info & 0xffffffffull;		/* without op_seq */

	if (x->told[i].fn == fn + 1 && x->told[i].bytes == bytes && x->told[i].info == choice)
		return 0;
	x->told[i].fn = fn + 1;
	x->told[i].bytes = bytes;
	x->told[i].info = choice;
	return 1;
}

struct ng_pcoll *ng_pcoll_start(struct ng_pctx *x, int fn, int p2p, uint64_t count, int dtype,
				int root, uint64_t info)
{
	struct ng_pcoll *c;
	struct ng_enq_rec r;
	uint64_t seq, ord;
	int trace = ng_trace_coll();

	if (x->wrapped) {
		/* A wrapper records the call: only what NCCL chose, matched
		 * by the analyzer on (comm, op, op_seq). */
		if (trace && !p2p && news(x, fn, count * ng_dtype_size(dtype), info)) {
			struct ng_pcoll tmp = { .ctx = x, .fn = fn, .count = count, .dtype = dtype,
						.root = root, .info = info };

			fill(&r, &tmp, NG_ENQ_ANNOT | NG_ENQ_ALGO);
			push(&r);
		}
		return NULL;
	}
	/* NCCL serialises the calls of a comm; collectives and sends and
	 * receives are counted apart, as the wrappers count them, and share
	 * the table in the order they come. */
	seq = p2p ? ++x->p2p_seq : ++x->seq;
	ord = ++x->ord;
	c = &x->slot[ord & (NG_PCOLL_SLOTS - 1)];
	if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == NG_PS_LIVE &&
	    __atomic_load_n(&c->ch_started, __ATOMIC_ACQUIRE)) {
		/* NG_PCOLL_SLOTS calls behind one still running: untracked. */
		__atomic_add_fetch(&ng_pcoll_dropped, 1, __ATOMIC_RELAXED);
		c = NULL;
	} else {
		c->seq = seq;
		c->ord = ord;
		c->p2p = p2p;
		c->fn = fn;
		c->count = count;
		c->dtype = dtype;
		c->root = root;
		c->info = info;
		c->enter_ns = ng_now_ns();
		c->host_stopped = c->ch_started = c->ch_stopped = c->reported = 0;
		c->gpu_start = UINT64_MAX;
		c->gpu_end = 0;
		__atomic_store_n(&c->state, NG_PS_LIVE, __ATOMIC_RELEASE);
	}
	if (trace) {
		struct ng_pcoll tmp = { .ctx = x, .seq = seq, .p2p = p2p, .fn = fn, .count = count,
					.dtype = dtype, .root = root, .info = info,
					.enter_ns = c ? c->enter_ns : ng_now_ns() };

		fill(&r, &tmp, !p2p && news(x, fn, count * ng_dtype_size(dtype), info) ?
				  NG_ENQ_ALGO : 0);
		push(&r);
	}
	return c;
}

/* GPU timestamps (NCCL's %globaltimer, ns) on CLOCK_MONOTONIC.  The
 * global timer counts from the epoch as the host's realtime clock does;
 * where it does not (a timer the driver did not set), the span keeps its
 * length and starts at the host's enqueue. */
static void gpu_to_mono(const struct ng_pcoll *c, uint64_t *start, uint64_t *end)
{
	struct timespec rt, mt;
	int64_t off;
	uint64_t now;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	now = (uint64_t)mt.tv_sec * 1000000000ull + (uint64_t)mt.tv_nsec;
	off = ((int64_t)rt.tv_sec - (int64_t)mt.tv_sec) * 1000000000ll +
	      ((int64_t)rt.tv_nsec - (int64_t)mt.tv_nsec);
	*start = c->gpu_start - (uint64_t)off;
	*end = c->gpu_end - (uint64_t)off;
	if (c->gpu_start == UINT64_MAX || c->gpu_end < c->gpu_start) {
		*start = *end = 0;
	} else if (*start + 1000000000ull < c->enter_ns || *end > now + 1000000000ull) {
		*end = c->enter_ns + (c->gpu_end - c->gpu_start);
		*start = c->enter_ns;
	}
}

static int trace_complete(void)
{
	return __atomic_load_n(&ng_hot.tp, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(ng_hot.coll_state[1], __ATOMIC_RELAXED);
}

static void try_complete(struct ng_pcoll *c)
{
	int started = __atomic_load_n(&c->ch_started, __ATOMIC_ACQUIRE);
	int want = NG_PINFO_NCH(c->info) ? NG_PINFO_NCH(c->info) : 1;
	int live = NG_PS_LIVE;
	struct ng_enq_rec r;
	struct ng_pcoll *prev;

	if (!__atomic_load_n(&c->host_stopped, __ATOMIC_ACQUIRE))
		return;
	/* A copy-engine collective has no kernel: NCCL stops it once the
	 * copies are enqueued, and it ends there, untimed on the GPU (no
	 * timer comes; the host's enqueue is no GPU time). */
	if (NG_PINFO_ALGO(c->info) != NG_PALGO_CE &&
	    (!started ||
	     __atomic_load_n(&c->ch_stopped, __ATOMIC_ACQUIRE) < (started > want ? started : want)))
		return;
	if (!__atomic_compare_exchange_n(&c->state, &live, NG_PS_DONE, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	if (trace_complete()) {
		uint64_t s, e;

		fill(&r, c, NG_ENQ_DONE);
		gpu_to_mono(c, &s, &e);
		r.enter = s;
		r.exit = e;
		push(&r);
	}
	__atomic_store_n(&c->state, NG_PS_FREE, __ATOMIC_RELEASE);
	/* The call before, ended on the host with no kernel event (NCCL
	 * gave it none: a captured graph's), cannot be waited on. */
	prev = &c->ctx->slot[(c->ord - 1) & (NG_PCOLL_SLOTS - 1)];
	if (prev->ord + 1 == c->ord && __atomic_load_n(&prev->host_stopped, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&prev->ch_started, __ATOMIC_ACQUIRE)) {
		live = NG_PS_LIVE;
		__atomic_compare_exchange_n(&prev->state, &live, NG_PS_FREE, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
	}
}

void ng_pcoll_host_stop(struct ng_pcoll *c)
{
	__atomic_store_n(&c->host_stopped, 1, __ATOMIC_RELEASE);
	try_complete(c);
}

struct ng_pch *ng_pcoll_ch_start(struct ng_pcoll *c, unsigned channel, uint64_t gpu_ns)
{
	uint64_t cur;

	if (channel >= NG_PCH_MAX || __atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != NG_PS_LIVE)
		return NULL;
	__atomic_store_n(&c->ctx->kch_seen, 1, __ATOMIC_RELAXED);
	if (gpu_ns) {
		cur = __atomic_load_n(&c->gpu_start, __ATOMIC_RELAXED);
		while (gpu_ns < cur && !__atomic_compare_exchange_n(&c->gpu_start, &cur, gpu_ns, 1,
								    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
	}
	__atomic_add_fetch(&c->ch_started, 1, __ATOMIC_ACQ_REL);
	return &c->ch[channel];
}

void ng_pcoll_ch_time(struct ng_pch *ch, uint64_t gpu_ns)
{
	struct ng_pcoll *c = ch->coll;
	uint64_t cur = __atomic_load_n(&c->gpu_end, __ATOMIC_RELAXED);

	while (gpu_ns > cur && !__atomic_compare_exchange_n(&c->gpu_end, &cur, gpu_ns, 1,
							    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void ng_pcoll_ch_stop(struct ng_pch *ch)
{
	struct ng_pcoll *c = ch->coll;

	__atomic_add_fetch(&c->ch_stopped, 1, __ATOMIC_ACQ_REL);
	try_complete(c);
}

/*
 * For the watchdog: the oldest collective of a live context past limit_ns
 * that a kernel of it started and never ended, or that never started
 * while a later one of its comm did (it waits behind, or its rank is
 * missing).  Only contexts whose kernels NCCL reports are judged: without
 * KernelCh events no end can be seen.  Each is reported once.
 */
int ng_pcoll_overdue(uint64_t now, uint64_t limit_ns, struct ng_pcoll_late *late)
{
	for (struct ng_pctx *x = __atomic_load_n(&contexts, __ATOMIC_ACQUIRE); x; x = x->next) {
		struct ng_pcoll *old = NULL;

		if (__atomic_load_n(&x->dead, __ATOMIC_ACQUIRE) || x->wrapped ||
		    !__atomic_load_n(&x->kch_seen, __ATOMIC_RELAXED))
			continue;
		/* The comm's oldest call in flight: those behind it wait on it. */
		for (int i = 0; i < NG_PCOLL_SLOTS; i++) {
			struct ng_pcoll *c = &x->slot[i];

			if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == NG_PS_LIVE &&
			    (!old || c->ord < old->ord))
				old = c;
		}
		if (!old || old->reported || old->enter_ns + limit_ns > now)
			continue;
		old->reported = 1;
		late->hash = x->hash;
		late->seq = old->seq;
		late->p2p = old->p2p;
		late->peer = old->root;
		late->fn = old->fn;
		late->nranks = x->nranks;
		late->bytes = old->count * ng_dtype_size(old->dtype) *
			      (ng_fn_per_rank[old->fn] && x->nranks > 0 ? (uint64_t)x->nranks : 1);
		late->enter_ns = old->enter_ns;
		late->info = old->info;
		late->started = __atomic_load_n(&old->ch_started, __ATOMIC_RELAXED);
		return 1;
	}
	return 0;
}

void ng_pcoll_reset_after_fork(void)
{
	/* The parent's comms are not the child's. */
	pthread_mutex_init(&ctx_lock, NULL);
	for (struct ng_pctx *x = contexts; x; x = x->next)
		x->dead = 1;
}
