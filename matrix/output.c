/* Writing the outputs: the folder made, each file written whole. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mx_priv.h"

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
