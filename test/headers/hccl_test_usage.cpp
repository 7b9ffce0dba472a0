/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compiled (not run) with the flags of HCCL's hccl_test Makefile
 * (g++ -std=c++11 -Werror, plus -Wall): the ways that tool uses the
 * headers, written out here so that a header change breaking it breaks
 * our build. Patterns: zero-initialised HcclCommConfig then
 * HcclCommConfigInit; assigning a braced list to an aclrtPhysicalMemProp
 * with a uint32_t device id and enum-scoped names; the root info passed
 * as bytes with HCCL_ROOT_INFO_BYTES as an int count; ACL/HCCL result
 * comparisons; the ops' argument types.
 */
#include <algorithm>
#include <cstddef>

#include "acl/acl.h"
#include "hccl/hccl.h"
#include <hccl/hccl_types.h>

int ohc_fake_bcast(void *buf, int count, int root);

static aclrtMemAttr pick_attr(bool ddr)
{
	return ddr ? aclrtMemAttr::ACL_DDR_MEM_HUGE
		   : aclrtMemAttr::ACL_HBM_MEM_HUGE;
}

int ohc_hccl_test_usage(uint32_t dev_id, int rank, int nranks, bool ddr);
int ohc_hccl_test_usage(uint32_t dev_id, int rank, int nranks, bool ddr)
{
	HcclRootInfo root_info;
	HcclComm comm = nullptr;
	aclrtStream stream = nullptr;
	aclrtPhysicalMemProp prop;
	size_t granularity = 0;
	void *va = nullptr;
	HcclCommSymWindow win = nullptr;
	const size_t stride = 16ULL;

	if (HcclGetRootInfo(&root_info) != HCCL_SUCCESS)
		return -1;
	ohc_fake_bcast(&root_info, HCCL_ROOT_INFO_BYTES, 0);
	const char *ip = root_info.internal;
	(void)ip;

	HcclCommConfig config = {0};
	HcclCommConfigInit(&config);
	config.hcclWorldRankID = rank;
	config.hcclOpExpansionMode = 0;
	config.hcclJobID = (static_cast<uint64_t>(11) << 32) | 1u;
	config.hcclSymWinMaxMemSizePerRank =
		std::max(stride, static_cast<size_t>(3));
	if (HcclGetCommConfigCapability() < 7)
		return -1;
	if (HcclCommInitRootInfoConfig(nranks, &root_info, rank, &config,
				       &comm) != HCCL_SUCCESS)
		return -1;

	prop = {aclrtMemHandleType::ACL_MEM_HANDLE_TYPE_NONE,
		aclrtMemAllocationType::ACL_MEM_ALLOCATION_TYPE_PINNED,
		pick_attr(ddr),
		{dev_id, aclrtMemLocationType::ACL_MEM_LOCATION_TYPE_DEVICE},
		0};
	aclError ret = aclrtMemGetAllocationGranularity(
		&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &granularity);
	if (ret != ACL_SUCCESS)
		return ret == ACL_ERROR_RT_MEMORY_ALLOCATION ? -2 : -1;
	if (aclrtReserveMemAddress(&va, granularity, 0, NULL, 1) !=
	    ACL_ERROR_NONE)
		return -1;
	if (HcclCommSetMemoryRange(comm, va, granularity, 0, 0) !=
	    HCCL_SUCCESS)
		return -1;
	if (HcclCommSymWinRegister(comm, va, granularity, &win, 1) !=
	    HCCL_SUCCESS)
		return -1;

	int op_type = HCCL_REDUCE_SUM;
	int dtype = HCCL_DATA_TYPE_FP32;
	uint64_t counts[2] = {1, 1}, displs[2] = {0, 1};
	HcclResult r = HcclAllReduce(va, va, 1, (HcclDataType)dtype,
				     (HcclReduceOp)op_type, comm, stream);
	r = HcclAllGatherV(va, 1, va, counts, displs,
			   (HcclDataType)dtype, comm, stream);
	r = HcclAlltoAllV(va, counts, displs, HCCL_DATA_TYPE_INT8, va, counts,
			  displs, HCCL_DATA_TYPE_INT8, comm, stream);
	if (r != HCCL_SUCCESS && r != HCCL_E_PARA)
		return -1;
	if (aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE) !=
	    ACL_SUCCESS)
		return -1;
	return static_cast<int>(HcclCommDestroy(comm));
}
