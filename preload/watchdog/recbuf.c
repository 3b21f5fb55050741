/*
 * coll_enqueue records on their way to the watchdog thread, which writes
 * the LTTng events (an event costs the caller 250-600 ns).
 *
 * One single-producer ring per application thread, filled by value: the
 * caller pays a 64-byte copy and a release store, no atomic
 * read-modify-write and no cache line that another producer writes.  With
 * every record going through the shared MPMC rings of timing.c instead,
 * recording cost the caller 300-600 ns a call (bench/RESULTS.md).
 * Records of one thread reach the trace in that thread's call order: a thread that finds its ring full drains it
 * itself (under the consumers' lock) rather than reorder or drop.  A
 * thread that exits leaves its ring to the next thread that needs one;
 * past NG_RECBUFS_MAX threads, a thread writes its events itself.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "watchdog.h"

static struct ng_rf_ring *bufs[NG_RECBUFS_MAX];
static int nbufs;
static pthread_key_t exit_key;
static int key_ok;
static int kick;			/* futex: the watchdog should drain now */
static int idling;			/* the watchdog sleeps its idle poll */
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;	/* consumers */
static void (*emit_fn)(const struct ng_enq_rec *);
uint64_t ng_recbuf_full;

static void orphan(void *p)
{
	struct ng_rf_ring *b = p;

	__atomic_store_n(&b->orphaned, 1, __ATOMIC_RELEASE);
}

void ng_recbuf_init(void (*emit)(const struct ng_enq_rec *))
{
	emit_fn = emit;
	ng_ringfile_open(ng_recbuf_pending);
	key_ok = !pthread_key_create(&exit_key, orphan);
}

/* head moves past each record as soon as its event is written: in a
 * flight ring file, whatever a dead process left between head and tail
 * is what LTTng never got, and nothing else. */
static uint64_t drain_one(struct ng_rf_ring *b)
{
	uint64_t h = b->head, t = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE), n = t - h;

	for (; h != t; h++) {
		emit_fn(&b->rec[h & (NG_RECBUF_SIZE - 1)]);
		ng_confirm_note(&b->rec[h & (NG_RECBUF_SIZE - 1)]);
		__atomic_store_n(&b->head, h + 1, __ATOMIC_RELEASE);
	}
	return n;
}

static struct ng_rf_ring *claim(void)
{
	struct ng_rf_ring *b = NULL;
	int i, n = __atomic_load_n(&nbufs, __ATOMIC_ACQUIRE);

	if (ng_tls.recbuf_none || !key_ok)
		return NULL;
	for (i = 0; i < n && !b; i++) {
		struct ng_rf_ring *o = __atomic_load_n(&bufs[i], __ATOMIC_ACQUIRE);
		int one = 1;

		if (o && __atomic_compare_exchange_n(&o->orphaned, &one, 0, 0,
						     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			b = o;
	}
	if (!b) {
		i = __atomic_fetch_add(&nbufs, 1, __ATOMIC_ACQ_REL);
		if (i < NG_RECBUFS_MAX && !(b = ng_ringfile_ring()))
			b = calloc(1, sizeof(*b));
		if (i >= NG_RECBUFS_MAX || !b) {
			ng_tls.recbuf_none = 1;
			return NULL;
		}
		__atomic_store_n(&bufs[i], b, __ATOMIC_RELEASE);
	}
	if (pthread_setspecific(exit_key, b)) {
		orphan(b);
		ng_tls.recbuf_none = 1;
		return NULL;
	}
	b->tid = (int32_t)syscall(SYS_gettid);
	ng_tls.recbuf = b;
	return b;
}

static void wake_watchdog(void)
{
	__atomic_store_n(&kick, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &kick, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The ring is half full or more: is there room for one record? */
NG_COLD void ng_recbuf_make_room(struct ng_rf_ring *b, uint64_t t)
{
	int e = errno;
	uint64_t used;

	b->head_seen = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
	used = t - b->head_seen;
	/* Half full: the watchdog is asleep for long (idle poll). */
	if (used == NG_RECBUF_SIZE / 2)
		wake_watchdog();
	if (used >= NG_RECBUF_SIZE) {
		__atomic_add_fetch(&ng_recbuf_full, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&drain_lock);
		drain_one(b);
		pthread_mutex_unlock(&drain_lock);
		b->head_seen = t;
	}
	errno = e;
}

NG_COLD struct ng_rf_ring *ng_recbuf_claim(void)
{
	int e = errno;
	struct ng_rf_ring *b = claim();

	errno = e;
	return b;
}

/* Any thread: every ring's records to the writer given to init. */
int ng_recbuf_drain(void)
{
	int n = __atomic_load_n(&nbufs, __ATOMIC_ACQUIRE), total = 0;

	if (n > NG_RECBUFS_MAX)
		n = NG_RECBUFS_MAX;
	pthread_mutex_lock(&drain_lock);
	for (int i = 0; i < n; i++) {
		struct ng_rf_ring *b = __atomic_load_n(&bufs[i], __ATOMIC_ACQUIRE);

		if (b)
			total += (int)drain_one(b);
	}
	pthread_mutex_unlock(&drain_lock);
	return total;
}

uint64_t ng_recbuf_pending(void)
{
	int n = ng_recbuf_count();
	uint64_t left = 0;

	for (int i = 0; i < n; i++) {
		struct ng_rf_ring *b = __atomic_load_n(&bufs[i], __ATOMIC_ACQUIRE);

		if (b)
			left += __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE) -
				__atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
	}
	return left;
}

int ng_recbuf_count(void)
{
	int n = __atomic_load_n(&nbufs, __ATOMIC_ACQUIRE);

	return n < NG_RECBUFS_MAX ? n : NG_RECBUFS_MAX;
}

/* The watchdog's sleep: `ms`, or less when a producer's ring fills up
 * or, with `idle`, when a timed call comes. */
void ng_recbuf_wait(int ms, int idle)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	__atomic_store_n(&idling, idle, __ATOMIC_RELEASE);
	if (!__atomic_exchange_n(&kick, 0, __ATOMIC_ACQ_REL))
		syscall(SYS_futex, &kick, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	__atomic_store_n(&idling, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&kick, 0, __ATOMIC_RELEASE);
}

/* A pending call was submitted: an idle watchdog would leave its events
 * unrecycled for its whole idle poll, and a fast job empties the pool
 * in less (a size sweep timed 511 of 650 calls). */
void ng_recbuf_wake_if_idle(void)
{
	if (__atomic_load_n(&idling, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(&idling, 0, __ATOMIC_ACQ_REL))
		wake_watchdog();
}

void ng_recbuf_reset_after_fork(void)
{
	/* The parent's rings are the parent's to drain: leak them.  One in
	 * its flight ring file is shared with it: this thread's exit must
	 * not mark it orphaned. */
	if (key_ok)
		pthread_setspecific(exit_key, NULL);
	ng_ringfile_reset_after_fork();
	for (int i = 0; i < NG_RECBUFS_MAX; i++)
		bufs[i] = NULL;
	nbufs = 0;
	ng_tls.recbuf = NULL;
	ng_tls.recbuf_none = 0;
	kick = 0;
	idling = 0;
	pthread_mutex_init(&drain_lock, NULL);
}
