/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's rendezvous: large messages written straight from
 * the sender's buffer into the receiver's. Protocol in vx_rdv.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "transport/verbs/verbs.h"
#include "util/compiler.h"
#include "util/log.h"

#define RDV_FLAG (1ull << 63) /* in a header's rdv field */
#define RDV_STRIPE_MIN (32u * 1024u)
#define RDV_BATCH 64	/* WRs per ibv_post_send of a stripe in pieces */
#define WR_KIND_SEND 1u /* as in vx_iface.c */
#define WR_KIND_RDV 3u

static uint64_t wr_id(const struct ohc_verbs_ep *e, uint32_t qpi, unsigned kind,
		      uint32_t low)
{
	return (uint64_t)e->super.peer << 32 | (uint64_t)qpi << 24 |
	       (uint64_t)kind << 20 | (low & 0xfffff);
}

static uint32_t req_seq(const struct ohc_req *req)
{
	return (uint32_t)(uintptr_t)req->tp_priv;
}

int ohc_vx_rdv_large(const struct ohc_verbs_iface *vi, size_t len)
{
	return vi->rndv_bytes && len >= vi->rndv_bytes;
}

/* Post one signaled WR on QP qpi (not inside a chain being built). */
static int rdv_post(struct ohc_verbs_ep *e, uint32_t qpi,
		    struct ibv_send_wr *wr, unsigned kind, uint32_t slot)
{
	struct ohc_vx_qp *q = &e->qps[qpi];
	uint32_t covered = q->unsig + 1;
	int rc;

	wr->next = NULL;
	wr->send_flags |= IBV_SEND_SIGNALED;
	wr->wr_id = (uint64_t)e->super.peer << 32 | (uint64_t)qpi << 24 |
		    (uint64_t)kind << 20 |
		    (kind == WR_KIND_RDV ? (slot << 12 | covered)
					 : (covered & 0xfffff));
	rc = ohc_vx_post_send(q->qp, wr);
	if (!rc) {
		q->sq_inflight++;
		q->unsig = 0;
	}
	return rc;
}

static int room(const struct ohc_verbs_iface *vi, const struct ohc_verbs_ep *e,
		uint32_t qpi)
{
	const struct ohc_vx_qp *q = &e->qps[qpi];

	return q->sq_inflight + q->nchain + 2 <= vi->sq_depth;
}

static void post_failed(struct ohc_verbs_ep *e, uint32_t qpi, int rc)
{
	char why[160];

	snprintf(why, sizeof(why), "ibv_post_send (rendezvous): %s",
		 strerror(rc));
	ohc_vx_ep_fail(e, qpi, why);
}

ohc_status_t ohc_vx_rdv_send(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			     struct ohc_req *req)
{
	req->tp_priv = (void *)(uintptr_t)e->rdv.tx_seq++;
	ohc_list_add_tail(&e->rdv.txq, &req->link);
	ohc_vx_rdv_progress(vi, e);
	return OHC_OK;
}

ohc_status_t ohc_vx_rdv_recv(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			     struct ohc_req *req)
{
	req->tp_priv = (void *)(uintptr_t)e->rdv.rx_seq++;
	ohc_list_add_tail(&e->rdv.rxq, &req->link);
	ohc_vx_rdv_progress(vi, e);
	return OHC_OK;
}

/*
 * May the message land in the destination itself? COPY: yes. REDUCE_TO
 * (dst = src2 OP message): yes when dst and src2 do not overlap, the
 * reduction then runs in place once it landed. REDUCE (dst = dst OP
 * message) needs the old dst: no, it goes eager.
 */
static int lands_direct(const struct ohc_req *req)
{
	uintptr_t d = (uintptr_t)req->dst, s2 = (uintptr_t)req->src2;

	if (req->kind == OHC_RECV_COPY)
		return 1;
	return req->kind == OHC_RECV_REDUCE_TO && req->esize &&
	       (d + req->len <= s2 || s2 + req->len <= d);
}

/* Write the CTS of the next receive(s) that may have one. */
static unsigned rx_cts(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct vx_rdv *r = &e->rdv;
	unsigned n = 0;
	struct ohc_list *p;

	ohc_list_for_each(p, &r->rxq)
	{
		struct ohc_req *req = ohc_container_of(p, struct ohc_req, link);
		uint32_t seq = req_seq(req), slot = seq % OHC_VX_RDV_N;
		struct vx_rdv_rx *x = &r->rx[slot];
		struct vx_rdv_cts *cts;
		struct ibv_send_wr wr;
		struct ibv_sge sg;
		int zc = 0, rc;

		if ((int32_t)(seq - r->rx_cts) < 0)
			continue; /* its CTS went */
		if (seq != r->rx_cts || x->req || !room(vi, e, 0))
			break;
		memset(x, 0, sizeof(*x));
		if (lands_direct(req))
			x->mr = ohc_vx_mr_get(vi, req->dst, req->len, 1, &zc);
		x->req = req;
		x->zc = zc;
		cts = (struct vx_rdv_cts *)(e->ctrl_out +
					    (size_t)slot * OHC_VX_CTS_BYTES);
		memset(cts, 0, sizeof(*cts));
		cts->sig = req->sig;
		cts->len = req->len;
		cts->seq = seq;
		if (x->mr) {
			cts->addr = (uintptr_t)req->dst;
			cts->rkey = ohc_vx_mr_rkey(x->mr);
		}
		memset(&wr, 0, sizeof(wr));
		sg.addr = (uintptr_t)cts;
		sg.length = sizeof(*cts);
		sg.lkey = e->stage_mr->lkey;
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(OHC_VX_IMM_RDV | OHC_VX_IMM_CTS | slot);
		wr.wr.rdma.remote_addr = e->rem_ring + e->ring_len +
					 (uint64_t)slot * OHC_VX_CTS_BYTES;
		wr.wr.rdma.rkey = e->rem_rkey;
		wr.sg_list = &sg;
		wr.num_sge = 1;
		if (sizeof(*cts) <= vi->max_inline)
			wr.send_flags = IBV_SEND_INLINE;
		rc = rdv_post(e, 0, &wr, WR_KIND_SEND, 0);
		if (rc) {
			post_failed(e, 0, rc);
			return n;
		}
		r->rx_cts++;
		n++;
	}
	return n;
}

/* Take up the message of a direct CTS: register the source, plan the
 * stripes; -1 if that failed (the ep is failed). */
static int tx_start(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		    struct ohc_req *req, const struct vx_rdv_cts *cts)
{
	struct vx_rdv_tx *t = &e->rdv.tx[req_seq(req) % OHC_VX_RDV_N];
	size_t len = req->len;
	uint32_t ns = e->nqps;
	int zc;

	if (len / RDV_STRIPE_MIN < ns)
		ns = (uint32_t)OHC_MAX(len / RDV_STRIPE_MIN, 1);
	memset(t, 0, sizeof(*t));
	t->chunk = ((len + ns - 1) / ns + 63) & ~(size_t)63;
	t->ns = (uint32_t)((len + t->chunk - 1) / t->chunk);
	t->mr = ohc_vx_mr_get(vi, req->sbuf, len, 0, &zc);
	if (!t->mr) {
		char why[160];

		snprintf(why, sizeof(why),
			 "cannot register the send buffer %p (%zu bytes): %s",
			 req->sbuf, len, strerror(errno));
		ohc_vx_ep_fail(e, 0, why);
		return -1;
	}
	t->req = req;
	t->left = t->ns;
	t->raddr = cts->addr;
	t->rkey = cts->rkey;
	return 1;
}

/*
 * Post what the send queues take of the message of table entry slot:
 * stripe i on QP i, in pieces of at most rdv_wr_bytes (plain RDMA WRITEs,
 * the last one WRITE_WITH_IMM), one ibv_post_send per batch, each batch's
 * last WR signaled (so the queue drains). 1: all posted; 0: the rest waits
 * for room; -1: failed.
 */
static int tx_post(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		   uint32_t slot)
{
	struct vx_rdv_tx *t = &e->rdv.tx[slot];
	size_t len = t->req->len;

	while (t->posted < len) {
		uint32_t i = (uint32_t)(t->posted / t->chunk);
		size_t off = t->posted;
		size_t end = OHC_MIN((size_t)(i + 1) * t->chunk, len);
		struct ohc_vx_qp *q = &e->qps[i];
		struct ibv_send_wr wrs[RDV_BATCH];
		struct ibv_sge sgs[RDV_BATCH];
		uint32_t n = 0, max, used = q->sq_inflight + q->nchain + 1;
		unsigned kind;
		int rc;

		if (used >= vi->sq_depth)
			return 0;
		max = OHC_MIN(vi->sq_depth - used, RDV_BATCH);
		/* the covered count of the last WR must fit its wr_id */
		if (q->unsig + max > 0xfff)
			max = q->unsig < 0xfff ? 0xfff - q->unsig : 1;
		memset(wrs, 0, sizeof(wrs[0]) * max);
		while (n < max && off < end) {
			size_t piece = OHC_MIN(end - off, vi->rdv_wr_bytes);

			sgs[n].addr = (uintptr_t)t->req->sbuf + off;
			sgs[n].length = (uint32_t)piece;
			sgs[n].lkey = ohc_vx_mr_lkey(t->mr);
			wrs[n].opcode = IBV_WR_RDMA_WRITE;
			wrs[n].wr.rdma.remote_addr = t->raddr + off;
			wrs[n].wr.rdma.rkey = t->rkey;
			wrs[n].sg_list = &sgs[n];
			wrs[n].num_sge = 1;
			/* unsignaled WRs complete too when flushed */
			wrs[n].wr_id = wr_id(e, i, WR_KIND_SEND, 0);
			wrs[n].next = &wrs[n + 1];
			off += piece;
			n++;
		}
		wrs[n - 1].next = NULL;
		wrs[n - 1].send_flags = IBV_SEND_SIGNALED;
		kind = off == end ? WR_KIND_RDV : WR_KIND_SEND;
		if (kind == WR_KIND_RDV) { /* the stripe's end */
			wrs[n - 1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wrs[n - 1].imm_data =
				htonl(OHC_VX_IMM_RDV | t->ns << 16 | slot);
		}
		wrs[n - 1].wr_id =
			wr_id(e, i, kind,
			      (kind == WR_KIND_RDV ? slot << 12 : 0) |
				      (q->unsig + n));
		rc = ohc_vx_post_send(q->qp, wrs);
		if (rc) {
			post_failed(e, i, rc);
			return -1;
		}
		q->sq_inflight += n;
		q->unsig = 0;
		t->posted = off;
	}
	return 1;
}

/* Match large sends with the CTS that came. */
static unsigned tx_match(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct vx_rdv *r = &e->rdv;
	struct ohc_list *p = r->txq.next;
	unsigned n = 0;

	while (p != &r->txq && !e->broken) {
		struct ohc_req *req = ohc_container_of(p, struct ohc_req, link);
		uint32_t seq = req_seq(req), slot = seq % OHC_VX_RDV_N;
		struct vx_rdv_cts *cts = &r->cts[slot];
		int rc;

		p = p->next;
		if (r->tx[slot].req == req) {
			if (r->tx[slot].posted == req->len)
				continue; /* written, waiting for the acks */
			if (tx_post(vi, e, slot) <= 0)
				break; /* the rest waits for room */
			n++;
			continue;
		}
		if (!r->cts_ok[slot] || cts->seq != seq)
			break; /* CTS come in order */
		if (cts->len != req->len ||
		    memcmp(&cts->sig, &req->sig, sizeof(req->sig))) {
			/* tell the receiver with our signature, then fail */
			if (r->probe.status == OHC_INPROGRESS && r->probe.len)
				break; /* the previous probe is still queued */
			memset(&r->probe, 0, sizeof(r->probe));
			r->probe.sig = req->sig;
			r->probe.len = req->len;
			r->probe.done = req->len;
			r->probe.status = OHC_INPROGRESS;
			r->probe.tp_priv = (void *)(uintptr_t)(RDV_FLAG | seq);
			ohc_list_add_tail(&e->sendq, &r->probe.link);
			r->cts_ok[slot] = 0;
			req->got_sig = cts->sig;
			ohc_list_del(&req->link);
			ohc_req_complete(req, OHC_ERR_DESYNC);
			n++;
			continue;
		}
		if (!cts->addr) { /* eager: through the slots, flagged */
			r->cts_ok[slot] = 0;
			ohc_list_del(&req->link);
			req->tp_priv = (void *)(uintptr_t)(RDV_FLAG | seq);
			ohc_list_add_tail(&e->sendq, &req->link);
			n++;
			continue;
		}
		if (r->tx[slot].req)
			break; /* the slot's previous send awaits its acks */
		if (tx_start(vi, e, req, cts) < 0)
			break;
		r->cts_ok[slot] = 0;
		n++;
		rc = tx_post(vi, e, slot);
		if (rc <= 0)
			break;
	}
	return n;
}

unsigned ohc_vx_rdv_progress(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	unsigned n = 0;

	if (!e->connected || e->broken)
		return 0;
	if (!ohc_list_empty(&e->rdv.rxq))
		n += rx_cts(vi, e);
	if (!e->broken && !ohc_list_empty(&e->rdv.txq))
		n += tx_match(vi, e);
	return n;
}

static void rx_release(struct ohc_verbs_iface *vi, struct vx_rdv_rx *x)
{
	ohc_vx_mr_put(vi, x->mr);
	memset(x, 0, sizeof(*x));
}

void ohc_vx_rdv_imm(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		    uint32_t imm)
{
	struct vx_rdv *r = &e->rdv;
	uint32_t slot = imm & 0xffff;
	struct vx_rdv_rx *x;
	struct ohc_req *req;

	if (slot >= OHC_VX_RDV_N) {
		ohc_vx_ep_fail(e, 0, "protocol error: bad rendezvous slot");
		return;
	}
	if (imm & OHC_VX_IMM_CTS) {
		memcpy(&r->cts[slot],
		       e->ctrl_in + (size_t)slot * OHC_VX_CTS_BYTES,
		       sizeof(r->cts[slot]));
		r->cts_ok[slot] = 1;
		return;
	}
	x = &r->rx[slot];
	req = x->req;
	if (!req || !x->mr) {
		ohc_vx_ep_fail(e, 0,
			       "protocol error: unexpected rendezvous "
			       "data");
		return;
	}
	if (++x->seen < ((imm >> 16) & 0x3fff))
		return;
	if (req->kind == OHC_RECV_REDUCE_TO)
		req->reduce(req->dst, req->src2, req->dst,
			    req->len / req->esize);
	req->done = req->len;
	req->path = x->zc ? OHC_PATH_ZC : OHC_PATH_DIRECT;
	ohc_list_del(&req->link);
	rx_release(vi, x);
	ohc_req_complete(req, OHC_OK);
}

void ohc_vx_rdv_acked(struct ohc_verbs_ep *e, uint32_t slot)
{
	struct ohc_verbs_iface *vi =
		ohc_derived_of(e->super.iface, struct ohc_verbs_iface);
	struct vx_rdv_tx *t;
	struct ohc_req *req;

	if (slot >= OHC_VX_RDV_N)
		return;
	t = &e->rdv.tx[slot];
	req = t->req;
	if (!req || --t->left)
		return;
	req->done = req->len;
	ohc_list_del(&req->link);
	ohc_vx_mr_put(vi, t->mr);
	memset(t, 0, sizeof(*t));
	ohc_req_complete(req, OHC_OK);
}

struct ohc_req *ohc_vx_rdv_route(struct ohc_verbs_ep *e, uint64_t flag)
{
	uint32_t seq = (uint32_t)flag;
	struct vx_rdv_rx *x = &e->rdv.rx[seq % OHC_VX_RDV_N];

	if (!(flag & RDV_FLAG) || !x->req || req_seq(x->req) != seq)
		return NULL;
	return x->req;
}

void ohc_vx_rdv_rx_done(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			struct ohc_req *req)
{
	struct vx_rdv_rx *x = &e->rdv.rx[req_seq(req) % OHC_VX_RDV_N];

	if (x->req == req)
		rx_release(vi, x);
}

void ohc_vx_rdv_fail(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		     ohc_status_t status)
{
	struct vx_rdv *r = &e->rdv;

	for (unsigned i = 0; i < OHC_VX_RDV_N; i++) {
		ohc_vx_mr_put(vi, r->tx[i].mr);
		memset(&r->tx[i], 0, sizeof(r->tx[i]));
		rx_release(vi, &r->rx[i]);
		r->cts_ok[i] = 0;
	}
	if (!r->txq.next) /* never initialized */
		return;
	while (!ohc_list_empty(&r->txq)) {
		struct ohc_req *req =
			ohc_container_of(r->txq.next, struct ohc_req, link);

		ohc_list_del(&req->link);
		ohc_req_complete(req, status);
	}
	while (!ohc_list_empty(&r->rxq)) {
		struct ohc_req *req =
			ohc_container_of(r->rxq.next, struct ohc_req, link);

		ohc_list_del(&req->link);
		ohc_req_complete(req, status);
	}
}
