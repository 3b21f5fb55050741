/*
 * The flight ring file: a process's records of calls on their way to
 * LTTng, kept in a shared-memory file rather than in the process, so that
 * they outlive it.  A call's coll_enqueue record waits in its thread's
 * ring until the watchdog thread writes the event; a process killed with
 * SIGKILL, or crashing, would take those calls with it, and they are
 * the last ones it made: the ones a post-mortem needs.  The host-call
 * slots (the call each thread is inside) live here too.
 *
 * Written by the shim (preload/watchdog/ringfile.c) under NCCLGUARD_FLIGHT_DIR,
 * copied into the trace by `ncclguard run` once the process is gone
 * (run/flight.c), read by the analyzer (analyze/read/flight.c).  The file
 * describes itself (operation names, datatype sizes, the TSC mapping), so
 * a reader needs nothing of the shim; a reader trusts none of it.
 *
 * Layout: the header (NG_RF_HDR_SIZE bytes), the host-call slots, then
 * up to nrings_max rings of ring_stride bytes each.
 */
#ifndef NCCLGUARD_RINGFILE_H
#define NCCLGUARD_RINGFILE_H

#include <stdint.h>

#define NG_RF_MAGIC	0x31474e52464c474eull	/* "NGLFRNG1" */
#define NG_RF_VERSION	1
#define NG_RF_HDR_SIZE	16384
#define NG_RF_OPS	128		/* operation names kept */
#define NG_RF_OP_LEN	32
#define NG_RF_DTYPES	32
#define NG_RF_RING	8192		/* records per ring; power of two */
#define NG_RF_SLOTS	256		/* host-call slots */
#define NG_RF_RINGS	256		/* rings per process at most */

/* A call's coll_enqueue record: one cache line, so the caller dirties one
 * line per call. */
#define NG_ENQ_CAPTURED 1
#define NG_ENQ_P2P 2
#define NG_ENQ_TICKS 4		/* enter and exit are TSC ticks (ng_stamp) */
#define NG_ENQ_COARSE 8		/* enter is the published coarse time, in ns */
/* Records of NCCL's profiler plugin (preload/watchdog/pcoll.c): enter is in
 * ns; exit packs what NCCL chose (ng_pinfo_*), or for a completion the
 * GPU end.  ANNOT: only that, for a call a wrapper recorded; DONE: a
 * coll_complete (enter, exit: GPU start and end); ALGO: the choice is
 * new for the comm, op and size (a coll_algo is written). */
#define NG_ENQ_PLUGIN 16
#define NG_ENQ_ANNOT 32
#define NG_ENQ_DONE 64
#define NG_ENQ_ALGO 128		/* a choice new for its comm, op and size */
struct ng_enq_rec {
	uint64_t comm_hash, seq, count, stream, enter, exit;
	int32_t root, nranks;
	uint8_t fn, dtype, group_depth, flags;
	int32_t result;
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct ng_enq_rec) == 64, "a record is one cache line");

/* The call a thread is inside (enter_ns, CLOCK_MONOTONIC: 0 when idle). */
struct ng_hostcall {
	int32_t fn, tid;
	uint64_t comm_hash, seq;
	uint64_t enter_ns;
	int32_t reported;
	int32_t taken;			/* by a live thread; freed at its exit */
};

/* One thread's ring: the thread writes tail, the watchdog head (after
 * each event it writes, so a reader never sees an event twice). */
struct ng_rf_ring {
	uint64_t tail;			/* producer */
	uint64_t head_seen;		/* producer's copy of head */
	int32_t orphaned;		/* its thread exited */
	int32_t tid;
	char pad0[40];
	uint64_t head;			/* watchdog */
	char pad1[56];
	struct ng_enq_rec rec[NG_RF_RING];
};

/* The TSC mapping of the shim's clock (core/clock.c): ns = ns0 +
 * (ticks - tsc0) * mult / 2^32; seq odd while it is rewritten. */
struct ng_rf_ticks {
	uint32_t seq, on;
	uint64_t tsc0, ns0, mult;
};

struct ng_rf_hdr {
	uint64_t magic;
	uint32_t version, hdr_size;
	uint32_t rec_size, ring_size;	/* bytes; records */
	uint32_t nslots, nrings_max;
	uint64_t slot_offset, ring_offset, ring_stride;
	uint32_t nrings;		/* rings handed out so far */
	int32_t pid;
	uint64_t job_tag;
	int64_t mono_to_real_ns;	/* CLOCK_REALTIME - CLOCK_MONOTONIC */
	struct ng_rf_ticks ticks;
	char host[64];
	char job[128];
	char ops[NG_RF_OPS][NG_RF_OP_LEN];	/* by fn: "allreduce", "-"; "" unknown */
	char fn_name[NG_RF_OPS][NG_RF_OP_LEN];	/* by fn: "ncclAllReduce" */
	uint8_t per_rank[NG_RF_OPS];		/* count is per rank */
	uint8_t dtype_size[NG_RF_DTYPES];	/* 0 unknown */
};
_Static_assert(sizeof(struct ng_rf_hdr) <= NG_RF_HDR_SIZE, "header fits");

/* Whether a file of `size` bytes starting with `h` is a ring file whose
 * slots and rings lie inside it; *nrings: the rings a reader may look
 * at.  Every reader checks with this and trusts nothing else. */
static inline int ng_rf_valid(const struct ng_rf_hdr *h, uint64_t size, uint32_t *nrings)
{
	uint64_t slots = (uint64_t)NG_RF_SLOTS * sizeof(struct ng_hostcall), n;

	if (size < NG_RF_HDR_SIZE || h->magic != NG_RF_MAGIC || h->version != NG_RF_VERSION ||
	    h->hdr_size != NG_RF_HDR_SIZE || h->rec_size != sizeof(struct ng_enq_rec) ||
	    h->ring_size != NG_RF_RING || h->nslots != NG_RF_SLOTS ||
	    h->ring_stride < sizeof(struct ng_rf_ring) || h->ring_stride > (1u << 24) ||
	    h->slot_offset < NG_RF_HDR_SIZE || h->slot_offset > size ||
	    size - h->slot_offset < slots || h->ring_offset > size ||
	    h->ring_offset < slots || h->ring_offset - slots < h->slot_offset || h->pid <= 0)
		return 0;
	n = h->nrings < NG_RF_RINGS ? h->nrings : NG_RF_RINGS;
	if ((size - h->ring_offset) / h->ring_stride < n)
		n = (size - h->ring_offset) / h->ring_stride;
	*nrings = (uint32_t)n;
	return 1;
}

static inline uint64_t ng_rf_scale(uint64_t ticks, uint64_t mult)
{
	return (uint64_t)(((unsigned __int128)ticks * mult) >> 32);
}

/* A TSC stamp on CLOCK_MONOTONIC by a mapping. */
static inline uint64_t ng_rf_ticks_to_ns(uint64_t t, uint64_t tsc0, uint64_t ns0, uint64_t mult)
{
	return t >= tsc0 ? ns0 + ng_rf_scale(t - tsc0, mult) : ns0 - ng_rf_scale(tsc0 - t, mult);
}

#endif
