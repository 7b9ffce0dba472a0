/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ZEROCOPY_ZC_INTERNAL_H
#define OHC_ZEROCOPY_ZC_INTERNAL_H

/* Private to src/zerocopy: the region object and the registry lock. */
#include <stdint.h>

#include "util/list.h"
#include "zerocopy/zc.h"

#define OHC_ZC_MAX_IFACES 4

struct zc_range;

struct ohc_zc_region {
	struct ohc_list node; /* regions, once linked */
	const void *owner;    /* the communicator that registered it */
	int is_window;
	uintptr_t va;
	size_t size;
	uint64_t id;	 /* export id, unique in the process (at link) */
	uint64_t map_id; /* the runtime mapping it was registered on */
	void *handle;	 /* the aclrtDrvMemHandle */
	int fd;		 /* our dup of the memfd: what peers take over */
	uint64_t fd_off; /* of va in the memfd */
	uint64_t fd_size;
	unsigned pins; /* operations in flight on it */
	int stale;     /* its mapping changed: never used again */
	int orphan;    /* unlinked while pinned: the last unpin frees it */
	struct zc_range *range; /* activated blocks */
	struct ohc_iface *tp_iface[OHC_ZC_MAX_IFACES];
	void *tp_handle[OHC_ZC_MAX_IFACES];
	unsigned ntp;
};

struct ohc_zc_region *ohc_zc_region_new(const void *owner, int is_window,
					struct ohc_iface *const *ifaces,
					unsigned nifaces, void *va, size_t size,
					ohc_status_t *status_p);
/* The export descriptor of the region's start. */
void ohc_zc_region_desc(const struct ohc_zc_region *r,
			struct ohc_mem_desc *desc_p);

void ohc_zc_lock(void);
void ohc_zc_unlock(void);
/* Give r its id and make it visible to lookups (lock held). */
void ohc_zc_region_link_locked(struct ohc_zc_region *r);
/* Hide r from lookups again (lock held). */
void ohc_zc_region_unlink_locked(struct ohc_zc_region *r);
/* Free a region that is not linked (never was, or unlinked). */
void ohc_zc_region_drop(struct ohc_zc_region *r);
/*
 * Its owner goes away: r was unlinked (lock held by the caller). Drop
 * the transports' registrations (the ifaces close next) and free r, or,
 * while operations of another communicator still pin it, leave that to
 * the last unpin. Returns r if the caller must drop it after unlocking.
 */
struct ohc_zc_region *ohc_zc_region_orphan_locked(struct ohc_zc_region *r);

#endif
