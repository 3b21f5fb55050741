/* The watchdog (preload/watch/watchdog.c): the time it publishes for the
 * calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "watch.h"

/* While the program calls NCCL, the watchdog publishes a coarse time that
 * moves with the clock and is never ahead of it; a forked child does not
 * inherit it; once the calls stop it is withdrawn, and calls read the
 * clock again.  Runs last: from here on the watchdog thread ticks the
 * clock calibration too. */
static void test_coarse_time(void **state)
{
	struct timespec ms = { 0, 1000000 };
	struct ng_comm *c = ng_comm_add((ncclComm_t)(uintptr_t)0x9000, 99, 0, 2, 0, 0, 1);
	uint64_t last = 0, max_age = 0, t0;
	int seen = 0, distinct = 0, status = -1;
	pid_t child;

	(void)state;
	assert_non_null(c);
	ng_watchdog_start();
	for (int i = 0; i < 300; i++) {		/* 300 calls, 1 ms apart or more */
		uint64_t t, now;

		__atomic_add_fetch(&c->seq, 1, __ATOMIC_RELAXED);
		t = __atomic_load_n(&ng_hot.coarse_ns, __ATOMIC_RELAXED);
		now = ng_now_coarse_ns();
		if (t) {
			assert_true(t <= now);
			seen++;
			distinct += t != last;
			last = t;
			if (now - t > max_age)
				max_age = now - t;
		}
		assert_true(ng_coarse_now() <= ng_now_coarse_ns());
		nanosleep(&ms, NULL);
	}
	if (seen < 50 || distinct < 5 || max_age > 200000000ull)
		fail_msg("published in %d samples, %d values, oldest %llu ms", seen, distinct,
			 (unsigned long long)(max_age / 1000000));
	child = fork();
	assert_true(child >= 0);
	if (child == 0)		/* no watchdog here: the parent's time is not ours,
				 * nor its TSC mapping (recalibrated at the first call) */
		_exit((__atomic_load_n(&ng_hot.coarse_ns, __ATOMIC_RELAXED) != 0) |
		      (ng_hot.ticks != 0) << 1 | ng_clock_tsc() << 2);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	t0 = ng_now_coarse_ns();	/* no more calls: withdrawn after the linger */
	while (__atomic_load_n(&ng_hot.coarse_ns, __ATOMIC_RELAXED) &&
	       ng_now_coarse_ns() - t0 < 2000000000ull)
		nanosleep(&ms, NULL);
	assert_int_equal(__atomic_load_n(&ng_hot.coarse_ns, __ATOMIC_RELAXED), 0);
	t0 = ng_now_coarse_ns();
	assert_true(ng_coarse_now() >= t0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coarse_time),
	};

	return cmocka_run_group_tests_name("watchdog", tests, NULL, NULL);
}
