/*
 * `ncclguard run`: its arguments, read and checked before anything
 * starts (a refusal leaves no trace folder, session or flight folder
 * behind); the work is run/'s.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "esc.h"
#include "inject_spec.h"
#include "policy.h"
#include "run.h"
#include "seconds.h"
#include "trust.h"
#include "verify.h"

static const char usage[] =
	"usage: ncclguard run [-o DIR] [--relay net://HOST[:PORT]] [--policy FILE] [--timeout S]\n"
	"                     [--on-timeout A] [--inject SPEC] [--stacks] [--health-interval S]\n"
	"                     [--verify N] -- CMD [ARG]...\n"
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
	"      --health-interval S\n"
	"                     sample the host's GPU and NIC counters every S seconds\n"
	"                     (default 1, 0 off; NCCLGUARD_HEALTH_INTERVAL)\n"
	"      --verify N     fingerprint the output of every Nth all-reduce, all-gather\n"
	"                     and broadcast per communicator (a power of two; all: every\n"
	"                     one; 0 off; default 1024; NCCLGUARD_VERIFY)\n"
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

static int parse(int argc, char **argv, struct ng_run_opts *o)
{
	enum { OPT_POLICY = 256, OPT_TIMEOUT, OPT_ON_TIMEOUT, OPT_INJECT, OPT_STACKS, OPT_RELAY,
	       OPT_HEALTH, OPT_VERIFY };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "relay", required_argument, NULL, OPT_RELAY },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "on-timeout", required_argument, NULL, OPT_ON_TIMEOUT },
		{ "inject", required_argument, NULL, OPT_INJECT },
		{ "stacks", no_argument, NULL, OPT_STACKS },
		{ "health-interval", required_argument, NULL, OPT_HEALTH },
		{ "verify", required_argument, NULL, OPT_VERIFY },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* --timeout replaces the first for the job; the shim would warn of
	 * either and keep its default. */
	static const char *const timeout_env[] = { "NCCLGUARD_TIMEOUT", "NCCLGUARD_INIT_TIMEOUT" };
	struct ng_inject_rule rules[NG_INJECT_MAX];
	const char *why, *env;
	char err[512];
	unsigned every;
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
		case OPT_HEALTH:
			/* the shim's rule: 0 off, else at least a tenth of a second */
			if (strcmp(optarg, "0") && (ng_seconds_parse(optarg, &secs, &why) ||
						    ng_seconds_never(secs) || secs < 0.1)) {
				ng_cli_usage_error("run", "--health-interval '%s': expected 0 (off) or "
						   "seconds from 0.1", optarg);
				return -1;
			}
			o->health = optarg;
			break;
		case OPT_VERIFY:
			if (ng_verify_parse(optarg, &every, &why)) {
				ng_cli_usage_error("run", "--verify '%s': %s", optarg, why);
				return -1;
			}
			o->verify = optarg;
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

/* The analyzer's summary of what run recorded. */
static int summary(const char *dir)
{
	char *argv[] = { "analyze", (char *)dir, NULL };

	return ng_cmd_analyze(2, argv);
}

int ng_cmd_run(int argc, char **argv)
{
	struct ng_run_opts o;
	char lib[PATH_MAX], policy[PATH_MAX];
	const char *env;
	int ret;

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
		if (check_policy("--policy", policy))
			return 2;
	} else {
		env = getenv("NCCLGUARD_POLICY");
		if (env && *env && check_policy("NCCLGUARD_POLICY", env))
			return 2;
	}
	if (lib_path(lib, sizeof(lib)))
		return 2;
	return ng_run(&o, lib, summary);
}
