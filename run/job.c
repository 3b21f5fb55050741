/*
 * The job's process: CMD in a process group of its own, with the shim
 * first in LD_PRELOAD and the options as NCCLGUARD_* variables; the
 * signals `run` forwards to it, and the terminal it hands over.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#include <link.h>
#endif

#include "run_priv.h"

/* Ranks wait at most this long, at their first NCCL call, for the session
 * daemon to set up their buffers; the default (3 s) can lose the first
 * events when many ranks register at once on a large host. */
#define REGISTER_TIMEOUT_MS "10000"

volatile sig_atomic_t rn_child_pgid;
volatile sig_atomic_t rn_pending_sig;

/* Forward to the job's process group; before it exists, remember. */
static void on_signal(int sig)
{
	int saved = errno;

	if (rn_child_pgid > 0)
		kill(-rn_child_pgid, sig);
	else
		rn_pending_sig = sig;
	errno = saved;
}

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP };
/* What we were started with: the job gets the same (under nohup, SIGHUP
 * stays ignored for both of us). */
static struct sigaction saved[sizeof(forwarded) / sizeof(*forwarded)];
static struct sigaction saved_pipe;

void rn_signals_install(void)
{
	struct sigaction sa, ign;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	/* liblttng-ctl's socket calls must not fail with EINTR. */
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(*forwarded); i++) {
		if (sigaction(forwarded[i], NULL, &saved[i]))
			continue;
		if (saved[i].sa_handler != SIG_IGN)
			sigaction(forwarded[i], &sa, NULL);
	}
	/* A closed stderr must not kill us before the session is stopped. */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &saved_pipe);
}

void rn_signals_restore(void)
{
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(*forwarded); i++)
		sigaction(forwarded[i], &saved[i], NULL);
	sigaction(SIGPIPE, &saved_pipe, NULL);
}

#if defined(__SANITIZE_ADDRESS__)
/* An instrumented shim needs the ASan runtime ahead of it in LD_PRELOAD;
 * only sanitizer builds (tests) take this path. */
static int find_asan(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "libasan.so")) {
		snprintf(data, PATH_MAX, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}
#endif

int rn_build_preload(const char *lib, char **out)
{
	const char *old = getenv("LD_PRELOAD");
	char first[PATH_MAX] = "";
	size_t len;

#if defined(__SANITIZE_ADDRESS__)
	dl_iterate_phdr(find_asan, first);
#endif
	len = strlen(first) + strlen(lib) + (old ? strlen(old) : 0) + 3;
	*out = malloc(len);
	if (!*out)
		return -1;
	snprintf(*out, len, "%s%s%s%s%s", first, *first ? " " : "", lib,
		 old && *old ? " " : "", old && *old ? old : "");
	return 0;
}

void rn_set_default(const char *name, const char *value)
{
	if (!getenv(name))
		setenv(name, value, 1);
}

/* Why CMD cannot be run, in a shell's words where there are some. */
static const char *exec_why(const char *cmd, int err)
{
	struct stat st;
	int path = strchr(cmd, '/') != NULL;

	switch (err) {
	case ENOENT:
		return path ? "no such file" : "command not found";
	case EACCES:
		if (!path || stat(cmd, &st))
			return "permission denied";
		if (S_ISDIR(st.st_mode))
			return "is a directory";
		if (!S_ISREG(st.st_mode))
			return "not a regular file";
		return access(cmd, X_OK) ? "permission denied (not executable)" : "permission denied";
	case ENOEXEC:
		return "not an executable format";
	default:
		return strerror(err);
	}
}

/* A failed write leaves the exit status to tell. */
static void tell_errno(int fd, int err)
{
	ssize_t n = write(fd, &err, sizeof(err));

	(void)n;
}

/* In the child: becomes the job, never returns.  It starts CMD only once
 * the launcher says so on go_fd (the guardian then exists), and dies with
 * the launcher until then; after exec the guardian stops it.  When CMD
 * cannot be started, errno goes to err_fd (close-on-exec: the launcher
 * reads end-of-file once CMD runs). */
void rn_exec_job(const struct run *r, const char *preload, int take_tty, int go_fd,
		     int err_fd)
{
	const struct ng_run_opts *o = &r->o;
	const char *dump = getenv("NCCLGUARD_DUMP_DIR");
	char hang[PATH_MAX + 8];
	sigset_t block, old;
	char go = 0;
	int err;

	setpgid(0, 0);
	if (take_tty) {
		/* Become the terminal's foreground group, as a shell would, so
		 * ^C reaches every process of the job and reads do not stop it. */
		sigemptyset(&block);
		sigaddset(&block, SIGTTOU);
		sigprocmask(SIG_BLOCK, &block, &old);
		tcsetpgrp(STDIN_FILENO, getpid());
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	rn_signals_restore();
	/* SIGTERM, as the guardian sends: a launcher in CMD (torchrun) may
	 * then stop its workers itself.  Set, then check: the launcher may
	 * have died just before. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != r->launcher)
		_exit(127);
	while (read(go_fd, &go, 1) < 0 && errno == EINTR)
		;
	if (go != 'g')
		_exit(127);
	close(go_fd);
	/* Hang reports go beside the trace unless the user chose a folder;
	 * the shim makes hang/ only when a process writes one. */
	snprintf(hang, sizeof(hang), "%s/hang", r->hostdir);
	if (setenv("LD_PRELOAD", preload, 1) ||
	    (o->policy && setenv("NCCLGUARD_POLICY", o->policy, 1)) ||
	    (o->timeout && setenv("NCCLGUARD_TIMEOUT", o->timeout, 1)) ||
	    (o->health && setenv("NCCLGUARD_HEALTH_INTERVAL", o->health, 1)) ||
	    (o->verify && setenv("NCCLGUARD_VERIFY", o->verify, 1)) ||
	    (o->on_timeout && setenv("NCCLGUARD_ON_TIMEOUT", o->on_timeout, 1)) ||
	    (o->inject && setenv("NCCLGUARD_INJECT", o->inject, 1)) ||
	    (o->stacks && setenv("NCCLGUARD_STACKS", "1", 1)) ||
	    (r->job_export && setenv("NCCLGUARD_JOB", r->job, 1)) ||
	    (r->flight.path[0] ? setenv("NCCLGUARD_FLIGHT_DIR", r->flight.path, 1) :
			    unsetenv("NCCLGUARD_FLIGHT_DIR")) ||
	    (r->have_dir && !(dump && *dump) && setenv("NCCLGUARD_DUMP_DIR", hang, 1)) ||
	    setenv("NCCLGUARD_TRACE", r->traced ? "1" : "0", 1)) {
		err = errno;
		fprintf(stderr, "ncclguard run: setenv: %s\n", strerror(err));
		tell_errno(err_fd, err);
		_exit(127);
	}
	if (r->traced) {
		rn_set_default("LTTNG_UST_REGISTER_TIMEOUT", REGISTER_TIMEOUT_MS);
		/* We record no statedump events: skip walking every loaded
		 * library at registration. */
		rn_set_default("LTTNG_UST_WITHOUT_BADDR_STATEDUMP", "1");
		rn_set_default("LTTNG_UST_WITHOUT_PROCNAME_STATEDUMP", "1");
	}
	execvp(o->cmd[0], o->cmd);
	err = errno;
	fprintf(stderr, "ncclguard run: %s: %s\n", o->cmd[0], exec_why(o->cmd[0], err));
	tell_errno(err_fd, err);
	_exit(err == ENOENT ? 127 : 126);
}

void rn_give_tty(pid_t pgid)
{
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGTTOU);
	sigprocmask(SIG_BLOCK, &block, &old);
	tcsetpgrp(STDIN_FILENO, pgid);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Waits for the job; a job stopped from the terminal (^Z) stops us too and
 * resumes with us.  Returns the exit status to report. */
int rn_wait_job(pid_t pid, int has_tty)
{
	int status;

	for (;;) {
		if (waitpid(pid, &status, WUNTRACED) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "ncclguard run: waitpid: %s\n", strerror(errno));
			return 1;
		}
		if (WIFSTOPPED(status)) {
			if (has_tty)
				rn_give_tty(getpgrp());
			raise(SIGSTOP);
			if (has_tty)
				rn_give_tty(pid);
			kill(-pid, SIGCONT);
			continue;
		}
		if (WIFEXITED(status))
			return WEXITSTATUS(status);
		if (WIFSIGNALED(status))
			return 128 + WTERMSIG(status);
	}
}
