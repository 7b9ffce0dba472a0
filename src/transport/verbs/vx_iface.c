/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's ops: iface lifetime, connection setup over TCP,
 * the slot-ring data path and error handling. See verbs.h for the
 * protocol.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "transport/verbs/verbs.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"
#include "util/time.h"

#define VX_BLOB_MAGIC 0x4f484356u /* "OHCV" */
#define VX_CONN_MAGIC 0x4f484343u /* "OHCC" */
#define VX_VERSION 4u
#define VX_MAX_INLINE 256u
#define VX_POLL_BATCH 32
#define VX_DRAIN_MS 2000 /* ep_fini waits this long for sends to land */

/* wr_id packing: vx_proto.h */
#define WR_SEND OHC_VX_WR_SEND
#define WR_RECV OHC_VX_WR_RECV
#define WR_RDV OHC_VX_WR_RDV
#define WR_PULL OHC_VX_WR_PULL
#define VX_PULL_FLAG (1ull << 62) /* a header's rdv: a pulled fragment */

/* What each side of a pair sends the other once at connect time. */
struct vx_conn {
	uint32_t magic, version;
	uint64_t session;
	uint32_t from, to;
	uint32_t nqps, slots, slot_bytes, mtu;
	uint32_t psn, rkey;
	uint64_t ring;
	uint8_t gid[16];
	uint32_t qpn[OHC_VX_MAX_QPS];
};

/* The header at the start of every slot. */
struct vx_hdr {
	struct ohc_sig sig;
	uint64_t msg_len;
	uint64_t off; /* of this fragment in the message */
	uint32_t frag_len;
	uint32_t freed; /* sender's count of slots it freed (mod 2^32) */
	uint64_t rdv;	/* 0, or 1 << 63 | number: a rendezvous's message */
};

_Static_assert(sizeof(struct vx_hdr) == OHC_VX_HDR, "header is 64 bytes");

static struct ohc_verbs_iface *vx_iface(struct ohc_iface *iface)
{
	return ohc_derived_of(iface, struct ohc_verbs_iface);
}

static struct ohc_verbs_ep *vx_ep(struct ohc_ep *ep)
{
	return ohc_derived_of(ep, struct ohc_verbs_ep);
}

/* The iface's lock: every op of the table, the service thread. */
#define VX_LOCK(iface) pthread_mutex_lock(&vx_iface(iface)->lock)
#define VX_UNLOCK(iface) pthread_mutex_unlock(&vx_iface(iface)->lock)

/* ---- failing an endpoint ------------------------------------------- */

static void fail_queue(struct ohc_list *q, ohc_status_t status)
{
	while (!ohc_list_empty(q)) {
		struct ohc_req *req =
			ohc_container_of(q->next, struct ohc_req, link);

		ohc_list_del(&req->link);
		ohc_req_complete(req, status);
	}
}

/* ---- gathering sends (struct vx_gx) --------------------------------- */

static struct vx_gx *gx_rec(struct ohc_verbs_ep *e, uint64_t n)
{
	return &e->gx[n % e->gx_n];
}

/*
 * Does this fragment of req, the head of sendq, take its payload straight
 * from the send buffer? The first fragment large enough decides for the
 * whole request: its buffer is registered (or found registered: cached,
 * or exported memory's mem_reg registration) and record gx_tail set
 * aside, else (no registration cache and ordinary memory, no record
 * free, registration failed) the request copies through the staging
 * slots.
 */
static int gx_take(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		   struct ohc_req *req, size_t frag)
{
	int zc;

	/* without a registration cache every message would register and
	 * deregister its buffer: dearer than the copy on real NICs */
	if (!vi->gx_bytes || frag < vi->gx_bytes ||
	    (!vi->mrc.max_idle && !req->smem))
		return 0;
	if (e->gx_req == req)
		return e->gx_mr != NULL;
	e->gx_req = req;
	e->gx_mr = NULL;
	if (e->gx_tail - e->gx_head >= e->gx_n)
		return 0;
	e->gx_mr = ohc_vx_mr_get(vi, req->sbuf, req->len, 0, &zc);
	if (!e->gx_mr) {
		OHC_DEBUG(OHC_SS_VERBS,
			  "rank %u: cannot register the send buffer %p (%zu "
			  "bytes) for rank %u: %s; copying it",
			  vi->super.rank, req->sbuf, req->len, e->super.peer,
			  strerror(errno));
		return 0;
	}
	memset(gx_rec(e, e->gx_tail)->mark, 0, e->nqps * sizeof(*e->gx_marks));
	return 1;
}

/* req, the head of sendq, is posted whole: 1 if it gathered and now waits
 * in a record for its WRs; 0: complete it (its payload was copied). */
static int gx_posted(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		     struct ohc_req *req)
{
	int gathered = e->gx_req == req && e->gx_mr;

	if (gathered) {
		struct vx_gx *g = gx_rec(e, e->gx_tail++);

		g->req = req;
		g->mr = e->gx_mr;
		g->frag_end = e->tx_slots;
		vi->gx_sends++;
	}
	e->gx_req = NULL;
	e->gx_mr = NULL;
	return gathered;
}

/* Complete the gathering sends whose WRs all completed, in order: after
 * each send completion and each push (a record may be made whole by a
 * push whose WRs carry none of its payload). */
static void gx_reap(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	while (e->gx_head != e->gx_tail) {
		struct vx_gx *g = gx_rec(e, e->gx_head);
		struct ohc_req *req = g->req;

		for (uint32_t i = 0; i < e->nqps; i++)
			if (g->mark[i] > e->qps[i].sq_done)
				return;
		ohc_vx_mr_put(vi, g->mr);
		g->req = NULL;
		g->mr = NULL;
		e->gx_head++;
		ohc_req_complete(req, OHC_OK);
	}
}

/*
 * Fail every gathering send waiting for its WRs and release the
 * registrations, the head's too (its request is failed with sendq). The
 * QPs are stopped or gone: nothing reads the buffers any more.
 */
static void gx_fail(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		    ohc_status_t status)
{
	ohc_vx_mr_put(vi, e->gx_mr);
	e->gx_mr = NULL;
	e->gx_req = NULL;
	while (e->gx_head != e->gx_tail) {
		struct vx_gx *g = gx_rec(e, e->gx_head++);
		struct ohc_req *req = g->req;

		ohc_vx_mr_put(vi, g->mr);
		g->req = NULL;
		g->mr = NULL;
		ohc_req_complete(req, status);
	}
}

/* Forget the pulled fragment's read (the QPs are stopped or gone). */
static void rd_release(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	ohc_vx_mr_put(vi, e->rd_mr);
	e->rd_mr = NULL;
	e->rd = e->rd_done = 0;
}

static void ep_stop(struct ohc_verbs_ep *e)
{
	for (uint32_t i = 0; i < e->nqps; i++)
		if (e->qps[i].qp)
			ohc_vx_fault_qp_error(e->qps[i].qp);
	/* tell the peer at once rather than after its retries run out */
	if (e->sock >= 0)
		shutdown(e->sock, SHUT_RDWR);
}

/*
 * The connection to the peer is broken: log once (naming the peer, the QP
 * and why), fail every posted request, stop the QPs.
 */
static void ep_fail(struct ohc_verbs_ep *e, uint32_t qpn, const char *why)
{
	struct ohc_iface *iface = e->super.iface;
	ohc_status_t status = e->peer_abort ? e->peer_abort : OHC_ERR_REMOTE;

	if (e->broken)
		return;
	e->broken = status;
	e->rp.state = VX_RP_NONE;
	if (!ohc_list_empty(&e->sendq) || !ohc_list_empty(&e->recvq) ||
	    !ohc_list_empty(&e->rdv.txq) || !ohc_list_empty(&e->rdv.rxq))
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: RDMA connection to rank %u failed: QP %u: "
			  "%s",
			  iface->rank, e->super.peer, qpn, why);
	else
		OHC_WARN(OHC_SS_VERBS,
			 "rank %u: RDMA connection to rank %u lost while "
			 "idle: QP %u: %s",
			 iface->rank, e->super.peer, qpn, why);
	fail_queue(&e->sendq, status);
	fail_queue(&e->recvq, status);
	ep_stop(e);
	gx_fail(vx_iface(iface), e, status);
	rd_release(vx_iface(iface), e);
	ohc_vx_rdv_fail(vx_iface(iface), e, status);
}

static uint32_t ep_qpn(const struct ohc_verbs_ep *e, uint32_t qpi)
{
	return qpi < e->nqps && e->qps[qpi].qp ? e->qps[qpi].qp->qp_num : 0;
}

void ohc_vx_ep_fail(struct ohc_verbs_ep *e, uint32_t qpi, const char *why)
{
	ep_fail(e, ep_qpn(e, qpi), why);
}

/* ---- async events -------------------------------------------------- */

static void iface_async(struct ohc_verbs_iface *vi)
{
	struct ibv_async_event ev;

	while (ohc_vx_get_async_event(vi->ctx, &ev) == 1) {
		enum ibv_event_type t = ev.event_type;
		char why[128];

		snprintf(why, sizeof(why), "async event %s on %s",
			 ohc_vx_event_str(t), vi->dev_name);
		switch (t) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
			for (uint32_t r = 0; r < vi->super.nranks; r++) {
				struct ohc_verbs_ep *e = vi->by_peer[r];

				/* a replay moved its QPs to ERR itself */
				for (uint32_t q = 0;
				     e && !e->rp.state && q < e->nqps; q++)
					if (e->qps[q].qp == ev.element.qp)
						ep_fail(e, ep_qpn(e, q), why);
			}
			break;
		case IBV_EVENT_PORT_ACTIVE:
			vi->port_down = 0;
			OHC_DEBUG(OHC_SS_VERBS, "rank %u: %s", vi->super.rank,
				  why);
			break;
		case IBV_EVENT_PORT_ERR:
			vi->port_down = 1;
			/* the link may come back: replay, where it can */
			for (uint32_t r = 0; r < vi->super.nranks; r++) {
				struct ohc_verbs_ep *e = vi->by_peer[r];

				if (e && e->connected && !e->broken &&
				    !ohc_vx_replay_start(vi, e, why))
					ep_fail(e, ep_qpn(e, 0), why);
			}
			break;
		case IBV_EVENT_DEVICE_FATAL:
			for (uint32_t r = 0; r < vi->super.nranks; r++)
				if (vi->by_peer[r] && vi->by_peer[r]->connected)
					ep_fail(vi->by_peer[r],
						ep_qpn(vi->by_peer[r], 0), why);
			break;
		default:
			OHC_DEBUG(OHC_SS_VERBS, "rank %u: %s", vi->super.rank,
				  why);
			break;
		}
		ohc_vx_ack_async_event(&ev);
	}
}

/* ---- posting ------------------------------------------------------- */

static void chain_add(struct ohc_vx_qp *q, struct ibv_send_wr *wr)
{
	wr->next = NULL;
	if (q->tail)
		q->tail->next = wr;
	else
		q->head = wr;
	q->tail = wr;
	q->nchain++;
}

/* Post the chain built on q with one call; the last WR is signaled when
 * asked or when too many went unsignaled. */
static int chain_post(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      uint32_t qpi, int signal)
{
	struct ohc_vx_qp *q = &e->qps[qpi];
	int rc;

	if (!q->head)
		return 0;
	/* unsignaled WRs complete too when flushed by an error: name them */
	for (struct ibv_send_wr *w = q->head; w; w = w->next)
		w->wr_id = ohc_vx_wr_id(e->super.peer, qpi, WR_SEND, 0);
	if (signal || q->chain_gx || q->unsig + q->nchain >= vi->sq_depth / 4) {
		q->tail->send_flags |= IBV_SEND_SIGNALED;
		q->tail->wr_id = ohc_vx_wr_id(e->super.peer, qpi, WR_SEND,
					      q->unsig + q->nchain);
		q->unsig = 0;
	} else {
		q->unsig += q->nchain;
	}
	rc = ohc_vx_post_send(q->qp, q->head);
	if (!rc)
		q->sq_inflight += q->nchain;
	q->head = q->tail = NULL;
	q->nchain = 0;
	q->chain_gx = 0;
	return rc;
}

static int post_recvs(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      uint32_t qpi)
{
	struct ohc_vx_qp *q = &e->qps[qpi];
	uint32_t n = vi->rq_depth - q->rq_posted;
	int rc;

	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		struct ibv_recv_wr *w = &e->rwrs[i];

		memset(w, 0, sizeof(*w));
		/* tagged with the replay epoch: stale ones are dropped */
		w->wr_id =
			ohc_vx_wr_id(e->super.peer, qpi, WR_RECV, e->rp.epoch);
		w->next = i + 1 < n ? &e->rwrs[i + 1] : NULL;
	}
	rc = ohc_vx_post_recv(q->qp, e->rwrs);
	if (!rc)
		q->rq_posted += n;
	return rc;
}

static uint32_t credits(const struct ohc_verbs_iface *vi,
			const struct ohc_verbs_ep *e)
{
	return vi->slots - (uint32_t)(e->tx_slots - e->tx_freed);
}

/* Our freed count reached the peer: remember it. */
static uint32_t rx_freed32(const struct ohc_verbs_ep *e)
{
	return (uint32_t)e->rx_next;
}

/* The next free WR (and nsge SGEs) of this push, zeroed, one SGE. */
static struct ibv_send_wr *vx_wr(struct ohc_verbs_ep *e, unsigned *nw,
				 struct ibv_sge **sg, unsigned *ns,
				 unsigned nsge, enum ibv_wr_opcode op,
				 uint64_t raddr)
{
	struct ibv_send_wr *wr = &e->wrs[(*nw)++];

	*sg = &e->sges[*ns];
	*ns += nsge;
	memset(wr, 0, sizeof(*wr));
	wr->opcode = op;
	wr->wr.rdma.remote_addr = raddr;
	wr->wr.rdma.rkey = e->rem_rkey;
	wr->sg_list = *sg;
	wr->num_sge = 1;
	return wr;
}

/*
 * Chain the WRs of one fragment on q: the 64-byte header at hdr (staging
 * slot) and frag payload bytes at pay (lkey plkey) go to raddr as one
 * stream, in WRs of at most wr_bytes (OPENHCCL_RDMA_WRITE_KB), plain RDMA
 * WRITEs but the last, the WRITE_WITH_IMM naming the slot (after them on
 * the same QP). A payload copied behind its header is one SGE, a gathered
 * one a second SGE of the WR(s) it falls in.
 */
static void frag_chain(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       struct ohc_vx_qp *q, uint64_t raddr, const char *hdr,
		       const char *pay, uint32_t plkey, size_t frag,
		       uint32_t idx, unsigned *nw, unsigned *ns)
{
	size_t len = OHC_VX_HDR + frag;
	int joined = pay == hdr + OHC_VX_HDR;

	for (size_t off = 0; off < len;) {
		size_t end = OHC_MIN(len, off + vi->wr_bytes);
		size_t from = OHC_MAX(off, (size_t)OHC_VX_HDR);
		unsigned n =
			joined ? 1 : (off < OHC_VX_HDR) + (end > OHC_VX_HDR);
		int last = end == len;
		struct ibv_send_wr *wr;
		struct ibv_sge *sg;

		wr = vx_wr(e, nw, &sg, ns, n,
			   last ? IBV_WR_RDMA_WRITE_WITH_IMM
				: IBV_WR_RDMA_WRITE,
			   raddr + off);
		wr->num_sge = (int)n;
		if (joined || off < OHC_VX_HDR) { /* from the staging slot */
			size_t to = joined ? end : OHC_MIN(end, from);

			sg->addr = (uintptr_t)hdr + off;
			sg->length = (uint32_t)(to - off);
			sg->lkey = e->stage_mr->lkey;
			sg++;
		}
		if (!joined && end > OHC_VX_HDR) {
			sg->addr = (uintptr_t)pay + (from - OHC_VX_HDR);
			sg->length = (uint32_t)(end - from);
			sg->lkey = plkey;
		}
		if (last)
			wr->imm_data = htonl(idx);
		chain_add(q, wr);
		off = end;
	}
}

/* Push queued sends into free slots; returns the fragments posted. */
static unsigned ep_push(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct ohc_list done = OHC_LIST_INIT(done);
	size_t payload = vi->slot_bytes - OHC_VX_HDR;
	unsigned n = 0, nw = 0, ns = 0;
	int rc = 0;
	uint32_t bad_q = 0;

	if (e->rp.state) /* replaying: the sends wait */
		return 0;
	while (!e->broken && !ohc_list_empty(&e->sendq) && credits(vi, e)) {
		struct ohc_req *req =
			ohc_container_of(e->sendq.next, struct ohc_req, link);
		uint32_t idx = (uint32_t)(e->tx_slots % vi->slots);
		uint32_t qpi = (uint32_t)(e->tx_slots % e->nqps);
		struct ohc_vx_qp *q = &e->qps[qpi];
		char *slot = e->stage + (size_t)idx * vi->slot_bytes;
		struct vx_hdr *h = (struct vx_hdr *)slot;
		uint64_t raddr = e->rem_ring + (uint64_t)idx * vi->slot_bytes;
		struct ibv_send_wr *wr;
		struct ibv_sge *sg;
		size_t frag = OHC_MIN(req->len - req->done, payload);
		int pulled = 0;

		if (q->sq_inflight + q->nchain + vi->wr_per_slot + 1 >
		    vi->sq_depth)
			break; /* the send queue drains first */
		e->tx_src[idx].pay = NULL; /* in the staging slot */
		if (vi->pull_bytes && req->len >= vi->pull_bytes &&
		    !req->tp_priv) {
			/* halves (at most a slot); every second is pulled */
			size_t fs =
				OHC_MIN(((req->len + 1) / 2 + 63) & ~(size_t)63,
					payload - OHC_VX_PULL_PAD);

			frag = OHC_MIN(frag, fs);
			pulled = (int)((req->done / fs) & 1);
		}
		h->sig = req->sig;
		h->msg_len = req->len;
		h->off = req->done;
		h->frag_len = (uint32_t)frag;
		h->freed = rx_freed32(e);
		h->rdv = (uint64_t)(uintptr_t)req->tp_priv;
		if (pulled) { /* staged behind a descriptor, only it goes */
			struct vx_pull_desc *d =
				(struct vx_pull_desc *)(slot + OHC_VX_HDR);
			char *data = slot + OHC_VX_HDR + OHC_VX_PULL_PAD;

			memcpy(data, (const char *)req->sbuf + req->done, frag);
			d->addr = (uintptr_t)data;
			d->rkey = e->stage_mr->rkey;
			d->pad = 0;
			h->rdv = VX_PULL_FLAG;
			wr = vx_wr(e, &nw, &sg, &ns, 1,
				   IBV_WR_RDMA_WRITE_WITH_IMM, raddr);
			wr->imm_data = htonl(idx);
			sg->addr = (uintptr_t)h;
			sg->length = OHC_VX_HDR + sizeof(*d);
			sg->lkey = e->stage_mr->lkey;
			if (sg->length <= vi->max_inline)
				wr->send_flags = IBV_SEND_INLINE;
			chain_add(q, wr);
			vi->pull_tx++;
			e->pull_end = e->tx_slots + 1;
		} else if (OHC_VX_HDR + frag <= vi->max_inline) {
			/* staged behind its header too: the send completes
			 * now, and a replay may need the bytes again */
			memcpy(slot + OHC_VX_HDR,
			       (const char *)req->sbuf + req->done, frag);
			wr = vx_wr(e, &nw, &sg, &ns, 1,
				   IBV_WR_RDMA_WRITE_WITH_IMM, raddr);
			wr->imm_data = htonl(idx);
			sg->addr = (uintptr_t)h;
			sg->length = (uint32_t)(OHC_VX_HDR + frag);
			sg->lkey = e->stage_mr->lkey;
			wr->send_flags = IBV_SEND_INLINE;
			chain_add(q, wr);
		} else if (gx_take(vi, e, req, frag)) {
			e->tx_src[idx].pay =
				(const char *)req->sbuf + req->done;
			e->tx_src[idx].lkey = ohc_vx_mr_lkey(e->gx_mr);
			e->tx_src[idx].rec = e->gx_tail;
			frag_chain(vi, e, q, raddr, slot,
				   (const char *)req->sbuf + req->done,
				   ohc_vx_mr_lkey(e->gx_mr), frag, idx, &nw,
				   &ns);
			/* complete once this WR did: signaled, marked */
			q->chain_gx = 1;
			gx_rec(e, e->gx_tail)->mark[qpi] =
				q->sq_done + q->sq_inflight + q->nchain;
		} else {
			memcpy(slot + OHC_VX_HDR,
			       (const char *)req->sbuf + req->done, frag);
			frag_chain(vi, e, q, raddr, slot, slot + OHC_VX_HDR,
				   e->stage_mr->lkey, frag, idx, &nw, &ns);
		}
		req->done += frag;
		e->tx_slots++;
		e->rx_reported = e->rx_next;
		n++;
		if (req->done == req->len) {
			ohc_list_del(&req->link);
			if (!gx_posted(vi, e, req))
				ohc_list_add_tail(&done, &req->link);
		}
	}
	for (uint32_t i = 0; i < e->nqps; i++) {
		int r = chain_post(vi, e, i, 0);

		if (r && !rc) {
			rc = r;
			bad_q = i;
		}
	}
	if (rc) {
		char why[160];

		snprintf(why, sizeof(why), "ibv_post_send: %s", strerror(rc));
		fail_queue(&done, OHC_ERR_REMOTE);
		ep_fail(e, ep_qpn(e, bad_q), why);
		return n;
	}
	fail_queue(&done, OHC_OK);
	/*
	 * A gathering send whose last fragments were copied (below the
	 * threshold) and went out in a later push than its gathered ones
	 * (the credits ran out between them) may find every marked WR
	 * completed already: no completion is coming to reap it.
	 */
	if (!e->broken)
		gx_reap(vi, e);
	return n;
}

/*
 * Replay: write fragment f (numbered as tx_slots counts) again, on the QP
 * it first went on, from where its bytes are: its staging slot (copied,
 * inline and pulled fragments) or the send buffer of a gathering send
 * still waiting for its WRs (whose marks then name these WRs).
 */
int ohc_vx_frag_resend(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       uint64_t f)
{
	uint32_t idx = (uint32_t)(f % vi->slots);
	uint32_t qpi = (uint32_t)(f % e->nqps);
	struct ohc_vx_qp *q = &e->qps[qpi];
	char *slot = e->stage + (size_t)idx * vi->slot_bytes;
	struct vx_hdr *h = (struct vx_hdr *)slot;
	const struct vx_tx_src *src = &e->tx_src[idx];
	uint64_t raddr = e->rem_ring + (uint64_t)idx * vi->slot_bytes;
	unsigned nw = 0, ns = 0;
	int rc;

	if (q->sq_inflight + q->nchain + vi->wr_per_slot + 1 > vi->sq_depth)
		return 1;
	h->freed = rx_freed32(e);
	if (h->rdv == VX_PULL_FLAG) { /* header and descriptor only */
		struct ibv_send_wr *wr;
		struct ibv_sge *sg;

		wr = vx_wr(e, &nw, &sg, &ns, 1, IBV_WR_RDMA_WRITE_WITH_IMM,
			   raddr);
		wr->imm_data = htonl(idx);
		sg->addr = (uintptr_t)h;
		sg->length = OHC_VX_HDR + sizeof(struct vx_pull_desc);
		sg->lkey = e->stage_mr->lkey;
		if (sg->length <= vi->max_inline)
			wr->send_flags = IBV_SEND_INLINE;
		chain_add(q, wr);
	} else if (src->pay) {
		frag_chain(vi, e, q, raddr, slot, src->pay, src->lkey,
			   h->frag_len, idx, &nw, &ns);
		q->chain_gx = 1;
		gx_rec(e, src->rec)->mark[qpi] =
			q->sq_done + q->sq_inflight + q->nchain;
	} else {
		frag_chain(vi, e, q, raddr, slot, slot + OHC_VX_HDR,
			   e->stage_mr->lkey, h->frag_len, idx, &nw, &ns);
	}
	rc = chain_post(vi, e, qpi, 0);
	if (rc) {
		char why[160];

		snprintf(why, sizeof(why), "ibv_post_send (replay): %s",
			 strerror(rc));
		ep_fail(e, ep_qpn(e, qpi), why);
		return -1;
	}
	return 0;
}

/* Tell the peer how many slots we freed, if it may be waiting for them. */
static void ep_credit(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      int force)
{
	struct ohc_vx_qp *q = &e->qps[0];
	struct ibv_send_wr *wr = &e->wrs[vi->slots * vi->wr_per_slot];
	uint64_t owed = e->rx_next - e->rx_reported;
	int rc;

	if (e->broken || e->rp.state || !owed ||
	    (!force && owed < vi->slots / 4))
		return;
	if (q->sq_inflight + 2 > vi->sq_depth)
		return; /* retried by the next progress */
	memset(wr, 0, sizeof(*wr));
	wr->opcode = IBV_WR_SEND_WITH_IMM;
	wr->imm_data = htonl(rx_freed32(e));
	chain_add(q, wr);
	rc = chain_post(vi, e, 0, 0);
	if (rc) {
		char why[160];

		snprintf(why, sizeof(why), "ibv_post_send: %s", strerror(rc));
		ep_fail(e, ep_qpn(e, 0), why);
		return;
	}
	e->rx_reported = e->rx_next;
}

/* ---- receiving ----------------------------------------------------- */

/*
 * The peer's count of slots it freed (32 bits of it): newer counts move
 * tx_freed forward, but never past what we wrote. A count beyond that is
 * a protocol error: credits for slots never sent would let ep_push post
 * more fragments than the ring (and the WR and SGE arrays) hold.
 * 0: fine; -1: the ep failed.
 */
static int tx_freed_update(struct ohc_verbs_ep *e, uint32_t freed, uint32_t qpn)
{
	uint32_t delta = freed - (uint32_t)e->tx_freed;

	if (delta >= 0x80000000u) /* older than what we knew */
		return 0;
	if (e->tx_freed + delta > e->tx_slots) {
		ep_fail(e, qpn,
			"protocol error: the peer freed slots never sent");
		return -1;
	}
	e->tx_freed += delta;
	return 0;
}

/*
 * The pulled fragment next in order (header h in slot, for req): post
 * its read, straight into the destination when req is a COPY whose
 * buffer registers through the cache, else into the slot; once it
 * completed, deliver it. 1: delivered; 0: not yet; -1: the ep failed.
 */
static int pull_frag(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		     struct ohc_req *req, const struct vx_hdr *h,
		     const char *slot)
{
	char *land = (char *)slot + OHC_VX_HDR + OHC_VX_PULL_PAD;
	struct ohc_vx_qp *q = &e->qps[0];
	struct vx_pull_desc d;
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	int zc, rc;

	if (e->rd) {
		if (!e->rd_done)
			return 0;
		if (e->rd_mr) {
			req->done += h->frag_len;
			ohc_vx_mr_put(vi, e->rd_mr);
			e->rd_mr = NULL;
		} else {
			ohc_req_deliver(req, h->off, land, h->frag_len);
		}
		e->rd = e->rd_done = 0;
		vi->pull_rx++;
		return 1;
	}
	if (q->sq_inflight + q->nchain + 2 > vi->sq_depth)
		return 0; /* the next progress tries again */
	memcpy(&d, slot + OHC_VX_HDR, sizeof(d));
	if (req->kind == OHC_RECV_COPY && vi->mrc.max_idle)
		e->rd_mr = ohc_vx_mr_get(vi, (char *)req->dst + h->off,
					 h->frag_len, 1, &zc);
	memset(&wr, 0, sizeof(wr));
	sg.addr = e->rd_mr ? (uintptr_t)req->dst + h->off : (uintptr_t)land;
	sg.length = h->frag_len;
	sg.lkey = e->rd_mr ? ohc_vx_mr_lkey(e->rd_mr) : e->ring_mr->lkey;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = d.addr;
	wr.wr.rdma.rkey = d.rkey;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr_id = ohc_vx_wr_id(e->super.peer, 0, WR_PULL, q->unsig + 1);
	rc = ohc_vx_post_send(q->qp, &wr);
	if (rc) {
		char why[160];

		snprintf(why, sizeof(why), "ibv_post_send (read): %s",
			 strerror(rc));
		ep_fail(e, ep_qpn(e, 0), why);
		return -1;
	}
	q->sq_inflight++;
	q->unsig = 0;
	e->rd = 1;
	return 0;
}

/* Hand landed fragments to posted receives, in order. */
static unsigned ep_deliver(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct vx_hdr hdr;
	unsigned n = 0;
	int force = 0;

	while (!e->broken && !e->rp.state) {
		uint32_t idx = (uint32_t)(e->rx_next % vi->slots);
		const char *slot = e->ring + (size_t)idx * vi->slot_bytes;
		const struct vx_hdr *h = &hdr;
		struct ohc_req *req;
		int pulled, routed;

		if (!e->arrived[idx])
			break;
		/* The peer may write the ring at any time: check and use one
		 * copy of the header. */
		memcpy(&hdr, slot, sizeof(hdr));
		pulled = h->rdv == VX_PULL_FLAG;
		routed = h->rdv && !pulled;
		if (routed) { /* a rendezvous's message: its own receive */
			req = ohc_vx_rdv_route(e, h->rdv);
			if (!req) {
				ep_fail(e, ep_qpn(e, 0),
					"protocol error: unknown rendezvous");
				break;
			}
		} else if (!ohc_list_empty(&e->recvq)) {
			req = ohc_container_of(e->recvq.next, struct ohc_req,
					       link);
		} else {
			break;
		}
		/* in order, within the receive and the slot, and whole
		 * 64-byte lines but for the last (req.h) */
		if (h->off != req->done || h->frag_len > req->len - req->done ||
		    h->frag_len > vi->slot_bytes - OHC_VX_HDR -
					  (pulled ? OHC_VX_PULL_PAD : 0) ||
		    (h->frag_len % 64 && h->frag_len != req->len - req->done) ||
		    (req->done == 0 &&
		     (h->msg_len != req->len ||
		      memcmp(&h->sig, &req->sig, sizeof(req->sig))))) {
			req->got_sig = h->sig;
			ohc_list_del(&req->link);
			if (routed) { /* a desync probe: header only */
				ohc_vx_rdv_rx_done(vi, e, req);
				e->arrived[idx] = 0;
				e->rx_next++;
			}
			ohc_req_complete(req, OHC_ERR_DESYNC);
			e->rx_pulled = 0;
			n++;
			break;
		}
		if (pulled) {
			if (pull_frag(vi, e, req, h, slot) <= 0)
				break; /* read posted or running, or failed */
			e->rx_pulled = 1;
		} else if (h->frag_len) { /* 0 bytes: maybe no buffer */
			ohc_req_deliver(req, h->off, slot + OHC_VX_HDR,
					h->frag_len);
		}
		e->arrived[idx] = 0;
		e->rx_next++;
		n++;
		if (req->done == req->len) {
			ohc_list_del(&req->link);
			if (routed)
				ohc_vx_rdv_rx_done(vi, e, req);
			ohc_req_complete(req, OHC_OK);
			force |= e->rx_pulled;
			e->rx_pulled = 0;
		}
	}
	/* a sender whose message we read from its staging may be about to
	 * close (its send completed long ago): it waits for these credits */
	ep_credit(vi, e, force);
	return n;
}

/* ---- completions --------------------------------------------------- */

static void handle_wc(struct ohc_verbs_iface *vi, const struct ibv_wc *wc)
{
	uint32_t peer = ohc_vx_wr_peer(wc->wr_id);
	uint32_t qpi = ohc_vx_wr_qpi(wc->wr_id);
	unsigned kind = ohc_vx_wr_kind(wc->wr_id);
	uint32_t covered = ohc_vx_wr_low(wc->wr_id);
	struct ohc_verbs_ep *e =
		peer < vi->super.nranks ? vi->by_peer[peer] : NULL;
	struct ohc_vx_qp *q;

	if (!e || qpi >= e->nqps || kind < WR_SEND || kind >= OHC_VX_WR_KINDS)
		return; /* a finalized ep's leftovers */
	q = &e->qps[qpi];
	if (kind == OHC_VX_WR_MARK_SQ) {
		if (e->rp.state == VX_RP_DRAIN && e->rp.marks)
			e->rp.marks--; /* this queue flushed to its marker */
		return;
	}
	if (kind == WR_RECV && covered != (e->rp.epoch & 0xfffff))
		return; /* a receive WR of before a replay */
	if (kind == WR_RDV)
		covered &= 0xfff;
	if (wc->status != IBV_WC_SUCCESS && e->rp.state) {
		/* flushed by the replay's drain: the drain accounts for the
		 * queues; it is neither done nor a new failure */
		return;
	}
	if (kind != WR_RECV) {
		covered = OHC_MIN(covered, q->sq_inflight);
		q->sq_inflight -= covered;
		q->sq_done += covered;
	} else if (q->rq_posted) {
		q->rq_posted--;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		char why[160];

		snprintf(why, sizeof(why),
			 "%s (%s completion, vendor error "
			 "0x%x)",
			 ohc_vx_wc_status_str(wc->status),
			 kind != WR_RECV ? "send" : "receive", wc->vendor_err);
		/* retries ran out, or rxe failed a post on a link that is
		 * down: the link may come back */
		if ((wc->status == IBV_WC_RETRY_EXC_ERR ||
		     wc->status == IBV_WC_RNR_RETRY_EXC_ERR ||
		     (wc->status == IBV_WC_LOC_QP_OP_ERR &&
		      !ohc_vx_port_active(vi))) &&
		    ohc_vx_replay_start(vi, e, why))
			return;
		ep_fail(e, wc->qp_num, why);
		return;
	}
	if (kind == WR_RDV && !e->broken)
		ohc_vx_rdv_acked(e, ((uint32_t)wc->wr_id >> 12) & 0xff);
	if (kind == WR_PULL && e->rd)
		e->rd_done = 1; /* ep_deliver takes it */
	if (kind != WR_RECV) {
		if (!e->broken && !e->rp.state)
			gx_reap(vi, e);
		return;
	}
	if (e->broken)
		return;
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		uint32_t idx = ntohl(wc->imm_data);
		const struct vx_hdr *h;

		if (idx & OHC_VX_IMM_RDV) {
			ohc_vx_rdv_imm(vi, e, idx);
			return;
		}
		if (idx >= vi->slots) {
			ep_fail(e, wc->qp_num, "protocol error: bad slot");
			return;
		}
		h = (const struct vx_hdr *)(e->ring +
					    (size_t)idx * vi->slot_bytes);
		e->arrived[idx] = 1;
		(void)tx_freed_update(e, h->freed, wc->qp_num);
	} else if (wc->opcode == IBV_WC_RECV) {
		(void)tx_freed_update(e, ntohl(wc->imm_data), wc->qp_num);
	}
}

/* Drain the CQ; returns completions seen. */
static unsigned iface_poll(struct ohc_verbs_iface *vi)
{
	struct ibv_wc wc[VX_POLL_BATCH];
	unsigned total = 0;
	int n;

	if (!vi->cq)
		return 0;
	do {
		n = ohc_vx_poll_cq(vi->cq, VX_POLL_BATCH, wc);
		for (int i = 0; i < n; i++)
			handle_wc(vi, &wc[i]);
		total += n > 0 ? (unsigned)n : 0;
	} while (n == VX_POLL_BATCH);
	return total;
}

static void ep_refill(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	for (uint32_t i = 0; i < e->nqps && !e->broken; i++) {
		int rc;

		if (e->qps[i].rq_posted + 8 >= vi->rq_depth)
			continue;
		rc = post_recvs(vi, e, i);
		if (rc) {
			char why[160];

			snprintf(why, sizeof(why), "ibv_post_recv: %s",
				 strerror(rc));
			ep_fail(e, ep_qpn(e, i), why);
		}
	}
}

static void ep_sock_check(struct ohc_verbs_ep *e);

static unsigned iface_progress_locked(struct ohc_iface *iface)
{
	struct ohc_verbs_iface *vi = vx_iface(iface);
	unsigned n = iface_poll(vi);

	for (uint32_t r = 0; r < iface->nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];

		if (!e || !e->connected || e->broken)
			continue;
		if (e->rp.state) {
			ep_sock_check(e);
			ohc_vx_replay_progress(vi, e);
			if (e->rp.state)
				continue; /* the data path waits */
		}
		ep_refill(vi, e);
		n += ep_deliver(vi, e);
		n += ohc_vx_rdv_progress(vi, e);
		n += ep_push(vi, e);
	}
	return n;
}

/* ---- posting requests ---------------------------------------------- */

static ohc_status_t ep_send_locked(struct ohc_ep *ep, struct ohc_req *req)
{
	struct ohc_verbs_ep *e = vx_ep(ep);

	if (e->broken)
		return e->broken;
	req->status = OHC_INPROGRESS;
	req->done = 0;
	req->tp_priv = NULL;
	if (ohc_vx_rdv_large(vx_iface(ep->iface), req->len))
		return ohc_vx_rdv_send(vx_iface(ep->iface), e, req);
	ohc_list_add_tail(&e->sendq, &req->link);
	ep_push(vx_iface(ep->iface), e);
	return OHC_OK;
}

static ohc_status_t ep_recv_locked(struct ohc_ep *ep, struct ohc_req *req)
{
	struct ohc_verbs_ep *e = vx_ep(ep);

	if (e->broken)
		return e->broken;
	req->status = OHC_INPROGRESS;
	req->done = 0;
	req->tp_priv = NULL;
	req->path = OHC_PATH_STAGED;
	if (ohc_vx_rdv_large(vx_iface(ep->iface), req->len))
		return ohc_vx_rdv_recv(vx_iface(ep->iface), e, req);
	ohc_list_add_tail(&e->recvq, &req->link);
	ep_deliver(vx_iface(ep->iface), e);
	return OHC_OK;
}

/* ---- waiting ------------------------------------------------------- */

/*
 * Sleep until a completion, a wake, an async event or a setup socket
 * stirs, or timeout_ms. The lock is held to prepare and to look at what
 * woke us, not while asleep.
 */
static ohc_status_t vx_iface_wait(struct ohc_iface *iface, int timeout_ms)
{
	struct ohc_verbs_iface *vi = vx_iface(iface);
	struct pollfd *p = vi->wait_fds, wake;
	nfds_t np = 3;
	uint64_t v;
	int rc, socks = 0;

	if (!vi->cq) { /* not connected yet: only wakes */
		wake.fd = vi->wake_fd;
		wake.events = POLLIN;
		if (poll(&wake, 1, timeout_ms) > 0)
			(void)!read(vi->wake_fd, &v, sizeof(v));
		return OHC_OK;
	}
	VX_LOCK(iface);
	/* about to sleep: hand back every freed slot, so no sender waits on
	 * credits we sit on (the quarter-ring batching is for busy times) */
	for (uint32_t r = 0; r < iface->nranks; r++)
		if (vi->by_peer[r] && vi->by_peer[r]->connected)
			ep_credit(vi, vi->by_peer[r], 1);
	if (!vi->armed) {
		if (ohc_vx_req_notify_cq(vi->cq)) {
			VX_UNLOCK(iface);
			return OHC_OK; /* keep polling */
		}
		vi->armed = 1;
		/* completions that came before the arming give no event */
		if (iface_poll(vi)) {
			VX_UNLOCK(iface);
			return OHC_OK;
		}
	}
	p[0].fd = vi->ch->fd;
	p[0].events = POLLIN;
	p[1].fd = vi->wake_fd;
	p[1].events = POLLIN;
	p[2].fd = vi->ctx->async_fd;
	p[2].events = POLLIN;
	/* and the setup sockets: a peer's abort, its end or a replay
	 * handshake wakes us at once */
	for (uint32_t r = 0; r < iface->nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];

		if (e && e->connected && !e->broken && e->sock >= 0 &&
		    !e->peer_abort) {
			p[np].fd = e->sock;
			p[np].events = POLLIN;
			p[np++].revents = 0;
		}
	}
	VX_UNLOCK(iface);
	rc = poll(p, np, timeout_ms);
	if (rc <= 0)
		return OHC_OK;
	VX_LOCK(iface);
	if (p[0].revents & POLLIN) {
		while (ohc_vx_get_cq_event(vi->ch) == 0)
			vi->unacked++;
		vi->armed = 0;
		if (vi->unacked >= 64) {
			ohc_vx_ack_cq_events(vi->cq, vi->unacked);
			vi->unacked = 0;
		}
	}
	if (p[1].revents & POLLIN)
		(void)!read(vi->wake_fd, &v, sizeof(v));
	if (p[2].revents & POLLIN)
		iface_async(vi);
	for (nfds_t k = 3; k < np; k++)
		socks |= p[k].revents != 0;
	/* the eps may have changed while we slept: look at all of them */
	for (uint32_t r = 0; socks && r < iface->nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];

		if (e && e->connected && !e->broken)
			ep_sock_check(e);
	}
	VX_UNLOCK(iface);
	return OHC_OK;
}

static void vx_iface_wake(struct ohc_iface *iface)
{
	struct ohc_verbs_iface *vi = vx_iface(iface);
	uint64_t one = 1;

	if (vi->wake_fd >= 0)
		(void)!write(vi->wake_fd, &one, sizeof(one));
}

/* ---- liveness and cancel ------------------------------------------- */

/* The one byte iface_abort sends on the setup socket. */
#define VX_ABORT_DESYNC 'D'
#define VX_ABORT_OTHER 'X'

/*
 * The setup socket: a reason byte (the peer's communicator failed, see
 * iface_abort) or EOF (its process is gone or its side stopped). Read even
 * when the ep is already broken: the peer's abort may have broken our QPs
 * before we saw its reason.
 */
static void ep_sock_check(struct ohc_verbs_ep *e)
{
	struct ohc_verbs_iface *vi = vx_iface(e->super.iface);
	struct pollfd p = {.fd = e->sock, .events = POLLIN};
	uint8_t m[1 + OHC_VX_RP_BODY];
	ssize_t n;

	while (e->sock >= 0 && !e->peer_abort && poll(&p, 1, 0) > 0) {
		n = recv(e->sock, m, 1, MSG_DONTWAIT | MSG_PEEK);
		if (n == 1 &&
		    (m[0] == OHC_VX_RP_HELLO || m[0] == OHC_VX_RP_READY)) {
			/* a replay handshake message: take it whole */
			n = recv(e->sock, m, sizeof(m),
				 MSG_DONTWAIT | MSG_PEEK);
			if (n < (ssize_t)sizeof(m))
				return; /* the rest is on its way */
			(void)!recv(e->sock, m, sizeof(m), MSG_DONTWAIT);
			if (!e->broken)
				ohc_vx_replay_msg(vi, e, (char)m[0], m + 1);
			continue;
		}
		n = recv(e->sock, m, 1, MSG_DONTWAIT);
		if (n == 1) {
			e->peer_abort = m[0] == VX_ABORT_DESYNC
						? OHC_ERR_DESYNC
						: OHC_ERR_REMOTE;
			ep_fail(e, ep_qpn(e, 0),
				m[0] == VX_ABORT_DESYNC
					? "the peer failed on a mismatched "
					  "operation"
					: "the peer's communicator failed");
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			ep_fail(e, ep_qpn(e, 0),
				"the peer closed its connection (process gone "
				"or its side failed)");
		}
		return;
	}
}

/* The peer closed the setup socket (quietly: it may be ending too). */
static int sock_closed(const struct ohc_verbs_ep *e)
{
	struct pollfd p = {.fd = e->sock, .events = POLLIN};
	char c;

	return e->sock >= 0 && poll(&p, 1, 0) > 0 &&
	       recv(e->sock, &c, 1, MSG_DONTWAIT | MSG_PEEK) == 0;
}

static ohc_status_t ep_check_locked(struct ohc_ep *ep)
{
	struct ohc_verbs_ep *e = vx_ep(ep);

	iface_async(vx_iface(ep->iface));
	ep_sock_check(e);
	if (e->peer_abort)
		return e->peer_abort;
	return e->broken ? OHC_ERR_REMOTE : OHC_OK;
}

/*
 * Our communicator failed: send every connected peer the reason byte (the
 * socket buffer is empty after setup, so it never blocks). The QPs stay as
 * they are; the core cancels what is in flight.
 */
static void iface_abort_locked(struct ohc_iface *iface, ohc_status_t reason)
{
	struct ohc_verbs_iface *vi = vx_iface(iface);
	char c = reason == OHC_ERR_DESYNC ? VX_ABORT_DESYNC : VX_ABORT_OTHER;

	if (reason >= 0 || vi->aborted || !vi->by_peer)
		return;
	vi->aborted = reason;
	for (uint32_t r = 0; r < iface->nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];

		if (e && e->sock >= 0 && e->connected)
			(void)!send(e->sock, &c, 1,
				    MSG_NOSIGNAL | MSG_DONTWAIT);
	}
}

static void ep_cancel_locked(struct ohc_ep *ep, ohc_status_t status)
{
	struct ohc_verbs_ep *e = vx_ep(ep);

	e->rp.state = VX_RP_NONE;
	fail_queue(&e->sendq, status);
	fail_queue(&e->recvq, status);
	if (!e->broken) {
		e->broken = status < 0 ? status : OHC_ERR_CANCELED;
		ep_stop(e);
	}
	gx_fail(vx_iface(ep->iface), e, status);
	rd_release(vx_iface(ep->iface), e);
	ohc_vx_rdv_fail(vx_iface(ep->iface), e, status);
}

int ohc_verbs_ep_inject_qp_error(struct ohc_ep *ep)
{
	struct ohc_verbs_ep *e = vx_ep(ep);
	int rc = 0;

	for (uint32_t i = 0; i < e->nqps && !rc; i++)
		rc = ohc_vx_fault_qp_error(e->qps[i].qp);
	return rc;
}

/* ---- iface --------------------------------------------------------- */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static ohc_status_t iface_listen(struct ohc_verbs_iface *vi)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, vi->ip,
		      &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		len = sizeof(struct sockaddr_in);
	} else {
		ss.ss_family = AF_INET6;
		inet_pton(AF_INET6, vi->ip,
			  &((struct sockaddr_in6 *)&ss)->sin6_addr);
		len = sizeof(struct sockaddr_in6);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) ||
	    listen(fd, SOMAXCONN) ||
	    getsockname(fd, (struct sockaddr *)&vi->listen_addr, &len) ||
	    set_nonblock(fd)) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: cannot listen on %s for RDMA connection "
			  "setup: %s",
			  vi->super.rank, vi->ip, strerror(errno));
		if (fd >= 0)
			close(fd);
		return OHC_ERR_SYSCALL;
	}
	vi->listen_fd = fd;
	return OHC_OK;
}

static void vx_iface_close(struct ohc_iface *iface)
{
	struct ohc_verbs_iface *vi = vx_iface(iface);

	ohc_vx_service_del(vi); /* the service thread lets go of it first */
	if (vi->listen_fd >= 0)
		close(vi->listen_fd);
	if (vi->wake_fd >= 0)
		close(vi->wake_fd);
	ohc_vx_land_fini(vi);
	ohc_vx_mr_cache_fini(vi);
	if (vi->cq) {
		if (vi->armed && ohc_vx_get_cq_event(vi->ch) == 0)
			vi->unacked++;
		ohc_vx_ack_cq_events(vi->cq, vi->unacked);
		ohc_vx_destroy_cq(vi->cq);
	}
	if (vi->ch)
		ohc_vx_destroy_channel(vi->ch);
	if (vi->pd)
		ohc_vx_dealloc_pd(vi->pd);
	if (vi->ctx)
		ohc_vx_close_device(vi->ctx);
	free(vi->by_peer);
	free(vi->wait_fds);
	vi->listen_fd = vi->wake_fd = -1;
	vi->cq = NULL;
	vi->ch = NULL;
	vi->pd = NULL;
	vi->ctx = NULL;
	vi->by_peer = NULL;
	pthread_mutex_destroy(&vi->lock);
}

/*
 * Defaults that depend on who does the RDMA protocol work. On a NIC a
 * WRITE costs the CPUs nothing: pulled fragments stay off (a read would
 * only add a round trip) and large messages go by rendezvous. Under
 * Soft-RoCE and siw the poster's CPU does all of a WRITE's work (copies,
 * ICRC) and the reader's all of a READ's, so the slot path with every
 * second fragment pulled keeps both CPUs busy, and it beat the
 * rendezvous (one CPU writing) at every size from 256 KiB to 4 MiB
 * (bench/verbs_p2p.sh): there the rendezvous is off unless set.
 */
static void vx_soft_defaults(struct ohc_verbs_iface *vi)
{
	struct ibv_device_attr da;
	int soft = !ohc_vx_query_device(vi->ctx, &da) &&
		   (da.vendor_id == OHC_VX_VENDOR_RXE ||
		    da.vendor_id == OHC_VX_VENDOR_SIW);

	if (!soft && !ohc_config_is_set("OPENHCCL_RDMA_PULL_KB"))
		vi->pull_bytes = 0;
	if (soft && !ohc_config_is_set("OPENHCCL_RDMA_RNDV_KB"))
		vi->rndv_bytes = 0;
}

static ohc_status_t vx_iface_open(struct ohc_iface *iface,
				  const struct ohc_transport_params *params)
{
	struct ohc_verbs_iface *vi = vx_iface(iface);
	const struct ohc_env *env = ohc_env();
	const char *ip = NULL, *origin = NULL;
	ohc_status_t status;

	vi->listen_fd = vi->wake_fd = -1;
	pthread_mutex_init(&vi->lock, NULL);
	ohc_list_init(&vi->svc_link);
	vi->session = params->session;
	vi->nqps = (uint32_t)env->rdma_qps_per_conn;
	vi->slots = (uint32_t)env->rdma_slots;
	/* the header on top of the payload: a message of exactly the slot
	 * size (64 KiB by default) is one fragment */
	vi->slot_bytes = (uint32_t)env->rdma_slot_kb * 1024 + OHC_VX_HDR;
	vi->max_inline = VX_MAX_INLINE;
	/* WRs per slot: a lost packet makes rxe resend everything from it to
	 * the next ACK (one per WR), and each failed round costs a retry:
	 * small writes keep that round short on a lossy link */
	vi->wr_bytes =
		env->rdma_write_kb
			? (uint32_t)OHC_MIN((uint64_t)env->rdma_write_kb * 1024,
					    vi->slot_bytes)
			: vi->slot_bytes;
	vi->wr_per_slot = (vi->slot_bytes + vi->wr_bytes - 1) / vi->wr_bytes;
	/* rendezvous stripes go in pieces of the same cap (else in pieces
	 * of 1 GiB, below rxe's largest message) */
	vi->rdv_wr_bytes = env->rdma_write_kb
				   ? (uint32_t)env->rdma_write_kb * 1024
				   : 1u << 30;
	vi->rndv_bytes = (uint32_t)env->rdma_rndv_kb * 1024;
	vi->gx_bytes = (uint32_t)env->rdma_gather_kb * 1024;
	/* one read WR per pulled fragment: not with OPENHCCL_RDMA_WRITE_KB,
	 * whose small WRs are for lossy links */
	vi->pull_bytes =
		env->rdma_write_kb
			? 0
			: (uint32_t)OHC_MIN((uint64_t)env->rdma_pull_kb * 1024,
					    UINT32_MAX);
	/* the slots' WRs, the rendezvous', a read at a time */
	vi->sq_depth = vi->slots * vi->wr_per_slot + OHC_VX_RDV_N + 16 + 1;
	/*
	 * Between two polls of ours a peer can land at most `slots` data
	 * fragments (its credits), `slots` credit messages (one per slot of
	 * ours it consumed) and per rendezvous in flight (at most
	 * OHC_VX_RDV_N each way) a CTS or a stripe, and per landing buffer
	 * of either side its chunks or their grants: keep that many
	 * receives posted at all times.
	 */
	vi->rq_depth = 2 * vi->slots + 2 * OHC_VX_RDV_N +
		       2 * OHC_VX_LAND_MAX * OHC_VX_LAND_CHUNKS + 16;
	vi->timeout = (uint32_t)env->rdma_timeout;
	vi->retry_cnt = (uint32_t)env->rdma_retry_cnt;
	vi->tc = params->rdma_tc;
	vi->sl = params->rdma_sl;
	if (vi->retry_cnt > 6) {
		static int warned;

		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED) &&
		    ohc_config_raw("HCCL_RDMA_RETRY_CNT"))
			OHC_WARN(OHC_SS_VERBS,
				 "HCCL_RDMA_RETRY_CNT=%u capped to 6 (7 means "
				 "retry forever on Soft-RoCE)",
				 vi->retry_cnt);
		vi->retry_cnt = 6;
	}
	if (params->device_ip && params->device_ip[0]) {
		ip = params->device_ip;
		origin = params->device_ip_key ? params->device_ip_key
					       : "device_ip";
	} else if (env->if_ip[0]) {
		ip = env->if_ip;
		origin = "HCCL_IF_IP";
	}
	status = ohc_vx_dev_open(vi, ip, origin, env->rdma_device,
				 (int)env->rdma_gid_index);
	if (status < 0)
		return status;
	vx_soft_defaults(vi);
	vi->by_peer = calloc(iface->nranks, sizeof(*vi->by_peer));
	vi->wait_fds = calloc(3 + (size_t)iface->nranks, sizeof(*vi->wait_fds));
	vi->replay_ms = (uint32_t)ohc_env()->rdma_replay_ms;
	if (!vi->by_peer || !vi->wait_fds) {
		status = OHC_ERR_NO_MEMORY;
		goto err_close;
	}
	vi->pd = ohc_vx_alloc_pd(vi->ctx);
	if (vi->pd)
		ohc_vx_mr_cache_init(vi);
	if (!vi->pd) {
		OHC_ERROR(OHC_SS_VERBS, "rank %u: ibv_alloc_pd on %s: %s",
			  iface->rank, vi->dev_name, strerror(errno));
		status = OHC_ERR_UNAVAILABLE;
		goto err_close;
	}
	vi->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vi->wake_fd < 0) {
		OHC_ERROR(OHC_SS_VERBS, "rank %u: eventfd: %s", iface->rank,
			  strerror(errno));
		status = OHC_ERR_SYSCALL;
		goto err_close;
	}
	if (set_nonblock(vi->ctx->async_fd)) {
		status = OHC_ERR_SYSCALL;
		goto err_close;
	}
	status = iface_listen(vi);
	if (status < 0)
		goto err_close;
	return OHC_OK;

err_close:
	vx_iface_close(iface);
	return status;
}

static ohc_status_t vx_iface_address(struct ohc_iface *iface, void *blob,
				     size_t *len_p)
{
	struct ohc_verbs_iface *vi = vx_iface(iface);
	struct vx_blob b;

	memset(&b, 0, sizeof(b));
	b.magic = VX_BLOB_MAGIC;
	b.version = VX_VERSION;
	b.rank = iface->rank;
	b.session = vi->session;
	b.family = vi->listen_addr.ss_family;
	if (b.family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&vi->listen_addr;

		memcpy(b.addr, &a->sin_addr, 4);
		b.tcp_port = ntohs(a->sin_port);
	} else {
		struct sockaddr_in6 *a =
			(struct sockaddr_in6 *)&vi->listen_addr;

		memcpy(b.addr, &a->sin6_addr, 16);
		b.tcp_port = ntohs(a->sin6_port);
	}
	memcpy(b.gid, vi->gid.raw, 16);
	b.nqps = vi->nqps;
	b.slots = vi->slots;
	b.slot_bytes = vi->slot_bytes;
	b.rndv_bytes = vi->rndv_bytes;
	memcpy(blob, &b, sizeof(b));
	*len_p = sizeof(b);
	return OHC_OK;
}

static int blob_ok(struct ohc_verbs_iface *vi, const void *blob, size_t len,
		   struct vx_blob *b)
{
	if (len != sizeof(*b))
		return 0;
	memcpy(b, blob, sizeof(*b));
	return b->magic == VX_BLOB_MAGIC && b->version == VX_VERSION &&
	       b->session == vi->session;
}

static int vx_iface_reachable(struct ohc_iface *iface, const void *blob,
			      size_t len)
{
	struct vx_blob b;

	return blob_ok(vx_iface(iface), blob, len, &b);
}

/* ---- endpoints ----------------------------------------------------- */

static ohc_status_t vx_ep_init(struct ohc_iface *iface, struct ohc_ep *ep,
			       uint32_t peer, const void *blob, size_t len)
{
	struct ohc_verbs_iface *vi = vx_iface(iface);
	struct ohc_verbs_ep *e = vx_ep(ep);
	struct vx_blob b;

	if (!blob_ok(vi, blob, len, &b) || b.rank != peer ||
	    peer >= iface->nranks) {
		OHC_ERROR(OHC_SS_VERBS, "rank %u: bad verbs address of rank %u",
			  iface->rank, peer);
		return OHC_ERR_INVALID;
	}
	if (b.rndv_bytes != vi->rndv_bytes) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: rank %u sends by rendezvous from %u bytes, "
			  "we from %u (0: never; set OPENHCCL_RDMA_RNDV_KB "
			  "alike on all ranks: unset, it is off on software "
			  "RDMA devices)",
			  iface->rank, peer, b.rndv_bytes, vi->rndv_bytes);
		return OHC_ERR_INVALID;
	}
	if (b.nqps != vi->nqps || b.slots != vi->slots ||
	    b.slot_bytes != vi->slot_bytes) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: rank %u uses %u QPs x %u slots of %u "
			  "bytes, we use %u x %u of %u (set "
			  "HCCL_RDMA_QPS_PER_CONNECTION, OPENHCCL_RDMA_SLOTS, "
			  "OPENHCCL_RDMA_SLOT_KB alike on all ranks)",
			  iface->rank, peer, b.nqps, b.slots, b.slot_bytes,
			  vi->nqps, vi->slots, vi->slot_bytes);
		return OHC_ERR_INVALID;
	}
	e->peer_blob = b;
	e->sock = -1;
	e->nqps = vi->nqps;
	ohc_list_init(&e->sendq);
	ohc_list_init(&e->recvq);
	ohc_list_init(&e->rdv.txq);
	ohc_list_init(&e->rdv.rxq);
	vi->by_peer[peer] = e;
	return OHC_OK;
}

/*
 * Let our last writes land and the peer read our last pulled fragment
 * (bounded): then the peer's QPs may go away, and our staging with them.
 */
static void ep_quiesce_locked(struct ohc_ep *ep)
{
	struct ohc_verbs_ep *e = vx_ep(ep);
	struct ohc_verbs_iface *vi = vx_iface(ep->iface);

	/* after a failure (ours: aborted) what is in flight is not wanted */
	if (e->connected && !e->broken && !vi->aborted) {
		uint64_t deadline = ohc_deadline_after_ms(VX_DRAIN_MS);
		unsigned polls = 0;
		/* a peer that announced its failure reads nothing more */
		int reads = !e->peer_abort;
		int pending = reads && e->tx_freed < e->pull_end;

		for (uint32_t i = 0; i < e->nqps; i++) {
			struct ohc_vx_qp *q = &e->qps[i];
			struct ibv_send_wr *wr =
				&e->wrs[vi->slots * vi->wr_per_slot];

			if (!q->sq_inflight)
				continue;
			pending = 1;
			if (!q->unsig)
				continue;
			memset(wr, 0, sizeof(*wr)); /* zero-length write */
			wr->opcode = IBV_WR_RDMA_WRITE;
			wr->wr.rdma.remote_addr = e->rem_ring;
			wr->wr.rdma.rkey = e->rem_rkey;
			chain_add(q, wr);
			if (chain_post(vi, e, i, 1))
				e->broken = OHC_ERR_REMOTE;
		}
		/*
		 * 64 polls, then one per 1 ms sleep with a deadline check:
		 * a peer that closed first never acks, and spinning on the
		 * clock (a system call on an HPET clocksource) for the whole
		 * drain only takes CPU from others (seen in the TCG VMs).
		 */
		while (pending && !e->broken) {
			iface_poll(vi);
			pending = reads && e->tx_freed < e->pull_end;
			for (uint32_t i = 0; i < e->nqps; i++)
				pending |= e->qps[i].sq_inflight != 0;
			if (!pending || ++polls < 64)
				continue;
			if (ohc_deadline_passed(deadline))
				break;
			if (sock_closed(e))
				break; /* gone: it reads and acks nothing more */
			(void)poll(NULL, 0, 1);
		}
	}
}

static void ep_fini_locked(struct ohc_ep *ep)
{
	struct ohc_verbs_ep *e = vx_ep(ep);
	struct ohc_verbs_iface *vi = vx_iface(ep->iface);

	fail_queue(&e->sendq, OHC_ERR_CANCELED);
	fail_queue(&e->recvq, OHC_ERR_CANCELED);
	ep_quiesce_locked(ep);
	for (uint32_t i = 0; i < e->nqps; i++) {
		if (e->qps[i].qp)
			ohc_vx_destroy_qp(e->qps[i].qp);
		e->qps[i].qp = NULL;
	}
	gx_fail(vi, e, OHC_ERR_CANCELED);
	rd_release(vi, e);
	ohc_vx_rdv_fail(vi, e, OHC_ERR_CANCELED);
	if (e->ring_mr)
		ohc_vx_dereg_mr(e->ring_mr);
	if (e->stage_mr)
		ohc_vx_dereg_mr(e->stage_mr);
	if (e->ring)
		munmap(e->ring, e->map_len);
	if (e->sock >= 0)
		close(e->sock);
	free(e->wrs);
	free(e->sges);
	free(e->rwrs);
	free(e->arrived);
	free(e->tx_src);
	e->tx_src = NULL;
	free(e->gx);
	free(e->gx_marks);
	e->gx = NULL;
	e->gx_marks = NULL;
	e->ring = e->stage = e->ctrl_in = e->ctrl_out = NULL;
	e->ring_mr = e->stage_mr = NULL;
	e->wrs = NULL;
	e->sges = NULL;
	e->rwrs = NULL;
	e->arrived = NULL;
	e->sock = -1;
	if (vi->by_peer && ep->peer < ep->iface->nranks &&
	    vi->by_peer[ep->peer] == e)
		vi->by_peer[ep->peer] = NULL;
}

/* QPs (INIT, receives posted), ring, staging, MRs of one ep. */
static ohc_status_t ep_setup(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	uint32_t rank = vi->super.rank, peer = e->super.peer;
	size_t len = (size_t)vi->slots * vi->slot_bytes;
	size_t ctrl = (size_t)OHC_VX_RDV_N * OHC_VX_CTS_BYTES;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	uint32_t psn;

	e->wrs = calloc((size_t)vi->slots * vi->wr_per_slot + 1,
			sizeof(*e->wrs));
	/* a fragment: a WR per piece, one more SGE where header and a
	 * gathered payload share a WR */
	e->sges = calloc((size_t)vi->slots * (vi->wr_per_slot + 1),
			 sizeof(*e->sges));
	e->rwrs = calloc(vi->rq_depth, sizeof(*e->rwrs));
	e->arrived = calloc(vi->slots, 1);
	e->tx_src = calloc(vi->slots, sizeof(*e->tx_src));
	e->gx_n = vi->slots;
	e->gx = calloc(e->gx_n, sizeof(*e->gx));
	e->gx_marks = calloc((size_t)e->gx_n * e->nqps, sizeof(*e->gx_marks));
	if (!e->wrs || !e->sges || !e->rwrs || !e->arrived || !e->tx_src ||
	    !e->gx || !e->gx_marks)
		return OHC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < e->gx_n; i++)
		e->gx[i].mark = e->gx_marks + (size_t)i * e->nqps;
	/* ring | CTS in | staging | CTS out */
	e->map_len = 2 * (len + ctrl);
	e->ring = mmap(NULL, e->map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->ring == MAP_FAILED) {
		e->ring = NULL;
		return OHC_ERR_NO_MEMORY;
	}
	e->ring_len = len;
	e->ctrl_in = e->ring + len;
	e->stage = e->ctrl_in + ctrl;
	e->ctrl_out = e->stage + len;
	e->ring_mr = ohc_vx_reg_mr(vi->pd, e->ring, len + ctrl, access);
	if (e->ring_mr)
		e->stage_mr = ohc_vx_reg_mr(vi->pd, e->stage, len + ctrl,
					    IBV_ACCESS_LOCAL_WRITE |
						    IBV_ACCESS_REMOTE_READ);
	if (!e->ring_mr || !e->stage_mr) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: cannot register %zu bytes for rank %u on "
			  "%s: %s",
			  rank, len, peer, vi->dev_name, strerror(errno));
		return OHC_ERR_NO_MEMORY;
	}
	if (getrandom(&psn, sizeof(psn), 0) != sizeof(psn))
		psn = (uint32_t)ohc_time_ns();
	e->psn = psn & 0xffffff;
	for (uint32_t i = 0; i < e->nqps; i++) {
		struct ibv_qp_init_attr qa;
		int rc;

		memset(&qa, 0, sizeof(qa));
		qa.send_cq = vi->cq;
		qa.recv_cq = vi->cq;
		qa.qp_type = IBV_QPT_RC;
		qa.sq_sig_all = 0;
		qa.cap.max_send_wr = vi->sq_depth;
		qa.cap.max_recv_wr = vi->rq_depth;
		qa.cap.max_send_sge = 2;
		qa.cap.max_recv_sge = 1;
		qa.cap.max_inline_data = VX_MAX_INLINE;
		e->qps[i].qp = ohc_vx_create_qp(vi->pd, &qa);
		if (!e->qps[i].qp && errno == EINVAL) {
			qa.cap.max_inline_data = 0; /* no inline support */
			e->qps[i].qp = ohc_vx_create_qp(vi->pd, &qa);
		}
		if (e->qps[i].qp)
			vi->max_inline =
				OHC_MIN(vi->max_inline, qa.cap.max_inline_data);
		if (!e->qps[i].qp) {
			OHC_ERROR(OHC_SS_VERBS,
				  "rank %u: cannot create QP %u to rank %u on "
				  "%s: %s",
				  rank, i, peer, vi->dev_name, strerror(errno));
			return OHC_ERR_UNAVAILABLE;
		}
		rc = ohc_vx_qp_init(vi, e, i);
		if (!rc)
			rc = post_recvs(vi, e, i);
		if (rc) {
			OHC_ERROR(OHC_SS_VERBS,
				  "rank %u: QP %u to rank %u: INIT: %s", rank,
				  e->qps[i].qp->qp_num, peer, strerror(rc));
			return OHC_ERR_UNAVAILABLE;
		}
	}
	return OHC_OK;
}

int ohc_vx_qp_init(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		   uint32_t qpi)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = vi->port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	return ohc_vx_modify_qp(e->qps[qpi].qp, &a,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS);
}

int ohc_vx_recvs_post(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      uint32_t qpi)
{
	return post_recvs(vi, e, qpi);
}

/* RTR towards the peer's QP qpi (rem_qpn, rem_gid, rem_mtu). */
int ohc_vx_qp_rtr(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		  uint32_t qpi, uint32_t peer_psn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = OHC_MIN(vi->mtu, (enum ibv_mtu)e->rem_mtu);
	a.dest_qp_num = e->rem_qpn[qpi];
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 24; /* 41 ms: never expected, see rq_depth */
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, e->rem_gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)vi->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = (uint8_t)vi->tc;
	a.ah_attr.sl = (uint8_t)vi->sl;
	a.ah_attr.port_num = vi->port;
	return ohc_vx_modify_qp(e->qps[qpi].qp, &a,
				IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					IBV_QP_MAX_DEST_RD_ATOMIC |
					IBV_QP_MIN_RNR_TIMER);
}

int ohc_vx_qp_rts(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		  uint32_t qpi)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)vi->timeout;
	a.retry_cnt = (uint8_t)vi->retry_cnt;
	a.rnr_retry = 6;
	a.sq_psn = e->psn;
	a.max_rd_atomic = 1;
	return ohc_vx_modify_qp(e->qps[qpi].qp, &a,
				IBV_QP_STATE | IBV_QP_TIMEOUT |
					IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					IBV_QP_SQ_PSN |
					IBV_QP_MAX_QP_RD_ATOMIC);
}

static void conn_fill(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      struct vx_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->magic = VX_CONN_MAGIC;
	c->version = VX_VERSION;
	c->session = vi->session;
	c->from = vi->super.rank;
	c->to = e->super.peer;
	c->nqps = e->nqps;
	c->slots = vi->slots;
	c->slot_bytes = vi->slot_bytes;
	c->mtu = vi->mtu;
	c->psn = e->psn;
	c->rkey = e->ring_mr->rkey;
	c->ring = (uintptr_t)e->ring;
	memcpy(c->gid, vi->gid.raw, 16);
	for (uint32_t i = 0; i < e->nqps; i++)
		c->qpn[i] = e->qps[i].qp->qp_num;
}

/* Move the ep's QPs to RTS towards the peer described by c. */
static ohc_status_t ep_rts(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			   const struct vx_conn *c)
{
	uint32_t rank = vi->super.rank, peer = e->super.peer;

	e->rem_ring = c->ring;
	e->rem_rkey = c->rkey;
	e->rem_mtu = c->mtu;
	memcpy(e->rem_gid, c->gid, 16);
	for (uint32_t i = 0; i < e->nqps; i++) {
		int rc;

		e->rem_qpn[i] = c->qpn[i];
		rc = ohc_vx_qp_rtr(vi, e, i, c->psn);
		if (!rc)
			rc = ohc_vx_qp_rts(vi, e, i);
		if (rc) {
			OHC_ERROR(OHC_SS_VERBS,
				  "rank %u: QP %u to rank %u (remote QP %u): "
				  "cannot connect: %s",
				  rank, e->qps[i].qp->qp_num, peer, c->qpn[i],
				  strerror(rc));
			return OHC_ERR_ROCE_CONNECT;
		}
	}
	e->connected = 1;
	return OHC_OK;
}

/* Read or write exactly len bytes before the deadline. */
static int sock_io(int fd, void *buf, size_t len, int out, uint64_t deadline)
{
	char *p = buf;

	while (len) {
		struct pollfd pf = {.fd = fd, .events = out ? POLLOUT : POLLIN};
		ssize_t n;
		int ms = ohc_deadline_left_ms(deadline, 1000);

		if (ms <= 0 && ohc_deadline_passed(deadline)) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (poll(&pf, 1, ms) < 0 && errno != EINTR)
			return -1;
		n = out ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
			: recv(fd, p, len, MSG_DONTWAIT);
		if (n == 0) {
			errno = ECONNRESET;
			return -1;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int sock_connect(const struct vx_blob *b, uint64_t deadline)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	memset(&ss, 0, sizeof(ss));
	ss.ss_family = b->family;
	if (b->family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		memcpy(&a->sin_addr, b->addr, 4);
		a->sin_port = htons(b->tcp_port);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		memcpy(&a->sin6_addr, b->addr, 16);
		a->sin6_port = htons(b->tcp_port);
		len = sizeof(*a);
	}
	for (;;) {
		struct pollfd pf;
		int err = 0;
		socklen_t el = sizeof(err);

		fd = socket(b->family,
			    SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, (struct sockaddr *)&ss, len) == 0)
			return fd;
		if (errno == EINPROGRESS) {
			pf.fd = fd;
			pf.events = POLLOUT;
			if (poll(&pf, 1, ohc_deadline_left_ms(deadline, 1000)) >
				    0 &&
			    !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) &&
			    !err)
				return fd;
			if (err)
				errno = err;
		}
		close(fd);
		if (ohc_deadline_passed(deadline))
			return -1;
		usleep(10000);
	}
}

static ohc_status_t conn_check(struct ohc_verbs_iface *vi,
			       const struct vx_conn *c)
{
	return c->magic == VX_CONN_MAGIC && c->version == VX_VERSION &&
			       c->session == vi->session &&
			       c->to == vi->super.rank &&
			       c->from < vi->super.nranks &&
			       c->nqps == vi->nqps && c->slots == vi->slots &&
			       c->slot_bytes == vi->slot_bytes
		       ? OHC_OK
		       : OHC_ERR_INVALID;
}

static ohc_status_t vx_iface_connect(struct ohc_iface *iface,
				     struct ohc_ep **eps, unsigned n,
				     uint64_t deadline)
{
	struct ohc_verbs_iface *vi = vx_iface(iface);
	uint32_t rank = iface->rank;
	unsigned lower = 0, accepted = 0;
	ohc_status_t status = OHC_OK;
	struct vx_conn c;
	int cqe;

	if (!n)
		return OHC_OK;
	cqe = (int)(n * vi->nqps * (vi->sq_depth + vi->rq_depth) + 16);
	vi->ch = ohc_vx_create_channel(vi->ctx);
	if (vi->ch && set_nonblock(vi->ch->fd) == 0)
		vi->cq = ohc_vx_create_cq(vi->ctx, cqe, vi->ch);
	if (!vi->cq) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: cannot create a CQ of %d entries on %s: %s",
			  rank, cqe, vi->dev_name, strerror(errno));
		return OHC_ERR_UNAVAILABLE;
	}
	for (unsigned i = 0; i < n; i++) {
		status = ep_setup(vi, vx_ep(eps[i]));
		if (status < 0)
			return status;
	}
	/* Higher ranks: connect and send our half first. */
	for (unsigned i = 0; i < n; i++)
		lower += vx_ep(eps[i])->super.peer < rank;
	for (unsigned i = 0; i < n; i++) {
		struct ohc_verbs_ep *e = vx_ep(eps[i]);

		if (e->super.peer < rank)
			continue;
		e->sock = sock_connect(&e->peer_blob, deadline);
		conn_fill(vi, e, &c);
		if (e->sock < 0 ||
		    sock_io(e->sock, &c, sizeof(c), 1, deadline)) {
			OHC_ERROR(OHC_SS_VERBS,
				  "rank %u: cannot reach rank %u for RDMA "
				  "connection setup: %s",
				  rank, e->super.peer, strerror(errno));
			return errno == ETIMEDOUT ? OHC_ERR_TIMEOUT
						  : OHC_ERR_ROCE_CONNECT;
		}
	}
	/* Lower ranks connect to us: accept, read theirs, answer. */
	while (accepted < lower) {
		struct pollfd pf = {.fd = vi->listen_fd, .events = POLLIN};
		struct ohc_verbs_ep *e;
		int fd, one = 1;

		if (ohc_deadline_passed(deadline)) {
			OHC_ERROR(OHC_SS_VERBS,
				  "rank %u: RDMA connection setup timed out: "
				  "%u of %u lower ranks connected",
				  rank, accepted, lower);
			return OHC_ERR_TIMEOUT;
		}
		if (poll(&pf, 1, ohc_deadline_left_ms(deadline, 1000)) <= 0)
			continue;
		fd = accept4(vi->listen_fd, NULL, NULL,
			     SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		/* a peer writes its record as soon as it is connected: a
		 * connection that says nothing for 2 s is dropped, not
		 * waited for until the deadline */
		if (sock_io(fd, &c, sizeof(c), 0,
			    OHC_MIN(deadline, ohc_deadline_after_ms(2000))) ||
		    conn_check(vi, &c) < 0 || c.from >= rank ||
		    !(e = vi->by_peer[c.from]) || e->sock >= 0) {
			close(fd); /* a stranger or a duplicate */
			continue;
		}
		e->sock = fd;
		accepted++;
		status = ep_rts(vi, e, &c);
		if (status < 0)
			return status;
		conn_fill(vi, e, &c);
		if (sock_io(fd, &c, sizeof(c), 1, deadline)) {
			OHC_ERROR(OHC_SS_VERBS,
				  "rank %u: lost rank %u during RDMA "
				  "connection setup: %s",
				  rank, e->super.peer, strerror(errno));
			return OHC_ERR_ROCE_CONNECT;
		}
	}
	/* Higher ranks' answers. */
	for (unsigned i = 0; i < n; i++) {
		struct ohc_verbs_ep *e = vx_ep(eps[i]);

		if (e->super.peer < rank)
			continue;
		if (sock_io(e->sock, &c, sizeof(c), 0, deadline) ||
		    conn_check(vi, &c) < 0 || c.from != e->super.peer) {
			OHC_ERROR(OHC_SS_VERBS,
				  "rank %u: no valid RDMA connection reply "
				  "from rank %u: %s",
				  rank, e->super.peer,
				  errno ? strerror(errno) : "bad message");
			return OHC_ERR_ROCE_CONNECT;
		}
		status = ep_rts(vi, e, &c);
		if (status < 0)
			return status;
	}
	close(vi->listen_fd);
	vi->listen_fd = -1;
	OHC_INFO(OHC_SS_VERBS, "rank %u: %u RDMA connections up on %s", rank, n,
		 vi->dev_name);
	ohc_vx_service_add(vi);
	return OHC_OK;
}

/* ---- the ops, each under the iface's lock ------------------------- */

static unsigned vx_iface_progress(struct ohc_iface *iface)
{
	unsigned n;

	VX_LOCK(iface);
	n = iface_progress_locked(iface);
	VX_UNLOCK(iface);
	return n;
}

static ohc_status_t vx_ep_send(struct ohc_ep *ep, struct ohc_req *req)
{
	ohc_status_t st;

	VX_LOCK(ep->iface);
	st = ep_send_locked(ep, req);
	VX_UNLOCK(ep->iface);
	return st;
}

static ohc_status_t vx_ep_recv(struct ohc_ep *ep, struct ohc_req *req)
{
	ohc_status_t st;

	VX_LOCK(ep->iface);
	st = ep_recv_locked(ep, req);
	VX_UNLOCK(ep->iface);
	return st;
}

static ohc_status_t vx_ep_check(struct ohc_ep *ep)
{
	ohc_status_t st;

	VX_LOCK(ep->iface);
	st = ep_check_locked(ep);
	VX_UNLOCK(ep->iface);
	return st;
}

static void vx_ep_cancel(struct ohc_ep *ep, ohc_status_t status)
{
	VX_LOCK(ep->iface);
	ep_cancel_locked(ep, status);
	VX_UNLOCK(ep->iface);
}

static void vx_iface_abort(struct ohc_iface *iface, ohc_status_t reason)
{
	VX_LOCK(iface);
	iface_abort_locked(iface, reason);
	VX_UNLOCK(iface);
}

static void vx_ep_quiesce(struct ohc_ep *ep)
{
	VX_LOCK(ep->iface);
	ep_quiesce_locked(ep);
	VX_UNLOCK(ep->iface);
}

static void vx_ep_fini(struct ohc_ep *ep)
{
	VX_LOCK(ep->iface);
	ep_fini_locked(ep);
	VX_UNLOCK(ep->iface);
}

static ohc_status_t vx_mem_reg(struct ohc_iface *iface, void *addr, size_t len,
			       const struct ohc_mem_desc *desc, void **handle_p)
{
	ohc_status_t st;

	VX_LOCK(iface);
	st = ohc_vx_mem_reg(iface, addr, len, desc, handle_p);
	VX_UNLOCK(iface);
	return st;
}

static void vx_mem_dereg(struct ohc_iface *iface, void *handle)
{
	VX_LOCK(iface);
	ohc_vx_mem_dereg(iface, handle);
	VX_UNLOCK(iface);
}

/* ---- service (vx_service.c) ----------------------------------------- */

int ohc_vx_service_fds(struct ohc_verbs_iface *vi, struct pollfd **pfd,
		       struct ohc_verbs_iface ***owner, size_t *n, size_t *cap)
{
	int busy = 0;

	if (pthread_mutex_trylock(&vi->lock))
		return 0; /* in use: its owner watches for itself */
	for (uint32_t r = 0; r <= vi->super.nranks; r++) {
		struct ohc_verbs_ep *e =
			r < vi->super.nranks ? vi->by_peer[r] : NULL;
		int fd = r == vi->super.nranks ? vi->ctx->async_fd : -1;

		if (e && e->connected && !e->broken && !e->peer_abort)
			fd = e->sock;
		busy |= e && e->rp.state;
		if (fd < 0)
			continue;
		if (*n == *cap) {
			size_t c = *cap ? 2 * *cap : 64;
			struct pollfd *p = realloc(*pfd, c * sizeof(*p));
			struct ohc_verbs_iface **o;

			if (!p)
				break;
			*pfd = p;
			o = realloc(*owner, c * sizeof(*o));
			if (!o)
				break;
			*owner = o;
			*cap = c;
		}
		(*pfd)[*n] = (struct pollfd){.fd = fd, .events = POLLIN};
		(*owner)[(*n)++] = vi;
	}
	pthread_mutex_unlock(&vi->lock);
	return busy;
}

int ohc_vx_service_busy(struct ohc_verbs_iface *vi)
{
	for (uint32_t r = 0; r < vi->super.nranks; r++)
		if (vi->by_peer[r] && __atomic_load_n(&vi->by_peer[r]->rp.state,
						      __ATOMIC_RELAXED))
			return 1;
	return 0;
}

void ohc_vx_service_locked(struct ohc_verbs_iface *vi)
{
	int replaying = 0;

	iface_async(vi);
	for (uint32_t r = 0; r < vi->super.nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];

		if (!e || !e->connected || e->broken)
			continue;
		ep_sock_check(e);
		replaying |= e->rp.state != VX_RP_NONE;
	}
	if (replaying) {
		iface_poll(vi);
		for (uint32_t r = 0; r < vi->super.nranks; r++) {
			struct ohc_verbs_ep *e = vi->by_peer[r];

			if (e && e->rp.state && !e->broken)
				ohc_vx_replay_progress(vi, e);
		}
	}
	vx_iface_wake(&vi->super); /* a sleeping owner looks again */
}

const struct ohc_transport_ops ohc_verbs_ops = {
	.size = sizeof(struct ohc_transport_ops),
	.name = "verbs",
	.caps = OHC_TP_CAP_SAME_HOST | OHC_TP_CAP_REMOTE_HOST | OHC_TP_CAP_WAIT,
	.iface_size = sizeof(struct ohc_verbs_iface),
	.ep_size = sizeof(struct ohc_verbs_ep),
	.iface_open = vx_iface_open,
	.iface_close = vx_iface_close,
	.iface_address = vx_iface_address,
	.iface_reachable = vx_iface_reachable,
	.ep_init = vx_ep_init,
	.iface_connect = vx_iface_connect,
	.ep_quiesce = vx_ep_quiesce,
	.ep_fini = vx_ep_fini,
	.ep_send = vx_ep_send,
	.ep_recv = vx_ep_recv,
	.iface_progress = vx_iface_progress,
	.iface_wait = vx_iface_wait,
	.iface_wake = vx_iface_wake,
	.ep_check = vx_ep_check,
	.ep_cancel = vx_ep_cancel,
	.mem_reg = vx_mem_reg,
	.mem_dereg = vx_mem_dereg,
	.iface_abort = vx_iface_abort,
};
