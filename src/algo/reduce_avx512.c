/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AVX-512 (F, BW) reduction kernels, compiled for that target per function
 * so the file builds without global -m flags; reduce.c only selects them
 * when the CPU has the features. Results are bitwise those of the portable
 * kernels (see reduce.h for the semantics). bf16 conversion uses shifts, so
 * AVX512_BF16 is not required.
 */
#include "algo/reduce_internal.h"

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define A5 __attribute__((target("avx512f,avx512bw")))

static inline A5 __m512i ld_si(const void *p)
{
	return _mm512_loadu_si512(p);
}

static inline A5 void st_si(void *p, __m512i v)
{
	_mm512_storeu_si512(p, v);
}

/*
 * A tail's n < 64 bytes through byte masks: loads that never touch the
 * bytes past the tail (no fault at a page's end), and no libc memcpy
 * calls or narrow stores read back wide. An 8-byte fp32 sum took 12 ns
 * through copies into zeroed buffers, where a whole vector takes 3.
 */
static inline A5 __mmask64 part_mask(size_t n)
{
	return (__mmask64)((1ull << n) - 1);
}

static inline A5 void part_in(void *buf64, const void *src, size_t n)
{
	_mm512_store_si512(buf64, _mm512_maskz_loadu_epi8(part_mask(n), src));
}

static inline A5 void part_out(void *dst, const void *buf64, size_t n)
{
	__mmask64 m = part_mask(n);

	_mm512_mask_storeu_epi8(dst, m, _mm512_maskz_loadu_epi8(m, buf64));
}

/* The kernels of this file: tails through the masks above. */
#define K5(NAME, T, V, W, LD, ST, OP)                                          \
	OHC_REDUCE_SIMD_PART(A5, NAME, T, V, W, LD, ST, OP, part_in, part_out)

static inline A5 __m512 and_ps(__m512 a, __m512 b)
{
	return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a),
						    _mm512_castps_si512(b)));
}

static inline A5 __m512 or_ps(__m512 a, __m512 b)
{
	return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a),
						   _mm512_castps_si512(b)));
}

static inline A5 __m512d and_pd(__m512d a, __m512d b)
{
	return _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(a),
						    _mm512_castpd_si512(b)));
}

static inline A5 __m512d or_pd(__m512d a, __m512d b)
{
	return _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(a),
						   _mm512_castpd_si512(b)));
}

/* IEEE 754-2019 maximum/minimum; see f32_max() in reduce.c. */
static inline A5 __m512 max_ps(__m512 a, __m512 b)
{
	__m512 r = _mm512_max_ps(a, b);

	r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ), r,
				 and_ps(a, b));
	return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), r,
				    a);
}

static inline A5 __m512 min_ps(__m512 a, __m512 b)
{
	__m512 r = _mm512_min_ps(a, b);

	r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ), r,
				 or_ps(a, b));
	return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), r,
				    a);
}

static inline A5 __m512d max_pd(__m512d a, __m512d b)
{
	__m512d r = _mm512_max_pd(a, b);

	r = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ), r,
				 and_pd(a, b));
	return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, a, _CMP_UNORD_Q), r,
				    a);
}

static inline A5 __m512d min_pd(__m512d a, __m512d b)
{
	__m512d r = _mm512_min_pd(a, b);

	r = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ), r,
				 or_pd(a, b));
	return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, a, _CMP_UNORD_Q), r,
				    a);
}

static inline A5 __m512 ld_f16(const uint16_t *p)
{
	return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

static inline A5 void st_f16(uint16_t *p, __m512 v)
{
	_mm256_storeu_si256((__m256i *)p,
			    _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

/* bf16, 32 elements as even/odd fp32 halves: see reduce_avx2.c. */
struct bf16x32 {
	__m512 even, odd;
};

static inline A5 struct bf16x32 ld_bf16(const uint16_t *p)
{
	__m512i x = ld_si(p);
	struct bf16x32 v = {
		_mm512_castsi512_ps(_mm512_slli_epi32(x, 16)),
		_mm512_castsi512_ps(
			_mm512_and_si512(x, _mm512_set1_epi32(-65536))),
	};

	return v;
}

static inline A5 __m512i round_bf16(__m512 v)
{
	__m512i x = _mm512_castps_si512(v);
	__m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16),
				       _mm512_set1_epi32(1));
	__m512i r = _mm512_add_epi32(
		_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb);
	__m512i qnan = _mm512_or_si512(x, _mm512_set1_epi32(0x00400000));

	return _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
				       r, qnan);
}

static inline A5 void st_bf16(uint16_t *p, struct bf16x32 v)
{
	__m512i e = _mm512_srli_epi32(round_bf16(v.even), 16);
	__m512i o =
		_mm512_and_si512(round_bf16(v.odd), _mm512_set1_epi32(-65536));

	st_si(p, _mm512_or_si512(e, o));
}

#define BF16_OP(NAME, PSOP)                                                    \
	static inline A5 struct bf16x32 NAME(struct bf16x32 a,                 \
					     struct bf16x32 b) {               \
		struct bf16x32 r = {PSOP(a.even, b.even), PSOP(a.odd, b.odd)}; \
                                                                               \
		return r;                                                      \
	}
BF16_OP(add_bf16, _mm512_add_ps)
BF16_OP(max_bf16, max_ps)
BF16_OP(min_bf16, min_ps)

static inline A5 __m512i mul_i8(__m512i a, __m512i b)
{
	__m512i even = _mm512_mullo_epi16(a, b);
	__m512i odd = _mm512_mullo_epi16(_mm512_srli_epi16(a, 8),
					 _mm512_srli_epi16(b, 8));

	return _mm512_or_si512(_mm512_and_si512(even, _mm512_set1_epi16(0xff)),
			       _mm512_slli_epi16(odd, 8));
}

/* 64-bit low product without AVX512DQ. */
static inline A5 __m512i mul_i64(__m512i a, __m512i b)
{
	__m512i lo = _mm512_mul_epu32(a, b);
	__m512i c1 = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), b);
	__m512i c2 = _mm512_mul_epu32(a, _mm512_srli_epi64(b, 32));

	return _mm512_add_epi64(
		lo, _mm512_slli_epi64(_mm512_add_epi64(c1, c2), 32));
}

#define INT_K(NAME, T, OP)                                                     \
	K5(NAME, T, __m512i, (64 / sizeof(T)), ld_si, st_si, OP)

INT_K(i8_sum, int8_t, _mm512_add_epi8)
INT_K(i8_prod, int8_t, mul_i8)
INT_K(i8_max, int8_t, _mm512_max_epi8)
INT_K(i8_min, int8_t, _mm512_min_epi8)
INT_K(i16_sum, int16_t, _mm512_add_epi16)
INT_K(i16_max, int16_t, _mm512_max_epi16)
INT_K(i16_min, int16_t, _mm512_min_epi16)
INT_K(i32_sum, int32_t, _mm512_add_epi32)
INT_K(i32_prod, int32_t, _mm512_mullo_epi32)
INT_K(i32_max, int32_t, _mm512_max_epi32)
INT_K(i32_min, int32_t, _mm512_min_epi32)
INT_K(i64_sum, int64_t, _mm512_add_epi64)
INT_K(i64_prod, int64_t, mul_i64)
INT_K(i64_max, int64_t, _mm512_max_epi64)
INT_K(i64_min, int64_t, _mm512_min_epi64)
INT_K(u64_sum, uint64_t, _mm512_add_epi64)
INT_K(u64_prod, uint64_t, mul_i64)
INT_K(u64_max, uint64_t, _mm512_max_epu64)
INT_K(u64_min, uint64_t, _mm512_min_epu64)

K5(f32_sum, float, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_add_ps)
K5(f32_prod, float, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps,
   _mm512_mul_ps)
K5(f32_max, float, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, max_ps)
K5(f32_min, float, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, min_ps)
K5(f64_sum, double, __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd,
   _mm512_add_pd)
K5(f64_prod, double, __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd,
   _mm512_mul_pd)
K5(f64_max, double, __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd, max_pd)
K5(f64_min, double, __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd, min_pd)

K5(f16_sum, uint16_t, __m512, 16, ld_f16, st_f16, _mm512_add_ps)
K5(f16_prod, uint16_t, __m512, 16, ld_f16, st_f16, _mm512_mul_ps)
K5(f16_max, uint16_t, __m512, 16, ld_f16, st_f16, max_ps)
K5(f16_min, uint16_t, __m512, 16, ld_f16, st_f16, min_ps)
K5(bf16_sum, uint16_t, struct bf16x32, 32, ld_bf16, st_bf16, add_bf16)
K5(bf16_max, uint16_t, struct bf16x32, 32, ld_bf16, st_bf16, max_bf16)
K5(bf16_min, uint16_t, struct bf16x32, 32, ld_bf16, st_bf16, min_bf16)

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

const struct ohc_reduce_table ohc_reduce_avx512_table = {
	.fn = TABLE(),
	.n_fn = TABLE(_n),
};

#else /* not x86: no AVX-512 kernels, the getters fall back */
const struct ohc_reduce_table ohc_reduce_avx512_table;
#endif
