/* The fault injection spec parser (common/inject_spec.h), shared by the
 * shim and `ncclguard run --inject`: what a rule holds once parsed, and
 * the rules that could never fire, refused with a message naming the key
 * and the value. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "inject_spec.h"

static void test_fields(void **state)
{
	struct ng_inject_rule r[NG_INJECT_MAX];
	char err[512];
	int n;

	(void)state;
	assert_int_equal(ng_inject_spec_parse("drop:rank=2147483647,seq=1,comm=0,count=1,every=1;"
					      "delay:ms=0", r, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(r[0].kind, NG_INJ_DROP);
	assert_int_equal(r[0].rank, INT_MAX);	/* the last rank an int holds */
	assert_int_equal(r[0].seq, 1);		/* the first call of a comm */
	assert_int_equal(r[0].comm, 0);
	assert_int_equal(r[0].count, 1);
	assert_int_equal(r[0].every, 1);
	assert_int_equal(r[1].kind, NG_INJ_DELAY);
	assert_int_equal(r[1].ms, 0);
	assert_int_equal(r[1].rank, -1);	/* unset: any */
	assert_int_equal(r[1].count, -1);
	/* The same key in two rules is two rules, not a repeat. */
	assert_int_equal(ng_inject_spec_parse("drop:rank=1;stall:rank=1", r, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
}

static void expect_refused(const char *spec, const char *part)
{
	struct ng_inject_rule r[NG_INJECT_MAX];
	char err[512] = "";
	int n = -1;

	if (ng_inject_spec_parse(spec, r, &n, err, sizeof(err)) != -1)
		fail_msg("spec '%s' accepted", spec);
	if (!strstr(err, part))
		fail_msg("spec '%s': message '%s' does not name '%s'", spec, err, part);
}

/* Each of these would be armed and never fire: a test that passes for
 * the wrong reason. */
static void test_never_fires(void **state)
{
	(void)state;
	expect_refused("drop:rank=99999999999", "rank=99999999999 in drop: not a rank");
	expect_refused("drop:rank=2147483648", "rank=2147483648");
	expect_refused("drop:rank=99999999999999999999999", "rank=99999999999999999999999");
	expect_refused("drop:comm=4294967296", "comm=4294967296 in drop: not a communicator");
	expect_refused("stall:count=0", "count=0 in stall: not a positive number");
	expect_refused("drop:seq=0", "seq=0 in drop: not a sequence number");
	expect_refused("drop:every=0", "every=0");
	expect_refused("drop:rank=-1", "rank=-1");
	expect_refused("drop:rank=+1", "rank=+1");
	expect_refused("drop:rank= 1", "rank= 1");
	expect_refused("delay:ms=-5", "ms=-5");
}

static void test_key_twice(void **state)
{
	(void)state;
	expect_refused("drop:rank=1,rank=2", "rank=2 in drop: rank given twice");
	expect_refused("drop:rank=1,rank=1", "rank given twice");
	expect_refused("drop:op=allreduce,seq=3,op=broadcast", "op=broadcast in drop: op given twice");
	expect_refused("delay:ms=5,rank=0,ms=6", "ms=6 in delay: ms given twice");
	expect_refused("error:code=ncclSystemError,code=ncclInternalError", "code given twice");
	expect_refused("stall:count=1,every=2,count=3", "count=3 in stall: count given twice");
	/* The second rule is the bad one: the first does not hide it. */
	expect_refused("drop:rank=1;stall:comm=0,comm=1", "comm=1 in stall: comm given twice");
}

/* NCCL 2.30's ncclTimeout (8) is a code by name, short name and number,
 * named back; 9 is no result code. */
static void test_timeout_code(void **state)
{
	struct ng_inject_rule r[NG_INJECT_MAX];
	char err[512];
	int n;

	(void)state;
	assert_int_equal(ng_inject_spec_parse("error:code=ncclTimeout;error:code=Timeout;error:code=8",
					      r, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(r[i].code, 8);
		assert_string_equal(ng_inject_code_name(r[i].code), "ncclTimeout");
	}
	assert_int_equal(ng_inject_spec_parse("error:code=9", r, &n, err, sizeof(err)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_timeout_code),
		cmocka_unit_test(test_never_fires),
		cmocka_unit_test(test_key_twice),
	};

	return cmocka_run_group_tests_name("inject_spec", tests, NULL, NULL);
}
