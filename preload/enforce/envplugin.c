/*
 * NCCL's environment plugin (NCCL >= 2.28.7), so that the policy's [env]
 * reaches NCCL at the source: a program that changes its environment after
 * start, or a ~/.nccl.conf or NCCL_CONF_FILE (NCCL applies those with
 * setenv(..., 0) just before it loads the plugin), cannot undo it.
 *
 * ABI, verified in NVIDIA/nccl: the v2.28.7-1 release (commit ae7aed19)
 * added src/include/plugin/env/env_v1.h and src/plugin/env.cc; v2.30.7-1
 * adds ncclEnvPlugin_v2 (src/include/plugin/env/env_v2.h: init gains
 * NCCL's logger) and looks it up first, falling back to
 * dlsym("ncclEnvPlugin_v1").  Both are served, with the same getEnv.
 *
 *   typedef struct {
 *     const char* name;
 *     ncclResult_t (*init)(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix);
 *     ncclResult_t (*finalize)(void);
 *     const char* (*getEnv)(const char* name);
 *   } ncclEnv_v1_t;
 *
 * NCCL opens the library named by NCCL_ENV_PLUGIN (a path, or NAME for
 * libnccl-env-NAME.so; default libnccl-env.so; "none" disables) with
 * dlopen(RTLD_NOW | RTLD_LOCAL) at its first ncclGetEnv (ncclGetUniqueId
 * or an init).  Given the path of the preloaded shim, dlopen returns the
 * shim itself, so getEnv sees the policy the constructor loaded.  getEnv
 * must return a pointer that stays valid until the next getEnv of the same
 * name or finalize: enforced values live as long as the process, others
 * come from getenv as in NCCL's built-in plugin.  NCCL dlcloses the
 * plugin at exit; the shim is linked -z nodelete and preloaded, so it
 * stays.  nccl.h does not declare the struct (plugins carry their own
 * copy of the header), so it is laid out here and checked below.
 */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "enforce.h"
#include "nccl_env_plugin.h"
#include "policy.h"
#include "trust.h"

static const struct ng_policy *served;
static int installed;		/* NCCL_ENV_PLUGIN names the shim */

void ng_envplugin_set_policy(const struct ng_policy *p)
{
	__atomic_store_n(&served, p, __ATOMIC_RELEASE);
}

void ng_envplugin_installed(int yes)
{
	__atomic_store_n(&installed, yes, __ATOMIC_RELEASE);
}

int ng_envplugin_asked(void)
{
	int v = 0;

	if (!__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
		return 0;
	return !(ng_real.ncclGetVersion && ng_real.ncclGetVersion(&v) == ncclSuccess &&
		 v < 22807);
}

static ncclResult_t env_init(uint8_t major, uint8_t minor, uint8_t patch, const char *suffix)
{
	ng_debug("NCCL %u.%u.%u%s loaded the shim as its env plugin%s", major, minor, patch,
		 suffix ? suffix : "",
		 __atomic_load_n(&served, __ATOMIC_ACQUIRE) ? ": serving the policy" : "");
	return ncclSuccess;
}

/*
 * v2's logger is not called: NCCL loads the plugin at its first
 * parameter read, which may be ncclDebugInit's own (NCCL_DEBUG) with
 * NCCL's debug lock held, and the logger would take that lock again.
 * The shim's messages go where its others do (NCCLGUARD_LOG).
 */
static ncclResult_t env_init_v2(uint8_t major, uint8_t minor, uint8_t patch, const char *suffix,
				ncclDebugLogger_t logfn)
{
	(void)logfn;
	return env_init(major, minor, patch, suffix);
}

static ncclResult_t env_finalize(void)
{
	return ncclSuccess;
}

/* The policy's view of `name` over what `get` finds. */
static const char *env_view(const char *name, const char *(*get)(const char *))
{
	const struct ng_policy *p = __atomic_load_n(&served, __ATOMIC_ACQUIRE);
	const struct ng_penv *e;
	const char *v;
	char why[PATH_MAX + 256];

	if (!name)
		return NULL;
	if (!p)
		return get(name);
	e = ng_policy_env(p, name);
	/* A file another user could replace is not served, as the plan does
	 * not set it (policy/plan.c says why). */
	if (e && e->value && ng_trust_value(name, e->value, getuid(), why, sizeof(why)))
		return get(name);
	if (e) {
		switch (e->action) {
		case NG_PENV_ENFORCE:
			return e->value;
		case NG_PENV_FORBID:
			return NULL;
		case NG_PENV_DEFAULT:
			v = get(name);
			return v ? v : e->value;
		case NG_PENV_ALLOW:
			break;
		}
		return get(name);
	}
	if (p->strict && !strncmp(name, "NCCL_", 5) && strcmp(name, "NCCL_ENV_PLUGIN"))
		return NULL;
	return get(name);
}

/* NCCL asks once it has applied its configuration files: they are in the
 * environment by then. */
static const char *env_only(const char *name)
{
	return getenv(name);
}

static const char *env_get(const char *name)
{
	return env_view(name, env_only);
}

/* The shim may ask before NCCL has applied them.  Where NCCL does not ask
 * the plugin, the policy reached it through the environment alone and the
 * files fill in the rest. */
static const char *env_or_conf(const char *name)
{
	const char *v = getenv(name);

	/* NCCL sets every name its files give, but only NCCL_* ones before
	 * anything of NCCL's reads them (CUDA has read its own by then). */
	if (v || strncmp(name, "NCCL_", 5) || !strcmp(name, "NCCL_CONF_FILE"))
		return v;
	return ng_ncclconf_get(name);
}

const char *ng_envplugin_get(const char *name)
{
	return ng_envplugin_asked() ? env_view(name, env_or_conf) : env_or_conf(name);
}

NG_EXPORT ng_env_v1_t ncclEnvPlugin_v1 = {
	.name = "ncclguard",
	.init = env_init,
	.finalize = env_finalize,
	.getEnv = env_get,
};

NG_EXPORT ng_env_v2_t ncclEnvPlugin_v2 = {
	.name = "ncclguard",
	.init = env_init_v2,
	.finalize = env_finalize,
	.getEnv = env_get,
};
