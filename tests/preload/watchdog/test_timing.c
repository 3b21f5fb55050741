/* GPU timing (preload/watchdog/timing.c): which calls are sampled, and the
 * events and pending records of timed calls on the CPU backend's CUDA runtime:
 * taken from their pools and given back, the pools' limits counted as
 * drops, a group's members sharing events, nonblocking comms' calls
 * closed only once they leave InProgress. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ngtest.h"
#include "timing.h"

static int timed(struct ng_call *call, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		call->index++;
		k += ng_timing_sampled(call);
	}
	return k;
}

static void test_sample_rule(void **state)
{
	struct ng_config saved = ng_cfg;
	static struct ng_comm c;
	struct ng_call call = { .comm = &c, .bytes = 8, .enter_ns = 5000000000ull };

	(void)state;
	/* Rate: a burst of 256 (+1) then one per gap as time passes. */
	ng_cfg.sample_every = 1;
	ng_cfg.sample_gap_ns = 1000000;
	ng_cfg.sample_bytes = 1 << 20;
	assert_int_equal(timed(&call, 5000), 257);
	call.enter_ns += 10000000;		/* 10 ms later: 10 more */
	assert_int_equal(timed(&call, 5000), 10);
	call.bytes = 4096;			/* another size: its own burst */
	assert_int_equal(timed(&call, 5000), 257);
	call.bytes = 12;			/* 8-15 bytes: the same class as 8 */
	assert_int_equal(timed(&call, 5000), 0);
	call.bytes = 1 << 20;			/* big calls: every one (timing.c times some) */
	assert_int_equal(timed(&call, 100), 100);
	call.bytes = 8;
	call.enter_ns += 5000000000ull;		/* idle 5 s: a full burst again */
	assert_int_equal(timed(&call, 5000), 257);
	/* Count: 1 in 4, by the comm's call index (the same calls on all ranks). */
	ng_cfg.sample_every = 4;
	ng_cfg.sample_gap_ns = 0;
	ng_cfg.sample_bytes = 65536;
	call.index = 0;
	assert_int_equal(timed(&call, 4000), 1000);
	ng_cfg.sample_every = 1;
	ng_cfg.sample_bytes = 0;
	assert_int_equal(timed(&call, 10), 10);
	ng_cfg = saved;
}

/* ---- events and pending calls ------------------------------------------- */

static struct ng_comm *tc;		/* a comm on device 0, with its pool */
static cudaStream_t s1, s2;

static uint64_t ring_len(struct ng_queue *r)
{
	return __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
}

static uint64_t dropped(void)
{
	return __atomic_load_n(&ng_timing_dropped, __ATOMIC_RELAXED);
}

static int pending_out(void)
{
	return __atomic_load_n(&tc->pending_out, __ATOMIC_ACQUIRE);
}

static struct ng_call mk_call(cudaStream_t s, int trace)
{
	static uint64_t index;
	struct ng_call call = {
		.fn = NG_FN_ncclAllReduce, .active = 1, .comm = tc, .stream = s,
		.bytes = 4096, .root = -1, .enter_ns = ng_now_ns(), .trace = trace,
	};

	call.index = ++index;
	call.seq = index;
	return call;
}

/* What the watchdog does with a pending call once its end event completed. */
static int put_all(void)
{
	struct ng_pending *f;
	int n = 0;

	while ((f = ng_queue_pop(&ng_pending_queue))) {
		assert_non_null(f->end);
		assert_int_equal(ng_cuda.cudaEventSynchronize(f->end->ev), cudaSuccess);
		ng_pending_put(f);
		n++;
	}
	return n;
}

static int setup_sim(void **state)
{
	void *sim = ngt_load_sim_cudart();

	(void)state;
	if (!sim || ng_resolve_cuda()) {
		print_error("no CPU-backend CUDA runtime beside the test (build/sim)\n");
		return -1;
	}
	tc = ng_comm_add((ncclComm_t)(uintptr_t)0x5000, 55, 0, 2, 0, 0, 1);
	if (!tc || ng_timing_comm_ready(tc) || !tc->pool ||
	    ng_cuda.cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) ||
	    ng_cuda.cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking))
		return -1;
	/* NCCLGUARD_SAMPLE=1: every call sampled, and timed while recording. */
	ng_cfg.sample_every = 1;
	ng_cfg.sample_gap_ns = 0;
	ng_cfg.sample_bytes = 0;
	return 0;
}

/* A timed call takes a pending record and, while a session records, two timing
 * events (else one marker), and gives them all back when the watchdog
 * is done with it; a call NCCL refused gives them back at once. */
static void test_pending_from_and_to_pool(void **state)
{
	struct ng_pool *p = tc->pool;
	uint64_t free0 = ring_len(&p->free), marks0 = ring_len(&p->marks), d0 = dropped();
	struct ng_call call;
	struct ng_pending *f;

	(void)state;
	assert_int_equal(free0, 2046);		/* the pool's events but two anchors */
	assert_int_equal(marks0, 1024);
	call = mk_call(s1, 1);
	ng_timing_before(&call);
	assert_non_null(f = call.pending);
	assert_non_null(f->start);
	assert_null(f->end);
	assert_int_equal(pending_out(), 1);
	assert_int_equal(ring_len(&p->free), free0 - 1);
	assert_int_equal(ring_len(&ng_pending_queue), 0);	/* not before the real call */
	ng_timing_after(&call, ncclSuccess);
	assert_int_equal(ring_len(&ng_pending_queue), 1);
	assert_non_null(f->end);
	assert_ptr_equal(f->end->home, &p->free);
	assert_int_equal(ring_len(&p->free), free0 - 2);
	assert_int_equal(f->seq, call.seq);
	assert_int_equal(f->index, call.index);
	assert_ptr_equal(f->comm, tc);
	assert_int_equal(tc->last_timed_call, call.index);
	assert_int_equal(put_all(), 1);
	assert_int_equal(pending_out(), 0);
	assert_int_equal(ring_len(&p->free), free0);

	/* No session: a marker, no timing event. */
	call = mk_call(s1, 0);
	ng_timing_before(&call);
	assert_null(call.pending->start);
	ng_timing_after(&call, ncclSuccess);
	assert_ptr_equal(call.pending->end->home, &p->marks);
	assert_int_equal(ring_len(&p->marks), marks0 - 1);
	assert_int_equal(ring_len(&p->free), free0);
	assert_int_equal(put_all(), 1);
	assert_int_equal(ring_len(&p->marks), marks0);

	/* Refused by NCCL: nothing went on the stream, nothing to wait for. */
	call = mk_call(s1, 1);
	ng_timing_before(&call);
	ng_timing_after(&call, ncclInvalidUsage);
	assert_int_equal(ring_len(&ng_pending_queue), 0);
	assert_int_equal(pending_out(), 0);
	assert_int_equal(ring_len(&p->free), free0);
	assert_int_equal(dropped(), d0);
}

/* Timed calls the program makes faster than the watchdog gives their
 * events back: once a pool is empty the calls go untimed, each counted,
 * none lost without a count, and the pool fills again after. */
static void test_pool_limits_counted(void **state)
{
	struct ng_pool *p = tc->pool;
	uint64_t free0 = ring_len(&p->free), marks0 = ring_len(&p->marks), d0 = dropped();
	int n = (int)(free0 / 2) + 5, m = (int)marks0 + 3, timed = 0;
	struct ng_call call;

	(void)state;
	for (int i = 0; i < n; i++) {
		call = mk_call(s1, 1);
		ng_timing_before(&call);
		ng_timing_after(&call, ncclSuccess);
		timed += call.pending != NULL;
	}
	assert_int_equal(timed, free0 / 2);
	assert_int_equal(ring_len(&ng_pending_queue), timed);
	assert_int_equal(dropped() - d0, n - timed);
	assert_int_equal(pending_out(), timed);
	assert_int_equal(ring_len(&p->free), 0);
	/* Markers run out the same way; timing events are not taken for them. */
	d0 = dropped();
	for (int i = 0; i < m; i++) {
		call = mk_call(s2, 0);
		ng_timing_before(&call);
		ng_timing_after(&call, ncclSuccess);
	}
	assert_int_equal(ring_len(&ng_pending_queue), timed + marks0);
	assert_int_equal(dropped() - d0, m - marks0);
	assert_int_equal(pending_out(), timed + (int)marks0);
	assert_int_equal(put_all(), timed + (int)marks0);
	assert_int_equal(pending_out(), 0);
	assert_int_equal(ring_len(&p->free), free0);
	assert_int_equal(ring_len(&p->marks), marks0);
}

/* Members of one group, then its outermost end returning r. */
static void group_members(struct ng_call *calls, int n, ncclResult_t r)
{
	ng_group_depth = 1;
	for (int i = 0; i < n; i++)
		ng_timing_group_member(&calls[i], ncclSuccess);
	ng_group_depth = 0;
	assert_int_equal(ring_len(&ng_pending_queue), 0);	/* nothing ran yet */
	ng_timing_group_end(r);
}

/* A group's members on one stream share the opening event recorded at
 * the first of them and the closing one recorded after the group's end;
 * another stream has its own pair.  A group that failed times nothing. */
static void test_group_shares_events(void **state)
{
	struct ng_pool *p = tc->pool;
	uint64_t free0 = ring_len(&p->free), d0 = dropped();
	struct ng_call calls[5];
	struct ng_pending *f[5];
	int i;

	(void)state;
	for (i = 0; i < 5; i++)
		calls[i] = mk_call(i < 3 ? s1 : s2, 1);
	group_members(calls, 5, ncclSuccess);
	assert_int_equal(ring_len(&ng_pending_queue), 5);
	assert_int_equal(ring_len(&p->free), free0 - 4);	/* a pair per stream */
	for (i = 0; i < 5; i++) {
		f[i] = ng_queue_pop(&ng_pending_queue);
		assert_non_null(f[i]);
		assert_int_equal(f[i]->index, calls[i].index);
		assert_non_null(f[i]->start);
		assert_non_null(f[i]->end);
	}
	for (i = 1; i < 3; i++) {
		assert_ptr_equal(f[i]->start, f[0]->start);
		assert_ptr_equal(f[i]->end, f[0]->end);
	}
	assert_ptr_equal(f[4]->start, f[3]->start);
	assert_ptr_equal(f[4]->end, f[3]->end);
	assert_ptr_not_equal(f[3]->start, f[0]->start);
	assert_ptr_not_equal(f[3]->end, f[0]->end);
	/* One reference per member: the group kept none. */
	assert_int_equal(f[0]->start->refs, 3);
	assert_int_equal(f[0]->end->refs, 3);
	assert_int_equal(f[3]->start->refs, 2);
	assert_int_equal(tc->last_timed_call, calls[4].index);
	for (i = 0; i < 5; i++) {
		assert_int_equal(ng_cuda.cudaEventSynchronize(f[i]->end->ev), cudaSuccess);
		ng_pending_put(f[i]);
	}
	assert_int_equal(ring_len(&p->free), free0);	/* back at the last member */
	assert_int_equal(pending_out(), 0);

	for (i = 0; i < 5; i++)
		calls[i] = mk_call(i < 3 ? s1 : s2, 1);
	group_members(calls, 5, ncclInternalError);
	assert_int_equal(ring_len(&ng_pending_queue), 0);
	assert_int_equal(pending_out(), 0);
	assert_int_equal(ring_len(&p->free), free0);
	assert_int_equal(dropped(), d0);
}

/* A nonblocking comm's call that returned ncclInProgress may not be on
 * the stream yet: its closing event waits until ncclCommGetAsyncError
 * says the comm left InProgress (ready: closed and handed over; failed:
 * given back).  The calls waiting are bounded, the excess counted. */
static void test_nonblocking_deferred(void **state)
{
	struct ng_pool *p = tc->pool;
	uint64_t free0 = ring_len(&p->free), d0 = dropped(), last = tc->last_timed_call;
	struct ng_call call, calls[3];
	struct ng_pending *f;
	int i;

	(void)state;
	call = mk_call(s1, 1);
	ng_timing_before(&call);
	f = call.pending;
	ng_timing_after(&call, ncclInProgress);
	assert_int_equal(tc->ndeferred, 1);
	assert_null(f->end);
	assert_int_equal(ring_len(&ng_pending_queue), 0);
	assert_int_equal(tc->last_timed_call, last);
	assert_int_equal(pending_out(), 1);
	ng_timing_undefer(tc, ncclSuccess);
	assert_int_equal(tc->ndeferred, 0);
	assert_non_null(f->end);
	assert_int_equal(tc->last_timed_call, call.index);
	assert_int_equal(put_all(), 1);

	call = mk_call(s1, 1);
	ng_timing_before(&call);
	ng_timing_after(&call, ncclInProgress);
	ng_timing_undefer(tc, ncclRemoteError);
	assert_int_equal(tc->ndeferred, 0);
	assert_int_equal(ring_len(&ng_pending_queue), 0);
	assert_int_equal(pending_out(), 0);
	assert_int_equal(ring_len(&p->free), free0);

	/* A group on a nonblocking comm: its members wait the same way. */
	for (i = 0; i < 3; i++)
		calls[i] = mk_call(s2, 1);
	group_members(calls, 3, ncclInProgress);
	assert_int_equal(tc->ndeferred, 3);
	assert_int_equal(ring_len(&ng_pending_queue), 0);
	ng_timing_undefer(tc, ncclSuccess);
	assert_int_equal(ring_len(&ng_pending_queue), 3);
	assert_int_equal(put_all(), 3);

	for (i = 0; i < NG_DEFERRED_MAX + 2; i++) {
		call = mk_call(s1, 0);
		ng_timing_before(&call);
		ng_timing_after(&call, ncclInProgress);
	}
	assert_int_equal(tc->ndeferred, NG_DEFERRED_MAX);
	assert_int_equal(dropped() - d0, 2);
	assert_int_equal(pending_out(), NG_DEFERRED_MAX);
	ng_timing_undefer(tc, ncclSuccess);
	assert_int_equal(put_all(), NG_DEFERRED_MAX);
	assert_int_equal(pending_out(), 0);
	assert_int_equal(ring_len(&p->free), free0);
}

/* One call of `bytes` through ng_timing_before/after: 1 if it took a
 * timing event, 0 if a marker only; -1 if it got no pending record. */
static int one_call(uint64_t bytes, int trace)
{
	struct ng_call call = mk_call(s1, trace);
	int timed;

	call.bytes = bytes;
	ng_timing_before(&call);
	if (!call.pending)
		return -1;
	timed = call.pending->start != NULL;
	ng_timing_after(&call, ncclSuccess);
	return timed;
}

/* Calls of sample_bytes or more (by default): every one is marked, and a
 * schedule of the comm's count of them picks the ones timed, the same on
 * every rank whatever else the rank calls: the first 256, then one in 2,
 * 4, ... (128 per doubling of the count), never fewer than one in 256. */
static void test_big_calls_scheduled(void **state)
{
	struct ng_config saved = ng_cfg;
	struct ng_pool *p = tc->pool;
	uint64_t free0 = ring_len(&p->free), d0 = dropped();
	static int picks[2][2048];
	const uint64_t mib = 1 << 20;
	int r, n, t, total;

	(void)state;
	ng_cfg.sample_every = 1;
	ng_cfg.sample_gap_ns = 10000000;	/* the default: 100/s below 1 MiB */
	ng_cfg.sample_bytes = mib;
	/* Two "ranks" (the comm's count reset between them); the second
	 * also makes small calls in between, which do not move the count. */
	for (r = 0; r < 2; r++) {
		memset(tc->big_calls, 0, sizeof(tc->big_calls));
		for (n = 0; n < 2048; n++) {
			if (r == 1 && n % 3 == 0)
				assert_int_equal(one_call(4096, 1), 1);
			t = one_call(mib + n % 100, 1);	/* one size class */
			assert_int_not_equal(t, -1);
			picks[r][n] = t;
			if (n % 256 == 255)
				put_all();
		}
		put_all();
	}
	assert_memory_equal(picks[0], picks[1], sizeof(picks[0]));
	for (n = 0, total = 0; n < 2048; n++)
		total += picks[0][n];
	assert_int_equal(total, 256 + 3 * 128);		/* up to 2048 calls */
	assert_int_equal(picks[0][255], 1);		/* the 256th */
	assert_int_equal(picks[0][256], 0);		/* the 257th: 1 in 2 */
	assert_int_equal(picks[0][257], 1);
	assert_int_equal(picks[0][512] + picks[0][513] + picks[0][514] + picks[0][515], 1);
	/* Far into a long job: one in 256. */
	tc->big_calls[20] = 1000000 - 1;		/* 1 MiB's class */
	for (n = 0, total = 0; n < 1024; n++)
		total += one_call(mib, 1) == 1;
	put_all();
	assert_int_equal(total, 4);
	/* Without a session: markers only, and the count goes on. */
	memset(tc->big_calls, 0, sizeof(tc->big_calls));
	for (n = 0; n < 10; n++)
		assert_int_equal(one_call(2 * mib, 0), 0);
	put_all();
	assert_int_equal(tc->big_calls[21], 10);
	/* NCCLGUARD_SAMPLE=1: every call timed. */
	ng_cfg.sample_gap_ns = 0;
	ng_cfg.sample_bytes = 0;
	tc->big_calls[20] = 1000000;
	for (n = 0; n < 10; n++)
		assert_int_equal(one_call(mib, 1), 1);
	put_all();
	assert_int_equal(dropped(), d0);
	assert_int_equal(pending_out(), 0);
	assert_int_equal(ring_len(&p->free), free0);
	ng_cfg = saved;
}

/* A group that opens with a call of sample_bytes or more is timed as a
 * whole on the large calls' schedule, counted over such groups: of 300
 * groups of two 1 MiB calls, the first 256 and then one in 2.  An untimed
 * group's members share a closing marker. */
static void test_big_groups_scheduled(void **state)
{
	struct ng_config saved = ng_cfg;
	struct ng_pool *p = tc->pool;
	uint64_t free0 = ring_len(&p->free), marks0 = ring_len(&p->marks), d0 = dropped();
	struct ng_call calls[2];
	struct ng_pending *f[2];
	int g, i, timed = 0;

	(void)state;
	ng_cfg.sample_every = 1;
	ng_cfg.sample_gap_ns = 10000000;
	ng_cfg.sample_bytes = 1 << 20;
	tc->big_groups = 0;
	for (g = 1; g <= 300; g++) {
		for (i = 0; i < 2; i++) {
			calls[i] = mk_call(s1, 1);
			calls[i].bytes = 1 << 20;
		}
		group_members(calls, 2, ncclSuccess);
		assert_int_equal(ring_len(&ng_pending_queue), 2);
		for (i = 0; i < 2; i++) {
			f[i] = ng_queue_pop(&ng_pending_queue);
			assert_non_null(f[i]);
			assert_non_null(f[i]->end);
			assert_ptr_equal(f[i]->end, f[0]->end);
			assert_ptr_equal(f[i]->start, f[0]->start);
		}
		if (g <= 256 || g % 2 == 0) {
			assert_non_null(f[0]->start);
			assert_ptr_equal(f[0]->end->home, &p->free);
			timed++;
		} else {
			assert_null(f[0]->start);
			assert_ptr_equal(f[0]->end->home, &p->marks);
		}
		for (i = 0; i < 2; i++) {
			assert_int_equal(ng_cuda.cudaEventSynchronize(f[i]->end->ev), cudaSuccess);
			ng_pending_put(f[i]);
		}
	}
	assert_int_equal(timed, 256 + 22);
	assert_int_equal(tc->big_groups, 300);
	assert_int_equal(dropped(), d0);
	assert_int_equal(pending_out(), 0);
	assert_int_equal(ring_len(&p->free), free0);
	assert_int_equal(ring_len(&p->marks), marks0);
	ng_cfg = saved;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_rule),
	};
	const struct CMUnitTest sim_tests[] = {
		cmocka_unit_test(test_pending_from_and_to_pool),
		cmocka_unit_test(test_pool_limits_counted),
		cmocka_unit_test(test_group_shares_events),
		cmocka_unit_test(test_nonblocking_deferred),
		cmocka_unit_test(test_big_calls_scheduled),
		cmocka_unit_test(test_big_groups_scheduled),
	};

	return cmocka_run_group_tests_name("timing", tests, NULL, NULL) |
	       cmocka_run_group_tests_name("timing on the CPU backend", sim_tests, setup_sim, NULL);
}
