/*
 * `ncclguard analyze DIR... [--chrome F] [--json F] [--html F] [--link-gbps N]`
 *
 * Without an output flag it writes report.json, trace.json (Chrome trace)
 * and report.html into the first DIR; with any, only those asked for.  The
 * summary goes to stdout.  Exit status: 0 analysed, 1 unreadable trace or
 * output, 2 usage.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "tools/cli.h"

static const char usage[] =
	"usage: ncclguard analyze DIR... [--chrome FILE] [--json FILE] [--html FILE]\n"
	"                         [--link-gbps N]\n"
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
	"\n"
	"Without --chrome, --json or --html, all three are written into the first DIR\n"
	"as trace.json, report.json and report.html.\n";

struct output {
	const char *path;
	char *tmp;
	FILE *f;
};

static int out_open(struct output *o)
{
	if (asprintf(&o->tmp, "%s.tmp.%d", o->path, (int)getpid()) < 0) {
		o->tmp = NULL;
		return -1;
	}
	o->f = fopen(o->tmp, "w");
	if (!o->f) {
		fprintf(stderr, "ncclguard analyze: cannot write %s: %s\n", o->path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Written whole or not at all: a failed run leaves no half report. */
static int out_close(struct output *o, int ok)
{
	int ret = 0;

	if (o->f) {
		if (fclose(o->f))
			ok = 0;
		o->f = NULL;
		if (ok && rename(o->tmp, o->path)) {
			fprintf(stderr, "ncclguard analyze: cannot write %s: %s\n", o->path,
				strerror(errno));
			ok = 0;
		}
		if (!ok) {
			unlink(o->tmp);
			ret = -1;
		}
	}
	free(o->tmp);
	o->tmp = NULL;
	return ret;
}

static int write_report(struct output *o, int (*fn)(struct an_state *, FILE *),
			struct an_state *an)
{
	if (out_open(o))
		return -1;
	if (out_close(o, !fn(an, o->f))) {
		fprintf(stderr, "ncclguard analyze: cannot write %s\n", o->path);
		return -1;
	}
	return 0;
}

int ng_cmd_analyze(int argc, char **argv)
{
	struct output json = { 0 }, chrome = { 0 }, html = { 0 };
	char *dflt[3] = { NULL, NULL, NULL };
	struct an_opts opts = { 0 };
	struct an_read_opts ropts = { 0 };
	struct an_state *an = NULL;
	char **dirs;
	int ndirs = 0, i, ret = 1, ok;

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
		    !strcmp(a, "--link-gbps")) {
			char *end;

			if (i + 1 >= argc || !*argv[i + 1]) {
				fprintf(stderr, "ncclguard analyze: %s needs a value\n\n%s", a, usage);
				ret = 2;
				goto out;
			}
			if (!strcmp(a, "--chrome"))
				chrome.path = argv[++i];
			else if (!strcmp(a, "--json"))
				json.path = argv[++i];
			else if (!strcmp(a, "--html"))
				html.path = argv[++i];
			else {
				opts.link_gbps = strtod(argv[++i], &end);
				if (*end || opts.link_gbps <= 0) {
					fprintf(stderr, "ncclguard analyze: --link-gbps '%s': expected a "
						"positive number of GB/s\n", argv[i]);
					ret = 2;
					goto out;
				}
			}
			continue;
		}
		if (a[0] == '-' && a[1]) {
			fprintf(stderr, "ncclguard analyze: unknown option '%s'\n\n%s", a, usage);
			ret = 2;
			goto out;
		}
		dirs[ndirs++] = argv[i];
	}
	if (!ndirs) {
		fprintf(stderr, "ncclguard analyze: no trace directory given\n\n%s", usage);
		ret = 2;
		goto out;
	}
	if (!json.path && !chrome.path && !html.path) {
		if (asprintf(&dflt[0], "%s/report.json", dirs[0]) < 0 ||
		    asprintf(&dflt[1], "%s/trace.json", dirs[0]) < 0 ||
		    asprintf(&dflt[2], "%s/report.html", dirs[0]) < 0)
			goto out;
		json.path = dflt[0];
		chrome.path = dflt[1];
		html.path = dflt[2];
	}
	ropts.progress = isatty(STDERR_FILENO);
	/* The Chrome trace streams out while reading; open it first, but only
	 * once the DIRs exist, so a typo leaves nothing behind. */
	for (i = 0; i < ndirs; i++) {
		struct stat st;

		if (stat(dirs[i], &st)) {
			fprintf(stderr, "ncclguard analyze: %s: %s\n", dirs[i], strerror(errno));
			goto out;
		}
		if (!S_ISDIR(st.st_mode)) {
			fprintf(stderr, "ncclguard analyze: %s: not a directory (give the trace "
				"directory `ncclguard run -o` wrote)\n", dirs[i]);
			goto out;
		}
	}
	if (chrome.path && out_open(&chrome))
		goto out;
	opts.chrome = chrome.f;
	an = an_new(&opts);
	if (an_read_traces(dirs, ndirs, an, &ropts))
		goto out;
	ok = !an_finish(an);
	if (out_close(&chrome, ok)) {
		fprintf(stderr, "ncclguard analyze: cannot write %s\n", chrome.path);
		goto out;
	}
	if (json.path && write_report(&json, an_report_json, an))
		goto out;
	if (html.path && write_report(&html, an_report_html, an))
		goto out;
	an_summary(an, stdout);
	fputs("\nWrote:", stdout);
	if (json.path)
		printf(" %s (report)", json.path);
	if (chrome.path)
		printf(" %s (Chrome trace, open in Perfetto)", chrome.path);
	if (html.path)
		printf(" %s (HTML)", html.path);
	putchar('\n');
	ret = fflush(stdout) ? 1 : 0;
out:
	out_close(&chrome, 0);
	out_close(&json, 0);
	out_close(&html, 0);
	an_free(an);
	for (i = 0; i < 3; i++)
		free(dflt[i]);
	free(dirs);
	return ret;
}
