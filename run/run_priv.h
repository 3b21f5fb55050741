/*
 * run/'s own declarations, for its files only (run.h is the module's face).
 *
 * One recording per host per job (docs/cluster.md).  Under srun or
 * mpirun every task runs its own `ncclguard run`; the runs of one job on
 * one host share one LTTng session: the first creates it, the last out
 * stops and destroys it, in whatever order they end, killed or not.
 *
 * They meet in a folder of the user's runtime folder (rundir.c), beside the
 * flight folders: <runtime>/job-<tag>-<host>/, holding
 *
 *   lock      flock'd (exclusive) while a run joins or leaves;
 *   session   the record: the session's name, where it writes, the
 *             relay, the tasks announced and joined (key=value lines);
 *   m-<pid>   one file per run, flock'd while its launcher or its guardian
 *             lives: a file whose lock can be taken is a dead run's;
 *   ended     one line per run that left: pid, status, exit status.
 *
 * A leaver that finds no other live member is the last: it stops the
 * session, writes run.json for all and removes the folder.  A task killed
 * with its guardian leaves an unlocked member file, counted as killed by
 * the next leaver.  The host is in the folder's name: containers or test
 * namespaces that share the runtime folder but not their session daemons
 * never meet.
 */
#ifndef NCCLGUARD_RUN_PRIV_H
#define NCCLGUARD_RUN_PRIV_H

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "run.h"
#include "session.h"

/* ---- launcher.c ------------------------------------------------------ */

/* Which launcher started us, from its variables (launcher.c). */
struct rn_launch {
	const char *kind;	/* srun, mpirun, pmix, mpiexec, none */
	int per_task;		/* one `ncclguard run` per task */
	int local_rank;		/* -1 if unknown */
	int local_size;		/* tasks of the job on this host, -1 if unknown */
	char job[256];		/* a job id every task sees alike, "" if none */
	const char *job_var;	/* the variable it came from */
};

void rn_launch_detect(struct rn_launch *l);
/* A multi-node torchrun command (torchrun or python -m torch.distributed.run
 * with --nnodes other than 1 and a rendezvous or master address): a job id
 * every host's command spells alike, into job; 0 if none. */
int rn_launch_torchrun(char **cmd, char *job, size_t len);

/* The shared record. */
struct rn_meet_rec {
	char session[192];	/* the LTTng session's name */
	char dir[PATH_MAX];	/* -o DIR, absolute */
	char hostdir[PATH_MAX];	/* DIR/<host>: run.json, flight/, hang/, the trace if local */
	char relay[512];	/* the relay URL, "" if the trace is local */
	char job[256];
	long creator;		/* pid of the run that created the session */
	long long started;	/* its start, seconds since the epoch */
	long long free_start;	/* bytes free in hostdir at start, -1 unknown */
	int expected;		/* tasks the launcher announced on this host, 0 unknown */
	int joined;		/* runs that joined, the creator included */
};

struct rn_meet {
	char path[PATH_MAX];	/* the job's folder, "" if none */
	int lock;		/* its lock file, -1 if none */
	int locked;
	int member;		/* our member file, -1 if none */
	long pid;		/* our launcher's pid: the member file's name */
};

/* What the runs that left said, for run.json. */
struct rn_meet_end {
	int tasks;		/* runs that ended, the dead included */
	int killed;		/* of them, whose launcher was killed */
	int failed;
	int exit_status;	/* the first non-zero one in the order they left, else 0 */
};

/* ---- meeting.c: the job's meeting folder ---------------------------- */

/* The runs that left job folder dir, each once however many lines it has. */
void rn_meet_read_ended(const char *dir, struct rn_meet_end *end);

/* Opens (making it if needed) the folder of job `tag` on `host` in the
 * runtime folder `parent` (rn_runtime_dir, checked private),
 * removes those of other jobs whose runs all died (stopping their
 * sessions), and takes the folder's lock, waiting at most wait_ms.  0, or
 * -1 after a warning on stderr (the run then records nothing). */
int rn_meet_open(struct rn_meet *g, const char *parent, uint64_t tag, const char *host, long pid,
		  int wait_ms);

/* With the lock held: the record, 1; none, 0; unreadable, -1. */
int rn_meet_read(struct rn_meet *g, struct rn_meet_rec *rec);

/* With the lock held: replaces the record.  0 or -1. */
int rn_meet_write(struct rn_meet *g, const struct rn_meet_rec *rec);

/* With the lock held: live members other than us (dead ones are noted as
 * killed in `ended` and their files removed). */
int rn_meet_alive(struct rn_meet *g);

/* With the lock held: makes our member file and counts us in the record's
 * `joined`.  0 or -1. */
int rn_meet_enter(struct rn_meet *g);

/* With the lock held: forgets a stale record and what runs of it left. */
void rn_meet_reset(struct rn_meet *g);

void rn_meet_unlock(struct rn_meet *g);

/* Leaves: notes our outcome, drops our member file, and looks for live
 * members.  While none is alive but fewer runs joined than the launcher
 * announced, waits up to grace_ms for the others to join.  Returns 1
 * when we are the last out, with the lock held, *rec and *end filled (call
 * rn_meet_close when done): also a guardian whose launcher left already
 * but died before it finished; 0 when others remain or all is done; -1
 * on error (warned). */
int rn_meet_leave(struct rn_meet *g, const char *status, int exit_status, int grace_ms,
		   struct rn_meet_rec *rec, struct rn_meet_end *end);

/* The last out, done: removes the folder and lets go of it. */
void rn_meet_close(struct rn_meet *g);

/* Lets go of the folder without leaving (a run that never entered). */
void rn_meet_release(struct rn_meet *g);

/* With the lock held, a run that will not record with the others: drops
 * its member file, and the folder if nobody else is in it. */
void rn_meet_drop(struct rn_meet *g);

/* ---- flight.c: the flight rings of dead processes ------------------- */

/*
 * The shim's per-thread records of calls not yet written to LTTng live in
 * files under NCCLGUARD_FLIGHT_DIR, which `run` makes (a private folder
 * on tmpfs) for its command.  Once the command is gone, whatever a dead
 * process left there is copied to <tracedir>/flight/ for the analyzer.
 * Returns the number of calls recovered, -1 on error (why, on stderr).
 */
int rn_flight_collect(const char *flight_dir, const char *tracedir);

/* This run's flight folder: made private on tmpfs, after removing those
 * of runs that died with their guardian (whose launcher is gone and
 * whose files no process holds); a lock file in it, inherited by the
 * guardian, keeps other runs from taking it for one of those. */
struct rn_flight_dir {
	char path[PATH_MAX];	/* "" if none */
	int lock;		/* -1 if none */
};
/* 0, or -1 after a warning: the job then runs without flight rings.
 * parent: the runtime folder, "" for none (a folder of random name in
 * /dev/shm then). */
int rn_flight_dir_make(struct rn_flight_dir *f, const char *parent, uint64_t tag, long launcher);
/* Its regular files, then itself; the lock let go. */
void rn_flight_dir_remove(struct rn_flight_dir *f);

/* ---- rundir.c: where runs meet -------------------------------------- */

/* The user's runtime folder: /run/ncclguard for root,
 * $XDG_RUNTIME_DIR/ncclguard for others, else /dev/shm/ncclguard-<uid>;
 * made private if missing, and used only if it is ours, private and out
 * of other users' reach.  0; or -1 with buf "" when none is, each refusal
 * warned on stderr. */
int rn_runtime_dir(char *buf, size_t len);
/* The run folder of the session daemon `run` uses: /var/run/lttng for
 * root, ${LTTNG_HOME:-$HOME}/.lttng for others.  0 if it is ours and
 * nobody else may write to it (or LTTng will say why it cannot use it);
 * -1 with its path in buf and *why: another user could take the daemon's
 * place. */
int rn_lttng_rundir_check(char *buf, size_t len, const char **why);

/* ---- the run -------------------------------------------------------- */

/* One run, as the launcher and, after a fork, its guardian know it. */
struct run {
	struct ng_run_opts o;
	struct ng_session s;
	char dir[PATH_MAX], hostdir[PATH_MAX], host[256];
	char job[256];
	int job_export;			/* the shim cannot find it: NCCLGUARD_JOB */
	uint64_t tag;
	struct rn_launch launch;
	char rundir[PATH_MAX];		/* the runtime folder, "" if none is usable */
	struct rn_meet g;		/* the runs of this job on this host */
	int joined;			/* another run created the session */
	int last;			/* we were the last out: we stopped it */
	int tasks;			/* runs that shared it (the last out knows) */
	long creator;			/* pid of the run that created the session */
	int traced;
	int have_dir;			/* hostdir exists: the record goes there */
	int made_dir;			/* we made DIR itself */
	int exec_errno;			/* CMD could not be started: why */
	int recorded;			/* the last out found: 1 something, 0 nothing,
					 * -1 cannot tell (relayed) */
	int removed;			/* CMD never started: DIR/<host> is gone */
	char reserve[PATH_MAX + 32];	/* "" if none */
	struct rn_flight_dir flight;	/* NCCLGUARD_FLIGHT_DIR */
	time_t started;
	long long free_start;		/* -1: unknown */
	pid_t launcher;
};

/* ---- job.c: the job's process --------------------------------------- */

/* The job's process group once it exists; a signal that came before. */
extern volatile sig_atomic_t rn_child_pgid;
extern volatile sig_atomic_t rn_pending_sig;
/* SIGINT, SIGTERM and SIGHUP forwarded to the job; SIGPIPE ignored. */
void rn_signals_install(void);
void rn_signals_restore(void);
/* lib first in LD_PRELOAD (after the sanitizer's runtime, if any). */
int rn_build_preload(const char *lib, char **out);
void rn_set_default(const char *name, const char *value);
/* In the child: becomes the job once go_fd says so; never returns. */
void rn_exec_job(const struct run *r, const char *preload, int take_tty, int go_fd,
		 int err_fd) __attribute__((noreturn));
void rn_give_tty(pid_t pgid);
/* CMD's exit status, as a shell reports it. */
int rn_wait_job(pid_t pid, int has_tty);

/* ---- recording.c: the job's recording on this host ------------------ */

/* Bytes free for us on path's filesystem, -1 if unknown. */
long long rn_disk_free(const char *path);
/* Join or create; 0, or -1: nothing may start (exit status 2). */
int rn_join(struct run *r, const char *lib);
/* 1 when we are the last out (the end is ours), 0 when others go on. */
int rn_leave(struct run *r, const char **status, int *exit_status);
void rn_collect_flight(struct run *r);

/* ---- record.c: run.json --------------------------------------------- */

/* What the end of a run found, for its record. */
struct rn_end {
	const char *status;	/* finished, launcher_killed, failed */
	int exit_status;	/* CMD's, -1 if unknown */
	int disk_full;
	int lost_unknown;	/* LTTng's lost-event count was not one */
	int events;		/* the trace holds events, or may: not checked */
	char disk_detail[512];
	long long free_end;
	char consumer_error[160];
};

void rn_write_record(const struct run *r, const struct rn_end *e);
/* 1 if hostdir holds only the record of a run that recorded nothing. */
int rn_holds_unused_record(const char *hostdir);

/* ---- wrapup.c, guardian.c ------------------------------------------- */

void rn_wrap_up(struct run *r, const char *status, int exit_status);

/* Messages from the launcher to its guardian. */
enum { RN_GUARD_EXIT = 1, RN_GUARD_BYE };
/* The write end of the guardian's pipe, or -1 (warned). */
int rn_guardian_start(struct run *r, pid_t pgid, int go_w, pid_t *gpid);
void rn_guardian_tell(int fd, int kind, int value);
void rn_guardian_end(int fd, pid_t gpid);

#endif
