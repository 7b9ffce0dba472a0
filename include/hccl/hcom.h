/* SPDX-License-Identifier: Apache-2.0 */
#ifndef HCCL_HCOM_H
#define HCCL_HCOM_H

/*
 * Named-group C interface behind the Python hccl.manage / hccl.split
 * modules. Groups are subsets of the world communicator
 * ("hccl_world_group", created from a rank table); group ranks are
 * numbered 0..n-1 in rankIds order; "local" means on this server.
 * Valid C11 and C++11.
 */
#include <stdint.h>

#include <hccl/hccl_types.h>

#ifdef __cplusplus
extern "C" {
#endif

HCCL_API HcclResult HcomCreateGroup(const char *group, uint32_t rankNum,
				    uint32_t *rankIds);
HCCL_API HcclResult HcomDestroyGroup(const char *group);
HCCL_API HcclResult HcomGetRankSize(const char *group, uint32_t *rankSize);
HCCL_API HcclResult HcomGetLocalRankSize(const char *group,
					 uint32_t *localRankSize);
HCCL_API HcclResult HcomGetRankId(const char *group, uint32_t *rankId);
HCCL_API HcclResult HcomGetLocalRankId(const char *group,
				       uint32_t *localRankId);
HCCL_API HcclResult HcomGetWorldRankFromGroupRank(const char *group,
						  uint32_t groupRank,
						  uint32_t *worldRank);
/* Note the argument order, reversed compared with the previous call. */
HCCL_API HcclResult HcomGetGroupRankFromWorldRank(uint32_t worldRank,
						  const char *group,
						  uint32_t *groupRank);
HCCL_API HcclResult HcomSetGradFusionByIndex(const char *group,
					     uint32_t segmentNum,
					     const uint32_t *idxList);
HCCL_API HcclResult HcomSetGradFusionBySize(const char *group,
					    uint32_t segmentNum,
					    const float *sizeList);

#ifdef __cplusplus
}
#endif

#endif /* HCCL_HCOM_H */
