/*
 * /metrics' body (live/metrics_text.c) over the tracker and the counts
 * (live/mcount.c), on records, without a relayd or a server: both
 * formats (OpenMetrics' counter families without _total, its "# EOF"),
 * label values escaped, the hang's seq as a value on the waiting ranks,
 * the lateness and straggler the live rule leaves in lv_proc, bus
 * bandwidth with nccl-tests' factors, the hardware changes, one series per rank even when two
 * processes claimed it, and the series bounded: linear in ranks, the op
 * rows capped.
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

#define MS	1000000LL
#define S	1000000000LL
#define COMM	0xc0ffee0000000001ull

struct fixture {
	struct lv_state st;
	uint64_t job;
	int hosts;		/* ranks per host */
};

static void start(struct fixture *f, const char *host0, int per_host)
{
	struct ng_watch_opts o = { .url = "net://x", .stuck_s = 3, .every_s = 5,
				   .metrics = "127.0.0.1:9" };

	memset(f, 0, sizeof(*f));
	lv_state_init(&f->st, &o);
	lv_host_id(&f->st, host0);
	f->job = ng_job_tag("j1");
	f->hosts = per_host;
}

static int host_of(struct fixture *f, int r)
{
	char name[32];

	if (r < f->hosts)
		return 0;
	snprintf(name, sizeof(name), "host%d", r / f->hosts);
	return lv_host_id(&f->st, name);
}

static struct ev_event ev_of(struct fixture *f, enum ev_kind k, int r, int vpid, int64_t t)
{
	struct ev_event e;

	memset(&e, 0, sizeof(e));
	e.kind = k;
	e.src.host = host_of(f, r);
	e.src.vpid = vpid;
	e.src.ts = t;
	e.src.job = f->job;
	e.job_id = "";
	return e;
}

static void proc(struct fixture *f, int r, int vpid, const char *job_id, int world)
{
	struct ev_event e = ev_of(f, EV_PROC, r, vpid, 1 * S);

	e.r.proc.rank = r;
	e.r.proc.pid = vpid;
	e.r.proc.world_size = world;
	e.job_id = job_id;
	lv_event(&f->st, e.src.host, &e);
}

static void coll(struct fixture *f, enum ev_kind k, int r, uint64_t seq, const char *op,
		 uint64_t bytes, int64_t dur)
{
	struct ev_event e = ev_of(f, k, r, 100 + r, 2 * S + (int64_t)seq * MS);

	e.r.coll.comm_hash = COMM;
	e.r.coll.seq = seq;
	e.r.coll.op = op;
	e.r.coll.nranks = 4;
	e.r.coll.bytes = bytes;
	e.r.coll.enter_ns = e.src.ts;
	e.r.coll.duration_ns = dur;
	lv_event(&f->st, e.src.host, &e);
}

static char *render(struct fixture *f, int fmt)
{
	size_t len;
	char *out;

	assert_int_equal(lv_mx_render(&f->st, fmt, &out, &len), 0);
	assert_int_equal(strlen(out), len);
	return out;
}

static void has(const char *text, const char *line)
{
	if (!strstr(text, line))
		fail_msg("no '%s' in:\n%s", line, text);
}

static void lacks(const char *text, const char *line)
{
	if (strstr(text, line))
		fail_msg("'%s' in:\n%s", line, text);
}

/* Sample lines (not # lines). */
static int samples(const char *text)
{
	int n = 0;

	for (const char *l = text; *l; l = strchr(l, '\n') + 1) {
		n += *l != '#';
		if (!strchr(l, '\n'))
			break;
	}
	return n;
}

/* 4 ranks on one host, 2 all-reduces of 1 MiB each timed at 1 ms. */
static void job4(struct fixture *f, const char *host)
{
	start(f, host, 4);
	for (int r = 0; r < 4; r++) {
		proc(f, r, 100 + r, "j1", 4);
		for (uint64_t s = 1; s <= 2; s++) {
			coll(f, EV_ENQ, r, s, "allreduce", 1 << 20, 0);
			coll(f, EV_DONE, r, s, "allreduce", 1 << 20, 1 * MS);
		}
	}
}

static void test_text(void **state)
{
	struct fixture f;
	char *t;

	(void)state;
	job4(&f, "hosta");
	f.st.procs[2].late_ns = 1500 * MS;
	f.st.procs[2].straggler = 1;
	t = render(&f, LV_MX_TEXT);
	has(t, "# HELP ncclguard_calls_total ");
	has(t, "# TYPE ncclguard_calls_total counter\n");
	has(t, "# TYPE ncclguard_lateness_seconds gauge\n");
	has(t, "\nncclguard_calls_total{job=\"j1\",host=\"hosta\",rank=\"2\"} 2\n");
	has(t, "\nncclguard_timed_calls_total{job=\"j1\",host=\"hosta\",rank=\"0\"} 2\n");
	has(t, "\nncclguard_nccl_time_seconds_total{job=\"j1\",host=\"hosta\",rank=\"0\"} "
	       "0.002000000\n");
	has(t, "\nncclguard_lateness_seconds{job=\"j1\",host=\"hosta\",rank=\"2\"} 1.500000000\n");
	has(t, "\nncclguard_lateness_seconds{job=\"j1\",host=\"hosta\",rank=\"1\"} 0.000000000\n");
	has(t, "\nncclguard_straggler{job=\"j1\",host=\"hosta\",rank=\"2\"} 1\n");
	has(t, "\nncclguard_straggler{job=\"j1\",host=\"hosta\",rank=\"3\"} 0\n");
	has(t, "\nncclguard_last_seq{job=\"j1\",host=\"hosta\",rank=\"3\"} 2\n");
	/* 8 ranks' calls, 1 MiB class; busbw: 2 (n-1)/n = 1.5 x 1 MiB per ms */
	has(t, "\nncclguard_op_calls_total{job=\"j1\",op=\"allreduce\",size=\"1048576\","
	       "nranks=\"4\"} 8\n");
	has(t, "\nncclguard_op_bus_bytes_total{job=\"j1\",op=\"allreduce\",size=\"1048576\","
	       "nranks=\"4\"} 12582912\n");
	has(t, "\nncclguard_op_busbw_bytes_per_second{job=\"j1\",op=\"allreduce\","
	       "size=\"1048576\",nranks=\"4\"} 1572864000\n");
	lacks(t, "# EOF");
	lacks(t, "# TYPE ncclguard_calls counter");
	free(t);
	lv_state_free(&f.st);
}

static void test_openmetrics(void **state)
{
	struct fixture f;
	char *t;
	size_t n;

	(void)state;
	job4(&f, "hosta");
	t = render(&f, LV_MX_OPENMETRICS);
	has(t, "# TYPE ncclguard_calls counter\n");
	has(t, "# HELP ncclguard_calls ");
	has(t, "\nncclguard_calls_total{job=\"j1\",host=\"hosta\",rank=\"2\"} 2\n");
	has(t, "# TYPE ncclguard_op_bus_bytes counter\n");
	has(t, "# TYPE ncclguard_hang_seq gauge\n");
	lacks(t, "# TYPE ncclguard_calls_total");
	n = strlen(t);
	assert_true(n > 6 && !strcmp(t + n - 6, "# EOF\n"));
	assert_string_equal(lv_mx_content_type(LV_MX_OPENMETRICS),
			    "application/openmetrics-text; version=1.0.0; charset=utf-8");
	assert_string_equal(lv_mx_content_type(LV_MX_TEXT),
			    "text/plain; version=0.0.4; charset=utf-8");
	free(t);
	lv_state_free(&f.st);
}

static void test_escaping(void **state)
{
	struct fixture f;
	char *t;

	(void)state;
	start(&f, "h\"q\\b\nn", 4);
	proc(&f, 0, 100, "job \"x\"\\y", 1);
	t = render(&f, LV_MX_TEXT);
	has(t, "\nncclguard_calls_total{job=\"job \\\"x\\\"\\\\y\",host=\"h\\\"q\\\\b\\nn\","
	       "rank=\"0\"} 0\n");
	free(t);
	lv_state_free(&f.st);
}

/* Rank 3 skips seq 3: ranks 0-2 wait in it; past --stuck, a hang. */
static void test_hang(void **state)
{
	struct lv_hang *h;
	struct fixture f;
	char *t;
	int n;

	(void)state;
	job4(&f, "hosta");
	for (int r = 0; r < 3; r++)
		coll(&f, EV_ENQ, r, 3, "allreduce", 1 << 20, 0);
	t = render(&f, LV_MX_TEXT);
	has(t, "\nncclguard_hang_seq{job=\"j1\",host=\"hosta\",rank=\"0\"} 0\n");
	has(t, "\nncclguard_hangs{job=\"j1\"} 0\n");
	free(t);
	lv_clock_at(&f.st, 0, 60 * S, 1, 0);
	n = lv_hangs(&f.st, lv_shown_job(&f.st), 1, &h);
	assert_int_equal(n, 1);
	lv_hangs_free(h, n);
	t = render(&f, LV_MX_TEXT);
	for (int r = 0; r < 3; r++) {
		char line[128];

		snprintf(line, sizeof(line),
			 "\nncclguard_hang_seq{job=\"j1\",host=\"hosta\",rank=\"%d\"} 3\n", r);
		has(t, line);
	}
	has(t, "\nncclguard_hang_seq{job=\"j1\",host=\"hosta\",rank=\"3\"} 0\n");
	has(t, "\nncclguard_hangs{job=\"j1\"} 1\n");
	free(t);
	lv_state_free(&f.st);
}

/* A rank whose process was replaced: the latest one's series only. */
static void test_restart(void **state)
{
	struct fixture f;
	char *t;

	(void)state;
	job4(&f, "hosta");
	proc(&f, 1, 999, "j1", 4);
	t = render(&f, LV_MX_TEXT);
	has(t, "\nncclguard_calls_total{job=\"j1\",host=\"hosta\",rank=\"1\"} 0\n");
	lacks(t, "\nncclguard_calls_total{job=\"j1\",host=\"hosta\",rank=\"1\"} 2\n");
	free(t);
	lv_state_free(&f.st);
}

/* The hosts' hardware changes, by device and counter. */
static void test_hardware(void **state)
{
	static const uint64_t after[3] = { 1, 0, 7 };
	struct fixture f;
	char *t;

	(void)state;
	job4(&f, "hosta");
	for (int k = 0; k < 3; k++) {
		struct ev_event e = ev_of(&f, EV_HW_CHANGE, 0, 0, 3 * S + k * S);

		e.r.hw.host = "hosta";
		e.r.hw.device = k < 2 ? "mlx5_0" : "gpu0";
		e.r.hw.counter = k < 2 ? "port_state" : "xid";
		e.r.hw.kind = k < 2 ? "nic" : "gpu";
		e.r.hw.before = k;
		e.r.hw.after = after[k];
		e.r.hw.time_ns = e.src.ts;
		lv_event(&f.st, 0, &e);
	}
	t = render(&f, LV_MX_TEXT);
	has(t, "\nncclguard_hw_changes_total{job=\"j1\",host=\"hosta\",device=\"mlx5_0\","
	       "counter=\"port_state\"} 2\n");
	has(t, "\nncclguard_hw_value{job=\"j1\",host=\"hosta\",device=\"mlx5_0\","
	       "counter=\"port_state\"} 0\n");
	has(t, "\nncclguard_hw_changes_total{job=\"j1\",host=\"hosta\",device=\"gpu0\","
	       "counter=\"xid\"} 1\n");
	free(t);
	lv_state_free(&f.st);
}

/* 4,096 ranks, 8 a host: 8 series a rank, 2 a host, the op rows capped. */
static void test_bounded(void **state)
{
	enum { RANKS = 4096, PER_HOST = 8, FIXED = 1 + 1 + 2 };
	struct fixture f;
	char *t;

	(void)state;
	start(&f, "host0", PER_HOST);
	for (int r = 0; r < RANKS; r++)
		proc(&f, r, 100 + r, "j1", RANKS);
	for (int k = 0; k < RANKS; k++) {
		const char *op = k & 1 ? "allreduce" : "allgather";

		/* every size class of both ops, and more comm sizes than rows */
		struct ev_event e = ev_of(&f, EV_ENQ, 0, 100, 2 * S);

		e.r.coll.comm_hash = COMM;
		e.r.coll.seq = 1 + (uint64_t)k;
		e.r.coll.op = op;
		e.r.coll.nranks = 2 + k;
		e.r.coll.bytes = 1ull << (k % 32);
		lv_event(&f.st, 0, &e);
	}
	lv_mx_lost(&f.st, 0, 1, 5);
	for (int h = 1; h < RANKS / PER_HOST; h++)
		lv_mx_lost(&f.st, h, 0, 1);
	assert_int_equal(f.st.mx.nrows, LV_MX_ROWS);
	assert_int_equal(f.st.mx.rows_over, RANKS - LV_MX_ROWS);
	t = render(&f, LV_MX_TEXT);
	/* per rank 8, per host 2 (events lost), per job 1, 5 per op row, the
	 * watch's own */
	assert_int_equal(samples(t), 8 * RANKS + 2 * (RANKS / PER_HOST) + 1 + 5 * LV_MX_ROWS +
					     FIXED - 1);
	has(t, "\nncclguard_events_lost_total{host=\"host0\",reason=\"discarded\"} 5\n");
	has(t, "\nncclguard_watch_rows_full_total{table=\"op\"} 3840\n");
	free(t);
	lv_state_free(&f.st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_openmetrics),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_hang),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_hardware),
		cmocka_unit_test(test_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
