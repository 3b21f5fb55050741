/* A collective through the wrappers' common path (preload/wrap/coll.c,
 * coll_fast.h): the arrival time its coll_enqueue event carries, stamped
 * or coarse, on the trace's clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "coll_fast.h"
#include "ngtest.h"


/* A recorded call through the wrapper's path: the event, written later by
 * the watchdog (here: a drain 20 ms on, after a new anchor), carries the
 * time the call was made on CLOCK_MONOTONIC, whether the call stamped
 * the TSC or clock_gettime; so does a call an injected delay held back,
 * from after its delay. */
static struct ng_ev_coll_enqueue enq_seen;
static int enq_count;
static const int state_on = 1;

static void fake_enqueue(const struct ng_ev_coll_enqueue *ev)
{
	enq_seen = *ev;
	enq_count++;
}

static void fake_inject(const struct ng_ev_inject *ev)
{
	(void)ev;
}

static const struct ng_tp_ops fake_tp = {
	.coll_enqueue = fake_enqueue,
	.inject = fake_inject,
};

/* A session records coll_enqueue into fake_tp; the rings start empty. */
static void recording_on(void)
{
	ng_recbuf_init(ng_trace_enqueue);
	ng_recbuf_drain();
	ng_hot.first_call_done = 1;
	ng_hot.coll_state[0] = ng_hot.coll_state[1] = &state_on;
	ng_hot.tp = &fake_tp;
}

/* The call is made seq `seq` of the comm: its arrival is stamped when seq
 * is a multiple of NG_ARRIVAL_EVERY (or a delay was injected). */
static void record_one(struct ng_comm *c, uint64_t delay_ms, uint64_t seq)
{
	struct timespec later = { 0, 20000000 };
	ncclComm_t h = (ncclComm_t)(uintptr_t)0x7000;
	struct ng_call call;
	uint64_t a, b;

	enq_count = 0;
	c->seq = seq - 1;
	a = ng_now_ns();
	assert_int_equal(ng_coll_begin(&call, NG_FN_ncclAllReduce, 0, 2, ncclFloat, -1, h,
				       (cudaStream_t)0x1234, 0, NULL), 0);
	b = ng_now_ns();
	assert_true(call.trace);
	assert_int_equal(call.ticks, ng_hot.ticks);
	ng_coll_end(&call, ncclSuccess);
	nanosleep(&later, NULL);
	ng_clock_tick();
	assert_int_equal(ng_recbuf_drain(), 1);
	assert_int_equal(enq_count, 1);
	assert_int_equal(enq_seen.comm_hash, c->hash);
	assert_int_equal(enq_seen.exit_ns, 0);	/* not GPU-timed */
	assert_int_equal(enq_seen.seq, seq);
	assert_int_equal(enq_seen.enter_coarse, 0);
	if (enq_seen.enter_ns + 2000 < a + delay_ms * 1000000 || enq_seen.enter_ns > b + 2000)
		fail_msg("%s stamp: enter_ns %llu outside the call [%llu, %llu], delay %llu ms",
			 call.ticks ? "TSC" : "clock_gettime",
			 (unsigned long long)enq_seen.enter_ns, (unsigned long long)a,
			 (unsigned long long)b, (unsigned long long)delay_ms);
}

static void test_recorded_stamp(void **state)
{
	struct ng_hot_flags saved = ng_hot;
	struct ng_config saved_cfg = ng_cfg;
	struct ng_comm *c = ng_comm_add((ncclComm_t)(uintptr_t)0x7000, 77, 0, 2, 0, 0, 1);

	(void)state;
	assert_non_null(c);
	recording_on();
	ng_cfg.tsc = 1;
	ngt_calibrate();
	record_one(c, 0, NG_ARRIVAL_EVERY);	/* the TSC where this machine allows it */
	assert_int_equal(ng_inject_init("delay:ms=30,op=allreduce"), 0);
	record_one(c, 30, 3);		/* a delayed call is stamped, sampled or not */
	assert_int_equal(ng_inject_init(NULL), 0);
	ng_cfg.tsc = 0;
	ngt_calibrate();
	assert_false(ng_hot.ticks);
	record_one(c, 0, 2 * NG_ARRIVAL_EVERY);	/* clock_gettime */
	ng_hotcfg.hot = saved;
	ng_cfg = saved_cfg;
	ngt_calibrate();
}

/* Which recorded calls stamp their arrival: one small collective in
 * NG_ARRIVAL_EVERY by seq, and every large, point-to-point and grouped
 * call; the others carry the coarse time, flagged, never later than the
 * call nor older than the coarse clock's lag. */
static struct ng_ev_coll_enqueue arrival_call(int fn, int is_p2p, uint64_t count, int grouped)
{
	ncclComm_t h = (ncclComm_t)(uintptr_t)0x7100;
	struct ng_call call;

	if (grouped)
		ng_group_depth++;
	assert_int_equal(ng_coll_begin(&call, fn, is_p2p, count, ncclFloat, is_p2p ? 1 : -1, h,
				       (cudaStream_t)0x1234, 0, NULL), 0);
	ng_coll_end(&call, ncclSuccess);
	if (grouped)
		ng_group_depth--;
	assert_int_equal(ng_recbuf_drain(), 1);
	return enq_seen;
}

static void test_arrival_sampling(void **state)
{
	struct ng_hot_flags saved = ng_hot;
	struct ng_config saved_cfg = ng_cfg;
	struct ng_comm *c = ng_comm_add((ncclComm_t)(uintptr_t)0x7100, 78, 0, 2, 0, 0, 1);
	struct ng_ev_coll_enqueue ev[4 * NG_ARRIVAL_EVERY];
	uint64_t a, b;
	int i, n = 0;

	(void)state;
	assert_non_null(c);
	recording_on();
	ng_cfg.sample_bytes = 1 << 20;
	a = ng_now_ns();
	for (i = 0; i < 2 * NG_ARRIVAL_EVERY; i++)
		ev[n++] = arrival_call(NG_FN_ncclAllReduce, 0, 2, 0);
	ev[n++] = arrival_call(NG_FN_ncclAllReduce, 0, 1 << 20, 0);	/* 4 MiB: large */
	ev[n++] = arrival_call(NG_FN_ncclSend, 1, 2, 0);
	ev[n++] = arrival_call(NG_FN_ncclAllReduce, 0, 2, 1);
	b = ng_now_ns();
	for (i = 0; i < n; i++) {
		int small = i < 2 * NG_ARRIVAL_EVERY;
		uint64_t seq = ev[i].seq ? ev[i].seq : ev[i].p2p_seq;

		assert_int_equal(ev[i].enter_coarse, small && seq % NG_ARRIVAL_EVERY != 0);
		assert_true(ev[i].enter_ns <= b);
		if (!ev[i].enter_coarse)
			assert_true(ev[i].enter_ns >= a);
		else	/* the coarse clock lags by a jiffy at most */
			assert_true(ev[i].enter_ns + 20000000 >= a);
	}
	assert_int_equal(ev[2 * NG_ARRIVAL_EVERY].bytes, 4 << 20);
	assert_int_equal(ev[2 * NG_ARRIVAL_EVERY + 1].p2p_seq, 1);
	assert_int_equal(ev[2 * NG_ARRIVAL_EVERY + 2].group_depth, 1);
	ng_hotcfg.hot = saved;
	ng_cfg = saved_cfg;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded_stamp),
		cmocka_unit_test(test_arrival_sampling),
	};

	return cmocka_run_group_tests_name("coll", tests, NULL, NULL);
}
