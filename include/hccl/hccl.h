/* SPDX-License-Identifier: Apache-2.0 */
#ifndef HCCL_HCCL_H
#define HCCL_HCCL_H

/*
 * Collective and point-to-point operations. Every call validates its
 * arguments, enqueues the operation on stream and returns; completion is
 * observed through the stream (aclrtSynchronizeStream, events), so the
 * buffers must stay valid until then. count == 0 is a successful no-op.
 * Counts and displacements are in elements; the count/displacement arrays
 * are host uint64_t arrays of rankSize entries, read during the call.
 * All ranks issue the operations of a communicator in the same order with
 * matching arguments. Valid C11 and C++11.
 */
#include <stdint.h>

#include <hccl/hccl_types.h>
#include <hccl/hccl_comm.h>
#include <acl/acl.h>

#ifdef __cplusplus
extern "C" {
#endif

/* In place (sendBuf == recvBuf) allowed. */
HCCL_API HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count,
				  HcclDataType dataType, HcclReduceOp op,
				  HcclComm comm, aclrtStream stream);

/* buf: source on root, destination elsewhere. */
HCCL_API HcclResult HcclBroadcast(void *buf, uint64_t count,
				  HcclDataType dataType, uint32_t root,
				  HcclComm comm, aclrtStream stream);

/* Result only in root's recvBuf. */
HCCL_API HcclResult HcclReduce(void *sendBuf, void *recvBuf, uint64_t count,
			       HcclDataType dataType, HcclReduceOp op,
			       uint32_t root, HcclComm comm,
			       aclrtStream stream);

/* recvBuf: sendCount * rankSize elements, rank i's block at i * sendCount. */
HCCL_API HcclResult HcclAllGather(void *sendBuf, void *recvBuf,
				  uint64_t sendCount, HcclDataType dataType,
				  HcclComm comm, aclrtStream stream);

/* Note the order: sendCount precedes recvBuf. */
HCCL_API HcclResult HcclAllGatherV(void *sendBuf, uint64_t sendCount,
				   void *recvBuf, const void *recvCounts,
				   const void *recvDispls,
				   HcclDataType dataType, HcclComm comm,
				   aclrtStream stream);

/* sendBuf: recvCount * rankSize elements; rank i gets reduced block i. */
HCCL_API HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf,
				      uint64_t recvCount,
				      HcclDataType dataType, HcclReduceOp op,
				      HcclComm comm, aclrtStream stream);

HCCL_API HcclResult HcclReduceScatterV(void *sendBuf, const void *sendCounts,
				       const void *sendDispls, void *recvBuf,
				       uint64_t recvCount,
				       HcclDataType dataType, HcclReduceOp op,
				       HcclComm comm, aclrtStream stream);

/* Root's sendBuf split in blocks of recvCount; non-root sendBuf may be NULL. */
HCCL_API HcclResult HcclScatter(void *sendBuf, void *recvBuf,
				uint64_t recvCount, HcclDataType dataType,
				uint32_t root, HcclComm comm,
				aclrtStream stream);

/*
 * recvBuf is written although declared const (vendor prototype). Requires
 * sendCount == recvCount, sendType == recvType, sendBuf != recvBuf.
 */
HCCL_API HcclResult HcclAlltoAll(const void *sendBuf, uint64_t sendCount,
				 HcclDataType sendType, const void *recvBuf,
				 uint64_t recvCount, HcclDataType recvType,
				 HcclComm comm, aclrtStream stream);

HCCL_API HcclResult HcclAlltoAllV(const void *sendBuf, const void *sendCounts,
				  const void *sdispls, HcclDataType sendType,
				  const void *recvBuf, const void *recvCounts,
				  const void *rdispls, HcclDataType recvType,
				  HcclComm comm, aclrtStream stream);

/* sendCountMatrix: row-major uint64_t[rankSize][rankSize], same on all. */
HCCL_API HcclResult HcclAlltoAllVC(const void *sendBuf,
				   const void *sendCountMatrix,
				   HcclDataType sendType, const void *recvBuf,
				   HcclDataType recvType, HcclComm comm,
				   aclrtStream stream);

/*
 * Stream-ordered rendezvous: the stream does not pass a Send until the
 * peer's matching Recv consumed it. Pairs are matched FIFO per peer.
 */
HCCL_API HcclResult HcclSend(void *sendBuf, uint64_t count,
			     HcclDataType dataType, uint32_t destRank,
			     HcclComm comm, aclrtStream stream);
HCCL_API HcclResult HcclRecv(void *recvBuf, uint64_t count,
			     HcclDataType dataType, uint32_t srcRank,
			     HcclComm comm, aclrtStream stream);

/* One stream task; its sends and receives do not block each other. */
HCCL_API HcclResult HcclBatchSendRecv(HcclSendRecvItem *sendRecvInfo,
				      uint32_t itemNum, HcclComm comm,
				      aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* HCCL_HCCL_H */
