/*
 * The life of one collective or point-to-point call: sequence number,
 * injection, GPU timing, host-side watch and the coll_enqueue event.  The
 * common case is coll_fast.h, inlined into every wrapper: no locks, no
 * allocation, no CUDA call beyond the event records of a sampled call
 * (and a capture query once the program has captured a graph at all).
 * Here are its rare cases.
 */
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "coll_fast.h"

void ng_missing(int fn)
{
	ng_warn_once("an NCCL entry point is missing from the loaded library "
		     "(first: %s); such calls fail", ng_fn_name[fn]);
}

/*
 * The rare cases, out of line and in .text.unlikely: every line of code
 * and data the common case touches is a miss after NCCL's 5 us of host
 * code (perf spreads the shim's samples over the first instruction of
 * each line).  Only these may change errno: each keeps it.
 */
NG_COLD int ng_coll_setup(void)
{
	int e = errno;

	if (!__atomic_load_n(&ng_hot.initialized, __ATOMIC_ACQUIRE))
		ng_init();
	if (!ng_cfg.disabled)
		ng_first_call();
	errno = e;
	return !ng_cfg.disabled;
}

NG_COLD int ng_coll_capturing(cudaStream_t s)
{
	enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
	int e = errno, r = 0;

	if (ng_cuda.cudaStreamIsCapturing &&
	    ng_cuda.cudaStreamIsCapturing(s, &st) == cudaSuccess)
		r = st != cudaStreamCaptureStatusNone;
	errno = e;
	return r;
}

NG_COLD const char *ng_coll_callsite(const void *ret)
{
	int e = errno;
	const char *site = ng_callsite(ret);

	errno = e;
	return site;
}

/* 1: the call is not forwarded (an injected drop or error). */
NG_COLD int ng_coll_inject(struct ng_call *call)
{
	uint64_t seq = call->seq ? call->seq : call->p2p_seq;
	int e = errno, inj;

	inj = ng_inject_check(call->fn, ng_fn_op[call->fn], call->comm, seq, &call->result);
	errno = e;
	if (inj == NG_INJ_DROP || inj == NG_INJ_ERROR) {
		ng_coll_end(call, call->result);
		return 1;
	}
	/* An injected delay makes a slow rank: it arrives late (by the clock
	 * itself: the published time may predate a short delay). */
	if (inj == NG_INJ_DELAY) {
		call->enter_ns = ng_now_coarse_ns();
		if (call->trace) {
			call->rec_enter = ng_stamp(call->ticks);
			call->coarse = 0;
		}
	}
	return 0;
}

NG_COLD void ng_coll_timing_start(struct ng_call *call)
{
	int e = errno;

	/* Its host span is recorded with its GPU time: both ends stamped. */
	if (call->trace && call->coarse) {
		call->rec_enter = ng_stamp(call->ticks);
		call->coarse = 0;
	}
	ng_timing_before(call);
	errno = e;
}

NG_COLD void ng_coll_timing_end(struct ng_call *call, ncclResult_t r)
{
	int e = errno;

	if (ng_group_depth)
		ng_timing_group_member(call, r);
	else
		ng_timing_after(call, r);
	errno = e;
}

/* No ring for this thread: write the event here. */
NG_COLD void ng_coll_record_inline(const struct ng_call *call)
{
	struct ng_enq_rec rec;
	int e = errno;

	ng_enq_fill(&rec, call);
	ng_trace_enqueue(&rec);
	errno = e;
}

NG_COLD void ng_coll_record_callsite(const struct ng_call *call)
{
	struct ng_ev_callsite ev = {
		.comm_hash = call->comm->hash,
		.seq = call->seq ? call->seq : call->p2p_seq,
		.frames = call->site,
	};
	int e = errno;

	ng_hot.tp->callsite(&ev);
	errno = e;
}

/* A call the verification mask picked (or any, while a corruption is
 * armed), after its end: verify.c decides. */
NG_COLD void ng_coll_verify(const struct ng_call *call, void *out, int redop, ncclResult_t r)
{
	int e = errno;

	ng_verify_call(call, out, redop, r);
	errno = e;
}

/* Out of line, for the injection path and the unit tests. */
int ng_coll_begin(struct ng_call *call, int fn, int is_p2p, uint64_t count,
		  ncclDataType_t dtype, int root, ncclComm_t comm,
		  cudaStream_t stream, int per_rank, const void *ret)
{
	return ng_coll_begin_inline(call, fn, is_p2p, count, dtype, root, comm,
				    stream, per_rank, ret);
}

void ng_coll_end(struct ng_call *call, ncclResult_t r)
{
	ng_coll_end_inline(call, r);
}

/*
 * A call on a suspended comm (ncclCommSuspend, not yet resumed): NCCL
 * does not check it, and its kernel would touch the memory the suspend
 * released.  Refused with ncclInvalidUsage, warned of once per
 * suspension, and each one recorded as a comm_state "refused": it takes
 * no seq, as it never reaches NCCL, so ranks that made no such call
 * still match.
 */
NG_COLD ncclResult_t ng_coll_refuse(struct ng_comm *c, int fn)
{
	struct ng_ev_comm_state ev = {
		.comm_hash = c->hash, .state = "refused", .op = ng_fn_op[fn],
		.result = ncclInvalidUsage,
	};
	int e = errno;

	if (!__atomic_exchange_n(&c->refuse_warned, 1, __ATOMIC_RELAXED))
		ng_warn("%s on communicator %016llx refused (ncclInvalidUsage): the communicator "
			"is suspended by ncclCommSuspend; call ncclCommResume first",
			ng_fn_name[fn], (unsigned long long)c->hash);
	if (ng_hot.tp)
		ng_hot.tp->comm_state(&ev);
	errno = e;
	return ncclInvalidUsage;
}

/*
 * ncclWaitSignal on several peers, recorded: its coll_enqueue has peer -1
 * and the sum of the signals, so what it waits for goes in a signal_wait
 * per descriptor (the first NG_WAIT_NOTE_MAX; ndesc says how many).  The
 * wrapper passes the call's own arguments, (nDesc, signalDescs, comm,
 * stream): a variadic function, so one macro serves every entry point.
 */
#define NG_WAIT_NOTE_MAX 64

NG_COLD void ng_wait_note(const struct ng_call *call, ...)
{
	const ncclWaitSignalDesc_t *d;
	va_list ap;
	int n, e = errno;

	va_start(ap, call);
	n = va_arg(ap, int);
	d = va_arg(ap, const ncclWaitSignalDesc_t *);
	va_end(ap);
	if (!d || n < 1 || !call->comm || !ng_hot.tp)
		goto out;
	for (int i = 0; i < n && i < NG_WAIT_NOTE_MAX; i++) {
		struct ng_ev_signal_wait ev = {
			.comm_hash = call->comm->hash, .p2p_seq = call->p2p_seq, .desc = i,
			.ndesc = n, .peer = d[i].peer, .op_cnt = d[i].opCnt,
			.sig_idx = d[i].sigIdx, .ctx = d[i].ctx,
		};

		ng_hot.tp->signal_wait(&ev);
	}
out:
	errno = e;
}
