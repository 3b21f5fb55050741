/*
 * Which port of a relayd a URL names, when its sessions could not be
 * listed.  An lttng-relayd listens on three ports, control, data and
 * live; `ncclguard relay --port P` (like LTTng's defaults, 5342-5344)
 * puts them at P, P+1 and P+2, and `run --relay` takes P where `watch`
 * takes P+2.  A viewer that reaches the control or data port has its
 * connection reset, which names neither.  Asking the neighbours tells:
 *
 *   - P+2 answers a viewer's hello and P the control protocol's version
 *     command: P is the control port, the live one is P+2;
 *   - P+1 answers a viewer's hello and P-1 the version command (P itself
 *     listening): P is the data port, the live one is P+1.
 *
 * Anything else (ports laid out otherwise, nothing there) says nothing:
 * a wrong guess would send the user further astray than the error.
 *
 * The version command goes only where a live port found first says the
 * control port is: a data port would take its bytes for a packet of one
 * of its streams.  A viewer's hello is safe on any relayd port: as a
 * control header it announces more than a control connection accepts,
 * as a data header it names no stream, and either drops the connection.
 */
#include <endian.h>
#include <netdb.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "lv_priv.h"

#define LIVE_DEFAULT_PORT	5344
#define PROBE_TIMEOUT_S		1

/* LTTng's wire formats (lttng-tools: lttng-viewer-abi.h, sessiond-comm's
 * relayd.h): packed, big-endian. */
#define VIEWER_CONNECT		1	/* LTTNG_VIEWER_CONNECT */
#define VIEWER_CLIENT_COMMAND	1	/* a command connection */
#define RELAYD_VERSION		5	/* a control connection's first command */

struct viewer_cmd {
	uint64_t data_size;
	uint32_t cmd, cmd_version;
} __attribute__((packed));

struct viewer_connect {
	uint64_t viewer_session_id;
	uint32_t major, minor, type;
} __attribute__((packed));

struct relayd_hdr {
	uint64_t circuit_id, data_size;
	uint32_t cmd, cmd_version;
} __attribute__((packed));

struct relayd_version {
	uint32_t major, minor;
} __attribute__((packed));

/* A connection to host:port with every wait bounded; -1 if none. */
static int tcp_open(const char *host, long port)
{
	struct timeval tv = { .tv_sec = PROBE_TIMEOUT_S };
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL, *a;
	char serv[16];
	int fd = -1;

	if (port < 1 || port > 65535)
		return -1;
	snprintf(serv, sizeof(serv), "%ld", port);
	if (getaddrinfo(host, serv, &hints, &ai))
		return -1;
	for (a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		/* connect() is bounded by the send timeout */
		if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
		    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
		    connect(fd, a->ai_addr, a->ai_addrlen)) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

/* Sends req and reads exactly rlen bytes of answer: 0, or -1. */
static int ask(const char *host, long port, const void *req, size_t qlen, void *reply,
	       size_t rlen)
{
	int fd = tcp_open(host, port), ret = -1;

	if (fd < 0)
		return -1;
	if (send(fd, req, qlen, MSG_NOSIGNAL) == (ssize_t)qlen &&
	    recv(fd, reply, rlen, MSG_WAITALL) == (ssize_t)rlen)
		ret = 0;
	close(fd);
	return ret;
}

static int is_live(const char *host, long port)
{
	struct {
		struct viewer_cmd h;
		struct viewer_connect c;
	} __attribute__((packed)) req = {
		.h = { .data_size = htobe64(sizeof(struct viewer_connect)),
		       .cmd = htobe32(VIEWER_CONNECT) },
		.c = { .major = htobe32(2), .minor = htobe32(4),
		       .type = htobe32(VIEWER_CLIENT_COMMAND) },
	};
	struct viewer_connect r;

	return !ask(host, port, &req, sizeof(req), &r, sizeof(r)) && be32toh(r.major) >= 2;
}

static int is_control(const char *host, long port)
{
	struct {
		struct relayd_hdr h;
		struct relayd_version v;
	} __attribute__((packed)) req = {
		.h = { .data_size = htobe64(sizeof(struct relayd_version)),
		       .cmd = htobe32(RELAYD_VERSION) },
		.v = { .major = htobe32(2), .minor = htobe32(4) },
	};
	struct relayd_version r;

	return !ask(host, port, &req, sizeof(req), &r, sizeof(r)) && be32toh(r.major) >= 2;
}

static int listens(const char *host, long port)
{
	int fd = tcp_open(host, port);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

int lv_port_hint(const char *url, char *hint, size_t len)
{
	const char *p = strstr(url, "://"), *colon;
	char scheme[8], host[256];
	long port = LIVE_DEFAULT_PORT;
	char *end;

	if (!p || lv_url_kind(url) != 0 || p - url >= (long)sizeof(scheme))
		return 0;
	snprintf(scheme, sizeof(scheme), "%.*s", (int)(p - url), url);
	p += 3;
	colon = strchr(p, ':');
	if (colon) {
		port = strtol(colon + 1, &end, 10);
		if (*end || end == colon + 1 || port < 1 || port > 65535)
			return 0;
	}
	if (snprintf(host, sizeof(host), "%.*s", (int)(colon ? colon - p : (long)strlen(p)),
		     p) >= (int)sizeof(host) || !host[0])
		return 0;
	if (is_live(host, port + 2) && is_control(host, port)) {
		snprintf(hint, len, "%s looks like a relay's control port; watch needs its live "
			 "port, %s://%s:%ld", url, scheme, host, port + 2);
		return 1;
	}
	if (port > 1 && is_live(host, port + 1) && listens(host, port) &&
	    is_control(host, port - 1)) {
		snprintf(hint, len, "%s looks like a relay's data port; watch needs its live "
			 "port, %s://%s:%ld", url, scheme, host, port + 1);
		return 1;
	}
	return 0;
}
