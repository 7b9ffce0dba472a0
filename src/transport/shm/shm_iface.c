/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shm transport: ranks of one host in different processes. Each pair
 * has one single-producer/single-consumer ring per direction, living in
 * the reader's segment (see shm_ring.h for the layout and the protocol).
 * Sends complete once their bytes are in the ring (or, for rendezvous
 * messages, once the receiver has read them out of our memory).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/ohc_rt.h"
#include "transport/process.h"
#include "transport/shm/shm.h"
#include "util/compiler.h"
#include "util/log.h"

#define SHM_BLOB_MAGIC 0x4f484353u /* "OHCS" */
#define SHM_BLOB_VERSION 1u
#define SHM_RING_DEFAULT (1u << 20)
#define SHM_RING_MIN 4096u
#define SHM_FRAG_CAP (64u << 10)  /* largest fragment */
#define SHM_PARTIAL_MIN 4096u	  /* smallest fragment cut to fit space */
#define SHM_CMA_CHUNK (1u << 20)  /* bytes per process_vm_readv */
#define SHM_CMA_BUDGET (4u << 20) /* CMA bytes per ep per progress call */
#define SHM_BOUNCE (256u << 10)	  /* CMA reads that feed a reduction */

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

enum tx_plan { PLAN_WAIT, PLAN_PAD, PLAN_DATA, PLAN_RNDV, PLAN_ZC };

static struct ohc_shm_iface *shm_iface(struct ohc_iface *iface)
{
	return ohc_derived_of(iface, struct ohc_shm_iface);
}

static struct ohc_shm_ep *shm_ep(struct ohc_ep *ep)
{
	return ohc_derived_of(ep, struct ohc_shm_ep);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static long futex(_Atomic uint32_t *word, int op, uint32_t val,
		  const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)word, op, val, ts, NULL, 0);
}

void ohc_shm_bell_ring(struct ohc_shm_bell *bell)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&bell->sleeping, memory_order_relaxed))
		return;
	atomic_fetch_add_explicit(&bell->seq, 1, memory_order_seq_cst);
	futex(&bell->seq, FUTEX_WAKE, INT_MAX, NULL);
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
	struct ohc_shm_iface *sif = shm_iface(iface);
	size_t ring =
		params->ring_bytes ? params->ring_bytes : SHM_RING_DEFAULT;

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
	ohc_list_init(&sif->eps);
	atomic_init(&sif->wake_pending, 0);
	return ohc_shm_seg_open(sif);
}

static void shm_iface_close(struct ohc_iface *iface)
{
	ohc_shm_seg_close(shm_iface(iface));
}

static ohc_status_t shm_iface_address(struct ohc_iface *iface, void *blob,
				      size_t *len_p)
{
	struct ohc_shm_iface *sif = shm_iface(iface);
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
	struct ohc_shm_iface *sif = shm_iface(iface);
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
	struct ohc_shm_iface *sif = shm_iface(iface);
	struct ohc_shm_ep *sep = shm_ep(ep);
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

static ohc_status_t shm_iface_connect(struct ohc_iface *iface,
				      struct ohc_ep **eps, unsigned n,
				      uint64_t deadline)
{
	struct ohc_shm_iface *sif = shm_iface(iface);
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
		seps[i] = shm_ep(eps[i]);
		if (eps[i]->iface != iface || seps[i]->connected) {
			OHC_ERROR(OHC_SS_SHM,
				  "rank %u: ep to rank %u is not a fresh ep "
				  "of this iface",
				  sif->super.rank, eps[i]->peer);
			status = OHC_ERR_INVALID;
			goto out;
		}
	}
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

		sep->tx_max_frag = OHC_MIN(sep->tx_bytes / 4, SHM_FRAG_CAP) /
				   OHC_SHM_REC_ALIGN * OHC_SHM_REC_ALIGN;
		sep->rx_max_frag = OHC_MIN(sep->rx_bytes / 4, SHM_FRAG_CAP) /
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
	struct ohc_shm_ep *sep = shm_ep(ep);

	if (status >= 0)
		status = OHC_ERR_CANCELED;
	fail_list(&sep->sends, status);
	fail_list(&sep->rndv, status);
	fail_list(&sep->recvs, status);
	sep->rndv_on = 0;
	sep->discard = 0;
	if (!sep->err)
		sep->err = status;
	if (sep->connected && sep->peer_seg) {
		ohc_shm_ring_prod_fail(sep->tx, OHC_ERR_REMOTE);
		ohc_shm_ring_cons_fail(sep->rx, OHC_ERR_REMOTE);
		ohc_shm_bell_ring(sep->peer_bell);
	}
}

static void shm_ep_fini(struct ohc_ep *ep)
{
	struct ohc_shm_ep *sep = shm_ep(ep);

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
 * Free bytes of the ring, at least `need` if the consumer has freed them.
 * The consumer's head is read only when our last reading of it shows less:
 * a read per send moved its cache line to us and back each time (the
 * consumer writes it after every record). An old reading is only smaller.
 */
static uint64_t tx_free(struct ohc_shm_ep *sep, uint64_t need)
{
	uint64_t free_b = sep->tx_bytes - (sep->tx_tail - sep->tx_head);

	if (free_b >= need)
		return free_b;
	sep->tx_head = ohc_shm_ring_head_acquire(sep->tx);
	return sep->tx_bytes - (sep->tx_tail - sep->tx_head);
}

/* Does the whole of req fit inside a record header (an INLINE record)? */
static int tx_inline(const struct ohc_req *req)
{
	return req->done == 0 && req->len <= OHC_SHM_INLINE_MAX;
}

/* Decide what the front send can write now; *payload_p for PLAN_DATA. */
static enum tx_plan tx_plan(struct ohc_shm_ep *sep, const struct ohc_req *req,
			    uint64_t *payload_p)
{
	uint64_t rem = req->len - req->done;
	uint64_t want = OHC_MIN(rem, sep->tx_max_frag);
	uint64_t need = tx_inline(req) ? OHC_SHM_REC_HDR
				       : ohc_shm_rec_bytes(want),
		 fit;
	/* enough for any record this send may write here (a ZC one: 128) */
	uint64_t free_b = tx_free(
		sep,
		OHC_MAX(need, ohc_shm_rec_bytes(sizeof(struct ohc_shm_zc))));
	uint64_t contig = sep->tx_bytes - sep->tx_tail % sep->tx_bytes;
	uint64_t avail = OHC_MIN(free_b, contig);

	/* Exported source: the reader copies out of its mapping of it. */
	if (req->done == 0 && req->smem && ohc_shm_ring_cma_ok(sep->tx)) {
		need = ohc_shm_rec_bytes(sizeof(struct ohc_shm_zc));
		if (avail >= need)
			return PLAN_ZC;
		return contig < need && free_b >= contig ? PLAN_PAD : PLAN_WAIT;
	}
	if (req->done == 0 &&
	    req->len >= shm_iface(sep->super.iface)->cma_min &&
	    ohc_shm_ring_cma_ok(sep->tx))
		return avail >= OHC_SHM_REC_HDR ? PLAN_RNDV : PLAN_WAIT;
	if (avail >= need) {
		*payload_p = want;
		return PLAN_DATA;
	}
	fit = avail > OHC_SHM_REC_HDR
		      ? (avail - OHC_SHM_REC_HDR) / OHC_SHM_REC_ALIGN *
				OHC_SHM_REC_ALIGN
		      : 0;
	if (fit >= OHC_MIN((uint64_t)SHM_PARTIAL_MIN, sep->tx_max_frag)) {
		*payload_p = fit; /* < want: not the last, a multiple of 64 */
		return PLAN_DATA;
	}
	if (contig < need && free_b >= contig)
		return PLAN_PAD;
	return PLAN_WAIT;
}

/*
 * Clear the stamp where the record after the next rb bytes will go, if
 * that place is free (else it holds an older header: shm_ring.h).
 */
static void tx_unstamp_next(struct ohc_shm_ep *sep, uint64_t rb)
{
	if (tx_free(sep, rb + OHC_SHM_REC_ALIGN) >= rb + OHC_SHM_REC_ALIGN)
		ohc_shm_rec_unstamp(sep->tx_data, sep->tx_bytes,
				    sep->tx_tail + rb);
}

/* Producer: move posted sends into the ring; returns records written. */
static unsigned shm_push(struct ohc_shm_ep *sep)
{
	unsigned moved = 0;

	while (!ohc_list_empty(&sep->sends)) {
		struct ohc_req *req =
			ohc_list_first(&sep->sends, struct ohc_req, link);
		uint64_t pos = sep->tx_tail % sep->tx_bytes, payload = 0, rb;
		struct ohc_shm_rec *rec =
			(struct ohc_shm_rec *)(sep->tx_data + pos);
		enum tx_plan plan = tx_plan(sep, req, &payload);
		int inl;

		if (plan == PLAN_WAIT)
			break;
		if (plan == PLAN_PAD) {
			rb = sep->tx_bytes - pos;
			tx_unstamp_next(sep, rb);
			rec->kind = OHC_SHM_REC_PAD;
			rec->frag_len = (uint32_t)rb;
			goto stamp;
		}
		inl = plan == PLAN_DATA && tx_inline(req);
		rb = inl ? OHC_SHM_REC_HDR
		     : plan == PLAN_ZC
			     ? ohc_shm_rec_bytes(sizeof(struct ohc_shm_zc))
			     : ohc_shm_rec_bytes(payload);
		tx_unstamp_next(sep, rb);
		rec->kind = inl			? OHC_SHM_REC_INLINE
			    : plan == PLAN_RNDV ? OHC_SHM_REC_RNDV
			    : plan == PLAN_ZC	? OHC_SHM_REC_ZC
						: OHC_SHM_REC_DATA;
		rec->flags = req->done == 0 ? OHC_SHM_FRAG_FIRST : 0;
		if (plan != PLAN_DATA || req->done + payload == req->len)
			rec->flags |= OHC_SHM_FRAG_LAST;
		rec->frag_len = (uint32_t)payload;
		rec->sig = req->sig;
		if (inl) {
			if (payload)
				memcpy(rec->data, req->sbuf, payload);
		} else {
			rec->msg_len = req->len;
			rec->addr = (uint64_t)(uintptr_t)req->sbuf;
		}
		if (plan == PLAN_ZC) {
			struct ohc_shm_zc zc;

			memset(&zc, 0, sizeof(zc));
			zc.desc = *req->smem;
			rec->frag_len = sizeof(zc);
			memcpy(rec + 1, &zc, sizeof(zc));
		} else if (plan == PLAN_DATA) {
			if (payload && !inl)
				memcpy(rec + 1,
				       (const char *)req->sbuf + req->done,
				       payload);
			req->done += payload;
		}
	stamp:
		ohc_shm_rec_stamp(rec, sep->tx_tail);
		sep->tx_tail += rb;
		/*
		 * Clear one line further now, off the critical path: the
		 * next record's own clearing then finds that line already
		 * ours, instead of fetching it back (a lap ago the consumer
		 * read it) before its stamp can be seen. AllReduce, 2 ranks,
		 * interleaved: 16 B 0.58-0.63 -> 0.47-0.49 us, 8 B
		 * 0.75-0.91 -> 0.65-0.74.
		 */
		tx_unstamp_next(sep, OHC_SHM_REC_ALIGN);
		moved++;
		if (plan == PLAN_RNDV || plan == PLAN_ZC) {
			ohc_list_del(&req->link);
			ohc_list_add_tail(&sep->rndv, &req->link);
		} else if (plan == PLAN_DATA && req->done == req->len) {
			ohc_list_del(&req->link);
			ohc_req_complete(req, OHC_OK);
		}
	}
	return moved;
}

/* Producer: complete rendezvous sends the consumer has read. */
static unsigned shm_reap_rndv(struct ohc_shm_ep *sep)
{
	uint64_t acked;
	unsigned n = 0;

	if (ohc_list_empty(&sep->rndv))
		return 0;
	acked = ohc_shm_ring_cma_acked(sep->tx);
	while (sep->tx_acked < acked && !ohc_list_empty(&sep->rndv)) {
		struct ohc_req *req =
			ohc_list_first(&sep->rndv, struct ohc_req, link);

		req->done = req->len;
		ohc_list_del(&req->link);
		ohc_req_complete(req, OHC_OK);
		sep->tx_acked++;
		n++;
	}
	return n;
}

/*
 * Why the peer stopped: OHC_ERR_DESYNC if it announced (iface_abort) that
 * it failed on a mismatched operation, OHC_ERR_REMOTE for anything else.
 */
static ohc_status_t peer_stop_reason(const struct ohc_shm_ep *sep)
{
	const struct ohc_shm_seg_hdr *hdr = sep->peer_seg;

	if (hdr && atomic_load_explicit(&hdr->abort_status,
					memory_order_acquire) == OHC_ERR_DESYNC)
		return OHC_ERR_DESYNC;
	return OHC_ERR_REMOTE;
}

/* The stream from the peer is broken: fail everything posted on the ep. */
static void shm_rx_fail(struct ohc_shm_ep *sep, ohc_status_t status,
			const char *why)
{
	if (!sep->dead_logged)
		OHC_ERROR(OHC_SS_SHM, "rank %u: shm stream from rank %u: %s",
			  sep->super.iface->rank, sep->super.peer, why);
	sep->dead_logged = 1;
	sep->err = status;
	sep->rndv_on = 0;
	sep->discard = 0;
	fail_list(&sep->sends, status);
	fail_list(&sep->rndv, status);
	fail_list(&sep->recvs, status);
	ohc_shm_ring_cons_fail(sep->rx, OHC_ERR_REMOTE);
}

/* Consumer: check a new message against the front receive. */
static int rx_match(struct ohc_shm_ep *sep, struct ohc_req *req,
		    const struct ohc_shm_rec *rec, uint64_t msg_len)
{
	if (!memcmp(&rec->sig, &req->sig, sizeof(req->sig)) &&
	    msg_len == req->len)
		return 1;
	OHC_DEBUG(OHC_SS_SHM,
		  "rank %u: message from rank %u does not match: seq %" PRIu64
		  "/%" PRIu64 " len %" PRIu64 "/%zu",
		  sep->super.iface->rank, sep->super.peer, rec->sig.seq,
		  req->sig.seq, msg_len, req->len);
	req->got_sig = rec->sig;
	ohc_list_del(&req->link);
	ohc_req_complete(req, OHC_ERR_DESYNC);
	return 0;
}

/* Consumer: finish a rendezvous message (read or rejected). */
static void rndv_ack(struct ohc_shm_ep *sep)
{
	sep->rx_acked++;
	ohc_shm_ring_cma_ack(sep->rx, sep->rx_acked);
	sep->rndv_on = 0;
}

/* Consumer: read part of the current rendezvous message out of the peer. */
static ohc_status_t rndv_step(struct ohc_shm_ep *sep, size_t *budget_p)
{
	struct ohc_req *req = ohc_list_first(&sep->recvs, struct ohc_req, link);
	uint64_t src = sep->rndv_rec.addr + req->done;
	size_t chunk = OHC_MIN(req->len - req->done, (size_t)SHM_CMA_CHUNK);
	ohc_status_t status;

	if (sep->rndv_src) {
		/* zero-copy: straight out of our mapping of the sender */
		req->path = OHC_PATH_ZC;
		ohc_req_deliver(req, req->done, sep->rndv_src + req->done,
				chunk);
	} else if (req->kind == OHC_RECV_COPY) {
		req->path = OHC_PATH_DIRECT;
		status = ohc_shm_cma_read(sep, (char *)req->dst + req->done,
					  src, chunk);
		if (status < 0)
			return status;
		req->done += chunk;
	} else {
		req->path = OHC_PATH_STAGED; /* through the bounce buffer */
		if (!sep->bounce && !(sep->bounce = malloc(SHM_BOUNCE)))
			return OHC_ERR_NO_MEMORY;
		chunk = OHC_MIN(chunk, (size_t)SHM_BOUNCE);
		status = ohc_shm_cma_read(sep, sep->bounce, src, chunk);
		if (status < 0)
			return status;
		ohc_req_deliver(req, req->done, sep->bounce, chunk);
	}
	*budget_p -= OHC_MIN(*budget_p, chunk);
	if (req->done < req->len)
		return OHC_INPROGRESS;
	/* Data read after the producer canceled may be stale: refuse it. */
	if (ohc_shm_ring_prod_err(sep->rx))
		return OHC_ERR_REMOTE;
	rndv_ack(sep);
	ohc_list_del(&req->link);
	ohc_req_complete(req, OHC_OK);
	return OHC_OK;
}

/*
 * Small records: ask for all their payload lines at once (up to
 * SHM_PREFETCH bytes of the record), so that they cross from the
 * producer's cache in one round trip instead of one per line or pair of
 * lines. AllReduce, 2 ranks: 128-512 B went from 0.83-1.05 us to
 * 0.59-0.77, 8-64 B unchanged. Prefetching the producer's next lines for
 * writing (PREFETCHW) as well gained nothing more and cost some at 32-64 B.
 */
#define SHM_PREFETCH 512u
static inline void rx_prefetch(const struct ohc_shm_ep *sep, uint64_t pos,
			       uint64_t bytes)
{
	const char *p = sep->rx_data + pos;

	bytes = OHC_MIN(bytes, (uint64_t)SHM_PREFETCH);
	for (uint64_t off = OHC_CACHELINE; off < bytes; off += OHC_CACHELINE)
		__builtin_prefetch(p + off, 0);
}

/* Consumer: is the header at pos (of `bytes` in all, contig before the
 * end) a record we can take? */
static int rx_rec_ok(const struct ohc_shm_ep *sep,
		     const struct ohc_shm_rec *rec, uint64_t bytes,
		     uint64_t contig)
{
	const uint16_t whole = OHC_SHM_FRAG_FIRST | OHC_SHM_FRAG_LAST;

	if (bytes > contig)
		return 0;
	switch (rec->kind) {
	case OHC_SHM_REC_PAD:
		return bytes == contig;
	case OHC_SHM_REC_DATA:
		return rec->frag_len <= sep->rx_max_frag;
	case OHC_SHM_REC_INLINE:
		return rec->frag_len <= OHC_SHM_INLINE_MAX &&
		       rec->flags == whole;
	case OHC_SHM_REC_RNDV:
		return !rec->frag_len && rec->flags == whole && sep->rx_cma;
	case OHC_SHM_REC_ZC:
		return rec->frag_len == sizeof(struct ohc_shm_zc) &&
		       rec->flags == whole && sep->rx_cma;
	default:
		return 0;
	}
}

/* Consumer: drain records into posted receives; returns records read. */
static unsigned shm_pull(struct ohc_shm_ep *sep)
{
	size_t budget = SHM_CMA_BUDGET;
	unsigned moved = 0;

	while (!ohc_list_empty(&sep->recvs) || sep->discard) {
		uint64_t pos, contig, bytes, msg_len;
		const unsigned char *payload;
		struct ohc_shm_rec rec;
		struct ohc_req *req;
		int is_zc;

		if (sep->rndv_on) {
			ohc_status_t st;

			if (!budget)
				break;
			st = rndv_step(sep, &budget);
			if (st < 0) {
				shm_rx_fail(sep, st, "rendezvous read failed");
				break;
			}
			moved++;
			continue;
		}
		/*
		 * After a record with payload lines, ask for the line after
		 * the next header while polling it: the next record likely
		 * has the same shape, and its payload line then arrives
		 * with its header, not one round trip after. Not after a
		 * one-line record: that line is where the producer clears
		 * ahead (shm_push), and taking it would make it wait.
		 */
		if (sep->rx_multi)
			__builtin_prefetch(sep->rx_data + (sep->rx_head +
							   OHC_SHM_REC_ALIGN) %
								  sep->rx_bytes,
					   0);
		if (!ohc_shm_rec_ready(sep->rx_data, sep->rx_bytes,
				       sep->rx_head)) {
			ohc_status_t why;

			if (!ohc_shm_ring_prod_err(sep->rx))
				break;
			/*
			 * The producer publishes its last records before it
			 * cancels, so after seeing the cancel look again: the
			 * first look may predate both (a consumer preempted
			 * between the two loads saw a peer that completed its
			 * last send and then left).
			 */
			if (ohc_shm_rec_ready(sep->rx_data, sep->rx_bytes,
					      sep->rx_head))
				continue;
			if (!ohc_list_empty(&sep->recvs)) {
				why = peer_stop_reason(sep);
				shm_rx_fail(sep, why,
					    why == OHC_ERR_DESYNC
						    ? "the peer stopped on a "
						      "mismatched operation"
						    : "the peer canceled its "
						      "sends");
			}
			break;
		}
		pos = sep->rx_head % sep->rx_bytes;
		contig = sep->rx_bytes - pos;
		memcpy(&rec, sep->rx_data + pos, sizeof(rec));
		bytes = rec.kind == OHC_SHM_REC_PAD ? rec.frag_len
			: rec.kind == OHC_SHM_REC_RNDV ||
					rec.kind == OHC_SHM_REC_INLINE
				? OHC_SHM_REC_HDR
				: ohc_shm_rec_bytes(rec.frag_len);
		if (!rx_rec_ok(sep, &rec, bytes, contig)) {
			shm_rx_fail(sep, OHC_ERR_REMOTE, "corrupt record");
			break;
		}
		rx_prefetch(sep, pos, bytes);
		is_zc = rec.kind == OHC_SHM_REC_ZC;
		msg_len = rec.kind == OHC_SHM_REC_INLINE ? rec.frag_len
							 : rec.msg_len;
		payload = rec.kind == OHC_SHM_REC_INLINE
				  ? rec.data
				  : (const unsigned char *)sep->rx_data + pos +
					    OHC_SHM_REC_HDR;
		moved++;
		if (rec.kind == OHC_SHM_REC_PAD)
			goto consume;
		if (sep->discard) {
			if (rec.kind == OHC_SHM_REC_RNDV || is_zc)
				rndv_ack(sep);
			if (rec.flags & OHC_SHM_FRAG_LAST)
				sep->discard = 0;
			goto consume;
		}
		req = ohc_list_first(&sep->recvs, struct ohc_req, link);
		if (!(rec.flags & OHC_SHM_FRAG_FIRST) != (req->done != 0)) {
			shm_rx_fail(sep, OHC_ERR_REMOTE,
				    "fragment out of order");
			break;
		}
		if ((rec.flags & OHC_SHM_FRAG_FIRST) &&
		    !rx_match(sep, req, &rec, msg_len)) {
			if (rec.kind == OHC_SHM_REC_RNDV || is_zc)
				rndv_ack(sep);
			else if (!(rec.flags & OHC_SHM_FRAG_LAST))
				sep->discard = 1;
			goto consume;
		}
		if (rec.kind == OHC_SHM_REC_RNDV || is_zc) {
			sep->rndv_rec = rec;
			sep->rndv_on = 1;
			sep->rndv_src = NULL;
			if (is_zc) {
				struct ohc_shm_zc zc;

				memcpy(&zc, payload, sizeof(zc));
				sep->rndv_src = ohc_shm_zc_import(
					sep, &zc.desc, (size_t)rec.msg_len);
			}
			goto consume;
		}
		/* whole lines but for the last (core/req.h): a reduction
		 * must see whole elements */
		if (req->done + rec.frag_len > req->len ||
		    !!(rec.flags & OHC_SHM_FRAG_LAST) !=
			    (req->done + rec.frag_len == req->len) ||
		    (!(rec.flags & OHC_SHM_FRAG_LAST) &&
		     rec.frag_len % OHC_SHM_REC_ALIGN)) {
			shm_rx_fail(sep, OHC_ERR_REMOTE,
				    "fragment lengths do not add up");
			break;
		}
		if (rec.frag_len)
			ohc_req_deliver(req, req->done, payload, rec.frag_len);
		if (rec.flags & OHC_SHM_FRAG_LAST) {
			ohc_list_del(&req->link);
			ohc_req_complete(req, OHC_OK);
		}
	consume:
		sep->rx_multi = bytes > OHC_SHM_REC_HDR;
		sep->rx_head += bytes;
		ohc_shm_ring_head_release(sep->rx, sep->rx_head);
	}
	return moved;
}

static unsigned shm_ep_progress(struct ohc_shm_ep *sep)
{
	unsigned tx = 0, rx = 0;

	if (!sep->connected || sep->err)
		return 0;
	/*
	 * Acks first: a reader that read our last message and then closed
	 * (destroy) has completed it, whatever it does afterwards.
	 */
	tx = shm_reap_rndv(sep);
	if (!ohc_list_empty(&sep->sends) || !ohc_list_empty(&sep->rndv)) {
		if (OHC_UNLIKELY(ohc_shm_ring_cons_err(sep->tx))) {
			ohc_status_t why = peer_stop_reason(sep);

			if (!sep->dead_logged)
				OHC_ERROR(OHC_SS_SHM,
					  "rank %u: shm peer rank %u stopped "
					  "receiving (%s)",
					  sep->super.iface->rank,
					  sep->super.peer, ohc_status_str(why));
			sep->dead_logged = 1;
			sep->err = why;
			fail_list(&sep->sends, why);
			fail_list(&sep->rndv, why);
			fail_list(&sep->recvs, why);
			return 1;
		}
		tx += shm_push(sep);
	}
	if (!ohc_list_empty(&sep->recvs) || sep->discard)
		rx = shm_pull(sep);
	/* Data for the consumer, or space/acks for the producer. */
	if (tx || rx)
		ohc_shm_bell_ring(sep->peer_bell);
	return tx + rx;
}

/*
 * Implicit zero copy: a large message out of a shared aclrtMalloc buffer
 * (runtime/rt_memory.c) goes as a ZC record naming that buffer's memfd,
 * as if it were exported: the reader maps it once (cached by id) and
 * copies straight out of it. Only to another process that can take our
 * fds (it announced CMA); a thread rank of ours reads us directly anyway.
 */
static void tx_implicit_zc(struct ohc_shm_ep *sep, struct ohc_req *req)
{
	struct ohc_shm_iface *sif = shm_iface(sep->super.iface);
	struct ohc_rt_mem_info info;

	if (req->smem || req->len < sif->zc_min || sep->pid == sif->pid ||
	    !ohc_shm_ring_cma_ok(sep->tx) ||
	    ohc_rt_mem_info(req->sbuf, req->len, &info) != 0)
		return;
	req->smem_buf = (struct ohc_mem_desc){
		.id = OHC_SHM_ZC_IMPLICIT | info.id,
		.fd = info.fd,
		.fd_off = info.offset,
		.fd_size = info.size,
	};
	req->smem = &req->smem_buf;
}

static ohc_status_t shm_ep_send(struct ohc_ep *ep, struct ohc_req *req)
{
	struct ohc_shm_ep *sep = shm_ep(ep);
	ohc_status_t status = shm_post_check(sep);

	if (status < 0)
		return status;
	tx_implicit_zc(sep, req);
	req->done = 0;
	ohc_list_add_tail(&sep->sends, &req->link);
	shm_ep_progress(sep);
	return OHC_OK;
}

static ohc_status_t shm_ep_recv(struct ohc_ep *ep, struct ohc_req *req)
{
	struct ohc_shm_ep *sep = shm_ep(ep);
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
	struct ohc_shm_iface *sif = shm_iface(iface);
	struct ohc_list *pos;
	unsigned n = 0;

	ohc_list_for_each(pos, &sif->eps) n +=
		shm_ep_progress(ohc_container_of(pos, struct ohc_shm_ep, link));
	return n;
}

/* Would progress on this ep do anything now? (the re-check before sleep) */
static int shm_ep_ready(struct ohc_shm_ep *sep)
{
	uint64_t payload;

	if (!sep->connected || sep->err)
		return 0;
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
	if (!ohc_list_empty(&sep->sends) &&
	    tx_plan(sep, ohc_list_first(&sep->sends, struct ohc_req, link),
		    &payload) != PLAN_WAIT)
		return 1;
	return 0;
}

static ohc_status_t shm_iface_wait(struct ohc_iface *iface, int timeout_ms)
{
	struct ohc_shm_iface *sif = shm_iface(iface);
	struct ohc_shm_bell *bell = &sif->hdr->bell;
	struct timespec ts, *tsp = NULL;
	struct ohc_list *pos;
	uint32_t seq;
	int ready = 0;

	seq = atomic_load_explicit(&bell->seq, memory_order_acquire);
	atomic_store_explicit(&bell->sleeping, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
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
	if (!ready && timeout_ms != 0) {
		if (timeout_ms > 0) {
			ts.tv_sec = timeout_ms / 1000;
			ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
			tsp = &ts;
		}
		/* EAGAIN (rung meanwhile), EINTR, ETIMEDOUT: all fine. */
		futex(&bell->seq, FUTEX_WAIT, seq, tsp);
	}
	atomic_store_explicit(&bell->sleeping, 0, memory_order_relaxed);
	return OHC_OK;
}

static void shm_iface_wake(struct ohc_iface *iface)
{
	struct ohc_shm_iface *sif = shm_iface(iface);

	atomic_store_explicit(&sif->wake_pending, 1, memory_order_release);
	ohc_shm_bell_ring(&sif->hdr->bell);
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
	struct ohc_shm_iface *sif = shm_iface(iface);
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
			ohc_shm_bell_ring(sep->peer_bell);
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
	why = peer_stop_reason(sep);
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
	struct ohc_shm_ep *sep = shm_ep(ep);
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
	.caps = OHC_TP_CAP_SAME_HOST | OHC_TP_CAP_WAIT,
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
	.iface_wake = shm_iface_wake,
	.ep_check = shm_ep_check,
	.ep_cancel = shm_ep_cancel,
	.iface_abort = shm_iface_abort,
	.ep_mem_map = ohc_shm_ep_mem_map,
	.ep_mem_unmap = ohc_shm_ep_mem_unmap,
};
