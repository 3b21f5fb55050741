/*
 * The ranks' line protocol runs over TCP, one connection from each rank
 * to the coordinator (docs/matrix.md, "Rendezvous").  Here: sockets with
 * deadlines, lines, the encoding of fields, and where the coordinator is.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mx_priv.h"

#define RDV_FILE ".rendezvous"
#define RDV_MAGIC "ncclguard-matrix-rendezvous/1"

double mx_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void mx_sleep(double s)
{
	struct timespec ts;

	if (s <= 0)
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void mx_encode(char *dst, size_t len, const char *src)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)src;
	size_t n = 0;

	if (!len)
		return;
	for (; p && *p; p++) {
		if (*p > 0x20 && *p < 0x7f && *p != '%') {
			if (n + 1 >= len)
				break;
			dst[n++] = (char)*p;
			continue;
		}
		if (n + 3 >= len)
			break;
		dst[n++] = '%';
		dst[n++] = hex[*p >> 4];
		dst[n++] = hex[*p & 15];
	}
	dst[n] = '\0';
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void mx_decode(char *dst, size_t len, const char *src)
{
	size_t n = 0;

	if (!len)
		return;
	for (; *src && n + 1 < len; src++) {
		int hi, lo;

		if (*src == '%' && (hi = hexval(src[1])) >= 0 && (lo = hexval(src[2])) >= 0) {
			/* A NUL would end the name early: keep it visible. */
			dst[n++] = (char)(hi << 4 | lo) ? (char)(hi << 4 | lo) : '?';
			src += 2;
		} else {
			dst[n++] = *src;
		}
	}
	dst[n] = '\0';
}

void mx_hex(char *dst, const unsigned char *src, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		dst[2 * i] = hex[src[i] >> 4];
		dst[2 * i + 1] = hex[src[i] & 15];
	}
	dst[2 * n] = '\0';
}

int mx_unhex(unsigned char *dst, size_t n, const char *src)
{
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(src[2 * i]), lo = hi < 0 ? -1 : hexval(src[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		dst[i] = (unsigned char)(hi << 4 | lo);
	}
	return src[2 * n] == '\0' ? 0 : -1;
}

/* ---- lines ---------------------------------------------------------------- */

void mx_conn_init(struct mx_conn *c, int fd)
{
	c->fd = fd;
	c->len = 0;
}

void mx_conn_close(struct mx_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->len = 0;
}

int mx_take_line(struct mx_conn *c, char *line, size_t len)
{
	char *nl = memchr(c->buf, '\n', c->len);
	size_t n;

	if (!nl) {
		/* A line longer than any we send: a stranger; drop what came. */
		if (c->len == sizeof(c->buf))
			c->len = 0;
		return 0;
	}
	n = (size_t)(nl - c->buf);
	snprintf(line, len, "%.*s", (int)n, c->buf);
	memmove(c->buf, nl + 1, c->len - n - 1);
	c->len -= n + 1;
	return 1;
}

int mx_take_prefixed(struct mx_conn *c, const char *prefix, char *line, size_t len)
{
	size_t plen = strlen(prefix);

	for (char *p = c->buf, *end = c->buf + c->len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n;

		if (!nl)
			return 0;
		n = (size_t)(nl - p);
		if (n >= plen && !memcmp(p, prefix, plen)) {
			snprintf(line, len, "%.*s", (int)n, p);
			memmove(p, nl + 1, (size_t)(end - nl - 1));
			c->len -= n + 1;
			return 1;
		}
		p = nl + 1;
	}
	return 0;
}

int mx_fill(struct mx_conn *c)
{
	ssize_t r;

	if (c->fd < 0)
		return -1;
	if (c->len == sizeof(c->buf))
		return 0;
	r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, MSG_DONTWAIT);
	if (r > 0) {
		c->len += (size_t)r;
		return 0;
	}
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	return -1;
}

int mx_recv_line(struct mx_conn *c, char *line, size_t len, double deadline)
{
	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		double left;

		if (mx_take_line(c, line, len))
			return 1;
		left = deadline - mx_now();
		if (left <= 0)
			return 0;
		if (poll(&p, 1, left > 1 ? 1000 : (int)(left * 1000) + 1) < 0 && errno != EINTR)
			return -1;
		if (p.revents && mx_fill(c))
			return mx_take_line(c, line, len) ? 1 : -1;
	}
}

int mx_send(int fd, double wait, const char *fmt, ...)
{
	char line[MX_LINE_MAX];
	double deadline = mx_now() + wait;
	va_list ap;
	size_t n, off = 0;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (w < 0)
		return -1;
	n = (size_t)w < sizeof(line) - 2 ? (size_t)w : sizeof(line) - 2;
	line[n++] = '\n';
	while (off < n) {
		ssize_t r = send(fd, line + off, n - off, MSG_NOSIGNAL);
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		double left = deadline - mx_now();

		if (r > 0) {
			off += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		/* A peer that reads nothing for --timeout is as good as gone. */
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && left > 0 &&
		    poll(&p, 1, left > 1 ? 1000 : (int)(left * 1000) + 1) >= 0)
			continue;
		return -1;
	}
	return 0;
}

/* ---- sockets -------------------------------------------------------------- */

void mx_peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN], port[8];

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) ||
	    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(buf, len, "an unknown address");
		return;
	}
	/* An IPv4 peer on the dual-stack socket: shown as IPv4. */
	snprintf(buf, len, strchr(host, ':') && strncmp(host, "::ffff:", 7) ? "[%s]:%s" : "%s:%s",
		 strncmp(host, "::ffff:", 7) ? host : host + 7, port);
}

int mx_listen(int port, int local, int *port_out, char *err, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd = -1, one = 1, zero = 0;

	if (!local) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;

		/* Both families on one socket where the host has IPv6. */
		fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd >= 0) {
			memset(&ss, 0, sizeof(ss));
			a6->sin6_family = AF_INET6;
			a6->sin6_addr = in6addr_any;
			a6->sin6_port = htons((uint16_t)port);
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
			if (bind(fd, (struct sockaddr *)a6, sizeof(*a6)) == 0)
				goto bound;
			if (errno == EADDRINUSE)
				goto fail;
			close(fd);
		}
	}
	{
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;

		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			goto fail;
		memset(&ss, 0, sizeof(ss));
		a4->sin_family = AF_INET;
		a4->sin_addr.s_addr = htonl(local ? INADDR_LOOPBACK : INADDR_ANY);
		a4->sin_port = htons((uint16_t)port);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)a4, sizeof(*a4)))
			goto fail;
	}
bound:
	if (listen(fd, SOMAXCONN))
		goto fail;
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		goto fail;
	*port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						    : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
fail:
	snprintf(err, len, "cannot listen on port %d: %s", port, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* One attempt on one address, at most `wait` seconds. */
static int connect_one(const struct addrinfo *ai, double wait)
{
	struct pollfd p;
	int fd, one = 1, soerr = 0;
	socklen_t sl = sizeof(soerr);

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		goto fail;
	p.fd = fd;
	p.events = POLLOUT;
	if (poll(&p, 1, (int)(wait * 1000) + 1) <= 0)
		goto fail;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
		errno = soerr ? soerr : errno;
		goto fail;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
fail:
	{
		int e = errno;

		close(fd);
		errno = e ? e : ETIMEDOUT;
	}
	return -1;
}

int mx_connect(const char *host, int port, double deadline, char *err, size_t len)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	char ps[16];
	int last = ETIMEDOUT;

	snprintf(ps, sizeof(ps), "%d", port);
	snprintf(err, len, "cannot connect to %s:%d", host, port);
	for (;;) {
		struct addrinfo *res = NULL;
		int g = getaddrinfo(host, ps, &hints, &res);

		if (g == 0) {
			for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
				double left = deadline - mx_now();
				int fd = connect_one(ai, left < 2 ? (left > 0.05 ? left : 0.05) : 2);

				if (fd >= 0) {
					freeaddrinfo(res);
					return fd;
				}
				last = errno;
			}
			freeaddrinfo(res);
			snprintf(err, len, "cannot connect to %s:%d: %s", host, port, strerror(last));
		} else {
			snprintf(err, len, "cannot resolve %s: %s", host, gai_strerror(g));
		}
		/* The coordinator may not listen yet: ranks start in any order. */
		if (mx_now() + 0.2 > deadline)
			return -1;
		mx_sleep(0.2);
	}
}

/* ---- where the coordinator is -------------------------------------------- */

/* "HOST:PORT" or "[V6]:PORT". */
static int parse_hostport(const char *s, char *host, size_t hlen, int *port)
{
	const char *colon = strrchr(s, ':');
	const char *h = s;
	size_t n;
	char *end;
	long p;

	if (!colon || colon == s)
		return -1;
	n = (size_t)(colon - s);
	if (*s == '[' && colon[-1] == ']') {
		h = s + 1;
		n -= 2;
	}
	if (!n || n >= hlen)
		return -1;
	memcpy(host, h, n);
	host[n] = '\0';
	p = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || p < 1 || p > 65535)
		return -1;
	*port = (int)p;
	return 0;
}

int mx_addr_pick(const struct ng_mx_opts *o, const struct mx_self *me, struct mx_addr *a,
		 char *err, size_t len)
{
	const char *conn = getenv("NCCLGUARD_MATRIX_CONNECT");
	const char *maddr = getenv("MASTER_ADDR"), *mport = getenv("MASTER_PORT");

	memset(a, 0, sizeof(*a));
	if (conn && *conn) {	/* set by --local for its children */
		if (parse_hostport(conn, a->host, sizeof(a->host), &a->port)) {
			snprintf(err, len, "NCCLGUARD_MATRIX_CONNECT: not HOST:PORT ('%s')", conn);
			return -1;
		}
		return 0;
	}
	a->serve = me->rank == 0;
	if (o->rendezvous) {
		if (parse_hostport(o->rendezvous, a->host, sizeof(a->host), &a->port)) {
			snprintf(err, len, "--rendezvous: not HOST:PORT ('%s')", o->rendezvous);
			return -1;
		}
		return 0;
	}
	if (maddr && *maddr && mport && *mport) {
		char *end;
		long p = strtol(mport, &end, 10);

		/* torchrun's own store holds MASTER_PORT itself. */
		if (*end || p < 1 || p >= 65535 || strlen(maddr) >= sizeof(a->host)) {
			snprintf(err, len, "MASTER_ADDR/MASTER_PORT: no usable address ('%s', '%s')",
				 maddr, mport);
			return -1;
		}
		snprintf(a->host, sizeof(a->host), "%s", maddr);
		a->port = (int)p + 1;
		return 0;
	}
	a->via_file = 1;
	if (snprintf(a->file, sizeof(a->file), "%s/%s", o->outdir, RDV_FILE) >= (int)sizeof(a->file)) {
		snprintf(err, len, "%s: path too long", o->outdir);
		return -1;
	}
	if (mx_make_dirs(o->outdir)) {
		snprintf(err, len, "cannot make %s: %s", o->outdir, strerror(errno));
		return -1;
	}
	return 0;
}

int mx_file_publish(const struct mx_addr *a, const char *token, int world, const char *host,
		    int port, char *err, size_t len)
{
	char tmp[4200], h[800];
	FILE *f;
	int fd;

	mx_encode(h, sizeof(h), host);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", a->file, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		snprintf(err, len, "cannot write %s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fprintf(f, "%s %s %d %s %d\n", RDV_MAGIC, *token ? token : "-", world, h, port);
	if (fclose(f) || rename(tmp, a->file)) {
		snprintf(err, len, "cannot write %s: %s", a->file, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

int mx_file_connect(const struct mx_addr *a, const char *token, int world, double deadline,
		    char *err, size_t len)
{
	snprintf(err, len, "no rendezvous in %s (is the folder shared by every host, and rank 0 "
		 "started?)", a->file);
	for (;;) {
		char magic[64], tok[256], host[800], hd[256];
		int w, port, fd;
		FILE *f = fopen(a->file, "re");
		int got = f && fscanf(f, "%63s %255s %d %799s %d", magic, tok, &w, host, &port) == 5;

		if (f)
			fclose(f);
		/* Another job's file, or one left by an earlier run: wait for
		 * rank 0 to replace it. */
		if (got && !strcmp(magic, RDV_MAGIC) && !strcmp(tok, *token ? token : "-") &&
		    w == world && port > 0 && port < 65536) {
			double left = deadline - mx_now();

			mx_decode(hd, sizeof(hd), host);
			fd = mx_connect(hd, port, mx_now() + (left < 2 ? left : 2), err, len);
			if (fd >= 0)
				return fd;
		}
		if (mx_now() + 0.2 > deadline)
			return -1;
		mx_sleep(0.2);
	}
}
