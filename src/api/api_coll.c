/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "algo/dtype.h"
#include "algo/patterns/pairwise.h"
#include "api/api.h"
#include "api/api_comm_int.h"

/*
 * Collective and point-to-point entry points. Each validates in HCCL's
 * order (count 0 first, then pointers, then values), logs one line naming
 * the argument, and hands a descriptor to the communicator, which runs it
 * now (NULL stream) or enqueues it on the stream.
 */
#define SYS_MAX_COUNT OHC_API_MAX_COUNT

enum { NEED_REDUCE = 1 };

ohc_status_t ohc_api_check_values(const char *fn, uint64_t count, int dtype,
				  int redop, bool need_reduce)
{
	if (count > SYS_MAX_COUNT) {
		OHC_ERROR(OHC_SS_API, "%s: count %llu exceeds the maximum %llu",
			  fn, (unsigned long long)count, SYS_MAX_COUNT);
		return OHC_ERR_INVALID;
	}
	if (!ohc_dtype_valid(dtype)) {
		OHC_ERROR(OHC_SS_API, "%s: dataType %d is not a valid "
				      "HcclDataType",
			  fn, dtype);
		return OHC_ERR_UNSUPPORTED;
	}
	if (dtype == OHC_INT128) {
		OHC_ERROR(OHC_SS_API, "%s: dataType int128 is not supported",
			  fn);
		return OHC_ERR_UNSUPPORTED;
	}
	if (need_reduce) {
		if (redop < 0 || redop > 3) {
			OHC_ERROR(OHC_SS_API,
				  "%s: op %d is not a valid HcclReduceOp", fn,
				  redop);
			return OHC_ERR_INVALID;
		}
		if (!ohc_reduce_supported(dtype, redop)) {
			OHC_ERROR(OHC_SS_API,
				  "%s: reduce op %s is not supported for %s", fn,
				  ohc_redop_name(redop), ohc_dtype_name(dtype));
			return OHC_ERR_UNSUPPORTED;
		}
	}
	return OHC_OK;
}

static HcclResult check_common(const char *fn, HcclComm comm, void *stream,
			       uint64_t count, int dtype, int redop, int flags,
			       struct ohc_comm **c_p)
{
	HcclResult r = ohc_api_live_comm(fn, comm, c_p);

	if (r != HCCL_SUCCESS)
		return r;
	if (stream && !ohc_rt_stream_valid(stream)) {
		OHC_ERROR(OHC_SS_API, "%s: stream %p is not a live stream", fn,
			  stream);
		return HCCL_E_PARA;
	}
	return ohc_status_to_hccl(ohc_api_check_values(fn, count, dtype, redop,
						       flags & NEED_REDUCE));
}

static HcclResult submit(struct ohc_comm *c, struct ohc_coll_args *a,
			 void *stream)
{
	a->esize = ohc_dtype_size(a->dtype);
	return ohc_status_to_hccl(ohc_comm_submit(c, a, stream));
}

/* Shared tail of the simple collectives: checks, then submit. */
static HcclResult coll(const char *fn, struct ohc_coll_args *a, HcclComm comm,
		       aclrtStream stream, int flags)
{
	struct ohc_comm *c;
	HcclResult r;

	r = check_common(fn, comm, stream, a->count, a->dtype, a->redop, flags,
			 &c);
	if (r != HCCL_SUCCESS)
		return r;
	if ((a->op == OHC_COLL_BROADCAST || a->op == OHC_COLL_REDUCE ||
	     a->op == OHC_COLL_SCATTER) &&
	    a->root >= c->nranks) {
		OHC_ERROR(OHC_SS_API, "%s: root %u is not in [0, %u)", fn,
			  a->root, c->nranks);
		return HCCL_E_PARA;
	}
	if (a->op == OHC_COLL_SCATTER && c->rank == a->root && !a->sbuf) {
		OHC_ERROR(OHC_SS_API, "%s: sendBuf is NULL on the root", fn);
		return HCCL_E_PTR;
	}
	return submit(c, a, stream);
}

/* The arguments of the collectives but AlltoAll(V) (redop and root 0
 * where the op has none). */
static struct ohc_coll_args coll_args(enum ohc_coll_op op, void *sendBuf,
				      void *recvBuf, uint64_t count,
				      HcclDataType dataType, int redop,
				      uint32_t root)
{
	struct ohc_coll_args a = {.op = op,
				  .sbuf = sendBuf,
				  .rbuf = recvBuf,
				  .count = count,
				  .dtype = (int)dataType,
				  .redop = redop,
				  .root = root};

	return a;
}

/*
 * AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, Scatter: count 0
 * first, then the buffers (Broadcast's one buffer is "buf"; Scatter's
 * sendBuf matters on the root only, coll checks it), then coll.
 */
static HcclResult coll_block(const char *fn, enum ohc_coll_op op, void *sendBuf,
			     void *recvBuf, uint64_t count,
			     HcclDataType dataType, int redop, uint32_t root,
			     HcclComm comm, aclrtStream stream, int flags)
{
	struct ohc_coll_args a =
		coll_args(op, sendBuf, recvBuf, count, dataType, redop, root);
	const char *null_buf;

	if (count == 0) {
		OHC_WARN(OHC_SS_API, "%s: count is 0, nothing to do", fn);
		return HCCL_SUCCESS;
	}
	if (op == OHC_COLL_BROADCAST)
		null_buf = !recvBuf ? "buf" : NULL;
	else
		null_buf = op != OHC_COLL_SCATTER && !sendBuf ? "sendBuf"
			   : !recvBuf			      ? "recvBuf"
							      : NULL;
	if (null_buf) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL", fn, null_buf);
		return HCCL_E_PTR;
	}
	return coll(fn, &a, comm, stream, flags);
}

OHC_API HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count,
				 HcclDataType dataType, HcclReduceOp op,
				 HcclComm comm, aclrtStream stream)
{
	OHC_API_ENTRY(comm,
		      "HcclAllReduce(sendBuf=%p, recvBuf=%p, count=%llu, "
		      "dataType=%s, op=%s, comm=%p, stream=%p)",
		      sendBuf, recvBuf, (unsigned long long)count,
		      ohc_dtype_name((int)dataType), ohc_redop_name((int)op),
		      comm, stream);
	return coll_block(__func__, OHC_COLL_ALLREDUCE, sendBuf, recvBuf, count,
			  dataType, (int)op, 0, comm, stream, NEED_REDUCE);
}

static HcclResult p2p(const char *fn, enum ohc_coll_op op, void *buf,
		      uint64_t count, HcclDataType dataType, uint32_t peer,
		      HcclComm comm, aclrtStream stream)
{
	struct ohc_coll_args a = {.op = op};
	bool send = op == OHC_COLL_SEND;
	struct ohc_comm *c;
	HcclResult r;

	OHC_API_ENTRY(comm,
		      "%s(%s=%p, count=%llu, dataType=%s, %s=%u, comm=%p, "
		      "stream=%p)",
		      fn, send ? "sendBuf" : "recvBuf", buf,
		      (unsigned long long)count, ohc_dtype_name((int)dataType),
		      send ? "destRank" : "srcRank", peer, comm, stream);
	if (count == 0) {
		OHC_WARN(OHC_SS_API, "%s: count is 0, nothing to do", fn);
		return HCCL_SUCCESS;
	}
	if (!buf) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL", fn,
			  send ? "sendBuf" : "recvBuf");
		return HCCL_E_PTR;
	}
	r = check_common(fn, comm, stream, count, (int)dataType, 0, 0, &c);
	if (r != HCCL_SUCCESS)
		return r;
	if (peer >= c->nranks) {
		OHC_ERROR(OHC_SS_API, "%s: %s %u is not in [0, %u)", fn,
			  send ? "destRank" : "srcRank", peer, c->nranks);
		return HCCL_E_PARA;
	}
	if (peer == c->rank) {
		OHC_ERROR(OHC_SS_API, "%s: rank %u cannot %s itself", fn,
			  c->rank, send ? "send to" : "receive from");
		return HCCL_E_NOT_SUPPORT;
	}
	a.peer = peer;
	a.count = count;
	a.dtype = (int)dataType;
	if (send)
		a.sbuf = buf;
	else
		a.rbuf = buf;
	a.esize = ohc_dtype_size(a.dtype);
	return ohc_status_to_hccl(ohc_comm_p2p(c, &a, stream));
}

OHC_API HcclResult HcclSend(void *sendBuf, uint64_t count,
			    HcclDataType dataType, uint32_t destRank,
			    HcclComm comm, aclrtStream stream)
{
	return p2p(__func__, OHC_COLL_SEND, sendBuf, count, dataType, destRank,
		   comm, stream);
}

OHC_API HcclResult HcclRecv(void *recvBuf, uint64_t count,
			    HcclDataType dataType, uint32_t srcRank,
			    HcclComm comm, aclrtStream stream)
{
	return p2p(__func__, OHC_COLL_RECV, recvBuf, count, dataType, srcRank,
		   comm, stream);
}

OHC_API HcclResult HcclBarrier(HcclComm comm, aclrtStream stream)
{
	struct ohc_coll_args a = {.op = OHC_COLL_BARRIER};
	struct ohc_comm *c;
	HcclResult r;

	OHC_API_ENTRY(comm, "HcclBarrier(comm=%p, stream=%p)", comm, stream);
	r = check_common(__func__, comm, stream, 0, OHC_INT8, 0, 0, &c);
	if (r != HCCL_SUCCESS)
		return r;
	a.dtype = OHC_INT8;
	return submit(c, &a, stream);
}

OHC_API HcclResult HcclBroadcast(void *buf, uint64_t count,
				 HcclDataType dataType, uint32_t root,
				 HcclComm comm, aclrtStream stream)
{
	OHC_API_ENTRY(comm,
		      "HcclBroadcast(buf=%p, count=%llu, dataType=%s, root=%u, "
		      "comm=%p, stream=%p)",
		      buf, (unsigned long long)count,
		      ohc_dtype_name((int)dataType), root, comm, stream);
	return coll_block(__func__, OHC_COLL_BROADCAST, buf, buf, count,
			  dataType, 0, root, comm, stream, 0);
}

OHC_API HcclResult HcclReduce(void *sendBuf, void *recvBuf, uint64_t count,
			      HcclDataType dataType, HcclReduceOp op,
			      uint32_t root, HcclComm comm, aclrtStream stream)
{
	OHC_API_ENTRY(comm,
		      "HcclReduce(sendBuf=%p, recvBuf=%p, count=%llu, "
		      "dataType=%s, op=%s, root=%u, comm=%p, stream=%p)",
		      sendBuf, recvBuf, (unsigned long long)count,
		      ohc_dtype_name((int)dataType), ohc_redop_name((int)op),
		      root, comm, stream);
	return coll_block(__func__, OHC_COLL_REDUCE, sendBuf, recvBuf, count,
			  dataType, (int)op, root, comm, stream, NEED_REDUCE);
}

OHC_API HcclResult HcclAllGather(void *sendBuf, void *recvBuf,
				 uint64_t sendCount, HcclDataType dataType,
				 HcclComm comm, aclrtStream stream)
{
	OHC_API_ENTRY(comm,
		      "HcclAllGather(sendBuf=%p, recvBuf=%p, sendCount=%llu, "
		      "dataType=%s, comm=%p, stream=%p)",
		      sendBuf, recvBuf, (unsigned long long)sendCount,
		      ohc_dtype_name((int)dataType), comm, stream);
	return coll_block(__func__, OHC_COLL_ALLGATHER, sendBuf, recvBuf,
			  sendCount, dataType, 0, 0, comm, stream, 0);
}

OHC_API HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf,
				     uint64_t recvCount, HcclDataType dataType,
				     HcclReduceOp op, HcclComm comm,
				     aclrtStream stream)
{
	OHC_API_ENTRY(comm,
		      "HcclReduceScatter(sendBuf=%p, recvBuf=%p, "
		      "recvCount=%llu, dataType=%s, op=%s, comm=%p, stream=%p)",
		      sendBuf, recvBuf, (unsigned long long)recvCount,
		      ohc_dtype_name((int)dataType), ohc_redop_name((int)op),
		      comm, stream);
	return coll_block(__func__, OHC_COLL_REDUCE_SCATTER, sendBuf, recvBuf,
			  recvCount, dataType, (int)op, 0, comm, stream,
			  NEED_REDUCE);
}

OHC_API HcclResult HcclScatter(void *sendBuf, void *recvBuf, uint64_t recvCount,
			       HcclDataType dataType, uint32_t root,
			       HcclComm comm, aclrtStream stream)
{
	OHC_API_ENTRY(comm,
		      "HcclScatter(sendBuf=%p, recvBuf=%p, recvCount=%llu, "
		      "dataType=%s, root=%u, comm=%p, stream=%p)",
		      sendBuf, recvBuf, (unsigned long long)recvCount,
		      ohc_dtype_name((int)dataType), root, comm, stream);
	return coll_block(__func__, OHC_COLL_SCATTER, sendBuf, recvBuf,
			  recvCount, dataType, 0, root, comm, stream, 0);
}

ohc_status_t ohc_api_check_counts(const char *fn, const char *what,
				  const uint64_t *counts, uint32_t n,
				  uint64_t *sum_p)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (counts[i] > SYS_MAX_COUNT) {
			OHC_ERROR(OHC_SS_API,
				  "%s: %s[%u] = %llu exceeds the maximum %llu",
				  fn, what, i, (unsigned long long)counts[i],
				  SYS_MAX_COUNT);
			return OHC_ERR_INVALID;
		}
		sum += counts[i];
	}
	*sum_p = sum;
	return OHC_OK;
}

ohc_status_t ohc_api_check_displs(const char *fn, const char *what,
				  const uint64_t *counts,
				  const uint64_t *displs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (counts[i] && displs[i] > SYS_MAX_COUNT) {
			OHC_ERROR(OHC_SS_API,
				  "%s: %s[%u] = %llu exceeds the maximum %llu",
				  fn, what, i, (unsigned long long)displs[i],
				  SYS_MAX_COUNT);
			return OHC_ERR_INVALID;
		}
	}
	return OHC_OK;
}

/*
 * Shared start of the V collectives whose count array is the same on every
 * rank: live comm, non-NULL arrays, counts in range. *total_p is the sum;
 * when it is 0 the call is a no-op on every rank alike.
 */
static HcclResult v_prologue(const char *fn, HcclComm comm, const char *what,
			     const char *dwhat, const void *counts,
			     const void *displs, struct ohc_comm **c_p,
			     uint64_t *total_p)
{
	HcclResult r = ohc_api_live_comm(fn, comm, c_p);
	uint32_t n;

	if (r != HCCL_SUCCESS)
		return r;
	if (!counts || !displs) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL", fn,
			  !counts ? what : dwhat);
		return HCCL_E_PTR;
	}
	n = (*c_p)->nranks;
	if (ohc_api_check_counts(fn, what, counts, n, total_p) < 0 ||
	    ohc_api_check_displs(fn, dwhat, counts, displs, n) < 0)
		return HCCL_E_PARA;
	if (*total_p == 0)
		OHC_WARN(OHC_SS_API, "%s: all counts are 0, nothing to do", fn);
	return HCCL_SUCCESS;
}

/*
 * AllGatherV and ReduceScatterV after the entry line: the count array
 * (receive side for AllGatherV, send side for ReduceScatterV) is the same
 * on every rank and this rank's entry is its own count; the buffer of that
 * side may be NULL when the count is 0.
 */
static HcclResult v_coll(const char *fn, enum ohc_coll_op op, void *sendBuf,
			 void *recvBuf, uint64_t count, HcclDataType dataType,
			 int redop, const uint64_t *counts,
			 const uint64_t *displs, HcclComm comm,
			 aclrtStream stream)
{
	struct ohc_coll_args a =
		coll_args(op, sendBuf, recvBuf, count, dataType, redop, 0);
	bool ag = op == OHC_COLL_ALLGATHER_V;
	const char *null_buf;
	struct ohc_comm *c;
	uint64_t total;
	HcclResult r;

	r = v_prologue(fn, comm, ag ? "recvCounts" : "sendCounts",
		       ag ? "recvDispls" : "sendDispls", counts, displs, &c,
		       &total);
	if (r != HCCL_SUCCESS || total == 0)
		return r;
	if (counts[c->rank] != count) {
		if (ag)
			OHC_ERROR(OHC_SS_API,
				  "%s: sendCount %llu differs from "
				  "recvCounts[%u] = %llu",
				  fn, (unsigned long long)count, c->rank,
				  (unsigned long long)counts[c->rank]);
		else
			OHC_ERROR(OHC_SS_API,
				  "%s: recvCount %llu differs from "
				  "sendCounts[%u]",
				  fn, (unsigned long long)count, c->rank);
		return HCCL_E_PARA;
	}
	null_buf = !sendBuf && (count || !ag)  ? "sendBuf"
		   : !recvBuf && (count || ag) ? "recvBuf"
					       : NULL;
	if (null_buf) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL", fn, null_buf);
		return HCCL_E_PTR;
	}
	if (ag) {
		a.recv_counts = counts;
		a.recv_displs = displs;
	} else {
		a.send_counts = counts;
		a.send_displs = displs;
	}
	if (sendBuf == recvBuf) {
		OHC_ERROR(OHC_SS_API, "%s: recvBuf must differ from sendBuf",
			  fn);
		return HCCL_E_PARA;
	}
	return coll(fn, &a, comm, stream, ag ? 0 : NEED_REDUCE);
}

OHC_API HcclResult HcclAllGatherV(void *sendBuf, uint64_t sendCount,
				  void *recvBuf, const void *recvCounts,
				  const void *recvDispls, HcclDataType dataType,
				  HcclComm comm, aclrtStream stream)
{
	OHC_API_ENTRY(comm,
		      "HcclAllGatherV(sendBuf=%p, sendCount=%llu, recvBuf=%p, "
		      "recvCounts=%p, recvDispls=%p, dataType=%s, comm=%p, "
		      "stream=%p)",
		      sendBuf, (unsigned long long)sendCount, recvBuf,
		      recvCounts, recvDispls, ohc_dtype_name((int)dataType),
		      comm, stream);
	return v_coll(__func__, OHC_COLL_ALLGATHER_V, sendBuf, recvBuf,
		      sendCount, dataType, 0, recvCounts, recvDispls, comm,
		      stream);
}

OHC_API HcclResult HcclReduceScatterV(void *sendBuf, const void *sendCounts,
				      const void *sendDispls, void *recvBuf,
				      uint64_t recvCount, HcclDataType dataType,
				      HcclReduceOp op, HcclComm comm,
				      aclrtStream stream)
{
	OHC_API_ENTRY(comm,
		      "HcclReduceScatterV(sendBuf=%p, sendCounts=%p, "
		      "sendDispls=%p, recvBuf=%p, recvCount=%llu, dataType=%s, "
		      "op=%s, comm=%p, stream=%p)",
		      sendBuf, sendCounts, sendDispls, recvBuf,
		      (unsigned long long)recvCount,
		      ohc_dtype_name((int)dataType), ohc_redop_name((int)op),
		      comm, stream);
	return v_coll(__func__, OHC_COLL_REDUCE_SCATTER_V, sendBuf, recvBuf,
		      recvCount, dataType, (int)op, sendCounts, sendDispls,
		      comm, stream);
}

OHC_API HcclResult HcclAlltoAll(const void *sendBuf, uint64_t sendCount,
				HcclDataType sendType, const void *recvBuf,
				uint64_t recvCount, HcclDataType recvType,
				HcclComm comm, aclrtStream stream)
{
	struct ohc_coll_args a = {.op = OHC_COLL_ALLTOALL};

	OHC_API_ENTRY(comm,
		      "HcclAlltoAll(sendBuf=%p, sendCount=%llu, sendType=%s, "
		      "recvBuf=%p, recvCount=%llu, recvType=%s, comm=%p, "
		      "stream=%p)",
		      sendBuf, (unsigned long long)sendCount,
		      ohc_dtype_name((int)sendType), recvBuf,
		      (unsigned long long)recvCount,
		      ohc_dtype_name((int)recvType), comm, stream);
	if (sendCount == 0 && recvCount == 0) {
		OHC_WARN(OHC_SS_API, "%s: counts are 0, nothing to do",
			 __func__);
		return HCCL_SUCCESS;
	}
	NOT_NULL(sendBuf, __func__);
	NOT_NULL(recvBuf, __func__);
	if (sendCount != recvCount || sendType != recvType) {
		OHC_ERROR(OHC_SS_API,
			  "%s: send (%llu x %d) and receive (%llu x %d) "
			  "counts and types must match",
			  __func__, (unsigned long long)sendCount, sendType,
			  (unsigned long long)recvCount, recvType);
		return HCCL_E_PARA;
	}
	if (sendBuf == recvBuf) {
		OHC_ERROR(OHC_SS_API, "%s: in place is not supported",
			  __func__);
		return HCCL_E_PARA;
	}
	a.sbuf = sendBuf;
	a.rbuf = (void *)recvBuf;
	a.count = sendCount;
	a.dtype = (int)sendType;
	return coll(__func__, &a, comm, stream, 0);
}

static HcclResult alltoallv(const char *fn, const void *sendBuf,
			    const uint64_t *sc, const uint64_t *sd,
			    HcclDataType sendType, const void *recvBuf,
			    const uint64_t *rc, const uint64_t *rd,
			    HcclDataType recvType, struct ohc_comm *c,
			    HcclComm comm, aclrtStream stream)
{
	struct ohc_coll_args a = {.op = OHC_COLL_ALLTOALLV};
	uint64_t stotal, rtotal;
	uint32_t n = c->nranks;

	if (ohc_api_check_counts(fn, "sendCounts", sc, n, &stotal) < 0 ||
	    ohc_api_check_counts(fn, "recvCounts", rc, n, &rtotal) < 0 ||
	    ohc_api_check_displs(fn, "sdispls", sc, sd, n) < 0 ||
	    ohc_api_check_displs(fn, "rdispls", rc, rd, n) < 0)
		return HCCL_E_PARA;
	if (sendType != recvType) {
		OHC_ERROR(OHC_SS_API, "%s: sendType %s and recvType %s differ",
			  fn, ohc_dtype_name((int)sendType),
			  ohc_dtype_name((int)recvType));
		return HCCL_E_PARA;
	}
	if ((stotal && !sendBuf) || (rtotal && !recvBuf)) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL with non-zero counts", fn,
			  stotal && !sendBuf ? "sendBuf" : "recvBuf");
		return HCCL_E_PTR;
	}
	if (sendBuf && sendBuf == recvBuf) {
		OHC_ERROR(OHC_SS_API, "%s: in place is not supported", fn);
		return HCCL_E_PARA;
	}
	a.sbuf = sendBuf;
	a.rbuf = (void *)recvBuf;
	a.count = 0;
	a.dtype = (int)sendType;
	a.send_counts = sc;
	a.send_displs = sd;
	a.recv_counts = rc;
	a.recv_displs = rd;
	return coll(fn, &a, comm, stream, 0);
}

OHC_API HcclResult HcclAlltoAllV(const void *sendBuf, const void *sendCounts,
				 const void *sdispls, HcclDataType sendType,
				 const void *recvBuf, const void *recvCounts,
				 const void *rdispls, HcclDataType recvType,
				 HcclComm comm, aclrtStream stream)
{
	struct ohc_comm *c;
	HcclResult r;

	OHC_API_ENTRY(comm,
		      "HcclAlltoAllV(sendBuf=%p, sendCounts=%p, sdispls=%p, "
		      "sendType=%s, recvBuf=%p, recvCounts=%p, rdispls=%p, "
		      "recvType=%s, comm=%p, stream=%p)",
		      sendBuf, sendCounts, sdispls,
		      ohc_dtype_name((int)sendType), recvBuf, recvCounts,
		      rdispls, ohc_dtype_name((int)recvType), comm, stream);
	r = ohc_api_live_comm(__func__, comm, &c);
	if (r != HCCL_SUCCESS)
		return r;
	NOT_NULL(sendCounts, __func__);
	NOT_NULL(sdispls, __func__);
	NOT_NULL(recvCounts, __func__);
	NOT_NULL(rdispls, __func__);
	return alltoallv(__func__, sendBuf, sendCounts, sdispls, sendType,
			 recvBuf, recvCounts, rdispls, recvType, c, comm,
			 stream);
}

OHC_API HcclResult HcclAlltoAllVC(const void *sendBuf,
				  const void *sendCountMatrix,
				  HcclDataType sendType, const void *recvBuf,
				  HcclDataType recvType, HcclComm comm,
				  aclrtStream stream)
{
	const uint64_t *m = sendCountMatrix;
	uint64_t *v, total;
	struct ohc_comm *c;
	uint32_t n;
	HcclResult r;

	OHC_API_ENTRY(comm,
		      "HcclAlltoAllVC(sendBuf=%p, sendCountMatrix=%p, "
		      "sendType=%s, recvBuf=%p, recvType=%s, comm=%p, "
		      "stream=%p)",
		      sendBuf, sendCountMatrix, ohc_dtype_name((int)sendType),
		      recvBuf, ohc_dtype_name((int)recvType), comm, stream);
	r = ohc_api_live_comm(__func__, comm, &c);
	if (r != HCCL_SUCCESS)
		return r;
	NOT_NULL(sendCountMatrix, __func__);
	n = c->nranks;
	if (ohc_api_check_counts(__func__, "sendCountMatrix", m, n * n,
				 &total) < 0)
		return HCCL_E_PARA;
	if (total == 0) {
		OHC_WARN(OHC_SS_API, "%s: the matrix is all 0, nothing to do",
			 __func__);
		return HCCL_SUCCESS;
	}
	v = malloc(4 * (size_t)n * sizeof(*v));
	if (!v)
		return HCCL_E_MEMORY;
	ohc_alltoallvc_to_v(m, n, c->rank, v, v + n, v + 2 * n, v + 3 * n);
	r = alltoallv(__func__, sendBuf, v, v + n, sendType, recvBuf, v + 2 * n,
		      v + 3 * n, recvType, c, comm, stream);
	free(v); /* the operation took its own copies */
	return r;
}

OHC_API HcclResult HcclBatchSendRecv(HcclSendRecvItem *sendRecvInfo,
				     uint32_t itemNum, HcclComm comm,
				     aclrtStream stream)
{
	struct ohc_coll_args a = {.op = OHC_COLL_BATCH_SEND_RECV};
	struct ohc_batch_item *items;
	struct ohc_comm *c;
	ohc_status_t status;
	HcclResult r;

	OHC_API_ENTRY(comm,
		      "HcclBatchSendRecv(sendRecvInfo=%p, itemNum=%u, comm=%p, "
		      "stream=%p)",
		      (void *)sendRecvInfo, itemNum, comm, stream);
	if (itemNum == 0) {
		OHC_WARN(OHC_SS_API, "%s: no items, nothing to do", __func__);
		return HCCL_SUCCESS;
	}
	NOT_NULL(sendRecvInfo, __func__);
	r = ohc_api_live_comm_ungrouped(__func__, comm, &c);
	if (r != HCCL_SUCCESS)
		return r;
	items = calloc(itemNum, sizeof(*items));
	if (!items)
		return HCCL_E_MEMORY;
	for (uint32_t i = 0; i < itemNum; i++) {
		const HcclSendRecvItem *it = &sendRecvInfo[i];

		if (it->sendRecvType != HCCL_SEND &&
		    it->sendRecvType != HCCL_RECV) {
			OHC_ERROR(OHC_SS_API,
				  "%s: item %u: sendRecvType %d is neither "
				  "HCCL_SEND nor HCCL_RECV",
				  __func__, i, (int)it->sendRecvType);
			free(items);
			return HCCL_E_PARA;
		}
		if (it->count && (!ohc_dtype_valid(it->dataType) ||
				  it->dataType == HCCL_DATA_TYPE_INT128)) {
			OHC_ERROR(OHC_SS_API,
				  "%s: item %u: dataType %d is not supported",
				  __func__, i, (int)it->dataType);
			free(items);
			return HCCL_E_NOT_SUPPORT;
		}
		items[i].kind = it->sendRecvType == HCCL_SEND ? OHC_BATCH_SEND
							      : OHC_BATCH_RECV;
		items[i].dtype = (int)it->dataType;
		items[i].buf = it->buf;
		items[i].count = it->count;
		items[i].esize = ohc_dtype_size(it->dataType);
		items[i].peer = it->remoteRank;
	}
	status = ohc_batch_validate(items, itemNum, c->rank, c->nranks);
	if (status < 0) {
		free(items);
		return ohc_status_to_hccl(status);
	}
	a.items = items;
	a.nitems = itemNum;
	a.dtype = OHC_INT8;
	r = coll(__func__, &a, comm, stream, 0);
	free(items);
	return r;
}

OHC_API HcclResult HcclGroupStart(void)
{
	OHC_API_ENTRY(NULL, "HcclGroupStart()");
	ohc_group_start();
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcclGroupEnd(void)
{
	OHC_API_ENTRY(NULL, "HcclGroupEnd()");
	return ohc_status_to_hccl(ohc_group_end());
}

OHC_API HcclResult HcclGroupStatusGet(bool *isGroupEnabled)
{
	NOT_NULL(isGroupEnabled, __func__);
	*isGroupEnabled = ohc_group_depth() > 0;
	return HCCL_SUCCESS;
}
