/* SPDX-License-Identifier: Apache-2.0 */
#ifndef HCCL_HCCL_TASK_H
#define HCCL_HCCL_TASK_H

/*
 * The task API: the host form of Ascend C's kernel-side Hccl class (spec
 * section 7), for compute threads that overlap their work with
 * communication. An OpenHCCL extension (HCCL has no host C form of it);
 * the calls keep the class's names and argument orders, prefixed HcclTask.
 *
 * A context is bound to one communicator (HcclTaskInit, the InitV2
 * analogue; one context per communicator at a time). Prepare calls
 * describe a task and return its handle (0, 1, ... in prepare order; -1
 * on failure, with a log line saying why); nothing runs yet. Each
 * HcclTaskCommit releases one round of a task; HcclTaskWait blocks until
 * one round finished; HcclTaskQuery counts finished rounds. A session
 * holds at most HCCL_TASK_MAX_HANDLE_ID (63) prepares plus syncs.
 *
 * Execution: a context runs its rounds on a worker thread of its own, in
 * prepare order as they get committed (round k of a task, then round
 * k + 1, ...; a task's rounds all before the next task's, whatever the
 * order of the commits), so every rank issues the communicator's
 * operations in the same order as long as all ranks prepare the same
 * tasks. Different contexts run concurrently, except where
 * HcclTaskInterHcclGroupSync orders them. Every rank of the communicator
 * prepares the same tasks with matching arguments, in the same order.
 * Rounds take their place in the communicator's operation order when
 * they start: other operations issued on it meanwhile (HcclAllReduce on
 * a stream, say) would interleave differently on each rank and fail as a
 * mismatch (HCCL_E_PARA), so leave the communicator to its context while
 * rounds are pending.
 *
 * repeat (1..255) describes `repeat` back-to-back rounds: round i uses
 * sendBuf + i * count and recvBuf + i * count elements, count being the
 * call's count/sendCount/recvCount/dataCount (AlltoAllV: every
 * sdispls[k] += sendCounts[k] and rdispls[k] += recvCounts[k] per round).
 * strideCount > 0 places rank i's block at element i * strideCount of
 * the round's buffer instead of i * count (AllGather's output,
 * ReduceScatter's input, both sides of AlltoAll): with strideCount =
 * repeat * count, round i fills column i of a rank-major matrix. A stride
 * below the count (blocks overlapping) is refused. With repeat > 1 and
 * no stride, the rounds of AllGather, ReduceScatter and AlltoAll overlap
 * in memory, as in HCCL (use strideCount).
 *
 * Buffers must stay valid until their rounds finished; the AlltoAllV
 * arrays (rankSize uint64_t each) are copied during the call. Calls on
 * one context may come from several threads; the order rules apply to
 * the calls' combined sequence. Waits block at most HCCL_EXEC_TIMEOUT
 * without any round of the context finishing (then HCCL_E_TIMEOUT, and
 * the wait may be repeated). Valid C11 and C++11.
 */
#include <stdbool.h>
#include <stdint.h>

#include <hccl/hccl_types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A task context (opaque). */
typedef void *HcclTaskCtx;
/* A task's handle: >= 0, or HCCL_TASK_INVALID_HANDLE. */
typedef int8_t HcclHandle;

#define HCCL_TASK_INVALID_HANDLE ((HcclHandle)-1)
/* Prepares plus syncs per session (HCCL's HCCL_MAX_HANDLE_ID). */
#define HCCL_TASK_MAX_HANDLE_ID 63

/*
 * A new context bound to comm (the Hccl object and InitV2). HCCL_E_AGAIN
 * when comm already has a context. A communicator with a live context
 * cannot be destroyed (HcclCommDestroy answers HCCL_E_AGAIN).
 */
HCCL_API HcclResult HcclTaskInit(HcclComm comm, HcclTaskCtx *ctx);

/*
 * SetCcTilingV2: the algorithm configuration of the prepares that follow,
 * in HCCL_ALGO's grammar ("level0:ring",
 * "AllReduce=level0:ring/AlltoAll=level0:pairwise"); NULL or "" returns
 * to the communicator's. At most 8 distinct strings per context.
 */
HCCL_API HcclResult HcclTaskSetCcTiling(HcclTaskCtx ctx, const char *algConfig);

/*
 * Prepares. commit = true also commits the first round (the class's
 * commit template argument). In place (sendBuf == recvBuf) only for
 * AllReduce. Kernel-side limits (data types, ops) are not imposed: every
 * type and op HcclAllReduce etc. take is accepted.
 */
HCCL_API HcclHandle HcclTaskAllReduce(HcclTaskCtx ctx, void *sendBuf,
				      void *recvBuf, uint64_t count,
				      HcclDataType dataType, HcclReduceOp op,
				      uint8_t repeat, bool commit);
HCCL_API HcclHandle HcclTaskAllGather(HcclTaskCtx ctx, void *sendBuf,
				      void *recvBuf, uint64_t sendCount,
				      HcclDataType dataType,
				      uint64_t strideCount, uint8_t repeat,
				      bool commit);
HCCL_API HcclHandle HcclTaskReduceScatter(HcclTaskCtx ctx, void *sendBuf,
					  void *recvBuf, uint64_t recvCount,
					  HcclDataType dataType,
					  HcclReduceOp op, uint64_t strideCount,
					  uint8_t repeat, bool commit);
HCCL_API HcclHandle HcclTaskAlltoAll(HcclTaskCtx ctx, void *sendBuf,
				     void *recvBuf, uint64_t dataCount,
				     HcclDataType dataType,
				     uint64_t strideCount, uint8_t repeat,
				     bool commit);
HCCL_API HcclHandle
HcclTaskAlltoAllV(HcclTaskCtx ctx, void *sendBuf, const void *sendCounts,
		  const void *sdispls, HcclDataType sendType, void *recvBuf,
		  const void *recvCounts, const void *rdispls,
		  HcclDataType recvType, uint8_t repeat, bool commit);

/*
 * Release one round of handleId. HCCL_E_PARA: unknown handle, more
 * commits than repeat, or after Finalize (nothing changes).
 */
HCCL_API HcclResult HcclTaskCommit(HcclTaskCtx ctx, HcclHandle handleId);

/*
 * Block until the next round of handleId finished; that round's result
 * (HCCL_E_REMOTE or HCCL_E_TIMEOUT when a peer failed during it, ...).
 * Waits follow prepare order, repeat times per task: HCCL_E_PARA, with
 * nothing changed, for an unknown handle, a wait out of that order, a
 * round not committed yet, or more waits than rounds. A round discarded
 * by a Finalize without sync: HCCL_E_INTERNAL.
 */
HCCL_API HcclResult HcclTaskWait(HcclTaskCtx ctx, HcclHandle handleId);

/*
 * Non-blocking: how many rounds of handleId finished successfully (0 to
 * repeat); -1 for an unknown handle or a task one of whose rounds failed
 * or was discarded (HcclTaskWait then gives the error).
 */
HCCL_API int32_t HcclTaskQuery(HcclTaskCtx ctx, HcclHandle handleId);

/*
 * InterHcclGroupSync: every task prepared on ctx after this call starts
 * only once task srcHandleId of srcCtx (another context, usually of
 * another communicator) finished all its rounds. Takes a slot of the
 * 63. If that task fails or is discarded, the later tasks of ctx fail
 * without running (their waits return the error). HCCL_E_PARA: srcCtx is
 * ctx, finalized or destroyed; an unknown srcHandleId; ctx finalized or
 * full.
 */
HCCL_API HcclResult HcclTaskInterHcclGroupSync(HcclTaskCtx ctx,
					       HcclTaskCtx srcCtx,
					       HcclHandle srcHandleId);

/*
 * End the session: later prepares, syncs and commits are refused;
 * waits and queries still answer. sync = true waits for every round
 * and returns the first failure among them; it is refused (HCCL_E_PARA,
 * nothing changed) while a task has rounds not committed. sync = false
 * returns at once: committed rounds still run, rounds never committed
 * are discarded (a warning names them). The context stays allocated
 * until HcclTaskDestroy; to continue, create a new one.
 */
HCCL_API HcclResult HcclTaskFinalize(HcclTaskCtx ctx, bool sync);

/*
 * Free ctx (any time): rounds that have not started are discarded, with
 * a warning unless the session ended with nothing pending; started ones
 * are waited for. Contexts depending on its unfinished tasks see them
 * fail. The handle is dead afterwards.
 */
HCCL_API HcclResult HcclTaskDestroy(HcclTaskCtx ctx);

/*
 * OpenHCCL extension: when round `round` of handleId started and ended on
 * this rank (CLOCK_MONOTONIC nanoseconds; 0 not yet, or never for a
 * round that did not run), for tracing overlap.
 */
HCCL_API HcclResult HcclTaskGetRoundTimes(HcclTaskCtx ctx, HcclHandle handleId,
					  uint32_t round, uint64_t *startNs,
					  uint64_t *endNs);

#ifdef __cplusplus
}
#endif

#endif /* HCCL_HCCL_TASK_H */
