/*
 * The end of a run, by the launcher once CMD is gone, or by the guardian
 * once the launcher is: stop and destroy the session (the trace is then
 * complete), check the disk, collect the flight rings, write the record.
 * The guardian may find the launcher did some of it already.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_priv.h"

/* Free space at stop below which the disk counts as full: the consumer
 * writes whole pages, so a filesystem it filled shows (nearly) none. */
#define FULL_DISK_BYTES		(64ull << 10)

static void report(const struct ng_session *s, const char *dir, int ok, int disk_full)
{
	if (!ok) {
		fprintf(stderr, "ncclguard: warning: the session did not stop cleanly; the trace in %s may be incomplete\n",
			dir);
		return;
	}
	if (s->lost_unknown)
		fprintf(stderr, "ncclguard: warning: LTTng reported a lost-event count that cannot be "
			"one; events may have been lost: the trace in %s may be incomplete\n", dir);
	else if (s->discarded || s->lost_packets)
		fprintf(stderr, "ncclguard: warning: %llu events lost (buffers full), %llu packets lost; the trace in %s is incomplete\n",
			(unsigned long long)s->discarded, (unsigned long long)s->lost_packets, dir);
	else if (!disk_full)
		fprintf(stderr, "ncclguard: trace in %s (0 events lost)\n", dir);
}

/* The disk after stop: how much is free, whether a stream was cut, and
 * the trimming that keeps the rest readable. */
static void disk_at_end(const struct run *r, struct rn_end *e)
{
	struct ng_trace_check c;
	size_t n = 0;
	int w;

	e->free_end = rn_disk_free(r->hostdir);
	if (!r->have_dir)
		return;
	if (ng_trace_repair(r->hostdir, &c)) {
		fprintf(stderr, "ncclguard: warning: cannot check the streams in %s\n", r->hostdir);
		e->events = 1;
	}
	if (c.event_packets || c.unknown)
		e->events = 1;
	e->disk_full = (e->free_end >= 0 && (unsigned long long)e->free_end < FULL_DISK_BYTES) ||
		       c.cut || (c.metadata_empty && c.bytes);
	if (!e->disk_full && !c.unknown)
		return;
	w = snprintf(e->disk_detail, sizeof(e->disk_detail), "%lld bytes free at stop", e->free_end);
	if (w > 0)
		n = (size_t)w;
	if (c.cut && n < sizeof(e->disk_detail)) {
		w = snprintf(e->disk_detail + n, sizeof(e->disk_detail) - n,
			     "; %d of %d streams ended inside a packet, trimmed to whole packets (%" PRIu64 " bytes dropped)",
			     c.cut, c.streams, c.cut_bytes);
		if (w > 0)
			n += (size_t)w;
	}
	if (c.unknown && n < sizeof(e->disk_detail)) {
		w = snprintf(e->disk_detail + n, sizeof(e->disk_detail) - n,
			     "; %d streams not made of whole packets", c.unknown);
		if (w > 0)
			n += (size_t)w;
	}
	if (c.metadata_empty && n < sizeof(e->disk_detail))
		snprintf(e->disk_detail + n, sizeof(e->disk_detail) - n,
			 "; metadata empty: the trace cannot be read");
	if (e->disk_full)
		fprintf(stderr, "ncclguard: disk full: %s; %s\n", e->disk_detail,
			c.metadata_empty ? "the trace is lost" :
			"the trace keeps what was written before");
	else
		fprintf(stderr, "ncclguard: warning: %s\n", e->disk_detail);
}

/*
 * What DIR/<host> holds of the job: 1 something (an event, or streams we
 * could not read; lost events, a full disk; flight rings, hang reports;
 * anything else), 0 nothing (CMD did not start, or ended before any NCCL
 * call), -1 cannot tell (the trace is at a relay daemon, or the session
 * did not stop cleanly).
 */
static int recording_holds(const struct run *r, const struct rn_end *e, int ok)
{
	struct dirent *ent;
	int data = 0;
	DIR *d;

	if (!ok)
		return -1;
	if (e->events || e->disk_full || e->lost_unknown || r->s.discarded || r->s.lost_packets)
		return 1;
	d = opendir(r->hostdir);
	if (!d)
		return -1;
	while (!data && (ent = readdir(d)))
		data = strcmp(ent->d_name, ".") && strcmp(ent->d_name, "..") &&
		       strcmp(ent->d_name, "ust");
	closedir(d);
	if (data)
		return 1;
	if (r->o.relay[0])
		return r->exec_errno && r->tasks <= 1 ? 0 : -1;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Removes the trace of a recording that holds nothing: its metadata and
 * empty streams.  0, or -1 after a warning. */
static int drop_trace(const struct run *r)
{
	char ust[PATH_MAX + 8];

	snprintf(ust, sizeof(ust), "%s/ust", r->hostdir);
	if (access(ust, F_OK) || !nftw(ust, remove_entry, 16, FTW_DEPTH | FTW_PHYS))
		return 0;
	fprintf(stderr, "ncclguard: warning: cannot remove the empty trace %s: %s\n", ust,
		strerror(errno));
	return -1;
}

/* A run whose CMD never started leaves nothing, as a refused option
 * does: DIR/<host>, and DIR if we made it and no other host wrote there. */
static int remove_recording(const struct run *r)
{
	if (drop_trace(r))
		return -1;
	if (rmdir(r->hostdir)) {
		fprintf(stderr, "ncclguard: warning: cannot remove %s: %s\n", r->hostdir,
			strerror(errno));
		return -1;
	}
	if (r->made_dir)
		rmdir(r->dir);
	return 0;
}

void rn_wrap_up(struct run *r, const char *status, int exit_status)
{
	struct rn_end e;
	int ok = 1, stopped = 0, grouped = r->g.path[0] != '\0';

	if (grouped && !rn_leave(r, &status, &exit_status)) {
		fflush(NULL);
		return;
	}
	r->last = 1;
	memset(&e, 0, sizeof(e));
	e.status = status;
	e.exit_status = exit_status;
	if (r->traced && ng_session_exists(&r->s) != 0) {
		ok = !ng_session_finish(&r->s);
		stopped = 1;
		snprintf(e.consumer_error, sizeof(e.consumer_error), "%s", r->s.error);
		e.lost_unknown = r->s.lost_unknown;
	}
	disk_at_end(r, &e);
	/* Room for the rings and the record on a full disk. */
	if (r->reserve[0]) {
		unlink(r->reserve);
		r->reserve[0] = '\0';
	}
	rn_collect_flight(r);
	r->recorded = r->have_dir ? recording_holds(r, &e, ok) : -1;
	if (!r->recorded && r->exec_errno && r->tasks <= 1 && !remove_recording(r)) {
		r->removed = 1;
		goto out;
	}
	/* What is left is the record of how the run ended; the folder
	 * serves a later run (hostdir_taken). */
	if (!r->recorded && drop_trace(r))
		r->recorded = -1;
	if (stopped && r->recorded)
		report(&r->s, r->o.relay[0] ? r->o.relay : r->dir, ok, e.disk_full);
	/* "finished": CMD ran and its trace is complete. */
	if ((!ok || !r->traced) && !strcmp(e.status, "finished"))
		e.status = "failed";
	rn_write_record(r, &e);
out:
	if (grouped)
		rn_meet_close(&r->g);
	fflush(NULL);
}
