/*
 * Recording sessions for `ncclguard run` (session.c, through liblttng-ctl).
 * One session records `ncclguard:*` of every process of this user on this
 * host into one directory: a UST channel with per-UID buffers (they belong
 * to the consumer daemon, so a rank killed with SIGKILL keeps what it wrote)
 * in discard mode, with vpid, vtid and procname contexts.
 */
#ifndef NCCLGUARD_SESSION_H
#define NCCLGUARD_SESSION_H

#include <limits.h>
#include <stdint.h>

#define NG_SESSION_CHANNEL "ncclguard"

struct ng_session {
	char name[64];
	char outdir[PATH_MAX];
	int created;		/* exists in the session daemon: destroy it */
	int started;
	uint64_t discarded;	/* events dropped because the buffers were full */
	uint64_t lost_packets;
};

/* Makes sure a session daemon answers, starting `lttng-sessiond
 * --daemonize` (the system one as root, the user's otherwise) when none
 * does.  *spawned is set when we started it.  Returns 0, or -1 after
 * saying why on stderr. */
int ng_sessiond_ensure(int *spawned);

/* Creates, configures and starts a session writing into `outdir` (an
 * absolute path).  On failure, whatever was created is destroyed and -1
 * is returned after saying why on stderr. */
int ng_session_start(struct ng_session *s, const char *outdir);

/* Stops the session (waiting until the consumer has written every buffer),
 * reads the lost-event counts into s, and destroys it.  Safe on a session
 * that failed to start.  Returns 0, or -1 when any step failed. */
int ng_session_finish(struct ng_session *s);

#endif
