/* Config mismatches: process_info fields and NCCL_* variables that differ
 * across ranks. */
#include <stdlib.h>
#include <string.h>

#include "match.h"

struct kv {
	char *val;
	int64_t rank;
	int host;
	const struct an_proc *proc;
};

/* By host, then value: a host whose ranks disagree is found in one pass. */
static int cmp_host_kv(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;

	if (x->host != y->host)
		return x->host - y->host;
	return strcmp(x->val, y->val);
}

static int cmp_kv(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;
	int c = strcmp(x->val, y->val);

	if (c)
		return c;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The value of NCCL_X in "K=V;K=V", or NULL. */
static char *env_value(const char *env, const char *key)
{
	size_t klen = strlen(key);
	const char *p = env;

	while (p && *p) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len > klen && !strncmp(p, key, klen) && p[klen] == '=')
			return strndup(p + klen + 1, len - klen - 1);
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

static char *field_value(const struct an_proc *p, const char *key)
{
	char buf[64];

	if (!strcmp(key, "nccl_version")) {
		an_version_str(p->nccl_version, buf, sizeof(buf));
		return strdup(buf);
	}
	if (!strcmp(key, "nccl_path"))
		return strdup(p->nccl_path ? p->nccl_path : "");
	if (!strcmp(key, "driver_version") || !strcmp(key, "cudart_version")) {
		snprintf(buf, sizeof(buf), "%lld", (long long)(key[0] == 'd' ?
			 p->driver_version : p->cudart_version));
		return strdup(buf);
	}
	if (!strcmp(key, "socket_ifname"))
		return strdup(p->socket_ifname ? p->socket_ifname : "");
	if (!strcmp(key, "policy_digest"))
		return strdup(p->policy_digest ? p->policy_digest : "");
	{
		char *v = env_value(p->env, key);

		return v ? v : strdup("(unset)");
	}
}

/* Bits apart: a number field as the trace holds it (binary), a string
 * byte by byte; 64 where the lengths differ. */
static int bits_apart(const char *key, const struct kv *a, const struct kv *b)
{
	size_t la = strlen(a->val), lb = strlen(b->val);
	int bits = 0;

	if (!strcmp(key, "nccl_version"))
		return __builtin_popcountll((uint64_t)(a->proc->nccl_version ^ b->proc->nccl_version));
	if (!strcmp(key, "driver_version"))
		return __builtin_popcountll((uint64_t)(a->proc->driver_version ^
						       b->proc->driver_version));
	if (!strcmp(key, "cudart_version"))
		return __builtin_popcountll((uint64_t)(a->proc->cudart_version ^
						       b->proc->cudart_version));
	if (la != lb)
		return 64;
	for (size_t i = 0; i < la && bits < 64; i++)
		bits += __builtin_popcount((unsigned char)(a->val[i] ^ b->val[i]));
	return bits;
}

/* One rank alone whose value is a bit or two from every other rank's is
 * what a flipped bit in its process_info makes (CTF has no checksum):
 * the finding stands, and incomplete[] says it may be that.  kv: n pairs
 * sorted by value. */
static void say_if_flipped(struct an_state *an, const char *key, const struct kv *kv, int n)
{
	int lone;

	if (n < 3)
		return;
	if (strcmp(kv[0].val, kv[1].val) && !strcmp(kv[1].val, kv[n - 1].val))
		lone = 0;
	else if (strcmp(kv[n - 1].val, kv[n - 2].val) && !strcmp(kv[0].val, kv[n - 2].val))
		lone = n - 1;
	else
		return;
	if (bits_apart(key, &kv[lone], &kv[lone ? 0 : 1]) > 2)
		return;
	an_incomplete(an, AN_INC_events_implausible, "%s of rank %lld is a bit or two from every "
		      "other rank's: a damaged trace reads like this, so the config "
		      "difference may not be real", key, (long long)kv[lone].rank);
}

/*
 * NCCL_HOSTID names a host to NCCL, which joins ranks of one id through
 * shared memory and their GPUs' links, and others through the network.
 * Set per host (containers whose hostnames and boot ids are alike) it
 * differs across hosts by design; what is wrong is a host whose ranks
 * disagree (NCCL sends their traffic over the network) or one id on two
 * hosts (NCCL looks for their GPUs on one host).  kv: n pairs.
 */
static const char *per_host_broken(struct kv *kv, int n)
{
	int i;

	qsort(kv, n, sizeof(*kv), cmp_host_kv);
	for (i = 1; i < n; i++)
		if (kv[i].host == kv[i - 1].host && strcmp(kv[i].val, kv[i - 1].val))
			return "differs across ranks of one host";
	qsort(kv, n, sizeof(*kv), cmp_kv);
	for (i = 1; i < n; i++)
		if (!strcmp(kv[i].val, kv[i - 1].val) && kv[i].host != kv[i - 1].host &&
		    strcmp(kv[i].val, "(unset)"))
			return "is the same on ranks of different hosts";
	return NULL;
}

static int is_per_host(const char *key)
{
	return !strcmp(key, "NCCL_HOSTID");
}

static void cfg_add_key(struct an_state *an, const char *key)
{
	struct kv *kv = calloc(an->nprocs ? an->nprocs : 1, sizeof(*kv));
	struct an_cfg_key *c;
	const char *why = "differs across ranks";
	int n = 0, i, per_host = is_per_host(key), report = 0;

	if (!kv)
		return;
	for (i = 0; i < an->nprocs; i++) {
		if (!an->procs[i].has_info)
			continue;
		kv[n].val = field_value(&an->procs[i], key);
		if (!kv[n].val)
			break;
		kv[n].host = an->procs[i].host;
		kv[n].proc = &an->procs[i];
		kv[n++].rank = an->procs[i].rank;
	}
	if (per_host) {
		why = per_host_broken(kv, n);
		report = why != NULL;
	}
	qsort(kv, n, sizeof(*kv), cmp_kv);
	for (i = 1; i < n && !per_host && !report; i++)
		report = strcmp(kv[i].val, kv[i - 1].val) != 0;
	if (report && !per_host)
		say_if_flipped(an, key, kv, n);
	c = report ? realloc(an->cfg, (an->ncfg + 1) * sizeof(*an->cfg)) : NULL;
	if (!c) {
		for (i = 0; i < n; i++)
			free(kv[i].val);
		free(kv);
		return;
	}
	an->cfg = c;
	c = &an->cfg[an->ncfg++];
	c->key = strdup(key);
	c->why = why;
	c->per_host = per_host;
	c->n = n;
	c->val = calloc(n, sizeof(*c->val));
	c->rank = calloc(n, sizeof(*c->rank));
	for (i = 0; i < n; i++) {
		if (c->val)
			c->val[i] = kv[i].val;
		else
			free(kv[i].val);
		if (c->rank)
			c->rank[i] = kv[i].rank;
	}
	if (!c->key || !c->val || !c->rank) {
		fputs("ncclguard analyze: out of memory\n", stderr);
		exit(1);
	}
	free(kv);
}

/* process_info fields and NCCL_* variables that differ across ranks. */
void an_config_mismatches(struct an_state *an)
{
	static const char *const fixed[] = {
		"nccl_version", "nccl_path", "driver_version", "cudart_version",
		"socket_ifname", "policy_digest",
	};
	char **names = NULL;
	int nnames = 0, i;

	for (i = 0; i < (int)(sizeof(fixed) / sizeof(fixed[0])); i++)
		cfg_add_key(an, fixed[i]);
	/* The union of NCCL_* names set on any rank. */
	for (i = 0; i < an->nprocs; i++) {
		const char *p = an->procs[i].env;

		while (p && *p) {
			const char *eq = strchr(p, '='), *end = strchr(p, ';');
			char *name, **grown;
			int k;

			if (!eq || (end && end < eq))
				break;
			name = strndup(p, eq - p);
			for (k = 0; name && k < nnames; k++)
				if (!strcmp(names[k], name))
					break;
			if (name && k == nnames && (grown = realloc(names, (nnames + 1) * sizeof(*names)))) {
				names = grown;
				names[nnames++] = name;
			} else {
				free(name);
			}
			p = end ? end + 1 : NULL;
		}
	}
	if (nnames)
		qsort(names, nnames, sizeof(*names), cmp_str);
	for (i = 0; i < nnames; i++) {
		cfg_add_key(an, names[i]);
		free(names[i]);
	}
	free(names);
}

/* The settings that differ across ranks. */
void an_config_free(struct an_state *an)
{
	int i, j;

	for (i = 0; i < an->ncfg; i++) {
		for (j = 0; j < an->cfg[i].n; j++)
			free(an->cfg[i].val[j]);
		free(an->cfg[i].key);
		free(an->cfg[i].val);
		free(an->cfg[i].rank);
	}
	free(an->cfg);
}
