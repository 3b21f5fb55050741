/*
 * Splits and shrinks whose comm comes later.  The table is written by the
 * wrappers and read by the watchdog, which times each entry as an init
 * and names it in the hang report.
 */
#include <pthread.h>
#include <string.h>

#include "watchdog.h"

/*
 * A split or shrink whose comm comes later: NCCL writes the new comm into
 * the program's variable only once it is ready (NULL until then), when
 * the parent's state leaves in progress (nonblocking; the program polls
 * it with ncclCommGetAsyncError) or when the group ends.  What we know of
 * the comm waits here until the handle appears; the watchdog times it as
 * an init meanwhile.
 */
#define NG_PENDING_SPLITS 64
static struct pending_split {
	ncclComm_t *out;		/* the program's variable; NULL: a free entry */
	ncclComm_t parent;		/* by handle: it may be a comm we do not track */
	uint64_t parent_calls;		/* its calls when the split began */
	const void *group;		/* made in this thread's open group: its end
					 * ends the split (a token of the thread) */
	struct ng_ev_comm_init ev;
	uint64_t t0;
	int reported;
} pending[NG_PENDING_SPLITS];
static int npending;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

void ng_split_pending(ncclComm_t *out, ncclComm_t parent,
			  const struct ng_ev_comm_init *ev, uint64_t t0, int in_group)
{
	int i;

	pthread_mutex_lock(&pending_lock);
	for (i = 0; i < NG_PENDING_SPLITS && pending[i].out; i++)
		;
	if (i < NG_PENDING_SPLITS) {
		struct ng_comm *p = ng_comm_find(parent);

		pending[i] = (struct pending_split){
			.out = out, .parent = parent, .ev = *ev, .t0 = t0,
			.group = in_group ? (const void *)&ng_tls : NULL,
			.parent_calls = p ? __atomic_load_n(&p->ncalls, __ATOMIC_RELAXED) : 0 };
		__atomic_store_n(&npending, npending + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&pending_lock);
	if (i == NG_PENDING_SPLITS)
		ng_warn_once("more than %d nonblocking splits in progress at once: the new "
			     "comms are not tracked", NG_PENDING_SPLITS);
}

/* Under pending_lock: the entry's comm is ready (h), or it ended without
 * one (a rank given NCCL_SPLIT_NOCOLOR, a failure, a parent given up:
 * state).  A handle whose own state is still in progress keeps the entry. */
static void split_ended(struct pending_split *e, ncclComm_t h, ncclResult_t state, int dropped)
{
	struct ng_ev_comm_init ev = e->ev;
	ncclResult_t own = ncclSuccess;
	int n = 0, rank = -1;

	/* NCCL writes the handle of a split that failed too, and says so in
	 * the state of the parent (or of the group's end); the CPU backend
	 * in the child's.  A parent given up (dropped): its state is ours. */
	if (h && ng_real.ncclCommGetAsyncError &&
	    ng_real.ncclCommGetAsyncError(h, &own) == ncclSuccess && own == ncclInProgress)
		return;
	if (h && own == ncclSuccess && !dropped && state != ncclSuccess &&
	    state != ncclInProgress)
		own = state;
	if (h && own == ncclSuccess) {
		if (ng_real.ncclCommCount(h, &n) != ncclSuccess ||
		    ng_real.ncclCommUserRank(h, &rank) != ncclSuccess)
			n = 0, rank = -1;
		ev.nranks = n;
		ev.rank = rank;
		ng_comm_created(h, ev.comm_hash, ev.parent_hash, n, rank, ev.blocking, ncclSuccess,
			     &ev, e->t0);
	} else {
		if (h)
			state = own;
		ev.result = state;
		ev.duration_ns = ng_now_ns() - e->t0;
		ng_emit_init(0, &ev);
	}
	e->out = NULL;
	__atomic_store_n(&npending, npending - 1, __ATOMIC_RELEASE);
}

/* The program called on the parent since the split began: NCCL refuses a
 * comm still in progress, so the split was over by then, and the
 * program's variable may be gone (this rank gave NCCL_SPLIT_NOCOLOR and
 * kept nothing, say): its entry ends unread, no comm seen. */
static int moved_on(struct pending_split *e)
{
	struct ng_comm *p = ng_comm_find(e->parent);

	if (!p || __atomic_load_n(&p->ncalls, __ATOMIC_RELAXED) <= e->parent_calls)
		return 0;
	split_ended(e, NULL, ncclSuccess, 1);
	return 1;
}

/*
 * After ncclCommGetAsyncError(comm) said `state`: the splits of comm (a
 * parent) are over unless it is still in progress; a handle we do not know
 * may be one of theirs, polled by the program that now holds it.  The
 * program's variable is read while NCCL may still write it (NCCL's
 * contract keeps it alive until then), and no later: an entry ends at the
 * parent's first poll past the split, with the parent (ng_splits_drop), or
 * unread once the program went on with the parent (moved_on).
 */
void ng_splits_resolve(ncclComm_t comm, struct ng_comm *c, ncclResult_t state, int dropped)
{
	if (!__atomic_load_n(&npending, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&pending_lock);
	for (int i = 0; i < NG_PENDING_SPLITS; i++) {
		struct pending_split *e = &pending[i];

		if (!e->out || moved_on(e))
			continue;
		/* A handle written while the parent is still in progress waits
		 * for the parent's verdict: NCCL writes a failed split's too. */
		if (e->parent == comm && state != ncclInProgress)
			split_ended(e, __atomic_load_n(e->out, __ATOMIC_ACQUIRE), state, dropped);
		else if (!c && comm && __atomic_load_n(e->out, __ATOMIC_ACQUIRE) == comm)
			split_ended(e, comm, ncclSuccess, 0);
	}
	pthread_mutex_unlock(&pending_lock);
}

/* This thread's outermost group ended with r: the splits made in it are
 * over, unless NCCL's group is itself nonblocking (in progress: they wait
 * for polls as the others do). */
void ng_splits_group_end(ncclResult_t r)
{
	if (!__atomic_load_n(&npending, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&pending_lock);
	for (int i = 0; i < NG_PENDING_SPLITS; i++) {
		struct pending_split *e = &pending[i];

		if (!e->out || e->group != (const void *)&ng_tls)
			continue;
		e->group = NULL;
		if (r != ncclInProgress)
			split_ended(e, __atomic_load_n(e->out, __ATOMIC_ACQUIRE), r, 0);
	}
	pthread_mutex_unlock(&pending_lock);
}

/* The parent is destroyed or aborted: its splits end with it, ready if
 * NCCL got that far, else failed (an abort ends NCCL's init with
 * ncclInternalError). */
void ng_splits_drop(ncclComm_t parent)
{
	ng_splits_resolve(parent, NULL, ncclInternalError, 1);
}

/* For the hang report: the splits still in progress. */
void ng_splits_dump(FILE *f, uint64_t now)
{
	int first = 1;

	pthread_mutex_lock(&pending_lock);
	for (int i = 0; i < NG_PENDING_SPLITS; i++) {
		const struct pending_split *e = &pending[i];

		if (!e->out)
			continue;
		fprintf(f, "%s\n    {\"comm_hash\": \"%016llx\", \"parent_hash\": \"%016llx\", "
			"\"kind\": \"%s\", \"init_in_progress_s\": %.1f}",
			first ? "" : ",", (unsigned long long)e->ev.comm_hash,
			(unsigned long long)e->ev.parent_hash, e->ev.kind,
			now > e->t0 ? (now - e->t0) / 1e9 : 0.0);
		first = 0;
	}
	pthread_mutex_unlock(&pending_lock);
}

int ng_splits_overdue(uint64_t now, uint64_t limit_ns, struct ng_split_late *late)
{
	int found = 0;

	if (!__atomic_load_n(&npending, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&pending_lock);
	for (int i = 0; i < NG_PENDING_SPLITS && !found; i++) {
		struct pending_split *e = &pending[i];

		if (!e->out || e->reported || e->t0 >= now || now - e->t0 < limit_ns)
			continue;
		/* The program went on with the parent: not a hang. */
		if (moved_on(e))
			continue;
		e->reported = 1;
		*late = (struct ng_split_late){ .parent = e->parent, .hash = e->ev.comm_hash,
						.kind = e->ev.kind, .t0 = e->t0,
						.grouped = e->group != NULL };
		found = 1;
	}
	pthread_mutex_unlock(&pending_lock);
	return found;
}

/* The parent's splits are the parent's: the child has none pending. */
void ng_splits_reset_after_fork(void)
{
	memset(pending, 0, sizeof(pending));
	npending = 0;
	pthread_mutex_init(&pending_lock, NULL);
}
