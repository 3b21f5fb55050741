/* The straggler rule (common/straggle.h), shared by the analyzer and
 * watch: each rank's lateness against the others and their spread, the
 * window's floor and noise, and when late windows make a straggler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "straggle.h"

static void call(const int64_t *enter, int n, int64_t *dev, int64_t *spread)
{
	void *scratch = malloc(NG_STRAG_SCRATCH(n));

	assert_non_null(scratch);
	ng_strag_call(enter, n, dev, spread, scratch);
	free(scratch);
}

static void test_call(void **state)
{
	/* rank 2 20 ms late; the others 0, 10 and 30 us apart */
	int64_t enter[4] = { 1000, 11000, 20001000, 31000 }, dev[4], spread[4];
	int64_t two[2] = { 5000, 7000 }, dev2[2], spread2[2];

	(void)state;
	call(enter, 4, dev, spread);
	/* against the lower median of the others: 11000 for rank 2,
	 * 31000 for ranks 0 and 1 */
	assert_int_equal(dev[2], 20001000 - 11000);
	assert_int_equal(dev[0], 1000 - 31000);
	assert_int_equal(dev[1], 11000 - 31000);
	assert_int_equal(dev[3], 31000 - 11000);
	/* the others' spread: of |dev| 30000, 20000, 20000 for rank 2 */
	assert_int_equal(spread[2], 20000);
	/* two ranks: the gap, no spread */
	call(two, 2, dev2, spread2);
	assert_int_equal(dev2[0], -2000);
	assert_int_equal(dev2[1], 2000);
	assert_int_equal(spread2[0], 0);
	assert_int_equal(spread2[1], 0);
}

/* A window of NG_STRAG_WIN calls, each the same. */
static int window(int64_t late, int64_t spread, int64_t cycle, int64_t *med)
{
	int64_t l[NG_STRAG_WIN], s[NG_STRAG_WIN], c[NG_STRAG_WIN];

	for (int i = 0; i < NG_STRAG_WIN; i++) {
		l[i] = late;
		s[i] = spread;
		c[i] = cycle;
	}
	return ng_strag_window(l, s, c, med);
}

static void test_window(void **state)
{
	int64_t l[NG_STRAG_WIN] = { 20000000, 1000, 20000000, 20000000 };
	int64_t s[NG_STRAG_WIN] = { 100000, 100000, 100000, 100000 };
	int64_t c[NG_STRAG_WIN] = { 22000000, 22000000, 22000000, 22000000 };
	int64_t med;

	(void)state;
	/* one call of four on time: the median stands */
	assert_true(ng_strag_window(l, s, c, &med));
	assert_int_equal(med, 20000000);
	/* the floor: a sixteenth of the cycle, within 10 us and 1 ms */
	assert_false(window(40000, 0, 800000, &med));	/* floor 50 us */
	assert_true(window(50000, 0, 800000, &med));
	assert_false(window(9999, 0, 1000, &med));	/* floor 10 us */
	assert_true(window(10000, 0, 1000, &med));
	assert_false(window(999999, 0, INT64_MAX, &med));	/* unknown: 1 ms */
	assert_true(window(1000000, 0, INT64_MAX, &med));
	/* over 3 times the others' spread */
	assert_false(window(3000000, 1000000, INT64_MAX, &med));
	assert_true(window(3000001, 1000000, INT64_MAX, &med));
	/* early is never late */
	assert_false(window(-5000000, 0, INT64_MAX, &med));
}

static void test_flagged(void **state)
{
	(void)state;
	assert_false(ng_strag_flagged(0, 0));
	assert_false(ng_strag_flagged(1, 1));	/* one window: a burst */
	assert_true(ng_strag_flagged(2, 2));
	assert_true(ng_strag_flagged(8, 4));	/* half */
	assert_false(ng_strag_flagged(9, 4));
	assert_false(ng_strag_flagged(100, 49));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_call),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_flagged),
	};

	return cmocka_run_group_tests_name("straggle", tests, NULL, NULL);
}
