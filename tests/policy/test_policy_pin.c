/* Pinning, NUMA mapping, interface and HCA checks and environment
 * decisions on fake hosts (hostprobe.c's root): 4 GPUs on two NUMA nodes,
 * NICs up and down, one active and one down InfiniBand port. */
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

static char root[64] = "/tmp/ngpinXXXXXX";
static char root2[64] = "/tmp/ngpin2XXXXXX";

static void mkdirs(const char *path)
{
	char tmp[512];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = 0;
			mkdir(tmp, 0755);
			*p = '/';
		}
	}
	mkdir(tmp, 0755);
}

static void put(const char *base, const char *rel, const char *text)
{
	char path[512], dir[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", base, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = 0;
	mkdirs(dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void gpu(const char *base, const char *bus, int node, const char *cpus, int procfs)
{
	char rel[256], n[16];

	if (procfs) {
		snprintf(rel, sizeof(rel), "/proc/driver/nvidia/gpus/%s/information", bus);
		put(base, rel, "Model: NVIDIA H200\n");
	}
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/numa_node", bus);
	snprintf(n, sizeof(n), "%d\n", node);
	put(base, rel, n);
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/local_cpulist", bus);
	put(base, rel, cpus);
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/vendor", bus);
	put(base, rel, "0x10de\n");
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/class", bus);
	put(base, rel, "0x030200\n");
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(root) || !mkdtemp(root2))
		return -1;
	/* Created out of order: PCI order is 18, 3b, 86, af. */
	gpu(root, "0000:86:00.0", 1, "16-31,48-63\n", 1);
	gpu(root, "0000:18:00.0", 0, "0-15,32-47\n", 1);
	gpu(root, "0000:af:00.0", 1, "16-31,48-63\n", 1);
	gpu(root, "0000:3b:00.0", 0, "0-15,32-47\n", 1);
	/* A NIC on the PCI bus is not a GPU. */
	put(root, "/sys/bus/pci/devices/0000:5e:00.0/vendor", "0x15b3\n");
	put(root, "/sys/class/net/lo/flags", "0x49\n");
	put(root, "/sys/class/net/eth0/flags", "0x1043\n");
	put(root, "/sys/class/net/ib0/flags", "0x1043\n");
	put(root, "/sys/class/net/ib1/flags", "0x1003\n");		/* up, no carrier */
	put(root, "/sys/class/net/ib2/flags", "0x1043\n");
	put(root, "/sys/class/net/ib2/ncclguard_addr", "0\n");		/* no IP */
	put(root, "/sys/class/net/docker0/flags", "0x1003\n");
	put(root, "/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	put(root, "/sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
	/* The second host: GPUs only in PCI sysfs (no driver procfs), no ib. */
	gpu(root2, "0000:c1:00.0", 1, "8-15\n", 0);
	gpu(root2, "0000:41:00.0", 0, "0-7\n", 0);
	put(root2, "/sys/class/net/lo/flags", "0x49\n");
	put(root2, "/sys/class/net/eth0/flags", "0x1043\n");
	put(root2, "/sys/class/net/docker0/flags", "0x1043\n");
	ng_host_set_root(root);
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", root, root2);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- a fake environment --------------------------------------------- */
static const char *env_names[32], *env_values[32];
static char *envp[33];
static char env_buf[32][128];
static int nenv;

static void env_reset(void)
{
	nenv = 0;
	envp[0] = NULL;
}

static void env_put(const char *n, const char *v)
{
	env_names[nenv] = n;
	env_values[nenv] = v;
	snprintf(env_buf[nenv], sizeof(env_buf[nenv]), "%s=%s", n, v);
	envp[nenv] = env_buf[nenv];
	envp[++nenv] = NULL;
}

/* Change the i-th variable's value, in both views. */
static void env_set(int i, const char *v)
{
	env_values[i] = v;
	snprintf(env_buf[i], sizeof(env_buf[i]), "%s=%s", env_names[i], v);
}

static const char *fake_getenv(const char *n)
{
	for (int i = 0; i < nenv; i++)
		if (!strcmp(env_names[i], n))
			return env_values[i];
	return NULL;
}

/* ... and a fake NCCL configuration file, as ncclconf.c reads one. */
static const char *conf_names[8], *conf_values[8];
static int nconf;
#define CONF_FILE "/etc/nccl.conf"

static void conf_put(const char *n, const char *v)
{
	conf_names[nconf] = n;
	conf_values[nconf++] = v;
}

static const char *conf_file_seen;	/* NCCL_CONF_FILE the plan asked with */
static const char *conf_file_for_b;	/* ... when it asked for NCCL_B */

static const char *fake_conf(const char *cf, const char *n, const char **file)
{
	conf_file_seen = cf;
	if (!strcmp(n, "NCCL_B"))
		conf_file_for_b = cf;
	for (int i = 0; i < nconf; i++)
		if (!strcmp(conf_names[i], n)) {
			if (file)
				*file = CONF_FILE;
			return conf_values[i];
		}
	if (file)
		*file = NULL;
	return NULL;
}

static int fake_conf_count(const char *cf)
{
	conf_file_seen = cf;
	return nconf;
}

static const char *fake_conf_name(const char *cf, int i)
{
	conf_file_seen = cf;
	return i < nconf ? conf_names[i] : NULL;
}

static void policy(const char *text, struct ng_policy *p)
{
	if (ng_policy_parse_buffer("t.conf", text, strlen(text), p)) {
		char buf[400];

		ng_policy_format_error(p, 0, buf, sizeof(buf));
		fail_msg("policy rejected: %s", buf);
	}
}

static int plugin_asked = 1;	/* NCCL asks the shim's env plugin */

static void plan(const char *text, int lr, const uint64_t *cpus, int recheck, struct ng_plan *pl)
{
	struct ng_policy p;
	struct ng_plan_input in = {
		.getenv = fake_getenv, .envp = envp, .local_rank = lr, .allowed_cpus = cpus,
		.recheck = recheck, .where = "ncclCommInitRank",
		.conf = fake_conf, .conf_count = fake_conf_count, .conf_name = fake_conf_name,
		.plugin_asked = plugin_asked,
	};

	policy(text, &p);
	assert_int_equal(ng_plan_build(&p, &in, pl), 0);
	ng_policy_free(&p);
}

/* A plan once NCCL has started with NCCL_CONF_FILE = cf. */
static void plan_fixed(const char *text, const char *cf, struct ng_plan *pl)
{
	struct ng_policy p;
	struct ng_plan_input in = {
		.getenv = fake_getenv, .envp = envp, .local_rank = 0, .recheck = 1,
		.where = "ncclCommInitRank", .conf = fake_conf, .conf_count = fake_conf_count,
		.conf_name = fake_conf_name, .conf_fixed = 1, .conf_fixed_file = cf,
	};

	policy(text, &p);
	assert_int_equal(ng_plan_build(&p, &in, pl), 0);
	ng_policy_free(&p);
}

static const struct ng_decision *find(const struct ng_plan *pl, const char *key)
{
	for (int i = 0; i < pl->n; i++)
		if (!strcmp(pl->d[i].key, key))
			return &pl->d[i];
	return NULL;
}

static const struct ng_decision *find_level(const struct ng_plan *pl, enum ng_dec_level l)
{
	for (int i = 0; i < pl->n; i++)
		if (pl->d[i].level == l)
			return &pl->d[i];
	return NULL;
}

static int first_key(const struct ng_plan *pl, const char *key)
{
	for (int i = 0; i < pl->n; i++)
		if (!strcmp(pl->d[i].key, key))
			return i;
	fail_msg("no decision on %s", key);
	return -1;
}

static int count_key(const struct ng_plan *pl, const char *key)
{
	int n = 0;

	for (int i = 0; i < pl->n; i++)
		n += !strcmp(pl->d[i].key, key);
	return n;
}

static void dump(const struct ng_plan *pl)
{
	for (int i = 0; i < pl->n; i++)
		print_message("  [%d] %s: %s\n", pl->d[i].level, pl->d[i].key, pl->d[i].msg);
}

/* ---- tests ------------------------------------------------------------ */

/* A NUMA node's cpus numbered alternately (the odd ones of 1024, 2.4 KB
 * of list) are read whole; a list too long to read whole is unknown, not
 * a prefix cut in the middle of a number (which bound cpus of the other
 * node). */
static void test_long_cpulist(void **state)
{
	char dir[64] = "/tmp/ngpin3XXXXXX", list[6000], *p = list;
	uint64_t mask[NG_CPU_WORDS];
	struct ng_gpu_place g;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (int c = 1; c < 1024; c += 2)
		p += sprintf(p, "%s%d", c > 1 ? "," : "", c);
	strcpy(p, "\n");
	gpu(dir, "0000:18:00.0", 1, list, 1);
	ng_host_set_root(dir);
	ng_pin_locate(0, &g);
	assert_int_equal(strlen(g.cpulist), strlen(list) - 1);
	assert_int_equal(ng_cpulist_parse(g.cpulist, mask, NG_CPU_WORDS * 64), 0);
	assert_true(mask[15] >> 63);		/* cpu 1023 */
	assert_false(mask[0] & 1);		/* cpu 0 */
	p = list;
	for (int c = 0; c < 1200; c++)		/* 4.6 KB, as no kernel writes it */
		p += sprintf(p, "%s%d", c ? "," : "", c);
	gpu(dir, "0000:18:00.0", 1, list, 1);
	ng_pin_locate(0, &g);
	assert_true(g.found);
	assert_string_equal(g.cpulist, "");
	ng_host_set_root(root);
}

static void test_gpu_order(void **state)
{
	char ids[8][NG_BUSID_LEN];
	struct ng_gpu_place g;

	(void)state;
	ng_host_set_root(root);
	assert_int_equal(ng_host_gpus(ids, 8), 4);
	assert_string_equal(ids[0], "0000:18:00.0");
	assert_string_equal(ids[1], "0000:3b:00.0");
	assert_string_equal(ids[2], "0000:86:00.0");
	assert_string_equal(ids[3], "0000:af:00.0");
	ng_pin_locate(2, &g);
	assert_true(g.found);
	assert_string_equal(g.busid, "0000:86:00.0");
	assert_int_equal(g.numa_node, 1);
	assert_string_equal(g.cpulist, "16-31,48-63");
	ng_pin_locate(1, &g);
	assert_int_equal(g.numa_node, 0);
	ng_pin_locate(4, &g);
	assert_false(g.found);
	assert_int_equal(g.numa_node, -1);
	/* PCI sysfs only. */
	ng_host_set_root(root2);
	assert_int_equal(ng_host_gpus(ids, 8), 2);
	assert_string_equal(ids[0], "0000:41:00.0");
	ng_pin_locate(1, &g);
	assert_string_equal(g.busid, "0000:c1:00.0");
	assert_string_equal(g.cpulist, "8-15");
	ng_host_set_root(root);
}

static void test_cpulist(void **state)
{
	uint64_t m[NG_CPU_WORDS];
	char buf[128];

	(void)state;
	assert_int_equal(ng_cpulist_parse("0-3,8,10-11", m, NG_CPU_WORDS * 64), 0);
	assert_true(m[0] == 0xd0full);
	ng_cpulist_format(m, NG_CPU_WORDS * 64, buf, sizeof(buf));
	assert_string_equal(buf, "0-3,8,10-11");
	assert_int_equal(ng_cpulist_parse("64-127", m, NG_CPU_WORDS * 64), 0);
	assert_true(m[0] == 0 && m[1] == ~0ull);
	assert_int_equal(ng_cpulist_parse("3-1", m, 64), -1);
	assert_int_equal(ng_cpulist_parse("0-64", m, 64), -1);
	assert_int_equal(ng_cpulist_parse("x", m, 64), -1);
	assert_int_equal(ng_cpulist_parse("", m, 64), -1);
	assert_int_equal(ng_cpulist_parse("1,", m, 64), 0);
}

static const char pin_conf[] = "[devices]\npin = local_rank\ngpus = 0,1,2,3\nnuma = yes\n";

static void test_pin_numa(void **state)
{
	struct ng_plan pl;
	const struct ng_decision *d;
	uint64_t all[NG_CPU_WORDS], few[NG_CPU_WORDS];
	char buf[128];

	(void)state;
	env_reset();
	env_put("CUDA_VISIBLE_DEVICES", "0,1,2,3");
	ng_cpulist_parse("0-63", all, NG_CPU_WORDS * 64);
	plan(pin_conf, 2, all, 0, &pl);
	assert_int_equal(pl.violations, 0);
	assert_true(pl.pinned);
	assert_int_equal(pl.gpu, 2);
	d = find(&pl, "CUDA_VISIBLE_DEVICES");
	assert_int_equal(d->set, NG_SET_ENV);
	assert_string_equal(d->effective, "2");
	assert_string_equal(d->user, "0,1,2,3");
	assert_int_equal(d->level, NG_DEC_INFO);	/* narrowed, not contradicted */
	d = find(&pl, "CUDA_DEVICE_ORDER");
	assert_string_equal(d->effective, "PCI_BUS_ID");
	assert_string_equal(ng_plan_getenv(&pl, &(struct ng_plan_input){ .getenv = fake_getenv },
					   "CUDA_VISIBLE_DEVICES"), "2");
	assert_int_equal(pl.place.numa_node, 1);
	assert_true(pl.affinity);
	ng_cpulist_format(pl.cpus, NG_CPU_WORDS * 64, buf, sizeof(buf));
	assert_string_equal(buf, "16-31,48-63");
	d = find(&pl, "cpu_affinity");
	assert_non_null(strstr(d->msg, "NUMA node 1"));
	ng_plan_free(&pl);

	/* The launcher allowed only some cpus: the intersection. */
	ng_cpulist_parse("0-3,20-23", few, NG_CPU_WORDS * 64);
	plan(pin_conf, 3, few, 0, &pl);
	ng_cpulist_format(pl.cpus, NG_CPU_WORDS * 64, buf, sizeof(buf));
	assert_string_equal(buf, "20-23");
	ng_plan_free(&pl);
	/* None of the GPU's cpus allowed: affinity unchanged, a warning. */
	ng_cpulist_parse("0-3", few, NG_CPU_WORDS * 64);
	plan(pin_conf, 3, few, 0, &pl);
	assert_false(pl.affinity);
	assert_int_equal(find(&pl, "cpu_affinity")->level, NG_DEC_WARN);
	assert_int_equal(pl.violations, 0);
	ng_plan_free(&pl);

	/* A user CUDA_VISIBLE_DEVICES that does not include the GPU: warning. */
	env_reset();
	env_put("CUDA_VISIBLE_DEVICES", "3");
	env_put("CUDA_DEVICE_ORDER", "FASTEST_FIRST");
	plan(pin_conf, 0, all, 0, &pl);
	assert_int_equal(find(&pl, "CUDA_VISIBLE_DEVICES")->level, NG_DEC_WARN);
	assert_int_equal(find(&pl, "CUDA_DEVICE_ORDER")->level, NG_DEC_WARN);
	ng_cpulist_format(pl.cpus, NG_CPU_WORDS * 64, buf, sizeof(buf));
	assert_string_equal(buf, "0-15,32-47");
	ng_plan_free(&pl);
}

static void test_pin_edges(void **state)
{
	struct ng_plan pl;
	const struct ng_decision *d;

	(void)state;
	env_reset();
	/* A GPU the host does not show: warning, still pinned. */
	plan("[devices]\npin = local_rank\ngpus = 0,1,2,9\nnuma = yes\n", 3, NULL, 0, &pl);
	assert_int_equal(pl.violations, 0);
	assert_true(pl.pinned);
	assert_string_equal(find(&pl, "CUDA_VISIBLE_DEVICES")->effective, "9");
	d = find(&pl, "gpu");
	assert_int_equal(d->level, NG_DEC_WARN);
	assert_non_null(strstr(d->msg, "shows no such GPU"));
	assert_false(pl.affinity);
	ng_plan_free(&pl);
	/* More local ranks than GPUs: violation. */
	plan(pin_conf, 4, NULL, 0, &pl);
	assert_int_equal(pl.violations, 1);
	assert_non_null(strstr(find_level(&pl, NG_DEC_VIOLATION)->msg, "local rank 4 has no GPU"));
	ng_plan_free(&pl);
	/* No local rank (the launcher itself, a helper program): no pinning. */
	plan(pin_conf, -1, NULL, 0, &pl);
	assert_int_equal(pl.violations, 0);
	assert_false(pl.pinned);
	assert_int_equal(find(&pl, "CUDA_VISIBLE_DEVICES")->set, NG_SET_NONE);
	ng_plan_free(&pl);
	/* pin = none with gpus: the list, or a check of the user's. */
	plan("[devices]\ngpus = 1,3\n", 0, NULL, 0, &pl);
	assert_string_equal(find(&pl, "CUDA_VISIBLE_DEVICES")->effective, "1,3");
	/* The list is in nvidia-smi's numbering: CUDA must number so too. */
	d = find(&pl, "CUDA_DEVICE_ORDER");
	assert_non_null(d);
	assert_int_equal(d->set, NG_SET_ENV);
	assert_string_equal(d->effective, "PCI_BUS_ID");
	assert_non_null(strstr(d->msg, "GPUs 1,3"));
	ng_plan_free(&pl);
	env_put("CUDA_VISIBLE_DEVICES", "3,2");
	plan("[devices]\ngpus = 1,3\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 1);
	assert_non_null(strstr(find_level(&pl, NG_DEC_VIOLATION)->msg, "names GPU 2"));
	ng_plan_free(&pl);
}

static void test_env(void **state)
{
	struct ng_plan pl;
	const struct ng_decision *d;
	const char *conf = "[env]\nNCCL_A = enforce x\nNCCL_B = default y\nNCCL_C = forbid\n"
			   "NCCL_D = allow\nNCCL_E = default e\nstrict = yes\n";

	(void)state;
	env_reset();
	env_put("NCCL_A", "user");
	env_put("NCCL_B", "mine");
	env_put("NCCL_C", "1");
	env_put("NCCL_D", "INFO");
	env_put("NCCL_OTHER", "7");
	env_put("HOME", "/root");
	plan(conf, 0, NULL, 0, &pl);
	d = find(&pl, "NCCL_A");
	assert_int_equal(d->set, NG_SET_ENV);
	assert_int_equal(d->level, NG_DEC_WARN);
	assert_string_equal(d->user, "user");
	assert_string_equal(d->effective, "x");
	d = find(&pl, "NCCL_B");
	assert_int_equal(d->set, NG_SET_NONE);
	assert_string_equal(d->effective, "mine");
	d = find(&pl, "NCCL_C");
	assert_int_equal(d->set, NG_SET_UNSET);
	assert_int_equal(d->level, NG_DEC_WARN);
	assert_int_equal(find(&pl, "NCCL_D")->set, NG_SET_NONE);
	d = find(&pl, "NCCL_E");
	assert_int_equal(d->set, NG_SET_ENV);
	assert_string_equal(d->effective, "e");
	d = find(&pl, "NCCL_OTHER");
	assert_non_null(d);
	assert_string_equal(d->action, "strict");
	assert_int_equal(d->set, NG_SET_UNSET);
	assert_null(find(&pl, "HOME"));
	assert_int_equal(pl.violations, 0);
	ng_plan_free(&pl);

	/* A recheck where everything is in place reports nothing. */
	env_reset();
	env_put("NCCL_A", "x");
	env_put("NCCL_B", "mine");
	env_put("NCCL_D", "INFO");
	env_put("NCCL_E", "e");
	plan(conf, 0, NULL, 1, &pl);
	for (int i = 0; i < pl.n; i++)
		assert_int_not_equal(pl.d[i].level, NG_DEC_INFO);
	assert_null(find(&pl, "NCCL_A"));
	ng_plan_free(&pl);
	/* ... and the program changed NCCL_A since: restored, said. */
	env_values[0] = "changed";
	plan(conf, 0, NULL, 1, &pl);
	d = find(&pl, "NCCL_A");
	assert_non_null(d);
	assert_int_equal(d->set, NG_SET_ENV);
	assert_non_null(strstr(d->msg, "restored before ncclCommInitRank"));
	ng_plan_free(&pl);
}

/* NCCL's configuration file, which NCCL applies where the environment has
 * nothing: a value there is the user's for enforce and default; one the
 * policy forbids is withheld by the env plugin and named with its file;
 * the environment wins over it; at a recheck, the file's value that NCCL
 * has since put in the environment is not the program's doing. */
static void test_env_conf(void **state)
{
	struct ng_plan pl;
	const struct ng_decision *d;
	const char *conf = "[env]\nNCCL_A = enforce x\nNCCL_B = default y\nNCCL_C = forbid\n"
			   "NCCL_D = allow\nstrict = yes\n";
	char dir[] = "/tmp/ngpinXXXXXX", site[64], text[160];
	int fd;

	(void)state;
	env_reset();
	nconf = 0;
	conf_put("NCCL_A", "filea");
	conf_put("NCCL_B", "fileb");
	conf_put("NCCL_C", "1");
	conf_put("NCCL_D", "WARN");
	conf_put("NCCL_OTHER", "3");
	env_put("NCCL_D", "INFO");
	plan(conf, 0, NULL, 0, &pl);
	d = find(&pl, "NCCL_A");
	assert_int_equal(d->set, NG_SET_ENV);
	assert_int_equal(d->level, NG_DEC_WARN);
	assert_string_equal(d->effective, "x");
	assert_non_null(strstr(d->msg, "the value 'filea' from " CONF_FILE " is ignored"));
	d = find(&pl, "NCCL_B");
	assert_int_equal(d->set, NG_SET_NONE);
	assert_string_equal(d->effective, "fileb");
	assert_non_null(strstr(d->msg, "kept from " CONF_FILE));
	d = find(&pl, "NCCL_C");
	assert_string_equal(d->action, "forbid");
	assert_int_equal(d->set, NG_SET_WITHHELD);
	assert_int_equal(d->level, NG_DEC_WARN_ONCE);
	assert_non_null(strstr(d->msg, "NCCL_C=1 in " CONF_FILE ": forbidden by t.conf:4"));
	assert_non_null(strstr(d->msg, "withheld from NCCL by the shim's env plugin"));
	assert_non_null(strstr(d->msg, "remove it from " CONF_FILE));
	assert_string_equal(find(&pl, "NCCL_D")->effective, "INFO");
	d = find(&pl, "NCCL_OTHER");
	assert_non_null(d);
	assert_string_equal(d->action, "strict");
	assert_int_equal(d->set, NG_SET_WITHHELD);
	assert_null(ng_plan_getenv(&pl, &(struct ng_plan_input){ .getenv = fake_getenv,
			.conf = fake_conf }, "NCCL_OTHER"));
	assert_int_equal(pl.violations, 0);
	ng_plan_free(&pl);

	/* A recheck after NCCL applied the file: nothing is new, and what
	 * is withheld stays withheld (said once: the shim logs a
	 * NG_DEC_WARN_ONCE message once). */
	env_reset();
	env_put("NCCL_A", "x");
	env_put("NCCL_B", "fileb");
	env_put("NCCL_C", "1");
	env_put("NCCL_D", "WARN");
	env_put("NCCL_OTHER", "3");
	plan(conf, 0, NULL, 1, &pl);
	for (int i = 0; i < pl.n; i++)
		if (pl.d[i].level != NG_DEC_WARN_ONCE) {
			dump(&pl);
			fail_msg("a recheck decided more than the withholding");
		}
	assert_int_equal(pl.n, 2);
	assert_int_equal(find(&pl, "NCCL_C")->set, NG_SET_WITHHELD);
	assert_int_equal(find(&pl, "NCCL_OTHER")->set, NG_SET_WITHHELD);
	ng_plan_free(&pl);
	/* ... but a value the program set is removed, and said. */
	env_set(2, "2");
	plan(conf, 0, NULL, 1, &pl);
	d = find(&pl, "NCCL_C");
	assert_non_null(d);
	assert_int_equal(d->set, NG_SET_UNSET);
	assert_non_null(strstr(d->msg, "restored before ncclCommInitRank"));
	ng_plan_free(&pl);

	/* A forbidden variable in the environment and in the file: removed
	 * from the one, and the other named. */
	env_reset();
	nconf = 0;
	conf_put("NCCL_C", "1");
	conf_put("NCCL_OTHER", "3");
	env_put("NCCL_C", "1");
	env_put("NCCL_OTHER", "3");
	plan(conf, 0, NULL, 0, &pl);
	assert_int_equal(count_key(&pl, "NCCL_C"), 2);
	assert_non_null(strstr(pl.d[first_key(&pl, "NCCL_C")].msg, "NCCL_C=1 removed: forbidden"));
	assert_non_null(strstr(pl.d[first_key(&pl, "NCCL_C") + 1].msg, "NCCL_C=1 in " CONF_FILE));
	assert_int_equal(count_key(&pl, "NCCL_OTHER"), 2);
	ng_plan_free(&pl);

	/* At a recheck, an enforced variable the program changed to the
	 * file's value is the program's doing (NCCL cannot have put it there). */
	env_reset();
	nconf = 0;
	conf_put("NCCL_A", "filea");
	env_put("NCCL_A", "filea");
	plan(conf, 0, NULL, 1, &pl);
	d = find(&pl, "NCCL_A");
	assert_non_null(d);
	assert_null(strstr(d->msg, CONF_FILE));
	assert_non_null(strstr(d->msg, "restored before ncclCommInitRank"));
	ng_plan_free(&pl);

	/* NCCL reads the NCCL_CONF_FILE the policy leaves, whatever its place
	 * in the file.  An enforced path is set only when it passes the trust
	 * check: a file of ours in a private folder does. */
	env_reset();
	nconf = 0;
	conf_put("NCCL_B", "fileb");
	env_put("NCCL_CONF_FILE", "/home/u/mine.conf");
	conf_file_for_b = "none";
	assert_non_null(mkdtemp(dir));
	snprintf(site, sizeof(site), "%s/nccl.conf", dir);
	fd = open(site, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	snprintf(text, sizeof(text), "[env]\nNCCL_B = default y\nNCCL_CONF_FILE = enforce %s\n", site);
	plan(text, 0, NULL, 0, &pl);
	assert_string_equal(conf_file_for_b, site);
	ng_plan_free(&pl);
	/* One another user could replace is not set. */
	conf_file_for_b = "none";
	assert_int_equal(chmod(dir, 0777), 0);
	plan(text, 0, NULL, 0, &pl);
	assert_string_equal(conf_file_for_b, "/home/u/mine.conf");
	ng_plan_free(&pl);
	assert_int_equal(chmod(dir, 0700), 0);
	conf_file_for_b = "none";
	plan("[env]\nNCCL_B = default y\nstrict = yes\n", 0, NULL, 0, &pl);
	assert_null(conf_file_for_b);
	assert_non_null(find(&pl, "NCCL_CONF_FILE"));
	ng_plan_free(&pl);
	/* Once NCCL has started, the file it read counts, whatever the
	 * environment says now. */
	conf_file_for_b = "none";
	plan_fixed("[env]\nNCCL_B = default y\n", "/first.conf", &pl);
	assert_string_equal(conf_file_for_b, "/first.conf");
	ng_plan_free(&pl);
	/* NCCL_CONF_FILE itself never comes from a file. */
	env_reset();
	nconf = 0;
	conf_put("NCCL_CONF_FILE", "/from/etc.conf");
	snprintf(text, sizeof(text), "[env]\nNCCL_CONF_FILE = default %s\n", site);
	plan(text, 0, NULL, 0, &pl);
	d = find(&pl, "NCCL_CONF_FILE");
	assert_int_equal(d->set, NG_SET_ENV);
	assert_string_equal(d->effective, site);
	ng_plan_free(&pl);
	unlink(site);
	rmdir(dir);

	/* A forbidden interface set only in the file: withheld, so the
	 * checks see NCCL's own pick, at start and at every recheck. */
	env_reset();
	nconf = 0;
	conf_put("NCCL_SOCKET_IFNAME", "lo");
	for (int recheck = 0; recheck < 2; recheck++) {
		plan("[env]\nNCCL_SOCKET_IFNAME = forbid\n[network]\ndeny = lo\n", 0, NULL, recheck,
		     &pl);
		if (pl.violations)
			dump(&pl);
		assert_int_equal(pl.violations, 0);
		ng_plan_free(&pl);
	}

	/* Where NCCL does not ask the shim's plugin (NCCL before 2.28.7, a
	 * plugin of the user's), a forbidden file value reaches NCCL: said
	 * so, left in place, and the checks see it. */
	env_reset();
	nconf = 0;
	conf_put("NCCL_SOCKET_IFNAME", "lo");
	plugin_asked = 0;
	plan("[env]\nNCCL_SOCKET_IFNAME = forbid\n[network]\ndeny = lo\n", 0, NULL, 0, &pl);
	d = find(&pl, "NCCL_SOCKET_IFNAME");
	assert_int_equal(d->set, NG_SET_NONE);
	assert_int_equal(d->level, NG_DEC_WARN_ONCE);
	assert_non_null(strstr(d->msg, "NCCL applies it all the same"));
	assert_int_equal(pl.violations, 1);
	ng_plan_free(&pl);
	plugin_asked = 1;

	/* Only NCCL_* names come from NCCL's files: CUDA has read its own
	 * before NCCL sets them. */
	env_reset();
	nconf = 0;
	conf_put("CUDA_VISIBLE_DEVICES", "0");
	conf_put("CUDA_DEVICE_ORDER", "FASTEST_FIRST");
	plan("[devices]\ngpus = 0,1\n", 0, NULL, 0, &pl);
	d = find(&pl, "CUDA_VISIBLE_DEVICES");
	assert_non_null(d);
	assert_int_equal(d->set, NG_SET_ENV);
	assert_string_equal(d->effective, "0,1");
	d = find(&pl, "CUDA_DEVICE_ORDER");
	assert_non_null(d);
	assert_string_equal(d->effective, "PCI_BUS_ID");
	ng_plan_free(&pl);

	/* The management interface, set only in the file: the violation
	 * names the file as the fix. */
	env_reset();
	nconf = 0;
	conf_put("NCCL_SOCKET_IFNAME", "eth");
	plan("[network]\ndeny = eth0,docker\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 1);
	d = find_level(&pl, NG_DEC_VIOLATION);
	assert_non_null(strstr(d->msg, "NCCL_SOCKET_IFNAME=eth selects eth0, which deny"));
	assert_non_null(strstr(d->msg, "fix: correct NCCL_SOCKET_IFNAME in " CONF_FILE));
	ng_plan_free(&pl);
	nconf = 0;
}

static void test_socket(void **state)
{
	struct ng_plan pl;
	const struct ng_decision *d;

	(void)state;
	env_reset();
	plan("[env]\nNCCL_SOCKET_IFNAME = enforce =ib0\n[network]\nrequire_up = yes\n", 0, NULL,
	     0, &pl);
	assert_int_equal(pl.violations, 0);
	assert_string_equal(find(&pl, "NCCL_SOCKET_IFNAME")->effective, "=ib0");
	ng_plan_free(&pl);
	/* A missing exact name: a violation naming setting, value and fix. */
	plan("[env]\nNCCL_SOCKET_IFNAME = enforce =ib9\n[network]\nrequire_up = yes\n", 0, NULL,
	     0, &pl);
	assert_int_equal(pl.violations, 1);
	d = find_level(&pl, NG_DEC_VIOLATION);
	assert_non_null(strstr(d->msg, "NCCL_SOCKET_IFNAME==ib9"));
	assert_non_null(strstr(d->msg, "fix: correct the policy's NCCL_SOCKET_IFNAME (t.conf:2)"));
	ng_plan_free(&pl);
	/* Without require_up a missing name still fails: NCCL would. */
	plan("[env]\nNCCL_SOCKET_IFNAME = enforce =ib9\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 1);
	assert_non_null(strstr(find_level(&pl, NG_DEC_VIOLATION)->msg, "selects no interface"));
	ng_plan_free(&pl);
	/* The user's own value. */
	env_put("NCCL_SOCKET_IFNAME", "ib");
	plan("[network]\nrequire_up = no\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 0);
	assert_string_equal(find(&pl, "NCCL_SOCKET_IFNAME")->effective, "ib0");
	ng_plan_free(&pl);
	/* require_up: the prefix also selects ib1 (no carrier) and ib2 (no IP). */
	plan("[network]\nrequire_up = yes\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 1);
	d = find_level(&pl, NG_DEC_VIOLATION);
	assert_non_null(strstr(d->msg, "selects ib1, which is up, not running"));
	assert_non_null(strstr(d->msg, "fix: bring ib1 up or set NCCL_SOCKET_IFNAME"));
	ng_plan_free(&pl);
	/* Exclusion list. */
	env_reset();
	env_put("NCCL_SOCKET_IFNAME", "^ib,lo,docker");
	plan("[network]\nrequire_up = yes\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 0);
	assert_string_equal(find(&pl, "NCCL_SOCKET_IFNAME")->effective, "eth0");
	ng_plan_free(&pl);
	/* deny against the user's choice and against NCCL's default. */
	env_reset();
	env_put("NCCL_SOCKET_IFNAME", "eth");
	plan("[network]\ndeny = eth0,docker\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 1);
	assert_non_null(strstr(find_level(&pl, NG_DEC_VIOLATION)->msg, "which deny = eth0,docker"));
	ng_plan_free(&pl);
	env_reset();
	plan("[network]\ndeny = eth0,docker\n", 0, NULL, 0, &pl);	/* NCCL picks ib0 */
	assert_int_equal(pl.violations, 0);
	assert_string_equal(find(&pl, "NCCL_SOCKET_IFNAME")->effective, "ib0");
	ng_plan_free(&pl);
	ng_host_set_root(root2);					/* no ib: eth0 */
	plan("[network]\ndeny = eth0,docker\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 1);
	assert_non_null(strstr(find_level(&pl, NG_DEC_VIOLATION)->msg,
			       "not set and NCCL would pick eth0"));
	ng_plan_free(&pl);
	ng_host_set_root(root);
}

static void test_ib(void **state)
{
	struct ng_plan pl;
	const struct ng_decision *d;

	(void)state;
	env_reset();
	plan("[env]\nNCCL_IB_HCA = enforce =mlx5_0:1\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 0);
	assert_string_equal(find(&pl, "NCCL_IB_HCA")->level == NG_DEC_INFO ? "ok" : "", "ok");
	ng_plan_free(&pl);
	/* Matches only a port that is down: NCCL would fall back to sockets. */
	plan("[env]\nNCCL_IB_HCA = enforce mlx5_1\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 1);
	d = find_level(&pl, NG_DEC_VIOLATION);
	assert_non_null(strstr(d->msg, "fall back to sockets"));
	assert_non_null(strstr(d->msg, "mlx5_0:1 active"));
	ng_plan_free(&pl);
	/* Wrong port. */
	plan("[env]\nNCCL_IB_HCA = enforce mlx5_0:2\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 1);
	ng_plan_free(&pl);
	/* require_up: every entry must match an active port. */
	plan("[env]\nNCCL_IB_HCA = enforce mlx5_0,mlx5_7\n[network]\nrequire_up = yes\n", 0, NULL,
	     0, &pl);
	assert_int_equal(pl.violations, 1);
	assert_non_null(strstr(find_level(&pl, NG_DEC_VIOLATION)->msg, "'mlx5_7' matches no"));
	ng_plan_free(&pl);
	/* Excluding the down one leaves the active one. */
	plan("[env]\nNCCL_IB_HCA = enforce ^mlx5_1\n[network]\nrequire_up = yes\n", 0, NULL, 0,
	     &pl);
	assert_int_equal(pl.violations, 0);
	ng_plan_free(&pl);
	/* IB disabled: not checked. */
	env_put("NCCL_IB_DISABLE", "1");
	plan("[env]\nNCCL_IB_HCA = enforce mlx5_9\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 0);
	ng_plan_free(&pl);
	/* A host without IB. */
	env_reset();
	ng_host_set_root(root2);
	plan("[env]\nNCCL_IB_HCA = enforce mlx5_0\n", 0, NULL, 0, &pl);
	assert_int_equal(pl.violations, 1);
	assert_non_null(strstr(find_level(&pl, NG_DEC_VIOLATION)->msg, "no InfiniBand device"));
	ng_plan_free(&pl);
	ng_host_set_root(root);
}

static void test_timeouts(void **state)
{
	struct ng_plan pl;
	const struct ng_decision *d;

	(void)state;
	env_reset();
	env_put("NCCLGUARD_TIMEOUT", "5");
	plan("[timeouts]\ninit = 30\ncollective = 60\naction = abort\n", 0, NULL, 0, &pl);
	assert_true(pl.init_s == 30);
	assert_true(pl.collective_s == 60);
	assert_int_equal(pl.timeout_action, NG_PTO_ABORT);
	d = find(&pl, "timeouts.collective");
	assert_string_equal(d->user, "5");
	assert_string_equal(d->effective, "60");
	ng_plan_free(&pl);
	/* Never: said as such, and kept as +inf (the shim's "no deadline"). */
	plan("[timeouts]\ninit = never\ncollective = 1e99\n", 0, NULL, 0, &pl);
	assert_true(pl.init_s > 31536000 && pl.collective_s > 31536000);
	d = find(&pl, "timeouts.collective");
	assert_string_equal(d->effective, "never");
	assert_non_null(strstr(d->msg, "collective timeout never"));
	assert_string_equal(find(&pl, "timeouts.init")->effective, "never");
	ng_plan_free(&pl);
	plan("[env]\nNCCL_DEBUG = allow\n", 0, NULL, 0, &pl);
	assert_true(pl.init_s < 0);
	assert_int_equal(pl.timeout_action, NG_PTO_UNSET);
	(void)dump;
	ng_plan_free(&pl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_order),
		cmocka_unit_test(test_long_cpulist),
		cmocka_unit_test(test_cpulist),
		cmocka_unit_test(test_pin_numa),
		cmocka_unit_test(test_pin_edges),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_env_conf),
		cmocka_unit_test(test_socket),
		cmocka_unit_test(test_ib),
		cmocka_unit_test(test_timeouts),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
