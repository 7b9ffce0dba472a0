/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_API_API_H
#define OHC_API_API_H

#include <stdbool.h>

#include <hccl/hccl.h>

#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"
#include "util/status.h"

#include "comm/comm.h"

/* The one mapping from internal status to HcclResult (status_map.c). */
HcclResult ohc_status_to_hccl(ohc_status_t status);
ohc_status_t ohc_status_from_hccl(HcclResult r);

/* Decode a user HcclCommConfig (NULL = defaults) into c (api_config.c). */
ohc_status_t ohc_api_config_decode(const HcclCommConfig *user,
				   struct ohc_comm_cfg *c);

/* Run the registered state callbacks for comm (api_state.c). */
void ohc_api_state_notify(HcclComm comm, HcclCommStatePhase phase);

/*
 * Argument checks shared by the collectives and the task API (api_coll.c),
 * each logging one line naming fn and the argument. Values: count at most
 * OHC_API_MAX_COUNT, a valid supported data type and, when need_reduce,
 * a reduce op the type supports (OHC_ERR_INVALID / OHC_ERR_UNSUPPORTED).
 * Counts: every entry of counts[0..n) at most the maximum, *sum_p their
 * sum. Displacements: that of every non-empty block within the maximum,
 * so that a block's end in bytes (at most 2 * 2^35 elements of at most
 * 16 bytes) cannot wrap; empty blocks' displacements are not read.
 */
#define OHC_API_MAX_COUNT 0x7FFFFFFFFull
ohc_status_t ohc_api_check_values(const char *fn, uint64_t count, int dtype,
				  int redop, bool need_reduce);
ohc_status_t ohc_api_check_counts(const char *fn, const char *what,
				  const uint64_t *counts, uint32_t n,
				  uint64_t *sum_p);
ohc_status_t ohc_api_check_displs(const char *fn, const char *what,
				  const uint64_t *counts,
				  const uint64_t *displs, uint32_t n);

/* The live communicator behind a handle, or NULL (api_comm_query.c). */
struct ohc_comm *ohc_api_comm(HcclComm comm);
/*
 * The same for an entry point fn, logged: HCCL_E_PTR when comm is NULL,
 * HCCL_E_PARA when it is not a live communicator; else *c_p is it.
 */
HcclResult ohc_api_live_comm(const char *fn, HcclComm comm,
			     struct ohc_comm **c_p);
/* ohc_api_live_comm, then HCCL_E_NOT_SUPPORT inside a group. */
HcclResult ohc_api_live_comm_ungrouped(const char *fn, HcclComm comm,
				       struct ohc_comm **c_p);

/* The rank of a live communicator for log lines; -1. */
int ohc_api_log_rank(HcclComm comm);

/*
 * The first statement of an entry point: the rest of the call logs with
 * the communicator's rank and name (comm: an HcclComm, NULL when the call
 * has none), and when HCCL_ENTRY_LOG_ENABLE=1, whatever the log level,
 * one line shows the call with its arguments (printf format, names for
 * enums). OHC_API_ENTRY_RANK: a call that knows its rank but has no
 * communicator yet (init).
 */
#define OHC_API_ENTRY_LOG(...)                                                 \
	do {                                                                   \
		if (ohc_env()->entry_log)                                      \
			ohc_log(OHC_LOG_INFO, OHC_SS_API, __FILE__, __LINE__,  \
				"call " __VA_ARGS__);                          \
	} while (0)
#define OHC_API_ENTRY(comm, ...)                                               \
	const struct ohc_comm *const ohc_api_entry_comm = ohc_api_comm(comm);  \
	OHC_LOG_SCOPE(ohc_api_entry_comm ? ohc_api_entry_comm->name : NULL,    \
		      ohc_api_entry_comm ? (int)ohc_api_entry_comm->rank       \
					 : -1);                                \
	OHC_API_ENTRY_LOG(__VA_ARGS__)
#define OHC_API_ENTRY_RANK(rank, ...)                                          \
	OHC_LOG_SCOPE(NULL, (int)(rank));                                      \
	OHC_API_ENTRY_LOG(__VA_ARGS__)

#endif
