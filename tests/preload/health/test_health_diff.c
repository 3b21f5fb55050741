/* What the hardware sampler writes after a sample (preload/health/diff.c):
 * changes of counts and states, levels past their step, resets, and a
 * counter stuck at its saturation value said once, never as no change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "hw_priv.h"

static struct hw_host host;
static struct {
	enum ng_hw_ctr c;
	uint64_t before, after;
	int flags;
} got[16];
static int ngot;

static void emit(const struct hw_dev *d, enum ng_hw_ctr c, uint64_t before, uint64_t after,
		 uint64_t t, int flags)
{
	(void)d;
	(void)t;
	assert_true(ngot < 16);
	got[ngot].c = c;
	got[ngot].before = before;
	got[ngot].after = after;
	got[ngot].flags = flags;
	ngot++;
}

/* One sample: the values given, the others not read. */
static void sample(struct hw_dev *d, int first, enum ng_hw_ctr c, uint64_t v)
{
	memset(d->have, 0, sizeof(d->have));
	hw_set(d, c, v);
	ngot = 0;
	hw_diff(&host, 1, first, emit);
}

static void test_count(void **state)
{
	struct hw_dev *d;

	(void)state;
	host.ndev = 0;
	d = hw_dev_add(&host, NG_HW_DEV_ib, "mlx5_0/1");
	sample(d, 1, NG_HW_link_downed, 3);
	assert_int_equal(ngot, 0);		/* the baseline writes nothing */
	sample(d, 0, NG_HW_link_downed, 3);
	assert_int_equal(ngot, 0);
	sample(d, 0, NG_HW_link_downed, 4);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].c, NG_HW_link_downed);
	assert_int_equal(got[0].before, 3);
	assert_int_equal(got[0].after, 4);
	assert_int_equal(got[0].flags, 0);
	/* unread this time: no change, and the next compares with 4 */
	memset(d->have, 0, sizeof(d->have));
	ngot = 0;
	hw_diff(&host, 1, 0, emit);
	assert_int_equal(ngot, 0);
	sample(d, 0, NG_HW_link_downed, 1);	/* cleared: a reset */
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].before, 4);
	assert_int_equal(got[0].flags, NG_HW_RESET);
}

static void test_saturation(void **state)
{
	struct hw_dev *d;

	(void)state;
	host.ndev = 0;
	d = hw_dev_add(&host, NG_HW_DEV_ib, "mlx5_0/1");
	/* 8 bits: 254 -> 255 is a change and the counter's end */
	sample(d, 1, NG_HW_link_downed, 254);
	sample(d, 0, NG_HW_link_downed, 255);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].before, 254);
	assert_int_equal(got[0].after, 255);
	assert_int_equal(got[0].flags, NG_HW_SATURATED);
	sample(d, 0, NG_HW_link_downed, 255);
	assert_int_equal(ngot, 0);		/* said once */
	/* cleared, then saturated again: said again */
	sample(d, 0, NG_HW_link_downed, 0);
	assert_int_equal(ngot, 1);
	sample(d, 0, NG_HW_link_downed, 255);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].flags, NG_HW_SATURATED);

	/* 4 bits, saturated before the job: said at the first sample */
	host.ndev = 0;
	d = hw_dev_add(&host, NG_HW_DEV_ib, "mlx5_1/1");
	sample(d, 1, NG_HW_local_link_integrity_errors, 15);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].before, 15);
	assert_int_equal(got[0].after, 15);
	assert_int_equal(got[0].flags, NG_HW_SATURATED | NG_HW_AT_START);
	/* 16 bits: 15 is just a count */
	sample(d, 1, NG_HW_symbol_error, 15);
	assert_int_equal(ngot, 0);
}

static void test_level_and_state(void **state)
{
	struct hw_dev *d;

	(void)state;
	host.ndev = 0;
	d = hw_dev_add(&host, NG_HW_DEV_gpu, "0000:10:00.0");
	sample(d, 1, NG_HW_temperature_c, 40);
	sample(d, 0, NG_HW_temperature_c, 44);	/* under the 5-degree step */
	assert_int_equal(ngot, 0);
	sample(d, 0, NG_HW_temperature_c, 45);	/* 5 from the last written */
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].before, 40);
	assert_int_equal(got[0].after, 45);
	sample(d, 0, NG_HW_temperature_c, 41);
	assert_int_equal(ngot, 0);
	sample(d, 0, NG_HW_temperature_c, 40);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].before, 45);

	sample(d, 1, NG_HW_pcie_width, 16);
	sample(d, 0, NG_HW_pcie_width, 8);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].c, NG_HW_pcie_width);
	assert_int_equal(got[0].after, 8);
	/* a counter of another kind of device is never compared */
	hw_set(d, NG_HW_link_downed, 9);
	d->had[NG_HW_link_downed] = 1;
	ngot = 0;
	hw_diff(&host, 1, 0, emit);
	assert_int_equal(ngot, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_saturation),
		cmocka_unit_test(test_level_and_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
