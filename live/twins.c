/*
 * Sessions of one host and name at the relay.  babeltrace2's `sessions`
 * query merges them into one entry (and attaching to that URL reads them
 * all), so a session forged under a job's host and session name cannot
 * be seen through it.  The relayd's own list can: this asks it directly,
 * in the live protocol (lttng-relayd's viewer commands CONNECT and
 * LIST_SESSIONS, big-endian, packed), each read bounded.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lv_priv.h"

#define CMD_CONNECT		1
#define CMD_LIST		2
#define CLIENT_COMMAND		1
#define HDR_LEN			16	/* data_size u64, cmd u32, version u32 */
#define CONNECT_LEN		20	/* session id u64, major, minor, type u32 */
#define HOST_LEN		64
#define NAME_LEN		255
#define SESSION_LEN		(8 + 4 + 4 + 4 + HOST_LEN + NAME_LEN)
#define WAIT_MS			5000
#define SESSIONS_MAX		100000

static void put_be(unsigned char *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static uint64_t get_be(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static int wait_fd(int fd, short ev)
{
	struct pollfd pfd = { .fd = fd, .events = ev };
	int r;

	do
		r = poll(&pfd, 1, WAIT_MS);
	while (r < 0 && errno == EINTR);
	return r == 1 ? 0 : -1;
}

static int io_all(int fd, unsigned char *buf, size_t len, int out)
{
	while (len) {
		ssize_t n;

		if (wait_fd(fd, out ? POLLOUT : POLLIN))
			return -1;
		n = out ? send(fd, buf, len, MSG_NOSIGNAL) : recv(fd, buf, len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int dial(const struct lv_peer *p)
{
	for (int i = 0; i < p->n; i++) {
		struct sockaddr_storage sa = p->a[i];
		socklen_t len = sa.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
							   sizeof(struct sockaddr_in);
		int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		int err = 0;
		socklen_t elen = sizeof(err);

		if (fd < 0)
			continue;
		if (sa.ss_family == AF_INET6)
			((struct sockaddr_in6 *)&sa)->sin6_port = htons((uint16_t)p->port);
		else
			((struct sockaddr_in *)&sa)->sin_port = htons((uint16_t)p->port);
		if (!connect(fd, (struct sockaddr *)&sa, len) ||
		    (errno == EINPROGRESS && !wait_fd(fd, POLLOUT) &&
		     !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) && !err))
			return fd;
		close(fd);
	}
	return -1;
}

static void cmd(unsigned char *hdr, uint64_t size, uint32_t c)
{
	put_be(hdr, size, 8);
	put_be(hdr + 8, c, 4);
	put_be(hdr + 12, 0, 4);
}

int lv_twins(const struct lv_peer *p, struct lv_twin **out, int *n)
{
	unsigned char msg[HDR_LEN + CONNECT_LEN], s[SESSION_LEN];
	struct lv_twin *t = NULL;
	uint64_t count;
	int fd, ret = -1;

	*out = NULL;
	*n = 0;
	fd = dial(p);
	if (fd < 0)
		return -1;
	cmd(msg, CONNECT_LEN, CMD_CONNECT);
	put_be(msg + HDR_LEN, 0, 8);
	put_be(msg + HDR_LEN + 8, 2, 4);	/* protocol 2.4, as babeltrace2 */
	put_be(msg + HDR_LEN + 12, 4, 4);
	put_be(msg + HDR_LEN + 16, CLIENT_COMMAND, 4);
	if (io_all(fd, msg, sizeof(msg), 1) || io_all(fd, msg, CONNECT_LEN, 0))
		goto out;
	cmd(msg, 0, CMD_LIST);
	if (io_all(fd, msg, HDR_LEN, 1) || io_all(fd, msg, 4, 0))
		goto out;
	count = get_be(msg, 4);
	if (count > SESSIONS_MAX)
		goto out;
	t = lv_xcalloc(count + 1, sizeof(*t));
	for (uint64_t i = 0; i < count; i++) {
		if (io_all(fd, s, sizeof(s), 0))
			goto out;
		memcpy(t[i].host, s + 20, HOST_LEN);
		t[i].host[HOST_LEN] = '\0';
		memcpy(t[i].name, s + 20 + HOST_LEN, NAME_LEN);
		t[i].name[NAME_LEN] = '\0';
	}
	*out = t;
	*n = (int)count;
	t = NULL;
	ret = 0;
out:
	free(t);
	close(fd);
	return ret;
}
