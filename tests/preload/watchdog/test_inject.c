/* Fault-injection specs (preload/watchdog/inject.c, docs/design.md, "Fault
 * injection"): what is accepted, and what is refused with a message naming
 * the part that is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "watchdog.h"

static void test_inject_valid(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(ng_inject_parse("delay:ms=50,rank=1,op=allreduce", err, sizeof(err)), 0);
	assert_int_equal(ng_inject_parse("drop:rank=1,op=allreduce,seq=20", err, sizeof(err)), 0);
	assert_int_equal(ng_inject_parse("stall:op=groupend,count=1;error:code=ncclSystemError,every=3",
					 err, sizeof(err)), 0);
	assert_int_equal(ng_inject_parse("error:code=InvalidUsage,comm=0", err, sizeof(err)), 0);
	assert_int_equal(ng_inject_parse("drop", err, sizeof(err)), 0);
	assert_int_equal(ng_inject_parse("stall:op=init,rank=0;delay:op=split,ms=5,count=2",
					 err, sizeof(err)), 0);
	assert_int_equal(ng_inject_parse("drop:op=send,seq=3", err, sizeof(err)), 0);
}

static void expect_bad(const char *spec, const char *part)
{
	char err[512] = "";

	assert_int_equal(ng_inject_parse(spec, err, sizeof(err)), -1);
	if (!strstr(err, part))
		fail_msg("spec '%s': message '%s' does not name '%s'", spec, err, part);
}

static void test_inject_invalid(void **state)
{
	(void)state;
	expect_bad("sleep:ms=5", "sleep");
	expect_bad("delay:rank=1", "ms=N");
	expect_bad("delay:ms=abc", "ms=abc");
	expect_bad("delay:ms=-5", "ms=-5");
	expect_bad("drop:op=allreduse", "allreduse");
	expect_bad("drop:rnk=1", "rnk");
	expect_bad("drop:rank", "rank");
	expect_bad("drop:rank=", "rank=");
	expect_bad("error:code=ncclOops", "ncclOops");
	expect_bad("error", "code=NAME");
	expect_bad("drop:every=0", "every=0");
	expect_bad("drop:ms=5", "ms");		/* ms belongs to delay only */
	expect_bad(";;", "no rule");
	/* Rules that could never fire. */
	expect_bad("stall:op=destroy", "op=destroy: faults are injected into collectives");
	expect_bad("error:op=uniqueid,code=ncclSystemError", "op=uniqueid");
	expect_bad("drop:rank=0,op=groupend,seq=2", "no sequence number");
	expect_bad("stall:op=init,seq=1", "no sequence number");
	expect_bad("drop:op=groupend", "drop:op=groupend is not supported");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inject_valid),
		cmocka_unit_test(test_inject_invalid),
	};

	return cmocka_run_group_tests_name("inject", tests, NULL, NULL);
}
