/*
 * ng_analyze(): the analyzer from end to end.  The traces are read into
 * the analysis state (read.c feeding match.c), finished (finish.c), and
 * handed to the writers.  Each report goes to a temporary file beside it,
 * renamed into place once complete.  The Chrome trace streams out while
 * reading (chrome.c, through an_opts.on_coll), so it is opened first, but
 * only once the DIRs exist, so that a typo leaves nothing behind.
 *
 * Before reading: every output must be a regular file or absent (a
 * device, FIFO or symlink given by mistake is refused, never replaced),
 * each CTF trace is read once however many DIRs reach it, and the run
 * records (DIR/run.json) say how the run ended and which job it was.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze.h"
#include "read.h"
#include "report.h"

struct output {
	const char *path;
	char *tmp;
	FILE *f;
};

/* An output replaces only a regular file: lstat, so that a symlink is
 * neither followed nor replaced. */
static int out_check(const char *path)
{
	struct stat st;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "ncclguard analyze: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (S_ISREG(st.st_mode))
		return 0;
	fprintf(stderr, "ncclguard analyze: %s: not a regular file (%s); refusing to replace "
		"it, give another output path\n", path,
		S_ISLNK(st.st_mode) ? "a symbolic link, not followed" :
		S_ISDIR(st.st_mode) ? "a directory" : S_ISCHR(st.st_mode) ? "a character device" :
		S_ISBLK(st.st_mode) ? "a block device" : S_ISFIFO(st.st_mode) ? "a FIFO" :
		S_ISSOCK(st.st_mode) ? "a socket" : "of another kind");
	return -1;
}

/* A new file beside the output (same folder, so the rename is atomic),
 * created exclusively: nothing there is followed or truncated. */
static int out_open(struct output *o)
{
	int fd = -1;

	for (int n = 0; n < 100 && fd < 0; n++) {
		free(o->tmp);
		if (asprintf(&o->tmp, "%s.tmp.%d.%d", o->path, (int)getpid(), n) < 0) {
			o->tmp = NULL;
			fprintf(stderr, "ncclguard analyze: out of memory\n");
			return -1;
		}
		fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		fprintf(stderr, "ncclguard analyze: cannot write %s: %s\n", o->path, strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		fprintf(stderr, "ncclguard analyze: cannot write %s: %s\n", o->path, strerror(errno));
		close(fd);
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	return 0;
}

/* Written whole or not at all: a failed run leaves no half report and no
 * temporary file. */
static int out_close(struct output *o, int ok)
{
	int ret = 0;

	if (o->f) {
		if (fclose(o->f))
			ok = 0;
		o->f = NULL;
		/* Checked again: the path may have changed while we read. */
		if (ok && out_check(o->path))
			ok = 0;
		else if (ok && rename(o->tmp, o->path)) {
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
	if (out_close(o, !fn(an, o->f))) {
		fprintf(stderr, "ncclguard analyze: cannot write %s\n", o->path);
		return -1;
	}
	return 0;
}

struct trace_list {
	char **path;
	int n;
	dev_t *dev;
	ino_t *ino;
	int *from;		/* index of the DIR that reached it first */
};

static void traces_free(struct trace_list *t)
{
	for (int i = 0; i < t->n; i++)
		free(t->path[i]);
	free(t->path);
	free(t->dev);
	free(t->ino);
	free(t->from);
	memset(t, 0, sizeof(*t));
}

/*
 * The CTF traces under the DIRs, each once: `analyze T T`, `analyze T
 * T/ust` or a symlink to a trace would otherwise read the same events
 * twice and double every count.  A trace is known by its folder's device
 * and inode.  used[i]: DIR i brought a trace of its own.
 */
/* What `ncclguard run -o DIR` leaves beside a trace, in DIR or a host's
 * folder under it: its run record, hang dumps, flight rings. */
static int run_material(const char *dir)
{
	static const char *const names[] = { "run.json", "hang", "flight" };
	struct dirent **ents = NULL;
	char p[4096];
	struct stat st;
	int n, found = 0;

	for (unsigned k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (snprintf(p, sizeof(p), "%s/%s", dir, names[k]) < (int)sizeof(p) && !lstat(p, &st))
			return 1;
	n = scandir(dir, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		for (unsigned k = 0; !found && ents[i]->d_name[0] != '.' &&
				     k < sizeof(names) / sizeof(names[0]); k++)
			found = snprintf(p, sizeof(p), "%s/%s/%s", dir, ents[i]->d_name, names[k]) <
					(int)sizeof(p) && !lstat(p, &st);
		free(ents[i]);
	}
	free(ents);
	return found;
}

/* One run record of dir, if it says its run recorded nothing: counts it
 * in *n and *none, keeps the first non-zero exit status; a full disk in
 * *full. */
static void count_record(const char *dir, int *n, int *none, int *full, int *status)
{
	struct an_runrec rr;
	char err[256];

	if (an_runrec_read(dir, &rr, err, sizeof(err)) != 1)
		return;
	(*n)++;
	*full += rr.disk_full == 1;
	if (!rr.recorded) {
		(*none)++;
		if (*status <= 0)
			*status = rr.exit_status;
	}
	an_runrec_free(&rr);
}

/* 1 when the run records under the DIRs (theirs and their hosts') all say
 * the run recorded nothing (`ncclguard run` then drops the empty trace),
 * with a job's exit status in *status (-1 unknown); *full: how many say
 * the disk was full. */
static int recorded_nothing(const char *const *dirs, int ndirs, int *status, int *full)
{
	int n = 0, none = 0;

	*status = -1;
	*full = 0;
	for (int i = 0; i < ndirs; i++) {
		struct dirent **ents = NULL;
		char sub[4096];
		struct stat st;
		int k, m = scandir(dirs[i], &ents, NULL, alphasort);

		count_record(dirs[i], &n, &none, full, status);
		for (k = 0; k < m; k++) {
			if (ents[k]->d_name[0] != '.' &&
			    snprintf(sub, sizeof(sub), "%s/%s", dirs[i], ents[k]->d_name) <
				    (int)sizeof(sub) && !lstat(sub, &st) && S_ISDIR(st.st_mode))
				count_record(sub, &n, &none, full, status);
			free(ents[k]);
		}
		free(ents);
	}
	return n > 0 && none == n;
}

static void say_recorded_nothing(const char *dir, int ndirs, int status)
{
	fprintf(stderr, "ncclguard analyze: no trace under %s%s: the run recorded nothing", dir,
		ndirs > 1 ? " or the other DIRs" : "");
	if (status > 0)
		fprintf(stderr, " (the job ended with status %d before any NCCL call was seen; "
			"run.json)\n", status);
	else if (!status)
		fputs(" (the job made no NCCL call that was seen; run.json)\n", stderr);
	else
		fputs(" (run.json)\n", stderr);
}

static int collect(struct an_state *an, const char *const *dirs, int ndirs,
		   struct trace_list *t, int *used)
{
	char **found = NULL;
	int nfound = 0, ret = -1;

	for (int i = 0; i < ndirs; i++) {
		int dup = 0, from = -1;

		for (int k = 0; k < nfound; k++)
			free(found[k]);
		nfound = 0;
		if (an_find_traces(dirs[i], &found, &nfound)) {
			fprintf(stderr, "ncclguard analyze: %s: cannot read: %s\n", dirs[i],
				strerror(errno));
			goto out;
		}
		if (!nfound) {
			/* `run --relay -o DIR`: the trace went to the relay,
			 * DIR keeps the run records, rings and dumps. */
			if (run_material(dirs[i])) {
				used[i] = 1;
				continue;
			}
			fprintf(stderr, "ncclguard analyze: %s: no trace found (no CTF `metadata` "
				"file under it): was the job recorded with `ncclguard run -o %s`?\n",
				dirs[i], dirs[i]);
			goto out;
		}
		for (int k = 0; k < nfound; k++) {
			struct stat st;
			int j;

			if (stat(found[k], &st)) {
				fprintf(stderr, "ncclguard analyze: %s: %s\n", found[k], strerror(errno));
				goto out;
			}
			for (j = 0; j < t->n; j++)
				if (t->dev[j] == st.st_dev && t->ino[j] == st.st_ino)
					break;
			if (j < t->n) {
				dup++;
				if (from < 0)
					from = t->from[j];
				continue;
			}
			t->path = an_xrealloc(t->path, (t->n + 1) * sizeof(*t->path));
			t->dev = an_xrealloc(t->dev, (t->n + 1) * sizeof(*t->dev));
			t->ino = an_xrealloc(t->ino, (t->n + 1) * sizeof(*t->ino));
			t->from = an_xrealloc(t->from, (t->n + 1) * sizeof(*t->from));
			t->path[t->n] = found[k];
			found[k] = NULL;
			t->dev[t->n] = st.st_dev;
			t->ino[t->n] = st.st_ino;
			t->from[t->n++] = i;
		}
		used[i] = dup < nfound;
		if (dup == nfound && !strcmp(dirs[i], dirs[from]))
			an_incomplete(an, AN_INC_folder_twice, "%s given twice; read once", dirs[i]);
		else if (dup == nfound)
			an_incomplete(an, AN_INC_folder_twice, "%s reaches the same traces as %s (the same "
				      "folder, or one inside the other); read once", dirs[i],
				      dirs[from]);
		else if (dup)
			an_incomplete(an, AN_INC_folder_twice, "%s: %d of its %d traces were reached "
				      "twice (through another DIR or a link); each read once",
				      dirs[i], dup, nfound);
	}
	if (!t->n) {
		int status, full;

		if (recorded_nothing(dirs, ndirs, &status, &full))
			say_recorded_nothing(dirs[0], ndirs, status);
		else if (full)
			fprintf(stderr, "ncclguard analyze: no trace under %s%s: the disk was full "
				"(run.json disk_full); record again with more free space\n", dirs[0],
				ndirs > 1 ? " or the other DIRs" : "");
		else
			fprintf(stderr, "ncclguard analyze: no trace found under %s%s (only run "
				"records): give the folder the trace went to as well (the relay's "
				"-o)\n", dirs[0], ndirs > 1 ? " or the other DIRs" : "");
		goto out;
	}
	ret = 0;
out:
	for (int k = 0; k < nfound; k++)
		free(found[k]);
	free(found);
	return ret;
}

/* The run records of the DIRs read: how the run ended, which job. */
static void run_record(struct an_state *an, const char *dir, char **job,
		       struct an_sessions *ss)
{
	struct an_runrec rr;
	char err[256];
	int r;

	r = an_runrec_read(dir, &rr, err, sizeof(err));
	if (r < 0) {
		an_incomplete(an, AN_INC_run_record_unreadable, "%s/run.json: %s; how the run "
			      "ended is not known", dir, err);
		return;
	}
	if (!r)
		return;
	an_runrec_note(an, dir, &rr);
	if (rr.session && *rr.session && rr.session_host && *rr.session_host)
		an_sessions_add(ss, rr.session_host, rr.session, rr.job);
	if (!*job && rr.job && *rr.job)
		*job = an_xstrdup(rr.job);
	an_runrec_free(&rr);
}

/* `ncclguard run` writes one per host, DIR/<host>/run.json; a DIR given
 * may also be a host's folder itself. */
static void run_records(struct an_state *an, const char *const *dirs, int ndirs,
			const int *used, char **job, struct an_sessions *ss)
{
	for (int i = 0; i < ndirs; i++) {
		char sub[4096];
		struct dirent **ents = NULL;
		struct stat st;
		int n;

		if (!used[i])
			continue;
		run_record(an, dirs[i], job, ss);
		n = scandir(dirs[i], &ents, NULL, alphasort);
		for (int k = 0; k < n; k++) {
			if (ents[k]->d_name[0] != '.' &&
			    snprintf(sub, sizeof(sub), "%s/%s", dirs[i], ents[k]->d_name) <
				    (int)sizeof(sub) &&
			    !lstat(sub, &st) && S_ISDIR(st.st_mode))
				run_record(an, sub, job, ss);
			free(ents[k]);
		}
		free(ents);
	}
}

/* Only the relay sessions the run records name (relaysess.c). */
static int verified_only(struct an_state *an, struct trace_list *t, const struct an_sessions *ss)
{
	int *keep = an_xcalloc((size_t)t->n + 1, sizeof(*keep));
	int k = 0;

	an_sessions_keep(an, t->path, t->n, ss, keep);
	for (int i = 0; i < t->n; i++) {
		if (!keep[i]) {
			free(t->path[i]);
			continue;
		}
		t->path[k] = t->path[i];
		t->dev[k] = t->dev[i];
		t->ino[k] = t->ino[i];
		t->from[k++] = t->from[i];
	}
	t->n = k;
	free(keep);
	if (k)
		return 0;
	fputs("ncclguard analyze: no trace left to read: every session at the relay was left "
	      "out (not named by the job's run records, or two of one host and name)\n", stderr);
	for (int i = 0; i < an->ninc; i++)
		if (an->inc[i].kind == AN_INC_session_unverified)
			fprintf(stderr, "ncclguard analyze: %s\n", an->inc[i].detail);
	return -1;
}

/* Findings said on stderr while reading, over the progress line. */
static void early_on(struct an_state *an, const struct ng_analyze_opts *opts)
{
	an->early_out = opts->early ? stderr : NULL;
	an->early_clear = opts->progress;
}

static const char *const kind_names[] = {
#define NG_FAIL_ON(name, words) #name,
#include "findings.def"
};

int ng_analyze(const char *const *dirs, int ndirs, const struct ng_analyze_opts *opts)
{
	struct output json = { .path = opts->json }, chrome = { .path = opts->chrome };
	struct output html = { .path = opts->html };
	struct output *outs[3] = { &chrome, &json, &html };
	struct an_opts aopts = { .link_gbps = opts->link_gbps };
	struct trace_list traces = { 0 };
	struct an_sessions sessions = { 0 };
	struct an_chrome *ch = NULL;
	struct an_state *an = NULL;
	char *record_job = NULL;
	int *used = NULL;
	int i, ret = 1, ok, pass;
	unsigned found;

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
	/* Every output refused or created before the (long) read. */
	for (i = 0; i < 3; i++)
		if (outs[i]->path && out_check(outs[i]->path))
			goto out;
	for (i = 0; i < 3; i++)
		if (outs[i]->path && out_open(outs[i]))
			goto out;
	an = an_new(&aopts);
	early_on(an, opts);
	used = an_xcalloc(ndirs, sizeof(*used));
	if (collect(an, dirs, ndirs, &traces, used))
		goto out;
	run_records(an, dirs, ndirs, used, &record_job, &sessions);
	if (verified_only(an, &traces, &sessions))
		goto out;
	if (opts->job)
		an_job_want(an, opts->job, 0, AN_JOB_USER);
	else if (record_job)
		an_job_want(an, record_job, 0, AN_JOB_RECORD);
	for (pass = 0;; pass++) {
		uint64_t tag;
		int r;

		if (chrome.path) {
			struct an_chrome_opts co = {
				.cap = opts->chrome_max, .all = opts->chrome_all,
				.win_from_ns = (int64_t)(opts->chrome_from_s * 1e9),
				.win_to_ns = opts->chrome_to_s > opts->chrome_from_s ?
					(int64_t)(opts->chrome_to_s * 1e9) : -1,
				.ranks = opts->chrome_ranks,
				.nranks = opts->chrome_nranks,
			};

			ch = an_chrome_new(chrome.f, &co);
			an->opts.on_coll = an_chrome_coll;
			an->opts.on_coll_ctx = ch;
		}
		if (an_read_traces((const char *const *)traces.path, traces.n, an,
				   opts->progress, opts->jobs))
			goto out;
		r = an_job_settle(an, &tag);
		if (r < 0)
			goto out;
		if (!r || pass)
			break;
		/* Another job has more processes: read again for it, with
		 * what was said before reading. */
		{
			struct an_state *next = an_new(&aopts);

			early_on(next, opts);

			for (i = 0; i < an->ninc; i++)
				an_incomplete(next, an->inc[i].kind, "%s", an->inc[i].detail);
			an_job_want(next, NULL, tag, AN_JOB_MOST);
			an_free(an);
			an = next;
		}
		an_chrome_free(ch);
		ch = NULL;
		if (chrome.path && (out_close(&chrome, 0), out_open(&chrome)))
			goto out;
	}
	an_flight_read(dirs, ndirs, an);
	an_dumps_read(dirs, ndirs, an);
	an_dumps_check(an);
	an_job_note(an);
	an_finish(an);
	an_early_confirm(an);
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
	if (opts->summary) {
		an_summary(an, opts->summary);
		fputs("\nWrote:", opts->summary);
		if (json.path)
			fprintf(opts->summary, " %s (report)", json.path);
		if (chrome.path)
			fprintf(opts->summary, " %s (Chrome trace, open in Perfetto)", chrome.path);
		if (html.path)
			fprintf(opts->summary, " %s (HTML)", html.path);
		fputc('\n', opts->summary);
		if (fflush(opts->summary)) {
			ret = 1;
			goto out;
		}
	}
	found = an_findings_fail(an) & opts->fail_on;
	if (found) {
		fputs("ncclguard analyze: --fail-on:", stderr);
		for (i = 0; i < (int)(sizeof(kind_names) / sizeof(kind_names[0])); i++)
			if (found & (1u << i))
				fprintf(stderr, " %s", kind_names[i]);
		fputs(" found\n", stderr);
		ret = NG_ANALYZE_FOUND;
	}
out:
	for (i = 0; i < 3; i++)
		out_close(outs[i], 0);
	an_free(an);
	an_chrome_free(ch);
	traces_free(&traces);
	an_sessions_free(&sessions);
	free(used);
	free(record_job);
	return ret;
}
