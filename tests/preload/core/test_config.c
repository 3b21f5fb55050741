/* The configuration from NCCLGUARD_* variables (preload/core/config.c):
 * the GPU-timing sampling settings and their refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include "core.h"

static void test_sample_config(void **state)
{
	struct ng_config def = ng_cfg, c;
	static const struct {
		const char *v;
		long every;
		uint64_t gap_ns, bytes;
	} cases[] = {
		{ "1", 1, 0, 0 },
		{ "16", 16, 0, 65536 },
		{ "16:4096", 16, 0, 4096 },
		{ "500/s", 1, 2000000, 1 << 20 },
		{ "2000/s:0", 1, 500000, 0 },
	};
	static const char *const bad[] = { "0", "-3", "abc", "10/s:x", "4:", "4:-1", "5/m", "2000000000/s", "" };

	(void)state;
	assert_int_equal(def.sample_gap_ns, 10000000);	/* the default: 100/s */
	assert_int_equal(def.sample_bytes, 1 << 20);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c = def;
		setenv("NCCLGUARD_SAMPLE", cases[i].v, 1);
		ng_config_from_env(&c);
		assert_int_equal(c.sample_every, cases[i].every);
		assert_int_equal(c.sample_gap_ns, cases[i].gap_ns);
		assert_int_equal(c.sample_bytes, cases[i].bytes);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = def;
		setenv("NCCLGUARD_SAMPLE", bad[i], 1);
		ng_config_from_env(&c);		/* warns, keeps the default */
		assert_int_equal(c.sample_every, def.sample_every);
		assert_int_equal(c.sample_gap_ns, def.sample_gap_ns);
		assert_int_equal(c.sample_bytes, def.sample_bytes);
	}
	unsetenv("NCCLGUARD_SAMPLE");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_config),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
