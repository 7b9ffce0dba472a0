/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_API_API_COMM_INT_H
#define OHC_API_API_COMM_INT_H

/*
 * The argument checks shared by the communicator queries and settings
 * and the collectives (api_comm_query.c, api_comm_config.c,
 * api_coll.c); not for other files. Each logs
 * one line naming fn and returns from the calling entry point.
 * GET_COMM: comm NULL is HCCL_E_PTR, a handle that is not a live
 * communicator HCCL_E_PARA; else c is that communicator. NOT_NULL: p NULL
 * is HCCL_E_PTR.
 */
#include "api/api.h"

#define GET_COMM(c, comm, fn)                                                  \
	do {                                                                   \
		HcclResult get_comm_r_ = ohc_api_live_comm(fn, comm, &(c));    \
		if (get_comm_r_ != HCCL_SUCCESS)                               \
			return get_comm_r_;                                    \
	} while (0)

#define NOT_NULL(p, fn)                                                        \
	do {                                                                   \
		if (!(p)) {                                                    \
			OHC_ERROR(OHC_SS_API, "%s: %s is NULL", fn, #p);       \
			return HCCL_E_PTR;                                     \
		}                                                              \
	} while (0)

#endif
