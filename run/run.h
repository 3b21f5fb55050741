/*
 * run/: `ncclguard run`'s work once tools/ has read and checked its
 * arguments: the job's recording on this host (one LTTng session for all
 * the job's runs here, met in the runtime folder), the job's process and
 * its guardian, the flight rings of dead processes, and run.json.
 */
#ifndef NCCLGUARD_RUN_H
#define NCCLGUARD_RUN_H

struct ng_run_opts {
	const char *outdir, *policy, *timeout, *on_timeout, *inject;
	const char *health;		/* --health-interval, NULL if not given */
	const char *verify;		/* --verify, NULL if not given */
	char relay[512];		/* net://HOST:CTRL:DATA, "" if local */
	int stacks;
	char **cmd;
};

/* Prints the summary of the trace in dir; run in a child of ours, which
 * may be stopped on a deadline. */
typedef int (*ng_run_summary_fn)(const char *dir);

/* Runs o->cmd with the shim lib preloaded and records it; then prints
 * summary(DIR) if this run was the last out of its job's recording.
 * Returns CMD's exit status, 128+N if a signal N killed it, 127 if it
 * could not be run, 2 if nothing was started (said on stderr). */
int ng_run(const struct ng_run_opts *o, const char *lib, ng_run_summary_fn summary);

#endif
