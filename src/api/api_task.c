/* SPDX-License-Identifier: Apache-2.0 */
#include <hccl/hccl_task.h>

#include "algo/dtype.h"
#include "api/api.h"
#include "comm/task.h"
#include "core/taskq.h"

/*
 * The task API (include/hccl/hccl_task.h): argument checks in HCCL's
 * order (the collectives' own, shared through api.h), one log line naming
 * the argument, then comm/task.c. Prepares answer -1 on any failure.
 */

_Static_assert(HCCL_TASK_MAX_HANDLE_ID == OHC_TQ_MAX,
	       "the public handle limit is the queue's");

/* The communicator of a live context, for the entry log line; or NULL. */
static HcclComm log_comm(HcclTaskCtx ctx)
{
	struct ohc_task_ctx *c = ohc_task_ctx_lookup(ctx);

	return c ? ohc_comm_handle(ohc_task_ctx_comm(c)) : NULL;
}

/* The live context behind ctx, or NULL with a log line naming fn. */
static struct ohc_task_ctx *ctx_get(const char *fn, HcclTaskCtx ctx,
				    HcclResult *r_p)
{
	struct ohc_task_ctx *c;

	if (!ctx) {
		OHC_ERROR(OHC_SS_API, "%s: ctx is NULL", fn);
		*r_p = HCCL_E_PTR;
		return NULL;
	}
	c = ohc_task_ctx_lookup(ctx);
	if (!c) {
		OHC_ERROR(OHC_SS_API,
			  "%s: %p is not a live task context (never made by "
			  "HcclTaskInit, or destroyed)",
			  fn, ctx);
		*r_p = HCCL_E_PARA;
	}
	return c;
}

OHC_API HcclResult HcclTaskInit(HcclComm comm, HcclTaskCtx *ctx)
{
	struct ohc_task_ctx *t;
	struct ohc_comm *c;
	ohc_status_t status;
	HcclResult r;

	OHC_API_ENTRY(comm, "HcclTaskInit(comm=%p, ctx=%p)", comm, (void *)ctx);
	if (comm && !ctx) {
		OHC_ERROR(OHC_SS_API, "HcclTaskInit: ctx is NULL");
		return HCCL_E_PTR;
	}
	r = ohc_api_live_comm(__func__, comm, &c);
	if (r != HCCL_SUCCESS)
		return r;
	status = ohc_task_ctx_create(c, &t);
	if (status < 0)
		return ohc_status_to_hccl(status);
	*ctx = ohc_task_ctx_handle(t);
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcclTaskSetCcTiling(HcclTaskCtx ctx, const char *algConfig)
{
	struct ohc_task_ctx *c;
	HcclResult r;

	OHC_API_ENTRY(log_comm(ctx),
		      "HcclTaskSetCcTiling(ctx=%p, algConfig=%s)", ctx,
		      algConfig ? algConfig : "(null)");
	c = ctx_get(__func__, ctx, &r);
	if (!c)
		return r;
	return ohc_status_to_hccl(ohc_task_set_algo(c, algConfig));
}

/* a + b * c without wrapping, else UINT64_MAX */
static uint64_t extent(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m, s;

	if (__builtin_mul_overflow(b, c, &m) ||
	    __builtin_add_overflow(a, m, &s))
		return UINT64_MAX;
	return s;
}

/*
 * The checks of every prepare but AlltoAllV, in HCCL's order: pointers,
 * count, values, then the task's own (repeat, stride, the layout's end).
 */
static ohc_status_t check_task(const char *fn, struct ohc_comm *comm,
			       const struct ohc_task_desc *d, bool need_reduce)
{
	uint64_t n = comm->nranks, block, last;
	ohc_status_t status;

	if (!d->sbuf || !d->rbuf) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL", fn,
			  !d->sbuf ? "sendBuf" : "recvBuf");
		return OHC_ERR_NULL;
	}
	if (d->count == 0) {
		OHC_ERROR(OHC_SS_API,
			  "%s: count is 0: a task must move data (every rank "
			  "passes the same count)",
			  fn);
		return OHC_ERR_INVALID;
	}
	status = ohc_api_check_values(fn, d->count, d->dtype, d->redop,
				      need_reduce);
	if (status < 0)
		return status;
	if (d->repeat == 0) {
		OHC_ERROR(OHC_SS_API, "%s: repeat is 0 (1..255 rounds)", fn);
		return OHC_ERR_INVALID;
	}
	if (d->op != OHC_COLL_ALLREDUCE && d->sbuf == d->rbuf) {
		OHC_ERROR(OHC_SS_API,
			  "%s: sendBuf and recvBuf are the same: in place is "
			  "supported for AllReduce only",
			  fn);
		return OHC_ERR_INVALID;
	}
	if (d->stride && d->stride < d->count) {
		OHC_ERROR(OHC_SS_API,
			  "%s: strideCount %llu is below the count %llu: the "
			  "blocks of the ranks would overlap",
			  fn, (unsigned long long)d->stride,
			  (unsigned long long)d->count);
		return OHC_ERR_INVALID;
	}
	if (!d->stride || d->stride == d->count)
		return OHC_OK;
	/* strided: the V form's last displacement within its maximum */
	block = d->stride;
	last = extent((uint64_t)(d->repeat - 1) * d->count, n - 1, block);
	if (last > OHC_API_MAX_COUNT) {
		OHC_ERROR(OHC_SS_API,
			  "%s: the layout's last block starts at element %llu "
			  "(repeat %u x count %llu, %llu ranks x stride "
			  "%llu), beyond the maximum %llu",
			  fn, (unsigned long long)last, d->repeat,
			  (unsigned long long)d->count, (unsigned long long)n,
			  (unsigned long long)block, OHC_API_MAX_COUNT);
		return OHC_ERR_INVALID;
	}
	return OHC_OK;
}

/* Check d on ctx and prepare it: the handle, or -1. */
static HcclHandle prepare(const char *fn, HcclTaskCtx ctx,
			  struct ohc_task_desc *d, bool commit,
			  bool need_reduce)
{
	struct ohc_task_ctx *c;
	ohc_status_t status;
	HcclResult r;
	int handle;

	c = ctx_get(fn, ctx, &r);
	if (!c)
		return HCCL_TASK_INVALID_HANDLE;
	d->esize = ohc_dtype_size(d->dtype);
	if (d->op != OHC_COLL_ALLTOALLV &&
	    check_task(fn, ohc_task_ctx_comm(c), d, need_reduce) < 0)
		return HCCL_TASK_INVALID_HANDLE;
	status = ohc_task_prepare(c, d, commit, &handle);
	if (status < 0)
		return HCCL_TASK_INVALID_HANDLE;
	return (HcclHandle)handle;
}

/* The four prepares with one block a rank: d from the arguments. */
static HcclHandle prepare_block(const char *fn, HcclTaskCtx ctx,
				enum ohc_coll_op op, void *sendBuf,
				void *recvBuf, uint64_t count,
				HcclDataType dataType, int redop,
				uint64_t strideCount, uint8_t repeat,
				bool commit)
{
	struct ohc_task_desc d = {.op = op,
				  .sbuf = sendBuf,
				  .rbuf = recvBuf,
				  .count = count,
				  .stride = strideCount,
				  .dtype = (int)dataType,
				  .redop = redop,
				  .repeat = repeat};
	bool need_reduce =
		op == OHC_COLL_ALLREDUCE || op == OHC_COLL_REDUCE_SCATTER;

	return prepare(fn, ctx, &d, commit, need_reduce);
}

OHC_API HcclHandle HcclTaskAllReduce(HcclTaskCtx ctx, void *sendBuf,
				     void *recvBuf, uint64_t count,
				     HcclDataType dataType, HcclReduceOp op,
				     uint8_t repeat, bool commit)
{
	OHC_API_ENTRY(log_comm(ctx),
		      "HcclTaskAllReduce(ctx=%p, sendBuf=%p, recvBuf=%p, "
		      "count=%llu, dataType=%s, op=%s, repeat=%u, commit=%d)",
		      ctx, sendBuf, recvBuf, (unsigned long long)count,
		      ohc_dtype_name((int)dataType), ohc_redop_name((int)op),
		      repeat, commit);
	return prepare_block(__func__, ctx, OHC_COLL_ALLREDUCE, sendBuf,
			     recvBuf, count, dataType, (int)op, 0, repeat,
			     commit);
}

OHC_API HcclHandle HcclTaskAllGather(HcclTaskCtx ctx, void *sendBuf,
				     void *recvBuf, uint64_t sendCount,
				     HcclDataType dataType,
				     uint64_t strideCount, uint8_t repeat,
				     bool commit)
{
	OHC_API_ENTRY(log_comm(ctx),
		      "HcclTaskAllGather(ctx=%p, sendBuf=%p, recvBuf=%p, "
		      "sendCount=%llu, dataType=%s, strideCount=%llu, "
		      "repeat=%u, commit=%d)",
		      ctx, sendBuf, recvBuf, (unsigned long long)sendCount,
		      ohc_dtype_name((int)dataType),
		      (unsigned long long)strideCount, repeat, commit);
	return prepare_block(__func__, ctx, OHC_COLL_ALLGATHER, sendBuf,
			     recvBuf, sendCount, dataType, 0, strideCount,
			     repeat, commit);
}

OHC_API HcclHandle HcclTaskReduceScatter(HcclTaskCtx ctx, void *sendBuf,
					 void *recvBuf, uint64_t recvCount,
					 HcclDataType dataType, HcclReduceOp op,
					 uint64_t strideCount, uint8_t repeat,
					 bool commit)
{
	OHC_API_ENTRY(log_comm(ctx),
		      "HcclTaskReduceScatter(ctx=%p, sendBuf=%p, recvBuf=%p, "
		      "recvCount=%llu, dataType=%s, op=%s, strideCount=%llu, "
		      "repeat=%u, commit=%d)",
		      ctx, sendBuf, recvBuf, (unsigned long long)recvCount,
		      ohc_dtype_name((int)dataType), ohc_redop_name((int)op),
		      (unsigned long long)strideCount, repeat, commit);
	return prepare_block(__func__, ctx, OHC_COLL_REDUCE_SCATTER, sendBuf,
			     recvBuf, recvCount, dataType, (int)op, strideCount,
			     repeat, commit);
}

OHC_API HcclHandle HcclTaskAlltoAll(HcclTaskCtx ctx, void *sendBuf,
				    void *recvBuf, uint64_t dataCount,
				    HcclDataType dataType, uint64_t strideCount,
				    uint8_t repeat, bool commit)
{
	OHC_API_ENTRY(log_comm(ctx),
		      "HcclTaskAlltoAll(ctx=%p, sendBuf=%p, recvBuf=%p, "
		      "dataCount=%llu, dataType=%s, strideCount=%llu, "
		      "repeat=%u, commit=%d)",
		      ctx, sendBuf, recvBuf, (unsigned long long)dataCount,
		      ohc_dtype_name((int)dataType),
		      (unsigned long long)strideCount, repeat, commit);
	return prepare_block(__func__, ctx, OHC_COLL_ALLTOALL, sendBuf, recvBuf,
			     dataCount, dataType, 0, strideCount, repeat,
			     commit);
}

/* AlltoAllV's arrays: counts in range, the last round's blocks too. */
static ohc_status_t check_v(const char *fn, uint32_t n, unsigned repeat,
			    const char *cwhat, const uint64_t *counts,
			    const char *dwhat, const uint64_t *displs,
			    uint64_t *total_p)
{
	if (ohc_api_check_counts(fn, cwhat, counts, n, total_p) < 0 ||
	    ohc_api_check_displs(fn, dwhat, counts, displs, n) < 0)
		return OHC_ERR_INVALID;
	for (uint32_t k = 0; k < n; k++) {
		uint64_t last;

		if (!counts[k])
			continue;
		last = extent(displs[k], repeat - 1, counts[k]);
		if (last <= OHC_API_MAX_COUNT)
			continue;
		OHC_ERROR(OHC_SS_API,
			  "%s: %s[%u] = %llu advanced by %u rounds of %s[%u] "
			  "= %llu goes beyond the maximum %llu",
			  fn, dwhat, k, (unsigned long long)displs[k],
			  repeat - 1, cwhat, k, (unsigned long long)counts[k],
			  OHC_API_MAX_COUNT);
		return OHC_ERR_INVALID;
	}
	return OHC_OK;
}

OHC_API HcclHandle HcclTaskAlltoAllV(HcclTaskCtx ctx, void *sendBuf,
				     const void *sendCounts,
				     const void *sdispls, HcclDataType sendType,
				     void *recvBuf, const void *recvCounts,
				     const void *rdispls, HcclDataType recvType,
				     uint8_t repeat, bool commit)
{
	struct ohc_task_desc d = {.op = OHC_COLL_ALLTOALLV};
	const char *fn = __func__;
	struct ohc_task_ctx *c;
	uint64_t stotal, rtotal;
	ohc_status_t status;
	uint32_t n;
	HcclResult r;
	int handle;

	OHC_API_ENTRY(log_comm(ctx),
		      "HcclTaskAlltoAllV(ctx=%p, sendBuf=%p, sendCounts=%p, "
		      "sdispls=%p, sendType=%s, recvBuf=%p, recvCounts=%p, "
		      "rdispls=%p, recvType=%s, repeat=%u, commit=%d)",
		      ctx, sendBuf, sendCounts, sdispls,
		      ohc_dtype_name((int)sendType), recvBuf, recvCounts,
		      rdispls, ohc_dtype_name((int)recvType), repeat, commit);
	c = ctx_get(fn, ctx, &r);
	if (!c)
		return HCCL_TASK_INVALID_HANDLE;
	n = ohc_task_ctx_comm(c)->nranks;
	if (!sendCounts || !sdispls || !recvCounts || !rdispls) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL", fn,
			  !sendCounts	? "sendCounts"
			  : !sdispls	? "sdispls"
			  : !recvCounts ? "recvCounts"
					: "rdispls");
		return HCCL_TASK_INVALID_HANDLE;
	}
	if (repeat == 0) {
		OHC_ERROR(OHC_SS_API, "%s: repeat is 0 (1..255 rounds)", fn);
		return HCCL_TASK_INVALID_HANDLE;
	}
	if (check_v(fn, n, repeat, "sendCounts", sendCounts, "sdispls", sdispls,
		    &stotal) < 0 ||
	    check_v(fn, n, repeat, "recvCounts", recvCounts, "rdispls", rdispls,
		    &rtotal) < 0)
		return HCCL_TASK_INVALID_HANDLE;
	if (ohc_api_check_values(fn, 0, (int)sendType, 0, false) < 0)
		return HCCL_TASK_INVALID_HANDLE;
	if (sendType != recvType) {
		OHC_ERROR(OHC_SS_API, "%s: sendType %s and recvType %s differ",
			  fn, ohc_dtype_name((int)sendType),
			  ohc_dtype_name((int)recvType));
		return HCCL_TASK_INVALID_HANDLE;
	}
	if ((stotal && !sendBuf) || (rtotal && !recvBuf)) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL with non-zero counts", fn,
			  stotal && !sendBuf ? "sendBuf" : "recvBuf");
		return HCCL_TASK_INVALID_HANDLE;
	}
	if (sendBuf && sendBuf == recvBuf) {
		OHC_ERROR(OHC_SS_API, "%s: in place is not supported", fn);
		return HCCL_TASK_INVALID_HANDLE;
	}
	d.sbuf = sendBuf;
	d.rbuf = recvBuf;
	d.dtype = (int)sendType;
	d.esize = ohc_dtype_size(d.dtype);
	d.send_counts = sendCounts;
	d.send_displs = sdispls;
	d.recv_counts = recvCounts;
	d.recv_displs = rdispls;
	d.repeat = repeat;
	status = ohc_task_prepare(c, &d, commit, &handle);
	if (status < 0)
		return HCCL_TASK_INVALID_HANDLE;
	return (HcclHandle)handle;
}

/* Commit and Wait: the entry line, the context check, then op on the
 * handle. */
static HcclResult handle_call(const char *fn, HcclTaskCtx ctx,
			      HcclHandle handleId,
			      ohc_status_t (*op)(struct ohc_task_ctx *, int))
{
	struct ohc_task_ctx *c;
	HcclResult r;

	OHC_API_ENTRY(log_comm(ctx), "%s(ctx=%p, handleId=%d)", fn, ctx,
		      handleId);
	c = ctx_get(fn, ctx, &r);
	if (!c)
		return r;
	return ohc_status_to_hccl(op(c, handleId));
}

OHC_API HcclResult HcclTaskCommit(HcclTaskCtx ctx, HcclHandle handleId)
{
	return handle_call(__func__, ctx, handleId, ohc_task_commit);
}

OHC_API HcclResult HcclTaskWait(HcclTaskCtx ctx, HcclHandle handleId)
{
	return handle_call(__func__, ctx, handleId, ohc_task_wait);
}

OHC_API int32_t HcclTaskQuery(HcclTaskCtx ctx, HcclHandle handleId)
{
	struct ohc_task_ctx *c;
	HcclResult r;
	int n;

	OHC_API_ENTRY(log_comm(ctx), "HcclTaskQuery(ctx=%p, handleId=%d)", ctx,
		      handleId);
	c = ctx_get(__func__, ctx, &r);
	if (!c)
		return -1;
	n = ohc_task_query(c, handleId);
	return n < 0 ? -1 : n;
}

OHC_API HcclResult HcclTaskInterHcclGroupSync(HcclTaskCtx ctx,
					      HcclTaskCtx srcCtx,
					      HcclHandle srcHandleId)
{
	struct ohc_task_ctx *c, *src;
	HcclResult r;

	OHC_API_ENTRY(log_comm(ctx),
		      "HcclTaskInterHcclGroupSync(ctx=%p, srcCtx=%p, "
		      "srcHandleId=%d)",
		      ctx, srcCtx, srcHandleId);
	c = ctx_get(__func__, ctx, &r);
	if (!c)
		return r;
	if (!srcCtx) {
		OHC_ERROR(OHC_SS_API, "%s: srcCtx is NULL", __func__);
		return HCCL_E_PTR;
	}
	src = ohc_task_ctx_lookup(srcCtx);
	if (!src) {
		OHC_ERROR(OHC_SS_API,
			  "%s: srcCtx %p is not a live task context (it was "
			  "destroyed, or never made by HcclTaskInit)",
			  __func__, srcCtx);
		return HCCL_E_PARA;
	}
	return ohc_status_to_hccl(ohc_task_depend(c, src, srcHandleId));
}

OHC_API HcclResult HcclTaskFinalize(HcclTaskCtx ctx, bool sync)
{
	struct ohc_task_ctx *c;
	HcclResult r;

	OHC_API_ENTRY(log_comm(ctx), "HcclTaskFinalize(ctx=%p, sync=%d)", ctx,
		      sync);
	c = ctx_get(__func__, ctx, &r);
	if (!c)
		return r;
	return ohc_status_to_hccl(ohc_task_finalize(c, sync));
}

OHC_API HcclResult HcclTaskDestroy(HcclTaskCtx ctx)
{
	struct ohc_task_ctx *c;
	HcclResult r;

	OHC_API_ENTRY(log_comm(ctx), "HcclTaskDestroy(ctx=%p)", ctx);
	c = ctx_get(__func__, ctx, &r);
	if (!c)
		return r;
	ohc_task_ctx_destroy(c);
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcclTaskGetRoundTimes(HcclTaskCtx ctx, HcclHandle handleId,
					 uint32_t round, uint64_t *startNs,
					 uint64_t *endNs)
{
	struct ohc_task_ctx *c;
	HcclResult r;

	OHC_API_ENTRY(log_comm(ctx),
		      "HcclTaskGetRoundTimes(ctx=%p, handleId=%d, round=%u)",
		      ctx, handleId, round);
	c = ctx_get(__func__, ctx, &r);
	if (!c)
		return r;
	if (!startNs || !endNs) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL", __func__,
			  !startNs ? "startNs" : "endNs");
		return HCCL_E_PTR;
	}
	return ohc_status_to_hccl(
		ohc_task_round_times(c, handleId, round, startNs, endNs));
}
