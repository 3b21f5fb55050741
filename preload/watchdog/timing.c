/*
 * GPU timing of collectives (docs/design.md, "GPU timing and sampling").
 *
 * Events come from a per-device pool created when a communicator appears,
 * never on the hot path; pending records from a fixed slab.  A timed call
 * takes an opening and a closing event, records them around the real call
 * on the user's stream and hands the pending call to the watchdog through a
 * lock-free ring.  Without a session nobody reads GPU times: a sampled call
 * then only gets a closing marker (an event without timing, 0.34 us
 * against 1.39), which tells the watchdog it completed.  Inside a group
 * nothing runs before the outermost ncclGroupEnd: the members on one
 * stream share the opening event recorded at the first of them and the
 * closing event recorded after the end.  When a pool, the slab
 * or the ring is exhausted the call goes untimed and is counted.
 *
 * GPU times are put on the host's CLOCK_MONOTONIC through an anchor event
 * recorded on an idle private stream at a known host time; the watchdog
 * re-anchors every second so elapsed times stay small enough for the float
 * milliseconds cudaEventElapsedTime returns.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"

#define NG_EVENTS_PER_POOL 2048	/* timing events, the first two anchors */
#define NG_MARKS_PER_POOL 1024		/* markers: cudaEventDisableTiming */
#define NG_FLIGHTS 8192
#define NG_GROUP_MAX 512
#define NG_GROUP_STREAMS 32

static struct ng_pool *pools[NG_MAX_DEVICES];
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static struct ng_pending *flight_slab;
static struct ng_queue flight_free;
struct ng_queue ng_pending_queue;		/* to the watchdog */
uint64_t ng_timing_dropped;

struct ng_group_stream {
	cudaStream_t stream;
	struct ng_pool *pool;
	struct ng_ev *start;		/* NULL: markers only */
};

struct ng_group {
	int n, nstreams;
	struct ng_pending *members[NG_GROUP_MAX];
	struct ng_group_stream streams[NG_GROUP_STREAMS];
};

static NG_TLS struct ng_group *tls_group;

static int timing_setup(void)
{
	/* Callers hold pool_lock, or are the first NCCL call (init_lock). */
	if (flight_slab)
		return 0;
	flight_slab = calloc(NG_FLIGHTS, sizeof(*flight_slab));
	if (!flight_slab || ng_queue_init(&flight_free, NG_FLIGHTS) ||
	    ng_queue_init(&ng_pending_queue, NG_FLIGHTS))
		return -1;
	for (int i = 0; i < NG_FLIGHTS; i++)
		ng_queue_push(&flight_free, &flight_slab[i]);
	return 0;
}

/* The current device must be `dev`. */
static struct ng_pool *pool_create(int dev)
{
	struct ng_pool *p = calloc(1, sizeof(*p));
	cudaError_t err;
	int i, ret;

	if (!p)
		return NULL;
	p->dev = dev;
	p->evs = calloc(NG_EVENTS_PER_POOL + NG_MARKS_PER_POOL, sizeof(*p->evs));
	if (!p->evs || ng_queue_init(&p->free, NG_EVENTS_PER_POOL) ||
	    ng_queue_init(&p->marks, NG_MARKS_PER_POOL))
		goto fail;
	err = ng_cuda.cudaStreamCreateWithFlags ?
		ng_cuda.cudaStreamCreateWithFlags(&p->anchor_stream, cudaStreamNonBlocking) :
		cudaErrorNotSupported;
	if (err != cudaSuccess) {
		ng_warn("cannot create the timing stream on device %d (cuda error %d): "
			"collectives there go untimed", dev, err);
		goto fail;
	}
	for (i = 0; i < NG_EVENTS_PER_POOL; i++) {
		err = ng_cuda.cudaEventCreateWithFlags(&p->evs[i].ev, cudaEventDefault);
		if (err != cudaSuccess) {
			ng_warn("cudaEventCreate failed on device %d (error %d) after %d events",
				dev, err, i);
			break;
		}
		p->evs[i].pool = p;
		p->evs[i].home = &p->free;
		if (i >= 2)	/* the first two are anchors */
			ng_queue_push(&p->free, &p->evs[i]);
	}
	if (i < 2)
		goto fail;
	for (i = NG_EVENTS_PER_POOL; i < NG_EVENTS_PER_POOL + NG_MARKS_PER_POOL; i++) {
		err = ng_cuda.cudaEventCreateWithFlags(&p->evs[i].ev, cudaEventDisableTiming);
		if (err != cudaSuccess) {
			ng_warn("cudaEventCreate (markers) failed on device %d (error %d)",
				dev, err);
			break;
		}
		p->evs[i].pool = p;
		p->evs[i].home = &p->marks;
		ng_queue_push(&p->marks, &p->evs[i]);
	}
	p->anchor = &p->evs[0];
	p->spare_anchor = &p->evs[1];
	ret = ng_timing_anchor(p, p->anchor, &p->anchor_host_ns);
	if (ret < 0)
		goto fail;
	p->anchor_loose = ret;
	p->anchor_try_ns = p->anchor_host_ns;
	return p;
fail:
	free(p->evs);
	free(p->free.cells);
	free(p->marks.cells);
	free(p);
	return NULL;
}

/*
 * The host time of an anchor is when it was seen complete, an upper bound
 * of when the GPU passed it: GPU times read against it may come out late
 * by the wait, never early, so a call's GPU start is never drawn before
 * its enqueue.  (The time of the record would be early by the launch
 * latency.)  On an idle stream the GPU passes it in microseconds.
 */
#define NG_ANCHOR_WAIT_NS 200000ull
int ng_timing_anchor(struct ng_pool *p, struct ng_ev *ev, uint64_t *host_ns)
{
	uint64_t t0;
	cudaError_t err;

	err = ng_cuda.cudaEventRecord(ev->ev, p->anchor_stream);
	if (err != cudaSuccess)
		return -1;
	t0 = ng_now_ns();
	for (;;) {
		err = ng_cuda.cudaEventQuery(ev->ev);
		*host_ns = ng_now_ns();
		if (err == cudaSuccess)
			return 0;
		if (err != cudaErrorNotReady)
			return -1;
		if (*host_ns - t0 > NG_ANCHOR_WAIT_NS) {
			*host_ns = t0;
			return 1;
		}
	}
}

int ng_timing_comm_ready(struct ng_comm *c)
{
	int cur = -1, dev = c->cuda_dev;

	if (!ng_cfg.timing)
		return -1;
	if (ng_resolve_cuda()) {
		ng_warn_once("no CUDA runtime found in the process: collectives are not timed");
		return -1;
	}
	if (dev < 0 || dev >= NG_MAX_DEVICES)
		return -1;
	pthread_mutex_lock(&pool_lock);
	if (timing_setup()) {
		pthread_mutex_unlock(&pool_lock);
		ng_warn_once("out of memory for timing: collectives are not timed");
		return -1;
	}
	if (!pools[dev]) {
		ng_cuda.cudaGetDevice(&cur);
		if (cur != dev)
			ng_cuda.cudaSetDevice(dev);
		__atomic_store_n(&pools[dev], pool_create(dev), __ATOMIC_RELEASE);
		if (cur != dev && cur >= 0)
			ng_cuda.cudaSetDevice(cur);
	}
	c->pool = pools[dev];
	pthread_mutex_unlock(&pool_lock);
	return c->pool ? 0 : -1;
}

struct ng_pool *ng_timing_pool(int dev)
{
	return dev >= 0 && dev < NG_MAX_DEVICES ?
		__atomic_load_n(&pools[dev], __ATOMIC_ACQUIRE) : NULL;
}

/* A timing event, or a marker that only says "done". */
static struct ng_ev *ev_get(struct ng_pool *p, cudaStream_t s, int timing)
{
	struct ng_queue *from = timing ? &p->free : &p->marks;
	struct ng_ev *e = ng_queue_pop(from);

	if (!e)
		return NULL;
	if (ng_cuda.cudaEventRecord(e->ev, s) != cudaSuccess) {
		ng_queue_push(from, e);
		return NULL;
	}
	e->refs = 1;
	return e;
}

struct ng_ev *ng_timing_marker(struct ng_pool *p, cudaStream_t s)
{
	return p ? ev_get(p, s, 0) : NULL;
}

void ng_ev_put(struct ng_ev *e)
{
	if (e && __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0)
		ng_queue_push(e->home, e);
}

static void flight_fill(struct ng_pending *f, const struct ng_call *call)
{
	/* Its record is not reused while the call is pending (comm/registry.c). */
	f->comm = call->comm;
	__atomic_add_fetch(&f->comm->pending_out, 1, __ATOMIC_RELAXED);
	f->seq = call->seq;
	f->p2p_seq = call->p2p_seq;
	f->fn = call->fn;
	f->bytes = call->bytes;
	f->stream = call->stream;
	f->enter_ns = call->enter_ns;
	f->root = call->root;
	f->site = call->site;
	f->index = call->index;
	f->probe = 0;
	f->traced = call->trace != 0;
	f->start = f->end = NULL;
}

static struct ng_pending *flight_get(const struct ng_call *call)
{
	struct ng_pending *f = ng_queue_pop(&flight_free);

	if (f)
		flight_fill(f, call);
	return f;
}

void ng_pending_put(struct ng_pending *f)
{
	ng_ev_put(f->start);
	ng_ev_put(f->end);
	f->start = f->end = NULL;
	if (f->comm)
		__atomic_sub_fetch(&f->comm->pending_out, 1, __ATOMIC_RELEASE);
	f->comm = NULL;
	ng_queue_push(&flight_free, f);
}

static void dropped(void)
{
	__atomic_add_fetch(&ng_timing_dropped, 1, __ATOMIC_RELAXED);
}

static void flight_submit(struct ng_pending *f)
{
	if (ng_queue_push(&ng_pending_queue, f)) {
		dropped();
		ng_pending_put(f);
		return;
	}
	ng_recbuf_wake_if_idle();
}

void ng_timing_init(void)
{
	pthread_mutex_lock(&pool_lock);
	if (timing_setup())
		ng_warn_once("out of memory for the pending table: events are written inline");
	pthread_mutex_unlock(&pool_lock);
}

/*
 * Every call of sample_bytes or more is marked, but only some are timed:
 * two timing events cost the caller 3.5 us and the call's stream 3.4 us of
 * GPU time, against 0.4 and 0.15 for a marker (bench/ev_overlap.c), which
 * is a tenth of a 1 MiB all-reduce.  Picked by the comm's count of calls
 * of the size class, so that every rank times the same collectives: the
 * analyzer takes a collective's time from the rank that waited least and
 * aligns hosts' clocks on collectives timed on several.  The first
 * NG_SAMPLE_BURST are timed, then one in 2, 4, ... (NG_SAMPLE_BURST / 2
 * per doubling of the count) up to one in NG_BIG_STRIDE_MAX.
 * NCCLGUARD_SAMPLE=1 times every call.  A group is timed as a whole, on
 * the same schedule over the comm's groups that open with such a call
 * (counting its members instead would never pick a group of two).
 */
static int big_pick(uint64_t n)
{
	uint64_t stride;

	if (!ng_cfg.sample_gap_ns && ng_cfg.sample_every <= 1)
		return 1;
	if (n <= NG_SAMPLE_BURST)
		return 1;
	stride = 2ull << (63 - __builtin_clzll((n - 1) / NG_SAMPLE_BURST));
	if (stride > NG_BIG_STRIDE_MAX)
		stride = NG_BIG_STRIDE_MAX;
	return n % stride == 0;
}

static int big_timed(struct ng_comm *c, uint64_t bytes)
{
	return big_pick(++c->big_calls[63 - __builtin_clzll(bytes | 1)]);
}

/* Before the real call of a sampled call outside a group (coll.c decided
 * with ng_timing_sampled, the comm has a pool): the opening event, if it
 * is to be timed; the closing one is a marker otherwise. */
void ng_timing_before(struct ng_call *call)
{
	struct ng_pool *p = call->comm->pool;
	struct ng_pending *f;
	int timed = call->bytes < ng_cfg.sample_bytes || big_timed(call->comm, call->bytes);

	call->pending = NULL;
	f = flight_get(call);
	if (!f) {
		dropped();
		return;
	}
	if (call->trace && timed) {
		f->start = ev_get(p, call->stream, 1);
		if (!f->start) {
			dropped();
			ng_pending_put(f);
			return;
		}
	}
	call->pending = f;
}

/* After the real call (outside a group): the closing event, then hand the
 * pending call to the watchdog.  A nonblocking communicator's call that returned
 * ncclInProgress is closed later, from ncclCommGetAsyncError. */
void ng_timing_after(struct ng_call *call, ncclResult_t r)
{
	struct ng_pending *f = call->pending;

	if (!f)
		return;
	if (r != ncclSuccess && r != ncclInProgress) {
		ng_pending_put(f);	/* nothing was enqueued on the GPU */
		return;
	}
	if (r == ncclInProgress)
		ng_timing_defer(call->comm, f);
	else
		ng_timing_close(f);
}

/* A marker after everything the program has put on the comm's last
 * stream: when it completes, every call up to `index` has. */
int ng_timing_probe(struct ng_comm *c, uint64_t index)
{
	cudaStream_t stream = c->last_stream;
	struct ng_pending *f;

	if (!c->pool)
		return -1;
	f = ng_queue_pop(&flight_free);
	if (!f)
		return -1;
	memset(f, 0, sizeof(*f));
	f->stream = stream;
	f->index = index;
	f->probe = 1;
	f->enter_ns = ng_now_ns();
	ng_confirm_take(c, stream);
	f->end = ev_get(c->pool, stream, 0);
	if (!f->end) {
		ng_queue_push(&flight_free, f);
		return -1;
	}
	f->comm = c;
	__atomic_add_fetch(&c->pending_out, 1, __ATOMIC_RELAXED);
	if (ng_queue_push(&ng_pending_queue, f)) {
		ng_pending_put(f);
		return -1;
	}
	return 0;
}

void ng_timing_close(struct ng_pending *f)
{
	f->end = ev_get(f->comm->pool, f->stream, f->start != NULL);
	if (!f->end) {
		dropped();
		ng_pending_put(f);
		return;
	}
	__atomic_store_n(&f->comm->last_timed_call, f->index, __ATOMIC_RELAXED);
	flight_submit(f);
}

/* ---- groups ---------------------------------------------------------- */

static struct ng_group *group_state(void)
{
	if (!tls_group)
		tls_group = calloc(1, sizeof(*tls_group));
	return tls_group;
}

/* A member call inside ncclGroupStart/End (after the real call returned). */
void ng_timing_group_member(struct ng_call *call, ncclResult_t r)
{
	struct ng_pool *p = call->comm ? call->comm->pool : NULL;
	struct ng_group *g;
	struct ng_group_stream *gs = NULL;
	struct ng_pending *f;
	int i, timed;

	if (!p || call->captured || (r != ncclSuccess && r != ncclInProgress) ||
	    !ng_timing_sampled(call))
		return;
	g = group_state();
	if (!g || g->n >= NG_GROUP_MAX) {
		dropped();
		return;
	}
	for (i = 0; i < g->nstreams; i++)
		if (g->streams[i].stream == call->stream && g->streams[i].pool == p)
			gs = &g->streams[i];
	if (!gs) {
		if (g->nstreams >= NG_GROUP_STREAMS) {
			dropped();
			return;
		}
		gs = &g->streams[g->nstreams];
		gs->stream = call->stream;
		gs->pool = p;
		gs->start = NULL;
		/* Nothing of the group is on the stream yet: this marks its
		 * start, if the group is to be timed.  Counted with a session
		 * or without, as single calls are: the same groups on every
		 * rank, whenever its session began. */
		timed = call->bytes < ng_cfg.sample_bytes || big_pick(++call->comm->big_groups);
		if (call->trace && timed) {
			gs->start = ev_get(p, call->stream, 1);
			if (!gs->start) {
				dropped();
				return;
			}
		}
		g->nstreams++;
	}
	f = flight_get(call);
	if (!f) {
		dropped();
		return;
	}
	if (gs->start)
		__atomic_add_fetch(&gs->start->refs, 1, __ATOMIC_RELAXED);
	f->start = gs->start;
	g->members[g->n++] = f;
}

/* After the outermost ncclGroupEnd: a closing event per stream, shared. */
void ng_timing_group_end(ncclResult_t r)
{
	struct ng_group *g = tls_group;
	struct ng_ev *ends[NG_GROUP_STREAMS] = { 0 };
	int i, j;

	if (!g)
		return;
	for (j = 0; j < g->nstreams; j++) {
		if (r == ncclSuccess)
			ends[j] = ev_get(g->streams[j].pool, g->streams[j].stream,
					 g->streams[j].start != NULL);
		else
			ends[j] = NULL;
	}
	for (i = 0; i < g->n; i++) {
		struct ng_pending *f = g->members[i];

		for (j = 0; j < g->nstreams; j++)
			if (g->streams[j].stream == f->stream && g->streams[j].pool == f->comm->pool)
				break;
		if (j < g->nstreams && r == ncclInProgress) {
			ng_timing_defer(f->comm, f);
			continue;
		}
		if (j == g->nstreams || !ends[j]) {
			if (r == ncclSuccess)
				dropped();
			ng_pending_put(f);
			continue;
		}
		__atomic_add_fetch(&ends[j]->refs, 1, __ATOMIC_RELAXED);
		f->end = ends[j];
		__atomic_store_n(&f->comm->last_timed_call, f->index, __ATOMIC_RELAXED);
		flight_submit(f);
	}
	/* Drop the group's own references (taken by ev_get). */
	for (j = 0; j < g->nstreams; j++) {
		ng_ev_put(g->streams[j].start);
		ng_ev_put(ends[j]);
	}
	g->n = 0;
	g->nstreams = 0;
}

/* ---- nonblocking communicators -------------------------------------- */

void ng_timing_defer(struct ng_comm *c, struct ng_pending *f)
{
	pthread_mutex_lock(&c->lock);
	if (c->ndeferred >= NG_DEFERRED_MAX) {
		pthread_mutex_unlock(&c->lock);
		dropped();
		ng_pending_put(f);
		return;
	}
	c->deferred[c->ndeferred++] = f;
	pthread_mutex_unlock(&c->lock);
}

/* ncclCommGetAsyncError said the comm left InProgress. */
void ng_timing_undefer(struct ng_comm *c, ncclResult_t state)
{
	struct ng_pending *todo[NG_DEFERRED_MAX];
	int n;

	if (!__atomic_load_n(&c->ndeferred, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&c->lock);
	n = c->ndeferred;
	memcpy(todo, c->deferred, n * sizeof(*todo));
	c->ndeferred = 0;
	pthread_mutex_unlock(&c->lock);
	for (int i = 0; i < n; i++) {
		if (state == ncclSuccess)
			ng_timing_close(todo[i]);
		else
			ng_pending_put(todo[i]);
	}
}

void ng_timing_reset_after_fork(void)
{
	/* The parent's events mean nothing in the child; leak them. */
	for (int i = 0; i < NG_MAX_DEVICES; i++)
		pools[i] = NULL;
	pthread_mutex_init(&pool_lock, NULL);
	tls_group = NULL;
	ng_group_depth = 0;
	flight_slab = NULL;
}
