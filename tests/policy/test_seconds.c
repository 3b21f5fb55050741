/* The one parser of a duration in seconds (common/seconds.h), shared by
 * the shim's variables, the policy file and `ncclguard run --timeout`:
 * the edge values, and ns that never wrap. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "seconds.h"

static void test_accepted(void **state)
{
	static const struct {
		const char *v;
		double s;
	} ok[] = {
		{ "600", 600 }, { "0.5", 0.5 }, { "600.5", 600.5 }, { "2e3", 2000 },
		{ "1E+2", 100 }, { "5.", 5 }, { ".25", 0.25 }, { "31536000", 31536000 },
		{ "3.1536e7", 31536000 }, { "1e-3", 0.001 }, { "007", 7 },
		/* 1 ms, however spelled, is the least */
		{ "0.001", 0.001 }, { "1000e-6", 0.001 }, { "0.01e-1", 0.001 }, { "0.0010", 0.001 },
	};
	const char *why;
	double d;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		d = -1;
		assert_int_equal(ng_seconds_parse(ok[i].v, &d, &why), 0);
		assert_true(fabs(d - ok[i].s) <= ok[i].s * 1e-12);
		assert_false(ng_seconds_never(d));
	}
	/* A year exactly is a deadline, and its ns fit. */
	assert_int_equal(ng_seconds_parse("31536000", &d, &why), 0);
	assert_true(ng_seconds_ns(d) == 31536000ull * 1000000000ull);
	assert_true(ng_seconds_ns(0.5) == 500000000ull);
}

static void test_never(void **state)
{
	/* Above a year, or spelled out: no timeout, and no finite ns. */
	static const char *const never[] = {
		"inf", "INF", "Infinity", "never", "NEVER", "1e99", "2e10", "31536001",
		"31536000.5", "1e400", "9999999999999999999999999999", "0.1e9",
	};
	const char *why;
	double d;

	(void)state;
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		d = 0;
		assert_int_equal(ng_seconds_parse(never[i], &d, &why), 0);
		assert_true(ng_seconds_never(d));
		assert_true(isinf(d));
		assert_true(ng_seconds_ns(d) == UINT64_MAX);
	}
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"0", "0.0", "0e5", "00", "-1", "-0", "+5", "nan", "NaN", "-inf", "5s", "5 ",
		" 5", "", "abc", "0x10", "1e", "1e+", "e5", ".", "1.2.3", "1,5", "5m",
		"infinite", "never ", "1e-400",
		/* below 1 ms: every call would time out */
		"1e-300", "0.0009", "0.00099999", "9e-4", "1e-4", "0.000001",
	};
	const char *why;
	double d;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		d = 42;
		why = NULL;
		assert_int_equal(ng_seconds_parse(bad[i], &d, &why), -1);
		assert_true(d == 42);		/* untouched: the caller keeps its value */
		assert_non_null(why);
	}
	assert_int_equal(ng_seconds_parse(NULL, &d, &why), -1);
	ng_seconds_parse("0", &d, &why);
	assert_non_null(strstr(why, "never"));	/* 0 points at the way to say none */
	ng_seconds_parse("1e-300", &d, &why);
	assert_non_null(strstr(why, "below 1 ms"));	/* the reason, not "a number" */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted),
		cmocka_unit_test(test_never),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests_name("seconds", tests, NULL, NULL);
}
