/*
 * The coordinator: every rank connects and says who it is; then, round by
 * round, it collects each rank's READY (with the unique id its pair's
 * lower rank made), tells each pair to go (both get the id) or why not,
 * and collects both sides' results.  Rounds are barriers, so the pairs of
 * one round run at the same time and the rounds one after another.
 *
 * No rank can hold the run: joining ends after --timeout, a round's
 * READYs and its results after the bounds below (mx_priv.h): on the
 * ranks, init, latency, the bandwidth warm-up, the timed bandwidth and
 * teardown each end at --timeout, and the rest is slack for a loaded
 * host.  A rank that misses a deadline or whose connection closes is
 * gone; its remaining pairs fail with the reason and the others go on.
 * Ranks hear WAIT at least every KEEPALIVE_S, so that they can give up
 * on a coordinator that is gone rather than busy.
 *
 * Anyone who reaches the port can say HELLO: a wrong secret is refused
 * before the slot is looked at, and a slot claimed twice is lost to both
 * claimants (docs/matrix.md, "Who can join").
 */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mx_priv.h"

enum { R_ABSENT, R_LIVE, R_GONE };

struct rk {
	struct mx_conn c;
	int state;
	char addr[64];		/* whence its HELLO came; "": none yet */
	int contested;		/* a second HELLO claimed it */
	char why[MX_REASON_MAX];
	int ready, go, result;	/* last round of each, -1 */
	int have_id;
	unsigned char id[MX_ID_BYTES];
	struct mx_pair_result res;
};

struct co {
	int n, lfd;
	const char *token;
	char secret[NG_MX_TOKEN_MAX + 2];	/* as a HELLO field */
	double timeout, next_keepalive;
	struct rk *rk;
	struct mx_conn *pend;	/* connected, no HELLO yet */
	int npend, joining;
	struct ng_mx *m;
};

/* r failed its pair, or is gone in the middle of it: its peer, still at
 * it, is told to stop rather than wait for its own timeout. */
static void stop_peer(struct co *co, int r)
{
	int round = co->rk[r].go, p = round < 0 ? -1 : ng_mx_peer(co->n, round, r);
	struct rk *k = p < 0 ? NULL : &co->rk[p];

	if (k && k->state == R_LIVE && k->go == round && k->result < round)
		mx_send(k->c.fd, co->timeout, "ABORT %d", round);
}

static void gone(struct co *co, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void gone(struct co *co, int r, const char *fmt, ...)
{
	struct rk *k = &co->rk[r];
	va_list ap;

	if (k->state != R_LIVE)
		return;
	va_start(ap, fmt);
	vsnprintf(k->why, sizeof(k->why), fmt, ap);
	va_end(ap);
	k->state = R_GONE;
	mx_conn_close(&k->c);
	if (k->go >= 0 && k->result < k->go)
		stop_peer(co, r);
}

static void refuse(struct co *co, struct mx_conn *c, const char *why)
{
	mx_send(c->fd, co->timeout, "BYE %s", why);
	mx_conn_close(c);
}

/* A second HELLO for rank: one of the two speaks for a rank it is not,
 * and nothing tells which, so neither is measured (what was is dropped)
 * and the run says so. */
static void contested(struct co *co, struct mx_conn *c, int rank, const char *addr)
{
	struct rk *k = &co->rk[rank];
	char why[MX_REASON_MAX], pair[MX_REASON_MAX + 16];

	if (!k->contested) {
		k->contested = 1;
		snprintf(why, sizeof(why), "was claimed twice, from %s and from %s: neither is "
			 "measured (another job, or someone else: give every rank --token-file)",
			 k->addr, addr);
		fprintf(stderr, "ncclguard matrix: rank %d %s\n", rank, why);
		if (k->state == R_LIVE) {
			mx_send(k->c.fd, co->timeout, "BYE rank %d %s", rank, why);
			gone(co, rank, "%s", why);
		} else {
			snprintf(k->why, sizeof(k->why), "%s", why);
		}
		co->m->ranks[rank].joined = 0;
		co->m->ranks[rank].host[0] = co->m->ranks[rank].busid[0] = '\0';
		snprintf(pair, sizeof(pair), "rank %d %s", rank, why);
		for (int b = 0; b < co->n; b++)
			if (b != rank && !isnan(co->m->busbw[rank * co->n + b])) {
				ng_mx_set(co->m, rank, b, NAN, NAN);
				ng_mx_fail(co->m, rank, b, pair);
			}
	}
	mx_send(c->fd, co->timeout, "BYE rank %d %s", rank, k->why);
	mx_conn_close(c);
}

/* "HELLO rank world job host busid secret" on a new connection. */
static void hello(struct co *co, struct mx_conn *c, char *line)
{
	char tok[256], host[800], bus[128], secret[NG_MX_TOKEN_MAX + 2], why[128], addr[64];
	int rank, world;

	if (sscanf(line, "HELLO %d %d %255s %799s %127s %129s", &rank, &world, tok, host, bus,
		   secret) != 6) {
		refuse(co, c, "not a matrix rank");
		return;
	}
	if (world != co->n || rank < 0 || rank >= co->n) {
		snprintf(why, sizeof(why), "rank %d of %d, but this run has %d ranks", rank, world,
			 co->n);
		refuse(co, c, why);
		return;
	}
	if (strcmp(tok, *co->token ? co->token : "-")) {
		refuse(co, c, "another job's rank");
		return;
	}
	/* Before the slot is looked at: without the secret, no one can
	 * take a rank's place or spoil it. */
	mx_peer_name(c->fd, addr, sizeof(addr));
	if (!mx_secret_equal(secret, co->secret)) {
		fprintf(stderr, "ncclguard matrix: refused a rank %d from %s: %s\n", rank, addr,
			strcmp(co->secret, "-") ? "wrong or no --token-file secret" :
			"it gives a --token-file secret, this run has none");
		refuse(co, c, "wrong token (--token-file)");
		return;
	}
	/* Whenever it comes: the real rank may come after a stranger. */
	if (co->rk[rank].addr[0]) {
		contested(co, c, rank, addr);
		return;
	}
	if (!co->joining) {
		snprintf(why, sizeof(why), "rank %d joined after the run started without it", rank);
		refuse(co, c, why);
		return;
	}
	snprintf(co->rk[rank].addr, sizeof(co->rk[rank].addr), "%s", addr);
	if (mx_send(c->fd, co->timeout, "WELCOME %d", rank)) {
		mx_conn_close(c);
		snprintf(co->rk[rank].why, sizeof(co->rk[rank].why),
			 "left the run (its connection closed)");
		co->rk[rank].state = R_GONE;
		return;
	}
	co->rk[rank].c = *c;
	co->rk[rank].state = R_LIVE;
	mx_conn_init(c, -1);
	mx_decode(co->m->ranks[rank].host, sizeof(co->m->ranks[rank].host), host);
	mx_decode(co->m->ranks[rank].busid, sizeof(co->m->ranks[rank].busid),
		  strcmp(bus, "-") ? bus : "");
	co->m->ranks[rank].joined = 1;
}

/* A line from a rank that has joined. */
static void rank_line(struct co *co, int r, char *line)
{
	struct rk *k = &co->rk[r];
	char idhex[2 * MX_ID_BYTES + 2], ok[8];
	int round, peer, off = 0;

	if (sscanf(line, "READY %d %d %257s", &round, &peer, idhex) == 3) {
		k->ready = round;
		k->have_id = !mx_unhex(k->id, MX_ID_BYTES, idhex);
	} else if (sscanf(line, "RESULT %d %d %7s %n", &round, &peer, ok, &off) == 3 && off) {
		memset(&k->res, 0, sizeof(k->res));
		k->result = round;
		if (!strcmp(ok, "OK") &&
		    sscanf(line + off, "%lf %lf", &k->res.lat_us, &k->res.busbw) == 2 &&
		    isfinite(k->res.lat_us) && isfinite(k->res.busbw)) {
			k->res.ok = 1;
		} else {
			mx_decode(k->res.reason, sizeof(k->res.reason), line + off);
			if (!k->res.reason[0])
				snprintf(k->res.reason, sizeof(k->res.reason), "failed, no reason given");
			stop_peer(co, r);
		}
	} else if (!strncmp(line, "BROKEN ", 7)) {
		char why[MX_REASON_MAX];

		mx_decode(why, sizeof(why), line + 7);
		gone(co, r, "cannot take part: %s", why);
	}
}

static void accept_all(struct co *co)
{
	for (;;) {
		int fd = accept4(co->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		struct mx_conn *p;

		if (fd < 0)
			return;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		p = realloc(co->pend, (size_t)(co->npend + 1) * sizeof(*p));
		if (!p) {
			close(fd);
			return;
		}
		co->pend = p;
		mx_conn_init(&co->pend[co->npend++], fd);
	}
}

/* WAIT to every rank now and then: a rank tells a coordinator that is
 * busy from one that is gone or stuck. */
static void keepalive(struct co *co)
{
	if (mx_now() < co->next_keepalive)
		return;
	for (int r = 0; r < co->n; r++)
		if (co->rk[r].state == R_LIVE && mx_send(co->rk[r].c.fd, co->timeout, "WAIT"))
			gone(co, r, "left the run (its connection closed)");
	co->next_keepalive = mx_now() + KEEPALIVE_S(co->timeout);
}

/* Read what has come, at most until deadline; returns when done(co). */
static int pump(struct co *co, double deadline, int (*done)(struct co *, int), int arg)
{
	struct pollfd *pf = NULL;
	int ret = 0;

	for (;;) {
		int np = 0, left, npend;
		char line[MX_LINE_MAX];

		if (done(co, arg)) {
			ret = 1;
			break;
		}
		left = (int)((deadline - mx_now()) * 1000);
		if (left <= 0)
			break;
		keepalive(co);
		if (left > (int)((co->next_keepalive - mx_now()) * 1000) + 1)
			left = (int)((co->next_keepalive - mx_now()) * 1000) + 1;
		free(pf);
		pf = calloc((size_t)(1 + co->npend + co->n), sizeof(*pf));
		if (!pf)
			break;
		pf[np++] = (struct pollfd){ .fd = co->lfd, .events = POLLIN };
		for (int i = 0; i < co->npend; i++)
			pf[np++] = (struct pollfd){ .fd = co->pend[i].fd, .events = POLLIN };
		for (int r = 0; r < co->n; r++)
			pf[np++] = (struct pollfd){ .fd = co->rk[r].c.fd, .events = POLLIN };
		if (poll(pf, (nfds_t)np, left < 1000 ? left : 1000) < 0 && errno != EINTR)
			break;
		/* Those accepted now have no entry in pf: their turn comes next. */
		npend = co->npend;
		if (pf[0].revents)
			accept_all(co);
		for (int i = 0; i < npend; i++) {
			struct mx_conn *c = &co->pend[i];

			if (c->fd < 0 || !pf[1 + i].revents)
				continue;
			if (mx_fill(c)) {
				mx_conn_close(c);
				continue;
			}
			if (mx_take_line(c, line, sizeof(line)))
				hello(co, c, line);
		}
		/* Drop the closed and the joined. */
		for (int i = 0; i < co->npend;)
			if (co->pend[i].fd < 0)
				co->pend[i] = co->pend[--co->npend];
			else
				i++;
		for (int r = 0; r < co->n; r++) {
			struct rk *k = &co->rk[r];
			int closed;

			if (k->state != R_LIVE)
				continue;
			closed = mx_fill(&k->c);
			while (k->state == R_LIVE && mx_take_line(&k->c, line, sizeof(line)))
				rank_line(co, r, line);
			if (closed)
				gone(co, r, "left the run (its connection closed)");
		}
	}
	free(pf);
	return ret;
}

static int all_joined(struct co *co, int arg)
{
	(void)arg;
	for (int r = 0; r < co->n; r++)
		if (co->rk[r].state == R_ABSENT)
			return 0;
	return 1;
}

static int all_ready(struct co *co, int round)
{
	for (int r = 0; r < co->n; r++)
		if (co->rk[r].state == R_LIVE && co->rk[r].ready < round)
			return 0;
	return 1;
}

static int all_results(struct co *co, int round)
{
	for (int r = 0; r < co->n; r++)
		if (co->rk[r].state == R_LIVE && co->rk[r].go == round && co->rk[r].result < round)
			return 0;
	return 1;
}

/* "rank R why" (a state) or "rank R: why" (its report), for each side
 * that failed, joined with "; ". */
static void side(char *buf, size_t len, int r, const char *sep, const char *why)
{
	size_t n = strlen(buf);

	snprintf(buf + n, len - n, "%srank %d%s%s", n ? "; " : "", r, sep, why);
}

static void round_start(struct co *co, int round)
{
	for (int a = 0; a < co->n; a++) {
		int b = ng_mx_peer(co->n, round, a);
		struct rk *ka = &co->rk[a], *kb;
		char why[2 * MX_REASON_MAX + 64] = "", hex[2 * MX_ID_BYTES + 1];

		if (b <= a)
			continue;
		kb = &co->rk[b];
		if (ka->state == R_LIVE && kb->state == R_LIVE && !ka->have_id)
			gone(co, a, "sent no unique id for round %d", round);
		if (ka->state == R_LIVE && kb->state == R_LIVE) {
			mx_hex(hex, ka->id, MX_ID_BYTES);
			if (mx_send(ka->c.fd, co->timeout, "GO %d %d %s", round, b, hex))
				gone(co, a, "left the run (its connection closed)");
			if (mx_send(kb->c.fd, co->timeout, "GO %d %d %s", round, a, hex))
				gone(co, b, "left the run (its connection closed)");
			ka->go = kb->go = round;
			continue;
		}
		if (ka->state != R_LIVE)
			side(why, sizeof(why), a, " ", ka->why);
		if (kb->state != R_LIVE)
			side(why, sizeof(why), b, " ", kb->why);
		ng_mx_fail(co->m, a, b, why);
		/* The survivor waits for word of its pair: it is skipped. */
		if (ka->state == R_LIVE)
			mx_send(ka->c.fd, co->timeout, "SKIP %d", round);
		if (kb->state == R_LIVE)
			mx_send(kb->c.fd, co->timeout, "SKIP %d", round);
	}
}

static void round_end(struct co *co, int round)
{
	for (int a = 0; a < co->n; a++) {
		int b = ng_mx_peer(co->n, round, a);
		struct rk *k[2];
		char why[2 * MX_REASON_MAX + 64] = "";
		int ok = 1;

		if (b <= a || co->rk[a].go != round || co->rk[b].go != round)
			continue;
		k[0] = &co->rk[a];
		k[1] = &co->rk[b];
		for (int s = 0; s < 2; s++) {
			int r = s ? b : a;

			if (k[s]->state != R_LIVE || k[s]->result != round) {
				side(why, sizeof(why), r, " ", k[s]->state == R_LIVE ? "gave no result" :
				     k[s]->why);
				ok = 0;
			} else if (!k[s]->res.ok) {
				side(why, sizeof(why), r, ": ", k[s]->res.reason);
				ok = 0;
			}
		}
		/* The lower rank's figures: both sides timed the same calls. */
		if (ok)
			ng_mx_set(co->m, a, b, k[0]->res.lat_us, k[0]->res.busbw);
		else
			ng_mx_fail(co->m, a, b, why);
	}
}

int mx_coord_run(int listen_fd, int n, const char *token, const struct ng_mx_opts *o,
		 struct ng_mx *m)
{
	struct co co = { .n = n, .lfd = listen_fd, .token = token, .timeout = o->timeout_s,
			 .m = m, .joining = 1 };
	int ret = -1;

	if (ng_mx_alloc(m, n))
		return -1;
	mx_secret_field(co.secret, sizeof(co.secret), o->secret);
	m->bytes = o->bytes;
	m->iters = o->iters;
	m->timeout_s = o->timeout_s;
	m->expect_gbps = o->expect_gbps;
	co.rk = calloc((size_t)n, sizeof(*co.rk));
	if (!co.rk)
		goto out;
	for (int r = 0; r < n; r++) {
		mx_conn_init(&co.rk[r].c, -1);
		co.rk[r].ready = co.rk[r].go = co.rk[r].result = -1;
	}
	pump(&co, mx_now() + o->timeout_s, all_joined, 0);
	co.joining = 0;
	for (int r = 0; r < n; r++)
		if (co.rk[r].state == R_ABSENT)
			snprintf(co.rk[r].why, sizeof(co.rk[r].why),
				 "never joined (no connection within %g s)", o->timeout_s);
	for (int round = 0; round < ng_mx_rounds(n); round++) {
		if (!pump(&co, mx_now() + READY_S(o->timeout_s), all_ready, round))
			for (int r = 0; r < n; r++)
				if (co.rk[r].state == R_LIVE && co.rk[r].ready < round)
					gone(&co, r, "did not reach round %d within %g s", round + 1,
					     READY_S(o->timeout_s));
		round_start(&co, round);
		if (!pump(&co, mx_now() + RESULT_S(o->timeout_s), all_results, round))
			for (int r = 0; r < n; r++)
				if (co.rk[r].state == R_LIVE && co.rk[r].go == round &&
				    co.rk[r].result < round)
					gone(&co, r, "gave no result in round %d within %g s "
					     "(stuck in NCCL or CUDA?)", round + 1,
					     RESULT_S(o->timeout_s));
		round_end(&co, round);
	}
	for (int r = 0; r < n; r++)
		if (co.rk[r].state == R_LIVE)
			mx_send(co.rk[r].c.fd, co.timeout, "DONE %d", m->nfailed);
	ret = 0;
out:
	if (co.rk)
		for (int r = 0; r < n; r++)
			mx_conn_close(&co.rk[r].c);
	for (int i = 0; i < co.npend; i++)
		mx_conn_close(&co.pend[i]);
	free(co.pend);
	free(co.rk);
	return ret;
}
