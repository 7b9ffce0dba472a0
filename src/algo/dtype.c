/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/dtype.h"

struct dtype_info {
	const char *name;
	size_t size;
};

/* Sizes from spec 1.4; the gap at 13 stays zeroed (invalid). */
static const struct dtype_info dtype_table[OHC_DTYPE_COUNT] = {
	[OHC_INT8] = {"int8", 1},	[OHC_INT16] = {"int16", 2},
	[OHC_INT32] = {"int32", 4},	[OHC_FP16] = {"float16", 2},
	[OHC_FP32] = {"float32", 4},	[OHC_INT64] = {"int64", 8},
	[OHC_UINT64] = {"uint64", 8},	[OHC_UINT8] = {"uint8", 1},
	[OHC_UINT16] = {"uint16", 2},	[OHC_UINT32] = {"uint32", 4},
	[OHC_FP64] = {"float64", 8},	[OHC_BF16] = {"bfloat16", 2},
	[OHC_INT128] = {"int128", 16},	[OHC_HIF8] = {"hif8", 1},
	[OHC_FP8E4M3] = {"fp8e4m3", 1}, [OHC_FP8E5M2] = {"fp8e5m2", 1},
	[OHC_FP8E8M0] = {"fp8e8m0", 1},
};

static const char *const redop_names[OHC_REDOP_COUNT] = {
	[OHC_SUM] = "sum",
	[OHC_PROD] = "prod",
	[OHC_MAX] = "max",
	[OHC_MIN] = "min",
};

bool ohc_dtype_valid(int dtype)
{
	return dtype >= 0 && dtype < OHC_DTYPE_COUNT &&
	       dtype_table[dtype].size != 0;
}

size_t ohc_dtype_size(int dtype)
{
	return ohc_dtype_valid(dtype) ? dtype_table[dtype].size : 0;
}

const char *ohc_dtype_name(int dtype)
{
	return ohc_dtype_valid(dtype) ? dtype_table[dtype].name : "invalid";
}

const char *ohc_redop_name(int op)
{
	if (op < 0 || op >= OHC_REDOP_COUNT)
		return "invalid";
	return redop_names[op];
}

bool ohc_reduce_supported(int dtype, int op)
{
	switch (op) {
	case OHC_SUM:
	case OHC_MAX:
	case OHC_MIN:
		switch (dtype) {
		case OHC_INT8:
		case OHC_INT16:
		case OHC_INT32:
		case OHC_INT64:
		case OHC_UINT64:
		case OHC_FP16:
		case OHC_FP32:
		case OHC_FP64:
		case OHC_BF16:
			return true;
		default:
			return false;
		}
	case OHC_PROD:
		switch (dtype) {
		case OHC_INT8:
		case OHC_INT32:
		case OHC_INT64:
		case OHC_UINT64:
		case OHC_FP16:
		case OHC_FP32:
		case OHC_FP64:
			return true;
		default:
			return false;
		}
	default:
		return false;
	}
}
