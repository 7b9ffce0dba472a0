/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_DTYPE_H
#define OHC_ALGO_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Element types and reduce operations. The numeric values are HCCL's
 * (HcclDataType, HcclReduceOp; spec 1.3, 1.4), so mapping either way is a
 * cast. 13 is a gap in HCCL's enum and is not a valid type.
 */
enum ohc_dtype {
	OHC_INT8 = 0,
	OHC_INT16 = 1,
	OHC_INT32 = 2,
	OHC_FP16 = 3,
	OHC_FP32 = 4,
	OHC_INT64 = 5,
	OHC_UINT64 = 6,
	OHC_UINT8 = 7,
	OHC_UINT16 = 8,
	OHC_UINT32 = 9,
	OHC_FP64 = 10,
	OHC_BF16 = 11,
	OHC_INT128 = 12,
	OHC_HIF8 = 14,
	OHC_FP8E4M3 = 15,
	OHC_FP8E5M2 = 16,
	OHC_FP8E8M0 = 17,
};
/* One past the largest dtype value; tables indexed by dtype use this. */
#define OHC_DTYPE_COUNT 18

enum ohc_redop {
	OHC_SUM = 0,
	OHC_PROD = 1,
	OHC_MAX = 2,
	OHC_MIN = 3,
};
#define OHC_REDOP_COUNT 4

/* Bytes per element; 0 for an invalid type (13, < 0, > 17). */
size_t ohc_dtype_size(int dtype);
/* Canonical name ("float32", "bfloat16", ...); "invalid" otherwise. */
const char *ohc_dtype_name(int dtype);
/* "sum", "prod", "max", "min"; "invalid" otherwise. */
const char *ohc_redop_name(int op);
/* True for {0..12, 14..17}. */
bool ohc_dtype_valid(int dtype);
/*
 * True when a reduction with `op` over `dtype` is accepted (spec 2.1, 2.3):
 * sum/max/min over {INT8, INT16, INT32, INT64, UINT64, FP16, FP32, FP64,
 * BF16}; prod only over {INT8, INT32, INT64, UINT64, FP16, FP32, FP64}.
 * False for any invalid dtype or op.
 */
bool ohc_reduce_supported(int dtype, int op);

/*
 * Scalar fp16 / bf16 <-> fp32 conversions. Widening is exact (subnormals
 * included); fp16 widening quiets a signalling NaN keeping its payload (as
 * the x86 F16C instructions do), bf16 widening is a plain 16-bit shift.
 * Narrowing rounds to nearest, ties to even, overflows to infinity, and
 * turns a NaN into a quiet NaN with the payload's high bits (bit-exact
 * with F16C for fp16).
 */
static inline float ohc_bits_to_fp32(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static inline uint32_t ohc_fp32_to_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* All-ones when cond holds, else zero: branch-free selects vectorise. */
static inline uint32_t ohc_mask32(bool cond)
{
	return (uint32_t)0 - (uint32_t)cond;
}

static inline float ohc_fp16_to_fp32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t em = (uint32_t)(h & 0x7fffu) << 13; /* at fp32 positions */
	uint32_t exp = em & 0x0f800000u;
	uint32_t m_special = ohc_mask32(exp == 0x0f800000u);
	uint32_t m_sub = ohc_mask32(exp == 0);
	/* normal: rebias 15 -> 127; inf/NaN: max exponent, NaN quieted */
	uint32_t normal = em + 0x38000000u;
	uint32_t special = (em + 0x70000000u) |
			   (ohc_mask32((em & 0x007fe000u) != 0) & 0x00400000u);
	/* subnormal m * 2^-24, exactly: (2^-14 + m * 2^-24) - 2^-14 */
	uint32_t sub = ohc_fp32_to_bits(ohc_bits_to_fp32(em + 0x38800000u) -
					ohc_bits_to_fp32(0x38800000u));

	return ohc_bits_to_fp32(sign | (special & m_special) | (sub & m_sub) |
				(normal & ~(m_special | m_sub)));
}

static inline uint16_t ohc_fp32_to_fp16(float f)
{
	uint32_t x = ohc_fp32_to_bits(f);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t ax = x & 0x7fffffffu;
	uint32_t m_nan = ohc_mask32(ax > 0x7f800000u);
	/* >= 65520 (half-way above the largest finite) rounds to infinity */
	uint32_t m_inf = ohc_mask32(ax >= 0x477ff000u) & ~m_nan;
	uint32_t m_normal = ohc_mask32(ax >= 0x38800000u) & ~(m_nan | m_inf);
	uint32_t m_sub = ~(m_nan | m_inf | m_normal);
	/* NaN: quiet, keep the payload's top bits */
	uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);
	/* normal: rebias 127 -> 15, round to nearest even on bit 13 */
	uint32_t normal =
		(ax - 0x38000000u + 0x0fffu + ((ax >> 13) & 1u)) >> 13;
	/*
	 * subnormal or zero: adding 0.5 leaves units of 2^-24 in the low
	 * mantissa bits, rounded to nearest even by the fp32 add (default
	 * rounding mode; fp32 subnormal inputs give 0 with or without DAZ).
	 */
	uint32_t sub =
		ohc_fp32_to_bits(ohc_bits_to_fp32(ax) + 0.5f) - 0x3f000000u;

	return (uint16_t)(sign | (nan & m_nan) | (0x7c00u & m_inf) |
			  (normal & m_normal) | (sub & m_sub));
}

static inline float ohc_bf16_to_fp32(uint16_t b)
{
	return ohc_bits_to_fp32((uint32_t)b << 16);
}

static inline uint16_t ohc_fp32_to_bf16(float f)
{
	uint32_t x = ohc_fp32_to_bits(f);

	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x0040u);
	return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

#endif
