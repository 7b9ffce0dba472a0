/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Zero-copy memory ranges and symmetric windows (spec sections 3 and 4):
 * argument checks and the mapping to src/zerocopy. See
 * src/zerocopy/README.md for what happens underneath.
 */
#include "api/api.h"
#include <hccl/hccl_comm.h>
#include <hccl/hccl_sym_win.h>

#include "zerocopy/zc.h"

static HcclResult zc_get_comm(HcclComm comm, const char *fn,
			      struct ohc_comm **c_p)
{
	OHC_API_ENTRY(comm, "%s(comm=%p, ...)", fn, comm);
	return ohc_api_live_comm(fn, comm, c_p);
}

OHC_API HcclResult HcclCommSetMemoryRange(HcclComm comm, void *baseVirPtr,
					  size_t size, size_t alignment,
					  uint64_t flags)
{
	struct ohc_comm *c;
	HcclResult ret = zc_get_comm(comm, __func__, &c);

	if (ret != HCCL_SUCCESS)
		return ret;
	return ohc_status_to_hccl(
		ohc_zc_range_set(baseVirPtr, size, alignment, flags));
}

OHC_API HcclResult HcclCommUnsetMemoryRange(HcclComm comm, void *baseVirPtr)
{
	struct ohc_comm *c;
	HcclResult ret = zc_get_comm(comm, __func__, &c);

	if (ret != HCCL_SUCCESS)
		return ret;
	return ohc_status_to_hccl(ohc_zc_range_unset(baseVirPtr));
}

OHC_API HcclResult HcclCommActivateCommMemory(HcclComm comm, void *virPtr,
					      size_t size, size_t offset,
					      aclrtDrvMemHandle handle,
					      uint64_t flags)
{
	struct ohc_comm *c;
	HcclResult ret = zc_get_comm(comm, __func__, &c);

	if (ret != HCCL_SUCCESS)
		return ret;
	return ohc_status_to_hccl(ohc_zc_activate(
		c, c->ifaces, c->nifaces, virPtr, size, offset, handle, flags));
}

OHC_API HcclResult HcclCommDeactivateCommMemory(HcclComm comm, void *virPtr)
{
	struct ohc_comm *c;
	HcclResult ret = zc_get_comm(comm, __func__, &c);

	if (ret != HCCL_SUCCESS)
		return ret;
	return ohc_status_to_hccl(ohc_zc_deactivate(virPtr));
}

/* A window's collectives: the communicator's bootstrap. */
static ohc_status_t win_allgather(void *bs, void *buf, size_t each)
{
	return ohc_bootstrap_allgather(bs, buf, each);
}

static ohc_status_t win_barrier(void *bs)
{
	return ohc_bootstrap_barrier(bs);
}

OHC_API HcclResult HcclCommSymWinRegister(HcclComm comm, void *addr,
					  uint64_t size,
					  HcclCommSymWindow *winHandle,
					  uint32_t flag)
{
	struct ohc_zc_win *win = NULL;
	struct ohc_zc_group g;
	struct ohc_comm *c;
	ohc_status_t status;
	HcclResult ret = zc_get_comm(comm, __func__, &c);

	if (ret != HCCL_SUCCESS)
		return ret;
	if (!winHandle) {
		OHC_ERROR(OHC_SS_API, "%s: winHandle is NULL", __func__);
		return HCCL_E_PTR;
	}
	g.owner = c;
	g.rank = c->rank;
	g.nranks = c->nranks;
	g.coll_ctx = c->bs;
	g.allgather = win_allgather;
	g.barrier = win_barrier;
	g.eps = c->eps;
	g.ep_ops = c->ep_ops;
	g.ifaces = c->ifaces;
	g.nifaces = c->nifaces;
	g.max_bytes = c->cfg.symwin_max_gb <= UINT64_MAX >> 30
			      ? c->cfg.symwin_max_gb << 30
			      : 0;
	status = ohc_zc_win_register(&g, addr, size, flag, &win);
	if (status == OHC_OK)
		*winHandle = win;
	return ohc_status_to_hccl(status);
}

OHC_API HcclResult HcclCommSymWinDeregister(HcclCommSymWindow winHandle)
{
	OHC_API_ENTRY(NULL, "HcclCommSymWinDeregister(winHandle=%p)",
		      (void *)winHandle);
	return ohc_status_to_hccl(ohc_zc_win_deregister(winHandle));
}

OHC_API HcclResult HcclCommSymWinGet(HcclComm comm, void *ptr, size_t size,
				     HcclCommSymWindow *winHandle,
				     size_t *offset)
{
	struct ohc_zc_win *win = NULL;
	struct ohc_comm *c;
	ohc_status_t status;
	HcclResult ret = zc_get_comm(comm, __func__, &c);

	if (ret != HCCL_SUCCESS)
		return ret;
	status = ohc_zc_win_get(c, ptr, size, winHandle ? &win : NULL, offset);
	if (status == OHC_OK)
		*winHandle = win;
	return ohc_status_to_hccl(status);
}

OHC_API HcclResult HcclSymWinGetPeerPointer(HcclCommSymWindow winHandle,
					    size_t offset, uint32_t peerRank,
					    void **ptr)
{
	OHC_API_ENTRY(NULL,
		      "HcclSymWinGetPeerPointer(winHandle=%p, offset=%zu, "
		      "peerRank=%u, ptr=%p)",
		      (void *)winHandle, offset, peerRank, (void *)ptr);
	return ohc_status_to_hccl(
		ohc_zc_win_peer_ptr(winHandle, offset, peerRank, ptr));
}
