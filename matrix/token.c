/*
 * --token-file: a secret every rank gives in its HELLO, for networks where
 * others can reach the coordinator's port.  The job id alone is no secret
 * (any user can list the jobs), so without it a stranger can take a
 * rank's place; with it, a HELLO without the secret is refused.  The file
 * is held like an SSH key: this user's (or root's), readable by no one
 * else, so that a secret others can read is never taken for one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mx_priv.h"

int ng_mx_read_token(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
	char raw[NG_MX_TOKEN_MAX + 2];
	struct stat st;
	ssize_t got;
	size_t n;
	int fd, ret = -1, printable = 1;

	/* O_NONBLOCK: a FIFO in its place must not hang the rank. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto out;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "%s: owned by uid %u, not by you or root", path,
			 (unsigned)st.st_uid);
		goto out;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen, "%s: mode %03o lets others read or change the secret "
			 "(chmod 600 it)", path, (unsigned)(st.st_mode & 0777));
		goto out;
	}
	got = read(fd, raw, sizeof(raw) - 1);
	if (got < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	raw[got] = '\0';
	n = strcspn(raw, "\r\n");
	if (n > NG_MX_TOKEN_MAX) {
		snprintf(err, errlen, "%s: the secret's line is longer than %d bytes", path,
			 NG_MX_TOKEN_MAX);
		goto out;
	}
	raw[n] = '\0';
	for (size_t i = 0; i < n; i++)
		printable &= raw[i] > 0x20 && raw[i] < 0x7f;
	/* Printable: it travels as one field of a protocol line. */
	if (n < NG_MX_TOKEN_MIN || !printable) {
		snprintf(err, errlen, "%s: the first line must hold a secret of at least %d "
			 "printable characters, no spaces (e.g. head -c 24 /dev/urandom | base64 > "
			 "FILE)", path, NG_MX_TOKEN_MIN);
		goto out;
	}
	if (n + 1 > len) {
		snprintf(err, errlen, "%s: the secret is too long", path);
		goto out;
	}
	memcpy(buf, raw, n + 1);
	ret = 0;
out:
	close(fd);
	return ret;
}

void mx_secret_field(char *dst, size_t len, const char *secret)
{
	snprintf(dst, len, "%s", secret && *secret ? secret : "-");
}

int mx_secret_equal(const char *got, const char *ours)
{
	size_t ng = strlen(got), no = strlen(ours);
	unsigned char d = ng != no;

	/* Every byte of ours, whatever came: the time tells nothing of
	 * how much of it was right. */
	for (size_t i = 0; i < no; i++)
		d |= (unsigned char)(ours[i] ^ (i < ng ? got[i] : 0));
	return !d;
}
