/* SPDX-License-Identifier: Apache-2.0 */
#ifndef HCCL_HCCL_COMM_H
#define HCCL_HCCL_COMM_H

/*
 * Communicator management: bootstrap (root info, rank table, sub-comms),
 * queries, barrier, group calls, error reporting, zero-copy memory ranges
 * and symmetric memory windows. Prototypes match the vendor header; the
 * functions are defined strongly (the vendor's weak declarations are not
 * reproduced). Valid C11 and C++11.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <hccl/hccl_types.h>
#include <acl/acl.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where an algorithm is expanded (HcclConfigGetInfo answer). */
typedef enum {
	HCCL_OP_EXPANSION_MODE_INVALID = -1,
	HCCL_OP_EXPANSION_MODE_AI_CPU = 0,
	HCCL_OP_EXPANSION_MODE_AIV = 1,
	HCCL_OP_EXPANSION_MODE_HOST = 2,
	HCCL_OP_EXPANSION_MODE_HOST_TS = 3,
	HCCL_OP_EXPANSION_MODE_CCU_MS = 4,
	HCCL_OP_EXPANSION_MODE_CCU_SCHED = 5,
	HCCL_OP_EXPANSION_AIV_ONLY = 6
} HcclOpExpansionMode;

typedef enum {
	HCCL_CONFIG_TYPE_INVALID = -1,
	HCCL_CONFIG_TYPE_OP_EXPANSION_MODE = 0,
	HCCL_CONFIG_TYPE_HCCL_ALGO = 1
} HcclConfigType;

typedef HcclOpExpansionMode HcclConfigTypeOpExpansionMode;

/* Called before/after HcclCommDestroy and HcclCommResume. */
typedef HcclResult (*HcclCommStateCallback)(HcclComm comm,
					    HcclCommStatePhase state,
					    void *args);

/*
 * Bootstrap. All are collective over the ranks of the new communicator
 * and block until every rank joined or the connect timeout expired.
 * clusterInfo is the path of a rank-table JSON file. Inside a group
 * (HcclGroupStart) the init calls are deferred to HcclGroupEnd.
 */
HCCL_API HcclResult HcclCommInitClusterInfo(const char *clusterInfo,
					    uint32_t rank, HcclComm *comm);
HCCL_API HcclResult HcclCommInitClusterInfoConfig(const char *clusterInfo,
						  uint32_t rank,
						  HcclCommConfig *config,
						  HcclComm *comm);
HCCL_API HcclResult HcclCreateSubCommConfig(HcclComm *comm, uint32_t rankNum,
					    uint32_t *rankIds,
					    uint64_t subCommId,
					    uint32_t subCommRankId,
					    HcclCommConfig *config,
					    HcclComm *subComm);
/* Root only: starts the bootstrap listener and fills *rootInfo. */
HCCL_API HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo);
HCCL_API HcclResult HcclCommInitRootInfo(uint32_t nRanks,
					 const HcclRootInfo *rootInfo,
					 uint32_t rank, HcclComm *comm);
HCCL_API HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks,
					       const HcclRootInfo *rootInfo,
					       uint32_t rank,
					       const HcclCommConfig *config,
					       HcclComm *comm);
/* One process, one server: comms[i] is the communicator of devices[i]. */
HCCL_API HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices,
				    HcclComm *comms);

/* Process-global knobs (only HCCL_DETERMINISTIC). */
HCCL_API HcclResult HcclSetConfig(HcclConfig config,
				  HcclConfigValue configValue);
HCCL_API HcclResult HcclGetConfig(HcclConfig config,
				  HcclConfigValue *configValue);

/* Queries (synchronous). commName buffers hold COMM_NAME_MAX_LENGTH. */
HCCL_API HcclResult HcclGetCommName(HcclComm comm, char *commName);
HCCL_API HcclResult HcclCommGetHandleWithName(const char *commName,
					      HcclComm *comm);
HCCL_API HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize);
HCCL_API HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank);

/* Enqueued on stream like a collective; all ranks must call it. */
HCCL_API HcclResult HcclBarrier(HcclComm comm, aclrtStream stream);

/* NULL is a no-op. Deferred when called inside a group. */
HCCL_API HcclResult HcclCommDestroy(HcclComm comm);

/* Sticky execution-time error of comm (HCCL_SUCCESS if none). */
HCCL_API HcclResult HcclGetCommAsyncError(HcclComm comm,
					  HcclResult *asyncError);
/* Static string, never freed. */
HCCL_API const char *HcclGetErrorString(HcclResult code);
HCCL_API uint32_t HcclGetCommConfigCapability(void);

/*
 * Writes the ABI header (size, magic, version) and the default ("not
 * set") value of every field; other bytes are left untouched. NULL: no-op.
 */
static inline void HcclCommConfigInit(HcclCommConfig *config)
{
	struct {
		size_t size;
		uint32_t magicWord;
		uint32_t version;
		uint64_t reserved;
	} info;

	if (!config)
		return;
	info.size = sizeof(HcclCommConfig);
	info.magicWord = HCCL_COMM_CONFIG_MAGIC_WORD;
	info.version = HCCL_COMM_CONFIG_VERSION;
	info.reserved = 0;
	memcpy(config->reserved, &info, sizeof(info));

	config->hcclBufferSize = HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET;
	config->hcclDeterministic = HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET;
	config->hcclCommName[0] = '\0';
	config->hcclUdi[0] = '\0';
	config->hcclOpExpansionMode = HCCL_COMM_DEFAULT_OP_EXPANSION_MODE;
	config->hcclRdmaTrafficClass = HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET;
	config->hcclRdmaServiceLevel = HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET;
	config->hcclWorldRankID = 0;
	config->hcclJobID = 0;
	config->aclGraphZeroCopyEnable = 0;
	config->hcclExecTimeOut = HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET;
	config->hcclAlgo[0] = '\0';
	config->hcclRetryEnable[0] = '\0';
	config->hcclRetryParams[0] = '\0';
	config->hcclBufferName[0] = '\0';
	config->hcclQos = HCCL_COMM_QOS_CONFIG_NOT_SET;
	config->hcclSymWinMaxMemSizePerRank =
		HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE;
	config->hcclChannelSqDepth = HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET;
}

/* Reserved by the vendor ("do not use"); state flags only. */
HCCL_API HcclResult HcclCommSuspend(HcclComm comm);
HCCL_API HcclResult HcclCommResume(HcclComm comm);
HCCL_API HcclResult HcclCommRegCommStateCallback(const char *regName,
						 HcclCommStateCallback cb,
						 void *args);
/* By communicator name. */
HCCL_API HcclResult HcclCommGetStatus(const char *commId,
				      HcclCommStatus *status);
HCCL_API HcclResult HcclConfigGetInfo(HcclComm comm, HcclConfigType cfgType,
				      uint32_t infoLen, void *info);

/*
 * Zero-copy memory ranges: baseVirPtr is an aclrtReserveMemAddress range,
 * virPtr an aclrtMapMem mapping inside a set range. alignment, offset and
 * flags must be 0. The first HcclCommSetMemoryRange of a comm is
 * collective.
 */
HCCL_API HcclResult HcclCommSetMemoryRange(HcclComm comm, void *baseVirPtr,
					   size_t size, size_t alignment,
					   uint64_t flags);
HCCL_API HcclResult HcclCommUnsetMemoryRange(HcclComm comm, void *baseVirPtr);
HCCL_API HcclResult HcclCommActivateCommMemory(HcclComm comm, void *virPtr,
					       size_t size, size_t offset,
					       aclrtDrvMemHandle handle,
					       uint64_t flags);
HCCL_API HcclResult HcclCommDeactivateCommMemory(HcclComm comm,
						 void *virPtr);

/* Primary/backup NIC switch; all ranks call with identical arrays. */
HCCL_API HcclResult HcclCommWorkingDevNicSet(HcclComm comm, uint32_t *ranks,
					     bool *useBackup,
					     uint32_t nRanks);

/*
 * Group calls (experimental upstream). The depth is per thread and nests;
 * the outermost HcclGroupEnd launches the deferred work.
 */
HCCL_API HcclResult HcclGroupStart(void);
HCCL_API HcclResult HcclGroupEnd(void);
HCCL_API HcclResult HcclGroupStatusGet(bool *isGroupEnabled);

/*
 * Symmetric memory windows. Register and Deregister are collective (same
 * size on every rank, flag 1); Get is a local lookup returning the window
 * containing [ptr, ptr + size) and ptr's offset in it.
 */
HCCL_API HcclResult HcclCommSymWinRegister(HcclComm comm, void *addr,
					   uint64_t size,
					   HcclCommSymWindow *winHandle,
					   uint32_t flag);
HCCL_API HcclResult HcclCommSymWinDeregister(HcclCommSymWindow winHandle);
HCCL_API HcclResult HcclCommSymWinGet(HcclComm comm, void *ptr, size_t size,
				      HcclCommSymWindow *winHandle,
				      size_t *offset);

#ifdef __cplusplus
}
#endif

#endif /* HCCL_HCCL_COMM_H */
