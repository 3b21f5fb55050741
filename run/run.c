/*
 * `ncclguard run`'s work, once its arguments are checked (tools/).
 *
 * Starts an LTTng session into DIR/<host> that records this job's events
 * only (a filter on their job tag), runs CMD in its own process group with
 * libncclguard.so first in LD_PRELOAD and the options as NCCLGUARD_*
 * variables, forwards SIGINT, SIGTERM and SIGHUP to that group, then stops
 * and destroys the session whatever became of CMD, reports lost events and
 * a full disk, collects the flight rings of dead processes, writes the run
 * record (DIR/<host>/run.json), prints the analyzer's summary and exits
 * with CMD's status.  A guardian process does the same if we are killed.
 * Without a usable LTTng the job still runs, guarded but untraced.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "job.h"
#include "run_priv.h"

/* DIR made absolute (the session daemon has its own cwd); the trace goes
 * to DIR/<host> so that hosts of a job can share DIR. */
static int trace_dirs(struct run *r)
{
	char cwd[PATH_MAX];
	struct tm tm;
	size_t dlen = sizeof(r->dir);
	int n;

	if (!r->o.outdir) {
		char name[64];

		localtime_r(&r->started, &tm);
		strftime(name, sizeof(name), "ncclguard-trace-%Y%m%d-%H%M%S", &tm);
		if (!getcwd(cwd, sizeof(cwd)))
			return -1;
		n = snprintf(r->dir, dlen, "%s/%s", cwd, name);
	} else if (r->o.outdir[0] == '/') {
		n = snprintf(r->dir, dlen, "%s", r->o.outdir);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -1;
		n = snprintf(r->dir, dlen, "%s/%s", cwd, r->o.outdir);
	}
	if (n < 0 || (size_t)n >= dlen)
		return -1;
	while (n > 1 && r->dir[n - 1] == '/')
		r->dir[--n] = '\0';
	if (gethostname(r->host, sizeof(r->host) - 1) || !r->host[0] || strchr(r->host, '/'))
		snprintf(r->host, sizeof(r->host), "localhost");
	n = snprintf(r->hostdir, sizeof(r->hostdir), "%s/%s", r->dir, r->host);
	return n < 0 || (size_t)n >= sizeof(r->hostdir) ? -1 : 0;
}

/* The job's id: common/job.h's (which the shim finds itself), else the
 * one mpirun gives all its tasks, else one made here: host, our pid and
 * start time tell it from every other run, here and on other hosts. */
static int job_id(struct run *r)
{
	const char *env = ng_job_id_env();
	int n;

	rn_launch_detect(&r->launch);
	if (env)
		n = snprintf(r->job, sizeof(r->job), "%s", env);
	else if (r->launch.job[0])
		n = snprintf(r->job, sizeof(r->job), "%s", r->launch.job);
	else if (rn_launch_torchrun(r->o.cmd, r->job, sizeof(r->job)))
		/* Each host runs its own torchrun: its arguments are what the
		 * hosts share; an id made here would split the job by host. */
		n = (int)strlen(r->job);
	else
		n = snprintf(r->job, sizeof(r->job), "%s-%ld-%lld", r->host, (long)r->launcher,
			     (long long)r->started);
	if (n < 0 || (size_t)n >= sizeof(r->job)) {
		fprintf(stderr, "ncclguard run: job id too long\n");
		return -1;
	}
	if (!env && !r->launch.job[0] && r->launch.per_task)
		fprintf(stderr, "ncclguard run: warning: started by %s, one run per task, and no "
			"job id its tasks share: each task records alone and the analyzer sees "
			"as many jobs; set NCCLGUARD_JOB to one value for the whole job\n",
			r->launch.kind);
	r->job_export = !env;
	r->tag = ng_job_tag(r->job);
	return 0;
}

/* A CTF trace (a folder with `metadata`) under dir: where a relay's
 * output folder is DIR itself, on a shared filesystem. */
static int has_trace(const char *dir, int depth)
{
	char path[PATH_MAX];
	struct dirent *e;
	struct stat st;
	int found = 0;
	DIR *d;

	if (depth > 8 || !(d = opendir(dir)))
		return 0;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.' ||
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path) ||
		    lstat(path, &st))
			continue;
		if (S_ISREG(st.st_mode) && !strcmp(e->d_name, "metadata") && st.st_size > 0)
			found = 1;
		else if (S_ISDIR(st.st_mode))
			found = has_trace(path, depth + 1);
	}
	closedir(d);
	return found;
}

/* Instead of the summary, when nothing was recorded: why (the shim's
 * note at exit says more for each rank), and what is left. */
static void nothing_recorded(const struct run *r, int rc)
{
	const char *cmd = r->o.cmd[0];

	if (r->removed) {
		fprintf(stderr, "ncclguard: %s did not start: nothing recorded, nothing left in %s\n",
			cmd, r->dir);
		return;
	}
	if (r->exec_errno)
		fprintf(stderr, "ncclguard: %s did not start: nothing recorded", cmd);
	else if (!r->traced)
		fprintf(stderr, "ncclguard: nothing recorded (LTTng was not usable)");
	else if (rc)
		fprintf(stderr, "ncclguard: nothing recorded: %s ended with status %d before any "
			"NCCL call was seen", cmd, rc);
	else
		fprintf(stderr, "ncclguard: nothing recorded: %s made no NCCL call that was seen "
			"(did it call NCCL?)", cmd);
	fprintf(stderr, "; %s/run.json says how it ended, and a new run may use -o %s again\n",
		r->hostdir, r->dir);
}

/* The analyzer's summary, in a child: it is a bonus, and neither its
 * failure nor a ^C that cuts it short changes the job's exit status. */
static uint64_t trace_bytes;

static int add_size(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (type == FTW_F)
		trace_bytes += (uint64_t)st->st_size;
	return 0;
}

static void summary(const char *dir, ng_run_summary_fn fn)
{
	struct sigaction ign, old_int;
	unsigned deadline;
	int status;
	pid_t pid;

	/* The summary is a bonus: a reader that spins on a corrupt stream
	 * must not hold the job's allocation.  Ten minutes, and a second
	 * per 8 MiB of trace (the analyzer reads 50-100 MiB/s). */
	trace_bytes = 0;
	nftw(dir, add_size, 16, FTW_PHYS);
	deadline = 600 + (unsigned)(trace_bytes >> 23);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		int ret;

		signal(SIGALRM, SIG_DFL);
		alarm(deadline);
		ret = fn(dir);

		/* _exit does not flush stdio. */
		fflush(NULL);
		_exit(ret ? 1 : 0);
	}
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGINT, &ign, &old_int);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGINT, &old_int, NULL);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		fprintf(stderr, "ncclguard: the summary took more than %u s and was stopped; run "
			"`ncclguard analyze %s`\n", deadline, dir);
	else if (WIFSIGNALED(status))
		fprintf(stderr, "ncclguard: the summary stopped (signal %d); run `ncclguard analyze %s`\n",
			WTERMSIG(status), dir);
}

int ng_run(const struct ng_run_opts *o, const char *lib, ng_run_summary_fn summary_fn)
{
	struct run r;
	char ltt_run[PATH_MAX];
	const char *why;
	char *preload = NULL;
	int has_tty, rc, err, go[2] = { -1, -1 }, ex[2] = { -1, -1 }, guard = -1;
	const char *status = "finished";
	pid_t pid, gpid = -1;

	memset(&r, 0, sizeof(r));
	r.o = *o;
	r.flight.lock = -1;
	r.g.lock = r.g.member = -1;
	r.free_start = -1;
	r.launcher = getpid();
	r.started = time(NULL);
	if (rn_lttng_rundir_check(ltt_run, sizeof(ltt_run), &why)) {
		fprintf(stderr, "ncclguard run: %s, the session daemon's run folder: %s; another "
			"user could stand in for the daemon (%s)\n", ltt_run, why,
			geteuid() ? "set LTTNG_HOME to a folder of yours" :
			"make it root's, mode 0755");
		return 2;
	}
	if (rn_build_preload(lib, &preload))
		return 2;
	/* The same library as NCCL's profiler plugin: it sees the programs
	 * that call NCCL past the preload (XLA).  The user's choice stands. */
	rn_set_default("NCCL_PROFILER_PLUGIN", lib);
	if (trace_dirs(&r)) {
		fprintf(stderr, "ncclguard run: bad output directory\n");
		rc = 2;
		goto out;
	}
	if (job_id(&r)) {
		rc = 2;
		goto out;
	}

	rn_signals_install();
	if (rn_join(&r, lib)) {
		rn_signals_restore();
		rc = 2;
		goto out;
	}
	if (!r.traced)
		fprintf(stderr, "ncclguard: warning: LTTng is not usable; running %s untraced\n",
			r.o.cmd[0]);
	rn_flight_dir_make(&r.flight, r.rundir, r.tag, (long)r.launcher);
	if (rn_pending_sig) {
		rc = 128 + rn_pending_sig;
		status = "failed";
		goto stop;
	}

	has_tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	if (pipe2(go, O_CLOEXEC) || pipe2(ex, O_CLOEXEC)) {
		fprintf(stderr, "ncclguard run: pipe: %s\n", strerror(errno));
		if (go[0] >= 0) {
			close(go[0]);
			close(go[1]);
		}
		rc = 127;
		status = "failed";
		goto stop;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "ncclguard run: fork: %s\n", strerror(errno));
		close(go[0]);
		close(go[1]);
		close(ex[0]);
		close(ex[1]);
		rc = 127;
		status = "failed";
		goto stop;
	}
	if (pid == 0) {
		close(go[1]);
		close(ex[0]);
		rn_exec_job(&r, preload, has_tty, go[0], ex[1]);
	}
	close(go[0]);
	/* Before the guardian forks: end-of-file must come with the exec. */
	close(ex[1]);
	/* Both sides set the group, so a signal right after fork finds it. */
	setpgid(pid, pid);
	guard = rn_guardian_start(&r, pid, go[1], &gpid);
	if (write(go[1], "g", 1) != 1)
		fprintf(stderr, "ncclguard run: cannot start %s: %s\n", r.o.cmd[0], strerror(errno));
	close(go[1]);
	if (has_tty)
		rn_give_tty(pid);
	rn_child_pgid = pid;
	if (rn_pending_sig)
		kill(-pid, rn_pending_sig);
	rc = rn_wait_job(pid, has_tty);
	if (has_tty)
		rn_give_tty(getpgrp());
	rn_child_pgid = 0;
	/* CMD is gone: an errno here, or end-of-file since it ran. */
	if (read(ex[0], &err, sizeof(err)) == (ssize_t)sizeof(err)) {
		r.exec_errno = err;
		status = "failed";
	}
	close(ex[0]);
	rn_guardian_tell(guard, RN_GUARD_EXIT, rc);

stop:
	rn_wrap_up(&r, status, rc);
	rn_guardian_end(guard, gpid);
	/* The trace is safe: ^C may now stop the summary. */
	rn_signals_restore();
	/* Only the last run out of the job's recording sums it up. */
	if (!r.last)
		goto out;
	if (r.removed || !r.recorded) {
		nothing_recorded(&r, rc);
		goto out;
	}
	if (r.o.relay[0] && r.traced && !has_trace(r.dir, 0)) {
		fprintf(stderr, "ncclguard: the trace is at the relay daemon (%s); run `ncclguard "
			"analyze` on its output folder%s%s\n", r.o.relay,
			r.have_dir ? " together with " : "", r.have_dir ? r.dir : "");
		r.traced = 0;
	}
	if (r.traced)
		summary(r.dir, summary_fn);
out:
	free(preload);
	return rc;
}
