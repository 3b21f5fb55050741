/*
 * policy/trust.c: whether a file may steer a process, as sshd's
 * StrictModes decides, checked on the descriptors the file is read
 * through so that nobody can swap a folder between check and use.
 *
 * The path is resolved once from "/": a symlink is followed only where
 * root owns it and the folder holding it.  Every folder on the way is
 * opened with O_NOFOLLOW under the one before and checked on its
 * descriptor: owned by root or `uid`, writable by nobody else (a sticky
 * folder excepted); the file itself likewise, regular, and never group-
 * or world-writable.  Nothing here allocates or logs (the shim calls it
 * before NCCL starts): results come back in struct ng_trust.
 */
#ifndef NCCLGUARD_TRUST_H
#define NCCLGUARD_TRUST_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

struct ng_policy;

struct ng_trust {
	char path[PATH_MAX];		/* resolved, symlinks followed; "" if unreadable */
	char why[PATH_MAX + 160];	/* first reason not to trust it; "" if none */
};

/* Open `path` (called `what` in messages: "policy file") for reading along its resolved path.  Returns the descriptor
 * (t->why empty when every step passed, else the first that did not: the
 * descriptor is still the file the walk reached, for callers that only
 * inform), or -1 with t->why saying why it cannot be read at all (missing,
 * not a regular file, a loop). */
int ng_trust_open(const char *path, const char *what, uid_t uid, struct ng_trust *t);

/* 0 when `path` passes every step for `uid`, else -1 with why in buf. */
int ng_trust_check(const char *path, const char *what, uid_t uid, char *why, size_t len);

/* Parse the policy at `path` from the descriptor ng_trust_open gives, for
 * the process's real user.  Returns what ng_policy_parse_fd returns (p->err
 * says why on -1); t->why is empty when the file is trusted; t->path names
 * the file as resolved. */
int ng_policy_load(const char *path, struct ng_policy *p, struct ng_trust *t);

/* Environment variables whose value names files the loader or NCCL opens:
 * 1 and the characters that separate entries, else 0. */
int ng_trust_path_var(const char *name, const char **seps);

/* The first entry of a path-valued variable's value that names a file
 * (has a '/') and fails ng_trust_check for `uid`: -1 with the entry and
 * why in buf; 0 when every such entry passes.  Bare names are the
 * loader's. */
int ng_trust_value(const char *name, const char *value, uid_t uid, char *why, size_t len);

#endif
