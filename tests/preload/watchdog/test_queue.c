/* The bounded lock-free ring (preload/core/ring.h): full is refused, not
 * waited on, and each producer's order is kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "queue.h"

static void test_ring_basic(void **state)
{
	struct ng_queue r;
	int v[5];

	(void)state;
	assert_int_equal(ng_queue_init(&r, 4), 0);
	assert_null(ng_queue_pop(&r));
	for (int i = 0; i < 4; i++)
		assert_int_equal(ng_queue_push(&r, &v[i]), 0);
	assert_int_equal(ng_queue_push(&r, &v[4]), -1);	/* full: refused, not blocked */
	for (int i = 0; i < 4; i++)
		assert_ptr_equal(ng_queue_pop(&r), &v[i]);
	assert_null(ng_queue_pop(&r));
	free(r.cells);
}

#define PER_THREAD 200000
static struct ng_queue shared;
static void *producer(void *arg)
{
	uintptr_t base = (uintptr_t)arg;

	for (uintptr_t i = 1; i <= PER_THREAD; i++)
		while (ng_queue_push(&shared, (void *)(base + i)))
			;
	return NULL;
}

static void test_ring_threads(void **state)
{
	pthread_t t[2];
	uintptr_t last[2] = { 0, 0 }, got = 0;

	(void)state;
	assert_int_equal(ng_queue_init(&shared, 1024), 0);
	pthread_create(&t[0], NULL, producer, (void *)(uintptr_t)0);
	pthread_create(&t[1], NULL, producer, (void *)(uintptr_t)(1ull << 40));
	while (got < 2 * PER_THREAD) {
		uintptr_t v = (uintptr_t)ng_queue_pop(&shared);
		int who;

		if (!v)
			continue;
		who = v >> 40 ? 1 : 0;
		v &= (1ull << 40) - 1;
		assert_int_equal(v, last[who] + 1);	/* each producer's order kept */
		last[who] = v;
		got++;
	}
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	free(shared.cells);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_basic),
		cmocka_unit_test(test_ring_threads),
	};

	return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
