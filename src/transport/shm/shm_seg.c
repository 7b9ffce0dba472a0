/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shm segments: each rank's receive segment (a memfd, never a file in
 * /dev/shm), the memfd exchange over abstract unix sockets at connect
 * time, and the mappings of the peers' segments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <numa.h>
#include <numaif.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport/shm/shm.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/time.h"

#define SEG_MIN_RING 4096u
#define CONNECT_RETRY_MS 5 /* between connect() attempts to a peer */
#define HELLO_MAGIC 0x4f4843484c4c4f21ull /* "OHCHLLO!" */

enum { HELLO_CONNECT = 1, HELLO_REPLY = 2 };

/* The one message each way on a connection; the reply carries the memfd. */
struct seg_hello {
	uint64_t magic;
	uint64_t session; /* the token: anything else is refused */
	uint32_t kind;
	uint32_t rank;
	int32_t pid;
	uint32_t pad;
	uint64_t seg_bytes; /* reply: size of the attached memfd */
};

static size_t seg_page(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (size_t)p : 4096;
}

/* Abstract socket address of (session, rank); returns the address length. */
static socklen_t seg_sockaddr(uint64_t session, uint32_t rank,
			      struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
		     "ohc-%016" PRIx64 "-%" PRIu32, session, rank);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   (size_t)n);
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

	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0) {
		OHC_ERROR(OHC_SS_SHM, "rank %u: socket(AF_UNIX) failed: %s",
			  sif->super.rank, strerror(errno));
		goto err_map;
	}
	salen = seg_sockaddr(sif->session, sif->super.rank, &sa);
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
	free(sep->bounce);
	sep->bounce = NULL;
	sep->peer_seg = NULL;
	sep->peer_bell = NULL;
	sep->tx = NULL;
	sep->tx_data = NULL;
	sep->pidfd = -1;
}

/*
 * Lay out the receive rings (one per ep) after page 0, map them, bind them
 * to our NUMA node, prefault them, then seal the memfd's size so a peer
 * cannot truncate it under us.
 */
static ohc_status_t seg_build(struct ohc_shm_iface *sif,
			      struct ohc_shm_ep **eps, unsigned n)
{
	size_t page = sif->hdr_bytes;
	size_t stride = OHC_ALIGN_UP(
		sizeof(struct ohc_shm_ring_ctl) + sif->ring_bytes, page);
	size_t rings_off = OHC_ALIGN_UP(
		page + (size_t)n * sizeof(struct ohc_shm_dir_ent), page);
	size_t seg_bytes = rings_off + (size_t)n * stride;
	struct ohc_shm_dir_ent *dir;
	char *body;

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
	memset(body, 0, seg_bytes - page); /* fault in, on our node */

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
 * allocated them (seg_build), but our mapping's entries are built on first
 * access: a page fault each, and under a shadow-paging hypervisor a trap
 * even once the guest's page tables are populated (measured here: the
 * first pass of traffic through a fresh 1 MiB ring ran at 0.65 GB/s, the
 * following ones at 4+). Writing each page's first byte back to itself is
 * harmless: nothing has been produced into the ring yet.
 */
static void prefault_tx(struct ohc_shm_ep *sep)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t off = 0; off < sep->tx_bytes; off += page) {
		volatile char *p = sep->tx_data + off;

		*p = *p;
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

/* Map one peer's segment from its memfd and find the ring we write. */
static ohc_status_t seg_map_peer(struct ohc_shm_iface *sif,
				 struct ohc_shm_ep *sep, int fd,
				 uint64_t seg_bytes)
{
	struct ohc_shm_seg_hdr *hdr, head;
	struct ohc_shm_dir_ent *dir;
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
	/* The peer can write its segment at any time: check and use copies
	 * of the header and of the directory entry, never the live ones. */
	hdr = map;
	memcpy(&head, hdr, sizeof(head));
	if (head.magic != OHC_SHM_MAGIC || head.version != OHC_SHM_VERSION ||
	    head.session != sif->session ||
	    head.owner_rank != sep->super.peer || head.seg_bytes != seg_bytes ||
	    head.dir_off > seg_bytes ||
	    head.nrings > (seg_bytes - head.dir_off) / sizeof(*dir)) {
		why = "bad segment header";
		goto bad_map;
	}
	dir = (struct ohc_shm_dir_ent *)((char *)map + head.dir_off);
	for (uint32_t i = 0; i < head.nrings; i++) {
		struct ohc_shm_dir_ent ent;

		memcpy(&ent, &dir[i], sizeof(ent));
		if (ent.producer != sif->super.rank)
			continue;
		if (!ohc_shm_dir_ent_valid(&ent, seg_bytes)) {
			why = "bad ring directory entry";
			goto bad_map;
		}
		sep->tx = (struct ohc_shm_ring_ctl *)((char *)map + ent.off);
		sep->tx_data = (char *)(sep->tx + 1);
		sep->tx_bytes = ent.bytes;
		sep->tx_tail = 0; /* a ring carries one connection */
		sep->tx_head = ohc_shm_ring_head_acquire(sep->tx);
		break;
	}
	if (!sep->tx) {
		why = "no ring for us in the segment";
		goto bad_map;
	}
	prefault_tx(sep);
	sep->peer_seg = map;
	sep->peer_seg_bytes = seg_bytes;
	sep->peer_bell = &hdr->bell;
	if (ohc_shm_cma_probe(sep->pid, head.probe_addr, head.probe_val)) {
		sep->rx_cma = 1;
		ohc_shm_ring_cma_enable(sep->rx);
	}
	return OHC_OK;

bad_map:
	munmap(map, seg_bytes);
bad:
	OHC_ERROR(OHC_SS_SHM, "rank %u: shm segment from rank %u refused: %s",
		  sif->super.rank, sep->super.peer, why);
	return OHC_ERR_INVALID;
}

/* Per-peer state of the exchange. */
struct xpeer {
	struct ohc_shm_ep *ep;
	int out_fd;    /* our connection to the peer's listener */
	int out_state; /* 0 none, 1 connecting, 2 hello sent, 3 done */
	uint64_t retry_at;
	int in_done; /* our memfd went to the peer */
	int peer_fd; /* the peer's memfd, once received */
	uint64_t peer_seg_bytes;
};

struct xchg {
	struct ohc_shm_iface *sif;
	struct xpeer *peers;
	unsigned n;
	int *pending; /* accepted, not yet identified; -1 = free slot */
	unsigned npending;
	uid_t uid;
};

static struct xpeer *xchg_find(struct xchg *x, uint32_t rank)
{
	for (unsigned i = 0; i < x->n; i++)
		if (x->peers[i].ep->super.peer == rank)
			return &x->peers[i];
	return NULL;
}

static int xchg_cred_ok(struct xchg *x, int fd, pid_t *pid_p)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) ||
	    cr.uid != x->uid)
		return 0;
	*pid_p = cr.pid;
	return 1;
}

static ohc_status_t xchg_send_hello(struct xchg *x, struct xpeer *p)
{
	struct seg_hello h = {
		.magic = HELLO_MAGIC,
		.session = x->sif->session,
		.kind = HELLO_CONNECT,
		.rank = x->sif->super.rank,
		.pid = x->sif->pid,
	};
	ssize_t r = send(p->out_fd, &h, sizeof(h), MSG_NOSIGNAL);

	if (r == (ssize_t)sizeof(h)) {
		p->out_state = 2;
		return OHC_OK;
	}
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		p->out_state = 1;
		return OHC_OK;
	}
	OHC_ERROR(OHC_SS_SHM, "rank %u: shm hello to rank %u failed: %s",
		  x->sif->super.rank, p->ep->super.peer,
		  r < 0 ? strerror(errno) : "short write");
	return OHC_ERR_SYSCALL;
}

/* Try to connect to a peer's listener; a missing listener is retried. */
static ohc_status_t xchg_connect(struct xchg *x, struct xpeer *p)
{
	struct sockaddr_un sa;
	socklen_t salen = seg_sockaddr(x->sif->session, p->ep->super.peer, &sa);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
			0);

	if (fd < 0) {
		OHC_ERROR(OHC_SS_SHM, "rank %u: socket(AF_UNIX) failed: %s",
			  x->sif->super.rank, strerror(errno));
		return OHC_ERR_SYSCALL;
	}
	if (connect(fd, (struct sockaddr *)&sa, salen) == 0) {
		p->out_fd = fd;
		return xchg_send_hello(x, p);
	}
	if (errno == EINPROGRESS) {
		p->out_fd = fd;
		p->out_state = 1;
		return OHC_OK;
	}
	close(fd);
	if (errno == ECONNREFUSED || errno == ENOENT || errno == EAGAIN ||
	    errno == EINTR) {
		p->retry_at = ohc_time_ns() + CONNECT_RETRY_MS * 1000000ull;
		return OHC_OK;
	}
	OHC_ERROR(OHC_SS_SHM, "rank %u: connect to rank %u's @%s failed: %s",
		  x->sif->super.rank, p->ep->super.peer, sa.sun_path + 1,
		  strerror(errno));
	return OHC_ERR_SYSCALL;
}

/* The peer answered on our connection: take its memfd. */
static ohc_status_t xchg_take_reply(struct xchg *x, struct xpeer *p)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} cbuf;
	struct seg_hello h;
	struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *c;
	int fd = -1, nfds = 0;
	const char *why = NULL;
	pid_t cred_pid = 0;
	ssize_t r;

	r = recvmsg(p->out_fd, &msg, MSG_CMSG_CLOEXEC);
	if (r < 0 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return OHC_OK;
	for (c = CMSG_FIRSTHDR(&msg); r >= 0 && c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0;
		     i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int),
			       sizeof(int));
			if (nfds++ == 0)
				fd = got;
			else
				close(got);
		}
	}
	if (r < 0)
		why = strerror(errno);
	else if (r == 0)
		why = "it closed the connection without answering";
	else if (r != (ssize_t)sizeof(h) || h.magic != HELLO_MAGIC ||
		 h.kind != HELLO_REPLY)
		why = "malformed answer";
	else if (h.session != x->sif->session)
		why = "wrong session token";
	else if (h.rank != p->ep->super.peer)
		why = "answer from another rank";
	else if (nfds != 1 || (msg.msg_flags & MSG_CTRUNC))
		why = "no segment attached";
	else if (!xchg_cred_ok(x, p->out_fd, &cred_pid))
		why = "peer runs as another user";
	if (why) {
		if (fd >= 0)
			close(fd);
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: shm connect to rank %u refused: %s",
			  x->sif->super.rank, p->ep->super.peer, why);
		return OHC_ERR_REMOTE;
	}
	p->peer_fd = fd;
	p->peer_seg_bytes = h.seg_bytes;
	p->out_state = 3;
	close(p->out_fd);
	p->out_fd = -1;
	if (cred_pid != p->ep->pid)
		OHC_DEBUG(OHC_SS_SHM,
			  "rank %u: rank %u has pid %d here, %d in its blob "
			  "(pid namespaces differ)",
			  x->sif->super.rank, p->ep->super.peer, (int)cred_pid,
			  (int)p->ep->pid);
	p->ep->pid = cred_pid;
	return OHC_OK;
}

/*
 * An accepted connection spoke: check the token and who it is, then send
 * our memfd. Strangers are refused and logged; they do not fail connect.
 */
static void xchg_serve(struct xchg *x, unsigned slot)
{
	int fd = x->pending[slot];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct seg_hello h, rep;
	struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *c;
	struct xpeer *p = NULL;
	const char *why = NULL;
	pid_t cred_pid = 0;
	ssize_t r;

	r = recv(fd, &h, sizeof(h), 0);
	if (r < 0 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r <= 0)
		why = "closed before saying who it is";
	else if (r != (ssize_t)sizeof(h) || h.magic != HELLO_MAGIC ||
		 h.kind != HELLO_CONNECT)
		why = "malformed hello";
	else if (h.session != x->sif->session)
		why = "wrong session token";
	else if (!xchg_cred_ok(x, fd, &cred_pid))
		why = "runs as another user";
	else if (!(p = xchg_find(x, h.rank)))
		why = "not a peer of this connect";
	else if (p->in_done)
		why = "second hello from the same rank";
	if (why) {
		OHC_WARN(OHC_SS_SHM,
			 "rank %u: refused a shm connection (claims rank %d, "
			 "pid %d): %s",
			 x->sif->super.rank, r > 0 ? (int)h.rank : -1,
			 (int)cred_pid, why);
		goto done;
	}

	memset(&rep, 0, sizeof(rep));
	rep.magic = HELLO_MAGIC;
	rep.session = x->sif->session;
	rep.kind = HELLO_REPLY;
	rep.rank = x->sif->super.rank;
	rep.pid = x->sif->pid;
	rep.seg_bytes = x->sif->hdr->seg_bytes;
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &x->sif->seg_fd, sizeof(int));
	if (sendmsg(fd, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof(rep)) {
		/* The peer sees EOF and reports us; nothing else to do. */
		OHC_WARN(OHC_SS_SHM,
			 "rank %u: sending the shm segment to rank %u failed: "
			 "%s",
			 x->sif->super.rank, h.rank, strerror(errno));
		goto done;
	}
	p->in_done = 1;
done:
	close(fd);
	x->pending[slot] = -1;
}

static void xchg_accept(struct xchg *x)
{
	for (;;) {
		int fd = accept4(x->sif->listen_fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		unsigned i;

		if (fd < 0)
			return;
		for (i = 0; i < x->npending && x->pending[i] >= 0; i++)
			;
		if (i == x->npending) {
			OHC_WARN(OHC_SS_SHM,
				 "rank %u: too many unidentified shm "
				 "connections; dropping one",
				 x->sif->super.rank);
			close(fd);
			continue;
		}
		x->pending[i] = fd;
	}
}

static int xchg_done(const struct xchg *x)
{
	for (unsigned i = 0; i < x->n; i++)
		if (x->peers[i].out_state != 3 || !x->peers[i].in_done)
			return 0;
	return 1;
}

static void xchg_log_timeout(const struct xchg *x, uint64_t t0)
{
	char list[512];
	size_t off = 0;

	list[0] = 0;
	for (unsigned i = 0; i < x->n && off < sizeof(list) - 48; i++) {
		const struct xpeer *p = &x->peers[i];
		const char *why = NULL;

		if (p->out_state == 0)
			why = "not listening";
		else if (p->out_state < 3)
			why = "no answer";
		else if (!p->in_done)
			why = "never connected to us";
		if (why)
			off += (size_t)snprintf(list + off, sizeof(list) - off,
						"%s%u (%s)", off ? ", " : "",
						p->ep->super.peer, why);
	}
	OHC_ERROR(OHC_SS_SHM,
		  "rank %u: shm connect timed out after %" PRIu64
		  " ms; peers that did not answer: %s",
		  x->sif->super.rank,
		  (uint64_t)((ohc_time_ns() - t0) / 1000000u), list);
}

/* One round of the poll loop; OHC_INPROGRESS while not finished. */
static ohc_status_t xchg_round(struct xchg *x, struct pollfd *pfd,
			       uint64_t deadline)
{
	unsigned np = 0, retry = 0;
	uint64_t now = ohc_time_ns();
	ohc_status_t status;
	int ms;

	for (unsigned i = 0; i < x->n; i++) {
		struct xpeer *p = &x->peers[i];

		if (p->out_state == 0 && now >= p->retry_at) {
			status = xchg_connect(x, p);
			if (status < 0)
				return status;
		}
		retry |= p->out_state == 0;
	}
	if (xchg_done(x))
		return OHC_OK;

	pfd[np++] = (struct pollfd){.fd = x->sif->listen_fd, .events = POLLIN};
	for (unsigned i = 0; i < x->n; i++) {
		struct xpeer *p = &x->peers[i];

		if (p->out_state == 1)
			pfd[np++] = (struct pollfd){.fd = p->out_fd,
						    .events = POLLOUT};
		else if (p->out_state == 2)
			pfd[np++] = (struct pollfd){.fd = p->out_fd,
						    .events = POLLIN};
	}
	for (unsigned i = 0; i < x->npending; i++)
		if (x->pending[i] >= 0)
			pfd[np++] = (struct pollfd){.fd = x->pending[i],
						    .events = POLLIN};

	ms = ohc_deadline_left_ms(deadline, retry ? CONNECT_RETRY_MS : 100);
	if (ms <= 0 && ohc_deadline_passed(deadline))
		return OHC_ERR_TIMEOUT;
	if (poll(pfd, np, ms) < 0 && errno != EINTR) {
		OHC_ERROR(OHC_SS_SHM, "rank %u: poll failed: %s",
			  x->sif->super.rank, strerror(errno));
		return OHC_ERR_SYSCALL;
	}

	if (pfd[0].revents)
		xchg_accept(x);
	for (unsigned i = 0; i < x->n; i++) {
		struct xpeer *p = &x->peers[i];

		if (p->out_state == 1) {
			status = xchg_send_hello(x, p);
			if (status < 0)
				return status;
		} else if (p->out_state == 2) {
			status = xchg_take_reply(x, p);
			if (status < 0)
				return status;
		}
	}
	for (unsigned i = 0; i < x->npending; i++)
		if (x->pending[i] >= 0)
			xchg_serve(x, i);
	return xchg_done(x) ? OHC_OK : OHC_INPROGRESS;
}

ohc_status_t ohc_shm_seg_connect(struct ohc_shm_iface *sif,
				 struct ohc_shm_ep **eps, unsigned n,
				 uint64_t deadline)
{
	struct xchg x = {.sif = sif, .n = n, .uid = geteuid()};
	struct pollfd *pfd = NULL;
	uint64_t t0 = ohc_time_ns();
	ohc_status_t status;
	unsigned mapped = 0;

	status = seg_build(sif, eps, n);
	if (status < 0)
		return status;

	x.npending = 2 * n + 8;
	x.peers = calloc(n ? n : 1, sizeof(*x.peers));
	x.pending = malloc(x.npending * sizeof(*x.pending));
	pfd = calloc(1 + n + x.npending, sizeof(*pfd));
	if (!x.peers || !x.pending || !pfd) {
		status = OHC_ERR_NO_MEMORY;
		goto out;
	}
	for (unsigned i = 0; i < x.npending; i++)
		x.pending[i] = -1;
	for (unsigned i = 0; i < n; i++) {
		x.peers[i].ep = eps[i];
		x.peers[i].out_fd = -1;
		x.peers[i].peer_fd = -1;
	}

	do {
		status = xchg_round(&x, pfd, deadline);
		if (status == OHC_INPROGRESS && ohc_deadline_passed(deadline))
			status = OHC_ERR_TIMEOUT;
	} while (status == OHC_INPROGRESS);
	if (status == OHC_ERR_TIMEOUT)
		xchg_log_timeout(&x, t0);
	if (status < 0)
		goto out;

	for (mapped = 0; mapped < n; mapped++) {
		struct xpeer *p = &x.peers[mapped];

		status =
			seg_map_peer(sif, p->ep, p->peer_fd, p->peer_seg_bytes);
		if (status < 0)
			goto out;
	}

out:
	if (status < 0) {
		for (unsigned i = 0; i < mapped; i++)
			ohc_shm_ep_unmap(x.peers[i].ep);
	}
	for (unsigned i = 0; x.peers && i < n; i++) {
		if (x.peers[i].out_fd >= 0)
			close(x.peers[i].out_fd);
		if (x.peers[i].peer_fd >= 0)
			close(x.peers[i].peer_fd);
	}
	for (unsigned i = 0; x.pending && i < x.npending; i++)
		if (x.pending[i] >= 0)
			close(x.pending[i]);
	free(pfd);
	free(x.pending);
	free(x.peers);
	return status;
}
