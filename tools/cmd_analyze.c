/*
 * `ncclguard analyze DIR... [--chrome F] [--json F] [--html F] [--link-gbps N]
 *                    [--job ID] [--fail-on KINDS] [--chrome-all | --chrome-max MIB]
 *                    [--chrome-window T0:T1] [--ranks LIST] [-j N]
 *                    [--early | --quiet]`
 *
 * Without an output flag it writes report.json, trace.json (Chrome trace)
 * and report.html into the first DIR; with any, only those asked for.  The
 * summary goes to stdout; on a terminal, stderr has a progress line and
 * the hangs found while reading (--early without a terminal, --quiet
 * neither).  Exit status: 0 analysed, 1 unreadable trace or
 * output, 2 usage, 5 a finding of a --fail-on kind.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "cli.h"

static const char usage_head[] =
	"usage: ncclguard analyze DIR... [--chrome FILE] [--json FILE] [--html FILE]\n"
	"                         [--link-gbps N] [--job ID] [--fail-on KINDS]\n"
	"                         [--chrome-all | --chrome-max MIB] [--chrome-window T0:T1]\n"
	"                         [--ranks LIST] [-j N] [--early | --quiet]\n"
	"\n"
	"Reads the LTTng traces of all ranks under each DIR (one per host is fine)\n"
	"and prints the findings: stragglers, hangs, mismatched calls and settings,\n"
	"bus bandwidth per operation and size, time in NCCL per rank.\n"
	"\n"
	"  --chrome FILE    Chrome trace-event JSON (open in Perfetto or chrome://tracing);\n"
	"                   kept under 64 MiB: the end of the trace, a window around each\n"
	"                   finding and a sample of the rest (otherData says what was left out)\n"
	"  --chrome-all     every collective in the Chrome trace, however large\n"
	"  --chrome-max MIB the Chrome trace's cap instead of 64 MiB\n"
	"  --chrome-window T0:T1  only the slices between T0 and T1 (seconds, as the\n"
	"                   Chrome trace's timeline shows them)\n"
	"  --ranks LIST     only these ranks in the Chrome trace (0,4,8-15)\n"
	"  --json FILE      report.json (schema ncclguard-report/1)\n"
	"  --html FILE      self-contained HTML report with plots\n"
	"  --link-gbps N    the link's bandwidth in GB/s (bytes, the unit of busbw;\n"
	"                   a 400 Gb/s NIC is 50): flag sizes far below it\n"
	"  --job ID         report job ID when the trace holds several (\"none\": events\n"
	"                   without a job id); default: the job run.json names, else\n"
	"                   the one with the most processes\n"
	"  --early          say a hang (and a watchdog's timeout) on stderr as soon as\n"
	"                   the rest of the trace cannot change it, even when stderr is\n"
	"                   not a terminal (on a terminal it is the default)\n"
	"  --quiet          neither the progress line nor the early findings\n"
	"  --fail-on KINDS  exit 5 when a finding of these kinds is present, comma-\n";
/* Then the --fail-on names, from findings.def, wrapped (print_usage). */
static const char usage_tail[] =
	"  -j, --jobs N     decode the traces in N processes (default: the CPUs this\n"
	"                   process may run on); -j 1 reads them in one graph\n"
	"\n"
	"Without --chrome, --json or --html, all three are written into the first DIR\n"
	"as trace.json, report.json and report.html.\n";

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static const char *const fail_kinds[] = {
#define NG_FAIL_ON(name, words) #name,
#include "findings.def"
};

/* "hang, mismatch, ..., ", for the usage error. */
#define NG_FAIL_ON(name, words) #name ", "
static const char fail_names[] =
#include "findings.def"
	;

/* The usage, the --fail-on names said as the table has them, each line
 * under 80 columns. */
static void print_usage(FILE *f)
{
	static const char *const words[] = {
#define NG_FAIL_ON(name, words) #name words ",",
#include "findings.def"
	};
	char text[1024] = "separated:", *w, *save;
	size_t col = 0;

	/* The table's words are a few hundred bytes: they fit. */
	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
		strncat(text, " ", sizeof(text) - strlen(text) - 1);
		strncat(text, words[k], sizeof(text) - strlen(text) - 1);
	}
	strncat(text, " or any", sizeof(text) - strlen(text) - 1);
	fputs(usage_head, f);
	for (w = strtok_r(text, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (col && col + 1 + strlen(w) >= 80) {
			fputc('\n', f);
			col = 0;
		}
		fputs(col ? " " : "                   ", f);
		fputs(w, f);
		col += (col ? 1 : 19) + strlen(w);
	}
	fputc('\n', f);
	fputs(usage_tail, f);
}

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

/* "0,4,8-15" -> sorted ranks (malloc'd); -1 when malformed. */
static int parse_ranks(const char *list, int64_t **out, int *n)
{
	const char *p = list;
	int64_t *r = NULL;
	int k = 0, cap = 0;

	while (*p) {
		char *end;
		long long a = strtoll(p, &end, 10), b;

		if (end == p || a < 0 || a >= (1 << 20))
			goto bad;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtoll(p, &end, 10);
			if (end == p || b < a || b >= (1 << 20))
				goto bad;
		}
		for (long long v = a; v <= b; v++) {
			if (k == cap) {
				int64_t *g = realloc(r, (cap ? 2 * cap : 16) * sizeof(*r));

				if (!g)
					goto bad;
				r = g;
				cap = cap ? 2 * cap : 16;
			}
			r[k++] = v;
		}
		p = end;
		if (*p == ',' && *++p == '\0')
			goto bad;
		if (*p && !(*p >= '0' && *p <= '9'))
			goto bad;
	}
	if (!k)
		goto bad;
	qsort(r, k, sizeof(*r), cmp_i64);
	*out = r;
	*n = k;
	return 0;
bad:
	free(r);
	return -1;
}

/* "T0:T1" in seconds, T0 < T1. */
static int parse_window(const char *s, double *from, double *to)
{
	char *end;

	*from = strtod(s, &end);
	if (end == s || *end != ':' || *from < 0)
		return -1;
	s = end + 1;
	*to = strtod(s, &end);
	if (end == s || *end || *to <= *from)
		return -1;
	return 0;
}

/* The CPUs this process may run on: the default -j. */
static int cpus_available(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? n : 1;
}

int ng_cmd_analyze(int argc, char **argv)
{
	struct ng_analyze_opts opts = { .summary = stdout };
	char *dflt[3] = { NULL, NULL, NULL };
	int64_t *ranks = NULL;
	const char **dirs;
	int ndirs = 0, i, ret = 1, early = 0, quiet = 0;

	dirs = calloc(argc > 0 ? argc : 1, sizeof(*dirs));
	if (!dirs)
		return 1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			print_usage(stdout);
			ret = 0;
			goto out;
		}
		if (!strcmp(a, "--early") || !strcmp(a, "--quiet")) {
			*(a[2] == 'e' ? &early : &quiet) = 1;
			continue;
		}
		if (!strcmp(a, "--chrome-all")) {
			opts.chrome_all = 1;
			continue;
		}
		if (!strcmp(a, "--chrome-max") || !strcmp(a, "--chrome-window") ||
		    !strcmp(a, "--ranks")) {
			const char *v = i + 1 < argc ? argv[++i] : "";
			char *end;

			if (!strcmp(a, "--ranks")) {
				free(ranks);
				ranks = NULL;
				if (parse_ranks(v, &ranks, &opts.chrome_nranks)) {
					ret = ng_cli_usage_error("analyze", "--ranks '%s': expected "
								 "ranks and ranges, e.g. 0,4,8-15", v);
					goto out;
				}
				opts.chrome_ranks = ranks;
			} else if (!strcmp(a, "--chrome-window")) {
				if (parse_window(v, &opts.chrome_from_s, &opts.chrome_to_s)) {
					ret = ng_cli_usage_error("analyze", "--chrome-window '%s': "
								 "expected T0:T1, seconds, T0 < T1", v);
					goto out;
				}
			} else {
				double mib = strtod(v, &end);

				if (end == v || *end || mib < 1 || mib > 1048576) {
					ret = ng_cli_usage_error("analyze", "--chrome-max '%s': expected "
								 "MiB from 1 to 1048576", v);
					goto out;
				}
				opts.chrome_max = (unsigned long long)(mib * 1048576);
			}
			continue;
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
								 "kinds from %sany", argv[i],
								 fail_names);
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
		if (!strcmp(a, "-j") || !strcmp(a, "--jobs") || !strncmp(a, "--jobs=", 7) ||
		    (!strncmp(a, "-j", 2) && a[2])) {
			const char *v = !strncmp(a, "--jobs=", 7) ? a + 7 :
				strcmp(a, "-j") && strcmp(a, "--jobs") ? a + 2 :
				i + 1 < argc ? argv[++i] : "";
			char *end;
			long n = strtol(v, &end, 10);

			if (end == v || *end || n < 1 || n > 4096) {
				ret = ng_cli_usage_error("analyze", "-j '%s': expected a number of "
							 "processes from 1 to 4096", v);
				goto out;
			}
			opts.jobs = (int)n;
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
	if (early && quiet) {
		ret = ng_cli_usage_error("analyze", "--early and --quiet: give one");
		goto out;
	}
	opts.progress = !quiet && isatty(STDERR_FILENO);
	opts.early = early || opts.progress;
	if (!opts.jobs)
		opts.jobs = cpus_available();
	ret = ng_analyze(dirs, ndirs, &opts);
out:
	for (i = 0; i < 3; i++)
		free(dflt[i]);
	free(ranks);
	free(dirs);
	return ret;
}
