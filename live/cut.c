/*
 * The connections to the relay, cut.  src.ctf.lttng-live reads its
 * socket blocking, with no timeout, and goes on reading after a signal
 * unless its graph is interrupted, which its query (the sessions list)
 * never is, and after which its graph cannot go on.  Shutting the socket
 * down from our side ends any such read at once, in every case: the call
 * fails ("Remote side has closed connection") and the reader attaches
 * again.  The sockets are babeltrace2's, so they are found as this
 * process's descriptors whose peer is the relay.
 */
#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lv_priv.h"

#define LIVE_PORT	5344	/* LTTng's default live port */

void lv_peer_of(const char *url, struct lv_peer *p)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
	const char *h = strstr(url, "://");
	char host[256], *colon;
	size_t len;

	memset(p, 0, sizeof(*p));
	p->port = LIVE_PORT;
	if (!h)
		return;
	h += 3;
	len = strcspn(h, "/");
	if (len >= sizeof(host))
		return;
	memcpy(host, h, len);
	host[len] = '\0';
	colon = strrchr(host, ':');
	if (colon && !strchr(colon, ']')) {
		*colon = '\0';
		p->port = atoi(colon + 1);
	}
	if (host[0] == '[') {
		memmove(host, host + 1, strlen(host));
		host[strcspn(host, "]")] = '\0';
	}
	if (getaddrinfo(host, NULL, &hints, &res))
		return;
	for (ai = res; ai && p->n < LV_PEER_MAX; ai = ai->ai_next)
		if (ai->ai_addrlen <= sizeof(p->a[0]))
			memcpy(&p->a[p->n++], ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(res);
}

static int same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	return 0;
}

static int is_peer(const struct lv_peer *p, int fd)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	int port;

	if (getpeername(fd, (struct sockaddr *)&sa, &len))
		return 0;
	if (sa.ss_family == AF_INET)
		port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
	else if (sa.ss_family == AF_INET6)
		port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
	else
		return 0;
	if (port != p->port)
		return 0;
	for (int i = 0; i < p->n; i++)
		if (same_host(&p->a[i], &sa))
			return 1;
	return !p->n;
}

int lv_cut(const struct lv_peer *p)
{
	struct dirent *d;
	int n = 0;
	DIR *dh = opendir("/proc/self/fd");

	if (!dh)
		return 0;
	while ((d = readdir(dh))) {
		struct stat st;
		char *end;
		long fd = strtol(d->d_name, &end, 10);

		if (*end || end == d->d_name || fd == dirfd(dh))
			continue;
		if (fstat((int)fd, &st) || !S_ISSOCK(st.st_mode) || !is_peer(p, (int)fd))
			continue;
		if (!shutdown((int)fd, SHUT_RDWR))
			n++;
	}
	closedir(dh);
	return n;
}
