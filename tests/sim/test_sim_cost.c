/* sim/cost.c: bus bytes as nccl-tests counts them, the duration of a
 * launch from NCCLSIM_GBPS and NCCLSIM_LATENCY_US, the kinds' names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "sim.h"

static void test_busbytes(void **state)
{
	(void)state;
	/* 1024 floats on 4 ranks: 4096 B * 2 * 3/4 */
	assert_int_equal(sim_busbytes(SIM_ALLREDUCE, 1024, 4, 4), 6144);
	/* per-rank counts: size = 256 * 4 * 4 = 4096 B, times 3/4 */
	assert_int_equal(sim_busbytes(SIM_ALLGATHER, 256, 4, 4), 3072);
	assert_int_equal(sim_busbytes(SIM_REDUCESCATTER, 256, 4, 4), 3072);
	assert_int_equal(sim_busbytes(SIM_ALLTOALL, 256, 4, 4), 3072);
	assert_int_equal(sim_busbytes(SIM_BROADCAST, 1000, 8, 2), 8000);
	assert_int_equal(sim_busbytes(SIM_REDUCE, 1000, 8, 2), 8000);
	assert_int_equal(sim_busbytes(SIM_SEND, 10, 2, 2), 20);
	assert_int_equal(sim_busbytes(SIM_RECV, 10, 2, 2), 20);
	/* one rank moves nothing over a bus */
	assert_int_equal(sim_busbytes(SIM_ALLREDUCE, 1024, 4, 1), 0);
	assert_int_equal(sim_busbytes(SIM_BROADCAST, 1024, 4, 1), 0);
}

/* The kinds are nccl_api.def's operations in its order: the names the
 * profiler and the errors give come from its PROF column. */
static void test_kind_names(void **state)
{
	static const char *const want[SIM_NKINDS] = {
		[SIM_ALLREDUCE] = "AllReduce", [SIM_ALLGATHER] = "AllGather",
		[SIM_REDUCESCATTER] = "ReduceScatter", [SIM_BROADCAST] = "Broadcast",
		[SIM_REDUCE] = "Reduce", [SIM_ALLTOALL] = "AlltoAll", [SIM_GATHER] = "Gather",
		[SIM_SCATTER] = "Scatter", [SIM_SEND] = "Send", [SIM_RECV] = "Recv",
		[SIM_PUTSIGNAL] = "PutSignal", [SIM_SIGNAL] = "Signal", [SIM_WAITSIGNAL] = "WaitSignal",
	};

	(void)state;
	for (int k = 0; k < SIM_NKINDS; k++)
		assert_string_equal(sim_kind_name((enum sim_kind)k), want[k]);
	assert_string_equal(sim_kind_name(SIM_NKINDS), "?");
}

static void test_cost_ns(void **state)
{
	struct sim_cost c = { .gbps = 10, .latency_us = 20 };

	(void)state;
	assert_int_equal(sim_cost_ns(&c, 0), 20000);
	assert_int_equal(sim_cost_ns(&c, 1000000), 20000 + 100000);
	c.gbps = 0;	/* no bandwidth term */
	assert_int_equal(sim_cost_ns(&c, 1000000), 20000);
	c.latency_us = 0;
	assert_int_equal(sim_cost_ns(&c, 1000000), 0);
}

static void test_env(void **state)
{
	struct sim_cost c;

	(void)state;
	unsetenv("NCCLSIM_GBPS");
	unsetenv("NCCLSIM_LATENCY_US");
	sim_cost_from_env(&c);
	assert_true(c.gbps == 10 && c.latency_us == 20);
	setenv("NCCLSIM_GBPS", "2.5", 1);
	setenv("NCCLSIM_LATENCY_US", "0", 1);
	sim_cost_from_env(&c);
	assert_true(c.gbps == 2.5 && c.latency_us == 0);
	setenv("NCCLSIM_GBPS", "fast", 1);	/* nonsense: the default */
	setenv("NCCLSIM_LATENCY_US", "-3", 1);
	sim_cost_from_env(&c);
	assert_true(c.gbps == 10 && c.latency_us == 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busbytes),
		cmocka_unit_test(test_cost_ns),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
