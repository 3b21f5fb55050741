/*
 * ncclguard policy check FILE [--local-ranks N] [--sysroot DIR]
 *
 * Validates a policy file (every error names the file and line) and shows
 * what the shim would do with it on this host, for each local rank, in this
 * environment: environment decisions, interfaces, CUDA_VISIBLE_DEVICES,
 * NUMA node and cpus.  The decisions are the shim's own (policy/plan.c).
 *
 * Exit status: 0 valid and nothing violated; 1 the file is malformed or
 * unreadable; 2 usage; 3 valid, but the shim would stop a process on this
 * host ([violation] action = fail, or a file refused as untrusted).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "policy.h"

extern char **environ;

static const char usage[] =
	"usage: ncclguard policy check FILE [--local-ranks N] [--sysroot DIR]\n"
	"  Validates FILE and prints what it would do on this host for each local\n"
	"  rank, in the current environment.  --local-ranks: how many to show\n"
	"  (default: the number of gpus with pin = local_rank, else\n"
	"  LOCAL_WORLD_SIZE or 1).  --sysroot: read sysfs/procfs under DIR.\n";

static const char *env_get(const char *name)
{
	return getenv(name);
}

static const char *level_tag(enum ng_dec_level l)
{
	switch (l) {
	case NG_DEC_WARN:
	case NG_DEC_WARN_ONCE: return "warn     ";
	case NG_DEC_VIOLATION: return "VIOLATION";
	default: return "ok       ";
	}
}

static void print_header(const struct ng_policy *p)
{
	int serves = ng_policy_serves_env(p);

	printf("violation action: %s\n", p->fail ? "fail (the process exits 3 before NCCL starts)"
						 : "warn (report and go on)");
	if (p->init_line || p->collective_line || p->timeout_action != NG_PTO_UNSET) {
		printf("timeouts:");
		if (p->init_line)
			printf(" init %g s", p->init_s);
		if (p->collective_line)
			printf(" collective %g s", p->collective_s);
		if (p->timeout_action != NG_PTO_UNSET)
			printf(" on timeout %s", ng_ptimeout_action_name(p->timeout_action));
		printf(" (override NCCLGUARD_* variables)\n");
	}
	if (serves)
		printf("env plugin: NCCL 2.28.7 and later get [env] from the shim "
		       "(NCCL_ENV_PLUGIN), so later changes to the environment cannot undo it\n");
}

/* Returns the plan's violations. */
static int show_rank(const struct ng_policy *p, int lr, const uint64_t *cpus, int label)
{
	struct ng_plan_input in = {
		.getenv = env_get, .envp = environ, .local_rank = lr, .allowed_cpus = cpus,
		.conf = ng_ncclconf_lookup, .conf_count = ng_ncclconf_count,
		.conf_name = ng_ncclconf_name, .plugin_asked = ng_policy_serves_env(p),
	};
	struct ng_plan plan;
	int v;

	if (label)
		printf("\nlocal rank %d:\n", lr);
	else
		printf("\nany local rank:\n");
	if (ng_plan_build(p, &in, &plan))
		printf("  (out of memory: the list below is incomplete)\n");
	for (int i = 0; i < plan.n; i++)
		printf("  %s %s\n", level_tag(plan.d[i].level), plan.d[i].msg);
	if (plan.pinned) {
		char c[512] = "unchanged";

		if (plan.affinity)
			ng_cpulist_format(plan.cpus, NG_CPU_WORDS * 64, c, sizeof(c));
		char node[32] = "unknown";

		if (plan.place.numa_node >= 0)
			snprintf(node, sizeof(node), "%d", plan.place.numa_node);
		printf("  => CUDA_VISIBLE_DEVICES=%d (GPU %d%s%s), NUMA node %s, cpus %s\n",
		       plan.gpu, plan.gpu, plan.place.found ? " at " : ", not on this host",
		       plan.place.found ? plan.place.busid : "", node, c);
	}
	if (plan.violations)
		printf("  => %d violation%s: %s\n", plan.violations, plan.violations == 1 ? "" : "s",
		       p->fail ? "this process would exit 3 before NCCL starts"
			       : "reported, the process goes on");
	v = plan.violations;
	ng_plan_free(&plan);
	return v;
}

int ng_cmd_policy(int argc, char **argv)
{
	struct ng_policy p;
	const char *file = NULL;
	int nranks = -1, violations = 0, untrusted = 0, rc;
	char why[512], line[600];
	uint64_t cpus[NG_CPU_WORDS] = { 0 };
	const uint64_t *allowed = NULL;
	cpu_set_t set;

	if (argc < 2 || strcmp(argv[1], "check")) {
		fputs(usage, argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
				     ? stdout : stderr);
		return argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) ? 0 : 2;
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--local-ranks") && i + 1 < argc) {
			char *end;

			nranks = (int)strtol(argv[++i], &end, 10);
			if (*end || nranks < 1 || nranks > 1024) {
				fprintf(stderr, "ncclguard policy: --local-ranks '%s': expected 1..1024\n",
					argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--sysroot") && i + 1 < argc) {
			ng_host_set_root(argv[++i]);
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "ncclguard policy: unknown option '%s'\n%s", argv[i], usage);
			return 2;
		} else if (!file) {
			file = argv[i];
		} else {
			fprintf(stderr, "ncclguard policy: one FILE only\n%s", usage);
			return 2;
		}
	}
	if (!file) {
		fputs(usage, stderr);
		return 2;
	}
	if (ng_policy_parse_file(file, &p)) {
		for (int i = 0; i < p.nerr; i++) {
			ng_policy_format_error(&p, i, line, sizeof(line));
			fprintf(stderr, "%s\n", line);
		}
		if (p.more_errors)
			fprintf(stderr, "%s: %d more errors\n", file, p.more_errors);
		fprintf(stderr, "ncclguard policy: %s is not valid (%d error%s)\n", file,
			p.nerr + p.more_errors, p.nerr + p.more_errors == 1 ? "" : "s");
		ng_policy_free(&p);
		return 1;
	}
	printf("policy %s: valid (sha256 %s)\n", file, p.digest);
	if (p.enforces && ng_policy_trusted(file, why, sizeof(why))) {
		printf("trust: REFUSED: %s; the shim would apply nothing of it and %s\n", why,
		       p.fail ? "exit 3" : "warn");
		untrusted = 1;
	} else {
		printf("trust: %s\n", p.enforces ? "ok (writable only by its owner)"
						 : "not checked (the file enforces nothing)");
	}
	print_header(&p);
	if (*ng_host_root())
		printf("host: fake, under %s\n", ng_host_root());
	if (!sched_getaffinity(0, sizeof(set), &set)) {
		for (int c = 0; c < NG_CPU_WORDS * 64 && c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[c / 64] |= 1ull << (c % 64);
		allowed = cpus;
	}
	if (nranks < 0) {
		const char *lws = getenv("LOCAL_WORLD_SIZE");

		if (p.pin == NG_PIN_LOCAL_RANK)
			nranks = p.ngpus;
		else if (lws && atoi(lws) > 0 && atoi(lws) <= 1024)
			nranks = atoi(lws);
		else
			nranks = 1;
	}
	if (p.pin != NG_PIN_LOCAL_RANK && nranks == 1)
		violations += show_rank(&p, 0, allowed, 0);
	else
		for (int lr = 0; lr < nranks; lr++)
			violations += show_rank(&p, lr, allowed, 1);
	if (untrusted || violations)
		printf("\n%s\n", p.fail ? "result: jobs on this host would be stopped (exit 3)"
				       : "result: violations would be reported; jobs go on");
	else
		printf("\nresult: ok\n");
	rc = (untrusted || violations) && p.fail ? 3 : 0;
	ng_policy_free(&p);
	return rc;
}
