/*
 * The watch's progress tracker (live/track.c) on records, without a
 * relayd: the pending collective and who waits or is missing, waits
 * measured on each host's own clock whatever the offset between hosts,
 * a hung init and the rank that never joined it, a hang resolved, the
 * --job filter, a host new to the watch starting with nothing said of
 * it, and the hardware changes: which are near a hang (hosts of its
 * ranks, the window before it began), how they print as they come.
 * Heartbeats: a late watch's first events, the hang they show, the
 * ranks not seen, a rank gone silent.
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hw.h"
#include "job.h"
#include "lv_priv.h"

#define MS	1000000LL
#define S	1000000000LL
#define COMM	0xc0ffee0000000001ull

/* Ranks 0-1 on host 0 (session 0), 2-3 on host 1 (session 1), whose
 * clock reads skew ahead. */
struct fixture {
	struct lv_state st;
	int64_t skew;
	uint64_t job;
};

static int sess_of(int r)
{
	return r < 2 ? 0 : 1;
}

static void start(struct fixture *f, int64_t skew, const char *want)
{
	struct ng_watch_opts o = { .url = "net://x", .stuck_s = 60, .every_s = 5, .job = want };

	memset(f, 0, sizeof(*f));
	lv_state_init(&f->st, &o);
	lv_host_id(&f->st, "hosta");
	lv_host_id(&f->st, "hostb");
	f->skew = skew;
	f->job = ng_job_tag("j1");
}

static struct ev_event ev_of(struct fixture *f, enum ev_kind k, int r, int64_t t)
{
	struct ev_event e;

	memset(&e, 0, sizeof(e));
	e.kind = k;
	e.src.host = sess_of(r);
	e.src.vpid = 100 + r;
	e.src.ts = t + (sess_of(r) ? f->skew : 0);
	e.src.job = f->job;
	e.job_id = "";
	return e;
}

static void proc(struct fixture *f, int r, int world)
{
	struct ev_event e = ev_of(f, EV_PROC, r, 1 * S);

	e.r.proc.rank = r;
	e.r.proc.pid = 100 + r;
	e.r.proc.world_size = world;
	e.job_id = "j1";
	lv_event(&f->st, sess_of(r), &e);
}

static void init(struct fixture *f, int r, int end, int64_t t)
{
	struct ev_event e = ev_of(f, end ? EV_INIT_END : EV_INIT_BEGIN, r, t);

	e.r.init.comm_hash = COMM;
	e.r.init.nranks = 4;
	e.r.init.rank = r;
	e.r.init.end = end;
	lv_event(&f->st, sess_of(r), &e);
}

static void enq(struct fixture *f, int r, uint64_t seq, int64_t t)
{
	struct ev_event e = ev_of(f, EV_ENQ, r, t);

	e.r.coll.comm_hash = COMM;
	e.r.coll.seq = seq;
	e.r.coll.op = "allreduce";
	e.r.coll.nranks = 4;
	e.r.coll.enter_ns = e.src.ts;
	lv_event(&f->st, sess_of(r), &e);
}

/* Both sessions' clocks read t (plus the skew) at monotonic time mono. */
static void clocks(struct fixture *f, int64_t t, int64_t mono)
{
	lv_clock_at(&f->st, 0, t, mono, 0);
	lv_clock_at(&f->st, 1, t + f->skew, mono, 0);
}

static int hangs(struct fixture *f, int64_t mono, struct lv_hang **h)
{
	return lv_hangs(&f->st, lv_shown_job(&f->st), mono, h);
}

static int64_t rank_of(struct fixture *f, int proc)
{
	return f->st.procs[proc].rank;
}

static void test_collective(void **state)
{
	struct fixture f;
	struct lv_hang *h;
	int n;

	(void)state;
	start(&f, 250 * MS, NULL);
	for (int r = 0; r < 4; r++) {
		proc(&f, r, 4);
		init(&f, r, 0, 2 * S);
		init(&f, r, 1, 2 * S + 10 * MS);
	}
	for (uint64_t s = 1; s <= 5; s++)
		for (int r = 0; r < 4; r++)
			if (r != 3 || s < 5)
				/* rank 2 (hostb) is the first into seq 5 */
				enq(&f, r, s, 10 * S + (int64_t)s * MS + (r == 2 ? 0 : 100000));
	/* 30 s later on both hosts: pending, not yet a hang */
	clocks(&f, 40 * S, 1000 * S);
	n = hangs(&f, 1000 * S, &h);
	assert_int_equal(n, 0);
	lv_hangs_free(h, n);
	/* 61 s after the first entry, on its host's clock, whatever the skew */
	n = hangs(&f, 1031 * S, &h);
	assert_int_equal(n, 1);
	assert_int_equal(h[0].seq, 5);
	assert_string_equal(h[0].op, "allreduce");
	assert_true(h[0].waited_s > 60.9 && h[0].waited_s < 61.1);
	assert_int_equal(h[0].nwait, 3);
	assert_int_equal(h[0].nmiss, 1);
	assert_int_equal(rank_of(&f, h[0].miss[0]), 3);
	assert_int_equal(h[0].unseen, 0);
	assert_true(h[0].is_new);
	lv_hangs_free(h, n);
	/* still there: not new */
	n = hangs(&f, 1032 * S, &h);
	assert_int_equal(n, 1);
	assert_false(h[0].is_new);
	lv_hangs_free(h, n);
	/* rank 3 arrives: resolved */
	enq(&f, 3, 5, 75 * S);
	n = hangs(&f, 1033 * S, &h);
	assert_int_equal(n, 0);
	assert_int_equal(f.st.comms[0]->resolved_seq, 5);
	lv_hangs_free(h, n);
	lv_state_free(&f.st);
}

static void test_init(void **state)
{
	struct fixture f;
	struct lv_hang *h;
	int n;

	(void)state;
	start(&f, -40 * MS, NULL);
	for (int r = 0; r < 4; r++)
		proc(&f, r, 4);
	/* rank 3 never begins the init of the world's comm */
	for (int r = 0; r < 3; r++)
		init(&f, r, 0, 2 * S);
	clocks(&f, 50 * S, 500 * S);
	n = hangs(&f, 500 * S, &h);
	assert_int_equal(n, 0);
	lv_hangs_free(h, n);
	n = hangs(&f, 513 * S, &h);
	assert_int_equal(n, 1);
	assert_string_equal(h[0].op, "init");
	assert_int_equal(h[0].nwait, 3);
	assert_int_equal(h[0].nmiss, 1);
	assert_int_equal(rank_of(&f, h[0].miss[0]), 3);
	assert_true(ng_u64map_get(&h[0].comm->member_of, (uint64_t)h[0].miss[0]) < 0);
	lv_hangs_free(h, n);
	lv_state_free(&f.st);
}

static void test_job_filter(void **state)
{
	struct fixture f;
	struct lv_hang *h;
	int n;

	(void)state;
	start(&f, 0, "j2");
	for (int r = 0; r < 4; r++)
		proc(&f, r, 4);
	for (int r = 0; r < 3; r++)
		enq(&f, r, 1, 2 * S);
	assert_int_equal(f.st.dropped, 7);
	assert_int_equal(f.st.nprocs, 0);
	assert_int_equal(lv_shown_job(&f.st), -1);
	clocks(&f, 100 * S, 100 * S);
	n = hangs(&f, 200 * S, &h);
	assert_int_equal(n, 0);
	lv_hangs_free(h, n);
	lv_state_free(&f.st);
}

/* Memory from malloc is not zero: a new host must not start out
 * "doubled" (two sessions of one name at the relay), which would also
 * keep the note that says so from ever being written. */
static void test_new_host(void **state)
{
	struct ng_watch_opts o = { .url = "net://x", .stuck_s = 60, .every_s = 5 };
	struct lv_state st;
	char name[16];

	(void)state;
	/* glibc fills new blocks with this; ASan's malloc has its own fill */
	mallopt(M_PERTURB, 0x5a);
	memset(&st, 0, sizeof(st));
	lv_state_init(&st, &o);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "host%d", i);
		assert_int_equal(lv_host_id(&st, name), i);
		assert_int_equal(st.hosts[i].doubled, 0);
	}
	assert_int_equal(lv_host_id(&st, "host7"), 7);
	lv_state_free(&st);
	mallopt(M_PERTURB, 0);
}

/* A hw_change on host hi (its session's clock). */
static void hw(struct fixture *f, int hi, const char *dev, const char *ctr, uint64_t before,
	       uint64_t after, int flags, int64_t t)
{
	struct ev_event e;

	memset(&e, 0, sizeof(e));
	e.kind = EV_HW_CHANGE;
	e.src.host = hi;
	e.src.vpid = 900 + hi;
	e.src.ts = t + (hi ? f->skew : 0);
	e.src.job = f->job;
	e.job_id = "";
	e.r.hw.host = "";
	e.r.hw.device = dev;
	e.r.hw.counter = ctr;
	e.r.hw.before = before;
	e.r.hw.after = after;
	e.r.hw.time_ns = e.src.ts;
	e.r.hw.flags = flags;
	lv_event(&f->st, hi, &e);
}

/* A hw_sample of host hi: why start, end or timeout. */
static void hw_sample(struct fixture *f, int hi, const char *why)
{
	struct ev_event e;

	memset(&e, 0, sizeof(e));
	e.kind = EV_HW_SAMPLE;
	e.src.host = hi;
	e.src.vpid = 900 + hi;
	e.src.job = f->job;
	e.job_id = "";
	e.r.hw.kind = why;
	lv_event(&f->st, hi, &e);
}

/* Ranks 0-3 in step to seq 4; 0-2 enter seq 5 at 10 s, rank 3 (hostb)
 * does not; the clocks read 100 s. */
static void hung(struct fixture *f)
{
	for (int r = 0; r < 4; r++) {
		proc(f, r, 4);
		init(f, r, 0, 2 * S);
		init(f, r, 1, 2 * S + 10 * MS);
	}
	for (uint64_t s = 1; s <= 5; s++)
		for (int r = 0; r < 4; r++)
			if (r != 3 || s < 5)
				enq(f, r, s, 10 * S + (int64_t)(s - 5) * MS);
	clocks(f, 100 * S, 1000 * S);
}

static char *printed(struct fixture *f, char **buf, size_t *len)
{
	f->st.opts.out = open_memstream(buf, len);
	assert_non_null(f->st.opts.out);
	return *buf;
}

static void test_hw_near(void **state)
{
	struct fixture f;
	struct lv_hw_near *v;
	struct lv_hang *h;
	char *buf = NULL;
	size_t len = 0;
	int n;

	(void)state;
	start(&f, 0, NULL);
	lv_host_id(&f.st, "hostc");
	/* on hostb (rank 3 missing): in the window, before it; too early */
	hw(&f, 1, "mlx5_2/1", "link_downed", 0, 1, 0, 10 * S - 1300 * MS);
	hw(&f, 1, "mlx5_2/1", "symbol_error", 7, 9, 0, 10 * S - 41 * S);
	/* levels, a reset, traffic resuming: no evidence */
	hw(&f, 1, "0000:1a:00.0", "temperature_c", 60, 85, 0, 10 * S);
	hw(&f, 1, "mlx5_2/1", "port_rcv_errors", 9, 0, NG_HW_RESET, 10 * S);
	hw(&f, 1, "0000:1a:00.0/link3", "nvlink_traffic", 0, 1, 0, 10 * S);
	/* on hosta (waiting ranks 0-1), and on hostc (no rank of it) */
	hw(&f, 0, "0000:1a:00.0", "xid", 0, 79, 0, 10 * S + 2 * S);
	hw(&f, 2, "mlx5_0/1", "link_downed", 0, 1, 0, 10 * S);
	hung(&f);
	n = hangs(&f, 1000 * S, &h);
	assert_int_equal(n, 1);
	assert_int_equal(h[0].began, 10 * S);
	{
		int k = lv_hw_near(&f.st, &h[0], &v);

		assert_int_equal(k, 2);
		assert_string_equal(v[0].c->counter, "link_downed");
		assert_string_equal(v[0].c->device, "mlx5_2/1");
		assert_true(v[0].of_missing);
		assert_true(v[0].rel_s > -1.31 && v[0].rel_s < -1.29);
		assert_string_equal(v[1].c->counter, "xid");
		assert_false(v[1].of_missing);
		free(v);
	}
	printed(&f, &buf, &len);
	lv_hw_hang_text(f.st.opts.out, &f.st, &h[0]);
	fclose(f.st.opts.out);
	assert_non_null(strstr(buf, "; near it: host hostb mlx5_2/1 link_downed +1 at "));
	assert_non_null(strstr(buf, " (1.3 s before), host hosta 0000:1a:00.0 Xid 79 at "));
	assert_non_null(strstr(buf, " (2.0 s after)"));
	assert_null(strstr(buf, "hostc"));
	free(buf);
	lv_hangs_free(h, n);
	lv_state_free(&f.st);
}

/* No change near a hang: said of the hosts whose sampler is known to
 * run (hostb's), not of one that ended (hosta's) or never said so. */
static void test_hw_none(void **state)
{
	struct fixture f;
	struct lv_hang *h;
	char *buf = NULL;
	size_t len = 0;
	int n;

	(void)state;
	start(&f, 0, NULL);
	hw_sample(&f, 1, "timeout");
	hw_sample(&f, 1, "start");
	hw_sample(&f, 1, "timeout");
	hw_sample(&f, 0, "start");
	hw_sample(&f, 0, "end");
	hung(&f);
	n = hangs(&f, 1000 * S, &h);
	assert_int_equal(n, 1);
	printed(&f, &buf, &len);
	lv_hw_hang_text(f.st.opts.out, &f.st, &h[0]);
	fputc('|', f.st.opts.out);
	lv_hw_hang_json(f.st.opts.out, &f.st, &h[0]);
	fclose(f.st.opts.out);
	assert_string_equal(buf, "; no hardware change near it on hostb|\"hardware\": [], "
			    "\"hardware_sampled_hosts\": [\"hostb\"]");
	free(buf);
	lv_hangs_free(h, n);
	lv_state_free(&f.st);
}

/* As they come: text leaves levels and traffic out, --json has them;
 * a sampler's unseen devices said once per host. */
static void test_hw_print(void **state)
{
	struct fixture f;
	struct ev_event e;
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	start(&f, 0, NULL);
	proc(&f, 0, 4);
	hw(&f, 1, "mlx5_2/1", "symbol_error", 65530, 65535, NG_HW_SATURATED, 10 * S);
	hw(&f, 1, "0000:1a:00.0", "xid", 0, 79, 0, 10 * S);
	hw(&f, 1, "0000:1a:00.0", "power_w", 100, 400, 0, 10 * S);
	hw(&f, 1, "0000:1a:00.0/link3", "nvlink_traffic", 1, 0, 0, 10 * S);
	hw(&f, 1, "mlx5_2/1", "port_rcv_errors", 9, 2, NG_HW_RESET, 10 * S);
	hw(&f, 1, "0000:1a:00.0", "remap_pending", 0, 1, NG_HW_AT_START, 10 * S);
	memset(&e, 0, sizeof(e));
	e.kind = EV_HW_DEVICE;
	e.src.host = 1;
	e.src.job = f.job;
	e.job_id = "";
	for (int i = 0; i < 3; i++) {
		e.r.hw.device = i ? "0000:1b:00.0" : "0000:1a:00.0";
		e.r.hw.detail = i == 2 ? "pcie_replay: not supported" : "xid: events refused";
		lv_event(&f.st, 1, &e);
	}
	printed(&f, &buf, &len);
	lv_hw_print_new(&f.st);
	lv_hw_print_new(&f.st);		/* nothing new: nothing */
	fclose(f.st.opts.out);
	assert_non_null(strstr(buf, "host hostb: hardware evidence lacks: xid: events refused "
				    "(0000:1a:00.0, 0000:1b:00.0); pcie_replay: not supported "
				    "(0000:1b:00.0)\n"));
	assert_non_null(strstr(buf, "] hardware: host hostb mlx5_2/1 symbol_error 65530 -> 65535 "
				    "+5 saturated\n"));
	assert_non_null(strstr(buf, "] hardware: host hostb 0000:1a:00.0 Xid 79\n"));
	assert_non_null(strstr(buf, "] hardware: host hostb mlx5_2/1 port_rcv_errors 9 -> 2 "
				    "(reset)\n"));
	assert_non_null(strstr(buf, "] hardware: host hostb 0000:1a:00.0 remap_pending 0 -> 1 "
				    "(so at the sampler's start)\n"));
	assert_null(strstr(buf, "power_w"));
	assert_null(strstr(buf, "nvlink_traffic"));
	assert_null(strstr(strstr(buf, "Xid 79") + 1, "Xid 79"));
	free(buf);
	buf = NULL;
	f.st.opts.json = 1;
	f.st.hw.printed = 0;
	printed(&f, &buf, &len);
	lv_hw_print_new(&f.st);
	fclose(f.st.opts.out);
	assert_non_null(strstr(buf, "{\"type\": \"hardware\", \"host\": \"hostb\", \"device\": "
				    "\"0000:1a:00.0\", \"counter\": \"power_w\", \"kind\": \"level\", "
				    "\"before\": 100, \"after\": 400, \"time\": 10.000, "
				    "\"saturated\": false, \"reset\": false, \"at_start\": false, "
				    "\"evidence\": false}\n"));
	assert_non_null(strstr(buf, "\"counter\": \"nvlink_traffic\", \"kind\": \"traffic\", "
				    "\"before\": 1, \"after\": 0"));
	free(buf);
	lv_state_free(&f.st);
}

/* A heartbeat of rank r on COMM (0: none) at t: last seq entered, done,
 * what it waits on, its seq and for how long. */
static void beat(struct fixture *f, int r, uint64_t comm, const char *waiting, uint64_t last,
		 uint64_t done, uint64_t wait_seq, int64_t waited, int64_t t)
{
	struct ev_event e = ev_of(f, EV_HEARTBEAT, r, t);

	e.job_id = "j1";
	e.r.hb.host = sess_of(r) ? "hostb" : "hosta";
	e.r.hb.waiting = waiting;
	e.r.hb.op = *waiting && strcmp(waiting, "init") ? "allreduce" : "";
	e.r.hb.pid = 100 + r;
	e.r.hb.rank = r;
	e.r.hb.world_size = 4;
	e.r.hb.comm_hash = comm;
	e.r.hb.nranks = comm ? 4 : 0;
	e.r.hb.comm_rank = comm ? r : -1;
	e.r.hb.last_seq = last;
	e.r.hb.done_seq = done;
	e.r.hb.wait_seq = wait_seq;
	e.r.hb.waited_ns = (uint64_t)waited;
	e.r.hb.period_ns = 2 * S;
	lv_event(&f->st, sess_of(r), &e);
}

/* Watch attached late: ranks 0-2 beat from seq 20, waiting 25 s at
 * 100 s on their clocks (read at monotonic `base`); rank 3 sent nothing. */
static void late(struct fixture *f, int64_t base)
{
	for (int r = 0; r < 3; r++)
		beat(f, r, COMM, "collective", 20, 19, 20, 25 * S, 100 * S);
	clocks(f, 100 * S, base);
}

static char *text_of(struct fixture *f, struct lv_hang *h, char **buf, size_t *len)
{
	printed(f, buf, len);
	if (!lv_unseen_text(f->st.opts.out, h))
		fputs("; ?", f->st.opts.out);
	lv_silent_text(f->st.opts.out, &f->st, h);
	fputc('|', f->st.opts.out);
	lv_silent_json(f->st.opts.out, &f->st, h);
	fclose(f->st.opts.out);
	return *buf;
}

static void test_beat_late(void **state)
{
	int64_t base = lv_mono_ns();
	struct fixture f;
	struct lv_hang *h;
	char *buf = NULL;
	size_t len = 0;
	int n;

	(void)state;
	start(&f, 250 * MS, NULL);
	f.st.opts.stuck_s = 3;
	/* a beat of no comm: the process only */
	beat(&f, 0, 0, "host", 0, 0, 0, 2 * S, 99 * S);
	assert_int_equal(f.st.nprocs, 1);
	assert_int_equal(f.st.ncomms, 0);
	late(&f, base);
	assert_int_equal(f.st.nprocs, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(rank_of(&f, i), i);
		assert_int_equal(f.st.procs[i].pid, 100 + i);
		assert_true(f.st.procs[i].has_info);
	}
	assert_string_equal(f.st.jobs[0].id, "j1");
	assert_int_equal(f.st.jobs[0].world_size, 4);
	assert_int_equal(f.st.ncomms, 1);
	assert_int_equal(f.st.comms[0]->nranks, 4);
	assert_int_equal(f.st.comms[0]->nm, 3);
	assert_int_equal(f.st.comms[0]->m[2].comm_rank, 2);
	assert_int_equal(f.st.comms[0]->m[2].last_seq, 20);
	assert_int_equal(f.st.comms[0]->m[2].done_seq, 19);
	/* every waiting rank's beat has not had time to come */
	n = hangs(&f, base + 1 * S, &h);
	assert_int_equal(n, 0);
	lv_hangs_free(h, n);
	n = hangs(&f, base + 5 * S, &h);
	assert_int_equal(n, 1);
	assert_int_equal(h[0].seq, 20);
	assert_string_equal(h[0].op, "allreduce");
	assert_int_equal(h[0].nwait, 3);
	assert_int_equal(h[0].nmiss, 0);
	assert_int_equal(h[0].unseen, 1);
	/* since the call's entry on its host, not since the watch came */
	assert_int_equal(h[0].began, 75 * S);
	assert_true(h[0].waited_s > 29.9 && h[0].waited_s < 30.1);
	lv_silent_hangs(&f.st, h, n, base + 5 * S);
	assert_int_equal(h[0].nunseen_rank, 1);
	assert_int_equal(h[0].unseen_rank[0], 3);
	assert_true(h[0].unseen_job_ranks);
	assert_int_equal(h[0].nsilent, 0);
	assert_string_equal(text_of(&f, &h[0], &buf, &len),
			    "; not seen: rank 3|\"unseen_comm_ranks\": [3], \"silent\": [], ");
	free(buf);
	lv_hangs_free(h, n);
	/* rank 3 comes into it: resolved */
	enq(&f, 3, 20, 101 * S);
	n = hangs(&f, base + 6 * S, &h);
	assert_int_equal(n, 0);
	assert_int_equal(f.st.comms[0]->resolved_seq, 20);
	lv_hangs_free(h, n);
	lv_state_free(&f.st);
}

/* A rank held inside the host call of seq 20 has not entered it: the
 * others wait for it there, at once (no rank unseen). */
static void test_beat_host(void **state)
{
	int64_t base = lv_mono_ns();
	struct fixture f;
	struct lv_hang *h;
	int n;

	(void)state;
	start(&f, 0, NULL);
	f.st.opts.stuck_s = 3;
	late(&f, base);
	beat(&f, 3, COMM, "host", 20, 19, 20, 24 * S, 100 * S);
	n = hangs(&f, base, &h);
	assert_int_equal(n, 1);
	assert_int_equal(h[0].seq, 20);
	assert_int_equal(h[0].nwait, 3);
	assert_int_equal(h[0].nmiss, 1);
	assert_int_equal(rank_of(&f, h[0].miss[0]), 3);
	assert_int_equal(h[0].unseen, 0);
	lv_hangs_free(h, n);
	lv_state_free(&f.st);
}

/* Late to a hung init: its beats give each member's init_begin. */
static void test_beat_init(void **state)
{
	int64_t base = lv_mono_ns();
	struct fixture f;
	struct lv_hang *h;
	int n;

	(void)state;
	start(&f, 0, NULL);
	f.st.opts.stuck_s = 3;
	for (int r = 0; r < 3; r++)
		beat(&f, r, COMM, "init", 0, 0, 0, 20 * S, 100 * S);
	clocks(&f, 100 * S, base);
	n = hangs(&f, base, &h);
	assert_int_equal(n, 1);
	assert_string_equal(h[0].op, "init");
	assert_int_equal(h[0].nwait, 3);
	assert_int_equal(h[0].began, 80 * S);
	assert_true(h[0].waited_s > 19.9 && h[0].waited_s < 20.1);
	lv_silent_hangs(&f.st, h, n, base);
	assert_int_equal(h[0].nunseen_rank, 1);
	assert_int_equal(h[0].unseen_rank[0], 3);
	lv_hangs_free(h, n);
	lv_state_free(&f.st);
}

/* Rank 1's beats stop while 0 and 2 beat on: silent, until it beats. */
static void test_beat_silent(void **state)
{
	int64_t base = lv_mono_ns();
	struct fixture f;
	struct lv_hang *h;
	char *buf = NULL;
	size_t len = 0;
	int n;

	(void)state;
	start(&f, 0, NULL);
	f.st.opts.stuck_s = 3;
	late(&f, base);
	for (int r = 0; r < 3; r += 2)
		beat(&f, r, COMM, "collective", 20, 19, 20, 32 * S, 107 * S);
	clocks(&f, 107 * S, base + 7 * S);
	/* 6 s (2 periods and 2 s) since rank 1's beat: not yet */
	n = hangs(&f, base + 5900 * MS, &h);
	lv_silent_hangs(&f.st, h, n, base + 5900 * MS);
	assert_int_equal(n, 1);
	assert_int_equal(h[0].nsilent, 0);
	lv_hangs_free(h, n);
	n = hangs(&f, base + 11 * S, &h);
	lv_silent_hangs(&f.st, h, n, base + 11 * S);
	assert_int_equal(n, 1);
	assert_int_equal(h[0].nsilent, 1);
	assert_int_equal(rank_of(&f, h[0].silent[0].proc), 1);
	assert_true(h[0].silent[0].for_s > 10.9 && h[0].silent[0].for_s < 11.1);
	assert_string_equal(text_of(&f, &h[0], &buf, &len),
			    "; not seen: rank 3; silent: rank 1 (hosta) for 11 s: no heartbeat "
			    "(process stopped, or its host frozen)|\"unseen_comm_ranks\": [3], "
			    "\"silent\": [{\"rank\": 1, \"host\": \"hosta\", \"pid\": 101, "
			    "\"since_heartbeat_s\": 11.0}], ");
	free(buf);
	lv_hangs_free(h, n);
	/* every one quiet: none told from the others */
	n = hangs(&f, base + 30 * S, &h);
	lv_silent_hangs(&f.st, h, n, base + 30 * S);
	assert_int_equal(n, 1);
	assert_int_equal(h[0].nsilent, 0);
	lv_hangs_free(h, n);
	/* rank 1 beats again */
	beat(&f, 0, COMM, "collective", 20, 19, 20, 36 * S, 111 * S);
	beat(&f, 1, COMM, "collective", 20, 19, 20, 36 * S, 111 * S);
	clocks(&f, 111 * S, base + 11 * S);
	n = hangs(&f, base + 12 * S, &h);
	lv_silent_hangs(&f.st, h, n, base + 12 * S);
	assert_int_equal(n, 1);
	assert_int_equal(h[0].nsilent, 0);
	lv_hangs_free(h, n);
	lv_state_free(&f.st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_collective),
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_job_filter),
		cmocka_unit_test(test_new_host),
		cmocka_unit_test(test_hw_near),
		cmocka_unit_test(test_hw_none),
		cmocka_unit_test(test_hw_print),
		cmocka_unit_test(test_beat_late),
		cmocka_unit_test(test_beat_host),
		cmocka_unit_test(test_beat_init),
		cmocka_unit_test(test_beat_silent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
