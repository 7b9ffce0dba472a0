/* SPDX-License-Identifier: Apache-2.0 */
#include "api/api.h"

/* The one place an internal status becomes an HcclResult. */
HcclResult ohc_status_to_hccl(ohc_status_t status)
{
	switch (status) {
	case OHC_OK:
	case OHC_INPROGRESS:
		return HCCL_SUCCESS;
	case OHC_ERR_INVALID:
	case OHC_ERR_DESYNC:
		return HCCL_E_PARA;
	case OHC_ERR_NULL:
		return HCCL_E_PTR;
	case OHC_ERR_NO_MEMORY:
		return HCCL_E_MEMORY;
	case OHC_ERR_UNSUPPORTED:
		return HCCL_E_NOT_SUPPORT;
	case OHC_ERR_NOT_FOUND:
		return HCCL_E_NOT_FOUND;
	case OHC_ERR_UNAVAILABLE:
		return HCCL_E_UNAVAIL;
	case OHC_ERR_SYSCALL:
		return HCCL_E_SYSCALL;
	case OHC_ERR_TIMEOUT:
		return HCCL_E_TIMEOUT;
	case OHC_ERR_OPEN_FILE:
		return HCCL_E_OPEN_FILE_FAILURE;
	case OHC_ERR_TCP_CONNECT:
		return HCCL_E_TCP_CONNECT;
	case OHC_ERR_ROCE_CONNECT:
		return HCCL_E_ROCE_CONNECT;
	case OHC_ERR_TCP_TRANSFER:
		return HCCL_E_TCP_TRANSFER;
	case OHC_ERR_ROCE_TRANSFER:
		return HCCL_E_ROCE_TRANSFER;
	case OHC_ERR_REMOTE:
		return HCCL_E_REMOTE;
	case OHC_ERR_BUSY:
		return HCCL_E_AGAIN;
	case OHC_ERR_SUSPENDING:
		return HCCL_E_SUSPENDING;
	case OHC_ERR_NO_RESOURCE:
	case OHC_ERR_CANCELED:
	case OHC_ERR_INTERNAL:
		return HCCL_E_INTERNAL;
	}
	return HCCL_E_INTERNAL;
}

/*
 * Back from an HcclResult, for results that must travel through internal
 * code (calls deferred by a group): the inverse of the above where it is
 * one to one.
 */
ohc_status_t ohc_status_from_hccl(HcclResult r)
{
	static const ohc_status_t all[] = {
		OHC_ERR_INVALID,       OHC_ERR_NULL,
		OHC_ERR_NO_MEMORY,     OHC_ERR_UNSUPPORTED,
		OHC_ERR_NOT_FOUND,     OHC_ERR_UNAVAILABLE,
		OHC_ERR_SYSCALL,       OHC_ERR_TIMEOUT,
		OHC_ERR_OPEN_FILE,     OHC_ERR_TCP_CONNECT,
		OHC_ERR_ROCE_CONNECT,  OHC_ERR_TCP_TRANSFER,
		OHC_ERR_ROCE_TRANSFER, OHC_ERR_REMOTE,
		OHC_ERR_BUSY,	       OHC_ERR_SUSPENDING,
	};

	if (r == HCCL_SUCCESS)
		return OHC_OK;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (ohc_status_to_hccl(all[i]) == r)
			return all[i];
	return OHC_ERR_INTERNAL;
}
