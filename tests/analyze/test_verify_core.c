/* Output verification on in-memory records: the majority rule
 * (ng_fp_vote), fingerprints compared once every rank of the comm wrote
 * one, a late or repeated one ignored, the rest at the end, and the cap
 * on the calls kept for findings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "findings.h"
#include "fp_vote.h"

#define COMM 0x1234000000000001ULL
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void vote(const uint64_t *h, int n, const int *want, int ngrp, int major)
{
	int grp[16], m = -1;
	char scratch[NG_FP_VOTE_SCRATCH(16)];

	assert_int_equal(ng_fp_vote(h, n, grp, &m, scratch), ngrp);
	assert_int_equal(m, major);
	for (int i = 0; i < n; i++)
		assert_int_equal(grp[i], want[i]);
}

static void test_vote(void **state)
{
	static const uint64_t same[] = { 7, 7, 7, 7 }, one[] = { 7, 7, 9, 7 };
	static const uint64_t half[] = { 7, 7, 9, 9 }, two[] = { 9, 7 };
	static const uint64_t three[] = { 5, 7, 7, 9, 7 }, spread[] = { 5, 7, 9 };
	static const uint64_t first_small[] = { 9, 7, 7, 7, 9 };

	(void)state;
	vote(same, N(same), (const int[]){ 0, 0, 0, 0 }, 1, 1);
	vote(one, N(one), (const int[]){ 0, 0, 1, 0 }, 2, 1);
	/* 2 against 2, 1 against 1: no strict majority; the first met first */
	vote(half, N(half), (const int[]){ 0, 0, 1, 1 }, 2, 0);
	vote(two, N(two), (const int[]){ 0, 1 }, 2, 0);
	/* the largest output is 0 wherever it is met; the others by size */
	vote(three, N(three), (const int[]){ 1, 0, 0, 2, 0 }, 3, 1);
	vote(first_small, N(first_small), (const int[]){ 1, 0, 0, 0, 1 }, 2, 1);
	vote(spread, N(spread), (const int[]){ 0, 1, 2 }, 3, 0);
	vote(same, 1, (const int[]){ 0 }, 1, 1);
}

static void fp(struct an_state *an, int rank, uint64_t seq, int nranks, uint64_t hash,
	       const char *slices)
{
	struct ev_src s = { .host = 0, .vpid = 100 + rank, .ts = 1000 };
	struct ev_rec_proc p = { .host = "", .rank = rank, .world_size = nranks,
				 .verify_every = 1024 };
	struct ev_rec_fp r = { .comm_hash = COMM, .seq = seq, .op = "allreduce",
			       .slices = slices, .nranks = nranks, .bytes = 1 << 20,
			       .compared = 4096, .hash = hash };

	if (!an_proc_find(an, &s))
		an_process_info(an, &s, &p);
	an_fprint(an, &s, &r);
}

static void test_settle(void **state)
{
	struct an_state *an = an_new(NULL);
	const struct an_vcomm *c;
	const char *sl = "0+1024,4096+1024,8192+1024,16384+1024";

	(void)state;
	an_host_id(an, "h0");
	/* seq 1023: every rank, rank 1's differs; compared at once */
	for (int r = 0; r < 3; r++)
		fp(an, r, 1023, 3, r == 1 ? 0xbad : 0x600d, sl);
	assert_int_equal(an->verify.nmism, 1);
	assert_int_equal(an->verify.mism[0].majority, 1);
	assert_null(an->verify.call[0].fp);
	/* a repeat after it was compared changes nothing */
	fp(an, 1, 1023, 3, 0x600d, sl);
	/* seq 2047: two ranks of three, the same; seq 3071: one rank */
	fp(an, 0, 2047, 3, 0x600d, sl);
	fp(an, 2, 2047, 3, 0x600d, sl);
	fp(an, 2, 2047, 3, 0xbad, sl);	/* a rank's second: ignored */
	fp(an, 0, 3071, 3, 0x600d, sl);
	/* seq 4095: other slices on rank 2 */
	fp(an, 0, 4095, 3, 0x600d, sl);
	fp(an, 1, 4095, 3, 0x600d, sl);
	fp(an, 2, 4095, 3, 0x600d, "0+1024");
	an_verify_finish(an);
	assert_int_equal(an->verify.ncomm, 1);
	c = &an->verify.comm[0];
	assert_int_equal(c->compared, 2);
	assert_int_equal(c->mismatched, 1);
	assert_int_equal(c->unpaired, 2);
	assert_true(an_verify_on(an));
	an_verify_findings(an);
	assert_int_equal(an->nfindings, 1);
	assert_int_equal(an->findings[0].nranks, 1);
	assert_int_equal(an->findings[0].ranks[0], 1);
	assert_non_null(strstr(an->findings[0].summary, "rank 1 (h0) held a different "
			       "all-reduce output from ranks 0, 2 at seq 1023"));
	assert_non_null(strstr(an->findings[0].summary, "1 of 2 verified calls"));
	an_free(an);
}

/* Past the calls kept for findings: counted all the same, and said. */
static void test_mism_cap(void **state)
{
	struct an_state *an = an_new(NULL);
	int n = AN_FP_MISM_MAX + 6;

	(void)state;
	an_host_id(an, "h0");
	for (int s = 0; s < n; s++)
		for (int r = 0; r < 3; r++)
			fp(an, r, (uint64_t)s, 3, r == 1 ? 0xbad : 0x600d, "0+4096");
	an_verify_finish(an);
	assert_int_equal(an->verify.nmism, AN_FP_MISM_MAX);
	assert_int_equal(an->verify.mism_more, 6);
	assert_int_equal(an->verify.comm[0].mismatched, n);
	assert_int_equal(an->ninc, 1);
	assert_string_equal(an->inc[0].what, "verify_unkept");
	an_verify_findings(an);
	assert_int_equal(an->nfindings, 1);
	assert_non_null(strstr(an->findings[0].summary, "1030 of 1030 verified calls"));
	assert_non_null(strstr(an->findings[0].summary, "the same at seq 1, 2, 3, 4, 5, 6, 7, "
			       "8 and 1015 more"));
	an_free(an);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vote),
		cmocka_unit_test(test_settle),
		cmocka_unit_test(test_mism_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
