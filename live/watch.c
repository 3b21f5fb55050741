/*
 * ng_watch(): the reader thread (reader.c) talks to the relay; this one
 * prints a report every --every seconds, and the hardware changes and the
 * data mismatches as they come (within a tick), watches the reader's calls
 * to the relay and takes SIGINT and SIGTERM, so that watch always answers:
 * a call the relay has left unanswered for 10 s is said ("relay not
 * answering for 10 s") and cut (cut.c), after which the reader tries
 * again; a signal ends the watch within a second, with a last report,
 * whatever the relay does.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lv_priv.h"

#define SILENT_S	10		/* a relay call unanswered this long */
#define TICK_NS		50000000L	/* how often this thread looks */
#define STOP_WAIT_NS	800000000LL	/* the reader's time to end on a signal */

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
	stop_sig = sig;
}

/* The reader's call under way for SILENT_S: said once, and cut. */
static void silence(struct lv_state *st, struct lv_reader *r, const struct lv_peer *peer,
		    int64_t now, int64_t *said_for)
{
	int64_t since = __atomic_load_n(&r->busy_since, __ATOMIC_ACQUIRE);

	if (!since || since == *said_for || now - since < SILENT_S * 1000000000LL)
		return;
	*said_for = since;
	pthread_mutex_lock(&st->lock);
	lv_note(st, "relay not answering for %d s (%s); trying again", SILENT_S, st->opts.url);
	pthread_mutex_unlock(&st->lock);
	__atomic_add_fetch(&r->cuts, 1, __ATOMIC_ACQ_REL);
	lv_cut(peer);
}

static void report(struct lv_state *st, struct lv_reader *r, int final)
{
	pthread_mutex_lock(&st->lock);
	lv_report(st, lv_mono_ns(), r->open, r->n, r->nheld, final);
	pthread_mutex_unlock(&st->lock);
}

/* On a signal: the reader told to stop, its call cut; a little time for
 * it to end. */
static void stop_reader(struct lv_reader *r, const struct lv_peer *peer)
{
	int64_t until = lv_mono_ns() + STOP_WAIT_NS;

	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&r->cuts, 1, __ATOMIC_ACQ_REL);
	lv_cut(peer);
	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE) && lv_mono_ns() < until)
		nanosleep(&(struct timespec){ .tv_nsec = 10000000L }, NULL);
}

int ng_watch(const struct ng_watch_opts *opts)
{
	struct sigaction sa, old_int, old_term;
	struct lv_reader r;
	struct lv_state st;
	struct lv_peer peer;
	struct lv_mx_server *mx = NULL;
	int64_t now, next_report, said_for = 0;
	int ret = 1;

	if (lv_url_kind(opts->url) < 0) {
		fprintf(stderr, "ncclguard watch: %s: not a relayd URL (net://HOST[:PORT])\n",
			opts->url);
		return 2;
	}
	lv_state_init(&st, opts);
	if (opts->metrics && !(mx = lv_mx_start(&st)))
		goto out_state;
	if (mx) {
		pthread_mutex_lock(&st.lock);
		lv_note(&st, "serving /metrics on %s", opts->metrics);
		pthread_mutex_unlock(&st.lock);
	}
	lv_peer_of(opts->url, &peer);
	st.mono_start = lv_mono_ns();
	next_report = st.mono_start + (int64_t)(opts->every_s * 1e9);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	stop_sig = 0;
	if (lv_reader_start(&r, &st, &peer)) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		goto out_state;
	}
	while (!stop_sig && !__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) {
		nanosleep(&(struct timespec){ .tv_nsec = TICK_NS }, NULL);
		now = lv_mono_ns();
		silence(&st, &r, &peer, now, &said_for);
		pthread_mutex_lock(&st.lock);
		lv_hw_print_new(&st);
		lv_fp_print_new(&st, now);
		lv_strag_print_new(&st);
		pthread_mutex_unlock(&st.lock);
		if (now >= next_report && !stop_sig && !__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) {
			report(&st, &r, 0);
			next_report += (int64_t)(opts->every_s * 1e9);
			if (next_report < now)
				next_report = now + (int64_t)(opts->every_s * 1e9);
		}
	}
	if (stop_sig)
		stop_reader(&r, &peer);
	else if (r.status) {
		/* the relayd could not be read at all: said on stderr */
		ret = r.status;
		goto out;
	}
	report(&st, &r, 1);
	pthread_mutex_lock(&st.lock);
	if (st.opts.json) {
		fprintf(st.opts.out, "{\"type\": \"end\", \"reason\": \"%s\", \"hangs_reported\": "
			"%d, \"data_mismatches\": %llu}\n", stop_sig ? "signal" : "sessions_ended",
			st.hangs_reported, (unsigned long long)st.fp.reported);
	} else {
		fprintf(st.opts.out, "ncclguard watch: %s; %d hang%s reported",
			stop_sig ? "stopped" : "the job's sessions ended", st.hangs_reported,
			st.hangs_reported == 1 ? "" : "s");
		/* said only when there were some: the line is the same as before */
		if (st.fp.reported)
			fprintf(st.opts.out, "; %llu data mismatch%s", (unsigned long long)st.fp.reported,
				st.fp.reported == 1 ? "" : "es");
		fputc('\n', st.opts.out);
	}
	fflush(st.opts.out);
	ret = st.hangs_reported ? NG_WATCH_HANG : 0;
	pthread_mutex_unlock(&st.lock);
out:
	lv_mx_stop(mx);
	mx = NULL;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) {
		/* the reader is still in a call: what it uses stays */
		lv_reader_free(&r);
		return ret;
	}
	lv_reader_free(&r);
out_state:
	lv_mx_stop(mx);
	lv_state_free(&st);
	return ret;
}
