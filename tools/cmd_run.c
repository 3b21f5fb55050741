/*
 * `ncclguard run`: record a job (DESIGN.md section 8).
 *
 * Starts an LTTng session into DIR/<host>, runs CMD in its own process
 * group with libncclguard.so first in LD_PRELOAD and the options as
 * NCCLGUARD_* variables, forwards SIGINT, SIGTERM and SIGHUP to that group,
 * then stops and destroys the session whatever became of CMD, reports lost
 * events, prints the analyzer's summary and exits with CMD's status.
 * Without a usable LTTng the job still runs, guarded but untraced.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#include <link.h>
#endif

#include "cli.h"
#include "seconds.h"
#include "session.h"

/* Ranks wait at most this long, at their first NCCL call, for the session
 * daemon to set up their buffers; the default (3 s) can lose the first
 * events when many ranks register at once on a large host. */
#define REGISTER_TIMEOUT_MS "10000"

static const char usage[] =
	"usage: ncclguard run [-o DIR] [--policy FILE] [--timeout S] [--on-timeout A]\n"
	"                     [--inject SPEC] [--stacks] -- CMD [ARG]...\n"
	"\n"
	"Runs CMD with libncclguard.so preloaded and records its NCCL communicators\n"
	"and collectives (LTTng-UST events ncclguard:*, with vpid, vtid and procname)\n"
	"from every process of the job on this host.\n"
	"\n"
	"  -o, --output DIR   where the trace goes (default ncclguard-trace-DATE-TIME);\n"
	"                     this host's trace is DIR/HOSTNAME, so hosts may share DIR\n"
	"      --policy FILE  site policy file (NCCLGUARD_POLICY)\n"
	"      --timeout S    collective timeout in seconds (NCCLGUARD_TIMEOUT)\n"
	"      --on-timeout A warn, abort or exit (NCCLGUARD_ON_TIMEOUT)\n"
	"      --inject SPEC  fault injection, e.g. delay:ms=50,rank=1 (NCCLGUARD_INJECT)\n"
	"      --stacks       record each collective's call site (NCCLGUARD_STACKS=1)\n"
	"  -h, --help         this text\n"
	"\n"
	"The library is <bindir>/../lib/libncclguard.so, or NCCLGUARD_LIB if set; it\n"
	"is put first in CMD's LD_PRELOAD.  When no LTTng session daemon answers,\n"
	"`lttng-sessiond --daemonize` is started (the system daemon as root, your own\n"
	"otherwise, under LTTNG_HOME or HOME) and left running.  Run one `ncclguard\n"
	"run` per host: a session records every process of this user on the host.\n"
	"A process loads the tracer at its first NCCL call and waits there until the\n"
	"daemon has set up its buffers, at most LTTNG_UST_REGISTER_TIMEOUT ms (we set\n"
	"10000 unless you did; 0 would lose the events emitted before registration).\n"
	"\n"
	"SIGINT, SIGTERM and SIGHUP are passed to CMD's process group.  Whatever\n"
	"becomes of CMD (failure, a signal, a rank killed with SIGKILL), the session\n"
	"is stopped, every buffered event written, the events lost to full buffers\n"
	"reported, and the session destroyed; then the summary of `ncclguard analyze\n"
	"DIR` is printed.  When LTTng cannot be used, CMD still runs with the library,\n"
	"untraced, after a warning.\n"
	"\n"
	"Exit status: CMD's own, 128+N if it was killed by signal N, 127 if it could\n"
	"not be run, 2 for a usage error.\n";

struct run_opts {
	const char *outdir, *policy, *timeout, *on_timeout, *inject;
	int stacks;
	char **cmd;
};

static volatile sig_atomic_t child_pgid;
static volatile sig_atomic_t pending_sig;

/* Forward to the job's process group; before it exists, remember. */
static void on_signal(int sig)
{
	int saved = errno;

	if (child_pgid > 0)
		kill(-child_pgid, sig);
	else
		pending_sig = sig;
	errno = saved;
}

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP };
/* What we were started with: the job gets the same (under nohup, SIGHUP
 * stays ignored for both of us). */
static struct sigaction saved[sizeof(forwarded) / sizeof(*forwarded)];
static struct sigaction saved_pipe;

static void install_handlers(void)
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

static void restore_handlers(void)
{
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(*forwarded); i++)
		sigaction(forwarded[i], &saved[i], NULL);
	sigaction(SIGPIPE, &saved_pipe, NULL);
}

static int parse(int argc, char **argv, struct run_opts *o)
{
	enum { OPT_POLICY = 256, OPT_TIMEOUT, OPT_ON_TIMEOUT, OPT_INJECT, OPT_STACKS };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "on-timeout", required_argument, NULL, OPT_ON_TIMEOUT },
		{ "inject", required_argument, NULL, OPT_INJECT },
		{ "stacks", no_argument, NULL, OPT_STACKS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *why;
	double secs;
	int c;

	memset(o, 0, sizeof(*o));
	optind = 1;
	/* '+': stop at CMD, whose own options are not ours. */
	while ((c = getopt_long(argc, argv, "+o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->outdir = optarg;
			break;
		case OPT_POLICY:
			o->policy = optarg;
			break;
		case OPT_TIMEOUT:
			if (ng_seconds_parse(optarg, &secs, &why)) {
				fprintf(stderr, "ncclguard run: --timeout '%s': %s\n", optarg, why);
				return -1;
			}
			o->timeout = optarg;
			break;
		case OPT_ON_TIMEOUT:
			if (strcmp(optarg, "warn") && strcmp(optarg, "abort") &&
			    strcmp(optarg, "exit")) {
				fprintf(stderr, "ncclguard run: --on-timeout '%s': expected warn, abort or exit\n",
					optarg);
				return -1;
			}
			o->on_timeout = optarg;
			break;
		case OPT_INJECT:
			o->inject = optarg;
			break;
		case OPT_STACKS:
			o->stacks = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		default:
			fputs(usage, stderr);
			return -1;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "ncclguard run: no command given\n\n%s", usage);
		return -1;
	}
	o->cmd = argv + optind;
	return 0;
}

static int lib_path(char *buf, size_t len)
{
	const char *env = getenv("NCCLGUARD_LIB");
	char dir[PATH_MAX];

	if (env && *env) {
		if (!realpath(env, buf)) {
			fprintf(stderr, "ncclguard run: NCCLGUARD_LIB=%s: %s\n", env, strerror(errno));
			return -1;
		}
		return 0;
	}
	if (ng_cli_libdir(dir, sizeof(dir)) ||
	    snprintf(buf, len, "%s/libncclguard.so", dir) >= (int)len) {
		fprintf(stderr, "ncclguard run: cannot locate libncclguard.so\n");
		return -1;
	}
	/* realpath also proves it exists. */
	if (!realpath(buf, dir)) {
		fprintf(stderr, "ncclguard run: %s: %s\n", buf, strerror(errno));
		return -1;
	}
	snprintf(buf, len, "%s", dir);
	return 0;
}

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -1;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

/* 1 if path is missing or an empty directory. */
static int dir_is_empty(const char *path)
{
	struct dirent *e;
	DIR *d = opendir(path);
	int empty = 1;

	if (!d)
		return errno == ENOENT;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			empty = 0;
			break;
		}
	}
	closedir(d);
	return empty;
}

/* DIR made absolute (the session daemon has its own cwd); the trace goes
 * to DIR/<host> so that hosts of a job can share DIR. */
static int trace_dirs(const char *outdir, char *dir, size_t dlen, char *hostdir, size_t hlen)
{
	char cwd[PATH_MAX], host[256] = "";
	struct tm tm;
	time_t now = time(NULL);
	int n;

	if (!outdir) {
		char name[64];

		localtime_r(&now, &tm);
		strftime(name, sizeof(name), "ncclguard-trace-%Y%m%d-%H%M%S", &tm);
		if (!getcwd(cwd, sizeof(cwd)))
			return -1;
		n = snprintf(dir, dlen, "%s/%s", cwd, name);
	} else if (outdir[0] == '/') {
		n = snprintf(dir, dlen, "%s", outdir);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -1;
		n = snprintf(dir, dlen, "%s/%s", cwd, outdir);
	}
	if (n < 0 || (size_t)n >= dlen)
		return -1;
	while (n > 1 && dir[n - 1] == '/')
		dir[--n] = '\0';
	if (gethostname(host, sizeof(host) - 1) || !host[0] || strchr(host, '/'))
		snprintf(host, sizeof(host), "localhost");
	n = snprintf(hostdir, hlen, "%s/%s", dir, host);
	return n < 0 || (size_t)n >= hlen ? -1 : 0;
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

static int build_preload(const char *lib, char **out)
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

static void set_default(const char *name, const char *value)
{
	if (!getenv(name))
		setenv(name, value, 1);
}

/* In the child: becomes the job, never returns. */
static void exec_job(const struct run_opts *o, const char *preload, int traced,
		     int take_tty)
{
	sigset_t block, old;
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
	restore_handlers();
	if (setenv("LD_PRELOAD", preload, 1) ||
	    (o->policy && setenv("NCCLGUARD_POLICY", o->policy, 1)) ||
	    (o->timeout && setenv("NCCLGUARD_TIMEOUT", o->timeout, 1)) ||
	    (o->on_timeout && setenv("NCCLGUARD_ON_TIMEOUT", o->on_timeout, 1)) ||
	    (o->inject && setenv("NCCLGUARD_INJECT", o->inject, 1)) ||
	    (o->stacks && setenv("NCCLGUARD_STACKS", "1", 1)) ||
	    setenv("NCCLGUARD_TRACE", traced ? "1" : "0", 1)) {
		fprintf(stderr, "ncclguard run: setenv: %s\n", strerror(errno));
		_exit(127);
	}
	if (traced) {
		set_default("LTTNG_UST_REGISTER_TIMEOUT", REGISTER_TIMEOUT_MS);
		/* We record no statedump events: skip walking every loaded
		 * library at registration. */
		set_default("LTTNG_UST_WITHOUT_BADDR_STATEDUMP", "1");
		set_default("LTTNG_UST_WITHOUT_PROCNAME_STATEDUMP", "1");
	}
	execvp(o->cmd[0], o->cmd);
	err = errno;
	fprintf(stderr, "ncclguard run: %s: %s\n", o->cmd[0], strerror(err));
	_exit(err == ENOENT ? 127 : 126);
}

static void give_tty_to(pid_t pgid)
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
static int wait_job(pid_t pid, int has_tty)
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
				give_tty_to(getpgrp());
			raise(SIGSTOP);
			if (has_tty)
				give_tty_to(pid);
			kill(-pid, SIGCONT);
			continue;
		}
		if (WIFEXITED(status))
			return WEXITSTATUS(status);
		if (WIFSIGNALED(status))
			return 128 + WTERMSIG(status);
	}
}

static int start_tracing(struct ng_session *s, const char *dir, const char *hostdir,
			 const char *lib)
{
	char tp[PATH_MAX], *slash;
	int spawned;

	if (ng_sessiond_ensure(&spawned))
		return -1;
	if (spawned)
		fprintf(stderr, "ncclguard: started %s lttng-sessiond; it keeps running\n",
			geteuid() ? "a per-user" : "the system");
	if (mkdir_p(hostdir)) {
		fprintf(stderr, "ncclguard run: %s: %s\n", hostdir, strerror(errno));
		return -1;
	}
	if (ng_session_start(s, hostdir))
		return -1;
	/* The shim opens the provider next to itself. */
	snprintf(tp, sizeof(tp), "%s", lib);
	slash = strrchr(tp, '/');
	if (slash && !getenv("NCCLGUARD_TP_LIBRARY")) {
		snprintf(slash + 1, sizeof(tp) - (size_t)(slash + 1 - tp), "libncclguard-tp.so");
		if (access(tp, R_OK))
			fprintf(stderr, "ncclguard run: warning: %s is missing: the trace will be empty\n",
				tp);
	}
	fprintf(stderr, "ncclguard: recording into %s\n", dir);
	return 0;
}

/* DIR/<host>/ust exists from the start; the consumer fills it (ust/uid/...)
 * once a traced process registers. */
static int recorded(const char *hostdir)
{
	char ust[PATH_MAX + 8];

	snprintf(ust, sizeof(ust), "%s/ust", hostdir);
	return !dir_is_empty(ust);
}

static void report(const struct ng_session *s, const char *dir, int ok)
{
	if (!ok) {
		fprintf(stderr, "ncclguard: warning: the session did not stop cleanly; the trace in %s may be incomplete\n",
			dir);
		return;
	}
	if (s->discarded || s->lost_packets)
		fprintf(stderr, "ncclguard: warning: %llu events lost (buffers full), %llu packets lost; the trace in %s is incomplete\n",
			(unsigned long long)s->discarded, (unsigned long long)s->lost_packets, dir);
	else
		fprintf(stderr, "ncclguard: trace in %s (0 events lost)\n", dir);
}

/* The analyzer's summary, in a child: it is a bonus, and neither its
 * failure nor a ^C that cuts it short changes the job's exit status. */
static void summary(const char *dir)
{
	struct sigaction ign, old_int;
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		char *an_argv[] = { "analyze", (char *)dir, NULL };
		int ret = ng_cmd_analyze(2, an_argv);

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
	if (WIFSIGNALED(status))
		fprintf(stderr, "ncclguard: the summary stopped (signal %d); run `ncclguard analyze %s`\n",
			WTERMSIG(status), dir);
}

int ng_cmd_run(int argc, char **argv)
{
	struct run_opts o;
	struct ng_session s;
	char lib[PATH_MAX], dir[PATH_MAX], hostdir[PATH_MAX], policy[PATH_MAX];
	char *preload = NULL;
	int traced = 0, has_tty, rc, ret;
	pid_t pid;

	memset(&s, 0, sizeof(s));
	ret = parse(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : 2;
	/* Ranks may change directory before reading it. */
	if (o.policy) {
		if (!realpath(o.policy, policy)) {
			fprintf(stderr, "ncclguard run: --policy %s: %s\n", o.policy, strerror(errno));
			return 2;
		}
		o.policy = policy;
	}
	if (lib_path(lib, sizeof(lib)) || build_preload(lib, &preload))
		return 2;
	if (trace_dirs(o.outdir, dir, sizeof(dir), hostdir, sizeof(hostdir))) {
		fprintf(stderr, "ncclguard run: bad output directory\n");
		rc = 2;
		goto out;
	}
	if (!dir_is_empty(hostdir)) {
		fprintf(stderr, "ncclguard run: %s already holds a trace; remove it or choose another -o\n",
			hostdir);
		rc = 2;
		goto out;
	}

	install_handlers();
	traced = !start_tracing(&s, dir, hostdir, lib);
	if (!traced)
		fprintf(stderr, "ncclguard: warning: LTTng is not usable; running %s untraced\n",
			o.cmd[0]);
	if (pending_sig) {
		rc = 128 + pending_sig;
		goto stop;
	}

	has_tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "ncclguard run: fork: %s\n", strerror(errno));
		rc = 127;
		goto stop;
	}
	if (pid == 0)
		exec_job(&o, preload, traced, has_tty);
	/* Both sides set the group, so a signal right after fork finds it. */
	setpgid(pid, pid);
	if (has_tty)
		give_tty_to(pid);
	child_pgid = pid;
	if (pending_sig)
		kill(-pid, pending_sig);
	rc = wait_job(pid, has_tty);
	if (has_tty)
		give_tty_to(getpgrp());
	child_pgid = 0;

stop:
	if (traced) {
		report(&s, dir, !ng_session_finish(&s));
		fflush(NULL);
	}
	/* The trace is safe: ^C may now stop the summary. */
	restore_handlers();
	if (traced && !recorded(hostdir)) {
		fprintf(stderr, "ncclguard: nothing was recorded: no process of %s loaded the tracer (did it call NCCL?)\n",
			o.cmd[0]);
		traced = 0;
	}
	if (traced)
		summary(dir);
out:
	free(preload);
	return rc;
}
