/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AVX2 (+F16C, FMA) reduction kernels, compiled for that target per
 * function so the file builds without global -m flags; reduce.c only
 * selects them when the CPU has the features. Results are bitwise those of
 * the portable kernels (see reduce.h for the semantics).
 */
#include "algo/reduce_internal.h"

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define A2 __attribute__((target("avx2,f16c,fma")))

static inline A2 __m256i ld_si(const void *p)
{
	return _mm256_loadu_si256((const __m256i *)p);
}

static inline A2 void st_si(void *p, __m256i v)
{
	_mm256_storeu_si256((__m256i *)p, v);
}

/* IEEE 754-2019 maximum/minimum; see f32_max() in reduce.c. */
static inline A2 __m256 max_ps(__m256 a, __m256 b)
{
	__m256 r = _mm256_max_ps(a, b);

	r = _mm256_blendv_ps(r, _mm256_and_ps(a, b),
			     _mm256_cmp_ps(a, b, _CMP_EQ_OQ));
	return _mm256_blendv_ps(r, a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
}

static inline A2 __m256 min_ps(__m256 a, __m256 b)
{
	__m256 r = _mm256_min_ps(a, b);

	r = _mm256_blendv_ps(r, _mm256_or_ps(a, b),
			     _mm256_cmp_ps(a, b, _CMP_EQ_OQ));
	return _mm256_blendv_ps(r, a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
}

static inline A2 __m256d max_pd(__m256d a, __m256d b)
{
	__m256d r = _mm256_max_pd(a, b);

	r = _mm256_blendv_pd(r, _mm256_and_pd(a, b),
			     _mm256_cmp_pd(a, b, _CMP_EQ_OQ));
	return _mm256_blendv_pd(r, a, _mm256_cmp_pd(a, a, _CMP_UNORD_Q));
}

static inline A2 __m256d min_pd(__m256d a, __m256d b)
{
	__m256d r = _mm256_min_pd(a, b);

	r = _mm256_blendv_pd(r, _mm256_or_pd(a, b),
			     _mm256_cmp_pd(a, b, _CMP_EQ_OQ));
	return _mm256_blendv_pd(r, a, _mm256_cmp_pd(a, a, _CMP_UNORD_Q));
}

/* fp16: F16C widening and round-to-nearest-even narrowing. */
static inline A2 __m256 ld_f16(const uint16_t *p)
{
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static inline A2 void st_f16(uint16_t *p, __m256 v)
{
	_mm_storeu_si128((__m128i *)p,
			 _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

/*
 * bf16, 16 elements as two fp32 vectors: the even elements (low half of
 * each 32-bit lane, shifted up) and the odd ones (high half, low bits
 * cleared). Element-wise ops do not care about the order, so widening and
 * narrowing need no shuffles, only shifts and masks.
 */
struct bf16x16 {
	__m256 even, odd;
};

static inline A2 struct bf16x16 ld_bf16(const uint16_t *p)
{
	__m256i x = ld_si(p);
	struct bf16x16 v = {
		_mm256_castsi256_ps(_mm256_slli_epi32(x, 16)),
		_mm256_castsi256_ps(
			_mm256_and_si256(x, _mm256_set1_epi32(-65536))),
	};

	return v;
}

/* fp32 bits rounded to nearest even at bit 16, NaN quieted: the bf16 is in
 * the high half. */
static inline A2 __m256i round_bf16(__m256 v)
{
	__m256i x = _mm256_castps_si256(v);
	__m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16),
				       _mm256_set1_epi32(1));
	__m256i r = _mm256_add_epi32(
		_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb);
	__m256i qnan = _mm256_or_si256(x, _mm256_set1_epi32(0x00400000));

	return _mm256_blendv_epi8(
		r, qnan,
		_mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

static inline A2 void st_bf16(uint16_t *p, struct bf16x16 v)
{
	__m256i e = _mm256_srli_epi32(round_bf16(v.even), 16);
	__m256i o =
		_mm256_and_si256(round_bf16(v.odd), _mm256_set1_epi32(-65536));

	st_si(p, _mm256_or_si256(e, o));
}

#define BF16_OP(NAME, PSOP)                                                    \
	static inline A2 struct bf16x16 NAME(struct bf16x16 a,                 \
					     struct bf16x16 b) {               \
		struct bf16x16 r = {PSOP(a.even, b.even), PSOP(a.odd, b.odd)}; \
                                                                               \
		return r;                                                      \
	}
BF16_OP(add_bf16, _mm256_add_ps)
BF16_OP(max_bf16, max_ps)
BF16_OP(min_bf16, min_ps)

/* Integer products and 64-bit compares AVX2 lacks as instructions. */
static inline A2 __m256i mul_i8(__m256i a, __m256i b)
{
	__m256i even = _mm256_mullo_epi16(a, b);
	__m256i odd = _mm256_mullo_epi16(_mm256_srli_epi16(a, 8),
					 _mm256_srli_epi16(b, 8));

	return _mm256_or_si256(_mm256_and_si256(even, _mm256_set1_epi16(0xff)),
			       _mm256_slli_epi16(odd, 8));
}

static inline A2 __m256i mul_i64(__m256i a, __m256i b)
{
	__m256i lo = _mm256_mul_epu32(a, b);
	__m256i c1 = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), b);
	__m256i c2 = _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32));

	return _mm256_add_epi64(
		lo, _mm256_slli_epi64(_mm256_add_epi64(c1, c2), 32));
}

static inline A2 __m256i max_i64(__m256i a, __m256i b)
{
	return _mm256_blendv_epi8(b, a, _mm256_cmpgt_epi64(a, b));
}

static inline A2 __m256i min_i64(__m256i a, __m256i b)
{
	return _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b));
}

static inline A2 __m256i gt_u64(__m256i a, __m256i b)
{
	__m256i bias = _mm256_set1_epi64x(INT64_MIN);

	return _mm256_cmpgt_epi64(_mm256_xor_si256(a, bias),
				  _mm256_xor_si256(b, bias));
}

static inline A2 __m256i max_u64(__m256i a, __m256i b)
{
	return _mm256_blendv_epi8(b, a, gt_u64(a, b));
}

static inline A2 __m256i min_u64(__m256i a, __m256i b)
{
	return _mm256_blendv_epi8(a, b, gt_u64(a, b));
}

#define INT_K(NAME, T, OP)                                                     \
	OHC_REDUCE_SIMD(A2, NAME, T, __m256i, (32 / sizeof(T)), ld_si, st_si,  \
			OP)

INT_K(i8_sum, int8_t, _mm256_add_epi8)
INT_K(i8_prod, int8_t, mul_i8)
INT_K(i8_max, int8_t, _mm256_max_epi8)
INT_K(i8_min, int8_t, _mm256_min_epi8)
INT_K(i16_sum, int16_t, _mm256_add_epi16)
INT_K(i16_max, int16_t, _mm256_max_epi16)
INT_K(i16_min, int16_t, _mm256_min_epi16)
INT_K(i32_sum, int32_t, _mm256_add_epi32)
INT_K(i32_prod, int32_t, _mm256_mullo_epi32)
INT_K(i32_max, int32_t, _mm256_max_epi32)
INT_K(i32_min, int32_t, _mm256_min_epi32)
INT_K(i64_sum, int64_t, _mm256_add_epi64)
INT_K(i64_prod, int64_t, mul_i64)
INT_K(i64_max, int64_t, max_i64)
INT_K(i64_min, int64_t, min_i64)
INT_K(u64_sum, uint64_t, _mm256_add_epi64)
INT_K(u64_prod, uint64_t, mul_i64)
INT_K(u64_max, uint64_t, max_u64)
INT_K(u64_min, uint64_t, min_u64)

OHC_REDUCE_SIMD(A2, f32_sum, float, __m256, 8, _mm256_loadu_ps,
		_mm256_storeu_ps, _mm256_add_ps)
OHC_REDUCE_SIMD(A2, f32_prod, float, __m256, 8, _mm256_loadu_ps,
		_mm256_storeu_ps, _mm256_mul_ps)
OHC_REDUCE_SIMD(A2, f32_max, float, __m256, 8, _mm256_loadu_ps,
		_mm256_storeu_ps, max_ps)
OHC_REDUCE_SIMD(A2, f32_min, float, __m256, 8, _mm256_loadu_ps,
		_mm256_storeu_ps, min_ps)
OHC_REDUCE_SIMD(A2, f64_sum, double, __m256d, 4, _mm256_loadu_pd,
		_mm256_storeu_pd, _mm256_add_pd)
OHC_REDUCE_SIMD(A2, f64_prod, double, __m256d, 4, _mm256_loadu_pd,
		_mm256_storeu_pd, _mm256_mul_pd)
OHC_REDUCE_SIMD(A2, f64_max, double, __m256d, 4, _mm256_loadu_pd,
		_mm256_storeu_pd, max_pd)
OHC_REDUCE_SIMD(A2, f64_min, double, __m256d, 4, _mm256_loadu_pd,
		_mm256_storeu_pd, min_pd)

OHC_REDUCE_SIMD(A2, f16_sum, uint16_t, __m256, 8, ld_f16, st_f16, _mm256_add_ps)
OHC_REDUCE_SIMD(A2, f16_prod, uint16_t, __m256, 8, ld_f16, st_f16,
		_mm256_mul_ps)
OHC_REDUCE_SIMD(A2, f16_max, uint16_t, __m256, 8, ld_f16, st_f16, max_ps)
OHC_REDUCE_SIMD(A2, f16_min, uint16_t, __m256, 8, ld_f16, st_f16, min_ps)
OHC_REDUCE_SIMD(A2, bf16_sum, uint16_t, struct bf16x16, 16, ld_bf16, st_bf16,
		add_bf16)
OHC_REDUCE_SIMD(A2, bf16_max, uint16_t, struct bf16x16, 16, ld_bf16, st_bf16,
		max_bf16)
OHC_REDUCE_SIMD(A2, bf16_min, uint16_t, struct bf16x16, 16, ld_bf16, st_bf16,
		min_bf16)

#define ALL_OPS(DT, TAG, SFX)                                                  \
	[DT][OHC_SUM] = TAG##_sum##SFX, [DT][OHC_PROD] = TAG##_prod##SFX,      \
	[DT][OHC_MAX] = TAG##_max##SFX, [DT][OHC_MIN] = TAG##_min##SFX
#define NO_PROD(DT, TAG, SFX)                                                  \
	[DT][OHC_SUM] = TAG##_sum##SFX, [DT][OHC_MAX] = TAG##_max##SFX,        \
	[DT][OHC_MIN] = TAG##_min##SFX
#define TABLE(SFX)                                                             \
	{                                                                      \
		ALL_OPS(OHC_INT8, i8, SFX), NO_PROD(OHC_INT16, i16, SFX),      \
			ALL_OPS(OHC_INT32, i32, SFX),                          \
			ALL_OPS(OHC_INT64, i64, SFX),                          \
			ALL_OPS(OHC_UINT64, u64, SFX),                         \
			ALL_OPS(OHC_FP16, f16, SFX),                           \
			ALL_OPS(OHC_FP32, f32, SFX),                           \
			ALL_OPS(OHC_FP64, f64, SFX),                           \
			NO_PROD(OHC_BF16, bf16, SFX),                          \
	}

const struct ohc_reduce_table ohc_reduce_avx2_table = {
	.fn = TABLE(),
	.n_fn = TABLE(_n),
};

#else /* not x86: no AVX2 kernels, the getters fall back to generic */
const struct ohc_reduce_table ohc_reduce_avx2_table;
#endif
