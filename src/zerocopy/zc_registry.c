/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process-wide zero-copy registry: memory ranges (visible to every
 * communicator of the process, as HCCL has it), exported regions
 * (activated blocks and symmetric windows) and the pins operations hold
 * on them. One lock, a leaf except for the runtime's VMM lock (taken
 * inside ours by ohc_rt_vmm_info, never the other way round).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/ohc_rt.h"
#include "util/list.h"
#include "util/log.h"
#include "zerocopy/zc.h"
#include "zerocopy/zc_internal.h"

struct zc_range {
	struct ohc_list node;
	uintptr_t base;
	size_t size;
	unsigned nblocks;
};

static pthread_mutex_t zc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ohc_list ranges = OHC_LIST_INIT(ranges);
static struct ohc_list regions = OHC_LIST_INIT(regions);
static unsigned nregions; /* read without the lock on the fast path */
static uint64_t next_id = 1;

void ohc_zc_lock(void)
{
	pthread_mutex_lock(&zc_lock);
}

void ohc_zc_unlock(void)
{
	pthread_mutex_unlock(&zc_lock);
}

static int overlaps(uintptr_t a, size_t alen, uintptr_t b, size_t blen)
{
	return a < b + blen && b < a + alen;
}

static int inside(uintptr_t p, size_t len, uintptr_t base, size_t size)
{
	return p >= base && p - base <= size && len <= size - (p - base);
}

static struct zc_range *range_holding_locked(uintptr_t p, size_t len)
{
	struct ohc_list *pos;

	ohc_list_for_each(pos, &ranges)
	{
		struct zc_range *r =
			ohc_container_of(pos, struct zc_range, node);

		if (inside(p, len, r->base, r->size))
			return r;
	}
	return NULL;
}

ohc_status_t ohc_zc_range_set(void *base, size_t size, size_t alignment,
			      uint64_t flags)
{
	uintptr_t b = (uintptr_t)base;
	struct ohc_list *pos;
	struct zc_range *nr;

	if (!base) {
		OHC_ERROR(OHC_SS_MEM, "memory range: baseVirPtr is NULL");
		return OHC_ERR_NULL;
	}
	if (!size || alignment || flags) {
		OHC_ERROR(OHC_SS_MEM,
			  "memory range %p: %s (size %zu, alignment %zu, "
			  "flags %llu; alignment and flags must be 0)",
			  base, !size ? "size is 0" : "unsupported value", size,
			  alignment, (unsigned long long)flags);
		return OHC_ERR_INVALID;
	}
	if (b + size < b) {
		OHC_ERROR(OHC_SS_MEM, "memory range %p + %zu wraps around",
			  base, size);
		return OHC_ERR_INVALID;
	}
	nr = calloc(1, sizeof(*nr));
	if (!nr)
		return OHC_ERR_NO_MEMORY;
	nr->base = b;
	nr->size = size;
	ohc_zc_lock();
	ohc_list_for_each(pos, &ranges)
	{
		struct zc_range *r =
			ohc_container_of(pos, struct zc_range, node);

		if (overlaps(b, size, r->base, r->size)) {
			ohc_zc_unlock();
			OHC_ERROR(OHC_SS_MEM,
				  "memory range [%p, +%zu) overlaps the range "
				  "[%p, +%zu) set earlier",
				  base, size, (void *)r->base, r->size);
			free(nr);
			return OHC_ERR_INVALID;
		}
	}
	ohc_list_add_tail(&ranges, &nr->node);
	ohc_zc_unlock();
	OHC_DEBUG(OHC_SS_MEM, "memory range [%p, +%zu) set", base, size);
	return OHC_OK;
}

ohc_status_t ohc_zc_range_unset(void *base)
{
	struct ohc_list *pos;
	struct zc_range *r = NULL;

	if (!base) {
		OHC_ERROR(OHC_SS_MEM, "unset memory range: baseVirPtr is NULL");
		return OHC_ERR_NULL;
	}
	ohc_zc_lock();
	ohc_list_for_each(pos, &ranges)
	{
		struct zc_range *c =
			ohc_container_of(pos, struct zc_range, node);

		if (c->base == (uintptr_t)base)
			r = c;
	}
	if (!r) {
		ohc_zc_unlock();
		OHC_ERROR(OHC_SS_MEM,
			  "unset memory range: %p is not the base of a range "
			  "set with HcclCommSetMemoryRange",
			  base);
		return OHC_ERR_INVALID;
	}
	if (r->nblocks) {
		unsigned n = r->nblocks;

		ohc_zc_unlock();
		OHC_ERROR(OHC_SS_MEM,
			  "unset memory range %p: %u block(s) in it are still "
			  "active; HcclCommDeactivateCommMemory them first",
			  base, n);
		return OHC_ERR_INVALID;
	}
	ohc_list_del(&r->node);
	ohc_zc_unlock();
	free(r);
	return OHC_OK;
}

/* ---- regions ---- */

struct ohc_zc_region *ohc_zc_region_new(const void *owner, int is_window,
					struct ohc_iface *const *ifaces,
					unsigned nifaces, void *va, size_t size,
					ohc_status_t *status_p)
{
	struct ohc_rt_vmm_info info;
	struct ohc_zc_region *r;
	ohc_status_t status;

	if (ohc_rt_vmm_info(va, size, &info) != 0) {
		OHC_ERROR(OHC_SS_MEM,
			  "[%p, +%zu) is not memory mapped with aclrtMapMem",
			  va, size);
		*status_p = OHC_ERR_INVALID;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		*status_p = OHC_ERR_NO_MEMORY;
		return NULL;
	}
	r->owner = owner;
	r->is_window = is_window;
	r->va = (uintptr_t)va;
	r->size = size;
	r->map_id = info.map_id;
	r->handle = info.handle;
	r->fd = fcntl(info.fd, F_DUPFD_CLOEXEC, 0);
	if (r->fd < 0) {
		OHC_ERROR(OHC_SS_MEM, "cannot keep the memfd of %p: dup: %s",
			  va, strerror(errno));
		free(r);
		*status_p = OHC_ERR_SYSCALL;
		return NULL;
	}
	r->fd_off = info.offset;
	r->fd_size = info.map_size;
	r->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < nifaces && i < OHC_ZC_MAX_IFACES; i++) {
		status = ifaces[i]->ops->mem_reg(
			ifaces[i], va, size,
			&(struct ohc_mem_desc){.id = r->id,
					       .fd = r->fd,
					       .fd_off = r->fd_off,
					       .fd_size = r->fd_size},
			&r->tp_handle[i]);
		if (status < 0) {
			OHC_ERROR(OHC_SS_MEM,
				  "transport %s cannot register [%p, +%zu): %s",
				  ifaces[i]->ops->name, va, size,
				  ohc_status_str(status));
			goto err_dereg;
		}
		r->tp_iface[i] = ifaces[i];
		r->ntp = i + 1;
	}
	*status_p = OHC_OK;
	return r;

err_dereg:
	for (unsigned i = 0; i < r->ntp; i++)
		r->tp_iface[i]->ops->mem_dereg(r->tp_iface[i], r->tp_handle[i]);
	close(r->fd);
	free(r);
	*status_p = status;
	return NULL;
}

void ohc_zc_region_link_locked(struct ohc_zc_region *r)
{
	ohc_list_add_tail(&regions, &r->node);
	__atomic_store_n(&nregions, nregions + 1, __ATOMIC_RELEASE);
}

void ohc_zc_region_desc(const struct ohc_zc_region *r,
			struct ohc_mem_desc *desc_p)
{
	memset(desc_p, 0, sizeof(*desc_p));
	desc_p->id = r->id;
	desc_p->fd = r->fd;
	desc_p->fd_off = r->fd_off;
	desc_p->fd_size = r->fd_size;
}

/* Unlinked already (lock dropped): release what the region holds. */
static void region_destroy(struct ohc_zc_region *r)
{
	for (unsigned i = 0; i < r->ntp; i++)
		r->tp_iface[i]->ops->mem_dereg(r->tp_iface[i], r->tp_handle[i]);
	close(r->fd);
	free(r);
}

void ohc_zc_region_drop(struct ohc_zc_region *r)
{
	region_destroy(r);
}

struct ohc_zc_region *ohc_zc_region_orphan_locked(struct ohc_zc_region *r)
{
	for (unsigned i = 0; i < r->ntp; i++)
		r->tp_iface[i]->ops->mem_dereg(r->tp_iface[i], r->tp_handle[i]);
	r->ntp = 0;
	if (!r->pins)
		return r;
	r->orphan = 1;
	return NULL;
}

void ohc_zc_region_unlink_locked(struct ohc_zc_region *r)
{
	ohc_list_del(&r->node);
	__atomic_store_n(&nregions, nregions - 1, __ATOMIC_RELEASE);
	if (r->range)
		r->range->nblocks--;
}

unsigned ohc_zc_region_count(void)
{
	return __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
}

/* ---- activated blocks ---- */

ohc_status_t ohc_zc_activate(const void *owner, struct ohc_iface *const *ifaces,
			     unsigned nifaces, void *va, size_t size,
			     size_t offset, void *handle, uint64_t flags)
{
	uintptr_t p = (uintptr_t)va;
	struct ohc_rt_vmm_info info;
	struct ohc_zc_region *r;
	struct zc_range *range;
	struct ohc_list *pos;
	ohc_status_t status;

	if (!va || !handle) {
		OHC_ERROR(OHC_SS_MEM, "activate memory: %s is NULL",
			  !va ? "virPtr" : "handle");
		return OHC_ERR_NULL;
	}
	if (!size || offset || flags) {
		OHC_ERROR(OHC_SS_MEM,
			  "activate memory %p: %s (size %zu, offset %zu, "
			  "flags %llu; offset and flags must be 0)",
			  va, !size ? "size is 0" : "unsupported value", size,
			  offset, (unsigned long long)flags);
		return OHC_ERR_INVALID;
	}
	ohc_zc_lock();
	range = range_holding_locked(p, size);
	ohc_zc_unlock();
	if (!range) {
		OHC_ERROR(OHC_SS_MEM,
			  "activate memory [%p, +%zu): not inside a range set "
			  "with HcclCommSetMemoryRange",
			  va, size);
		return OHC_ERR_INVALID;
	}
	if (ohc_rt_vmm_info(va, size, &info) != 0 || info.map_base != va ||
	    info.map_size != size || info.handle != handle) {
		OHC_ERROR(OHC_SS_MEM,
			  "activate memory [%p, +%zu): not exactly the "
			  "aclrtMapMem mapping of handle %p (map it there "
			  "whole first)",
			  va, size, handle);
		return OHC_ERR_INVALID;
	}
	r = ohc_zc_region_new(owner, 0, ifaces, nifaces, va, size, &status);
	if (!r)
		return status;
	/* Check and link under one lock hold: concurrent activations. */
	ohc_zc_lock();
	range = range_holding_locked(p, size);
	ohc_list_for_each(pos, &regions)
	{
		struct ohc_zc_region *o =
			ohc_container_of(pos, struct ohc_zc_region, node);

		if (o->is_window || !overlaps(p, size, o->va, o->size))
			continue;
		ohc_zc_unlock();
		OHC_ERROR(OHC_SS_MEM,
			  "activate memory [%p, +%zu): overlaps the active "
			  "block [%p, +%zu)",
			  va, size, (void *)o->va, o->size);
		ohc_zc_region_drop(r);
		return OHC_ERR_INVALID;
	}
	if (!range) { /* unset meanwhile */
		ohc_zc_unlock();
		OHC_ERROR(OHC_SS_MEM,
			  "activate memory [%p, +%zu): its range was unset "
			  "meanwhile",
			  va, size);
		ohc_zc_region_drop(r);
		return OHC_ERR_INVALID;
	}
	r->range = range;
	range->nblocks++;
	ohc_zc_region_link_locked(r);
	ohc_zc_unlock();
	OHC_DEBUG(OHC_SS_MEM, "activated [%p, +%zu) as export %llu", va, size,
		  (unsigned long long)r->id);
	return OHC_OK;
}

ohc_status_t ohc_zc_deactivate(void *va)
{
	struct ohc_zc_region *r = NULL;
	struct ohc_list *pos;

	if (!va) {
		OHC_ERROR(OHC_SS_MEM, "deactivate memory: virPtr is NULL");
		return OHC_ERR_NULL;
	}
	ohc_zc_lock();
	ohc_list_for_each(pos, &regions)
	{
		struct ohc_zc_region *o =
			ohc_container_of(pos, struct ohc_zc_region, node);

		if (!o->is_window && o->va == (uintptr_t)va)
			r = o;
	}
	if (!r) {
		ohc_zc_unlock();
		OHC_ERROR(OHC_SS_MEM,
			  "deactivate memory: %p is not the start of an "
			  "activated block",
			  va);
		return OHC_ERR_INVALID;
	}
	if (r->pins) {
		unsigned n = r->pins;

		ohc_zc_unlock();
		OHC_ERROR(OHC_SS_MEM,
			  "deactivate memory %p: %u operation(s) in flight "
			  "use it; synchronize their streams first",
			  va, n);
		return OHC_ERR_BUSY;
	}
	ohc_zc_region_unlink_locked(r);
	ohc_zc_unlock();
	region_destroy(r);
	return OHC_OK;
}

unsigned ohc_zc_iface_users(const struct ohc_iface *iface)
{
	struct ohc_list *pos;
	unsigned n = 0;

	ohc_zc_lock();
	ohc_list_for_each(pos, &regions)
	{
		struct ohc_zc_region *r =
			ohc_container_of(pos, struct ohc_zc_region, node);

		for (unsigned i = 0; i < r->ntp; i++)
			n += r->tp_iface[i] == iface;
	}
	ohc_zc_unlock();
	return n;
}

void ohc_zc_owner_release(const void *owner)
{
	unsigned nwin = ohc_zc_win_release_owner(owner), nblk = 0;

	for (;;) {
		struct ohc_zc_region *r = NULL;
		struct ohc_list *pos;

		ohc_zc_lock();
		ohc_list_for_each(pos, &regions)
		{
			struct ohc_zc_region *o = ohc_container_of(
				pos, struct ohc_zc_region, node);

			if (o->owner == owner && !o->is_window)
				r = o;
		}
		if (r)
			ohc_zc_region_unlink_locked(r);
		ohc_zc_unlock();
		if (!r)
			break;
		nblk++;
		ohc_zc_lock();
		r = ohc_zc_region_orphan_locked(r);
		ohc_zc_unlock();
		if (r)
			region_destroy(r);
	}
	if (nwin || nblk)
		OHC_INFO(OHC_SS_MEM,
			 "communicator destroyed with %u active block(s) and "
			 "%u window(s): released",
			 nblk, nwin);
}

/* ---- pins: the registration cache of operations ---- */

/* The live region holding [p, p+len), invalidating stale ones. */
static struct ohc_zc_region *region_holding_locked(uintptr_t p, size_t len)
{
	struct ohc_list *pos;

	ohc_list_for_each(pos, &regions)
	{
		struct ohc_zc_region *r =
			ohc_container_of(pos, struct ohc_zc_region, node);
		struct ohc_rt_vmm_info info;

		if (r->stale || !inside(p, len, r->va, r->size))
			continue;
		if (ohc_rt_vmm_info((void *)r->va, r->size, &info) != 0 ||
		    info.map_id != r->map_id) {
			OHC_WARN(OHC_SS_MEM,
				 "exported memory [%p, +%zu) was unmapped "
				 "while active: no longer used for zero-copy",
				 (void *)r->va, r->size);
			r->stale = 1;
			continue;
		}
		return r;
	}
	return NULL;
}

int ohc_zc_pin(const void *a, size_t alen, const void *b, size_t blen,
	       struct ohc_zc_pin *pin)
{
	struct ohc_zc_region *ra, *rb = NULL;

	memset(pin, 0, sizeof(*pin));
	if (!__atomic_load_n(&nregions, __ATOMIC_ACQUIRE) || !a)
		return 0;
	ohc_zc_lock();
	ra = region_holding_locked((uintptr_t)a, alen);
	if (ra && b)
		rb = region_holding_locked((uintptr_t)b, blen);
	if (!ra || (b && !rb)) {
		ohc_zc_unlock();
		return 0;
	}
	ra->pins++;
	pin->r[pin->n++] = ra;
	if (rb && rb != ra) {
		rb->pins++;
		pin->r[pin->n++] = rb;
	}
	ohc_zc_unlock();
	return 1;
}

void ohc_zc_unpin(struct ohc_zc_pin *pin)
{
	struct ohc_zc_region *gone[2];
	unsigned ngone = 0;

	if (!pin->n)
		return;
	ohc_zc_lock();
	for (unsigned i = 0; i < pin->n; i++)
		if (--pin->r[i]->pins == 0 && pin->r[i]->orphan)
			gone[ngone++] = pin->r[i];
	ohc_zc_unlock();
	for (unsigned i = 0; i < ngone; i++)
		region_destroy(gone[i]);
	memset(pin, 0, sizeof(*pin));
}

int ohc_zc_mem_lookup(void *ctx, const void *src, size_t len,
		      struct ohc_mem_desc *desc_p)
{
	const struct ohc_zc_pin *pin = ctx;
	uintptr_t p = (uintptr_t)src;

	if (!len)
		return 0;
	for (unsigned i = 0; i < pin->n; i++) {
		const struct ohc_zc_region *r = pin->r[i];

		if (!inside(p, len, r->va, r->size))
			continue;
		ohc_zc_region_desc(r, desc_p);
		desc_p->fd_off += p - r->va;
		return 1;
	}
	return 0;
}
