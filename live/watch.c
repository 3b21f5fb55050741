/*
 * ng_watch(): the loop.  Every 2 s the relayd is asked for its sessions
 * and the new ones are attached (hosts start at different times); every
 * session with data is read a little in turn; a report goes out every
 * --every seconds.  It ends once every session it attached to has ended
 * and the relayd lists no new one, or on SIGINT/SIGTERM, with a last
 * report either way.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lv_priv.h"

#define LIST_EVERY_NS	2000000000LL	/* the relayd asked for new sessions */
#define STEP_BUDGET	64		/* batches read from a session in a turn */
#define IDLE_NS		20000000L	/* a nap when no session had data */

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
	stop_sig = sig;
}

struct attached {
	char **urls;		/* every session ever attached, by URL */
	struct lv_session **s;	/* NULL once ended */
	int n, open;
	int warned_viewer;	/* a session had another viewer: said once */
};

static int known(const struct attached *a, const char *url)
{
	for (int i = 0; i < a->n; i++)
		if (!strcmp(a->urls[i], url))
			return 1;
	return 0;
}

static void attach(struct lv_state *st, struct attached *a, const char *url, const char *host)
{
	struct lv_session *s = lv_session_open(st, a->n, url);

	a->urls = lv_xrealloc(a->urls, (a->n + 1) * sizeof(*a->urls));
	a->s = lv_xrealloc(a->s, (a->n + 1) * sizeof(*a->s));
	a->urls[a->n] = lv_xstrdup(url);
	a->s[a->n] = s;
	a->n++;
	if (!s)
		return;
	a->open++;
	lv_note(st, "attached to %s%s%s", url, host && *host ? ", host " : "", host ? host : "");
}

/* New sessions attached; 1 if there were any, 0 if none, -1 if the relayd
 * could not be asked (why in err). */
static int attach_new(struct lv_state *st, struct attached *a, int one_session, char *err,
		      size_t errlen)
{
	struct lv_listed *l;
	int n, added = 0;

	if (one_session) {
		if (known(a, st->opts.url))
			return 0;
		attach(st, a, st->opts.url, NULL);
		return 1;
	}
	if (lv_list_sessions(st->opts.url, &l, &n, err, errlen))
		return -1;
	for (int i = 0; i < n; i++) {
		if (known(a, l[i].url))
			continue;
		/* LTTng serves a session to one live viewer at a time */
		if (l[i].clients) {
			if (!a->warned_viewer++)
				lv_note(st, "%s already has a live viewer (LTTng allows one): "
					"not attached", l[i].url);
			continue;
		}
		attach(st, a, l[i].url, l[i].host);
		added = 1;
	}
	lv_listed_free(l, n);
	return added;
}

int ng_watch(const struct ng_watch_opts *opts)
{
	struct sigaction sa, old_int, old_term;
	struct attached a = { 0 };
	struct lv_state st;
	int64_t now, next_list = 0, next_report;
	int kind = lv_url_kind(opts->url), listed = 0, ret = 1;
	char err[512];

	if (kind < 0) {
		fprintf(stderr, "ncclguard watch: %s: not a relayd URL (net://HOST[:PORT])\n",
			opts->url);
		return 2;
	}
	lv_state_init(&st, opts);
	st.mono_start = lv_mono_ns();
	next_report = st.mono_start + (int64_t)(opts->every_s * 1e9);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	stop_sig = 0;
	for (;;) {
		int progressed = 0, added = 0;

		now = lv_mono_ns();
		if (stop_sig)
			break;
		if (now >= next_list) {
			added = attach_new(&st, &a, kind == 1, err, sizeof(err));
			if (added < 0 && !listed) {
				fprintf(stderr, "ncclguard watch: %s: cannot list the relayd's "
					"sessions: %s\n", opts->url, err);
				if (lv_port_hint(opts->url, err, sizeof(err)))
					fprintf(stderr, "ncclguard watch: %s\n", err);
				goto out;
			}
			if (added < 0)
				lv_note(&st, "cannot list the relayd's sessions: %s; trying again",
					err);
			else
				listed = 1;
			next_list = now + LIST_EVERY_NS;
			/* the job is over: its sessions ended, none is new */
			if (added == 0 && a.n && !a.open)
				break;
		}
		for (int i = 0; i < a.n; i++) {
			int r;

			if (!a.s[i])
				continue;
			r = lv_session_step(a.s[i], STEP_BUDGET);
			if (r > 0)
				progressed = 1;
			if (r < 0) {
				lv_note(&st, "%s ended", a.urls[i]);
				lv_session_close(a.s[i]);
				a.s[i] = NULL;
				a.open--;
				/* ask at once whether others remain */
				next_list = 0;
			}
		}
		now = lv_mono_ns();
		if (now >= next_report) {
			lv_report(&st, now, a.open, a.n, 0);
			next_report += (int64_t)(opts->every_s * 1e9);
			if (next_report < now)
				next_report = now + (int64_t)(opts->every_s * 1e9);
		}
		if (!progressed)
			nanosleep(&(struct timespec){ .tv_nsec = IDLE_NS }, NULL);
	}
	lv_report(&st, lv_mono_ns(), a.open, a.n, 1);
	if (st.opts.json)
		fprintf(st.opts.out, "{\"type\": \"end\", \"reason\": \"%s\", \"hangs_reported\": "
			"%d}\n", stop_sig ? "signal" : "sessions_ended", st.hangs_reported);
	else
		fprintf(st.opts.out, "ncclguard watch: %s; %d hang%s reported\n",
			stop_sig ? "stopped" : "the job's sessions ended", st.hangs_reported,
			st.hangs_reported == 1 ? "" : "s");
	fflush(st.opts.out);
	ret = st.hangs_reported ? NG_WATCH_HANG : 0;
out:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	for (int i = 0; i < a.n; i++) {
		lv_session_close(a.s[i]);
		free(a.urls[i]);
	}
	free(a.s);
	free(a.urls);
	lv_state_free(&st);
	return ret;
}
