/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_API_API_H
#define OHC_API_API_H

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

/* The live communicator behind a handle, or NULL (api_comm.c). */
struct ohc_comm *ohc_api_comm(HcclComm comm);

/* Log every call when HCCL_ENTRY_LOG_ENABLE=1, whatever the log level. */
#define OHC_API_ENTRY(name)                                                    \
	do {                                                                   \
		if (ohc_env()->entry_log)                                      \
			ohc_log(OHC_LOG_INFO, OHC_SS_API, __FILE__, __LINE__,  \
				"entry: %s", name);                            \
	} while (0)

#endif
