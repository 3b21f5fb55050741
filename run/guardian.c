/*
 * The guardian: if `run` itself is killed, it stops the job and finishes
 * the recording, so that the trace is complete and later jobs stay out of
 * it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run_priv.h"

/* After our death the guardian asks the job to stop, then forces it. */
#define GRACE_MS		5000
#define KILL_WAIT_MS		3000

/* 1 while a process of group pgid runs; zombies do not count (init reaps
 * them once the launcher, their parent, is gone). */
static int group_alive(pid_t pgid)
{
	struct dirent *e;
	char path[300], buf[512];
	int alive = 0;
	DIR *d;

	if (kill(-pgid, 0) && errno == ESRCH)
		return 0;
	d = opendir("/proc");
	if (!d)
		return 1;
	while (!alive && (e = readdir(d))) {
		char *p, state;
		int pgrp, ppid, fd;
		ssize_t len;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		/* pid (comm) state ppid pgrp ...; comm may hold spaces. */
		p = strrchr(buf, ')');
		if (p && sscanf(p + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 &&
		    pgrp == pgid && state != 'Z' && state != 'X')
			alive = 1;
	}
	closedir(d);
	return alive;
}

static int group_wait(pid_t pgid, int ms)
{
	struct timespec ts = { 0, 20 * 1000000L };

	for (int waited = 0; waited < ms; waited += 20) {
		if (!group_alive(pgid))
			return 0;
		nanosleep(&ts, NULL);
	}
	return group_alive(pgid) ? -1 : 0;
}

/* A message from the launcher to its guardian. */
struct guard_msg {
	int kind;
	int value;
};

/*
 * The guardian: a fork of the launcher in its own process group (the
 * terminal's ^C and a signal to the launcher's group miss it), ignoring the
 * signals a job's end may bring.  It waits on a pipe whose only writer is
 * the launcher: "bye" ends it; end-of-file without it means the launcher
 * died, whatever killed it, with no race to check (as PR_SET_PDEATHSIG's
 * would need).  Then it stops the job and does what the launcher left
 * undone.  Never returns.
 */
static void guardian(struct run *r, pid_t pgid, int fd)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTTOU, SIGTSTP };
	struct sigaction ign;
	struct guard_msg m;
	int exit_status = -1;
	ssize_t n;

	setpgid(0, 0);
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	for (size_t i = 0; i < sizeof(ignored) / sizeof(*ignored); i++)
		sigaction(ignored[i], &ign, NULL);
	prctl(PR_SET_NAME, "ncclguard-guard");
	for (;;) {
		n = read(fd, &m, sizeof(m));
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(m))
			break;
		if (m.kind == RN_GUARD_BYE)
			_exit(0);
		if (m.kind == RN_GUARD_EXIT)
			exit_status = m.value;
	}
	/* The job had ended: its group may be gone and its number reused;
	 * only the launcher's wrap-up is left to finish. */
	if (exit_status != -1) {
		fprintf(stderr, "ncclguard: the launcher (pid %ld) died after job %s ended; "
			"finishing its recording\n", (long)r->launcher, r->job);
		rn_wrap_up(r, "finished", exit_status);
		_exit(0);
	}
	fprintf(stderr, "ncclguard: the launcher (pid %ld) died; stopping job %s and its recording\n",
		(long)r->launcher, r->job);
	if (pgid > 0 && group_alive(pgid)) {
		kill(-pgid, SIGTERM);
		kill(-pgid, SIGCONT);
		if (group_wait(pgid, GRACE_MS)) {
			fprintf(stderr, "ncclguard: job still running %d s after SIGTERM: SIGKILL\n",
				GRACE_MS / 1000);
			kill(-pgid, SIGKILL);
			if (group_wait(pgid, KILL_WAIT_MS))
				fprintf(stderr, "ncclguard: warning: process group %ld survives SIGKILL\n",
					(long)pgid);
		}
	}
	rn_wrap_up(r, "launcher_killed", exit_status);
	_exit(0);
}

/* Forks the guardian of job pgid; returns the write end of its pipe, or
 * -1 (the run goes on without one, after a warning). */
int rn_guardian_start(struct run *r, pid_t pgid, int go_w, pid_t *gpid)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		goto fail;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		goto fail;
	}
	if (pid == 0) {
		close(p[1]);
		/* The job must see end-of-file on its go pipe if we all die. */
		close(go_w);
		guardian(r, pgid, p[0]);
	}
	close(p[0]);
	*gpid = pid;
	return p[1];
fail:
	fprintf(stderr, "ncclguard: warning: no guardian (%s): if this command is killed, the job runs on\n",
		strerror(errno));
	return -1;
}

void rn_guardian_tell(int fd, int kind, int value)
{
	struct guard_msg m = { kind, value };

	if (fd >= 0 && write(fd, &m, sizeof(m)) != (ssize_t)sizeof(m))
		fprintf(stderr, "ncclguard: warning: guardian: %s\n", strerror(errno));
}

void rn_guardian_end(int fd, pid_t gpid)
{
	int status;

	if (fd < 0)
		return;
	rn_guardian_tell(fd, RN_GUARD_BYE, 0);
	close(fd);
	while (waitpid(gpid, &status, 0) < 0 && errno == EINTR)
		;
}
