/*
 * policy.*: the site policy the shim would apply here (--policy FILE,
 * else NCCLGUARD_POLICY, else /etc/ncclguard.conf), and whether this host
 * has what it requires: the interfaces its NCCL_SOCKET_IFNAME and
 * NCCL_IB_HCA select, the GPUs it lists.  The decisions are the shim's
 * own (policy/plan.c), made for a process without a local rank.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dr_priv.h"
#include "policy.h"
#include "trust.h"

extern char **environ;

static const char *env_get(const char *name)
{
	return getenv(name);
}

static void split_fix(struct dr_check *c, const char *msg)
{
	const char *f = strstr(msg, "; fix: ");

	if (!f) {
		dr_detail(c, "%s", msg);
		return;
	}
	dr_detail(c, "%.*s", (int)(f - msg), msg);
	dr_fix(c, "%s", f + 7);
}

static int have_id(const struct ng_doctor_report *r, const char *id)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->c[i].id, id))
			return 1;
	return 0;
}

/* NCCL_SOCKET_IFNAME -> policy.socket_ifname; other keys lower-cased. */
static void id_of(const char *key, char *id, size_t len)
{
	size_t n;

	if (!strcmp(key, "NCCL_SOCKET_IFNAME"))
		key = "socket_ifname";
	else if (!strcmp(key, "NCCL_IB_HCA"))
		key = "ib_hca";
	n = (size_t)snprintf(id, len, "policy.%s", key);
	for (size_t i = 7; i < n && i < len; i++)
		id[i] = (char)tolower((unsigned char)id[i]);
}

static void check_plan(struct ng_doctor_report *r, const struct ng_policy *p)
{
	struct ng_plan plan;
	struct ng_plan_input in = {
		.getenv = env_get, .envp = environ, .local_rank = -1,
		.conf = ng_ncclconf_lookup, .conf_count = ng_ncclconf_count,
		.conf_name = ng_ncclconf_name, .plugin_asked = ng_policy_serves_env(p),
	};

	if (ng_plan_build(p, &in, &plan))
		r->oom = 1;
	for (int i = 0; i < plan.n; i++) {
		const struct ng_decision *d = &plan.d[i];
		int iface = !strcmp(d->key, "NCCL_SOCKET_IFNAME") || !strcmp(d->key, "NCCL_IB_HCA");
		enum dr_status st;
		struct dr_check *c;
		char id[96];

		/* The interfaces' check always (not the setting of the variable
		 * before it); anything else only when it is wrong. */
		if (iface ? strcmp(d->action, "check") : d->level == NG_DEC_INFO)
			continue;
		id_of(d->key, id, sizeof(id));
		if (have_id(r, id))
			continue;
		st = d->level == NG_DEC_INFO ? DR_OK :
		     d->level == NG_DEC_VIOLATION && p->fail ? DR_FAIL : DR_WARN;
		c = dr_add(r, id, st, "%s", *d->effective ? d->effective : "none");
		split_fix(c, d->msg);
		if (st != DR_OK && c && !c->fix)
			dr_fix(c, "see `ncclguard policy check %s`", p->path);
	}
	ng_plan_free(&plan);
}

/* [devices] gpus: each index is a GPU this host has, in nvidia-smi's
 * numbering (PCI order).  One the host does not show is a warning, as
 * for the shim (docs/design.md, "Policy in the process"). */
static void check_gpus(struct ng_doctor_report *r, const struct dr_host *h,
		       const struct ng_policy *p)
{
	char busids[256][NG_BUSID_LEN], list[512] = "", missing[256] = "";
	int n = ng_host_gpus(busids, 256), nmiss = 0;
	struct dr_check *c;

	if (h->nvml_ok && h->nnv > n)
		n = h->nnv;
	for (int i = 0; i < p->ngpus; i++) {
		dr_cat(list, sizeof(list), "%s%d", i ? "," : "", p->gpus[i]);
		if (p->gpus[i] >= n) {
			dr_cat(missing, sizeof(missing), "%s%d", nmiss ? "," : "", p->gpus[i]);
			nmiss++;
		}
	}
	if (!nmiss) {
		c = dr_add(r, "policy.gpus", DR_OK, "%s", list);
		dr_detail(c, "this host has %d GPUs", n);
		return;
	}
	c = dr_add(r, "policy.gpus", DR_WARN, "%s", list);
	dr_detail(c, "GPU %s not on this host (it shows %d)", missing, n);
	dr_fix(c, "list only this host's GPUs in gpus = (%s:%d), or run on hosts that have them",
	       p->path, p->gpus_line);
}

void dr_check_policy(struct ng_doctor_report *r, const struct dr_host *h, const char *path)
{
	struct ng_policy p;
	struct dr_check *c;
	struct ng_trust trust;
	char why[512];

	if (!path)
		path = getenv("NCCLGUARD_POLICY");
	if (!path || !*path)
		path = access("/etc/ncclguard.conf", R_OK) ? NULL : "/etc/ncclguard.conf";
	if (!path) {
		c = dr_add(r, "policy.file", DR_OK, "none");
		dr_detail(c, "NCCLGUARD_POLICY is not set and there is no /etc/ncclguard.conf");
		return;
	}
	if (ng_policy_load(path, &p, &trust)) {
		ng_policy_format_error(&p, 0, why, sizeof(why));
		c = dr_add(r, "policy.file", DR_FAIL, "%s", path);
		dr_detail(c, "%s%s", why, p.nerr > 1 ? " (and more)" : "");
		dr_fix(c, "correct the file; `ncclguard policy check %s` lists every error", path);
		ng_policy_free(&p);
		return;
	}
	if (p.enforces && trust.why[0]) {
		c = dr_add(r, "policy.file", p.fail ? DR_FAIL : DR_WARN, "%s", path);
		dr_detail(c, "refused: %s; the shim would apply nothing of it", trust.why);
		dr_fix(c, "make the file and every folder above it owned by root or you and "
		       "writable by their owner only (a sticky folder, like /tmp, may be "
		       "writable by all)");
		ng_policy_free(&p);
		return;
	}
	c = dr_add(r, "policy.file", DR_OK, "%s", path);
	dr_detail(c, "valid, sha256 %.16s...", p.digest);
	check_plan(r, &p);
	if (p.ngpus)
		check_gpus(r, h, &p);
	ng_policy_free(&p);
}
