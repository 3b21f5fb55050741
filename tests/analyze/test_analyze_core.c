/* The analysis core on in-memory records: busbw factors, size buckets,
 * quantiles, lateness, matching across ranks, stragglers, hangs,
 * mismatches, sampled completions, clock alignment between hosts, and a
 * send its peer never posted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "read.h"
#include "report.h"

#define COMM 0xabcdef0123456789ULL
#define MS 1000000LL

static void test_busbw_factors(void **state)
{
	(void)state;
	assert_float_equal(an_busbw_factor("allreduce", 8), 2.0 * 7 / 8, 1e-12);
	assert_float_equal(an_busbw_factor("allgather", 4), 0.75, 1e-12);
	assert_float_equal(an_busbw_factor("reducescatter", 2), 0.5, 1e-12);
	assert_float_equal(an_busbw_factor("alltoall", 4), 0.75, 1e-12);
	assert_float_equal(an_busbw_factor("broadcast", 8), 1, 1e-12);
	assert_float_equal(an_busbw_factor("reduce", 8), 1, 1e-12);
	assert_float_equal(an_busbw_factor("allreduce", 1), 0, 1e-12);
}

static void test_buckets(void **state)
{
	(void)state;
	assert_int_equal(an_size_bucket(0), -1);
	assert_int_equal(an_size_bucket(1), 0);
	assert_int_equal(an_size_bucket(1024), 10);
	assert_int_equal(an_size_bucket(1025), 10);
	assert_int_equal(an_size_bucket(2047), 10);
	assert_int_equal(an_size_bucket(26214400), 24);	/* 25 MiB DDP bucket */
	assert_int_equal(an_size_bucket(UINT64_MAX), 63);
}

static void test_quantiles(void **state)
{
	struct an_qs q = { 0 };
	int i;

	(void)state;
	for (i = 1; i <= 100; i++)
		an_qs_add(&q, i * 1000.0);
	assert_float_equal(an_qs_quantile(&q, 0.5), 50000, 1e-9);
	assert_float_equal(an_qs_quantile(&q, 0.99), 99000, 1e-9);
	assert_float_equal(q.max, 100000, 1e-9);
	/* past the exact buffer: a histogram within 1.1% */
	for (i = 0; i < 2 * AN_QS_EXACT; i++)
		an_qs_add(&q, 1e6);
	assert_non_null(q.hist);
	assert_float_equal(an_qs_quantile(&q, 0.5), 1e6, 1e6 * 0.011);
	an_qs_free(&q);
}

static void test_lateness(void **state)
{
	int64_t enter[4] = { 100, 120, 5000, 110 }, late[4];
	int64_t two[2] = { 1000, 300 }, late2[2];

	(void)state;
	/* lower median of {100,110,120,5000} is 110 */
	assert_int_equal(an_lateness(enter, 4, late), 2);
	assert_int_equal(late[2], 4890);
	assert_int_equal(late[0], -10);
	/* two ranks: the whole gap */
	assert_int_equal(an_lateness(two, 2, late2), 0);
	assert_int_equal(late2[0], 700);
	assert_int_equal(an_lateness(two, 1, late2), -1);
}

/* Late in nlate of nwin windows, last in some calls. */
static int flagged(uint64_t nwin, uint64_t nlate, uint64_t last)
{
	struct an_state an = { .nprocs = 4 };
	struct an_proc p = {
		.coll_calls = nwin * AN_STRAG_WIN, .late_calls = last,
		.nwin = nwin, .nwin_late = nlate, .win_late_sum_ns = (double)nlate * 2e6,
	};

	return an_straggler_flagged(&an, &p);
}

static void test_straggler_rule(void **state)
{
	(void)state;
	/* Late in every window: at least two of them. */
	assert_true(flagged(2, 2, 8));
	assert_false(flagged(1, 1, 4));
	/* Half the windows or more: a rank slow for the second half of a job
	 * is named; one late in a third of them is not. */
	assert_true(flagged(10, 5, 40));
	assert_false(flagged(30, 10, 80));
}

/* ---- a small job in records ------------------------------------------ */

struct job {
	struct an_state *an;
	int ranks, host_of[8];
	int64_t clock_err[8];	/* per host: its clock reads this much ahead */
	int pid_base;		/* rank r is process pid_base + r */
	uint64_t comm;		/* the comm its calls are on */
};

static struct ev_src src(struct job *j, int r, int64_t t)
{
	struct ev_src s = { .host = j->host_of[r], .vpid = j->pid_base + r,
			    .ts = t + j->clock_err[j->host_of[r]] };

	return s;
}

static void job_start_opts(struct job *j, int ranks, int hosts, const struct an_opts *o)
{
	char name[16];

	memset(j, 0, sizeof(*j));
	j->an = an_new(o);
	j->ranks = ranks;
	j->pid_base = 100;
	j->comm = COMM;
	for (int h = 0; h < hosts; h++) {
		snprintf(name, sizeof(name), "h%d", h);
		an_host_id(j->an, name);
	}
	for (int r = 0; r < ranks; r++)
		j->host_of[r] = r * hosts / ranks;
}

static void job_start(struct job *j, int ranks, int hosts)
{
	job_start_opts(j, ranks, hosts, NULL);
}

static void job_info(struct job *j, int r, int version)
{
	struct ev_rec_proc p = { .host = "", .nccl_path = "/lib/libnccl.so.2", .env = "NCCL_DEBUG=WARN",
				 .pid = j->pid_base + r, .rank = r, .world_size = j->ranks,
				 .nccl_version = version };
	struct ev_src s = src(j, r, 0);

	an_seen(j->an, &s);
	an_process_info(j->an, &s, &p);
}

static void job_info_env(struct job *j, int r, const char *env)
{
	struct ev_rec_proc p = { .host = "", .nccl_path = "/lib/libnccl.so.2", .env = env,
				 .pid = j->pid_base + r, .rank = r, .world_size = j->ranks,
				 .nccl_version = 22809 };
	struct ev_src s = src(j, r, 0);

	an_seen(j->an, &s);
	an_process_info(j->an, &s, &p);
}

/* Rank r enqueues seq at t (+ its own delay) and, unless `done` is 0,
 * completes with the others at `end`. */
static void job_call(struct job *j, int r, uint64_t seq, int64_t enter, int64_t end,
		     uint64_t count, int done)
{
	int64_t err = j->clock_err[j->host_of[r]];
	struct ev_rec_coll e = { .comm_hash = j->comm, .seq = seq, .op = "allreduce",
				 .count = count, .datatype = 7, .bytes = count * 4,
				 .root_or_peer = -1, .nranks = j->ranks,
				 .enter_ns = enter + err, .exit_ns = enter + err + 5000 };
	struct ev_rec_coll c = e;
	struct ev_src s = src(j, r, enter + 5000);

	an_seen(j->an, &s);
	an_enqueue(j->an, &s, &e);
	if (!done)
		return;
	c.gpu_start_ns = enter + err + 6000;
	c.gpu_end_ns = end + err;
	c.duration_ns = end - enter - 6000;
	s = src(j, r, end + 10000);
	an_seen(j->an, &s);
	an_complete(j->an, &s, &c);
}

static void test_slow_rank(void **state)
{
	struct job j;
	int64_t t = 1000 * MS;

	(void)state;
	job_start(&j, 4, 1);
	for (int r = 0; r < 4; r++)
		job_info(&j, r, 22105);
	for (uint64_t seq = 1; seq <= 40; seq++) {
		for (int r = 0; r < 4; r++)
			job_call(&j, r, seq, t + r * 1000 + (r == 1 ? 20 * MS : 0), t + 21 * MS,
				 1024, 1);
		t += 30 * MS;
	}
	an_finish(j.an);
	assert_int_equal(j.an->matched, 40);
	assert_int_equal(j.an->nhangs, 0);
	for (int i = 0; i < j.an->nprocs; i++) {
		struct an_proc *p = &j.an->procs[i];

		assert_int_equal(an_straggler_flagged(j.an, p), p->rank == 1);
		if (p->rank == 1) {
			assert_int_equal(p->late_calls, 40);
			/* against the lower median (rank 2's arrival at +2 us) */
			assert_float_equal(p->late_sum_ns / 40, 20 * MS - 1000, 1);
		}
	}
	assert_int_equal(j.an->nrows, 1);
	assert_int_equal(j.an->rows[0].calls, 40);
	assert_int_equal(j.an->rows[0].bucket, 12);
	an_free(j.an);
}

static void test_hang_and_mismatch(void **state)
{
	struct job j;
	int64_t t = 1000 * MS;
	struct ev_rec_misc to = { .comm_hash = COMM, .seq = 10, .op = "allreduce",
				  .waited_ns = 5000 * MS, .action = "warn", .what = "collective" };

	(void)state;
	job_start(&j, 3, 1);
	for (int r = 0; r < 3; r++)
		job_info(&j, r, 22105);
	for (uint64_t seq = 1; seq <= 10; seq++) {
		for (int r = 0; r < 3; r++) {
			if (seq == 10 && r == 2)
				continue;	/* rank 2 never calls the last one */
			job_call(&j, r, seq, t, t + MS, seq == 4 && r == 0 ? 512 : 256, seq < 10);
		}
		t += 2 * MS;
	}
	for (int r = 0; r < 2; r++) {
		struct ev_src s = src(&j, r, t + 5000 * MS);

		an_seen(j.an, &s);
		an_timeout(j.an, &s, &to);
	}
	an_finish(j.an);
	assert_int_equal(j.an->matched, 9);
	assert_int_equal(j.an->nhangs, 1);
	assert_int_equal(j.an->hangs[0].seq, 10);
	assert_int_equal(j.an->hangs[0].nwait, 2);
	assert_int_equal(j.an->hangs[0].nmiss, 1);
	assert_int_equal(j.an->hangs[0].miss[0], 2);
	assert_int_equal(j.an->hangs[0].last_seq[2], 9);
	assert_true(j.an->hangs[0].timed_out);
	assert_int_equal(j.an->mism_total, 1);
	assert_int_equal(j.an->mism[0].seq, 4);
	assert_int_equal(j.an->ntimeouts, 2);
	an_free(j.an);
}

/*
 * Ranks recorded with NCCLGUARD_TIMING=0 send no completion: calls every
 * rank made are counted, said unknown, and not hangs, however long the
 * trace goes on after them; a rank that never made one still is.
 */
static void timing_off_job(struct job *j, int skip_rank)
{
	int64_t t = 1000 * MS;

	job_start(j, 3, 1);
	for (int r = 0; r < 3; r++) {
		struct ev_rec_proc p = { .host = "", .pid = j->pid_base + r, .rank = r,
					 .world_size = 3, .timing_off = 1 };
		struct ev_src s = src(j, r, 0);

		an_seen(j->an, &s);
		an_process_info(j->an, &s, &p);
	}
	for (uint64_t seq = 1; seq <= 10; seq++) {
		for (int r = 0; r < 3; r++)
			if (seq < 10 || r != skip_rank)
				job_call(j, r, seq, t, t + MS, 256, 0);
		t += 2 * MS;
	}
	for (int r = 0; r < 3; r++) {		/* the trace goes on 5 s */
		struct ev_src s = src(j, r, t + 5000 * MS);

		an_seen(j->an, &s);
	}
	an_finish(j->an);
}

static void test_timing_off(void **state)
{
	struct job j;

	(void)state;
	timing_off_job(&j, -1);
	assert_int_equal(j.an->nhangs, 0);
	assert_int_equal(j.an->matched, 10);
	assert_int_equal(j.an->unknown_end, 10);
	assert_int_equal(j.an->ninc, 1);
	assert_string_equal(j.an->inc[0].what, "timing_off");
	/* The notes on untimed calls blame timing off, not the sampling;
	 * a process whose process_info is missing says nothing either way. */
	{
		char hint[160];

		assert_string_equal(an_untimed_hint(j.an, hint, sizeof(hint)),
				    "GPU timing was off: NCCLGUARD_TIMING=0");
		j.an->procs[0].has_info = 0;
		assert_string_equal(an_untimed_hint(j.an, hint, sizeof(hint)),
				    "GPU timing was off: NCCLGUARD_TIMING=0");
		j.an->procs[0].has_info = 1;
		j.an->procs[0].timing_off = 0;
		assert_string_equal(an_untimed_hint(j.an, hint, sizeof(hint)),
				    "GPU timing was off in 2 of 3 processes: NCCLGUARD_TIMING=0; "
				    "NCCLGUARD_SAMPLE=1 times every call in the others");
		for (int i = 0; i < 3; i++)
			j.an->procs[i].timing_off = 0;
		assert_string_equal(an_untimed_hint(j.an, hint, sizeof(hint)),
				    "NCCLGUARD_SAMPLE=1 times every call");
	}
	an_free(j.an);

	timing_off_job(&j, 2);			/* rank 2 never calls seq 10 */
	assert_int_equal(j.an->nhangs, 1);
	assert_int_equal(j.an->hangs[0].seq, 10);
	assert_int_equal(j.an->hangs[0].nmiss, 1);
	assert_int_equal(j.an->hangs[0].miss[0], 2);
	assert_int_equal(j.an->unknown_end, 9);
	an_free(j.an);
}

/* A dropped send is p2p seq 3, not collective seq 3: the all-reduce of
 * that number ran on every rank, and a timeout naming a send's p2p seq
 * does not confirm the collectives below it. */
static void test_p2p_numbers_apart(void **state)
{
	struct job j;
	int64_t t = 1000 * MS;
	struct ev_rec_misc drop = { .comm_hash = COMM, .seq = 3, .op = "send", .kind = "drop" };
	struct ev_rec_misc to = { .comm_hash = COMM, .seq = 5, .op = "recv",
				  .waited_ns = 5000 * MS, .action = "warn", .what = "collective" };
	struct ev_src s;

	(void)state;
	job_start(&j, 2, 1);
	for (int r = 0; r < 2; r++)
		job_info(&j, r, 22105);
	s = src(&j, 1, t - MS);
	an_seen(j.an, &s);
	an_inject(j.an, &s, &drop);
	for (uint64_t seq = 1; seq <= 4; seq++) {
		for (int r = 0; r < 2; r++)
			if (seq < 4 || r == 0)	/* rank 1 never calls seq 4 */
				job_call(&j, r, seq, t, t + MS, 256, seq < 4);
		t += 2 * MS;
	}
	s = src(&j, 0, t + 5000 * MS);
	an_seen(j.an, &s);
	an_timeout(j.an, &s, &to);
	an_finish(j.an);
	assert_int_equal(j.an->matched, 3);
	assert_int_equal(j.an->nhangs, 1);
	assert_int_equal(j.an->hangs[0].seq, 4);
	assert_int_equal(j.an->hangs[0].nmiss, 1);
	assert_int_equal(j.an->hangs[0].miss[0], 1);
	an_free(j.an);
}

/* Rank 1 posts a third recv from rank 0, which sent only two: the hang is
 * rank 1's recv, with rank 0 missing and the count of what it posted. */
static void p2p_call(struct job *j, int r, uint64_t p2p_seq, const char *op, int peer,
		     int64_t t, int done)
{
	struct ev_rec_coll e = { .comm_hash = j->comm, .p2p_seq = p2p_seq, .op = op,
				 .count = 1, .datatype = 7, .bytes = 4, .root_or_peer = peer,
				 .nranks = j->ranks, .enter_ns = t };
	struct ev_rec_coll c = e;
	struct ev_src s = src(j, r, t + 1000);

	an_seen(j->an, &s);
	an_enqueue(j->an, &s, &e);
	if (!done)
		return;
	c.gpu_start_ns = t + 2000;
	c.gpu_end_ns = t + 9000;
	c.duration_ns = 7000;
	s = src(j, r, t + 10000);
	an_seen(j->an, &s);
	an_complete(j->an, &s, &c);
}

static void test_p2p_missing_send(void **state)
{
	struct job j;
	int64_t t = 1000 * MS;
	struct ev_src s;

	(void)state;
	job_start(&j, 2, 1);
	for (int r = 0; r < 2; r++) {
		struct ev_rec_init in = { .comm_hash = COMM, .nranks = 2, .rank = r };

		job_info(&j, r, 22105);
		s = src(&j, r, t);
		an_seen(j.an, &s);
		an_comm_init(j.an, &s, &in);
		in.end = 1;
		an_comm_init(j.an, &s, &in);
	}
	for (uint64_t k = 1; k <= 3; k++, t += MS)
		for (int r = 0; r < 2; r++)
			if (r == 1 || k < 3)
				p2p_call(&j, r, k, r ? "recv" : "send", 1 - r, t, k < 3);
	s = src(&j, 0, t + 2000 * MS);	/* the trace goes on past the hang age */
	an_seen(j.an, &s);
	an_finish(j.an);
	assert_int_equal(j.an->p2p_calls, 5);
	assert_int_equal(j.an->nhangs, 1);
	assert_true(j.an->hangs[0].p2p);
	assert_int_equal(j.an->hangs[0].seq, 3);
	assert_string_equal(j.an->ops[j.an->hangs[0].op], "recv");
	assert_int_equal(j.an->hangs[0].nwait, 1);
	assert_int_equal(j.an->hangs[0].wait[0], 1);
	assert_int_equal(j.an->hangs[0].nmiss, 1);
	assert_int_equal(j.an->hangs[0].miss[0], 0);
	assert_int_equal(j.an->hangs[0].peer, 0);
	assert_int_equal(j.an->hangs[0].ordinal, 3);
	assert_int_equal(j.an->hangs[0].peer_posted, 2);
	/* the send row times the two sends */
	assert_int_equal(j.an->nrows, 1);
	assert_int_equal(j.an->rows[0].timed, 2);
	an_free(j.an);
}

/* A rank restarted (torchrun's elastic restart: a new process, the same
 * rank, a new comm) is a process of its own in the Chrome trace. */
static void test_chrome_restart(void **state)
{
	struct an_opts o = { .on_coll = an_chrome_coll };
	struct an_chrome *ch;
	char *buf = NULL, *q;
	size_t len = 0;
	struct job j;
	int pids[8], npids = 0;
	FILE *f;

	(void)state;
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	ch = an_chrome_new(f, &(struct an_chrome_opts){ .all = 1, .win_to_ns = -1 });
	o.on_coll_ctx = ch;
	job_start_opts(&j, 2, 1, &o);
	for (int r = 0; r < 2; r++)
		job_info(&j, r, 22105);
	for (uint64_t seq = 1; seq <= 3; seq++)
		for (int r = 0; r < 2; r++)
			job_call(&j, r, seq, 1000 * MS + seq * 2 * MS, 1000 * MS + seq * 2 * MS + MS, 256, 1);
	/* Rank 0 again, as process 300, alone on a new comm. */
	j.pid_base = 300;
	j.comm = COMM + 1;
	job_info(&j, 0, 22105);
	j.ranks = 1;
	job_call(&j, 0, 1, 2000 * MS, 2000 * MS + MS, 64, 1);
	an_finish(j.an);
	assert_int_equal(an_chrome_end(ch, j.an), 0);
	assert_int_equal(fclose(f), 0);
	an_chrome_free(ch);
	for (q = buf; (q = strstr(q, "\"process_name\",\"pid\":")); q++) {
		int pid = atoi(q + strlen("\"process_name\",\"pid\":"));

		for (int i = 0; i < npids; i++)
			assert_int_not_equal(pids[i], pid);
		assert_true(npids < 8);
		pids[npids++] = pid;
	}
	assert_int_equal(npids, 3);
	free(buf);
	an_free(j.an);
}

/* Sends that never complete (no timing at all) are kept up to a bound per
 * rank and comm, the oldest forgotten and counted. */
static void test_p2p_pending_bounded(void **state)
{
	struct job j;
	int n = AN_P2P_PENDING_MAX + 100;

	(void)state;
	job_start(&j, 2, 1);
	job_info(&j, 0, 22105);
	for (int i = 1; i <= n; i++) {
		struct ev_rec_coll e = { .comm_hash = COMM, .p2p_seq = (uint64_t)i, .op = "send",
					 .count = 1, .datatype = 7, .bytes = 4, .root_or_peer = 1,
					 .nranks = 2, .enter_ns = 1000 * MS + i * 1000 };
		struct ev_src s = src(&j, 0, 1000 * MS + i * 1000 + 500);

		an_seen(j.an, &s);
		an_enqueue(j.an, &s, &e);
	}
	an_finish(j.an);
	assert_int_equal(j.an->p2p_forgotten, 100);
	an_free(j.an);
}

static void busy_one(struct job *j, int64_t start, int64_t end)
{
	struct ev_rec_coll c = { .op = "allreduce", .gpu_start_ns = start, .gpu_end_ns = end };
	struct ev_src s = src(j, 0, end + 1000);

	an_seen(j->an, &s);
	an_complete(j->an, &s, &c);
}

/* Busy time is the union of the GPU intervals whatever order their
 * completions come in (other streams and comms, group members): an older
 * interval after a newer one counted once, in full, also past the point
 * where kept intervals are summed. */
static void test_busy_out_of_order(void **state)
{
	struct job j;
	int64_t t = 1000 * MS;

	(void)state;
	job_start(&j, 1, 1);
	job_info(&j, 0, 22105);
	busy_one(&j, t + 30, t + 40);
	busy_one(&j, t + 10, t + 20);	/* older, after */
	busy_one(&j, t + 15, t + 35);	/* overlaps both */
	busy_one(&j, t + 0, t + 5);
	/* 20000 more of 10 ns every 20 ns, each pair swapped. */
	for (int64_t i = 0; i < 20000; i += 2) {
		busy_one(&j, t + 1000 + (i + 1) * 20, t + 1000 + (i + 1) * 20 + 10);
		busy_one(&j, t + 1000 + i * 20, t + 1000 + i * 20 + 10);
	}
	an_finish(j.an);
	assert_int_equal(j.an->procs[0].busy_ns, 5 + 30 + 20000 * 10);
	an_free(j.an);
}

/* Completions only every 4th call (sampled timing) still close the calls
 * in between, and nothing is reported as hung. */
static void test_sampled(void **state)
{
	struct job j;
	int64_t t = 1000 * MS;

	(void)state;
	job_start(&j, 2, 1);
	for (int r = 0; r < 2; r++)
		job_info(&j, r, 22105);
	for (uint64_t seq = 1; seq <= 64; seq++) {
		for (int r = 0; r < 2; r++)
			job_call(&j, r, seq, t, t + MS, 256, seq % 4 == 0);
		t += 2 * MS;
	}
	/* Closed while reading, but for the last few: a call done only by
	 * implication waits a little for its own completion. */
	assert_true(j.an->matched >= 64 - 20);
	an_finish(j.an);
	assert_int_equal(j.an->matched, 64);
	assert_int_equal(j.an->nhangs, 0);
	assert_int_equal(j.an->rows[0].calls, 64);
	assert_int_equal(j.an->rows[0].timed, 16);
	an_free(j.an);
}

/*
 * NCCL_HOSTID is a host's own: set per host (4 ranks, 2 hosts) it is no
 * finding; ranks of one host that disagree, or one id on two hosts, are;
 * any other variable still must agree across every rank.
 */
static const struct an_cfg_key *hostid_job(struct job *j, const char *const env[4])
{
	job_start(j, 4, 2);
	for (int r = 0; r < 4; r++)
		job_info_env(j, r, env[r]);
	an_finish(j->an);
	return j->an->ncfg ? &j->an->cfg[0] : NULL;
}

static void test_hostid_per_host(void **state)
{
	static const char *const per_host[4] = { "NCCL_HOSTID=a", "NCCL_HOSTID=a",
						 "NCCL_HOSTID=b", "NCCL_HOSTID=b" };
	static const char *const split_host[4] = { "NCCL_HOSTID=a", "NCCL_HOSTID=c",
						   "NCCL_HOSTID=b", "NCCL_HOSTID=b" };
	static const char *const shared[4] = { "NCCL_HOSTID=a", "NCCL_HOSTID=a",
					       "NCCL_HOSTID=a", "NCCL_HOSTID=a" };
	static const char *const other[4] = { "NCCL_IB_HCA=mlx5_0", "NCCL_IB_HCA=mlx5_0",
					      "NCCL_IB_HCA=mlx5_1", "NCCL_IB_HCA=mlx5_1" };
	const struct an_cfg_key *c;
	struct job j;

	(void)state;
	assert_null(hostid_job(&j, per_host));
	an_free(j.an);

	c = hostid_job(&j, split_host);
	assert_non_null(c);
	assert_int_equal(j.an->ncfg, 1);
	assert_string_equal(c->key, "NCCL_HOSTID");
	assert_string_equal(c->why, "differs across ranks of one host");
	assert_int_equal(c->n, 4);
	an_free(j.an);

	c = hostid_job(&j, shared);
	assert_non_null(c);
	assert_string_equal(c->why, "is the same on ranks of different hosts");
	an_free(j.an);

	c = hostid_job(&j, other);
	assert_non_null(c);
	assert_string_equal(c->key, "NCCL_IB_HCA");
	assert_string_equal(c->why, "differs across ranks");
	an_free(j.an);
}

/* Host 1's clock reads 250 ms ahead: estimated from the common ends, and
 * the ranks there are not taken for stragglers. */
static void test_clock_alignment(void **state)
{
	struct job j;
	int64_t t = 1000 * MS;

	(void)state;
	job_start(&j, 4, 2);
	j.clock_err[1] = 250 * MS;
	for (int r = 0; r < 4; r++)
		job_info(&j, r, r == 3 ? 21903 : 22105);
	for (uint64_t seq = 1; seq <= 60; seq++) {
		for (int r = 0; r < 4; r++)
			job_call(&j, r, seq, t + r * 2000, t + 3 * MS + r * 500, 1 << 20, 1);
		t += 5 * MS;
	}
	an_finish(j.an);
	assert_int_equal(j.an->matched, 60);
	assert_int_equal(j.an->hosts[0].offset_ns, 0);
	assert_true(llabs(j.an->hosts[1].offset_ns + 250 * MS) < 10000);
	for (int i = 0; i < j.an->nprocs; i++)
		assert_false(an_straggler_flagged(j.an, &j.an->procs[i]));
	/* mixed NCCL versions and paths: one config mismatch, version */
	assert_int_equal(j.an->ncfg, 1);
	assert_string_equal(j.an->cfg[0].key, "nccl_version");
	an_free(j.an);
}

/* Three hosts, one ahead and one behind the first: each gets its own
 * offset to the reference host (the first). */
static void test_clock_three_hosts(void **state)
{
	struct job j;
	int64_t t = 1000 * MS;

	(void)state;
	job_start(&j, 6, 3);
	j.clock_err[1] = 250 * MS;
	j.clock_err[2] = -40 * MS;
	for (int r = 0; r < 6; r++)
		job_info(&j, r, 22105);
	for (uint64_t seq = 1; seq <= 40; seq++) {
		for (int r = 0; r < 6; r++)
			job_call(&j, r, seq, t + r * 1000, t + 3 * MS + r * 300, 1 << 20, 1);
		t += 5 * MS;
	}
	an_finish(j.an);
	assert_int_equal(j.an->matched, 40);
	assert_int_equal(j.an->hosts[0].offset_ns, 0);
	assert_true(llabs(j.an->hosts[1].offset_ns + 250 * MS) < 10000);
	assert_true(llabs(j.an->hosts[2].offset_ns - 40 * MS) < 10000);
	/* every shared collective, the offset following them */
	assert_int_equal(j.an->hosts[2].nsamples, 40);
	for (int i = 0; i < j.an->nprocs; i++)
		assert_false(an_straggler_flagged(j.an, &j.an->procs[i]));
	an_free(j.an);
}

/* A straggler on the skewed host: it arrives 20 ms late every time and,
 * having waited for no one, ends 2 ms before the others notice it (a
 * CPU backend's wake-up).  Its ends left out, the offset is the skew. */
static void test_clock_straggler_host(void **state)
{
	struct job j;
	int64_t t = 1000 * MS;

	(void)state;
	job_start(&j, 4, 2);
	j.clock_err[1] = 250 * MS;
	for (int r = 0; r < 4; r++)
		job_info(&j, r, 22105);
	for (uint64_t seq = 1; seq <= 60; seq++) {
		int64_t last = t + 20 * MS;

		for (int r = 0; r < 4; r++)
			job_call(&j, r, seq, r == 3 ? last : t + r * 100,
				 r == 3 ? last + 50000 : last + 2 * MS, 1 << 20, 1);
		t += 30 * MS;
	}
	an_finish(j.an);
	assert_int_equal(j.an->matched, 60);
	assert_true(llabs(j.an->hosts[1].offset_ns + 250 * MS) < 100000);
	for (int i = 0; i < j.an->nprocs; i++)
		assert_int_equal(an_straggler_flagged(j.an, &j.an->procs[i]),
				 j.an->procs[i].rank == 3);
	an_free(j.an);
}

/* Two hosts whose ranks share no communicator: the second host's clock
 * cannot be aligned, and the report says so rather than guessing. */
static void test_clock_unshared_host(void **state)
{
	const struct an_finding *f;
	struct job j;
	int n, warned = 0;

	(void)state;
	job_start(&j, 4, 2);
	for (int r = 0; r < 4; r++)
		job_info(&j, r, 22105);
	for (uint64_t seq = 1; seq <= 10; seq++)
		for (int r = 0; r < 4; r++) {
			int64_t t = 1000 * MS + (int64_t)seq * 5 * MS;
			struct ev_rec_coll e = { .comm_hash = r < 2 ? COMM : COMM + 1, .seq = seq,
						 .op = "allreduce", .count = 8, .datatype = 7,
						 .bytes = 32, .root_or_peer = -1, .nranks = 2,
						 .enter_ns = t, .exit_ns = t + 1000 };
			struct ev_rec_coll c = e;
			struct ev_src s = src(&j, r, t + 1000);

			an_seen(j.an, &s);
			an_enqueue(j.an, &s, &e);
			c.gpu_start_ns = t + 2000;
			c.gpu_end_ns = t + 2 * MS;
			c.duration_ns = c.gpu_end_ns - c.gpu_start_ns;
			s.ts = t + 3 * MS;
			an_seen(j.an, &s);
			an_complete(j.an, &s, &c);
		}
	an_finish(j.an);
	assert_int_equal(j.an->hosts[1].nsamples, 0);
	n = an_findings_list(j.an, &f);
	for (int i = 0; i < n; i++)
		if (!strcmp(f[i].kind, "clock")) {
			assert_int_equal(f[i].severity, AN_SEV_WARN);
			assert_non_null(strstr(f[i].summary, "h1 shares no timed collective"));
			warned++;
		}
	assert_int_equal(warned, 1);
	an_free(j.an);
}

/* ---- completions out of order (real shim traces) ---------------------- */

static void rec_enq(struct job *j, int r, uint64_t seq, const char *op, uint64_t bytes,
		    int64_t t)
{
	struct ev_rec_coll e = { .comm_hash = COMM, .seq = seq, .op = op, .count = bytes / 4,
				 .datatype = 7, .bytes = bytes, .root_or_peer = -1,
				 .nranks = j->ranks, .enter_ns = t, .exit_ns = t + 3000 };
	struct ev_src s = src(j, r, t + 3000);

	an_seen(j->an, &s);
	an_enqueue(j->an, &s, &e);
}

/* The watchdog's coll_complete at `at`, for a GPU slice [start, end]. */
static void rec_done(struct job *j, int r, uint64_t seq, const char *op, uint64_t bytes,
		     int64_t start, int64_t end, int64_t at)
{
	struct ev_rec_coll c = { .comm_hash = COMM, .seq = seq, .op = op, .bytes = bytes,
				 .nranks = j->ranks, .root_or_peer = -1, .gpu_start_ns = start,
				 .gpu_end_ns = end, .duration_ns = end - start };
	struct ev_src s = src(j, r, at);

	an_seen(j->an, &s);
	an_complete(j->an, &s, &c);
}

static void rec_end(struct job *j, int r, const char *kind, int64_t at)
{
	struct ev_rec_misc m = { .comm_hash = COMM, .kind = kind };
	struct ev_src s = src(j, r, at);

	an_seen(j->an, &s);
	an_comm_end(j->an, &s, &m);
}

static void assert_all_timed(const struct an_state *an)
{
	for (int i = 0; i < an->nrows; i++)
		assert_int_equal(an->rows[i].timed, an->rows[i].calls);
	assert_int_equal(an->untimed, 0);
}

static int findings_n;
static void count_finding(void *ctx, int severity, const char *line)
{
	(void)ctx;
	(void)line;
	if (severity != AN_SEV_INFO)
		findings_n++;
}

/* Grouped calls sharing one GPU slice whose completions the shim flushes
 * at exit, after both ranks destroyed the comm: every call keeps its time
 * and nothing is hung. */
static void test_complete_after_destroy(void **state)
{
	struct job j;
	int64_t t = 1000 * MS;

	(void)state;
	job_start(&j, 2, 1);
	for (int r = 0; r < 2; r++)
		job_info(&j, r, 22105);
	for (uint64_t seq = 1; seq <= 6; seq++)
		for (int r = 0; r < 2; r++)
			rec_enq(&j, r, seq, "allreduce", 1024 << (seq / 3), t + seq * MS + r * 1000);
	for (int r = 0; r < 2; r++)
		rec_end(&j, r, "destroy", t + 10 * MS + r);
	assert_int_equal(j.an->matched, 0);	/* waiting for the flush */
	for (int r = 1; r >= 0; r--)
		for (uint64_t seq = 1; seq <= 6; seq++) {
			int64_t g = t + ((seq + 1) / 2) * 2 * MS;	/* pairs share a slice */

			rec_done(&j, r, seq, "allreduce", 1024 << (seq / 3), g, g + 40000,
				 t + 11 * MS + (1 - r) * MS + (int64_t)seq);
		}
	an_finish(j.an);
	assert_int_equal(j.an->matched, 6);
	assert_int_equal(j.an->late_events, 0);
	assert_int_equal(j.an->nhangs, 0);
	assert_all_timed(j.an);
	an_free(j.an);
}

/* PyTorch DDP on one rank: the init's coalesced broadcasts are a group on
 * a nonblocking comm, timed only once the comm leaves InProgress, so their
 * completions come after the next call's; then broadcasts and 30 steps of
 * two all-reduces, the last completions flushed after the destroy.  With
 * `defer` past the window the group's completions arrive once its seqs
 * were closed: late, never a new window nor a hang. */
static void pytorch_one_rank(int defer, int carried)
{
	struct job j;
	int64_t t = 1000 * MS;
	uint64_t seq = 0;
	int64_t gstart = 0, gend = 0;

	job_start(&j, 1, 1);
	job_info(&j, 0, 22105);
	seq = 2;
	if (!carried) {
		rec_enq(&j, 0, 1, "broadcast", 4, t);
		rec_enq(&j, 0, 2, "broadcast", 32, t + 10000);
	}
	gstart = t + 20000;
	gend = t + 40000;
	t += 100000;
	for (int k = 0; k < 66 - 3; k++) {
		const char *op = k == 0 ? "allgather" : k < 3 ? "broadcast" : "allreduce";
		uint64_t bytes = k == 0 ? 8 : k < 3 ? 64 : (k % 2 ? 16 << 20 : 4);

		rec_enq(&j, 0, ++seq, op, bytes, t);
		if (seq <= 55)
			rec_done(&j, 0, seq, op, bytes, t + 10000, t + 50000, t + 60000);
		if (k == defer) {
			/* The shim may also write the group's coll_enqueue
			 * events only then, from its watchdog. */
			if (carried) {
				rec_enq(&j, 0, 1, "broadcast", 4, 1000 * MS);
				rec_enq(&j, 0, 2, "broadcast", 32, 1000 * MS + 10000);
			}
			rec_done(&j, 0, 1, "broadcast", 4, gstart, gend, t + 61000);
			rec_done(&j, 0, 2, "broadcast", 32, gstart, gend, t + 62000);
		}
		t += MS;
	}
	rec_end(&j, 0, "destroy", t);
	for (uint64_t s = 56; s <= seq; s++)
		rec_done(&j, 0, s, "allreduce", s % 2 ? 4 : 16 << 20, t - 66 * MS + (int64_t)s * MS,
			 t - 66 * MS + (int64_t)s * MS + 40000, t + 1000 + (int64_t)s);
	an_finish(j.an);
	assert_int_equal(j.an->nhangs, 0);
	assert_int_equal(j.an->inflight_end, 0);
	for (int i = 0; i < j.an->nprocs; i++)
		assert_false(an_straggler_flagged(j.an, &j.an->procs[i]));
	if (defer < 16) {
		assert_int_equal(j.an->matched, 65);
		assert_int_equal(j.an->late_events, 0);
		assert_all_timed(j.an);
	} else if (!carried) {
		assert_int_equal(j.an->matched, 65);
		assert_int_equal(j.an->late_events, 2);
		assert_int_equal(j.an->untimed, 2);
	} else {
		/* Given up as lost before they came: late, not hung. */
		assert_int_equal(j.an->matched, 63);
		assert_int_equal(j.an->late_events, 4);
	}
	findings_n = 0;
	an_findings(j.an, count_finding, NULL);
	assert_int_equal(findings_n, 0);
	an_free(j.an);
}

static void test_one_rank_group_late(void **state)
{
	(void)state;
	for (int carried = 0; carried < 2; carried++) {
		pytorch_one_rank(0, carried);
		pytorch_one_rank(2, carried);
		pytorch_one_rank(40, carried);
	}
}

/* A trace that starts mid-run (seq 1000 first) on two ranks, one of them
 * 3 calls behind at the start: the seqs never seen are given up, nothing
 * hangs. */
static void test_mid_run(void **state)
{
	struct job j;
	int64_t t = 1000 * MS;

	(void)state;
	job_start(&j, 2, 1);
	for (int r = 0; r < 2; r++)
		job_info(&j, r, 22105);
	for (uint64_t seq = 1000; seq < 1100; seq++) {
		for (int r = 0; r < 2; r++)
			if (r == 0 || seq >= 1003)
				job_call(&j, r, seq, t, t + MS, 256, 1);
		t += 2 * MS;
	}
	assert_true(j.an->matched >= 80);	/* streamed */
	an_finish(j.an);
	assert_int_equal(j.an->nhangs, 0);
	assert_int_equal(j.an->matched, 100);
	assert_int_equal(j.an->rows[0].timed, 100);
	an_free(j.an);
}

/* report.html: what a trace names (hosts, ops, injected details, policy
 * keys) is escaped, and a hang's rows hold each rank's last calls. */
static void test_html_hostile(void **state)
{
	static const char evil[] = "<script>alert(1)</script>\"'&";
	struct job j;
	int64_t t = 1000 * MS;
	struct ev_rec_misc to = { .comm_hash = COMM, .seq = 6, .op = "allreduce",
				  .waited_ns = 5000 * MS, .action = evil, .what = evil };
	struct ev_rec_misc in = { .comm_hash = COMM, .seq = 2, .op = evil, .kind = "delay",
				  .detail = evil };
	struct ev_rec_misc pol = { .key = evil, .action = "violation", .user_value = evil,
				   .effective_value = evil };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	job_start(&j, 3, 1);
	for (int r = 0; r < 3; r++) {
		struct ev_rec_proc p = { .host = evil, .nccl_path = evil, .env = evil,
					 .gpu_pci_bus_id = evil, .socket_ifname = evil,
					 .pid = j.pid_base + r, .rank = r, .world_size = 3,
					 .nccl_version = 22105 };
		struct ev_src s = src(&j, r, 0);

		an_seen(j.an, &s);
		an_process_info(j.an, &s, &p);
		an_policy(j.an, &s, &pol);
	}
	for (uint64_t seq = 1; seq <= 6; seq++) {
		for (int r = 0; r < 3; r++)
			if (seq < 6 || r != 2)	/* rank 2 never calls seq 6 */
				job_call(&j, r, seq, t + r * 1000, t + MS, 256, seq < 6);
		t += 2 * MS;
	}
	for (int r = 0; r < 2; r++) {
		struct ev_src s = src(&j, r, t + 5000 * MS);

		an_seen(j.an, &s);
		an_timeout(j.an, &s, &to);
		an_inject(j.an, &s, &in);
	}
	an_finish(j.an);
	assert_int_equal(j.an->nhangs, 1);
	assert_int_equal(j.an->hangs[0].nrows, 3);
	for (int r = 0; r < 3; r++) {
		const struct an_hang_row *row = &j.an->hangs[0].rows[r];

		assert_int_equal(row->rank, r);
		/* seqs 1-5 accounted (at most AN_RECENT of them), then its
		 * own part in seq 6 if it made one */
		assert_int_equal(row->ncalls, r < 2 ? 6 : 5);
		assert_int_equal(row->calls[row->ncalls - 1].seq, r < 2 ? 6 : 5);
		assert_true(row->calls[0].start_ns > row->calls[0].enter_ns);
	}
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(an_report_html(j.an, f), 0);
	fclose(f);
	assert_null(strstr(buf, "<script"));
	assert_null(strstr(buf, "'&"));
	assert_non_null(strstr(buf, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"));
	assert_non_null(strstr(buf, "id=\"hang-1\""));
	free(buf);
	an_free(j.an);
}

static void test_json_keys(void **state)
{
	static const char *const keys[] = {
		"\"schema\": \"ncclguard-report/1\"", "\"ranks\"", "\"collectives\"",
		"\"stragglers\"", "\"hangs\"", "\"mismatches\"", "\"config_mismatches\"",
		"\"comm_fraction\"", "\"timeouts\"", "\"injections\"", "\"policy\"",
		"\"lost_events\"",
	};
	struct job j;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	job_start(&j, 2, 1);
	an_finish(j.an);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(an_report_json(j.an, f), 0);
	fclose(f);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_non_null(strstr(buf, keys[i]));
	free(buf);
	an_free(j.an);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busbw_factors),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_quantiles),
		cmocka_unit_test(test_lateness),
		cmocka_unit_test(test_straggler_rule),
		cmocka_unit_test(test_p2p_numbers_apart),
		cmocka_unit_test(test_busy_out_of_order),
		cmocka_unit_test(test_chrome_restart),
		cmocka_unit_test(test_p2p_pending_bounded),
		cmocka_unit_test(test_p2p_missing_send),
		cmocka_unit_test(test_slow_rank),
		cmocka_unit_test(test_hang_and_mismatch),
		cmocka_unit_test(test_timing_off),
		cmocka_unit_test(test_sampled),
		cmocka_unit_test(test_hostid_per_host),
		cmocka_unit_test(test_clock_alignment),
		cmocka_unit_test(test_clock_three_hosts),
		cmocka_unit_test(test_clock_straggler_host),
		cmocka_unit_test(test_clock_unshared_host),
		cmocka_unit_test(test_complete_after_destroy),
		cmocka_unit_test(test_one_rank_group_late),
		cmocka_unit_test(test_mid_run),
		cmocka_unit_test(test_json_keys),
		cmocka_unit_test(test_html_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
