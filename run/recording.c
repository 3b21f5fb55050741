/*
 * This run's place in the job's recording on this host: join the LTTng
 * session another run of the job made, or make it (its folder, the disk
 * reserve, the session); and leave it, the last out taking the end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "run_priv.h"

/* What a trace of a busy job can take in minutes; below it we warn.  An
 * absolute figure: a share of the filesystem says nothing about that. */
#define LOW_DISK_BYTES		(1ull << 30)
/* Kept free on the trace's filesystem while the job runs, released after
 * the session stopped: room for the run record and the flight rings. */
#define RESERVE_BYTES		(1 << 20)
/* How long a run waits to join its job's recording on this host while
 * another run of the job creates it (a session daemon to start, a relay
 * to reach). */
#define JOIN_WAIT_MS		120000
/* How long the last run out waits for tasks the launcher announced on
 * this host that never joined: they may start late. */
#define LATE_TASK_MS		10000

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -1;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

/* 1 if path is missing or an empty directory. */
static int dir_is_empty(const char *path)
{
	struct dirent *e;
	DIR *d = opendir(path);
	int empty = 1;

	if (!d)
		return errno == ENOENT;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			empty = 0;
			break;
		}
	}
	closedir(d);
	return empty;
}

/* Bytes free for us on path's filesystem, -1 if unknown. */
long long rn_disk_free(const char *path)
{
	struct statvfs v;

	if (statvfs(path, &v))
		return -1;
	return (long long)v.f_bavail * (long long)v.f_frsize;
}

static void disk_at_start(struct run *r)
{
	int fd;

	r->free_start = rn_disk_free(r->hostdir);
	if (r->free_start >= 0 && (unsigned long long)r->free_start < LOW_DISK_BYTES)
		fprintf(stderr, "ncclguard: warning: only %.1f MiB free for %s; a full disk cuts the trace short\n",
			r->free_start / 1048576.0, r->dir);
	snprintf(r->reserve, sizeof(r->reserve), "%s/.ncclguard-reserve", r->hostdir);
	fd = open(r->reserve, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r->reserve[0] = '\0';
		return;
	}
	/* posix_fallocate writes zeros where the filesystem cannot reserve. */
	if (posix_fallocate(fd, 0, RESERVE_BYTES)) {
		unlink(r->reserve);
		r->reserve[0] = '\0';
	}
	close(fd);
}

static int start_tracing(struct run *r, const char *lib)
{
	char tp[PATH_MAX], *slash;
	const char *env = getenv("NCCLGUARD_TP_LIBRARY");
	int spawned;

	if (!r->have_dir)
		return -1;
	if (ng_sessiond_ensure(&spawned))
		return -1;
	if (spawned)
		fprintf(stderr, "ncclguard: started %s lttng-sessiond; it keeps running\n",
			geteuid() ? "a per-user" : "the system");
	if (ng_session_start(&r->s, r->hostdir, r->o.relay[0] ? r->o.relay : NULL, r->job, r->tag))
		return -1;
	/* The shim opens the provider next to itself. */
	snprintf(tp, sizeof(tp), "%s", env && *env ? env : lib);
	slash = strrchr(tp, '/');
	if (slash && !(env && *env))
		snprintf(slash + 1, sizeof(tp) - (size_t)(slash + 1 - tp), "libncclguard-tp.so");
	if (access(tp, R_OK))
		fprintf(stderr, "ncclguard run: warning: %s is missing: the trace will be empty\n", tp);
	else if (!r->o.relay[0] && ng_session_prime(&r->s, tp))
		fprintf(stderr, "ncclguard: warning: the trace's metadata is not on disk yet; a disk that fills early may leave the trace unreadable\n");
	if (r->o.relay[0])
		fprintf(stderr, "ncclguard: streaming to %s (live session %s), run records into %s "
			"(job %s)\n", r->o.relay, r->s.name, r->dir, r->job);
	else
		fprintf(stderr, "ncclguard: recording into %s (job %s)\n", r->dir, r->job);
	return 0;
}

/* Whether DIR/<host> is free for a new recording: empty for a local
 * trace; for a relayed one (the trace is elsewhere, and a relay's output
 * folder may be DIR) without a run record.  (A folder that holds only the
 * record of a run that recorded nothing is free too: create_recording.) */
static int hostdir_taken(const struct run *r)
{
	char path[PATH_MAX + 16];

	if (!r->o.relay[0])
		return !dir_is_empty(r->hostdir);
	snprintf(path, sizeof(path), "%s/run.json", r->hostdir);
	return !access(path, F_OK);
}

/* A new recording of the job on this host: its folder and session. */
static int create_recording(struct run *r, const char *lib)
{
	char rec[PATH_MAX + 16];

	if (rn_holds_unused_record(r->hostdir)) {
		snprintf(rec, sizeof(rec), "%s/run.json", r->hostdir);
		if (unlink(rec) && errno != ENOENT) {
			fprintf(stderr, "ncclguard run: %s: %s\n", rec, strerror(errno));
			return -1;
		}
		fprintf(stderr, "ncclguard: replacing %s, the record of a run that recorded "
			"nothing\n", rec);
	} else if (hostdir_taken(r)) {
		fprintf(stderr, "ncclguard run: %s already holds a %s; remove it or choose another -o\n",
			r->hostdir, r->o.relay[0] ? "run record" : "trace");
		return -1;
	}
	r->made_dir = access(r->dir, F_OK) && errno == ENOENT;
	if (mkdir_p(r->hostdir))
		fprintf(stderr, "ncclguard run: %s: %s\n", r->hostdir, strerror(errno));
	else
		r->have_dir = 1;
	if (r->have_dir)
		disk_at_start(r);
	r->traced = !start_tracing(r, lib);
	return 0;
}

/* Takes the other run's recording: its folders and relay. */
static void take_record(struct run *r, const struct rn_meet_rec *rec)
{
	if (strcmp(rec->hostdir, r->hostdir))
		fprintf(stderr, "ncclguard: warning: job %s records on this host into %s; this "
			"task's run uses it too (not %s)\n", r->job, rec->dir, r->dir);
	snprintf(r->dir, sizeof(r->dir), "%s", rec->dir);
	snprintf(r->hostdir, sizeof(r->hostdir), "%s", rec->hostdir);
	snprintf(r->o.relay, sizeof(r->o.relay), "%s", rec->relay);
	r->creator = rec->creator;
	r->started = rec->started;
	r->free_start = rec->free_start;
}

/*
 * This run's place in the job's recording on this host (run_priv.h): under
 * the job's lock, join the session another run of the job created, or
 * create it.  Returns 0, or -1 when a new recording cannot be made here
 * (the output folder is taken, or the tasks of the job have no private
 * folder to meet in: exit status 2, before CMD starts).
 */
int rn_join(struct run *r, const char *lib)
{
	struct rn_meet_rec rec;
	struct ng_session probe;
	int have;

	if (rn_runtime_dir(r->rundir, sizeof(r->rundir))) {
		/* Tasks that cannot meet would each record the others' events
		 * too; a lone run has nobody to meet. */
		if (r->launch.per_task && r->launch.local_size != 1) {
			fprintf(stderr, "ncclguard run: no private runtime folder (see the warnings "
				"above) where the tasks of job %s on this host can meet; set "
				"XDG_RUNTIME_DIR to a folder of yours with mode 0700, or remove "
				"what another user made there\n", r->job);
			return -1;
		}
		fprintf(stderr, "ncclguard: warning: no private runtime folder (see above); this "
			"run records alone\n");
		return create_recording(r, lib);
	}
	if (rn_meet_open(&r->g, r->rundir, r->tag, r->host, (long)r->launcher, JOIN_WAIT_MS)) {
		/* Two sessions of one job would record every event twice. */
		fprintf(stderr, "ncclguard: warning: cannot meet the other runs of job %s on this "
			"host; this task runs untraced\n", r->job);
		return 0;
	}
	if (rn_meet_enter(&r->g)) {
		fprintf(stderr, "ncclguard: warning: %s: %s; this run records alone\n", r->g.path,
			strerror(errno));
		rn_meet_drop(&r->g);
		return create_recording(r, lib);
	}
	have = rn_meet_read(&r->g, &rec);
	if (have > 0) {
		ng_session_adopt(&probe, rec.session, NULL);
		if (ng_session_exists(&probe) == 1) {
			take_record(r, &rec);
			r->joined = r->traced = r->have_dir = 1;
			fprintf(stderr, "ncclguard: task joins the recording of job %s on this host "
				"(%d runs so far)\n", r->job, rec.joined);
			rn_meet_unlock(&r->g);
			return 0;
		}
		fprintf(stderr, "ncclguard: the recording of job %s on this host (session %s) is "
			"gone; starting a new one\n", r->job, rec.session);
	}
	if (have)
		rn_meet_reset(&r->g);
	if (create_recording(r, lib)) {
		rn_meet_drop(&r->g);
		return -1;
	}
	if (!r->traced) {
		/* Nothing to share: each run tries for itself. */
		rn_meet_drop(&r->g);
		return 0;
	}
	memset(&rec, 0, sizeof(rec));
	snprintf(rec.session, sizeof(rec.session), "%s", r->s.name);
	snprintf(rec.dir, sizeof(rec.dir), "%s", r->dir);
	snprintf(rec.hostdir, sizeof(rec.hostdir), "%s", r->hostdir);
	snprintf(rec.relay, sizeof(rec.relay), "%s", r->o.relay);
	snprintf(rec.job, sizeof(rec.job), "%s", r->job);
	rec.creator = (long)r->launcher;
	rec.started = (long long)r->started;
	rec.free_start = r->free_start;
	rec.expected = r->launch.local_size > 0 ? r->launch.local_size : 0;
	rec.joined = 1;
	r->creator = rec.creator;
	if (rn_meet_write(&r->g, &rec)) {
		/* Later tasks would find no session and make their own. */
		fprintf(stderr, "ncclguard: warning: %s: cannot write the record: %s; this run "
			"records alone\n", r->g.path, strerror(errno));
		rn_meet_drop(&r->g);
		return 0;
	}
	rn_meet_unlock(&r->g);
	return 0;
}

/*
 * The end of a run, by the launcher once CMD is gone, or by the guardian
 * once the launcher is: stop and destroy the session (the trace is then
 * complete), check the disk, collect the flight rings, write the record.
 * The guardian may find the launcher did some of it already.
 */
void rn_collect_flight(struct run *r)
{
	int n;

	if (!r->flight.path[0])
		return;
	n = r->have_dir ? rn_flight_collect(r->flight.path, r->hostdir) : 0;
	if (n > 0)
		fprintf(stderr, "ncclguard: %d calls recovered from the flight rings of dead processes\n",
			n);
	rn_flight_dir_remove(&r->flight);
}

/*
 * Leaves the job's recording on this host.  Returns 1 when we are the
 * last out: the session, the record and the job's status (of every run
 * that shared it) are then ours to finish; 0 when other runs go on.
 */
int rn_leave(struct run *r, const char **status, int *exit_status)
{
	struct rn_meet_rec rec;
	struct rn_meet_end end;
	int last;

	/* The last out's summary reads them. */
	rn_collect_flight(r);
	last = rn_meet_leave(&r->g, *status, *exit_status, LATE_TASK_MS, &rec, &end);
	if (last != 1) {
		rn_meet_release(&r->g);
		return 0;
	}
	take_record(r, &rec);
	ng_session_adopt(&r->s, rec.session, rec.relay[0] ? NULL : rec.hostdir);
	r->traced = r->have_dir = 1;
	r->tasks = end.tasks;
	/* The creator's reserve, released after the stop below. */
	snprintf(r->reserve, sizeof(r->reserve), "%s/.ncclguard-reserve", r->hostdir);
	*status = end.killed ? "launcher_killed" : end.failed ? "failed" : "finished";
	*exit_status = end.exit_status;
	return 1;
}
