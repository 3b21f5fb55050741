/*
 * One job per report.  Every event carries its job's tag (common/job.h);
 * events of other jobs are dropped before they reach the matcher, so two
 * jobs that shared a trace (two launches into one folder, a session left
 * recording) never mix their ranks.  The job kept is the one the user
 * names (--job), else the one the run record names, else the one with the
 * most processes; the reader keeps the first job it meets, and
 * an_job_settle() asks for a second reading when another job turns out
 * to have more processes, which only happens when a trace holds several.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "esc.h"
#include "job.h"

static struct an_job *job_get(struct an_state *an, uint64_t tag)
{
	struct an_job *j;

	for (int i = 0; i < an->njobs; i++)
		if (an->jobs[i].tag == tag)
			return &an->jobs[i];
	if (an->njobs == AN_JOBS_MAX)
		return NULL;
	j = &an->jobs[an->njobs++];
	memset(j, 0, sizeof(*j));
	j->tag = tag;
	return j;
}

/* How a job is named in messages and chosen with --job. */
static void job_name(const struct an_job *j, char *buf, size_t len)
{
	if (j->id[0])
		snprintf(buf, len, "%s", j->id);
	else if (!j->tag)
		snprintf(buf, len, "none");
	else
		snprintf(buf, len, "#%016" PRIx64, j->tag);
}

void an_job_want(struct an_state *an, const char *id, uint64_t tag, int how)
{
	struct an_job *j;

	if (id) {
		if (!strcmp(id, "none"))
			tag = 0;
		else if (id[0] == '#' && id[1])
			tag = strtoull(id + 1, NULL, 16);
		else
			tag = ng_job_tag(id);
	}
	an->job_keep = tag;
	an->job_how = how;
	/* First in the table, so it always has a place in it. */
	j = job_get(an, tag);
	if (j && id && strcmp(id, "none") && id[0] != '#')
		snprintf(j->id, sizeof(j->id), "%s", id);
}

int an_job_skip(struct an_state *an, const struct ev_src *src, int proc_info,
		const char *job_id)
{
	struct an_job *j = job_get(an, src->job);

	if (an->job_how == AN_JOB_NONE) {
		an->job_keep = src->job;
		an->job_how = AN_JOB_FIRST;
	}
	if (j) {
		j->events++;
		if (proc_info) {
			j->nproc++;
			if (job_id && *job_id && !j->id[0])
				snprintf(j->id, sizeof(j->id), "%s", job_id);
		}
	} else {
		an->jobs_more++;
	}
	if (src->job == an->job_keep)
		return 0;
	an->job_dropped++;
	return 1;
}

/* The job with the most processes; ties (and jobs whose process_info was
 * lost) go to the first seen. */
static struct an_job *most(struct an_state *an)
{
	struct an_job *best = NULL;

	for (int i = 0; i < an->njobs; i++) {
		struct an_job *j = &an->jobs[i];

		if (j->events && (!best || j->nproc > best->nproc))
			best = j;
	}
	return best;
}

static int seen_jobs(const struct an_state *an)
{
	int n = 0;

	for (int i = 0; i < an->njobs; i++)
		n += an->jobs[i].events > 0;
	return n;
}

static void job_list(const struct an_state *an, char *buf, size_t len)
{
	size_t off = 0;
	int first = 1;

	buf[0] = '\0';
	for (int i = 0; i < an->njobs && off < len; i++) {
		const struct an_job *j = &an->jobs[i];
		char name[AN_JOB_ID_MAX + 20];
		int w;

		if (!j->events)
			continue;
		job_name(j, name, sizeof(name));
		w = snprintf(buf + off, len - off, "%s%s (%" PRIu64 " process%s)",
			     first ? "" : ", ", name, j->nproc, j->nproc == 1 ? "" : "es");
		if (w < 0)
			break;
		off += (size_t)w;
		first = 0;
	}
	if (an->jobs_more && off < len)
		snprintf(buf + off, len - off, "%sand more", first ? "" : ", ");
}

int an_job_settle(struct an_state *an, uint64_t *tag)
{
	struct an_job *keep = job_get(an, an->job_keep), *best = most(an);
	char list[400], name[AN_JOB_ID_MAX + 20];

	if (!best || !keep)
		return 0;
	switch (an->job_how) {
	case AN_JOB_USER:
		if (keep->events)
			return 0;
		job_name(keep, name, sizeof(name));
		job_list(an, list, sizeof(list));
		/* Job ids come from the trace. */
		fprintf(stderr, "ncclguard analyze: --job %s: no event of that job; the trace "
			"holds ", name);
		ng_esc_put(stderr, list);
		fputc('\n', stderr);
		return -1;
	case AN_JOB_RECORD:
		if (keep->events)
			return 0;
		/* Events without a tag are an older shim's: the record's job,
		 * nothing missing.  A job of another tag is another job. */
		if (best->tag) {
			job_name(keep, name, sizeof(name));
			job_list(an, list, sizeof(list));
			an_incomplete(an, AN_INC_other_job, "run.json names job %s, but no event "
				      "carries it; the trace holds %s", name, list);
		}
		break;
	case AN_JOB_FIRST:
		break;
	default:
		return 0;
	}
	if (best->tag == an->job_keep)
		return 0;
	*tag = best->tag;
	return 1;
}

void an_job_note(struct an_state *an)
{
	struct an_job *keep = job_get(an, an->job_keep);
	char list[400], name[AN_JOB_ID_MAX + 20];

	if (seen_jobs(an) < 2 && !an->jobs_more)
		return;
	job_list(an, list, sizeof(list));
	if (keep)
		job_name(keep, name, sizeof(name));
	else
		snprintf(name, sizeof(name), "?");
	an_incomplete(an, AN_INC_other_job, "trace holds %d%s jobs: %s; reported %s, dropped the "
		      "%" PRIu64 " events of the others; use --job to choose",
		      seen_jobs(an), an->jobs_more ? "+" : "", list, name, an->job_dropped);
}

const char *an_job_id(const struct an_state *an)
{
	for (int i = 0; i < an->njobs; i++)
		if (an->jobs[i].tag == an->job_keep)
			return an->jobs[i].id;
	return "";
}
