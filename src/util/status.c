/* SPDX-License-Identifier: Apache-2.0 */
#include "util/status.h"

const char *ohc_status_str(ohc_status_t status)
{
	switch (status) {
	case OHC_OK: return "success";
	case OHC_INPROGRESS: return "in progress";
	case OHC_ERR_INVALID: return "invalid argument";
	case OHC_ERR_NULL: return "null pointer";
	case OHC_ERR_NO_MEMORY: return "out of memory";
	case OHC_ERR_INTERNAL: return "internal error";
	case OHC_ERR_UNSUPPORTED: return "not supported";
	case OHC_ERR_NOT_FOUND: return "not found";
	case OHC_ERR_UNAVAILABLE: return "unavailable";
	case OHC_ERR_SYSCALL: return "system call failed";
	case OHC_ERR_TIMEOUT: return "timed out";
	case OHC_ERR_OPEN_FILE: return "cannot open file";
	case OHC_ERR_TCP_CONNECT: return "tcp connect failed";
	case OHC_ERR_ROCE_CONNECT: return "roce connect failed";
	case OHC_ERR_TCP_TRANSFER: return "tcp transfer failed";
	case OHC_ERR_ROCE_TRANSFER: return "roce transfer failed";
	case OHC_ERR_REMOTE: return "remote peer or link failure";
	case OHC_ERR_BUSY: return "busy";
	case OHC_ERR_NO_RESOURCE: return "no resource";
	case OHC_ERR_DESYNC: return "ranks called mismatched operations";
	case OHC_ERR_CANCELED: return "canceled";
	case OHC_ERR_SUSPENDING:
		return "communicator suspended";
	}
	return "unknown status";
}
