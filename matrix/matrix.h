/*
 * `ncclguard matrix`: every pair of ranks measured over a 2-rank NCCL
 * communicator (latency of an 8-byte all-reduce, bus bandwidth of a large
 * one), in a round-robin schedule, into matrix.json, matrix.html and a
 * text matrix (docs/matrix.md).
 *
 *   schedule.c   the round-robin (circle method): pure
 *   launcher.c   rank, world size, local rank from the launcher's variables
 *   rendezvous.c sockets, lines, the rendezvous address and file
 *   token.c      --token-file's secret: read, checked, compared
 *   coord.c      the coordinator: hellos, rounds, results (runs in rank 0,
 *                or in the parent of --local)
 *   measure.c    NCCL and CUDA through dlopen; one pair's measurement
 *   rank.c       one rank's part of the run; --local's children
 *   classify.c   slow pairs and what they have in common: pure
 *   report_json.c, report_html.c, text.c: the outputs
 */
#ifndef NCCLGUARD_MATRIX_H
#define NCCLGUARD_MATRIX_H

#include <stddef.h>
#include <stdio.h>

/* ---- the schedule ------------------------------------------------------- */

/* Rounds for n ranks: n-1 when n is even, n when odd (one bye each). */
int ng_mx_rounds(int n);
/* rank's partner in round r (0 <= r < ng_mx_rounds(n)), -1 for a bye. */
int ng_mx_peer(int n, int round, int rank);

/* ---- options ------------------------------------------------------------ */

struct ng_mx_opts {
	size_t bytes;		/* bandwidth message, default 64 MiB */
	int iters;		/* timed iterations of each measurement */
	double timeout_s;	/* per phase of a pair; joining */
	double expect_gbps;	/* 0: none */
	const char *outdir;
	const char *rendezvous;	/* "HOST:PORT" or NULL */
	const char *token_file;	/* --token-file, or NULL */
	const char *secret;	/* what it holds (ng_mx_read_token), or NULL */
};

#define NG_MX_DEFAULT_BYTES ((size_t)64 << 20)
#define NG_MX_DEFAULT_ITERS 20
#define NG_MX_DEFAULT_TIMEOUT 30.0
#define NG_MX_DEFAULT_DIR "ncclguard-matrix"
#define NG_MX_MAX_RANKS 4096
#define NG_MX_TOKEN_MIN 16	/* bytes of a secret: fewer can be guessed */
#define NG_MX_TOKEN_MAX 128

/* The secret in path: its first line, from a regular file of this user
 * (or root) that no one else may read or write.  0, or -1 with err. */
int ng_mx_read_token(const char *path, char *buf, size_t len, char *err, size_t errlen);

/* This process as one rank of a job (launcher variables; docs/matrix.md
 * for the rendezvous).  Rank 0 coordinates, writes the outputs and
 * prints.  Returns the exit status: 0, 1 a pair failed or the run could
 * not be made, 2 usage (no rank known). */
int ng_mx_run_rank(const struct ng_mx_opts *o);
/* N ranks on this host: runs child_argv (this command without --local)
 * N times with RANK, WORLD_SIZE, LOCAL_RANK set, coordinates, writes and
 * prints.  Returns the exit status as above. */
int ng_mx_run_local(const struct ng_mx_opts *o, int n, char *const child_argv[]);

/* ---- the result --------------------------------------------------------- */

struct ng_mx_rank {
	int joined;
	char host[256];
	char busid[32];
};

struct ng_mx_slow {
	int a, b;
	double busbw_gbps, expected_gbps;
};

/* A rank named as common to the slow pairs. */
struct ng_mx_suspect {
	int rank;
	int slow_pairs, pairs;	/* of its measured pairs */
};

struct ng_mx {
	int n;
	size_t bytes;
	int iters;
	double timeout_s, expect_gbps;
	struct ng_mx_rank *ranks;
	double *lat_us;		/* [a * n + b], NAN: not measured */
	double *busbw;		/* GB/s, the same */
	char **reason;		/* [a * n + b] for a < b: why the pair failed */
	int nfailed;
	/* ng_mx_classify() */
	double median_same, median_other;	/* NAN: no pair of the class */
	struct ng_mx_slow *slow;
	int nslow;
	struct ng_mx_suspect *suspects;
	int nsuspects;
	char **suspect_hosts;	/* hosts with two or more suspects */
	int nsuspect_hosts;
};

int ng_mx_alloc(struct ng_mx *m, int n);
void ng_mx_free(struct ng_mx *m);
/* Record a pair (a != b, either order). */
void ng_mx_set(struct ng_mx *m, int a, int b, double lat_us, double busbw);
int ng_mx_fail(struct ng_mx *m, int a, int b, const char *reason);
/* Slow pairs: below --expect-gbps, or below NG_MX_SLOW_SHARE of the
 * median of the measured pairs of their link class (same host, other
 * host; a class of at least NG_MX_MEDIAN_MIN pairs); then the ranks and
 * hosts common to them.  -1 when out of memory. */
#define NG_MX_SLOW_SHARE 0.5
#define NG_MX_MEDIAN_MIN 3
int ng_mx_classify(struct ng_mx *m);

/* ---- outputs ------------------------------------------------------------ */

void ng_mx_write_json(FILE *f, const struct ng_mx *m);
void ng_mx_write_html(FILE *f, const struct ng_mx *m);
void ng_mx_write_text(FILE *f, const struct ng_mx *m);
/* matrix.json and matrix.html into dir (made if missing), each replacing
 * only a regular file, written whole or not at all. */
int ng_mx_write_files(const char *dir, const struct ng_mx *m);

#endif
