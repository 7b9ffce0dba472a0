/* SPDX-License-Identifier: Apache-2.0 */
/* Virtual memory management: reserve, physical memfd handles, map/unmap,
 * the libhccl lookup, and every misuse error. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "rt_test.h"

#define MIB ((size_t)1 << 20)

/* Permissions ("rw-s", "---p") of the mapping holding addr; 0 if found. */
static int maps_perms(const void *addr, char perms[5])
{
	unsigned long lo, hi;
	char line[512], p[5];
	int found = -1;
	FILE *f = fopen("/proc/self/maps", "r");

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) != 3)
			continue;
		if ((uintptr_t)addr >= lo && (uintptr_t)addr < hi) {
			memcpy(perms, p, 5);
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

static aclrtPhysicalMemProp hbm_prop(void)
{
	aclrtPhysicalMemProp prop = {ACL_MEM_HANDLE_TYPE_NONE,
				     ACL_MEM_ALLOCATION_TYPE_PINNED,
				     ACL_HBM_MEM_HUGE,
				     {0, ACL_MEM_LOCATION_TYPE_DEVICE},
				     0};
	return prop;
}

Test(vmm, granularity)
{
	aclrtPhysicalMemProp prop = hbm_prop();
	size_t g = 0;

	cr_assert_eq(aclrtMemGetAllocationGranularity(
			     &prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g),
		     ACL_SUCCESS);
	cr_assert_eq(g, 2 * MIB);
	g = 0;
	cr_assert_eq(
		aclrtMemGetAllocationGranularity(
			&prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, &g),
		ACL_SUCCESS);
	cr_assert_eq(g, 2 * MIB);
	prop.memAttr = ACL_HBM_MEM_HUGE1G;
	cr_assert_eq(aclrtMemGetAllocationGranularity(
			     &prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g),
		     ACL_SUCCESS);
	cr_assert_eq(g, 1024 * MIB);
	prop.memAttr = ACL_DDR_MEM_NORMAL;
	prop.location.type = ACL_MEM_LOCATION_TYPE_HOST;
	cr_assert_eq(aclrtMemGetAllocationGranularity(
			     &prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g),
		     ACL_SUCCESS);
	cr_assert_eq(g, 2 * MIB);
	cr_assert_eq(aclrtMemGetAllocationGranularity(
			     &prop, ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF, &g),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMemGetAllocationGranularity(
			     NULL, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMemGetAllocationGranularity(
			     &prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, NULL),
		     ACL_ERROR_INVALID_PARAM);
}

Test(vmm, life_cycle)
{
	aclrtPhysicalMemProp prop = hbm_prop();
	aclrtDrvMemHandle h = NULL;
	char *va = NULL, perms[5], buf[64];
	void *base = NULL;
	size_t off = 0, msize = 0;
	int fd = -1, fds0 = rt_fd_count();

	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtReserveMemAddress((void **)&va, 8 * MIB, 0, NULL, 1),
		     ACL_SUCCESS);
	cr_assert_eq((uintptr_t)va % (2 * MIB), 0);
	cr_assert_eq(maps_perms(va + 4 * MIB, perms), 0);
	cr_assert_str_eq(perms, "---p");
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &prop, 0), ACL_SUCCESS);
	cr_assert_eq(rt_fd_count(), fds0 + 1, "one memfd");
	cr_assert_eq(aclrtMapMem(va + 4 * MIB, 2 * MIB, 0, h, 0), ACL_SUCCESS);
	cr_assert_eq(maps_perms(va + 4 * MIB, perms), 0);
	cr_assert_str_eq(perms, "rw-s");
	cr_assert_eq(maps_perms(va + 2 * MIB, perms), 0);
	cr_assert_str_eq(perms, "---p", "rest of the reservation untouched");

	/* write through the mapping, read back through acl and the fd */
	for (size_t i = 0; i < 2 * MIB; i += 4096)
		va[4 * MIB + i] = (char)(i / 4096);
	strcpy(va + 4 * MIB + 100, "hello vmm");
	cr_assert_eq(aclrtMemcpy(buf, sizeof(buf), va + 4 * MIB + 100, 10,
				 ACL_MEMCPY_DEVICE_TO_HOST),
		     ACL_SUCCESS);
	cr_assert_str_eq(buf, "hello vmm");
	cr_assert_eq(ohc_rt_vmm_lookup(va + 4 * MIB + 100, 10, &fd, &off, &base,
				       &msize),
		     0);
	cr_assert_eq(off, 100);
	cr_assert_eq(base, va + 4 * MIB);
	cr_assert_eq(msize, 2 * MIB);
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(pread(fd, buf, 10, (off_t)off), 10);
	cr_assert_str_eq(buf, "hello vmm");
	cr_assert_eq(
		ohc_rt_vmm_lookup(va + 6 * MIB - 1, 1, NULL, NULL, NULL, NULL),
		0, "NULL outputs allowed");
	cr_assert_eq(ohc_rt_vmm_lookup(va + 6 * MIB - 1, 2, &fd, &off, &base,
				       &msize),
		     -1, "runs past the mapping");
	cr_assert_eq(ohc_rt_vmm_lookup(va, 1, &fd, &off, &base, &msize), -1,
		     "reserved but not mapped");

	cr_assert_eq(aclrtUnmapMem(va + 4 * MIB), ACL_SUCCESS);
	cr_assert_eq(maps_perms(va + 4 * MIB, perms), 0);
	cr_assert_str_eq(perms, "---p", "PROT_NONE restored, no hole");
	cr_assert_eq(
		ohc_rt_vmm_lookup(va + 4 * MIB, 1, &fd, &off, &base, &msize),
		-1);
	cr_assert_eq(aclrtFreePhysical(h), ACL_SUCCESS);
	cr_assert_eq(rt_fd_count(), fds0, "memfd closed");
	cr_assert_eq(aclrtReleaseMemAddress(va), ACL_SUCCESS);
	cr_assert_neq(maps_perms(va + 4 * MIB, perms), 0, "range released");
}

Test(vmm, hccl_test_zero_copy_pattern)
{
	/* -z: one reservation, physical chunks mapped back to back. */
	aclrtPhysicalMemProp prop = hbm_prop();
	aclrtDrvMemHandle h[3];
	size_t g = 0, mapped = 0;
	char *va;
	int fds0 = rt_fd_count();

	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtMemGetAllocationGranularity(
			     &prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtReserveMemAddress((void **)&va, 7 * g, 0, NULL, 1),
		     ACL_SUCCESS);
	for (int i = 0; i < 3; i++) {
		size_t delta = (size_t)(i + 1) * g;

		cr_assert_eq(aclrtMallocPhysical(&h[i], delta, &prop, 0),
			     ACL_SUCCESS);
		cr_assert_eq(aclrtMapMem(va + mapped, delta, 0, h[i], 0),
			     ACL_SUCCESS);
		memset(va + mapped, 'a' + i, delta);
		mapped += delta;
	}
	cr_assert_eq(va[0], 'a');
	cr_assert_eq(va[g], 'b');
	cr_assert_eq(va[3 * g], 'c');
	cr_assert_eq(va[6 * g - 1], 'c');
	cr_assert_eq(ohc_rt_vmm_lookup(va + g - 1, 2, NULL, NULL, NULL, NULL),
		     -1, "spans two mappings");
	cr_assert_eq(aclrtReleaseMemAddress(va), ACL_ERROR_INVALID_PARAM,
		     "still mapped");
	mapped = 0;
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(aclrtUnmapMem(va + mapped), ACL_SUCCESS);
		cr_assert_eq(aclrtFreePhysical(h[i]), ACL_SUCCESS);
		mapped += (size_t)(i + 1) * g;
	}
	cr_assert_eq(aclrtReleaseMemAddress(va), ACL_SUCCESS);
	cr_assert_eq(rt_fd_count(), fds0);
}

Test(vmm, handle_mapped_twice_shows_same_bytes)
{
	aclrtPhysicalMemProp prop = hbm_prop();
	aclrtDrvMemHandle h;
	char *a, *b;

	cr_assert_eq(aclrtReserveMemAddress((void **)&a, 4 * MIB, 0, NULL, 0),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtReserveMemAddress((void **)&b, 2 * MIB, 0, NULL, 1),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &prop, 0), ACL_SUCCESS);
	cr_assert_eq(aclrtMapMem(a + 2 * MIB, 2 * MIB, 0, h, 0), ACL_SUCCESS);
	cr_assert_eq(aclrtMapMem(b, 2 * MIB, 0, h, 0), ACL_SUCCESS);
	strcpy(a + 2 * MIB + 12345, "shared bytes");
	cr_assert_str_eq(b + 12345, "shared bytes");
	b[2 * MIB - 1] = 'z';
	cr_assert_eq(a[4 * MIB - 1], 'z');
	cr_assert_eq(aclrtUnmapMem(a + 2 * MIB), ACL_SUCCESS);
	cr_assert_str_eq(b + 12345, "shared bytes", "other mapping survives");
	cr_assert_eq(aclrtUnmapMem(b), ACL_SUCCESS);
	cr_assert_eq(aclrtFreePhysical(h), ACL_SUCCESS);
	cr_assert_eq(aclrtReleaseMemAddress(a), ACL_SUCCESS);
	cr_assert_eq(aclrtReleaseMemAddress(b), ACL_SUCCESS);
}

Test(vmm, free_physical_while_mapped_defers)
{
	aclrtPhysicalMemProp prop = hbm_prop();
	aclrtDrvMemHandle h, r1 = NULL, r2 = NULL;
	int fds0 = rt_fd_count(), fd = -1;
	char *va;

	cr_assert_eq(aclrtReserveMemAddress((void **)&va, 2 * MIB, 0, NULL, 1),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &prop, 0), ACL_SUCCESS);
	cr_assert_eq(aclrtMapMem(va, 2 * MIB, 0, h, 0), ACL_SUCCESS);
	strcpy(va, "still here");
	cr_assert_eq(aclrtFreePhysical(h), ACL_SUCCESS);
	cr_assert_eq(aclrtFreePhysical(h), ACL_ERROR_INVALID_PARAM,
		     "handle gone");
	cr_assert_str_eq(va, "still here");
	cr_assert_eq(rt_fd_count(), fds0 + 1, "memfd kept for the mapping");
	cr_assert_eq(ohc_rt_vmm_lookup(va, 11, &fd, NULL, NULL, NULL), 0);
	/* retain gives the handle back, with its own reference */
	cr_assert_eq(aclrtMemRetainAllocationHandle(va, &r1), ACL_SUCCESS);
	cr_assert_eq(r1, h);
	cr_assert_eq(aclrtMemRetainAllocationHandle(va, &r2), ACL_SUCCESS);
	cr_assert_eq(aclrtMemRetainAllocationHandle(va + 4096, &r2),
		     ACL_ERROR_INVALID_PARAM, "not a mapping start");
	cr_assert_eq(aclrtFreePhysical(r1), ACL_SUCCESS);
	cr_assert_eq(aclrtUnmapMem(va), ACL_SUCCESS);
	cr_assert_eq(rt_fd_count(), fds0 + 1, "one retain still held");
	cr_assert_eq(aclrtFreePhysical(r2), ACL_SUCCESS);
	cr_assert_eq(rt_fd_count(), fds0, "last reference closes the memfd");
	cr_assert_eq(aclrtReleaseMemAddress(va), ACL_SUCCESS);
}

Test(vmm, large_reservation_alignment)
{
	char *va;

	cr_assert_eq(
		aclrtReserveMemAddress((void **)&va, 1024 * MIB, 0, NULL, 1),
		ACL_SUCCESS);
	cr_assert_eq((uintptr_t)va % (1024 * MIB), 0);
	cr_assert_eq(aclrtReleaseMemAddress(va), ACL_SUCCESS);
	cr_assert_eq(aclrtReserveMemAddress((void **)&va, 1, 0, NULL, 0),
		     ACL_SUCCESS);
	cr_assert_eq((uintptr_t)va % (2 * MIB), 0);
	cr_assert_eq(aclrtReleaseMemAddress(va), ACL_SUCCESS);
}

Test(vmm, reserve_and_release_errors)
{
	void *va = (void *)0x1;
	char *r;

	cr_assert_eq(aclrtReserveMemAddress(NULL, 2 * MIB, 0, NULL, 0),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtReserveMemAddress(&va, 0, 0, NULL, 0),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtReserveMemAddress(&va, 2 * MIB, 4096, NULL, 0),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtReserveMemAddress(&va, 2 * MIB, 0, NULL, 2),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(va, (void *)0x1, "output untouched");
	cr_assert_eq(aclrtReleaseMemAddress(NULL), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtReleaseMemAddress(&va), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtReserveMemAddress((void **)&r, 4 * MIB, 0, NULL, 0),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtReleaseMemAddress(r + 2 * MIB),
		     ACL_ERROR_INVALID_PARAM, "not the start");
	cr_assert_eq(aclrtReleaseMemAddress(r), ACL_SUCCESS);
	cr_assert_eq(aclrtReleaseMemAddress(r), ACL_ERROR_INVALID_PARAM,
		     "twice");
}

Test(vmm, reserve_at_expected_address)
{
	char *a, *b;

	cr_assert_eq(aclrtReserveMemAddress((void **)&a, 4 * MIB, 0, NULL, 1),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtReleaseMemAddress(a), ACL_SUCCESS);
	/* The range is free again: the hint is honoured. */
	cr_assert_eq(aclrtReserveMemAddress((void **)&b, 4 * MIB, 0, a, 1),
		     ACL_SUCCESS);
	cr_assert_eq(b, a);
	/* Taken (or unaligned): the runtime picks another aligned range. */
	cr_assert_eq(aclrtReserveMemAddress((void **)&a, 2 * MIB, 0, b, 1),
		     ACL_SUCCESS);
	cr_assert_neq(a, b);
	cr_assert_eq((uintptr_t)a % (2 * MIB), 0);
	cr_assert_eq(aclrtReleaseMemAddress(a), ACL_SUCCESS);
	cr_assert_eq(aclrtReserveMemAddress((void **)&a, 2 * MIB, 0, b + 1, 1),
		     ACL_SUCCESS);
	cr_assert_eq((uintptr_t)a % (2 * MIB), 0);
	cr_assert_eq(aclrtReleaseMemAddress(a), ACL_SUCCESS);
	cr_assert_eq(aclrtReleaseMemAddress(b), ACL_SUCCESS);
}

Test(vmm, malloc_physical_errors)
{
	aclrtPhysicalMemProp good = hbm_prop(), p;
	aclrtDrvMemHandle h = (aclrtDrvMemHandle)0x1;
	const aclrtMemAttr refused[] = {ACL_DDR_MEM,
					ACL_HBM_MEM,
					ACL_HBM_MEM_P2P_HUGE,
					ACL_HBM_MEM_P2P_NORMAL,
					ACL_HBM_MEM_P2P_HUGE1G,
					(aclrtMemAttr)18};
	const aclrtMemAttr ddr[] = {ACL_DDR_MEM_HUGE, ACL_DDR_MEM_NORMAL,
				    ACL_DDR_MEM_P2P_HUGE,
				    ACL_DDR_MEM_P2P_NORMAL};
	int fds0 = rt_fd_count();

	cr_assert_eq(aclrtMallocPhysical(NULL, 2 * MIB, &good, 0),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, NULL, 0),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMallocPhysical(&h, 0, &good, 0),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &good, 1),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMallocPhysical(&h, 3 * MIB, &good, 0),
		     ACL_ERROR_INVALID_PARAM, "not a granularity multiple");
	p = good;
	p.handleType = ACL_MEM_HANDLE_TYPE_POSIX;
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &p, 0),
		     ACL_ERROR_INVALID_PARAM);
	p = good;
	p.allocationType = (aclrtMemAllocationType)1;
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &p, 0),
		     ACL_ERROR_INVALID_PARAM);
	p = good;
	p.location.type = ACL_MEM_LOCATION_TYPE_UNREGISTERED;
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &p, 0),
		     ACL_ERROR_INVALID_PARAM);
	p.location.type = ACL_MEM_LOCATION_TYPE_MANAGED;
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &p, 0),
		     ACL_ERROR_INVALID_PARAM);
	p = good;
	p.location.id = 1000;
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &p, 0),
		     ACL_ERROR_INVALID_PARAM);
	p = good;
	p.reserve = 1;
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &p, 0),
		     ACL_ERROR_INVALID_PARAM);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		p = good;
		p.memAttr = refused[i];
		cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &p, 0),
			     ACL_ERROR_INVALID_PARAM, "attr %d",
			     (int)refused[i]);
	}
	for (size_t i = 0; i < sizeof(ddr) / sizeof(ddr[0]); i++) {
		p = good;
		p.memAttr = ddr[i];
		cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &p, 0),
			     ACL_ERROR_INVALID_PARAM, "DDR on DEVICE %d",
			     (int)ddr[i]);
		p.location.type = ACL_MEM_LOCATION_TYPE_HOST;
		p.location.id = 0;
		cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &p, 0),
			     ACL_SUCCESS, "DDR on HOST %d", (int)ddr[i]);
		cr_assert_eq(aclrtFreePhysical(h), ACL_SUCCESS);
	}
	cr_assert_eq(aclrtFreePhysical(NULL), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtFreePhysical(&p), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(rt_fd_count(), fds0, "no memfd leaked by errors");
}

Test(vmm, map_and_unmap_errors)
{
	aclrtPhysicalMemProp prop = hbm_prop();
	aclrtDrvMemHandle h, h4;
	char *va, *other, stack[8];
	int fds0 = rt_fd_count();

	cr_assert_eq(aclrtReserveMemAddress((void **)&va, 6 * MIB, 0, NULL, 1),
		     ACL_SUCCESS);
	cr_assert_eq(
		aclrtReserveMemAddress((void **)&other, 2 * MIB, 0, NULL, 1),
		ACL_SUCCESS);
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &prop, 0), ACL_SUCCESS);
	cr_assert_eq(aclrtMallocPhysical(&h4, 4 * MIB, &prop, 0), ACL_SUCCESS);

	cr_assert_eq(aclrtMapMem(NULL, 2 * MIB, 0, h, 0),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMapMem(va, 2 * MIB, 0, NULL, 0),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMapMem(va, 0, 0, h, 0), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMapMem(va, 2 * MIB, 4096, h, 0),
		     ACL_ERROR_INVALID_PARAM, "offset");
	cr_assert_eq(aclrtMapMem(va, 2 * MIB, 0, h, 1), ACL_ERROR_INVALID_PARAM,
		     "flags");
	cr_assert_eq(aclrtMapMem(va, 4 * MIB, 0, h, 0), ACL_ERROR_INVALID_PARAM,
		     "size != physical size");
	cr_assert_eq(aclrtMapMem(va + 4096, 2 * MIB, 0, h, 0),
		     ACL_ERROR_INVALID_PARAM, "unaligned");
	cr_assert_eq(aclrtMapMem(va + 4 * MIB, 4 * MIB, 0, h4, 0),
		     ACL_ERROR_INVALID_PARAM, "runs past the reservation");
	cr_assert_eq(aclrtMapMem((void *)0x100000000000ull, 2 * MIB, 0, h, 0),
		     ACL_ERROR_INVALID_PARAM, "not reserved");
	cr_assert_eq(aclrtMapMem(va, 2 * MIB, 0, (aclrtDrvMemHandle)stack, 0),
		     ACL_ERROR_INVALID_PARAM, "not a handle");
	cr_assert_eq(aclrtMapMem(va + 2 * MIB, 4 * MIB, 0, h4, 0), ACL_SUCCESS);
	cr_assert_eq(aclrtMapMem(va + 4 * MIB, 2 * MIB, 0, h, 0),
		     ACL_ERROR_INVALID_PARAM, "overlap");
	cr_assert_eq(aclrtMapMem(va, 2 * MIB, 0, h, 0), ACL_SUCCESS);

	cr_assert_eq(aclrtUnmapMem(NULL), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtUnmapMem(va + 4 * MIB), ACL_ERROR_INVALID_PARAM,
		     "inside a mapping, not its start");
	cr_assert_eq(aclrtUnmapMem(other), ACL_ERROR_INVALID_PARAM,
		     "reserved, not mapped");
	cr_assert_eq(aclrtReleaseMemAddress(va), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtUnmapMem(va + 2 * MIB), ACL_SUCCESS);
	cr_assert_eq(aclrtUnmapMem(va + 2 * MIB), ACL_ERROR_INVALID_PARAM,
		     "twice");
	cr_assert_eq(aclrtUnmapMem(va), ACL_SUCCESS);
	cr_assert_eq(aclrtFreePhysical(h), ACL_SUCCESS);
	cr_assert_eq(aclrtMapMem(va, 2 * MIB, 0, h, 0), ACL_ERROR_INVALID_PARAM,
		     "freed handle");
	cr_assert_eq(aclrtFreePhysical(h4), ACL_SUCCESS);
	cr_assert_eq(aclrtReleaseMemAddress(va), ACL_SUCCESS);
	cr_assert_eq(aclrtReleaseMemAddress(other), ACL_SUCCESS);
	cr_assert_eq(rt_fd_count(), fds0);
}

Test(vmm, async_copy_into_mapping_is_queued)
{
	aclrtPhysicalMemProp prop = hbm_prop();
	struct rt_probe *slow = rt_probe_new(0, 0, 80);
	aclrtDrvMemHandle h;
	aclrtStream s;
	char *va, *src;

	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
	cr_assert_eq(aclrtMallocHost((void **)&src, 4096), ACL_SUCCESS);
	strcpy(src, "to the mapping");
	cr_assert_eq(aclrtReserveMemAddress((void **)&va, 2 * MIB, 0, NULL, 1),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtMallocPhysical(&h, 2 * MIB, &prop, 0), ACL_SUCCESS);
	cr_assert_eq(aclrtMapMem(va, 2 * MIB, 0, h, 0), ACL_SUCCESS);
	cr_assert_eq(ohc_rt_stream_submit(s, &slow->super), 0);
	cr_assert_eq(aclrtMemcpyAsync(va, 2 * MIB, src, 15,
				      ACL_MEMCPY_HOST_TO_DEVICE, s),
		     ACL_SUCCESS);
	cr_assert_eq(va[0], 0, "pinned on both sides: queued");
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	cr_assert_str_eq(va, "to the mapping");
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	cr_assert_eq(aclrtUnmapMem(va), ACL_SUCCESS);
	cr_assert_eq(aclrtFreePhysical(h), ACL_SUCCESS);
	cr_assert_eq(aclrtReleaseMemAddress(va), ACL_SUCCESS);
	cr_assert_eq(aclrtFreeHost(src), ACL_SUCCESS);
	free(slow);
}
