/*
 * policy/: the site policy (docs/design.md, "Policy in the process"), as
 * rules on data.
 *
 *   parse.c      INI file -> struct ng_policy, errors as "FILE:LINE: ...";
 *                SHA-256 of the file for process_info
 *   trust.c      whether a file may steer a process, on descriptors
 *                (trust.h); the policy read through it
 *   (common/iflist.c: NCCL's interface-list syntax; which interfaces and
 *                IB devices a NCCL_SOCKET_IFNAME / NCCL_IB_HCA value selects)
 *   hostprobe.c  the one seam to sysfs, procfs and getifaddrs
 *                (NCCLGUARD_SYSROOT presents a fake host to tests)
 *   pin.c        physical GPU index -> PCI bus id -> NUMA node and cpus
 *   plan.c       policy + environment + host -> list of decisions
 *   ncclconf.c   NCCL's configuration files, read as NCCL applies them
 *
 * Both the shim (preload/enforce applies a plan: logs, traces, exits 3)
 * and the `ncclguard` command (policy check) link it, so nothing here
 * logs, traces or reads the shim's configuration: errors come back as
 * strings.
 */
#ifndef NCCLGUARD_POLICY_H
#define NCCLGUARD_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "iflist.h"	/* NCCL's interface-list syntax, shared with the analyzer */

/* ---- ncclconf.c: NCCL's configuration files, read, never applied ----- */
/* The value NCCL's files give `name`, NCCL_CONF_FILE being conf_file (NULL:
 * unset, so ~/.nccl.conf), and the file it comes from in *file; NULL (and
 * *file NULL) where no file sets it.  Each set of files is read once. */
const char *ng_ncclconf_lookup(const char *conf_file, const char *name, const char **file);
/* The same for the NCCL_CONF_FILE NCCL reads: the environment's, until
 * ng_ncclconf_fix() says NCCL is about to start and read it. */
const char *ng_ncclconf_get(const char *name);
const char *ng_ncclconf_file(void);	/* that NCCL_CONF_FILE (NULL: unset) */
void ng_ncclconf_fix(void);
/* 1 and the value (NULL: unset) once fixed, else 0. */
int ng_ncclconf_fixed(const char **conf_file);
int ng_ncclconf_count(const char *conf_file);	/* names the files set */
const char *ng_ncclconf_name(const char *conf_file, int i);
/* For tests: forget what was read, and read `etc` (NULL: /etc/nccl.conf)
 * in place of /etc/nccl.conf from now on. */
void ng_ncclconf_reset(const char *etc);

/* ---- parse.c --------------------------------------------------------- */
enum ng_penv_action { NG_PENV_ALLOW = 0, NG_PENV_ENFORCE, NG_PENV_DEFAULT, NG_PENV_FORBID };
enum ng_ppin { NG_PIN_NONE = 0, NG_PIN_LOCAL_RANK };
/* Same order as enum ng_action (config.c): warn, abort, exit. */
enum ng_ptimeout_action { NG_PTO_UNSET = -1, NG_PTO_WARN = 0, NG_PTO_ABORT, NG_PTO_EXIT };

struct ng_penv {
	char *name;
	enum ng_penv_action action;
	char *value;			/* enforce, default; NULL otherwise */
	int line;
};

#define NG_POLICY_MAX_GPUS 64
#define NG_POLICY_MAX_ERRORS 32

struct ng_perror {
	int line;			/* 0: the file as a whole */
	char msg[240];
};

struct ng_policy {
	char *path;			/* as given */
	char digest[65];		/* SHA-256 of the bytes, hex */
	/* [env] */
	struct ng_penv *env;
	int nenv;
	int strict, strict_line;
	/* [network] */
	int require_up, require_up_line;
	char *deny;			/* NCCL list syntax, NULL if none */
	int deny_line;
	/* [devices] */
	enum ng_ppin pin;
	int pin_line;
	int gpus[NG_POLICY_MAX_GPUS];
	int ngpus, gpus_line;
	int numa, numa_line;
	/* [timeouts]: 0 / NG_PTO_UNSET when not set; HUGE_VAL: never
	 * (seconds.h) */
	double init_s, collective_s;
	enum ng_ptimeout_action timeout_action;
	int init_line, collective_line, timeout_action_line;
	/* [violation] */
	int fail;			/* 1 (default): exit 3; 0: warn */
	int fail_line;
	int enforces;			/* anything beyond `allow` (trust check) */
	/* Problems, in line order; the file is valid when nerr == 0. */
	struct ng_perror err[NG_POLICY_MAX_ERRORS];
	int nerr;
	int more_errors;		/* errors past NG_POLICY_MAX_ERRORS */
};

/* Largest policy file read (a site policy is a few hundred bytes). */
#define NG_POLICY_MAX_BYTES (1 << 20)

/* Parse an open descriptor (closed here) / a buffer named `name` into *p
 * (zeroed first).  Returns 0 when valid, -1 otherwise (p->err says why).
 * ng_policy_free in both cases.  A file by its path: ng_policy_load
 * (trust.h), which reads it through the trust walk. */
int ng_policy_parse_fd(int fd, const char *name, struct ng_policy *p);
/* *p as a file that could not be read, for `why`. */
void ng_policy_unreadable(struct ng_policy *p, const char *name, const char *why);
int ng_policy_parse_buffer(const char *name, const char *buf, size_t len,
			   struct ng_policy *p);
void ng_policy_free(struct ng_policy *p);
/* "FILE:LINE: message" for error i. */
void ng_policy_format_error(const struct ng_policy *p, int i, char *buf, size_t len);
const struct ng_penv *ng_policy_env(const struct ng_policy *p, const char *name);
/* Whether [env] has anything for the shim's env plugin to serve NCCL
 * (2.28.7+): strict, or an entry other than allow. */
int ng_policy_serves_env(const struct ng_policy *p);
const char *ng_penv_action_name(enum ng_penv_action a);
const char *ng_ptimeout_action_name(enum ng_ptimeout_action a);

/* SHA-256 (FIPS 180-4) of a buffer, as 64 hex digits and a NUL. */
void ng_sha256_hex(const void *data, size_t len, char out[65]);

/* ---- hostprobe.c: the only code that reads the host ------------------ */
struct ng_netif {
	char name[NG_IFNAME_LEN];
	int up, running, loopback;
	int has_addr;			/* IPv4 or non-loopback IPv6: NCCL considers it */
};
struct ng_ibport {
	char dev[NG_IFNAME_LEN];
	int port;
	int active;			/* state "4: ACTIVE" */
};
/* Root prefixed to every sysfs/procfs path: "" on a real host, else the
 * fake host's folder (NCCLGUARD_SYSROOT, or set by tests). */
const char *ng_host_root(void);
void ng_host_set_root(const char *dir);		/* NULL: from the environment */
/* Read a small file under the root (path like "/sys/..."); trailing
 * newline stripped.  Returns length or -1. */
int ng_host_read(const char *path, char *buf, size_t len);
/* Interfaces: getifaddrs on a real host; under a fake root the folders of
 * /sys/class/net with their `flags` (hex, IFF_*) and an optional
 * `ncclguard_addr` file (0: no address).  Returns count or -1. */
int ng_host_netifs(struct ng_netif *out, int max);
/* InfiniBand ports from /sys/class/infiniband/DEV/ports/N/state. */
int ng_host_ibports(struct ng_ibport *out, int max);
/* NVIDIA GPUs' PCI bus ids (0000:18:00.0) in PCI order, as CUDA numbers
 * them with CUDA_DEVICE_ORDER=PCI_BUS_ID: /proc/driver/nvidia/gpus/, else
 * /sys/bus/pci/devices with vendor 0x10de and a display class. */
#define NG_BUSID_LEN 32
int ng_host_gpus(char (*busids)[NG_BUSID_LEN], int max);

/* ---- pin.c ----------------------------------------------------------- */
struct ng_gpu_place {
	int gpu;			/* physical index */
	int found;			/* the host shows it */
	char busid[NG_BUSID_LEN];
	int numa_node;			/* -1: unknown */
	/* local_cpulist, "" when unknown: the odd cpus of NG_CPU_WORDS * 64
	 * are 2.4 KB ("1,3,5,..."), hence the size; longer is unknown. */
	char cpulist[4096];
};
/* Where physical GPU `gpu` is: bus id, NUMA node, local cpus. */
void ng_pin_locate(int gpu, struct ng_gpu_place *out);
/* "0-3,8" -> bitmap of up to `max` cpus (bits set in mask); -1 if malformed. */
int ng_cpulist_parse(const char *s, uint64_t *mask, int max);
/* Bitmap -> "0-3,8". */
void ng_cpulist_format(const uint64_t *mask, int max, char *buf, size_t len);

/* ---- plan.c: what the policy does to one process --------------------- */
/* NG_SET_WITHHELD: unset for NCCL through the shim's env plugin, which
 * NCCL asks; the environment is left as it is. */
enum ng_dec_set { NG_SET_NONE = 0, NG_SET_ENV, NG_SET_UNSET, NG_SET_WITHHELD };
/* NG_DEC_WARN_ONCE: a warning the shim logs once per process, however
 * many plans repeat it (each recheck keeps it in force). */
enum ng_dec_level { NG_DEC_INFO = 0, NG_DEC_WARN, NG_DEC_VIOLATION, NG_DEC_WARN_ONCE };
struct ng_decision {
	char *key;			/* NCCL_SOCKET_IFNAME, timeouts.init, ... */
	const char *action;		/* enforce, default, forbid, allow, strict, check, pin, numa, timeout */
	char *user;			/* what the user had ("" for nothing) */
	char *effective;		/* what the process gets */
	enum ng_dec_set set;
	enum ng_dec_level level;
	char *msg;			/* one line: what, why, and for a violation the fix */
};
#define NG_CPU_WORDS 16			/* 1024 cpus */
struct ng_plan {
	struct ng_decision *d;
	int n, cap;
	int violations;
	/* Pinning. */
	int pinned;			/* CUDA_VISIBLE_DEVICES names one GPU */
	int gpu;			/* its physical index */
	struct ng_gpu_place place;
	int affinity;			/* cpus below is to be applied */
	uint64_t cpus[NG_CPU_WORDS];
	/* Timeouts, -1 / NG_PTO_UNSET: untouched. */
	double init_s, collective_s;
	enum ng_ptimeout_action timeout_action;
};
struct ng_plan_input {
	const char *(*getenv)(const char *name);	/* the process's environment */
	char **envp;					/* for strict: NULL-terminated */
	int local_rank;					/* -1: unknown */
	const uint64_t *allowed_cpus;			/* current affinity, NULL: any */
	int recheck;					/* later check: no affinity */
	const char *where;				/* for messages at a recheck */
	const char *own_env_plugin;	/* our NCCL_ENV_PLUGIN value: strict keeps it */
	/* NCCL's configuration files (ncclconf.c), which NCCL applies where
	 * the environment has no value, for a value of NCCL_CONF_FILE: a
	 * name's value and its file, and the names they set.  NULL: none. */
	const char *(*conf)(const char *conf_file, const char *name, const char **file);
	/* The NCCL_CONF_FILE NCCL read when it started (conf_fixed = 1; NULL:
	 * unset); before that, the environment's after the plan counts. */
	int conf_fixed;
	const char *conf_fixed_file;
	/* NCCL asks the shim's env plugin for every variable (the shim's
	 * plugin installed, NCCL 2.28.7+): a file's value can be withheld. */
	int plugin_asked;
	int (*conf_count)(const char *conf_file);
	const char *(*conf_name)(const char *conf_file, int i);
};
int ng_plan_build(const struct ng_policy *p, const struct ng_plan_input *in,
		  struct ng_plan *out);
void ng_plan_free(struct ng_plan *plan);
/* The value a plan leaves for `name`: from its decisions, else the input. */
const char *ng_plan_getenv(const struct ng_plan *plan, const struct ng_plan_input *in,
			   const char *name);

#endif
