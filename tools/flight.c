/*
 * Recovery of the calls dead processes left in their flight ring files
 * (common/ringfile.h, cli.h): each file whose process is gone and which
 * holds a call LTTng never got is copied, header, slots and the rings in
 * use, to <tracedir>/flight/<host>-<pid>.ring, where the analyzer reads
 * it.  A process still alive holds its file's lock: its file is left
 * alone and said so.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ringfile.h"

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
	if (flock(fd, LOCK_SH | LOCK_NB)) {
		fprintf(stderr, "ncclguard: %s: its process is still running; its last calls "
			"are not in the trace\n", name);
		close(fd);
		return 0;
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

int ng_flight_collect(const char *flight_dir, const char *tracedir)
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
