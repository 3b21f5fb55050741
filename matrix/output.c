/* What the outputs share: the display order of ranks, sizes in words,
 * and writing the files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mx_priv.h"

int mx_host_order(const struct ng_mx *m, int *order, int *group)
{
	int k = 0, g = 0, absent = 0;
	char *done = calloc((size_t)m->n, 1);

	if (!done) {	/* rank order, one group: still readable */
		for (int i = 0; i < m->n; i++) {
			order[i] = i;
			group[i] = 0;
		}
		return 1;
	}
	for (int h = 0; h < m->n; h++) {
		if (done[h] || !m->ranks[h].joined)
			continue;
		for (int r = h; r < m->n; r++)
			if (!done[r] && m->ranks[r].joined &&
			    !strcmp(m->ranks[r].host, m->ranks[h].host)) {
				done[r] = 1;
				order[k] = r;
				group[k++] = g;
			}
		g++;
	}
	/* Ranks that never joined: no host, one group of their own, last. */
	for (int r = 0; r < m->n; r++)
		if (!done[r]) {
			order[k] = r;
			group[k++] = g;
			absent = 1;
		}
	free(done);
	return g + absent;
}

void mx_fmt_bytes(char *buf, size_t len, size_t bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (v == (double)(long long)v)
		snprintf(buf, len, "%lld %s", (long long)v, unit[u]);
	else
		snprintf(buf, len, "%.2f %s", v, unit[u]);
}

int mx_make_dirs(const char *dir)
{
	char buf[4096];
	size_t n = strlen(dir);

	if (!n || n >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, dir, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

/* An output replaces only a regular file (lstat: a symlink is neither
 * followed nor replaced), and appears whole: written beside it, renamed. */
static int write_one(const char *dir, const char *name, const struct ng_mx *m,
		     void (*fn)(FILE *, const struct ng_mx *))
{
	char path[4200], tmp[4300];
	struct stat st;
	FILE *f = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!lstat(path, &st) && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "ncclguard matrix: %s: not a regular file; refusing to replace it, "
			"give another -o\n", path);
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0)
		f = fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, "ncclguard matrix: cannot write %s: %s\n", path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return -1;
	}
	fn(f, m);
	if (ferror(f) | fclose(f) || rename(tmp, path)) {
		fprintf(stderr, "ncclguard matrix: cannot write %s: %s\n", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

int ng_mx_write_files(const char *dir, const struct ng_mx *m)
{
	if (mx_make_dirs(dir)) {
		fprintf(stderr, "ncclguard matrix: cannot make %s: %s\n", dir, strerror(errno));
		return -1;
	}
	if (write_one(dir, "matrix.json", m, ng_mx_write_json))
		return -1;
	return write_one(dir, "matrix.html", m, ng_mx_write_html);
}
