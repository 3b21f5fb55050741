/*
 * `ncclguard watch` as a library call: attach to the live sessions an
 * lttng-relayd serves (babeltrace2's src.ctf.lttng-live), follow one job's
 * ranks on every host as their events stream in, and print every few
 * seconds where each rank is (the last collective it entered on each
 * communicator) and, once a collective has waited longer than `stuck_s`,
 * the hang: the ranks waiting in it and the ranks missing from it, with
 * their hosts.  The command line is tools/'s (docs/cluster.md).
 */
#ifndef NCCLGUARD_LIVE_H
#define NCCLGUARD_LIVE_H

#include <stdio.h>

struct ng_watch_opts {
	const char *url;	/* net://HOST[:PORT] of the relayd, or one
				 * session's net://HOST[:PORT]/host/H/NAME */
	double stuck_s;		/* a collective waited this long: a hang */
	double every_s;		/* a progress report this often */
	int json;		/* one JSON object per line, else text */
	const char *job;	/* the job's id; NULL: the one with the most
				 * processes ("none": events without a job) */
	FILE *out;
	const char *metrics;	/* serve /metrics on this ADDR:PORT; NULL: not */
};

/* ADDR:PORT of --metrics: an IPv4 literal or a host name, or an IPv6
 * literal in brackets ([::1]:9464), then a port 1-65535.  0 and host,
 * port filled, or -1 with why. */
int ng_metrics_addr(const char *s, char *host, size_t len, int *port, const char **why);

/* Exit statuses beside 0 (the job's sessions ended, or a signal) and 1
 * (the relayd could not be read; why, on stderr). */
#define NG_WATCH_HANG	5	/* a hang was reported */

/* Runs until every session it attached to has ended, or SIGINT/SIGTERM;
 * returns an exit status. */
int ng_watch(const struct ng_watch_opts *opts);

#endif
