/*
 * What a policy does to one process: from the policy, the process's
 * environment, its local rank and the host (through hostprobe.c), a list
 * of decisions.  Pure apart from reading the host: the shim applies the
 * plan (preload/enforce/apply.c), `ncclguard policy check` prints it.
 *
 * Order: [env] first, then [devices] (pinning), then [network] on the
 * values the first steps leave, so an enforced NCCL_SOCKET_IFNAME is the
 * one checked.  A recheck (before ncclGetUniqueId and each init) keeps
 * only what changed since and what is wrong.
 */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy.h"
#include "seconds.h"
#include "trust.h"

#define MAX_IFS 128
#define MAX_PORTS 128

struct ctx {
	const struct ng_policy *p;
	const struct ng_plan_input *in;
	struct ng_plan *pl;
	int oom;
};

static char *xstrdup(struct ctx *c, const char *s)
{
	char *d = strdup(s ? s : "");

	if (!d)
		c->oom = 1;
	return d;
}

static void add(struct ctx *c, const char *key, const char *action, const char *user,
		const char *eff, enum ng_dec_set set, enum ng_dec_level level,
		const char *fmt, ...) __attribute__((format(printf, 8, 9)));
static void add(struct ctx *c, const char *key, const char *action, const char *user,
		const char *eff, enum ng_dec_set set, enum ng_dec_level level,
		const char *fmt, ...)
{
	struct ng_plan *pl = c->pl;
	struct ng_decision *d;
	char msg[1024];
	va_list ap;

	/* A recheck reports changes and problems, not the steady state. */
	if (c->in->recheck && level == NG_DEC_INFO && set == NG_SET_NONE)
		return;
	if (pl->n == pl->cap) {
		int cap = pl->cap ? pl->cap * 2 : 16;
		struct ng_decision *g = realloc(pl->d, sizeof(*g) * (size_t)cap);

		if (!g) {
			c->oom = 1;
			return;
		}
		pl->d = g;
		pl->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	d = &pl->d[pl->n++];
	d->key = xstrdup(c, key);
	d->action = action;
	d->user = xstrdup(c, user);
	d->effective = xstrdup(c, eff);
	d->set = set;
	d->level = level;
	d->msg = xstrdup(c, msg);
	if (level == NG_DEC_VIOLATION)
		pl->violations++;
}

/* The plan's decision on `name`: 1 with *v (NULL: unset), or 0. */
static int decided(const struct ng_plan *plan, const char *name, const char **v)
{
	for (int i = plan->n - 1; i >= 0; i--) {
		const struct ng_decision *d = &plan->d[i];

		if (d->set != NG_SET_NONE && !strcmp(d->key, name)) {
			*v = d->set == NG_SET_ENV ? d->effective : NULL;	/* unset, withheld */
			return 1;
		}
	}
	return 0;
}

/* The NCCL_CONF_FILE NCCL reads: the one it read, once it has started;
 * before, the environment's after the plan's decisions. */
static const char *plan_conf_file(const struct ng_plan *plan, const struct ng_plan_input *in)
{
	const char *cf;

	if (in->conf_fixed)
		return in->conf_fixed_file;
	if (!decided(plan, "NCCL_CONF_FILE", &cf))
		cf = in->getenv("NCCL_CONF_FILE");
	return cf;
}

/* What NCCL's configuration files give `name`: NCCL_* names only (NCCL
 * sets others too, but after CUDA has read its own), and never
 * NCCL_CONF_FILE, which NCCL reads from the environment before any file. */
static const char *plan_conf(const struct ng_plan *plan, const struct ng_plan_input *in,
			     const char *name, const char **file)
{
	if (file)
		*file = NULL;
	if (!in->conf || strncmp(name, "NCCL_", 5) || !strcmp(name, "NCCL_CONF_FILE"))
		return NULL;
	return in->conf(plan_conf_file(plan, in), name, file);
}

const char *ng_plan_getenv(const struct ng_plan *plan, const struct ng_plan_input *in,
			   const char *name)
{
	const char *v;

	if (decided(plan, name, &v))
		return v;
	v = in->getenv(name);
	return v ? v : plan_conf(plan, in, name, NULL);
}

static const char *cur(struct ctx *c, const char *name)
{
	return ng_plan_getenv(c->pl, c->in, name);
}

/* The configuration file whose value NCCL will take for `name`, where no
 * decision and not the environment gives one; NULL otherwise.  At a
 * recheck NCCL may have applied the file already: the same value in the
 * environment is still the file's. */
static const char *conf_file(struct ctx *c, const char *name)
{
	const char *file, *v, *e;

	if (decided(c->pl, name, &v) || !(v = plan_conf(c->pl, c->in, name, &file)) || !file)
		return NULL;
	e = c->in->getenv(name);
	if (e && !(c->in->recheck && !strcmp(e, v)))
		return NULL;
	return file;
}

/* A variable the policy forbids (or strict leaves out) that only a
 * configuration file sets.  The shim cannot take it out of the file, so it
 * says so, once.  Where NCCL asks the shim's env plugin (2.28.7+), the
 * plugin withholds it and the checks that follow take it as unset; the
 * environment is left alone, so a rank whose NCCL has already applied the
 * file and one whose NCCL has not end up the same.  Elsewhere NCCL applies
 * it, and the checks see it. */
static void forbid_conf(struct ctx *c, const char *name, const char *v, const char *file,
			const char *action, const char *why)
{
	if (c->in->plugin_asked)
		add(c, name, action, v, "", NG_SET_WITHHELD, NG_DEC_WARN_ONCE,
		    "%s=%s in %s: %s; withheld from NCCL by the shim's env plugin (NCCL before "
		    "2.28.7 would apply it: remove it from %s)", name, v, file, why, file);
	else
		add(c, name, action, v, v, NG_SET_NONE, NG_DEC_WARN_ONCE,
		    "%s=%s in %s: %s; NCCL applies it all the same (the shim's env plugin, "
		    "which would withhold it, is not what this NCCL asks): remove it from %s",
		    name, v, file, why, file);
}

/* A variable removed from the environment that a file sets as well: NCCL
 * would take the file's value next. */
static void forbid_also_conf(struct ctx *c, const char *name, const char *action,
			     const char *why)
{
	const char *file, *v = plan_conf(c->pl, c->in, name, &file);

	if (v && file)
		forbid_conf(c, name, v, file, action, why);
}

/* "after start" at a recheck, for messages. */
static const char *when(struct ctx *c, char *buf, size_t len)
{
	if (!c->in->recheck)
		return "";
	snprintf(buf, len, " (changed after start; restored before %s)",
		 c->in->where ? c->in->where : "NCCL");
	return buf;
}

/* ---- [env] ----------------------------------------------------------- */

/* A file the policy would have the loader or NCCL open (trust.h): one
 * another user could replace is a violation, and the value is not set.
 * Bare names are the loader's search path's. */
static int refused_path(struct ctx *c, const struct ng_penv *e, const char *u)
{
	char why[PATH_MAX + 256];

	if (e->action != NG_PENV_ENFORCE && (e->action != NG_PENV_DEFAULT || u))
		return 0;
	if (!ng_trust_value(e->name, e->value, getuid(), why, sizeof(why)))
		return 0;
	add(c, e->name, e->action == NG_PENV_ENFORCE ? "enforce" : "default", u ? u : "", "",
	    NG_SET_NONE, NG_DEC_VIOLATION, "%s=%s (%s by %s:%d) refused: %s; not set", e->name,
	    e->value, e->action == NG_PENV_ENFORCE ? "enforced" : "default", c->p->path, e->line,
	    why);
	return 1;
}

static void plan_entry(struct ctx *c, const struct ng_penv *e)
{
	const struct ng_policy *p = c->p;
	const char *u = cur(c, e->name), *file = u ? conf_file(c, e->name) : NULL;
	char w[128], from[PATH_MAX + 8] = "", why[PATH_MAX + 32];

	/* At a recheck the shim's own enforced value is in the environment,
	 * where NCCL's setenv(..., 0) cannot replace it: a change there is the
	 * program's. */
	if (file && e->action == NG_PENV_ENFORCE && c->in->recheck)
		file = NULL;
	if (file)
		snprintf(from, sizeof(from), " from %s", file);
	if (refused_path(c, e, u))
		return;
	switch (e->action) {
	case NG_PENV_ENFORCE:
		if (u && !strcmp(u, e->value)) {
			add(c, e->name, "enforce", u, e->value, NG_SET_NONE, NG_DEC_INFO,
			    "%s=%s (enforced by %s:%d; already set)", e->name, e->value,
			    p->path, e->line);
		} else if (u) {
			add(c, e->name, "enforce", u, e->value, NG_SET_ENV, NG_DEC_WARN,
			    "%s=%s enforced by %s:%d; the value '%s'%s is ignored%s", e->name,
			    e->value, p->path, e->line, u, from, when(c, w, sizeof(w)));
		} else {
			add(c, e->name, "enforce", "", e->value, NG_SET_ENV,
			    c->in->recheck ? NG_DEC_WARN : NG_DEC_INFO,
			    "%s=%s (enforced by %s:%d)%s", e->name, e->value, p->path,
			    e->line, when(c, w, sizeof(w)));
		}
		break;
	case NG_PENV_DEFAULT:
		if (u)
			add(c, e->name, "default", u, u, NG_SET_NONE, NG_DEC_INFO,
			    "%s=%s kept%s (the default %s of %s:%d applies only when unset)",
			    e->name, u, from, e->value, p->path, e->line);
		else
			add(c, e->name, "default", "", e->value, NG_SET_ENV, NG_DEC_INFO,
			    "%s=%s (default from %s:%d)", e->name, e->value, p->path, e->line);
		break;
	case NG_PENV_FORBID:
		/* NCCL_ENV_PLUGIN = forbid keeps out the user's plugin,
		 * not the one the shim itself installed. */
		if (u && !strcmp(e->name, "NCCL_ENV_PLUGIN") && c->in->own_env_plugin &&
		    !strcmp(u, c->in->own_env_plugin))
			u = NULL;
		snprintf(why, sizeof(why), "forbidden by %s:%d", p->path, e->line);
		if (u && file) {
			forbid_conf(c, e->name, u, file, "forbid", why);
		} else if (u) {
			add(c, e->name, "forbid", u, "", NG_SET_UNSET, NG_DEC_WARN,
			    "%s=%s removed: forbidden by %s:%d%s", e->name, u, p->path,
			    e->line, when(c, w, sizeof(w)));
			forbid_also_conf(c, e->name, "forbid", why);
		} else {
			add(c, e->name, "forbid", "", "", NG_SET_NONE, NG_DEC_INFO,
			    "%s is forbidden (%s:%d) and not set", e->name, p->path, e->line);
		}
		break;
	case NG_PENV_ALLOW:
		add(c, e->name, "allow", u ? u : "", u ? u : "", NG_SET_NONE, NG_DEC_INFO,
		    "%s%s%s%s allowed (%s:%d)", e->name, u ? "=" : "", u ? u : " (unset)", from,
		    p->path, e->line);
		break;
	}
}

/* strict = yes: the environment's NCCL_* variables the policy does not list
 * (only NCCL_CONF_FILE, or all but it). */
static void plan_strict_env(struct ctx *c, int conf_file_only)
{
	const struct ng_policy *p = c->p;
	char why[PATH_MAX + 64];

	snprintf(why, sizeof(why), "%s:%d strict = yes allows only the NCCL_* variables the "
		 "policy lists", p->path, p->strict_line);
	for (char **ep = c->in->envp; *ep; ep++) {
		const char *eq = strchr(*ep, '=');
		char name[256];

		if (!eq || strncmp(*ep, "NCCL_", 5) || (size_t)(eq - *ep) >= sizeof(name))
			continue;
		memcpy(name, *ep, (size_t)(eq - *ep));
		name[eq - *ep] = 0;
		if ((strcmp(name, "NCCL_CONF_FILE") == 0) != conf_file_only)
			continue;
		if (ng_policy_env(p, name) || !cur(c, name) || conf_file(c, name))
			continue;
		/* Our own env plugin, set by the shim. */
		if (!strcmp(name, "NCCL_ENV_PLUGIN") && c->in->own_env_plugin &&
		    !strcmp(eq + 1, c->in->own_env_plugin))
			continue;
		add(c, name, "strict", eq + 1, "", NG_SET_UNSET, NG_DEC_WARN,
		    "%s=%s removed: %s", name, eq + 1, why);
		forbid_also_conf(c, name, "strict", why);
	}
}

/* strict = yes: what NCCL's configuration files set and the policy does
 * not list. */
static void plan_strict_conf(struct ctx *c)
{
	const struct ng_policy *p = c->p;
	const char *cf;
	char why[PATH_MAX + 64];
	int n;

	if (!c->in->conf_count)
		return;
	cf = plan_conf_file(c->pl, c->in);
	snprintf(why, sizeof(why), "%s:%d strict = yes allows only the NCCL_* variables the "
		 "policy lists", p->path, p->strict_line);
	n = c->in->conf_count(cf);
	for (int i = 0; i < n; i++) {
		const char *name = c->in->conf_name(cf, i), *v, *file;

		if (!name || strncmp(name, "NCCL_", 5) || ng_policy_env(p, name) ||
		    !(file = conf_file(c, name)) || !(v = plan_conf(c->pl, c->in, name, NULL)))
			continue;
		forbid_conf(c, name, v, file, "strict", why);
	}
}

static void plan_env(struct ctx *c)
{
	const struct ng_policy *p = c->p;

	/* NCCL_CONF_FILE first: which files NCCL reads follows from it. */
	for (int i = 0; i < p->nenv; i++)
		if (!strcmp(p->env[i].name, "NCCL_CONF_FILE"))
			plan_entry(c, &p->env[i]);
	if (p->strict && c->in->envp)
		plan_strict_env(c, 1);
	for (int i = 0; i < p->nenv; i++)
		if (strcmp(p->env[i].name, "NCCL_CONF_FILE"))
			plan_entry(c, &p->env[i]);
	if (p->strict && c->in->envp)
		plan_strict_env(c, 0);
	if (p->strict)
		plan_strict_conf(c);
}

/* ---- [devices] --------------------------------------------------------- */

static int list_has(const char *list, int gpu)
{
	char tmp[256], *save = NULL;

	snprintf(tmp, sizeof(tmp), "%s", list);
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		long v = strtol(t, &end, 10);

		if (end != t && !*end && v == gpu)
			return 1;
	}
	return 0;
}

/* GPU numbers in a policy are nvidia-smi's and sysfs's (PCI order); CUDA
 * numbers fastest first unless told, which differs on a host of mixed
 * GPUs. */
static void plan_device_order(struct ctx *c, const char *gpus)
{
	const char *u = cur(c, "CUDA_DEVICE_ORDER");
	char w[128];

	if (!u || strcmp(u, "PCI_BUS_ID"))
		add(c, "CUDA_DEVICE_ORDER", "pin", u ? u : "", "PCI_BUS_ID", NG_SET_ENV,
		    u || c->in->recheck ? NG_DEC_WARN : NG_DEC_INFO,
		    "CUDA_DEVICE_ORDER=PCI_BUS_ID, so that CUDA numbers GPU%s %s as nvidia-smi "
		    "and sysfs do%s%s%s%s", strchr(gpus, ',') ? "s" : "", gpus,
		    u ? "; was '" : "", u ? u : "", u ? "'" : "", when(c, w, sizeof(w)));
}

static void plan_pin_local_rank(struct ctx *c)
{
	const struct ng_policy *p = c->p;
	struct ng_plan *pl = c->pl;
	int lr = c->in->local_rank;
	const char *u;
	char cvd[16];

	if (lr < 0) {
		add(c, "CUDA_VISIBLE_DEVICES", "pin", "", "", NG_SET_NONE, NG_DEC_INFO,
		    "pin = local_rank (%s:%d): the launcher gave no local rank (LOCAL_RANK, "
		    "SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK...); not pinning this process",
		    p->path, p->pin_line);
		return;
	}
	if (lr >= p->ngpus) {
		add(c, "CUDA_VISIBLE_DEVICES", "pin", "", "", NG_SET_NONE, NG_DEC_VIOLATION,
		    "local rank %d has no GPU: gpus = ... (%s:%d) lists %d; fix: start at most %d "
		    "ranks per node, or list a GPU for every local rank", lr, p->path,
		    p->gpus_line, p->ngpus, p->ngpus);
		return;
	}
	pl->pinned = 1;
	pl->gpu = p->gpus[lr];
	snprintf(cvd, sizeof(cvd), "%d", pl->gpu);
	u = cur(c, "CUDA_VISIBLE_DEVICES");
	if (u && !strcmp(u, cvd))
		add(c, "CUDA_VISIBLE_DEVICES", "pin", u, cvd, NG_SET_NONE, NG_DEC_INFO,
		    "CUDA_VISIBLE_DEVICES=%s: local rank %d pinned to GPU %d (%s:%d)", cvd, lr,
		    pl->gpu, p->path, p->pin_line);
	else
		add(c, "CUDA_VISIBLE_DEVICES", "pin", u ? u : "", cvd, NG_SET_ENV,
		    (u && !list_has(u, pl->gpu)) || c->in->recheck ? NG_DEC_WARN : NG_DEC_INFO,
		    "CUDA_VISIBLE_DEVICES=%s: local rank %d pinned to GPU %d (%s:%d)%s%s%s%s", cvd,
		    lr, pl->gpu, p->path, p->pin_line, u ? "; was '" : "", u ? u : "", u ? "'" : "",
		    c->in->recheck ? " (changed after start; restored, which helps only if CUDA "
		    "is not initialised yet)" : "");
	plan_device_order(c, cvd);
	if (c->in->recheck)
		return;
	ng_pin_locate(pl->gpu, &pl->place);
	if (!pl->place.found) {
		add(c, "gpu", "pin", "", cvd, NG_SET_NONE, p->numa ? NG_DEC_WARN : NG_DEC_INFO,
		    "GPU %d: this host shows no such GPU (none in /proc/driver/nvidia/gpus or "
		    "PCI sysfs%s%s); pinned anyway%s", pl->gpu, *ng_host_root() ? " under " : "",
		    ng_host_root(), p->numa ? ", CPU affinity unchanged" : "");
		return;
	}
	if (!p->numa)
		return;
	if (!pl->place.cpulist[0]) {
		add(c, "cpu_affinity", "numa", "", "", NG_SET_NONE, NG_DEC_WARN,
		    "GPU %d (%s): sysfs gives no local_cpulist; CPU affinity unchanged", pl->gpu,
		    pl->place.busid);
		return;
	}
	uint64_t local[NG_CPU_WORDS], both[NG_CPU_WORDS];
	char have[512] = "", want[512], got[512];
	int any = 0;

	if (ng_cpulist_parse(pl->place.cpulist, local, NG_CPU_WORDS * 64)) {
		add(c, "cpu_affinity", "numa", "", pl->place.cpulist, NG_SET_NONE, NG_DEC_WARN,
		    "GPU %d (%s): cannot read local_cpulist '%s'; CPU affinity unchanged",
		    pl->gpu, pl->place.busid, pl->place.cpulist);
		return;
	}
	for (int i = 0; i < NG_CPU_WORDS; i++) {
		both[i] = local[i] & (c->in->allowed_cpus ? c->in->allowed_cpus[i] : ~0ull);
		any |= both[i] != 0;
	}
	if (c->in->allowed_cpus)
		ng_cpulist_format(c->in->allowed_cpus, NG_CPU_WORDS * 64, have, sizeof(have));
	ng_cpulist_format(local, NG_CPU_WORDS * 64, want, sizeof(want));
	if (!any) {
		add(c, "cpu_affinity", "numa", have, have, NG_SET_NONE, NG_DEC_WARN,
		    "GPU %d (%s) is near cpus %s, none of which this process may use (%s); CPU "
		    "affinity unchanged", pl->gpu, pl->place.busid, want, have);
		return;
	}
	ng_cpulist_format(both, NG_CPU_WORDS * 64, got, sizeof(got));
	memcpy(pl->cpus, both, sizeof(both));
	pl->affinity = 1;
	if (pl->place.numa_node >= 0)
		add(c, "cpu_affinity", "numa", have, got, NG_SET_NONE, NG_DEC_INFO,
		    "CPU affinity %s: NUMA node %d of GPU %d (%s)", got, pl->place.numa_node,
		    pl->gpu, pl->place.busid);
	else
		add(c, "cpu_affinity", "numa", have, got, NG_SET_NONE, NG_DEC_INFO,
		    "CPU affinity %s: local cpus of GPU %d (%s)", got, pl->gpu, pl->place.busid);
}

static void plan_gpu_list_env(struct ctx *c, const char *list)
{
	const struct ng_policy *p = c->p;
	const char *u = cur(c, "CUDA_VISIBLE_DEVICES");
	char tmp[256], *save = NULL;

	if (!u) {
		add(c, "CUDA_VISIBLE_DEVICES", "pin", "", list, NG_SET_ENV, NG_DEC_INFO,
		    "CUDA_VISIBLE_DEVICES=%s: the GPUs %s:%d allows", list, p->path, p->gpus_line);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s", u);
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		long v = strtol(t, &end, 10);

		if (end == t || *end) {
			add(c, "CUDA_VISIBLE_DEVICES", "check", u, u, NG_SET_NONE, NG_DEC_WARN,
			    "CUDA_VISIBLE_DEVICES=%s: '%s' is not a GPU index; cannot check it "
			    "against gpus = %s (%s:%d)", u, t, list, p->path, p->gpus_line);
			return;
		}
		if (!list_has(list, (int)v)) {
			add(c, "CUDA_VISIBLE_DEVICES", "check", u, u, NG_SET_NONE, NG_DEC_VIOLATION,
			    "CUDA_VISIBLE_DEVICES=%s names GPU %ld, which gpus = %s (%s:%d) does not "
			    "allow; fix: use only GPUs %s", u, v, list, p->path, p->gpus_line, list);
			return;
		}
	}
	add(c, "CUDA_VISIBLE_DEVICES", "check", u, u, NG_SET_NONE, NG_DEC_INFO,
	    "CUDA_VISIBLE_DEVICES=%s: within gpus = %s (%s:%d)", u, list, p->path, p->gpus_line);
}

/* pin = none with gpus: only those GPUs, however the launcher splits them. */
static void plan_gpu_list(struct ctx *c)
{
	const struct ng_policy *p = c->p;
	char list[512] = "";
	size_t used = 0;

	for (int i = 0; i < p->ngpus; i++) {
		int n = snprintf(list + used, sizeof(list) - used, "%s%d", i ? "," : "", p->gpus[i]);

		if (n < 0 || (size_t)n >= sizeof(list) - used)
			break;
		used += (size_t)n;
	}
	plan_gpu_list_env(c, list);
	plan_device_order(c, list);
}

/* ---- [network] --------------------------------------------------------- */

static void append(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

static const char *ifstate(const struct ng_netif *f)
{
	if (!f->up)
		return "down";
	if (!f->running)
		return "up, not running";
	if (!f->has_addr)
		return "up, no address";
	return "up";
}

static int usable(const struct ng_netif *f)
{
	return f->running && f->has_addr;
}

/* Where the value came from, for the fix. */
static void fix_for(struct ctx *c, const char *name, const char *example, char *buf, size_t len)
{
	const struct ng_penv *e = ng_policy_env(c->p, name);
	const char *file = conf_file(c, name);

	if (file && !(e && e->action == NG_PENV_ENFORCE))
		snprintf(buf, len, "correct %s in %s (NCCL's configuration file)%s%s", name, file,
			 *example ? ", e.g. " : "", example);
	else if (e && e->action == NG_PENV_ENFORCE)
		snprintf(buf, len, "correct the policy's %s (%s:%d)%s%s", name, c->p->path, e->line,
			 *example ? ", e.g. " : "", example);
	else if (e && e->action == NG_PENV_DEFAULT)
		snprintf(buf, len, "set %s to an interface of this host%s%s (or correct the "
			 "policy's default, %s:%d)", name, *example ? ", e.g. " : "", example,
			 c->p->path, e->line);
	else
		snprintf(buf, len, "set %s to what this host has%s%s", name,
			 *example ? ", e.g. " : "", example);
}

static void plan_socket(struct ctx *c, const struct ng_netif *ifs, int nifs)
{
	const struct ng_policy *p = c->p;
	const char *v = cur(c, "NCCL_SOCKET_IFNAME");
	struct ng_iflist l, deny;
	char sel[512] = "", host[512] = "", why[160], fix[400], example[80] = "";
	int nsel = 0;

	memset(&deny, 0, sizeof(deny));
	if (p->deny)
		ng_iflist_parse(p->deny, &deny, why, sizeof(why));
	for (int i = 0; i < nifs; i++) {
		append(host, sizeof(host), "%s%s %s", i ? ", " : "", ifs[i].name, ifstate(&ifs[i]));
		/* The fix we suggest must not be the next violation. */
		if (!example[0] && usable(&ifs[i]) && !ifs[i].loopback &&
		    !(deny.n && ng_iflist_selects(&deny, ifs[i].name, -1)))
			snprintf(example, sizeof(example), "=%s", ifs[i].name);
	}
	if (!nifs)
		snprintf(host, sizeof(host), "none");

	if (v && strlen(v) > 1) {	/* NCCL ignores a value of one character */
		if (ng_iflist_parse(v, &l, why, sizeof(why))) {
			fix_for(c, "NCCL_SOCKET_IFNAME", example, fix, sizeof(fix));
			add(c, "NCCL_SOCKET_IFNAME", "check", v, v, NG_SET_NONE, NG_DEC_VIOLATION,
			    "NCCL_SOCKET_IFNAME=%s: %s; fix: %s", v, why, fix);
			return;
		}
		for (int i = 0; i < nifs; i++) {
			if (!ng_iflist_selects(&l, ifs[i].name, -1))
				continue;
			if (usable(&ifs[i])) {
				append(sel, sizeof(sel), "%s%s", nsel ? "," : "", ifs[i].name);
				nsel++;
			} else if (p->require_up) {
				fix_for(c, "NCCL_SOCKET_IFNAME", example, fix, sizeof(fix));
				add(c, "NCCL_SOCKET_IFNAME", "check", v, "", NG_SET_NONE,
				    NG_DEC_VIOLATION, "NCCL_SOCKET_IFNAME=%s selects %s, which is %s "
				    "(require_up, %s:%d); fix: bring %s up or %s", v, ifs[i].name,
				    ifstate(&ifs[i]), p->path, p->require_up_line, ifs[i].name, fix);
				return;
			}
		}
		if (p->require_up && !l.exclude) {
			for (int e = 0; e < l.n; e++) {
				int hit = 0;

				for (int i = 0; i < nifs; i++) {
					struct ng_iflist one = l;

					one.n = 1;
					one.e[0] = l.e[e];
					hit |= ng_iflist_match(&one, ifs[i].name, -1) >= 0;
				}
				if (!hit) {
					fix_for(c, "NCCL_SOCKET_IFNAME", example, fix, sizeof(fix));
					add(c, "NCCL_SOCKET_IFNAME", "check", v, "", NG_SET_NONE,
					    NG_DEC_VIOLATION, "NCCL_SOCKET_IFNAME=%s: no interface %s%s "
					    "exists on this host (have: %s; require_up, %s:%d); fix: %s", v,
					    l.exact ? "named " : "starting with ", l.e[e].name, host,
					    p->path, p->require_up_line, fix);
					return;
				}
			}
		}
		if (!nsel) {
			fix_for(c, "NCCL_SOCKET_IFNAME", example, fix, sizeof(fix));
			add(c, "NCCL_SOCKET_IFNAME", "check", v, "", NG_SET_NONE, NG_DEC_VIOLATION,
			    "NCCL_SOCKET_IFNAME=%s selects no interface that is up with an address "
			    "(have: %s); NCCL would fail to find a socket interface; fix: %s", v,
			    host, fix);
			return;
		}
	} else {
		/* NCCL's own choice (src/misc/socket.cc): ib* first, then
		 * anything but docker*, lo*, virbr*. */
		static const char *const tries[] = { "ib", "^docker,lo,virbr" };

		for (int t = 0; t < 2 && !nsel; t++) {
			ng_iflist_parse(tries[t], &l, why, sizeof(why));
			for (int i = 0; i < nifs; i++) {
				if (usable(&ifs[i]) && ng_iflist_selects(&l, ifs[i].name, -1)) {
					append(sel, sizeof(sel), "%s%s", nsel ? "," : "", ifs[i].name);
					nsel++;
				}
			}
		}
	}
	if (p->deny) {
		char tmp[512], *save = NULL;

		snprintf(tmp, sizeof(tmp), "%s", sel);
		for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (ng_iflist_match(&deny, t, -1) < 0)
				continue;
			if (v && strlen(v) > 1) {
				fix_for(c, "NCCL_SOCKET_IFNAME", "", fix, sizeof(fix));
				add(c, "NCCL_SOCKET_IFNAME", "check", v, sel, NG_SET_NONE,
				    NG_DEC_VIOLATION, "NCCL_SOCKET_IFNAME=%s selects %s, which deny = %s "
				    "(%s:%d) forbids; fix: %s without it", v, t, p->deny, p->path,
				    p->deny_line, fix);
			} else {
				add(c, "NCCL_SOCKET_IFNAME", "check", "", sel, NG_SET_NONE,
				    NG_DEC_VIOLATION, "NCCL_SOCKET_IFNAME is not set and NCCL would pick "
				    "%s, which deny = %s (%s:%d) forbids; fix: set NCCL_SOCKET_IFNAME "
				    "(best: enforce it in the policy's [env])", t, p->deny, p->path,
				    p->deny_line);
			}
			return;
		}
	}
	if (v && strlen(v) > 1)
		add(c, "NCCL_SOCKET_IFNAME", "check", v, sel, NG_SET_NONE, NG_DEC_INFO,
		    "NCCL_SOCKET_IFNAME=%s selects %s", v, sel);
	else
		add(c, "NCCL_SOCKET_IFNAME", "check", "", sel, NG_SET_NONE, NG_DEC_INFO,
		    "NCCL_SOCKET_IFNAME not set: NCCL would pick %s", nsel ? sel : "(none)");
}

static void plan_ib(struct ctx *c)
{
	const struct ng_policy *p = c->p;
	const char *v = cur(c, "NCCL_IB_HCA"), *dis = cur(c, "NCCL_IB_DISABLE");
	struct ng_ibport ports[MAX_PORTS];
	struct ng_iflist l;
	char sel[512] = "", host[512] = "", why[160], fix[400], example[80] = "";
	int n, nsel = 0;

	if (!v || !*v)
		return;
	if (dis && strtol(dis, NULL, 0) == 1) {
		add(c, "NCCL_IB_HCA", "check", v, "", NG_SET_NONE, NG_DEC_INFO,
		    "NCCL_IB_HCA=%s not checked: NCCL_IB_DISABLE=1", v);
		return;
	}
	n = ng_host_ibports(ports, MAX_PORTS);
	for (int i = 0; i < n; i++) {
		append(host, sizeof(host), "%s%s:%d %s", i ? ", " : "", ports[i].dev, ports[i].port,
		       ports[i].active ? "active" : "not active");
		if (!example[0] && ports[i].active)
			snprintf(example, sizeof(example), "=%.40s:%d", ports[i].dev, ports[i].port);
	}
	if (!n)
		snprintf(host, sizeof(host), "no InfiniBand device in /sys/class/infiniband");
	fix_for(c, "NCCL_IB_HCA", example, fix, sizeof(fix));
	if (ng_iflist_parse(v, &l, why, sizeof(why))) {
		add(c, "NCCL_IB_HCA", "check", v, "", NG_SET_NONE, NG_DEC_VIOLATION,
		    "NCCL_IB_HCA=%s: %s; fix: %s", v, why, fix);
		return;
	}
	for (int i = 0; i < n; i++) {
		if (!ng_iflist_selects(&l, ports[i].dev, ports[i].port))
			continue;
		if (ports[i].active) {
			append(sel, sizeof(sel), "%s%s:%d", nsel ? "," : "", ports[i].dev, ports[i].port);
			nsel++;
		} else if (p->require_up) {
			add(c, "NCCL_IB_HCA", "check", v, "", NG_SET_NONE, NG_DEC_VIOLATION,
			    "NCCL_IB_HCA=%s selects %s:%d, which is not active (require_up, %s:%d); "
			    "fix: bring the port up or %s", v, ports[i].dev, ports[i].port, p->path,
			    p->require_up_line, fix);
			return;
		}
	}
	if (p->require_up && !l.exclude) {
		for (int e = 0; e < l.n; e++) {
			struct ng_iflist one = l;
			int hit = 0;

			one.n = 1;
			one.e[0] = l.e[e];
			for (int i = 0; i < n; i++)
				hit |= ports[i].active &&
				       ng_iflist_match(&one, ports[i].dev, ports[i].port) >= 0;
			if (!hit) {
				add(c, "NCCL_IB_HCA", "check", v, sel, NG_SET_NONE, NG_DEC_VIOLATION,
				    "NCCL_IB_HCA=%s: '%s%s%.0d' matches no active port (have: %s; "
				    "require_up, %s:%d); fix: %s", v, l.e[e].name,
				    l.e[e].port >= 0 ? ":" : "", l.e[e].port >= 0 ? l.e[e].port : 0,
				    host, p->path, p->require_up_line, fix);
				return;
			}
		}
	}
	if (!nsel) {
		add(c, "NCCL_IB_HCA", "check", v, "", NG_SET_NONE, NG_DEC_VIOLATION,
		    "NCCL_IB_HCA=%s matches no active InfiniBand port (have: %s); NCCL would "
		    "silently fall back to sockets; fix: %s", v, host, fix);
		return;
	}
	add(c, "NCCL_IB_HCA", "check", v, sel, NG_SET_NONE, NG_DEC_INFO,
	    "NCCL_IB_HCA=%s selects %s", v, sel);
}

/* ---- [timeouts] -------------------------------------------------------- */

/* "600" and `unit`, or "never" for a value above a year (seconds.h). */
static const char *fmt_seconds(char *buf, size_t len, double s, const char *unit)
{
	if (ng_seconds_never(s))
		snprintf(buf, len, "never");
	else
		snprintf(buf, len, "%g%s", s, unit);
	return buf;
}

static void plan_timeouts(struct ctx *c)
{
	const struct ng_policy *p = c->p;
	struct ng_plan *pl = c->pl;
	char eff[32], val[32];
	const char *u;

	if (p->init_line && p->init_s > 0) {
		pl->init_s = p->init_s;
		u = c->in->getenv("NCCLGUARD_INIT_TIMEOUT");
		fmt_seconds(eff, sizeof(eff), p->init_s, "");
		add(c, "timeouts.init", "timeout", u ? u : "", eff, NG_SET_NONE, NG_DEC_INFO,
		    "init timeout %s (%s:%d)%s%s", fmt_seconds(val, sizeof(val), p->init_s, " s"),
		    p->path, p->init_line,
		    u ? "; NCCLGUARD_INIT_TIMEOUT ignored, was " : "", u ? u : "");
	}
	if (p->collective_line && p->collective_s > 0) {
		pl->collective_s = p->collective_s;
		u = c->in->getenv("NCCLGUARD_TIMEOUT");
		fmt_seconds(eff, sizeof(eff), p->collective_s, "");
		add(c, "timeouts.collective", "timeout", u ? u : "", eff, NG_SET_NONE, NG_DEC_INFO,
		    "collective timeout %s (%s:%d)%s%s",
		    fmt_seconds(val, sizeof(val), p->collective_s, " s"), p->path,
		    p->collective_line, u ? "; NCCLGUARD_TIMEOUT ignored, was " : "", u ? u : "");
	}
	if (p->timeout_action != NG_PTO_UNSET) {
		const char *a = ng_ptimeout_action_name(p->timeout_action);

		pl->timeout_action = p->timeout_action;
		u = c->in->getenv("NCCLGUARD_ON_TIMEOUT");
		add(c, "timeouts.action", "timeout", u ? u : "", a, NG_SET_NONE, NG_DEC_INFO,
		    "on timeout: %s (%s:%d)%s%s", a, p->path, p->timeout_action_line,
		    u ? "; NCCLGUARD_ON_TIMEOUT ignored, was " : "", u ? u : "");
	}
}

int ng_plan_build(const struct ng_policy *p, const struct ng_plan_input *in, struct ng_plan *out)
{
	struct ctx c = { .p = p, .in = in, .pl = out };
	struct ng_netif *ifs;
	int nifs;

	memset(out, 0, sizeof(*out));
	out->init_s = -1;
	out->collective_s = -1;
	out->timeout_action = NG_PTO_UNSET;
	plan_env(&c);
	if (p->pin == NG_PIN_LOCAL_RANK)
		plan_pin_local_rank(&c);
	else if (p->ngpus)
		plan_gpu_list(&c);
	ifs = calloc(MAX_IFS, sizeof(*ifs));
	if (ifs) {
		nifs = ng_host_netifs(ifs, MAX_IFS);
		if (nifs < 0)
			add(&c, "NCCL_SOCKET_IFNAME", "check", "", "", NG_SET_NONE, NG_DEC_WARN,
			    "cannot list the network interfaces; not checked");
		else
			plan_socket(&c, ifs, nifs);
		free(ifs);
	} else {
		c.oom = 1;
	}
	plan_ib(&c);
	if (!in->recheck)
		plan_timeouts(&c);
	return c.oom ? -1 : 0;
}

void ng_plan_free(struct ng_plan *plan)
{
	for (int i = 0; i < plan->n; i++) {
		free(plan->d[i].key);
		free(plan->d[i].user);
		free(plan->d[i].effective);
		free(plan->d[i].msg);
	}
	free(plan->d);
	plan->d = NULL;
	plan->n = plan->cap = 0;
}
