/* Element types and reductions.  Ranks reduce pairwise in rank order,
 * rounding to the element type after every step as a GPU kernel does, so
 * every rank computes the same bits.  Integer arithmetic wraps (done in
 * the unsigned type: signed overflow is undefined in C). */
#include <math.h>
#include <string.h>

#include "sim.h"

size_t sim_type_size(ncclDataType_t t)
{
	switch (t) {
	case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2:
		return 1;
	case ncclFloat16: case ncclBfloat16:
		return 2;
	case ncclInt32: case ncclUint32: case ncclFloat32:
		return 4;
	case ncclInt64: case ncclUint64: case ncclFloat64:
		return 8;
	default:
		return 0;
	}
}

int sim_type_reducible(ncclDataType_t t)
{
	return sim_type_size(t) && t != ncclFloat8e4m3 && t != ncclFloat8e5m2;
}

/* ---- half and bfloat16 ------------------------------------------------- */

static uint32_t f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

float sim_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t man = h & 0x3ff;

	if (exp == 0x1f)	/* inf, nan */
		return u2f(sign | 0x7f800000 | (man << 13));
	if (exp == 0) {		/* zero, subnormal: man * 2^-24 */
		float v = (float)man * 0x1p-24f;

		return sign ? -v : v;
	}
	return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t sim_float_to_half(float f)
{
	uint32_t u = f2u(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t a = u & 0x7fffffff;

	if (a >= 0x7f800000)	/* inf stays inf, nan stays a quiet nan */
		return sign | (a > 0x7f800000 ? 0x7e00 : 0x7c00);
	if (a >= 0x477ff000)	/* rounds to >= 65520: overflow */
		return sign | 0x7c00;
	if (a < 0x38800000) {	/* below 2^-14: subnormal half */
		/* Let the FPU round to a multiple of 2^-24 (nearest even). */
		float v = u2f(a) * 0x1p24f;
		uint32_t m = (uint32_t)nearbyintf(v);

		return sign | (uint16_t)m;	/* m == 0x400 is the smallest normal */
	}
	/* Normal: drop 13 mantissa bits, rounding to nearest even. */
	a += 0xfff + ((a >> 13) & 1);
	return sign | (uint16_t)((a - 0x38000000) >> 13);
}

float sim_bf16_to_float(uint16_t h)
{
	return u2f((uint32_t)h << 16);
}

uint16_t sim_float_to_bf16(float f)
{
	uint32_t u = f2u(f);

	if ((u & 0x7fffffff) > 0x7f800000)	/* nan: keep it quiet */
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

/* ---- reductions ---------------------------------------------------------- */

#define SUM(a, b) ((a) + (b))
#define PROD(a, b) ((a) * (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* Integers: sum and product in the unsigned type U so they wrap. */
#define RED_INT(T, U)                                                        \
static void red_##T(T *d, const T *s, size_t n, ncclRedOp_t op)             \
{                                                                            \
	switch (op) {                                                        \
	case ncclProd:                                                       \
		for (size_t i = 0; i < n; i++)                               \
			d[i] = (T)((U)d[i] * (U)s[i]);                       \
		break;                                                       \
	case ncclMax:                                                        \
		for (size_t i = 0; i < n; i++)                               \
			d[i] = MAX(d[i], s[i]);                              \
		break;                                                       \
	case ncclMin:                                                        \
		for (size_t i = 0; i < n; i++)                               \
			d[i] = MIN(d[i], s[i]);                              \
		break;                                                       \
	default:                                                             \
		for (size_t i = 0; i < n; i++)                               \
			d[i] = (T)((U)d[i] + (U)s[i]);                       \
		break;                                                       \
	}                                                                    \
}

RED_INT(int8_t, uint8_t)
RED_INT(uint8_t, uint8_t)
RED_INT(int32_t, uint32_t)
RED_INT(uint32_t, uint32_t)
RED_INT(int64_t, uint64_t)
RED_INT(uint64_t, uint64_t)

#define RED_FLOAT(T)                                                         \
static void red_##T(T *d, const T *s, size_t n, ncclRedOp_t op)             \
{                                                                            \
	switch (op) {                                                        \
	case ncclProd:                                                       \
		for (size_t i = 0; i < n; i++)                               \
			d[i] = PROD(d[i], s[i]);                             \
		break;                                                       \
	case ncclMax:                                                        \
		for (size_t i = 0; i < n; i++)                               \
			d[i] = MAX(d[i], s[i]);                              \
		break;                                                       \
	case ncclMin:                                                        \
		for (size_t i = 0; i < n; i++)                               \
			d[i] = MIN(d[i], s[i]);                              \
		break;                                                       \
	default:                                                             \
		for (size_t i = 0; i < n; i++)                               \
			d[i] = SUM(d[i], s[i]);                              \
		break;                                                       \
	}                                                                    \
}

RED_FLOAT(float)
RED_FLOAT(double)

/* 16-bit floats: compute in float, round back after every step. */
static float apply(float a, float b, ncclRedOp_t op)
{
	switch (op) {
	case ncclProd: return a * b;
	case ncclMax: return MAX(a, b);
	case ncclMin: return MIN(a, b);
	default: return a + b;
	}
}

static void red_half(uint16_t *d, const uint16_t *s, size_t n, ncclRedOp_t op)
{
	for (size_t i = 0; i < n; i++)
		d[i] = sim_float_to_half(apply(sim_half_to_float(d[i]), sim_half_to_float(s[i]), op));
}

static void red_bf16(uint16_t *d, const uint16_t *s, size_t n, ncclRedOp_t op)
{
	for (size_t i = 0; i < n; i++)
		d[i] = sim_float_to_bf16(apply(sim_bf16_to_float(d[i]), sim_bf16_to_float(s[i]), op));
}

void sim_reduce(void *dst, const void *src, size_t n, ncclDataType_t t, ncclRedOp_t op)
{
	switch (t) {
	case ncclInt8: red_int8_t(dst, src, n, op); break;
	case ncclUint8: red_uint8_t(dst, src, n, op); break;
	case ncclInt32: red_int32_t(dst, src, n, op); break;
	case ncclUint32: red_uint32_t(dst, src, n, op); break;
	case ncclInt64: red_int64_t(dst, src, n, op); break;
	case ncclUint64: red_uint64_t(dst, src, n, op); break;
	case ncclFloat16: red_half(dst, src, n, op); break;
	case ncclFloat32: red_float(dst, src, n, op); break;
	case ncclFloat64: red_double(dst, src, n, op); break;
	case ncclBfloat16: red_bf16(dst, src, n, op); break;
	default: break;	/* fp8 is refused before it gets here */
	}
}

#define SCALE_INT(T, U)                                                      \
	do {                                                                 \
		T *d = dst, k;                                               \
		const T *s = src;                                            \
		memcpy(&k, scalar, sizeof(k));                               \
		for (size_t i = 0; i < n; i++)                               \
			d[i] = (T)((U)s[i] * (U)k);                          \
	} while (0)

#define SCALE_FLOAT(T)                                                       \
	do {                                                                 \
		T *d = dst, k;                                               \
		const T *s = src;                                            \
		memcpy(&k, scalar, sizeof(k));                               \
		for (size_t i = 0; i < n; i++)                               \
			d[i] = s[i] * k;                                     \
	} while (0)

void sim_scale(void *dst, const void *src, size_t n, ncclDataType_t t, const void *scalar)
{
	switch (t) {
	case ncclInt8: SCALE_INT(int8_t, uint8_t); break;
	case ncclUint8: SCALE_INT(uint8_t, uint8_t); break;
	case ncclInt32: SCALE_INT(int32_t, uint32_t); break;
	case ncclUint32: SCALE_INT(uint32_t, uint32_t); break;
	case ncclInt64: SCALE_INT(int64_t, uint64_t); break;
	case ncclUint64: SCALE_INT(uint64_t, uint64_t); break;
	case ncclFloat32: SCALE_FLOAT(float); break;
	case ncclFloat64: SCALE_FLOAT(double); break;
	case ncclFloat16:
	case ncclBfloat16: {
		uint16_t *d = dst, k;
		const uint16_t *s = src;
		int h = t == ncclFloat16;
		float kf;

		memcpy(&k, scalar, sizeof(k));
		kf = h ? sim_half_to_float(k) : sim_bf16_to_float(k);
		for (size_t i = 0; i < n; i++) {
			float v = (h ? sim_half_to_float(s[i]) : sim_bf16_to_float(s[i])) * kf;

			d[i] = h ? sim_float_to_half(v) : sim_float_to_bf16(v);
		}
		break;
	}
	default:
		break;
	}
}

#define DIV_INT(T)                                                           \
	do {                                                                 \
		T *p = dst;                                                  \
		for (size_t i = 0; i < n; i++)                               \
			p[i] = (T)(p[i] / (T)d);                             \
	} while (0)

void sim_divide(void *dst, size_t n, ncclDataType_t t, int d)
{
	if (d <= 1)
		return;
	switch (t) {
	case ncclInt8: DIV_INT(int8_t); break;
	case ncclUint8: DIV_INT(uint8_t); break;
	case ncclInt32: DIV_INT(int32_t); break;
	case ncclUint32: DIV_INT(uint32_t); break;
	case ncclInt64: DIV_INT(int64_t); break;
	case ncclUint64: DIV_INT(uint64_t); break;
	case ncclFloat32: {
		float *p = dst;

		for (size_t i = 0; i < n; i++)
			p[i] /= (float)d;
		break;
	}
	case ncclFloat64: {
		double *p = dst;

		for (size_t i = 0; i < n; i++)
			p[i] /= (double)d;
		break;
	}
	case ncclFloat16:
	case ncclBfloat16: {
		uint16_t *p = dst;
		int h = t == ncclFloat16;

		for (size_t i = 0; i < n; i++) {
			float v = (h ? sim_half_to_float(p[i]) : sim_bf16_to_float(p[i])) / (float)d;

			p[i] = h ? sim_float_to_half(v) : sim_float_to_bf16(v);
		}
		break;
	}
	default:
		break;
	}
}
