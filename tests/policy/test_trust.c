/* Trust on descriptors (policy/trust.c): every step from "/" to the file
 * is checked, symlinks are followed only where root owns them and their
 * folder, and a path a policy enforces passes the same walk.  The owner
 * cases need root (chown to uid 1001); as another user they are skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "policy.h"
#include "trust.h"

#define OTHER 1001			/* another local user */

struct tree {
	char top[1024];			/* TMPDIR/ngtrustXXXXXX */
	char a[1100], b[1100];		/* top/a, top/a/b */
	char file[PATH_MAX];		/* top/a/b/p.conf */
};

static void put(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
	static struct tree t;
	const char *tmp = getenv("TMPDIR");
	char why[PATH_MAX + 160];

	snprintf(t.top, sizeof(t.top), "%s/ngtrustXXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(t.top))
		return -1;
	snprintf(t.a, sizeof(t.a), "%s/a", t.top);
	snprintf(t.b, sizeof(t.b), "%s/a/b", t.top);
	snprintf(t.file, sizeof(t.file), "%s/a/b/p.conf", t.top);
	if (chmod(t.top, 0755) || mkdir(t.a, 0755) || mkdir(t.b, 0755))
		return -1;
	put(t.file, "[env]\nNCCL_DEBUG = enforce WARN\n", 0644);
	/* Everything above TMPDIR must pass for any case here to mean
	 * something: say so rather than fail on the machine's layout. */
	if (ng_trust_check(t.file, "policy file", getuid(), why, sizeof(why))) {
		fprintf(stderr, "TMPDIR is not a trusted place: %s\n", why);
		return -1;
	}
	*state = &t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->top);
	return system(cmd) ? -1 : 0;
}

static int refused(const char *path, const char *needle)
{
	char why[PATH_MAX + 160];

	if (!ng_trust_check(path, "policy file", getuid(), why, sizeof(why))) {
		print_error("%s: trusted, expected '%s'\n", path, needle);
		return 0;
	}
	if (!strstr(why, needle)) {
		print_error("%s: '%s' does not say '%s'\n", path, why, needle);
		return 0;
	}
	return 1;
}

static int trusted(const char *path)
{
	char why[PATH_MAX + 160];

	if (ng_trust_check(path, "policy file", getuid(), why, sizeof(why))) {
		print_error("%s: refused: %s\n", path, why);
		return 0;
	}
	return 1;
}

static void test_trusted_tree(void **state)
{
	struct tree *t = *state;
	struct ng_trust tr;
	char rel[PATH_MAX], cwd[PATH_MAX];
	int fd;

	assert_true(trusted(t->file));
	fd = ng_trust_open(t->file, "policy file", getuid(), &tr);
	assert_true(fd >= 0);
	assert_string_equal(tr.why, "");
	assert_string_equal(tr.path, t->file);
	close(fd);
	/* Relative, with "." and "..": resolved from the current folder. */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(t->a), 0);
	snprintf(rel, sizeof(rel), "./b/../b//p.conf");
	fd = ng_trust_open(rel, "policy file", getuid(), &tr);
	assert_int_equal(chdir(cwd), 0);
	assert_true(fd >= 0);
	assert_string_equal(tr.why, "");
	assert_string_equal(tr.path, t->file);
	close(fd);
}

/* Another user owning any step: the file, its folder, one above, the top. */
static void test_owner_each_level(void **state)
{
	struct tree *t = *state;
	const char *levels[] = { t->file, t->b, t->a, t->top };

	if (geteuid())
		skip();
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		char needle[PATH_MAX + 40];

		assert_int_equal(chown(levels[i], OTHER, OTHER), 0);
		snprintf(needle, sizeof(needle), "%s is owned by uid %d", levels[i], OTHER);
		assert_true(refused(t->file, needle));
		assert_int_equal(chown(levels[i], 0, 0), 0);
	}
	assert_true(trusted(t->file));
}

static void test_modes(void **state)
{
	struct tree *t = *state;
	char needle[PATH_MAX + 40];

	snprintf(needle, sizeof(needle), "folder %s is writable by its group", t->a);
	assert_int_equal(chmod(t->a, 0775), 0);
	assert_true(refused(t->file, needle));
	snprintf(needle, sizeof(needle), "folder %s is writable by others", t->a);
	assert_int_equal(chmod(t->a, 0777), 0);
	assert_true(refused(t->file, needle));
	/* Sticky, like /tmp: others may add names, not replace ours. */
	assert_int_equal(chmod(t->a, 01777), 0);
	assert_true(trusted(t->file));
	assert_int_equal(chmod(t->a, 0755), 0);
	snprintf(needle, sizeof(needle), "its folder %s is writable by others", t->b);
	assert_int_equal(chmod(t->b, 0757), 0);
	assert_true(refused(t->file, needle));
	assert_int_equal(chmod(t->b, 0755), 0);
	/* The file itself: no group or world write, sticky or not. */
	snprintf(needle, sizeof(needle), "policy file %s is writable by its group", t->file);
	assert_int_equal(chmod(t->file, 01664), 0);
	assert_true(refused(t->file, needle));
	assert_int_equal(chmod(t->file, 0644), 0);
	assert_true(trusted(t->file));
}

static void test_symlinks(void **state)
{
	struct tree *t = *state;
	char link[PATH_MAX], via[PATH_MAX], needle[PATH_MAX + 40];
	struct ng_trust tr;
	struct stat sb;
	int fd;

	snprintf(link, sizeof(link), "%s/l", t->top);
	snprintf(via, sizeof(via), "%s/l/b/p.conf", t->top);
	assert_int_equal(symlink("a", link), 0);
	if (geteuid()) {
		/* Ours, not root's: refused, yet still read (for a policy
		 * that enforces nothing), through the file it names. */
		snprintf(needle, sizeof(needle), "symlink %s is owned by uid %u", link,
			 (unsigned)getuid());
		assert_true(refused(via, needle));
	} else {
		/* Root's, in a folder of root's: followed, and the resolved
		 * path is the one named. */
		fd = ng_trust_open(via, "policy file", 0, &tr);
		assert_true(fd >= 0);
		assert_string_equal(tr.why, "");
		assert_string_equal(tr.path, t->file);
		close(fd);
		assert_int_equal(lchown(link, OTHER, OTHER), 0);
		snprintf(needle, sizeof(needle), "symlink %s is owned by uid %d", link, OTHER);
		assert_true(refused(via, needle));
		/* Root's symlink in another user's folder. */
		assert_int_equal(lchown(link, 0, 0), 0);
		assert_int_equal(chown(t->top, OTHER, OTHER), 0);
		assert_true(refused(via, "is owned by uid 1001"));
		assert_int_equal(chown(t->top, 0, 0), 0);
	}
	fd = ng_trust_open(via, "policy file", getuid(), &tr);
	assert_true(fd >= 0);
	assert_string_equal(tr.path, t->file);
	close(fd);
	assert_int_equal(unlink(link), 0);
	/* The system's own layout: Debian 12's /lib -> usr/lib. */
	if (!lstat("/lib", &sb) && S_ISLNK(sb.st_mode) && sb.st_uid == 0 &&
	    !access("/lib/os-release", F_OK))
		assert_true(trusted("/lib/os-release"));
}

static void test_not_regular(void **state)
{
	struct tree *t = *state;
	char fifo[PATH_MAX], why[PATH_MAX + 160];
	struct ng_trust tr;

	snprintf(fifo, sizeof(fifo), "%s/fifo", t->b);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* Never opened for reading: a FIFO would hang the process. */
	assert_int_equal(ng_trust_open(fifo, "policy file", getuid(), &tr), -1);
	assert_non_null(strstr(tr.why, "is not a regular file"));
	assert_int_equal(unlink(fifo), 0);
	assert_int_equal(ng_trust_check(t->b, "policy file", getuid(), why, sizeof(why)), -1);
	assert_non_null(strstr(why, "is not a regular file"));
	assert_int_equal(ng_trust_check("/nonexistent-ng/p.conf", "policy file", getuid(), why,
					sizeof(why)), -1);
	assert_non_null(strstr(why, "cannot read /nonexistent-ng: "));
}

/* Paths a policy would enforce: each entry with a '/' walked, bare names
 * left to the loader. */
static void test_values(void **state)
{
	struct tree *t = *state;
	char v[3 * PATH_MAX], why[PATH_MAX + 256], so[PATH_MAX];
	const char *seps;

	snprintf(so, sizeof(so), "%s/plugin.so", t->b);
	put(so, "", 0755);
	assert_int_equal(ng_trust_value("NCCL_NET_PLUGIN", so, getuid(), why, sizeof(why)), 0);
	assert_int_equal(ng_trust_value("NCCL_NET_PLUGIN", "ib", getuid(), why, sizeof(why)), 0);
	assert_int_equal(ng_trust_value("LD_PRELOAD", "libfoo.so", getuid(), why, sizeof(why)),
			 0);
	assert_int_equal(ng_trust_value("NCCL_DEBUG", "/x/y", getuid(), why, sizeof(why)), 0);
	assert_true(ng_trust_path_var("NCCL_TUNER_PLUGIN", &seps));
	assert_true(ng_trust_path_var("NCCL_CONF_FILE", &seps));
	assert_false(ng_trust_path_var("NCCL_PLUGIN", &seps));
	assert_false(ng_trust_path_var("NCCL_DEBUG_FILE", &seps));
	/* In a folder others can write: refused, the folder named. */
	assert_int_equal(chmod(t->b, 0777), 0);
	snprintf(v, sizeof(v), "libnccl-net-x.so,%s", so);
	assert_int_equal(ng_trust_value("NCCL_NET_PLUGIN", v, getuid(), why, sizeof(why)), -1);
	assert_non_null(strstr(why, "writable by others"));
	assert_non_null(strstr(why, t->b));
	snprintf(v, sizeof(v), "libfoo.so:%s", so);
	assert_int_equal(ng_trust_value("LD_PRELOAD", v, getuid(), why, sizeof(why)), -1);
	assert_int_equal(ng_trust_value("NCCL_TUNER_PLUGIN", so, getuid(), why, sizeof(why)),
			 -1);
	assert_int_equal(chmod(t->b, 0755), 0);
	snprintf(v, sizeof(v), "%s %s", so, so);
	assert_int_equal(ng_trust_value("LD_PRELOAD", v, getuid(), why, sizeof(why)), 0);
	/* Missing, or a token ld.so expands: nothing that can be checked. */
	assert_int_equal(ng_trust_value("NCCL_CONF_FILE", "/nonexistent-ng/nccl.conf", getuid(),
					why, sizeof(why)), -1);
	assert_int_equal(ng_trust_value("LD_PRELOAD", "/usr/$LIB/x.so", getuid(), why,
					sizeof(why)), -1);
	assert_non_null(strstr(why, "$"));
}

/* The policy is parsed from the descriptor the walk checked. */
static void test_load(void **state)
{
	struct tree *t = *state;
	struct ng_policy p;
	struct ng_trust tr;
	char buf[400];

	assert_int_equal(ng_policy_load(t->file, &p, &tr), 0);
	assert_string_equal(tr.why, "");
	assert_string_equal(p.path, t->file);
	assert_string_equal(ng_policy_env(&p, "NCCL_DEBUG")->value, "WARN");
	ng_policy_free(&p);
	assert_int_equal(chmod(t->b, 0777), 0);
	assert_int_equal(ng_policy_load(t->file, &p, &tr), 0);
	assert_non_null(strstr(tr.why, "writable by others"));
	assert_true(p.enforces);
	ng_policy_free(&p);
	assert_int_equal(chmod(t->b, 0755), 0);
	assert_int_equal(ng_policy_load(t->b, &p, &tr), -1);
	ng_policy_format_error(&p, 0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "not a regular file"));
	ng_policy_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_trusted_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner_each_level, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_regular, setup, teardown),
		cmocka_unit_test_setup_teardown(test_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
