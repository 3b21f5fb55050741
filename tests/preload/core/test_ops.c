/* The entry points' table (preload/core/ops.c, from common/nccl_api.def)
 * and the element sizes of core.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "core.h"

static void test_table(void **state)
{
	(void)state;
	assert_true(NG_FN_COUNT > 30);
	for (int i = 0; i < NG_FN_COUNT; i++) {
		assert_non_null(ng_fn_name[i]);
		assert_non_null(ng_fn_op[i]);
		assert_memory_equal(ng_fn_name[i], "nccl", 4);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(ng_fn_name[i], ng_fn_name[j]);
	}
	assert_string_equal(ng_fn_op[NG_FN_ncclAllReduce], "allreduce");
	assert_string_equal(ng_fn_op[NG_FN_ncclBcast], "broadcast");
	assert_string_equal(ng_fn_op[NG_FN_ncclSend], "send");
	assert_string_equal(ng_fn_op[NG_FN_ncclGetVersion], "-");
	assert_true(ng_op_known("reducescatter"));
	assert_true(ng_op_known("init"));
	assert_false(ng_op_known("allreduc"));
	assert_false(ng_op_known("-"));
	assert_int_equal(ng_dtype_size(ncclBfloat16), 2);
	assert_int_equal(ng_dtype_size(ncclFloat64), 8);
	assert_int_equal(ng_dtype_size(ncclUint8), 1);
	assert_int_equal(ng_dtype_size((ncclDataType_t)99), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
	};

	return cmocka_run_group_tests_name("ops", tests, NULL, NULL);
}
