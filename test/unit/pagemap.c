/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util/pagemap: with CAP_SYS_ADMIN the probe says usable and pages are
 * told apart by PFN (two touched pages differ, an untouched one is not
 * present); new memory mapped at an address whose old page is still
 * alive shows another PFN, also past the first 512-entry batch of
 * ohc_pagemap_same; a forked child probes again and, without
 * CAP_SYS_ADMIN, finds the check unusable (PFN 0). Needs no RDMA.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <linux/capability.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/pagemap.h"

static int caps(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};

	return (int)syscall(SYS_capget, &hdr, data);
}

static int have_cap_sys_admin(void)
{
	struct __user_cap_data_struct data[2];

	return caps(data) == 0 && (data[CAP_SYS_ADMIN / 32].effective &
				   (1u << (CAP_SYS_ADMIN % 32)));
}

/* Drop CAP_SYS_ADMIN from this process (effective and permitted). */
static int drop_cap_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (caps(data))
		return -1;
	data[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
	data[CAP_SYS_ADMIN / 32].permitted &= ~(1u << (CAP_SYS_ADMIN % 32));
	return (int)syscall(SYS_capset, &hdr, data);
}

#define NEED_CAP_SYS_ADMIN()                                                   \
	do {                                                                   \
		if (!have_cap_sys_admin())                                     \
			cr_skip_test("no CAP_SYS_ADMIN: the kernel hides "     \
				     "PFNs (CI runs as root)");                \
	} while (0)

static uint64_t entry(int fd, const void *p)
{
	uint64_t e = ~0ull;

	cr_assert_eq(ohc_pagemap_read(fd, (uintptr_t)p, 1, &e), OHC_OK);
	return e;
}

Test(pagemap, probe_usable_with_cap_sys_admin)
{
	NEED_CAP_SYS_ADMIN();
	cr_assert_eq(ohc_pagemap_usable(), 1);
	cr_assert_eq(ohc_pagemap_usable(), 1, "second call, cached");
}

Test(pagemap, touched_pages_differ_untouched_absent)
{
	size_t ps = ohc_pagemap_page_size();
	char *p;
	uint64_t e[3];
	int fd;

	NEED_CAP_SYS_ADMIN();
	p = mmap(NULL, 3 * ps, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(p != MAP_FAILED);
	p[0] = 1;
	p[ps] = 2;
	fd = ohc_pagemap_open();
	cr_assert(fd >= 0);
	cr_assert_eq(ohc_pagemap_read(fd, (uintptr_t)p + 5, 3, e), OHC_OK);
	cr_assert(ohc_pagemap_valid(e[0]) && ohc_pagemap_valid(e[1]),
		  "touched pages: %#llx %#llx", (unsigned long long)e[0],
		  (unsigned long long)e[1]);
	cr_assert_neq(e[0] & OHC_PAGEMAP_PFN, e[1] & OHC_PAGEMAP_PFN);
	cr_assert_eq(e[0] & ~(OHC_PAGEMAP_PFN | OHC_PAGEMAP_PRESENT), 0,
		     "flag bits masked: %#llx", (unsigned long long)e[0]);
	cr_assert_eq(e[2], 0, "untouched page: %#llx",
		     (unsigned long long)e[2]);
	cr_assert_eq(ohc_pagemap_same(fd, (uintptr_t)p, 2, e), 1);
	cr_assert_eq(ohc_pagemap_same(fd, (uintptr_t)p, 3, e), 0,
		     "an absent page never matches, not even 0 against 0");
	close(fd);
	munmap(p, 3 * ps);
}

/*
 * The region's pages live in a memfd, so they stay allocated when the
 * region is unmapped (as a registration's pinned pages do); fresh memory
 * mapped at the same address then cannot get their PFNs.
 */
Test(pagemap, fresh_memory_at_same_address_differs)
{
	enum { N = 1100, HIT = 1050 }; /* HIT: in the third 512-batch */
	size_t ps = ohc_pagemap_page_size();
	uint64_t *was;
	int mfd, fd;
	char *p, *alias, *q;

	NEED_CAP_SYS_ADMIN();
	was = calloc(N, sizeof(*was));
	mfd = memfd_create("ohc-pagemap-test", MFD_CLOEXEC);
	cr_assert(was && mfd >= 0);
	cr_assert_eq(ftruncate(mfd, (off_t)(N * ps)), 0);
	p = mmap(NULL, N * ps, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	cr_assert(p != MAP_FAILED);
	for (size_t i = 0; i < N; i++)
		p[i * ps] = (char)i;
	fd = ohc_pagemap_open();
	cr_assert(fd >= 0);
	cr_assert_eq(ohc_pagemap_read(fd, (uintptr_t)p, N, was), OHC_OK);
	for (size_t i = 0; i < N; i++)
		cr_assert(ohc_pagemap_valid(was[i]), "page %zu: %#llx", i,
			  (unsigned long long)was[i]);
	cr_assert_eq(ohc_pagemap_same(fd, (uintptr_t)p, N, was), 1);

	/* the old page stays reachable through a second mapping */
	alias = mmap(NULL, ps, PROT_READ, MAP_SHARED, mfd, (off_t)(HIT * ps));
	cr_assert(alias != MAP_FAILED);
	cr_assert_eq(*(volatile char *)alias, (char)HIT); /* faults it in */
	cr_assert_eq(entry(fd, alias), was[HIT]);
	cr_assert_eq(munmap(p + HIT * ps, ps), 0);
	q = mmap(p + HIT * ps, ps, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	cr_assert_eq(q, p + HIT * ps);
	cr_assert_eq(ohc_pagemap_same(fd, (uintptr_t)p, N, was), 0,
		     "unmapped, nothing there yet");
	*q = 1;
	cr_assert(ohc_pagemap_valid(entry(fd, q)));
	cr_assert_neq(entry(fd, q) & OHC_PAGEMAP_PFN,
		      was[HIT] & OHC_PAGEMAP_PFN, "fresh page, old PFN");
	cr_assert_eq(ohc_pagemap_same(fd, (uintptr_t)p, N, was), 0);
	cr_assert_eq(ohc_pagemap_same(fd, (uintptr_t)p, HIT, was), 1,
		     "the pages before it still match");
	cr_assert_eq(ohc_pagemap_same(fd, (uintptr_t)alias, 1, was + HIT), 1);
	close(fd);
	munmap(alias, ps);
	munmap(p, N * ps);
	close(mfd);
	free(was);
}

/* Exit status of a forked child running fn; fn returns 0 for success. */
static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0)
		_exit(fn());
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "child died: %#x", status);
	return WEXITSTATUS(status);
}

static int child_keeps_caps(void)
{
	return ohc_pagemap_usable() == 1 ? 0 : 1;
}

static int child_drops_cap(void)
{
	volatile char page[64];
	uint64_t e = 0;
	int fd;

	if (drop_cap_sys_admin() || have_cap_sys_admin())
		return 10;
	if (ohc_pagemap_usable() != 0)
		return 11;
	page[0] = 1; /* present, but its PFN reads 0 now */
	fd = ohc_pagemap_open();
	if (fd < 0)
		return 12;
	if (ohc_pagemap_read(fd, (uintptr_t)page, 1, &e) != OHC_OK)
		return 13;
	close(fd);
	if (!(e & OHC_PAGEMAP_PRESENT) || (e & OHC_PAGEMAP_PFN))
		return 14;
	return 0;
}

Test(pagemap, forked_child_probes_again)
{
	NEED_CAP_SYS_ADMIN();
	cr_assert_eq(ohc_pagemap_usable(), 1, "parent probes first");
	cr_assert_eq(in_child(child_keeps_caps), 0);
	cr_assert_eq(in_child(child_drops_cap), 0,
		     "a child without CAP_SYS_ADMIN (10: capset, 11: probe "
		     "said usable, 12-14: PFN not hidden)");
	cr_assert_eq(ohc_pagemap_usable(), 1, "the parent's answer stays");
}
