/* sim/: the CPU backend (docs/design.md, "The CPU backend").  What the pieces
 * of sim/ offer each other; nothing here is seen outside sim/.
 *
 *   env.c        NCCL's configuration files into the environment
 *   devices.c    simulated GPUs: count, CUDA_VISIBLE_DEVICES, bus ids
 *   sync.c       time and futexes
 *   stream.c     streams and events: FIFOs run by worker threads
 *   cudart.c     the CUDA runtime subset      (libcudart.so.13)
 *   cuda.c       the driver API subset         (libcuda.so.1)
 *   reduce.c     element types and reductions
 *   cost.c       the cost model (NCCLSIM_GBPS, NCCLSIM_LATENCY_US)
 *   rendezvous.c shared-memory segment of a communicator, barriers
 *   coll.c       collectives and send/recv as steppable state machines
 *   profiler.c   NCCL's profiler plugin, as NCCL drives it
 *   libnccl.so.2's calls, bottom first:
 *     nccl.c     version, errors, memory; sim_fail
 *     comm.c     a communicator's life, its end, its queries
 *     setup.c    init, split, shrink as host work in phases
 *     group.c    groups: what they hold back, how they end
 *     init.c     unique ids, ncclCommInit*, split, shrink
 *     register.c buffers, windows, pre-mul-sum operators
 *     enqueue.c  the collective and point-to-point calls
 *   nccl_exports.c  ncclX -> pncclX for every line of common/nccl_api.def
 *
 * libnccl.so.2 links libcudart.so.13 and enqueues its work onto the
 * program's streams through the ncclsim_* calls below, which libcudart
 * exports next to the cuda* API.  What only libnccl's files share (the
 * communicator, the op, the profiler plugin) is in libnccl.h.
 */
#ifndef NCCLSIM_SIM_H
#define NCCLSIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <nccl.h>
/* nccl.h may be older than the table: its newer lines declared too. */
#include "nccl_protos.h"

/* ---- env.c ------------------------------------------------------------- */
/* NCCL's configuration files into the environment, once, as NCCL does at
 * its first parameter read (ncclGetUniqueId, an init). */
void sim_init_env(void);
/* A parameter as NCCL reads it: through the env plugin if one was loaded
 * (NCCL_ENV_PLUGIN), else the environment. */
const char *sim_getenv(const char *name);

/* ---- devices.c --------------------------------------------------------- */

#define SIM_MAX_GPUS 256

/* Visible devices (after CUDA_VISIBLE_DEVICES); 0 when none. */
int sim_dev_count(void);
/* Physical index of visible ordinal dev, or -1. */
int sim_dev_phys(int dev);
/* "0000:%02X:00.0", stable per physical GPU. */
void sim_dev_busid(int dev, char *buf, size_t len);
int sim_dev_bus_number(int dev);
size_t sim_dev_mem_bytes(void);

/* ---- time, futex (sync.c) -------------------------------------------- */

uint64_t sim_now_ns(void);
void sim_sleep_until_ns(uint64_t t);
/* Wait while *addr == val, at most until the absolute CLOCK_MONOTONIC time
 * deadline_ns (0: no limit).  shared: the word is in a shared mapping. */
void sim_futex_wait(uint32_t *addr, uint32_t val, uint64_t deadline_ns, int shared);
void sim_futex_wake(uint32_t *addr, int shared);

/* ---- the stream engine (stream.c, exported by libcudart as ncclsim_*) --- */

enum { SIM_DONE = 0, SIM_PENDING = 1 };

/* What a pending task waits for before it is stepped again: a futex word
 * to change from val, and/or a time.  Neither: poll after a short sleep. */
struct sim_wait {
	uint32_t *futex;
	uint32_t *waiters;	/* counted up while sleeping, if set */
	uint32_t val;
	int shared;
	uint64_t until_ns;
};

/* A unit of work on a stream.  step() is called by the stream's worker
 * until it returns SIM_DONE; release() then frees it. */
struct sim_task {
	struct sim_task *next;
	int (*step)(struct sim_task *t, struct sim_wait *w);
	void (*release)(struct sim_task *t);
};

/* Queue t on stream s (NULL and cudaStreamLegacy/PerThread: the current
 * device's default stream).  cudaErrorInvalidResourceHandle for a bad or
 * destroyed stream; t is not released then. */
cudaError_t ncclsim_stream_enqueue(cudaStream_t s, struct sim_task *t);
int ncclsim_current_device(void);
/* Whether s names a live stream (or a default stream). */
int ncclsim_stream_valid(cudaStream_t s);

/* Inside libcudart (stream.c for cudart.c). */
int sim_get_device(void);
cudaError_t sim_set_device(int dev);
cudaError_t sim_stream_push(cudaStream_t s, struct sim_task *t);
/* Wait for every stream of dev (-1: all devices), or only for those that
 * synchronise with the legacy default stream. */
cudaError_t sim_device_sync(int dev, int blocking_only);
cudaError_t sim_copy_async(void *dst, const void *src, size_t n, cudaStream_t s);
cudaError_t sim_memset_async(void *dst, int value, size_t n, cudaStream_t s);

/* ---- reduce.c ---------------------------------------------------------- */

/* Size of one element, 0 for an unknown type. */
size_t sim_type_size(ncclDataType_t t);
/* Whether t can be reduced (fp8 cannot, here). */
int sim_type_reducible(ncclDataType_t t);
/* dst[i] = dst[i] OP src[i]; OP one of sum, prod, max, min (avg and
 * pre-mul-sum reduce as sum). */
void sim_reduce(void *dst, const void *src, size_t n, ncclDataType_t t, ncclRedOp_t op);
/* dst[i] = src[i] * scalar (scalar is one element of type t); dst may be src. */
void sim_scale(void *dst, const void *src, size_t n, ncclDataType_t t, const void *scalar);
/* dst[i] /= d: the last step of ncclAvg. */
void sim_divide(void *dst, size_t n, ncclDataType_t t, int d);
float sim_half_to_float(uint16_t h);
uint16_t sim_float_to_half(float f);
float sim_bf16_to_float(uint16_t h);
uint16_t sim_float_to_bf16(float f);

/* ---- cost.c ------------------------------------------------------------ */

/* One per operation of common/nccl_api.def's COLL and P2P lines, in
 * its order, aliases (ncclBcast) left out: sim_kind_name checks it. */
enum sim_kind {
	SIM_ALLREDUCE, SIM_ALLGATHER, SIM_REDUCESCATTER, SIM_BROADCAST,
	SIM_REDUCE, SIM_ALLTOALL, SIM_GATHER, SIM_SCATTER, SIM_SEND, SIM_RECV,
	SIM_PUTSIGNAL, SIM_SIGNAL, SIM_WAITSIGNAL,
	SIM_NKINDS
};
/* Signals travel as messages on the send/recv channels: a put or a
 * signal is a send, a wait a receive of one message per signal. */
static inline int sim_kind_sends(enum sim_kind k)
{
	return k == SIM_SEND || k == SIM_PUTSIGNAL || k == SIM_SIGNAL;
}
static inline int sim_kind_recvs(enum sim_kind k)
{
	return k == SIM_RECV || k == SIM_WAITSIGNAL;
}

/* The operation's name as NCCL's profiler gives it (nccl_api.def's PROF
 * column): "AllReduce", "Send". */
const char *sim_kind_name(enum sim_kind k);

struct sim_cost {
	double gbps;		/* GB/s; 0: no bandwidth term */
	double latency_us;
};

/* From NCCLSIM_GBPS and NCCLSIM_LATENCY_US (defaults 10 and 20). */
void sim_cost_from_env(struct sim_cost *c);
/* Bus bytes of one call as nccl-tests counts them: count elements of
 * size elem (per rank for gathers, scatters, all-to-all), nranks ranks. */
uint64_t sim_busbytes(enum sim_kind k, size_t count, size_t elem, int nranks);
/* Duration of a launch moving busbytes, in ns. */
uint64_t sim_cost_ns(const struct sim_cost *c, uint64_t busbytes);

/* ---- rendezvous.c: the shared-memory segment of a communicator ----------
 *
 * A POSIX shared-memory object named in the unique id; every rank maps it.
 * All zero is a valid fresh state, so any rank may create it.  Layout:
 * header | per-rank words | n*n p2p channel heads | n*n p2p ring buffers |
 * n collective slots of two halves each (rounds alternate halves, so one
 * barrier per round is enough). */

#define RV_NAME_MAX 48

struct rv_hdr {
	uint32_t state;		/* 0 fresh, 1 being set up, 2 ready */
	uint32_t nranks;
	uint32_t doorbell;	/* bumped on every change; a futex */
	uint32_t waiters;	/* sleepers on doorbell */
	uint32_t aborted;	/* a rank aborted with propagation on */
	uint32_t joined;
	uint64_t half_bytes;	/* one collective slot half */
	uint64_t chan_bytes;	/* one p2p ring buffer */
};

struct rv_rank {
	uint64_t arrive;	/* stream-side barrier: rounds reached */
	uint64_t harrive;	/* host-side barrier (init, split) */
	uint64_t nrounds[2];	/* published at a collective's first round, */
	uint64_t t_start[2];	/* by parity of that round */
	int64_t hdata[2][4];	/* host exchange (split color, key) by parity */
	int32_t claimed, pid, dev, busid;
	char pad[128];
};

struct rv_chan {		/* one direction src -> dst */
	uint64_t head;		/* bytes written, ever */
	uint64_t tail;		/* bytes read, ever */
	char pad[48];
};

struct rv {
	void *base;
	size_t size;
	int nranks;
	struct rv_hdr *hdr;
	struct rv_rank *ranks;
	struct rv_chan *chans;	/* [src * n + dst] */
	char *bufs;		/* [src * n + dst] * chan_bytes */
	char *slots;		/* [rank][2] * half_bytes */
	size_t half, chan;
	char name[RV_NAME_MAX];
};

/* Remove segments of inits that never completed and whose maker is gone. */
void rv_sweep_stale(void);
/* A fresh random segment name ("/ncclsim-<pid>-<hex>"). */
int rv_random_name(char *buf, size_t len);
/* A name derived from a parent's (split, shrink): same on every rank. */
void rv_child_name(char *buf, size_t len, const char *parent, uint64_t salt1, int64_t salt2);
/* Map the segment and claim rank.  ncclInvalidUsage for a rank claimed
 * twice or a different nranks; ncclSystemError when shm fails. */
ncclResult_t rv_attach(const char *name, int nranks, int rank, int dev, struct rv **out);
void rv_detach(struct rv *rv);
void rv_unlink(struct rv *rv);
/* Bump the doorbell and wake the sleepers. */
void rv_ring(struct rv *rv);
/* Host-side barrier k (1, 2, ...): arrive and wait for all.  Gives up
 * with ncclInternalError when *stop becomes non-zero. */
void rv_host_arrive(struct rv *rv, int rank, uint64_t k);
ncclResult_t rv_host_wait(struct rv *rv, uint64_t k, const int *stop);
static inline char *rv_slot(struct rv *rv, int rank, uint64_t parity)
{
	return rv->slots + ((size_t)rank * 2 + (parity & 1)) * rv->half;
}

#endif
