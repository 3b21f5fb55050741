/*
 * What a job folder says of the runs that left it (run/meeting.c): each
 * run counted once, however many lines it left.  A launcher killed
 * between its own line and the removal of its member file leaves its
 * guardian to write another, and run.json then said 5 tasks for 4.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "run_priv.h"

static char dir[64];

static void ended(const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/ended", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/ngtest-group.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/ended", dir);
	unlink(path);
	return rmdir(dir);
}

static void test_each_run_once(void **state)
{
	struct rn_meet_end e;

	(void)state;
	/* pid 100's launcher said finished, then its guardian wrote again. */
	ended("100 finished 0\n200 failed 3\n100 launcher_killed -1\n300 launcher_killed -1\n"
	      "400 finished 0\n");
	rn_meet_read_ended(dir, &e);
	assert_int_equal(e.tasks, 4);
	assert_int_equal(e.killed, 1);
	assert_int_equal(e.failed, 1);
	assert_int_equal(e.exit_status, 3);
}

static void test_guardian_alone(void **state)
{
	struct rn_meet_end e;

	(void)state;
	/* A launcher killed before its line: its guardian's is the one. */
	ended("100 finished 0\n200 launcher_killed -1\n");
	rn_meet_read_ended(dir, &e);
	assert_int_equal(e.tasks, 2);
	assert_int_equal(e.killed, 1);
	assert_int_equal(e.exit_status, -1);	/* unknown for the killed one */
}

static void test_bad_lines(void **state)
{
	struct rn_meet_end e;

	(void)state;
	ended("garbage\n100 finished\n\n200 finished 0\n200 finished 0\nx y z\n");
	rn_meet_read_ended(dir, &e);
	assert_int_equal(e.tasks, 1);
	assert_int_equal(e.exit_status, 0);
}

static void test_no_file(void **state)
{
	struct rn_meet_end e;
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/ended", dir);
	unlink(path);
	rn_meet_read_ended(dir, &e);
	assert_int_equal(e.tasks, 0);
	assert_int_equal(e.exit_status, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_run_once),
		cmocka_unit_test(test_guardian_alone),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_no_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
