/*
 * libncclguard-tp.so: the `ncclguard` LTTng-UST provider and the table of
 * functions the shim calls through (tp_api.h).  The tracepoint definitions
 * and the probes live together here, so the library needs nothing from its
 * loader but a dlopen: liblttng-ust's constructor registers the process
 * with the session daemon (waiting up to LTTNG_UST_REGISTER_TIMEOUT for the
 * session's channels), then our constructor registers the probes, which
 * attaches them to any session already recording (lttng_ust_probe_register
 * fixes up pending enablers), so a provider opened mid-run records from its
 * first event.  Never dlclose this library (linked -z nodelete): LTTng-UST
 * does not support unloading a provider.  Only `ncclguard_tp_ops` is
 * exported (tp.map).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "ncclguard_tp.h"
#include "job.h"

/* The `job` field of every event.  A fork keeps it, as it keeps its job. */
uint64_t ncclguard_tp_job;

/* Before any event: a loader other than the shim (a test, a benchmark)
 * then records its environment's job as the shim would. */
__attribute__((constructor))
static void job_from_env(void)
{
	__atomic_store_n(&ncclguard_tp_job, ng_job_tag(ng_job_id_env()), __ATOMIC_RELAXED);
}

static void op_set_job(uint64_t tag)
{
	__atomic_store_n(&ncclguard_tp_job, tag, __ATOMIC_RELAXED);
}

#define NG_TP_OP(name, type)						\
	static void op_##name(const struct type *e)			\
	{								\
		lttng_ust_tracepoint(ncclguard, name, e);		\
	}

NG_TP_OP(process_info, ng_ev_process_info)
NG_TP_OP(comm_init_begin, ng_ev_comm_init)
NG_TP_OP(comm_init_end, ng_ev_comm_init)
NG_TP_OP(comm_end, ng_ev_comm_end)
NG_TP_OP(coll_enqueue, ng_ev_coll_enqueue)
NG_TP_OP(coll_complete, ng_ev_coll_complete)
NG_TP_OP(coll_algo, ng_ev_coll_algo)
NG_TP_OP(timeout, ng_ev_timeout)
NG_TP_OP(policy, ng_ev_policy)
NG_TP_OP(inject, ng_ev_inject)
NG_TP_OP(callsite, ng_ev_callsite)

__attribute__((visibility("default")))
const struct ng_tp_ops ncclguard_tp_ops = {
	.abi = NG_TP_ABI,
	.process_info = op_process_info,
	.comm_init_begin = op_comm_init_begin,
	.comm_init_end = op_comm_init_end,
	.comm_end = op_comm_end,
	.coll_enqueue = op_coll_enqueue,
	.coll_complete = op_coll_complete,
	.timeout = op_timeout,
	.policy = op_policy,
	.inject = op_inject,
	.callsite = op_callsite,
	/* What lttng_ust_tracepoint_enabled() reads. */
	.coll_state = {
		&lttng_ust_tracepoint_ncclguard___coll_enqueue.state,
		&lttng_ust_tracepoint_ncclguard___coll_complete.state,
	},
	.set_job = op_set_job,
	.coll_algo = op_coll_algo,
};
