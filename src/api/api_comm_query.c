/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Communicator queries (hccl_comm.h): the live communicator behind a
 * handle (and its name and rank for log lines), its size, rank, name and
 * asynchronous error, the handle of a named communicator, and
 * HcclGetErrorString.
 */
#include <string.h>

#include "api/api.h"
#include "api/api_comm_int.h"

/* Validate a communicator handle; NULL-checks belong to the caller. */
struct ohc_comm *ohc_api_comm(HcclComm comm)
{
	return ohc_comm_lookup(comm);
}

HcclResult ohc_api_live_comm(const char *fn, HcclComm comm,
			     struct ohc_comm **c_p)
{
	if (!comm) {
		OHC_ERROR(OHC_SS_API, "%s: comm is NULL", fn);
		return HCCL_E_PTR;
	}
	*c_p = ohc_api_comm(comm);
	if (!*c_p) {
		OHC_ERROR(OHC_SS_API, "%s: %p is not a live communicator", fn,
			  (void *)comm);
		return HCCL_E_PARA;
	}
	return HCCL_SUCCESS;
}

HcclResult ohc_api_live_comm_ungrouped(const char *fn, HcclComm comm,
				       struct ohc_comm **c_p)
{
	HcclResult r = ohc_api_live_comm(fn, comm, c_p);

	if (r != HCCL_SUCCESS)
		return r;
	if (ohc_group_depth() > 0) {
		OHC_ERROR(OHC_SS_API, "%s cannot be called inside a group", fn);
		return HCCL_E_NOT_SUPPORT;
	}
	return HCCL_SUCCESS;
}

int ohc_api_log_rank(HcclComm comm)
{
	struct ohc_comm *c = ohc_api_comm(comm);

	return c ? (int)c->rank : -1;
}

OHC_API HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize)
{
	struct ohc_comm *c;

	GET_COMM(c, comm, __func__);
	NOT_NULL(rankSize, __func__);
	*rankSize = c->nranks;
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank)
{
	struct ohc_comm *c;

	GET_COMM(c, comm, __func__);
	NOT_NULL(rank, __func__);
	*rank = c->rank;
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcclGetCommName(HcclComm comm, char *commName)
{
	struct ohc_comm *c;

	GET_COMM(c, comm, __func__);
	NOT_NULL(commName, __func__);
	memcpy(commName, c->name, COMM_NAME_MAX_LENGTH);
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcclCommGetHandleWithName(const char *commName,
					     HcclComm *comm)
{
	struct ohc_comm *c;

	NOT_NULL(commName, __func__);
	NOT_NULL(comm, __func__);
	c = ohc_comm_find(commName, ohc_rt_current_device());
	if (!c) {
		OHC_ERROR(OHC_SS_API,
			  "HcclCommGetHandleWithName: no communicator named "
			  "'%.128s'",
			  commName);
		return HCCL_E_NOT_FOUND;
	}
	*comm = ohc_comm_handle(c);
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError)
{
	struct ohc_comm *c;

	GET_COMM(c, comm, __func__);
	NOT_NULL(asyncError, __func__);
	*asyncError = ohc_status_to_hccl(ohc_comm_async_error(c));
	return HCCL_SUCCESS;
}

OHC_API const char *HcclGetErrorString(HcclResult code)
{
	static const char *const strings[] = {
		"no error",
		"parameter error",
		"empty pointer",
		"memory error",
		"internal error",
		"not support feature",
		"not found specific resource",
		"resource unavailable",
		"call system interface error",
		"timeout",
		"open file fail",
		"tcp connect fail",
		"roce connect fail",
		"tcp transfer fail",
		"roce transfer fail",
		"call runtime api fail",
		"call driver api fail",
		"call profiling api fail",
		"call cce api fail",
		"call network api fail",
		"try again",
		"error cqe",
		"error communicator suspending",
		"retry constraint",
		"out of memory",
	};
	int c = (int)code;

	if (c < 0 || c >= (int)HCCL_E_RESERVED)
		return "unknown error";
	if (c < (int)OHC_ARRAY_SIZE(strings))
		return strings[c];
	return "unknown err";
}
