/* SPDX-License-Identifier: Apache-2.0 */
/*
 * headers.layout_c: the public headers seen from C11. Besides the shared
 * checks, C-only properties: the HCCL constants are integer constant
 * expressions (array bounds at file scope, #if, case labels) and the ACL
 * error codes work as case labels.
 */
#include "layout_common.h"

/* Constants as file-scope array bounds (a const uint32_t would fail). */
static char root_blob[HCCL_ROOT_INFO_BYTES];
static char algo[HCCL_COMM_ALGO_MAX_LENGTH];
static char names[2][COMM_NAME_MAX_LENGTH + BUFFER_NAME_MAX_LENGTH];

#if HCCL_COMM_CONFIG_VERSION != 11 || HCCL_COMM_CONFIG_INFO_BYTES != 24
#error "HCCL config constants unusable in #if"
#endif
#if ACL_ERROR_RT_STREAM_SYNC_TIMEOUT != 507046 || ACL_MINOR_VERSION != 17
#error "ACL macros unusable in #if"
#endif

_Static_assert(ACL_ERROR_INVALID_PARAM == 100000, "enum constant");
_Static_assert(HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE == 16ULL, "stride");

/* The C types of the constants match the C++ declarations. */
_Static_assert(_Generic(HCCL_ROOT_INFO_BYTES, unsigned int: 1, default: 0),
	       "uint32 constant");
_Static_assert(_Generic(HCCL_COMM_QOS_CONFIG_NOT_SET, unsigned int: 1,
			default: 0), "uint32 constant");
_Static_assert(_Generic(HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET, int: 1,
			default: 0), "int32 constant");
_Static_assert(_Generic(HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE,
			unsigned long long: 1, unsigned long: 1, default: 0),
	       "uint64 constant");

static int classify(aclError err)
{
	switch (err) {
	case ACL_SUCCESS:
		return 0;
	case ACL_ERROR_INVALID_PARAM:
		return 1;
	case ACL_ERROR_RT_PARAM_INVALID:
		return 2;
	case ACL_ERROR_RT_MEMORY_ALLOCATION:
		return 3;
	default:
		return -1;
	}
}

static int classify_hccl(HcclResult res)
{
	switch (res) {
	case HCCL_SUCCESS:
		return 0;
	case HCCL_E_PARA:
		return 1;
	case HCCL_E_IN_STATUS:
		return 2;
	default:
		return -1;
	}
}

int main(void)
{
	check_common();

	CHECK_EQ(sizeof(root_blob), 4108);
	CHECK_EQ(sizeof(algo), 1600);
	CHECK_EQ(sizeof(names[0]), 256);
	CHECK_EQ(classify(100000), 1);
	CHECK_EQ(classify(107000), 2);
	CHECK_EQ(classify(207001), 3);
	CHECK_EQ(classify(0), 0);
	CHECK_EQ(classify_hccl((HcclResult)1041), 2);

	if (layout_failures) {
		fprintf(stderr, "%d layout check(s) failed\n",
			layout_failures);
		return 1;
	}
	printf("all C layout checks passed\n");
	return 0;
}
