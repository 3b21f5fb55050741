/*
 * The hang report's file (preload/watchdog/hang.c): created with 0644 under
 * the umask; never written through a symlink, never replacing what is not
 * a regular file (a FIFO there would have blocked the watchdog); an
 * earlier report replaced; a folder others can write to, or another
 * user's, named in a warning.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "watchdog.h"

static char root[] = "/tmp/ng_hang_XXXXXX";
static char errpath[300];

/* A fresh folder under root with mode `mode`. */
static const char *folder(const char *name, mode_t mode)
{
	static char dir[300];

	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chmod(dir, mode), 0);
	return dir;
}

static const char *report_in(const char *dir)
{
	static char path[400];

	snprintf(path, sizeof(path), "%s/ncclguard-hang-rank%d-pid%d.json", dir, ng_rank.rank,
		 (int)getpid());
	return path;
}

/* Write a report into dir; what it said on stderr, in a static buffer. */
static const char *dump(const char *dir)
{
	static char said[4096];
	int saved = dup(2), fd;
	ssize_t n;

	fd = open(errpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0 && saved >= 0);
	dup2(fd, 2);
	ng_cfg.dump_dir = dir;
	ng_hang_write("test", NULL, 0);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, said, sizeof(said) - 1, 0);
	close(fd);
	said[n > 0 ? n : 0] = '\0';
	fputs(said, stderr);
	return said;
}

static void read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* Entries of dir other than . and .. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void test_mode(void **state)
{
	const char *dir = folder("mode", 0700);
	char buf[64];
	struct stat st;
	mode_t old;

	(void)state;
	old = umask(022);
	dump(dir);
	assert_int_equal(lstat(report_in(dir), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0644);
	read_file(report_in(dir), buf, sizeof(buf));
	assert_non_null(strstr(buf, "\"schema\": \"ncclguard-hang/1\""));
	assert_int_equal(entries(dir), 1);		/* no temporary left */
	/* Written again: the earlier report is replaced, under umask 077. */
	umask(077);
	dump(dir);
	assert_int_equal(lstat(report_in(dir), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(entries(dir), 1);
	umask(old);
}

static void test_regular_file_replaced(void **state)
{
	const char *dir = folder("old", 0700);
	char buf[64];
	FILE *f;

	(void)state;
	f = fopen(report_in(dir), "w");
	assert_non_null(f);
	fputs("stale", f);
	fclose(f);
	dump(dir);
	read_file(report_in(dir), buf, sizeof(buf));
	assert_memory_equal(buf, "{\n", 2);
}

/* A symlink at the report's name, to a file elsewhere or to nothing: not
 * written through, not replaced. */
static void test_symlink(void **state)
{
	const char *dir = folder("link", 0700);
	char victim[400], missing[400], buf[64], target[400];
	const char *said;
	ssize_t n;
	FILE *f;

	(void)state;
	snprintf(victim, sizeof(victim), "%s/victim", root);
	f = fopen(victim, "w");
	assert_non_null(f);
	fputs("precious", f);
	fclose(f);
	assert_int_equal(symlink(victim, report_in(dir)), 0);
	said = dump(dir);
	assert_non_null(strstr(said, "something other than a regular file is there"));
	read_file(victim, buf, sizeof(buf));
	assert_string_equal(buf, "precious");
	n = readlink(report_in(dir), target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, victim);
	assert_int_equal(entries(dir), 1);		/* the link only */

	/* Dangling: its target is not created. */
	assert_int_equal(unlink(report_in(dir)), 0);
	snprintf(missing, sizeof(missing), "%s/created-through-link", root);
	assert_int_equal(symlink(missing, report_in(dir)), 0);
	dump(dir);
	assert_int_equal(access(missing, F_OK), -1);
}

/* A FIFO or a folder at the report's name: left as it is (opening the
 * FIFO for writing would have blocked the watchdog for ever). */
static void test_not_regular(void **state)
{
	const char *dir = folder("fifo", 0700);
	struct stat st;

	(void)state;
	assert_int_equal(mkfifo(report_in(dir), 0600), 0);
	assert_non_null(strstr(dump(dir), "something other than a regular file"));
	assert_int_equal(lstat(report_in(dir), &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(entries(dir), 1);

	dir = folder("dir", 0700);
	assert_int_equal(mkdir(report_in(dir), 0700), 0);
	assert_non_null(strstr(dump(dir), "something other than a regular file"));
	assert_int_equal(lstat(report_in(dir), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
}

/* Folders others can write to, or another user's: a warning, once per
 * folder; the report is still written.  /tmp's mode (sticky): none. */
static void test_shared_folder(void **state)
{
	const char *dir, *said;
	struct stat st;

	(void)state;
	dir = folder("world", 0777);
	said = dump(dir);
	assert_non_null(strstr(said, "anyone can write to it"));
	assert_int_equal(stat(report_in(dir), &st), 0);
	assert_null(strstr(dump(dir), "anyone can write"));	/* once */

	dir = folder("group", 0770);
	assert_non_null(strstr(dump(dir), "its group can write to it"));

	dir = folder("sticky", 01777);
	said = dump(dir);
	assert_null(strstr(said, "can write"));
	assert_int_equal(stat(report_in(dir), &st), 0);

	dir = folder("own", 0755);
	assert_null(strstr(dump(dir), "hang reports go to"));

	if (geteuid() == 0) {
		dir = folder("theirs", 0755);
		assert_int_equal(chown(dir, 65534, 65534), 0);
		assert_non_null(strstr(dump(dir), "another user owns it"));
	}
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(root))
		return -1;
	snprintf(errpath, sizeof(errpath), "%s/stderr", root);
	ng_rank.rank = 7;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mode),
		cmocka_unit_test(test_regular_file_replaced),
		cmocka_unit_test(test_symlink),
		cmocka_unit_test(test_not_regular),
		cmocka_unit_test(test_shared_folder),
	};

	return cmocka_run_group_tests_name("hang_dump", tests, setup, teardown);
}
