/*
 * The recording session of `ncclguard run`, through liblttng-ctl.
 *
 * Buffers are per UID: they live in the consumer daemon's shared memory,
 * not in the traced process, so every event a rank wrote before a SIGKILL
 * is still flushed at stop, and a job of many short-lived processes shares
 * one set of buffers.  The channel discards when full (tracing never blocks
 * the job); what it dropped is read back after stop and reported.
 *
 * A full disk: the consumer writes the metadata when the first process of
 * the user registers, and each packet when its sub-buffer is full, so a
 * disk that fills mid-run cuts the last packet of a stream (measured on a
 * 2 MiB tmpfs) and, if no process had registered yet, leaves the metadata
 * empty, which makes the whole trace unreadable; `lttng regenerate
 * metadata` does not bring it back once the consumer hit ENOSPC.  Hence
 * ng_session_prime (metadata first) and ng_trace_repair (whole packets).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
/* How long ng_session_prime waits for the metadata to reach the disk. */
#define PRIME_WAIT_MS		3000
/* How long a destroy may wait for the daemon once recording has stopped. */
#define DESTROY_WAIT_MS		15000
/* LTTng's packet index (CTF index 1.x): a header, then one entry per
 * packet, big-endian, starting with its offset and size in bits. */
#define IDX_MAGIC		0xC1F1DCC1u
#define IDX_HEADER		16
#define IDX_ENTRY_MIN		16
/* A packet of lttng-ust 2.x, in the tracer's byte order: magic, uuid[16],
 * stream_id, stream_instance_id, then the context: timestamp_begin,
 * timestamp_end, content_size, packet_size (bits), ... */
#define CTF_MAGIC		0xC1FC1FC1u
#define PKT_HEADER		64
#define PKT_CONTENT_AT		48
#define PKT_SIZE_AT		56
/* The header and context alone (84 bytes, 80 from a 32-bit tracer): the
 * content of a packet the consumer flushed with no event in it. */
#define PKT_EMPTY_BITS		(84 * 8)

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
	int status, waited, failed;
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
	failed = !WIFEXITED(status) || WEXITSTATUS(status);
	/* A failure may be another run's daemon starting at the same time
	 * (it holds the lock): that one will do. */
	for (waited = 0; waited < SESSIOND_WAIT_MS; waited += 50) {
		if (lttng_session_daemon_alive() == 1) {
			*spawned = !failed;
			return 0;
		}
		sleep_ms(50);
	}
	if (failed) {
		fprintf(stderr, "ncclguard: lttng-sessiond --daemonize failed (status %d)\n",
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		return -1;
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

static int setup(struct ng_session *s, struct lttng_handle *h, struct lttng_domain *dom,
		 uint64_t job)
{
	static const enum lttng_event_context_type ctxs[] = {
		LTTNG_EVENT_CONTEXT_VPID, LTTNG_EVENT_CONTEXT_VTID,
		LTTNG_EVENT_CONTEXT_PROCNAME,
	};
	struct lttng_channel *chan = NULL;
	struct lttng_event *ev = NULL;
	char filter[64];
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
	/* Another job of this user on this host writes the same events to
	 * its own session: the filter keeps them out of ours.  The filter
	 * runs in the traced process, before the event is written. */
	snprintf(filter, sizeof(filter), "job == 0x%016llx", (unsigned long long)job);
	what = "enable ncclguard:*";
	ret = lttng_enable_event_with_exclusions(h, ev, NG_SESSION_CHANNEL, job ? filter : NULL,
						 0, NULL);
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

/* ncclguard-<pid>-<time>-<job>: the pid and time keep names unique on
 * the daemon; the job lets a relay's reader pick a job's sessions. */
static void session_name(struct ng_session *s, const char *job_id)
{
	size_t n;

	n = (size_t)snprintf(s->name, sizeof(s->name), "ncclguard-%ld-%ld", (long)getpid(),
			     (long)time(NULL));
	if (!job_id || !*job_id || n + 2 >= sizeof(s->name))
		return;
	s->name[n++] = '-';
	/* LTTng makes a folder of the name on the relay's side. */
	for (; *job_id && n + 1 < sizeof(s->name) && n < 128; job_id++) {
		char c = *job_id;
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';

		s->name[n++] = ok ? c : '_';
	}
	s->name[n] = '\0';
}

int ng_session_start(struct ng_session *s, const char *outdir, const char *relay,
		     const char *job_id, uint64_t job)
{
	struct lttng_domain dom;
	struct lttng_handle *h = NULL;
	char url[PATH_MAX + 8];
	int ret;

	memset(s, 0, sizeof(*s));
	session_name(s, job_id);
	if (relay) {
		/* The daemon connects to the relay here: a relay that does
		 * not answer fails the creation. */
		ret = lttng_create_session_live(s->name, relay, NG_SESSION_LIVE_TIMER_US);
	} else {
		if (snprintf(s->outdir, sizeof(s->outdir), "%s", outdir) >= (int)sizeof(s->outdir) ||
		    snprintf(url, sizeof(url), "file://%s", outdir) >= (int)sizeof(url)) {
			fprintf(stderr, "ncclguard: output path too long\n");
			return -1;
		}
		ret = lttng_create_session(s->name, url);
	}
	if (ret < 0) {
		fprintf(stderr, "ncclguard: lttng create session %s%s%s: %s\n", s->name,
			relay ? " to " : "", relay ? relay : "", lttng_strerror(ret));
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
	ret = setup(s, h, &dom, job);
out:
	lttng_destroy_handle(h);
	if (ret) {
		ng_session_finish(s);
		return -1;
	}
	return 0;
}

void ng_session_adopt(struct ng_session *s, const char *name, const char *outdir)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->outdir, sizeof(s->outdir), "%s", outdir ? outdir : "");
	s->created = 1;
	s->started = 1;
}

#define NG_SESSION_COUNT_MAX (1ull << 48)

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
		/* A channel whose buffers' owner was killed has been seen to
		 * report 2^63 + n: say "unknown" rather than that. */
		if (d >= NG_SESSION_COUNT_MAX || p >= NG_SESSION_COUNT_MAX) {
			s->lost_unknown = 1;
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

static void failed(struct ng_session *s, const char *what, int ret)
{
	fprintf(stderr, "ncclguard: lttng %s %s: %s\n", what, s->name, lttng_strerror(ret));
	if (!s->error[0])
		snprintf(s->error, sizeof(s->error), "%s: %s", what, lttng_strerror(ret));
}

/*
 * Destroys the session, waiting a bounded time for the daemon to confirm.
 * The stop before has already waited for every buffer to be written out;
 * a session daemon has been seen never to confirm the destruction of a
 * session one of whose processes was killed, and a run must not hang on
 * that: the trace on disk is complete, so say so and go on.
 */
static int destroy(struct ng_session *s)
{
	struct lttng_destruction_handle *h = NULL;
	enum lttng_destruction_handle_status st;
	enum lttng_error_code code;
	int err = 0;

	code = lttng_destroy_session_ext(s->name, &h);
	if (code != LTTNG_OK) {
		failed(s, "destroy", -(int)code);
		return -1;
	}
	st = lttng_destruction_handle_wait_for_completion(h, DESTROY_WAIT_MS);
	if (st == LTTNG_DESTRUCTION_HANDLE_STATUS_TIMEOUT) {
		fprintf(stderr, "ncclguard: lttng-sessiond has not confirmed the end of session %s "
			"after %d s; the trace was written out when recording stopped\n",
			s->name, DESTROY_WAIT_MS / 1000);
	} else if (st != LTTNG_DESTRUCTION_HANDLE_STATUS_COMPLETED) {
		fprintf(stderr, "ncclguard: lttng destroy %s: no answer from the session daemon\n",
			s->name);
		err = -1;
	} else if (lttng_destruction_handle_get_result(h, &code) ==
			   LTTNG_DESTRUCTION_HANDLE_STATUS_OK && code != LTTNG_OK) {
		failed(s, "destroy", -(int)code);
		err = -1;
	}
	lttng_destruction_handle_destroy(h);
	return err;
}

int ng_session_finish(struct ng_session *s)
{
	int ret, err = 0;

	if (!s->created)
		return 0;
	if (s->started) {
		/* Waits until the consumer has written every buffer out.  A
		 * stop already done (by a fork of ours that died) is no error. */
		ret = lttng_stop_tracing(s->name);
		if (ret == -LTTNG_ERR_SESS_NOT_FOUND) {
			fprintf(stderr, "ncclguard: lttng session %s was destroyed by someone else\n",
				s->name);
			s->started = s->created = 0;
			return 0;
		}
		if (ret < 0 && ret != -LTTNG_ERR_TRACE_ALREADY_STOPPED) {
			failed(s, "stop", ret);
			err = -1;
		}
		s->started = 0;
		if (read_lost(s))
			err = -1;
	}
	if (destroy(s))
		err = -1;
	s->created = 0;
	return err;
}

int ng_session_exists(const struct ng_session *s)
{
	struct lttng_session *list = NULL;
	int n, found = 0;

	n = lttng_list_sessions(&list);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		if (!strcmp(list[i].name, s->name)) {
			found = 1;
			break;
		}
	}
	free(list);
	return found;
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : st.st_size;
}

int ng_session_prime(const struct ng_session *s, const char *tp)
{
	char meta[PATH_MAX + 64];
	int status, waited;
	pid_t pid;

	if (snprintf(meta, sizeof(meta), "%s/ust/uid/%u/%zu-bit/metadata", s->outdir,
		     (unsigned)getuid(), sizeof(long) * 8) >= (int)sizeof(meta))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "ncclguard: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		/* liblttng-ust's constructor registers us and returns once the
		 * session has set up this user's buffers; we emit nothing. */
		setenv("LTTNG_UST_WITHOUT_BADDR_STATEDUMP", "1", 1);
		setenv("LTTNG_UST_WITHOUT_PROCNAME_STATEDUMP", "1", 1);
		if (!getenv("LTTNG_UST_REGISTER_TIMEOUT"))
			setenv("LTTNG_UST_REGISTER_TIMEOUT", "10000", 1);
		if (!dlopen(tp, RTLD_NOW | RTLD_LOCAL)) {
			fprintf(stderr, "ncclguard: %s\n", dlerror());
			_exit(1);
		}
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "ncclguard: waitpid: %s\n", strerror(errno));
			return -1;
		}
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	for (waited = 0; waited < PRIME_WAIT_MS; waited += 20) {
		if (file_size(meta) > 0)
			return 0;
		sleep_ms(20);
	}
	fprintf(stderr, "ncclguard: %s is still empty after %d s\n", meta, PRIME_WAIT_MS / 1000);
	return -1;
}

static uint64_t be64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* One data stream `dir/name`: its packets walked by their headers, the
 * file cut after the last whole one, and its index (`index/name.idx`)
 * dropped unless it lists exactly those packets (under ENOSPC the
 * consumer writes entries for packets it failed to write, with wrong
 * offsets); babeltrace2 then indexes the stream itself. */
static void repair_stream(const char *dir, const char *name, struct ng_trace_check *c)
{
	char data[PATH_MAX], idx[PATH_MAX];
	unsigned char hdr[PKT_HEADER], ent[IDX_ENTRY_MIN];
	uint64_t off = 0, psize, bits, content;
	off_t size, isize;
	uint32_t magic, elen = 0;
	long n = 0, i = 0;
	int fd, ifd, cut = 0, unknown = 0, idx_ok = 0;

	c->streams++;
	if (snprintf(data, sizeof(data), "%s/%s", dir, name) >= (int)sizeof(data) ||
	    snprintf(idx, sizeof(idx), "%s/index/%s.idx", dir, name) >= (int)sizeof(idx))
		return;
	fd = open(data, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size = file_size(data);
	ifd = open(idx, O_RDONLY | O_CLOEXEC);
	isize = ifd >= 0 ? file_size(idx) : -1;
	if (isize >= IDX_HEADER && pread(ifd, hdr, IDX_HEADER, 0) == IDX_HEADER &&
	    be32(hdr) == IDX_MAGIC && (elen = be32(hdr + 12)) >= IDX_ENTRY_MIN) {
		idx_ok = 1;
		n = (long)((isize - IDX_HEADER) / elen);
	}
	while (size >= 0 && off < (uint64_t)size) {
		if ((uint64_t)size - off < PKT_HEADER ||
		    pread(fd, hdr, PKT_HEADER, (off_t)off) != PKT_HEADER) {
			cut = 1;
			break;
		}
		memcpy(&magic, hdr, sizeof(magic));
		memcpy(&bits, hdr + PKT_SIZE_AT, sizeof(bits));
		memcpy(&content, hdr + PKT_CONTENT_AT, sizeof(content));
		if (magic != CTF_MAGIC) {
			unknown = 1;
			break;
		}
		psize = bits / 8;
		if (psize < PKT_HEADER || psize > (uint64_t)size - off) {
			cut = 1;
			break;
		}
		if (content > PKT_EMPTY_BITS)
			c->event_packets++;
		if (idx_ok && (i >= n || pread(ifd, ent, sizeof(ent), IDX_HEADER + (off_t)i * elen) !=
				       (ssize_t)sizeof(ent) ||
			       be64(ent) != off || be64(ent + 8) / 8 != psize))
			idx_ok = 0;
		off += psize;
		i++;
	}
	if (i != n)
		idx_ok = 0;
	close(fd);
	if (ifd >= 0)
		close(ifd);
	if (size < 0)
		return;
	if (unknown) {
		c->unknown++;
		c->bytes += (uint64_t)size;
		return;
	}
	if (cut && !truncate(data, (off_t)off)) {
		c->cut++;
		c->cut_bytes += (uint64_t)size - off;
		size = (off_t)off;
	}
	c->bytes += (uint64_t)size;
	if (ifd >= 0 && !idx_ok && !unlink(idx))
		c->index_dropped++;
}

/* Every stream of one ust/uid/<uid>/<bits>-bit folder. */
static int repair_dir(const char *dir, struct ng_trace_check *c)
{
	struct dirent *e;
	struct stat st;
	char path[PATH_MAX];
	DIR *d = opendir(dir);

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' ||
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path) ||
		    lstat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (!strcmp(e->d_name, "metadata")) {
			c->metadata++;
			c->bytes += (uint64_t)st.st_size;
			if (!st.st_size)
				c->metadata_empty++;
			continue;
		}
		repair_stream(dir, e->d_name, c);
	}
	closedir(d);
	return 0;
}

int ng_trace_repair(const char *outdir, struct ng_trace_check *c)
{
	struct dirent *u, *b;
	char uid_dir[PATH_MAX], bits[PATH_MAX];
	DIR *du, *db;
	int ret = 0;

	memset(c, 0, sizeof(*c));
	if (snprintf(uid_dir, sizeof(uid_dir), "%s/ust/uid", outdir) >= (int)sizeof(uid_dir))
		return -1;
	du = opendir(uid_dir);
	if (!du)
		return errno == ENOENT ? 0 : -1;
	while ((u = readdir(du))) {
		if (u->d_name[0] == '.')
			continue;
		if (snprintf(bits, sizeof(bits), "%s/%s", uid_dir, u->d_name) >= (int)sizeof(bits))
			continue;
		db = opendir(bits);
		if (!db)
			continue;
		while ((b = readdir(db))) {
			char dir[PATH_MAX];

			if (b->d_name[0] == '.' ||
			    snprintf(dir, sizeof(dir), "%s/%s", bits, b->d_name) >= (int)sizeof(dir))
				continue;
			if (repair_dir(dir, c))
				ret = -1;
		}
		closedir(db);
	}
	closedir(du);
	return ret;
}
