/* The recorded clock (preload/core/clock.c): NCCLGUARD_CLOCK, the TSC
 * mapped onto CLOCK_MONOTONIC where it can be, and stamps converted after
 * the fact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "ngtest.h"

/* ng_clock_ns read between two clock_gettime: inside, give or take 2 us
 * (a conversion error or an rdtsc run early), most of the time (the VM
 * may preempt us between reads). */
static void assert_agrees(void)
{
	uint64_t prev = 0;
	int ok = 0, n = 2000;

	for (int i = 0; i < n; i++) {
		uint64_t a = ng_now_ns(), b = ng_clock_ns(), c = ng_now_ns();

		ok += b + 2000 >= a && b <= c + 2000;
		assert_true(b >= prev);		/* no recalibration here: monotonic */
		prev = b;
	}
	assert_true(ok >= n * 9 / 10);
}

/* A call's raw stamp, converted later by the watchdog, lands where the
 * clock was when it was taken; so does one taken before the TSC was
 * given up (the last mapping is kept for it). */
enum { STAMPS = 2000 };

/* How many stamps convert to a time between the reads around them. */
static int stamps_inside(const uint64_t *a, const uint64_t *t, const uint64_t *c)
{
	int ok = 0;

	for (int i = 0; i < STAMPS; i++) {
		uint64_t b = t[i];

		ng_clock_from_ticks(&b, 1);
		ok += b + 2000 >= a[i] && b <= c[i] + 2000;
	}
	return ok;
}

static void assert_stamps_agree(void)
{
	enum { N = STAMPS };
	static uint64_t a[N], t[N], c[N];

	for (int i = 0; i < N; i++) {
		a[i] = ng_now_ns();
		t[i] = ng_stamp(1);
		c[i] = ng_now_ns();
	}
	ng_clock_tick();		/* a new anchor before the conversion */
	assert_true(stamps_inside(a, t, c) >= N * 9 / 10);
	ng_cfg.tsc = 0;
	ng_clock_init();		/* the TSC given up */
	assert_false(ng_hot.ticks);
	assert_true(stamps_inside(a, t, c) >= N * 9 / 10);
	ng_cfg.tsc = 1;
	ngt_calibrate();
}

static void test_clock(void **state)
{
	struct ng_config saved = ng_cfg, c = ng_cfg;

	(void)state;
	setenv("NCCLGUARD_CLOCK", "monotonic", 1);
	ng_config_from_env(&c);
	assert_int_equal(c.tsc, 0);
	setenv("NCCLGUARD_CLOCK", "rdtsc", 1);	/* unknown: warns, keeps */
	ng_config_from_env(&c);
	assert_int_equal(c.tsc, 0);
	setenv("NCCLGUARD_CLOCK", "tsc", 1);
	ng_config_from_env(&c);
	assert_int_equal(c.tsc, 1);
	unsetenv("NCCLGUARD_CLOCK");

	ng_cfg.tsc = 0;
	ngt_calibrate();
	assert_false(ng_clock_tsc());
	assert_agrees();
	assert_false(ng_hot.ticks);	/* calls stamp with clock_gettime */
	ng_cfg.tsc = 1;
	ngt_calibrate();
	if (!ng_clock_tsc())
		print_message("no invariant TSC the kernel keeps time with here: "
			      "only clock_gettime checked\n");
	assert_agrees();
	assert_int_equal(ng_hot.ticks, ng_clock_tsc());
	if (ng_hot.ticks)
		assert_stamps_agree();
	ng_cfg.tsc = 0;		/* and back */
	ngt_calibrate();
	assert_false(ng_clock_tsc());
	assert_false(ng_hot.ticks);
	ng_cfg = saved;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock),
	};

	return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
