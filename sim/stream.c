/* Streams and events.  A stream is a FIFO of tasks run by one detached
 * worker thread, so every call returns at once and a task that never
 * finishes (a collective whose peer never comes) keeps the stream and all
 * events queued after it pending for ever, as on a GPU.  Nothing here is
 * torn down at exit: a process may exit with a stream stuck. */
#include <pthread.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define STREAM_MAGIC 0x5354524dU	/* "STRM" */
#define EVENT_MAGIC 0x45564e54U		/* "EVNT" */
#define DEAD_MAGIC 0xdeadbeefU
/* A pending task is stepped again at least this often, so flags set
 * without a wake-up (abort, revoke) are seen. */
#define POLL_NS (20 * 1000 * 1000ULL)

struct CUstream_st {
	uint32_t magic;
	int dev;
	unsigned int flags;
	int priority;
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* work queued, work done, stream dead */
	struct sim_task *head, *tail;
	uint64_t enq, done;	/* tasks queued and finished, ever */
	int worker;		/* worker thread started */
	int dead;		/* destroyed by the program */
	int refs;		/* program handle + worker; under lock */
	struct CUstream_st *next_all;
};

struct CUevent_st {
	uint32_t magic;
	unsigned int flags;
	int refs;		/* program handle + pending tasks; atomic */
	pthread_mutex_t lock;
	uint64_t rec_gen;	/* records made */
	uint64_t done_gen;	/* newest record that has executed */
	uint64_t t_ns;		/* when it executed */
};

/* Bumped (and woken) whenever a task finishes: what event waits sleep on. */
static uint32_t done_word;
static uint32_t done_waiters;

static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUstream_st *all_streams;
static struct CUstream_st *legacy[SIM_MAX_GPUS];

static __thread int cur_dev;

static void done_bump(void)
{
	__atomic_add_fetch(&done_word, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&done_waiters, __ATOMIC_SEQ_CST))
		sim_futex_wake(&done_word, 0);
}

/* Sleep until some task finishes (or deadline); val read before the
 * caller checked its condition, so no wake-up is lost. */
static void done_wait(uint32_t val, uint64_t deadline_ns)
{
	__atomic_add_fetch(&done_waiters, 1, __ATOMIC_SEQ_CST);
	sim_futex_wait(&done_word, val, deadline_ns, 0);
	__atomic_sub_fetch(&done_waiters, 1, __ATOMIC_SEQ_CST);
}

/* ---- devices ------------------------------------------------------------ */

int sim_get_device(void)
{
	return cur_dev;
}

cudaError_t sim_set_device(int dev)
{
	if (dev < 0 || dev >= sim_dev_count())
		return cudaErrorInvalidDevice;
	cur_dev = dev;
	return cudaSuccess;
}

int ncclsim_current_device(void)
{
	return cur_dev;
}

/* ---- streams ------------------------------------------------------------ */

static void stream_unref(struct CUstream_st *s)
{
	int last;

	pthread_mutex_lock(&s->lock);
	last = --s->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (!last)
		return;
	pthread_mutex_lock(&all_lock);
	for (struct CUstream_st **p = &all_streams; *p; p = &(*p)->next_all) {
		if (*p == s) {
			*p = s->next_all;
			break;
		}
	}
	pthread_mutex_unlock(&all_lock);
	s->magic = DEAD_MAGIC;
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

static void *stream_worker(void *arg)
{
	struct CUstream_st *s = arg;

	/* Sleeps end when the cost model says, not up to 50 us later. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	for (;;) {
		struct sim_wait w;
		struct sim_task *t;
		uint64_t now, deadline;

		pthread_mutex_lock(&s->lock);
		while (!s->head && !s->dead)
			pthread_cond_wait(&s->cond, &s->lock);
		t = s->head;
		pthread_mutex_unlock(&s->lock);
		if (!t)
			break;	/* dead and drained */

		memset(&w, 0, sizeof(w));
		if (t->step(t, &w) == SIM_DONE) {
			pthread_mutex_lock(&s->lock);
			s->head = t->next;
			if (!s->head)
				s->tail = NULL;
			s->done++;
			pthread_cond_broadcast(&s->cond);
			pthread_mutex_unlock(&s->lock);
			t->release(t);
			done_bump();
			continue;
		}
		now = sim_now_ns();
		deadline = now + POLL_NS;
		if (w.until_ns && w.until_ns < deadline)
			deadline = w.until_ns;
		if (w.futex) {
			/* Wakers skip the system call when no one waits. */
			if (w.waiters)
				__atomic_add_fetch(w.waiters, 1, __ATOMIC_SEQ_CST);
			sim_futex_wait(w.futex, w.val, deadline, w.shared);
			if (w.waiters)
				__atomic_sub_fetch(w.waiters, 1, __ATOMIC_SEQ_CST);
		}
		else if (w.until_ns)
			sim_sleep_until_ns(deadline);
		else
			sim_sleep_until_ns(now + 200 * 1000);	/* plain poll */
	}
	stream_unref(s);
	return NULL;
}

static struct CUstream_st *stream_new(int dev, unsigned int flags, int priority)
{
	struct CUstream_st *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->magic = STREAM_MAGIC;
	s->dev = dev;
	s->flags = flags;
	s->priority = priority;
	s->refs = 1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	pthread_mutex_lock(&all_lock);
	s->next_all = all_streams;
	all_streams = s;
	pthread_mutex_unlock(&all_lock);
	return s;
}

/* The stream a handle means: NULL and the special handles are the current
 * device's default (legacy) stream; the per-thread stream is that too. */
static struct CUstream_st *stream_get(cudaStream_t h)
{
	struct CUstream_st *s;
	int dev = cur_dev;

	if (h && h != cudaStreamLegacy && h != cudaStreamPerThread)
		return h->magic == STREAM_MAGIC && !h->dead ? h : NULL;
	if (dev < 0 || dev >= SIM_MAX_GPUS)
		return NULL;
	s = __atomic_load_n(&legacy[dev], __ATOMIC_ACQUIRE);
	if (s)
		return s;
	pthread_mutex_lock(&all_lock);
	s = legacy[dev];
	pthread_mutex_unlock(&all_lock);
	if (s)
		return s;
	s = stream_new(dev, cudaStreamDefault, 0);
	if (!s)
		return NULL;
	pthread_mutex_lock(&all_lock);
	if (legacy[dev]) {
		/* Lost a race: keep the first one. */
		pthread_mutex_unlock(&all_lock);
		stream_unref(s);
		return legacy[dev];
	}
	__atomic_store_n(&legacy[dev], s, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&all_lock);
	return s;
}

static cudaError_t stream_push(struct CUstream_st *s, struct sim_task *t)
{
	pthread_t th;
	pthread_attr_t attr;
	int start = 0;

	t->next = NULL;
	pthread_mutex_lock(&s->lock);
	if (s->dead) {
		pthread_mutex_unlock(&s->lock);
		return cudaErrorInvalidResourceHandle;
	}
	if (!s->worker) {
		s->worker = 1;
		s->refs++;
		start = 1;
	}
	if (s->tail)
		s->tail->next = t;
	else
		s->head = t;
	s->tail = t;
	s->enq++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (!start)
		return cudaSuccess;

	/* Detached: exit never waits for a worker stuck in a collective. */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, stream_worker, s) != 0) {
		pthread_attr_destroy(&attr);
		/* No worker ever ran: take the task back out of the queue. */
		pthread_mutex_lock(&s->lock);
		s->worker = 0;
		s->refs--;
		for (struct sim_task **p = &s->head; *p; p = &(*p)->next) {
			if (*p == t) {
				*p = NULL;
				s->tail = NULL;
				break;
			}
		}
		for (struct sim_task *q = s->head; q; q = q->next)
			s->tail = q;
		s->enq--;
		pthread_mutex_unlock(&s->lock);
		return cudaErrorMemoryAllocation;
	}
	pthread_attr_destroy(&attr);
	return cudaSuccess;
}

cudaError_t sim_stream_push(cudaStream_t h, struct sim_task *t)
{
	struct CUstream_st *s = stream_get(h);

	return s ? stream_push(s, t) : cudaErrorInvalidResourceHandle;
}

int ncclsim_stream_valid(cudaStream_t h)
{
	return stream_get(h) != NULL;
}

cudaError_t ncclsim_stream_enqueue(cudaStream_t h, struct sim_task *t)
{
	return sim_stream_push(h, t);
}

static cudaError_t stream_sync(struct CUstream_st *s)
{
	uint64_t target;

	pthread_mutex_lock(&s->lock);
	target = s->enq;
	while (s->done < target)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return cudaSuccess;
}

cudaError_t sim_device_sync(int dev, int blocking_only)
{
	struct CUstream_st *list[512];
	int n = 0;

	/* Take references so that a stream destroyed meanwhile stays valid.
	 * One whose last reference is gone is being freed (its unref waits
	 * for all_lock to unlink it): taking it back would free it twice. */
	pthread_mutex_lock(&all_lock);
	for (struct CUstream_st *s = all_streams; s && n < 512; s = s->next_all) {
		int live;

		if ((dev >= 0 && s->dev != dev) ||
		    (blocking_only && (s->flags & cudaStreamNonBlocking)))
			continue;
		pthread_mutex_lock(&s->lock);
		live = s->refs > 0;
		if (live)
			s->refs++;
		pthread_mutex_unlock(&s->lock);
		if (live)
			list[n++] = s;
	}
	pthread_mutex_unlock(&all_lock);
	for (int i = 0; i < n; i++) {
		stream_sync(list[i]);
		stream_unref(list[i]);
	}
	return cudaSuccess;
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *out, unsigned int flags, int priority)
{
	struct CUstream_st *s;

	if (!out)
		return cudaErrorInvalidValue;
	s = stream_new(cur_dev, flags, priority);
	if (!s)
		return cudaErrorMemoryAllocation;
	*out = s;
	return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *out, unsigned int flags)
{
	return cudaStreamCreateWithPriority(out, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t *out)
{
	return cudaStreamCreateWithPriority(out, cudaStreamDefault, 0);
}

/* As CUDA: returns at once; queued work still runs, then the stream goes. */
cudaError_t cudaStreamDestroy(cudaStream_t h)
{
	struct CUstream_st *s = h;

	if (!s || h == cudaStreamLegacy || h == cudaStreamPerThread ||
	    s->magic != STREAM_MAGIC)
		return cudaErrorInvalidResourceHandle;
	pthread_mutex_lock(&s->lock);
	if (s->dead) {
		pthread_mutex_unlock(&s->lock);
		return cudaErrorInvalidResourceHandle;
	}
	s->dead = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	stream_unref(s);
	return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t h)
{
	struct CUstream_st *s = stream_get(h);

	return s ? stream_sync(s) : cudaErrorInvalidResourceHandle;
}

cudaError_t cudaStreamQuery(cudaStream_t h)
{
	struct CUstream_st *s = stream_get(h);
	int idle;

	if (!s)
		return cudaErrorInvalidResourceHandle;
	pthread_mutex_lock(&s->lock);
	idle = s->done == s->enq;
	pthread_mutex_unlock(&s->lock);
	return idle ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamGetFlags(cudaStream_t h, unsigned int *flags)
{
	struct CUstream_st *s = stream_get(h);

	if (!s || !flags)
		return s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle;
	*flags = s->flags;
	return cudaSuccess;
}

cudaError_t cudaStreamGetPriority(cudaStream_t h, int *priority)
{
	struct CUstream_st *s = stream_get(h);

	if (!s || !priority)
		return s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle;
	*priority = s->priority;
	return cudaSuccess;
}

cudaError_t cudaStreamGetDevice(cudaStream_t h, int *device)
{
	struct CUstream_st *s = stream_get(h);

	if (!s || !device)
		return s ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle;
	*device = s->dev;
	return cudaSuccess;
}

/* ---- events ------------------------------------------------------------- */

static void event_unref(struct CUevent_st *e)
{
	if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL))
		return;
	e->magic = DEAD_MAGIC;
	pthread_mutex_destroy(&e->lock);
	free(e);
}

static int event_ok(cudaEvent_t e)
{
	return e && e->magic == EVENT_MAGIC;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *out, unsigned int flags)
{
	struct CUevent_st *e;

	if (!out)
		return cudaErrorInvalidValue;
	e = calloc(1, sizeof(*e));
	if (!e)
		return cudaErrorMemoryAllocation;
	e->magic = EVENT_MAGIC;
	e->flags = flags;
	e->refs = 1;
	pthread_mutex_init(&e->lock, NULL);
	*out = e;
	return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *out)
{
	return cudaEventCreateWithFlags(out, cudaEventDefault);
}

/* As CUDA: a pending record still completes; the memory goes after it. */
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
	if (!event_ok(e))
		return cudaErrorInvalidResourceHandle;
	event_unref(e);
	return cudaSuccess;
}

struct record_task {
	struct sim_task t;
	struct CUevent_st *e;
	uint64_t gen;
};

static int record_step(struct sim_task *t, struct sim_wait *w)
{
	struct record_task *r = (struct record_task *)t;
	uint64_t now = sim_now_ns();

	(void)w;
	pthread_mutex_lock(&r->e->lock);
	/* The same event recorded on two streams: the newest record wins. */
	if (r->gen > r->e->done_gen) {
		r->e->done_gen = r->gen;
		r->e->t_ns = now;
	}
	pthread_mutex_unlock(&r->e->lock);
	return SIM_DONE;
}

static void record_release(struct sim_task *t)
{
	struct record_task *r = (struct record_task *)t;

	event_unref(r->e);
	free(r);
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t h, unsigned int flags)
{
	struct CUstream_st *s = stream_get(h);
	struct record_task *r;
	cudaError_t err;

	(void)flags;	/* External only matters to graph capture */
	if (!event_ok(e) || !s)
		return cudaErrorInvalidResourceHandle;
	r = calloc(1, sizeof(*r));
	if (!r)
		return cudaErrorMemoryAllocation;
	r->t.step = record_step;
	r->t.release = record_release;
	r->e = e;
	__atomic_add_fetch(&e->refs, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_lock(&e->lock);
	r->gen = ++e->rec_gen;
	pthread_mutex_unlock(&e->lock);
	err = stream_push(s, &r->t);
	if (err != cudaSuccess) {
		/* Never queued: undo the record so that queries do not hang. */
		pthread_mutex_lock(&e->lock);
		if (e->done_gen < r->gen)
			e->done_gen = r->gen;
		pthread_mutex_unlock(&e->lock);
		record_release(&r->t);
	}
	return err;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t h)
{
	return cudaEventRecordWithFlags(e, h, cudaEventRecordDefault);
}

static int event_done(struct CUevent_st *e, uint64_t gen)
{
	int done;

	pthread_mutex_lock(&e->lock);
	done = e->done_gen >= gen;
	pthread_mutex_unlock(&e->lock);
	return done;
}

static uint64_t event_gen(struct CUevent_st *e)
{
	uint64_t g;

	pthread_mutex_lock(&e->lock);
	g = e->rec_gen;
	pthread_mutex_unlock(&e->lock);
	return g;
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
	if (!event_ok(e))
		return cudaErrorInvalidResourceHandle;
	return event_done(e, event_gen(e)) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
	uint64_t gen;

	if (!event_ok(e))
		return cudaErrorInvalidResourceHandle;
	gen = event_gen(e);
	for (;;) {
		uint32_t v = __atomic_load_n(&done_word, __ATOMIC_SEQ_CST);

		if (event_done(e, gen))
			return cudaSuccess;
		done_wait(v, sim_now_ns() + POLL_NS);
	}
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	uint64_t ta, tb;
	int ready;

	if (!ms)
		return cudaErrorInvalidValue;
	if (!event_ok(a) || !event_ok(b))
		return cudaErrorInvalidResourceHandle;
	if ((a->flags | b->flags) & cudaEventDisableTiming)
		return cudaErrorInvalidResourceHandle;
	pthread_mutex_lock(&a->lock);
	ready = a->rec_gen && a->done_gen == a->rec_gen;
	ta = a->t_ns;
	pthread_mutex_unlock(&a->lock);
	pthread_mutex_lock(&b->lock);
	ready = ready && b->rec_gen && b->done_gen == b->rec_gen;
	tb = b->t_ns;
	pthread_mutex_unlock(&b->lock);
	if (!ready)
		return cudaErrorNotReady;
	*ms = (float)(((double)tb - (double)ta) / 1e6);
	return cudaSuccess;
}

struct wait_task {
	struct sim_task t;
	struct CUevent_st *e;
	uint64_t gen;
};

static int wait_step(struct sim_task *t, struct sim_wait *w)
{
	struct wait_task *wt = (struct wait_task *)t;
	uint32_t v = __atomic_load_n(&done_word, __ATOMIC_SEQ_CST);

	if (event_done(wt->e, wt->gen))
		return SIM_DONE;
	w->futex = &done_word;
	w->waiters = &done_waiters;
	w->val = v;
	w->shared = 0;
	return SIM_PENDING;
}

static void wait_release(struct sim_task *t)
{
	struct wait_task *wt = (struct wait_task *)t;

	event_unref(wt->e);
	free(wt);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t h, cudaEvent_t e, unsigned int flags)
{
	struct CUstream_st *s = stream_get(h);
	struct wait_task *wt;
	cudaError_t err;

	(void)flags;
	if (!s || !event_ok(e))
		return cudaErrorInvalidResourceHandle;
	wt = calloc(1, sizeof(*wt));
	if (!wt)
		return cudaErrorMemoryAllocation;
	wt->t.step = wait_step;
	wt->t.release = wait_release;
	wt->e = e;
	wt->gen = event_gen(e);
	__atomic_add_fetch(&e->refs, 1, __ATOMIC_ACQ_REL);
	err = stream_push(s, &wt->t);
	if (err != cudaSuccess)
		wait_release(&wt->t);
	return err;
}

/* ---- copies, sets and host functions on a stream ----------------------- */

struct copy_task {
	struct sim_task t;
	void *dst;
	const void *src;
	int value;		/* memset value when src is NULL */
	size_t n;
	cudaHostFn_t fn;
	void *arg;
};

static int copy_step(struct sim_task *t, struct sim_wait *w)
{
	struct copy_task *c = (struct copy_task *)t;

	(void)w;
	if (c->fn)
		c->fn(c->arg);
	else if (c->src)
		memmove(c->dst, c->src, c->n);
	else if (c->n)
		memset(c->dst, c->value, c->n);
	return SIM_DONE;
}

static void copy_release(struct sim_task *t)
{
	free(t);
}

static cudaError_t copy_push(cudaStream_t h, void *dst, const void *src, int value,
			     size_t n, cudaHostFn_t fn, void *arg)
{
	struct copy_task *c;
	cudaError_t err;

	c = calloc(1, sizeof(*c));
	if (!c)
		return cudaErrorMemoryAllocation;
	c->t.step = copy_step;
	c->t.release = copy_release;
	c->dst = dst;
	c->src = src;
	c->value = value;
	c->n = n;
	c->fn = fn;
	c->arg = arg;
	err = sim_stream_push(h, &c->t);
	if (err != cudaSuccess)
		free(c);
	return err;
}

cudaError_t sim_copy_async(void *dst, const void *src, size_t n, cudaStream_t h)
{
	return copy_push(h, dst, src, 0, n, NULL, NULL);
}

cudaError_t sim_memset_async(void *dst, int value, size_t n, cudaStream_t h)
{
	return copy_push(h, dst, NULL, value, n, NULL, NULL);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t h, cudaHostFn_t fn, void *arg)
{
	if (!fn)
		return cudaErrorInvalidValue;
	return copy_push(h, NULL, NULL, 0, 0, fn, arg);
}
