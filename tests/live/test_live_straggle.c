/*
 * The live straggler rule (live/straggle.c, stragprint.c) on records,
 * without a relayd: a rank delayed 20 ms each call named once its late
 * windows are enough, with its host and lateness, and ended once it
 * catches up; jitter alone, and a burst of bad luck, name nobody; calls
 * with a coarse arrival are not judged; a call a rank never entered is
 * dropped when its slot is needed, and those after are judged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "job.h"
#include "lv_priv.h"

#define US	1000LL
#define MS	1000000LL
#define S	1000000000LL
#define COMM	0xc0ffee0000000002ull
#define CYCLE	(2 * MS)

/* Ranks 0-1 on hosta (session 0), 2-3 on hostb (session 1). */
struct fixture {
	struct lv_state st;
	char *out;
	size_t len;
	uint64_t rnd;
	int64_t t;		/* the current call's start */
	uint64_t seq;
};

static void start(struct fixture *f, int json)
{
	struct ng_watch_opts o = { .url = "net://x", .stuck_s = 60, .every_s = 5, .json = json };

	memset(f, 0, sizeof(*f));
	o.out = open_memstream(&f->out, &f->len);
	assert_non_null(o.out);
	lv_state_init(&f->st, &o);
	lv_host_id(&f->st, "hosta");
	lv_host_id(&f->st, "hostb");
	f->rnd = 42;
	f->t = 1 * S;
}

static void stop(struct fixture *f)
{
	fclose(f->st.opts.out);
	lv_state_free(&f->st);
	free(f->out);
}

static const char *printed(struct fixture *f)
{
	lv_strag_print_new(&f->st);
	fflush(f->st.opts.out);
	return f->out ? f->out : "";
}

static struct ev_event ev_of(enum ev_kind k, int r, int64_t t)
{
	struct ev_event e;

	memset(&e, 0, sizeof(e));
	e.kind = k;
	e.src.host = r < 2 ? 0 : 1;
	e.src.vpid = 100 + r;
	e.src.ts = t;
	e.src.job = ng_job_tag("j1");
	e.job_id = "";
	return e;
}

static void procs(struct fixture *f)
{
	for (int r = 0; r < 4; r++) {
		struct ev_event e = ev_of(EV_PROC, r, 1 * S);

		e.r.proc.rank = r;
		e.r.proc.pid = 100 + r;
		e.r.proc.world_size = 4;
		e.job_id = "j1";
		lv_event(&f->st, r < 2 ? 0 : 1, &e);
	}
}

/* Up to 100 us of jitter. */
static int64_t jitter(struct fixture *f)
{
	f->rnd = f->rnd * 6364136223846793005ull + 1442695040888963407ull;
	return (int64_t)((f->rnd >> 33) % (100 * US));
}

/* One call: rank `late` (-1: none) that much late, rank `skip` (-1:
 * none) not entering it, every arrival coarse if coarse. */
static void call(struct fixture *f, int late, int64_t by, int skip, int coarse)
{
	f->seq++;
	for (int r = 0; r < 4; r++) {
		struct ev_event e;

		if (r == skip)
			continue;
		e = ev_of(EV_ENQ, r, f->t + jitter(f) + (r == late ? by : 0));
		e.r.coll.comm_hash = COMM;
		e.r.coll.seq = f->seq;
		e.r.coll.op = "allreduce";
		e.r.coll.nranks = 4;
		e.r.coll.enter_ns = e.src.ts;
		e.r.coll.enter_coarse = coarse;
		lv_event(&f->st, r < 2 ? 0 : 1, &e);
	}
	f->t += CYCLE + (late >= 0 ? by : 0);
}

static int count(const char *s, const char *what)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, what)); p++)
		n++;
	return n;
}

static void test_named_and_ended(void **state)
{
	struct fixture f;
	const char *o;
	int i;

	(void)state;
	start(&f, 0);
	procs(&f);
	/* named after LV_STRAG_NAME late windows, not one call before */
	for (i = 0; i < LV_STRAG_NAME * NG_STRAG_WIN - 1; i++)
		call(&f, 2, 20 * MS, -1, 0);
	assert_string_equal(printed(&f), "");
	assert_false(f.st.procs[2].straggler);
	call(&f, 2, 20 * MS, -1, 0);
	o = printed(&f);
	assert_non_null(strstr(o, "straggler: rank 2 (host hostb) arrives 20.0 ms late (in 4 of "
				  "its last 4 windows of 4 calls on comm c0ffee0000000002)\n"));
	assert_true(f.st.procs[2].straggler);
	assert_in_range(f.st.procs[2].late_ns, 19900 * US, 20100 * US);
	for (i = 0; i < 4; i++)
		assert_int_equal(f.st.procs[i].straggler, i == 2);
	/* still late: said once */
	for (i = 0; i < 100; i++)
		call(&f, 2, 20 * MS, -1, 0);
	assert_int_equal(count(printed(&f), "straggler"), 1);
	/* on time for half the last windows: named still */
	for (i = 0; i < LV_STRAG_WINS / 2 * NG_STRAG_WIN; i++)
		call(&f, -1, 0, -1, 0);
	assert_int_equal(count(printed(&f), "straggler"), 1);
	/* on time again: ended once fewer than LV_STRAG_END of the last
	 * windows are late */
	for (i = 0; i < (LV_STRAG_WINS / 2 - LV_STRAG_END + 1) * NG_STRAG_WIN; i++)
		call(&f, -1, 0, -1, 0);
	o = printed(&f);
	assert_non_null(strstr(o, "straggler ended: rank 2 (host hostb) on comm c0ffee0000000002: "
				  "late in 3 of its last 16 windows of 4 calls\n"));
	assert_false(f.st.procs[2].straggler);
	assert_int_equal(f.st.procs[2].late_ns, 0);
	assert_int_equal(f.st.strag.named, 1);
	stop(&f);
}

static void test_json(void **state)
{
	struct fixture f;
	const char *o;
	double ms;

	(void)state;
	start(&f, 1);
	procs(&f);
	for (int i = 0; i < 64; i++)
		call(&f, 1, 5 * MS, -1, 0);
	o = printed(&f);
	/* within the others' jitter (100 us) of 5 ms */
	assert_int_equal(sscanf(o, "{\"type\": \"straggler\", \"state\": \"start\", \"rank\": 1, "
				"\"host\": \"hosta\", \"pid\": 101, \"comm_hash\": "
				"\"0xc0ffee0000000002\", \"late_ms\": %lf", &ms), 1);
	assert_true(ms > 4.9 && ms < 5.1);
	assert_non_null(strstr(o, "\"late_windows\": 4, \"windows\": 4, \"window_calls\": 4}\n"));
	stop(&f);
}

static void test_no_false_alarm(void **state)
{
	struct fixture f;

	(void)state;
	start(&f, 0);
	procs(&f);
	/* jitter alone */
	for (int i = 0; i < 2000; i++)
		call(&f, -1, 0, -1, 0);
	/* a burst: 3 windows of one rank late, among many */
	for (int k = 0; k < 5; k++) {
		for (int i = 0; i < 3 * NG_STRAG_WIN; i++)
			call(&f, k % 4, 20 * MS, -1, 0);
		for (int i = 0; i < 200; i++)
			call(&f, -1, 0, -1, 0);
	}
	assert_string_equal(printed(&f), "");
	for (int i = 0; i < 4; i++)
		assert_false(f.st.procs[i].straggler);
	stop(&f);
}

static void test_coarse_and_dropped(void **state)
{
	struct fixture f;

	(void)state;
	start(&f, 0);
	procs(&f);
	/* coarse arrivals are no measurement */
	for (int i = 0; i < 200; i++)
		call(&f, 3, 20 * MS, -1, 1);
	assert_string_equal(printed(&f), "");
	/* a call rank 0 never entered: dropped once its slot is needed */
	call(&f, -1, 0, 0, 0);
	for (int i = 0; i < lv_strag_ncalls(4) + LV_STRAG_NAME * NG_STRAG_WIN; i++)
		call(&f, 3, 20 * MS, -1, 0);
	assert_non_null(strstr(printed(&f), "straggler: rank 3 (host hostb)"));
	stop(&f);
}

/* The punctual ranks run 200 calls ahead of the late one, as an
 * asynchronous loop whose queue holds that many does; the late one enters
 * each 20 ms after its previous.  Its arrival at a call comes when the
 * others are 200 calls further: it is named while the job runs, not
 * only from the calls left once the others stopped. */
static void test_queued_ahead(void **state)
{
	struct fixture f;
	int i = 1, k = 1;

	(void)state;
	start(&f, 0);
	procs(&f);
	/* merged in time order, as the sessions are read; the late rank's
	 * first 300 calls */
	while (k <= 300) {
		int64_t ti = f.t + (i > 200 ? (i - 200) * 20 * MS : i * 10 * US);
		int64_t tk = f.t + k * 20 * MS;
		int late = tk < ti;

		for (int r = 0; r < 4; r++) {
			struct ev_event e;

			if ((r == 2) != late)
				continue;
			e = ev_of(EV_ENQ, r, late ? tk : ti);
			e.r.coll.comm_hash = COMM;
			e.r.coll.seq = (uint64_t)(late ? k : i);
			e.r.coll.op = "allreduce";
			e.r.coll.nranks = 4;
			e.r.coll.enter_ns = e.src.ts;
			lv_event(&f.st, r < 2 ? 0 : 1, &e);
		}
		if (late)
			k++;
		else
			i++;
	}
	assert_non_null(strstr(printed(&f), "straggler: rank 2 (host hostb)"));
	stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_named_and_ended),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_no_false_alarm),
		cmocka_unit_test(test_coarse_and_dropped),
		cmocka_unit_test(test_queued_ahead),
	};

	return cmocka_run_group_tests_name("live_straggle", tests, NULL, NULL);
}
