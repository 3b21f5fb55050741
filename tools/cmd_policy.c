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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "esc.h"
#include "policy.h"
#include "trust.h"

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

/* What one local rank would get, as the lines to print. */
struct view {
	char **line;
	char *shared;		/* per line: every local rank gets it */
	int n;
	int violations;
};

/* A line of the view: it quotes the policy file's values. */
static void put_line(const char *line)
{
	ng_esc_put(stdout, line);
	putchar('\n');
}

static void add_line(struct view *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_line(struct view *v, const char *fmt, ...)
{
	char **l = realloc(v->line, (v->n + 1) * sizeof(*l));
	va_list ap;
	int rc;

	if (!l)
		return;
	v->line = l;
	va_start(ap, fmt);
	rc = vasprintf(&l[v->n], fmt, ap);
	va_end(ap);
	if (rc >= 0)
		v->n++;
}

static void view_free(struct view *v)
{
	for (int i = 0; i < v->n; i++)
		free(v->line[i]);
	free(v->line);
	free(v->shared);
}

static void build_view(const struct ng_policy *p, int lr, const uint64_t *cpus, struct view *v)
{
	struct ng_plan_input in = {
		.getenv = env_get, .envp = environ, .local_rank = lr, .allowed_cpus = cpus,
		.conf = ng_ncclconf_lookup, .conf_count = ng_ncclconf_count,
		.conf_name = ng_ncclconf_name, .plugin_asked = ng_policy_serves_env(p),
	};
	struct ng_plan plan;
	int order = 0;

	memset(v, 0, sizeof(*v));
	if (ng_plan_build(p, &in, &plan))
		add_line(v, "  (out of memory: the list below is incomplete)");
	for (int i = 0; i < plan.n; i++) {
		const struct ng_decision *d = &plan.d[i];

		/* The => line below says the pin. */
		if (plan.pinned && d->level == NG_DEC_INFO && !strcmp(d->action, "pin")) {
			order |= !strcmp(d->key, "CUDA_DEVICE_ORDER");
			continue;
		}
		add_line(v, "  %s %s", level_tag(d->level), d->msg);
	}
	if (plan.pinned) {
		char c[512] = "unchanged", node[32] = "unknown";

		if (plan.affinity)
			ng_cpulist_format(plan.cpus, NG_CPU_WORDS * 64, c, sizeof(c));
		if (plan.place.numa_node >= 0)
			snprintf(node, sizeof(node), "%d", plan.place.numa_node);
		add_line(v, "  => CUDA_VISIBLE_DEVICES=%d%s (GPU %d%s%s), NUMA node %s, cpus %s",
			 plan.gpu, order ? ", CUDA_DEVICE_ORDER=PCI_BUS_ID" : "", plan.gpu,
			 plan.place.found ? " at " : ", not on this host",
			 plan.place.found ? plan.place.busid : "", node, c);
	}
	if (plan.violations)
		add_line(v, "  => %d violation%s: %s", plan.violations,
			 plan.violations == 1 ? "" : "s",
			 p->fail ? "this process would exit 3 before NCCL starts"
				 : "reported, the process goes on");
	v->violations = plan.violations;
	ng_plan_free(&plan);
}

static int has_line(const struct view *v, const char *l)
{
	for (int i = 0; i < v->n; i++)
		if (!strcmp(v->line[i], l))
			return 1;
	return 0;
}

/* Marks the lines every local rank gets; returns how many rank 0 has. */
static int mark_shared(struct view *v, int n)
{
	int shared = 0;

	for (int r = 0; r < n; r++) {
		v[r].shared = calloc(v[r].n ? v[r].n : 1, 1);
		if (!v[r].shared)
			return 0;
	}
	for (int i = 0; i < v[0].n; i++) {
		int all = 1;

		for (int r = 1; r < n && all; r++)
			all = has_line(&v[r], v[0].line[i]);
		if (!all)
			continue;
		shared++;
		for (int r = 0; r < n; r++)
			for (int j = 0; j < v[r].n; j++)
				if (!strcmp(v[r].line[j], v[0].line[i]))
					v[r].shared[j] = 1;
	}
	return shared;
}

/* Whether ranks r and q get the same lines, those every rank gets left
 * out once they are marked. */
static int same_rest(const struct view *v, int r, int q)
{
	int i = 0, j = 0;

	for (;;) {
		while (i < v[r].n && v[r].shared && v[r].shared[i])
			i++;
		while (j < v[q].n && v[q].shared && v[q].shared[j])
			j++;
		if (i == v[r].n || j == v[q].n)
			return i == v[r].n && j == v[q].n;
		if (strcmp(v[r].line[i++], v[q].line[j++]))
			return 0;
	}
}

/* "local rank 3", "local ranks 0-7", "local ranks 0,2,5-7". */
static void print_ranks(const int *group, int n)
{
	printf("\nlocal rank%s ", n == 1 ? "" : "s");
	for (int i = 0; i < n;) {
		int j = i;

		while (j + 1 < n && group[j + 1] == group[j] + 1)
			j++;
		printf("%s%d", i ? "," : "", group[i]);
		if (j > i)
			printf("-%d", group[j]);
		i = j + 1;
	}
	printf(":\n");
}

/*
 * One block per distinct plan, headed by the local ranks it applies to;
 * what every rank gets, when the plans differ only in part (a GPU each),
 * comes first and once.  Returns the violations of all ranks.
 */
static int show_ranks(const struct ng_policy *p, int nranks, const uint64_t *cpus, int label)
{
	struct view *v = calloc(nranks, sizeof(*v));
	int *done = calloc(nranks, sizeof(int)), *group = calloc(nranks, sizeof(int));
	int violations = 0, shared = 0, ngroups = 0;

	if (!v || !done || !group) {
		fprintf(stderr, "ncclguard policy: out of memory\n");
		violations = 1;
		goto out;
	}
	for (int r = 0; r < nranks; r++) {
		build_view(p, r, cpus, &v[r]);
		violations += v[r].violations;
	}
	for (int r = 0; r < nranks; r++)
		if (!done[r]) {
			ngroups++;
			for (int q = r; q < nranks; q++)
				done[q] |= same_rest(v, r, q);
		}
	if (ngroups > 1 && (shared = mark_shared(v, nranks))) {
		printf("\nevery local rank (0-%d):\n", nranks - 1);
		for (int i = 0; i < v[0].n; i++)
			if (v[0].shared[i])
				put_line(v[0].line[i]);
	}
	memset(done, 0, nranks * sizeof(int));
	for (int r = 0; r < nranks; r++) {
		int n = 0;

		if (done[r])
			continue;
		for (int q = r; q < nranks; q++)
			if (!done[q] && same_rest(v, r, q)) {
				done[q] = 1;
				group[n++] = q;
			}
		if (label)
			print_ranks(group, n);
		else
			printf("\nany local rank:\n");
		for (int i = 0; i < v[r].n; i++)
			if (!shared || !v[r].shared[i])
				put_line(v[r].line[i]);
	}
out:
	for (int r = 0; v && r < nranks; r++)
		view_free(&v[r]);
	free(v);
	free(done);
	free(group);
	return violations;
}

int ng_cmd_policy(int argc, char **argv)
{
	struct ng_policy p;
	const char *file = NULL;
	int nranks = -1, violations = 0, untrusted = 0, rc;
	char line[600];
	struct ng_trust trust;
	uint64_t cpus[NG_CPU_WORDS] = { 0 };
	const uint64_t *allowed = NULL;
	cpu_set_t set;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc < 2)
		return ng_cli_usage_error("policy", "expected `check FILE`");
	if (strcmp(argv[1], "check"))
		return ng_cli_usage_error("policy", "unknown subcommand '%s' (check)", argv[1]);
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--local-ranks") && i + 1 < argc) {
			char *end;

			nranks = (int)strtol(argv[++i], &end, 10);
			if (*end || nranks < 1 || nranks > 1024) {
				return ng_cli_usage_error("policy", "--local-ranks '%s': expected "
							  "1..1024", argv[i]);
			}
		} else if (!strcmp(argv[i], "--sysroot") && i + 1 < argc) {
			ng_host_set_root(argv[++i]);
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 0;
		} else if ((!strcmp(argv[i], "--local-ranks") || !strcmp(argv[i], "--sysroot")) &&
			   i + 1 == argc) {
			return ng_cli_usage_error("policy", "%s needs a value", argv[i]);
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return ng_cli_usage_error("policy", "unknown option '%s'", argv[i]);
		} else if (!file) {
			file = argv[i];
		} else {
			return ng_cli_usage_error("policy", "one FILE only ('%s' and '%s')", file,
						  argv[i]);
		}
	}
	if (!file)
		return ng_cli_usage_error("policy", "no FILE given");
	if (ng_policy_load(file, &p, &trust)) {
		for (int i = 0; i < p.nerr; i++) {
			ng_policy_format_error(&p, i, line, sizeof(line));
			ng_esc_put(stderr, line);
			fputc('\n', stderr);
		}
		if (p.more_errors)
			fprintf(stderr, "%s: %d more errors\n", file, p.more_errors);
		fprintf(stderr, "ncclguard policy: %s is not valid (%d error%s)\n", file,
			p.nerr + p.more_errors, p.nerr + p.more_errors == 1 ? "" : "s");
		ng_policy_free(&p);
		return 1;
	}
	printf("policy %s: valid (sha256 %s)\n", file, p.digest);
	if (p.enforces && trust.why[0]) {
		printf("trust: REFUSED: %s; the shim would apply nothing of it and %s\n",
		       trust.why, p.fail ? "exit 3" : "warn");
		untrusted = 1;
	} else {
		printf("trust: %s\n", p.enforces ? "ok (it and every folder above it writable "
						   "only by root or you)"
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
	violations = show_ranks(&p, nranks, allowed, p.pin == NG_PIN_LOCAL_RANK || nranks > 1);
	if (untrusted || violations)
		printf("\n%s\n", p.fail ? "result: jobs on this host would be stopped (exit 3)"
				       : "result: violations would be reported; jobs go on");
	else
		printf("\nresult: ok\n");
	rc = (untrusted || violations) && p.fail ? 3 : 0;
	ng_policy_free(&p);
	return rc;
}
