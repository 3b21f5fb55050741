/*
 * Which of a relay's session folders analyze reads (analyze/read/relaysess.c):
 * those the run records name, never two of one host and name, a local
 * trace always; what is left out and claims the job is said as
 * session_unverified, and with no record naming a session everything is
 * read and said unchecked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "read.h"
#include "report.h"

#define R "/r/hosta/"
#define JOB "job-7"
#define NAMED "ncclguard-10-20-" JOB
#define TRACE "/ust/uid/0/64-bit"

static int count_what(const struct an_state *an, const char *what, const char *in_detail)
{
	int n = 0;

	for (int i = 0; i < an->ninc; i++)
		n += !strcmp(an->inc[i].what, what) &&
		     (!in_detail || strstr(an->inc[i].detail, in_detail));
	return n;
}

static void test_named_only(void **state)
{
	char *paths[] = {
		R NAMED "-20261206-004826" TRACE,		/* the job's */
		R NAMED "-20261206-004826/ust/uid/1001/64-bit",	/* same folder */
		R "ncclguard-99-1-" JOB "-20261206-004829" TRACE,	/* claims the job */
		R "ncclguard-5-6-other-20261206-004830" TRACE,	/* another job's */
		"/runs/hosta" TRACE,				/* a local trace */
		"/r/hostb/" NAMED "-20261206-004826" TRACE,	/* named for hosta */
	};
	int n = sizeof(paths) / sizeof(paths[0]), keep[6];
	struct an_opts o = { 0 };
	struct an_state *an = an_new(&o);
	struct an_sessions rec = { 0 };

	(void)state;
	an_sessions_add(&rec, "hosta", NAMED, JOB);
	an_sessions_keep(an, paths, n, &rec, keep);
	assert_int_equal(keep[0], 1);
	assert_int_equal(keep[1], 1);
	assert_int_equal(keep[2], 0);
	assert_int_equal(keep[3], 0);
	assert_int_equal(keep[4], 1);
	assert_int_equal(keep[5], 0);
	/* said for each left out that claims the job, not for another job's */
	assert_int_equal(count_what(an, "session_unverified", NULL), 2);
	assert_int_equal(count_what(an, "session_unverified", "ncclguard-99-1-" JOB), 1);
	assert_int_equal(count_what(an, "session_unverified", "/r/hostb/" NAMED), 1);
	assert_int_equal(count_what(an, "session_unverified", "ncclguard-5-6-other"), 0);
	an_sessions_free(&rec);
	an_free(an);
}

static void test_doubled(void **state)
{
	char *paths[] = {
		R NAMED "-20261206-004826" TRACE,
		R NAMED "-20261206-004826/ust/uid/1001/64-bit",	/* one folder */
		R NAMED "-20261206-004901" TRACE,	/* the same host and name */
		"/r/hostb/ncclguard-11-20-" JOB "-20261206-004826" TRACE,
	};
	int keep[4];
	struct an_opts o = { 0 };
	struct an_state *an = an_new(&o);
	struct an_sessions rec = { 0 };

	(void)state;
	an_sessions_add(&rec, "hosta", NAMED, JOB);
	an_sessions_add(&rec, "hostb", "ncclguard-11-20-" JOB, JOB);
	an_sessions_keep(an, paths, 4, &rec, keep);
	assert_int_equal(keep[0], 0);
	assert_int_equal(keep[1], 0);
	assert_int_equal(keep[2], 0);
	assert_int_equal(keep[3], 1);
	/* each folder named, both left out */
	assert_int_equal(count_what(an, "session_unverified", "host hosta has 2 sessions named "
				    NAMED), 2);
	assert_int_equal(count_what(an, "session_unverified", "-004826: host hosta"), 1);
	assert_int_equal(count_what(an, "session_unverified", "-004901: host hosta"), 1);
	an_sessions_free(&rec);
	an_free(an);
}

static void test_no_record(void **state)
{
	char *paths[] = {
		R NAMED "-20261206-004826" TRACE,
		R "ncclguard-99-1-" JOB "-20261206-004829" TRACE,
		"/runs/hosta" TRACE,
	};
	int keep[3];
	struct an_opts o = { 0 };
	struct an_state *an = an_new(&o);
	struct an_sessions rec = { 0 };

	(void)state;
	an_sessions_keep(an, paths, 3, &rec, keep);
	assert_int_equal(keep[0] + keep[1] + keep[2], 3);
	assert_int_equal(count_what(an, "session_unverified", "2 sessions read unchecked"), 1);
	an_free(an);
}

static void test_local_only(void **state)
{
	char *paths[] = { "/runs/hosta" TRACE, "/runs/hostb-20261206-004826x" TRACE };
	int keep[2];
	struct an_opts o = { 0 };
	struct an_state *an = an_new(&o);
	struct an_sessions rec = { 0 };

	(void)state;
	an_sessions_keep(an, paths, 2, &rec, keep);
	assert_int_equal(keep[0] + keep[1], 2);
	assert_int_equal(an->ninc, 0);
	an_free(an);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_named_only),
		cmocka_unit_test(test_doubled),
		cmocka_unit_test(test_no_record),
		cmocka_unit_test(test_local_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
