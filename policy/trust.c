/*
 * Trust on descriptors (trust.h).  A check by path and a read by path are
 * two lookups: whoever can write a folder on the way can swap what the
 * second one finds.  Here the walk holds each folder open while it opens
 * the next name under it, never follows a symlink it has not checked, and
 * hands back the very descriptor it checked last.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"
#include "trust.h"

#define MAX_LINKS 40			/* as the kernel's ELOOP */

/* Variables whose value names files that are loaded or read: the loader's
 * preload list, NCCL's plugins (NCCL_NET_PLUGIN and NCCL_GIN_PLUGIN take a
 * list), NCCL's configuration and topology files.  Files NCCL writes
 * (NCCL_DEBUG_FILE, the dump files) are not read back. */
static const struct path_var {
	const char *prefix, *suffix;	/* name = prefix, or prefix*suffix */
	const char *seps;
} path_vars[] = {
	{ "LD_PRELOAD", NULL, " :" },
	{ "NCCL_", "_PLUGIN", "," },
	{ "NCCL_CONF_FILE", NULL, "" },
	{ "NCCL_TOPO_FILE", NULL, "" },
	{ "NCCL_GRAPH_FILE", NULL, "" },
};

int ng_trust_path_var(const char *name, const char **seps)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof(path_vars) / sizeof(path_vars[0]); i++) {
		const struct path_var *v = &path_vars[i];
		size_t pl = strlen(v->prefix), sl = v->suffix ? strlen(v->suffix) : 0;

		if (v->suffix ? n > pl + sl && !strncmp(name, v->prefix, pl) &&
				!strcmp(name + n - sl, v->suffix)
			      : !strcmp(name, v->prefix)) {
			*seps = v->seps;
			return 1;
		}
	}
	return 0;
}

/* The first reason wins: it is the one nearest "/". */
static void distrust(struct ng_trust *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void distrust(struct ng_trust *t, const char *fmt, ...)
{
	va_list ap;

	if (t->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
}

/* Owner and mode of one step, on its descriptor's stat. */
static void check_step(struct ng_trust *t, uid_t uid, const struct stat *sb, const char *what,
		       const char *name)
{
	if (sb->st_uid != 0 && sb->st_uid != uid) {
		distrust(t, "%s %s is owned by uid %u, neither root nor this user (uid %u)", what,
			 name, (unsigned)sb->st_uid, (unsigned)uid);
		return;
	}
	/* A sticky folder (like /tmp) lets others add names, not replace
	 * ours; what we then open is checked on its own. */
	if (!(sb->st_mode & (S_IWGRP | S_IWOTH)) ||
	    (S_ISDIR(sb->st_mode) && (sb->st_mode & S_ISVTX)))
		return;
	distrust(t, "%s %s is writable by %s (mode %04o): fix with chmod go-w %s", what, name,
		 (sb->st_mode & S_IWOTH) ? "others" : "its group",
		 (unsigned)(sb->st_mode & 07777), name);
}

/* How many names are left in `p`. */
static int names_left(const char *p)
{
	int n = 0;

	while (*p) {
		p += strspn(p, "/");
		if (*p)
			n++;
		p += strcspn(p, "/");
	}
	return n;
}

/* A hard failure: nothing can be read.  Closes what is open. */
static int give_up(struct ng_trust *t, int dfd, int fd, int err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int give_up(struct ng_trust *t, int dfd, int fd, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
	t->path[0] = 0;			/* resolved no further than the message says */
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	errno = err;
	return -1;
}

int ng_trust_open(const char *path, const char *what, uid_t uid, struct ng_trust *t)
{
	char rest[PATH_MAX], next[PATH_MAX], target[PATH_MAX], name[NAME_MAX + 1];
	struct stat sb, dsb, rsb;
	int dfd = -1, fd = -1, rfd, links = 0, n;
	const char *p;
	size_t len, plen;
	ssize_t tl;

	t->why[0] = 0;
	t->path[0] = 0;
	if (!path || !*path)
		return give_up(t, -1, -1, ENOENT, "cannot read an empty path");
	if (path[0] == '/')
		n = snprintf(rest, sizeof(rest), "%s", path);
	else if (getcwd(next, sizeof(next)))
		n = snprintf(rest, sizeof(rest), "%s/%s", next, path);
	else
		return give_up(t, -1, -1, errno, "cannot read %s: the current folder: %s", path,
			       strerror(errno));
	if (n < 0 || (size_t)n >= sizeof(rest))
		return give_up(t, -1, -1, ENAMETOOLONG, "cannot read %s: path too long", path);
restart:
	/* From "/" again, after a symlink or "..": the whole path is walked
	 * once more, so every step is checked under the one above it. */
	if (dfd >= 0)
		close(dfd);
	t->path[0] = 0;
	dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &dsb))
		return give_up(t, dfd, -1, errno, "cannot open /: %s", strerror(errno));
	check_step(t, uid, &dsb, names_left(rest) == 1 ? "its folder" : "folder", "/");
	p = rest;
	for (;;) {
		p += strspn(p, "/");
		if (!*p)
			return give_up(t, dfd, -1, EISDIR, "cannot read %s: a folder, not a file",
				       t->path[0] ? t->path : "/");
		len = strcspn(p, "/");
		if (len > NAME_MAX)
			return give_up(t, dfd, -1, ENAMETOOLONG, "cannot read %s: a name is too "
				       "long", path);
		memcpy(name, p, len);
		name[len] = 0;
		p += len;
		if (!strcmp(name, "."))
			continue;
		plen = strlen(t->path);
		if (!strcmp(name, "..")) {
			char *slash = strrchr(t->path, '/');

			if (slash)
				*slash = 0;
			n = snprintf(next, sizeof(next), "%s%s", t->path, p);
			if (n < 0 || (size_t)n >= sizeof(next))
				return give_up(t, dfd, -1, ENAMETOOLONG, "cannot read %s: path too "
					       "long", path);
			memcpy(rest, next, (size_t)n + 1);
			if (!rest[0])
				snprintf(rest, sizeof(rest), "/");
			goto restart;
		}
		if (plen + 1 + len >= sizeof(t->path))
			return give_up(t, dfd, -1, ENAMETOOLONG, "cannot read %s: path too long",
				       path);
		fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		snprintf(t->path + plen, sizeof(t->path) - plen, "/%s", name);
		if (fd < 0 || fstat(fd, &sb))
			return give_up(t, dfd, fd, errno, "cannot read %s: %s", t->path,
				       strerror(errno));
		if (S_ISLNK(sb.st_mode)) {
			/* Root's symlinks in root's folders (/lib -> usr/lib) are
			 * the system's layout; anyone else's may point anywhere. */
			if (sb.st_uid != 0 || dsb.st_uid != 0)
				distrust(t, "symlink %s is owned by uid %u in a folder of uid %u: "
					 "only root's symlinks in root's folders are followed",
					 t->path, (unsigned)sb.st_uid, (unsigned)dsb.st_uid);
			if (++links > MAX_LINKS)
				return give_up(t, dfd, fd, ELOOP, "cannot read %s: too many "
					       "symlinks", path);
			tl = readlinkat(fd, "", target, sizeof(target) - 1);
			if (tl < 0 || (size_t)tl >= sizeof(target) - 1)
				return give_up(t, dfd, fd, tl < 0 ? errno : ENAMETOOLONG,
					       "cannot read symlink %s: %s", t->path,
					       tl < 0 ? strerror(errno) : "too long");
			target[tl] = 0;
			t->path[plen] = 0;
			if (target[0] == '/')
				n = snprintf(next, sizeof(next), "%s%s", target, p);
			else
				n = snprintf(next, sizeof(next), "%s/%s%s", t->path, target, p);
			if (n < 0 || (size_t)n >= sizeof(next))
				return give_up(t, dfd, fd, ENAMETOOLONG, "cannot read %s: path "
					       "too long", path);
			memcpy(rest, next, (size_t)n + 1);
			close(fd);
			fd = -1;
			goto restart;
		}
		if (names_left(p) == 0) {
			if (!S_ISREG(sb.st_mode))
				return give_up(t, dfd, fd, EINVAL, "%s %s is not a regular file",
					       what, t->path);
			check_step(t, uid, &sb, what, t->path);
			/* O_PATH cannot read: open the name again and make sure
			 * it is the file just checked.  O_NONBLOCK: a FIFO put
			 * there meanwhile must not hang us. */
			rfd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (rfd < 0 || fstat(rfd, &rsb))
				return give_up(t, dfd, fd, errno, "cannot read %s: %s", t->path,
					       strerror(errno));
			close(fd);
			close(dfd);
			if (rsb.st_dev != sb.st_dev || rsb.st_ino != sb.st_ino) {
				close(rfd);
				return give_up(t, -1, -1, EAGAIN, "cannot read %s: it was replaced "
					       "while being opened", t->path);
			}
			return rfd;
		}
		if (!S_ISDIR(sb.st_mode))
			return give_up(t, dfd, fd, ENOTDIR, "cannot read %s: not a folder",
				       t->path);
		check_step(t, uid, &sb, names_left(p) == 1 ? "its folder" : "folder", t->path);
		close(dfd);
		dfd = fd;
		dsb = sb;
		fd = -1;
	}
}

int ng_trust_check(const char *path, const char *what, uid_t uid, char *why, size_t len)
{
	struct ng_trust t;
	int fd = ng_trust_open(path, what, uid, &t);

	if (fd >= 0)
		close(fd);
	if (fd >= 0 && !t.why[0])
		return 0;
	snprintf(why, len, "%s", t.why);
	return -1;
}

int ng_trust_value(const char *name, const char *value, uid_t uid, char *why, size_t len)
{
	char entry[PATH_MAX], r[sizeof(((struct ng_trust *)0)->why)];
	const char *seps, *p = value;
	size_t n;

	if (!value || !ng_trust_path_var(name, &seps))
		return 0;
	while (*p) {
		n = *seps ? strcspn(p, seps) : strlen(p);
		if (n >= sizeof(entry)) {
			snprintf(why, len, "an entry of %.60s... is longer than a path can be", p);
			return -1;
		}
		memcpy(entry, p, n);
		entry[n] = 0;
		p += n;
		if (*p)
			p++;
		if (!strchr(entry, '/'))
			continue;
		/* ld.so expands $ORIGIN, $LIB, $PLATFORM: no one file to check. */
		if (strchr(entry, '$')) {
			snprintf(why, len, "%s: a path with $ names no one file that can be checked",
				 entry);
			return -1;
		}
		if (ng_trust_check(entry, "file", uid, r, sizeof(r))) {
			snprintf(why, len, "%s", r);
			return -1;
		}
	}
	return 0;
}

int ng_policy_load(const char *path, struct ng_policy *p, struct ng_trust *t)
{
	int fd = ng_trust_open(path, "policy file", getuid(), t);

	if (fd < 0) {
		ng_policy_unreadable(p, path, t->why);
		return -1;
	}
	return ng_policy_parse_fd(fd, t->path, p);
}
