/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ZEROCOPY_ZC_H
#define OHC_ZEROCOPY_ZC_H

/*
 * Zero-copy memory: the process-wide registry behind the memory-range
 * calls (HcclCommSetMemoryRange & co.) and symmetric windows, and the
 * registration cache collectives consult. See README.md in this folder.
 *
 * A region is memory exported to peers: an activated block or a window.
 * It holds its own dup of the runtime's memfd, so peers may take the
 * memory over (shm: pidfd_getfd + mmap) while the region lives, and the
 * transports' registrations (mem_reg). Operations pin the regions their
 * buffers lie in from launch to completion; a pinned region cannot be
 * deactivated or deregistered (OHC_ERR_BUSY). All functions are
 * thread-safe (one registry lock, never held across communication).
 */
#include <stddef.h>
#include <stdint.h>

#include "core/req.h"
#include "core/tp.h"
#include "util/status.h"

struct ohc_zc_region;
struct ohc_zc_win;

/* The regions one operation pinned (input and output buffer). */
struct ohc_zc_pin {
	struct ohc_zc_region *r[2];
	unsigned n;
};

/* ---- memory ranges and activated blocks (zc_registry.c) ---- */

/* Record [base, base+size) (alignment, flags must be 0; no overlap). */
ohc_status_t ohc_zc_range_set(void *base, size_t size, size_t alignment,
			      uint64_t flags);
/* Forget the range starting at base; OHC_ERR_INVALID while blocks live. */
ohc_status_t ohc_zc_range_unset(void *base);

/*
 * Activate the aclrtMapMem mapping [va, va+size) of handle (offset and
 * flags must be 0) inside a set range, on behalf of owner (a
 * communicator) whose ifaces register it (mem_reg).
 */
ohc_status_t ohc_zc_activate(const void *owner, struct ohc_iface *const *ifaces,
			     unsigned nifaces, void *va, size_t size,
			     size_t offset, void *handle, uint64_t flags);
/* Deactivate the block starting at va; OHC_ERR_BUSY while ops use it. */
ohc_status_t ohc_zc_deactivate(void *va);

/*
 * Owner goes away (communicator destroy, after its ops finished): drop
 * its blocks and windows (logged at INFO when some were left).
 */
void ohc_zc_owner_release(const void *owner);

/* Exported blocks and windows registered with iface (mem_reg). */
unsigned ohc_zc_iface_users(const struct ohc_iface *iface);

/* ---- the registration cache, used by operations ---- */

/*
 * Pin the regions holding [a, a+alen) and [b, b+blen) (b may be NULL):
 * 1 if both lie in live exported memory (then unpin later), else 0 and
 * nothing is pinned. Regions whose mapping changed since registration
 * (unmapped, remapped) are invalidated here and never used again.
 * Costs one atomic load when nothing is exported.
 */
int ohc_zc_pin(const void *a, size_t alen, const void *b, size_t blen,
	       struct ohc_zc_pin *pin);
void ohc_zc_unpin(struct ohc_zc_pin *pin);
/* ohc_exec_mem_fn over a struct ohc_zc_pin (ctx). */
int ohc_zc_mem_lookup(void *ctx, const void *src, size_t len,
		      struct ohc_mem_desc *desc_p);

/* Live regions (blocks + windows) of the process, for tests. */
unsigned ohc_zc_region_count(void);

/* ---- symmetric windows (zc_window.c) ---- */

/*
 * What a window needs of its communicator: its endpoints, and two
 * collectives over its out-of-band channel (the bootstrap), passed in so
 * that this layer stays below the communicator. allgather: buf holds
 * nranks blocks of each bytes, ours at rank; barrier: all ranks reached
 * it. Both are called with coll_ctx and must fail, not hang, when a
 * peer is gone.
 */
struct ohc_zc_group {
	const void *owner;
	uint32_t rank, nranks;
	void *coll_ctx;
	ohc_status_t (*allgather)(void *coll_ctx, void *buf, size_t each);
	ohc_status_t (*barrier)(void *coll_ctx);
	struct ohc_ep **eps;	  /* per rank, NULL for ourselves */
	const struct ohc_transport_ops *const *ep_ops; /* transport per rank */
	struct ohc_iface *const *ifaces;
	unsigned nifaces;
	uint64_t max_bytes; /* largest window (0: no limit) */
};

/*
 * Collective over g: register [addr, addr+size) (an aclrtMapMem mapping
 * of ours) as a window; every rank passes the same size and flag 1. Same
 * host peers' windows are mapped here for HcclSymWinGetPeerPointer. All
 * ranks agree on the result; on error nothing is left behind.
 */
ohc_status_t ohc_zc_win_register(const struct ohc_zc_group *g, void *addr,
				 uint64_t size, uint32_t flag,
				 struct ohc_zc_win **win_p);
/* Collective: release a window (OHC_ERR_INVALID for unknown handles). */
ohc_status_t ohc_zc_win_deregister(void *handle);
/* Local: the window of owner holding [ptr, ptr+size). */
ohc_status_t ohc_zc_win_get(const void *owner, const void *ptr, size_t size,
			    struct ohc_zc_win **win_p, size_t *offset_p);
/* Local: where peer's (window, offset) is, for loads and stores. */
ohc_status_t ohc_zc_win_peer_ptr(void *handle, size_t offset, uint32_t peer,
				 void **ptr_p);
/* Drop every window of owner without communication (destroy). */
unsigned ohc_zc_win_release_owner(const void *owner);

#endif
