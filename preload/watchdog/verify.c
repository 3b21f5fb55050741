/*
 * Output verification (docs/verification.md).  A sampled all-reduce,
 * all-gather or broadcast has a few slices of its output copied to pinned
 * host memory on its own stream, after its work, and a marker recorded
 * after the copies; the watchdog thread hashes the slices once the marker
 * completes and writes a fingerprint event, which the analyzer compares
 * across ranks.  The slices' offsets come from (comm, seq) alone, so every
 * rank reads the same bytes.
 *
 * The copies go after the collective's work: right after the call outside
 * a group, after the outermost ncclGroupEnd inside one (NCCL enqueues a
 * group's work there), once a nonblocking communicator has left
 * ncclInProgress.  Nothing the program enqueues later on that stream can
 * change what is read.  Nothing is copied into a graph being captured.
 * Slots of pinned memory come from one pool made when the first
 * communicator appears, never on a call; a call that finds none free, or
 * no marker, goes unverified and is counted.
 *
 * An injected corruption (corrupt:rank=R,seq=S) flips the lowest bit of
 * the first byte of the first slice on the stream, before the copies:
 * read into the slot's bounce byte, flipped by a host function, written
 * back.  It changes a byte the check reads when the call is sampled, and
 * the same byte when it is not.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "timing.h"
#include "verify.h"

#define NSLOTS 256			/* power of two: a queue's capacity */
#define NHELD 64			/* grouped or nonblocking copies waiting */
#define SLOT_DATA (NG_VERIFY_SLICES * NG_VERIFY_SLICE)
#define SLOT_STRIDE (SLOT_DATA + 64)	/* the data, then the bounce byte */

struct vslot {
	struct ng_comm *comm;		/* its record is kept while we hold it */
	uint64_t seq, bytes;
	int fn, dtype, redop, nranks;
	unsigned char *out;
	cudaStream_t stream;
	int verify, corrupt;
	int nslices;
	uint64_t off[NG_VERIFY_SLICES];
	uint32_t len[NG_VERIFY_SLICES];
	unsigned char *host;		/* SLOT_STRIDE bytes of pinned memory */
	struct ng_ev *done;		/* after the copies; NULL: none made */
};

static struct vslot *slots;
static struct ng_queue slot_free;
static struct ng_queue copied;		/* to the watchdog */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static int pool_ready, pool_failed;	/* ready: published once filled */

/* Calls of a group, until its outermost end. */
static NG_TLS struct vslot *grouped[NHELD];
static NG_TLS int ngrouped;
/* Calls of nonblocking comms that returned ncclInProgress. */
static struct vslot *deferred[NHELD];
static int ndeferred;
static pthread_mutex_t defer_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t ng_verify_dropped;

void ng_verify_init(void)
{
	unsigned every = ng_cfg.verify_every;

	/* An armed corruption sends every call to the cold path, which
	 * decides: the test runs are not the ones whose cost matters. */
	if (ng_inject_corrupting)
		ng_hot.verify_mask = 0;
	else
		ng_hot.verify_mask = every ? (uint16_t)(every - 1) : 0xffff;
}

static int pool_make(void)
{
	unsigned char *mem = NULL;
	cudaError_t err;
	int i;

	slots = calloc(NSLOTS, sizeof(*slots));
	if (!slots || ng_queue_init(&slot_free, NSLOTS) || ng_queue_init(&copied, NSLOTS))
		goto fail;
	/* Portable: one pool serves the comms of every device. */
	err = ng_cuda.cudaHostAlloc((void **)&mem, (size_t)NSLOTS * SLOT_STRIDE,
				    cudaHostAllocPortable);
	if (err != cudaSuccess) {
		ng_warn("cannot allocate %d KiB of pinned memory (cuda error %d): outputs "
			"are not verified", NSLOTS * SLOT_STRIDE / 1024, err);
		goto fail;
	}
	for (i = 0; i < NSLOTS; i++) {
		slots[i].host = mem + (size_t)i * SLOT_STRIDE;
		ng_queue_push(&slot_free, &slots[i]);
	}
	return 0;
fail:
	free(slots);
	free(slot_free.cells);
	free(copied.cells);
	slots = NULL;
	slot_free.cells = copied.cells = NULL;
	return -1;
}

/* A communicator appeared (its timing pool, if any, is made). */
void ng_verify_comm_ready(struct ng_comm *c)
{
	(void)c;
	if (!ng_cfg.verify_every && !ng_inject_corrupting)
		return;
	pthread_mutex_lock(&pool_lock);
	if (!pool_ready && !pool_failed) {
		if (!ng_cuda.cudaHostAlloc || !ng_cuda.cudaMemcpyAsync || pool_make()) {
			pool_failed = 1;
			ng_warn_once("output verification is off: the CUDA runtime's copies or "
				     "pinned memory are not available");
		} else {
			__atomic_store_n(&pool_ready, 1, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&pool_lock);
}

static void slot_put(struct vslot *v)
{
	ng_ev_put(v->done);
	v->done = NULL;
	if (v->comm)
		__atomic_sub_fetch(&v->comm->pending_out, 1, __ATOMIC_RELEASE);
	v->comm = NULL;
	ng_queue_push(&slot_free, v);
}

static void dropped(void)
{
	__atomic_add_fetch(&ng_verify_dropped, 1, __ATOMIC_RELAXED);
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The same slices on every rank: from the comm and seq only.  An output
 * of up to SLOT_DATA bytes is read whole; a larger one in slices at
 * 256-byte offsets, which may overlap. */
static void slices_of(struct vslot *v)
{
	uint64_t span, h;

	if (v->bytes <= SLOT_DATA) {
		v->nslices = 1;
		v->off[0] = 0;
		v->len[0] = (uint32_t)v->bytes;
		return;
	}
	span = (v->bytes - NG_VERIFY_SLICE) / 256 + 1;
	h = v->comm->hash ^ mix(v->seq);
	v->nslices = NG_VERIFY_SLICES;
	for (int i = 0; i < NG_VERIFY_SLICES; i++) {
		h = mix(h);
		v->off[i] = h % span * 256;
		v->len[i] = NG_VERIFY_SLICE;
	}
}

static void flip(void *byte)
{
	*(unsigned char *)byte ^= 1;
}

static void corrupt(struct vslot *v)
{
	unsigned char *bounce = v->host + SLOT_DATA, *at = v->out + v->off[0];

	if (!ng_cuda.cudaLaunchHostFunc ||
	    ng_cuda.cudaMemcpyAsync(bounce, at, 1, cudaMemcpyDefault, v->stream) != cudaSuccess ||
	    ng_cuda.cudaLaunchHostFunc(v->stream, flip, bounce) != cudaSuccess ||
	    ng_cuda.cudaMemcpyAsync(at, bounce, 1, cudaMemcpyDefault, v->stream) != cudaSuccess)
		ng_warn("injected corruption of seq %llu on comm %016llx failed: the CUDA "
			"runtime refused the copy", (unsigned long long)v->seq,
			(unsigned long long)v->comm->hash);
}

/* The collective's work is on the stream: corrupt, copy, mark. */
static void enqueue(struct vslot *v)
{
	int failed = 0;

	if (v->corrupt)
		corrupt(v);
	if (!v->verify) {
		slot_put(v);
		return;
	}
	for (int i = 0; i < v->nslices && !failed; i++)
		failed = ng_cuda.cudaMemcpyAsync(v->host + i * NG_VERIFY_SLICE, v->out + v->off[i],
						 v->len[i], cudaMemcpyDefault,
						 v->stream) != cudaSuccess;
	v->done = ng_timing_marker(v->comm->pool, v->stream);
	if (!v->done) {
		/* A copy may still land in it: the slot is never reused. */
		dropped();
		return;
	}
	if (failed)
		v->verify = 0;		/* put back once the marker is passed */
	if (ng_queue_push(&copied, v)) {
		dropped();
		return;			/* as above: kept out of use */
	}
	if (failed)
		dropped();
}

/* After the real call of a call whose seq the mask picked (wrap/coll.c),
 * or of any call while a corruption is armed: out is the call's output. */
void ng_verify_call(const struct ng_call *call, void *out, int redop, ncclResult_t r)
{
	struct ng_comm *c = call->comm;
	unsigned every = ng_cfg.verify_every;
	struct vslot *v;
	int verify, bad = 0;

	if (!c || !out || !call->bytes || call->captured || (r != ncclSuccess && r != ncclInProgress))
		return;
	verify = every && (call->seq & (every - 1)) == every - 1 && c->pool &&
		 __atomic_load_n(&ng_hot.tp, __ATOMIC_ACQUIRE);
	if (ng_inject_corrupting)
		bad = ng_inject_corrupt(ng_fn_op[call->fn], c, call->seq);
	if (!verify && !bad)
		return;
	v = __atomic_load_n(&pool_ready, __ATOMIC_ACQUIRE) ? ng_queue_pop(&slot_free) : NULL;
	if (!v) {
		dropped();
		return;
	}
	v->comm = c;
	__atomic_add_fetch(&c->pending_out, 1, __ATOMIC_RELAXED);
	v->seq = call->seq;
	v->bytes = call->bytes;
	v->fn = call->fn;
	v->dtype = call->dtype;
	v->redop = redop;
	v->nranks = call->nranks;
	v->out = out;
	v->stream = call->stream;
	v->verify = verify;
	v->corrupt = bad;
	v->done = NULL;
	slices_of(v);
	if (ng_group_depth) {
		if (ngrouped < NHELD) {
			grouped[ngrouped++] = v;
			return;
		}
	} else if (r == ncclInProgress) {
		pthread_mutex_lock(&defer_lock);
		if (ndeferred < NHELD) {
			deferred[ndeferred++] = v;
			pthread_mutex_unlock(&defer_lock);
			return;
		}
		pthread_mutex_unlock(&defer_lock);
	} else {
		enqueue(v);
		return;
	}
	dropped();
	slot_put(v);
}

/* This thread's outermost ncclGroupEnd returned r. */
void ng_verify_group_end(ncclResult_t r)
{
	for (int i = 0; i < ngrouped; i++) {
		struct vslot *v = grouped[i];

		if (r == ncclSuccess) {
			enqueue(v);
			continue;
		}
		pthread_mutex_lock(&defer_lock);
		if (r == ncclInProgress && ndeferred < NHELD) {
			deferred[ndeferred++] = v;
			v = NULL;
		}
		pthread_mutex_unlock(&defer_lock);
		if (v) {
			if (r == ncclInProgress)
				dropped();
			slot_put(v);
		}
	}
	ngrouped = 0;
}

/* ncclCommGetAsyncError says c left ncclInProgress, in state. */
void ng_verify_undefer(struct ng_comm *c, ncclResult_t state)
{
	struct vslot *todo[NHELD];
	int n = 0, keep = 0;

	if (!__atomic_load_n(&ndeferred, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&defer_lock);
	for (int i = 0; i < ndeferred; i++) {
		if (deferred[i]->comm == c)
			todo[n++] = deferred[i];
		else
			deferred[keep++] = deferred[i];
	}
	ndeferred = keep;
	pthread_mutex_unlock(&defer_lock);
	for (int i = 0; i < n; i++) {
		if (state == ncclSuccess)
			enqueue(todo[i]);
		else
			slot_put(todo[i]);
	}
}

static void emit(struct vslot *v)
{
	struct ng_ev_fingerprint ev;
	char list[NG_VERIFY_SLICES * 32];
	size_t at = 0;
	uint64_t n = 0;

	list[0] = '\0';
	for (int i = 0; i < v->nslices; i++) {
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%llu+%u", i ? "," : "",
				       (unsigned long long)v->off[i], v->len[i]);
		n += v->len[i];
	}
	/* The slices lie one after another in the slot. */
	ev.comm_hash = v->comm->hash;
	ev.seq = v->seq;
	ev.op = ng_fn_op[v->fn];
	ev.datatype = v->dtype;
	ev.redop = v->redop;
	ev.nranks = v->nranks;
	ev.bytes = v->bytes;
	ev.slices = list;
	ev.compared = n;
	ev.hash = ng_hash_bytes(v->host, n, 0);
	if (ng_hot.tp)
		ng_hot.tp->fingerprint(&ev);
}

/* Watchdog thread: hash and record the copies that completed; how many
 * are still on their way. */
int ng_verify_poll(void)
{
	static struct vslot *wait[NSLOTS];
	static int nwait;
	struct vslot *v;
	int out = 0;

	if (!__atomic_load_n(&pool_ready, __ATOMIC_ACQUIRE))
		return 0;
	while (nwait < NSLOTS && (v = ng_queue_pop(&copied)))
		wait[nwait++] = v;
	for (int i = 0; i < nwait; i++) {
		cudaError_t err;

		v = wait[i];
		err = ng_cuda.cudaEventQuery(v->done->ev);
		if (err == cudaErrorNotReady) {
			wait[out++] = v;
			continue;
		}
		if (err == cudaSuccess && v->verify)
			emit(v);
		else if (err != cudaSuccess)
			dropped();
		slot_put(v);
	}
	nwait = out;
	return nwait;
}

void ng_verify_reset_after_fork(void)
{
	/* The parent's pinned memory and events mean nothing here. */
	slots = NULL;
	slot_free.cells = copied.cells = NULL;
	pool_ready = pool_failed = 0;
	ngrouped = 0;
	ndeferred = 0;
	pthread_mutex_init(&pool_lock, NULL);
	pthread_mutex_init(&defer_lock, NULL);
}
