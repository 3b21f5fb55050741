/* sim/reduce.c: every reduction op on every element type, pairwise in
 * rank order as a launch does it, and the rounding of half and bfloat16. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sim.h"

#define NRANKS 3
#define N 5

/* Rank r's element i: small integers, exact in every type. */
static int value(int r, int i)
{
	return 1 + (r * 2 + i) % 4;
}

static void store(void *buf, ncclDataType_t t, int i, double v)
{
	switch (t) {
	case ncclInt8: ((int8_t *)buf)[i] = (int8_t)v; break;
	case ncclUint8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
	case ncclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case ncclUint32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
	case ncclInt64: ((int64_t *)buf)[i] = (int64_t)v; break;
	case ncclUint64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
	case ncclFloat16: ((uint16_t *)buf)[i] = sim_float_to_half((float)v); break;
	case ncclFloat32: ((float *)buf)[i] = (float)v; break;
	case ncclFloat64: ((double *)buf)[i] = v; break;
	case ncclBfloat16: ((uint16_t *)buf)[i] = sim_float_to_bf16((float)v); break;
	default: fail();
	}
}

static double load(const void *buf, ncclDataType_t t, int i)
{
	switch (t) {
	case ncclInt8: return ((const int8_t *)buf)[i];
	case ncclUint8: return ((const uint8_t *)buf)[i];
	case ncclInt32: return ((const int32_t *)buf)[i];
	case ncclUint32: return ((const uint32_t *)buf)[i];
	case ncclInt64: return (double)((const int64_t *)buf)[i];
	case ncclUint64: return (double)((const uint64_t *)buf)[i];
	case ncclFloat16: return sim_half_to_float(((const uint16_t *)buf)[i]);
	case ncclFloat32: return ((const float *)buf)[i];
	case ncclFloat64: return ((const double *)buf)[i];
	case ncclBfloat16: return sim_bf16_to_float(((const uint16_t *)buf)[i]);
	default: fail();
	}
	return 0;
}

static int is_int(ncclDataType_t t)
{
	return t <= ncclUint64;
}

static void test_all_ops_all_types(void **state)
{
	static const ncclDataType_t types[] = {
		ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64,
		ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16,
	};
	static const ncclRedOp_t ops[] = { ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg };

	(void)state;
	for (size_t ti = 0; ti < sizeof(types) / sizeof(*types); ti++) {
		ncclDataType_t t = types[ti];

		assert_true(sim_type_reducible(t));
		for (size_t oi = 0; oi < sizeof(ops) / sizeof(*ops); oi++) {
			ncclRedOp_t op = ops[oi];
			unsigned char acc[N * 8], in[N * 8];

			for (int i = 0; i < N; i++)
				store(acc, t, i, value(0, i));
			for (int r = 1; r < NRANKS; r++) {
				for (int i = 0; i < N; i++)
					store(in, t, i, value(r, i));
				sim_reduce(acc, in, N, t, op);
			}
			if (op == ncclAvg)
				sim_divide(acc, N, t, NRANKS);
			for (int i = 0; i < N; i++) {
				double want = value(0, i);

				for (int r = 1; r < NRANKS; r++) {
					double v = value(r, i);

					switch (op) {
					case ncclProd: want *= v; break;
					case ncclMax: want = want > v ? want : v; break;
					case ncclMin: want = want < v ? want : v; break;
					default: want += v; break;
					}
				}
				if (op == ncclAvg)
					want = is_int(t) ? (double)((int64_t)want / NRANKS) : want / NRANKS;
				if (t == ncclFloat16 || t == ncclBfloat16)
					assert_true(load(acc, t, i) - want < want * 0.01 &&
						    want - load(acc, t, i) < want * 0.01);
				else if (t == ncclFloat32)
					assert_true((float)want == (float)load(acc, t, i));
				else
					assert_true(want == load(acc, t, i));
			}
		}
	}
}

static void test_types(void **state)
{
	(void)state;
	assert_int_equal(sim_type_size(ncclInt8), 1);
	assert_int_equal(sim_type_size(ncclBfloat16), 2);
	assert_int_equal(sim_type_size(ncclFloat64), 8);
	assert_int_equal(sim_type_size(ncclFloat8e4m3), 1);
	assert_int_equal(sim_type_size((ncclDataType_t)99), 0);
	assert_false(sim_type_reducible(ncclFloat8e4m3));
	assert_false(sim_type_reducible(ncclFloat8e5m2));
}

static void test_integer_wrap(void **state)
{
	int8_t a8 = 127, b8 = 1;
	uint8_t u8 = 255, v8 = 1;
	int32_t a32 = INT32_MAX, b32 = 2;
	int64_t a64 = INT64_MIN, b64 = -1;

	(void)state;
	sim_reduce(&a8, &b8, 1, ncclInt8, ncclSum);
	assert_int_equal(a8, -128);
	sim_reduce(&u8, &v8, 1, ncclUint8, ncclSum);
	assert_int_equal(u8, 0);
	sim_reduce(&a32, &b32, 1, ncclInt32, ncclProd);
	assert_int_equal(a32, -2);
	sim_reduce(&a64, &b64, 1, ncclInt64, ncclSum);
	assert_true(a64 == INT64_MAX);
}

static void test_half_rounding(void **state)
{
	(void)state;
	assert_int_equal(sim_float_to_half(1.0f), 0x3c00);
	assert_int_equal(sim_float_to_half(-2.0f), 0xc000);
	assert_int_equal(sim_float_to_half(65504.0f), 0x7bff);
	assert_int_equal(sim_float_to_half(65519.0f), 0x7bff);
	assert_int_equal(sim_float_to_half(65520.0f), 0x7c00);	/* ties to even: inf */
	assert_int_equal(sim_float_to_half(1.0f + 0x1p-11f), 0x3c00);	/* tie: even */
	assert_int_equal(sim_float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
	assert_int_equal(sim_float_to_half(0x1p-14f), 0x0400);
	assert_int_equal(sim_float_to_half(0x1p-24f), 0x0001);
	assert_int_equal(sim_float_to_half(0x1p-25f), 0x0000);	/* tie: even */
	assert_int_equal(sim_float_to_half(3 * 0x1p-25f), 0x0002);
	assert_int_equal(sim_float_to_half(__builtin_inff()), 0x7c00);
	assert_int_equal(sim_float_to_half(__builtin_nanf("")) & 0x7e00, 0x7e00);
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
			continue;	/* nan */
		assert_int_equal(sim_float_to_half(sim_half_to_float((uint16_t)h)), h);
	}
}

static void test_bf16_rounding(void **state)
{
	(void)state;
	assert_int_equal(sim_float_to_bf16(1.0f), 0x3f80);
	assert_int_equal(sim_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);	/* tie: even */
	assert_int_equal(sim_float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
	assert_int_equal(sim_float_to_bf16(-0.0f), 0x8000);
	assert_true((sim_float_to_bf16(__builtin_nanf("")) & 0x7fc0) == 0x7fc0);
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7f80) == 0x7f80 && (h & 0x7f))
			continue;	/* nan */
		assert_int_equal(sim_float_to_bf16(sim_bf16_to_float((uint16_t)h)), h);
	}
}

/* Every step rounds to the type: 2048 + 1 + 1 in half stays 2048. */
static void test_half_rounds_each_step(void **state)
{
	uint16_t acc = sim_float_to_half(2048), one = sim_float_to_half(1);

	(void)state;
	sim_reduce(&acc, &one, 1, ncclFloat16, ncclSum);
	sim_reduce(&acc, &one, 1, ncclFloat16, ncclSum);
	assert_true(sim_half_to_float(acc) == 2048.0f);
	acc = sim_float_to_bf16(256);
	one = sim_float_to_bf16(1);
	sim_reduce(&acc, &one, 1, ncclBfloat16, ncclSum);
	assert_true(sim_bf16_to_float(acc) == 256.0f);
}

static void test_premul_scale(void **state)
{
	float f[2] = { 1.5f, -2.0f }, kf = 2.0f;
	double d[1] = { 0.25 }, kd = 4.0;
	int32_t i[2] = { 3, -4 }, ki = 3;
	uint16_t h[1] = { sim_float_to_half(1.5f) }, kh = sim_float_to_half(2.0f);

	(void)state;
	sim_scale(f, f, 2, ncclFloat32, &kf);
	assert_true(f[0] == 3.0f && f[1] == -4.0f);
	sim_scale(d, d, 1, ncclFloat64, &kd);
	assert_true(d[0] == 1.0);
	sim_scale(i, i, 2, ncclInt32, &ki);
	assert_true(i[0] == 9 && i[1] == -12);
	sim_scale(h, h, 1, ncclFloat16, &kh);
	assert_true(sim_half_to_float(h[0]) == 3.0f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_ops_all_types),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_integer_wrap),
		cmocka_unit_test(test_half_rounding),
		cmocka_unit_test(test_bf16_rounding),
		cmocka_unit_test(test_half_rounds_each_step),
		cmocka_unit_test(test_premul_scale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
