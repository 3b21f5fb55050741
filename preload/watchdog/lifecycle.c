/*
 * What the watchdog layer does when a communicator comes into being: its
 * record in the registry (sequence numbers, timing pool, the init the
 * watchdog times while it is in progress), and its comm_init events.
 */
#include "watchdog.h"

void ng_emit_init(int begin, const struct ng_ev_comm_init *ev)
{
	if (begin)
		ng_heartbeat_init_begin(ev->comm_hash, ev->nranks, ev->rank);
	else
		ng_heartbeat_init_end(ev->comm_hash);
	if (!ng_hot.tp)
		return;
	if (begin)
		ng_hot.tp->comm_init_begin(ev);
	else
		ng_hot.tp->comm_init_end(ev);
}

void ng_comm_created(ncclComm_t h, uint64_t hash, uint64_t parent, int nranks,
			 int rank, int blocking, ncclResult_t r,
			 struct ng_ev_comm_init *ev, uint64_t t0)
{
	struct ng_comm *c;
	int dev = -1;

	if (r == ncclSuccess && ng_real.ncclCommCuDevice)
		ng_real.ncclCommCuDevice(h, &dev);
	if (dev < 0 && !ng_resolve_cuda() && ng_cuda.cudaGetDevice)
		ng_cuda.cudaGetDevice(&dev);
	if (r == ncclSuccess || r == ncclInProgress) {
		c = ng_comm_add(h, hash, parent, nranks, rank, dev, blocking);
		if (c) {
			ng_debug("comm %016llx: rank %d of %d on device %d (%s)",
				 (unsigned long long)hash, rank, nranks, dev, ev->kind);
			ng_rank_from_comm(rank, nranks);
			ng_timing_comm_ready(c);
			ng_verify_comm_ready(c);
			ev->comm_index = c->index;
			if (r == ncclInProgress) {
				c->init_kind = ev->kind;
				__atomic_store_n(&c->init_pending_ns, t0, __ATOMIC_RELEASE);
			}
		}
	}
	ev->cuda_dev = dev;
	ev->result = r;
	ev->duration_ns = ng_now_ns() - t0;
	ng_emit_init(0, ev);
	ng_process_info_maybe();
}
