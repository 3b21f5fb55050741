/*
 * The matcher: each rank's calls matched across ranks, a window per
 * communicator (match.c, p2p.c), finished collectives held until the
 * hosts' clocks are aligned (clock.c) and accounted into the rows
 * (account.c, stats.c, straggle.c, busy.c); what NCCL chose (algo.c); the
 * configuration compared (config.c); hangs said while reading (early.c)
 * and at the end (finish.c), with what the hang dumps say (dumps.c).  It
 * stands on the state (state.h); the reader above feeds it.
 */
#ifndef NCCLGUARD_AN_MATCH_H
#define NCCLGUARD_AN_MATCH_H

#include "state.h"

#define AN_HANG_AGE_NS		1000000000LL	/* in flight this long at the end */

#define AN_P2P_PENDING_MAX 65536	/* sends/recvs kept pending per rank and comm */

/* A send or recv not yet known complete (its own completion, a later
 * one's on the comm, or the comm's destroy). */
struct an_p2p_op {
	uint64_t p2p_seq, coll_before;	/* the comm's last seq when it came */
	uint64_t ordinal;		/* of its kind to its peer: 1, 2, ... */
	int64_t enter_ns;
	int32_t peer;			/* comm rank */
	uint8_t op, send;		/* send: an AN_P2P_* kind */
};
/* What a pending point-to-point call is: a put or a signal meets its
 * peer's waits for signals from it, a send its peer's recvs. */
enum { AN_P2P_RECV, AN_P2P_SEND, AN_P2P_SIGNAL, AN_P2P_WAIT };


/* algo.c: one choice of one process for one (comm, op, size). */
struct an_algo_rec {
	uint64_t comm_hash, bytes, calls;
	int64_t rank;			/* set by an_algo_finish, for the order */
	int op, proc, nch;
	char algo[16], proto[8];
};
/* A (comm, op, size) whose processes chose differently: algos[first,
 * end) once sorted, each process's main choice first among its own. */
#define AN_ALGO_MISM_MAX 64
struct an_algo_mism {
	int first, end, nprocs;
};

/* One process_info field that differs across ranks, or a host's own
 * setting (NCCL_HOSTID) that breaks its rule: `why` says which. */
struct an_cfg_key {
	char *key;
	const char *why;	/* "differs across ranks", or the per-host rule broken */
	int per_host;		/* a host's own setting (NCCL_HOSTID) */
	int n;			/* (value, rank) pairs sorted by value, rank */
	char **val;
	int64_t *rank;
};


/* One member of a hung comm as the drawing shows it: its calls around
 * the hung seq (in seq order: the last accounted, its own part in the
 * hung one, those it queued behind), and for an init when it began. */
struct an_hang_row {
	int64_t rank;
	int proc;
	int64_t init_ns;	/* comm_init_begin, corrected; 0: none */
	int ncalls;
	struct an_call calls[AN_RECENT + 1 + AN_AFTER];
};

/* Calls a stopped rank entered after its last confirmed one (finish.c):
 * the trace cannot tell whether they completed, so none is a hang. */
struct an_unconf {
	uint64_t comm_hash, confirmed_seq, first_seq, last_seq, calls;
	int proc;		/* proc id */
	int op, killed;		/* killed: its flight ring was recovered */
};

/* The ranks whose watchdogs fired on u's comm, u's own aside, sorted
 * (*out allocated; after an_finish). */
int an_unconf_waiting(const struct an_state *an, const struct an_unconf *u, int64_t **out);

struct an_hang {
	uint64_t comm_hash, seq, queued_after;
	int op;
	int nwait, nmiss, nlast;
	int64_t *wait, *miss;	/* global ranks */
	int64_t *last_rank;
	uint64_t *last_seq;
	int64_t age_ns, unknown_missing;
	int timed_out;
	/* An init: the comm ranks that never began it.  Where the comm is
	 * the world (each member's comm rank is its global rank) they are
	 * in miss as well, and miss_untraced counts those of them no
	 * process of the trace claims. */
	int nmiss_comm, miss_untraced;
	int64_t *miss_comm;
	/* A send or recv (seq is its p2p seq): its peer's global rank (-1:
	 * not in the trace), and how many of its kind the peer posted to
	 * this rank against this one's ordinal. */
	int p2p;
	int64_t peer, peer_comm_rank;
	uint64_t ordinal, peer_posted;
	/* A collective: each member's state (AN_RS_*), in rank order; the
	 * seq its injected drop skipped where that is why (0: none). */
	int nstate;
	int64_t *state_rank;
	uint8_t *state;
	uint64_t *drop_seq;
	/* Every member, in rank order, for the drawing (html_hang.c). */
	struct an_hang_row *rows;
	int nrows;
};

/* Where a rank is in a hung collective, as precisely as the trace says. */
enum {
	AN_RS_WAITING,		/* entered, no completion: waiting on the GPU */
	AN_RS_HOST,		/* stuck inside the host call (watchdog, stall) */
	AN_RS_NEVER,		/* never entered it */
	AN_RS_AHEAD,		/* completed its own call of that seq: out of step */
	AN_RS_EXITED,		/* its comm_end came */
	AN_RS_KILLED,		/* died: its flight ring was recovered */
	AN_RS_N
};
/* "waiting", "in_host_call", ...: stable for report.json readers. */
const char *an_rank_state_name(int state);

struct an_mismatch {
	uint64_t comm_hash, seq;
	int n;
	int64_t *rank;
	int *op;
	uint64_t *count;
	int32_t *dtype, *root;
};

/* ---- algo.c ----------------------------------------------------------- */

void an_algo(struct an_state *an, const struct ev_src *src, const struct ev_rec_algo *r);
void an_algo_finish(struct an_state *an);	/* before the report or the findings */
void an_algo_free(struct an_state *an);
/* The row's most frequent choice; NULL: none recorded. */
const struct an_choice *an_row_choice(const struct an_row *r);
/* NCCL's choice as the report words it: the copy engine's "CE" (profiler
 * v6's CeColl; no protocol, no channels) reads "copy engine (CE)", any
 * other name as NCCL gave it.  an_algo_is_ce: the choice is the copy
 * engine. */
int an_algo_is_ce(const char *algo);
const char *an_algo_label(const char *algo);
/* ---- stats.c: bandwidth rows ------------------------------------------ */

double an_busbw_factor(const char *op, int nranks);
int an_size_bucket(uint64_t bytes);
struct an_row *an_row_get(struct an_state *an, int op, uint64_t bytes, int nranks);
/* One call of the row, timed when ns > 0; returns whether it was. */
int an_row_add(struct an_row *row, uint64_t bytes, double ns);
/* Times a call already counted (a send counted at its enqueue). */
int an_row_time(struct an_row *row, uint64_t bytes, double ns);
/* Collective calls over the rows, and how many of them were GPU-timed. */
void an_rows_timed(const struct an_state *an, uint64_t *calls, uint64_t *timed);
/* Why calls went untimed, for the notes that say so: the sampling, or GPU
 * timing turned off in some processes (where sampling changes nothing). */
const char *an_untimed_hint(const struct an_state *an, char *buf, size_t len);
void an_sort_rows(struct an_state *an);
int an_row_below_link(const struct an_state *an, const struct an_row *r);

/* ---- straggle.c ------------------------------------------------------- */

/* Lateness of each enqueued slot against the median arrival; returns the
 * index of the last one, or -1 if fewer than two ranks arrived. */
int an_lateness(const int64_t *enter, int n, int64_t *late_ns);
void an_straggle(struct an_state *an, const struct an_entry *e);
int an_straggler_flagged(const struct an_state *an, const struct an_proc *p);
/* A flagged rank's measured lateness per call, in ns. */
double an_straggler_late_ns(const struct an_proc *p);

/* ---- busy.c: time in NCCL --------------------------------------------- */

void an_busy_add(struct an_proc *p, int64_t start, int64_t end);
void an_busy_fold(struct an_proc *p, int keep);
void an_busy_count(struct an_proc *p, int row, const struct an_slot *s);
void an_busy_late(struct an_proc *p, int row, double dur_ns);
void an_busy_estimate(struct an_state *an);
double an_comm_fraction(const struct an_proc *p);
int64_t an_busy_time(const struct an_proc *p);
const char *an_busy_note(const struct an_proc *p, char *buf, size_t len);
double an_comm_fraction_timed(const struct an_proc *p);

/* ---- config.c --------------------------------------------------------- */

void an_config_mismatches(struct an_state *an);
void an_config_free(struct an_state *an);

/* ---- account.c -------------------------------------------------------- */

/* A collective every rank is done with: counted, compared, freed. */
void an_account(struct an_state *an, struct an_entry *e);
void an_account_free(struct an_state *an);

/* ---- clock.c ---------------------------------------------------------- */

/* A finished collective: accounted at once when the hosts' clocks are
 * aligned, else sampled and held until they are. */
void an_clock_finished(struct an_state *an, struct an_entry *e);
/* Offsets from the samples so far; the held collectives accounted. */
void an_clock_settle(struct an_state *an);

/* ---- p2p.c ------------------------------------------------------------ */

void an_p2p_enqueue(struct an_state *an, const struct ev_src *src,
		    const struct ev_rec_coll *r);
void an_p2p_complete(struct an_state *an, const struct ev_src *src,
		     const struct ev_rec_coll *r);
void an_p2p_settle(struct an_pc *pc);
/* A timeout named send or recv p2p_seq: the calls before it are done;
 * returns the first collective seq that may not be (0: unknown). */
uint64_t an_p2p_timeout(struct an_pc *pc, uint64_t p2p_seq);
/* End of trace: the sends and recvs of c still pending, hangs or not. */
void an_p2p_finish(struct an_state *an, struct an_comm *c);

/* ---- match.c ---------------------------------------------------------- */

void an_comm_init(struct an_state *an, const struct ev_src *src,
		  const struct ev_rec_init *r);
/* ncclCommSuspend, ncclCommResume: a comm suspended at the trace's end
 * runs nothing, so what it left open is no hang. */
void an_comm_state(struct an_state *an, const struct ev_src *src,
		   const struct ev_rec_misc *r);
int an_comm_suspended(const struct an_state *an, const struct an_comm *c);
void an_comm_end(struct an_state *an, const struct ev_src *src,
		 const struct ev_rec_misc *r);
void an_enqueue(struct an_state *an, const struct ev_src *src,
		const struct ev_rec_coll *r);
void an_complete(struct an_state *an, const struct ev_src *src,
		 const struct ev_rec_coll *r);
void an_timeout(struct an_state *an, const struct ev_src *src,
		const struct ev_rec_misc *r);
/* The window's front (finish.c closes what is left of it). */
struct an_entry **an_ring_at(struct an_comm *c, uint64_t off);
int an_entry_ready(const struct an_entry *e);
void an_pop_front(struct an_state *an, struct an_comm *c, int forced);

/* ---- early.c: findings said while reading ----------------------------- */

/* The reader's part, in the order it reads (the matcher's time order):
 * before any event, how many streams each host's traces hold; when a
 * stream's last event has been handed over, that it ended; and after each
 * event, an_early_tick().  A reader that cannot tell a stream's end says
 * nothing: no early hang is then said. */
void an_streams_expect(struct an_state *an, int host, uint64_t n);
void an_stream_ended(struct an_state *an, int host);
void an_early_scan(struct an_state *an);
static inline void an_early_tick(struct an_state *an)
{
	if (an->early_out && (an->early_ntimeouts != an->ntimeouts ||
			      (an->early_armed && an->events >= an->early_next)))
		an_early_scan(an);
}
/* The test itself, for any tracker of the matcher's state: 1 if comm c's
 * oldest unfinished collective can no longer complete, every member having
 * entered it or said all it will (ended(ctx, proc)) behind it, with the
 * global ranks of each side in out's wait and miss (room for c->nmembers
 * each), its seq and op. */
struct an_early_hang {
	uint64_t seq;
	int op, nwait, nmiss;
	int64_t *wait, *miss;
};
int an_early_hang(struct an_state *an, struct an_comm *c, int (*ended)(void *ctx, int proc),
		  void *ctx, struct an_early_hang *out);
/* After an_finish: each hang said early is among those found, or is
 * said not to be. */
void an_early_confirm(struct an_state *an);

/* ---- finish.c --------------------------------------------------------- */

/* End of trace: hangs found, the tables in the order they are printed. */
void an_finish(struct an_state *an);
void an_finish_free(struct an_state *an);

#endif
