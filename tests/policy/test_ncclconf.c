/* NCCL's configuration files (policy/ncclconf.c), read as NCCL applies
 * them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "policy.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Read as NCCL applies them: the environment wins, then NCCL_CONF_FILE
 * (which stands for ~/.nccl.conf), then /etc/nccl.conf; a name's first line
 * wins; '#' in the first column, lines without '=' and lines without a
 * name are skipped, and nothing is trimmed; a pipe is not read. */
static void test_ncclconf(void **state)
{
	char dir[] = "/tmp/ng_conf_XXXXXX", user[64], etc[64], other[64], fifo[64];
	char longline[1200];
	const char *v, *file;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(user, sizeof(user), "%s/user.conf", dir);
	snprintf(etc, sizeof(etc), "%s/etc.conf", dir);
	snprintf(other, sizeof(other), "%s/other.conf", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	write_file(user, "# NCCL_COMMENTED=1\n"
			 "NCCL_COMM_BLOCKING=0\n"
			 "NCCL_COMM_BLOCKING=1\n"
			 "no equals sign\n"
			 "=no name\n"
			 "NCCL_SPACED = x\n"
			 "NCCL_ALGO=Ring=Tree\n"
			 "NCCL_EMPTY=\n"
			 "NCCL_IB_HCA=mlx5_0");	/* no final newline */
	write_file(etc, "NCCL_IB_HCA=mlx5_9\nNCCL_DEBUG=WARN\n #NCCL_INDENTED=1\n");
	write_file(other, "NCCL_COMM_BLOCKING=1\n");
	ng_ncclconf_reset(etc);

	assert_string_equal(ng_ncclconf_lookup(user, "NCCL_COMM_BLOCKING", &file), "0");
	assert_string_equal(file, user);
	assert_null(ng_ncclconf_lookup(user, "NCCL_COMMENTED", &file));
	assert_null(file);
	assert_null(ng_ncclconf_lookup(user, "NCCL_SPACED", NULL));
	assert_non_null(v = ng_ncclconf_lookup(user, "NCCL_SPACED ", NULL));
	assert_string_equal(v, " x");
	assert_string_equal(ng_ncclconf_lookup(user, "NCCL_ALGO", NULL), "Ring=Tree");
	assert_string_equal(ng_ncclconf_lookup(user, "NCCL_EMPTY", NULL), "");
	assert_string_equal(ng_ncclconf_lookup(user, "NCCL_IB_HCA", NULL), "mlx5_0");
	assert_string_equal(ng_ncclconf_lookup(user, "NCCL_DEBUG", &file), "WARN");
	assert_string_equal(file, etc);
	assert_non_null(ng_ncclconf_lookup(user, " #NCCL_INDENTED", NULL));
	assert_int_equal(ng_ncclconf_count(user), 7);
	assert_string_equal(ng_ncclconf_name(user, 0), "NCCL_COMM_BLOCKING");
	assert_null(ng_ncclconf_name(user, 7));
	/* Another NCCL_CONF_FILE, another set; /etc's still comes after it. */
	assert_string_equal(ng_ncclconf_lookup(other, "NCCL_COMM_BLOCKING", NULL), "1");
	assert_string_equal(ng_ncclconf_lookup(other, "NCCL_IB_HCA", NULL), "mlx5_9");

	/* The environment's NCCL_CONF_FILE, as it is at each lookup (the
	 * shim's view over it: tests/preload/enforce/test_policy_shim.c). */
	unsetenv("NCCL_COMM_BLOCKING");
	setenv("NCCL_CONF_FILE", user, 1);
	assert_string_equal(ng_ncclconf_get("NCCL_COMM_BLOCKING"), "0");
	setenv("NCCL_CONF_FILE", other, 1);
	assert_string_equal(ng_ncclconf_get("NCCL_COMM_BLOCKING"), "1");
	unsetenv("NCCL_CONF_FILE");

	/* A pipe is not read (NCCL would find it empty), nor opened: its
	 * writer, waiting for a reader, is still waiting for NCCL after. */
	assert_int_equal(mkfifo(fifo, 0600), 0);
	{
		pid_t pid = fork();
		char got[32] = "";
		int st, fd;

		assert_true(pid >= 0);
		if (!pid) {
			fd = open(fifo, O_WRONLY);
			_exit(fd >= 0 && write(fd, "NCCL_X=1\n", 9) == 9 ? 0 : 3);
		}
		usleep(100 * 1000);
		assert_null(ng_ncclconf_lookup(fifo, "NCCL_COMM_BLOCKING", NULL));
		assert_string_equal(ng_ncclconf_lookup(fifo, "NCCL_DEBUG", NULL), "WARN");
		usleep(100 * 1000);
		assert_int_equal(waitpid(pid, &st, WNOHANG), 0);
		fd = open(fifo, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(read(fd, got, sizeof(got) - 1), 9);
		close(fd);
		assert_string_equal(got, "NCCL_X=1\n");
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}

	/* Names and values are cut at 1023 bytes, as NCCL's buffers cut them. */
	memset(longline, 'N', sizeof(longline));
	longline[1050] = '=';
	memset(longline + 1051, 'v', 1100 - 1051);
	strcpy(longline + 1100, "\n");
	write_file(other, longline);
	ng_ncclconf_reset(etc);
	longline[1023] = '\0';
	assert_non_null(v = ng_ncclconf_lookup(other, longline, NULL));
	assert_int_equal(strlen(v), 1100 - 1051);
	memset(longline, 'N', sizeof(longline));
	memcpy(longline, "NCCL_V=", 7);
	memset(longline + 7, 'v', 1100 - 7);
	strcpy(longline + 1100, "\n");
	write_file(other, longline);
	ng_ncclconf_reset(etc);
	assert_non_null(v = ng_ncclconf_lookup(other, "NCCL_V", NULL));
	assert_int_equal(strlen(v), 1023);

	ng_ncclconf_reset(NULL);
	unlink(user);
	unlink(etc);
	unlink(other);
	unlink(fifo);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ncclconf),
	};

	return cmocka_run_group_tests_name("ncclconf", tests, NULL, NULL);
}
