/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Virtual memory management. A reservation is an inaccessible anonymous
 * mapping (PROT_NONE, MAP_NORESERVE) aligned to 2 MiB (1 GiB from 1 GiB
 * up). A physical handle is a memfd of the requested size, shareable with
 * other processes by fd. Mapping replaces part of a reservation with
 * MAP_FIXED|MAP_SHARED of the memfd; unmapping puts a PROT_NONE
 * reservation back over exactly that range, so the hole can never be
 * claimed by another mmap. Everything is guarded by vmm_lock (a leaf).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/rt_internal.h"

#define GRAN_2M ((size_t)2 << 20)
#define GRAN_1G ((size_t)1 << 30)

#define RESERVE_MMAP_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)

struct vmm_res {
	struct ohc_list node; /* reservations */
	uintptr_t base;
	size_t size;
	unsigned nmaps;
};

struct vmm_phys {
	struct ohc_list node; /* phys_live while the handle is valid */
	int fd;
	size_t size;
	size_t gran;
	int numa_node;	/* -1: no preference */
	unsigned refs;	/* aclrtMallocPhysical + retains - frees */
	unsigned nmaps; /* live mappings; the fd closes when both are 0 */
};

struct vmm_map {
	struct ohc_list node; /* mappings */
	uintptr_t addr;
	size_t size;
	struct vmm_phys *phys;
	struct vmm_res *res;
	uint64_t id; /* unique per aclrtMapMem */
};

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ohc_list reservations = OHC_LIST_INIT(reservations);
static struct ohc_list phys_live = OHC_LIST_INIT(phys_live);
static struct ohc_list mappings = OHC_LIST_INIT(mappings);
static uint64_t next_map_id = 1; /* guarded by vmm_lock */

/* ---- lookups (vmm_lock held) ---- */

static bool range_inside(uintptr_t p, size_t len, uintptr_t base, size_t size)
{
	return p >= base && p - base < size && len <= size - (p - base);
}

static struct vmm_res *res_containing_locked(uintptr_t p, size_t len)
{
	struct ohc_list *pos;
	struct vmm_res *r;

	ohc_list_for_each(pos, &reservations)
	{
		r = ohc_container_of(pos, struct vmm_res, node);
		if (range_inside(p, len, r->base, r->size))
			return r;
	}
	return NULL;
}

/* The first mapping that holds [p, p + len), or with overlap that shares
 * a byte with it. */
static struct vmm_map *map_find_locked(uintptr_t p, size_t len, bool overlap)
{
	struct ohc_list *pos;
	struct vmm_map *m;

	ohc_list_for_each(pos, &mappings)
	{
		m = ohc_container_of(pos, struct vmm_map, node);
		if (overlap ? p < m->addr + m->size && m->addr < p + len
			    : range_inside(p, len, m->addr, m->size))
			return m;
	}
	return NULL;
}

static struct vmm_map *map_containing_locked(uintptr_t p, size_t len)
{
	return map_find_locked(p, len, false);
}

static struct vmm_map *map_overlapping_locked(uintptr_t p, size_t len)
{
	return map_find_locked(p, len, true);
}

/* Takes vmm_lock and finds the mapping that starts at virPtr; without one
 * it fails with the lock released. */
static aclError map_at_lock(const char *fn, void *virPtr, struct vmm_map **m_p)
{
	pthread_mutex_lock(&vmm_lock);
	*m_p = map_containing_locked((uintptr_t)virPtr, 0);
	if (!*m_p || (*m_p)->addr != (uintptr_t)virPtr) {
		pthread_mutex_unlock(&vmm_lock);
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: %p is not an address given to "
				   "aclrtMapMem",
				   fn, virPtr);
	}
	return ACL_SUCCESS;
}

static struct vmm_phys *phys_find_locked(const void *handle)
{
	struct ohc_list *pos;

	ohc_list_for_each(
		pos,
		&phys_live) if ((const void *)ohc_container_of(pos,
							       struct vmm_phys,
							       node) ==
				handle) return ohc_container_of(pos,
								struct vmm_phys,
								node);
	return NULL;
}

/* The handle is gone and nothing maps it: release the memory. */
static void phys_destroy_locked(struct vmm_phys *ph)
{
	close(ph->fd);
	free(ph);
}

/* ---- properties ---- */

static bool attr_allowed(aclrtMemAttr a)
{
	switch (a) {
	case ACL_DDR_MEM_HUGE:
	case ACL_DDR_MEM_NORMAL:
	case ACL_HBM_MEM_HUGE:
	case ACL_HBM_MEM_NORMAL:
	case ACL_DDR_MEM_P2P_HUGE:
	case ACL_DDR_MEM_P2P_NORMAL:
	case ACL_HBM_MEM_HUGE1G:
	case ACL_MEM_NORMAL:
	case ACL_MEM_HUGE:
	case ACL_MEM_HUGE1G:
	case ACL_MEM_P2P_NORMAL:
	case ACL_MEM_P2P_HUGE:
	case ACL_MEM_P2P_HUGE1G:
		return true;
	default:
		return false;
	}
}

static bool attr_is_ddr(aclrtMemAttr a)
{
	return a == ACL_DDR_MEM_HUGE || a == ACL_DDR_MEM_NORMAL ||
	       a == ACL_DDR_MEM_P2P_HUGE || a == ACL_DDR_MEM_P2P_NORMAL;
}

/* The checks of aclrtMallocPhysical on prop; writes its granularity. */
static aclError prop_check(const char *fn, const aclrtPhysicalMemProp *prop,
			   size_t *gran_p)
{
	if (!prop)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM, "%s: prop is NULL",
				   fn);
	if (prop->handleType != ACL_MEM_HANDLE_TYPE_NONE)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: prop.handleType %d (only NONE)", fn,
				   (int)prop->handleType);
	if (prop->allocationType != ACL_MEM_ALLOCATION_TYPE_PINNED)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: prop.allocationType %d (only PINNED)",
				   fn, (int)prop->allocationType);
	if (prop->location.type != ACL_MEM_LOCATION_TYPE_HOST &&
	    prop->location.type != ACL_MEM_LOCATION_TYPE_DEVICE &&
	    prop->location.type != ACL_MEM_LOCATION_TYPE_HOST_NUMA)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: prop.location.type %d not supported",
				   fn, (int)prop->location.type);
	if (!attr_allowed(prop->memAttr))
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: prop.memAttr %d not supported", fn,
				   (int)prop->memAttr);
	if (prop->location.type == ACL_MEM_LOCATION_TYPE_DEVICE &&
	    attr_is_ddr(prop->memAttr))
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: prop.memAttr %d is host (DDR) memory "
				   "but location.type is DEVICE",
				   fn, (int)prop->memAttr);
	if (prop->location.type == ACL_MEM_LOCATION_TYPE_DEVICE &&
	    prop->location.id >= (uint32_t)ohc_rt_device_count())
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: prop.location.id %u is not a device "
				   "(count %d)",
				   fn, prop->location.id,
				   ohc_rt_device_count());
	if (prop->reserve != 0)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: prop.reserve must be 0", fn);
	*gran_p = prop->memAttr == ACL_HBM_MEM_HUGE1G ||
				  prop->memAttr == ACL_MEM_HUGE1G ||
				  prop->memAttr == ACL_MEM_P2P_HUGE1G
			  ? GRAN_1G
			  : GRAN_2M;
	return ACL_SUCCESS;
}

static int prop_numa_node(const aclrtPhysicalMemProp *prop)
{
	switch (prop->location.type) {
	case ACL_MEM_LOCATION_TYPE_DEVICE:
		return ohc_rt_device_numa_node((int)prop->location.id);
	case ACL_MEM_LOCATION_TYPE_HOST_NUMA:
		return (int)prop->location.id;
	default:
		return ohc_rt_current_numa_node();
	}
}

OHC_API aclError aclrtMemGetAllocationGranularity(
	aclrtPhysicalMemProp *prop, aclrtMemGranularityOptions option,
	size_t *granularity)
{
	static const char fn[] = "aclrtMemGetAllocationGranularity";
	size_t g;
	aclError ret;

	if (!granularity)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: granularity is NULL", fn);
	if (option != ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM &&
	    option != ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: option %d is neither MINIMUM nor "
				   "RECOMMENDED",
				   fn, (int)option);
	ret = prop_check(fn, prop, &g);
	if (ret)
		return ret;
	*granularity = g;
	return ACL_SUCCESS;
}

/* ---- reservations ---- */

/* A PROT_NONE range of len bytes aligned to align, at hint if possible. */
static void *reserve_range(size_t len, size_t align, void *hint)
{
	uintptr_t raw, base;
	void *p;

	if (hint && (uintptr_t)hint % align == 0) {
		p = mmap(hint, len, PROT_NONE,
			 RESERVE_MMAP_FLAGS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == hint)
			return p;
		if (p != MAP_FAILED)
			munmap(p, len); /* kernel without NOREPLACE */
		OHC_DEBUG(OHC_SS_RT, "reserve at %p refused; runtime picks",
			  hint);
	}
	p = mmap(NULL, len + align, PROT_NONE, RESERVE_MMAP_FLAGS, -1, 0);
	if (p == MAP_FAILED)
		return MAP_FAILED;
	raw = (uintptr_t)p;
	base = OHC_ALIGN_UP(raw, align);
	if (base > raw)
		munmap((void *)raw, base - raw);
	if (raw + align > base)
		munmap((void *)(base + len), raw + align - base);
	return (void *)base;
}

OHC_API aclError aclrtReserveMemAddress(void **virPtr, size_t size,
					size_t alignment, void *expectPtr,
					uint64_t flags)
{
	static const char fn[] = "aclrtReserveMemAddress";
	struct vmm_res *r;
	size_t align, len;
	void *p;

	if (!virPtr)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: virPtr is NULL", fn);
	if (size == 0)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM, "%s: size is 0",
				   fn);
	if (alignment != 0)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: alignment must be 0 (got %zu)", fn,
				   alignment);
	if (flags > 1)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: flags must be 0 or 1 (got %llu)", fn,
				   (unsigned long long)flags);
	align = size >= GRAN_1G ? GRAN_1G : GRAN_2M;
	if (size > SIZE_MAX / 2 - GRAN_1G)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "%s: size %zu too large", fn, size);
	len = OHC_ALIGN_UP(size, GRAN_2M);
	r = calloc(1, sizeof(*r));
	if (!r)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "%s: out of memory", fn);
	p = reserve_range(len, align, expectPtr);
	if (p == MAP_FAILED) {
		free(r);
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "%s: mmap of %zu bytes of address space: %s",
				   fn, len, strerror(errno));
	}
	r->base = (uintptr_t)p;
	r->size = len;
	pthread_mutex_lock(&vmm_lock);
	ohc_list_add_tail(&reservations, &r->node);
	pthread_mutex_unlock(&vmm_lock);
	*virPtr = p;
	return ACL_SUCCESS;
}

OHC_API aclError aclrtReleaseMemAddress(void *virPtr)
{
	static const char fn[] = "aclrtReleaseMemAddress";
	struct vmm_res *r;
	uintptr_t base;
	size_t size;

	if (!virPtr)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: virPtr is NULL", fn);
	pthread_mutex_lock(&vmm_lock);
	r = res_containing_locked((uintptr_t)virPtr, 0);
	if (!r || r->base != (uintptr_t)virPtr) {
		pthread_mutex_unlock(&vmm_lock);
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: %p is not the start of a reservation",
				   fn, virPtr);
	}
	if (r->nmaps) {
		unsigned n = r->nmaps;

		pthread_mutex_unlock(&vmm_lock);
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: reservation %p still has %u "
				   "mapping(s); aclrtUnmapMem them first",
				   fn, virPtr, n);
	}
	ohc_list_del(&r->node);
	pthread_mutex_unlock(&vmm_lock);
	base = r->base;
	size = r->size;
	free(r);
	if (munmap((void *)base, size) != 0)
		return OHC_RT_FAIL(ACL_ERROR_RT_INTERNAL_ERROR,
				   "%s: munmap(%p, %zu): %s", fn, virPtr, size,
				   strerror(errno));
	return ACL_SUCCESS;
}

/* ---- physical memory ---- */

OHC_API aclError aclrtMallocPhysical(aclrtDrvMemHandle *handle, size_t size,
				     const aclrtPhysicalMemProp *prop,
				     uint64_t flags)
{
	static const char fn[] = "aclrtMallocPhysical";
	struct vmm_phys *ph;
	size_t gran;
	aclError ret;
	int fd;

	if (!handle)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: handle is NULL", fn);
	ret = prop_check(fn, prop, &gran);
	if (ret)
		return ret;
	if (size == 0)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM, "%s: size is 0",
				   fn);
	if (flags != 0)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: flags must be 0 (got %llu)", fn,
				   (unsigned long long)flags);
	if (size % gran)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: size %zu is not a multiple of the "
				   "granularity %zu",
				   fn, size, gran);
	ph = calloc(1, sizeof(*ph));
	if (!ph)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "%s: out of memory", fn);
	fd = memfd_create("ohc-rt-phys", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		ret = OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				  "%s: memfd_create: %s", fn, strerror(errno));
		goto err_free;
	}
	if (ftruncate(fd, (off_t)size) != 0) {
		ret = OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				  "%s: ftruncate of the memfd to %zu bytes: %s",
				  fn, size, strerror(errno));
		goto err_close;
	}
	/* Sealed at its size, as peers mapping it require (shm_zc.c). */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		ret = OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				  "%s: sealing the memfd: %s", fn,
				  strerror(errno));
		goto err_close;
	}
	ph->fd = fd;
	ph->size = size;
	ph->gran = gran;
	ph->numa_node = prop_numa_node(prop);
	ph->refs = 1;
	pthread_mutex_lock(&vmm_lock);
	ohc_list_add_tail(&phys_live, &ph->node);
	pthread_mutex_unlock(&vmm_lock);
	*handle = ph;
	return ACL_SUCCESS;

err_close:
	close(fd);
err_free:
	free(ph);
	return ret;
}

/* Drops one reference; the memory goes with the last mapping. */
OHC_API aclError aclrtFreePhysical(aclrtDrvMemHandle handle)
{
	struct vmm_phys *ph;

	if (!handle)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtFreePhysical: handle is NULL");
	pthread_mutex_lock(&vmm_lock);
	ph = phys_find_locked(handle);
	if (!ph) {
		pthread_mutex_unlock(&vmm_lock);
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtFreePhysical: %p is not a live "
				   "physical memory handle",
				   handle);
	}
	if (--ph->refs == 0) {
		ohc_list_del(&ph->node);
		if (ph->nmaps == 0)
			phys_destroy_locked(ph);
	}
	pthread_mutex_unlock(&vmm_lock);
	return ACL_SUCCESS;
}

OHC_API aclError aclrtMemRetainAllocationHandle(void *virPtr,
						aclrtDrvMemHandle *handle)
{
	static const char fn[] = "aclrtMemRetainAllocationHandle";
	struct vmm_map *m;
	aclError ret;

	if (!virPtr || !handle)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM, "%s: %s is NULL",
				   fn, !virPtr ? "virPtr" : "handle");
	ret = map_at_lock(fn, virPtr, &m);
	if (ret)
		return ret;
	if (m->phys->refs++ == 0)
		ohc_list_add_tail(&phys_live, &m->phys->node);
	*handle = m->phys;
	pthread_mutex_unlock(&vmm_lock);
	return ACL_SUCCESS;
}

/* ---- mapping ---- */

OHC_API aclError aclrtMapMem(void *virPtr, size_t size, size_t offset,
			     aclrtDrvMemHandle handle, uint64_t flags)
{
	static const char fn[] = "aclrtMapMem";
	uintptr_t p = (uintptr_t)virPtr;
	struct vmm_phys *ph;
	struct vmm_res *r;
	struct vmm_map *m, *other;
	aclError ret;
	void *q;

	if (!virPtr || !handle || size == 0)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM, "%s: %s", fn,
				   !virPtr   ? "virPtr is NULL"
				   : !handle ? "handle is NULL"
					     : "size is 0");
	if (offset != 0)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: offset must be 0 (got %zu)", fn,
				   offset);
	if (flags != 0)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: flags must be 0 (got %llu)", fn,
				   (unsigned long long)flags);
	m = calloc(1, sizeof(*m));
	if (!m)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "%s: out of memory", fn);

	pthread_mutex_lock(&vmm_lock);
	ph = phys_find_locked(handle);
	if (!ph) {
		ret = OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				  "%s: %p is not a live physical memory "
				  "handle",
				  fn, handle);
		goto err_unlock;
	}
	if (size != ph->size) {
		ret = OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				  "%s: size %zu differs from the physical "
				  "allocation's %zu",
				  fn, size, ph->size);
		goto err_unlock;
	}
	if (p % ph->gran) {
		ret = OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				  "%s: %p is not aligned to the granularity "
				  "%zu",
				  fn, virPtr, ph->gran);
		goto err_unlock;
	}
	r = res_containing_locked(p, size);
	if (!r) {
		ret = OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				  "%s: [%p, +%zu) does not lie inside one "
				  "reservation",
				  fn, virPtr, size);
		goto err_unlock;
	}
	other = map_overlapping_locked(p, size);
	if (other) {
		ret = OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				  "%s: [%p, +%zu) overlaps the mapping at "
				  "%p",
				  fn, virPtr, size, (void *)other->addr);
		goto err_unlock;
	}
	q = mmap(virPtr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 ph->fd, 0);
	if (q == MAP_FAILED) {
		ret = OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				  "%s: mmap of the memfd at %p: %s", fn, virPtr,
				  strerror(errno));
		/* Keep the range reserved whatever the failed mmap left. */
		mmap(virPtr, size, PROT_NONE, RESERVE_MMAP_FLAGS | MAP_FIXED,
		     -1, 0);
		goto err_unlock;
	}
	ohc_rt_mem_bind(virPtr, size, ph->numa_node);
	m->addr = p;
	m->size = size;
	m->phys = ph;
	m->res = r;
	m->id = next_map_id++;
	ph->nmaps++;
	r->nmaps++;
	ohc_list_add_tail(&mappings, &m->node);
	pthread_mutex_unlock(&vmm_lock);
	return ACL_SUCCESS;

err_unlock:
	pthread_mutex_unlock(&vmm_lock);
	free(m);
	return ret;
}

OHC_API aclError aclrtUnmapMem(void *virPtr)
{
	static const char fn[] = "aclrtUnmapMem";
	struct vmm_phys *ph;
	struct vmm_map *m;
	aclError ret;
	void *q;

	if (!virPtr)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: virPtr is NULL", fn);
	ret = map_at_lock(fn, virPtr, &m);
	if (ret)
		return ret;
	q = mmap(virPtr, m->size, PROT_NONE, RESERVE_MMAP_FLAGS | MAP_FIXED, -1,
		 0);
	if (q == MAP_FAILED) {
		pthread_mutex_unlock(&vmm_lock);
		return OHC_RT_FAIL(ACL_ERROR_RT_INTERNAL_ERROR,
				   "%s: re-reserving [%p, +%zu): %s", fn,
				   virPtr, m->size, strerror(errno));
	}
	ohc_list_del(&m->node);
	ph = m->phys;
	m->res->nmaps--;
	if (--ph->nmaps == 0 && ph->refs == 0)
		phys_destroy_locked(ph);
	pthread_mutex_unlock(&vmm_lock);
	free(m);
	return ACL_SUCCESS;
}

/* ---- lookups for libhccl ---- */

bool ohc_rt_vmm_is_mapped(const void *ptr, size_t len)
{
	bool found;

	pthread_mutex_lock(&vmm_lock);
	found = map_containing_locked((uintptr_t)ptr, len) != NULL;
	pthread_mutex_unlock(&vmm_lock);
	return found;
}

OHC_API int ohc_rt_vmm_lookup(const void *ptr, size_t len, int *fd_p,
			      size_t *offset_p, void **map_base_p,
			      size_t *map_size_p)
{
	struct ohc_rt_vmm_info info;

	if (ohc_rt_vmm_info(ptr, len, &info) < 0)
		return -1;
	if (fd_p)
		*fd_p = info.fd;
	if (offset_p)
		*offset_p = info.offset;
	if (map_base_p)
		*map_base_p = info.map_base;
	if (map_size_p)
		*map_size_p = info.map_size;
	return 0;
}

OHC_API int ohc_rt_vmm_info(const void *ptr, size_t len,
			    struct ohc_rt_vmm_info *info_p)
{
	struct vmm_map *m;

	if (!ptr || !info_p)
		return -1;
	pthread_mutex_lock(&vmm_lock);
	m = map_containing_locked((uintptr_t)ptr, len);
	if (!m) {
		pthread_mutex_unlock(&vmm_lock);
		return -1;
	}
	info_p->fd = m->phys->fd;
	info_p->offset = (uintptr_t)ptr - m->addr;
	info_p->map_base = (void *)m->addr;
	info_p->map_size = m->size;
	info_p->handle = m->phys;
	info_p->gran = m->phys->gran;
	info_p->map_id = m->id;
	pthread_mutex_unlock(&vmm_lock);
	return 0;
}
