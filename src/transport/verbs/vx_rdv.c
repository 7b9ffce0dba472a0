/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's rendezvous: large messages written straight from
 * the sender's buffer into the receiver's. Protocol in vx_rdv.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "transport/verbs/verbs.h"
#include "util/compiler.h"
#include "util/log.h"

#define RDV_FLAG (1ull << 63) /* in a header's rdv field */
#define RDV_STRIPE_MIN (32u * 1024u)
#define RDV_BATCH 64 /* WRs per ibv_post_send of a stripe in pieces */

static void tx_ended(struct vx_rdv *r, uint32_t seq, uint8_t how)
{
	r->last_seq[seq % OHC_VX_RDV_N] = seq;
	r->last_how[seq % OHC_VX_RDV_N] = how;
}

int ohc_vx_rdv_large(const struct ohc_verbs_iface *vi, size_t len)
{
	return vi->rndv_bytes && len >= vi->rndv_bytes;
}

static int room(const struct ohc_verbs_iface *vi, const struct ohc_verbs_ep *e,
		uint32_t qpi)
{
	return ohc_vx_sq_room(vi, &e->qps[qpi], 2);
}

static void post_failed(struct ohc_verbs_ep *e, uint32_t qpi, int rc)
{
	ohc_vx_post_failed(e, qpi, "ibv_post_send (rendezvous)", rc);
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

/* ---- landing buffers ------------------------------------------------ */

#define LAND_BYTES ((size_t)OHC_VX_LAND_CHUNK * OHC_VX_LAND_CHUNKS)

/* A free landing buffer, allocated and registered at first need; NULL
 * if all are taken or one cannot be made (the receive then goes eager). */
static struct vx_land *land_take(struct ohc_verbs_iface *vi)
{
	for (unsigned i = 0; i < OHC_VX_LAND_MAX; i++) {
		struct vx_land *l = &vi->land[i];
		void *p;

		if (l->busy)
			continue;
		if (!l->buf) {
			p = mmap(NULL, LAND_BYTES, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				return NULL;
			l->mr = ohc_vx_reg_mr(vi->pd, p, LAND_BYTES,
					      IBV_ACCESS_LOCAL_WRITE |
						      IBV_ACCESS_REMOTE_WRITE);
			if (!l->mr) {
				OHC_WARN(OHC_SS_VERBS,
					 "rank %u: cannot register a landing "
					 "buffer: %s; reductions go through "
					 "the slots",
					 vi->super.rank, strerror(errno));
				munmap(p, LAND_BYTES);
				return NULL;
			}
			l->buf = p;
		}
		l->busy = 1;
		return l;
	}
	return NULL;
}

void ohc_vx_land_fini(struct ohc_verbs_iface *vi)
{
	for (unsigned i = 0; i < OHC_VX_LAND_MAX; i++) {
		struct vx_land *l = &vi->land[i];

		if (l->mr)
			ohc_vx_dereg_mr(l->mr);
		if (l->buf)
			munmap(l->buf, LAND_BYTES);
		memset(l, 0, sizeof(*l));
	}
}

/* Write the CTS of the next receive(s) that may have one. */
/* Write the CTS of table entry slot (in ctrl_out) into the sender's
 * control array; -1 if the post failed (the ep is failed). */
static int cts_post(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		    uint32_t slot)
{
	char *cts = e->ctrl_out + (size_t)slot * OHC_VX_CTS_BYTES;
	struct ibv_send_wr wr;
	struct ibv_sge sg;
	int rc;

	memset(&wr, 0, sizeof(wr));
	sg.addr = (uintptr_t)cts;
	sg.length = sizeof(struct vx_rdv_cts);
	sg.lkey = e->stage_mr->lkey;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htonl(OHC_VX_IMM_RDV | OHC_VX_IMM_CTS | slot);
	wr.wr.rdma.remote_addr =
		e->rem_ring + e->ring_len + (uint64_t)slot * OHC_VX_CTS_BYTES;
	wr.wr.rdma.rkey = e->rem_rkey;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	if (sizeof(struct vx_rdv_cts) <= vi->max_inline)
		wr.send_flags = IBV_SEND_INLINE;
	rc = ohc_vx_post_signaled(e, 0, &wr, OHC_VX_WR_SEND, 0);
	if (rc)
		post_failed(e, 0, rc);
	return rc ? -1 : 0;
}

/* After a replay: the CTS the sender never saw, again, in number order. */
static unsigned rx_rects(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct vx_rdv *r = &e->rdv;
	unsigned n = 0;
	struct ohc_list *p;

	ohc_list_for_each(p, &r->rxq)
	{
		struct ohc_req *req = ohc_container_of(p, struct ohc_req, link);
		uint32_t slot = ohc_vx_rdv_seq(req) % OHC_VX_RDV_N;
		struct vx_rdv_rx *x = &r->rx[slot];

		if (x->req != req || !x->rects)
			continue;
		if (!room(vi, e, 0) || cts_post(vi, e, slot))
			break;
		x->rects = 0;
		n++;
	}
	return n;
}

static unsigned rx_cts(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct vx_rdv *r = &e->rdv;
	unsigned n = 0;
	struct ohc_list *p;

	ohc_list_for_each(p, &r->rxq)
	{
		struct ohc_req *req = ohc_container_of(p, struct ohc_req, link);
		uint32_t seq = ohc_vx_rdv_seq(req), slot = seq % OHC_VX_RDV_N;
		struct vx_rdv_rx *x = &r->rx[slot];
		struct vx_rdv_cts *cts;
		int zc = 0;

		if ((int32_t)(seq - r->rx_cts) < 0)
			continue; /* its CTS went */
		if (seq != r->rx_cts || x->req || !room(vi, e, 0))
			break;
		memset(x, 0, sizeof(*x));
		if (lands_direct(req))
			x->mr = ohc_vx_mr_get(vi, req->dst, req->len, 1, &zc);
		else if (req->esize)
			x->land = land_take(vi);
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
		} else if (x->land) {
			cts->addr = (uintptr_t)x->land->buf;
			cts->rkey = x->land->mr->rkey;
			cts->land_chunk = OHC_VX_LAND_CHUNK;
			cts->land_n = OHC_VX_LAND_CHUNKS;
		}
		if (cts_post(vi, e, slot))
			return n;
		r->rx_cts++;
		n++;
	}
	return n;
}

/* How a direct rendezvous of len bytes is striped over nqps QPs; both
 * sides compute it (the receiver checks the count the sender announces). */
static uint32_t stripes_of(size_t len, uint32_t nqps, size_t *chunk_p)
{
	uint32_t ns = nqps;
	size_t chunk;

	if (len / RDV_STRIPE_MIN < ns)
		ns = (uint32_t)OHC_MAX(len / RDV_STRIPE_MIN, 1);
	chunk = ((len + ns - 1) / ns + 63) & ~(size_t)63;
	if (chunk_p)
		*chunk_p = chunk;
	return (uint32_t)((len + chunk - 1) / chunk);
}

/* Take up the message of a direct CTS: register the source, plan the
 * stripes; -1 if that failed (the ep is failed). */
static int tx_start(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		    struct ohc_req *req, const struct vx_rdv_cts *cts)
{
	struct vx_rdv_tx *t = &e->rdv.tx[ohc_vx_rdv_seq(req) % OHC_VX_RDV_N];
	size_t len = req->len;
	int zc;

	memset(t, 0, sizeof(*t));
	t->ns = stripes_of(len, e->nqps, &t->chunk);
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
		enum ohc_vx_wr_kind kind;
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
			wrs[n].wr_id = ohc_vx_wr_id(e->super.peer, i,
						    OHC_VX_WR_SEND, 0);
			wrs[n].next = &wrs[n + 1];
			off += piece;
			n++;
		}
		wrs[n - 1].next = NULL;
		wrs[n - 1].send_flags = IBV_SEND_SIGNALED;
		kind = off == end ? OHC_VX_WR_RDV : OHC_VX_WR_SEND;
		if (kind == OHC_VX_WR_RDV) { /* the stripe's end */
			wrs[n - 1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wrs[n - 1].imm_data =
				htonl(OHC_VX_IMM_RDV | t->ns << 16 | slot);
		}
		wrs[n - 1].wr_id =
			ohc_vx_wr_id(e->super.peer, i, kind,
				     (kind == OHC_VX_WR_RDV ? slot << 12 : 0) |
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

/* Landing: grant the senders the chunks their receivers freed. */
static unsigned rx_grants(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct vx_rdv *r = &e->rdv;
	unsigned n = 0;

	for (uint32_t slot = 0; slot < OHC_VX_RDV_N && r->grants_due; slot++) {
		struct vx_rdv_rx *x = &r->rx[slot];

		while (x->grants && room(vi, e, 0)) {
			struct ibv_send_wr wr;
			int rc;

			memset(&wr, 0, sizeof(wr));
			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.imm_data = htonl(OHC_VX_IMM_RDV | OHC_VX_IMM_CTS |
					    OHC_VX_IMM_GRANT | slot);
			wr.wr.rdma.remote_addr =
				e->rem_ring + e->ring_len +
				(uint64_t)slot * OHC_VX_CTS_BYTES;
			wr.wr.rdma.rkey = e->rem_rkey;
			rc = ohc_vx_post_signaled(e, 0, &wr, OHC_VX_WR_SEND, 0);
			if (rc) {
				post_failed(e, 0, rc);
				return n;
			}
			x->grants--;
			r->grants_due--;
			n++;
		}
		if (x->grants)
			break; /* no room: the next progress goes on */
	}
	return n;
}

/*
 * Landing: write the chunks the receiver's ring has room for, from the
 * send buffer itself, each in pieces of at most rdv_wr_bytes or a
 * quarter of the send queue's worth, whichever is larger (plain RDMA
 * WRITEs, the last one WRITE_WITH_IMM); returns the chunks written.
 */
static unsigned tx_land(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			struct ohc_req *req)
{
	uint32_t slot = ohc_vx_rdv_seq(req) % OHC_VX_RDV_N;
	struct vx_rdv_tx *t = &e->rdv.tx[slot];
	struct ohc_vx_qp *q = &e->qps[t->land_qpi];
	/*
	 * A chunk's pieces are posted together, so they must fit the send
	 * queue: at most a quarter of it, in larger pieces than
	 * rdv_wr_bytes if need be. (OPENHCCL_RDMA_WRITE_KB=1 with 4 slots
	 * of 4 KiB: 256 pieces a chunk, a queue of 101; the chunk waited
	 * for room it could never have.)
	 */
	size_t quarter = vi->sq_depth / 4;
	size_t wr_max =
		OHC_MAX((size_t)vi->rdv_wr_bytes,
			((size_t)t->land_chunk + quarter - 1) / quarter);
	unsigned n = 0;

	while (t->written < req->len && t->sent - t->freed < t->land_n) {
		size_t clen =
			OHC_MIN((size_t)t->land_chunk, req->len - t->written);
		size_t pieces = (clen + wr_max - 1) / wr_max;
		uint64_t base = t->raddr +
				(t->sent % t->land_n) * (uint64_t)t->land_chunk;

		if (q->sq_inflight + q->nchain + pieces + 1 > vi->sq_depth)
			break; /* the send queue drains first */
		for (size_t off = 0; off < clen;) {
			size_t piece = OHC_MIN(clen - off, wr_max);
			int last = off + piece == clen, rc;
			struct ibv_send_wr wr;
			struct ibv_sge sg;

			sg.addr = (uintptr_t)req->sbuf + t->written + off;
			sg.length = (uint32_t)piece;
			sg.lkey = ohc_vx_mr_lkey(t->mr);
			memset(&wr, 0, sizeof(wr));
			wr.opcode = last ? IBV_WR_RDMA_WRITE_WITH_IMM
					 : IBV_WR_RDMA_WRITE;
			if (last)
				wr.imm_data =
					htonl(OHC_VX_IMM_RDV | 1u << 16 | slot);
			wr.wr.rdma.remote_addr = base + off;
			wr.wr.rdma.rkey = t->rkey;
			wr.sg_list = &sg;
			wr.num_sge = 1;
			rc = ohc_vx_post_signaled(
				e, t->land_qpi, &wr,
				last ? OHC_VX_WR_RDV : OHC_VX_WR_SEND, slot);
			if (rc) {
				post_failed(e, t->land_qpi, rc);
				return n;
			}
			off += piece;
		}
		t->left++;
		t->sent++;
		t->written += clen;
		n++;
	}
	return n;
}

enum vx_cts_kind ohc_vx_cts_kind(const struct vx_rdv_cts *cts, int cts_ok,
				 const struct ohc_req *req)
{
	if (!cts_ok || cts->seq != ohc_vx_rdv_seq(req))
		return VX_CTS_NOT_YET;
	if (cts->len != req->len ||
	    memcmp(&cts->sig, &req->sig, sizeof(req->sig)))
		return VX_CTS_DESYNC;
	if (cts->land_chunk && req->smem && cts->land_n) {
		/* the peer's landing geometry within what any receiver
		 * offers */
		if (cts->land_n > OHC_VX_LAND_CHUNKS ||
		    cts->land_chunk > OHC_VX_LAND_CHUNK || cts->land_chunk % 64)
			return VX_CTS_BAD;
		return VX_CTS_LANDING;
	}
	if (!cts->addr || cts->land_chunk)
		return VX_CTS_EAGER;
	return VX_CTS_DIRECT;
}

/*
 * A landing CTS (checked: VX_CTS_LANDING) for a send from exported
 * memory: take the send buffer's registration and start writing. 0:
 * decline (no registration), the message goes eager; 1: started.
 */
static int tx_land_start(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			 struct ohc_req *req, const struct vx_rdv_cts *cts)
{
	uint32_t seq = ohc_vx_rdv_seq(req), slot = seq % OHC_VX_RDV_N;
	struct vx_rdv_tx *t = &e->rdv.tx[slot];
	int zc;

	memset(t, 0, sizeof(*t));
	t->mr = ohc_vx_mr_get(vi, req->sbuf, req->len, 0, &zc);
	if (!t->mr)
		return 0;
	t->req = req;
	t->land = 1;
	t->land_qpi = seq % e->nqps;
	t->raddr = cts->addr;
	t->rkey = cts->rkey;
	t->land_chunk = cts->land_chunk;
	t->land_n = cts->land_n;
	tx_land(vi, e, req);
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
		uint32_t seq = ohc_vx_rdv_seq(req), slot = seq % OHC_VX_RDV_N;
		struct vx_rdv_cts *cts = &r->cts[slot];
		enum vx_cts_kind kind;
		int rc;

		p = p->next;
		if (r->tx[slot].req == req) {
			if (r->tx[slot].land) { /* what the grants allow */
				n += tx_land(vi, e, req);
				continue;
			}
			if (r->tx[slot].posted == req->len)
				continue; /* written, waiting for the acks */
			if (tx_post(vi, e, slot) <= 0)
				break; /* the rest waits for room */
			n++;
			continue;
		}
		kind = ohc_vx_cts_kind(cts, r->cts_ok[slot], req);
		if (kind == VX_CTS_NOT_YET)
			break; /* CTS come in order */
		if (kind == VX_CTS_DESYNC) {
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
			tx_ended(r, seq, VX_TX_EAGER);
			req->got_sig = cts->sig;
			ohc_list_del(&req->link);
			ohc_req_complete(req, OHC_ERR_DESYNC);
			n++;
			continue;
		}
		if (cts->land_chunk && req->smem && r->tx[slot].req)
			break; /* the slot's previous send: acks */
		if (kind == VX_CTS_BAD) {
			ohc_vx_ep_fail(e, 0,
				       "protocol error: landing geometry");
			break;
		}
		if (kind == VX_CTS_LANDING) {
			if (tx_land_start(vi, e, req, cts)) {
				r->cts_ok[slot] = 0;
				n++;
				continue;
			}
			kind = VX_CTS_EAGER; /* declined */
		}
		if (kind == VX_CTS_EAGER) {
			/* through the slots, flagged */
			r->cts_ok[slot] = 0;
			tx_ended(r, seq, VX_TX_EAGER);
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

	if (!e->connected || e->broken || e->rp.state)
		return 0; /* a replay: nothing is written until it is done */
	if (!ohc_list_empty(&e->rdv.rxq))
		n += rx_rects(vi, e) + rx_cts(vi, e);
	if (!e->broken && e->rdv.grants_due)
		n += rx_grants(vi, e);
	if (!e->broken && !ohc_list_empty(&e->rdv.txq))
		n += tx_match(vi, e);
	return n;
}

static void rx_release(struct ohc_verbs_iface *vi, struct vx_rdv *r,
		       struct vx_rdv_rx *x)
{
	ohc_vx_mr_put(vi, x->mr);
	if (x->land)
		x->land->busy = 0;
	r->grants_due -= x->grants;
	memset(x, 0, sizeof(*x));
}

/*
 * Landing: the next chunk of x's message is in the ring: reduce it into
 * the destination, grant its room back if the sender still needs it,
 * complete the receive with the last chunk.
 */
void ohc_vx_rdv_rx_land_chunk(struct ohc_verbs_iface *vi,
			      struct ohc_verbs_ep *e, struct vx_rdv_rx *x)
{
	struct ohc_req *req = x->req;
	uint64_t off = (uint64_t)x->seen * OHC_VX_LAND_CHUNK;
	uint64_t chunks =
		(req->len + OHC_VX_LAND_CHUNK - 1) / OHC_VX_LAND_CHUNK;
	size_t clen;

	/* chunks or slot data (a sender that declined the ring), never
	 * both: chunk offsets do not count what came through the slots */
	if (off >= req->len || req->done != off) {
		ohc_vx_ep_fail(e, 0, "protocol error: landing overrun");
		return;
	}
	clen = OHC_MIN((size_t)OHC_VX_LAND_CHUNK, req->len - off);
	ohc_req_deliver(req, off,
			x->land->buf + (size_t)(x->seen % OHC_VX_LAND_CHUNKS) *
					       OHC_VX_LAND_CHUNK,
			clen);
	x->seen++;
	if (off + clen < req->len) {
		if (x->seen + OHC_VX_LAND_CHUNKS <= chunks) {
			x->grants++;
			e->rdv.grants_due++;
		}
		return;
	}
	req->done = req->len;
	req->path = OHC_PATH_LANDING;
	ohc_list_del(&req->link);
	rx_release(vi, &e->rdv, x);
	ohc_req_complete(req, OHC_OK);
}

/* Direct: every stripe landed in the destination. */
void ohc_vx_rdv_rx_direct_done(struct ohc_verbs_iface *vi, struct vx_rdv *r,
			       struct vx_rdv_rx *x)
{
	struct ohc_req *req = x->req;

	if (req->kind == OHC_RECV_REDUCE_TO)
		req->reduce(req->dst, req->src2, req->dst,
			    req->len / req->esize);
	req->done = req->len;
	req->path = x->zc ? OHC_PATH_ZC : OHC_PATH_DIRECT;
	ohc_list_del(&req->link);
	rx_release(vi, r, x);
	ohc_req_complete(req, OHC_OK);
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
	if ((imm & OHC_VX_IMM_CTS) && (imm & OHC_VX_IMM_GRANT)) {
		struct vx_rdv_tx *t = &r->tx[slot];

		if (!t->req || !t->land || t->freed == t->sent) {
			ohc_vx_ep_fail(e, 0,
				       "protocol error: unexpected grant");
			return;
		}
		t->freed++;
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
	if (req && x->land) {
		ohc_vx_rdv_rx_land_chunk(vi, e, x);
		return;
	}
	if (!req || !x->mr) {
		ohc_vx_ep_fail(e, 0,
			       "protocol error: unexpected rendezvous "
			       "data");
		return;
	}
	/* the sender's stripe count must be the one this length gives:
	 * fewer would complete the receive while writes still come */
	if (((imm >> 16) & 0x3fff) != stripes_of(req->len, e->nqps, NULL)) {
		ohc_vx_ep_fail(e, 0, "protocol error: rendezvous stripes");
		return;
	}
	if (++x->seen < ((imm >> 16) & 0x3fff))
		return;
	ohc_vx_rdv_rx_direct_done(vi, r, x);
}

/* Every write of the send in t was acknowledged. */
void ohc_vx_rdv_tx_done(struct ohc_verbs_iface *vi, struct vx_rdv *r,
			struct vx_rdv_tx *t)
{
	struct ohc_req *req = t->req;

	tx_ended(r, ohc_vx_rdv_seq(req), VX_TX_DONE);
	req->done = req->len;
	ohc_list_del(&req->link);
	ohc_vx_mr_put(vi, t->mr);
	memset(t, 0, sizeof(*t));
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
	if (!req || --t->left || (t->land && t->written < req->len))
		return;
	ohc_vx_rdv_tx_done(vi, &e->rdv, t);
}

struct ohc_req *ohc_vx_rdv_route(struct ohc_verbs_ep *e, uint64_t flag)
{
	uint32_t seq = (uint32_t)flag;
	struct vx_rdv_rx *x = &e->rdv.rx[seq % OHC_VX_RDV_N];

	if (!(flag & RDV_FLAG) || !x->req || ohc_vx_rdv_seq(x->req) != seq)
		return NULL;
	return x->req;
}

int ohc_vx_rdv_takes_slots(const struct ohc_verbs_ep *e,
			   const struct ohc_req *req)
{
	const struct vx_rdv_rx *x =
		&e->rdv.rx[ohc_vx_rdv_seq(req) % OHC_VX_RDV_N];

	return x->req == req && !x->mr;
}

void ohc_vx_rdv_rx_done(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			struct ohc_req *req)
{
	struct vx_rdv_rx *x = &e->rdv.rx[ohc_vx_rdv_seq(req) % OHC_VX_RDV_N];

	if (x->req == req)
		rx_release(vi, &e->rdv, x);
}

void ohc_vx_rdv_fail(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		     ohc_status_t status)
{
	struct vx_rdv *r = &e->rdv;

	for (unsigned i = 0; i < OHC_VX_RDV_N; i++) {
		ohc_vx_mr_put(vi, r->tx[i].mr);
		memset(&r->tx[i], 0, sizeof(r->tx[i]));
		rx_release(vi, r, &r->rx[i]);
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
