/* SPDX-License-Identifier: Apache-2.0 */
#ifndef HCCL_HCCL_TYPES_H
#define HCCL_HCCL_TYPES_H

/*
 * HCCL data types: result codes, handles, datatypes, reduction ops, the
 * versioned communicator config and the batch send/recv item. Names,
 * values and layouts match the vendor header (config version 11); valid
 * C11 and C++11.
 *
 * Constants: C++ sees the vendor's typed "const uint32_t NAME = value;";
 * C sees #defines of the same names and values (unsigned ones with a U or
 * ULL suffix), so that they are integer constant expressions usable as
 * array bounds, in case labels and in #if.
 */
#include <stddef.h>
#include <stdint.h>

#include "hccl_version.h"

/* Marks every HCCL function as exported from the -fvisibility=hidden build. */
#ifndef HCCL_API
#if defined(__GNUC__) || defined(__clang__)
#define HCCL_API __attribute__((visibility("default")))
#else
#define HCCL_API
#endif
#endif

#ifdef __cplusplus
const uint32_t HCCL_ROOT_INFO_BYTES = 4108;
const uint32_t COMM_NAME_MAX_LENGTH = 128;
const uint32_t BUFFER_NAME_MAX_LENGTH = 128;
const uint32_t UDI_MAX_LENGTH = 128;
const uint32_t HCCL_COMM_ALGO_MAX_LENGTH = 1600;
const uint32_t HCCL_COMM_RETRY_ENABLE_MAX_LENGTH = 50;
const uint32_t HCCL_COMM_RETRY_PARAMS_MAX_LENGTH = 128;
const uint32_t HCCL_COMM_CONFIG_INFO_BYTES = 24;
const uint32_t HCCL_COMM_CONFIG_MAGIC_WORD = 0xf0f0f0f0;
const uint32_t HCCL_COMM_CONFIG_VERSION = 11;
const uint32_t HCCL_COMM_DEFAULT_BUFFSIZE = 200; /* MB */
const uint32_t HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET = 0xffffffff;
const uint32_t HCCL_COMM_DEFAULT_DETERMINISTIC = 0;
const uint32_t HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET = 0xffffffff;
const uint32_t HCCL_COMM_DEFAULT_OP_EXPANSION_MODE = 0;
const uint32_t HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET = 0xffffffff;
const uint32_t HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET = 0xffffffff;
const int32_t HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET = -1; /* 0xffffffff */
const uint32_t HCCL_COMM_QOS_CONFIG_NOT_SET = 0xffffffff;
const uint32_t HCCL_COMM_HCCL_QOS_CONFIG_NOT_SET = 0xffffffff;
const uint32_t HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET = 0xffffffff;
const uint64_t HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE = 16; /* GB */
#else
#define HCCL_ROOT_INFO_BYTES 4108U
#define COMM_NAME_MAX_LENGTH 128U
#define BUFFER_NAME_MAX_LENGTH 128U
#define UDI_MAX_LENGTH 128U
#define HCCL_COMM_ALGO_MAX_LENGTH 1600U
#define HCCL_COMM_RETRY_ENABLE_MAX_LENGTH 50U
#define HCCL_COMM_RETRY_PARAMS_MAX_LENGTH 128U
#define HCCL_COMM_CONFIG_INFO_BYTES 24U
#define HCCL_COMM_CONFIG_MAGIC_WORD 0xf0f0f0f0U
#define HCCL_COMM_CONFIG_VERSION 11U
#define HCCL_COMM_DEFAULT_BUFFSIZE 200U /* MB */
#define HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET 0xffffffffU
#define HCCL_COMM_DEFAULT_DETERMINISTIC 0U
#define HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET 0xffffffffU
#define HCCL_COMM_DEFAULT_OP_EXPANSION_MODE 0U
#define HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET 0xffffffffU
#define HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET 0xffffffffU
#define HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET (-1) /* int32_t 0xffffffff */
#define HCCL_COMM_QOS_CONFIG_NOT_SET 0xffffffffU
#define HCCL_COMM_HCCL_QOS_CONFIG_NOT_SET 0xffffffffU
#define HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET 0xffffffffU
#define HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE 16ULL /* GB */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * HCCL_E_RESERVED is not ABI-stable (it grew with new codes); never store
 * or compare against it.
 */
typedef enum {
	HCCL_SUCCESS = 0,
	HCCL_E_PARA = 1,             /* bad parameter */
	HCCL_E_PTR = 2,              /* NULL pointer */
	HCCL_E_MEMORY = 3,
	HCCL_E_INTERNAL = 4,
	HCCL_E_NOT_SUPPORT = 5,
	HCCL_E_NOT_FOUND = 6,
	HCCL_E_UNAVAIL = 7,
	HCCL_E_SYSCALL = 8,
	HCCL_E_TIMEOUT = 9,
	HCCL_E_OPEN_FILE_FAILURE = 10,
	HCCL_E_TCP_CONNECT = 11,
	HCCL_E_ROCE_CONNECT = 12,
	HCCL_E_TCP_TRANSFER = 13,
	HCCL_E_ROCE_TRANSFER = 14,
	HCCL_E_RUNTIME = 15,
	HCCL_E_DRV = 16,
	HCCL_E_PROFILING = 17,
	HCCL_E_CCE = 18,
	HCCL_E_NETWORK = 19,
	HCCL_E_AGAIN = 20,
	HCCL_E_REMOTE = 21,          /* error completion: link or peer failed */
	HCCL_E_SUSPENDING = 22,
	HCCL_E_OPRETRY_FAIL = 23,
	HCCL_E_OOM = 24,
	HCCL_E_IN_STATUS = 1041,
	HCCL_E_RESERVED              /* 1042 */
} HcclResult;

typedef void *HcclComm;
typedef void *HcclConn;
typedef void *HcclCommSymWindow;

typedef enum {
	HCCL_REDUCE_SUM = 0,
	HCCL_REDUCE_PROD = 1,
	HCCL_REDUCE_MAX = 2,
	HCCL_REDUCE_MIN = 3,
	HCCL_REDUCE_RESERVED = 255
} HcclReduceOp;

/* 13 is an intentional gap. */
typedef enum {
	HCCL_DATA_TYPE_INT8 = 0,
	HCCL_DATA_TYPE_INT16 = 1,
	HCCL_DATA_TYPE_INT32 = 2,
	HCCL_DATA_TYPE_FP16 = 3,
	HCCL_DATA_TYPE_FP32 = 4,
	HCCL_DATA_TYPE_INT64 = 5,
	HCCL_DATA_TYPE_UINT64 = 6,
	HCCL_DATA_TYPE_UINT8 = 7,
	HCCL_DATA_TYPE_UINT16 = 8,
	HCCL_DATA_TYPE_UINT32 = 9,
	HCCL_DATA_TYPE_FP64 = 10,
	HCCL_DATA_TYPE_BFP16 = 11,
	HCCL_DATA_TYPE_INT128 = 12,
	HCCL_DATA_TYPE_HIF8 = 14,
	HCCL_DATA_TYPE_FP8E4M3 = 15,
	HCCL_DATA_TYPE_FP8E5M2 = 16,
	HCCL_DATA_TYPE_FP8E8M0 = 17,
	HCCL_DATA_TYPE_RESERVED = 255
} HcclDataType;

/* Process-global knobs of HcclSetConfig / HcclGetConfig. */
typedef enum {
	HCCL_DETERMINISTIC = 0, /* 0 off, 1 deterministic, 2 strict order */
	HCCL_CONFIG_RESERVED
} HcclConfig;

typedef union HcclConfigValue {
	int32_t value;
} HcclConfigValue;

/* Opaque, position-independent bootstrap blob (4108 bytes). */
typedef struct HcclRootInfoDef {
	char internal[HCCL_ROOT_INFO_BYTES];
} HcclRootInfo;

/*
 * Versioned, append-only communicator config (version 11, 2248 bytes).
 * reserved[] holds the ABI header {size_t size; uint32_t magicWord;
 * uint32_t version; uint64_t reserved;} written by HcclCommConfigInit
 * (hccl_comm.h); always call that before filling in fields. Fields left
 * at their "not set" value fall back to the environment, then to the
 * built-in default.
 */
typedef struct HcclCommConfigDef {
	char reserved[HCCL_COMM_CONFIG_INFO_BYTES];
	uint32_t hcclBufferSize;                 /* MB */
	uint32_t hcclDeterministic;
	char hcclCommName[COMM_NAME_MAX_LENGTH];
	char hcclUdi[UDI_MAX_LENGTH];
	uint32_t hcclOpExpansionMode;
	uint32_t hcclRdmaTrafficClass;
	uint32_t hcclRdmaServiceLevel;
	uint32_t hcclWorldRankID;
	uint64_t hcclJobID;
	uint8_t aclGraphZeroCopyEnable;
	int32_t hcclExecTimeOut;                 /* seconds */
	char hcclAlgo[HCCL_COMM_ALGO_MAX_LENGTH];
	char hcclRetryEnable[HCCL_COMM_RETRY_ENABLE_MAX_LENGTH];
	char hcclRetryParams[HCCL_COMM_RETRY_PARAMS_MAX_LENGTH];
	char hcclBufferName[BUFFER_NAME_MAX_LENGTH];
	uint32_t hcclQos;
	uint64_t hcclSymWinMaxMemSizePerRank;    /* GB */
	uint32_t hcclChannelSqDepth;
} HcclCommConfig;

/* HcclGetCommConfigCapability() returns N: c is supported iff c < N. */
typedef enum {
	HCCL_COMM_CONFIG_BUFFER_SIZE = 0,
	HCCL_COMM_CONFIG_DETERMINISTIC = 1,
	HCCL_COMM_CONFIG_COMM_NAME = 2,
	HCCL_COMM_CONFIG_OP_EXPANSION_MODE = 3,
	HCCL_COMM_CONFIG_SUPPORT_INIT_BY_ENV = 4,
	HCCL_COMM_CONFIG_WORLD_RANKID = 5,
	HCCL_COMM_CONFIG_JOBID = 6,
	HCCL_COMM_CONFIG_ACLGRAPH_ZEROCOPY_ENABLE = 7,
	HCCL_COMM_CONFIG_EXEC_TIMEOUT = 8,
	HCCL_COMM_CONFIG_ALGO = 9,
	HCCL_COMM_CONFIG_RETRY = 10,
	HCCL_COMM_CONFIG_BUFFER_NAME = 11,
	HCCL_COMM_CONFIG_RESERVED            /* 12 */
} HcclCommConfigCapability;

typedef enum {
	HCCL_SEND = 0,
	HCCL_RECV = 1,
	HCCL_SEND_RECV_RESERVED
} HcclSendRecvType;

/* One entry of HcclBatchSendRecv (32 bytes). */
typedef struct HcclSendRecvItemDef {
	HcclSendRecvType sendRecvType;
	void *buf;
	uint64_t count;          /* elements */
	HcclDataType dataType;
	uint32_t remoteRank;
} HcclSendRecvItem;

typedef enum {
	HCCL_CMD_INVALID = 0,
	HCCL_CMD_BROADCAST = 1,
	HCCL_CMD_ALLREDUCE,
	HCCL_CMD_REDUCE,
	HCCL_CMD_SEND,
	HCCL_CMD_RECEIVE,
	HCCL_CMD_ALLGATHER,
	HCCL_CMD_REDUCE_SCATTER,
	HCCL_CMD_ALLTOALLV,
	HCCL_CMD_ALLTOALLVC,
	HCCL_CMD_ALLTOALL,
	HCCL_CMD_GATHER,
	HCCL_CMD_SCATTER,
	HCCL_CMD_BATCH_SEND_RECV,
	HCCL_CMD_BATCH_PUT,
	HCCL_CMD_BATCH_GET,
	HCCL_CMD_ALLGATHER_V,
	HCCL_CMD_REDUCE_SCATTER_V,
	HCCL_CMD_BATCH_WRITE,
	HCCL_CMD_HALF_ALLTOALLV = 20,
	HCCL_CMD_ALL,
	HCCL_CMD_FINALIZE = 100,
	HCCL_CMD_INTER_GROUP_SYNC,
	HCCL_CMD_INIT,
	HCCL_CMD_BARRIER,
	HCCL_CMD_MAX
} HcclCMDType;

typedef enum {
	HCCL_COMM_STATUS_READY = 0,
	HCCL_COMM_STATUS_SUSPENDING = 1,
	HCCL_COMM_STATUS_INVALID = 254,
	HCCL_COMM_STATUS_RESERVED = 255
} HcclCommStatus;

typedef enum {
	HCCL_COMM_STATE_PHASE_INVALID = -1,
	HCCL_COMM_STATE_PHASE_DESTROY_PRE = 0,
	HCCL_COMM_STATE_PHASE_DESTROY_POST = 1,
	HCCL_COMM_STATE_PHASE_RESUME_PRE = 2,
	HCCL_COMM_STATE_PHASE_RESUME_POST = 3
} HcclCommStatePhase;

/* Layout checks (LP64), C11 and C++11 only; no effect on older dialects. */
#if defined(__LP64__) || defined(_LP64)
#if defined(__cplusplus) && __cplusplus >= 201103L
#define HCCL_LAYOUT_ASSERT_(c, m) static_assert(c, m)
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && \
	__STDC_VERSION__ >= 201112L
#define HCCL_LAYOUT_ASSERT_(c, m) _Static_assert(c, m)
#endif
#ifdef HCCL_LAYOUT_ASSERT_
HCCL_LAYOUT_ASSERT_(sizeof(HcclRootInfo) == 4108, "HcclRootInfo size");
HCCL_LAYOUT_ASSERT_(sizeof(HcclCommConfig) == 2248, "HcclCommConfig size");
HCCL_LAYOUT_ASSERT_(offsetof(HcclCommConfig, hcclBufferSize) == 24,
		    "HcclCommConfig.hcclBufferSize");
HCCL_LAYOUT_ASSERT_(offsetof(HcclCommConfig, hcclJobID) == 304,
		    "HcclCommConfig.hcclJobID");
HCCL_LAYOUT_ASSERT_(offsetof(HcclCommConfig, hcclExecTimeOut) == 316,
		    "HcclCommConfig.hcclExecTimeOut");
HCCL_LAYOUT_ASSERT_(offsetof(HcclCommConfig, hcclBufferName) == 2098,
		    "HcclCommConfig.hcclBufferName");
HCCL_LAYOUT_ASSERT_(offsetof(HcclCommConfig, hcclQos) == 2228,
		    "HcclCommConfig.hcclQos");
HCCL_LAYOUT_ASSERT_(offsetof(HcclCommConfig, hcclSymWinMaxMemSizePerRank) ==
		    2232, "HcclCommConfig.hcclSymWinMaxMemSizePerRank");
HCCL_LAYOUT_ASSERT_(offsetof(HcclCommConfig, hcclChannelSqDepth) == 2240,
		    "HcclCommConfig.hcclChannelSqDepth");
HCCL_LAYOUT_ASSERT_(sizeof(HcclSendRecvItem) == 32, "HcclSendRecvItem size");
HCCL_LAYOUT_ASSERT_(offsetof(HcclSendRecvItem, dataType) == 24,
		    "HcclSendRecvItem.dataType");
HCCL_LAYOUT_ASSERT_(offsetof(HcclSendRecvItem, remoteRank) == 28,
		    "HcclSendRecvItem.remoteRank");
#undef HCCL_LAYOUT_ASSERT_
#endif
#endif

#ifdef __cplusplus
}
#endif

#endif /* HCCL_HCCL_TYPES_H */
