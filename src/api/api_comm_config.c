/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Settings (hccl_comm.h): HcclCommWorkingDevNicSet (the NIC a
 * communicator's ranks work on, comm/nic_switch.c),
 * HcclGetCommConfigCapability, the process-wide HcclSetConfig and
 * HcclGetConfig (HCCL_DETERMINISTIC; the environment wins) and
 * HcclConfigGetInfo. The decoding of HcclCommConfig is api_config.c.
 */
#include <string.h>

#include "api/api.h"
#include "api/api_comm_int.h"

OHC_API HcclResult HcclCommWorkingDevNicSet(HcclComm comm, uint32_t *ranks,
					    bool *useBackup, uint32_t nRanks)
{
	struct ohc_comm *c;

	OHC_API_ENTRY(comm,
		      "HcclCommWorkingDevNicSet(comm=%p, ranks=%p, "
		      "useBackup=%p, nRanks=%u)",
		      comm, (void *)ranks, (void *)useBackup, nRanks);
	GET_COMM(c, comm, __func__);
	NOT_NULL(ranks, __func__);
	NOT_NULL(useBackup, __func__);
	return ohc_status_to_hccl(
		ohc_comm_nic_set(c, ranks, useBackup, nRanks));
}

OHC_API uint32_t HcclGetCommConfigCapability(void)
{
	return HCCL_COMM_CONFIG_RESERVED;
}

OHC_API HcclResult HcclSetConfig(HcclConfig config, HcclConfigValue configValue)
{
	OHC_API_ENTRY(NULL, "HcclSetConfig(config=%s, configValue=%d)",
		      config == HCCL_DETERMINISTIC ? "HCCL_DETERMINISTIC"
						   : "(another key)",
		      (int)configValue.value);
	if (config != HCCL_DETERMINISTIC)
		return HCCL_SUCCESS; /* HCCL ignores other keys */
	if (configValue.value < 0 || configValue.value > 2) {
		OHC_ERROR(OHC_SS_API,
			  "HcclSetConfig: HCCL_DETERMINISTIC value %d must be "
			  "0, 1 or 2",
			  configValue.value);
		return HCCL_E_PARA;
	}
	if (ohc_config_raw("HCCL_DETERMINISTIC")) {
		OHC_WARN(OHC_SS_API, "HcclSetConfig: HCCL_DETERMINISTIC is set "
				     "in the environment, which wins; ignored");
		return HCCL_SUCCESS;
	}
	ohc_comm_set_deterministic_all(configValue.value);
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcclGetConfig(HcclConfig config,
				 HcclConfigValue *configValue)
{
	int v;

	NOT_NULL(configValue, __func__);
	if (config != HCCL_DETERMINISTIC) {
		configValue->value = 0;
		return HCCL_SUCCESS;
	}
	v = ohc_comm_get_deterministic_global();
	if (v < 0 || ohc_config_raw("HCCL_DETERMINISTIC"))
		v = (int)ohc_env()->deterministic;
	configValue->value = v;
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcclConfigGetInfo(HcclComm comm, HcclConfigType cfgType,
				     uint32_t infoLen, void *info)
{
	struct ohc_comm *c;

	GET_COMM(c, comm, __func__);
	NOT_NULL(info, __func__);
	switch (cfgType) {
	case HCCL_CONFIG_TYPE_OP_EXPANSION_MODE: {
		HcclConfigTypeOpExpansionMode mode =
			HCCL_OP_EXPANSION_MODE_HOST;

		if (infoLen != sizeof(mode)) {
			OHC_ERROR(OHC_SS_API,
				  "HcclConfigGetInfo: infoLen %u must be %zu "
				  "for OP_EXPANSION_MODE",
				  infoLen, sizeof(mode));
			return HCCL_E_PARA;
		}
		memcpy(info, &mode, sizeof(mode));
		return HCCL_SUCCESS;
	}
	case HCCL_CONFIG_TYPE_HCCL_ALGO:
		if (infoLen < HCCL_COMM_ALGO_MAX_LENGTH) {
			OHC_ERROR(OHC_SS_API,
				  "HcclConfigGetInfo: infoLen %u must be >= %u "
				  "for HCCL_ALGO",
				  infoLen, (unsigned)HCCL_COMM_ALGO_MAX_LENGTH);
			return HCCL_E_PARA;
		}
		memcpy(info, c->cfg.algo, HCCL_COMM_ALGO_MAX_LENGTH);
		return HCCL_SUCCESS;
	default:
		OHC_ERROR(OHC_SS_API, "HcclConfigGetInfo: unknown type %d",
			  (int)cfgType);
		return HCCL_E_PARA;
	}
}
