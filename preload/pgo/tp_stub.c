/*
 * The provider the profile-feedback training loads instead of
 * libncclguard-tp.so: coll_enqueue and coll_complete read as enabled, and
 * every event goes nowhere.  The shim then runs its recording path (TSC
 * stamps, the per-thread rings, the watchdog writing events) with no
 * LTTng session, no session daemon and nothing else of the host's, so a
 * build neither joins another job's trace nor starts or stops a daemon.
 */
#include "tp_api.h"

static const int enabled = 1;

#define NG_STUB(name, type) \
	static void stub_##name(const struct type *e) { (void)e; }

NG_STUB(process_info, ng_ev_process_info)
NG_STUB(comm_init, ng_ev_comm_init)
NG_STUB(comm_end, ng_ev_comm_end)
NG_STUB(coll_enqueue, ng_ev_coll_enqueue)
NG_STUB(coll_complete, ng_ev_coll_complete)
NG_STUB(timeout, ng_ev_timeout)
NG_STUB(policy, ng_ev_policy)
NG_STUB(inject, ng_ev_inject)
NG_STUB(callsite, ng_ev_callsite)

__attribute__((visibility("default")))
const struct ng_tp_ops ncclguard_tp_ops = {
	.abi = NG_TP_ABI,
	.process_info = stub_process_info,
	.comm_init_begin = stub_comm_init,
	.comm_init_end = stub_comm_init,
	.comm_end = stub_comm_end,
	.coll_enqueue = stub_coll_enqueue,
	.coll_complete = stub_coll_complete,
	.timeout = stub_timeout,
	.policy = stub_policy,
	.inject = stub_inject,
	.callsite = stub_callsite,
	.coll_state = { &enabled, &enabled },
};
