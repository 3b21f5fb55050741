/*
 * The watch's output fingerprints (live/fp.c, live/fpprint.c) on records,
 * without a relayd: a call settled once every rank's fingerprint came or
 * LV_FP_SETTLE_S after the first, the ranks grouped by hash, the rank
 * that differs named (or no majority said), what is dropped and counted
 * (late, unidentified, evicted), and the lines and records printed.
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

#define S	1000000000LL
#define COMM	0x3fa2000000000001ull
#define GOOD	0x1111ull
#define BAD	0x2222ull

/* Ranks 0-1 on hosta, 2-3 on hostb; what watch prints in out. */
struct fixture {
	struct lv_state st;
	char *out;
	size_t len, seen;
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
}

static void stop(struct fixture *f)
{
	fclose(f->st.opts.out);
	free(f->out);
	lv_state_free(&f->st);
}

/* What was printed since the last call, NUL-terminated. */
static const char *printed(struct fixture *f)
{
	size_t from = f->seen;

	fflush(f->st.opts.out);
	f->seen = f->len;
	return f->out + from;
}

static struct ev_event ev_of(enum ev_kind k, int r)
{
	struct ev_event e;

	memset(&e, 0, sizeof(e));
	e.kind = k;
	e.src.host = r < 2 ? 0 : 1;
	e.src.vpid = 100 + r;
	e.src.ts = 1 * S;
	e.src.job = ng_job_tag("j1");
	e.job_id = "j1";
	return e;
}

static void proc(struct fixture *f, int r)
{
	struct ev_event e = ev_of(EV_PROC, r);

	e.r.proc.rank = r;
	e.r.proc.pid = 100 + r;
	e.r.proc.world_size = 4;
	lv_event(&f->st, r < 2 ? 0 : 1, &e);
}

static void fprint(struct fixture *f, int r, uint64_t seq, int nranks, uint64_t hash,
		   const char *slices)
{
	struct ev_event e = ev_of(EV_FPRINT, r);

	e.r.fp.comm_hash = COMM;
	e.r.fp.seq = seq;
	e.r.fp.op = "allreduce";
	e.r.fp.nranks = nranks;
	e.r.fp.bytes = 1 << 20;
	e.r.fp.compared = 4096;
	e.r.fp.slices = slices ? slices : "0+1024,4096+1024,65536+1024,1047552+1024";
	e.r.fp.hash = hash;
	lv_event(&f->st, r < 2 ? 0 : 1, &e);
}

static const struct lv_fp_comm *fc_of(struct fixture *f)
{
	assert_int_equal(f->st.ncomms, 1);
	assert_non_null(f->st.comms[0]->fp);
	return f->st.comms[0]->fp;
}

static void test_group(void **state)
{
	struct lv_fp_mark m[4] = { { .hash = 1 }, { .hash = 1 }, { .hash = 2 }, { .hash = 1 } };
	int g[4];

	(void)state;
	assert_int_equal(lv_fp_group(m, 4, g), 2);
	assert_int_equal(g[0], 0);
	assert_int_equal(g[2], 1);
	assert_int_equal(g[3], 0);
	/* the larger group first, whoever came first */
	m[0].hash = 3;
	m[1].hash = 2;
	m[3].hash = 2;
	assert_int_equal(lv_fp_group(m, 4, g), 2);
	assert_int_equal(g[0], 1);
	assert_int_equal(g[1], 0);
	/* ties: first met first */
	m[1].hash = 3;
	assert_int_equal(lv_fp_group(m, 4, g), 2);
	assert_int_equal(g[0], 0);
	assert_int_equal(g[2], 1);
	assert_int_equal(lv_fp_group(m, 1, g), 1);
}

/* Rank 2 differs at seq 2047: named once every rank's came, in text. */
static void test_majority_text(void **state)
{
	struct fixture f;

	(void)state;
	start(&f, 0);
	for (int r = 0; r < 4; r++)
		proc(&f, r);
	for (int r = 3; r >= 0; r--)
		fprint(&f, r, 1023, 4, GOOD, NULL);
	for (int r = 0; r < 3; r++)
		fprint(&f, r, 2047, 4, r == 2 ? BAD : GOOD, NULL);
	assert_int_equal(fc_of(&f)->compared, 1);
	assert_int_equal(fc_of(&f)->npend, 1);
	lv_fp_print_new(&f.st, lv_mono_ns());
	assert_string_equal(printed(&f), "");
	fprint(&f, 3, 2047, 4, GOOD, NULL);
	assert_int_equal(fc_of(&f)->npend, 0);
	assert_int_equal(fc_of(&f)->compared, 2);
	assert_int_equal(fc_of(&f)->mismatched, 1);
	lv_fp_print_new(&f.st, lv_mono_ns());
	assert_string_equal(printed(&f), "data mismatch: comm 3fa2000000000001 all-reduce seq 2047 "
			    "(1 MiB, 4 KiB compared): rank 2 (hostb) differs from ranks 0, 1, 3\n");
	assert_int_equal(f.st.fp.reported, 1);
	lv_fp_report_text(f.st.opts.out, &f.st, lv_shown_job(&f.st));
	assert_non_null(strstr(printed(&f), "  verified outputs: 2 calls compared, 1 mismatched "
				"(comm 3fa2000000000001: 1 of 2)\n"));
	stop(&f);
}

/* 2 against 2, and 1 against 1: no majority, every rank named. */
static void test_no_majority(void **state)
{
	struct fixture f;

	(void)state;
	start(&f, 0);
	for (int r = 0; r < 4; r++)
		proc(&f, r);
	for (int r = 0; r < 4; r++)
		fprint(&f, r, 7, 4, r < 2 ? GOOD : BAD, NULL);
	lv_fp_print_new(&f.st, lv_mono_ns());
	assert_string_equal(printed(&f), "data mismatch: comm 3fa2000000000001 all-reduce seq 7 "
			    "(1 MiB, 4 KiB compared): no majority: ranks 0, 1 (hosta) hold one "
			    "output, ranks 2, 3 (hostb) another; the check cannot tell which is "
			    "wrong\n");
	stop(&f);

	start(&f, 1);
	proc(&f, 0);
	proc(&f, 2);
	fprint(&f, 2, 15, 2, BAD, NULL);
	fprint(&f, 0, 15, 2, GOOD, NULL);
	lv_fp_print_new(&f.st, lv_mono_ns());
	assert_string_equal(printed(&f), "{\"type\": \"data_mismatch\", \"comm_hash\": "
			    "\"0x3fa2000000000001\", \"seq\": 15, \"op\": \"allreduce\", \"bytes\": "
			    "1048576, \"compared\": 4096, \"ranks\": [0, 2], \"hosts\": [\"hosta\", "
			    "\"hostb\"], \"majority\": false, \"groups\": [[0], [2]]}\n");
	stop(&f);
}

static void test_majority_json(void **state)
{
	struct fixture f;

	(void)state;
	start(&f, 1);
	for (int r = 0; r < 4; r++)
		proc(&f, r);
	for (int r = 0; r < 4; r++)
		fprint(&f, r, 1023, 4, r == 2 ? BAD : GOOD, NULL);
	lv_fp_print_new(&f.st, lv_mono_ns());
	assert_string_equal(printed(&f), "{\"type\": \"data_mismatch\", \"comm_hash\": "
			    "\"0x3fa2000000000001\", \"seq\": 1023, \"op\": \"allreduce\", \"bytes\": "
			    "1048576, \"compared\": 4096, \"ranks\": [2], \"hosts\": [\"hostb\"], "
			    "\"majority\": true, \"groups\": [[0, 1, 3], [2]]}\n");
	stop(&f);
}

/* A rank that never writes its own: settled LV_FP_SETTLE_S after the
 * first; its fingerprint coming later is late. */
static void test_deadline(void **state)
{
	struct fixture f;
	int64_t t0;

	(void)state;
	start(&f, 0);
	for (int r = 0; r < 4; r++)
		proc(&f, r);
	t0 = lv_mono_ns();
	for (int r = 0; r < 3; r++)
		fprint(&f, r, 1023, 4, r == 1 ? BAD : GOOD, NULL);
	lv_fp_print_new(&f.st, t0 + (LV_FP_SETTLE_S - 1) * S);
	assert_string_equal(printed(&f), "");
	assert_int_equal(fc_of(&f)->npend, 1);
	lv_fp_print_new(&f.st, lv_mono_ns() + LV_FP_SETTLE_S * S);
	assert_string_equal(printed(&f), "data mismatch: comm 3fa2000000000001 all-reduce seq 1023 "
			    "(1 MiB, 4 KiB compared): rank 1 (hosta) differs from ranks 0, 2\n");
	fprint(&f, 3, 1023, 4, GOOD, NULL);
	assert_int_equal(f.st.fp.late, 1);
	assert_int_equal(fc_of(&f)->npend, 0);
	stop(&f);
}

/* A process whose rank never came: its fingerprint is dropped and
 * counted, and one rank left is nothing compared; slices that differ
 * are nothing compared either. */
static void test_unpaired(void **state)
{
	struct fixture f;

	(void)state;
	start(&f, 0);
	proc(&f, 0);
	fprint(&f, 0, 1023, 2, GOOD, NULL);
	fprint(&f, 1, 1023, 2, BAD, NULL);
	assert_int_equal(f.st.fp.unidentified, 1);
	assert_int_equal(fc_of(&f)->unpaired, 1);
	assert_int_equal(fc_of(&f)->compared, 0);
	proc(&f, 1);
	fprint(&f, 0, 2047, 2, GOOD, "0+1024");
	fprint(&f, 1, 2047, 2, BAD, "1024+1024");
	assert_int_equal(fc_of(&f)->unpaired, 2);
	assert_int_equal(fc_of(&f)->mismatched, 0);
	lv_fp_print_new(&f.st, lv_mono_ns());
	assert_string_equal(printed(&f), "");
	lv_fp_report_text(f.st.opts.out, &f.st, lv_shown_job(&f.st));
	assert_string_equal(printed(&f), "  verified outputs: 0 calls compared, 0 mismatched, "
			    "2 unpaired; 1 fingerprint dropped\n");
	stop(&f);
}

/* More calls pending than kept: the oldest settled early, counted. */
static void test_evicted(void **state)
{
	struct fixture f;

	(void)state;
	start(&f, 0);
	for (int r = 0; r < 2; r++)
		proc(&f, r);
	for (uint64_t s = 0; s <= LV_FP_PENDING; s++)
		fprint(&f, 0, 1023 + 1024 * s, 2, GOOD, NULL);
	assert_int_equal(f.st.fp.evicted, 1);
	assert_int_equal(fc_of(&f)->npend, LV_FP_PENDING);
	assert_int_equal(fc_of(&f)->unpaired, 1);
	/* the evicted call's own: late */
	fprint(&f, 1, 1023, 2, GOOD, NULL);
	assert_int_equal(f.st.fp.late, 1);
	fprint(&f, 1, 2047, 2, GOOD, NULL);
	assert_int_equal(fc_of(&f)->compared, 1);
	stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group),
		cmocka_unit_test(test_majority_text),
		cmocka_unit_test(test_no_majority),
		cmocka_unit_test(test_majority_json),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_unpaired),
		cmocka_unit_test(test_evicted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
