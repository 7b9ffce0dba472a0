/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

#include "util/pagemap.h"

#define ENTRY_MASK (OHC_PAGEMAP_PFN | OHC_PAGEMAP_PRESENT)
#define SAME_BATCH 512u /* entries per pread in ohc_pagemap_same */

size_t ohc_pagemap_page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	return ps > 0 ? (size_t)ps : 4096u;
}

int ohc_pagemap_open(void)
{
	return open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
}

/* Read len bytes at off, retrying short reads; 0 or -1 with errno. */
static int pread_all(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;

	while (len) {
		ssize_t r = pread(fd, p, len, off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO;
			return -1;
		}
		p += r;
		len -= (size_t)r;
		off += r;
	}
	return 0;
}

static off_t entry_offset(uintptr_t addr)
{
	return (off_t)(addr / ohc_pagemap_page_size() * sizeof(uint64_t));
}

ohc_status_t ohc_pagemap_read(int fd, uintptr_t addr, size_t n, uint64_t *out)
{
	if (pread_all(fd, out, n * sizeof(*out), entry_offset(addr)))
		return OHC_ERR_SYSCALL;
	for (size_t i = 0; i < n; i++)
		out[i] &= ENTRY_MASK;
	return OHC_OK;
}

int ohc_pagemap_same(int fd, uintptr_t addr, size_t n, const uint64_t *want)
{
	uint64_t got[SAME_BATCH];
	size_t page = ohc_pagemap_page_size();

	while (n) {
		size_t k = n < SAME_BATCH ? n : SAME_BATCH;

		if (ohc_pagemap_read(fd, addr, k, got) != OHC_OK)
			return 0;
		for (size_t i = 0; i < k; i++)
			if (got[i] != want[i] || !ohc_pagemap_valid(got[i]))
				return 0;
		addr += k * page;
		want += k;
		n -= k;
	}
	return 1;
}

/* A page this thread just wrote (its stack): present, mapped, ours. */
static int probe(void)
{
	volatile uint64_t touched = 0;
	uint64_t e;
	int fd = ohc_pagemap_open(), ok;

	if (fd < 0)
		return 0;
	touched = 1;
	ok = ohc_pagemap_read(fd, (uintptr_t)&touched, 1, &e) == OHC_OK &&
	     ohc_pagemap_valid(e);
	close(fd);
	return ok;
}

/*
 * The probe's result for one process: pid << 1 | usable, 0 before the
 * first probe. Not a pthread_once: a forked child must probe again, and
 * an atomic word needs no lock that a fork could leave held. Two threads
 * probing at once both store the same answer.
 */
static _Atomic uint64_t probed;

int ohc_pagemap_usable(void)
{
	uint64_t me = (uint64_t)getpid();
	uint64_t s = atomic_load_explicit(&probed, memory_order_acquire);
	int usable;

	if (s && s >> 1 == me)
		return (int)(s & 1);
	usable = probe();
	atomic_store_explicit(&probed, me << 1 | (uint64_t)usable,
			      memory_order_release);
	return usable;
}
