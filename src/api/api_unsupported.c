/* SPDX-License-Identifier: Apache-2.0 */
#include "api/api.h"
#include <hccl/hcom.h>

/*
 * Entry points whose capability arrives with a later issue. Each returns
 * HCCL_E_NOT_SUPPORT and logs its name; test/api/not_supported.c keeps
 * the list, which may only shrink.
 */
static HcclResult not_supported(const char *fn)
{
	OHC_ERROR(OHC_SS_API, "%s is not supported yet by OpenHCCL", fn);
	return HCCL_E_NOT_SUPPORT;
}

OHC_API HcclResult HcclCreateSubCommConfig(
	HcclComm *comm, uint32_t rankNum, uint32_t *rankIds, uint64_t subCommId,
	uint32_t subCommRankId, HcclCommConfig *config, HcclComm *subComm)
{
	(void)comm;
	(void)rankNum;
	(void)rankIds;
	(void)subCommId;
	(void)subCommRankId;
	(void)config;
	(void)subComm;
	return not_supported(__func__);
}

OHC_API HcclResult HcclCommSuspend(HcclComm comm)
{
	(void)comm;
	return not_supported(__func__);
}

OHC_API HcclResult HcclCommResume(HcclComm comm)
{
	(void)comm;
	return not_supported(__func__);
}

OHC_API HcclResult HcclCommRegCommStateCallback(const char *regName,
						HcclCommStateCallback cb,
						void *args)
{
	(void)regName;
	(void)cb;
	(void)args;
	return not_supported(__func__);
}

OHC_API HcclResult HcclCommGetStatus(const char *commId, HcclCommStatus *status)
{
	(void)commId;
	(void)status;
	return not_supported(__func__);
}

OHC_API HcclResult HcclCommWorkingDevNicSet(HcclComm comm, uint32_t *ranks,
					    bool *useBackup, uint32_t nRanks)
{
	(void)comm;
	(void)ranks;
	(void)useBackup;
	(void)nRanks;
	return not_supported(__func__);
}

OHC_API HcclResult HcomCreateGroup(const char *group, uint32_t rankNum,
				   uint32_t *rankIds)
{
	(void)group;
	(void)rankNum;
	(void)rankIds;
	return not_supported(__func__);
}

OHC_API HcclResult HcomDestroyGroup(const char *group)
{
	(void)group;
	return not_supported(__func__);
}

OHC_API HcclResult HcomGetRankSize(const char *group, uint32_t *rankSize)
{
	(void)group;
	(void)rankSize;
	return not_supported(__func__);
}

OHC_API HcclResult HcomGetLocalRankSize(const char *group,
					uint32_t *localRankSize)
{
	(void)group;
	(void)localRankSize;
	return not_supported(__func__);
}

OHC_API HcclResult HcomGetRankId(const char *group, uint32_t *rankId)
{
	(void)group;
	(void)rankId;
	return not_supported(__func__);
}

OHC_API HcclResult HcomGetLocalRankId(const char *group, uint32_t *localRankId)
{
	(void)group;
	(void)localRankId;
	return not_supported(__func__);
}

OHC_API HcclResult HcomGetWorldRankFromGroupRank(const char *group,
						 uint32_t groupRank,
						 uint32_t *worldRank)
{
	(void)group;
	(void)groupRank;
	(void)worldRank;
	return not_supported(__func__);
}

OHC_API HcclResult HcomGetGroupRankFromWorldRank(uint32_t worldRank,
						 const char *group,
						 uint32_t *groupRank)
{
	(void)worldRank;
	(void)group;
	(void)groupRank;
	return not_supported(__func__);
}

OHC_API HcclResult HcomSetGradFusionByIndex(const char *group,
					    uint32_t segmentNum,
					    const uint32_t *idxList)
{
	(void)group;
	(void)segmentNum;
	(void)idxList;
	return not_supported(__func__);
}

OHC_API HcclResult HcomSetGradFusionBySize(const char *group,
					   uint32_t segmentNum,
					   const float *sizeList)
{
	(void)group;
	(void)segmentNum;
	(void)sizeList;
	return not_supported(__func__);
}
