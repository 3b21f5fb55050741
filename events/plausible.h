/*
 * What an event's values together may be (plausible.c): the checks'
 * state and the count of what failed them, per stream.  Private to
 * events/: decode.c reads the fields, then asks here.
 */
#ifndef NCCLGUARD_PLAUSIBLE_H
#define NCCLGUARD_PLAUSIBLE_H

#include <stdint.h>

#include "events.h"
#include "u64map.h"

/* A stream, learnt once by decode.c; its implausible events counted here. */
struct streaminfo {
	const struct bt_stream *stream;
	int host;
	int64_t offset_ns;	/* clock origin offset: raw monotonic -> trace clock */
	int64_t env_vpid;	/* per-pid buffers name the process in env */
	int64_t first_ts;	/* its first event's time; -1 before */
	uint64_t bad;		/* events dropped or clamped: implausible */
	uint64_t why[EV_NWHY];	/* of them, by kind */
	char first_bad[64];	/* the first such value */
};

/* A process's seqs of one comm and kind in one stream: they only grow. */
struct seqtrack {
	uint64_t comm, last, prev;
	int64_t vpid, last_ts;
	int stream, kind, n;	/* n: seqs taken (up to 2) */
};

struct ev_checks {
	struct streaminfo *cur;	/* the stream of the event being read */
	int cur_idx;
	struct ng_u64map seq_map;
	struct seqtrack *seqs;
	int nseqs;
	/* comm hashes met, and their events: index into comms */
	struct ng_u64map comm_map;
	struct { uint64_t hash, n; } *comms;
	int ncomms;
	uint64_t bad_values;
};

/* An event's implausible value: counted against the current stream (if
 * any), by kind; the first one's text kept. */
void ev_bad(struct ev_checks *k, enum ev_why why, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* An event whose fields are read (bad: one was out of range): 0 when its
 * values together are not what a shim writes, and it is dropped.  A
 * process's pid that is not its own is set to it. */
int ev_plausible(struct ev_checks *k, struct ev_event *ev, int bad);
void ev_checks_free(struct ev_checks *k);

#endif
