/* SPDX-License-Identifier: Apache-2.0 */
/* aclrtMalloc/MallocHost, memory info, copies and sets. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "rt_test.h"

Test(memory, malloc_free)
{
	const long page = sysconf(_SC_PAGESIZE);
	const aclrtMemMallocPolicy pol[] = {
		ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY,
		ACL_MEM_MALLOC_NORMAL_ONLY, ACL_MEM_MALLOC_HUGE1G_ONLY};
	void *p = NULL;

	cr_assert_eq(aclrtSetDevice(1), ACL_SUCCESS);
	for (size_t i = 0; i < sizeof(pol) / sizeof(pol[0]); i++) {
		cr_assert_eq(aclrtMalloc(&p, 3 * 1024 * 1024 + 5, pol[i]),
			     ACL_SUCCESS);
		cr_assert_eq((uintptr_t)p % (uintptr_t)page, 0);
		memset(p, 0xab, 3 * 1024 * 1024 + 5);
		cr_assert_eq(((unsigned char *)p)[3 * 1024 * 1024 + 4], 0xab);
		cr_assert_eq(aclrtFree(p), ACL_SUCCESS);
	}
	cr_assert_eq(aclrtMallocAlign32(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtFree(p), ACL_SUCCESS);
	cr_assert_eq(aclrtFree(p), ACL_ERROR_INVALID_PARAM, "double free");
}

Test(memory, malloc_errors)
{
	void *p = (void *)0x1, *h;
	char stack;

	cr_assert_eq(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(p, (void *)0x1, "output untouched on failure");
	cr_assert_eq(aclrtMalloc(NULL, 64, ACL_MEM_MALLOC_HUGE_FIRST),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMallocHost(&p, 0), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMallocHost(NULL, 8), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMalloc(&p, SIZE_MAX / 2, ACL_MEM_MALLOC_HUGE_ONLY),
		     ACL_ERROR_RT_MEMORY_ALLOCATION);
	cr_assert_eq(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtFreeHost(NULL), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtFree(&stack), ACL_ERROR_INVALID_PARAM);
	/* Each free only takes its own allocator's memory. */
	cr_assert_eq(aclrtMallocHost(&h, 4096), ACL_SUCCESS);
	cr_assert_eq(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtFree(h), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtFreeHost(p), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtFree((char *)p + 64), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtFreeHost(h), ACL_SUCCESS);
	cr_assert_eq(aclrtFree(p), ACL_SUCCESS);
}

Test(memory, mem_info)
{
	size_t fr = 0, tot = 0;

	cr_assert_eq(aclrtGetMemInfo(ACL_HBM_MEM_HUGE, &fr, &tot),
		     ACL_ERROR_RT_CONTEXT_NULL);
	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtGetMemInfo(ACL_HBM_MEM_HUGE, NULL, &tot),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtGetMemInfo((aclrtMemAttr)99, &fr, &tot),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtGetMemInfo(ACL_HBM_MEM_HUGE, &fr, &tot), ACL_SUCCESS);
	cr_assert_gt(tot, (size_t)64 << 20);
	cr_assert_gt(fr, 0);
	cr_assert_leq(fr, tot);
	cr_assert_eq(aclrtGetMemInfo(ACL_DDR_MEM_HUGE, &fr, &tot), ACL_SUCCESS);
}

Test(memory, memcpy_check_order)
{
	char a[16] = "abcdefghijklmno", b[16] = {0};

	/* count 0 wins over every other check */
	cr_assert_eq(aclrtMemcpy(NULL, 0, NULL, 0, (aclrtMemcpyKind)99),
		     ACL_SUCCESS);
	/* NULL before kind */
	cr_assert_eq(aclrtMemcpy(NULL, 16, a, 4, (aclrtMemcpyKind)7),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMemcpy(b, 16, NULL, 4, ACL_MEMCPY_HOST_TO_HOST),
		     ACL_ERROR_INVALID_PARAM);
	/* kind (6, 7 rejected) before destMax */
	cr_assert_eq(aclrtMemcpy(b, 1, a, 4, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(
		aclrtMemcpy(b, 16, a, 4, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE),
		ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMemcpy(b, 1, a, 4, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE),
		     ACL_ERROR_RT_PARAM_INVALID);
	cr_assert_eq(aclrtMemcpy(b, 0, a, 4, ACL_MEMCPY_HOST_TO_HOST),
		     ACL_ERROR_RT_PARAM_INVALID);
	/* destMax before dst == src */
	cr_assert_eq(aclrtMemcpy(a, 2, a, 4, ACL_MEMCPY_DEVICE_TO_DEVICE),
		     ACL_ERROR_RT_PARAM_INVALID);
	cr_assert_eq(aclrtMemcpy(a, 16, a, 4, ACL_MEMCPY_DEVICE_TO_DEVICE),
		     ACL_SUCCESS);
	cr_assert_eq(memcmp(b, "\0\0\0\0", 4), 0, "nothing copied so far");
	for (int k = 0; k <= 5; k++) {
		memset(b, 0, sizeof(b));
		cr_assert_eq(
			aclrtMemcpy(b, sizeof(b), a, 5, (aclrtMemcpyKind)k),
			ACL_SUCCESS);
		cr_assert_eq(memcmp(b, "abcde", 5), 0, "kind %d", k);
		cr_assert_eq(b[5], 0);
	}
}

Test(memory, memcpy_is_memmove_and_reads_rodata)
{
	static const char ro[] = "0123456789";
	char *p;

	cr_assert_eq(aclrtMallocHost((void **)&p, 64), ACL_SUCCESS);
	cr_assert_eq(aclrtMemcpy(p, 64, ro, 10, ACL_MEMCPY_HOST_TO_HOST),
		     ACL_SUCCESS);
	/* overlapping, forward */
	cr_assert_eq(aclrtMemcpy(p + 2, 62, p, 8, ACL_MEMCPY_DEFAULT),
		     ACL_SUCCESS);
	cr_assert_eq(memcmp(p, "0101234567", 10), 0);
	cr_assert_eq(aclrtMemcpy(p, 64, p + 2, 8, ACL_MEMCPY_DEFAULT),
		     ACL_SUCCESS);
	cr_assert_eq(memcmp(p, "0123456767", 10), 0);
	cr_assert_eq(aclrtFreeHost(p), ACL_SUCCESS);
}

Test(memory, memset_checks)
{
	unsigned char buf[32];

	memset(buf, 0, sizeof(buf));
	cr_assert_eq(aclrtMemset(NULL, 0, 1, 0), ACL_SUCCESS);
	cr_assert_eq(aclrtMemset(NULL, 8, 1, 4), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMemset(buf, 4, 1, 8), ACL_ERROR_RT_PARAM_INVALID);
	cr_assert_eq(buf[0], 0);
	cr_assert_eq(aclrtMemset(buf, sizeof(buf), 0x1c7, 10), ACL_SUCCESS);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(buf[i], 0xc7);
	cr_assert_eq(buf[10], 0);
}

Test(memory, async_copy_runs_in_stream_order)
{
	const size_t n = 1 << 20;
	struct rt_probe *slow = rt_probe_new(0, 0, 100);
	unsigned char *a, *b;
	aclrtStream s;

	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
	cr_assert_eq(aclrtMalloc((void **)&a, n, ACL_MEM_MALLOC_HUGE_ONLY),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtMalloc((void **)&b, n, ACL_MEM_MALLOC_HUGE_ONLY),
		     ACL_SUCCESS);
	memset(b, 0, n);
	cr_assert_eq(ohc_rt_stream_submit(s, &slow->super), 0);
	cr_assert_eq(aclrtMemsetAsync(a, n, 0x3c, n, s), ACL_SUCCESS);
	cr_assert_eq(
		aclrtMemcpyAsync(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, s),
		ACL_SUCCESS);
	/* Runtime memory on both sides: queued, not done yet. */
	cr_assert_eq(atomic_load(&slow->runs), 0);
	cr_assert_eq(b[n - 1], 0);
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	for (size_t i = 0; i < n; i += 4093)
		cr_assert_eq(b[i], 0x3c);
	cr_assert_eq(b[n - 1], 0x3c);
	/* The async checks mirror the synchronous ones. */
	cr_assert_eq(aclrtMemcpyAsync(NULL, 0, NULL, 0, ACL_MEMCPY_DEFAULT, s),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtMemcpyAsync(b, n, a, n,
				      ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, s),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtMemcpyAsync(b, 1, a, 2, ACL_MEMCPY_DEFAULT, s),
		     ACL_ERROR_RT_PARAM_INVALID);
	cr_assert_eq(aclrtMemsetAsync(b, 1, 0, 2, s),
		     ACL_ERROR_RT_PARAM_INVALID);
	cr_assert_eq(aclrtMemcpyAsync(b, n, a, 1, ACL_MEMCPY_DEFAULT,
				      (aclrtStream)a),
		     ACL_ERROR_INVALID_PARAM, "not a stream");
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	cr_assert_eq(aclrtFree(a), ACL_SUCCESS);
	cr_assert_eq(aclrtFree(b), ACL_SUCCESS);
	free(slow);
}

Test(memory, async_copy_of_pageable_memory_completes_on_return)
{
	struct rt_probe *slow = rt_probe_new(0, 0, 80);
	char src[32] = "pageable source", dst[32] = {0};
	aclrtStream s;

	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
	cr_assert_eq(ohc_rt_stream_submit(s, &slow->super), 0);
	cr_assert_eq(aclrtMemcpyAsync(dst, sizeof(dst), src, sizeof(src),
				      ACL_MEMCPY_HOST_TO_HOST, s),
		     ACL_SUCCESS);
	cr_assert_eq(atomic_load(&slow->runs), 1, "copy kept stream order");
	cr_assert_str_eq(dst, "pageable source");
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	free(slow);
}

static void *thr_alloc(void *arg)
{
	int *ok = arg;
	void *p[32];

	*ok = 1;
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < 32; i++) {
			if (aclrtMalloc(&p[i], 4096 * (size_t)(i + 1),
					ACL_MEM_MALLOC_HUGE_FIRST)) {
				*ok = 0;
				return NULL;
			}
			memset(p[i], i, 4096);
		}
		for (int i = 0; i < 32; i++) {
			if (((unsigned char *)p[i])[100] != i)
				*ok = 0;
			if (aclrtFree(p[i]))
				*ok = 0;
		}
	}
	return NULL;
}

Test(memory, concurrent_alloc_free)
{
	pthread_t th[4];
	int ok[4];

	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, thr_alloc, &ok[i]),
			     0);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(ok[i], 1);
	}
}

/*
 * aclrtMalloc of OPENHCCL_MALLOC_SHARED_KB (256) and more is a shared
 * mapping of a memfd (what the shm transport reads zero-copy): another
 * mapping of the fd sees the buffer's bytes; smaller, host and (with the
 * variable at 0) all allocations are private; free closes the fd.
 */
Test(memory, large_device_allocations_are_shared)
{
	const size_t big = 1 << 20;
	struct ohc_rt_mem_info a, b;
	void *p = NULL, *q = NULL, *h = NULL, *small = NULL, *view;
	int fds0;

	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	fds0 = rt_fd_count();
	cr_assert_eq(aclrtMalloc(&p, big, ACL_MEM_MALLOC_HUGE_FIRST), 0);
	cr_assert_eq(aclrtMalloc(&q, 256 << 10, ACL_MEM_MALLOC_HUGE_FIRST), 0);
	cr_assert_eq(aclrtMalloc(&small, (256 << 10) - 4096,
				 ACL_MEM_MALLOC_HUGE_FIRST),
		     0);
	cr_assert_eq(aclrtMallocHost(&h, big), 0);
	cr_assert_eq(ohc_rt_mem_info((char *)p + 4096, 100, &a), 0);
	cr_assert_eq(a.offset, 4096);
	cr_assert_eq(a.size, big);
	cr_assert_eq(ohc_rt_mem_info(q, 256 << 10, &b), 0);
	cr_assert_neq(a.id, b.id);
	cr_assert_neq(ohc_rt_mem_info(p, big + 1, &b), 0, "past the end");
	cr_assert_neq(ohc_rt_mem_info(small, 8, &b), 0);
	cr_assert_neq(ohc_rt_mem_info(h, 8, &b), 0);
	cr_assert_eq(rt_fd_count(), fds0 + 2);

	memset(p, 0x5a, big);
	view = mmap(NULL, big, PROT_READ, MAP_SHARED, a.fd, 0);
	cr_assert_neq(view, MAP_FAILED);
	cr_assert_eq(((unsigned char *)view)[big - 1], 0x5a);
	munmap(view, big);

	cr_assert_eq(aclrtFree(p), 0);
	cr_assert_eq(aclrtFree(q), 0);
	cr_assert_eq(aclrtFree(small), 0);
	cr_assert_eq(aclrtFreeHost(h), 0);
	cr_assert_eq(rt_fd_count(), fds0, "fds of shared allocations left");
}

/* (each Test is a process of its own: the runtime reads it first here) */
Test(memory, shared_allocations_off)
{
	struct ohc_rt_mem_info a;
	void *p = NULL;

	setenv("OPENHCCL_MALLOC_SHARED_KB", "0", 1);
	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtMalloc(&p, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST), 0);
	cr_assert_neq(ohc_rt_mem_info(p, 8, &a), 0);
	cr_assert_eq(aclrtFree(p), 0);
}
