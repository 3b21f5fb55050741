/* The configuration from NCCLGUARD_* variables (preload/core/config.c):
 * the GPU-timing sampling settings, the timeouts, and their refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include "core.h"
#include "seconds.h"

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

/* Both timeouts: above a year is never (no deadline that wraps); a bad
 * value is refused and the setting kept, never failing the job. */
static void test_timeouts(void **state)
{
	static const char *const vars[] = { "NCCLGUARD_TIMEOUT", "NCCLGUARD_INIT_TIMEOUT" };
	static const char *const never[] = { "inf", "never", "1e99", "2e10", "31536001" };
	static const char *const bad[] = { "0", "-1", "nan", "5s", " 5", "1e", "-inf",
					   "1e-300", "0.0009" };
	struct ng_config def = ng_cfg, c;

	(void)state;
	assert_true(def.timeout_s == 600);
	assert_true(def.init_timeout_s == 300);
	for (int k = 0; k < 2; k++) {
		double *field = k ? &c.init_timeout_s : &c.timeout_s, want = k ? 300 : 600;

		for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
			c = def;
			setenv(vars[k], never[i], 1);
			ng_config_from_env(&c);
			assert_true(ng_seconds_never(*field));
			assert_true(ng_seconds_ns(*field) == UINT64_MAX);
		}
		c = def;
		setenv(vars[k], "31536000", 1);
		ng_config_from_env(&c);
		assert_true(*field == 31536000);
		c = def;
		setenv(vars[k], "1.5", 1);
		ng_config_from_env(&c);
		assert_true(*field == 1.5);
		assert_true(ng_seconds_ns(*field) == 1500000000ull);
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			c = def;
			setenv(vars[k], bad[i], 1);
			ng_config_from_env(&c);		/* warns, keeps the default */
			assert_true(*field == want);
		}
		c = def;
		setenv(vars[k], "", 1);			/* empty: as unset */
		ng_config_from_env(&c);
		assert_true(*field == want);
		unsetenv(vars[k]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_config),
		cmocka_unit_test(test_timeouts),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
