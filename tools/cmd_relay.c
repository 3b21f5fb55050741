/*
 * `ncclguard relay`: an lttng-relayd for a job (docs/cluster.md), in
 * the foreground.  It listens on LTTng's three ports, control P, data P+1
 * and live P+2 (LTTng's defaults 5342, 5343, 5344 follow the same rule),
 * so that one HOST:P names it for `run --relay` (and HOST:P+2, its live
 * port, as babeltrace2 names a live relay, for `watch`), and writes
 * each host's sessions under DIR/<host>/<session>-<date>-<time>/, which
 * `ncclguard analyze DIR` reads.  We exec the daemon: its pid is ours, and
 * ^C or SIGTERM stops it.
 *
 * lttng-relayd authenticates no one: whoever reaches its ports can read
 * every session (live) and add sessions.  So it listens on loopback
 * unless --bind names an address, and the start-up lines say who can
 * reach it.
 */
#include <errno.h>
#include <getopt.h>
#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define RELAY_PORT	5342

/* The help, around the lines to use (relay_lines()). */
static const char usage_head[] =
	"usage: ncclguard relay -o DIR [--port P] [--bind ADDR]\n"
	"\n"
	"Runs an lttng-relayd in the foreground that receives the traces of\n"
	"`ncclguard run --relay` on every host of a job and writes them under\n"
	"DIR/HOST/SESSION-DATE-TIME/.  It listens on three ports: control P, data P+1\n"
	"and live P+2.  `run --relay` takes the control port, `watch` the live one;\n"
	"on this host, with the options given before --help, the lines to use are:\n"
	"\n";

static const char usage_tail[] =
	"\n"
	"(the relay prints them again when it starts).  `watch` follows the job's\n"
	"live sessions while it runs; once it is done, `analyze` reads every host's\n"
	"trace (add the runs' -o folders for their run.json, flight and hang files,\n"
	"unless they are DIR itself).\n"
	"\n"
	"  -o, --output DIR  where the traces go (made if missing)\n"
	"      --port P      control port P, data P+1, live P+2 (default 5342,\n"
	"                    LTTng's own: 5342, 5343, 5344)\n"
	"      --bind ADDR   the address to listen on (default 127.0.0.1: this host\n"
	"                    only; 0.0.0.0 or :: every interface, with a warning)\n"
	"  -h, --help        this text\n"
	"\n"
	"lttng-relayd authenticates no one: whoever reaches its ports can read every\n"
	"session and add sessions (every local user of this host, and every host that\n"
	"reaches ADDR).  Keep it on a network only the job's hosts reach, or leave it\n"
	"on loopback and tunnel: on each job host `ssh -N -L P:127.0.0.1:P -L\n"
	"P+1:127.0.0.1:P+1 RELAYHOST`, then --relay net://127.0.0.1:P there.\n"
	"\n"
	"^C (SIGINT) or SIGTERM to the printed pid stops it; a plain `lttng-relayd -o\n"
	"DIR` serves as well (then --relay net://HOST, watch net://HOST).\n"
	"Exit status: lttng-relayd's; 2 usage; 127 lttng-relayd not found.\n";

/* Every interface: the address that lets any host in. */
static int bind_any(const char *bind)
{
	return !strcmp(bind, "0.0.0.0") || !strcmp(bind, "::");
}

static int bind_v6(const char *bind)
{
	struct in6_addr a;

	return inet_pton(AF_INET6, bind, &a) == 1;
}

static int bind_loopback(const char *bind)
{
	struct in6_addr a6;
	struct in_addr a;

	if (inet_pton(AF_INET, bind, &a) == 1)
		return (ntohl(a.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, bind, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* The name the job's hosts reach us by: the address we listen on when
 * one was given (a host name may resolve to another), else ours. */
static void relay_host(const char *bind, char *host, size_t len)
{
	if (!bind_any(bind)) {
		snprintf(host, len, bind_v6(bind) ? "[%s]" : "%s", bind);
		return;
	}
	if (gethostname(host, len - 1) || !host[0])
		snprintf(host, len, "THIS_HOST");
	host[len - 1] = '\0';
}

/* The commands that use this relay, with its ports: run takes the
 * control port (its data port is the next), watch the live one. */
static void relay_lines(FILE *f, const char *host, long port, const char *dir)
{
	int lo = !strcmp(host, "127.0.0.1") || !strcmp(host, "[::1]");

	fprintf(f,
		"  record: ncclguard run --relay net://%s:%ld -o RUNDIR -- CMD...   (%s)\n"
		"  follow: ncclguard watch net://%s:%ld   (the live port, P+2)\n"
		"  read:   ncclguard analyze %s [RUNDIR]\n",
		host, port, lo ? "on this host, or through a tunnel" : "on every host", host,
		port + 2, dir);
}

/* Who can reach the relay, and so read every session and add sessions. */
static void relay_access(FILE *f, const char *bind, long port)
{
	char me[256];

	if (gethostname(me, sizeof(me) - 1) || !me[0])
		snprintf(me, sizeof(me), "THIS_HOST");
	me[sizeof(me) - 1] = '\0';
	if (bind_loopback(bind))
		fprintf(f,
			"  access: %s only: every local user of this host can read every session\n"
			"          and add sessions (lttng-relayd authenticates no one); other hosts\n"
			"          reach it through a tunnel: ssh -N -L %ld:127.0.0.1:%ld -L %ld:127.0.0.1:%ld %s\n",
			bind, port, port, port + 1, port + 1, me);
	else
		fprintf(f,
			"  access: %s: every host that reaches it, and every local user, can read\n"
			"          every session and add sessions (lttng-relayd authenticates no one);\n"
			"          keep it on a network only the job's hosts reach\n",
			bind_any(bind) ? "every interface" : bind);
}

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
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

int ng_cmd_relay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *bind = "127.0.0.1";
	char dir[PATH_MAX], ctrl[320], data[320], live[320], host[256];
	int v6;
	int help = 0;
	long port = RELAY_PORT;
	char *end;
	int c;

	optind = 1;
	opterr = 0;
	while (!help && (c = getopt_long(argc, argv, "+:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'p':
			port = strtol(optarg, &end, 10);
			if (*end || end == optarg || port < 1 || port > 65533)
				return ng_cli_usage_error("relay", "--port '%s': expected 1 to 65533 "
							  "(it uses P, P+1 and P+2)", optarg);
			break;
		case 'b':
			if (!*optarg || strpbrk(optarg, "/[] ") ||
			    (strchr(optarg, ':') && !bind_v6(optarg)))
				return ng_cli_usage_error("relay", "--bind '%s': an IPv4 or IPv6 "
							  "address", optarg);
			bind = optarg;
			break;
		case 'h':
			help = 1;
			break;
		case ':':
			return ng_cli_usage_error("relay", "%s needs a value", argv[optind - 1]);
		default:
			if (optopt)
				return ng_cli_usage_error("relay", "unknown option '-%c'", optopt);
			return ng_cli_usage_error("relay", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (help) {
		relay_host(bind, host, sizeof(host));
		fputs(usage_head, stdout);
		relay_lines(stdout, host, port, out ? out : "DIR");
		fputs(usage_tail, stdout);
		return 0;
	}
	if (optind < argc)
		return ng_cli_usage_error("relay", "unexpected argument '%s'", argv[optind]);
	if (!out)
		return ng_cli_usage_error("relay", "-o DIR is required");
	/* The daemon's working folder is not ours: give it an absolute one. */
	if (mkdir_p(out) || !realpath(out, dir)) {
		fprintf(stderr, "ncclguard relay: %s: %s\n", out, strerror(errno));
		return 1;
	}
	/* LTTng's URLs put an IPv6 address in brackets */
	v6 = bind_v6(bind);
	snprintf(ctrl, sizeof(ctrl), "%s://%s%s%s:%ld", v6 ? "tcp6" : "tcp", v6 ? "[" : "", bind,
		 v6 ? "]" : "", port);
	snprintf(data, sizeof(data), "%s://%s%s%s:%ld", v6 ? "tcp6" : "tcp", v6 ? "[" : "", bind,
		 v6 ? "]" : "", port + 1);
	snprintf(live, sizeof(live), "%s://%s%s%s:%ld", v6 ? "tcp6" : "tcp", v6 ? "[" : "", bind,
		 v6 ? "]" : "", port + 2);
	relay_host(bind, host, sizeof(host));
	if (bind_any(bind))
		fprintf(stderr, "ncclguard relay: warning: --bind %s listens on every interface: "
			"anyone who reaches this host on ports %ld-%ld can read every session and "
			"add sessions\n", bind, port, port + 2);
	fprintf(stderr, "ncclguard relay: lttng-relayd (pid %ld) writing into %s/HOST/...\n",
		(long)getpid(), dir);
	relay_lines(stderr, host, port, dir);
	relay_access(stderr, bind, port);
	fprintf(stderr, "  stop:   ^C, or kill %ld\n", (long)getpid());
	fflush(NULL);
	execlp("lttng-relayd", "lttng-relayd", "-o", dir, "-C", ctrl, "-D", data, "-L", live,
	       (char *)NULL);
	fprintf(stderr, "ncclguard relay: lttng-relayd: %s\n", strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
