/*
 * preload/enforce: the site policy applied in this process (docs/design.md,
 * "Policy in the process"; the rules themselves are policy/'s), and NCCL's
 * env plugin, through which the enforced values reach NCCL.
 */
#ifndef NCCLGUARD_ENFORCE_H
#define NCCLGUARD_ENFORCE_H

struct ng_policy;

/* ---- apply.c --------------------------------------------------------- */
/* Constructor: load NCCLGUARD_POLICY or /etc/ncclguard.conf, apply it
 * (environment, pinning, affinity), override ng_cfg's timeouts.  On a
 * violation with action fail it prints the fix and _exit(3)s. */
void ng_policy_init(void);
/* Before ncclGetUniqueId and every init or split: the program may have
 * changed its environment since. `where` names the call. */
void ng_policy_recheck(const char *where);
/* A cudaSetDevice by the program (reported if outside the pin); returns
 * the device to pass on. */
int ng_policy_set_device(int dev);
/* For process_info. */
const char *ng_policy_path(void);
const char *ng_policy_digest(void);

/* ---- envplugin.c ----------------------------------------------------- */
/* Serve `p`'s [env] through ncclEnvPlugin_v1 (the shim owns p). */
void ng_envplugin_set_policy(const struct ng_policy *p);
/* NCCL_ENV_PLUGIN names the shim (1) or not (0). */
void ng_envplugin_installed(int yes);
/* Whether NCCL asks the shim's plugin: installed, and NCCL 2.28.7 or
 * later (taken for granted while NCCL is not loaded). */
int ng_envplugin_asked(void);
/* The value NCCL reads for an NCCL_* variable: the policy's view over the
 * environment and NCCL's configuration files (ncclconf.c). */
const char *ng_envplugin_get(const char *name);

#endif
