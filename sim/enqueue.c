/* The collective and point-to-point calls: each is checked as NCCL
 * checks it, becomes an op (coll.c) and is launched on its stream now, or
 * kept for the group's end (group.c). */
#include <stdlib.h>
#include <string.h>

#include "libnccl.h"

static ncclResult_t launch(struct sim_op *op)
{
	void *group = NULL;
	ncclResult_t r;

	sim_op_ticket(op);
	sim_prof_launch_begin(op, 1, &group);
	r = sim_launch(op, 1, op->stream);
	sim_prof_launch_end(op, 1, &group);
	return r;
}

/* The held call of a nonblocking comm, at the program's next poll. */
static ncclResult_t launch_held(struct ncclComm *c)
{
	struct sim_op *op = c->held;
	ncclResult_t r;

	c->held = NULL;
	r = launch(op);
	free(op);
	return r;
}

static int hold_calls(const struct ncclComm *c)
{
	static int hold = -1;	/* the environment's, read once */
	int h;

	if (c->blocking)
		return 0;
	h = __atomic_load_n(&hold, __ATOMIC_RELAXED);
	if (h < 0) {
		const char *v = getenv("NCCLSIM_NONBLOCKING_CALL_HOLD");

		h = v && !strcmp(v, "1");
		__atomic_store_n(&hold, h, __ATOMIC_RELAXED);
	}
	return h;
}

/* Check a call as NCCL does, then queue it (or keep it for the group). */
static ncclResult_t enqueue(struct sim_op *op)
{
	struct ncclComm *c = op->comm;
	const char *what = sim_kind_name(op->kind);
	size_t sz = sim_type_size(op->type);
	int root = op->root, me, need_send, need_recv;
	ncclResult_t r;

	if (!sim_comm_ok(c))
		return sim_fail(NULL, ncclInvalidArgument, "%s: invalid communicator", what);
	if (__atomic_load_n(&c->revoked, __ATOMIC_ACQUIRE))
		return sim_fail(c, ncclRemoteError, "%s: communicator revoked", what);
	if (!c->rv || __atomic_load_n(&c->async, __ATOMIC_ACQUIRE) == ncclInProgress)
		return sim_fail(c, ncclInvalidUsage, "%s: communicator not ready", what);
	if (__atomic_load_n(&c->broken, __ATOMIC_ACQUIRE))
		return sim_fail(c, ncclInvalidUsage, "%s: communicator failed earlier", what);
	/* NCCL does not check it: its kernel would touch the memory that
	 * ncclCommSuspend released.  A GPU fails late and obscurely; the
	 * backend fails at once, and says why. */
	if (__atomic_load_n(&c->suspended, __ATOMIC_ACQUIRE))
		return sim_fail(c, ncclInternalError,
				"%s on a suspended communicator: it touched memory that "
				"ncclCommSuspend released (call ncclCommResume first)", what);
	if (!sz)
		return sim_fail(c, ncclInvalidArgument, "%s: invalid datatype %d", what, (int)op->type);
	if (root < 0 || root >= c->nranks)
		return sim_fail(c, ncclInvalidArgument, "%s: invalid root/peer %d", what, root);
	if (op->kind == SIM_ALLREDUCE || op->kind == SIM_REDUCE || op->kind == SIM_REDUCESCATTER) {
		int i = (int)op->redop - ncclNumOps;

		if (!sim_type_reducible(op->type))
			return sim_fail(c, ncclInvalidArgument, "%s: datatype %d not supported here", what,
				    (int)op->type);
		if ((int)op->redop < 0 || (i >= 0 && (i >= SIM_MAX_PREMUL || !c->premul[i].used ||
						       c->premul[i].type != op->type)))
			return sim_fail(c, ncclInvalidArgument, "%s: invalid reduction op %d", what,
				    (int)op->redop);
		if (i >= 0) {
			op->have_scalar = 1;
			memcpy(op->scalar, c->premul[i].value, sz);
			if (c->premul[i].residence == ncclScalarDevice)
				op->scalar_ptr = c->premul[i].ptr;
			op->redop = ncclSum;
		}
	}
	if (!ncclsim_stream_valid(op->stream))
		return sim_fail(c, ncclInvalidArgument, "%s: invalid stream", what);
	/* Buffers this rank really touches must exist. */
	me = c->rank;
	switch (op->kind) {
	case SIM_BROADCAST: case SIM_SCATTER:
		need_send = me == root;
		need_recv = 1;
		break;
	case SIM_REDUCE: case SIM_GATHER:
		need_send = 1;
		need_recv = me == root;
		break;
	case SIM_SEND: case SIM_PUTSIGNAL:
		need_send = 1;
		need_recv = 0;
		break;
	case SIM_RECV:
		need_send = 0;
		need_recv = 1;
		break;
	case SIM_SIGNAL: case SIM_WAITSIGNAL:
		need_send = need_recv = 0;
		break;
	default:
		need_send = need_recv = 1;
		break;
	}
	if (op->count && ((need_send && !op->sendbuf) || (need_recv && !op->recvbuf)))
		return sim_fail(c, ncclInvalidArgument, "%s: NULL buffer", what);
	op->busbytes = sim_busbytes(op->kind, op->count, sz, c->nranks);

	sim_comm_ref(c);
	if (sim_group_depth()) {
		r = sim_group_add(op);
		if (r != ncclSuccess) {
			sim_comm_unref(c);
			return sim_fail(c, r, "%s: out of memory", what);
		}
		return ncclSuccess;
	}
	if (hold_calls(c)) {
		c->held = malloc(sizeof(*op));
		if (!c->held) {
			sim_comm_unref(c);
			return sim_fail(c, ncclSystemError, "%s: out of memory", what);
		}
		*c->held = *op;
		c->launch_held = launch_held;
		__atomic_store_n(&c->async, ncclInProgress, __ATOMIC_RELEASE);
		return ncclInProgress;
	}
	r = launch(op);
	return r == ncclSuccess ? r : sim_fail(c, r, "%s: launch failed", what);
}

static ncclResult_t coll(enum sim_kind kind, const void *send, void *recv, size_t count,
			 ncclDataType_t type, ncclRedOp_t redop, int root, ncclComm_t comm,
			 cudaStream_t stream)
{
	struct sim_op op;

	memset(&op, 0, sizeof(op));
	op.kind = kind;
	op.sendbuf = send;
	op.recvbuf = recv;
	op.count = count;
	op.type = type;
	op.redop = redop;
	op.root = root;
	op.comm = comm;
	op.stream = stream;
	return enqueue(&op);
}

ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			    cudaStream_t stream)
{
	return coll(SIM_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream);
}

ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
				ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				cudaStream_t stream)
{
	return coll(SIM_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}

ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
			ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_BROADCAST, buff, buff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
			 cudaStream_t stream)
{
	return coll(SIM_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm, stream);
}

ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_GATHER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count,
			  ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
		       ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_SEND, sendbuff, NULL, count, datatype, ncclSum, peer, comm, stream);
}

ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
		       ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_RECV, NULL, recvbuff, count, datatype, ncclSum, peer, comm, stream);
}

/* ---- one-sided (2.29): puts, signals and waits ------------------------------
 *
 * A put or a signal is a message on the channel to its peer, a wait one
 * receive per signal it waits for: a wait whose signal never comes hangs
 * as a receive without its send does.  The channels are the send/recv
 * ones, so signals to a peer are ordered with its sends; sigIdx and ctx
 * are checked, not kept apart (a wait counts its peer's signals in
 * order).  A put's data is carried and dropped: the backend's windows
 * have no memory of their own (register.c). */

ncclResult_t pncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
			    ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
			    unsigned int flags, ncclComm_t comm, cudaStream_t stream)
{
	ncclResult_t r = sim_need_version(22900, "ncclPutSignal");

	(void)peerWinOffset;
	(void)flags;
	if (r != ncclSuccess)
		return r;
	if (!peerWin || sigIdx < 0 || ctx < 0)
		return sim_fail(comm, ncclInvalidArgument, "PutSignal: no window, or sigIdx %d / ctx %d",
				sigIdx, ctx);
	return coll(SIM_PUTSIGNAL, localbuff, NULL, count, datatype, ncclSum, peer, comm, stream);
}

ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
			 cudaStream_t stream)
{
	ncclResult_t r = sim_need_version(22900, "ncclSignal");

	(void)flags;
	if (r != ncclSuccess)
		return r;
	if (sigIdx < 0 || ctx < 0)
		return sim_fail(comm, ncclInvalidArgument, "Signal: sigIdx %d / ctx %d", sigIdx, ctx);
	return coll(SIM_SIGNAL, NULL, NULL, 0, ncclUint8, ncclSum, peer, comm, stream);
}

#define SIM_MAX_WAIT_OPS 1024

ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm,
			     cudaStream_t stream)
{
	ncclResult_t r = sim_need_version(22900, "ncclWaitSignal");
	int nops = 0, grouped = 0;

	if (r != ncclSuccess)
		return r;
	if (nDesc < 1 || !signalDescs)
		return sim_fail(comm, ncclInvalidArgument, "WaitSignal: nDesc %d", nDesc);
	for (int i = 0; i < nDesc; i++) {
		if (signalDescs[i].opCnt < 0 || signalDescs[i].sigIdx < 0 || signalDescs[i].ctx < 0)
			return sim_fail(comm, ncclInvalidArgument, "WaitSignal: descriptor %d", i);
		nops += signalDescs[i].opCnt;
	}
	if (nops > SIM_MAX_WAIT_OPS)
		return sim_fail(comm, ncclInvalidArgument, "WaitSignal: %d signals (at most %d here)",
				nops, SIM_MAX_WAIT_OPS);
	/* The receives of one wait launch together, as a group's. */
	if (nops > 1) {
		r = pncclGroupStart();
		if (r != ncclSuccess)
			return r;
		grouped = 1;
	}
	for (int i = 0; i < nDesc && r == ncclSuccess; i++)
		for (int k = 0; k < signalDescs[i].opCnt && r == ncclSuccess; k++)
			r = coll(SIM_WAITSIGNAL, NULL, NULL, 0, ncclUint8, ncclSum,
				 signalDescs[i].peer, comm, stream);
	if (grouped) {
		ncclResult_t e;

		if (r != ncclSuccess)
			sim_group_fail(r);
		e = pncclGroupEnd();
		if (r == ncclSuccess)
			r = e;
	}
	return r;
}
