/*
 * The /metrics endpoint: libmicrohttpd's own thread serves it, so a
 * scrape never waits on the relay.  Each GET takes the state's lock only
 * to render the page into a buffer (metrics_text.c), then sends it
 * unlocked: a slow scraper holds no event back.  The listening socket is
 * ours, bound before the server starts, so that an address in use or
 * refused is said in words and watch stops before it attaches.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lv_priv.h"

#define MAX_CONNS	32	/* scrapers at once */
#define CONN_TIMEOUT_S	10	/* an idle or slow connection closed */

struct lv_mx_server {
	struct lv_state *st;
	struct MHD_Daemon *d;
	int fd;
};

static int all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return n > 0;
}

/* A host name: labels of letters, digits and hyphens, 1-63 each, not
 * beginning or ending with a hyphen, 253 in all. */
static int host_name_ok(const char *s, size_t n)
{
	size_t lab = 0;

	if (!n || n > 253)
		return 0;
	for (size_t i = 0; i <= n; i++) {
		char c = i < n ? s[i] : '.';

		if (c == '.') {
			if (!lab || lab > 63 || s[i - 1] == '-')
				return 0;
			lab = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			   (c == '-' && lab)) {
			lab++;
		} else {
			return 0;
		}
	}
	return 1;
}

int ng_metrics_addr(const char *s, char *host, size_t len, int *port, const char **why)
{
	const char *colon, *h = s, *p;
	unsigned char bin[16];
	size_t hn;
	long v;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':') {
			*why = "expected [IPv6]:PORT";
			return -1;
		}
		h = s + 1;
		hn = (size_t)(end - h);
		p = end + 2;
		if (hn >= len || hn >= INET6_ADDRSTRLEN) {
			*why = "not an IPv6 address";
			return -1;
		}
		memcpy(host, h, hn);
		host[hn] = 0;
		if (inet_pton(AF_INET6, host, bin) != 1) {
			*why = "not an IPv6 address";
			return -1;
		}
	} else {
		colon = strrchr(s, ':');
		if (!colon) {
			*why = "expected ADDR:PORT";
			return -1;
		}
		hn = (size_t)(colon - s);
		p = colon + 1;
		if (memchr(s, ':', hn)) {
			*why = "an IPv6 address goes in brackets: [ADDR]:PORT";
			return -1;
		}
		if (!hn) {
			*why = "no address before the port (0.0.0.0 for every IPv4 address)";
			return -1;
		}
		if (hn >= len) {
			*why = "address too long";
			return -1;
		}
		memcpy(host, s, hn);
		host[hn] = 0;
		if (strspn(host, "0123456789.") == hn) {
			if (inet_pton(AF_INET, host, bin) != 1) {
				*why = "not an IPv4 address";
				return -1;
			}
		} else if (!host_name_ok(host, hn)) {
			*why = "not an IPv4 address or a host name";
			return -1;
		}
	}
	/* digits only, no sign, space or leading zero */
	if (!all_digits(p, strlen(p)) || strlen(p) > 5 || p[0] == '0' ||
	    (v = strtol(p, NULL, 10)) < 1 || v > 65535) {
		*why = "the port must be a number from 1 to 65535";
		return -1;
	}
	*port = (int)v;
	return 0;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
			     char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES ||
	    (status == MHD_HTTP_METHOD_NOT_ALLOWED &&
	     MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") != MHD_YES)) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **req)
{
	static char not_found[] = "only /metrics is served here\n";
	static char not_allowed[] = "only GET /metrics is served here\n";
	struct lv_mx_server *srv = cls;
	const char *accept;
	size_t len;
	char *body;
	int fmt, r;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)req;
	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", not_found,
			     sizeof(not_found) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
			     not_allowed, sizeof(not_allowed) - 1, MHD_RESPMEM_PERSISTENT);
	accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	fmt = accept && strstr(accept, "application/openmetrics-text") ? LV_MX_OPENMETRICS :
								       LV_MX_TEXT;
	pthread_mutex_lock(&srv->st->lock);
	r = lv_mx_render(srv->st, fmt, &body, &len);
	pthread_mutex_unlock(&srv->st->lock);
	if (r)
		return MHD_NO;
	return reply(conn, MHD_HTTP_OK, lv_mx_content_type(fmt), body, len, MHD_RESPMEM_MUST_FREE);
}

/* A socket listening on host:port; -1 after saying why. */
static int listen_on(const char *spec, const char *host, int port, int *v6)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res, *a;
	char ps[8];
	int fd = -1, err = 0, on = 1, r;

	snprintf(ps, sizeof(ps), "%d", port);
	r = getaddrinfo(host, ps, &hints, &res);
	if (r) {
		fprintf(stderr, "ncclguard watch: --metrics %s: cannot resolve %s: %s\n", spec, host,
			gai_strerror(r));
		return -1;
	}
	for (a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == 0 &&
		    (a->ai_family != AF_INET6 ||
		     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) == 0) &&
		    bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 16) == 0) {
			*v6 = a->ai_family == AF_INET6;
			break;
		}
		err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, "ncclguard watch: --metrics %s: cannot listen there: %s%s\n", spec,
			strerror(err), err == EADDRINUSE ? " (another program serves that port)" : "");
	return fd;
}

struct lv_mx_server *lv_mx_start(struct lv_state *st)
{
	const char *spec = st->opts.metrics, *why;
	struct lv_mx_server *srv;
	char host[256];
	int port, v6 = 0;

	if (ng_metrics_addr(spec, host, sizeof(host), &port, &why)) {
		fprintf(stderr, "ncclguard watch: --metrics '%s': %s\n", spec, why);
		return NULL;
	}
	srv = lv_xcalloc(1, sizeof(*srv));
	srv->st = st;
	srv->fd = listen_on(spec, host, port, &v6);
	if (srv->fd < 0)
		goto fail;
	/* epoll where there is: watch may hold more descriptors (a
	 * connection per session) than select() can take */
	srv->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | (v6 ? MHD_USE_IPv6 : 0), 0,
				  NULL, NULL, handle, srv, MHD_OPTION_LISTEN_SOCKET, srv->fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNS,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT_S,
				  MHD_OPTION_END);
	if (!srv->d) {
		fprintf(stderr, "ncclguard watch: --metrics %s: the HTTP server did not start\n",
			spec);
		close(srv->fd);
		goto fail;
	}
	return srv;
fail:
	free(srv);
	return NULL;
}

void lv_mx_stop(struct lv_mx_server *srv)
{
	if (!srv)
		return;
	/* the daemon closes the listening socket it was given */
	MHD_stop_daemon(srv->d);
	free(srv);
}
