/*
 * The user's runtime folder (run_priv.h): where the runs of one job on a host
 * meet and keep their flight rings.  Every run of the user on the host
 * must pick the same one, and no other user may have made or be able to
 * replace it: a folder squatted there would leave the job untraced, or
 * send it somewhere another user reads.
 *
 * The candidates, first usable wins (one table):
 *   root:   /run/ncclguard               (/run is root's alone)
 *   others: $XDG_RUNTIME_DIR/ncclguard   (the login's private folder)
 *   both:   /dev/shm/ncclguard-<uid>     (shared: only once checked ours)
 *
 * A candidate is used only if its parent cannot be written by another
 * user, or is sticky (then only its owner may rename or remove an entry),
 * and the folder itself, opened with O_NOFOLLOW, is a folder owned by us
 * with no access for group or others.  Once both hold, nobody else can
 * swap the name for something else, so paths below it are safe to use.
 *
 * The session daemon's run folder (its sockets, which the traced
 * processes and `run` connect to) is held to the same rule: lttng-sessiond
 * itself takes whatever it finds there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run_priv.h"

enum { FOR_ROOT = 1, FOR_USER = 2, FOR_ALL = 3 };

static const struct {
	int who;
	const char *fmt;	/* %s: the base, %u: our uid */
	const char *base_env;	/* the base, from the environment; NULL: fmt is whole */
} candidates[] = {
	{ FOR_ROOT, "/run/ncclguard", NULL },
	{ FOR_USER, "%s/ncclguard", "XDG_RUNTIME_DIR" },
	{ FOR_ALL, "/dev/shm/ncclguard-%u", NULL },
};

/* Nobody but root and uid may add, rename or remove entries of dir. */
static const char *parent_safe(const char *dir, uid_t uid)
{
	struct stat st;

	if (stat(dir, &st))
		return strerror(errno);
	if (!S_ISDIR(st.st_mode))
		return "its parent is not a folder";
	if (st.st_uid != 0 && st.st_uid != uid)
		return "its parent belongs to another user";
	if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
		return "its parent is writable by others and not sticky";
	return NULL;
}

/* dir, made if missing, is a folder of ours that nobody else may enter:
 * NULL, else why not. */
static const char *private_dir(const char *dir, uid_t uid)
{
	static char why[96];
	struct stat st;
	int fd;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return strerror(errno);
	/* A symlink fails here (ELOOP), whatever it points to. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP || errno == ENOTDIR ?
			"a symlink or a file, not a folder (made by someone else?)" : strerror(errno);
	if (fstat(fd, &st)) {
		snprintf(why, sizeof(why), "%s", strerror(errno));
	} else if (st.st_uid != uid) {
		snprintf(why, sizeof(why), "owned by uid %u, not by us", (unsigned)st.st_uid);
	} else if (st.st_mode & 077) {
		snprintf(why, sizeof(why), "mode %04o, open to others", (unsigned)(st.st_mode & 07777));
	} else {
		close(fd);
		return NULL;
	}
	close(fd);
	return why;
}

/* The base folder from the environment: absolute, a folder of ours,
 * mode 0700, as the XDG spec demands; NULL, else why not ("" if it does
 * not exist). */
static const char *base_ok(const char *base, uid_t uid)
{
	struct stat st;
	int fd;

	if (base[0] != '/')
		return "not an absolute path";
	fd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? "" : strerror(errno);
	if (fstat(fd, &st) || st.st_uid != uid || (st.st_mode & 07777) != 0700) {
		close(fd);
		return "not a folder of ours with mode 0700";
	}
	close(fd);
	return NULL;
}

int rn_runtime_dir(char *buf, size_t len)
{
	uid_t uid = geteuid();
	int who = uid == 0 ? FOR_ROOT : FOR_USER;

	for (size_t i = 0; i < sizeof(candidates) / sizeof(*candidates); i++) {
		const char *base = NULL, *why;
		char parent[PATH_MAX];
		char *slash;
		int n;

		if (!(candidates[i].who & who))
			continue;
		if (candidates[i].base_env) {
			base = getenv(candidates[i].base_env);
			if (!base || !*base)
				continue;
			why = base_ok(base, uid);
			/* "": missing, as on a host where the login that set
			 * it never was (srun passes the variable on). */
			if (why && !*why)
				continue;
			if (why) {
				fprintf(stderr, "ncclguard: warning: %s=%s: %s; not used\n",
					candidates[i].base_env, base, why);
				continue;
			}
			n = snprintf(buf, len, candidates[i].fmt, base);
		} else {
			n = snprintf(buf, len, candidates[i].fmt, (unsigned)uid);
		}
		if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof(parent))
			continue;
		memcpy(parent, buf, (size_t)n + 1);
		slash = strrchr(parent, '/');
		if (slash == parent)
			slash[1] = '\0';
		else
			*slash = '\0';
		why = parent_safe(parent, uid);
		if (!why)
			why = private_dir(buf, uid);
		if (!why)
			return 0;
		fprintf(stderr, "ncclguard: warning: %s: %s; not used\n", buf, why);
	}
	buf[0] = '\0';
	return -1;
}

int rn_lttng_rundir_check(char *buf, size_t len, const char **why)
{
	uid_t uid = geteuid();
	const char *home = getenv("LTTNG_HOME");
	struct stat st;
	int fd, n;

	*why = NULL;
	/* Root's daemon: /var/run/lttng, which it makes if missing. */
	if (uid == 0) {
		n = snprintf(buf, len, "/var/run/lttng");
		if (n < 0 || (size_t)n >= len || lstat(buf, &st))
			return 0;
		if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
			*why = "not a folder of root's that only root may write to";
		return *why ? -1 : 0;
	}
	/* A user's: $LTTNG_HOME/.lttng, else $HOME/.lttng. */
	if (!home || !*home)
		home = getenv("HOME");
	if (!home || !*home)
		return 0;	/* LTTng says so itself */
	n = snprintf(buf, len, "%s/.lttng", home);
	if (n < 0 || (size_t)n >= len)
		return 0;
	*why = parent_safe(home, uid);
	if (*why)
		return -1;
	/* In a sticky folder others may write to (LTTNG_HOME=/tmp), made
	 * here when missing, so that nobody slips one in before the daemon
	 * starts; elsewhere only we could make it.  One we cannot make is
	 * LTTng's to report. */
	if (!stat(home, &st) && (st.st_mode & 022) && mkdir(buf, 0700) && errno != EEXIST)
		return 0;
	fd = open(buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0) {
		*why = "a symlink or a file, not a folder (made by someone else?)";
		return -1;
	}
	if (fstat(fd, &st) || st.st_uid != uid || (st.st_mode & 022))
		*why = "not a folder of ours that only we may write to";
	close(fd);
	return *why ? -1 : 0;
}
