/* SPDX-License-Identifier: Apache-2.0 */
#ifndef ACL_ACL_PROF_H
#define ACL_ACL_PROF_H

/*
 * The ACL profiling calls HCCL programs use (libmsprofiler.so). Names,
 * values and prototypes match the vendor header; valid C11 and C++11.
 *
 * Between aclprofStart and aclprofStop every HCCL operation and every
 * runtime task (copies, memsets, event records and waits) that runs on
 * one of the config's devices is recorded with its stream, enqueue, start
 * and end times (and, for HCCL operations, communicator, rank, algorithm,
 * bytes and peers). aclprofStop writes them as one Chrome trace JSON file
 * (Perfetto, chrome://tracing) into the directory given to aclprofInit.
 * What is recorded follows the config's data types: ACL_PROF_HCCL_TRACE
 * or a task-time flag records HCCL operations, a task-time flag or
 * ACL_PROF_RUNTIME_API runtime tasks; aicore metrics have no host meaning
 * and are accepted and ignored.
 */
#include "acl_base.h"

#ifndef MSVP_PROF_API
#if defined(__GNUC__) || defined(__clang__)
#define MSVP_PROF_API __attribute__((visibility("default")))
#else
#define MSVP_PROF_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Data types of aclprofCreateConfig's dataTypeConfig (a bit mask). */
#define ACL_PROF_ACL_API 0x0001ULL
#define ACL_PROF_TASK_TIME 0x0002ULL
#define ACL_PROF_AICORE_METRICS 0x0004ULL
#define ACL_PROF_AICPU 0x0008ULL
#define ACL_PROF_L2CACHE 0x0010ULL
#define ACL_PROF_HCCL_TRACE 0x0020ULL
#define ACL_PROF_TRAINING_TRACE 0x0040ULL
#define ACL_PROF_MSPROFTX 0x0080ULL
#define ACL_PROF_RUNTIME_API 0x0100ULL
#define ACL_PROF_GE_API_L0 0x0200ULL
#define ACL_PROF_TASK_TIME_L0 0x0800ULL
#define ACL_PROF_TASK_MEMORY 0x1000ULL
#define ACL_PROF_TASK_TIME_L2 0x2000ULL
#define ACL_PROF_OP_ATTR 0x4000ULL
#define ACL_PROF_TASK_TIME_L3 0x8000ULL
#define ACL_PROF_GE_API_L1 0x01000000ULL
#define ACL_PROF_API_STATS 0x400000000ULL
#define ACL_PROF_AICORE_SHAPE 0x800000000ULL

#define ACL_PROF_MAX_OP_NAME_LEN 257
#define ACL_PROF_MAX_OP_TYPE_LEN 65

typedef enum {
	ACL_AICORE_ARITHMETIC_UTILIZATION = 0,
	ACL_AICORE_PIPE_UTILIZATION = 1,
	ACL_AICORE_MEMORY_BANDWIDTH = 2,
	ACL_AICORE_L0B_AND_WIDTH = 3,
	ACL_AICORE_RESOURCE_CONFLICT_RATIO = 4,
	ACL_AICORE_MEMORY_UB = 5,
	ACL_AICORE_L2_CACHE = 6,
	ACL_AICORE_PIPE_EXECUTE_UTILIZATION = 7,
	ACL_AICORE_MEMORY_ACCESS = 8,
	ACL_AICORE_NONE = 0xFF
} aclprofAicoreMetrics;

typedef struct aclprofConfig aclprofConfig;		/* opaque */
typedef struct aclprofAicoreEvents aclprofAicoreEvents; /* pass NULL */

/*
 * Set the directory the traces go to (created, with its parents, when a
 * trace is written). length is strlen(profilerResultPath), 1..4096. Call
 * after aclInit; pairs with aclprofFinalize.
 */
MSVP_PROF_API aclError aclprofInit(const char *profilerResultPath,
				   size_t length);
/* Stops what still runs (writing its trace) and ends aclprofInit's state. */
MSVP_PROF_API aclError aclprofFinalize(void);

/*
 * A config for deviceNums devices of deviceIdList (each below the device
 * count, no repeats; deviceNums 0 only with ACL_PROF_MSPROFTX). NULL on a
 * bad argument (logged). aicoreEvents must be NULL.
 */
MSVP_PROF_API aclprofConfig *
aclprofCreateConfig(uint32_t *deviceIdList, uint32_t deviceNums,
		    aclprofAicoreMetrics aicoreMetrics,
		    const aclprofAicoreEvents *aicoreEvents,
		    uint64_t dataTypeConfig);
MSVP_PROF_API aclError
aclprofDestroyConfig(const aclprofConfig *profilerConfig);

/*
 * Start recording the config's devices; a device already recorded by
 * another started config is refused (ACL_ERROR_PROF_ALREADY_RUN).
 */
MSVP_PROF_API aclError aclprofStart(const aclprofConfig *profilerConfig);
/*
 * Stop what aclprofStart(profilerConfig) started (the same config, or one
 * with the same devices) and write its trace. ACL_ERROR_PROFILING_FAILURE
 * when the file cannot be written (logged with the path and the reason).
 */
MSVP_PROF_API aclError aclprofStop(const aclprofConfig *profilerConfig);

#ifdef __cplusplus
}
#endif

#endif /* ACL_ACL_PROF_H */
