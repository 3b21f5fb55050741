/* The per-thread rings of coll_enqueue records (preload/watchdog/recbuf.c):
 * nothing lost, doubled or reordered under producers that outrun the
 * drain, rings taken over from exited threads, the thread past the last
 * ring told so, and the watchdog woken only from its idle poll. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "watchdog.h"

#define REC_THREADS 4
#define REC_PER_THREAD 50000	/* several times a ring: producers drain too */

static struct ng_comm rec_comm[REC_THREADS];
static uint64_t rec_last[REC_THREADS], rec_got;
static int rec_bad;
static pthread_barrier_t rec_all_started;	/* all rings exist at once */

static void rec_emit(const struct ng_enq_rec *f)
{
	uint64_t t = f->comm_hash - 1;

	if (t >= REC_THREADS || f->seq != rec_last[t] + 1)
		rec_bad++;	/* a record lost, doubled or out of its thread's order */
	else
		rec_last[t] = f->seq;
	__atomic_add_fetch(&rec_got, 1, __ATOMIC_RELAXED);
}

static void *rec_producer(void *arg)
{
	struct ng_call call = { .comm = arg, .fn = NG_FN_ncclAllReduce };

	for (uint64_t i = 1; i <= REC_PER_THREAD; i++) {
		call.seq = i;
		if (ng_recbuf_push(&call))	/* a full ring is drained, not refused */
			__atomic_add_fetch(&rec_bad, 1, __ATOMIC_RELAXED);
		if (i == 1)
			pthread_barrier_wait(&rec_all_started);
	}
	return NULL;
}

static void *rec_short_lived(void *arg)
{
	struct ng_call call = { .comm = arg, .seq = 1 };

	return (void *)(intptr_t)ng_recbuf_push(&call);
}

static void test_recbuf_threads(void **state)
{
	pthread_t t[REC_THREADS];
	int n;

	(void)state;
	ng_recbuf_init(rec_emit);
	pthread_barrier_init(&rec_all_started, NULL, REC_THREADS);
	for (int i = 0; i < REC_THREADS; i++) {
		rec_comm[i].hash = i + 1;
		assert_int_equal(pthread_create(&t[i], NULL, rec_producer, &rec_comm[i]), 0);
	}
	while (__atomic_load_n(&rec_got, __ATOMIC_RELAXED) < REC_THREADS * REC_PER_THREAD)
		if (!ng_recbuf_drain())
			sched_yield();
	for (int i = 0; i < REC_THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(rec_bad, 0);
	for (int i = 0; i < REC_THREADS; i++)
		assert_int_equal(rec_last[i], REC_PER_THREAD);
	n = ng_recbuf_count();
	assert_int_equal(n, REC_THREADS);
	/* Threads that come later take over the rings of those that exited. */
	for (int i = 0; i < REC_THREADS; i++) {
		void *rc;

		rec_last[i] = 0;
		pthread_create(&t[i], NULL, rec_short_lived, &rec_comm[i]);
		pthread_join(t[i], &rc);
		assert_int_equal((intptr_t)rc, 0);
	}
	assert_int_equal(ng_recbuf_count(), n);
	assert_int_equal(ng_recbuf_drain(), REC_THREADS);
	assert_int_equal(rec_bad, 0);
	pthread_barrier_destroy(&rec_all_started);
}

static pthread_barrier_t rec_crowd;
static int rec_refused;

static void *rec_crowd_member(void *arg)
{
	struct ng_call call = { .comm = arg, .seq = 1 };

	if (ng_recbuf_push(&call))
		__atomic_add_fetch(&rec_refused, 1, __ATOMIC_RELAXED);
	pthread_barrier_wait(&rec_crowd);	/* all alive at once */
	return NULL;
}

/* One thread more than there are rings: it is told to write its own. */
static void test_recbuf_too_many_threads(void **state)
{
	pthread_t t[NG_RECBUFS_MAX + 1];

	(void)state;
	pthread_barrier_init(&rec_crowd, NULL, NG_RECBUFS_MAX + 1);
	for (int i = 0; i <= NG_RECBUFS_MAX; i++)
		assert_int_equal(pthread_create(&t[i], NULL, rec_crowd_member, &rec_comm[0]), 0);
	for (int i = 0; i <= NG_RECBUFS_MAX; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&rec_crowd);
	assert_int_equal(rec_refused, 1);
	assert_int_equal(ng_recbuf_count(), NG_RECBUFS_MAX);
	ng_recbuf_drain();
}

/* ---- waking the watchdog --------------------------------------------- */

static void *idle_sleeper(void *arg)
{
	uint64_t t0 = ng_now_ns();

	ng_recbuf_wait(3000, 1);
	*(uint64_t *)arg = ng_now_ns() - t0;
	return NULL;
}

static void *busy_sleeper(void *arg)
{
	uint64_t t0 = ng_now_ns();

	ng_recbuf_wait(300, 0);
	*(uint64_t *)arg = ng_now_ns() - t0;
	return NULL;
}

/* A timed call wakes a watchdog in its idle poll (so the event pool is
 * recycled), and leaves a busy one to its short poll. */
static void test_wake_if_idle(void **state)
{
	struct timespec ts = { 0, 50000000 };
	uint64_t slept = 0;
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, idle_sleeper, &slept), 0);
	nanosleep(&ts, NULL);
	ng_recbuf_wake_if_idle();
	pthread_join(t, NULL);
	assert_true(slept < 2000000000ull);	/* not the 3 s */
	assert_int_equal(pthread_create(&t, NULL, busy_sleeper, &slept), 0);
	nanosleep(&ts, NULL);
	ng_recbuf_wake_if_idle();
	pthread_join(t, NULL);
	assert_true(slept >= 250000000ull);	/* the whole 300 ms */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recbuf_threads),
		cmocka_unit_test(test_recbuf_too_many_threads),
		cmocka_unit_test(test_wake_if_idle),
	};

	return cmocka_run_group_tests_name("recbuf", tests, NULL, NULL);
}
