/*
 * The site policy in the shim (docs/design.md, "Interposition" and "Policy
 * in the process"): load it in the constructor, before CUDA or NCCL read
 * anything and before the program starts threads; apply its plan
 * (environment, pinning, affinity, timeouts); check again before
 * ncclGetUniqueId and every init or split.  Each decision is one `policy`
 * event and one log line at verbose level: the decisions are the same on
 * every rank, so at the default level the host's first rank (local rank 0)
 * prints one line that sums them up and the others print nothing.
 * Violations print in full on every rank; with `[violation] action = fail`
 * the process stops with exit status 3 before NCCL starts.
 *
 * cudaSetDevice under pin = local_rank: the process sees one GPU, as
 * device 0, and programs written for an unpinned node (torch DDP scripts)
 * call cudaSetDevice(LOCAL_RANK).  That call is passed on as device 0 and
 * said once at verbose level; any other device but 0 is reported as outside
 * the pin (a warning, once per device) and passed on unchanged, so the
 * program gets CUDA's own error.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "enforce.h"
#include "policy.h"
#include "trust.h"

extern char **environ;

#define DEFAULT_POLICY "/etc/ncclguard.conf"

static struct ng_policy pol;
static int active;			/* a valid, trusted policy is applied */
static char pol_path[PATH_MAX];
static char pol_digest[65];
static pthread_mutex_t recheck_lock = PTHREAD_MUTEX_INITIALIZER;
/* Pinning, for cudaSetDevice. */
static int pinned = -1;			/* physical GPU, -1: not pinned */
static char pinned_cvd[16];
static int cvd_checked;
static uint64_t warned_devs;
static int remap_said;
static char env_plugin[PATH_MAX];	/* what we set NCCL_ENV_PLUGIN to */

static const char *env_get(const char *name)
{
	return getenv(name);
}

/* Whether a NG_DEC_WARN_ONCE message was logged before (then 1); past the
 * table's size, or out of memory, everything counts as new. */
static int said_before(const char *msg)
{
	static char *said[64];
	static int nsaid;

	for (int i = 0; i < nsaid; i++)
		if (!strcmp(said[i], msg))
			return 1;
	if (nsaid < (int)(sizeof(said) / sizeof(said[0])) && (said[nsaid] = strdup(msg)))
		nsaid++;
	return 0;
}

/* What a plan did, for the one summary line. */
struct tally {
	int enforced, defaults, forbidden, warnings;
	char warned[160];		/* keys warned about, "a, b" */
};

static void count(struct tally *t, const struct ng_decision *d)
{
	size_t n = strlen(t->warned);

	if (d->level == NG_DEC_VIOLATION)
		return;
	/* Rules in force, not changes made: a launcher that ran under the
	 * same policy may have made them already. */
	if (!strcmp(d->action, "enforce"))
		t->enforced++;
	else if (!strcmp(d->action, "default"))
		t->defaults++;
	else if (!strcmp(d->action, "forbid"))
		t->forbidden++;
	if (d->level == NG_DEC_INFO)
		return;
	t->warnings++;
	if (!strstr(t->warned, d->key))
		snprintf(t->warned + n, sizeof(t->warned) - n, "%s%s", n ? ", " : "", d->key);
}

/* `t`: where to count what the plan did, NULL for none. */
static void apply(const struct ng_plan *plan, int at_init, struct tally *t)
{
	for (int i = 0; i < plan->n; i++) {
		const struct ng_decision *d = &plan->d[i];

		if (d->set == NG_SET_ENV)
			setenv(d->key, d->effective, 1);
		else if (d->set == NG_SET_UNSET)
			unsetenv(d->key);
		/* NG_SET_WITHHELD: the plugin does it. */
		if (d->level == NG_DEC_WARN_ONCE && said_before(d->msg))
			continue;
		ng_trace_policy(d->key, d->level == NG_DEC_VIOLATION ? "violation" : d->action,
				d->user, d->effective);
		/* A later check warns only where the program changed its
		 * environment since start: a fact of this process, said here. */
		if (d->level == NG_DEC_VIOLATION)
			ng_warn("policy violation: %s", d->msg);
		else if (d->level != NG_DEC_INFO && !at_init)
			ng_warn("policy: %s", d->msg);
		else
			ng_verbose("policy: %s", d->msg);
		if (t)
			count(t, d);
	}
	if (at_init && plan->affinity) {
		cpu_set_t set;

		CPU_ZERO(&set);
		for (int c = 0; c < NG_CPU_WORDS * 64 && c < CPU_SETSIZE; c++)
			if (plan->cpus[c / 64] >> (c % 64) & 1)
				CPU_SET(c, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			ng_warn("policy: cannot set CPU affinity: %s", strerror(errno));
	}
}

/* A violation: stop (fail) or go on (warn).  `what` names the check. */
static void violated(int nviolations, const char *what)
{
	if (pol.fail) {
		ng_warn("policy %s: %d violation%s %s; stopping before NCCL starts (exit %d). "
			"Check the file with `ncclguard policy check %s`", pol_path, nviolations,
			nviolations == 1 ? "" : "s", what, NG_EXIT_POLICY, pol_path);
		/* Under `ncclguard run`, the decisions that stopped us belong
		 * in the trace too: load the provider to flush them. */
		if (getenv("NCCLGUARD_TRACE") && !strcmp(getenv("NCCLGUARD_TRACE"), "1"))
			ng_trace_load();
		_exit(NG_EXIT_POLICY);
	}
	ng_warn("policy %s: %d violation%s %s; going on ([violation] action = warn)", pol_path,
		nviolations, nviolations == 1 ? "" : "s", what);
}

static void set_timeouts(const struct ng_plan *plan)
{
	if (plan->init_s > 0)
		ng_cfg.init_timeout_s = plan->init_s;
	if (plan->collective_s > 0)
		ng_cfg.timeout_s = plan->collective_s;
	if (plan->timeout_action != NG_PTO_UNSET)
		ng_cfg.on_timeout = (enum ng_action)plan->timeout_action;
}

/* The env plugin someone else named for NCCL: the environment's, else one
 * from NCCL's configuration files, which NCCL applies before it looks. */
static const char *users_env_plugin(void)
{
	const char *u = getenv("NCCL_ENV_PLUGIN");

	return u ? u : ng_ncclconf_get("NCCL_ENV_PLUGIN");
}

/* Whether NCCL will ask the shim's plugin: once installed, as the plugin
 * says; before (the first plan), whether it will be installed. */
static int plugin_asked(void)
{
	const struct ng_penv *e;

	if (env_plugin[0])
		return ng_envplugin_asked();
	if (!ng_policy_serves_env(&pol))
		return 0;
	e = ng_policy_env(&pol, "NCCL_ENV_PLUGIN");
	return (e && e->action == NG_PENV_FORBID) || !users_env_plugin();
}

/* NCCL >= 2.28.7 asks an env plugin for every variable: make it us. */
static void offer_env_plugin(void)
{
	const char *u = users_env_plugin();
	Dl_info info;

	ng_envplugin_set_policy(&pol);
	if (!ng_policy_serves_env(&pol))
		return;
	if (!dladdr((void *)ng_policy_init, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, env_plugin)) {
		env_plugin[0] = 0;
		return;
	}
	if (u && strcmp(u, env_plugin)) {
		ng_verbose("policy: NCCL_ENV_PLUGIN=%s set by the user: the policy reaches "
			   "NCCL through the environment only (forbid NCCL_ENV_PLUGIN in the "
			   "policy to serve it through the shim)", u);
		ng_trace_policy("NCCL_ENV_PLUGIN", "plugin", u, u);
		env_plugin[0] = 0;
		return;
	}
	setenv("NCCL_ENV_PLUGIN", env_plugin, 1);
	ng_envplugin_installed(1);
	ng_verbose("policy: NCCL_ENV_PLUGIN=%s: NCCL 2.28.7 and later read the enforced "
		   "values from the shim", env_plugin);
	ng_trace_policy("NCCL_ENV_PLUGIN", "plugin", u ? u : "", env_plugin);
}

static void plan_input(struct ng_plan_input *in, uint64_t *cpus, int recheck, const char *where)
{
	cpu_set_t set;

	memset(in, 0, sizeof(*in));
	in->getenv = env_get;
	in->envp = environ;
	in->local_rank = ng_rank.local_rank;
	in->recheck = recheck;
	in->where = where;
	in->own_env_plugin = env_plugin[0] ? env_plugin : NULL;
	in->conf_fixed = ng_ncclconf_fixed(&in->conf_fixed_file);
	in->plugin_asked = plugin_asked();
	in->conf = ng_ncclconf_lookup;
	in->conf_count = ng_ncclconf_count;
	in->conf_name = ng_ncclconf_name;
	if (!recheck && !sched_getaffinity(0, sizeof(set), &set)) {
		memset(cpus, 0, sizeof(uint64_t) * NG_CPU_WORDS);
		for (int c = 0; c < NG_CPU_WORDS * 64 && c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[c / 64] |= 1ull << (c % 64);
		in->allowed_cpus = cpus;
	}
}

/* The one line of the host's first rank, said at its first NCCL call, so
 * that processes that never call NCCL (the launcher, its helpers) say
 * nothing.  Where the launcher gave no local rank, every rank says it: one
 * line per rank is still a line. */
static char summary[PATH_MAX + 512];
static int summary_said;

static void summarise(const struct ng_plan *plan, const struct tally *t)
{
	const char *ifname = getenv("NCCL_SOCKET_IFNAME");
	char gpu[64] = "", forbidden[32] = "", warned[200] = "";

	if (t->forbidden)
		snprintf(forbidden, sizeof(forbidden), ", %d forbidden", t->forbidden);
	if (plan->pinned && plan->place.numa_node >= 0)
		snprintf(gpu, sizeof(gpu), ", local rank 0 on GPU %d (NUMA %d)", plan->gpu,
			 plan->place.numa_node);
	else if (plan->pinned)
		snprintf(gpu, sizeof(gpu), ", local rank 0 on GPU %d", plan->gpu);
	if (t->warnings)
		snprintf(warned, sizeof(warned), ", %d warning%s (%s)", t->warnings,
			 t->warnings == 1 ? "" : "s", t->warned);
	snprintf(summary, sizeof(summary), "policy %s: %d enforced, %d default%s%s%s%s%s%s; "
		 "each setting with NCCLGUARD_LOG=verbose", pol_path, t->enforced, t->defaults,
		 t->defaults == 1 ? "" : "s", forbidden, ifname ? ", NCCL_SOCKET_IFNAME=" : "",
		 ifname ? ifname : "", gpu, warned);
}

void ng_policy_init(void)
{
	const char *path = getenv("NCCLGUARD_POLICY");
	struct ng_plan plan;
	struct ng_plan_input in;
	uint64_t cpus[NG_CPU_WORDS];
	int rc;
	char msg[600];
	struct tally t = { 0 };
	struct ng_trust trust;

	if (!path || !*path) {
		if (access(DEFAULT_POLICY, F_OK))
			return;
		path = DEFAULT_POLICY;
	}
	/* Read through the descriptor the trust walk checked, never by path
	 * again: a folder swapped meanwhile cannot hand us another file. */
	rc = ng_policy_load(path, &pol, &trust);
	snprintf(pol_path, sizeof(pol_path), "%s", trust.path[0] ? trust.path : path);
	if (rc) {
		for (int i = 0; i < pol.nerr; i++) {
			ng_policy_format_error(&pol, i, msg, sizeof(msg));
			ng_warn("policy error: %s", msg);
		}
		if (pol.more_errors)
			ng_warn("policy error: %s: %d more", pol_path, pol.more_errors);
		ng_trace_policy("policy", "violation", pol_path, "malformed");
		/* The file's own [violation] action, when it got that far. */
		violated(pol.nerr + pol.more_errors, "in the file itself: nothing of it is applied");
		ng_policy_free(&pol);
		return;
	}
	snprintf(pol_digest, sizeof(pol_digest), "%s", pol.digest);
	if (pol.enforces && trust.why[0]) {
		ng_warn("policy violation: refusing %s: %s (a policy that enforces must be "
			"writable only by its owner, root or you, and so must every folder "
			"above it)", pol_path, trust.why);
		ng_trace_policy("policy", "violation", pol_path, "untrusted");
		violated(1, "(untrusted file): nothing of it is applied");
		ng_policy_free(&pol);
		return;
	}
	ng_verbose("policy: %s (sha256 %.16s...)", pol_path, pol_digest);
	plan_input(&in, cpus, 0, NULL);
	if (ng_plan_build(&pol, &in, &plan))
		ng_warn("policy: out of memory while planning; some decisions are missing");
	apply(&plan, 1, &t);
	set_timeouts(&plan);
	if (plan.pinned) {
		pinned = plan.gpu;
		snprintf(pinned_cvd, sizeof(pinned_cvd), "%d", plan.gpu);
	}
	active = 1;
	offer_env_plugin();
	/* A process about to stop says only why. */
	if (!plan.violations || !pol.fail)
		summarise(&plan, &t);
	if (plan.violations)
		violated(plan.violations, "on this host");
	ng_plan_free(&plan);
}

void ng_policy_recheck(const char *where)
{
	struct ng_plan plan;
	struct ng_plan_input in;
	const char *u;
	char msg[64];

	if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&recheck_lock);
	if (!summary_said && summary[0] && ng_rank.local_rank <= 0)
		ng_info("%s", summary);
	summary_said = 1;
	plan_input(&in, NULL, 1, where);
	if (ng_plan_build(&pol, &in, &plan))
		ng_warn("policy: out of memory while checking before %s", where);
	apply(&plan, 0, NULL);
	if (env_plugin[0] && (!(u = getenv("NCCL_ENV_PLUGIN")) || strcmp(u, env_plugin))) {
		ng_warn("policy: NCCL_ENV_PLUGIN changed after start to '%s'; restored before %s",
			u ? u : "", where);
		ng_trace_policy("NCCL_ENV_PLUGIN", "plugin", u ? u : "", env_plugin);
		setenv("NCCL_ENV_PLUGIN", env_plugin, 1);
	}
	if (plan.violations) {
		snprintf(msg, sizeof(msg), "before %s", where);
		violated(plan.violations, msg);
	}
	ng_plan_free(&plan);
	pthread_mutex_unlock(&recheck_lock);
}

int ng_policy_set_device(int dev)
{
	int lr = ng_rank.local_rank;
	char u[32], p[32];

	if (pinned < 0)
		return dev;
	/* The first call usually initialises CUDA: the pin must still be in
	 * place then. */
	if (!__atomic_exchange_n(&cvd_checked, 1, __ATOMIC_ACQ_REL)) {
		const char *v = getenv("CUDA_VISIBLE_DEVICES");

		if (!v || strcmp(v, pinned_cvd)) {
			ng_warn("policy: CUDA_VISIBLE_DEVICES changed after start to '%s'; restored "
				"to %s before the first cudaSetDevice", v ? v : "", pinned_cvd);
			ng_trace_policy("CUDA_VISIBLE_DEVICES", "pin", v ? v : "", pinned_cvd);
			setenv("CUDA_VISIBLE_DEVICES", pinned_cvd, 1);
		}
	}
	if (dev == 0)
		return 0;
	snprintf(u, sizeof(u), "%d", dev);
	if (dev == lr) {
		if (!__atomic_exchange_n(&remap_said, 1, __ATOMIC_RELAXED)) {
			ng_verbose("policy: cudaSetDevice(%d) -> device 0: local rank %d is pinned "
				   "to GPU %d, which this process sees as device 0", dev, lr,
				   pinned);
			ng_trace_policy("cudaSetDevice", "remap", u, "0");
		}
		return 0;
	}
	if (dev < 0 || dev >= 64 ||
	    !(__atomic_fetch_or(&warned_devs, 1ull << dev, __ATOMIC_RELAXED) & (1ull << dev))) {
		snprintf(p, sizeof(p), "%d", pinned);
		ng_warn("policy: cudaSetDevice(%d) is outside the pin: local rank %d sees only GPU %d, "
			"as device 0 (passed on unchanged)", dev, lr, pinned);
		ng_trace_policy("cudaSetDevice", "outside_pin", u, p);
	}
	return dev;
}

const char *ng_policy_path(void)
{
	return active ? pol_path : "";
}

const char *ng_policy_digest(void)
{
	return active ? pol_digest : "";
}
