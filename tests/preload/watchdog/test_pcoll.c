/* The collectives NCCL's profiler plugin reports (preload/watchdog/pcoll.c):
 * a call completes when its host event and every channel it announced
 * have ended, in whatever order; a call whose kernel never ends is
 * overdue once, oldest first; a comm a wrapper records is not tracked;
 * a comm whose kernels NCCL never reports is never judged; a copy-engine
 * call ends at its host stop, untimed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "nccl_profiler.h"
#include "watchdog.h"

extern ncclProfiler_v6_t ncclProfiler_v6;
extern ncclProfiler_v5_t ncclProfiler_v5;

#define INFO(nch) NG_PINFO(2, 1, (nch), 16, 0)

static struct ng_pctx *ctx(int wrapped)
{
	struct ng_pctx *x = ng_pctx_new(!wrapped);

	assert_non_null(x);
	assert_int_equal(x->wrapped, wrapped);
	assert_true(wrapped || x->slot);
	x->hash = 0x1234;
	x->nranks = 4;
	ng_pctx_live(x);
	return x;
}

static void test_complete_any_order(void **state)
{
	struct ng_pctx *x = ctx(0);
	struct ng_pcoll *c = ng_pcoll_start(x, NG_FN_ncclAllReduce, 0, 256, ncclFloat32, -1, INFO(2));
	struct ng_pch *a, *b;

	(void)state;
	assert_non_null(c);
	assert_int_equal(c->seq, 1);
	/* The kernel may end before the host event does (NCCL's proxy
	 * thread sees it first). */
	a = ng_pcoll_ch_start(c, 0, 1000);
	b = ng_pcoll_ch_start(c, 1, 1100);
	assert_non_null(a);
	assert_non_null(b);
	ng_pcoll_ch_time(a, 2000);
	ng_pcoll_ch_stop(a);
	ng_pcoll_ch_time(b, 2500);
	ng_pcoll_ch_stop(b);
	assert_int_equal(c->state, NG_PS_LIVE);	/* host not done */
	assert_int_equal(c->gpu_start, 1000);
	assert_int_equal(c->gpu_end, 2500);
	ng_pcoll_host_stop(c);
	assert_int_equal(c->state, NG_PS_FREE);
	/* A channel out of range, or of a call already done: no handle. */
	assert_null(ng_pcoll_ch_start(c, 0, 3000));
	ng_pctx_end(x);
}

static void test_overdue_once(void **state)
{
	struct ng_pctx *x = ctx(0);
	struct ng_pcoll *c1, *c2;
	struct ng_pcoll_late l;
	uint64_t now;

	(void)state;
	c1 = ng_pcoll_start(x, NG_FN_ncclAllReduce, 0, 1024, ncclFloat32, -1, INFO(1));
	ng_pcoll_host_stop(c1);
	assert_non_null(ng_pcoll_ch_start(c1, 0, 5));	/* started, never ends */
	c2 = ng_pcoll_start(x, NG_FN_ncclAllGather, 0, 16, ncclInt8, -1, INFO(1));
	ng_pcoll_host_stop(c2);
	now = c2->enter_ns + 10 * 1000000000ull;
	assert_int_equal(ng_pcoll_overdue(now, 1000000000ull, &l), 1);
	assert_int_equal(l.seq, c1->seq);	/* the oldest: the other waits on it */
	assert_int_equal(l.fn, NG_FN_ncclAllReduce);
	assert_int_equal(l.bytes, 4096);
	assert_int_equal(l.started, 1);
	assert_int_equal(l.hash, 0x1234);
	assert_int_equal(ng_pcoll_overdue(now, 1000000000ull, &l), 0);	/* said once */
	assert_int_equal(ng_pcoll_overdue(c2->enter_ns, 1000000000ull, &l), 0);
	ng_pctx_end(x);
	assert_int_equal(ng_pcoll_overdue(now + 1, 1, &l), 0);	/* finalized */
}

static void test_no_kernel_events(void **state)
{
	struct ng_pctx *x = ctx(0);
	struct ng_pcoll *c = ng_pcoll_start(x, NG_FN_ncclBroadcast, 0, 8, ncclInt8, 0, INFO(1));
	struct ng_pcoll_late l;

	(void)state;
	ng_pcoll_host_stop(c);
	/* NCCL reports no kernel of this comm: nothing can say it ended. */
	assert_int_equal(ng_pcoll_overdue(c->enter_ns + 100000000000ull, 1, &l), 0);
	ng_pctx_end(x);
}

static void test_prev_without_kernel_freed(void **state)
{
	struct ng_pctx *x = ctx(0);
	struct ng_pcoll *c1 = ng_pcoll_start(x, NG_FN_ncclAllReduce, 0, 8, ncclInt8, -1, INFO(1));
	struct ng_pcoll *c2;
	struct ng_pch *ch;

	(void)state;
	ng_pcoll_host_stop(c1);		/* a captured call: no kernel events */
	c2 = ng_pcoll_start(x, NG_FN_ncclAllReduce, 0, 8, ncclInt8, -1, INFO(1));
	ch = ng_pcoll_ch_start(c2, 0, 1);
	ng_pcoll_host_stop(c2);
	ng_pcoll_ch_stop(ch);
	assert_int_equal(c2->state, NG_PS_FREE);
	assert_int_equal(c1->state, NG_PS_FREE);
	ng_pctx_end(x);
}

static void test_wrapped_untracked(void **state)
{
	struct ng_pctx *x = ctx(1);

	(void)state;
	assert_null(ng_pcoll_start(x, NG_FN_ncclAllReduce, 0, 8, ncclInt8, -1, INFO(1)));
	ng_pctx_end(x);
}

/* Sends and receives count apart from collectives, in one call order. */
static void test_p2p(void **state)
{
	struct ng_pctx *x = ctx(0);
	struct ng_pcoll *a = ng_pcoll_start(x, NG_FN_ncclAllReduce, 0, 8, ncclInt8, -1, INFO(1));
	struct ng_pcoll *s = ng_pcoll_start(x, NG_FN_ncclSend, 1, 8, ncclInt8, 3, INFO(1));
	struct ng_pcoll *r = ng_pcoll_start(x, NG_FN_ncclRecv, 1, 8, ncclInt8, 3, INFO(1));
	struct ng_pcoll_late l;

	(void)state;
	assert_int_equal(a->seq, 1);
	assert_int_equal(s->seq, 1);
	assert_int_equal(r->seq, 2);
	assert_true(s->ord > a->ord && r->ord > s->ord);
	ng_pcoll_host_stop(a);
	ng_pcoll_ch_stop(ng_pcoll_ch_start(a, 0, 1));
	ng_pcoll_host_stop(s);
	ng_pcoll_ch_start(s, 0, 1);	/* the send never ends */
	assert_int_equal(ng_pcoll_overdue(s->enter_ns + 2000000000ull, 1000000000ull, &l), 1);
	assert_int_equal(l.p2p, 1);
	assert_int_equal(l.seq, 1);
	assert_int_equal(l.peer, 3);
	assert_int_equal(l.fn, NG_FN_ncclSend);
	ng_pctx_end(x);
}

/* A copy-engine collective (profiler v6's CeColl) has no kernel: it ends
 * at its host stop, with no GPU time, and is never taken for a hang,
 * even on a comm whose kernels NCCL reports. */
static void test_copy_engine(void **state)
{
	struct ng_pctx *x = ctx(0);
	uint64_t ce_info = NG_PINFO(NG_PALGO_CE, NG_PPROTO_NONE, 0, 0, 4);
	struct ng_pcoll *k = ng_pcoll_start(x, NG_FN_ncclAllReduce, 0, 8, ncclInt8, -1, INFO(1));
	struct ng_pcoll *ce, *ce2;
	struct ng_pcoll_late l;

	(void)state;
	ng_pcoll_host_stop(k);
	ng_pcoll_ch_stop(ng_pcoll_ch_start(k, 0, 1));	/* kernels are reported */
	ce = ng_pcoll_start(x, NG_FN_ncclAllGather, 0, 64, ncclInt8, -1, ce_info);
	assert_non_null(ce);
	assert_int_equal(ce->seq, 2);			/* counted as a collective */
	assert_int_equal(ce->state, NG_PS_LIVE);	/* the copies being enqueued */
	ng_pcoll_host_stop(ce);
	assert_int_equal(ce->state, NG_PS_FREE);
	assert_true(ce->gpu_start == UINT64_MAX && ce->gpu_end == 0);	/* untimed */
	assert_int_equal(ng_pcoll_overdue(ce->enter_ns + 100000000000ull, 1, &l), 0);
	/* A kernel after it that never ends is what is overdue. */
	ce2 = ng_pcoll_start(x, NG_FN_ncclAlltoAll, 0, 64, ncclInt8, -1, ce_info);
	ng_pcoll_host_stop(ce2);
	k = ng_pcoll_start(x, NG_FN_ncclAllReduce, 0, 8, ncclInt8, -1, INFO(1));
	ng_pcoll_host_stop(k);
	assert_non_null(ng_pcoll_ch_start(k, 0, 1));
	assert_int_equal(ng_pcoll_overdue(k->enter_ns + 10000000000ull, 1000000000ull, &l), 1);
	assert_int_equal(l.seq, k->seq);
	assert_int_equal(l.fn, NG_FN_ncclAllReduce);
	ng_pctx_end(x);
}

/* Through the v6 table as NCCL 2.29 calls it: a CeColl on a comm only
 * the plugin sees is a call of algorithm CE, ended by its stop; its
 * children get no handle; v5's table knows no such event. */
static void test_v6_ce_events(void **state)
{
	struct ng_pctx *x = ctx(0);
	ncclProfilerEventDescr_v6_t d = { .type = ncclProfileCeColl, .rank = 1 };
	ncclProfilerEventDescr_v5_t d5 = { .type = ncclProfileCeColl, .rank = 1 };
	struct ng_pcoll *c;
	void *h = (void *)1, *child = (void *)1;

	(void)state;
	d.ceColl.seqNumber = 6;
	d.ceColl.func = "AllGather";
	d.ceColl.count = 32;
	d.ceColl.root = -1;
	d.ceColl.datatype = "ncclFloat32";
	d.ceColl.syncStrategy = "UC";
	assert_int_equal(ncclProfiler_v6.startEvent(x, &h, &d), ncclSuccess);
	assert_non_null(h);
	c = h;
	assert_int_equal(c->fn, NG_FN_ncclAllGather);
	assert_int_equal(c->count, 32);
	assert_int_equal(c->dtype, ncclFloat32);
	assert_int_equal(NG_PINFO_ALGO(c->info), NG_PALGO_CE);
	assert_int_equal(NG_PINFO_PROTO(c->info), NG_PPROTO_NONE);
	assert_int_equal(NG_PINFO_NCH(c->info), 0);
	assert_int_equal(NG_PINFO_OPSEQ(c->info), 6);
	memset(&d, 0, sizeof(d));
	d.type = ncclProfileCeSync;
	d.parentObj = h;
	assert_int_equal(ncclProfiler_v6.startEvent(x, &child, &d), ncclSuccess);
	assert_null(child);
	assert_int_equal(c->state, NG_PS_LIVE);
	assert_int_equal(ncclProfiler_v6.stopEvent(h), ncclSuccess);
	assert_int_equal(c->state, NG_PS_FREE);
	/* An unknown func is not recorded. */
	d.type = ncclProfileCeColl;
	d.ceColl.func = "Fancy";
	assert_int_equal(ncclProfiler_v6.startEvent(x, &h, &d), ncclSuccess);
	assert_null(h);
	h = (void *)1;
	d5.coll.func = "AllGather";
	assert_int_equal(ncclProfiler_v5.startEvent(x, &h, &d5), ncclSuccess);
	assert_null(h);
	ng_pctx_end(x);
}

static void test_names(void **state)
{
	(void)state;
	assert_int_equal(NG_PINFO_ALGO(NG_PINFO(ng_palgo_id("RING"), 0, 0, 0, 0)), 2);
	assert_string_equal(ng_palgo_name[ng_palgo_id("NVLS_TREE")], "NVLS_TREE");
	assert_string_equal(ng_palgo_name[ng_palgo_id("FANCY")], "other");
	assert_string_equal(ng_pproto_name[ng_pproto_id("Simple")], "SIMPLE");
	assert_int_equal(ng_palgo_id("CE"), NG_PALGO_CE);
	assert_string_equal(ng_palgo_name[NG_PALGO_CE], "CE");
	assert_string_equal(ng_pproto_name[NG_PPROTO_NONE], "-");
	assert_string_equal(ng_pproto_name[ng_pproto_id("FANCY")], "other");
	assert_int_equal(ng_palgo_id(NULL), 0);
	assert_int_equal(NG_PINFO_OPSEQ(NG_PINFO(1, 2, 3, 4, 77)), 77);
	assert_int_equal(NG_PINFO_NCH(NG_PINFO(1, 2, 3, 4, 77)), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_complete_any_order),
		cmocka_unit_test(test_overdue_once),
		cmocka_unit_test(test_no_kernel_events),
		cmocka_unit_test(test_prev_without_kernel_freed),
		cmocka_unit_test(test_wrapped_untracked),
		cmocka_unit_test(test_p2p),
		cmocka_unit_test(test_copy_engine),
		cmocka_unit_test(test_v6_ce_events),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
