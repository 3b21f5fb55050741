/*
 * The round-robin schedule (matrix/schedule.c): for N = 1..64, every pair
 * meets exactly once, the pairs of a round are disjoint, N-1 rounds for
 * even N and N for odd N (one bye per rank), and the partner relation is
 * symmetric.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "matrix.h"

static void check(int n)
{
	int rounds = ng_mx_rounds(n);
	int *met = calloc((size_t)n * n + 1, sizeof(int)), *byes = calloc((size_t)n + 1, sizeof(int));

	assert_non_null(met);
	assert_non_null(byes);
	if (n < 2)
		assert_int_equal(rounds, 0);
	else
		assert_int_equal(rounds, n % 2 ? n : n - 1);
	for (int r = 0; r < rounds; r++) {
		int pairs = 0;

		for (int a = 0; a < n; a++) {
			int b = ng_mx_peer(n, r, a);

			if (b < 0) {
				byes[a]++;
				continue;
			}
			assert_true(b < n);
			assert_int_not_equal(a, b);
			/* Disjoint: b's partner is a, so neither is in another pair. */
			assert_int_equal(ng_mx_peer(n, r, b), a);
			if (a < b) {
				met[a * n + b]++;
				pairs++;
			}
		}
		assert_int_equal(pairs, n / 2);
	}
	for (int a = 0; a < n; a++) {
		for (int b = a + 1; b < n; b++)
			assert_int_equal(met[a * n + b], 1);
		assert_int_equal(byes[a], n % 2 && n > 1 ? 1 : 0);
	}
	free(met);
	free(byes);
}

static void test_sizes(void **state)
{
	(void)state;
	for (int n = 1; n <= 64; n++)
		check(n);
	check(1023);
	check(1024);
}

/* Out of range asks: no partner, never a wrong one. */
static void test_bounds(void **state)
{
	(void)state;
	assert_int_equal(ng_mx_peer(1, 0, 0), -1);
	assert_int_equal(ng_mx_peer(4, 3, 0), -1);
	assert_int_equal(ng_mx_peer(4, -1, 0), -1);
	assert_int_equal(ng_mx_peer(4, 0, 4), -1);
	assert_int_equal(ng_mx_peer(4, 0, -1), -1);
	assert_int_equal(ng_mx_rounds(0), 0);
	assert_int_equal(ng_mx_rounds(2), 1);
	assert_int_equal(ng_mx_peer(2, 0, 0), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
