/*
 * One rank's part of the run, and the two ways of starting it: as a rank
 * of a job (rank 0 also coordinates, in a thread, and writes the
 * outputs), or as --local's parent, which coordinates and starts N copies
 * of this command as the ranks.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "esc.h"
#include "mx_priv.h"

/* --local's secret for its ranks, when no --token-file gives one
 * (internal, as NCCLGUARD_MATRIX_CONNECT). */
#define LOCAL_KEY "NCCLGUARD_MATRIX_LOCAL_SECRET"

static void host_name(char *buf, size_t len)
{
	if (gethostname(buf, len - 1))
		snprintf(buf, len, "unknown");
	buf[len - 1] = '\0';
}

/* The coordinator's "ABORT round" while a pair runs: its peer has
 * failed or gone.  The socket is looked at every 10 ms at most; its
 * WAITs are dropped, or they would fill the buffer. */
struct stop_check {
	struct mx_conn *c;
	int round;
	double next;
};

static int stop_asked(void *arg)
{
	struct stop_check *s = arg;
	char line[MX_LINE_MAX];
	int r;

	if (mx_now() < s->next)
		return 0;
	s->next = mx_now() + 0.01;
	mx_fill(s->c);
	while (mx_take_prefixed(s->c, "WAIT", line, sizeof(line)))
		;
	while (mx_take_prefixed(s->c, "ABORT ", line, sizeof(line)))
		if (sscanf(line, "ABORT %d", &r) == 1 && r == s->round)
			return 1;
	return 0;
}

/* The next line that is neither a WAIT nor a late ABORT (one for a pair
 * already done): 1; 0 when the coordinator said nothing for silence
 * seconds or nothing else until deadline; -1 when it closed. */
static int next_line(struct mx_conn *c, char *line, size_t len, double silence,
		     double deadline)
{
	int got;

	for (;;) {
		double until = mx_now() + silence;

		got = mx_recv_line(c, line, len, until < deadline ? until : deadline);
		if (got != 1 || (strcmp(line, "WAIT") && strncmp(line, "ABORT ", 6)))
			return got;
	}
}

/* The coordinator's own words, which may come from anyone who listens
 * where it should. */
static void said(int rank, const char *what, const char *line)
{
	char buf[2 * MX_LINE_MAX];

	fprintf(stderr, "ncclguard matrix: rank %d: %s%s\n", rank, what,
		ng_esc_str(buf, sizeof(buf), line));
}

/* The rank's side of the protocol (coord.c).  Returns the exit status. */
static int client(const struct ng_mx_opts *o, const struct mx_self *me, const char *token,
		  int fd)
{
	char err[MX_REASON_MAX], enc[3 * MX_REASON_MAX], busid[64] = "", host[256], henc[800];
	char line[MX_LINE_MAX], hex[2 * MX_ID_BYTES + 2], bus_enc[200];
	char secret[NG_MX_TOKEN_MAX + 2];
	double wait = CLIENT_WAIT_S(o->timeout_s), silence = SILENCE_S(o->timeout_s);
	struct mx_conn c;
	struct mx_lib *l;
	int ret = 1, nfailed, got = -1;

	mx_conn_init(&c, fd);
	l = mx_lib_open(me->rank != 0, err, sizeof(err));
	if (l && mx_lib_device(l, me->local, o->bytes, busid, sizeof(busid), err, sizeof(err))) {
		mx_lib_close(l);
		l = NULL;
	}
	host_name(host, sizeof(host));
	mx_encode(henc, sizeof(henc), host);
	mx_encode(bus_enc, sizeof(bus_enc), busid);
	mx_secret_field(secret, sizeof(secret), o->secret);
	if (mx_send(fd, o->timeout_s, "HELLO %d %d %s %s %s %s", me->rank, me->world,
		    *token ? token : "-", henc, *bus_enc ? bus_enc : "-", secret))
		goto lost;
	/* Taken in, or refused; a silent listener is no coordinator. */
	got = next_line(&c, line, sizeof(line), silence, mx_now() + silence);
	if (got <= 0)
		goto lost;
	if (!strncmp(line, "BYE ", 4)) {
		said(me->rank, "refused: ", line + 4);
		goto out;
	}
	if (strncmp(line, "WELCOME ", 8)) {
		said(me->rank, "not a matrix coordinator: it said ", line);
		goto out;
	}
	if (!l) {
		/* Joined all the same, so that the others learn why. */
		fprintf(stderr, "ncclguard matrix: rank %d: %s\n", me->rank, err);
		mx_encode(enc, sizeof(enc), err);
		mx_send(fd, o->timeout_s, "BROKEN %s", enc);
		goto out;
	}
	for (int round = 0; round < ng_mx_rounds(me->world); round++) {
		int peer = ng_mx_peer(me->world, round, me->rank), gr, gp;
		unsigned char id[MX_ID_BYTES];
		struct mx_pair_result res;
		struct stop_check stop;

		strcpy(hex, "-");
		if (peer >= 0 && me->rank < peer) {
			if (mx_lib_new_id(l, id, err, sizeof(err))) {
				fprintf(stderr, "ncclguard matrix: rank %d: %s\n", me->rank, err);
				mx_encode(enc, sizeof(enc), err);
				mx_send(fd, o->timeout_s, "BROKEN %s", enc);
				goto out;
			}
			mx_hex(hex, id, MX_ID_BYTES);
		}
		if (mx_send(fd, o->timeout_s, "READY %d %d %s", round, peer, hex))
			goto lost;
		if (peer < 0)
			continue;	/* a bye: nothing comes back */
		got = next_line(&c, line, sizeof(line), silence, mx_now() + wait);
		if (got <= 0)
			goto lost;
		if (sscanf(line, "SKIP %d", &gr) == 1)
			continue;
		if (!strncmp(line, "BYE ", 4)) {
			said(me->rank, "refused: ", line + 4);
			goto out;
		}
		if (sscanf(line, "GO %d %d %257s", &gr, &gp, hex) != 3 || gr != round || gp != peer ||
		    mx_unhex(id, MX_ID_BYTES, hex)) {
			snprintf(err, sizeof(err), "in round %d, unexpected: ", round + 1);
			line[80] = '\0';
			said(me->rank, err, line);
			goto out;
		}
		stop.c = &c;
		stop.round = round;
		stop.next = 0;
		mx_measure(l, id, me->rank < peer ? 0 : 1, o, stop_asked, &stop, &res);
		if (res.ok) {
			got = mx_send(fd, o->timeout_s, "RESULT %d %d OK %.9g %.9g", round, peer,
				      res.lat_us, res.busbw);
		} else {
			mx_encode(enc, sizeof(enc), res.reason);
			got = mx_send(fd, o->timeout_s, "RESULT %d %d FAIL %s", round, peer, enc);
		}
		if (got)
			goto lost;
	}
	got = next_line(&c, line, sizeof(line), silence, mx_now() + wait);
	if (got <= 0)
		goto lost;
	if (!strncmp(line, "BYE ", 4)) {
		said(me->rank, "refused: ", line + 4);
		goto out;
	}
	if (sscanf(line, "DONE %d", &nfailed) == 1)
		ret = nfailed ? 1 : 0;
	goto out;
lost:
	if (got == 0)
		fprintf(stderr, "ncclguard matrix: rank %d: the coordinator stopped answering "
			"(nothing for %g s)\n", me->rank, silence);
	else
		fprintf(stderr, "ncclguard matrix: rank %d: the coordinator went away\n", me->rank);
out:
	mx_conn_close(&c);
	mx_lib_close(l);
	return ret;
}

static int report(const struct ng_mx_opts *o, struct ng_mx *m)
{
	int ret = m->nfailed ? 1 : 0;

	if (ng_mx_classify(m)) {
		fprintf(stderr, "ncclguard matrix: out of memory\n");
		return 1;
	}
	ng_mx_write_text(stdout, m);
	if (ng_mx_write_files(o->outdir, m))
		ret = 1;
	else
		printf("wrote %s/matrix.json and %s/matrix.html\n", o->outdir, o->outdir);
	fflush(stdout);
	return ret;
}

struct coord_arg {
	int lfd, n;
	const char *token;
	const struct ng_mx_opts *o;
	struct ng_mx *m;
	int ret;
};

static void *coord_thread(void *p)
{
	struct coord_arg *a = p;

	a->ret = mx_coord_run(a->lfd, a->n, a->token, a->o, a->m);
	return NULL;
}

int ng_mx_run_rank(const struct ng_mx_opts *opts)
{
	struct ng_mx_opts own = *opts, *o = &own;
	const char *key = getenv(LOCAL_KEY);
	char secret[NG_MX_TOKEN_MAX + 1];
	struct ng_mx m = { 0 };
	struct coord_arg ca = { .lfd = -1, .o = o, .m = &m, .ret = -1 };
	struct mx_self me;
	struct mx_addr a;
	char err[4400], token[256], host[256];
	pthread_t th;
	int fd, port = 0, ret = 1, started = 0;

	/* --local's own secret, kept from what this rank starts. */
	if (key && !o->secret && getenv("NCCLGUARD_MATRIX_CONNECT")) {
		snprintf(secret, sizeof(secret), "%s", key);
		o->secret = secret;
	}
	unsetenv(LOCAL_KEY);
	if (mx_launcher(&me)) {
		fprintf(stderr, "ncclguard matrix: no rank: start it as every rank of a job "
			"(torchrun --no-python, srun, mpirun) or give --local N\n");
		return 2;
	}
	if (me.world < 2) {
		fprintf(stderr, "ncclguard matrix: a job of 1 rank: matrix needs at least 2 ranks "
			"(it measures pairs)\n");
		return 2;
	}
	if (me.world > NG_MX_MAX_RANKS) {
		fprintf(stderr, "ncclguard matrix: %d ranks: at most %d\n", me.world,
			NG_MX_MAX_RANKS);
		return 2;
	}
	if (me.local < 0 && me.world > 1)
		fprintf(stderr, "ncclguard matrix: rank %d: the launcher gives no local rank: "
			"using GPU 0\n", me.rank);
	mx_job_token(token, sizeof(token));
	if (mx_addr_pick(o, &me, &a, err, sizeof(err)))
		goto fail;
	if (a.serve) {
		ca.lfd = mx_listen(a.via_file ? 0 : a.port, 0, &port, err, sizeof(err));
		if (ca.lfd < 0)
			goto fail;
		host_name(host, sizeof(host));
		if (a.via_file && mx_file_publish(&a, token, me.world, host, port, err, sizeof(err)))
			goto fail;
		ca.n = me.world;
		ca.token = token;
		if ((errno = pthread_create(&th, NULL, coord_thread, &ca))) {
			snprintf(err, sizeof(err), "cannot start the coordinator: %s", strerror(errno));
			goto fail;
		}
		started = 1;
		fd = mx_connect("127.0.0.1", port, mx_now() + o->timeout_s, err, sizeof(err));
	} else if (a.via_file) {
		fd = mx_file_connect(&a, token, me.world, mx_now() + o->timeout_s, err, sizeof(err));
	} else {
		fd = mx_connect(a.host, a.port, mx_now() + o->timeout_s, err, sizeof(err));
	}
	if (fd < 0)
		goto fail;
	ret = client(o, &me, token, fd);
	if (!started)
		goto out;
	pthread_join(th, NULL);
	started = 0;
	if (a.via_file)
		unlink(a.file);
	if (ca.ret) {
		fprintf(stderr, "ncclguard matrix: out of memory\n");
		ret = 1;
	} else if (report(o, &m)) {
		ret = 1;
	}
	goto out;
fail:
	fprintf(stderr, "ncclguard matrix: rank %d: %s\n", me.rank, err);
	ret = 1;
out:
	/* A coordinator still running waits for ranks that never come. */
	if (started) {
		pthread_join(th, NULL);
		if (a.via_file)
			unlink(a.file);
	}
	if (ca.lfd >= 0)
		close(ca.lfd);
	ng_mx_free(&m);
	return ret;
}

/* Children that outlive the run by grace seconds (stuck in NCCL) are
 * stopped: TERM, then KILL 2 s later. */
static void reap(pid_t *pids, int n, double grace)
{
	double end = mx_now() + grace;
	int left = n, sig = 0;

	while (left) {
		left = 0;
		for (int i = 0; i < n; i++) {
			int st;

			if (pids[i] <= 0)
				continue;
			if (waitpid(pids[i], &st, WNOHANG) == pids[i]) {
				if (WIFSIGNALED(st) && WTERMSIG(st) != SIGTERM && WTERMSIG(st) != SIGKILL)
					fprintf(stderr, "ncclguard matrix: rank %d died of signal %d\n", i,
						WTERMSIG(st));
				pids[i] = 0;
				continue;
			}
			left++;
		}
		if (!left)
			break;
		if (mx_now() > end) {
			sig = sig ? SIGKILL : SIGTERM;
			for (int i = 0; i < n; i++)
				if (pids[i] > 0)
					kill(pids[i], sig);
			end = mx_now() + 2;
		}
		mx_sleep(0.02);
	}
}

/* A fresh secret for --local's ranks when none is given: the loopback
 * port is open to every local user. */
static int local_secret(char *buf, size_t len)
{
	unsigned char raw[24];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t r = getrandom(raw + got, sizeof(raw) - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	if (len < 2 * sizeof(raw) + 1)
		return -1;
	mx_hex(buf, raw, sizeof(raw));
	return 0;
}

int ng_mx_run_local(const struct ng_mx_opts *opts, int n, char *const child_argv[])
{
	struct ng_mx_opts own = *opts, *o = &own;
	struct ng_mx m = { 0 };
	char err[256], token[256], v[64], secret[NG_MX_TOKEN_MAX + 1];
	pid_t *pids;
	int lfd, port, ret = 1;

	if (n < 1 || n > NG_MX_MAX_RANKS) {
		fprintf(stderr, "ncclguard matrix: --local %d: 1 to %d ranks\n", n, NG_MX_MAX_RANKS);
		return 2;
	}
	pids = calloc((size_t)n, sizeof(*pids));
	if (!pids) {
		fprintf(stderr, "ncclguard matrix: out of memory\n");
		return 1;
	}
	lfd = mx_listen(0, 1, &port, err, sizeof(err));
	if (lfd < 0) {
		fprintf(stderr, "ncclguard matrix: %s\n", err);
		free(pids);
		return 1;
	}
	mx_job_token(token, sizeof(token));
	if (!o->secret) {
		if (local_secret(secret, sizeof(secret))) {
			fprintf(stderr, "ncclguard matrix: no random bytes for the ranks' secret: %s\n",
				strerror(errno));
			close(lfd);
			free(pids);
			return 1;
		}
		o->secret = secret;
	}
	fflush(NULL);
	for (int i = 0; i < n; i++) {
		pid_t p = fork();

		if (p < 0) {
			fprintf(stderr, "ncclguard matrix: fork: %s\n", strerror(errno));
			break;	/* those never started are ranks that never join */
		}
		if (p == 0) {
			snprintf(v, sizeof(v), "127.0.0.1:%d", port);
			setenv("NCCLGUARD_MATRIX_CONNECT", v, 1);
			if (!opts->secret)
				setenv(LOCAL_KEY, o->secret, 1);
			snprintf(v, sizeof(v), "%d", i);
			setenv("RANK", v, 1);
			setenv("LOCAL_RANK", v, 1);
			snprintf(v, sizeof(v), "%d", n);
			setenv("WORLD_SIZE", v, 1);
			setenv("LOCAL_WORLD_SIZE", v, 1);
			execv("/proc/self/exe", child_argv);
			fprintf(stderr, "ncclguard matrix: cannot run rank %d: %s\n", i, strerror(errno));
			_exit(127);
		}
		pids[i] = p;
	}
	if (mx_coord_run(lfd, n, token, o, &m))
		fprintf(stderr, "ncclguard matrix: out of memory\n");
	else
		ret = report(o, &m);
	close(lfd);
	/* The ranks have their DONE: they end at once, unless stuck. */
	reap(pids, n, 2);
	free(pids);
	ng_mx_free(&m);
	return ret;
}
