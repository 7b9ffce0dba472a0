/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Symmetric windows. Registration is collective: every rank exports its
 * buffer (a region, so collectives on it go zero-copy), the ranks
 * allgather (size, address, export descriptor), check that the sizes
 * agree, and map the windows of same-host peers here through their
 * transport (ep_mem_map). Ranks of this process (threads) need no
 * mapping: their address is ours. Peers on other hosts have no load/store
 * address. Two allgathers make every rank return the same result.
 */
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "zerocopy/zc.h"
#include "zerocopy/zc_internal.h"

#define ZC_WIN_FLAG_SYMMETRIC 1u

struct zc_peer {
	void *ptr; /* where the peer's window starts, here */
	void *map; /* our mapping of its memfd, if we made one */
	size_t map_len;
	struct ohc_ep *ep;
};

struct ohc_zc_win {
	struct ohc_list node; /* windows */
	const void *owner;
	struct ohc_bootstrap *bs;
	uint32_t rank, nranks;
	uintptr_t addr;
	size_t size;
	struct ohc_zc_region *region;
	struct zc_peer *peers;
};

/* What each rank tells the others. */
struct win_rec {
	int32_t ok;
	uint32_t pad;
	uint64_t size;
	uint64_t addr;
	struct ohc_mem_desc desc;
};

static struct ohc_list windows = OHC_LIST_INIT(windows);

static void win_unmap_peers(struct ohc_zc_win *w)
{
	for (uint32_t r = 0; r < w->nranks; r++) {
		struct zc_peer *p = &w->peers[r];

		if (p->map)
			p->ep->iface->ops->ep_mem_unmap(p->ep, p->map,
							p->map_len);
		memset(p, 0, sizeof(*p));
	}
}

/* Map every peer's window; OHC_OK or the first local failure. */
static ohc_status_t win_map_peers(struct ohc_zc_win *w,
				  const struct ohc_zc_group *g,
				  const struct win_rec *recs)
{
	for (uint32_t r = 0; r < g->nranks; r++) {
		struct zc_peer *p = &w->peers[r];
		struct ohc_ep *ep = g->eps[r];
		ohc_status_t status;
		void *base;

		if (r == g->rank) {
			p->ptr = (void *)w->addr;
			continue;
		}
		if (!ep)
			continue;
		if (g->ep_tp && g->ep_tp[r] && !strcmp(g->ep_tp[r], "self")) {
			p->ptr = (void *)(uintptr_t)recs[r].addr;
			continue;
		}
		/* the peer's window must lie inside the memory it exports:
		 * loads and stores go to ptr + [0, size) */
		if (recs[r].desc.fd_off > recs[r].desc.fd_size ||
		    recs[r].size > recs[r].desc.fd_size - recs[r].desc.fd_off) {
			OHC_ERROR(OHC_SS_MEM,
				  "rank %u: rank %u's window (offset %llu, "
				  "%llu bytes) lies outside the %llu bytes it "
				  "exports",
				  g->rank, r,
				  (unsigned long long)recs[r].desc.fd_off,
				  (unsigned long long)recs[r].size,
				  (unsigned long long)recs[r].desc.fd_size);
			return OHC_ERR_INVALID;
		}
		status = ep->iface->ops->ep_mem_map(ep, &recs[r].desc, &base);
		if (status == OHC_ERR_UNSUPPORTED)
			continue; /* no load/store path (another host) */
		if (status < 0)
			return status;
		p->map = base;
		p->map_len = recs[r].desc.fd_size;
		p->ep = ep;
		p->ptr = (char *)base + recs[r].desc.fd_off;
	}
	return OHC_OK;
}

/* Everyone's verdict: the first rank's error, or OHC_OK. */
static ohc_status_t agree(struct ohc_bootstrap *bs, uint32_t nranks,
			  ohc_status_t mine, uint32_t *bad_rank_p)
{
	int32_t *all = calloc(nranks, sizeof(*all));
	ohc_status_t status;

	if (!all)
		return OHC_ERR_NO_MEMORY;
	all[ohc_bootstrap_rank(bs)] = mine;
	status = ohc_bootstrap_allgather(bs, all, sizeof(*all));
	for (uint32_t r = 0; status == OHC_OK && r < nranks; r++) {
		if (all[r] < 0) {
			status = all[r];
			*bad_rank_p = r;
		}
	}
	free(all);
	return status;
}

ohc_status_t ohc_zc_win_register(const struct ohc_zc_group *g, void *addr,
				 uint64_t size, uint32_t flag,
				 struct ohc_zc_win **win_p)
{
	struct win_rec *recs = NULL;
	struct ohc_zc_win *w = NULL;
	ohc_status_t status, local = OHC_OK;
	uint32_t bad = 0;

	if (!addr || !win_p) {
		OHC_ERROR(OHC_SS_MEM, "window register: %s is NULL",
			  !addr ? "addr" : "winHandle");
		return OHC_ERR_NULL;
	}
	if (!size || flag != ZC_WIN_FLAG_SYMMETRIC) {
		OHC_ERROR(OHC_SS_MEM,
			  "window register %p: %s (size %llu, flag %u; only "
			  "flag 1, collective symmetric, is supported)",
			  addr, !size ? "size is 0" : "unsupported flag",
			  (unsigned long long)size, flag);
		return OHC_ERR_INVALID;
	}
	recs = calloc(g->nranks, sizeof(*recs));
	w = calloc(1, sizeof(*w));
	if (!recs || !w || !(w->peers = calloc(g->nranks, sizeof(*w->peers)))) {
		status = OHC_ERR_NO_MEMORY;
		goto err_free;
	}
	w->owner = g->owner;
	w->bs = g->bs;
	w->rank = g->rank;
	w->nranks = g->nranks;
	w->addr = (uintptr_t)addr;
	w->size = (size_t)size;
	if (g->max_bytes && size > g->max_bytes)
		OHC_ERROR(OHC_SS_MEM,
			  "window register %p: size %llu is above the "
			  "communicator's limit of %llu bytes "
			  "(hcclSymWinMaxMemSizePerRank)",
			  addr, (unsigned long long)size,
			  (unsigned long long)g->max_bytes);
	else
		w->region =
			ohc_zc_region_new(g->owner, 1, g->ifaces, g->nifaces,
					  addr, w->size, &local);
	if (w->region)
		ohc_zc_region_desc(w->region, &recs[g->rank].desc);
	recs[g->rank].ok = w->region ? 1 : 0;
	recs[g->rank].size = size;
	recs[g->rank].addr = (uintptr_t)addr;
	status = ohc_bootstrap_allgather(g->bs, recs, sizeof(*recs));
	if (status < 0)
		goto err_region;
	for (uint32_t r = 0; r < g->nranks; r++) {
		if (!recs[r].ok) {
			if (r != g->rank)
				OHC_ERROR(OHC_SS_MEM,
					  "window register: rank %u could not "
					  "export its buffer",
					  r);
			status = OHC_ERR_INVALID;
			goto err_region;
		}
		if (recs[r].size != size) {
			OHC_ERROR(OHC_SS_MEM,
				  "window register: rank %u's size %llu "
				  "differs from ours (%llu); windows are "
				  "symmetric",
				  r, (unsigned long long)recs[r].size,
				  (unsigned long long)size);
			status = OHC_ERR_INVALID;
			goto err_region;
		}
	}
	local = win_map_peers(w, g, recs);
	status = agree(g->bs, g->nranks, local, &bad);
	if (status < 0) {
		if (local == OHC_OK)
			OHC_ERROR(OHC_SS_MEM,
				  "window register: rank %u failed to map "
				  "its peers' windows",
				  bad);
		goto err_unmap;
	}
	ohc_zc_lock();
	ohc_zc_region_link_locked(w->region);
	ohc_list_add_tail(&windows, &w->node);
	ohc_zc_unlock();
	free(recs);
	OHC_DEBUG(OHC_SS_MEM, "rank %u: window [%p, +%llu) registered", g->rank,
		  addr, (unsigned long long)size);
	*win_p = w;
	return OHC_OK;

err_unmap:
	win_unmap_peers(w);
err_region:
	if (w->region)
		ohc_zc_region_drop(w->region);
err_free:
	if (w)
		free(w->peers);
	free(w);
	free(recs);
	return status;
}

/* The live window behind handle (lock held), or NULL. */
static struct ohc_zc_win *win_find_locked(const void *handle)
{
	struct ohc_list *pos;

	ohc_list_for_each(pos, &windows)
	{
		struct ohc_zc_win *w =
			ohc_container_of(pos, struct ohc_zc_win, node);

		if (w == handle)
			return w;
	}
	return NULL;
}

static void win_free(struct ohc_zc_win *w)
{
	win_unmap_peers(w);
	if (w->region) /* NULL: orphaned, the last unpin frees it */
		ohc_zc_region_drop(w->region);
	free(w->peers);
	free(w);
}

ohc_status_t ohc_zc_win_deregister(void *handle)
{
	struct ohc_zc_win *w;
	ohc_status_t status;

	if (!handle) {
		OHC_ERROR(OHC_SS_MEM, "window deregister: winHandle is NULL");
		return OHC_ERR_NULL;
	}
	ohc_zc_lock();
	w = win_find_locked(handle);
	if (!w) {
		ohc_zc_unlock();
		OHC_ERROR(OHC_SS_MEM,
			  "window deregister: %p is not a registered window "
			  "(deregistered already?)",
			  handle);
		return OHC_ERR_INVALID;
	}
	if (w->region->pins) {
		unsigned n = w->region->pins;

		ohc_zc_unlock();
		OHC_ERROR(OHC_SS_MEM,
			  "window deregister %p: %u operation(s) in flight "
			  "use it; synchronize their streams first",
			  handle, n);
		return OHC_ERR_BUSY;
	}
	ohc_list_del(&w->node);
	ohc_zc_region_unlink_locked(w->region);
	ohc_zc_unlock();
	/* Collective: no peer still loads or stores through its mapping. */
	status = ohc_bootstrap_barrier(w->bs);
	win_free(w);
	return status;
}

ohc_status_t ohc_zc_win_get(const void *owner, const void *ptr, size_t size,
			    struct ohc_zc_win **win_p, size_t *offset_p)
{
	uintptr_t p = (uintptr_t)ptr;
	struct ohc_list *pos;

	if (!ptr || !win_p || !offset_p) {
		OHC_ERROR(OHC_SS_MEM, "window get: %s is NULL",
			  !ptr	   ? "ptr"
			  : !win_p ? "winHandle"
				   : "offset");
		return OHC_ERR_NULL;
	}
	if (!size) {
		OHC_ERROR(OHC_SS_MEM, "window get %p: size is 0", ptr);
		return OHC_ERR_INVALID;
	}
	ohc_zc_lock();
	ohc_list_for_each(pos, &windows)
	{
		struct ohc_zc_win *w =
			ohc_container_of(pos, struct ohc_zc_win, node);

		if (w->owner == owner && p >= w->addr &&
		    p - w->addr < w->size && size <= w->size - (p - w->addr)) {
			*win_p = w;
			*offset_p = p - w->addr;
			ohc_zc_unlock();
			return OHC_OK;
		}
	}
	ohc_zc_unlock();
	OHC_DEBUG(OHC_SS_MEM, "window get: [%p, +%zu) is in no window", ptr,
		  size);
	return OHC_ERR_NOT_FOUND;
}

ohc_status_t ohc_zc_win_peer_ptr(void *handle, size_t offset, uint32_t peer,
				 void **ptr_p)
{
	struct ohc_zc_win *w;
	void *base;

	if (!handle || !ptr_p) {
		OHC_ERROR(OHC_SS_MEM, "window peer pointer: %s is NULL",
			  !handle ? "winHandle" : "ptr");
		return OHC_ERR_NULL;
	}
	ohc_zc_lock();
	w = win_find_locked(handle);
	if (!w || peer >= w->nranks || offset >= w->size) {
		uint32_t n = w ? w->nranks : 0;
		size_t sz = w ? w->size : 0;

		ohc_zc_unlock();
		if (!w)
			OHC_ERROR(OHC_SS_MEM,
				  "window peer pointer: %p is not a registered "
				  "window",
				  handle);
		else
			OHC_ERROR(OHC_SS_MEM,
				  "window peer pointer: %s (peerRank %u of %u, "
				  "offset %zu of %zu)",
				  peer >= n ? "peerRank out of range"
					    : "offset outside the window",
				  peer, n, offset, sz);
		return OHC_ERR_INVALID;
	}
	base = w->peers[peer].ptr;
	ohc_zc_unlock();
	if (!base) {
		OHC_ERROR(OHC_SS_MEM,
			  "window peer pointer: rank %u is on another host: "
			  "no load/store address",
			  peer);
		return OHC_ERR_UNSUPPORTED;
	}
	*ptr_p = (char *)base + offset;
	return OHC_OK;
}

unsigned ohc_zc_win_release_owner(const void *owner)
{
	unsigned n = 0;

	for (;;) {
		struct ohc_zc_win *w = NULL;
		struct ohc_list *pos;

		ohc_zc_lock();
		ohc_list_for_each(pos, &windows)
		{
			struct ohc_zc_win *c =
				ohc_container_of(pos, struct ohc_zc_win, node);

			if (c->owner == owner)
				w = c;
		}
		if (w) {
			ohc_list_del(&w->node);
			ohc_zc_region_unlink_locked(w->region);
			w->region = ohc_zc_region_orphan_locked(w->region);
		}
		ohc_zc_unlock();
		if (!w)
			return n;
		win_free(w);
		n++;
	}
}
