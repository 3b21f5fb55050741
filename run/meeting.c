/*
 * The runs of one job on one host: their meeting folder, record and
 * member files (run_priv.h).  Every change happens under the folder's lock;
 * a member's liveness is its file's flock, which the kernel drops when
 * the last of its launcher and guardian dies, whatever killed them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "run_priv.h"
#include "session.h"
#include "u64map.h"

#define REC_FILE	"session"
#define ENDED_FILE	"ended"
#define LOCK_FILE	"lock"
#define REC_MAX		8192
#define ENDED_MAX	(1 << 20)

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int path_in(char *buf, size_t len, const char *dir, const char *name)
{
	return snprintf(buf, len, "%s/%s", dir, name) >= (int)len ? -1 : 0;
}

/* Takes fd's lock, waiting at most wait_ms (polling: a creator may hold
 * it while a session daemon starts, so the wait must be bounded). */
static int lock_wait(int fd, int wait_ms)
{
	for (int waited = 0;; waited += 20) {
		if (!flock(fd, LOCK_EX | LOCK_NB))
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (waited >= wait_ms) {
			errno = ETIMEDOUT;
			return -1;
		}
		sleep_ms(20);
	}
}

/*
 * Opens and locks the folder's lock file.  The last out of a job removes
 * the folder, lock file last, while we may be waiting on that file: a lock
 * on a file no longer linked is worthless, so we start over.
 */
static int lock_folder(const char *dir, int wait_ms, int create, int *out)
{
	char path[PATH_MAX + 8];
	struct stat st;
	int fd;

	if (path_in(path, sizeof(path), dir, LOCK_FILE))
		return -1;
	for (int tries = 0; tries < 50; tries++) {
		if (create && mkdir(dir, 0700) && errno != EEXIST)
			return -1;
		fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
		if (fd < 0) {
			if (errno == ENOENT && create)
				continue;
			return -1;
		}
		if (lock_wait(fd, wait_ms)) {
			int e = errno;

			close(fd);
			errno = e;
			return -1;
		}
		if (fstat(fd, &st)) {
			close(fd);
			return -1;
		}
		if (st.st_nlink > 0) {
			*out = fd;
			return 0;
		}
		close(fd);
		if (!create) {
			errno = ENOENT;
			return -1;
		}
	}
	errno = EAGAIN;
	return -1;
}

/* ---- the record ---------------------------------------------------------- */

static int put_str(FILE *f, const char *k, const char *v)
{
	/* One line per key: a value with a newline cannot be stored. */
	if (strchr(v, '\n'))
		return -1;
	return fprintf(f, "%s=%s\n", k, v) < 0 ? -1 : 0;
}

static int rec_write(const char *dir, const struct rn_meet_rec *r)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 16];
	int fd, err = 0;
	FILE *f;

	if (path_in(path, sizeof(path), dir, REC_FILE) ||
	    path_in(tmp, sizeof(tmp), dir, "." REC_FILE ".tmp"))
		return -1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		goto fail;
	}
	err |= put_str(f, "session", r->session);
	err |= put_str(f, "dir", r->dir);
	err |= put_str(f, "hostdir", r->hostdir);
	err |= put_str(f, "relay", r->relay);
	err |= put_str(f, "job", r->job);
	err |= fprintf(f, "creator=%ld\nstarted=%lld\nfree_start=%lld\nexpected=%d\njoined=%d\n",
		       r->creator, r->started, r->free_start, r->expected, r->joined) < 0;
	if (fflush(f) || ferror(f))
		err = 1;
	if (fclose(f) || err)
		goto fail;
	if (rename(tmp, path))
		goto fail;
	return 0;
fail:
	unlink(tmp);
	return -1;
}

static int get_str(char *dst, size_t len, const char *v)
{
	return snprintf(dst, len, "%s", v) >= (int)len ? -1 : 0;
}

static int get_ll(long long *dst, const char *v)
{
	char *end;

	errno = 0;
	*dst = strtoll(v, &end, 10);
	return errno || end == v || *end ? -1 : 0;
}

static int rec_parse(char *buf, struct rn_meet_rec *r)
{
	char *line, *save = NULL;
	long long n;
	int bad = 0;

	memset(r, 0, sizeof(*r));
	for (line = strtok_r(buf, "\n", &save); line && !bad; line = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(line, '=');

		if (!v)
			return -1;
		*v++ = '\0';
		if (!strcmp(line, "session"))
			bad = get_str(r->session, sizeof(r->session), v);
		else if (!strcmp(line, "dir"))
			bad = get_str(r->dir, sizeof(r->dir), v);
		else if (!strcmp(line, "hostdir"))
			bad = get_str(r->hostdir, sizeof(r->hostdir), v);
		else if (!strcmp(line, "relay"))
			bad = get_str(r->relay, sizeof(r->relay), v);
		else if (!strcmp(line, "job"))
			bad = get_str(r->job, sizeof(r->job), v);
		else if (!strcmp(line, "creator") && !(bad = get_ll(&n, v)))
			r->creator = (long)n;
		else if (!strcmp(line, "started"))
			bad = get_ll(&r->started, v);
		else if (!strcmp(line, "free_start"))
			bad = get_ll(&r->free_start, v);
		else if (!strcmp(line, "expected") && !(bad = get_ll(&n, v)))
			r->expected = n < 0 || n > 1 << 20 ? 0 : (int)n;
		else if (!strcmp(line, "joined") && !(bad = get_ll(&n, v)))
			r->joined = n < 0 || n > 1 << 20 ? 0 : (int)n;
	}
	return bad || !r->session[0] || !r->hostdir[0] ? -1 : 0;
}

/* A file of the folder, whole, NUL-terminated; NULL if missing (errno
 * ENOENT) or unreadable. */
static char *read_small(const char *dir, const char *name, size_t max)
{
	char path[PATH_MAX + 16], *buf;
	size_t got = 0;
	ssize_t n;
	int fd;

	if (path_in(path, sizeof(path), dir, name))
		return NULL;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(max + 1);
	if (!buf)
		goto out;
	while (got < max && (n = read(fd, buf + got, max - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			buf = NULL;
			goto out;
		}
		got += (size_t)n;
	}
	buf[got] = '\0';
out:
	close(fd);
	return buf;
}

static int rec_read(const char *dir, struct rn_meet_rec *r)
{
	char *buf = read_small(dir, REC_FILE, REC_MAX);
	int ret;

	if (!buf)
		return errno == ENOENT ? 0 : -1;
	ret = rec_parse(buf, r) ? -1 : 1;
	free(buf);
	return ret;
}

/* ---- members --------------------------------------------------------------- */

static void note_end(const char *dir, long pid, const char *status, int exit_status)
{
	char path[PATH_MAX + 16], line[96];
	int fd, n;

	if (path_in(path, sizeof(path), dir, ENDED_FILE))
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%ld %s %d\n", pid, status, exit_status);
	/* One write of a short line under the folder's lock. */
	if (write(fd, line, (size_t)n) != n)
		fprintf(stderr, "ncclguard: warning: %s: %s\n", path, strerror(errno));
	close(fd);
}

static int member_pid(const char *name, long *pid)
{
	char *end;

	if (strncmp(name, "m-", 2))
		return -1;
	*pid = strtol(name + 2, &end, 10);
	return *end || *pid <= 0 ? -1 : 0;
}

/* Live members of dir other than `self`; with `reap`, the dead ones are
 * noted as killed and their files removed. */
static int probe(const char *dir, long self, int reap)
{
	struct dirent *e;
	int dfd, alive = 0;
	DIR *d;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	while ((e = readdir(d))) {
		long pid;
		int fd;

		if (member_pid(e->d_name, &pid) || pid == self)
			continue;
		fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			alive++;
		} else if (reap) {
			fprintf(stderr, "ncclguard: the run of pid %ld (and its guardian) died "
				"without leaving the recording\n", pid);
			note_end(dir, pid, "launcher_killed", -1);
			unlinkat(dfd, e->d_name, 0);
		}
		close(fd);
	}
	closedir(d);
	return alive;
}

/* Removes the folder's files (record and ended first, lock last), then the
 * folder; another run may already have made a new lock in it. */
static void remove_folder(const char *dir)
{
	static const char *const first[] = { REC_FILE, ENDED_FILE, "." REC_FILE ".tmp" };
	char path[PATH_MAX + 16];
	struct dirent *e;
	DIR *d;

	for (size_t i = 0; i < sizeof(first) / sizeof(*first); i++)
		if (!path_in(path, sizeof(path), dir, first[i]))
			unlink(path);
	d = opendir(dir);
	if (d) {
		while ((e = readdir(d))) {
			long pid;

			if (!member_pid(e->d_name, &pid) &&
			    !path_in(path, sizeof(path), dir, e->d_name))
				unlink(path);
		}
		closedir(d);
	}
	if (!path_in(path, sizeof(path), dir, LOCK_FILE))
		unlink(path);
	rmdir(dir);
}

/* ---- stale folders --------------------------------------------------------- */

/* The folder of a job whose runs all died, launcher and guardian alike (a
 * whole cgroup killed at once): its session would record for ever.  Stop
 * it, so that its trace is complete, and remove the folder. */
static void sweep_one(const char *dir)
{
	struct rn_meet_rec r;
	struct ng_session s;
	int fd, have;

	if (lock_folder(dir, 0, 0, &fd))
		return;
	if (probe(dir, 0, 0))
		goto out;
	have = rec_read(dir, &r);
	if (have > 0) {
		ng_session_adopt(&s, r.session, NULL);
		if (ng_session_exists(&s) == 1) {
			fprintf(stderr, "ncclguard: job %s: every run recording it died; stopping "
				"its session %s\n", r.job, r.session);
			ng_session_finish(&s);
		}
	}
	remove_folder(dir);
out:
	close(fd);
}

static void sweep(const char *parent, const char *self, const char *host_suffix)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(parent);
	size_t hl = strlen(host_suffix);

	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		/* This host's folders only: another host's session daemon
		 * is not ours to ask. */
		if (strncmp(e->d_name, "job-", 4) || l <= hl ||
		    strcmp(e->d_name + l - hl, host_suffix) ||
		    path_in(path, sizeof(path), parent, e->d_name) || !strcmp(path, self))
			continue;
		sweep_one(path);
	}
	closedir(d);
}

/* ---- the interface --------------------------------------------------------- */

int rn_meet_open(struct rn_meet *g, const char *parent, uint64_t tag, const char *host, long pid,
		  int wait_ms)
{
	char suffix[96];
	size_t n;

	memset(g, 0, sizeof(*g));
	g->lock = g->member = -1;
	g->pid = pid;
	n = (size_t)snprintf(suffix, sizeof(suffix), "-%.64s", host);
	for (size_t i = 1; i < n; i++)
		if (suffix[i] == '/' || suffix[i] == '.')
			suffix[i] = '_';
	if (snprintf(g->path, sizeof(g->path), "%s/job-%016" PRIx64 "%s", parent, tag, suffix) >=
	    (int)sizeof(g->path)) {
		g->path[0] = '\0';
		return -1;
	}
	sweep(parent, g->path, suffix);
	if (lock_folder(g->path, wait_ms, 1, &g->lock)) {
		fprintf(stderr, "ncclguard: warning: %s: %s\n", g->path,
			errno == ETIMEDOUT ? "another run of this job held it too long" :
			strerror(errno));
		g->path[0] = '\0';
		return -1;
	}
	g->locked = 1;
	return 0;
}

int rn_meet_read(struct rn_meet *g, struct rn_meet_rec *rec)
{
	return rec_read(g->path, rec);
}

int rn_meet_write(struct rn_meet *g, const struct rn_meet_rec *rec)
{
	return rec_write(g->path, rec);
}

int rn_meet_alive(struct rn_meet *g)
{
	return probe(g->path, g->pid, 1);
}

void rn_meet_reset(struct rn_meet *g)
{
	char path[PATH_MAX + 16];

	if (!path_in(path, sizeof(path), g->path, REC_FILE))
		unlink(path);
	if (!path_in(path, sizeof(path), g->path, ENDED_FILE))
		unlink(path);
}

int rn_meet_enter(struct rn_meet *g)
{
	char name[32], path[PATH_MAX + 32];
	struct rn_meet_rec rec;
	int fd;

	snprintf(name, sizeof(name), "m-%ld", g->pid);
	if (path_in(path, sizeof(path), g->path, name))
		return -1;
	/* A file of ours from a pid used before us: its run is dead. */
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		unlink(path);
		return -1;
	}
	g->member = fd;
	if (rec_read(g->path, &rec) > 0) {
		rec.joined++;
		if (rec_write(g->path, &rec))
			fprintf(stderr, "ncclguard: warning: %s: cannot count this run in\n", g->path);
	}
	return 0;
}

void rn_meet_unlock(struct rn_meet *g)
{
	if (g->lock >= 0 && g->locked)
		flock(g->lock, LOCK_UN);
	g->locked = 0;
}

static int relock(struct rn_meet *g)
{
	int fd;

	if (g->locked)
		return 0;
	/* Wait long: the last out may be stopping a session (it writes every
	 * buffer out first). */
	if (lock_folder(g->path, 600 * 1000, 0, &fd))
		return -1;
	if (g->lock >= 0)
		close(g->lock);
	g->lock = fd;
	g->locked = 1;
	return 0;
}

void rn_meet_read_ended(const char *dir, struct rn_meet_end *end)
{
	char *buf = read_small(dir, ENDED_FILE, ENDED_MAX), *line, *save = NULL;
	struct ng_u64map seen = { 0 };
	int any_zero = 0, any_unknown = 0;

	memset(end, 0, sizeof(*end));
	end->exit_status = -1;
	if (!buf)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char status[32];
		long pid;
		int st;

		if (sscanf(line, "%ld %31s %d", &pid, status, &st) != 3)
			continue;
		/* A launcher killed between its line and the removal of its
		 * member file leaves its guardian to write one more: a run is
		 * one task, and its first line, the launcher's own, says how it
		 * ended.  (Out of memory, a run may count twice.) */
		if (ng_u64map_get(&seen, (uint64_t)pid) >= 0)
			continue;
		(void)ng_u64map_put(&seen, (uint64_t)pid, 0);
		end->tasks++;
		if (!strcmp(status, "launcher_killed"))
			end->killed++;
		else if (!strcmp(status, "failed"))
			end->failed++;
		if (st == 0)
			any_zero = 1;
		else if (st == -1)
			any_unknown = 1;
		else if (end->exit_status == -1)
			end->exit_status = st;
	}
	if (end->exit_status == -1 && any_zero && !any_unknown)
		end->exit_status = 0;
	ng_u64map_free(&seen);
	free(buf);
}

int rn_meet_leave(struct rn_meet *g, const char *status, int exit_status, int grace_ms,
		   struct rn_meet_rec *rec, struct rn_meet_end *end)
{
	struct stat st;
	int waited = 0, said = 0;

	if (!g->path[0] || g->member < 0)
		return -1;
	if (relock(g)) {
		/* Gone: our launcher was the last out (we are its guardian). */
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "ncclguard: warning: %s: %s\n", g->path, strerror(errno));
		return -1;
	}
	/*
	 * Our member file is gone when our launcher left already and we are
	 * its guardian: the launcher may have died while it finished the
	 * recording as the last out (a launcher's SIGKILL follows its
	 * SIGTERM within seconds), so we look for live members all the same.
	 */
	if (!fstat(g->member, &st) && st.st_nlink > 0) {
		char name[32], path[PATH_MAX + 32];

		note_end(g->path, g->pid, status, exit_status);
		snprintf(name, sizeof(name), "m-%ld", g->pid);
		if (!path_in(path, sizeof(path), g->path, name))
			unlink(path);
	}
	close(g->member);
	g->member = -1;
	for (;;) {
		int have;

		if (rn_meet_alive(g)) {
			rn_meet_unlock(g);
			return 0;
		}
		have = rec_read(g->path, rec);
		if (have <= 0) {
			/* Nothing to stop: the session was never made. */
			rn_meet_unlock(g);
			return have < 0 ? -1 : 0;
		}
		if (rec->joined >= rec->expected || waited >= grace_ms)
			break;
		if (!said++)
			fprintf(stderr, "ncclguard: %d of the %d tasks of job %s announced on this "
				"host have joined its recording; waiting up to %d s for the others\n",
				rec->joined, rec->expected, rec->job, grace_ms / 1000);
		rn_meet_unlock(g);
		sleep_ms(200);
		waited += 200;
		if (relock(g))
			return -1;
	}
	rn_meet_read_ended(g->path, end);
	return 1;
}

void rn_meet_close(struct rn_meet *g)
{
	if (g->path[0] && g->locked)
		remove_folder(g->path);
	rn_meet_release(g);
}

void rn_meet_drop(struct rn_meet *g)
{
	struct rn_meet_rec rec;

	if (g->path[0] && g->locked) {
		if (g->member >= 0) {
			char name[32], path[PATH_MAX + 32];

			snprintf(name, sizeof(name), "m-%ld", g->pid);
			if (!path_in(path, sizeof(path), g->path, name))
				unlink(path);
			close(g->member);
			g->member = -1;
		}
		if (!probe(g->path, g->pid, 0) && !rec_read(g->path, &rec))
			remove_folder(g->path);
	}
	rn_meet_release(g);
}

void rn_meet_release(struct rn_meet *g)
{
	if (g->member >= 0) {
		char name[32], path[PATH_MAX + 32];

		snprintf(name, sizeof(name), "m-%ld", g->pid);
		if (g->locked && !path_in(path, sizeof(path), g->path, name))
			unlink(path);
		close(g->member);
	}
	g->member = -1;
	rn_meet_unlock(g);
	if (g->lock >= 0)
		close(g->lock);
	g->lock = -1;
	g->path[0] = '\0';
}
