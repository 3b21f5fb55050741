/*
 * NCCL's interface-list syntax, as NCCL reads NCCL_SOCKET_IFNAME and
 * NCCL_IB_HCA (src/misc/utils.cc parseStringList/matchIfList, and the
 * callers in src/os/linux.cc and src/transport/net_ib/init.cc):
 *
 *   "^" first: select what the list does NOT match
 *   "=" next:  names must match exactly (else each entry is a prefix)
 *   entries separated by ',', each NAME[:PORT[:RAIL[:PLANE]]]; an absent
 *   port matches any port, an empty one is port 0 (NCCL's atoi("")),
 *   which no InfiniBand port is; empty entries are skipped.
 *
 * NCCL accepts anything; we also say when a value cannot mean what it
 * looks like (an entry without a name, a port that is not a number).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "iflist.h"

static int all_digits(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

int ng_iflist_parse(const char *s, struct ng_iflist *out, char *err, size_t errlen)
{
	const char *p, *comma, *colon, *end;

	memset(out, 0, sizeof(*out));
	if (!s)
		return 0;
	if (*s == '^') {
		out->exclude = 1;
		s++;
	}
	if (*s == '=') {
		out->exact = 1;
		s++;
	}
	for (p = s; *p; p = comma ? comma + 1 : end) {
		end = p + strlen(p);
		comma = strchr(p, ',');
		if (comma)
			end = comma;
		if (end == p)
			continue;		/* "a,,b": NCCL skips it */
		colon = memchr(p, ':', (size_t)(end - p));
		size_t nl = colon ? (size_t)(colon - p) : (size_t)(end - p);
		if (nl == 0) {
			snprintf(err, errlen, "entry '%.*s' has no name before ':'",
				 (int)(end - p > 30 ? 30 : end - p), p);
			return -1;
		}
		for (size_t i = 0; i < nl; i++) {
			if (isspace((unsigned char)p[i]) || p[i] == '^' || p[i] == '=') {
				snprintf(err, errlen, "entry '%.*s' contains '%c' (NCCL takes it "
					 "literally; '^' and '=' only count at the start of the list)",
					 (int)(nl > 30 ? 30 : nl), p, isspace((unsigned char)p[i]) ? ' ' : p[i]);
				return -1;
			}
		}
		if (nl >= NG_IFNAME_LEN) {
			snprintf(err, errlen, "name '%.20s...' is too long", p);
			return -1;
		}
		if (out->n >= NG_NETIF_MAX) {
			snprintf(err, errlen, "more than %d entries", NG_NETIF_MAX);
			return -1;
		}
		memcpy(out->e[out->n].name, p, nl);
		out->e[out->n].name[nl] = 0;
		out->e[out->n].port = -1;
		if (colon) {
			const char *port = colon + 1;
			const char *pend = memchr(port, ':', (size_t)(end - port));
			size_t pl;

			if (!pend)
				pend = end;
			pl = (size_t)(pend - port);
			if (pl == 0)
				out->e[out->n].port = 0;
			if (pl > 0) {
				if (!all_digits(port, pl) || pl > 6) {
					snprintf(err, errlen, "port '%.*s' of '%s' is not a number",
						 (int)(pl > 20 ? 20 : pl), port, out->e[out->n].name);
					return -1;
				}
				sscanf(port, "%d", &out->e[out->n].port);
			}
		}
		out->n++;
	}
	return 0;
}

int ng_iflist_match(const struct ng_iflist *l, const char *name, int port)
{
	for (int i = 0; i < l->n; i++) {
		const char *ref = l->e[i].name;
		int ok = l->exact ? !strcmp(name, ref) : !strncmp(name, ref, strlen(ref));

		if (ok && (port == -1 || l->e[i].port == -1 || port == l->e[i].port))
			return i;
	}
	return -1;
}

int ng_iflist_selects(const struct ng_iflist *l, const char *name, int port)
{
	/* NCCL: an empty list matches everything (before the '^'). */
	int m = l->n == 0 ? 1 : ng_iflist_match(l, name, port) >= 0;

	return m ^ l->exclude;
}
