/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Single-copy reads out of a same-host peer with process_vm_readv (Cross
 * Memory Attach). Needs ptrace-read permission on the peer: Yama, seccomp
 * or missing capabilities in containers often forbid it, so connect probes
 * each peer once and the ring stays the fallback.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "transport/shm/shm.h"
#include "util/log.h"

int ohc_shm_cma_probe(pid_t pid, uint64_t addr, uint64_t expect)
{
	uint64_t got = 0;
	struct iovec local = {.iov_base = &got, .iov_len = sizeof(got)};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr,
			       .iov_len = sizeof(got)};
	ssize_t r = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (r != (ssize_t)sizeof(got) || got != expect) {
		OHC_DEBUG(OHC_SS_SHM,
			  "cma probe of pid %d failed (%s); using the ring",
			  (int)pid, r < 0 ? strerror(errno) : "wrong value");
		return 0;
	}
	return 1;
}

ohc_status_t ohc_shm_cma_read(const struct ohc_shm_ep *sep, void *dst,
			      uint64_t addr, size_t len)
{
	pid_t pid = sep->pid;

	while (len) {
		struct iovec local = {.iov_base = dst, .iov_len = len};
		struct iovec remote = {.iov_base = (void *)(uintptr_t)addr,
				       .iov_len = len};
		ssize_t r = process_vm_readv(pid, &local, 1, &remote, 1, 0);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			OHC_ERROR(OHC_SS_SHM,
				  "rank %u: reading %zu bytes at 0x%llx out of "
				  "rank %u (pid %d) failed: %s",
				  sep->super.iface->rank, len,
				  (unsigned long long)addr, sep->super.peer,
				  (int)pid,
				  r < 0 ? strerror(errno) : "nothing read");
			return OHC_ERR_REMOTE;
		}
		dst = (char *)dst + r;
		addr += (uint64_t)r;
		len -= (size_t)r;
	}
	return OHC_OK;
}
