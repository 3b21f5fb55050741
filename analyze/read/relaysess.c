/*
 * Which of a relay's session folders to read.  lttng-relayd takes
 * sessions from whoever reaches it, under any host and session name, so
 * its output folder may hold a session forged with the job's id and a
 * rank already present.  A relay writes a session under
 * RELAYDIR/<host>/<session>-<date>-<time>/ust/...; the job's run records
 * (run.json "session", "session_host", mode 0600) name the sessions its
 * runs made, and only those are read.  Two folders of one host and
 * session name cannot be told apart: both are left out.
 */
#include <stdlib.h>
#include <string.h>

#include "read.h"

/* "-YYYYMMDD-HHMMSS", what the relay adds to a session's name. */
#define DATE_SUFFIX	16

static int date_suffix(const char *s, size_t len)
{
	const char *p;

	if (len <= DATE_SUFFIX)
		return 0;
	p = s + len - DATE_SUFFIX;
	for (int i = 0; i < DATE_SUFFIX; i++) {
		int dash = i == 0 || i == 9;

		if (dash ? p[i] != '-' : (p[i] < '0' || p[i] > '9'))
			return 0;
	}
	return 1;
}

static char *dup_n(const char *s, size_t n)
{
	char *d = an_xcalloc(n + 1, 1);

	memcpy(d, s, n);
	return d;
}

/* 1 and the session folder of a trace at
 * .../<host>/<session>-<date>-<time>/{ust,kernel}/...; 0 if not one. */
static int session_of(const char *path, struct an_sess *out)
{
	const char *p = path, *prev[2] = { NULL, NULL }, *host = NULL, *sess = NULL;
	size_t plen[2] = { 0, 0 }, hlen = 0, slen = 0;

	while (*p) {
		const char *c;
		size_t len;

		while (*p == '/')
			p++;
		c = p;
		while (*p && *p != '/')
			p++;
		len = (size_t)(p - c);
		if (!len)
			break;
		/* the last domain folder of the path wins */
		if (prev[0] && ((len == 3 && !strncmp(c, "ust", 3)) ||
				(len == 6 && !strncmp(c, "kernel", 6)))) {
			host = prev[0];
			hlen = plen[0];
			sess = prev[1];
			slen = plen[1];
		}
		prev[0] = prev[1];
		plen[0] = plen[1];
		prev[1] = c;
		plen[1] = len;
	}
	if (!sess || !date_suffix(sess, slen))
		return 0;
	out->folder = dup_n(path, (size_t)(sess + slen - path));
	out->host = dup_n(host, hlen);
	out->name = dup_n(sess, slen - DATE_SUFFIX);
	return 1;
}

static void sess_free(struct an_sess *s)
{
	free(s->folder);
	free(s->host);
	free(s->name);
	free(s->job);
	memset(s, 0, sizeof(*s));
}

/* The job's id as `run` puts it in a session name (session/session.c). */
static int claims_job(const char *name, const char *job)
{
	size_t n = strlen(name), j = strlen(job);

	if (!j || strncmp(name, "ncclguard-", 10) || n < j + 1 || name[n - j - 1] != '-')
		return 0;
	for (size_t i = 0; i < j; i++) {
		char c = job[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';

		if (name[n - j + i] != (ok ? c : '_'))
			return 0;
	}
	return 1;
}

void an_sessions_add(struct an_sessions *ss, const char *host, const char *name,
		     const char *job)
{
	struct an_sess *s;

	for (int i = 0; i < ss->n; i++)
		if (!strcmp(ss->s[i].host, host) && !strcmp(ss->s[i].name, name))
			return;
	ss->s = an_xrealloc(ss->s, (size_t)(ss->n + 1) * sizeof(*ss->s));
	s = &ss->s[ss->n++];
	memset(s, 0, sizeof(*s));
	s->job = an_xstrdup(job);
	s->host = an_xstrdup(host);
	s->name = an_xstrdup(name);
}

void an_sessions_free(struct an_sessions *ss)
{
	for (int i = 0; i < ss->n; i++)
		sess_free(&ss->s[i]);
	free(ss->s);
	memset(ss, 0, sizeof(*ss));
}

static int named(const struct an_sessions *rec, const struct an_sess *s)
{
	for (int i = 0; i < rec->n; i++)
		if (!strcmp(rec->s[i].host, s->host) && !strcmp(rec->s[i].name, s->name))
			return 1;
	return 0;
}

static int claimed(const struct an_sessions *rec, const struct an_sess *s)
{
	for (int i = 0; i < rec->n; i++)
		if (claims_job(s->name, rec->s[i].job))
			return 1;
	return 0;
}

void an_sessions_keep(struct an_state *an, char *const *paths, int n,
		      const struct an_sessions *rec, int *keep)
{
	struct an_sess *at = an_xcalloc((size_t)n + 1, sizeof(*at));
	char list[400];
	int unchecked = 0;
	size_t len = 0;

	list[0] = '\0';
	for (int i = 0; i < n; i++) {
		keep[i] = 1;
		if (!session_of(paths[i], &at[i]))
			continue;
		/* a folder holds a trace per uid: each folder once */
		at[i].first = 1;
		for (int j = 0; j < i && at[i].first; j++)
			at[i].first = !at[j].folder || strcmp(at[j].folder, at[i].folder);
	}
	for (int i = 0; i < n; i++) {
		int same = 0, is_named;

		if (!at[i].folder)
			continue;
		if (!rec->n) {
			if (at[i].first && len < sizeof(list) - 1)
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s/%s",
							unchecked++ ? ", " : "", at[i].host,
							at[i].name);
			continue;
		}
		/* other folders of this host and session name */
		for (int j = 0; j < n; j++)
			same += at[j].first && strcmp(at[j].folder, at[i].folder) &&
				!strcmp(at[j].host, at[i].host) && !strcmp(at[j].name, at[i].name);
		is_named = named(rec, &at[i]);
		if (is_named && !same)
			continue;
		keep[i] = 0;
		if (!at[i].first)
			continue;
		if (is_named)
			an_incomplete(an, AN_INC_session_unverified, "%s: host %s has %d sessions "
				      "named %s at the relay, and the run record names one: "
				      "none is read (one was not made by the job's run); that "
				      "host's ranks are missing", at[i].folder, at[i].host,
				      same + 1, at[i].name);
		else if (claimed(rec, &at[i]))
			an_incomplete(an, AN_INC_session_unverified, "%s: session %s of host %s "
				      "carries the job's id, but no run record names it: not read",
				      at[i].folder, at[i].name, at[i].host);
	}
	if (unchecked)
		an_incomplete(an, AN_INC_session_unverified, "no run record names a session of the "
			      "relay (give the runs' -o folders): %d session%s read unchecked: "
			      "%s%s", unchecked, unchecked == 1 ? "" : "s", list,
			      len >= sizeof(list) - 1 ? "..." : "");
	for (int i = 0; i < n; i++)
		sess_free(&at[i]);
	free(at);
}
