/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reduction kernels: the portable C versions and the runtime dispatch
 * between them and the AVX2 / AVX-512 versions (reduce_avx2.c,
 * reduce_avx512.c).
 */
#include "algo/reduce.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "algo/reduce_internal.h"
#include "util/compiler.h"
#include "util/log.h"

/*
 * Portable kernels. Elements are processed in blocks of GEN_BLOCK: one loop
 * combines a block into a local array, a second one stores it. Neither loop
 * can alias its output, and the block length is a compile-time constant, so
 * the compiler vectorises them at -O2 without runtime alias checks, and
 * exact aliasing of dst with a source stays correct.
 */
#define GEN_BLOCK 64

#define GENERIC_KERNELS(NAME, T, C, LDC, STC, OP)                              \
	static inline __attribute__((always_inline)) void NAME##_blk(          \
		T *d, const T *x, const T *y, size_t m)                        \
	{                                                                      \
		C r[GEN_BLOCK];                                                \
		size_t j;                                                      \
                                                                               \
		for (j = 0; j < m; j++)                                        \
			r[j] = OP(LDC(x[j]), LDC(y[j]));                       \
		for (j = 0; j < m; j++)                                        \
			d[j] = STC(r[j]);                                      \
	}                                                                      \
                                                                               \
	static void NAME(void *dst, const void *a, const void *b,              \
			 size_t count)                                         \
	{                                                                      \
		T *d = dst;                                                    \
		const T *x = a, *y = b;                                        \
		size_t i = 0;                                                  \
                                                                               \
		for (; i + GEN_BLOCK <= count; i += GEN_BLOCK)                 \
			NAME##_blk(d + i, x + i, y + i, GEN_BLOCK);            \
		if (i < count)                                                 \
			NAME##_blk(d + i, x + i, y + i, count - i);            \
	}                                                                      \
                                                                               \
	static inline __attribute__((always_inline)) void NAME##_nblk(         \
		T *d, const void *const *srcs, unsigned n, size_t i, size_t m) \
	{                                                                      \
		C r[GEN_BLOCK];                                                \
		const T *s = (const T *)srcs[0] + i;                           \
		size_t j;                                                      \
		unsigned k;                                                    \
                                                                               \
		for (j = 0; j < m; j++)                                        \
			r[j] = LDC(s[j]);                                      \
		for (k = 1; k < n; k++) {                                      \
			s = (const T *)srcs[k] + i;                            \
			for (j = 0; j < m; j++)                                \
				r[j] = OP(r[j], LDC(s[j]));                    \
		}                                                              \
		for (j = 0; j < m; j++)                                        \
			d[i + j] = STC(r[j]);                                  \
	}                                                                      \
                                                                               \
	static void NAME##_n(void *dst, const void *const *srcs, unsigned n,   \
			     size_t count)                                     \
	{                                                                      \
		size_t i = 0;                                                  \
                                                                               \
		if (n == 1) {                                                  \
			if (dst != srcs[0])                                    \
				memcpy(dst, srcs[0], count * sizeof(T));       \
			return;                                                \
		}                                                              \
		for (; i + GEN_BLOCK <= count; i += GEN_BLOCK)                 \
			NAME##_nblk(dst, srcs, n, i, GEN_BLOCK);               \
		if (i < count)                                                 \
			NAME##_nblk(dst, srcs, n, i, count - i);               \
	}

#define IDENT(v) (v)

/* Integers: arithmetic in unsigned types (wraps, no undefined behaviour). */
#define INT_OPS(TAG, T, U)                                                     \
	static inline T TAG##_sum(T a, T b)                                    \
	{                                                                      \
		return (T)((U)a + (U)b);                                       \
	}                                                                      \
	static inline T TAG##_max(T a, T b)                                    \
	{                                                                      \
		return a > b ? a : b;                                          \
	}                                                                      \
	static inline T TAG##_min(T a, T b)                                    \
	{                                                                      \
		return a < b ? a : b;                                          \
	}

/* No int16 product: HCCL rejects it (spec 2.3). */
#define INT_PROD(TAG, T, U)                                                    \
	static inline T TAG##_prod(T a, T b)                                   \
	{                                                                      \
		return (T)((U)a * (U)b);                                       \
	}

INT_OPS(i8, int8_t, unsigned)
INT_OPS(i16, int16_t, unsigned)
INT_OPS(i32, int32_t, uint32_t)
INT_OPS(i64, int64_t, uint64_t)
INT_OPS(u64, uint64_t, uint64_t)
INT_PROD(i8, int8_t, unsigned)
INT_PROD(i32, int32_t, uint32_t)
INT_PROD(i64, int64_t, uint64_t)
INT_PROD(u64, uint64_t, uint64_t)

/*
 * Floats. max/min are IEEE 754-2019 maximum/minimum: the first NaN operand
 * wins, and equal operands (only +0/-0 differ in bits) combine bitwise so
 * that max(-0, +0) = +0 and min(-0, +0) = -0 in either order.
 */
static inline float f32_sum(float a, float b)
{
	return a + b;
}

static inline float f32_prod(float a, float b)
{
	return a * b;
}

static inline float f32_max(float a, float b)
{
	if (a != a)
		return a;
	if (b != b)
		return b;
	if (a == b)
		return ohc_bits_to_fp32(ohc_fp32_to_bits(a) &
					ohc_fp32_to_bits(b));
	return a > b ? a : b;
}

static inline float f32_min(float a, float b)
{
	if (a != a)
		return a;
	if (b != b)
		return b;
	if (a == b)
		return ohc_bits_to_fp32(ohc_fp32_to_bits(a) |
					ohc_fp32_to_bits(b));
	return a < b ? a : b;
}

static inline uint64_t f64_bits(double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

static inline double f64_from_bits(uint64_t u)
{
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

static inline double f64_sum(double a, double b)
{
	return a + b;
}

static inline double f64_prod(double a, double b)
{
	return a * b;
}

static inline double f64_max(double a, double b)
{
	if (a != a)
		return a;
	if (b != b)
		return b;
	if (a == b)
		return f64_from_bits(f64_bits(a) & f64_bits(b));
	return a > b ? a : b;
}

static inline double f64_min(double a, double b)
{
	if (a != a)
		return a;
	if (b != b)
		return b;
	if (a == b)
		return f64_from_bits(f64_bits(a) | f64_bits(b));
	return a < b ? a : b;
}

#define INT_KERNELS(TAG, T)                                                    \
	GENERIC_KERNELS(gen_##TAG##_sum, T, T, IDENT, IDENT, TAG##_sum)        \
	GENERIC_KERNELS(gen_##TAG##_prod, T, T, IDENT, IDENT, TAG##_prod)      \
	GENERIC_KERNELS(gen_##TAG##_max, T, T, IDENT, IDENT, TAG##_max)        \
	GENERIC_KERNELS(gen_##TAG##_min, T, T, IDENT, IDENT, TAG##_min)

INT_KERNELS(i8, int8_t)
INT_KERNELS(i32, int32_t)
INT_KERNELS(i64, int64_t)
INT_KERNELS(u64, uint64_t)
GENERIC_KERNELS(gen_i16_sum, int16_t, int16_t, IDENT, IDENT, i16_sum)
GENERIC_KERNELS(gen_i16_max, int16_t, int16_t, IDENT, IDENT, i16_max)
GENERIC_KERNELS(gen_i16_min, int16_t, int16_t, IDENT, IDENT, i16_min)

GENERIC_KERNELS(gen_f32_sum, float, float, IDENT, IDENT, f32_sum)
GENERIC_KERNELS(gen_f32_prod, float, float, IDENT, IDENT, f32_prod)
GENERIC_KERNELS(gen_f32_max, float, float, IDENT, IDENT, f32_max)
GENERIC_KERNELS(gen_f32_min, float, float, IDENT, IDENT, f32_min)
GENERIC_KERNELS(gen_f64_sum, double, double, IDENT, IDENT, f64_sum)
GENERIC_KERNELS(gen_f64_prod, double, double, IDENT, IDENT, f64_prod)
GENERIC_KERNELS(gen_f64_max, double, double, IDENT, IDENT, f64_max)
GENERIC_KERNELS(gen_f64_min, double, double, IDENT, IDENT, f64_min)

#define HALF_KERNELS(TAG, LDC, STC)                                            \
	GENERIC_KERNELS(gen_##TAG##_sum, uint16_t, float, LDC, STC, f32_sum)   \
	GENERIC_KERNELS(gen_##TAG##_max, uint16_t, float, LDC, STC, f32_max)   \
	GENERIC_KERNELS(gen_##TAG##_min, uint16_t, float, LDC, STC, f32_min)

HALF_KERNELS(f16, ohc_fp16_to_fp32, ohc_fp32_to_fp16)
GENERIC_KERNELS(gen_f16_prod, uint16_t, float, ohc_fp16_to_fp32,
		ohc_fp32_to_fp16, f32_prod)
HALF_KERNELS(bf16, ohc_bf16_to_fp32, ohc_fp32_to_bf16)

#define ALL_OPS(DT, TAG)                                                       \
	[DT][OHC_SUM] = gen_##TAG##_sum, [DT][OHC_PROD] = gen_##TAG##_prod,    \
	[DT][OHC_MAX] = gen_##TAG##_max, [DT][OHC_MIN] = gen_##TAG##_min
#define NO_PROD(DT, TAG)                                                       \
	[DT][OHC_SUM] = gen_##TAG##_sum, [DT][OHC_MAX] = gen_##TAG##_max,      \
	[DT][OHC_MIN] = gen_##TAG##_min
#define ALL_OPS_N(DT, TAG)                                                     \
	[DT][OHC_SUM] = gen_##TAG##_sum_n,                                     \
	[DT][OHC_PROD] = gen_##TAG##_prod_n,                                   \
	[DT][OHC_MAX] = gen_##TAG##_max_n, [DT][OHC_MIN] = gen_##TAG##_min_n
#define NO_PROD_N(DT, TAG)                                                     \
	[DT][OHC_SUM] = gen_##TAG##_sum_n, [DT][OHC_MAX] = gen_##TAG##_max_n,  \
	[DT][OHC_MIN] = gen_##TAG##_min_n

const struct ohc_reduce_table ohc_reduce_generic_table = {
	.fn = {ALL_OPS(OHC_INT8, i8), NO_PROD(OHC_INT16, i16),
	       ALL_OPS(OHC_INT32, i32), ALL_OPS(OHC_INT64, i64),
	       ALL_OPS(OHC_UINT64, u64), ALL_OPS(OHC_FP16, f16),
	       ALL_OPS(OHC_FP32, f32), ALL_OPS(OHC_FP64, f64),
	       NO_PROD(OHC_BF16, bf16)},
	.n_fn = {ALL_OPS_N(OHC_INT8, i8), NO_PROD_N(OHC_INT16, i16),
		 ALL_OPS_N(OHC_INT32, i32), ALL_OPS_N(OHC_INT64, i64),
		 ALL_OPS_N(OHC_UINT64, u64), ALL_OPS_N(OHC_FP16, f16),
		 ALL_OPS_N(OHC_FP32, f32), ALL_OPS_N(OHC_FP64, f64),
		 NO_PROD_N(OHC_BF16, bf16)},
};

/* Dispatch. */
enum isa_level {
	ISA_GENERIC,
	ISA_AVX2,
	ISA_AVX512,
	ISA_COUNT,
};

static const char *const isa_names[ISA_COUNT] = {
	[ISA_GENERIC] = "generic",
	[ISA_AVX2] = "avx2",
	[ISA_AVX512] = "avx512",
};

static const struct ohc_reduce_table *const isa_tables[ISA_COUNT] = {
	[ISA_GENERIC] = &ohc_reduce_generic_table,
	[ISA_AVX2] = &ohc_reduce_avx2_table,
	[ISA_AVX512] = &ohc_reduce_avx512_table,
};

/* The level the getters use; -1 until first use (then the best one). */
static atomic_int isa_cur = -1;

#if defined(__x86_64__) || defined(__i386__)
/* F16C (CPUID.1:ECX bit 29): not every compiler's cpu_supports knows it. */
static bool cpu_has_f16c(void)
{
	unsigned eax, ebx, ecx, edx;

	return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29));
}
#endif

/* The best ISA this CPU and OS run ("avx2" implies OS AVX state support). */
static enum isa_level isa_best(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512bw"))
		return ISA_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
	    cpu_has_f16c())
		return ISA_AVX2;
#endif
	return ISA_GENERIC;
}

static enum isa_level isa_level_get(void)
{
	int cur = atomic_load_explicit(&isa_cur, memory_order_relaxed);
	int expected = -1;

	if (OHC_LIKELY(cur >= 0))
		return (enum isa_level)cur;
	cur = (int)isa_best();
	/* Detection is idempotent; only the winner of a race logs. */
	if (atomic_compare_exchange_strong(&isa_cur, &expected, cur))
		OHC_INFO(OHC_SS_COLL, "reduction kernels: %s", isa_names[cur]);
	else
		cur = expected;
	return (enum isa_level)cur;
}

static int isa_from_name(const char *isa)
{
	int i;

	for (i = 0; i < ISA_COUNT; i++)
		if (strcmp(isa, isa_names[i]) == 0)
			return i;
	return -1;
}

ohc_reduce_fn ohc_reduce_get(int dtype, int op)
{
	int lvl;

	if (!ohc_reduce_supported(dtype, op))
		return NULL;
	for (lvl = (int)isa_level_get(); lvl >= 0; lvl--)
		if (isa_tables[lvl]->fn[dtype][op])
			return isa_tables[lvl]->fn[dtype][op];
	return NULL;
}

ohc_reduce_n_fn ohc_reduce_n_get(int dtype, int op)
{
	int lvl;

	if (!ohc_reduce_supported(dtype, op))
		return NULL;
	for (lvl = (int)isa_level_get(); lvl >= 0; lvl--)
		if (isa_tables[lvl]->n_fn[dtype][op])
			return isa_tables[lvl]->n_fn[dtype][op];
	return NULL;
}

const char *ohc_reduce_isa(void)
{
	return isa_names[isa_level_get()];
}

bool ohc_reduce_isa_available(const char *isa)
{
	int lvl = isa ? isa_from_name(isa) : -1;

	return lvl >= 0 && lvl <= (int)isa_best();
}

ohc_status_t ohc_reduce_force_isa(const char *isa)
{
	int lvl;

	if (!isa) {
		atomic_store(&isa_cur, (int)isa_best());
		return OHC_OK;
	}
	lvl = isa_from_name(isa);
	if (lvl < 0) {
		OHC_ERROR(OHC_SS_COLL, "unknown reduction isa '%s'", isa);
		return OHC_ERR_INVALID;
	}
	if (lvl > (int)isa_best()) {
		OHC_ERROR(OHC_SS_COLL, "reduction isa '%s' not supported here",
			  isa);
		return OHC_ERR_UNSUPPORTED;
	}
	atomic_store(&isa_cur, lvl);
	return OHC_OK;
}
