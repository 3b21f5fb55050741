/*
 * `ncclguard analyze` as a library call: read the LTTng traces of all
 * ranks under some directories, match them, and write the reports
 * (DESIGN.md section 9).  The command line is tools/'s.
 */
#ifndef NCCLGUARD_ANALYZE_H
#define NCCLGUARD_ANALYZE_H

#include <stdio.h>

struct ng_analyze_opts {
	const char *json;	/* report.json to write; NULL: none */
	const char *chrome;	/* Chrome trace-event JSON; NULL: none */
	const char *html;	/* report.html; NULL: none */
	double link_gbps;	/* the link's GB/s, to flag slow sizes; 0: none */
	FILE *summary;		/* the text summary and what was written; NULL: none */
	int progress;		/* a progress line on stderr while reading */
};

/* Each report is written whole or not at all.  Returns 0 when the traces
 * were read and reported, 1 when a trace could not be read or a report
 * not written (why, on stderr). */
int ng_analyze(const char *const *dirs, int ndirs, const struct ng_analyze_opts *opts);

#endif
