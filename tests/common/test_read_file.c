/*
 * The bounded file reader (common/read_file.c): a file is read whole with
 * a NUL after it; a missing one leaves ENOENT; what is not a regular
 * file, a link under O_NOFOLLOW, and a file over the bound are refused
 * with the reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "read_file.h"

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_read(void **state)
{
	char dir[] = "/tmp/ng_read_file.XXXXXX", p[128], l[128], err[160], *buf;
	size_t len;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/f", dir);
	put(p, "abcd");
	assert_int_equal(ng_read_file(p, 4, 0, "thing", &buf, &len, err, sizeof(err)), 0);
	assert_int_equal(len, 4);
	assert_string_equal(buf, "abcd");
	free(buf);
	assert_int_equal(ng_read_file(p, 3, 0, "thing", &buf, &len, err, sizeof(err)), -1);
	assert_null(buf);
	assert_string_equal(err, "more than a thing's 3 bytes");
	assert_int_not_equal(errno, ENOENT);

	snprintf(l, sizeof(l), "%s/link", dir);
	assert_int_equal(symlink(p, l), 0);
	assert_int_equal(ng_read_file(l, 4, 0, "thing", &buf, &len, err, sizeof(err)), 0);
	free(buf);
	assert_int_equal(ng_read_file(l, 4, O_NOFOLLOW, "thing", &buf, &len, err, sizeof(err)),
			 -1);
	assert_int_not_equal(errno, ENOENT);

	assert_int_equal(ng_read_file(dir, 4, 0, "thing", &buf, &len, err, sizeof(err)), -1);
	assert_string_equal(err, "not a regular file");

	snprintf(l, sizeof(l), "%s/fifo", dir);
	assert_int_equal(mkfifo(l, 0600), 0);
	assert_int_equal(ng_read_file(l, 4, 0, "thing", &buf, &len, err, sizeof(err)), -1);
	assert_string_equal(err, "not a regular file");

	snprintf(l, sizeof(l), "%s/none", dir);
	assert_int_equal(ng_read_file(l, 4, 0, "thing", &buf, &len, err, sizeof(err)), -1);
	assert_int_equal(errno, ENOENT);

	snprintf(l, sizeof(l), "rm -rf %s", dir);
	assert_int_equal(system(l), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
