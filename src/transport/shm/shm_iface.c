/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shm transport: ranks of one host in different processes. Each pair
 * has one single-producer/single-consumer ring per direction, living in
 * the reader's segment (see shm_ring.h for the layout and the protocol).
 * Sends complete once their bytes are in the ring (or, for rendezvous
 * messages, once the receiver has read them out of our memory).
 *
 * This file: the ops table, the iface and ep lifecycle, progress, the
 * doorbell (waiting and waking) and peer liveness. The producer side is
 * shm_tx.c, the consumer side shm_rx.c; segments and peer mappings are
 * shm_seg.c, the connect-time memfd exchange shm_xchg.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "transport/process.h"
#include "transport/shm/shm.h"
#include "util/compiler.h"
#include "util/file.h"
#include "util/log.h"

#define SHM_BLOB_MAGIC 0x4f484353u /* "OHCS" */
#define SHM_BLOB_VERSION 1u
#define SHM_RING_MIN 4096u

size_t ohc_shm_cma_threshold;

/* The address blob. */
struct shm_blob {
	uint32_t magic;
	uint16_t version;
	uint16_t hostid_kept; /* bytes of hostid[] present */
	uint32_t rank;
	int32_t pid;
	uint64_t session;
	uint64_t proc_token;  /* ohc_process_token(): pids may repeat */
	uint64_t hostid_hash; /* FNV-1a of the full hostid */
	uint32_t hostid_len;  /* of the full hostid */
	uint32_t pad;
	char hostid[OHC_SHM_HOSTID_MAX];
};

_Static_assert(sizeof(struct shm_blob) <= OHC_ADDR_MAX, "blob fits");

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Complete and unlink every request of a list. */
static unsigned fail_list(struct ohc_list *list, ohc_status_t status)
{
	unsigned n = 0;

	while (!ohc_list_empty(list)) {
		struct ohc_req *req =
			ohc_list_first(list, struct ohc_req, link);

		ohc_list_del(&req->link);
		ohc_req_complete(req, status);
		n++;
	}
	return n;
}

void ohc_shm_fail_all(struct ohc_shm_ep *sep, ohc_status_t status)
{
	fail_list(&sep->sends, status);
	fail_list(&sep->rndv, status);
	fail_list(&sep->recvs, status);
}

static int blob_parse(const void *blob, size_t len, struct shm_blob *b)
{
	if (len < offsetof(struct shm_blob, hostid) || len > sizeof(*b))
		return 0;
	memset(b, 0, sizeof(*b));
	memcpy(b, blob, len);
	return b->magic == SHM_BLOB_MAGIC && b->version == SHM_BLOB_VERSION &&
	       b->hostid_kept <= OHC_SHM_HOSTID_MAX &&
	       len == offsetof(struct shm_blob, hostid) + b->hostid_kept;
}

static ohc_status_t shm_iface_open(struct ohc_iface *iface,
				   const struct ohc_transport_params *params)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(iface);
	size_t ring = params->ring_bytes; /* 0: by the peers (shm_seg.c) */

	if (!params->hostid) {
		OHC_ERROR(OHC_SS_SHM, "rank %u: shm needs a host identity",
			  params->rank);
		return OHC_ERR_NULL;
	}
	if (params->rank >= params->nranks) {
		OHC_ERROR(OHC_SS_SHM, "shm: rank %u out of range (nranks %u)",
			  params->rank, params->nranks);
		return OHC_ERR_INVALID;
	}
	if (ring)
		ring = OHC_MAX(ring / OHC_SHM_REC_ALIGN * OHC_SHM_REC_ALIGN,
			       (size_t)SHM_RING_MIN);

	sif->super.rank = params->rank;
	sif->super.nranks = params->nranks;
	sif->session = params->session;
	sif->pid = getpid();
	sif->proc_token = ohc_process_token();
	sif->numa_node = params->numa_node;
	sif->ring_bytes = ring;
	sif->cma_min = ohc_shm_cma_threshold ? ohc_shm_cma_threshold
		       : params->cma_bytes   ? params->cma_bytes
					     : SIZE_MAX;
	sif->zc_min = params->zc_bytes ? params->zc_bytes : SIZE_MAX;
	sif->hostid_len = (uint32_t)strlen(params->hostid);
	sif->hostid_hash = fnv1a(params->hostid);
	memcpy(sif->hostid, params->hostid,
	       OHC_MIN(sif->hostid_len, (uint32_t)OHC_SHM_HOSTID_MAX));
	sif->listen_fd = -1;
	sif->seg_fd = -1;
	sif->bell_fd = -1;
	ohc_list_init(&sif->eps);
	atomic_init(&sif->wake_pending, 0);
	return ohc_shm_seg_open(sif);
}

static void shm_iface_close(struct ohc_iface *iface)
{
	ohc_shm_seg_close(ohc_shm_iface_of(iface));
}

static ohc_status_t shm_iface_address(struct ohc_iface *iface, void *blob,
				      size_t *len_p)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(iface);
	struct shm_blob b;
	uint16_t kept = (uint16_t)OHC_MIN(sif->hostid_len,
					  (uint32_t)OHC_SHM_HOSTID_MAX);

	memset(&b, 0, sizeof(b));
	b.magic = SHM_BLOB_MAGIC;
	b.version = SHM_BLOB_VERSION;
	b.hostid_kept = kept;
	b.rank = sif->super.rank;
	b.pid = sif->pid;
	b.session = sif->session;
	b.proc_token = sif->proc_token;
	b.hostid_hash = sif->hostid_hash;
	b.hostid_len = sif->hostid_len;
	memcpy(b.hostid, sif->hostid, kept);
	memcpy(blob, &b, offsetof(struct shm_blob, hostid) + kept);
	*len_p = offsetof(struct shm_blob, hostid) + kept;
	return OHC_OK;
}

static int shm_iface_reachable(struct ohc_iface *iface, const void *blob,
			       size_t len)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(iface);
	struct shm_blob b;

	if (!blob_parse(blob, len, &b))
		return 0;
	/* Another process: another pid, or the same pid in another pid ns. */
	return b.session == sif->session &&
	       (b.pid != sif->pid || b.proc_token != sif->proc_token) &&
	       b.hostid_len == sif->hostid_len &&
	       b.hostid_hash == sif->hostid_hash &&
	       !memcmp(b.hostid, sif->hostid, b.hostid_kept);
}

static ohc_status_t shm_ep_init(struct ohc_iface *iface, struct ohc_ep *ep,
				uint32_t peer, const void *blob, size_t len)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(iface);
	struct ohc_shm_ep *sep = ohc_shm_ep_of(ep);
	struct shm_blob b;

	if (!blob_parse(blob, len, &b) || b.rank != peer ||
	    peer == sif->super.rank || peer >= sif->super.nranks ||
	    b.session != sif->session) {
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: invalid shm address for rank %u (%zu "
			  "bytes)",
			  sif->super.rank, peer, len);
		return OHC_ERR_INVALID;
	}
	sep->super.iface = iface;
	sep->super.peer = peer;
	sep->pid = b.pid;
	sep->pidfd = -1;
	sep->peer_bell_fd = -1;
	ohc_list_init(&sep->sends);
	ohc_list_init(&sep->rndv);
	ohc_list_init(&sep->recvs);
	ohc_list_add_tail(&sif->eps, &sep->link);
	return OHC_OK;
}

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	return -1;
#endif
}

/*
 * An ep keeps two fds (the peer's pidfd and its doorbell's eventfd), and
 * the exchange holds a socket and a memfd per peer for a moment: make
 * room for them where the soft limit would not (at 1024, the common
 * default, 500 local ranks would not fit).
 */
static void shm_fd_room(struct ohc_shm_iface *sif, unsigned n)
{
	unsigned long soft;
	int rc = ohc_fd_room(4ul * n + 64, &soft);

	if (rc > 0)
		OHC_INFO(OHC_SS_SHM,
			 "rank %u: raised the open file limit to %lu for %u "
			 "shm peers",
			 sif->super.rank, soft, n);
	else if (rc < 0)
		OHC_WARN(OHC_SS_SHM,
			 "rank %u: %u shm peers may need %lu more file "
			 "descriptors than the limit of %lu allows (ulimit "
			 "-n)",
			 sif->super.rank, n, 4ul * n + 64, soft);
}

static ohc_status_t shm_iface_connect(struct ohc_iface *iface,
				      struct ohc_ep **eps, unsigned n,
				      uint64_t deadline)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(iface);
	struct ohc_shm_ep **seps;
	ohc_status_t status;

	if (sif->connected || sif->listen_fd < 0) {
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: shm iface_connect may run only once",
			  sif->super.rank);
		return OHC_ERR_INVALID;
	}
	seps = calloc(n ? n : 1, sizeof(*seps));
	if (!seps)
		return OHC_ERR_NO_MEMORY;
	for (unsigned i = 0; i < n; i++) {
		seps[i] = ohc_shm_ep_of(eps[i]);
		if (eps[i]->iface != iface || seps[i]->connected) {
			OHC_ERROR(OHC_SS_SHM,
				  "rank %u: ep to rank %u is not a fresh ep "
				  "of this iface",
				  sif->super.rank, eps[i]->peer);
			status = OHC_ERR_INVALID;
			goto out;
		}
	}
	shm_fd_room(sif, n);
	status = ohc_shm_seg_connect(sif, seps, n, deadline);
	/* Done, either way: nobody may connect to us any more. */
	close(sif->listen_fd);
	close(sif->seg_fd);
	sif->listen_fd = -1;
	sif->seg_fd = -1;
	if (status < 0)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		struct ohc_shm_ep *sep = seps[i];

		sep->rx_max_frag =
			OHC_MIN(sep->rx_bytes / 4, OHC_SHM_FRAG_CAP) /
			OHC_SHM_REC_ALIGN * OHC_SHM_REC_ALIGN;
		sep->pidfd = sep->pid > 0 ? pidfd_of(sep->pid) : -1;
		if (sep->pid <= 0)
			OHC_WARN(OHC_SS_SHM,
				 "rank %u: rank %u lives in another pid "
				 "namespace: its death is noticed by timeout "
				 "only",
				 sif->super.rank, sep->super.peer);
		sep->connected = 1;
	}
	sif->connected = 1;
out:
	free(seps);
	return status;
}

/* The ep will carry no more data: fail what is posted, tell the peer. */
static void shm_ep_cancel(struct ohc_ep *ep, ohc_status_t status)
{
	struct ohc_shm_ep *sep = ohc_shm_ep_of(ep);

	if (status >= 0)
		status = OHC_ERR_CANCELED;
	ohc_shm_fail_all(sep, status);
	sep->rndv_on = 0;
	sep->discard = 0;
	if (!sep->err)
		sep->err = status;
	if (sep->connected && sep->peer_seg) {
		/* a peer we never talked to hears it too (as an attached one
		 * would): its consumer of our ring stops waiting */
		if (!sep->tx)
			(void)ohc_shm_attach(sep);
		if (sep->tx)
			ohc_shm_ring_prod_fail(sep->tx, OHC_ERR_REMOTE);
		ohc_shm_ring_cons_fail(sep->rx, OHC_ERR_REMOTE);
		ohc_bell_ring(&sep->peer_bell->b, sep->peer_bell_fd, true);
	}
}

static void shm_ep_fini(struct ohc_ep *ep)
{
	struct ohc_shm_ep *sep = ohc_shm_ep_of(ep);

	shm_ep_cancel(ep, OHC_ERR_CANCELED);
	ohc_shm_zc_drop_all(sep);
	ohc_shm_ep_unmap(sep);
	if (sep->link.next)
		ohc_list_del(&sep->link);
	sep->connected = 0;
}

static ohc_status_t shm_post_check(struct ohc_shm_ep *sep)
{
	if (OHC_UNLIKELY(!sep->connected)) {
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: post on an unconnected shm ep to rank %u",
			  sep->super.iface->rank, sep->super.peer);
		return OHC_ERR_INVALID;
	}
	return sep->err;
}

/*
 * Why the peer stopped: OHC_ERR_DESYNC if it announced (iface_abort) that
 * it failed on a mismatched operation, OHC_ERR_REMOTE for anything else.
 */
ohc_status_t ohc_shm_peer_stop_reason(const struct ohc_shm_ep *sep)
{
	const struct ohc_shm_seg_hdr *hdr = sep->peer_seg;

	if (hdr && atomic_load_explicit(&hdr->abort_status,
					memory_order_acquire) == OHC_ERR_DESYNC)
		return OHC_ERR_DESYNC;
	return OHC_ERR_REMOTE;
}

static unsigned shm_ep_progress(struct ohc_shm_ep *sep)
{
	unsigned tx = 0, rx = 0;

	if (!sep->connected || sep->err)
		return 0;
	if (OHC_UNLIKELY(!sep->tx) &&
	    (!ohc_list_empty(&sep->sends) || !ohc_list_empty(&sep->recvs) ||
	     sep->discard)) {
		ohc_status_t st = ohc_shm_attach(sep);

		if (st < 0) {
			sep->err = st;
			ohc_shm_fail_all(sep, st);
			return 1;
		}
	}
	/*
	 * Acks first: a reader that read our last message and then closed
	 * (destroy) has completed it, whatever it does afterwards.
	 */
	tx = ohc_shm_reap_rndv(sep);
	if (!ohc_list_empty(&sep->sends) || !ohc_list_empty(&sep->rndv)) {
		if (OHC_UNLIKELY(ohc_shm_ring_cons_err(sep->tx))) {
			ohc_status_t why = ohc_shm_peer_stop_reason(sep);

			if (!sep->dead_logged)
				OHC_ERROR(OHC_SS_SHM,
					  "rank %u: shm peer rank %u stopped "
					  "receiving (%s)",
					  sep->super.iface->rank,
					  sep->super.peer, ohc_status_str(why));
			sep->dead_logged = 1;
			sep->err = why;
			ohc_shm_fail_all(sep, why);
			return 1;
		}
		tx += ohc_shm_push(sep);
	}
	if (!ohc_list_empty(&sep->recvs) || sep->discard)
		rx = ohc_shm_pull(sep);
	/* Data for the consumer, or space/acks for the producer. */
	if (tx || rx)
		ohc_bell_ring(&sep->peer_bell->b, sep->peer_bell_fd, true);
	return tx + rx;
}

static ohc_status_t shm_ep_send(struct ohc_ep *ep, struct ohc_req *req)
{
	struct ohc_shm_ep *sep = ohc_shm_ep_of(ep);
	ohc_status_t status = shm_post_check(sep);

	if (status < 0)
		return status;
	ohc_shm_tx_implicit_zc(sep, req);
	req->done = 0;
	ohc_list_add_tail(&sep->sends, &req->link);
	shm_ep_progress(sep);
	return OHC_OK;
}

static ohc_status_t shm_ep_recv(struct ohc_ep *ep, struct ohc_req *req)
{
	struct ohc_shm_ep *sep = ohc_shm_ep_of(ep);
	ohc_status_t status = shm_post_check(sep);

	if (status < 0)
		return status;
	req->done = 0;
	ohc_list_add_tail(&sep->recvs, &req->link);
	shm_ep_progress(sep);
	return OHC_OK;
}

static unsigned shm_iface_progress(struct ohc_iface *iface)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(iface);
	struct ohc_list *pos;
	unsigned n = 0;

	ohc_list_for_each(pos, &sif->eps) n +=
		shm_ep_progress(ohc_container_of(pos, struct ohc_shm_ep, link));
	return n;
}

/* Would progress on this ep do anything now? (the re-check before sleep) */
static int shm_ep_ready(struct ohc_shm_ep *sep)
{
	if (!sep->connected || sep->err)
		return 0;
	if (!sep->tx) /* not attached: progress does that, if there is work */
		return !ohc_list_empty(&sep->sends) ||
		       !ohc_list_empty(&sep->recvs) || sep->discard;
	if (!ohc_list_empty(&sep->recvs) || sep->discard) {
		if (sep->rndv_on ||
		    ohc_shm_rec_ready(sep->rx_data, sep->rx_bytes,
				      sep->rx_head) ||
		    ohc_shm_ring_prod_err(sep->rx))
			return 1;
	}
	if (!ohc_list_empty(&sep->rndv) &&
	    ohc_shm_ring_cma_acked(sep->tx) != sep->tx_acked)
		return 1;
	if (!ohc_list_empty(&sep->sends) || !ohc_list_empty(&sep->rndv)) {
		if (ohc_shm_ring_cons_err(sep->tx))
			return 1;
	}
	if (!ohc_list_empty(&sep->sends) && ohc_shm_tx_ready(sep))
		return 1;
	return 0;
}

/*
 * About to sleep: tell ringers how to wake us (mode), then look once more
 * (a ringer that published before it saw the mode did not ring). Whether
 * something is ready now.
 */
static int shm_sleep_begin(struct ohc_shm_iface *sif, enum ohc_bell_mode mode)
{
	struct ohc_list *pos;
	int ready = 0;

	ohc_bell_arm(&sif->hdr->bell.b, mode);
	if (atomic_exchange_explicit(&sif->wake_pending, 0,
				     memory_order_acquire))
		ready = 1;
	ohc_list_for_each(pos, &sif->eps)
	{
		if (ready)
			break;
		ready = shm_ep_ready(
			ohc_container_of(pos, struct ohc_shm_ep, link));
	}
	return ready;
}

static unsigned shm_iface_wait_arm(struct ohc_iface *iface,
				   struct pollfd **fds_p)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(iface);

	sif->bell_pfd.fd = sif->bell_fd;
	sif->bell_pfd.events = POLLIN;
	sif->bell_pfd.revents = 0;
	*fds_p = &sif->bell_pfd;
	return shm_sleep_begin(sif, OHC_BELL_FD) ? 0 : 1;
}

static void shm_iface_wait_disarm(struct ohc_iface *iface)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(iface);

	ohc_bell_disarm(&sif->hdr->bell.b, sif->bell_fd);
}

static int shm_look(void *sif)
{
	return shm_sleep_begin(sif, OHC_BELL_FUTEX);
}

static ohc_status_t shm_iface_wait(struct ohc_iface *iface, int timeout_ms)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(iface);

	ohc_bell_wait(&sif->hdr->bell.b, timeout_ms, true, shm_look, sif);
	return OHC_OK;
}

static void shm_iface_wake(struct ohc_iface *iface)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(iface);

	atomic_store_explicit(&sif->wake_pending, 1, memory_order_release);
	ohc_bell_ring(&sif->hdr->bell.b, sif->bell_fd, true);
}

static int pid_gone(struct ohc_shm_ep *sep)
{
	struct pollfd pfd = {.fd = sep->pidfd, .events = POLLIN};

	if (sep->pidfd >= 0)
		return poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN);
	if (sep->pid <= 0) /* not visible from our pid namespace */
		return 0;
	return kill(sep->pid, 0) < 0 && errno == ESRCH;
}

static void shm_iface_abort(struct ohc_iface *iface, ohc_status_t reason)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(iface);
	int32_t none = 0;
	struct ohc_list *pos;

	if (!sif->hdr || reason >= 0)
		return;
	if (!atomic_compare_exchange_strong(&sif->hdr->abort_status, &none,
					    (int32_t)reason))
		return;
	ohc_list_for_each(pos, &sif->eps)
	{
		struct ohc_shm_ep *sep =
			ohc_container_of(pos, struct ohc_shm_ep, link);

		if (sep->peer_bell)
			ohc_bell_ring(&sep->peer_bell->b, sep->peer_bell_fd,
				      true);
	}
}

/* The peer's announced failure (see iface_abort), or OHC_OK. */
static ohc_status_t peer_aborted(struct ohc_shm_ep *sep)
{
	const struct ohc_shm_seg_hdr *hdr = sep->peer_seg;
	int32_t why;

	if (!hdr)
		return OHC_OK;
	why = atomic_load_explicit(&hdr->abort_status, memory_order_acquire);
	if (!why)
		return OHC_OK;
	why = ohc_shm_peer_stop_reason(sep);
	if (!sep->dead_logged)
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: shm peer rank %u failed its communicator "
			  "(%s)",
			  sep->super.iface->rank, sep->super.peer,
			  ohc_status_str(why));
	sep->dead_logged = 1;
	return why;
}

static ohc_status_t shm_ep_check(struct ohc_ep *ep)
{
	struct ohc_shm_ep *sep = ohc_shm_ep_of(ep);
	ohc_status_t status;

	if (sep->err == OHC_ERR_REMOTE || sep->err == OHC_ERR_DESYNC)
		return sep->err;
	status = peer_aborted(sep);
	if (status < 0)
		return status;
	if (!pid_gone(sep))
		return OHC_OK;
	if (!sep->dead_logged)
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: shm peer rank %u (pid %d) is gone",
			  ep->iface->rank, ep->peer, (int)sep->pid);
	sep->dead_logged = 1;
	return OHC_ERR_REMOTE;
}

const struct ohc_transport_ops ohc_shm_ops = {
	.size = sizeof(struct ohc_transport_ops),
	.name = "shm",
	.caps = OHC_TP_CAP_SAME_HOST | OHC_TP_CAP_WAIT | OHC_TP_CAP_WAIT_SET,
	.iface_size = sizeof(struct ohc_shm_iface),
	.ep_size = sizeof(struct ohc_shm_ep),
	.iface_open = shm_iface_open,
	.iface_close = shm_iface_close,
	.iface_address = shm_iface_address,
	.iface_reachable = shm_iface_reachable,
	.ep_init = shm_ep_init,
	.iface_connect = shm_iface_connect,
	.ep_fini = shm_ep_fini,
	.ep_send = shm_ep_send,
	.ep_recv = shm_ep_recv,
	.iface_progress = shm_iface_progress,
	.iface_wait = shm_iface_wait,
	.iface_wait_arm = shm_iface_wait_arm,
	.iface_wait_disarm = shm_iface_wait_disarm,
	.iface_wake = shm_iface_wake,
	.ep_check = shm_ep_check,
	.ep_cancel = shm_ep_cancel,
	.iface_abort = shm_iface_abort,
	.ep_mem_map = ohc_shm_ep_mem_map,
	.ep_mem_unmap = ohc_shm_ep_mem_unmap,
};
