/*
 * The insides of `ncclguard watch`, shared by its files only (the module's
 * public header is live.h).  From the top; each calls only files below it:
 *
 *   watch.c     ng_watch(): reports on time, the relay's silence watched
 *               (cut.c), SIGINT and SIGTERM, the end
 *   reader.c    the thread that talks to the relay: sessions found and
 *               attached, each read in turn, reattached after a cut
 *   cut.c       the connections to the relay, cut to end a call it does
 *               not answer
 *   twins.c     the relayd's own session list, where two sessions of one
 *               host and name are two (babeltrace2 merges them)
 *   print.c     a progress report and the hang findings, text or JSON
 *   silent.c    what heartbeats add to a hang: the ranks not seen, the
 *               ranks gone silent; text and JSON
 *   hwprint.c   hardware changes as they come, what a host's sampler
 *               cannot read, the changes near a hang
 *   fpprint.c   the data mismatches as they are settled, the counts
 *   stragprint.c  the stragglers as they are named and as they end
 *   metrics.c   the /metrics endpoint: an HTTP server's thread
 *   metrics_text.c  the tracker and the counts in Prometheus' formats
 *   sessions.c  the relayd's live sessions (the `sessions` query)
 *   ports.c     which of a relayd's ports a URL that could not be listed
 *               names (its control or data port instead of the live one)
 *   source.c    one session: a graph src.ctf.lttng-live -> our sink,
 *               events decoded (events/) into the tracker
 *   track.c     the progress tracker: processes, communicators, each
 *               member's last collective, the hangs
 *   beat.c      heartbeats: a waiting rank's position, all a viewer that
 *               attached late knows of it
 *   hw.c        the hosts' hardware changes (hw_change, hw_device): kept
 *               for the hang line, queued to be printed
 *   mcount.c    what /metrics counts beside the tracker: calls, time in
 *               NCCL, per op and size, events lost, hardware changes
 *   fp.c        the output fingerprints: gathered per (comm, seq),
 *               compared once settled, the mismatches queued to be printed
 *   straggle.c  the arrivals per (comm, seq), each rank's lateness, its
 *               windows judged (common/straggle.h), the changes queued
 *   util.c      allocation and the map
 *
 * The tracker keeps per communicator member only the last collective it
 * entered and completed, and per communicator a ring of the first entry
 * time of the collectives in flight, so memory grows with ranks and
 * communicators, not with the job's length, and an event costs two map
 * lookups.
 */
#ifndef NCCLGUARD_LV_PRIV_H
#define NCCLGUARD_LV_PRIV_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "events.h"
#include "live.h"
#include "straggle.h"
#include "u64map.h"

/* ---- util.c ----------------------------------------------------------- */

/* Out of memory ends the command (what it holds is all it could show). */
void *lv_xcalloc(size_t n, size_t sz);
void *lv_xrealloc(void *p, size_t sz);
char *lv_xstrdup(const char *s);
int64_t lv_mono_ns(void);		/* CLOCK_MONOTONIC */
int64_t lv_real_ns(void);		/* CLOCK_REALTIME */

/* ng_u64map_put that ends the command when out of memory. */
void lv_map_put(struct ng_u64map *m, uint64_t key, int32_t val);
uint64_t lv_mix(uint64_t a, uint64_t b);	/* two keys as one */

/* ---- hw.c ------------------------------------------------------------- */

#define LV_HW_KEEP	1024	/* changes kept (a ring): the hang line's */
#define LV_HW_UNSEEN	64	/* what samplers cannot read, kept to be said */
#define LV_HW_WINDOW_S	30	/* changes this long before a hung call began */

struct lv_hw_change {
	int host, job;
	int ctr;		/* hw_counters.def's id; -1: unknown to this build */
	char device[48], counter[40];
	uint64_t before, after;
	int64_t time;		/* its host's trace clock */
	int flags;		/* hw.h's NG_HW_* */
};

struct lv_hw_unseen {
	int host, job, said;
	char device[48], what[192];
};

/* A host's sampler, as its hw_sample events say. */
struct lv_hw_sampler {
	int host, job;
	int ended;		/* its hw_sample "end" came */
};

struct lv_hw {
	struct lv_hw_change *ring;	/* LV_HW_KEEP, by number mod LV_HW_KEEP */
	uint64_t n;			/* changes met */
	uint64_t printed;		/* changes printed (or passed over) */
	struct lv_hw_unseen unseen[LV_HW_UNSEEN];
	int nunseen;
	struct lv_hw_sampler *samplers;	/* those seen start */
	int nsamplers;
};

/* A change kept near a hang. */
struct lv_hw_near {
	const struct lv_hw_change *c;
	int of_missing;		/* on a missing rank's host (else a waiting one's) */
	double rel_s;		/* its time less the call's start */
};

struct lv_state;
struct lv_hang;
struct ev_rec_hw;
void lv_hw_free(struct lv_hw *hw);
void lv_hw_change(struct lv_hw *hw, int host, int job, const struct ev_rec_hw *r);
void lv_hw_device(struct lv_hw *hw, int host, int job, const struct ev_rec_hw *r);
void lv_hw_sample(struct lv_hw *hw, int host, int job, const struct ev_rec_hw *r);
/* Whether host's sampler for job is known to run: its start seen (watch
 * attached before it), its end not. */
int lv_hw_sampled(const struct lv_hw *hw, int host, int job);
/* Whether a change is evidence of trouble: a count's rise, a state's
 * change, an Xid, traffic stopped, a counter saturated (levels are not). */
int lv_hw_evidence(const struct lv_hw_change *c);
/* The evidence on the hosts of h's missing ranks, then of its waiting
 * ranks, since LV_HW_WINDOW_S before the call began; each group by
 * nearness to that start.  Returns how many (*out: free). */
int lv_hw_near(const struct lv_state *st, const struct lv_hang *h, struct lv_hw_near **out);

/* ---- fp.c ------------------------------------------------------------- */

#define LV_FP_PENDING	256	/* (comm, seq) awaiting fingerprints, per comm */
#define LV_FP_SETTLED	256	/* settled seqs remembered per comm: later ones
				 * are late */
#define LV_FP_COMMS	64	/* comms whose fingerprints are kept */
#define LV_FP_QUEUE	64	/* mismatches awaiting their line */
#define LV_FP_SETTLE_S	10	/* a (comm, seq) is settled this long after its
				 * first fingerprint, if not every rank's came */

/* One rank's fingerprint of one call. */
struct lv_fp_mark {
	int proc;
	uint64_t hash;
	uint64_t slices;	/* a hash of its slices string */
};

/* One sampled (comm, seq), its fingerprints coming in. */
struct lv_fp_call {
	uint64_t seq, bytes, compared;
	int64_t first;		/* its first fingerprint's arrival (monotonic) */
	int64_t nranks;
	char op[16];
	struct lv_fp_mark *m;
	int n, cap;
};

/* A communicator's verification: its pending calls and counts. */
struct lv_fp_comm {
	struct lv_fp_call pend[LV_FP_PENDING];
	int npend;
	uint64_t settled[LV_FP_SETTLED];	/* by number mod LV_FP_SETTLED */
	uint64_t nsettled;
	uint64_t compared;	/* (comm, seq) of two or more ranks compared */
	uint64_t mismatched;	/* ... whose fingerprints differed */
	uint64_t unpaired;	/* ... of one rank only, or slices that differ */
};

/* A settled call whose fingerprints differed.  procs[] in rank order
 * within each group; groups by size, the largest first. */
struct lv_fp_mismatch {
	int job;
	uint64_t comm, seq, bytes, compared;
	char op[16];
	int majority;		/* groups[0] holds more than half the ranks */
	int n, ngroups;
	int *procs, *group;	/* n each: the process, its group */
};

struct lv_fp {
	int ncomms;			/* comms with a struct lv_fp_comm */
	struct lv_fp_mismatch queue[LV_FP_QUEUE];
	int nqueue;
	/* fingerprints dropped, by why */
	uint64_t over_comms;		/* of a comm past LV_FP_COMMS */
	uint64_t late;			/* after their (comm, seq) was settled */
	uint64_t unidentified;		/* of a process whose rank never came */
	uint64_t evicted;		/* calls settled early: LV_FP_PENDING full */
	uint64_t unprinted;		/* mismatches past LV_FP_QUEUE */
	uint64_t reported;		/* mismatches printed */
};

struct lv_comm;
struct ev_rec_fp;
/* A fingerprint of process proc on comm c; mono: now. */
void lv_fp_add(struct lv_state *st, struct lv_comm *c, int proc, const struct ev_rec_fp *r,
	       int64_t mono);
/* Settles the calls whose first fingerprint is LV_FP_SETTLE_S old. */
void lv_fp_settle(struct lv_state *st, int64_t mono);
/* Groups n marks by hash: grp[i] the group of mark i, groups by size,
 * the largest first (ties: first met first).  Returns the number of
 * groups. */
int lv_fp_group(const struct lv_fp_mark *m, int n, int *grp);
void lv_fp_comm_free(struct lv_fp_comm *fc);
void lv_fp_free(struct lv_fp *fp);

/* ---- beat.c ----------------------------------------------------------- */

/* A rank's heartbeats stop (its process stopped, its host frozen) when
 * none came for LV_SILENT_PERIODS periods and LV_SILENT_SLACK_NS more. */
#define LV_SILENT_PERIODS	2
#define LV_SILENT_SLACK_NS	2000000000LL
/* A comm known by its heartbeats: its ranks not seen are judged after one
 * period and this, the time every waiting rank's beat takes to come. */
#define LV_BEAT_SETTLE_NS	2000000000LL
#define LV_BEAT_PERIOD_NS	2000000000LL	/* when a beat says none */

struct ev_rec_coll;
struct lv_proc;
struct lv_member;
/* Heartbeat ev of process p, on comm c as member m (both NULL
 * for a beat of no comm): what it says of the process and the member.  1
 * and *entered when it tells the entry into the call it waits in and
 * that entry is not known: the caller enters it as it enters a call. */
int lv_beat(struct lv_state *st, struct lv_proc *p, struct lv_comm *c, struct lv_member *m,
	    const struct ev_event *ev, struct ev_rec_coll *entered);
/* The pending seq of comm c whose known members all entered `seq`: seq
 * when ranks of it are not seen, the comm's heartbeats had time to come
 * from every rank that waits, one says it waits in seq and none saw it
 * complete; else 0. */
uint64_t lv_beat_pending(const struct lv_comm *c, uint64_t seq, int64_t mono);

/* ---- straggle.c ------------------------------------------------------ */

/* Calls awaiting arrivals, per comm (a ring): as many as LV_STRAG_BYTES
 * of arrivals hold, within [LV_STRAG_CALLS_MIN, LV_STRAG_CALLS_MAX].  A
 * job that enqueues ahead keeps its punctual ranks that many calls ahead
 * of a slow one, each call awaiting the slow rank's arrival. */
#define LV_STRAG_BYTES		(1 << 20)
#define LV_STRAG_CALLS_MIN	64
#define LV_STRAG_CALLS_MAX	4096
static inline int lv_strag_ncalls(int cap)
{
	long n = LV_STRAG_BYTES / ((long)cap * (long)sizeof(int64_t));

	return n < LV_STRAG_CALLS_MIN ? LV_STRAG_CALLS_MIN :
	       n > LV_STRAG_CALLS_MAX ? LV_STRAG_CALLS_MAX : (int)n;
}
#define LV_STRAG_WINS	16	/* a member's last windows judged */
#define LV_STRAG_NAME	4	/* late windows of those, at least, to name one */
#define LV_STRAG_END	4	/* fewer late windows than this: it ended */
#define LV_STRAG_QUEUE	64	/* changes awaiting their line */

/* One call's arrivals, by member index (INT64_MIN: not yet). */
struct lv_strag_call {
	uint64_t seq;		/* 0: free */
	int n;			/* arrivals in; -1: judged */
	int coarse;		/* one arrival is a coarse time: not judged */
	int64_t *enter;
};

/* A member's windows on one comm. */
struct lv_strag_member {
	int64_t late[NG_STRAG_WIN], spread[NG_STRAG_WIN], cycle[NG_STRAG_WIN];
	int fill;
	uint64_t nwin;			/* windows judged */
	uint8_t was_late[LV_STRAG_WINS];	/* the last ones, by number mod */
	int64_t med[LV_STRAG_WINS];	/* ... their median lateness */
	int named;			/* a straggler now */
};

struct lv_strag_comm {
	struct lv_strag_call *calls;	/* ncalls, by seq */
	int ncalls;
	int cap;			/* members held: the comm's size then */
	struct lv_strag_member *m;	/* cap, by member index */
	int64_t *enter, *dev, *spread;	/* cap each: one call's figures */
	void *scratch;
	uint64_t prev_seq;		/* the last call judged (0: none) */
	int64_t prev_start;		/* ... its last arrival */
};

/* A straggler named, or ended, awaiting its line. */
struct lv_strag_change {
	int proc, job, start;
	uint64_t comm;
	int64_t late_ns;	/* the mean of the late windows' medians */
	int late_wins, wins;	/* of the member's last windows */
};

struct lv_strag {
	struct lv_strag_change queue[LV_STRAG_QUEUE];
	int nqueue;
	uint64_t unprinted;	/* changes past LV_STRAG_QUEUE */
	uint64_t named;		/* stragglers named (printed) */
};

struct lv_comm;
struct ev_rec_coll;
/* Member mi (index in c->m) of comm c entered r. */
void lv_strag_enter(struct lv_state *st, struct lv_comm *c, int mi, const struct ev_rec_coll *r);
void lv_strag_comm_free(struct lv_strag_comm *sc);

/* ---- mcount.c: what /metrics counts beside the tracker ---------------- */

#define LV_MX_ROWS	256	/* (job, op, size class, comm size) rows */
#define LV_MX_HW	1024	/* (job, host, device, counter) rows */
#define LV_MX_OPS	32	/* op names */

struct lv_mx_proc {		/* by index in procs[] */
	uint64_t calls;		/* calls entered (coll_enqueue) */
	uint64_t timed;		/* completions seen with a duration */
	int64_t timed_ns;	/* their durations */
	uint64_t timeouts;
};

struct lv_mx_row {		/* calls of one op and size class */
	int job, op, size_class;	/* size_class: ng_size_class(); -1: 0 B */
	int64_t nranks;
	uint64_t calls, timed;
	int64_t timed_ns;
	double bus_bytes;	/* the timed calls' bytes times busbw's factor */
};

struct lv_mx_lost {		/* by host */
	uint64_t implausible;	/* dropped by the decoder */
	uint64_t discarded;	/* lost by the tracer (its buffers full) */
};

struct lv_mx_hw {
	int job, host;
	char device[48], counter[40];
	uint64_t changes, value;	/* value: the latest "after" */
};

struct lv_mx {
	int on;				/* --metrics given: count */
	struct lv_mx_proc *proc;
	int nproc;
	struct lv_mx_row rows[LV_MX_ROWS];
	int nrows;
	uint64_t rows_over;		/* calls past LV_MX_ROWS rows */
	char *ops[LV_MX_OPS];
	int nops;
	struct lv_mx_lost *lost;
	int nlost;
	struct lv_mx_hw *hw;
	int nhw;
	uint64_t hw_over;		/* changes past LV_MX_HW rows */
};

struct ev_event;
/* One event of process proc (-1: a host's, such as hw_change) of job j. */
void lv_mx_event(struct lv_state *st, int proc, int j, const struct ev_event *ev);
/* Events of host lost: n dropped by the decoder, or discarded by the
 * tracer. */
void lv_mx_lost(struct lv_state *st, int host, int discarded, uint64_t n);
void lv_mx_free(struct lv_mx *mx);

/* ---- metrics_text.c --------------------------------------------------- */

#define LV_MX_TEXT	0	/* Prometheus' text format 0.0.4 */
#define LV_MX_OPENMETRICS 1	/* OpenMetrics 1.0 */
/* Everything /metrics serves, in one of those formats; under st->lock.
 * 0 and *out (free), or -1 (out of memory). */
int lv_mx_render(const struct lv_state *st, int fmt, char **out, size_t *len);
/* What each format is served as. */
const char *lv_mx_content_type(int fmt);

/* ---- metrics.c -------------------------------------------------------- */

struct lv_mx_server;
/* Serves st's /metrics on opts.metrics from a thread of its own; NULL
 * after saying why on stderr (the address taken, refused). */
struct lv_mx_server *lv_mx_start(struct lv_state *st);
void lv_mx_stop(struct lv_mx_server *srv);

/* ---- track.c ---------------------------------------------------------- */

#define LV_JOBS_MAX	16
#define LV_OPS_MAX	32
#define LV_RING		4096	/* collectives in flight remembered per comm */

struct lv_job {
	uint64_t tag;
	char id[64];		/* process_info's job_id; "" if none came */
	int nproc;		/* processes seen in it */
	int64_t world_size;	/* the largest process_info says */
};

struct lv_host {
	char *name;
	int doubled;		/* two sessions of one name at the relay */
};

struct lv_proc {
	int host, sess;		/* sess: whose clock its times are on */
	int job;		/* index in jobs[], -1: past LV_JOBS_MAX */
	int64_t vpid, pid, rank;	/* rank -1 until process_info */
	int has_info;
	/* The live straggler rule's: how late it arrives now, ns (0: not
	 * late), and whether it is named a straggler now. */
	int64_t late_ns;
	int straggler;
	/* beat.c's: its latest heartbeat (its host's clock; 0: none) and
	 * the period it promised; its latest event of any kind */
	int64_t beat_ts, beat_period, heard_ts;
};

struct lv_member {		/* a process on a communicator */
	int proc;
	int64_t comm_rank;	/* -1 until its init */
	uint64_t last_seq;	/* last collective entered */
	int64_t last_enter;	/* its entry, on its host's trace clock */
	uint64_t done_seq;	/* last collective it saw complete (sampled) */
	int64_t init_begin, init_end;	/* its comm_init_begin, _end (0: none) */
	int ended;		/* comm_end came */
	uint64_t beat_wait;	/* the seq its latest heartbeat waits in (0: none) */
};

struct lv_slot {		/* the first entry into one seq */
	uint64_t seq;
	int64_t enter;
	int proc;
	uint8_t op;
};

struct lv_comm {
	uint64_t hash;
	int job;
	int64_t nranks;
	struct lv_member *m;
	int nm, cap;
	struct ng_u64map member_of;	/* proc -> index in m */
	struct lv_slot *ring;		/* LV_RING, by seq */
	uint64_t hang_seq;		/* the hang reported (0: none;
					 * UINT64_MAX: its init) */
	uint64_t resolved_seq;		/* a hang gone since the last report */
	int64_t pending_seen;		/* when the watch first saw the
					 * current pending seq (monotonic) */
	uint64_t pending_seq;
	struct lv_fp_comm *fp;		/* its fingerprints (NULL: none yet) */
	int64_t beat_first;		/* its first heartbeat's arrival
					 * (monotonic; 0: none) */
	int64_t beat_period;		/* the longest period its beats say */
	struct lv_strag_comm *strag;	/* its arrivals (NULL: none yet) */
};

/* A session's clock: its latest trace time (events and the relayd's
 * inactivity beacons) and our monotonic time then, so its current time
 * is known on its own clock, whatever the offset between hosts. */
struct lv_clock {
	int64_t ts, mono;
	int64_t last_event_ts;	/* the latest event's time */
};

/* A hang as found at a report: the pending seq of one comm. */
struct lv_hang {
	const struct lv_comm *comm;
	uint64_t seq;
	const char *op;
	double waited_s;
	int *wait, *miss;	/* proc indexes */
	int nwait, nmiss;
	int64_t unseen;		/* comm ranks of no process seen */
	int64_t began;		/* the call's first entry, on that rank's host
				 * clock; 0: unknown */
	int is_new;
	/* silent.c's (lv_silent_hangs) */
	int64_t *unseen_rank;	/* the comm ranks not seen (NULL: not known) */
	int nunseen_rank;	/* listed, at most LV_UNSEEN_LIST */
	int unseen_job_ranks;	/* they are the job's ranks too */
	struct lv_silent *silent;
	int nsilent;
};

/* A watchdog's timeout, printed at the next report. */
struct lv_timeout {
	int proc;
	uint64_t comm, seq, waited_ns;
	char op[24], action[12], what[16];
};

struct lv_state {
	/* held by the reader while it feeds events, by the reports and by
	 * every line written */
	pthread_mutex_t lock;
	struct ng_watch_opts opts;
	uint64_t want_tag;	/* --job's tag */
	int want_job;		/* --job given */
	struct lv_job jobs[LV_JOBS_MAX];
	int njobs;
	struct lv_host *hosts;
	int nhosts;
	struct lv_proc *procs;
	int nprocs;
	struct lv_comm **comms;
	int ncomms;
	struct ng_u64map proc_map, comm_map, host_map;
	char *ops[LV_OPS_MAX];
	int nops;
	struct lv_clock *clocks;	/* one per session */
	int nclocks;
	struct lv_timeout *timeouts;
	int ntimeouts;
	struct lv_hw hw;
	struct lv_fp fp;
	struct lv_strag strag;
	struct lv_mx mx;		/* /metrics' counts (mcount.c) */
	uint64_t events, dropped;	/* events read; dropped: another job's */
	uint64_t timeouts_more;
	int hangs_reported;
	uint64_t events_at_report;	/* at the previous report */
	int64_t mono_at_report, mono_start;
};

void lv_state_init(struct lv_state *st, const struct ng_watch_opts *opts);
void lv_state_free(struct lv_state *st);
int lv_host_id(struct lv_state *st, const char *name);
/* One decoded event of session sess; ev_body() already taken. */
void lv_event(struct lv_state *st, int sess, const struct ev_event *ev);
/* Session sess's clock read ts (an event or a beacon) at monotonic mono. */
void lv_clock_at(struct lv_state *st, int sess, int64_t ts, int64_t mono, int event);
/* The job to show (index in jobs[], -1: none yet). */
int lv_shown_job(const struct lv_state *st);
/* The hangs of job j now (at monotonic time mono); lv_hangs_free. */
int lv_hangs(struct lv_state *st, int j, int64_t mono, struct lv_hang **out);
void lv_hangs_free(struct lv_hang *h, int n);
/* Session sess's current time on its own clock; 0: unknown. */
int64_t lv_sess_now(const struct lv_state *st, int sess, int64_t mono);
const char *lv_op_name(const struct lv_state *st, int op);

/* ---- source.c: one session ------------------------------------------- */

struct lv_session;
/* A graph on `url` (net://R:P/host/H/NAME) for session number sess; NULL
 * after saying why on stderr. */
struct lv_session *lv_session_open(struct lv_state *st, int sess, const char *url);
/* Reads what is there, at most `budget` batches: 1 something came, 0
 * nothing yet, else one of these, with why in `why` where it failed. */
#define LV_STEP_ENDED	(-1)	/* the session ended */
#define LV_STEP_FAILED	(-2)	/* reading it failed */
#define LV_STEP_HELD	(-3)	/* another live viewer holds it */
int lv_session_step(struct lv_session *s, int budget, char *why, size_t len);
void lv_session_close(struct lv_session *s);

/* ---- sessions.c ------------------------------------------------------- */

/* babeltrace2's src.ctf.lttng-live; NULL with why in err. */
struct bt_component_class_source;
const struct bt_component_class_source *lv_live_class(char *err, size_t errlen);

struct lv_listed {
	char *url, *host, *name;
	uint64_t clients;	/* viewers already attached */
};
/* The relayd's live sessions: 0 and *out (lv_listed_free), or -1 with
 * why in err. */
int lv_list_sessions(const char *relay_url, struct lv_listed **out, int *n, char *err,
		     size_t errlen);
void lv_listed_free(struct lv_listed *l, int n);
/* "net://HOST[:PORT]" alone (0), a session's URL (1), or neither (-1). */
int lv_url_kind(const char *url);

/* ---- ports.c ---------------------------------------------------------- */

/* For a relayd URL whose sessions could not be listed: 1 and a line in
 * hint when its port is, by what its neighbours answer, a relay's control
 * or data port (naming the live port to use); 0 when nothing is known. */
int lv_port_hint(const char *url, char *hint, size_t len);

/* ---- cut.c ---------------------------------------------------------- */

#define LV_PEER_MAX	8

/* The relay's addresses, resolved before any call to it. */
struct lv_peer {
	struct sockaddr_storage a[LV_PEER_MAX];
	int n;			/* 0: not resolved, any address */
	int port;
};
void lv_peer_of(const char *url, struct lv_peer *p);
/* Shuts down every connection of this process to the peer: a call
 * blocked reading it returns at once.  Returns how many. */
int lv_cut(const struct lv_peer *p);

/* ---- twins.c -------------------------------------------------------- */

struct lv_twin {
	char host[65], name[256];
};
/* Every session the relayd lists, as it lists them: 0 and *out (free),
 * or -1. */
int lv_twins(const struct lv_peer *p, struct lv_twin **out, int *n);

/* ---- reader.c --------------------------------------------------------- */

struct lv_reader {
	struct lv_state *st;
	const struct lv_peer *peer;
	char **urls;			/* every session met, by URL */
	char **hosts;			/* ... and the host the relay lists it under */
	struct lv_session **s;		/* NULL: not open */
	unsigned char *held;		/* another live viewer holds it */
	unsigned char *lost;		/* its connection was cut: attach again */
	unsigned *good_cut;		/* cuts as of its last good answer */
	int n, open, nheld;		/* under st->lock */
	int listed;			/* the relay answered a listing once */
	int status;			/* when it ended alone: 0, or 1 (said why) */
	pthread_t thread;
	/* shared with watch.c, through __atomic_* */
	int64_t busy_since;		/* a call to the relay under way since
					 * (monotonic ns), 0: none */
	unsigned cuts;			/* connections cut by watch.c */
	int stop, done;
};
/* Starts the thread; 0, or -1 (why on stderr). */
int lv_reader_start(struct lv_reader *r, struct lv_state *st, const struct lv_peer *peer);
/* After `done`, or to free what a thread that did not end left: joins
 * it when done. */
void lv_reader_free(struct lv_reader *r);

/* ---- hwprint.c -------------------------------------------------------- */

/* The hardware changes met since the last call, and what the hosts'
 * samplers said they cannot read: text lines, or JSON records of type
 * hardware and hardware_unseen.  Text leaves out levels and traffic
 * (--json has every change). */
void lv_hw_print_new(struct lv_state *st);
/* The changes near hang h: text "; near it: ..." (when none, the hang's
 * hosts whose sampler is known to run: "; no hardware change near it on
 * H"), or JSON members "hardware": [...], "hardware_sampled_hosts": [...]. */
void lv_hw_hang_text(FILE *f, const struct lv_state *st, const struct lv_hang *h);
void lv_hw_hang_json(FILE *f, const struct lv_state *st, const struct lv_hang *h);

/* ---- fpprint.c ------------------------------------------------------- */

/* Settles what is due and prints the mismatches queued: text lines
 * ("data mismatch: ..."), or JSON records of type data_mismatch. */
void lv_fp_print_new(struct lv_state *st, int64_t mono);
/* Job j's verification so far, for a report: one text line (nothing
 * where no fingerprint came), or the JSON member "verification": [...]
 * with "verification_dropped": {...}. */
void lv_fp_report_text(FILE *f, const struct lv_state *st, int j);
void lv_fp_report_json(FILE *f, const struct lv_state *st, int j);

/* ---- stragprint.c ---------------------------------------------------- */

/* The stragglers named and ended since the last call: text lines
 * ("straggler: ...", "straggler ended: ..."), or JSON records of type
 * straggler. */
void lv_strag_print_new(struct lv_state *st);

/* ---- silent.c --------------------------------------------------------- */

#define LV_UNSEEN_LIST	1024	/* comm ranks not seen named, at most */

/* A rank of a hang whose heartbeats stopped while others' go on. */
struct lv_silent {
	int proc;
	double for_s;		/* since its latest heartbeat, its host's clock */
};

/* Fills hangs h[0..n) with the ranks not seen and the silent ones. */
void lv_silent_hangs(struct lv_state *st, struct lv_hang *h, int n, int64_t mono);
/* Text: "; not seen: rank(s) L" (1, or 0 where the comm ranks are not
 * known: the caller counts them), and "; silent: ...". */
int lv_unseen_text(FILE *f, const struct lv_hang *h);
void lv_silent_text(FILE *f, const struct lv_state *st, const struct lv_hang *h);
/* JSON members "unseen_comm_ranks": [...] (null: not known), "silent":
 * [...], each followed by ", ". */
void lv_silent_json(FILE *f, const struct lv_state *st, const struct lv_hang *h);

/* ---- print.c ---------------------------------------------------------- */

/* A progress report of the job shown, its hangs and the timeouts since
 * the last one; final: the last report. */
void lv_report(struct lv_state *st, int64_t mono, int nsess_open, int nsess, int nheld,
	       int final);
/* A line about the watch itself ("attached to ..."): text, or JSON
 * {"type": "note", "note": ...}. */
void lv_note(struct lv_state *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
