/*
 * One recording per host per job (DESIGN.md section 10).  Under srun or
 * mpirun every task runs its own `ncclguard run`; the runs of one job on
 * one host share one LTTng session: the first creates it, the last out
 * stops and destroys it, in whatever order they end, killed or not.
 *
 * They meet in a folder of the user's runtime folder (cli.h), beside the
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
#ifndef NCCLGUARD_GROUP_H
#define NCCLGUARD_GROUP_H

#include <limits.h>
#include <stdint.h>

/* Which launcher started us, from its variables (tools/launcher.c). */
struct ng_launch {
	const char *kind;	/* srun, mpirun, pmix, mpiexec, none */
	int per_task;		/* one `ncclguard run` per task */
	int local_rank;		/* -1 if unknown */
	int local_size;		/* tasks of the job on this host, -1 if unknown */
	char job[256];		/* a job id every task sees alike, "" if none */
	const char *job_var;	/* the variable it came from */
};

void ng_launch_detect(struct ng_launch *l);
/* A multi-node torchrun command (torchrun or python -m torch.distributed.run
 * with --nnodes other than 1 and a rendezvous or master address): a job id
 * every host's command spells alike, into job; 0 if none. */
int ng_launch_torchrun(char **cmd, char *job, size_t len);

/* The shared record. */
struct ng_group_rec {
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

struct ng_group {
	char path[PATH_MAX];	/* the job's folder, "" if none */
	int lock;		/* its lock file, -1 if none */
	int locked;
	int member;		/* our member file, -1 if none */
	long pid;		/* our launcher's pid: the member file's name */
};

/* What the runs that left said, for run.json. */
struct ng_group_end {
	int tasks;		/* runs that ended, the dead included */
	int killed;		/* of them, whose launcher was killed */
	int failed;
	int exit_status;	/* the first non-zero one in the order they left, else 0 */
};

/* The runs that left job folder dir, each once however many lines it has. */
void ng_group_read_ended(const char *dir, struct ng_group_end *end);

/* Opens (making it if needed) the folder of job `tag` on `host` in the
 * runtime folder `parent` (cli.h's ng_runtime_dir, checked private),
 * removes those of other jobs whose runs all died (stopping their
 * sessions), and takes the folder's lock, waiting at most wait_ms.  0, or
 * -1 after a warning on stderr (the run then records nothing). */
int ng_group_open(struct ng_group *g, const char *parent, uint64_t tag, const char *host, long pid,
		  int wait_ms);

/* With the lock held: the record, 1; none, 0; unreadable, -1. */
int ng_group_read(struct ng_group *g, struct ng_group_rec *rec);

/* With the lock held: replaces the record.  0 or -1. */
int ng_group_write(struct ng_group *g, const struct ng_group_rec *rec);

/* With the lock held: live members other than us (dead ones are noted as
 * killed in `ended` and their files removed). */
int ng_group_alive(struct ng_group *g);

/* With the lock held: makes our member file and counts us in the record's
 * `joined`.  0 or -1. */
int ng_group_enter(struct ng_group *g);

/* With the lock held: forgets a stale record and what runs of it left. */
void ng_group_reset(struct ng_group *g);

void ng_group_unlock(struct ng_group *g);

/* Leaves: notes our outcome, drops our member file, and looks for live
 * members.  While none is alive but fewer runs joined than the launcher
 * announced, waits up to grace_ms for the others to join.  Returns 1
 * when we are the last out, with the lock held, *rec and *end filled (call
 * ng_group_close when done): also a guardian whose launcher left already
 * but died before it finished; 0 when others remain or all is done; -1
 * on error (warned). */
int ng_group_leave(struct ng_group *g, const char *status, int exit_status, int grace_ms,
		   struct ng_group_rec *rec, struct ng_group_end *end);

/* The last out, done: removes the folder and lets go of it. */
void ng_group_close(struct ng_group *g);

/* Lets go of the folder without leaving (a run that never entered). */
void ng_group_release(struct ng_group *g);

/* With the lock held, a run that will not record with the others: drops
 * its member file, and the folder if nobody else is in it. */
void ng_group_drop(struct ng_group *g);

#endif
