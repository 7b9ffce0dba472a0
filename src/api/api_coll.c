/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "algo/dtype.h"
#include "api/api.h"

/*
 * Collective and point-to-point entry points. Each validates in HCCL's
 * order (count 0 first, then pointers, then values), logs one line naming
 * the argument, and hands a descriptor to the communicator, which runs it
 * now (NULL stream) or enqueues it on the stream.
 */
#define SYS_MAX_COUNT 0x7FFFFFFFFull

enum { NEED_REDUCE = 1 };

static ohc_status_t check_common(const char *fn, HcclComm comm, void *stream,
				 uint64_t count, int dtype, int redop,
				 int flags, struct ohc_comm **c_p)
{
	struct ohc_comm *c;

	if (!comm) {
		OHC_ERROR(OHC_SS_API, "%s: comm is NULL", fn);
		return OHC_ERR_NULL;
	}
	c = ohc_api_comm(comm);
	if (!c) {
		OHC_ERROR(OHC_SS_API, "%s: %p is not a live communicator", fn,
			  comm);
		return OHC_ERR_INVALID;
	}
	if (stream && !ohc_rt_stream_valid(stream)) {
		OHC_ERROR(OHC_SS_API, "%s: stream %p is not a live stream", fn,
			  stream);
		return OHC_ERR_INVALID;
	}
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
	if (flags & NEED_REDUCE) {
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
	*c_p = c;
	return OHC_OK;
}

static HcclResult submit(struct ohc_comm *c, struct ohc_coll_args *a,
			 void *stream)
{
	a->esize = ohc_dtype_size(a->dtype);
	return ohc_status_to_hccl(ohc_comm_submit(c, a, stream));
}

OHC_API HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count,
				 HcclDataType dataType, HcclReduceOp op,
				 HcclComm comm, aclrtStream stream)
{
	struct ohc_coll_args a = {.op = OHC_COLL_ALLREDUCE};
	struct ohc_comm *c;
	ohc_status_t status;

	OHC_API_ENTRY(__func__);
	if (count == 0) {
		OHC_WARN(OHC_SS_API, "HcclAllReduce: count is 0, nothing to do");
		return HCCL_SUCCESS;
	}
	if (!sendBuf || !recvBuf) {
		OHC_ERROR(OHC_SS_API, "HcclAllReduce: %s is NULL",
			  !sendBuf ? "sendBuf" : "recvBuf");
		return HCCL_E_PTR;
	}
	status = check_common(__func__, comm, stream, count, (int)dataType,
			      (int)op, NEED_REDUCE, &c);
	if (status < 0)
		return ohc_status_to_hccl(status);
	a.sbuf = sendBuf;
	a.rbuf = recvBuf;
	a.count = count;
	a.dtype = (int)dataType;
	a.redop = (int)op;
	return submit(c, &a, stream);
}

static HcclResult p2p(const char *fn, enum ohc_coll_op op, void *buf,
		      uint64_t count, HcclDataType dataType, uint32_t peer,
		      HcclComm comm, aclrtStream stream)
{
	struct ohc_coll_args a = {.op = op};
	struct ohc_comm *c;
	ohc_status_t status;

	if (count == 0) {
		OHC_WARN(OHC_SS_API, "%s: count is 0, nothing to do", fn);
		return HCCL_SUCCESS;
	}
	if (!buf) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL", fn,
			  op == OHC_COLL_SEND ? "sendBuf" : "recvBuf");
		return HCCL_E_PTR;
	}
	status = check_common(fn, comm, stream, count, (int)dataType, 0, 0,
			      &c);
	if (status < 0)
		return ohc_status_to_hccl(status);
	if (peer >= c->nranks) {
		OHC_ERROR(OHC_SS_API, "%s: %s %u is not in [0, %u)", fn,
			  op == OHC_COLL_SEND ? "destRank" : "srcRank", peer,
			  c->nranks);
		return HCCL_E_PARA;
	}
	if (peer == c->rank) {
		OHC_ERROR(OHC_SS_API, "%s: rank %u cannot %s itself", fn,
			  c->rank, op == OHC_COLL_SEND ? "send to" : "receive from");
		return HCCL_E_NOT_SUPPORT;
	}
	a.peer = peer;
	a.count = count;
	a.dtype = (int)dataType;
	if (op == OHC_COLL_SEND)
		a.sbuf = buf;
	else
		a.rbuf = buf;
	return submit(c, &a, stream);
}

OHC_API HcclResult HcclSend(void *sendBuf, uint64_t count,
			    HcclDataType dataType, uint32_t destRank,
			    HcclComm comm, aclrtStream stream)
{
	OHC_API_ENTRY(__func__);
	return p2p(__func__, OHC_COLL_SEND, sendBuf, count, dataType, destRank,
		   comm, stream);
}

OHC_API HcclResult HcclRecv(void *recvBuf, uint64_t count,
			    HcclDataType dataType, uint32_t srcRank,
			    HcclComm comm, aclrtStream stream)
{
	OHC_API_ENTRY(__func__);
	return p2p(__func__, OHC_COLL_RECV, recvBuf, count, dataType, srcRank,
		   comm, stream);
}

OHC_API HcclResult HcclBarrier(HcclComm comm, aclrtStream stream)
{
	struct ohc_coll_args a = {.op = OHC_COLL_BARRIER};
	struct ohc_comm *c;
	ohc_status_t status;

	OHC_API_ENTRY(__func__);
	status = check_common(__func__, comm, stream, 0, OHC_INT8, 0, 0, &c);
	if (status < 0)
		return ohc_status_to_hccl(status);
	a.dtype = OHC_INT8;
	return submit(c, &a, stream);
}
