/*
 * The uint64 -> int32 map (common/u64map.c): what is put comes back,
 * whatever the keys and however far it grew, and a put that cannot
 * allocate is refused with the map left as it was.  The test is linked
 * with -Wl,--wrap=malloc so that it can make the map's allocations fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "u64map.h"

void *__real_malloc(size_t sz);

/* Calls of malloc left before they start to fail; negative: never. */
static int mallocs_left = -1;

void *__wrap_malloc(size_t sz)
{
	if (mallocs_left == 0)
		return NULL;
	if (mallocs_left > 0)
		mallocs_left--;
	return __real_malloc(sz);
}

static void empty_map_has_nothing(void **state)
{
	struct ng_u64map m = { 0 };

	(void)state;
	assert_int_equal(ng_u64map_get(&m, 0), -1);
	assert_int_equal(ng_u64map_get(&m, 42), -1);
	ng_u64map_free(&m);
}

static void put_get_and_overwrite(void **state)
{
	struct ng_u64map m = { 0 };

	(void)state;
	assert_int_equal(ng_u64map_put(&m, 7, 3), 0);
	assert_int_equal(ng_u64map_put(&m, 8, 0), 0);
	assert_int_equal(ng_u64map_get(&m, 7), 3);
	assert_int_equal(ng_u64map_get(&m, 8), 0);
	assert_int_equal(ng_u64map_get(&m, 9), -1);
	assert_int_equal(ng_u64map_put(&m, 7, 11), 0);
	assert_int_equal(ng_u64map_get(&m, 7), 11);
	assert_int_equal(m.n, 2);
	assert_int_equal(ng_u64map_put(&m, 5, -1), -1);
	assert_int_equal(ng_u64map_get(&m, 5), -1);
	ng_u64map_free(&m);
}

static void extreme_keys(void **state)
{
	struct ng_u64map m = { 0 };

	(void)state;
	assert_int_equal(ng_u64map_put(&m, 0, 1), 0);
	assert_int_equal(ng_u64map_get(&m, UINT64_MAX), -1);
	assert_int_equal(ng_u64map_put(&m, UINT64_MAX, 2), 0);
	assert_int_equal(ng_u64map_put(&m, INT32_MAX, INT32_MAX), 0);
	assert_int_equal(ng_u64map_get(&m, 0), 1);
	assert_int_equal(ng_u64map_get(&m, UINT64_MAX), 2);
	assert_int_equal(ng_u64map_get(&m, INT32_MAX), INT32_MAX);
	ng_u64map_free(&m);
}

/* Keys that share their low bits, as packed (rank << 32 | comm) ones do. */
static uint64_t key_of(int i)
{
	return (uint64_t)i << 32 | 5;
}

static void ten_thousand_keys_grow(void **state)
{
	struct ng_u64map m = { 0 };
	int i;

	(void)state;
	for (i = 0; i < 10000; i++)
		assert_int_equal(ng_u64map_put(&m, key_of(i), i), 0);
	assert_int_equal(m.n, 10000);
	assert_true(m.cap >= 20000);
	for (i = 0; i < 10000; i++)
		assert_int_equal(ng_u64map_get(&m, key_of(i)), i);
	assert_int_equal(ng_u64map_get(&m, key_of(10000)), -1);
	assert_int_equal(ng_u64map_get(&m, 5), 0);
	assert_int_equal(ng_u64map_get(&m, 6), -1);
	ng_u64map_free(&m);
}

static void reuse_after_free(void **state)
{
	struct ng_u64map m = { 0 };
	int i;

	(void)state;
	for (i = 0; i < 100; i++)
		assert_int_equal(ng_u64map_put(&m, i, i), 0);
	ng_u64map_free(&m);
	assert_null(m.keys);
	assert_int_equal(m.cap, 0);
	assert_int_equal(m.n, 0);
	assert_int_equal(ng_u64map_get(&m, 3), -1);
	assert_int_equal(ng_u64map_put(&m, 3, 30), 0);
	assert_int_equal(ng_u64map_get(&m, 3), 30);
	assert_int_equal(ng_u64map_get(&m, 4), -1);
	ng_u64map_free(&m);
	ng_u64map_free(&m);	/* twice is harmless */
}

/* Out of memory on the first allocation (keys) or the second (values):
 * the put is refused, what was there stays, and a later put succeeds. */
static void failed_growth_leaves_map(void **state)
{
	struct ng_u64map m = { 0 };
	int i, fail_at;

	(void)state;
	for (fail_at = 0; fail_at < 2; fail_at++) {
		mallocs_left = fail_at;
		assert_int_equal(ng_u64map_put(&m, 1, 1), -1);
		mallocs_left = -1;
		assert_int_equal(m.cap, 0);
		assert_int_equal(ng_u64map_get(&m, 1), -1);

		for (i = 0; i < 32; i++)	/* fills 64 slots to the brim */
			assert_int_equal(ng_u64map_put(&m, i, i), 0);
		assert_int_equal(m.cap, 64);
		mallocs_left = fail_at;
		assert_int_equal(ng_u64map_put(&m, 1000, 1), -1);
		/* Overwriting needs no room: it still works. */
		assert_int_equal(ng_u64map_put(&m, 3, 33), 0);
		mallocs_left = -1;
		assert_int_equal(m.cap, 64);
		assert_int_equal(m.n, 32);
		assert_int_equal(ng_u64map_get(&m, 1000), -1);
		assert_int_equal(ng_u64map_get(&m, 3), 33);
		for (i = 0; i < 32; i++)
			if (i != 3)
				assert_int_equal(ng_u64map_get(&m, i), i);
		assert_int_equal(ng_u64map_put(&m, 1000, 1), 0);
		assert_int_equal(ng_u64map_get(&m, 1000), 1);
		ng_u64map_free(&m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_map_has_nothing),
		cmocka_unit_test(put_get_and_overwrite),
		cmocka_unit_test(extreme_keys),
		cmocka_unit_test(ten_thousand_keys_grow),
		cmocka_unit_test(reuse_after_free),
		cmocka_unit_test(failed_growth_leaves_map),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
