/* SPDX-License-Identifier: Apache-2.0 */
#include <stddef.h>
#include <string.h>

#include "api/api.h"
#include "util/config.h"

/*
 * Decode a caller's HcclCommConfig into the effective configuration.
 * Rules (HCCL's CommConfig::Load, made safe): read size from the first
 * bytes, reject a bad magic word, accept older and newer versions, and
 * read a field only when both the caller's version has it and it lies
 * wholly inside the caller's size (two different v10 layouts exist).
 */
struct cfg_header {
	size_t size;
	uint32_t magic;
	uint32_t version;
	uint64_t reserved;
};

#define HAS(f, ver)                                                            \
	(hdr.version >= (ver) &&                                               \
	 offsetof(HcclCommConfig, f) + sizeof(((HcclCommConfig *)0)->f) <=    \
		 hdr.size)

static int str_field_ok(const char *s, size_t max)
{
	return memchr(s, '\0', max) != NULL;
}

ohc_status_t ohc_api_config_decode(const HcclCommConfig *user,
				   struct ohc_comm_cfg *c)
{
	struct cfg_header hdr;
	HcclCommConfig cfg;
	const struct ohc_env *env = ohc_env();

	ohc_comm_cfg_default(c);
	if (!user)
		return OHC_OK;
	memcpy(&hdr, user->reserved, sizeof(hdr));
	if (hdr.magic != HCCL_COMM_CONFIG_MAGIC_WORD) {
		OHC_ERROR(OHC_SS_API,
			  "config: magic word 0x%x is not 0x%x: initialise the "
			  "config with HcclCommConfigInit() first",
			  hdr.magic, (unsigned)HCCL_COMM_CONFIG_MAGIC_WORD);
		return OHC_ERR_INVALID;
	}
	if (hdr.size < sizeof(hdr) || hdr.size > (1u << 20)) {
		OHC_ERROR(OHC_SS_API,
			  "config: size %zu is not a valid HcclCommConfig size",
			  hdr.size);
		return OHC_ERR_INVALID;
	}
	if (hdr.version > HCCL_COMM_CONFIG_VERSION)
		OHC_WARN(OHC_SS_API,
			 "config: version %u is newer than %u; unknown fields "
			 "ignored",
			 hdr.version, (unsigned)HCCL_COMM_CONFIG_VERSION);
	memset(&cfg, 0, sizeof(cfg));
	memcpy(&cfg, user,
	       hdr.size < sizeof(cfg) ? hdr.size : sizeof(cfg));

	if (HAS(hcclBufferSize, 1) &&
	    cfg.hcclBufferSize != HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET) {
		if (cfg.hcclBufferSize < 1) {
			OHC_ERROR(OHC_SS_API,
				  "config: hcclBufferSize %u MB must be >= 1",
				  cfg.hcclBufferSize);
			return OHC_ERR_INVALID;
		}
		c->buffsize_mb = cfg.hcclBufferSize;
	}
	if (HAS(hcclDeterministic, 1) &&
	    cfg.hcclDeterministic != HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET) {
		if (cfg.hcclDeterministic > 2) {
			OHC_ERROR(OHC_SS_API,
				  "config: hcclDeterministic %u must be 0, 1 "
				  "or 2",
				  cfg.hcclDeterministic);
			return OHC_ERR_INVALID;
		}
		c->deterministic = (int)cfg.hcclDeterministic;
	}
	if (HAS(hcclCommName, 2)) {
		if (!str_field_ok(cfg.hcclCommName, COMM_NAME_MAX_LENGTH)) {
			OHC_ERROR(OHC_SS_API, "config: hcclCommName is not "
					      "NUL-terminated within 128 bytes");
			return OHC_ERR_INVALID;
		}
		memcpy(c->name, cfg.hcclCommName, sizeof(c->name));
	}
	if (HAS(hcclUdi, 3)) {
		if (!str_field_ok(cfg.hcclUdi, UDI_MAX_LENGTH)) {
			OHC_ERROR(OHC_SS_API, "config: hcclUdi is not "
					      "NUL-terminated within 128 bytes");
			return OHC_ERR_INVALID;
		}
		memcpy(c->udi, cfg.hcclUdi, sizeof(c->udi));
	}
	if (HAS(hcclOpExpansionMode, 4)) {
		if (cfg.hcclOpExpansionMode > 6)
			OHC_WARN(OHC_SS_API,
				 "config: hcclOpExpansionMode %u unknown; "
				 "recorded as a hint only",
				 cfg.hcclOpExpansionMode);
		c->op_expansion_mode = cfg.hcclOpExpansionMode;
	}
	if (HAS(hcclRdmaServiceLevel, 5)) {
		if (cfg.hcclRdmaTrafficClass !=
		    HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET) {
			if (cfg.hcclRdmaTrafficClass > 255 ||
			    cfg.hcclRdmaTrafficClass % 4) {
				OHC_ERROR(OHC_SS_API,
					  "config: hcclRdmaTrafficClass %u "
					  "must be a multiple of 4 in [0, 255]",
					  cfg.hcclRdmaTrafficClass);
				return OHC_ERR_INVALID;
			}
			c->rdma_tc = cfg.hcclRdmaTrafficClass;
		}
		if (cfg.hcclRdmaServiceLevel !=
		    HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET) {
			if (cfg.hcclRdmaServiceLevel > 7) {
				OHC_ERROR(OHC_SS_API,
					  "config: hcclRdmaServiceLevel %u "
					  "must be in [0, 7]",
					  cfg.hcclRdmaServiceLevel);
				return OHC_ERR_INVALID;
			}
			c->rdma_sl = cfg.hcclRdmaServiceLevel;
		}
	}
	if (HAS(hcclJobID, 6)) {
		c->world_rank_id = cfg.hcclWorldRankID;
		c->job_id = cfg.hcclJobID;
	}
	if (HAS(aclGraphZeroCopyEnable, 7)) {
		if (cfg.aclGraphZeroCopyEnable > 1) {
			OHC_ERROR(OHC_SS_API,
				  "config: aclGraphZeroCopyEnable %u must be "
				  "0 or 1",
				  cfg.aclGraphZeroCopyEnable);
			return OHC_ERR_INVALID;
		}
		c->graph_zero_copy = cfg.aclGraphZeroCopyEnable;
	}
	if (HAS(hcclExecTimeOut, 8) &&
	    cfg.hcclExecTimeOut != HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET) {
		if (cfg.hcclExecTimeOut < 0)
			OHC_WARN(OHC_SS_API,
				 "config: hcclExecTimeOut %d is invalid; "
				 "keeping %lld s",
				 cfg.hcclExecTimeOut,
				 (long long)c->exec_timeout_s);
		else
			c->exec_timeout_s = cfg.hcclExecTimeOut;
	}
	if (HAS(hcclAlgo, 8) && cfg.hcclAlgo[0]) {
		if (!str_field_ok(cfg.hcclAlgo, HCCL_COMM_ALGO_MAX_LENGTH)) {
			OHC_ERROR(OHC_SS_API, "config: hcclAlgo is not "
					      "NUL-terminated");
			return OHC_ERR_INVALID;
		}
		memcpy(c->algo, cfg.hcclAlgo, sizeof(c->algo));
	}
	if (HAS(hcclBufferName, 9)) {
		if (!str_field_ok(cfg.hcclBufferName, BUFFER_NAME_MAX_LENGTH)) {
			OHC_ERROR(OHC_SS_API, "config: hcclBufferName is not "
					      "NUL-terminated");
			return OHC_ERR_INVALID;
		}
		memcpy(c->buffer_name, cfg.hcclBufferName,
		       sizeof(c->buffer_name));
	}
	if (HAS(hcclQos, 10) && cfg.hcclQos != HCCL_COMM_QOS_CONFIG_NOT_SET) {
		if (cfg.hcclQos > 7) {
			OHC_ERROR(OHC_SS_API,
				  "config: hcclQos %u must be in [0, 7]",
				  cfg.hcclQos);
			return OHC_ERR_INVALID;
		}
		c->qos = cfg.hcclQos;
	}
	if (HAS(hcclSymWinMaxMemSizePerRank, 10) &&
	    cfg.hcclSymWinMaxMemSizePerRank)
		c->symwin_max_gb = cfg.hcclSymWinMaxMemSizePerRank;
	if (HAS(hcclChannelSqDepth, 11))
		c->sq_depth = cfg.hcclChannelSqDepth;
	(void)env;
	return OHC_OK;
}
