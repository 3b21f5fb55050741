/*
 * The reader: the one thread that talks to the relay.  Every 2 s it asks
 * the relayd for its sessions and attaches the new ones (hosts start at
 * different times); every open session with data is read a little in
 * turn.  Its calls block as long as the relay is silent (babeltrace2's
 * sockets have no timeout), so watch.c watches them from its own thread:
 * a call that has not come back for 10 s is ended by cutting the
 * connection (cut.c), and the session is attached again at the next
 * listing.  It ends once every session it attached has ended and the
 * relayd lists no new one, or when watch.c says stop.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lv_priv.h"

#define LIST_EVERY_NS	2000000000LL	/* the relayd asked for new sessions */
#define STEP_BUDGET	64		/* batches read from a session in a turn */
#define IDLE_NS		20000000L	/* a nap when no session had data */

static int stopping(struct lv_reader *r)
{
	return __atomic_load_n(&r->stop, __ATOMIC_ACQUIRE);
}

static void busy(struct lv_reader *r, int on)
{
	__atomic_store_n(&r->busy_since, on ? lv_mono_ns() : 0, __ATOMIC_RELEASE);
}

static unsigned cuts(struct lv_reader *r)
{
	return __atomic_load_n(&r->cuts, __ATOMIC_ACQUIRE);
}

/* A line from this thread (the reports come from the other). */
#define note(r, ...) do {					\
		pthread_mutex_lock(&(r)->st->lock);		\
		lv_note((r)->st, __VA_ARGS__);			\
		pthread_mutex_unlock(&(r)->st->lock);		\
	} while (0)

static int find(const struct lv_reader *r, const char *url)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->urls[i], url))
			return i;
	return -1;
}

static int add(struct lv_reader *r, const char *url, const char *host)
{
	r->urls = lv_xrealloc(r->urls, (r->n + 1) * sizeof(*r->urls));
	r->hosts = lv_xrealloc(r->hosts, (r->n + 1) * sizeof(*r->hosts));
	r->s = lv_xrealloc(r->s, (r->n + 1) * sizeof(*r->s));
	r->held = lv_xrealloc(r->held, r->n + 1);
	r->lost = lv_xrealloc(r->lost, r->n + 1);
	r->good_cut = lv_xrealloc(r->good_cut, (r->n + 1) * sizeof(*r->good_cut));
	r->urls[r->n] = lv_xstrdup(url);
	r->hosts[r->n] = lv_xstrdup(host ? host : "");
	r->s[r->n] = NULL;
	r->good_cut[r->n] = 0;
	r->held[r->n] = r->lost[r->n] = 0;
	pthread_mutex_lock(&r->st->lock);
	r->n++;
	pthread_mutex_unlock(&r->st->lock);
	return r->n - 1;
}

/* The host is the listing's: a refusal at attach comes without one. */
static void set_held(struct lv_reader *r, int i, int held)
{
	const char *host = r->hosts[i];

	if (r->held[i] == held)
		return;
	pthread_mutex_lock(&r->st->lock);
	r->held[i] = (unsigned char)held;
	r->nheld += held ? 1 : -1;
	if (held)
		lv_note(r->st, "%s%s%s is held by another live viewer (LTTng serves a session "
			"to one viewer at a time): its ranks are not shown; trying again",
			r->urls[i], *host ? ", host " : "", host);
	pthread_mutex_unlock(&r->st->lock);
}

/* Session i (index kept across attaches: its clock and processes). */
static void attach(struct lv_reader *r, int i, const char *host)
{
	unsigned c = cuts(r);
	struct lv_session *s = lv_session_open(r->st, i, r->urls[i]);

	if (!s)
		return;
	r->good_cut[i] = c;
	pthread_mutex_lock(&r->st->lock);
	r->s[i] = s;
	r->open++;
	lv_note(r->st, "%s %s%s%s", r->lost[i] ? "attached again to" : "attached to",
		r->urls[i], host && *host ? ", host " : "", host ? host : "");
	r->lost[i] = 0;
	pthread_mutex_unlock(&r->st->lock);
}

/* Two sessions of one host and name: one of them is not what it says
 * (a relay takes sessions from anyone); the host's ranks may be doubled.
 * Asked of the relayd itself: babeltrace2's list shows them as one. */
static void doubled(struct lv_reader *r)
{
	struct lv_twin *t;
	int n, ret;

	busy(r, 1);
	ret = lv_twins(r->peer, &t, &n);
	busy(r, 0);
	if (ret)
		return;
	for (int i = 0; i < n; i++) {
		int k, h;

		for (k = 0; k < i; k++)
			if (!strcmp(t[k].host, t[i].host) && !strcmp(t[k].name, t[i].name))
				break;
		if (k == i || !t[i].host[0])
			continue;
		pthread_mutex_lock(&r->st->lock);
		h = lv_host_id(r->st, t[i].host);
		/* lv_note escapes what the relay says */
		if (h >= 0 && !r->st->hosts[h].doubled) {
			r->st->hosts[h].doubled = 1;
			lv_note(r->st, "host %s has two sessions named %s at the relay (one may be "
				"forged: a relay takes sessions from anyone); its ranks may be "
				"counted twice", t[i].host, t[i].name);
		}
		pthread_mutex_unlock(&r->st->lock);
	}
	free(t);
}

/* New and lost sessions attached: 1 if any, 0 if none, -1 if the relayd
 * could not be asked (why in err). */
static int attach_new(struct lv_reader *r, int one_session, char *err, size_t errlen)
{
	struct lv_listed *l;
	int n, ret, added = 0;

	if (one_session) {
		int i = find(r, r->st->opts.url);

		if (i < 0)
			i = add(r, r->st->opts.url, NULL);
		else if (r->s[i] || (!r->lost[i] && !r->held[i]))
			return 0;
		attach(r, i, NULL);
		return 1;
	}
	busy(r, 1);
	ret = lv_list_sessions(r->st->opts.url, &l, &n, err, errlen);
	busy(r, 0);
	if (ret)
		return -1;
	doubled(r);
	/* a session no longer listed is neither held nor to attach again */
	for (int i = 0; i < r->n; i++) {
		int k;

		for (k = 0; k < n && strcmp(l[k].url, r->urls[i]); k++)
			;
		if (k == n) {
			set_held(r, i, 0);
			r->lost[i] = 0;
		}
	}
	for (int k = 0; k < n; k++) {
		int i = find(r, l[k].url);

		if (i >= 0 && (r->s[i] || (!r->lost[i] && !r->held[i])))
			continue;
		if (i < 0)
			i = add(r, l[k].url, l[k].host);
		/* LTTng serves a session to one live viewer at a time */
		if (l[k].clients) {
			set_held(r, i, 1);
			continue;
		}
		set_held(r, i, 0);
		attach(r, i, l[k].host);
		added = 1;
	}
	lv_listed_free(l, n);
	return added;
}

/* One turn over the open sessions: 1 if one had data. */
static int read_turn(struct lv_reader *r, int64_t *next_list)
{
	char why[512];
	int progressed = 0;

	for (int i = 0; i < r->n && !stopping(r); i++) {
		unsigned c = cuts(r);
		int ret;

		if (!r->s[i])
			continue;
		busy(r, 1);
		ret = lv_session_step(r->s[i], STEP_BUDGET, why, sizeof(why));
		busy(r, 0);
		if (ret > 0)
			progressed = 1;
		if (ret >= 0)
			r->good_cut[i] = c;
		/* attached: the viewer that held it is gone */
		if (ret >= 0 && r->held[i])
			set_held(r, i, 0);
		if (ret >= 0 || stopping(r))
			continue;
		lv_session_close(r->s[i]);
		pthread_mutex_lock(&r->st->lock);
		r->s[i] = NULL;
		r->open--;
		/* A cut ends every connection, also one made while another
		 * call (a listing) was the one stuck: lost since then. */
		if (cuts(r) != r->good_cut[i])
			r->lost[i] = 1;
		else if (ret == LV_STEP_FAILED)
			fprintf(stderr, "ncclguard watch: %s: %s\n", r->urls[i], why);
		else if (ret == LV_STEP_ENDED)
			lv_note(r->st, "%s ended", r->urls[i]);
		pthread_mutex_unlock(&r->st->lock);
		if (ret == LV_STEP_HELD && cuts(r) == c)
			set_held(r, i, 1);
		/* ask at once whether others remain */
		*next_list = 0;
	}
	return progressed;
}

static void *reader_main(void *arg)
{
	struct lv_reader *r = arg;
	int64_t now, next_list = 0;
	int one_session = lv_url_kind(r->st->opts.url) == 1;
	char err[512];
	sigset_t set;

	/* SIGINT and SIGTERM are watch.c's thread's */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	while (!stopping(r)) {
		now = lv_mono_ns();
		if (now >= next_list) {
			unsigned c = cuts(r);
			int added = attach_new(r, one_session, err, sizeof(err));
			int lost = 0;

			if (stopping(r))
				break;
			if (added < 0 && !r->listed && cuts(r) == c) {
				fprintf(stderr, "ncclguard watch: %s: cannot list the relayd's "
					"sessions: %s\n", r->st->opts.url, err);
				if (lv_port_hint(r->st->opts.url, err, sizeof(err)))
					fprintf(stderr, "ncclguard watch: %s\n", err);
				r->status = 1;
				break;
			}
			if (added < 0 && cuts(r) == c)
				note(r, "cannot list the relayd's sessions: %s; trying again", err);
			else if (added >= 0)
				r->listed = 1;
			next_list = now + LIST_EVERY_NS;
			for (int i = 0; i < r->n; i++)
				lost += r->lost[i] || r->held[i];
			/* the job is over: its sessions ended, none is new */
			if (added == 0 && r->n && !r->open && !lost)
				break;
		}
		if (!read_turn(r, &next_list) && !stopping(r))
			nanosleep(&(struct timespec){ .tv_nsec = IDLE_NS }, NULL);
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int lv_reader_start(struct lv_reader *r, struct lv_state *st, const struct lv_peer *peer)
{
	int err;

	memset(r, 0, sizeof(*r));
	r->st = st;
	r->peer = peer;
	err = pthread_create(&r->thread, NULL, reader_main, r);
	if (err) {
		fprintf(stderr, "ncclguard watch: cannot start its reader: %s\n", strerror(err));
		return -1;
	}
	return 0;
}

void lv_reader_free(struct lv_reader *r)
{
	if (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
		/* still in a call the cut did not end (a connect): the process
		 * is ending, and what it holds goes with it */
		pthread_detach(r->thread);
		return;
	}
	pthread_join(r->thread, NULL);
	for (int i = 0; i < r->n; i++) {
		lv_session_close(r->s[i]);
		free(r->urls[i]);
		free(r->hosts[i]);
	}
	free(r->s);
	free(r->urls);
	free(r->hosts);
	free(r->held);
	free(r->lost);
	free(r->good_cut);
}
