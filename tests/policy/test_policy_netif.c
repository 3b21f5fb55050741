/* NCCL's interface-list syntax (common/iflist.c), checked against what NCCL's
 * parseStringList/matchIfList and their callers do. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "policy.h"

static struct ng_iflist parse_ok(const char *s)
{
	struct ng_iflist l;
	char err[160] = "";

	if (ng_iflist_parse(s, &l, err, sizeof(err)))
		fail_msg("'%s' rejected: %s", s, err);
	return l;
}

static void test_prefix(void **state)
{
	struct ng_iflist l = parse_ok("ib,eth1");

	(void)state;
	assert_int_equal(l.n, 2);
	assert_false(l.exclude);
	assert_false(l.exact);
	assert_true(ng_iflist_selects(&l, "ib0", -1));
	assert_true(ng_iflist_selects(&l, "ib1", -1));
	assert_true(ng_iflist_selects(&l, "eth1", -1));
	assert_true(ng_iflist_selects(&l, "eth10", -1));	/* prefix */
	assert_false(ng_iflist_selects(&l, "eth0", -1));
	assert_false(ng_iflist_selects(&l, "i", -1));
}

static void test_exact(void **state)
{
	struct ng_iflist l = parse_ok("=eth1,ib0");

	(void)state;
	assert_true(l.exact);
	assert_true(ng_iflist_selects(&l, "eth1", -1));
	assert_false(ng_iflist_selects(&l, "eth10", -1));
	assert_true(ng_iflist_selects(&l, "ib0", -1));
	assert_false(ng_iflist_selects(&l, "ib", -1));
}

static void test_exclude(void **state)
{
	struct ng_iflist l = parse_ok("^docker,lo,virbr");

	(void)state;
	assert_true(l.exclude);
	assert_false(ng_iflist_selects(&l, "docker0", -1));
	assert_false(ng_iflist_selects(&l, "lo", -1));
	assert_true(ng_iflist_selects(&l, "eth0", -1));
	assert_true(ng_iflist_selects(&l, "ib0", -1));
	/* ^= : exclude exact names only. */
	l = parse_ok("^=eth0");
	assert_true(l.exclude && l.exact);
	assert_false(ng_iflist_selects(&l, "eth0", -1));
	assert_true(ng_iflist_selects(&l, "eth01", -1));
	/* "^" alone: NCCL's empty list matches everything, negated: nothing. */
	l = parse_ok("^");
	assert_int_equal(l.n, 0);
	assert_false(ng_iflist_selects(&l, "eth0", -1));
	l = parse_ok("");
	assert_true(ng_iflist_selects(&l, "eth0", -1));
}

static void test_ports(void **state)
{
	struct ng_iflist l = parse_ok("mlx5_0:1,mlx5_1");

	(void)state;
	assert_int_equal(l.e[0].port, 1);
	assert_int_equal(l.e[1].port, -1);
	assert_true(ng_iflist_selects(&l, "mlx5_0", 1));
	assert_false(ng_iflist_selects(&l, "mlx5_0", 2));
	assert_true(ng_iflist_selects(&l, "mlx5_1", 2));	/* no port: any */
	assert_true(ng_iflist_selects(&l, "mlx5_0", -1));	/* sockets: no port */
	/* Prefix with port: mlx5 matches mlx5_0 and mlx5_10, port 1 only. */
	l = parse_ok("mlx5:1");
	assert_true(ng_iflist_selects(&l, "mlx5_10", 1));
	assert_false(ng_iflist_selects(&l, "mlx5_10", 2));
	l = parse_ok("=mlx5_0:1");
	assert_false(ng_iflist_selects(&l, "mlx5_01", 1));
	assert_true(ng_iflist_selects(&l, "mlx5_0", 1));
	/* ^ with ports: everything but port 1 of mlx5_0. */
	l = parse_ok("^=mlx5_0:1");
	assert_false(ng_iflist_selects(&l, "mlx5_0", 1));
	assert_true(ng_iflist_selects(&l, "mlx5_0", 2));
	/* rail and plane fields after the port are accepted and ignored. */
	l = parse_ok("mlx5_0:1:2:3");
	assert_int_equal(l.e[0].port, 1);
	/* An empty port is port 0 to NCCL (atoi of ""): no InfiniBand port,
	 * which count from 1; a socket interface (no port) still matches. */
	l = parse_ok("mlx5_0:");
	assert_int_equal(l.e[0].port, 0);
	assert_int_equal(ng_iflist_match(&l, "mlx5_0", 1), -1);
	assert_false(ng_iflist_selects(&l, "mlx5_0", 1));
	assert_int_equal(ng_iflist_match(&l, "mlx5_0", -1), 0);
}

static void test_empty_entries(void **state)
{
	struct ng_iflist l = parse_ok(",ib0,,eth0,");

	(void)state;
	assert_int_equal(l.n, 2);
	assert_string_equal(l.e[0].name, "ib0");
	assert_string_equal(l.e[1].name, "eth0");
	assert_int_equal(ng_iflist_match(&l, "eth0", -1), 1);
	assert_int_equal(ng_iflist_match(&l, "lo", -1), -1);
}

static void test_bad(void **state)
{
	static const char *const bad[] = {
		"ib0:x", ":1", "ib 0", "eth0,=eth1", "eth0,^eth1", "ib0:1234567",
	};
	struct ng_iflist l;
	char err[160], many[512] = "";

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		err[0] = 0;
		if (!ng_iflist_parse(bad[i], &l, err, sizeof(err)))
			fail_msg("'%s' accepted", bad[i]);
		assert_true(err[0] != 0);
	}
	for (int i = 0; i < NG_NETIF_MAX + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "e%d,", i);
	assert_int_equal(ng_iflist_parse(many, &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "more than"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_exclude),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_empty_entries),
		cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
