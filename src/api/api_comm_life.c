/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Communicator life cycle (hccl_comm.h): HcclGetRootInfo, the init calls
 * (root info, rank table, HcclCommInitAll), sub-communicators
 * (HcclCreateSubCommConfig) and HcclCommDestroy. Inside HcclGroupStart/End
 * init, split and destroy only check their pointers and take copies; the
 * call itself runs at the outermost group end (ohc_group_defer).
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "comm/ranktable.h"

#define WORLD_GROUP_NAME "hccl_world_group"

static HcclResult env_check(void)
{
	if (ohc_env_status() != OHC_OK)
		return HCCL_E_PARA; /* the variable was named when parsed */
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo)
{
	OHC_API_ENTRY(NULL, "HcclGetRootInfo(rootInfo=%p)", (void *)rootInfo);
	if (!rootInfo) {
		OHC_ERROR(OHC_SS_API, "HcclGetRootInfo: rootInfo is NULL");
		return HCCL_E_PTR;
	}
	if (env_check() != HCCL_SUCCESS)
		return HCCL_E_PARA;
	return ohc_status_to_hccl(ohc_root_info_create(rootInfo->internal));
}

/* The environment, then config into cfg: the first checks of both inits. */
static ohc_status_t env_config(const HcclCommConfig *config,
			       struct ohc_comm_cfg *cfg)
{
	if (env_check() != HCCL_SUCCESS)
		return OHC_ERR_INVALID; /* HCCL_E_PARA */
	return ohc_api_config_decode(config, cfg);
}

static HcclResult init_root_info(uint32_t nRanks, const HcclRootInfo *rootInfo,
				 uint32_t rank, const HcclCommConfig *config,
				 HcclComm *comm, const char *fn)
{
	struct ohc_comm_cfg cfg;
	struct ohc_bootstrap *bs = NULL;
	struct ohc_comm *c = NULL;
	ohc_status_t status;

	if (!rootInfo || !comm) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL", fn,
			  !rootInfo ? "rootInfo" : "comm");
		return HCCL_E_PTR;
	}
	if (nRanks == 0 || rank >= nRanks) {
		OHC_ERROR(OHC_SS_API, "%s: rank %u is not in [0, nRanks=%u)",
			  fn, rank, nRanks);
		return HCCL_E_PARA;
	}
	status = env_config(config, &cfg);
	if (status < 0)
		return ohc_status_to_hccl(status);
	status = ohc_root_info_check(rootInfo->internal);
	if (status < 0)
		return ohc_status_to_hccl(status);
	status = ohc_bootstrap_init_root(
		rootInfo->internal, nRanks, rank,
		(uint64_t)ohc_env()->connect_timeout_s * 1000, &bs);
	if (status < 0)
		return ohc_status_to_hccl(status);
	status = ohc_comm_create(
		bs, &cfg, ohc_root_info_name(rootInfo->internal), -1, &c);
	if (status < 0) {
		ohc_bootstrap_destroy(bs);
		return ohc_status_to_hccl(status);
	}
	*comm = ohc_comm_handle(c);
	return HCCL_SUCCESS;
}

/*
 * Inside a group, communicator init and destroy are deferred to the
 * outermost HcclGroupEnd (spec 2.6, use a: one thread bringing up the
 * communicators of several devices, whose inits wait for each other). The
 * call only checks its pointers and takes copies; the init runs at group
 * end, on a thread of its own beside the group's other inits, and writes
 * *comm only if it succeeds. HcclGroupEnd returns the first failure.
 */
struct deferred {
	enum { D_ROOT, D_CLUSTER, D_SPLIT, D_DESTROY } kind;
	uint32_t nranks, rank;
	uint32_t *ranks; /* D_SPLIT: copy of rankIds (NULL: not a member) */
	uint64_t id;
	HcclRootInfo root;
	HcclCommConfig config;
	int has_config;
	char *cluster;
	HcclComm *comm_p;
	HcclComm comm;
	const char *fn;
};

static HcclResult init_cluster_info(const char *clusterInfo, uint32_t rank,
				    HcclCommConfig *config, HcclComm *comm,
				    const char *fn);
static HcclResult destroy_now(HcclComm comm);
static HcclResult split_now(HcclComm *comm, uint32_t rankNum, uint32_t *rankIds,
			    uint64_t subCommId, uint32_t subCommRankId,
			    HcclCommConfig *config, HcclComm *subComm);

static ohc_status_t deferred_run(void *p)
{
	struct deferred *d = p;
	HcclCommConfig *cfg = d->has_config ? &d->config : NULL;
	HcclResult r;

	switch (d->kind) {
	case D_ROOT:
		r = init_root_info(d->nranks, &d->root, d->rank, cfg, d->comm_p,
				   d->fn);
		break;
	case D_CLUSTER:
		r = init_cluster_info(d->cluster, d->rank, cfg, d->comm_p,
				      d->fn);
		break;
	case D_SPLIT:
		r = split_now(&d->comm, d->nranks, d->ranks, d->id, d->rank,
			      cfg, d->comm_p);
		break;
	default:
		r = destroy_now(d->comm);
		break;
	}
	if (r != HCCL_SUCCESS)
		OHC_ERROR(OHC_SS_API,
			  "HcclGroupEnd: deferred %s of rank %u "
			  "failed: %s",
			  d->fn, d->rank, HcclGetErrorString(r));
	return ohc_status_from_hccl(r);
}

static void deferred_drop(void *p)
{
	struct deferred *d = p;

	free(d->cluster);
	free(d->ranks);
	free(d);
}

static HcclResult defer(struct deferred *d)
{
	ohc_status_t st;

	st = ohc_group_defer(deferred_run, deferred_drop, d,
			     d->kind != D_DESTROY);
	if (st < 0)
		deferred_drop(d);
	return ohc_status_to_hccl(st);
}

static HcclResult defer_init(const char *fn, uint32_t nranks,
			     const HcclRootInfo *root, const char *cluster,
			     uint32_t rank, const HcclCommConfig *config,
			     HcclComm *comm)
{
	struct deferred *d;

	if ((!root && !cluster) || !comm) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL", fn,
			  !comm	 ? "comm"
			  : root ? "rootInfo"
				 : "clusterInfo");
		return HCCL_E_PTR;
	}
	d = calloc(1, sizeof(*d));
	if (!d || (cluster && !(d->cluster = strdup(cluster)))) {
		free(d);
		OHC_ERROR(OHC_SS_API, "%s: out of memory", fn);
		return HCCL_E_MEMORY;
	}
	d->kind = cluster ? D_CLUSTER : D_ROOT;
	d->nranks = nranks;
	d->rank = rank;
	if (root)
		d->root = *root;
	if (config) {
		d->config = *config;
		d->has_config = 1;
	}
	d->comm_p = comm;
	d->fn = fn;
	return defer(d);
}

OHC_API HcclResult HcclCommInitRootInfo(uint32_t nRanks,
					const HcclRootInfo *rootInfo,
					uint32_t rank, HcclComm *comm)
{
	OHC_API_ENTRY_RANK(rank,
			   "HcclCommInitRootInfo(nRanks=%u, rootInfo=%p, "
			   "rank=%u, comm=%p)",
			   nRanks, (const void *)rootInfo, rank, (void *)comm);
	if (ohc_group_depth() > 0)
		return defer_init(__func__, nRanks, rootInfo, NULL, rank, NULL,
				  comm);
	return init_root_info(nRanks, rootInfo, rank, NULL, comm, __func__);
}

OHC_API HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks,
					      const HcclRootInfo *rootInfo,
					      uint32_t rank,
					      const HcclCommConfig *config,
					      HcclComm *comm)
{
	OHC_API_ENTRY_RANK(rank,
			   "HcclCommInitRootInfoConfig(nRanks=%u, rootInfo=%p, "
			   "rank=%u, config=%p, comm=%p)",
			   nRanks, (const void *)rootInfo, rank,
			   (const void *)config, (void *)comm);
	if (!config) {
		OHC_ERROR(OHC_SS_API, "%s: config is NULL", __func__);
		return HCCL_E_PTR;
	}
	if (ohc_group_depth() > 0)
		return defer_init(__func__, nRanks, rootInfo, NULL, rank,
				  config, comm);
	return init_root_info(nRanks, rootInfo, rank, config, comm, __func__);
}

/* The bootstrap root of a rank-table communicator: rank 0's host. */
static const char *ranktable_root_ip(const struct ohc_ranktable *rt)
{
	const struct ohc_rt_rank *r0 = &rt->ranks[0];
	const struct ohc_rt_server *srv = &rt->servers[r0->server_index];
	unsigned char tmp[sizeof(struct in6_addr)];

	if (srv->host_ip[0])
		return srv->host_ip;
	if (r0->device_ip[0])
		return r0->device_ip;
	if (inet_pton(AF_INET, srv->server_id, tmp) == 1 ||
	    inet_pton(AF_INET6, srv->server_id, tmp) == 1)
		return srv->server_id;
	return "127.0.0.1";
}

static HcclResult init_cluster_info(const char *clusterInfo, uint32_t rank,
				    HcclCommConfig *config, HcclComm *comm,
				    const char *fn)
{
	struct ohc_ranktable *rt = NULL;
	struct ohc_comm_cfg cfg;
	struct ohc_bootstrap *bs = NULL;
	struct ohc_comm *c = NULL;
	const char *root_ip;
	uint16_t port;
	unsigned nports;
	ohc_status_t status;

	if (!clusterInfo || !comm) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL", fn,
			  !clusterInfo ? "clusterInfo" : "comm");
		return HCCL_E_PTR;
	}
	if (strnlen(clusterInfo, 4096) >= 4096) {
		OHC_ERROR(OHC_SS_API,
			  "%s: rank table path is longer than 4095 bytes", fn);
		return HCCL_E_PARA;
	}
	status = env_config(config, &cfg);
	if (status < 0)
		return ohc_status_to_hccl(status);
	status = ohc_ranktable_load(clusterInfo, &rt);
	if (status < 0)
		return ohc_status_to_hccl(status);
	if (rank >= rt->nranks) {
		OHC_ERROR(OHC_SS_API,
			  "%s: rank %u is not in rank table %s (%u ranks)", fn,
			  rank, clusterInfo, rt->nranks);
		status = OHC_ERR_INVALID;
		goto out;
	}
	if (!cfg.name[0] && ohc_comm_name_taken(WORLD_GROUP_NAME, rank)) {
		OHC_ERROR(OHC_SS_API,
			  "%s: the world communicator of rank %u already "
			  "exists in this process",
			  fn, rank);
		status = OHC_ERR_UNAVAILABLE;
		goto out;
	}
	/* the verbs transport picks its RDMA device by this address */
	snprintf(cfg.device_ip, sizeof(cfg.device_ip), "%s",
		 rt->ranks[rank].device_ip);
	snprintf(cfg.backup_ip, sizeof(cfg.backup_ip), "%s",
		 rt->ranks[rank].backup_device_ip);
	root_ip = ranktable_root_ip(rt);
	/* rank 0's host_port exactly, else the first free of 32 ports
	 * from HCCL_IF_BASE_PORT (the ranks look for it there) */
	if (rt->ranks[0].host_port > 0) {
		port = (uint16_t)rt->ranks[0].host_port;
		nports = 1;
	} else {
		port = (uint16_t)ohc_env()->if_base_port;
		nports = OHC_MIN(OHC_BOOTSTRAP_PORTS_MAX, 65536u - port);
	}
	status = ohc_bootstrap_init_addr(
		root_ip, port, nports, rt->content_hash, rt->nranks, rank,
		(uint64_t)ohc_env()->connect_timeout_s * 1000, &bs);
	if (status < 0)
		goto out;
	status = ohc_comm_create(bs, &cfg, WORLD_GROUP_NAME, -1, &c);
	if (status < 0) {
		ohc_bootstrap_destroy(bs);
		goto out;
	}
	*comm = ohc_comm_handle(c);
out:
	ohc_ranktable_free(rt);
	return ohc_status_to_hccl(status);
}

OHC_API HcclResult HcclCommInitClusterInfo(const char *clusterInfo,
					   uint32_t rank, HcclComm *comm)
{
	OHC_API_ENTRY_RANK(rank,
			   "HcclCommInitClusterInfo(clusterInfo=%s, rank=%u, "
			   "comm=%p)",
			   clusterInfo ? clusterInfo : "(null)", rank,
			   (void *)comm);
	if (ohc_group_depth() > 0)
		return defer_init(__func__, 0, NULL, clusterInfo, rank, NULL,
				  comm);
	return init_cluster_info(clusterInfo, rank, NULL, comm, __func__);
}

OHC_API HcclResult HcclCommInitClusterInfoConfig(const char *clusterInfo,
						 uint32_t rank,
						 HcclCommConfig *config,
						 HcclComm *comm)
{
	OHC_API_ENTRY_RANK(rank,
			   "HcclCommInitClusterInfoConfig(clusterInfo=%s, "
			   "rank=%u, config=%p, comm=%p)",
			   clusterInfo ? clusterInfo : "(null)", rank,
			   (void *)config, (void *)comm);
	if (!config) {
		OHC_ERROR(OHC_SS_API, "%s: config is NULL", __func__);
		return HCCL_E_PTR;
	}
	if (ohc_group_depth() > 0)
		return defer_init(__func__, 0, NULL, clusterInfo, rank, config,
				  comm);
	return init_cluster_info(clusterInfo, rank, config, comm, __func__);
}

struct init_all_arg {
	pthread_t thread;
	struct ohc_bootstrap *bs;
	struct ohc_comm_cfg *cfg;
	int device;
	struct ohc_comm *comm;
	ohc_status_t status;
};

static void *init_all_thread(void *p)
{
	struct init_all_arg *a = p;

	a->status = ohc_comm_create(a->bs, a->cfg, WORLD_GROUP_NAME, a->device,
				    &a->comm);
	return NULL;
}

OHC_API HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices,
				   HcclComm *comms)
{
	struct init_all_arg *args = NULL;
	struct ohc_bootstrap **bss = NULL;
	struct ohc_comm_cfg cfg;
	ohc_status_t status = OHC_OK;
	uint32_t started = 0;

	OHC_API_ENTRY(NULL, "HcclCommInitAll(ndev=%u, devices=%p, comms=%p)",
		      ndev, (void *)devices, (void *)comms);
	if (!devices || !comms) {
		OHC_ERROR(OHC_SS_API, "HcclCommInitAll: %s is NULL",
			  !devices ? "devices" : "comms");
		return HCCL_E_PTR;
	}
	if (ndev == 0) {
		OHC_ERROR(OHC_SS_API, "HcclCommInitAll: ndev is 0");
		return HCCL_E_PARA;
	}
	for (uint32_t i = 0; i < ndev; i++) {
		if (devices[i] < 0 || devices[i] >= ohc_config_device_count()) {
			OHC_ERROR(OHC_SS_API,
				  "HcclCommInitAll: devices[%u] = %d is not a "
				  "device id in [0, %d) (OPENHCCL_DEVICE_COUNT "
				  "sets the count)",
				  i, devices[i], ohc_config_device_count());
			return HCCL_E_PARA;
		}
		for (uint32_t j = 0; j < i; j++) {
			if (devices[i] == devices[j]) {
				OHC_ERROR(OHC_SS_API,
					  "HcclCommInitAll: device %d is "
					  "listed twice (devices[%u] and "
					  "devices[%u])",
					  devices[i], j, i);
				return HCCL_E_PARA;
			}
		}
	}
	if (env_check() != HCCL_SUCCESS)
		return HCCL_E_PARA;
	ohc_comm_cfg_default(&cfg);
	if (ohc_comm_name_taken(WORLD_GROUP_NAME, 0)) {
		OHC_ERROR(OHC_SS_API, "HcclCommInitAll: a world communicator "
				      "already exists in this process");
		return HCCL_E_UNAVAIL;
	}
	args = calloc(ndev, sizeof(*args));
	bss = calloc(ndev, sizeof(*bss));
	if (!args || !bss) {
		status = OHC_ERR_NO_MEMORY;
		goto out;
	}
	status = ohc_bootstrap_inproc_create(ndev, bss);
	if (status < 0)
		goto out;
	for (uint32_t i = 0; i < ndev; i++) {
		args[i].bs = bss[i];
		args[i].cfg = &cfg;
		args[i].device = devices[i];
		if (pthread_create(&args[i].thread, NULL, init_all_thread,
				   &args[i]) != 0) {
			OHC_ERROR(OHC_SS_API, "HcclCommInitAll: cannot start "
					      "init thread: out of resources");
			status = OHC_ERR_SYSCALL;
			for (uint32_t j = 0; j < ndev; j++)
				ohc_bootstrap_abort(bss[j]);
			break;
		}
		started++;
	}
	for (uint32_t i = 0; i < started; i++) {
		pthread_join(args[i].thread, NULL);
		if (args[i].status < 0 && status == OHC_OK)
			status = args[i].status;
	}
	if (started < ndev && status == OHC_OK)
		status = OHC_ERR_SYSCALL;
	for (uint32_t i = 0; i < ndev; i++) {
		if (status == OHC_OK) {
			comms[i] = ohc_comm_handle(args[i].comm);
			continue;
		}
		if (i < started && args[i].status == OHC_OK)
			ohc_comm_destroy(args[i].comm); /* owns bs */
		else
			ohc_bootstrap_destroy(bss[i]);
	}
out:
	free(args);
	free(bss);
	return ohc_status_to_hccl(status);
}

/*
 * Spec section 3: members pass the same rankNum, sorted rankIds, subCommId
 * and config, and their own index as subCommRankId; a rank outside the
 * sub-communicator calls with rankIds = NULL and subCommId (or
 * subCommRankId) 0xFFFFFFFF and gets HCCL_SUCCESS with *subComm = NULL.
 * Extension: the parent may itself be a sub-communicator (HCCL refuses
 * nesting; NCCL users expect it).
 */
static HcclResult defer_split(HcclComm *comm, uint32_t rankNum,
			      uint32_t *rankIds, uint64_t subCommId,
			      uint32_t subCommRankId, HcclCommConfig *config,
			      HcclComm *subComm)
{
	struct deferred *d;

	if (!comm || !*comm || !subComm) {
		OHC_ERROR(OHC_SS_API, "HcclCreateSubCommConfig: %s is NULL",
			  !comm	   ? "comm"
			  : !*comm ? "*comm"
				   : "subComm");
		return HCCL_E_PTR;
	}
	d = calloc(1, sizeof(*d));
	if (!d || (rankIds &&
		   !(d->ranks = malloc((size_t)rankNum * sizeof(*rankIds))))) {
		free(d);
		OHC_ERROR(OHC_SS_API, "HcclCreateSubCommConfig: out of memory");
		return HCCL_E_MEMORY;
	}
	d->kind = D_SPLIT;
	d->comm = *comm;
	d->nranks = rankNum;
	if (rankIds)
		memcpy(d->ranks, rankIds, (size_t)rankNum * sizeof(*rankIds));
	d->id = subCommId;
	d->rank = subCommRankId;
	if (config) {
		d->config = *config;
		d->has_config = 1;
	}
	d->comm_p = subComm;
	d->fn = "HcclCreateSubCommConfig";
	return defer(d);
}

OHC_API HcclResult HcclCreateSubCommConfig(
	HcclComm *comm, uint32_t rankNum, uint32_t *rankIds, uint64_t subCommId,
	uint32_t subCommRankId, HcclCommConfig *config, HcclComm *subComm)
{
	OHC_API_ENTRY(
		comm ? *comm : NULL,
		"HcclCreateSubCommConfig(comm=%p, rankNum=%u, rankIds=%p, "
		"subCommId=%llu, subCommRankId=%u, config=%p, "
		"subComm=%p)",
		comm ? *comm : NULL, rankNum, (void *)rankIds,
		(unsigned long long)subCommId, subCommRankId, (void *)config,
		(void *)subComm);
	if (ohc_group_depth() > 0)
		return defer_split(comm, rankNum, rankIds, subCommId,
				   subCommRankId, config, subComm);
	return split_now(comm, rankNum, rankIds, subCommId, subCommRankId,
			 config, subComm);
}

/*
 * HCCL's sub-communicators take rankIds sorted ascending (the split itself
 * numbers ranks in list order, which HcomCreateGroup relies on). A list
 * whose length the split refuses anyway is left to it, unread.
 */
static HcclResult check_sorted(const struct ohc_comm *parent, uint32_t rankNum,
			       const uint32_t *rankIds)
{
	if (rankNum == 0 || rankNum > parent->nranks)
		return HCCL_SUCCESS;
	for (uint32_t i = 1; i < rankNum; i++) {
		if (rankIds[i] > rankIds[i - 1])
			continue;
		OHC_ERROR(OHC_SS_API,
			  "%s: rankIds[%u] = %u %s rankIds[%u] = %u: the list "
			  "must be sorted ascending, without duplicates",
			  "HcclCreateSubCommConfig", i, rankIds[i],
			  rankIds[i] == rankIds[i - 1] ? "repeats" : "is below",
			  i - 1, rankIds[i - 1]);
		return HCCL_E_PARA;
	}
	return HCCL_SUCCESS;
}

static HcclResult split_now(HcclComm *comm, uint32_t rankNum, uint32_t *rankIds,
			    uint64_t subCommId, uint32_t subCommRankId,
			    HcclCommConfig *config, HcclComm *subComm)
{
	struct ohc_comm_cfg cfg;
	struct ohc_comm *parent, *sub = NULL;
	ohc_status_t status;

	if (!comm || !*comm || !subComm) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL",
			  "HcclCreateSubCommConfig",
			  !comm	   ? "comm"
			  : !*comm ? "*comm"
				   : "subComm");
		return HCCL_E_PTR;
	}
	parent = ohc_api_comm(*comm);
	if (!parent) {
		OHC_ERROR(OHC_SS_API, "%s: %p is not a live communicator",
			  "HcclCreateSubCommConfig", *comm);
		return HCCL_E_PARA;
	}
	if (!rankIds &&
	    (subCommId == 0xFFFFFFFFu || subCommRankId == 0xFFFFFFFFu)) {
		OHC_INFO(OHC_SS_API,
			 "%s: rank %u of '%s' is not in the sub-communicator",
			 "HcclCreateSubCommConfig", parent->rank, parent->name);
		*subComm = NULL;
		return HCCL_SUCCESS;
	}
	if (!rankIds || !config) {
		OHC_ERROR(OHC_SS_API,
			  "%s: %s is NULL (a rank outside the "
			  "sub-communicator passes rankIds = NULL and "
			  "subCommId = 0xFFFFFFFF)",
			  "HcclCreateSubCommConfig",
			  !rankIds ? "rankIds" : "config");
		return HCCL_E_PTR;
	}
	if (check_sorted(parent, rankNum, rankIds) != HCCL_SUCCESS)
		return HCCL_E_PARA;
	if (env_check() != HCCL_SUCCESS)
		return HCCL_E_PARA;
	/* A refused config still takes part, so the others hear of it. */
	status = ohc_api_config_decode(config, &cfg);
	status = ohc_comm_split(parent, rankNum, rankIds, subCommRankId,
				subCommId, status < 0 ? NULL : &cfg, &sub);
	if (status < 0)
		return ohc_status_to_hccl(status);
	*subComm = ohc_comm_handle(sub);
	return HCCL_SUCCESS;
}

OHC_API HcclResult HcclCommDestroy(HcclComm comm)
{
	struct deferred *d;

	OHC_API_ENTRY_RANK(ohc_api_log_rank(comm), "HcclCommDestroy(comm=%p)",
			   comm);
	if (!comm)
		return HCCL_SUCCESS;
	if (ohc_group_depth() == 0)
		return destroy_now(comm);
	if (!ohc_api_comm(comm)) {
		OHC_ERROR(OHC_SS_API,
			  "HcclCommDestroy: %p is not a live "
			  "communicator",
			  comm);
		return HCCL_E_PARA;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		OHC_ERROR(OHC_SS_API, "HcclCommDestroy: out of memory");
		return HCCL_E_MEMORY;
	}
	d->kind = D_DESTROY;
	d->comm = comm;
	d->rank = ohc_api_comm(comm)->rank;
	d->fn = "HcclCommDestroy";
	return defer(d);
}

static HcclResult destroy_now(HcclComm comm)
{
	struct ohc_comm *c;

	c = ohc_api_comm(comm);
	if (!c) {
		OHC_ERROR(OHC_SS_API,
			  "HcclCommDestroy: %p is not a live "
			  "communicator",
			  comm);
		return HCCL_E_PARA;
	}
	if (__atomic_load_n(&c->task_ctx, __ATOMIC_ACQUIRE)) {
		OHC_ERROR(OHC_SS_API,
			  "HcclCommDestroy: communicator '%s' still has a task "
			  "context (HcclTaskInit); destroy it first "
			  "(HcclTaskDestroy); nothing was changed",
			  c->name);
		return HCCL_E_AGAIN;
	}
	ohc_api_state_notify(comm, HCCL_COMM_STATE_PHASE_DESTROY_PRE);
	ohc_comm_destroy(c);
	/* the handle is dead now: callbacks may only compare it */
	ohc_api_state_notify(comm, HCCL_COMM_STATE_PHASE_DESTROY_POST);
	return HCCL_SUCCESS;
}
