/*
 * recs.c: the parallel reader's records.  Each reading worker (a child
 * process, pread.c) decodes its share of the streams into self-contained
 * records (strings copied) and writes them, in time order, to a pipe;
 * the matcher's process merges the workers' pipes by time with a heap,
 * ties going to the lower worker, so that the order is the one a single
 * graph gives.  Only pread.c uses it.
 */
#ifndef NCCLGUARD_RECS_H
#define NCCLGUARD_RECS_H

#include <stdint.h>

#include "events.h"

enum rec_type {
	REC_EVENT = 1,	/* ev; skip: another job's; ok: ev.r filled */
	REC_HOST,	/* the worker's host number id is named str */
	REC_LOST,	/* n events discarded by the tracer */
	REC_PKTS,	/* stream str: n packets missing */
	REC_BAD,	/* stream str: n values implausible, which str2 */
	REC_BADSUM,	/* n values implausible in all the worker's streams */
	REC_END,	/* the worker read all its streams */
	REC_FAIL,	/* the read failed: code (REC_FAIL_*), status, text str */
	REC_EXPECT,	/* host id (the matcher's numbering) has n more streams */
	REC_SEND,	/* a stream of host str ended: its last event went before */
	REC_CUT,	/* stream str (id: unnamed) unreadable after n events, why str2 */
};

enum { REC_FAIL_GRAPH, REC_FAIL_CRASH, REC_FAIL_SETUP };

struct rec {
	enum rec_type type;
	int64_t key;		/* the merge's time of the message it came from */
	struct ev_event ev;	/* REC_EVENT; ev.src.host is the worker's number */
	int skip, ok;
	int id, code, status;
	uint64_t n;
	const char *str, *str2;
};

/* The worker's side: records buffered and written to fd.  While held,
 * nothing is written (the first records wait for the job to keep). */
struct rec_out;
struct rec_out *rec_out_new(int fd);
int rec_put(struct rec_out *o, const struct rec *r);	/* -1: write error */
void rec_hold(struct rec_out *o, int hold);
int rec_flush(struct rec_out *o);
void rec_out_free(struct rec_out *o);

/* The matcher's side: n workers' pipes. */
struct rec_in;
struct rec_in *rec_in_new(const int *fds, int n);
void rec_in_free(struct rec_in *m);
/* The next record of all workers by time, *w its worker: 1; 0 when every
 * worker has ended (REC_END or REC_FAIL given); -1 when worker *w's pipe
 * ended without either (it died).  The record is valid until the next
 * call. */
int rec_next(struct rec_in *m, struct rec *r, int *w);

#endif
