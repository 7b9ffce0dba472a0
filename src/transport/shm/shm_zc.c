/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Zero-copy for the shm transport: a peer's exported memory (a memfd it
 * keeps open, see src/zerocopy) is taken over with pidfd_getfd (or
 * /proc/<pid>/fd/<n> on older kernels) and mapped here, so a receive
 * copies or reduces straight out of the sender's buffer. Both ways need
 * the ptrace permission that CMA needs, which is why ZC records are only
 * sent to readers that announced cma_ok. Mappings are cached per ep by
 * the sender's export id, a few at a time (least recently used goes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "transport/shm/shm.h"
#include "util/compiler.h"
#include "util/log.h"

/* Our own fd for the peer's fd number pfd, or -1 with errno set. */
static int peer_fd(const struct ohc_shm_ep *sep, int pfd, int writable)
{
	char path[64];
	int fd;

#ifdef SYS_pidfd_getfd
	if (sep->pidfd >= 0) {
		fd = (int)syscall(SYS_pidfd_getfd, sep->pidfd, pfd, 0);
		if (fd >= 0)
			return fd;
	}
#endif
	if (sep->pid <= 0) {
		errno = ESRCH;
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)sep->pid, pfd);
	/* O_NONBLOCK: the number could name a FIFO, whose open would wait
	 * for a writer forever; map_peer refuses all but a sealed memfd. */
	return open(path,
		    (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK);
}

/* Map the peer's memfd of desc; NULL (logged at debug) on failure. */
static void *map_peer(const struct ohc_shm_ep *sep,
		      const struct ohc_mem_desc *desc, int writable,
		      const char **why_p)
{
	struct stat st;
	void *p;
	int seals, fd = peer_fd(sep, desc->fd, writable);

	if (fd < 0) {
		*why_p = strerror(errno);
		return NULL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != desc->fd_size) {
		*why_p = "the peer's fd is not the memory it described";
		close(fd);
		return NULL;
	}
	/* Unsealed, the peer could shrink it and our reads would SIGBUS. */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		*why_p = "the peer's memory is not sealed against shrinking";
		close(fd);
		return NULL;
	}
	p = mmap(NULL, desc->fd_size, PROT_READ | (writable ? PROT_WRITE : 0),
		 MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		*why_p = strerror(errno);
		return NULL;
	}
	return p;
}

const char *ohc_shm_zc_import(struct ohc_shm_ep *sep,
			      const struct ohc_mem_desc *desc, size_t len)
{
	struct ohc_shm_zc_import *slot = &sep->zc_imp[0];
	const char *why = NULL;
	void *base;

	if (!desc->id || desc->fd_off > desc->fd_size ||
	    len > desc->fd_size - desc->fd_off)
		return NULL;
	for (unsigned i = 0; i < OHC_SHM_ZC_CACHE; i++) {
		struct ohc_shm_zc_import *e = &sep->zc_imp[i];

		if (e->id == desc->id && e->size == desc->fd_size) {
			e->last_use = ++sep->zc_clock;
			return (const char *)e->base + desc->fd_off;
		}
		if (!e->id || (slot->id && e->last_use < slot->last_use))
			slot = e;
	}
	base = map_peer(sep, desc, 0, &why);
	if (!base) {
		if (!sep->zc_warned)
			OHC_WARN(OHC_SS_SHM,
				 "rank %u: cannot map exported memory of "
				 "rank %u (%s): zero-copy receives fall back "
				 "to CMA",
				 sep->super.iface->rank, sep->super.peer, why);
		sep->zc_warned = 1;
		return NULL;
	}
	if (slot->id)
		munmap(slot->base, slot->size);
	slot->id = desc->id;
	slot->base = base;
	slot->size = desc->fd_size;
	slot->last_use = ++sep->zc_clock;
	OHC_DEBUG(OHC_SS_MEM,
		  "rank %u: mapped export %llu of rank %u (%zu bytes)",
		  sep->super.iface->rank, (unsigned long long)desc->id,
		  sep->super.peer, slot->size);
	return (const char *)base + desc->fd_off;
}

void ohc_shm_zc_drop_all(struct ohc_shm_ep *sep)
{
	for (unsigned i = 0; i < OHC_SHM_ZC_CACHE; i++) {
		struct ohc_shm_zc_import *e = &sep->zc_imp[i];

		if (e->id)
			munmap(e->base, e->size);
		memset(e, 0, sizeof(*e));
	}
	sep->rndv_src = NULL;
}

ohc_status_t ohc_shm_ep_mem_map(struct ohc_ep *ep,
				const struct ohc_mem_desc *desc, void **addr_p)
{
	struct ohc_shm_ep *sep = ohc_shm_ep_of(ep);
	const char *why = NULL;
	void *p;

	if (!sep->connected) {
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: mapping memory of rank %u over an "
			  "unconnected ep",
			  ep->iface->rank, ep->peer);
		return OHC_ERR_INVALID;
	}
	p = map_peer(sep, desc, 1, &why);
	if (!p) {
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: cannot map the window memory of rank %u "
			  "(fd %d, %llu bytes): %s",
			  ep->iface->rank, ep->peer, (int)desc->fd,
			  (unsigned long long)desc->fd_size, why);
		return OHC_ERR_SYSCALL;
	}
	*addr_p = p;
	return OHC_OK;
}

void ohc_shm_ep_mem_unmap(struct ohc_ep *ep, void *addr, size_t len)
{
	(void)ep;
	if (addr)
		munmap(addr, len);
}
