/* SPDX-License-Identifier: Apache-2.0 */
/*
 * headers.layout_cxx: the public headers seen from C++11 (the language of
 * hccl_test). Besides the shared checks: enumerators named through their
 * enum type (aclrtMemAttr::ACL_HBM_MEM_HUGE), hccl_test's brace
 * initialisation of aclrtPhysicalMemProp from a uint32_t device id (a
 * narrowing error under -Werror if a member had the wrong type), the
 * vendor's typed constants, and the exact type of every declared function
 * (argument order, const, return type), checked without linking.
 */
#include <type_traits>

#include "layout_common.h"

#define CHECK_PROTO(fn, type) \
	static_assert(std::is_same<decltype(fn), type>::value, #fn)

/* acl_runtime.md section 7. */
CHECK_PROTO(aclInit, aclError(const char *));
CHECK_PROTO(aclFinalize, aclError());
CHECK_PROTO(aclFinalizeReference, aclError(uint64_t *));
CHECK_PROTO(aclGetRecentErrMsg, const char *());
CHECK_PROTO(aclrtGetVersion, aclError(int32_t *, int32_t *, int32_t *));
CHECK_PROTO(aclrtSetDevice, aclError(int32_t));
CHECK_PROTO(aclrtResetDevice, aclError(int32_t));
CHECK_PROTO(aclrtResetDeviceForce, aclError(int32_t));
CHECK_PROTO(aclrtGetDevice, aclError(int32_t *));
CHECK_PROTO(aclrtGetDeviceCount, aclError(uint32_t *));
CHECK_PROTO(aclrtGetSocName, const char *());
CHECK_PROTO(aclrtSetDeviceSatMode, aclError(aclrtFloatOverflowMode));
CHECK_PROTO(aclrtGetDeviceSatMode, aclError(aclrtFloatOverflowMode *));
CHECK_PROTO(aclrtSynchronizeDevice, aclError());
CHECK_PROTO(aclrtGetRunMode, aclError(aclrtRunMode *));
CHECK_PROTO(aclrtCreateContext, aclError(aclrtContext *, int32_t));
CHECK_PROTO(aclrtDestroyContext, aclError(aclrtContext));
CHECK_PROTO(aclrtSetCurrentContext, aclError(aclrtContext));
CHECK_PROTO(aclrtGetCurrentContext, aclError(aclrtContext *));
CHECK_PROTO(aclrtCreateStream, aclError(aclrtStream *));
CHECK_PROTO(aclrtCreateStreamWithConfig,
	    aclError(aclrtStream *, uint32_t, uint32_t));
CHECK_PROTO(aclrtDestroyStream, aclError(aclrtStream));
CHECK_PROTO(aclrtDestroyStreamForce, aclError(aclrtStream));
CHECK_PROTO(aclrtSetStreamFailureMode, aclError(aclrtStream, uint64_t));
CHECK_PROTO(aclrtSynchronizeStream, aclError(aclrtStream));
CHECK_PROTO(aclrtSynchronizeStreamWithTimeout, aclError(aclrtStream, int32_t));
CHECK_PROTO(aclrtStreamQuery, aclError(aclrtStream, aclrtStreamStatus *));
CHECK_PROTO(aclrtStreamWaitEvent, aclError(aclrtStream, aclrtEvent));
CHECK_PROTO(aclrtCreateEvent, aclError(aclrtEvent *));
CHECK_PROTO(aclrtCreateEventWithFlag, aclError(aclrtEvent *, uint32_t));
CHECK_PROTO(aclrtCreateEventExWithFlag, aclError(aclrtEvent *, uint32_t));
CHECK_PROTO(aclrtDestroyEvent, aclError(aclrtEvent));
CHECK_PROTO(aclrtRecordEvent, aclError(aclrtEvent, aclrtStream));
CHECK_PROTO(aclrtResetEvent, aclError(aclrtEvent, aclrtStream));
CHECK_PROTO(aclrtQueryEventStatus,
	    aclError(aclrtEvent, aclrtEventRecordedStatus *));
CHECK_PROTO(aclrtQueryEvent, aclError(aclrtEvent, aclrtEventStatus *));
CHECK_PROTO(aclrtSynchronizeEvent, aclError(aclrtEvent));
CHECK_PROTO(aclrtSynchronizeEventWithTimeout, aclError(aclrtEvent, int32_t));
CHECK_PROTO(aclrtEventElapsedTime, aclError(float *, aclrtEvent, aclrtEvent));
CHECK_PROTO(aclrtEventGetTimestamp, aclError(aclrtEvent, uint64_t *));
CHECK_PROTO(aclrtMalloc, aclError(void **, size_t, aclrtMemMallocPolicy));
CHECK_PROTO(aclrtMallocAlign32,
	    aclError(void **, size_t, aclrtMemMallocPolicy));
CHECK_PROTO(aclrtFree, aclError(void *));
CHECK_PROTO(aclrtMallocHost, aclError(void **, size_t));
CHECK_PROTO(aclrtFreeHost, aclError(void *));
CHECK_PROTO(aclrtGetMemInfo, aclError(aclrtMemAttr, size_t *, size_t *));
CHECK_PROTO(aclrtMemcpy,
	    aclError(void *, size_t, const void *, size_t, aclrtMemcpyKind));
CHECK_PROTO(aclrtMemcpyAsync,
	    aclError(void *, size_t, const void *, size_t, aclrtMemcpyKind,
		     aclrtStream));
CHECK_PROTO(aclrtMemset, aclError(void *, size_t, int32_t, size_t));
CHECK_PROTO(aclrtMemsetAsync,
	    aclError(void *, size_t, int32_t, size_t, aclrtStream));
CHECK_PROTO(aclrtReserveMemAddress,
	    aclError(void **, size_t, size_t, void *, uint64_t));
CHECK_PROTO(aclrtReleaseMemAddress, aclError(void *));
CHECK_PROTO(aclrtMallocPhysical,
	    aclError(aclrtDrvMemHandle *, size_t, const aclrtPhysicalMemProp *,
		     uint64_t));
CHECK_PROTO(aclrtFreePhysical, aclError(aclrtDrvMemHandle));
CHECK_PROTO(aclrtMapMem,
	    aclError(void *, size_t, size_t, aclrtDrvMemHandle, uint64_t));
CHECK_PROTO(aclrtUnmapMem, aclError(void *));
CHECK_PROTO(aclrtMemGetAllocationGranularity,
	    aclError(aclrtPhysicalMemProp *, aclrtMemGranularityOptions,
		     size_t *));
CHECK_PROTO(aclrtMemRetainAllocationHandle,
	    aclError(void *, aclrtDrvMemHandle *));

/* acl_runtime.md section 9 (acl_prof.h). */
CHECK_PROTO(aclprofInit, aclError(const char *, size_t));
CHECK_PROTO(aclprofFinalize, aclError());
CHECK_PROTO(aclprofCreateConfig,
	    aclprofConfig *(uint32_t *, uint32_t, aclprofAicoreMetrics,
			    const aclprofAicoreEvents *, uint64_t));
CHECK_PROTO(aclprofDestroyConfig, aclError(const aclprofConfig *));
CHECK_PROTO(aclprofStart, aclError(const aclprofConfig *));
CHECK_PROTO(aclprofStop, aclError(const aclprofConfig *));

/* hccl_api.md section 2. */
CHECK_PROTO(HcclAllReduce,
	    HcclResult(void *, void *, uint64_t, HcclDataType, HcclReduceOp,
		       HcclComm, aclrtStream));
CHECK_PROTO(HcclBroadcast,
	    HcclResult(void *, uint64_t, HcclDataType, uint32_t, HcclComm,
		       aclrtStream));
CHECK_PROTO(HcclReduce,
	    HcclResult(void *, void *, uint64_t, HcclDataType, HcclReduceOp,
		       uint32_t, HcclComm, aclrtStream));
CHECK_PROTO(HcclAllGather,
	    HcclResult(void *, void *, uint64_t, HcclDataType, HcclComm,
		       aclrtStream));
CHECK_PROTO(HcclAllGatherV,
	    HcclResult(void *, uint64_t, void *, const void *, const void *,
		       HcclDataType, HcclComm, aclrtStream));
CHECK_PROTO(HcclReduceScatter,
	    HcclResult(void *, void *, uint64_t, HcclDataType, HcclReduceOp,
		       HcclComm, aclrtStream));
CHECK_PROTO(HcclReduceScatterV,
	    HcclResult(void *, const void *, const void *, void *, uint64_t,
		       HcclDataType, HcclReduceOp, HcclComm, aclrtStream));
CHECK_PROTO(HcclScatter,
	    HcclResult(void *, void *, uint64_t, HcclDataType, uint32_t,
		       HcclComm, aclrtStream));
CHECK_PROTO(HcclAlltoAll,
	    HcclResult(const void *, uint64_t, HcclDataType, const void *,
		       uint64_t, HcclDataType, HcclComm, aclrtStream));
CHECK_PROTO(HcclAlltoAllV,
	    HcclResult(const void *, const void *, const void *, HcclDataType,
		       const void *, const void *, const void *, HcclDataType,
		       HcclComm, aclrtStream));
CHECK_PROTO(HcclAlltoAllVC,
	    HcclResult(const void *, const void *, HcclDataType, const void *,
		       HcclDataType, HcclComm, aclrtStream));
CHECK_PROTO(HcclSend,
	    HcclResult(void *, uint64_t, HcclDataType, uint32_t, HcclComm,
		       aclrtStream));
CHECK_PROTO(HcclRecv,
	    HcclResult(void *, uint64_t, HcclDataType, uint32_t, HcclComm,
		       aclrtStream));
CHECK_PROTO(HcclBatchSendRecv,
	    HcclResult(HcclSendRecvItem *, uint32_t, HcclComm, aclrtStream));

/* hccl_api.md sections 2.5, 2.6, 3, 4. */
CHECK_PROTO(HcclCommInitClusterInfo,
	    HcclResult(const char *, uint32_t, HcclComm *));
CHECK_PROTO(HcclCommInitClusterInfoConfig,
	    HcclResult(const char *, uint32_t, HcclCommConfig *, HcclComm *));
CHECK_PROTO(HcclCreateSubCommConfig,
	    HcclResult(HcclComm *, uint32_t, uint32_t *, uint64_t, uint32_t,
		       HcclCommConfig *, HcclComm *));
CHECK_PROTO(HcclGetRootInfo, HcclResult(HcclRootInfo *));
CHECK_PROTO(HcclCommInitRootInfo,
	    HcclResult(uint32_t, const HcclRootInfo *, uint32_t, HcclComm *));
CHECK_PROTO(HcclCommInitRootInfoConfig,
	    HcclResult(uint32_t, const HcclRootInfo *, uint32_t,
		       const HcclCommConfig *, HcclComm *));
CHECK_PROTO(HcclCommInitAll, HcclResult(uint32_t, int32_t *, HcclComm *));
CHECK_PROTO(HcclSetConfig, HcclResult(HcclConfig, HcclConfigValue));
CHECK_PROTO(HcclGetConfig, HcclResult(HcclConfig, HcclConfigValue *));
CHECK_PROTO(HcclGetCommName, HcclResult(HcclComm, char *));
CHECK_PROTO(HcclCommGetHandleWithName, HcclResult(const char *, HcclComm *));
CHECK_PROTO(HcclGetRankSize, HcclResult(HcclComm, uint32_t *));
CHECK_PROTO(HcclGetRankId, HcclResult(HcclComm, uint32_t *));
CHECK_PROTO(HcclBarrier, HcclResult(HcclComm, aclrtStream));
CHECK_PROTO(HcclCommDestroy, HcclResult(HcclComm));
CHECK_PROTO(HcclGetCommAsyncError, HcclResult(HcclComm, HcclResult *));
CHECK_PROTO(HcclGetErrorString, const char *(HcclResult));
CHECK_PROTO(HcclGetCommConfigCapability, uint32_t());
CHECK_PROTO(HcclCommConfigInit, void(HcclCommConfig *));
CHECK_PROTO(HcclCommSuspend, HcclResult(HcclComm));
CHECK_PROTO(HcclCommResume, HcclResult(HcclComm));
CHECK_PROTO(HcclCommRegCommStateCallback,
	    HcclResult(const char *, HcclCommStateCallback, void *));
static_assert(std::is_same<HcclCommStateCallback,
			   HcclResult (*)(HcclComm, HcclCommStatePhase,
					  void *)>::value,
	      "HcclCommStateCallback");
CHECK_PROTO(HcclCommGetStatus, HcclResult(const char *, HcclCommStatus *));
CHECK_PROTO(HcclConfigGetInfo,
	    HcclResult(HcclComm, HcclConfigType, uint32_t, void *));
static_assert(std::is_same<HcclConfigTypeOpExpansionMode,
			   HcclOpExpansionMode>::value,
	      "HcclConfigTypeOpExpansionMode");
CHECK_PROTO(HcclCommSetMemoryRange,
	    HcclResult(HcclComm, void *, size_t, size_t, uint64_t));
CHECK_PROTO(HcclCommUnsetMemoryRange, HcclResult(HcclComm, void *));
CHECK_PROTO(HcclCommActivateCommMemory,
	    HcclResult(HcclComm, void *, size_t, size_t, aclrtDrvMemHandle,
		       uint64_t));
CHECK_PROTO(HcclCommDeactivateCommMemory, HcclResult(HcclComm, void *));
CHECK_PROTO(HcclCommWorkingDevNicSet,
	    HcclResult(HcclComm, uint32_t *, bool *, uint32_t));
CHECK_PROTO(HcclGroupStart, HcclResult());
CHECK_PROTO(HcclGroupEnd, HcclResult());
CHECK_PROTO(HcclGroupStatusGet, HcclResult(bool *));
CHECK_PROTO(HcclCommSymWinRegister,
	    HcclResult(HcclComm, void *, uint64_t, HcclCommSymWindow *,
		       uint32_t));
CHECK_PROTO(HcclCommSymWinDeregister, HcclResult(HcclCommSymWindow));
CHECK_PROTO(HcclCommSymWinGet,
	    HcclResult(HcclComm, void *, size_t, HcclCommSymWindow *,
		       size_t *));
CHECK_PROTO(HcclSymWinGetPeerPointer,
	    HcclResult(HcclCommSymWindow, size_t, uint32_t, void **));

/* hccl_api.md section 6. */
CHECK_PROTO(HcomCreateGroup, HcclResult(const char *, uint32_t, uint32_t *));
CHECK_PROTO(HcomDestroyGroup, HcclResult(const char *));
CHECK_PROTO(HcomGetRankSize, HcclResult(const char *, uint32_t *));
CHECK_PROTO(HcomGetLocalRankSize, HcclResult(const char *, uint32_t *));
CHECK_PROTO(HcomGetRankId, HcclResult(const char *, uint32_t *));
CHECK_PROTO(HcomGetLocalRankId, HcclResult(const char *, uint32_t *));
CHECK_PROTO(HcomGetWorldRankFromGroupRank,
	    HcclResult(const char *, uint32_t, uint32_t *));
CHECK_PROTO(HcomGetGroupRankFromWorldRank,
	    HcclResult(uint32_t, const char *, uint32_t *));
CHECK_PROTO(HcomSetGradFusionByIndex,
	    HcclResult(const char *, uint32_t, const uint32_t *));
CHECK_PROTO(HcomSetGradFusionBySize,
	    HcclResult(const char *, uint32_t, const float *));

/* The vendor's C++ constants are typed. */
static_assert(std::is_same<decltype(HCCL_ROOT_INFO_BYTES),
			   const uint32_t>::value, "uint32 constant");
static_assert(std::is_same<decltype(HCCL_COMM_HCCL_QOS_CONFIG_NOT_SET),
			   const uint32_t>::value, "uint32 constant");
static_assert(std::is_same<decltype(HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET),
			   const int32_t>::value, "int32 constant");
static_assert(std::is_same<decltype(HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE),
			   const uint64_t>::value, "uint64 constant");

/* What hccl_test writes (OAM hccl_test_common.cc), with a runtime id. */
static aclrtPhysicalMemProp make_prop(uint32_t dev_id)
{
	aclrtPhysicalMemProp prop = {
		aclrtMemHandleType::ACL_MEM_HANDLE_TYPE_NONE,
		aclrtMemAllocationType::ACL_MEM_ALLOCATION_TYPE_PINNED,
		ACL_HBM_MEM_HUGE,
		{dev_id, aclrtMemLocationType::ACL_MEM_LOCATION_TYPE_DEVICE},
		0};
	return prop;
}

static void check_cxx(uint32_t dev_id)
{
	aclrtPhysicalMemProp prop = make_prop(dev_id);
	char bounded[HCCL_ROOT_INFO_BYTES + COMM_NAME_MAX_LENGTH];

	CHECK_EQ(prop.handleType, 0);
	CHECK_EQ(prop.allocationType, 0);
	CHECK_EQ(prop.memAttr, 4);
	CHECK_EQ(prop.location.id, dev_id);
	CHECK_EQ(prop.location.type, 1);
	CHECK_EQ(prop.reserve, 0);

	CHECK_EQ(aclrtMemAttr::ACL_HBM_MEM_HUGE, 4);
	CHECK_EQ(aclrtMemAttr::ACL_DDR_MEM_HUGE, 2);
	CHECK_EQ(aclrtMemHandleType::ACL_MEM_HANDLE_TYPE_NONE, 0);
	CHECK_EQ(aclrtMemAllocationType::ACL_MEM_ALLOCATION_TYPE_PINNED, 0);
	CHECK_EQ(aclrtMemLocationType::ACL_MEM_LOCATION_TYPE_DEVICE, 1);
	CHECK_EQ(aclrtMemMallocPolicy::ACL_MEM_MALLOC_HUGE_ONLY, 1);
	CHECK_EQ(aclrtMemcpyKind::ACL_MEMCPY_HOST_TO_HOST, 0);
	CHECK_EQ(aclrtFloatOverflowMode::ACL_RT_OVERFLOW_MODE_INFNAN, 1);
	CHECK_EQ(aclrtMemGranularityOptions::
		 ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, 1);
	CHECK_EQ(HcclResult::HCCL_E_PARA, 1);
	CHECK_EQ(HcclDataType::HCCL_DATA_TYPE_FP32, 4);
	CHECK_EQ(HcclReduceOp::HCCL_REDUCE_SUM, 0);

	CHECK_EQ(sizeof(bounded), 4108 + 128);
}

int main(int argc, char **argv)
{
	(void)argv;
	check_common();
	/* A device id the compiler cannot see (7 when run without arguments). */
	check_cxx(static_cast<uint32_t>(6 + argc));

	if (layout_failures) {
		fprintf(stderr, "%d layout check(s) failed\n",
			layout_failures);
		return 1;
	}
	printf("all C++ layout checks passed\n");
	return 0;
}
