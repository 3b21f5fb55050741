/*
 * `ncclguard analyze DIR... [--chrome F] [--json F] [--html F] [--link-gbps N]
 *                    [--job ID] [--fail-on KINDS]`
 *
 * Without an output flag it writes report.json, trace.json (Chrome trace)
 * and report.html into the first DIR; with any, only those asked for.  The
 * summary goes to stdout.  Exit status: 0 analysed, 1 unreadable trace or
 * output, 2 usage, 5 a finding of a --fail-on kind.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "cli.h"

static const char usage[] =
	"usage: ncclguard analyze DIR... [--chrome FILE] [--json FILE] [--html FILE]\n"
	"                         [--link-gbps N] [--job ID] [--fail-on KINDS]\n"
	"\n"
	"Reads the LTTng traces of all ranks under each DIR (one per host is fine)\n"
	"and prints the findings: stragglers, hangs, mismatched calls and settings,\n"
	"bus bandwidth per operation and size, time in NCCL per rank.\n"
	"\n"
	"  --chrome FILE    Chrome trace-event JSON (open in Perfetto or chrome://tracing)\n"
	"  --json FILE      report.json (schema ncclguard-report/1)\n"
	"  --html FILE      self-contained HTML report with plots\n"
	"  --link-gbps N    the link's bandwidth in GB/s (bytes, the unit of busbw;\n"
	"                   a 400 Gb/s NIC is 50): flag sizes far below it\n"
	"  --job ID         report job ID when the trace holds several (\"none\": events\n"
	"                   without a job id); default: the job run.json names, else\n"
	"                   the one with the most processes\n"
	"  --fail-on KINDS  exit 5 when a finding of these kinds is present, comma-\n"
	"                   separated: hang, mismatch, policy, straggler, config,\n"
	"                   incomplete (the report could not see everything), or any\n"
	"\n"
	"Without --chrome, --json or --html, all three are written into the first DIR\n"
	"as trace.json, report.json and report.html.\n";

static const char *const fail_kinds[] = {
	"hang", "mismatch", "policy", "straggler", "config", "incomplete",
};

/* "hang,incomplete" -> NG_FAIL_* bits; -1 on an unknown kind. */
static int parse_fail_on(const char *list, unsigned *mask)
{
	const char *p = list;

	*mask = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		size_t k;

		if (n == 3 && !strncmp(p, "any", 3)) {
			*mask |= NG_FAIL_ANY;
		} else {
			for (k = 0; k < sizeof(fail_kinds) / sizeof(fail_kinds[0]); k++)
				if (strlen(fail_kinds[k]) == n && !strncmp(p, fail_kinds[k], n))
					break;
			if (k == sizeof(fail_kinds) / sizeof(fail_kinds[0]))
				return -1;
			*mask |= 1u << k;
		}
		p += n;
		if (*p == ',' && *++p == '\0')
			return -1;
	}
	return *mask ? 0 : -1;
}

int ng_cmd_analyze(int argc, char **argv)
{
	struct ng_analyze_opts opts = { .summary = stdout };
	char *dflt[3] = { NULL, NULL, NULL };
	const char **dirs;
	int ndirs = 0, i, ret = 1;

	dirs = calloc(argc > 0 ? argc : 1, sizeof(*dirs));
	if (!dirs)
		return 1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			ret = 0;
			goto out;
		}
		if (!strcmp(a, "--chrome") || !strcmp(a, "--json") || !strcmp(a, "--html") ||
		    !strcmp(a, "--link-gbps") || !strcmp(a, "--job") || !strcmp(a, "--fail-on")) {
			char *end;

			if (i + 1 >= argc || !*argv[i + 1]) {
				ret = ng_cli_usage_error("analyze", "%s needs a value", a);
				goto out;
			}
			if (!strcmp(a, "--chrome"))
				opts.chrome = argv[++i];
			else if (!strcmp(a, "--json"))
				opts.json = argv[++i];
			else if (!strcmp(a, "--html"))
				opts.html = argv[++i];
			else if (!strcmp(a, "--job"))
				opts.job = argv[++i];
			else if (!strcmp(a, "--fail-on")) {
				if (parse_fail_on(argv[++i], &opts.fail_on)) {
					ret = ng_cli_usage_error("analyze", "--fail-on '%s': expected "
								 "kinds from hang, mismatch, policy, "
								 "straggler, config, incomplete, any",
								 argv[i]);
					goto out;
				}
			} else {
				opts.link_gbps = strtod(argv[++i], &end);
				if (*end || opts.link_gbps <= 0) {
					ret = ng_cli_usage_error("analyze", "--link-gbps '%s': expected "
								 "a positive number of GB/s", argv[i]);
					goto out;
				}
			}
			continue;
		}
		if (a[0] == '-' && a[1]) {
			ret = ng_cli_usage_error("analyze", "unknown option '%s'", a);
			goto out;
		}
		dirs[ndirs++] = argv[i];
	}
	if (!ndirs) {
		ret = ng_cli_usage_error("analyze", "no trace directory given");
		goto out;
	}
	if (!opts.json && !opts.chrome && !opts.html) {
		static const char *const name[3] = { "report.json", "trace.json", "report.html" };

		for (i = 0; i < 3; i++)
			if (asprintf(&dflt[i], "%s/%s", dirs[0], name[i]) < 0) {
				dflt[i] = NULL;	/* undefined after a failure */
				goto out;
			}
		opts.json = dflt[0];
		opts.chrome = dflt[1];
		opts.html = dflt[2];
	}
	opts.progress = isatty(STDERR_FILENO);
	ret = ng_analyze(dirs, ndirs, &opts);
out:
	for (i = 0; i < 3; i++)
		free(dflt[i]);
	free(dirs);
	return ret;
}
