/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_PAGEMAP_H
#define OHC_UTIL_PAGEMAP_H

/*
 * Which physical page backs a virtual one, from /proc/self/pagemap: how a
 * registration cache proves that an address still maps the pages it
 * pinned. An entry is kept as its PFN (bits 0-54) and present bit (63)
 * only; soft-dirty, exclusive, file and swap bits are masked out. The
 * kernel shows PFNs only to an opener with CAP_SYS_ADMIN (everyone else
 * reads PFN 0), so ohc_pagemap_usable() says whether this process can
 * tell pages apart at all.
 *
 * Callers own their descriptor (ohc_pagemap_open, close with the object
 * that opened it): a process-wide one would outlive every communicator,
 * and a descriptor describes the process that opened it, not a forked
 * child. Everything here is thread-safe.
 */
#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#define OHC_PAGEMAP_PFN ((1ull << 55) - 1)
#define OHC_PAGEMAP_PRESENT (1ull << 63)

/* The system page size: one pagemap entry per page of this size. */
size_t ohc_pagemap_page_size(void);

/*
 * 1 if this process sees PFNs: a freshly opened /proc/self/pagemap shows
 * a page just written as present with a nonzero PFN; else 0. Probed once
 * per process, and again in a forked child (its privileges may differ);
 * a process that drops CAP_SYS_ADMIN later is not noticed, but its reads
 * then show PFN 0, which ohc_pagemap_same() never accepts.
 */
int ohc_pagemap_usable(void);

/* /proc/self/pagemap, O_RDONLY | O_CLOEXEC; -1 with errno on failure. */
int ohc_pagemap_open(void);

/*
 * The masked entries of the n pages from addr's page on, into
 * out[0..n). OHC_OK, or OHC_ERR_SYSCALL with errno set (out undefined).
 */
ohc_status_t ohc_pagemap_read(int fd, uintptr_t addr, size_t n, uint64_t *out);

/*
 * 1 if each of the n pages from addr's page on is present with the PFN
 * of want[0..n) and that PFN is not 0; 0 otherwise, also when a read
 * fails. One pread per 512 pages.
 */
int ohc_pagemap_same(int fd, uintptr_t addr, size_t n, const uint64_t *want);

/* 1 if a masked entry names a physical page: present, PFN not 0. */
static inline int ohc_pagemap_valid(uint64_t e)
{
	return (e & OHC_PAGEMAP_PRESENT) && (e & OHC_PAGEMAP_PFN);
}

#endif
