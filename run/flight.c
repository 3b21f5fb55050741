/*
 * The flight folder of a run (run_priv.h): made private on tmpfs, and at the
 * end the calls dead processes left in their flight ring files
 * (common/ringfile.h) recovered: each file whose process is gone and
 * which holds a call LTTng never got is copied, header, slots and the
 * rings in use, to <tracedir>/flight/<host>-<pid>.ring, where the
 * analyzer reads it.  A process still alive holds its file's lock: its
 * file is left alone and said so.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "run_priv.h"
#include "ringfile.h"

/* How long a process that is still exiting may hold its ring's lock. */
#define EXIT_WAIT_MS	2000

/* The calls of a file LTTng never got (-1: not a ring file we can read);
 * *len: the bytes to copy. */
static long pending(const char *p, size_t size, size_t *len)
{
	const struct ng_rf_hdr *h = (const void *)p;
	uint32_t nrings;
	long n = 0;

	if (!ng_rf_valid(h, size, &nrings))
		return -1;
	for (uint32_t i = 0; i < NG_RF_SLOTS; i++) {
		const struct ng_hostcall *s = (const void *)(p + h->slot_offset + i * sizeof(*s));

		n += s->enter_ns != 0;
	}
	for (uint32_t i = 0; i < nrings; i++) {
		const struct ng_rf_ring *r = (const void *)(p + h->ring_offset + i * h->ring_stride);
		uint64_t d = r->tail - r->head;

		n += (long)(d > NG_RF_RING ? NG_RF_RING : d);
	}
	*len = h->ring_offset + nrings * h->ring_stride;
	return n;
}

static int write_copy(const char *outdir, const char *name, const char *p, size_t len)
{
	char tmp[4096], dst[4096];
	int fd, ret = -1;
	size_t off = 0;

	if (snprintf(dst, sizeof(dst), "%s/%s", outdir, name) >= (int)sizeof(dst) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", outdir, name) >= (int)sizeof(tmp))
		return -1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	while (off < len) {
		ssize_t w = write(fd, p + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto out;
		off += (size_t)w;
	}
	if (fsync(fd))
		goto out;
	ret = 0;
out:
	if (close(fd))
		ret = -1;
	if (!ret && rename(tmp, dst))
		ret = -1;
	if (ret) {
		int e = errno;

		unlink(tmp);
		errno = e;
	}
	return ret;
}

/* One file; the calls recovered from it, -1 on error. */
static long collect_one(int dirfd, const char *name, const char *outdir)
{
	char out[160], host[65];
	struct stat st;
	size_t len = 0;
	long n = -1;
	char *p;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || !st.st_size) {
		close(fd);
		return 0;
	}
	/* A process whose main thread is a zombie may still hold the lock
	 * while its other threads exit: give it a moment. */
	for (int waited = 0; flock(fd, LOCK_SH | LOCK_NB); waited += 20) {
		struct timespec ts = { 0, 20 * 1000000L };

		if (waited >= EXIT_WAIT_MS) {
			fprintf(stderr, "ncclguard: %s: its process is still running; its last "
				"calls are not in the trace\n", name);
			close(fd);
			return 0;
		}
		nanosleep(&ts, NULL);
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	n = pending(p, (size_t)st.st_size, &len);
	if (n <= 0) {
		if (n < 0)
			fprintf(stderr, "ncclguard: %s: not a flight ring file; skipped\n", name);
		n = 0;
		goto out;
	}
	memcpy(host, ((const struct ng_rf_hdr *)p)->host, 64);
	host[64] = '\0';
	for (char *c = host; *c; c++)
		if (*c == '/' || (c == host && *c == '.'))
			*c = '_';
	snprintf(out, sizeof(out), "%s-%d.ring", host[0] ? host : "host",
		 (int)((const struct ng_rf_hdr *)p)->pid);
	if (mkdir(outdir, 0755) && errno != EEXIST) {
		n = -1;
		goto out;
	}
	if (write_copy(outdir, out, p, len)) {
		fprintf(stderr, "ncclguard: cannot write %s/%s: %s\n", outdir, out, strerror(errno));
		n = -1;
		goto out;
	}
	fprintf(stderr, "ncclguard: pid %d died with %ld call%s not yet in the trace: kept in "
		"%s/%s\n", (int)((const struct ng_rf_hdr *)p)->pid, n, n == 1 ? "" : "s",
		outdir, out);
out:
	munmap(p, (size_t)st.st_size);
	return n;
}

/* Removes a flight folder's regular files, then the folder; anything
 * else in it (a link, a folder) is left, and so is the folder.  With
 * `only_dead`, nothing is removed if a file is locked (its process
 * lives).  Returns the files removed, -1 if the folder was left. */
static int flight_dir_clear(const char *path, int only_dead)
{
	struct dirent *e;
	struct stat st;
	int fd, n = 0, left = 0;
	DIR *d;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	while (only_dead && (e = readdir(d))) {
		int f = openat(fd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		int busy = f >= 0 && !fstat(f, &st) && S_ISREG(st.st_mode) &&
			   flock(f, LOCK_EX | LOCK_NB);

		if (f >= 0)
			close(f);
		if (busy) {
			closedir(d);
			return -1;
		}
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
		    unlinkat(fd, e->d_name, 0))
			left++;
		else
			n++;
	}
	closedir(d);
	if (rmdir(path) && errno != ENOENT) {
		fprintf(stderr, "ncclguard: warning: %s left in place (%d entries that are not files): %s\n",
			path, left, strerror(errno));
		return -1;
	}
	return n;
}

void rn_flight_dir_remove(struct rn_flight_dir *f)
{
	if (f->path[0])
		flight_dir_clear(f->path, 0);
	f->path[0] = '\0';
	if (f->lock >= 0)
		close(f->lock);
	f->lock = -1;
}

/* Flight folders of runs that died with their guardian (a whole cgroup
 * killed at once) would hold tmpfs memory until reboot: a folder whose
 * launcher is gone and whose files no process holds is removed. */
static void flight_dirs_sweep(const char *parent)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(parent);

	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned long long tag;
		long pid;
		int n, end = 0;

		if (sscanf(e->d_name, "%16llx-%ld-%n", &tag, &pid, &end) != 2 || !end ||
		    strlen(e->d_name + end) != 6 || pid <= 0 ||
		    !(kill((pid_t)pid, 0) && errno == ESRCH) ||
		    snprintf(path, sizeof(path), "%s/%s", parent, e->d_name) >= (int)sizeof(path))
			continue;
		n = flight_dir_clear(path, 1);
		if (n >= 0)
			fprintf(stderr, "ncclguard: removed %s, left by a run that died with its "
				"guardian (%d flight ring file%s never collected)\n", path, n,
				n == 1 ? "" : "s");
	}
	closedir(d);
}

/*
 * <runtime folder>/<tag>-<pid>-XXXXXX, mode 0700; without a runtime
 * folder, a folder of the same name made by mkdtemp in /dev/shm: its
 * random name cannot have been made beforehand by another user, and
 * /dev/shm is sticky, so nobody else can replace it.
 */
int rn_flight_dir_make(struct rn_flight_dir *f, const char *parent, uint64_t tag, long launcher)
{
	char own[64], path[PATH_MAX + 16];

	f->lock = -1;
	if (!parent[0]) {
		snprintf(own, sizeof(own), "/dev/shm/ncclguard-%u", (unsigned)geteuid());
		if (snprintf(f->path, sizeof(f->path), "%s-%016" PRIx64 "-%ld-XXXXXX", own, tag,
			     launcher) >= (int)sizeof(f->path) || !mkdtemp(f->path)) {
			parent = "/dev/shm";
			goto fail;
		}
		goto lock;
	}
	flight_dirs_sweep(parent);
	if (snprintf(f->path, sizeof(f->path), "%s/%016" PRIx64 "-%ld-XXXXXX", parent, tag,
		     launcher) >= (int)sizeof(f->path) || !mkdtemp(f->path))
		goto fail;
lock:
	/* Locked while the launcher or its guardian (which inherits it)
	 * lives: another run's sweep leaves the folder alone. */
	if (snprintf(path, sizeof(path), "%s/run.lock", f->path) >= (int)sizeof(path) ||
	    (f->lock = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0 ||
	    flock(f->lock, LOCK_EX | LOCK_NB)) {
		fprintf(stderr, "ncclguard: warning: %s: %s; running without flight rings\n", path,
			strerror(errno));
		rn_flight_dir_remove(f);
		return -1;
	}
	return 0;
fail:
	fprintf(stderr, "ncclguard: warning: %s: %s; running without flight rings\n", parent,
		strerror(errno));
	f->path[0] = '\0';
	return -1;
}

int rn_flight_collect(const char *flight_dir, const char *tracedir)
{
	char outdir[4096];
	struct dirent *d;
	long total = 0;
	int ret = 0;
	DIR *dh;

	if (!flight_dir || !tracedir)
		return 0;
	if (snprintf(outdir, sizeof(outdir), "%s/flight", tracedir) >= (int)sizeof(outdir))
		return -1;
	dh = opendir(flight_dir);
	if (!dh)
		return errno == ENOENT ? 0 : -1;
	while ((d = readdir(dh))) {
		size_t l = strlen(d->d_name);
		long n;

		if (l < 6 || strcmp(d->d_name + l - 5, ".ring"))
			continue;
		n = collect_one(dirfd(dh), d->d_name, outdir);
		if (n < 0)
			ret = -1;
		else
			total += n;
	}
	closedir(dh);
	return ret ? -1 : (int)(total > 0x7fffffff ? 0x7fffffff : total);
}
