/* A file read whole and bounded (read_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read_file.h"

int ng_read_file(const char *path, size_t max, int oflags, const char *what, char **out,
		 size_t *len, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t n = 0;
	ssize_t got;
	int fd, ret = -1, saved;

	*out = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | oflags);
	if (fd < 0) {
		saved = errno;
		snprintf(err, errlen, "%s", strerror(saved));
		errno = saved;
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		goto out;
	}
	buf = malloc(max + 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	/* To the cap whatever fstat said: the file may be growing. */
	while (n <= max && (got = read(fd, buf + n, max + 1 - n)) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "%s", strerror(errno));
			goto out;
		}
		n += (size_t)got;
	}
	if (n > max) {
		snprintf(err, errlen, "more than a %s's %zu bytes", what, max);
		goto out;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	buf = NULL;
	ret = 0;
out:
	free(buf);
	close(fd);
	errno = 0;
	return ret;
}
