/*
 * `ncclguard relay`: an lttng-relayd for a job (DESIGN.md section 10), in
 * the foreground.  It listens on LTTng's three ports, control P, data P+1
 * and live P+2 (LTTng's defaults 5342, 5343, 5344 follow the same rule),
 * so that one HOST:P names it for `run --relay` (and HOST:P+2, its live
 * port, as babeltrace2 names a live relay, for `watch`), and writes
 * each host's sessions under DIR/<host>/<session>-<date>-<time>/, which
 * `ncclguard analyze DIR` reads.  We exec the daemon: its pid is ours, and
 * ^C or SIGTERM stops it.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define RELAY_PORT	5342

static const char usage[] =
	"usage: ncclguard relay -o DIR [--port P] [--bind ADDR]\n"
	"\n"
	"Runs an lttng-relayd in the foreground that receives the traces of\n"
	"`ncclguard run --relay net://THIS_HOST:P` on every host of a job and writes\n"
	"them under DIR/HOST/SESSION-DATE-TIME/.  Sessions are live: `ncclguard watch\n"
	"net://THIS_HOST:P` follows them while the job runs.  Once the job is done,\n"
	"`ncclguard analyze DIR` reads every host's trace (add the runs' -o folders\n"
	"for their run.json, flight and hang files, unless they are DIR itself).\n"
	"\n"
	"  -o, --output DIR  where the traces go (made if missing)\n"
	"      --port P      control port P, data P+1, live P+2 (default 5342,\n"
	"                    LTTng's own: 5342, 5343, 5344)\n"
	"      --bind ADDR   the IPv4 address to listen on (default 0.0.0.0, all)\n"
	"  -h, --help        this text\n"
	"\n"
	"^C (SIGINT) or SIGTERM to the printed pid stops it; a plain `lttng-relayd -o\n"
	"DIR` serves as well (then --relay net://HOST, watch net://HOST).\n"
	"Exit status: lttng-relayd's; 2 usage; 127 lttng-relayd not found.\n";

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
	const char *out = NULL, *bind = "0.0.0.0";
	char dir[PATH_MAX], ctrl[96], data[96], live[96], host[256];
	long port = RELAY_PORT;
	char *end;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:o:h", longopts, NULL)) != -1) {
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
			if (!*optarg || strpbrk(optarg, "/: "))
				return ng_cli_usage_error("relay", "--bind '%s': an IPv4 address",
							  optarg);
			bind = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case ':':
			return ng_cli_usage_error("relay", "%s needs a value", argv[optind - 1]);
		default:
			if (optopt)
				return ng_cli_usage_error("relay", "unknown option '-%c'", optopt);
			return ng_cli_usage_error("relay", "unknown option '%s'", argv[optind - 1]);
		}
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
	snprintf(ctrl, sizeof(ctrl), "tcp://%s:%ld", bind, port);
	snprintf(data, sizeof(data), "tcp://%s:%ld", bind, port + 1);
	snprintf(live, sizeof(live), "tcp://%s:%ld", bind, port + 2);
	if (gethostname(host, sizeof(host) - 1) || !host[0])
		snprintf(host, sizeof(host), "THIS_HOST");
	host[sizeof(host) - 1] = '\0';
	fprintf(stderr,
		"ncclguard relay: lttng-relayd (pid %ld) writing into %s/HOST/...\n"
		"  record: ncclguard run --relay net://%s:%ld -o DIR -- CMD...   (on every host)\n"
		"  follow: ncclguard watch net://%s:%ld\n"
		"  read:   ncclguard analyze %s [DIR]\n"
		"  stop:   ^C, or kill %ld\n",
		(long)getpid(), dir, host, port, host, port + 2, dir, (long)getpid());
	fflush(NULL);
	execlp("lttng-relayd", "lttng-relayd", "-o", dir, "-C", ctrl, "-D", data, "-L", live,
	       (char *)NULL);
	fprintf(stderr, "ncclguard relay: lttng-relayd: %s\n", strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
