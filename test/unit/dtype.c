/* SPDX-License-Identifier: Apache-2.0 */
/* Datatype table: sizes, names, validity, reduce support (spec 1.4, 2.3). */
#include <criterion/criterion.h>
#include <string.h>

#include "algo/dtype.h"

/* Spec 1.4, written out as the spec states it (HcclDataType values). */
static const struct {
	int value;
	size_t size;
	const char *name;
} spec_types[] = {
	{0, 1, "int8"},	    {1, 2, "int16"},	{2, 4, "int32"},
	{3, 2, "float16"},  {4, 4, "float32"},	{5, 8, "int64"},
	{6, 8, "uint64"},   {7, 1, "uint8"},	{8, 2, "uint16"},
	{9, 4, "uint32"},   {10, 8, "float64"}, {11, 2, "bfloat16"},
	{12, 16, "int128"}, {14, 1, "hif8"},	{15, 1, "fp8e4m3"},
	{16, 1, "fp8e5m2"}, {17, 1, "fp8e8m0"},
};

static const int invalid_types[] = {13, -1, 18, 19, 255, -255, 1 << 30};

Test(dtype, enum_values_are_hccl_values)
{
	cr_expect_eq(OHC_INT8, 0);
	cr_expect_eq(OHC_FP16, 3);
	cr_expect_eq(OHC_FP32, 4);
	cr_expect_eq(OHC_UINT64, 6);
	cr_expect_eq(OHC_FP64, 10);
	cr_expect_eq(OHC_BF16, 11);
	cr_expect_eq(OHC_INT128, 12);
	cr_expect_eq(OHC_HIF8, 14);
	cr_expect_eq(OHC_FP8E8M0, 17);
	cr_expect_eq(OHC_SUM, 0);
	cr_expect_eq(OHC_PROD, 1);
	cr_expect_eq(OHC_MAX, 2);
	cr_expect_eq(OHC_MIN, 3);
}

Test(dtype, sizes_match_spec)
{
	size_t i;

	for (i = 0; i < sizeof(spec_types) / sizeof(spec_types[0]); i++)
		cr_expect_eq(ohc_dtype_size(spec_types[i].value),
			     spec_types[i].size, "dtype %d: size %zu, want %zu",
			     spec_types[i].value,
			     ohc_dtype_size(spec_types[i].value),
			     spec_types[i].size);
	for (i = 0; i < sizeof(invalid_types) / sizeof(invalid_types[0]); i++)
		cr_expect_eq(ohc_dtype_size(invalid_types[i]), 0,
			     "invalid dtype %d has size %zu", invalid_types[i],
			     ohc_dtype_size(invalid_types[i]));
}

Test(dtype, names_match_spec)
{
	size_t i;

	for (i = 0; i < sizeof(spec_types) / sizeof(spec_types[0]); i++)
		cr_expect_str_eq(ohc_dtype_name(spec_types[i].value),
				 spec_types[i].name, "dtype %d",
				 spec_types[i].value);
	for (i = 0; i < sizeof(invalid_types) / sizeof(invalid_types[0]); i++)
		cr_expect_str_eq(ohc_dtype_name(invalid_types[i]), "invalid",
				 "dtype %d", invalid_types[i]);
	cr_expect_str_eq(ohc_redop_name(0), "sum");
	cr_expect_str_eq(ohc_redop_name(1), "prod");
	cr_expect_str_eq(ohc_redop_name(2), "max");
	cr_expect_str_eq(ohc_redop_name(3), "min");
	cr_expect_str_eq(ohc_redop_name(4), "invalid");
	cr_expect_str_eq(ohc_redop_name(-1), "invalid");
	cr_expect_str_eq(ohc_redop_name(255), "invalid");
}

Test(dtype, validity)
{
	int v, valid = 0;
	size_t i;

	for (i = 0; i < sizeof(spec_types) / sizeof(spec_types[0]); i++)
		cr_expect(ohc_dtype_valid(spec_types[i].value), "dtype %d",
			  spec_types[i].value);
	for (i = 0; i < sizeof(invalid_types) / sizeof(invalid_types[0]); i++)
		cr_expect_not(ohc_dtype_valid(invalid_types[i]), "dtype %d",
			      invalid_types[i]);
	/* Exactly {0..12, 14..17} over a wide window. */
	for (v = -300; v < 300; v++) {
		bool want = (v >= 0 && v <= 12) || (v >= 14 && v <= 17);

		cr_expect_eq(ohc_dtype_valid(v), want, "dtype %d", v);
		valid += ohc_dtype_valid(v);
	}
	cr_expect_eq(valid, 17);
}

static bool in_list(int v, const int *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (list[i] == v)
			return true;
	return false;
}

Test(dtype, reduce_support_matrix)
{
	/* Spec 2.1 / 2.3, listed by HCCL name. */
	static const int reducible[] = {
		0 /* int8 */,  1 /* int16 */,  2 /* int32 */,
		5 /* int64 */, 6 /* uint64 */, 3 /* fp16 */,
		4 /* fp32 */,  10 /* fp64 */,  11 /* bfp16 */};
	static const int prod_ok[] = {0 /* int8 */,
				      2 /* int32 */,
				      5 /* int64 */,
				      6 /* uint64 */,
				      3 /* fp16 */,
				      4 /* fp32 */,
				      10 /* fp64 */};
	int dt, op;

	for (dt = -2; dt < 20; dt++) {
		for (op = -1; op < 6; op++) {
			bool want;

			if (op < 0 || op > 3)
				want = false;
			else if (op == 1)
				want = in_list(dt, prod_ok, 7);
			else
				want = in_list(dt, reducible, 9);
			cr_expect_eq(ohc_reduce_supported(dt, op), want,
				     "dtype %d op %d", dt, op);
		}
	}
	cr_expect_not(ohc_reduce_supported(OHC_INT16, OHC_PROD));
	cr_expect_not(ohc_reduce_supported(OHC_BF16, OHC_PROD));
	cr_expect_not(ohc_reduce_supported(OHC_UINT8, OHC_SUM));
	cr_expect_not(ohc_reduce_supported(OHC_UINT32, OHC_MAX));
	cr_expect_not(ohc_reduce_supported(OHC_INT128, OHC_SUM));
	cr_expect_not(ohc_reduce_supported(OHC_FP8E4M3, OHC_MIN));
	cr_expect_not(ohc_reduce_supported(13, OHC_SUM));
	cr_expect(ohc_reduce_supported(OHC_UINT64, OHC_PROD));
}
