/* Subcommands of the `ncclguard` command; each lives with its module. */
#ifndef NCCLGUARD_CLI_H
#define NCCLGUARD_CLI_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

int ng_cmd_run(int argc, char **argv);		/* tools/cmd_run.c */
int ng_cmd_analyze(int argc, char **argv);	/* tools/cmd_analyze.c */
int ng_cmd_policy(int argc, char **argv);	/* tools/cmd_policy.c */
int ng_cmd_doctor(int argc, char **argv);	/* tools/cmd_doctor.c */
int ng_cmd_matrix(int argc, char **argv);	/* tools/cmd_matrix.c */
int ng_cmd_relay(int argc, char **argv);	/* tools/cmd_relay.c */
int ng_cmd_watch(int argc, char **argv);	/* tools/cmd_watch.c */

/* cli.c: a usage error of `ncclguard CMD`: one line on stderr,
 * "ncclguard CMD: what; see `ncclguard CMD --help`" (the whole help buries
 * the problem).  Returns 2, the usage exit status. */
int ng_cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Where the installed or built libncclguard.so lives, next to our binary:
 * <bindir>/../lib/libncclguard.so.  Returns 0 and fills buf. */
int ng_cli_libdir(char *buf, size_t len);

/*
 * Flight rings (tools/flight.c): the shim's per-thread records of calls
 * not yet written to LTTng live in files under NCCLGUARD_FLIGHT_DIR, which
 * `ncclguard run` makes (a private folder on tmpfs) for its command.  Once
 * the command is gone, whatever a dead process left there is copied to
 * <tracedir>/flight/ for the analyzer.  Returns the number of calls
 * recovered, -1 on error (why, on stderr).
 */
int ng_flight_collect(const char *flight_dir, const char *tracedir);

/* This run's flight folder: made private on tmpfs, after removing those
 * of runs that died with their guardian (whose launcher is gone and
 * whose files no process holds); a lock file in it, inherited by the
 * guardian, keeps other runs from taking it for one of those. */
struct ng_flight_dir {
	char path[PATH_MAX];	/* "" if none */
	int lock;		/* -1 if none */
};
/* The user's runtime folder (rundir.c): /run/ncclguard for root,
 * $XDG_RUNTIME_DIR/ncclguard for others, else /dev/shm/ncclguard-<uid>;
 * made private if missing, and used only if it is ours, private and out
 * of other users' reach.  0; or -1 with buf "" when none is, each refusal
 * warned on stderr. */
int ng_runtime_dir(char *buf, size_t len);
/* The run folder of the session daemon `run` uses: /var/run/lttng for
 * root, ${LTTNG_HOME:-$HOME}/.lttng for others.  0 if it is ours and
 * nobody else may write to it (or LTTng will say why it cannot use it);
 * -1 with its path in buf and *why: another user could take the daemon's
 * place. */
int ng_lttng_rundir_check(char *buf, size_t len, const char **why);
/* 0, or -1 after a warning: the job then runs without flight rings.
 * parent: the runtime folder, "" for none (a folder of random name in
 * /dev/shm then). */
int ng_flight_dir_make(struct ng_flight_dir *f, const char *parent, uint64_t tag, long launcher);
/* Its regular files, then itself; the lock let go. */
void ng_flight_dir_remove(struct ng_flight_dir *f);

#endif
