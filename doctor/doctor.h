/*
 * doctor/: `ncclguard doctor` (docs/doctor.md): the checks a person
 * runs by hand on a GPU host before a multi-node job, each with a stable
 * dotted id, a status (ok, warn, fail, skip), the value found and, for
 * warn and fail, the fix in one line; the `ncclguard-doctor/1` file; and
 * the comparison of several hosts' files.
 *
 * Facts come from sysfs and procfs through policy/'s host seam
 * (NCCLGUARD_SYSROOT presents a fake host), and from NVML, opened at run
 * time (NCCLGUARD_NVML_LIBRARY, else libnvidia-ml.so.1).  Nothing here
 * exits or reads the command line: tools/cmd_doctor.c does.
 */
#ifndef NCCLGUARD_DOCTOR_H
#define NCCLGUARD_DOCTOR_H

#include <stddef.h>
#include <stdio.h>

struct ng_doctor_report;

struct ng_doctor_opts {
	const char *policy;	/* a policy file to check, NULL: the shim's own if any */
	const char *libdir;	/* the folder of libncclguard.so, NULL: unknown */
};

/* Runs every check on this host.  NULL only when out of memory. */
struct ng_doctor_report *ng_doctor_run(const struct ng_doctor_opts *o);
void ng_doctor_free(struct ng_doctor_report *r);
/* The text: one line per check, grouped by area, then the counts. */
void ng_doctor_print(const struct ng_doctor_report *r, FILE *f);
/* How many checks failed. */
int ng_doctor_failures(const struct ng_doctor_report *r);
/* Writes ncclguard-doctor/1 to `path`, where %h stands for the host name
 * and %% for %; replaces only a regular file.  0, or -1 after saying why
 * on stderr. */
int ng_doctor_write_json(const struct ng_doctor_report *r, const char *path);

/* A doctor file's text, checked against the schema.  0 and *out, or -1
 * and why in err ("line L, column C: ..." for bad JSON). */
int ng_doctor_parse(const char *buf, size_t len, struct ng_doctor_report **out, char *err,
		    size_t errlen);
/* --compare: reads the files (a folder: its *.json), prints what differs
 * between hosts to f, and returns 0 (no difference that breaks or slows
 * NCCL), 1 (one or more), or 2 (a file unreadable or not a doctor file,
 * or fewer than two hosts; one line on stderr). */
int ng_doctor_compare(char *const *paths, int n, FILE *f);

#endif
