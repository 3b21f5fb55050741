/* What libnccl.so.2's files of sim/ offer each other, on top of sim.h:
 * the communicator, the op, the profiler plugin and the layers of the API
 * (sim.h lists the files, bottom first). */
#ifndef NCCLSIM_LIBNCCL_H
#define NCCLSIM_LIBNCCL_H

#include "nccl_profiler.h"
#include "sim.h"

/* ---- communicators (comm.c) and their operations (coll.c) --------------- */

#define SIM_MAX_PREMUL 64
#define SIM_PROF_CH 8		/* channels a collective reports at most */

struct ncclComm {
	uint32_t magic;
	int rank, nranks, dev;
	int blocking;
	struct rv *rv;
	int refs;		/* the program's handle + queued ops; atomic */
	int async;		/* ncclResult_t for ncclCommGetAsyncError; atomic */
	/* NCCLSIM_NONBLOCKING_CALL_HOLD=1: a nonblocking comm's call returns
	 * ncclInProgress and is launched at the next ncclCommGetAsyncError,
	 * as NCCL may enqueue one later (enqueue.c). */
	struct sim_op *held;
	ncclResult_t (*launch_held)(struct ncclComm *c);
	int aborted;		/* ncclCommAbort: ops fail at once; atomic */
	int revoked;		/* ncclCommRevoke; atomic */
	int broken;		/* a launch failed; atomic */
	int finalized, destroyed;
	int suspended;		/* ncclCommSuspend's flags while suspended; atomic */
	int inflight;		/* ops queued, not finished; atomic */
	uint64_t hbar;		/* host barriers passed (user side) */
	uint64_t splits;	/* children made, names them */
	/* Ordering: tickets handed out in call order, run in that order. */
	uint64_t coll_next, coll_run;	/* coll_run: atomic */
	uint64_t *send_next, *send_run;	/* per peer */
	uint64_t *recv_next, *recv_run;
	uint64_t g;		/* collective rounds done (worker side) */
	struct {
		int used;
		ncclDataType_t type;
		int residence;
		const void *ptr;
		unsigned char value[8];
	} premul[SIM_MAX_PREMUL];
	char last_error[256];
	void *prof_ctx;		/* the profiler plugin's context, if loaded */
	uint64_t prof_hash;	/* NCCL's commHash, as the plugin gets it */
	uint64_t prof_seq[SIM_NKINDS];	/* NCCL's seqNumber per function */
	uint64_t prof_ce_seq;		/* NCCL's CE sync counter (ceSeqNum) */
};

/* One collective or send/recv, stepped by a group task on a stream. */
struct sim_op {
	enum sim_kind kind;
	const void *sendbuf;
	void *recvbuf;
	size_t count;
	ncclDataType_t type;
	ncclRedOp_t redop;	/* built-in op; pre-mul-sum as ncclSum + scalar */
	int have_scalar;
	unsigned char scalar[8];
	const void *scalar_ptr;	/* ncclScalarDevice: read when it runs */
	int root;		/* root, or peer for send/recv */
	struct ncclComm *comm;
	cudaStream_t stream;
	uint64_t ticket;
	/* progress */
	int state;
	uint64_t round, nrounds, g, elems;
	uint64_t pos, total;	/* p2p bytes moved, message bytes */
	uint64_t take;		/* recv: bytes of the message kept */
	unsigned char hbuf[16];	/* p2p message header: length, start time */
	uint64_t t_start, t_all;
	uint64_t busbytes;
	unsigned int ticks;	/* bumped on every state change */
	ncclResult_t result;
	/* profiler plugin (profiler.c): the Coll event, its channels' */
	void *prof_coll;
	void *prof_ch[SIM_PROF_CH];
	int prof_nch;
	int prof_mask;		/* NCCL's mask when the op was launched */
	int prof_ce;		/* run on the copy engine: no kernel, no KernelCh */
};

/* Take this op's place in its communicator's order: call in call order. */
void sim_op_ticket(struct sim_op *op);
/* Advance op; SIM_DONE (op->result says how) or SIM_PENDING with *w. */
int sim_op_step(struct sim_op *op, struct sim_wait *w);
/* Queue ops (all for one stream, tickets taken) as one launch: they
 * progress together, and the launch ends no sooner than the cost model
 * says.  The ops are copied; each holds a reference to its comm, dropped
 * when the launch is done (or here, on failure). */
ncclResult_t sim_launch(const struct sim_op *ops, int nops, cudaStream_t stream);
/* Cost of ops as one launch, in ns (ncclGroupSimulateEnd). */
uint64_t sim_launch_cost_ns(const struct sim_op *ops, int nops);

/* ---- profiler.c: NCCL's profiler plugin (NCCL_PROFILER_PLUGIN) --------- */
/* As a comm joins (name: its shared segment's, the same on every rank)
 * and as it is freed. */
void sim_prof_comm_init(struct ncclComm *c, const char *name);
void sim_prof_comm_fini(struct ncclComm *c);
/* Around a launch, on the launching thread: the Group and Coll events
 * (groups: nops slots, filled by begin, read by end). */
void sim_prof_launch_begin(struct sim_op *ops, int nops, void **groups);
void sim_prof_launch_end(struct sim_op *ops, int nops, void **groups);
/* On the stream's worker: the kernel's channels start, end. */
void sim_prof_kernel_start(struct sim_op *op);
void sim_prof_kernel_end(struct sim_op *op);

/* ---- libnccl.so.2's calls ---------------------------------------------- */

/* nccl.c: the NCCL version the backend plays (NCCLSIM_VERSION, default
 * 2.28.9); a call newer than it fails with ncclInvalidUsage, as a real
 * older NCCL, which lacks the symbol, cannot be called at all. */
int sim_version(void);
ncclResult_t sim_need_version(int version, const char *call);

/* nccl.c: remember why a call failed (ncclGetLastError; c's own too, if
 * set); gives r back. */
ncclResult_t sim_fail(struct ncclComm *c, ncclResult_t r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* comm.c: a comm with one reference (the handle's), or NULL; whether c is
 * a live comm; whether a config (or NCCL_COMM_BLOCKING) says blocking.
 * The last unref frees the comm. */
struct ncclComm *sim_comm_new(int nranks, int rank, int dev, const ncclConfig_t *config);
int sim_comm_ok(struct ncclComm *c);
int sim_config_blocking(const ncclConfig_t *config);
void sim_comm_ref(struct ncclComm *c);
void sim_comm_unref(struct ncclComm *c);

/* setup.c: a communicator's setup, made by init.c, run by group.c. */
enum { SIM_SETUP_INIT, SIM_SETUP_SPLIT, SIM_SETUP_SHRINK };

struct sim_setup {
	struct sim_setup *next;
	int kind;		/* SIM_SETUP_INIT, _SPLIT, _SHRINK */
	struct ncclComm *comm;	/* the new communicator (NULL: no color) */
	struct ncclComm *parent;
	char name[RV_NAME_MAX];
	int color, key;
	ncclComm_t *out;	/* split, shrink: written when the comm is ready */
	const ncclConfig_t *config;
	int owner_async;	/* nonblocking split, shrink: the parent's state is ours */
	int comm_ref;		/* the setup holds a reference on comm */
	ncclResult_t result;
};

struct sim_setup *sim_setup_new(int kind);
/* Take the references sim_setup_end drops. */
void sim_setup_hold(struct sim_setup *j);
/* Outside a group: run now, or in a thread when non-blocking. */
ncclResult_t sim_setup_start(struct sim_setup *j);
/* Run every phase of a list, each phase for all before the next. */
void sim_setups_run(struct sim_setup *list);
/* Publish the comm or the failure, drop the references, free j. */
ncclResult_t sim_setup_end(struct sim_setup *j);

/* group.c: the calling thread's group (depth 0: none). */
int sim_group_depth(void);
/* The group's end reports r (ncclCommInitAll's failed init). */
void sim_group_fail(ncclResult_t r);
/* Run a setup now, or keep it for the group's end. */
ncclResult_t sim_group_submit(struct sim_setup *j);
/* Keep a copy of op (its comm referenced) for the group's end. */
ncclResult_t sim_group_add(const struct sim_op *op);

#endif
