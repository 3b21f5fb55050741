/* The shim side of the policy (apply.c, envplugin.c) with fakes of the
 * core it calls: applying a file, timeouts, rechecks, cudaSetDevice under
 * the pin, the env plugin NCCL would load, exit 3 and the trust refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "core.h"
#include "enforce.h"
#include "policy.h"

/* ---- fakes of the core ------------------------------------------------ */
struct ng_hotcfg ng_hotcfg = { .cfg = { .log_level = NG_LOG_INFO, .timeout_s = 600, .init_timeout_s = 300 } };
struct ng_rank ng_rank = { .rank = 0, .local_rank = 2, .world_size = 4, .source = "test" };
struct ng_real_nccl ng_real;	/* no NCCL: envplugin.c takes its plugin as asked */
static int ntrace, nwarn, ninfo;
static char last_trace[256], last_warn[1024];

void ng_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
	ninfo++;
}

void ng_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_warn, sizeof(last_warn), fmt, ap);
	va_end(ap);
	nwarn++;
}

void ng_trace_policy(const char *key, const char *action, const char *user, const char *eff)
{
	snprintf(last_trace, sizeof(last_trace), "%s %s '%s' '%s'", key, action, user, eff);
	ntrace++;
}

/* apply.c loads the tracer before an exit 3 under `ncclguard run`. */
void ng_trace_load(void)
{
}

/* What NCCL sees of ncclEnvPlugin_v1. */
typedef struct {
	const char *name;
	ncclResult_t (*init)(uint8_t, uint8_t, uint8_t, const char *);
	ncclResult_t (*finalize)(void);
	const char *(*getEnv)(const char *);
} env_v1_t;
extern env_v1_t ncclEnvPlugin_v1;
/* NCCL 2.30's ncclEnvPlugin_v2: init also takes NCCL's logger. */
typedef void (*logger_t)(int, unsigned long, const char *, int, const char *, ...);
typedef struct {
	const char *name;
	ncclResult_t (*init)(uint8_t, uint8_t, uint8_t, const char *, logger_t);
	ncclResult_t (*finalize)(void);
	const char *(*getEnv)(const char *);
} env_v2_t;
extern env_v2_t ncclEnvPlugin_v2;

/* The shim never calls NCCL's logger from init: NCCL may hold its debug
 * lock there. */
static int nlogged;
static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt,
		   ...)
{
	(void)level, (void)flags, (void)file, (void)line, (void)fmt;
	nlogged++;
}

static char dir[] = "/tmp/ngshimXXXXXX";
static char path[256];

static void write_policy(const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static int setup(void **state)
{
	char net[512];

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	chmod(dir, 0700);
	snprintf(path, sizeof(path), "%s/site.conf", dir);
	/* A fake host with one interface up. */
	snprintf(net, sizeof(net), "mkdir -p %s/root/sys/class/net/ib0 && echo 0x1043 > "
		 "%s/root/sys/class/net/ib0/flags", dir, dir);
	if (system(net))
		return -1;
	snprintf(net, sizeof(net), "%s/root", dir);
	setenv("NCCLGUARD_SYSROOT", net, 1);
	setenv("NCCLGUARD_POLICY", path, 1);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

static const char conf[] =
	"[env]\n"
	"NCCL_SOCKET_IFNAME = enforce =ib0\n"
	"NCCL_P2P_DISABLE = forbid\n"
	"NCCL_IB_DISABLE = default 1\n"
	"NCCL_DEBUG = allow\n"
	"[devices]\n"
	"pin = local_rank\n"
	"gpus = 4,5,6,7\n"
	"[timeouts]\n"
	"init = 12\n"
	"collective = 34\n"
	"action = exit\n";

/* Runs in order: init, then everything that needs an applied policy. */
static void test_init_and_after(void **state)
{
	Dl_info info;
	char digest[65];

	(void)state;
	/* Before: no policy served, plain getenv. */
	setenv("NCCL_P2P_DISABLE", "1", 1);
	setenv("NCCL_SOCKET_IFNAME", "eth0", 1);
	assert_string_equal(ncclEnvPlugin_v1.getEnv("NCCL_P2P_DISABLE"), "1");
	write_policy(conf, 0600);
	ng_policy_init();
	assert_string_equal(getenv("NCCL_SOCKET_IFNAME"), "=ib0");
	assert_null(getenv("NCCL_P2P_DISABLE"));
	assert_string_equal(getenv("NCCL_IB_DISABLE"), "1");
	assert_string_equal(getenv("CUDA_VISIBLE_DEVICES"), "6");
	assert_string_equal(getenv("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
	assert_true(ng_cfg.init_timeout_s == 12);
	assert_true(ng_cfg.timeout_s == 34);
	assert_int_equal(ng_cfg.on_timeout, NG_ACT_EXIT);
	assert_true(ntrace >= 8);
	assert_true(ninfo >= 8);
	assert_non_null(strstr(ng_policy_path(), "site.conf"));
	ng_sha256_hex(conf, strlen(conf), digest);
	assert_string_equal(ng_policy_digest(), digest);
	/* The env plugin: NCCL_ENV_PLUGIN names this very object. */
	assert_true(dladdr((void *)ng_policy_init, &info));
	assert_non_null(getenv("NCCL_ENV_PLUGIN"));
	assert_int_equal(ncclEnvPlugin_v1.init(2, 28, 7, ""), ncclSuccess);
	assert_string_equal(ncclEnvPlugin_v1.name, "ncclguard");
	assert_int_equal(ncclEnvPlugin_v2.init(2, 30, 7, "", logger), ncclSuccess);
	assert_string_equal(ncclEnvPlugin_v2.name, "ncclguard");
	assert_int_equal(nlogged, 0);

	/* The program changes its environment after start. */
	setenv("NCCL_SOCKET_IFNAME", "eth0", 1);
	setenv("NCCL_P2P_DISABLE", "1", 1);
	unsetenv("NCCL_IB_DISABLE");
	setenv("NCCL_DEBUG", "TRACE", 1);
	/* NCCL asking through the plugin gets the policy regardless. */
	assert_string_equal(ncclEnvPlugin_v1.getEnv("NCCL_SOCKET_IFNAME"), "=ib0");
	assert_null(ncclEnvPlugin_v1.getEnv("NCCL_P2P_DISABLE"));
	assert_string_equal(ncclEnvPlugin_v1.getEnv("NCCL_IB_DISABLE"), "1");
	assert_string_equal(ncclEnvPlugin_v1.getEnv("NCCL_DEBUG"), "TRACE");
	assert_string_equal(ncclEnvPlugin_v1.getEnv("HOME") ? "set" : "unset",
			    getenv("HOME") ? "set" : "unset");
	/* v2 serves the same view. */
	assert_string_equal(ncclEnvPlugin_v2.getEnv("NCCL_SOCKET_IFNAME"), "=ib0");
	assert_null(ncclEnvPlugin_v2.getEnv("NCCL_P2P_DISABLE"));
	assert_string_equal(ncclEnvPlugin_v2.getEnv("NCCL_IB_DISABLE"), "1");
	assert_string_equal(ncclEnvPlugin_v2.getEnv("NCCL_DEBUG"), "TRACE");
	/* And the recheck before init puts the environment back. */
	nwarn = 0;
	ng_policy_recheck("ncclCommInitRank");
	assert_string_equal(getenv("NCCL_SOCKET_IFNAME"), "=ib0");
	assert_null(getenv("NCCL_P2P_DISABLE"));
	assert_string_equal(getenv("NCCL_IB_DISABLE"), "1");
	assert_string_equal(getenv("NCCL_DEBUG"), "TRACE");
	assert_true(nwarn >= 2);
	/* Nothing changed: a quiet recheck. */
	nwarn = 0;
	ng_policy_recheck("ncclCommInitRank");
	assert_int_equal(nwarn, 0);

	/* cudaSetDevice(LOCAL_RANK) lands on device 0, said once. */
	ntrace = 0;
	assert_int_equal(ng_policy_set_device(2), 0);
	assert_int_equal(ntrace, 1);
	assert_string_equal(last_trace, "cudaSetDevice remap '2' '0'");
	assert_int_equal(ng_policy_set_device(2), 0);
	assert_int_equal(ntrace, 1);
	assert_int_equal(ng_policy_set_device(0), 0);
	/* Another device: reported (once), passed on. */
	nwarn = 0;
	assert_int_equal(ng_policy_set_device(3), 3);
	assert_int_equal(ng_policy_set_device(3), 3);
	assert_int_equal(nwarn, 1);
	assert_non_null(strstr(last_warn, "outside the pin"));
	assert_string_equal(last_trace, "cudaSetDevice outside_pin '3' '6'");
}

/* In a child: ng_policy_init's exit status with this file. */
static int child_status(const char *text, mode_t mode, mode_t dirmode)
{
	int st;
	pid_t pid;

	write_policy(text, mode);
	chmod(dir, dirmode);
	pid = fork();
	if (pid == 0) {
		ng_policy_init();
		_exit(0);
	}
	waitpid(pid, &st, 0);
	chmod(dir, 0700);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_exit_codes(void **state)
{
	(void)state;
	/* A missing interface: exit 3 before NCCL starts. */
	assert_int_equal(child_status("[env]\nNCCL_SOCKET_IFNAME = enforce =ib9\n", 0600, 0700),
			 NG_EXIT_POLICY);
	/* The same with action = warn: goes on. */
	assert_int_equal(child_status("[env]\nNCCL_SOCKET_IFNAME = enforce =ib9\n[violation]\n"
				      "action = warn\n", 0600, 0700), 0);
	/* Malformed: refused, exit 3. */
	assert_int_equal(child_status("[env]\nNCCL_X = enforse 1\n", 0600, 0700), NG_EXIT_POLICY);
	/* Writable by others, or in a folder others can write: refused. */
	assert_int_equal(child_status("[env]\nNCCL_X = enforce 1\n", 0666, 0700), NG_EXIT_POLICY);
	assert_int_equal(child_status("[env]\nNCCL_X = enforce 1\n", 0644, 0777), NG_EXIT_POLICY);
	/* ... unless it enforces nothing. */
	assert_int_equal(child_status("[env]\nNCCL_X = allow\n", 0666, 0700), 0);
	/* Untrusted with action = warn: nothing applied, goes on. */
	assert_int_equal(child_status("[env]\nNCCL_X = enforce 1\n[violation]\naction = warn\n",
				      0666, 0700), 0);
}

static int fake_version;

static ncclResult_t fake_get_version(int *v)
{
	*v = fake_version;
	return ncclSuccess;
}

/* The shim's view of a variable only NCCL's configuration file sets and
 * the policy forbids: withheld only where NCCL asks the shim's plugin
 * (installed, NCCL 2.28.7 or later), else the file's, as NCCL applies it. */
static void test_view_of_conf(void **state)
{
	char cpath[300];
	struct ng_policy p;
	const char *text = "[env]\nNCCL_NET_GDR_LEVEL = forbid\n";
	FILE *f;

	(void)state;
	snprintf(cpath, sizeof(cpath), "%s/nccl.conf", dir);
	f = fopen(cpath, "w");
	assert_non_null(f);
	fputs("NCCL_NET_GDR_LEVEL=LOC\n", f);
	fclose(f);
	assert_int_equal(ng_policy_parse_buffer("v.conf", text, strlen(text), &p), 0);
	setenv("NCCL_CONF_FILE", cpath, 1);
	unsetenv("NCCL_NET_GDR_LEVEL");
	ng_envplugin_set_policy(&p);
	ng_real.ncclGetVersion = fake_get_version;

	ng_envplugin_installed(0);
	fake_version = 22809;
	assert_string_equal(ng_envplugin_get("NCCL_NET_GDR_LEVEL"), "LOC");
	ng_envplugin_installed(1);
	fake_version = 22806;
	assert_string_equal(ng_envplugin_get("NCCL_NET_GDR_LEVEL"), "LOC");
	fake_version = 22807;
	assert_null(ng_envplugin_get("NCCL_NET_GDR_LEVEL"));
	ng_real.ncclGetVersion = NULL;	/* NCCL not loaded yet: taken as asked */
	assert_null(ng_envplugin_get("NCCL_NET_GDR_LEVEL"));

	ng_envplugin_set_policy(NULL);
	ng_policy_free(&p);
	unsetenv("NCCL_CONF_FILE");
	unlink(cpath);
}

/* Without a policy to serve, the shim's view is NCCL's: the environment's
 * own value over the file NCCL_CONF_FILE names as it is at each lookup. */
static void test_view_follows_conf_file(void **state)
{
	char user[300], other[300];
	FILE *f;

	(void)state;
	snprintf(user, sizeof(user), "%s/user.conf", dir);
	snprintf(other, sizeof(other), "%s/other.conf", dir);
	f = fopen(user, "w");
	assert_non_null(f);
	fputs("NCCL_COMM_BLOCKING=0\nNCCL_COMM_BLOCKING=1\n", f);
	fclose(f);
	f = fopen(other, "w");
	assert_non_null(f);
	fputs("NCCL_COMM_BLOCKING=1\n", f);
	fclose(f);
	ng_envplugin_set_policy(NULL);
	unsetenv("NCCL_COMM_BLOCKING");
	setenv("NCCL_CONF_FILE", user, 1);
	assert_string_equal(ng_envplugin_get("NCCL_COMM_BLOCKING"), "0");
	setenv("NCCL_CONF_FILE", other, 1);
	assert_string_equal(ng_envplugin_get("NCCL_COMM_BLOCKING"), "1");
	setenv("NCCL_COMM_BLOCKING", "7", 1);
	assert_string_equal(ng_envplugin_get("NCCL_COMM_BLOCKING"), "7");
	unsetenv("NCCL_COMM_BLOCKING");
	unsetenv("NCCL_CONF_FILE");
	unlink(user);
	unlink(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_and_after),
		cmocka_unit_test(test_exit_codes),
		cmocka_unit_test(test_view_of_conf),
		cmocka_unit_test(test_view_follows_conf_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
