/*
 * The boundary between the shim (preload/) and its tracepoint provider
 * (build/lib/libncclguard-tp.so).  The shim never links liblttng-ust: it
 * dlopens the provider at the first NCCL call, looks up `ncclguard_tp_ops`
 * and calls through it.  Events are passed as pointers to these structs
 * because a tracepoint takes at most 10 arguments.
 *
 * All *_ns times are CLOCK_MONOTONIC nanoseconds, the clock LTTng-UST
 * stamps events with, so the analyzer maps them to the trace clock by the
 * same offset it applies to event timestamps.  Where a clock plugin
 * replaces LTTng's clock, the provider moves them onto it (tp.c).
 *
 * Every event also carries `job`, the tag of the process's job id
 * (common/job.h, 0: none): it is no member of the structs below but one
 * value per process, set through set_job before the first event, which
 * the session's filter `job == TAG` selects a job by.
 */
#ifndef NCCLGUARD_TP_API_H
#define NCCLGUARD_TP_API_H

#include <stdint.h>

/* 4: set_job, the `job` field of every event, process_info's job_id.
 * 5: coll_algo (NCCL's profiler plugin: algorithm, protocol, channels).
 * 6: process_info's timing_off.
 * 7: hw_device, hw_change, hw_sample (the host's hardware sampler).
 * 8: fingerprint and process_info's verify_every (output verification).
 * 9: heartbeat (a waiting rank's position).
 * 10: api_census (the library's functions ncclguard does not know),
 *     comm_state (suspend, resume), comm_init's ident (grow) and
 *     signal_wait (ncclWaitSignal's descriptors). */
#define NG_TP_ABI 10

/* struct ng_ev_<event or layout>, one member per field of the event
 * (common/events.def). */
#define NG_EV_F(kind, ctype, name, dec) ctype name;
#define NG_EV(name, fields) struct ng_ev_##name { fields };
#define NG_EV_CLASS(layout, fields) struct ng_ev_##layout { fields };
#include "events.def"
#undef NG_EV_F

/* One op per event of events.def (tp.c makes them), in the order the
 * ABI gained them: a new event's is appended. */
struct ng_tp_ops {
	int abi;
	void (*process_info)(const struct ng_ev_process_info *);
	void (*comm_init_begin)(const struct ng_ev_comm_init *);
	void (*comm_init_end)(const struct ng_ev_comm_init *);
	void (*comm_end)(const struct ng_ev_comm_end *);
	void (*coll_enqueue)(const struct ng_ev_coll_enqueue *);
	void (*coll_complete)(const struct ng_ev_coll_complete *);
	void (*timeout)(const struct ng_ev_timeout *);
	void (*policy)(const struct ng_ev_policy *);
	void (*inject)(const struct ng_ev_inject *);
	void (*callsite)(const struct ng_ev_callsite *);
	/* The enabled state of coll_enqueue and coll_complete (nonzero while
	 * a session records them), read by the shim on every call: a load,
	 * not a call into this library. */
	const int *coll_state[2];
	/* The job tag stamped on every later event of this process (and of
	 * its forks).  The provider starts with its environment's tag, so
	 * a loader that never calls this still records its job. */
	void (*set_job)(uint64_t tag);
	void (*coll_algo)(const struct ng_ev_coll_algo *);
	void (*hw_device)(const struct ng_ev_hw_device *);
	void (*hw_change)(const struct ng_ev_hw_change *);
	void (*hw_sample)(const struct ng_ev_hw_sample *);
	void (*fingerprint)(const struct ng_ev_fingerprint *);
	void (*heartbeat)(const struct ng_ev_heartbeat *);
	void (*api_census)(const struct ng_ev_api_census *);
	void (*comm_state)(const struct ng_ev_comm_state *);
	void (*signal_wait)(const struct ng_ev_signal_wait *);
};

/* Exported by libncclguard-tp.so. */
extern const struct ng_tp_ops ncclguard_tp_ops;

#endif
