/*
 * `ncclguard analyze` as a library call: read the LTTng traces of all
 * ranks under some directories, match them, and write the reports
 * (docs/design.md, "The analyzer's findings").  The command line is tools/'s.
 */
#ifndef NCCLGUARD_ANALYZE_H
#define NCCLGUARD_ANALYZE_H

#include <stdint.h>
#include <stdio.h>

#include "fail_on.h"

struct ng_analyze_opts {
	const char *json;	/* report.json to write; NULL: none */
	const char *chrome;	/* Chrome trace-event JSON; NULL: none */
	const char *html;	/* report.html; NULL: none */
	double link_gbps;	/* the link's GB/s, to flag slow sizes; 0: none */
	FILE *summary;		/* the text summary and what was written; NULL: none */
	int progress;		/* a progress line on stderr while reading */
	int early;		/* hangs and timeouts on stderr while reading, as
				 * soon as the rest of the trace cannot change them */
	int jobs;		/* processes decoding the traces; 0 or 1: one graph */
	const char *job;	/* the job to report (its id); NULL: the run
				 * record's, else the one with most processes */
	unsigned fail_on;	/* NG_FAIL_*: return NG_ANALYZE_FOUND if present */
	/* The Chrome trace: by default under chrome_max bytes (0: 64 MiB),
	 * the end, windows around findings and a sample of the rest; with
	 * chrome_all every collective.  chrome_ranks (sorted) and the window
	 * (seconds on the trace's timeline; none unless to > from) filter it. */
	unsigned long long chrome_max;
	int chrome_all;
	double chrome_from_s, chrome_to_s;
	const int64_t *chrome_ranks;
	int chrome_nranks;
};

#define NG_ANALYZE_FOUND	5

/* Each report is written whole or not at all, and replaces only a regular
 * file.  Returns 0 when the traces were read and reported, 1 when a trace
 * could not be read or a report not written (why, on stderr), and
 * NG_ANALYZE_FOUND when they were but a finding of a fail_on kind is
 * present. */
int ng_analyze(const char *const *dirs, int ndirs, const struct ng_analyze_opts *opts);

#endif
