/*
 * ng_analyze(): the analyzer from end to end.  The traces are read into
 * the analysis state (read.c feeding match.c), finished (finish.c), and
 * handed to the writers.  Each report goes to a temporary file renamed
 * into place once complete.  The Chrome trace streams out while reading
 * (chrome.c, through an_opts.on_coll), so it is opened first, but only
 * once the DIRs exist, so that a typo leaves nothing behind.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze.h"
#include "an_priv.h"

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

int ng_analyze(const char *const *dirs, int ndirs, const struct ng_analyze_opts *opts)
{
	struct output json = { .path = opts->json }, chrome = { .path = opts->chrome };
	struct output html = { .path = opts->html };
	struct an_opts aopts = { .link_gbps = opts->link_gbps };
	struct an_chrome *ch = NULL;
	struct an_state *an = NULL;
	int i, ret = 1, ok;

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
	if (chrome.path) {
		if (out_open(&chrome))
			goto out;
		ch = an_chrome_new(chrome.f);
		aopts.on_coll = an_chrome_coll;
		aopts.on_coll_ctx = ch;
	}
	an = an_new(&aopts);
	if (an_read_traces(dirs, ndirs, an, opts->progress))
		goto out;
	an_flight_read(dirs, ndirs, an);
	an_finish(an);
	ok = !ch || !an_chrome_end(ch, an);
	if (out_close(&chrome, ok)) {
		fprintf(stderr, "ncclguard analyze: cannot write %s\n", chrome.path);
		goto out;
	}
	if (json.path && write_report(&json, an_report_json, an))
		goto out;
	if (html.path && write_report(&html, an_report_html, an))
		goto out;
	ret = 0;
	if (!opts->summary)
		goto out;
	an_summary(an, opts->summary);
	fputs("\nWrote:", opts->summary);
	if (json.path)
		fprintf(opts->summary, " %s (report)", json.path);
	if (chrome.path)
		fprintf(opts->summary, " %s (Chrome trace, open in Perfetto)", chrome.path);
	if (html.path)
		fprintf(opts->summary, " %s (HTML)", html.path);
	fputc('\n', opts->summary);
	ret = fflush(opts->summary) ? 1 : 0;
out:
	out_close(&chrome, 0);
	out_close(&json, 0);
	out_close(&html, 0);
	an_free(an);
	an_chrome_free(ch);
	return ret;
}
