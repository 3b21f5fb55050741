/*
 * Inside preload/watchdog: the timing events, their pools and the pending calls
 * (a timed call on its way to completion) that timing.c makes, the
 * watchdog polls and the hang report lists.  Nothing outside watchdog/
 * needs them: a call sees only its comm's pool pointer.
 */
#ifndef NCCLGUARD_TIMING_H
#define NCCLGUARD_TIMING_H

#include "queue.h"
#include "watchdog.h"

struct ng_ev {
	cudaEvent_t ev;
	struct ng_pool *pool;
	struct ng_queue *home;		/* the pool's free timing events or markers */
	int refs;
};
struct ng_pool {
	int dev;
	cudaStream_t anchor_stream;
	struct ng_ev *evs;
	struct ng_queue free;		/* timing events */
	struct ng_queue marks;		/* cudaEventDisableTiming: completion only */
	/* Written by the watchdog only once running. */
	struct ng_ev *anchor, *spare_anchor;
	uint64_t anchor_host_ns, anchor_try_ns;
	int anchor_loose;		/* not seen complete: replace it soon */
};
struct ng_pending {
	struct ng_comm *comm;
	uint64_t seq, p2p_seq;
	int fn;
	uint64_t bytes;
	cudaStream_t stream;
	struct ng_ev *start, *end;	/* start NULL: end is a marker, no times */
	uint64_t enter_ns;
	int root;
	const char *site;
	uint64_t index;			/* comm call index it confirms */
	int probe;			/* a watchdog probe, not a call */
	int traced;			/* its coll_enqueue was recorded */
};
extern struct ng_queue ng_pending_queue;
/* Record a probe after the last call of the comm (watchdog thread). */
int ng_timing_probe(struct ng_comm *c, uint64_t index);
extern uint64_t ng_timing_dropped;
/* Records `ev` on the pool's idle anchor stream and waits briefly for it:
 * 0 with *host_ns the host time it was seen complete, 1 if it was not
 * within the wait (*host_ns then the time of the record), -1 on error. */
int ng_timing_anchor(struct ng_pool *p, struct ng_ev *ev, uint64_t *host_ns);
struct ng_pool *ng_timing_pool(int dev);
/* A nonblocking comm's pending call waits until ncclCommGetAsyncError leaves
 * InProgress (ng_timing_undefer). */
void ng_timing_defer(struct ng_comm *c, struct ng_pending *f);
void ng_timing_close(struct ng_pending *f);
void ng_pending_put(struct ng_pending *f);
void ng_ev_put(struct ng_ev *e);
/* A marker recorded on s now (a reference, ng_ev_put), NULL if none. */
struct ng_ev *ng_timing_marker(struct ng_pool *p, cudaStream_t s);
/* confirm.c: a probe's confirmation of the untimed calls it covers. */
void ng_confirm_take(struct ng_comm *c, cudaStream_t stream);
void ng_confirm_emit(struct ng_comm *c);

#endif
