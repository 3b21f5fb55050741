/* The host-call slots (preload/watchdog/hostcall.c): given back at a
 * thread's exit, and bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <cmocka.h>

#include "watchdog.h"

static int slot_missing;
static pthread_barrier_t slot_crowd;

static void *slot_user(void *arg)
{
	ng_host_enter(NG_FN_ncclAllReduce, 0x5eed, 1);
	if (!ng_tls.slot || !__atomic_load_n(&ng_tls.slot->enter_ns, __ATOMIC_ACQUIRE))
		__atomic_add_fetch(&slot_missing, 1, __ATOMIC_RELAXED);
	ng_host_exit();
	if (arg)
		pthread_barrier_wait(arg);
	return NULL;
}

/* Threads that come and go, four slots' worth of them, are all watched: an
 * exiting thread gives its slot back.  The slots are still bounded: of
 * more threads alive at once than slots, one is told there is none. */
static void test_host_slots_recycled(void **state)
{
	pthread_t t[NG_HOST_SLOTS + 1];

	(void)state;
	for (int i = 0; i < 4 * NG_HOST_SLOTS; i++) {
		assert_int_equal(pthread_create(&t[0], NULL, slot_user, NULL), 0);
		pthread_join(t[0], NULL);
	}
	assert_int_equal(slot_missing, 0);
	pthread_barrier_init(&slot_crowd, NULL, NG_HOST_SLOTS + 1);
	for (int i = 0; i <= NG_HOST_SLOTS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, slot_user, &slot_crowd), 0);
	for (int i = 0; i <= NG_HOST_SLOTS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&slot_crowd);
	assert_int_equal(slot_missing, 1);
	slot_missing = 0;
	assert_int_equal(pthread_create(&t[0], NULL, slot_user, NULL), 0);
	pthread_join(t[0], NULL);
	assert_int_equal(slot_missing, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_slots_recycled),
	};

	return cmocka_run_group_tests_name("hostcall", tests, NULL, NULL);
}
