/*
 * The reader: the LTTng traces through babeltrace2 into records for the
 * matcher (read.c; pread.c with worker processes; readbase.c what both
 * stand on, read_priv.h; merge.c, recs.c), and what lies beside the
 * traces: the hang dumps (dumps.c), the calls dead processes left in
 * their flight rings (flight.c), the run records (runrec.c) and which of
 * a relay's session folders to read (relaysess.c), each found on disk by
 * traces.c.  It stands on the matcher (match.h).
 */
#ifndef NCCLGUARD_AN_READ_H
#define NCCLGUARD_AN_READ_H

#include <sys/types.h>

#include "match.h"

/* ---- read.c, traces.c ------------------------------------------------- */

/* Finds the CTF traces under each dir and feeds their events to `an`,
 * decoded by `jobs` processes where more than one (read.c, pread.c).
 * Returns 0, or -1 after printing why on stderr. */
int an_read_traces(const char *const *dirs, int ndirs, struct an_state *an,
		   int show_progress, int jobs);
/* Collects directories holding a CTF `metadata` file under `dir`. */
int an_find_traces(const char *dir, char ***out, int *n);
/* The files `want` accepts in each dir's <sub>/ folder and its host
 * folders' (DIR/<host>/<sub>/): real paths, sorted, each once (a folder
 * given twice reaches a file twice).  Returns how many; an_paths_free. */
int an_find_files(const char *const *dirs, int ndirs, const char *sub,
		  int (*want)(const char *name), char ***out);
void an_paths_free(char **paths, int n);
/* env.hostname of a trace, from its metadata file; NULL if not found. */
char *an_metadata_hostname(const char *tracedir);

/* ---- traces.c: a trace's files checked --------------------------------- */

/* A trace's stream file as an_trace_check() found it. */
enum { AN_SF_OK, AN_SF_EMPTY, AN_SF_CUT, AN_SF_BAD };
struct an_sfile {
	char *name;		/* in the trace's folder */
	off_t size, keep;	/* keep: the bytes of whole packets */
	int state;
	int cpu;		/* N of CHANNEL_N, else -1 */
	size_t chan_len;	/* length of CHANNEL */
};
struct an_tcheck {
	int meta_ok;		/* packetized metadata whole, not empty */
	char meta_why[160];	/* else why */
	struct an_sfile *f;	/* sorted by name */
	int nf;
	uint64_t bytes;		/* metadata and streams */
	int nmissing;		/* CHANNEL_N files that should be there */
	char missing[256];	/* the first of them */
};
/* The files of the trace in `dir`: the metadata whole, each stream file
 * whole packets (LTTng's layout), no CHANNEL_N missing.  -1: the folder
 * cannot be listed. */
int an_trace_check(const char *dir, struct an_tcheck *tc);
void an_tcheck_free(struct an_tcheck *tc);
/* ---- dumps.c: the hang dumps read ------------------------------------- */

/* The ncclguard-hang-*.json files of <DIR>/hang/ and <DIR>/<host>/hang/,
 * each once, into an->dumps[] sorted by path; one not read is said in
 * incomplete[] (hang_dump_unreadable).  NCCLGUARD_LOG=debug says on
 * stderr what each held. */
void an_dumps_read(const char *const *dirs, int ndirs, struct an_state *an);
/* Before an_finish: a dump whose process's timeout events are not in the
 * trace (its last events never reached it) gives the timeouts it names,
 * so the hang is still found, and is said in incomplete[]
 * (timeout_not_in_trace). */
void an_dumps_check(struct an_state *an);
/* One dump's text: 0, or -1 with why in err (d is then empty). */
int an_dump_parse(const char *buf, size_t len, struct an_dump *d, char *err, size_t errlen);

/* ---- flight.c -------------------------------------------------------- */

/* The calls dead processes left in their flight rings (<DIR>/flight/),
 * after the traces: the ones the trace lacks, as coll_enqueue records. */
void an_flight_read(const char *const *dirs, int ndirs, struct an_state *an);

/* ---- runrec.c: DIR/run.json, the record `ncclguard run` leaves -------- */

struct an_runrec {
	char *schema, *job, *host, *status, *disk_detail, *consumer_error;
	char *session, *session_host;	/* the session its run made ("": none) */
	int disk_full;			/* -1: not said */
	int lost_unknown;		/* -1: not said */
	int recorded;			/* 0: the run recorded nothing; -1: not said */
	int exit_status;		/* the job's; -1: not said */
	double free_start, free_end;	/* free_bytes_start, _end; -1: not said */
};
/* A flat JSON object of strings, numbers, booleans and nulls, read by
 * common/json_read.c: fn is called once per member, in order (type 's',
 * 'n', 'b' or 'z'; num holds a number or a boolean's 0/1).  Returns 0, or
 * -1 with why in err (fn's own where fn refused). */
int an_flat_json(const char *buf, size_t len,
		 int (*fn)(void *ctx, const char *key, int type, const char *str, double num),
		 void *ctx, char *err, size_t errlen);
/* Reads DIR/run.json: 1 read, 0 absent, -1 unreadable (why in err). */
int an_runrec_read(const char *dir, struct an_runrec *rr, char *err, size_t errlen);
void an_runrec_free(struct an_runrec *rr);
/* incomplete[] entries for what the record says went wrong. */
void an_runrec_note(struct an_state *an, const char *dir, const struct an_runrec *rr);

/* ---- relaysess.c: which of a relay's session folders to read -------- */

struct an_sess {
	char *folder;		/* RELAYDIR/<host>/<name>-<date>-<time> */
	char *host, *name;
	char *job;		/* a run record's job id */
	int first;		/* the folder's first trace in the list */
};
struct an_sessions {
	struct an_sess *s;	/* from the run records: host, name, job */
	int n;
};
void an_sessions_add(struct an_sessions *ss, const char *host, const char *name,
		     const char *job);
void an_sessions_free(struct an_sessions *ss);
/* keep[i] for each trace path: 0 for one in a relay's session folder that
 * no record of `rec` names, or whose host and name another folder has
 * too; each said in incomplete[] (session_unverified) where it claims
 * the job.  With no record naming a session, every one is kept and one
 * session_unverified entry says none was checked. */
void an_sessions_keep(struct an_state *an, char *const *paths, int n,
		      const struct an_sessions *rec, int *keep);

#endif
