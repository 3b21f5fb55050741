/*
 * Recording sessions for `ncclguard run` (session.c, through liblttng-ctl).
 * One session records `ncclguard:*` of one job's processes of this user on
 * this host into one directory (a filter on the events' job tag): a UST channel with per-UID buffers (they belong
 * to the consumer daemon, so a rank killed with SIGKILL keeps what it wrote)
 * in discard mode, with vpid, vtid and procname contexts.
 */
#ifndef NCCLGUARD_SESSION_H
#define NCCLGUARD_SESSION_H

#include <limits.h>
#include <stdint.h>

#define NG_SESSION_CHANNEL "ncclguard"

struct ng_session {
	char name[192];
	char outdir[PATH_MAX];	/* "" when the trace goes to a relay daemon */
	int created;		/* exists in the session daemon: destroy it */
	int started;
	uint64_t discarded;	/* events dropped because the buffers were full */
	uint64_t lost_packets;
	int lost_unknown;	/* LTTng gave a count that cannot be one */
	char error[160];	/* the first failure of stop or destroy, "" if none */
};

/* What ng_trace_repair found in a trace folder. */
struct ng_trace_check {
	int streams;		/* data stream files */
	int cut;		/* of them, ending inside a packet: trimmed */
	uint64_t cut_bytes;	/* bytes of partial packets removed */
	int index_dropped;	/* indexes that did not list a stream's packets */
	int unknown;		/* streams not made of packets we know: left as they are */
	int metadata;		/* metadata files */
	int metadata_empty;	/* of them, empty: their streams cannot be read */
	uint64_t bytes;		/* every file's size, after trimming */
	int event_packets;	/* whole packets that hold events */
};

/* Makes sure a session daemon answers, starting `lttng-sessiond
 * --daemonize` (the system one as root, the user's otherwise) when none
 * does.  *spawned is set when we started it.  Returns 0, or -1 after
 * saying why on stderr. */
int ng_sessiond_ensure(int *spawned);

/* Every second a live session hands its buffers to the relay daemon, so
 * that a live reader (`ncclguard watch`) sees events within that delay. */
#define NG_SESSION_LIVE_TIMER_US 1000000u

/* Creates, configures and starts a session recording the events of the
 * job whose tag is `job` (common/job.h; 0: of every job) into `outdir`
 * (an absolute path), or, when `relay` is not NULL, a live session
 * streaming them to the lttng-relayd at that URL (net://HOST:CTRL:DATA).
 * The session is named ncclguard-<pid>-<time>-<job id>, the id cut to
 * [A-Za-z0-9._-] (`job_id` may be NULL).  On failure, whatever was
 * created is destroyed and -1 is returned after saying why on stderr. */
int ng_session_start(struct ng_session *s, const char *outdir, const char *relay,
		     const char *job_id, uint64_t job);

/* Attaches s to the existing session `name` (another process started it)
 * so that ng_session_finish can stop and destroy it. */
void ng_session_adopt(struct ng_session *s, const char *name, const char *outdir);

/* Stops the session (waiting until the consumer has written every buffer),
 * reads the lost-event counts into s, and destroys it.  Safe on a session
 * that failed to start.  Returns 0, or -1 when any step failed (the first
 * failure's words in s->error). */
int ng_session_finish(struct ng_session *s);

/* 1 if the session daemon still knows s (another process, a fork of its
 * creator, may have destroyed it), 0 if not, -1 if it cannot tell. */
int ng_session_exists(const struct ng_session *s);

/* Loads libncclguard-tp.so (`tp`) in a short-lived child, which registers
 * this user with the running session: the consumer then writes the
 * trace's metadata before any event.  A disk that fills later cuts
 * streams, not the metadata every stream needs.  Waits until the metadata
 * is on disk, at most a few seconds.  Returns 0, or -1 (why, on stderr). */
int ng_session_prime(const struct ng_session *s, const char *tp);

/* After stop, on a trace folder of ours (outdir/ust/uid/...): a stream
 * that ends inside a packet (a write cut by a full disk) is trimmed to its
 * last whole packet, and an index that does not list its packets is
 * removed, so that the rest stays readable; the findings go to *c.
 * Returns 0, or -1 when the folder cannot be read. */
int ng_trace_repair(const char *outdir, struct ng_trace_check *c);

#endif
