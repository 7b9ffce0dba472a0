/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shm segments: each rank's receive segment (a memfd, never a file in
 * /dev/shm), its layout of receive rings, and the mappings of the peers'
 * segments. The memfds travel at connect time over abstract unix
 * sockets (shm_xchg.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport/shm/shm.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/cpus.h"
#include "util/log.h"
#include "util/time.h"

#define SEG_MIN_RING 4096u

static size_t seg_page(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (size_t)p : 4096;
}

/* Prefer the reader's NUMA node for a range; best effort (logged). */
static void seg_bind_numa(void *addr, size_t len, int node, uint32_t rank)
{
	struct bitmask *mask;

	if (node < 0 || numa_available() < 0 || node > numa_max_node())
		return;
	mask = numa_allocate_nodemask();
	if (!mask)
		return;
	numa_bitmask_setbit(mask, (unsigned)node);
	if (mbind(addr, len, MPOL_BIND, mask->maskp, mask->size + 1, 0))
		OHC_INFO(OHC_SS_SHM,
			 "rank %u: mbind of shm segment to node %d failed: %s",
			 rank, node, strerror(errno));
	numa_free_nodemask(mask);
}

ohc_status_t ohc_shm_seg_open(struct ohc_shm_iface *sif)
{
	size_t page = seg_page();
	struct sockaddr_un sa;
	socklen_t salen;
	uint64_t probe = 0;
	void *hdr;
	int fd, lfd;

	fd = memfd_create("ohc-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		OHC_ERROR(OHC_SS_SHM, "rank %u: memfd_create failed: %s",
			  sif->super.rank, strerror(errno));
		return OHC_ERR_SYSCALL;
	}
	if (fchmod(fd, 0600) || ftruncate(fd, (off_t)page)) {
		OHC_ERROR(OHC_SS_SHM, "rank %u: shm segment setup failed: %s",
			  sif->super.rank, strerror(errno));
		goto err_fd;
	}
	hdr = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED) {
		OHC_ERROR(OHC_SS_SHM, "rank %u: mmap of shm segment failed: %s",
			  sif->super.rank, strerror(errno));
		goto err_fd;
	}
	seg_bind_numa(hdr, page, sif->numa_node, sif->super.rank);
	sif->bell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (sif->bell_fd < 0) {
		OHC_ERROR(OHC_SS_SHM, "rank %u: eventfd failed: %s",
			  sif->super.rank, strerror(errno));
		goto err_map;
	}

	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0) {
		OHC_ERROR(OHC_SS_SHM, "rank %u: socket(AF_UNIX) failed: %s",
			  sif->super.rank, strerror(errno));
		goto err_map;
	}
	salen = ohc_shm_sockaddr(sif->session, sif->super.rank, &sa);
	if (bind(lfd, (struct sockaddr *)&sa, salen) ||
	    listen(lfd, (int)OHC_MIN(sif->super.nranks + 16u, 4096u))) {
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: cannot listen on abstract socket @%s: %s",
			  sif->super.rank, sa.sun_path + 1, strerror(errno));
		goto err_sock;
	}

	if (getrandom(&probe, sizeof(probe), GRND_NONBLOCK) != sizeof(probe))
		probe = ohc_time_ns() ^ ((uint64_t)sif->pid << 32);
	sif->hdr = hdr;
	sif->hdr_bytes = page;
	sif->hdr->magic = OHC_SHM_MAGIC;
	sif->hdr->version = OHC_SHM_VERSION;
	sif->hdr->owner_rank = sif->super.rank;
	sif->hdr->session = sif->session;
	sif->hdr->owner_pid = sif->pid;
	sif->hdr->probe_val = probe | 1;
	sif->hdr->probe_addr = (uint64_t)(uintptr_t)&sif->hdr->probe_val;
	sif->seg_fd = fd;
	sif->listen_fd = lfd;
	return OHC_OK;

err_sock:
	close(lfd);
err_map:
	if (sif->bell_fd >= 0)
		close(sif->bell_fd);
	sif->bell_fd = -1;
	munmap(hdr, page);
err_fd:
	close(fd);
	return OHC_ERR_SYSCALL;
}

void ohc_shm_seg_close(struct ohc_shm_iface *sif)
{
	if (sif->body)
		munmap(sif->body, sif->body_bytes);
	if (sif->hdr)
		munmap(sif->hdr, sif->hdr_bytes);
	if (sif->seg_fd >= 0)
		close(sif->seg_fd);
	if (sif->listen_fd >= 0)
		close(sif->listen_fd);
	if (sif->bell_fd >= 0)
		close(sif->bell_fd);
	sif->bell_fd = -1;
	sif->body = NULL;
	sif->hdr = NULL;
	sif->seg_fd = -1;
	sif->listen_fd = -1;
}

void ohc_shm_ep_unmap(struct ohc_shm_ep *sep)
{
	if (sep->peer_seg)
		munmap(sep->peer_seg, sep->peer_seg_bytes);
	if (sep->pidfd >= 0)
		close(sep->pidfd);
	if (sep->peer_bell_fd >= 0)
		close(sep->peer_bell_fd);
	sep->peer_bell_fd = -1;
	free(sep->bounce);
	sep->bounce = NULL;
	sep->peer_seg = NULL;
	sep->peer_bell = NULL;
	sep->tx = NULL;
	sep->tx_data = NULL;
	sep->pidfd = -1;
}

/* Bits of sep->cold: the ring we write, the ring we read, the attach. */
#define COLD_TX 1
#define COLD_RX 2
#define COLD_ATTACH 4

/*
 * The ring size for a rank with n peers on its host where none was given
 * (OPENHCCL_SHM_RING_KB=0): 1 MiB, halved while the rings it reads and
 * writes, 2 x n of them, would not fit its core's L2 cache (sysconf; 2 MiB
 * where unknown), down to 128 KiB. A ring laps through all its bytes, so
 * each message lands in lines last used a lap ago; with many peers those
 * had left the caches. 2 vCPUs with 2 MiB L2 each, AllReduce, 200 calls a
 * size (tools/all_reduce_test), 1 MiB rings against 256 / 128 KiB: 8
 * ranks, 16-256 KiB 59-335 us against 38-274; 16 ranks, 256 KiB 1330 us
 * against 703-730; 2 and 4 ranks alike, zero copy or not (2026-12-08,
 * bench/README.md). 1 MiB at 2 ranks, 256 KiB at 4, 128 KiB from 8.
 */
size_t ohc_shm_auto_ring(unsigned n)
{
	size_t l2 = ohc_l2_cache_bytes();
	size_t budget = l2 ? l2 : (size_t)2 << 20;
	size_t ring = (size_t)1 << 20;

	while (ring > ((size_t)128 << 10) && 2 * (size_t)n * ring > budget)
		ring /= 2;
	return ring;
}

/*
 * Lay out the receive rings (one per ep) after page 0, map them, bind them
 * to our NUMA node, prefault them (up to OPENHCCL_SHM_PREFAULT local
 * ranks), then seal the memfd's size so a peer cannot truncate it under
 * us. Not prefaulted, a ring's pages come on first use, zero (a memfd's
 * fresh pages are) and on our node all the same: mbind on a shared
 * mapping sets the policy of the memfd's pages, whoever faults them.
 */
ohc_status_t ohc_shm_seg_build(struct ohc_shm_iface *sif,
			       struct ohc_shm_ep **eps, unsigned n)
{
	size_t page = sif->hdr_bytes;
	size_t stride, rings_off, seg_bytes;
	struct ohc_shm_dir_ent *dir;
	char *body;

	if (!sif->ring_bytes) {
		sif->ring_bytes = ohc_shm_auto_ring(n);
		OHC_INFO(OHC_SS_SHM,
			 "rank %u: shm rings of %zu KiB for %u peers here "
			 "(OPENHCCL_SHM_RING_KB auto)",
			 sif->super.rank, sif->ring_bytes >> 10, n);
	}
	stride = OHC_ALIGN_UP(sizeof(struct ohc_shm_ring_ctl) + sif->ring_bytes,
			      page);
	rings_off = OHC_ALIGN_UP(
		page + (size_t)n * sizeof(struct ohc_shm_dir_ent), page);
	seg_bytes = rings_off + (size_t)n * stride;

	if (ftruncate(sif->seg_fd, (off_t)seg_bytes) ||
	    fcntl(sif->seg_fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: cannot size shm segment to %zu bytes: %s",
			  sif->super.rank, seg_bytes, strerror(errno));
		return OHC_ERR_SYSCALL;
	}
	body = mmap(NULL, seg_bytes - page, PROT_READ | PROT_WRITE, MAP_SHARED,
		    sif->seg_fd, (off_t)page);
	if (body == MAP_FAILED) {
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: mmap of %zu bytes of shm rings failed: %s",
			  sif->super.rank, seg_bytes - page, strerror(errno));
		return OHC_ERR_SYSCALL;
	}
	seg_bind_numa(body, seg_bytes - page, sif->numa_node, sif->super.rank);
	sif->prefault = n + 1 <= (uint64_t)ohc_env()->shm_prefault;
	if (sif->prefault)
		memset(body, 0, seg_bytes - page); /* fault in, on our node */
	else /* the directory and the rings' control blocks only */
		memset(body, 0, rings_off - page);

	dir = (struct ohc_shm_dir_ent *)body;
	for (unsigned i = 0; i < n; i++) {
		struct ohc_shm_ep *sep = eps[i];
		size_t off = rings_off + (size_t)i * stride;

		dir[i].producer = sep->super.peer;
		dir[i].off = off;
		dir[i].bytes = sif->ring_bytes;
		sep->rx = (struct ohc_shm_ring_ctl *)(body + off - page);
		sep->rx_data = (char *)(sep->rx + 1);
		sep->rx_bytes = sif->ring_bytes;
		sep->rx_head = 0;
	}
	sif->hdr->dir_off = page;
	sif->hdr->seg_bytes = seg_bytes;
	sif->hdr->nrings = n;
	sif->body = body;
	sif->body_bytes = seg_bytes - page;
	return OHC_OK;
}

/*
 * Touch the pages of the ring we write now, before any traffic, rather
 * than paying the first touch of each page in the data path. The owner
 * allocated them (ohc_shm_seg_build), but our mapping's entries are
 * built on first access: a page fault each, and under a shadow-paging
 * hypervisor a trap even once the guest's page tables are populated
 * (measured here: the first pass of traffic through a fresh 1 MiB ring
 * ran at 0.65 GB/s, the following ones at 4+). Writing each page's first
 * byte back to itself is harmless: nothing has been produced into the
 * ring yet.
 */
static void prefault_tx(struct ohc_shm_ep *sep)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t off = 0; off < sep->tx_bytes; off += page) {
		volatile char *p = sep->tx_data + off;

		*p = *p;
	}
}

void ohc_shm_warm(struct ohc_shm_ep *sep, int tx)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (sep->cold & COLD_ATTACH)
		return; /* ohc_shm_attach comes first (shm_ep_progress) */
	if (tx && (sep->cold & COLD_TX)) {
		prefault_tx(sep);
		sep->cold &= ~COLD_TX;
	} else if (!tx && (sep->cold & COLD_RX)) {
		/* reading a page maps it here, faulting it in if the
		 * producer has not yet */
		for (size_t off = 0; off < sep->rx_bytes; off += page)
			(void)*(volatile const char *)(sep->rx_data + off);
		sep->cold &= ~COLD_RX;
	}
}

int ohc_shm_dir_ent_valid(const struct ohc_shm_dir_ent *ent, uint64_t seg_bytes)
{
	/* off + control block + bytes within the segment, without wrapping */
	return ent->off % OHC_CACHELINE == 0 &&
	       ent->bytes % OHC_SHM_REC_ALIGN == 0 &&
	       ent->bytes >= SEG_MIN_RING && ent->off <= seg_bytes &&
	       seg_bytes - ent->off >= sizeof(struct ohc_shm_ring_ctl) &&
	       ent->bytes <=
		       seg_bytes - ent->off - sizeof(struct ohc_shm_ring_ctl);
}

const char *ohc_shm_seg_find_ring(const void *seg, uint64_t seg_bytes,
				  uint64_t session, uint32_t owner, uint32_t me,
				  struct ohc_shm_seg_hdr *head_p,
				  struct ohc_shm_dir_ent *ent_p)
{
	const struct ohc_shm_dir_ent *dir;
	struct ohc_shm_seg_hdr head;

	if (seg_bytes < sizeof(head))
		return "segment smaller than its header";
	memcpy(&head, seg, sizeof(head));
	if (head.magic != OHC_SHM_MAGIC || head.version != OHC_SHM_VERSION ||
	    head.session != session || head.owner_rank != owner ||
	    head.seg_bytes != seg_bytes || head.dir_off > seg_bytes ||
	    head.nrings > (seg_bytes - head.dir_off) / sizeof(*dir))
		return "bad segment header";
	dir = (const struct ohc_shm_dir_ent *)(const void *)((const char *)seg +
							     head.dir_off);
	for (uint32_t i = 0; i < head.nrings; i++) {
		struct ohc_shm_dir_ent ent;

		memcpy(&ent, &dir[i], sizeof(ent));
		if (ent.producer != me)
			continue;
		if (!ohc_shm_dir_ent_valid(&ent, seg_bytes))
			return "bad ring directory entry";
		*head_p = head;
		*ent_p = ent;
		return NULL;
	}
	return "no ring for us in the segment";
}

/*
 * Attach to the ring we write in the peer's mapped segment: check its
 * header and directory (copies of them: the peer can write its segment at
 * any time, never trust the live ones), find our ring, read its head and
 * probe CMA. That touches pages of the peer's segment (its header, its
 * directory, our ring's control block) and of ours (our receive ring's
 * control block): 16 KiB a peer, 4 MiB of resident memory at 256 local
 * ranks. So up to OPENHCCL_SHM_PREFAULT local ranks it happens at
 * connect; above, on the pair's first traffic (ohc_shm_attach), and a
 * rank touches nothing of a peer it never talks to.
 */
static ohc_status_t seg_attach(struct ohc_shm_iface *sif,
			       struct ohc_shm_ep *sep)
{
	struct ohc_shm_seg_hdr head;
	struct ohc_shm_dir_ent ent;
	const char *why;

	why = ohc_shm_seg_find_ring(sep->peer_seg, sep->peer_seg_bytes,
				    sif->session, sep->super.peer,
				    sif->super.rank, &head, &ent);
	if (why) {
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: shm segment from rank %u refused: %s",
			  sif->super.rank, sep->super.peer, why);
		return OHC_ERR_INVALID;
	}
	sep->tx = (struct ohc_shm_ring_ctl *)((char *)sep->peer_seg + ent.off);
	sep->tx_data = (char *)(sep->tx + 1);
	sep->tx_bytes = ent.bytes;
	sep->tx_max_frag = OHC_MIN(sep->tx_bytes / 4, OHC_SHM_FRAG_CAP) /
			   OHC_SHM_REC_ALIGN * OHC_SHM_REC_ALIGN;
	sep->tx_tail = 0; /* a ring carries one connection */
	sep->tx_head = ohc_shm_ring_head_acquire(sep->tx);
	if (ohc_shm_cma_probe(sep->pid, head.probe_addr, head.probe_val)) {
		sep->rx_cma = 1;
		ohc_shm_ring_cma_enable(sep->rx);
	}
	sep->cold &= ~COLD_ATTACH;
	return OHC_OK;
}

ohc_status_t ohc_shm_attach(struct ohc_shm_ep *sep)
{
	ohc_status_t status;

	if (!(sep->cold & COLD_ATTACH))
		return OHC_OK;
	status = seg_attach(ohc_shm_iface_of(sep->super.iface), sep);
	if (status < 0) {
		sep->cold &= ~COLD_ATTACH; /* once: the ep is failed now */
		sep->dead_logged = 1;
	}
	return status;
}

/* Map one peer's segment from its memfd; attach now or on first use. */
ohc_status_t ohc_shm_seg_map_peer(struct ohc_shm_iface *sif,
				  struct ohc_shm_ep *sep, int fd, int bell_fd,
				  uint64_t seg_bytes)
{
	struct ohc_shm_seg_hdr *hdr;
	ohc_status_t status;
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);
	const char *why = NULL;
	void *map;

	if (fstat(fd, &st) || (uint64_t)st.st_size != seg_bytes ||
	    seg_bytes < sif->hdr_bytes) {
		why = "size differs from its announcement";
		goto bad;
	}
	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		why = "segment is not sealed against shrinking";
		goto bad;
	}
	map = mmap(NULL, seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: mmap of rank %u's shm segment failed: %s",
			  sif->super.rank, sep->super.peer, strerror(errno));
		return OHC_ERR_SYSCALL;
	}
	hdr = map; /* a pointer only: nothing of the segment is read yet */
	sep->peer_seg = map;
	sep->peer_seg_bytes = seg_bytes;
	sep->peer_bell = &hdr->bell;
	if (!sif->prefault) {
		sep->cold = COLD_ATTACH | COLD_TX | COLD_RX;
		sep->peer_bell_fd = bell_fd;
		return OHC_OK;
	}
	status = seg_attach(sif, sep);
	if (status < 0) {
		munmap(map, seg_bytes);
		sep->peer_seg = NULL;
		sep->peer_bell = NULL;
		return status;
	}
	prefault_tx(sep);
	sep->peer_bell_fd = bell_fd;
	return OHC_OK;

bad:
	OHC_ERROR(OHC_SS_SHM, "rank %u: shm segment from rank %u refused: %s",
		  sif->super.rank, sep->super.peer, why);
	return OHC_ERR_INVALID;
}
