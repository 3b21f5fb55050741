/*
 * preload/health: the host's hardware sampler.  One process of a job per
 * host samples (health.c says which), in a thread of its own and never on
 * a call: NVML's view of every GPU of the host and the NICs' sysfs
 * counters, at its start, its end, a watchdog timeout and every
 * NCCLGUARD_HEALTH_INTERVAL seconds, writing what changed as hw_* events
 * (common/hw_counters.def lists the counters).
 */
#ifndef NCCLGUARD_HEALTH_H
#define NCCLGUARD_HEALTH_H

/* At the first NCCL call, once the provider is loaded: starts the sampler
 * if this process is its host's. */
void ng_health_start(void);
/* A watchdog timeout: sample now (no-op where no sampler runs). */
void ng_health_kick(void);
/* The last sample, before the process ends (at exit, and before the
 * watchdog's _exit): waits for it at most 2 s.  No-op where no sampler
 * runs. */
void ng_health_stop(void);
/* In a fork's child: the sampler stays the parent's. */
void ng_health_reset_after_fork(void);

#endif
