/* matrix/: what the module's files offer each other; nothing outside
 * matrix/ includes this. */
#ifndef NCCLGUARD_MX_PRIV_H
#define NCCLGUARD_MX_PRIV_H

#include <stddef.h>

#include "matrix.h"

#define MX_ID_BYTES 128		/* NCCL_UNIQUE_ID_BYTES */
#define MX_LINE_MAX 1024	/* a protocol line, with its newline */
#define MX_REASON_MAX 400

/* ---- launcher.c --------------------------------------------------------- */

struct mx_self {
	int rank, world, local;	/* local -1: the launcher says none */
};

/* 0, or -1 when no launcher's variables say who we are. */
int mx_launcher(struct mx_self *me);
void mx_job_token(char *buf, size_t len);

/* ---- rendezvous.c ------------------------------------------------------- */

double mx_now(void);		/* CLOCK_MONOTONIC, seconds */
void mx_sleep(double s);
/* Bytes that could split a protocol line or a field (space, control, '%',
 * not ASCII) as %XX; decode reverses it.  Always terminated, cut to len. */
void mx_encode(char *dst, size_t len, const char *src);
void mx_decode(char *dst, size_t len, const char *src);
void mx_hex(char *dst, const unsigned char *src, size_t n);	/* dst: 2n+1 */
int mx_unhex(unsigned char *dst, size_t n, const char *src);

/* A connection that reads lines. */
struct mx_conn {
	int fd;			/* -1: none */
	size_t len;
	char buf[4 * MX_LINE_MAX];
};

void mx_conn_init(struct mx_conn *c, int fd);
void mx_conn_close(struct mx_conn *c);
/* One whole line (no newline kept) if buffered: 1; else 0. */
int mx_take_line(struct mx_conn *c, char *line, size_t len);
/* Whether a whole line starting with prefix is buffered; taken if so. */
int mx_take_prefixed(struct mx_conn *c, const char *prefix, char *line, size_t len);
/* Read what the socket has: 0, or -1 when closed or broken. */
int mx_fill(struct mx_conn *c);
/* Wait for a line until deadline: 1 a line, 0 timed out, -1 closed. */
int mx_recv_line(struct mx_conn *c, char *line, size_t len, double deadline);
/* A whole line (fmt without the newline); -1 when the peer is gone or
 * takes nothing for wait seconds. */
int mx_send(int fd, double wait, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "ADDR:PORT" of the other end of fd, for messages. */
void mx_peer_name(int fd, char *buf, size_t len);

/* Listen on port (0: any) of every address (loopback only: local); the
 * port taken in *port.  fd, or -1 with err. */
int mx_listen(int port, int local, int *port_out, char *err, size_t len);
/* Connect to host:port, retrying until deadline: fd, or -1 with err. */
int mx_connect(const char *host, int port, double deadline, char *err, size_t len);

/* Where this rank finds the coordinator (docs/matrix.md, "Rendezvous"). */
struct mx_addr {
	char host[256];
	int port;		/* 0: published in the rendezvous file */
	int serve;		/* this rank runs the coordinator */
	int via_file;
	char file[4096];
};
int mx_addr_pick(const struct ng_mx_opts *o, const struct mx_self *me, struct mx_addr *a,
		 char *err, size_t len);
/* The coordinator's address into the rendezvous file (atomically). */
int mx_file_publish(const struct mx_addr *a, const char *token, int world, const char *host,
		    int port, char *err, size_t len);
/* This job's address from the rendezvous file, and connected; -1 with err
 * when none answered until deadline. */
int mx_file_connect(const struct mx_addr *a, const char *token, int world, double deadline,
		    char *err, size_t len);

/* ---- coord.c ------------------------------------------------------------ */

/* How long the coordinator waits, for --timeout t: for a round's READYs
 * (a rank sends it as soon as its last pair is done), for its results
 * (five phases of at most t each on the ranks); and how long a rank waits
 * for the coordinator's word (joining, then a round's two waits). */
#define READY_S(t) (2 * (t) + 2)
#define RESULT_S(t) (6 * (t) + 2)
#define CLIENT_WAIT_S(t) ((t) + READY_S(t) + RESULT_S(t) + 10)
/* The coordinator says WAIT to every rank at least every KEEPALIVE_S, so
 * that a rank gives up on one that says nothing for SILENCE_S (--timeout
 * and slack for a loaded host), however long the rounds take.  Not more
 * often than twice a second: a tiny --timeout must not flood the ranks. */
#define KEEPALIVE_S(t) ((t) / 2 > 0.5 ? (t) / 2 : 0.5)
#define SILENCE_S(t) ((t) + 2)

/* Run the whole schedule for n ranks that connect to listen_fd; the
 * result into m (allocated here).  0, or -1 when it could not run. */
int mx_coord_run(int listen_fd, int n, const char *token, const struct ng_mx_opts *o,
		 struct ng_mx *m);

/* ---- token.c ------------------------------------------------------------ */

/* --token-file's secret as a HELLO field ("-": none); always terminated. */
void mx_secret_field(char *dst, size_t len, const char *secret);
/* Whether a HELLO's field is ours, in a time that does not depend on
 * where they first differ. */
int mx_secret_equal(const char *got, const char *ours);

/* ---- measure.c ---------------------------------------------------------- */

struct mx_lib;

struct mx_pair_result {
	int ok;
	double lat_us, busbw;
	char reason[MX_REASON_MAX];
};

/* libnccl.so.2 and the CUDA runtime, loaded; NULL with err.  quiet: say
 * nothing of what is overridden (ranks other than 0). */
struct mx_lib *mx_lib_open(int quiet, char *err, size_t len);
void mx_lib_close(struct mx_lib *l);
/* cudaSetDevice(local % count), its PCI bus id; buffers.  -1 with err. */
int mx_lib_device(struct mx_lib *l, int local, size_t bytes, char *busid, size_t busid_len,
		  char *err, size_t len);
int mx_lib_new_id(struct mx_lib *l, unsigned char id[MX_ID_BYTES], char *err, size_t len);
/* One pair, this process as comm rank me (0 or 1).  stop(arg), asked
 * while waiting, ends the pair early (the coordinator's word that the
 * peer failed). */
void mx_measure(struct mx_lib *l, const unsigned char id[MX_ID_BYTES], int me,
		const struct ng_mx_opts *o, int (*stop)(void *), void *arg,
		struct mx_pair_result *r);

/* ---- the outputs (display.c, output.c, text.c, report_*.c) ------------ */

/* mkdir -p */
int mx_make_dirs(const char *dir);

/* Ranks in display order: grouped by host, hosts by their lowest rank.
 * order[n]; group[i] the host number of order[i]; returns the hosts. */
int mx_host_order(const struct ng_mx *m, int *order, int *group);
/* "64 MiB", "1.5 KiB", "8 B" */
void mx_fmt_bytes(char *buf, size_t len, size_t bytes);

#endif
