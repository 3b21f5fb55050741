/*
 * `ncclguard watch net://HOST[:PORT] [--stuck S] [--json] [--job ID] [--every S]
 *  [--metrics ADDR:PORT]`
 *
 * The command line of ng_watch() (live/live.h).  Exit status: 0 the job's
 * sessions ended (or a signal) without a hang, 5 a hang was reported, 1
 * the relayd could not be read or --metrics could not listen, 2 usage.
 */
#include <string.h>

#include "cli.h"
#include "live.h"
#include "seconds.h"

static const char usage[] =
	"usage: ncclguard watch net://HOST[:PORT] [--stuck S] [--json] [--job ID] [--every S]\n"
	"                       [--metrics ADDR:PORT]\n"
	"\n"
	"Attaches to the live sessions of an lttng-relayd (`ncclguard run --relay`, or\n"
	"sessions created with `lttng create --live`) and, while the job runs, prints\n"
	"each host's and rank's progress (the last collective each rank entered on\n"
	"each communicator) and the hangs: a collective some ranks entered and others\n"
	"did not, or an init some ranks began, waiting longer than --stuck, with the\n"
	"ranks waiting, the ranks missing and their hosts.  It ends when the job's\n"
	"sessions end, or within a second of Ctrl-C or SIGTERM.  A relay silent for\n"
	"10 s is said (\"relay not answering for 10 s\") and its connection remade;\n"
	"a session another viewer holds (LTTng allows one), and a host with two\n"
	"sessions of one name at the relay, are said in every report.  Where the job\n"
	"records its hosts' hardware, each change is printed as it comes and a hang\n"
	"names the changes on its ranks' hosts from 30 s before it began.\n"
	"\n"
	"  --stuck S   a collective waiting this long is a hang (default 60)\n"
	"  --json      one JSON object per line (type: progress, hang, hang_resolved,\n"
	"              timeout, note, end, hardware, hardware_unseen)\n"
	"  --job ID    follow job ID (\"none\": events without a job id); default: the\n"
	"              job with the most processes\n"
	"  --every S   a progress report every S seconds (default 5)\n"
	"  --metrics ADDR:PORT  serve http://ADDR:PORT/metrics for Prometheus (text\n"
	"              format 0.0.4, OpenMetrics when asked): per rank its progress,\n"
	"              calls, time in NCCL, lateness, timeouts and hang; ADDR an IPv4\n"
	"              address, a host name or [IPv6] (docs/metrics.md)\n"
	"  HOST[:PORT] the relayd's live port (default 5344; P+2 for `ncclguard relay\n"
	"              --port P`, whose start prints the line to use); a session's\n"
	"              own URL, net://HOST[:PORT]/host/H/NAME, follows it alone\n"
	"\n"
	"Exit status: 0 the sessions ended without a hang (or a signal), 5 a hang\n"
	"was reported, 1 the relayd could not be read or --metrics could not listen,\n"
	"2 usage.\n";

static int seconds_opt(const char *opt, const char *val, int never_ok, double *out)
{
	const char *why;

	if (ng_seconds_parse(val, out, &why))
		return ng_cli_usage_error("watch", "%s '%s': %s", opt, val, why);
	if (!never_ok && ng_seconds_never(*out))
		return ng_cli_usage_error("watch", "%s '%s': expected a number of seconds",
					  opt, val);
	return 0;
}

static int metrics_opt(const char *val)
{
	const char *why;
	char host[256];
	int port;

	if (!val || !*val)
		return ng_cli_usage_error("watch", "--metrics needs a value (ADDR:PORT)");
	if (ng_metrics_addr(val, host, sizeof(host), &port, &why))
		return ng_cli_usage_error("watch", "--metrics '%s': %s", val, why);
	return 0;
}

int ng_cmd_watch(int argc, char **argv)
{
	struct ng_watch_opts opts = { .stuck_s = 60, .every_s = 5, .out = stdout };
	int i, r;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			return 0;
		}
		if (!strcmp(a, "--json")) {
			opts.json = 1;
			continue;
		}
		if (!strcmp(a, "--metrics")) {
			if ((r = metrics_opt(i + 1 < argc ? argv[i + 1] : NULL)))
				return r;
			opts.metrics = argv[++i];
			continue;
		}
		if (!strcmp(a, "--stuck") || !strcmp(a, "--job") || !strcmp(a, "--every")) {
			if (i + 1 >= argc || !*argv[i + 1])
				return ng_cli_usage_error("watch", "%s needs a value", a);
			if (!strcmp(a, "--job"))
				opts.job = argv[++i];
			else if ((r = seconds_opt(a, argv[i + 1], !strcmp(a, "--stuck"),
						  !strcmp(a, "--stuck") ? &opts.stuck_s :
						  &opts.every_s)))
				return r;
			else
				i++;
			continue;
		}
		if (a[0] == '-' && a[1])
			return ng_cli_usage_error("watch", "unknown option '%s'", a);
		if (opts.url)
			return ng_cli_usage_error("watch", "one relayd URL only ('%s', '%s')",
						  opts.url, a);
		opts.url = a;
	}
	if (!opts.url)
		return ng_cli_usage_error("watch", "no relayd URL given (net://HOST[:PORT])");
	return ng_watch(&opts);
}
