/*
 * Which launcher started `ncclguard run` (run_priv.h): torchrun or a shell
 * start one run per host; srun and mpirun one per task, so that several
 * runs of one job meet on a host and must share its recording.  The
 * variables each launcher sets for its tasks are common/launcher_env.def's
 * NG_LAUNCHER_TASKS rows.  Partly set: a launcher's size variables are
 * tried in turn until one reads; the first of its job variables that is
 * set decides (too long for the record: no job); what does not read is -1.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_priv.h"

static const struct {
	const char *kind, *set, *num, *local;
} launchers[] = {
#define NG_LAUNCHER_TASKS(kind, set, num, local) { kind, set, num, local },
#include "launcher_env.def"
};

static const struct {
	const char *kind, *var;
	int counts;
} sizes[] = {
#define NG_LAUNCHER_TASKS_SIZE(kind, var, counts) { kind, var, counts },
#include "launcher_env.def"
};

static const struct {
	const char *kind, *var, *prefix;
} jobs[] = {
#define NG_LAUNCHER_TASKS_JOB(kind, var, prefix) { kind, var, prefix },
#include "launcher_env.def"
};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* A non-negative decimal, else -1. */
static int env_num(const char *name)
{
	const char *v = env(name);
	char *end;
	long n;

	if (!v)
		return -1;
	n = strtol(v, &end, 10);
	return *end || n < 0 || n > INT_MAX ? -1 : (int)n;
}

/* Slurm's compressed counts, "4(x2),3": the count where every node has
 * the same, else -1 (which node we are in the step's list is not said). */
static int uniform_tasks(const char *v)
{
	int n = -1;

	while (v && *v) {
		char *end;
		long k = strtol(v, &end, 10);

		if (end == v || k < 0 || k > INT_MAX || (n >= 0 && k != n))
			return -1;
		n = (int)k;
		v = end;
		if (*v == '(') {
			v = strchr(v, ')');
			if (!v)
				return -1;
			v++;
		}
		if (*v == ',')
			v++;
		else if (*v)
			return -1;
	}
	return n;
}

static void set_job(struct rn_launch *l, const char *prefix, const char *value,
		    const char *var)
{
	if (snprintf(l->job, sizeof(l->job), "%s%s", prefix, value) >= (int)sizeof(l->job))
		l->job[0] = '\0';
	else
		l->job_var = var;
}

/* Where kind's tasks are: how many share the host, the job they share. */
static void tasks_of(struct rn_launch *l)
{
	const char *v;

	for (int i = 0; i < N(sizes) && l->local_size < 0; i++)
		if (!strcmp(sizes[i].kind, l->kind))
			l->local_size = sizes[i].counts ? uniform_tasks(env(sizes[i].var)) :
							  env_num(sizes[i].var);
	for (int i = 0; i < N(jobs); i++) {
		if (strcmp(jobs[i].kind, l->kind) || !(v = env(jobs[i].var)))
			continue;
		set_job(l, jobs[i].prefix, v, jobs[i].var);
		return;
	}
}

void rn_launch_detect(struct rn_launch *l)
{
	memset(l, 0, sizeof(*l));
	l->kind = "none";
	l->local_rank = -1;
	l->local_size = -1;
	for (int i = 0; i < N(launchers); i++) {
		if ((launchers[i].set && !env(launchers[i].set)) || env_num(launchers[i].num) < 0)
			continue;
		l->kind = launchers[i].kind;
		l->per_task = 1;
		l->local_rank = env_num(launchers[i].local);
		tasks_of(l);
		return;
	}
}

/* The value of a torchrun option in any of its spellings (--a-b V,
 * --a-b=V, --a_b V, --a_b=V); NULL if absent.  The script's own
 * arguments (after the first *.py) are not torchrun's. */
static const char *torchrun_opt(char **cmd, const char *name)
{
	size_t n = strlen(name);

	for (int i = 1; cmd[i]; i++) {
		const char *a = cmd[i];
		size_t l = strlen(a), k;

		if (a[0] != '-' && l > 3 && !strcmp(a + l - 3, ".py"))
			break;
		if (strncmp(a, "--", 2))
			continue;
		a += 2;
		for (k = 0; k < n && a[k]; k++)
			if (a[k] != name[k] && !(name[k] == '-' && a[k] == '_'))
				break;
		if (k < n)
			continue;
		if (a[n] == '=')
			return a + n + 1;
		if (!a[n])
			return cmd[i + 1];
	}
	return NULL;
}

static int is_torchrun(char **cmd)
{
	const char *b = strrchr(cmd[0], '/');

	b = b ? b + 1 : cmd[0];
	if (!strcmp(b, "torchrun"))
		return 1;
	if (strncmp(b, "python", 6))
		return 0;
	for (int i = 1; cmd[i] && cmd[i + 1]; i++)
		if (!strcmp(cmd[i], "-m"))
			return !strcmp(cmd[i + 1], "torch.distributed.run") ||
			       !strcmp(cmd[i + 1], "torch.distributed.launch");
	return 0;
}

int rn_launch_torchrun(char **cmd, char *job, size_t len)
{
	const char *nnodes, *ep, *port, *id;
	int n;

	if (!cmd || !cmd[0] || !is_torchrun(cmd))
		return 0;
	nnodes = torchrun_opt(cmd, "nnodes");
	if (!nnodes || !strcmp(nnodes, "1") || !strcmp(nnodes, "1:1"))
		return 0;
	ep = torchrun_opt(cmd, "rdzv-endpoint");
	port = NULL;
	if (!ep) {
		ep = torchrun_opt(cmd, "master-addr");
		port = torchrun_opt(cmd, "master-port");
	}
	if (!ep)
		return 0;
	id = torchrun_opt(cmd, "rdzv-id");
	n = snprintf(job, len, "torchrun-%s%s%s-%s", ep, port ? ":" : "", port ? port : "",
		     id ? id : "none");
	if (n < 0 || (size_t)n >= len)
		return 0;
	for (char *p = job; *p; p++)
		if (*p <= ' ' || *p == '/' || *p == '"' || *p == '\\' || *p > '~')
			*p = '_';
	return 1;
}
