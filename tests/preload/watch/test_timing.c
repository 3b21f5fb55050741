/* GPU timing (preload/watch/timing.c): which calls are sampled. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "watch.h"

static int timed(struct ng_call *call, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		call->index++;
		k += ng_timing_sampled(call);
	}
	return k;
}

static void test_sample_rule(void **state)
{
	struct ng_config saved = ng_cfg;
	static struct ng_comm c;
	struct ng_call call = { .comm = &c, .bytes = 8, .enter_ns = 5000000000ull };

	(void)state;
	/* Rate: a burst of 256 (+1) then one per gap as time passes. */
	ng_cfg.sample_every = 1;
	ng_cfg.sample_gap_ns = 1000000;
	ng_cfg.sample_bytes = 1 << 20;
	assert_int_equal(timed(&call, 5000), 257);
	call.enter_ns += 10000000;		/* 10 ms later: 10 more */
	assert_int_equal(timed(&call, 5000), 10);
	call.bytes = 4096;			/* another size: its own burst */
	assert_int_equal(timed(&call, 5000), 257);
	call.bytes = 12;			/* 8-15 bytes: the same class as 8 */
	assert_int_equal(timed(&call, 5000), 0);
	call.bytes = 1 << 20;			/* big calls: every one */
	assert_int_equal(timed(&call, 100), 100);
	call.bytes = 8;
	call.enter_ns += 5000000000ull;		/* idle 5 s: a full burst again */
	assert_int_equal(timed(&call, 5000), 257);
	/* Count: 1 in 4, by the comm's call index (the same calls on all ranks). */
	ng_cfg.sample_every = 4;
	ng_cfg.sample_gap_ns = 0;
	ng_cfg.sample_bytes = 65536;
	call.index = 0;
	assert_int_equal(timed(&call, 4000), 1000);
	ng_cfg.sample_every = 1;
	ng_cfg.sample_bytes = 0;
	assert_int_equal(timed(&call, 10), 10);
	ng_cfg = saved;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_rule),
	};

	return cmocka_run_group_tests_name("timing", tests, NULL, NULL);
}
