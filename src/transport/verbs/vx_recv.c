/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's receive side of the slot path: what lands (the
 * immediates naming slots, the credits in headers), the checks of a
 * peer's headers, and the delivery of landed fragments into posted
 * receives in order, pulled fragments read first. All under the iface's
 * lock.
 */
#include <string.h>

#include "transport/verbs/verbs.h"

int ohc_vx_tx_freed_update(struct ohc_verbs_ep *e, uint32_t freed, uint32_t qpn)
{
	uint32_t delta = freed - (uint32_t)e->tx_freed;

	if (delta >= 0x80000000u) /* older than what we knew */
		return 0;
	if (e->tx_freed + delta > e->tx_slots) {
		ohc_vx_ep_fail_qpn(
			e, qpn,
			"protocol error: the peer freed slots never sent");
		return -1;
	}
	e->tx_freed += delta;
	return 0;
}

int ohc_vx_hdr_fits(const struct vx_hdr *h, const struct ohc_req *req,
		    uint32_t slot_bytes)
{
	uint64_t room = slot_bytes - OHC_VX_HDR -
			(h->rdv == VX_PULL_FLAG ? OHC_VX_PULL_PAD : 0);

	/* in order, within the receive and the slot, and whole 64-byte
	 * lines but for the last (req.h) */
	return req->done <= req->len && h->off == req->done &&
	       h->frag_len <= req->len - req->done && h->frag_len <= room &&
	       !(h->frag_len % 64 && h->frag_len != req->len - req->done) &&
	       !(req->done == 0 &&
		 (h->msg_len != req->len ||
		  memcmp(&h->sig, &req->sig, sizeof(req->sig))));
}

void ohc_vx_imm_landed(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       uint32_t imm, uint32_t qpn)
{
	const struct vx_hdr *h;

	if (imm & OHC_VX_IMM_RDV) {
		ohc_vx_rdv_imm(vi, e, imm);
		return;
	}
	if (imm >= vi->slots) {
		ohc_vx_ep_fail_qpn(e, qpn, "protocol error: bad slot");
		return;
	}
	h = (const struct vx_hdr *)(e->ring + (size_t)imm * vi->slot_bytes);
	e->arrived[imm] = 1;
	(void)ohc_vx_tx_freed_update(e, h->freed, qpn);
}

/* ---- pulled fragments ---------------------------------------------- */

void ohc_vx_rd_release(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	ohc_vx_mr_put(vi, e->rd_mr);
	e->rd_mr = NULL;
	e->rd = e->rd_done = 0;
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
	if (!ohc_vx_sq_room(vi, &e->qps[0], 2))
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
	rc = ohc_vx_post_signaled(e, 0, &wr, OHC_VX_WR_PULL, 0);
	if (rc) {
		ohc_vx_post_failed(e, 0, "ibv_post_send (read)", rc);
		return -1;
	}
	e->rd = 1;
	return 0;
}

/* ---- delivery ------------------------------------------------------ */

unsigned ohc_vx_ep_deliver(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
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
				ohc_vx_ep_fail(e, 0,
					       "protocol error: unknown "
					       "rendezvous");
				break;
			}
		} else if (!ohc_list_empty(&e->recvq)) {
			req = ohc_container_of(e->recvq.next, struct ohc_req,
					       link);
		} else {
			break;
		}
		if (!ohc_vx_hdr_fits(h, req, vi->slot_bytes)) {
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
		/* no slot data for a rendezvous written straight into its
		 * destination (a sender never sends it any; a landing one
		 * takes slots when its sender declines the ring) */
		if (routed && !ohc_vx_rdv_takes_slots(e, req)) {
			ohc_vx_ep_fail(e, 0,
				       "protocol error: slot data for a direct "
				       "rendezvous");
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
	ohc_vx_ep_credit(vi, e, force);
	return n;
}

ohc_status_t ohc_vx_ep_recv_locked(struct ohc_ep *ep, struct ohc_req *req)
{
	struct ohc_verbs_ep *e = ohc_vx_ep(ep);

	if (e->broken)
		return e->broken;
	req->status = OHC_INPROGRESS;
	req->done = 0;
	req->tp_priv = NULL;
	req->path = OHC_PATH_STAGED;
	if (ohc_vx_rdv_large(ohc_vx_iface(ep->iface), req->len))
		(void)ohc_vx_rdv_recv(ohc_vx_iface(ep->iface), e, req);
	else
		ohc_list_add_tail(&e->recvq, &req->link);
	/* unconnected: queued until connected (vx_lazy.c) */
	if (!e->connected)
		ohc_vx_lazy_start(ohc_vx_iface(ep->iface), e);
	else
		ohc_vx_ep_deliver(ohc_vx_iface(ep->iface), e);
	return OHC_OK;
}
