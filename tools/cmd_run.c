/*
 * `ncclguard run`: record a job (DESIGN.md section 8).
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
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#include <link.h>
#endif

#include "cli.h"
#include "esc.h"
#include "group.h"
#include "inject_spec.h"
#include "job.h"
#include "json.h"
#include "policy.h"
#include "trust.h"
#include "seconds.h"
#include "session.h"

/* Ranks wait at most this long, at their first NCCL call, for the session
 * daemon to set up their buffers; the default (3 s) can lose the first
 * events when many ranks register at once on a large host. */
#define REGISTER_TIMEOUT_MS "10000"
/* What a trace of a busy job can take in minutes; below it we warn.  An
 * absolute figure: a share of the filesystem says nothing about that. */
#define LOW_DISK_BYTES		(1ull << 30)
/* Free space at stop below which the disk counts as full: the consumer
 * writes whole pages, so a filesystem it filled shows (nearly) none. */
#define FULL_DISK_BYTES		(64ull << 10)
/* Kept free on the trace's filesystem while the job runs, released after
 * the session stopped: room for the run record and the flight rings. */
#define RESERVE_BYTES		(1 << 20)
/* After our death the guardian asks the job to stop, then forces it. */
#define GRACE_MS		5000
#define KILL_WAIT_MS		3000
/* How long a run waits to join its job's recording on this host while
 * another run of the job creates it (a session daemon to start, a relay
 * to reach). */
#define JOIN_WAIT_MS		120000
/* How long the last run out waits for tasks the launcher announced on
 * this host that never joined: they may start late. */
#define LATE_TASK_MS		10000
/* LTTng's relay daemon ports: control, data (and live, +2). */
#define RELAY_PORT		5342

static const char usage[] =
	"usage: ncclguard run [-o DIR] [--relay net://HOST[:PORT]] [--policy FILE] [--timeout S]\n"
	"                     [--on-timeout A] [--inject SPEC] [--stacks] -- CMD [ARG]...\n"
	"\n"
	"Runs CMD with libncclguard.so preloaded and records its NCCL communicators\n"
	"and collectives (LTTng-UST events ncclguard:*, with vpid, vtid and procname)\n"
	"from every process of the job on this host, and of no other job.\n"
	"\n"
	"  -o, --output DIR   where the trace goes (default ncclguard-trace-DATE-TIME);\n"
	"                     this host's trace is DIR/HOSTNAME, so hosts may share DIR\n"
	"      --relay URL    stream the trace to the lttng-relayd at net://HOST[:PORT]\n"
	"                     (PORT its control port, default 5342, data PORT+1) in a\n"
	"                     live session; DIR/HOSTNAME then keeps run.json, flight/\n"
	"                     and hang/ (see `ncclguard relay`)\n"
	"      --policy FILE  site policy file (NCCLGUARD_POLICY)\n"
	"      --timeout S    collective timeout in seconds (NCCLGUARD_TIMEOUT)\n"
	"      --on-timeout A warn, abort or exit (NCCLGUARD_ON_TIMEOUT)\n"
	"      --inject SPEC  fault injection, e.g. delay:ms=50,rank=1 (NCCLGUARD_INJECT)\n"
	"      --stacks       record each collective's call site (NCCLGUARD_STACKS=1)\n"
	"  -h, --help         this text\n"
	"\n"
	"The library is <bindir>/../lib/libncclguard.so, or NCCLGUARD_LIB if set; it\n"
	"is put first in CMD's LD_PRELOAD, and is NCCL_PROFILER_PLUGIN unless that is\n"
	"set (\"none\": no plugin).  When no LTTng session daemon answers,\n"
	"`lttng-sessiond --daemonize` is started (the system daemon as root, your own\n"
	"otherwise, under LTTNG_HOME or HOME) and left running.\n"
	"\n"
	"The job is NCCLGUARD_JOB, else SLURM_JOB_ID, else mpirun's job id\n"
	"(OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE), else a multi-node torchrun's\n"
	"rendezvous (--rdzv-endpoint or --master-addr:--master-port, --rdzv-id),\n"
	"else an id made here (exported to\n"
	"CMD as NCCLGUARD_JOB); every event carries its tag, and the session keeps\n"
	"only this job's, so jobs of one user on one host do not mix.  Runs of one\n"
	"job on one host (one per task under srun or mpirun) share one session: the\n"
	"first creates it, the last to end stops it and writes DIR/HOSTNAME/run.json\n"
	"and the summary, in whatever order they end, killed or not.  They meet in\n"
	"the runtime folder: /run/ncclguard as root, else $XDG_RUNTIME_DIR/ncclguard,\n"
	"else /dev/shm/ncclguard-UID, each used only if it is yours and private.\n"
	"Where none is, a lone run records alone, and a run of one task among\n"
	"several on the host stops before CMD starts, with exit status 2; so does\n"
	"any run whose session daemon's folder (/var/run/lttng as root, else\n"
	"$LTTNG_HOME/.lttng) another user could have taken.\n"
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
	"If this command itself is killed (SIGKILL), a guardian process stops the job\n"
	"(SIGTERM to its process group, SIGKILL 5 s later) and its session, so that\n"
	"the trace is complete and later jobs stay out of it.  Free space on the\n"
	"trace's filesystem is checked at start (a warning below 1 GiB) and at stop;\n"
	"a full disk is reported, and the trace written until then kept readable.\n"
	"DIR/HOSTNAME/run.json records the run: job, times, status (finished,\n"
	"launcher_killed, failed: the job could not start or the recording failed),\n"
	"CMD's exit status, whether anything was recorded, disk state.  A run that\n"
	"recorded nothing (CMD ended before any NCCL call) keeps only run.json, and\n"
	"a later run may use the same -o; a CMD that cannot be started (not found,\n"
	"not executable) leaves nothing.  Processes that die keep their last calls in\n"
	"flight rings under NCCLGUARD_FLIGHT_DIR (a private folder in the runtime\n"
	"folder), which are collected into the trace at the end.\n"
	"\n"
	"--inject, --policy (parsed, and refused where the shim would refuse it) and\n"
	"the timeouts are checked before anything starts; a refusal leaves nothing.\n"
	"\n"
	"Exit status: CMD's own, 128+N if it was killed by signal N, 127 if it could\n"
	"not be run, 2 for a usage error or an option refused.\n";

struct run_opts {
	const char *outdir, *policy, *timeout, *on_timeout, *inject;
	char relay[512];		/* net://HOST:CTRL:DATA, "" if local */
	int stacks;
	char **cmd;
};

/* One run, as the launcher and, after a fork, its guardian know it. */
struct run {
	struct run_opts o;
	struct ng_session s;
	char dir[PATH_MAX], hostdir[PATH_MAX], host[256];
	char job[256];
	int job_export;			/* the shim cannot find it: NCCLGUARD_JOB */
	uint64_t tag;
	struct ng_launch launch;
	char rundir[PATH_MAX];		/* the runtime folder, "" if none is usable */
	struct ng_group g;		/* the runs of this job on this host */
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
	struct ng_flight_dir flight;	/* NCCLGUARD_FLIGHT_DIR */
	time_t started;
	long long free_start;		/* -1: unknown */
	pid_t launcher;
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

/* What `ncclguard run` is given is checked here, before anything starts:
 * a refusal leaves no trace folder, session or flight folder behind. */
static int check_policy(const char *opt, const char *file)
{
	struct ng_policy p;
	struct ng_trust trust;
	char line[600];
	int bad = 0;

	if (ng_policy_load(file, &p, &trust)) {
		/* Each error names FILE:LINE. */
		for (int i = 0; i < p.nerr; i++) {
			ng_policy_format_error(&p, i, line, sizeof(line));
			/* It quotes the file. */
			fprintf(stderr, "ncclguard run: %s ", opt);
			ng_esc_put(stderr, line);
			fputc('\n', stderr);
		}
		if (p.more_errors)
			fprintf(stderr, "ncclguard run: %s %s: %d more errors\n", opt, file,
				p.more_errors);
		bad = 1;
	} else if (p.enforces && trust.why[0]) {
		/* The shim would refuse it in every rank. */
		fprintf(stderr, "ncclguard run: %s %s: refused: %s (a policy that enforces "
			"must be writable only by its owner, root or you, and so must every "
			"folder above it)\n", opt, file, trust.why);
		bad = 1;
	}
	ng_policy_free(&p);
	return bad ? -1 : 0;
}

/* A port number of a URL, 1 to 65535 (65534 when the next is needed). */
static int port_ok(const char *p, size_t len, long max, long *out)
{
	char buf[8], *end;

	if (!len || len >= sizeof(buf))
		return 0;
	memcpy(buf, p, len);
	buf[len] = '\0';
	*out = strtol(buf, &end, 10);
	return !*end && *out >= 1 && *out <= max;
}

/*
 * net://HOST[:PORT[:DATA]] or net6://[ADDR][:PORT[:DATA]], as LTTng reads
 * it, with one change: a lone PORT is the relay's control port and its
 * data port is PORT+1 (LTTng would take 5343), as `ncclguard relay
 * --port PORT` listens.  Returns 0 and the URL to give LTTng.
 */
static int relay_url(const char *in, char *out, size_t len, const char **why)
{
	const char *host, *ports, *c2;
	long ctrl, data;
	int n;

	if (!strncmp(in, "net://", 6))
		host = in + 6;
	else if (!strncmp(in, "net6://", 7))
		host = in + 7;
	else {
		*why = "expected net://HOST[:PORT]";
		return -1;
	}
	if (*host == '[') {
		ports = strchr(host, ']');
		if (!ports || ports == host + 1) {
			*why = "bad [address]";
			return -1;
		}
		ports++;
	} else {
		ports = host + strcspn(host, ":/");
	}
	if (ports == host || (*ports && *ports != ':')) {
		*why = "no host, or a path after it";
		return -1;
	}
	if (!*ports) {
		n = snprintf(out, len, "%s", in);
	} else if (!(c2 = strchr(ports + 1, ':'))) {
		if (!port_ok(ports + 1, strlen(ports + 1), 65534, &ctrl)) {
			*why = "bad port";
			return -1;
		}
		n = snprintf(out, len, "%.*s:%ld:%ld", (int)(ports - in), in, ctrl, ctrl + 1);
	} else {
		if (!port_ok(ports + 1, (size_t)(c2 - ports - 1), 65535, &ctrl) ||
		    !port_ok(c2 + 1, strlen(c2 + 1), 65535, &data)) {
			*why = "bad port";
			return -1;
		}
		n = snprintf(out, len, "%s", in);
	}
	if (n < 0 || (size_t)n >= len) {
		*why = "too long";
		return -1;
	}
	return 0;
}

static int parse(int argc, char **argv, struct run_opts *o)
{
	enum { OPT_POLICY = 256, OPT_TIMEOUT, OPT_ON_TIMEOUT, OPT_INJECT, OPT_STACKS, OPT_RELAY };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "relay", required_argument, NULL, OPT_RELAY },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "on-timeout", required_argument, NULL, OPT_ON_TIMEOUT },
		{ "inject", required_argument, NULL, OPT_INJECT },
		{ "stacks", no_argument, NULL, OPT_STACKS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* --timeout replaces the first for the job; the shim would warn of
	 * either and keep its default. */
	static const char *const timeout_env[] = { "NCCLGUARD_TIMEOUT", "NCCLGUARD_INIT_TIMEOUT" };
	struct ng_inject_rule rules[NG_INJECT_MAX];
	const char *why, *env;
	char err[512];
	double secs;
	int c, n;

	memset(o, 0, sizeof(*o));
	optind = 1;
	opterr = 0;
	/* '+': stop at CMD, whose own options are not ours; ':': a missing
	 * value is told apart from an unknown option. */
	while ((c = getopt_long(argc, argv, "+:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->outdir = optarg;
			break;
		case OPT_POLICY:
			o->policy = optarg;
			break;
		case OPT_RELAY:
			if (relay_url(optarg, o->relay, sizeof(o->relay), &why)) {
				ng_cli_usage_error("run", "--relay '%s': %s", optarg, why);
				return -1;
			}
			break;
		case OPT_TIMEOUT:
			if (ng_seconds_parse(optarg, &secs, &why)) {
				ng_cli_usage_error("run", "--timeout '%s': %s", optarg, why);
				return -1;
			}
			o->timeout = optarg;
			break;
		case OPT_ON_TIMEOUT:
			if (strcmp(optarg, "warn") && strcmp(optarg, "abort") &&
			    strcmp(optarg, "exit")) {
				ng_cli_usage_error("run", "--on-timeout '%s': expected warn, abort or exit",
						   optarg);
				return -1;
			}
			o->on_timeout = optarg;
			break;
		case OPT_INJECT:
			if (ng_inject_spec_parse(optarg, rules, &n, err, sizeof(err))) {
				ng_cli_usage_error("run", "--inject '%s': %s", optarg, err);
				return -1;
			}
			o->inject = optarg;
			break;
		case OPT_STACKS:
			o->stacks = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		case ':':
			ng_cli_usage_error("run", "%s needs a value", argv[optind - 1]);
			return -1;
		default:
			if (optopt)
				ng_cli_usage_error("run", "unknown option '-%c'", optopt);
			else
				ng_cli_usage_error("run", "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind >= argc) {
		ng_cli_usage_error("run", "no command given (ncclguard run [OPTIONS] -- CMD...)");
		return -1;
	}
	/* What the job inherits is checked the same way. */
	env = getenv("NCCLGUARD_INJECT");
	if (!o->inject && env && *env && ng_inject_spec_parse(env, rules, &n, err, sizeof(err))) {
		fprintf(stderr, "ncclguard run: NCCLGUARD_INJECT='%s': %s\n", env, err);
		return -1;
	}
	for (size_t i = 0; i < sizeof(timeout_env) / sizeof(*timeout_env); i++) {
		env = getenv(timeout_env[i]);
		if ((i || !o->timeout) && env && *env && ng_seconds_parse(env, &secs, &why)) {
			fprintf(stderr, "ncclguard run: %s='%s': %s\n", timeout_env[i], env, why);
			return -1;
		}
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

	ng_launch_detect(&r->launch);
	if (env)
		n = snprintf(r->job, sizeof(r->job), "%s", env);
	else if (r->launch.job[0])
		n = snprintf(r->job, sizeof(r->job), "%s", r->launch.job);
	else if (ng_launch_torchrun(r->o.cmd, r->job, sizeof(r->job)))
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

/* Bytes free for us on path's filesystem, -1 if unknown. */
static long long disk_free(const char *path)
{
	struct statvfs v;

	if (statvfs(path, &v))
		return -1;
	return (long long)v.f_bavail * (long long)v.f_frsize;
}

static void disk_at_start(struct run *r)
{
	int fd;

	r->free_start = disk_free(r->hostdir);
	if (r->free_start >= 0 && (unsigned long long)r->free_start < LOW_DISK_BYTES)
		fprintf(stderr, "ncclguard: warning: only %.1f MiB free for %s; a full disk cuts the trace short\n",
			r->free_start / 1048576.0, r->dir);
	snprintf(r->reserve, sizeof(r->reserve), "%s/.ncclguard-reserve", r->hostdir);
	fd = open(r->reserve, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r->reserve[0] = '\0';
		return;
	}
	/* posix_fallocate writes zeros where the filesystem cannot reserve. */
	if (posix_fallocate(fd, 0, RESERVE_BYTES)) {
		unlink(r->reserve);
		r->reserve[0] = '\0';
	}
	close(fd);
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
static void exec_job(const struct run *r, const char *preload, int take_tty, int go_fd,
		     int err_fd)
{
	const struct run_opts *o = &r->o;
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
	restore_handlers();
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
		set_default("LTTNG_UST_REGISTER_TIMEOUT", REGISTER_TIMEOUT_MS);
		/* We record no statedump events: skip walking every loaded
		 * library at registration. */
		set_default("LTTNG_UST_WITHOUT_BADDR_STATEDUMP", "1");
		set_default("LTTNG_UST_WITHOUT_PROCNAME_STATEDUMP", "1");
	}
	execvp(o->cmd[0], o->cmd);
	err = errno;
	fprintf(stderr, "ncclguard run: %s: %s\n", o->cmd[0], exec_why(o->cmd[0], err));
	tell_errno(err_fd, err);
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

static int start_tracing(struct run *r, const char *lib)
{
	char tp[PATH_MAX], *slash;
	const char *env = getenv("NCCLGUARD_TP_LIBRARY");
	int spawned;

	if (!r->have_dir)
		return -1;
	if (ng_sessiond_ensure(&spawned))
		return -1;
	if (spawned)
		fprintf(stderr, "ncclguard: started %s lttng-sessiond; it keeps running\n",
			geteuid() ? "a per-user" : "the system");
	if (ng_session_start(&r->s, r->hostdir, r->o.relay[0] ? r->o.relay : NULL, r->job, r->tag))
		return -1;
	/* The shim opens the provider next to itself. */
	snprintf(tp, sizeof(tp), "%s", env && *env ? env : lib);
	slash = strrchr(tp, '/');
	if (slash && !(env && *env))
		snprintf(slash + 1, sizeof(tp) - (size_t)(slash + 1 - tp), "libncclguard-tp.so");
	if (access(tp, R_OK))
		fprintf(stderr, "ncclguard run: warning: %s is missing: the trace will be empty\n", tp);
	else if (!r->o.relay[0] && ng_session_prime(&r->s, tp))
		fprintf(stderr, "ncclguard: warning: the trace's metadata is not on disk yet; a disk that fills early may leave the trace unreadable\n");
	if (r->o.relay[0])
		fprintf(stderr, "ncclguard: streaming to %s (live session %s), run records into %s "
			"(job %s)\n", r->o.relay, r->s.name, r->dir, r->job);
	else
		fprintf(stderr, "ncclguard: recording into %s (job %s)\n", r->dir, r->job);
	return 0;
}

/* Whether DIR/<host> is free for a new recording: empty for a local
 * trace; for a relayed one (the trace is elsewhere, and a relay's output
 * folder may be DIR) without a run record.  (A folder that holds only the
 * record of a run that recorded nothing is free too: create_recording.) */
static int hostdir_taken(const struct run *r)
{
	char path[PATH_MAX + 16];

	if (!r->o.relay[0])
		return !dir_is_empty(r->hostdir);
	snprintf(path, sizeof(path), "%s/run.json", r->hostdir);
	return !access(path, F_OK);
}

/* 1 if DIR/<host> holds only the record of a run that recorded nothing
 * (wrap_up: "recorded": false): a new run may take the folder. */
static int holds_unused_record(const char *hostdir)
{
	char path[PATH_MAX + 16], buf[8192];
	struct dirent *e;
	int fd, only = 1;
	ssize_t n;
	DIR *d = opendir(hostdir);

	if (!d)
		return 0;
	while (only && (e = readdir(d)))
		only = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		       !strcmp(e->d_name, "run.json");
	closedir(d);
	if (!only || snprintf(path, sizeof(path), "%s/run.json", hostdir) >= (int)sizeof(path))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strstr(buf, "\n  \"recorded\": false,\n") != NULL;
}

/* A new recording of the job on this host: its folder and session. */
static int create_recording(struct run *r, const char *lib)
{
	char rec[PATH_MAX + 16];

	if (holds_unused_record(r->hostdir)) {
		snprintf(rec, sizeof(rec), "%s/run.json", r->hostdir);
		if (unlink(rec) && errno != ENOENT) {
			fprintf(stderr, "ncclguard run: %s: %s\n", rec, strerror(errno));
			return -1;
		}
		fprintf(stderr, "ncclguard: replacing %s, the record of a run that recorded "
			"nothing\n", rec);
	} else if (hostdir_taken(r)) {
		fprintf(stderr, "ncclguard run: %s already holds a %s; remove it or choose another -o\n",
			r->hostdir, r->o.relay[0] ? "run record" : "trace");
		return -1;
	}
	r->made_dir = access(r->dir, F_OK) && errno == ENOENT;
	if (mkdir_p(r->hostdir))
		fprintf(stderr, "ncclguard run: %s: %s\n", r->hostdir, strerror(errno));
	else
		r->have_dir = 1;
	if (r->have_dir)
		disk_at_start(r);
	r->traced = !start_tracing(r, lib);
	return 0;
}

/* Takes the other run's recording: its folders and relay. */
static void take_record(struct run *r, const struct ng_group_rec *rec)
{
	if (strcmp(rec->hostdir, r->hostdir))
		fprintf(stderr, "ncclguard: warning: job %s records on this host into %s; this "
			"task's run uses it too (not %s)\n", r->job, rec->dir, r->dir);
	snprintf(r->dir, sizeof(r->dir), "%s", rec->dir);
	snprintf(r->hostdir, sizeof(r->hostdir), "%s", rec->hostdir);
	snprintf(r->o.relay, sizeof(r->o.relay), "%s", rec->relay);
	r->creator = rec->creator;
	r->started = rec->started;
	r->free_start = rec->free_start;
}

/*
 * This run's place in the job's recording on this host (group.h): under
 * the job's lock, join the session another run of the job created, or
 * create it.  Returns 0, or -1 when a new recording cannot be made here
 * (the output folder is taken, or the tasks of the job have no private
 * folder to meet in: exit status 2, before CMD starts).
 */
static int join_recording(struct run *r, const char *lib)
{
	struct ng_group_rec rec;
	struct ng_session probe;
	int have;

	if (ng_runtime_dir(r->rundir, sizeof(r->rundir))) {
		/* Tasks that cannot meet would each record the others' events
		 * too; a lone run has nobody to meet. */
		if (r->launch.per_task && r->launch.local_size != 1) {
			fprintf(stderr, "ncclguard run: no private runtime folder (see the warnings "
				"above) where the tasks of job %s on this host can meet; set "
				"XDG_RUNTIME_DIR to a folder of yours with mode 0700, or remove "
				"what another user made there\n", r->job);
			return -1;
		}
		fprintf(stderr, "ncclguard: warning: no private runtime folder (see above); this "
			"run records alone\n");
		return create_recording(r, lib);
	}
	if (ng_group_open(&r->g, r->rundir, r->tag, r->host, (long)r->launcher, JOIN_WAIT_MS)) {
		/* Two sessions of one job would record every event twice. */
		fprintf(stderr, "ncclguard: warning: cannot meet the other runs of job %s on this "
			"host; this task runs untraced\n", r->job);
		return 0;
	}
	if (ng_group_enter(&r->g)) {
		fprintf(stderr, "ncclguard: warning: %s: %s; this run records alone\n", r->g.path,
			strerror(errno));
		ng_group_drop(&r->g);
		return create_recording(r, lib);
	}
	have = ng_group_read(&r->g, &rec);
	if (have > 0) {
		ng_session_adopt(&probe, rec.session, NULL);
		if (ng_session_exists(&probe) == 1) {
			take_record(r, &rec);
			r->joined = r->traced = r->have_dir = 1;
			fprintf(stderr, "ncclguard: task joins the recording of job %s on this host "
				"(%d runs so far)\n", r->job, rec.joined);
			ng_group_unlock(&r->g);
			return 0;
		}
		fprintf(stderr, "ncclguard: the recording of job %s on this host (session %s) is "
			"gone; starting a new one\n", r->job, rec.session);
	}
	if (have)
		ng_group_reset(&r->g);
	if (create_recording(r, lib)) {
		ng_group_drop(&r->g);
		return -1;
	}
	if (!r->traced) {
		/* Nothing to share: each run tries for itself. */
		ng_group_drop(&r->g);
		return 0;
	}
	memset(&rec, 0, sizeof(rec));
	snprintf(rec.session, sizeof(rec.session), "%s", r->s.name);
	snprintf(rec.dir, sizeof(rec.dir), "%s", r->dir);
	snprintf(rec.hostdir, sizeof(rec.hostdir), "%s", r->hostdir);
	snprintf(rec.relay, sizeof(rec.relay), "%s", r->o.relay);
	snprintf(rec.job, sizeof(rec.job), "%s", r->job);
	rec.creator = (long)r->launcher;
	rec.started = (long long)r->started;
	rec.free_start = r->free_start;
	rec.expected = r->launch.local_size > 0 ? r->launch.local_size : 0;
	rec.joined = 1;
	r->creator = rec.creator;
	if (ng_group_write(&r->g, &rec)) {
		/* Later tasks would find no session and make their own. */
		fprintf(stderr, "ncclguard: warning: %s: cannot write the record: %s; this run "
			"records alone\n", r->g.path, strerror(errno));
		ng_group_drop(&r->g);
		return 0;
	}
	ng_group_unlock(&r->g);
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

static void report(const struct ng_session *s, const char *dir, int ok, int disk_full)
{
	if (!ok) {
		fprintf(stderr, "ncclguard: warning: the session did not stop cleanly; the trace in %s may be incomplete\n",
			dir);
		return;
	}
	if (s->lost_unknown)
		fprintf(stderr, "ncclguard: warning: LTTng reported a lost-event count that cannot be "
			"one; events may have been lost: the trace in %s may be incomplete\n", dir);
	else if (s->discarded || s->lost_packets)
		fprintf(stderr, "ncclguard: warning: %llu events lost (buffers full), %llu packets lost; the trace in %s is incomplete\n",
			(unsigned long long)s->discarded, (unsigned long long)s->lost_packets, dir);
	else if (!disk_full)
		fprintf(stderr, "ncclguard: trace in %s (0 events lost)\n", dir);
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

static void summary(const char *dir)
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
		char *an_argv[] = { "analyze", (char *)dir, NULL };
		int ret;

		signal(SIGALRM, SIG_DFL);
		alarm(deadline);
		ret = ng_cmd_analyze(2, an_argv);

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

/* What the end of a run found, for its record. */
struct run_end {
	const char *status;	/* finished, launcher_killed, failed */
	int exit_status;	/* CMD's, -1 if unknown */
	int disk_full;
	int lost_unknown;	/* LTTng's lost-event count was not one */
	int events;		/* the trace holds events, or may: not checked */
	char disk_detail[512];
	long long free_end;
	char consumer_error[160];
};

static void json_kv_str(FILE *f, const char *k, const char *v, int last)
{
	fprintf(f, "  \"%s\": ", k);
	ng_json_str(f, v);
	fputs(last ? "\n" : ",\n", f);
}

/* DIR/<host>/run.json, flat, for the analyzer: written to a temporary file
 * in the same folder (mkstemp's 0600: it names the session, which is what
 * `analyze` trusts at a relay), then renamed over the old one, which must
 * be a regular file (a link or folder put there is left alone). */
static void write_record(const struct run *r, const struct run_end *e)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 32];
	struct stat st;
	FILE *f;
	int fd;

	if (!r->have_dir)
		return;
	snprintf(path, sizeof(path), "%s/run.json", r->hostdir);
	snprintf(tmp, sizeof(tmp), "%s/.run.json.XXXXXX", r->hostdir);
	if (!lstat(path, &st) && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "ncclguard: cannot write %s: not a regular file; left as it is\n",
			path);
		return;
	}
	fd = mkstemp(tmp);
	if (fd < 0)
		goto fail;
	if (fchmod(fd, 0600)) {
		close(fd);
		goto fail_tmp;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		goto fail_tmp;
	}
	fputs("{\n", f);
	json_kv_str(f, "schema", "ncclguard-run/1", 0);
	json_kv_str(f, "job", r->job, 0);
	json_kv_str(f, "host", r->host, 0);
	fprintf(f, "  \"pid\": %ld,\n", r->creator > 0 ? r->creator : (long)r->launcher);
	fprintf(f, "  \"tasks\": %d,\n", r->tasks > 0 ? r->tasks : 1);
	json_kv_str(f, "relay", r->o.relay, 0);
	/* what `analyze` matches a relay's session folders against */
	json_kv_str(f, "session", r->traced ? r->s.name : "", 0);
	json_kv_str(f, "session_host", r->host, 0);
	fprintf(f, "  \"started\": %lld,\n", (long long)r->started);
	fprintf(f, "  \"ended\": %lld,\n", (long long)time(NULL));
	json_kv_str(f, "status", e->status, 0);
	fprintf(f, "  \"exit_status\": %d,\n", e->exit_status);
	fprintf(f, "  \"recorded\": %s,\n",
		r->recorded > 0 ? "true" : r->recorded ? "null" : "false");
	fprintf(f, "  \"disk_full\": %s,\n", e->disk_full ? "true" : "false");
	fprintf(f, "  \"lost_unknown\": %s,\n", e->lost_unknown ? "true" : "false");
	json_kv_str(f, "disk_detail", e->disk_detail, 0);
	fprintf(f, "  \"free_bytes_start\": %lld,\n", r->free_start);
	fprintf(f, "  \"free_bytes_end\": %lld,\n", e->free_end);
	json_kv_str(f, "consumer_error", e->consumer_error, 1);
	fputs("}\n", f);
	if (fflush(f) || ferror(f)) {
		fclose(f);
		goto fail_tmp;
	}
	if (fclose(f))
		goto fail_tmp;
	if (rename(tmp, path))
		goto fail_tmp;
	return;
fail_tmp:
	unlink(tmp);
fail:
	fprintf(stderr, "ncclguard: cannot write %s: %s\n", path, strerror(errno));
}

/* The disk after stop: how much is free, whether a stream was cut, and
 * the trimming that keeps the rest readable. */
static void disk_at_end(const struct run *r, struct run_end *e)
{
	struct ng_trace_check c;
	size_t n = 0;
	int w;

	e->free_end = disk_free(r->hostdir);
	if (!r->have_dir)
		return;
	if (ng_trace_repair(r->hostdir, &c)) {
		fprintf(stderr, "ncclguard: warning: cannot check the streams in %s\n", r->hostdir);
		e->events = 1;
	}
	if (c.event_packets || c.unknown)
		e->events = 1;
	e->disk_full = (e->free_end >= 0 && (unsigned long long)e->free_end < FULL_DISK_BYTES) ||
		       c.cut || (c.metadata_empty && c.bytes);
	if (!e->disk_full && !c.unknown)
		return;
	w = snprintf(e->disk_detail, sizeof(e->disk_detail), "%lld bytes free at stop", e->free_end);
	if (w > 0)
		n = (size_t)w;
	if (c.cut && n < sizeof(e->disk_detail)) {
		w = snprintf(e->disk_detail + n, sizeof(e->disk_detail) - n,
			     "; %d of %d streams ended inside a packet, trimmed to whole packets (%" PRIu64 " bytes dropped)",
			     c.cut, c.streams, c.cut_bytes);
		if (w > 0)
			n += (size_t)w;
	}
	if (c.unknown && n < sizeof(e->disk_detail)) {
		w = snprintf(e->disk_detail + n, sizeof(e->disk_detail) - n,
			     "; %d streams not made of whole packets", c.unknown);
		if (w > 0)
			n += (size_t)w;
	}
	if (c.metadata_empty && n < sizeof(e->disk_detail))
		snprintf(e->disk_detail + n, sizeof(e->disk_detail) - n,
			 "; metadata empty: the trace cannot be read");
	if (e->disk_full)
		fprintf(stderr, "ncclguard: disk full: %s; %s\n", e->disk_detail,
			c.metadata_empty ? "the trace is lost" :
			"the trace keeps what was written before");
	else
		fprintf(stderr, "ncclguard: warning: %s\n", e->disk_detail);
}

/*
 * The end of a run, by the launcher once CMD is gone, or by the guardian
 * once the launcher is: stop and destroy the session (the trace is then
 * complete), check the disk, collect the flight rings, write the record.
 * The guardian may find the launcher did some of it already.
 */
static void collect_flight(struct run *r)
{
	int n;

	if (!r->flight.path[0])
		return;
	n = r->have_dir ? ng_flight_collect(r->flight.path, r->hostdir) : 0;
	if (n > 0)
		fprintf(stderr, "ncclguard: %d calls recovered from the flight rings of dead processes\n",
			n);
	ng_flight_dir_remove(&r->flight);
}

/*
 * Leaves the job's recording on this host.  Returns 1 when we are the
 * last out: the session, the record and the job's status (of every run
 * that shared it) are then ours to finish; 0 when other runs go on.
 */
static int leave_recording(struct run *r, const char **status, int *exit_status)
{
	struct ng_group_rec rec;
	struct ng_group_end end;
	int last;

	/* The last out's summary reads them. */
	collect_flight(r);
	last = ng_group_leave(&r->g, *status, *exit_status, LATE_TASK_MS, &rec, &end);
	if (last != 1) {
		ng_group_release(&r->g);
		return 0;
	}
	take_record(r, &rec);
	ng_session_adopt(&r->s, rec.session, rec.relay[0] ? NULL : rec.hostdir);
	r->traced = r->have_dir = 1;
	r->tasks = end.tasks;
	/* The creator's reserve, released after the stop below. */
	snprintf(r->reserve, sizeof(r->reserve), "%s/.ncclguard-reserve", r->hostdir);
	*status = end.killed ? "launcher_killed" : end.failed ? "failed" : "finished";
	*exit_status = end.exit_status;
	return 1;
}

/*
 * What DIR/<host> holds of the job: 1 something (an event, or streams we
 * could not read; lost events, a full disk; flight rings, hang reports;
 * anything else), 0 nothing (CMD did not start, or ended before any NCCL
 * call), -1 cannot tell (the trace is at a relay daemon, or the session
 * did not stop cleanly).
 */
static int recording_holds(const struct run *r, const struct run_end *e, int ok)
{
	struct dirent *ent;
	int data = 0;
	DIR *d;

	if (!ok)
		return -1;
	if (e->events || e->disk_full || e->lost_unknown || r->s.discarded || r->s.lost_packets)
		return 1;
	d = opendir(r->hostdir);
	if (!d)
		return -1;
	while (!data && (ent = readdir(d)))
		data = strcmp(ent->d_name, ".") && strcmp(ent->d_name, "..") &&
		       strcmp(ent->d_name, "ust");
	closedir(d);
	if (data)
		return 1;
	if (r->o.relay[0])
		return r->exec_errno && r->tasks <= 1 ? 0 : -1;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Removes the trace of a recording that holds nothing: its metadata and
 * empty streams.  0, or -1 after a warning. */
static int drop_trace(const struct run *r)
{
	char ust[PATH_MAX + 8];

	snprintf(ust, sizeof(ust), "%s/ust", r->hostdir);
	if (access(ust, F_OK) || !nftw(ust, remove_entry, 16, FTW_DEPTH | FTW_PHYS))
		return 0;
	fprintf(stderr, "ncclguard: warning: cannot remove the empty trace %s: %s\n", ust,
		strerror(errno));
	return -1;
}

/* A run whose CMD never started leaves nothing, as a refused option
 * does: DIR/<host>, and DIR if we made it and no other host wrote there. */
static int remove_recording(const struct run *r)
{
	if (drop_trace(r))
		return -1;
	if (rmdir(r->hostdir)) {
		fprintf(stderr, "ncclguard: warning: cannot remove %s: %s\n", r->hostdir,
			strerror(errno));
		return -1;
	}
	if (r->made_dir)
		rmdir(r->dir);
	return 0;
}

static void wrap_up(struct run *r, const char *status, int exit_status)
{
	struct run_end e;
	int ok = 1, stopped = 0, grouped = r->g.path[0] != '\0';

	if (grouped && !leave_recording(r, &status, &exit_status)) {
		fflush(NULL);
		return;
	}
	r->last = 1;
	memset(&e, 0, sizeof(e));
	e.status = status;
	e.exit_status = exit_status;
	if (r->traced && ng_session_exists(&r->s) != 0) {
		ok = !ng_session_finish(&r->s);
		stopped = 1;
		snprintf(e.consumer_error, sizeof(e.consumer_error), "%s", r->s.error);
		e.lost_unknown = r->s.lost_unknown;
	}
	disk_at_end(r, &e);
	/* Room for the rings and the record on a full disk. */
	if (r->reserve[0]) {
		unlink(r->reserve);
		r->reserve[0] = '\0';
	}
	collect_flight(r);
	r->recorded = r->have_dir ? recording_holds(r, &e, ok) : -1;
	if (!r->recorded && r->exec_errno && r->tasks <= 1 && !remove_recording(r)) {
		r->removed = 1;
		goto out;
	}
	/* What is left is the record of how the run ended; the folder
	 * serves a later run (hostdir_taken). */
	if (!r->recorded && drop_trace(r))
		r->recorded = -1;
	if (stopped && r->recorded)
		report(&r->s, r->o.relay[0] ? r->o.relay : r->dir, ok, e.disk_full);
	/* "finished": CMD ran and its trace is complete. */
	if ((!ok || !r->traced) && !strcmp(e.status, "finished"))
		e.status = "failed";
	write_record(r, &e);
out:
	if (grouped)
		ng_group_close(&r->g);
	fflush(NULL);
}

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

/* Messages from the launcher to its guardian. */
enum { GUARD_EXIT = 1, GUARD_BYE };
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
		if (m.kind == GUARD_BYE)
			_exit(0);
		if (m.kind == GUARD_EXIT)
			exit_status = m.value;
	}
	/* The job had ended: its group may be gone and its number reused;
	 * only the launcher's wrap-up is left to finish. */
	if (exit_status != -1) {
		fprintf(stderr, "ncclguard: the launcher (pid %ld) died after job %s ended; "
			"finishing its recording\n", (long)r->launcher, r->job);
		wrap_up(r, "finished", exit_status);
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
	wrap_up(r, "launcher_killed", exit_status);
	_exit(0);
}

/* Forks the guardian of job pgid; returns the write end of its pipe, or
 * -1 (the run goes on without one, after a warning). */
static int guardian_start(struct run *r, pid_t pgid, int go_w, pid_t *gpid)
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

static void guardian_tell(int fd, int kind, int value)
{
	struct guard_msg m = { kind, value };

	if (fd >= 0 && write(fd, &m, sizeof(m)) != (ssize_t)sizeof(m))
		fprintf(stderr, "ncclguard: warning: guardian: %s\n", strerror(errno));
}

static void guardian_end(int fd, pid_t gpid)
{
	int status;

	if (fd < 0)
		return;
	guardian_tell(fd, GUARD_BYE, 0);
	close(fd);
	while (waitpid(gpid, &status, 0) < 0 && errno == EINTR)
		;
}

int ng_cmd_run(int argc, char **argv)
{
	struct run r;
	char lib[PATH_MAX], policy[PATH_MAX], ltt_run[PATH_MAX];
	const char *why;
	char *preload = NULL;
	int has_tty, rc, ret, err, go[2] = { -1, -1 }, ex[2] = { -1, -1 }, guard = -1;
	const char *status = "finished";
	pid_t pid, gpid = -1;

	memset(&r, 0, sizeof(r));
	r.flight.lock = -1;
	r.g.lock = r.g.member = -1;
	r.free_start = -1;
	r.launcher = getpid();
	r.started = time(NULL);
	ret = parse(argc, argv, &r.o);
	if (ret)
		return ret > 0 ? 0 : 2;
	/* Ranks may change directory before reading it. */
	if (r.o.policy) {
		if (!realpath(r.o.policy, policy)) {
			fprintf(stderr, "ncclguard run: --policy %s: %s\n", r.o.policy, strerror(errno));
			return 2;
		}
		r.o.policy = policy;
		if (check_policy("--policy", policy))
			return 2;
	} else if (getenv("NCCLGUARD_POLICY") && *getenv("NCCLGUARD_POLICY") &&
		   check_policy("NCCLGUARD_POLICY", getenv("NCCLGUARD_POLICY"))) {
		return 2;
	}
	if (ng_lttng_rundir_check(ltt_run, sizeof(ltt_run), &why)) {
		fprintf(stderr, "ncclguard run: %s, the session daemon's run folder: %s; another "
			"user could stand in for the daemon (%s)\n", ltt_run, why,
			geteuid() ? "set LTTNG_HOME to a folder of yours" :
			"make it root's, mode 0755");
		return 2;
	}
	if (lib_path(lib, sizeof(lib)) || build_preload(lib, &preload))
		return 2;
	/* The same library as NCCL's profiler plugin: it sees the programs
	 * that call NCCL past the preload (XLA).  The user's choice stands. */
	set_default("NCCL_PROFILER_PLUGIN", lib);
	if (trace_dirs(&r)) {
		fprintf(stderr, "ncclguard run: bad output directory\n");
		rc = 2;
		goto out;
	}
	if (job_id(&r)) {
		rc = 2;
		goto out;
	}

	install_handlers();
	if (join_recording(&r, lib)) {
		restore_handlers();
		rc = 2;
		goto out;
	}
	if (!r.traced)
		fprintf(stderr, "ncclguard: warning: LTTng is not usable; running %s untraced\n",
			r.o.cmd[0]);
	ng_flight_dir_make(&r.flight, r.rundir, r.tag, (long)r.launcher);
	if (pending_sig) {
		rc = 128 + pending_sig;
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
		exec_job(&r, preload, has_tty, go[0], ex[1]);
	}
	close(go[0]);
	/* Before the guardian forks: end-of-file must come with the exec. */
	close(ex[1]);
	/* Both sides set the group, so a signal right after fork finds it. */
	setpgid(pid, pid);
	guard = guardian_start(&r, pid, go[1], &gpid);
	if (write(go[1], "g", 1) != 1)
		fprintf(stderr, "ncclguard run: cannot start %s: %s\n", r.o.cmd[0], strerror(errno));
	close(go[1]);
	if (has_tty)
		give_tty_to(pid);
	child_pgid = pid;
	if (pending_sig)
		kill(-pid, pending_sig);
	rc = wait_job(pid, has_tty);
	if (has_tty)
		give_tty_to(getpgrp());
	child_pgid = 0;
	/* CMD is gone: an errno here, or end-of-file since it ran. */
	if (read(ex[0], &err, sizeof(err)) == (ssize_t)sizeof(err)) {
		r.exec_errno = err;
		status = "failed";
	}
	close(ex[0]);
	guardian_tell(guard, GUARD_EXIT, rc);

stop:
	wrap_up(&r, status, rc);
	guardian_end(guard, gpid);
	/* The trace is safe: ^C may now stop the summary. */
	restore_handlers();
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
		summary(r.dir);
out:
	free(preload);
	return rc;
}
