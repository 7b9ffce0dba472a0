/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Named groups (hcom.h), the C side of the Python hccl.manage module.
 *
 * The world group is the communicator named "hccl_world_group" of the
 * calling thread's device (as HcclCommGetHandleWithName finds it). A
 * custom group is a sub-communicator of it (ohc_comm_split, named like
 * the group), kept in a registry keyed by (name, device) together with
 * its world ranks. The rankIds list may come in any order (each world
 * rank once): group rank i is rankIds[i], and the sub-communicator numbers
 * its ranks the same way, so the group's ranks are the communicator's
 * (HcclGetRankId on its handle, roots of its collectives).
 *
 * A group must be destroyed with HcomDestroyGroup, not HcclCommDestroy
 * on its handle. Gradient-fusion strategies are validated and stored
 * per group (the world group too; its entry, one per device, outlives
 * the world communicator); nothing consumes them yet. Group names
 * are 1..127 characters; the split id all members use is a hash of
 * the name.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/api_hcom.h"
#include <hccl/hcom.h>

#define WORLD_GROUP "hccl_world_group"
#define GROUP_NAME_MAX 127
#define GROUP_RANKS_MAX 32768u
#define FUSION_SUM_TOLERANCE 1e-3

struct hcom_group {
	struct ohc_list link;
	char name[GROUP_NAME_MAX + 1];
	int device;
	struct ohc_comm *comm; /* NULL for the world group's entry */
	void *handle;	       /* comm's handle, checked before use */
	uint32_t nranks;
	uint32_t *world_ranks; /* group rank -> world rank */
	struct ohc_hcom_fusion fusion;
};

static struct ohc_list groups = OHC_LIST_INIT(groups);
static pthread_mutex_t groups_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Caller holds groups_lock. A group whose communicator the application
 * destroyed itself (HcclCommGetHandleWithName + HcclCommDestroy) is
 * forgotten here instead of being used after free.
 */
static struct hcom_group *group_find(const char *name, int device)
{
	struct ohc_list *pos;

	ohc_list_for_each(pos, &groups)
	{
		struct hcom_group *g =
			ohc_container_of(pos, struct hcom_group, link);

		if (g->device != device || strcmp(g->name, name))
			continue;
		if (g->comm && ohc_comm_lookup(g->handle) != g->comm) {
			OHC_WARN(OHC_SS_API,
				 "group '%s': its communicator was destroyed "
				 "with HcclCommDestroy; the group is gone",
				 g->name);
			ohc_list_del(&g->link);
			free(g->world_ranks);
			free(g);
			return NULL;
		}
		return g;
	}
	return NULL;
}

static int is_world(const char *group)
{
	return !strcmp(group, WORLD_GROUP);
}

/* NULL -> HCCL_E_PTR, empty or too long -> HCCL_E_PARA. */
static HcclResult check_name(const char *fn, const char *group)
{
	size_t len;

	if (!group) {
		OHC_ERROR(OHC_SS_API, "%s: group is NULL", fn);
		return HCCL_E_PTR;
	}
	len = strnlen(group, GROUP_NAME_MAX + 1);
	if (len == 0 || len > GROUP_NAME_MAX) {
		OHC_ERROR(OHC_SS_API,
			  "%s: group name '%.*s%s' is %s (1 to %d characters)",
			  fn, GROUP_NAME_MAX, group, len ? "..." : "",
			  len ? "too long" : "empty", GROUP_NAME_MAX);
		return HCCL_E_PARA;
	}
	return HCCL_SUCCESS;
}

/*
 * What a query needs of a group. For the world group world_ranks is
 * NULL (the identity). Caller holds groups_lock while using it.
 */
struct group_view {
	const struct ohc_comm *comm;
	uint32_t nranks;
	const uint32_t *world_ranks;
	struct hcom_group *entry; /* NULL: the world group has no entry yet */
};

/* Caller holds groups_lock. */
static HcclResult group_resolve(const char *fn, const char *group,
				struct group_view *v)
{
	int device = ohc_rt_current_device();
	struct hcom_group *g;
	HcclResult ret = check_name(fn, group);

	if (ret != HCCL_SUCCESS)
		return ret;
	memset(v, 0, sizeof(*v));
	if (is_world(group)) {
		v->comm = ohc_comm_find(WORLD_GROUP, device);
		if (!v->comm) {
			OHC_ERROR(OHC_SS_API,
				  "%s: no world communicator ('%s') in this "
				  "process for device %d",
				  fn, WORLD_GROUP, device);
			return HCCL_E_PARA;
		}
		v->nranks = v->comm->nranks;
		v->entry = group_find(group, device);
		return HCCL_SUCCESS;
	}
	g = group_find(group, device);
	if (!g) {
		OHC_ERROR(OHC_SS_API,
			  "%s: no group '%s' (HcomCreateGroup first) on "
			  "device %d",
			  fn, group, device);
		return HCCL_E_PARA;
	}
	v->comm = g->comm;
	v->nranks = g->nranks;
	v->world_ranks = g->world_ranks;
	v->entry = g;
	return HCCL_SUCCESS;
}

/* Ranks of c on the caller's host, and the caller's index among them. */
static void local_ranks(const struct ohc_comm *c, uint32_t *size_p,
			uint32_t *id_p)
{
	uint32_t size = 0, id = 0;

	if (!c->host_of) {
		*size_p = c->nranks;
		*id_p = c->rank;
		return;
	}
	for (uint32_t r = 0; r < c->nranks; r++) {
		if (c->host_of[r] != c->host_of[c->rank])
			continue;
		if (r < c->rank)
			id++;
		size++;
	}
	*size_p = size;
	*id_p = id;
}

/* Stable id of a group name: all members derive the same split id. */
static uint64_t name_id(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static HcclResult check_rank_list(const struct ohc_comm *world,
				  const char *group, uint32_t rankNum,
				  const uint32_t *rankIds, uint32_t *index_p)
{
	const char *fn = "HcomCreateGroup";
	uint32_t index = UINT32_MAX;
	HcclResult ret = HCCL_SUCCESS;
	uint8_t *seen;

	if (rankNum == 0 || rankNum > world->nranks ||
	    rankNum > GROUP_RANKS_MAX) {
		OHC_ERROR(OHC_SS_API,
			  "%s: group '%s': rankNum %u is not in [1, %u] (the "
			  "world group's size)",
			  fn, group, rankNum, world->nranks);
		return HCCL_E_PARA;
	}
	seen = calloc(world->nranks, 1);
	if (!seen) {
		OHC_ERROR(OHC_SS_API, "%s: group '%s': out of memory", fn,
			  group);
		return HCCL_E_MEMORY;
	}
	for (uint32_t i = 0; i < rankNum && ret == HCCL_SUCCESS; i++) {
		if (rankIds[i] >= world->nranks) {
			OHC_ERROR(OHC_SS_API,
				  "%s: group '%s': rankIds[%u] = %u is not a "
				  "world rank (world size %u)",
				  fn, group, i, rankIds[i], world->nranks);
			ret = HCCL_E_PARA;
		} else if (seen[rankIds[i]]) {
			OHC_ERROR(OHC_SS_API,
				  "%s: group '%s': rankIds[%u] = %u is listed "
				  "twice",
				  fn, group, i, rankIds[i]);
			ret = HCCL_E_PARA;
		} else {
			seen[rankIds[i]] = 1;
			if (rankIds[i] == world->rank)
				index = i;
		}
	}
	free(seen);
	if (ret != HCCL_SUCCESS)
		return ret;
	if (index == UINT32_MAX) {
		OHC_ERROR(OHC_SS_API,
			  "%s: group '%s': the calling world rank %u is not "
			  "in rankIds (only members call)",
			  fn, group, world->rank);
		return HCCL_E_PARA;
	}
	*index_p = index;
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcomCreateGroup(const char *group, uint32_t rankNum,
				   uint32_t *rankIds)
{
	const char *fn = __func__;
	int device = ohc_rt_current_device();
	struct ohc_comm *world, *sub = NULL;
	struct hcom_group *g;
	struct ohc_comm_cfg cfg;
	ohc_status_t status;
	uint32_t index;
	HcclResult ret;

	OHC_API_ENTRY(NULL, "HcomCreateGroup(group=%s, rankNum=%u, rankIds=%p)",
		      group ? group : "(null)", rankNum, (void *)rankIds);
	ret = check_name(fn, group);
	if (ret != HCCL_SUCCESS)
		return ret;
	if (!rankIds) {
		OHC_ERROR(OHC_SS_API, "%s: rankIds is NULL", fn);
		return HCCL_E_PTR;
	}
	if (is_world(group)) {
		OHC_ERROR(OHC_SS_API, "%s: '%s' is the world group's name", fn,
			  group);
		return HCCL_E_PARA;
	}
	world = ohc_comm_find(WORLD_GROUP, device);
	if (!world) {
		OHC_ERROR(OHC_SS_API,
			  "%s: no world communicator ('%s') in this process "
			  "for device %d",
			  fn, WORLD_GROUP, device);
		return HCCL_E_PARA;
	}
	ret = check_rank_list(world, group, rankNum, rankIds, &index);
	if (ret != HCCL_SUCCESS)
		return ret;
	pthread_mutex_lock(&groups_lock);
	g = group_find(group, device);
	pthread_mutex_unlock(&groups_lock);
	if (g) {
		OHC_ERROR(OHC_SS_API, "%s: group '%s' already exists", fn,
			  group);
		return HCCL_E_PARA;
	}
	g = calloc(1, sizeof(*g));
	if (g)
		g->world_ranks = malloc(rankNum * sizeof(*g->world_ranks));
	if (!g || !g->world_ranks) {
		OHC_ERROR(OHC_SS_API, "%s: group '%s': out of memory", fn,
			  group);
		ret = HCCL_E_MEMORY;
		goto free_group;
	}
	strcpy(g->name, group);
	g->device = device;
	g->nranks = rankNum;
	memcpy(g->world_ranks, rankIds, rankNum * sizeof(*rankIds));
	status = ohc_api_config_decode(NULL, &cfg);
	if (status >= 0)
		strcpy(cfg.name, group);
	status = ohc_comm_split(world, rankNum, rankIds, index, name_id(group),
				status < 0 ? NULL : &cfg, &sub);
	if (status < 0) {
		ret = ohc_status_to_hccl(status);
		goto free_group;
	}
	g->comm = sub;
	g->handle = ohc_comm_handle(sub);
	pthread_mutex_lock(&groups_lock);
	if (group_find(group, device)) {
		pthread_mutex_unlock(&groups_lock);
		OHC_ERROR(OHC_SS_API, "%s: group '%s' was created concurrently",
			  fn, group);
		ret = HCCL_E_PARA;
		goto destroy_comm;
	}
	ohc_list_add_tail(&groups, &g->link);
	pthread_mutex_unlock(&groups_lock);
	return HCCL_SUCCESS;

destroy_comm:
	ohc_comm_destroy(sub);
free_group:
	if (g)
		free(g->world_ranks);
	free(g);
	return ret;
}

OHC_API HcclResult HcomDestroyGroup(const char *group)
{
	int device = ohc_rt_current_device();
	struct hcom_group *g;
	HcclResult ret;

	OHC_API_ENTRY(NULL, "HcomDestroyGroup(group=%s)",
		      group ? group : "(null)");
	ret = check_name(__func__, group);
	if (ret != HCCL_SUCCESS)
		return ret;
	if (is_world(group)) {
		OHC_ERROR(OHC_SS_API, "%s: the world group cannot be destroyed",
			  __func__);
		return HCCL_E_PARA;
	}
	pthread_mutex_lock(&groups_lock);
	g = group_find(group, device);
	if (g)
		ohc_list_del(&g->link);
	pthread_mutex_unlock(&groups_lock);
	if (!g) {
		OHC_ERROR(OHC_SS_API, "%s: no group '%s' on device %d",
			  __func__, group, device);
		return HCCL_E_PARA;
	}
	ohc_comm_destroy(g->comm);
	free(g->world_ranks);
	free(g);
	return HCCL_SUCCESS;
}

enum query {
	Q_SIZE,
	Q_RANK,
	Q_LOCAL_SIZE,
	Q_LOCAL_RANK,
};

static HcclResult query(const char *fn, const char *group, enum query q,
			uint32_t *out)
{
	struct group_view v;
	uint32_t lsize, lrank;
	HcclResult ret;

	OHC_API_ENTRY(NULL, "%s(group=%s, out=%p)", fn,
		      group ? group : "(null)", (void *)out);
	if (!out) {
		OHC_ERROR(OHC_SS_API, "%s: output pointer is NULL", fn);
		return HCCL_E_PTR;
	}
	pthread_mutex_lock(&groups_lock);
	ret = group_resolve(fn, group, &v);
	if (ret == HCCL_SUCCESS) {
		local_ranks(v.comm, &lsize, &lrank);
		*out = q == Q_SIZE	   ? v.nranks
		       : q == Q_RANK	   ? v.comm->rank
		       : q == Q_LOCAL_SIZE ? lsize
					   : lrank;
	}
	pthread_mutex_unlock(&groups_lock);
	return ret;
}

OHC_API HcclResult HcomGetRankSize(const char *group, uint32_t *rankSize)
{
	return query(__func__, group, Q_SIZE, rankSize);
}

OHC_API HcclResult HcomGetLocalRankSize(const char *group,
					uint32_t *localRankSize)
{
	return query(__func__, group, Q_LOCAL_SIZE, localRankSize);
}

OHC_API HcclResult HcomGetRankId(const char *group, uint32_t *rankId)
{
	return query(__func__, group, Q_RANK, rankId);
}

OHC_API HcclResult HcomGetLocalRankId(const char *group, uint32_t *localRankId)
{
	return query(__func__, group, Q_LOCAL_RANK, localRankId);
}

OHC_API HcclResult HcomGetWorldRankFromGroupRank(const char *group,
						 uint32_t groupRank,
						 uint32_t *worldRank)
{
	struct group_view v;
	HcclResult ret;

	OHC_API_ENTRY(NULL,
		      "HcomGetWorldRankFromGroupRank(group=%s, groupRank=%u, "
		      "worldRank=%p)",
		      group ? group : "(null)", groupRank, (void *)worldRank);
	if (!worldRank) {
		OHC_ERROR(OHC_SS_API, "%s: worldRank is NULL", __func__);
		return HCCL_E_PTR;
	}
	pthread_mutex_lock(&groups_lock);
	ret = group_resolve(__func__, group, &v);
	if (ret == HCCL_SUCCESS && groupRank >= v.nranks) {
		OHC_ERROR(OHC_SS_API,
			  "%s: group rank %u is not in group '%s' (size %u)",
			  __func__, groupRank, group, v.nranks);
		ret = HCCL_E_PARA;
	}
	if (ret == HCCL_SUCCESS)
		*worldRank =
			v.world_ranks ? v.world_ranks[groupRank] : groupRank;
	pthread_mutex_unlock(&groups_lock);
	return ret;
}

OHC_API HcclResult HcomGetGroupRankFromWorldRank(uint32_t worldRank,
						 const char *group,
						 uint32_t *groupRank)
{
	struct group_view v;
	uint32_t found = UINT32_MAX;
	HcclResult ret;

	OHC_API_ENTRY(NULL,
		      "HcomGetGroupRankFromWorldRank(worldRank=%u, group=%s, "
		      "groupRank=%p)",
		      worldRank, group ? group : "(null)", (void *)groupRank);
	if (!groupRank) {
		OHC_ERROR(OHC_SS_API, "%s: groupRank is NULL", __func__);
		return HCCL_E_PTR;
	}
	pthread_mutex_lock(&groups_lock);
	ret = group_resolve(__func__, group, &v);
	if (ret == HCCL_SUCCESS) {
		if (!v.world_ranks && worldRank < v.nranks)
			found = worldRank;
		for (uint32_t i = 0; v.world_ranks && i < v.nranks; i++)
			if (v.world_ranks[i] == worldRank)
				found = i;
		if (found == UINT32_MAX) {
			OHC_ERROR(OHC_SS_API,
				  "%s: world rank %u is not in group '%s'",
				  __func__, worldRank, group);
			ret = HCCL_E_PARA;
		}
	}
	if (ret == HCCL_SUCCESS)
		*groupRank = found;
	pthread_mutex_unlock(&groups_lock);
	return ret;
}

/*
 * The entry holding group's fusion settings; the world group gets one on
 * first use. Caller holds groups_lock.
 */
static HcclResult fusion_entry(const char *fn, const char *group,
			       struct hcom_group **g_p)
{
	struct group_view v;
	struct hcom_group *g;
	HcclResult ret = group_resolve(fn, group, &v);

	if (ret != HCCL_SUCCESS)
		return ret;
	if (v.entry) {
		*g_p = v.entry;
		return HCCL_SUCCESS;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		OHC_ERROR(OHC_SS_API, "%s: out of memory", fn);
		return HCCL_E_MEMORY;
	}
	strcpy(g->name, group);
	g->device = ohc_rt_current_device();
	ohc_list_add_tail(&groups, &g->link);
	*g_p = g;
	return HCCL_SUCCESS;
}

static HcclResult check_segments(const char *fn, uint32_t segmentNum,
				 const void *list)
{
	if (!list) {
		OHC_ERROR(OHC_SS_API, "%s: the segment list is NULL", fn);
		return HCCL_E_PTR;
	}
	if (segmentNum == 0 || segmentNum > OHC_HCOM_FUSION_MAX) {
		OHC_ERROR(OHC_SS_API, "%s: segmentNum %u is not in [1, %d]", fn,
			  segmentNum, OHC_HCOM_FUSION_MAX);
		return HCCL_E_PARA;
	}
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcomSetGradFusionByIndex(const char *group,
					    uint32_t segmentNum,
					    const uint32_t *idxList)
{
	struct hcom_group *g;
	HcclResult ret;

	OHC_API_ENTRY(NULL,
		      "HcomSetGradFusionByIndex(group=%s, segmentNum=%u, "
		      "idxList=%p)",
		      group ? group : "(null)", segmentNum,
		      (const void *)idxList);
	ret = check_name(__func__, group);
	if (ret == HCCL_SUCCESS)
		ret = check_segments(__func__, segmentNum, idxList);
	if (ret != HCCL_SUCCESS)
		return ret;
	for (uint32_t i = 1; i < segmentNum; i++) {
		if (idxList[i] <= idxList[i - 1]) {
			OHC_ERROR(OHC_SS_API,
				  "%s: idxList[%u] = %u after idxList[%u] = "
				  "%u: indices must be strictly ascending",
				  __func__, i, idxList[i], i - 1,
				  idxList[i - 1]);
			return HCCL_E_PARA;
		}
	}
	pthread_mutex_lock(&groups_lock);
	ret = fusion_entry(__func__, group, &g);
	if (ret == HCCL_SUCCESS) {
		g->fusion.nidx = segmentNum;
		memcpy(g->fusion.idx, idxList, segmentNum * sizeof(*idxList));
	}
	pthread_mutex_unlock(&groups_lock);
	return ret;
}

OHC_API HcclResult HcomSetGradFusionBySize(const char *group,
					   uint32_t segmentNum,
					   const float *sizeList)
{
	struct hcom_group *g;
	double sum = 0;
	HcclResult ret;

	OHC_API_ENTRY(NULL,
		      "HcomSetGradFusionBySize(group=%s, segmentNum=%u, "
		      "sizeList=%p)",
		      group ? group : "(null)", segmentNum,
		      (const void *)sizeList);
	ret = check_name(__func__, group);
	if (ret == HCCL_SUCCESS)
		ret = check_segments(__func__, segmentNum, sizeList);
	if (ret != HCCL_SUCCESS)
		return ret;
	for (uint32_t i = 0; i < segmentNum; i++) {
		if (!(sizeList[i] >= 0 && sizeList[i] <= 100)) {
			OHC_ERROR(OHC_SS_API,
				  "%s: sizeList[%u] = %g is not a "
				  "percentage in [0, 100]",
				  __func__, i, (double)sizeList[i]);
			return HCCL_E_PARA;
		}
		sum += sizeList[i];
	}
	if (sum > 100.0 + FUSION_SUM_TOLERANCE ||
	    sum < 100.0 - FUSION_SUM_TOLERANCE) {
		OHC_ERROR(OHC_SS_API,
			  "%s: the sizes sum to %g percent, not 100", __func__,
			  sum);
		return HCCL_E_PARA;
	}
	pthread_mutex_lock(&groups_lock);
	ret = fusion_entry(__func__, group, &g);
	if (ret == HCCL_SUCCESS) {
		g->fusion.nsize = segmentNum;
		memcpy(g->fusion.size, sizeList,
		       segmentNum * sizeof(*sizeList));
	}
	pthread_mutex_unlock(&groups_lock);
	return ret;
}

ohc_status_t ohc_hcom_grad_fusion(const char *group,
				  struct ohc_hcom_fusion *fusion_p)
{
	struct hcom_group *g;
	ohc_status_t status = OHC_ERR_NOT_FOUND;

	if (!group || !fusion_p)
		return OHC_ERR_NULL;
	pthread_mutex_lock(&groups_lock);
	g = group_find(group, ohc_rt_current_device());
	if (g && (g->fusion.nidx || g->fusion.nsize)) {
		*fusion_p = g->fusion;
		status = OHC_OK;
	}
	pthread_mutex_unlock(&groups_lock);
	return status;
}
