/*
 * The recording session of `ncclguard run`, through liblttng-ctl.
 *
 * Buffers are per UID: they live in the consumer daemon's shared memory,
 * not in the traced process, so every event a rank wrote before a SIGKILL
 * is still flushed at stop, and a job of many short-lived processes shares
 * one set of buffers.  The channel discards when full (tracing never blocks
 * the job); what it dropped is read back after stop and reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lttng/lttng.h>

#include "session.h"

#define SESSIOND_WAIT_MS	10000
/* Buffer memory per CPU: a share of this budget, within the bounds below.
 * LTTng allocates it for every possible CPU at session start. */
#define BUF_BUDGET		(256ull << 20)
#define BUF_PER_CPU_MIN		(1ull << 20)
#define BUF_PER_CPU_MAX		(4ull << 20)
#define BUF_NUM_SUBBUF		4

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The daemon must not keep our pipes (a caller's $(...) would wait for it). */
static void close_inherited_fds(void)
{
#ifdef SYS_close_range
	if (!syscall(SYS_close_range, 3u, ~0u, 0u))
		return;
#endif
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
}

int ng_sessiond_ensure(int *spawned)
{
	int status, waited;
	pid_t pid;

	*spawned = 0;
	if (lttng_session_daemon_alive() == 1)
		return 0;

	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "ncclguard: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		/* Its own messages (a missing consumerd, a bad config) still
		 * reach our stderr until it daemonizes. */
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			if (null > STDERR_FILENO)
				close(null);
		}
		close_inherited_fds();
		/* --no-kernel: we only record user space, and as root this
		 * skips loading kernel modules. */
		execlp("lttng-sessiond", "lttng-sessiond", "--daemonize", "--no-kernel",
		       (char *)NULL);
		_exit(127);
	}
	/* With --daemonize the first process exits once the daemon is ready. */
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "ncclguard: waitpid: %s\n", strerror(errno));
			return -1;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		fprintf(stderr, "ncclguard: lttng-sessiond not found in PATH\n");
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "ncclguard: lttng-sessiond --daemonize failed (status %d)\n",
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		return -1;
	}
	for (waited = 0; waited < SESSIOND_WAIT_MS; waited += 50) {
		if (lttng_session_daemon_alive() == 1) {
			*spawned = 1;
			return 0;
		}
		sleep_ms(50);
	}
	fprintf(stderr, "ncclguard: lttng-sessiond started but does not answer after %d s\n",
		SESSIOND_WAIT_MS / 1000);
	return -1;
}

static uint64_t pow2_floor(uint64_t v)
{
	uint64_t p = 1;

	while (p <= v / 2)
		p *= 2;
	return p;
}

static uint64_t subbuf_size(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t per_cpu;

	if (ncpu < 1)
		ncpu = 1;
	per_cpu = BUF_BUDGET / (uint64_t)ncpu;
	if (per_cpu < BUF_PER_CPU_MIN)
		per_cpu = BUF_PER_CPU_MIN;
	if (per_cpu > BUF_PER_CPU_MAX)
		per_cpu = BUF_PER_CPU_MAX;
	return pow2_floor(per_cpu / BUF_NUM_SUBBUF);
}

static int setup(struct ng_session *s, struct lttng_handle *h, struct lttng_domain *dom)
{
	static const enum lttng_event_context_type ctxs[] = {
		LTTNG_EVENT_CONTEXT_VPID, LTTNG_EVENT_CONTEXT_VTID,
		LTTNG_EVENT_CONTEXT_PROCNAME,
	};
	struct lttng_channel *chan = NULL;
	struct lttng_event *ev = NULL;
	const char *what;
	int ret;

	chan = lttng_channel_create(dom);
	if (!chan) {
		what = "channel";
		ret = -LTTNG_ERR_NOMEM;
		goto out;
	}
	snprintf(chan->name, sizeof(chan->name), "%s", NG_SESSION_CHANNEL);
	chan->attr.overwrite = 0;
	chan->attr.subbuf_size = subbuf_size();
	chan->attr.num_subbuf = BUF_NUM_SUBBUF;
	what = "enable channel";
	ret = lttng_enable_channel(h, chan);
	if (ret < 0)
		goto out;

	for (size_t i = 0; i < sizeof(ctxs) / sizeof(*ctxs); i++) {
		struct lttng_event_context ctx;

		memset(&ctx, 0, sizeof(ctx));
		ctx.ctx = ctxs[i];
		what = "add context";
		ret = lttng_add_context(h, &ctx, NULL, NG_SESSION_CHANNEL);
		if (ret < 0)
			goto out;
	}

	ev = lttng_event_create();
	if (!ev) {
		what = "event";
		ret = -LTTNG_ERR_NOMEM;
		goto out;
	}
	snprintf(ev->name, sizeof(ev->name), "ncclguard:*");
	ev->type = LTTNG_EVENT_TRACEPOINT;
	ev->loglevel_type = LTTNG_EVENT_LOGLEVEL_ALL;
	what = "enable ncclguard:*";
	ret = lttng_enable_event_with_exclusions(h, ev, NG_SESSION_CHANNEL, NULL, 0, NULL);
	if (ret < 0)
		goto out;

	what = "start";
	ret = lttng_start_tracing(s->name);
	if (ret < 0)
		goto out;
	s->started = 1;
	ret = 0;
out:
	if (ret < 0)
		fprintf(stderr, "ncclguard: lttng session %s: %s: %s\n", s->name, what,
			lttng_strerror(ret));
	lttng_event_destroy(ev);
	lttng_channel_destroy(chan);
	return ret < 0 ? -1 : 0;
}

static void domain_init(struct lttng_domain *dom)
{
	memset(dom, 0, sizeof(*dom));
	dom->type = LTTNG_DOMAIN_UST;
	dom->buf_type = LTTNG_BUFFER_PER_UID;
}

int ng_session_start(struct ng_session *s, const char *outdir)
{
	struct lttng_domain dom;
	struct lttng_handle *h = NULL;
	char url[PATH_MAX + 8];
	int ret;

	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "ncclguard-%ld-%ld", (long)getpid(),
		 (long)time(NULL));
	if (snprintf(s->outdir, sizeof(s->outdir), "%s", outdir) >= (int)sizeof(s->outdir) ||
	    snprintf(url, sizeof(url), "file://%s", outdir) >= (int)sizeof(url)) {
		fprintf(stderr, "ncclguard: output path too long\n");
		return -1;
	}
	ret = lttng_create_session(s->name, url);
	if (ret < 0) {
		fprintf(stderr, "ncclguard: lttng create session %s: %s\n", s->name,
			lttng_strerror(ret));
		return -1;
	}
	s->created = 1;

	domain_init(&dom);
	h = lttng_create_handle(s->name, &dom);
	if (!h) {
		fprintf(stderr, "ncclguard: lttng session %s: no handle\n", s->name);
		ret = -1;
		goto out;
	}
	ret = setup(s, h, &dom);
out:
	lttng_destroy_handle(h);
	if (ret) {
		ng_session_finish(s);
		return -1;
	}
	return 0;
}

/* Read after stop (counts are final) and before destroy (they go with it). */
static int read_lost(struct ng_session *s)
{
	struct lttng_domain dom;
	struct lttng_handle *h;
	struct lttng_channel *chans = NULL;
	int n, ret = 0;

	domain_init(&dom);
	h = lttng_create_handle(s->name, &dom);
	if (!h)
		return -1;
	n = lttng_list_channels(h, &chans);
	if (n < 0) {
		fprintf(stderr, "ncclguard: lttng session %s: list channels: %s\n", s->name,
			lttng_strerror(n));
		ret = -1;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		uint64_t d = 0, p = 0;

		if (lttng_channel_get_discarded_event_count(&chans[i], &d) < 0 ||
		    lttng_channel_get_lost_packet_count(&chans[i], &p) < 0) {
			ret = -1;
			continue;
		}
		s->discarded += d;
		s->lost_packets += p;
	}
out:
	free(chans);
	lttng_destroy_handle(h);
	return ret;
}

int ng_session_finish(struct ng_session *s)
{
	int ret, err = 0;

	if (!s->created)
		return 0;
	if (s->started) {
		/* Waits until the consumer has written every buffer out. */
		ret = lttng_stop_tracing(s->name);
		if (ret < 0) {
			fprintf(stderr, "ncclguard: lttng stop %s: %s\n", s->name,
				lttng_strerror(ret));
			err = -1;
		}
		s->started = 0;
		if (read_lost(s))
			err = -1;
	}
	ret = lttng_destroy_session(s->name);
	if (ret < 0) {
		fprintf(stderr, "ncclguard: lttng destroy %s: %s\n", s->name,
			lttng_strerror(ret));
		err = -1;
	}
	s->created = 0;
	return err;
}
