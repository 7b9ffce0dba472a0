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

static inline float ohc_fp16_to_fp32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t man = h & 0x3ffu;
	unsigned shift;

	if (exp == 0x1f)
		return ohc_bits_to_fp32(sign | 0x7f800000u | (man << 13) |
					(man ? 0x00400000u : 0));
	if (exp != 0)
		return ohc_bits_to_fp32(sign | ((exp + 112) << 23) |
					(man << 13));
	if (man == 0)
		return ohc_bits_to_fp32(sign);
	/* Subnormal: normalise so the leading one lands on bit 10. */
	shift = (unsigned)__builtin_clz(man) - 21;
	return ohc_bits_to_fp32(sign | ((113 - shift) << 23) |
				((man << shift) & 0x3ffu) << 13);
}

static inline uint16_t ohc_fp32_to_fp16(float f)
{
	uint32_t x = ohc_fp32_to_bits(f);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t ax = x & 0x7fffffffu;
	uint32_t exp, man, shift, h, rem, half;

	if (ax > 0x7f800000u) /* NaN: quiet, keep the payload's top bits */
		return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
	if (ax >= 0x477ff000u) /* >= 65520 rounds to infinity */
		return (uint16_t)(sign | 0x7c00u);
	if (ax >= 0x38800000u) /* normal: rebias, round on bit 13 */
		return (uint16_t)(sign | ((ax - 0x38000000u + 0x0fffu +
					   ((ax >> 13) & 1u)) >>
					  13));
	/* Subnormal or zero result. */
	exp = ax >> 23;
	if (exp < 102) /* below half the smallest subnormal */
		return (uint16_t)sign;
	man = (ax & 0x7fffffu) | 0x800000u;
	shift = 126 - exp; /* 14..24 */
	h = man >> shift;
	rem = man & ((1u << shift) - 1);
	half = 1u << (shift - 1);
	if (rem > half || (rem == half && (h & 1u)))
		h++;
	return (uint16_t)(sign | h);
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
