/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's posting: chains of send WRs (one ibv_post_send a
 * push), single signaled WRs, receive WRs; and the slot path's send
 * protocols, one function each: a fragment is pulled, inline, gathered
 * from the send buffer or copied into its staging slot (verbs.h). Also
 * the gathering sends' records, replay's resend and the credit messages.
 * All under the iface's lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "transport/verbs/verbs.h"
#include "util/compiler.h"
#include "util/log.h"

/* ---- WRs ----------------------------------------------------------- */

void ohc_vx_chain_add(struct ohc_vx_qp *q, struct ibv_send_wr *wr)
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
int ohc_vx_chain_post(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      uint32_t qpi, int signal)
{
	struct ohc_vx_qp *q = &e->qps[qpi];
	int rc;

	if (!q->head)
		return 0;
	/* unsignaled WRs complete too when flushed by an error: name them */
	for (struct ibv_send_wr *w = q->head; w; w = w->next)
		w->wr_id = ohc_vx_wr_id(e->super.peer, qpi, OHC_VX_WR_SEND, 0);
	if (signal || q->chain_gx || q->unsig + q->nchain >= vi->sq_depth / 4) {
		q->tail->send_flags |= IBV_SEND_SIGNALED;
		q->tail->wr_id =
			ohc_vx_wr_id(e->super.peer, qpi, OHC_VX_WR_SEND,
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

int ohc_vx_post_signaled(struct ohc_verbs_ep *e, uint32_t qpi,
			 struct ibv_send_wr *wr, enum ohc_vx_wr_kind kind,
			 uint32_t slot)
{
	struct ohc_vx_qp *q = &e->qps[qpi];
	uint32_t covered = q->unsig + 1;
	int rc;

	wr->next = NULL;
	wr->send_flags |= IBV_SEND_SIGNALED;
	wr->wr_id = ohc_vx_wr_id(e->super.peer, qpi, kind,
				 kind == OHC_VX_WR_RDV ? (slot << 12 | covered)
						       : covered);
	rc = ohc_vx_post_send(q->qp, wr);
	if (!rc) {
		q->sq_inflight++;
		q->unsig = 0;
	}
	return rc;
}

int ohc_vx_recvs_post(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
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
		w->wr_id = ohc_vx_wr_id(e->super.peer, qpi, OHC_VX_WR_RECV,
					e->rp.epoch);
		w->next = i + 1 < n ? &e->rwrs[i + 1] : NULL;
	}
	rc = ohc_vx_post_recv(q->qp, e->rwrs);
	if (!rc)
		q->rq_posted += n;
	return rc;
}

void ohc_vx_post_failed(struct ohc_verbs_ep *e, uint32_t qpi, const char *call,
			int rc)
{
	char why[160];

	snprintf(why, sizeof(why), "%s: %s", call, strerror(rc));
	ohc_vx_ep_fail(e, qpi, why);
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
void ohc_vx_gx_reap(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
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
void ohc_vx_gx_fail(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
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

/* ---- one fragment --------------------------------------------------- */

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

/*
 * Fragment f (tx_slots numbering): its staging slot (header, then the
 * payload or a pull descriptor), the peer's slot it is written to, the
 * QP it goes on (and goes on again in a replay).
 */
struct vx_frag {
	uint32_t idx, qpi;
	struct ohc_vx_qp *q;
	char *slot;
	uint64_t raddr;
};

static struct vx_frag frag_at(const struct ohc_verbs_iface *vi,
			      struct ohc_verbs_ep *e, uint64_t f)
{
	struct vx_frag fr;

	fr.idx = (uint32_t)(f % vi->slots);
	fr.qpi = (uint32_t)(f % e->nqps);
	fr.q = &e->qps[fr.qpi];
	fr.slot = e->stage + (size_t)fr.idx * vi->slot_bytes;
	fr.raddr = e->rem_ring + (uint64_t)fr.idx * vi->slot_bytes;
	return fr;
}

/* Room on its QP for a whole slot's WRs and one more. */
static int frag_room(const struct ohc_verbs_iface *vi, const struct vx_frag *fr)
{
	return ohc_vx_sq_room(vi, fr->q, vi->wr_per_slot + 1);
}

/*
 * Chain the WRs of one fragment on its QP: the 64-byte header (staging
 * slot) and frag payload bytes at pay (lkey plkey) go to the peer's slot
 * as one stream, in WRs of at most wr_bytes (OPENHCCL_RDMA_WRITE_KB),
 * plain RDMA WRITEs but the last, the WRITE_WITH_IMM naming the slot
 * (after them on the same QP). A payload copied behind its header is one
 * SGE, a gathered one a second SGE of the WR(s) it falls in.
 */
static void frag_chain(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       const struct vx_frag *fr, const char *pay,
		       uint32_t plkey, size_t frag, unsigned *nw, unsigned *ns)
{
	const char *hdr = fr->slot;
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
			   fr->raddr + off);
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
			wr->imm_data = htonl(fr->idx);
		ohc_vx_chain_add(fr->q, wr);
		off = end;
	}
}

/* Chain one WRITE_WITH_IMM of the first len bytes of the fragment's
 * staging slot (its header and an inline payload or a pull descriptor),
 * inline when it fits. */
static void stage_wr(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		     const struct vx_frag *fr, size_t len, unsigned *nw,
		     unsigned *ns)
{
	struct ibv_send_wr *wr;
	struct ibv_sge *sg;

	wr = vx_wr(e, nw, &sg, ns, 1, IBV_WR_RDMA_WRITE_WITH_IMM, fr->raddr);
	wr->imm_data = htonl(fr->idx);
	sg->addr = (uintptr_t)fr->slot;
	sg->length = (uint32_t)len;
	sg->lkey = e->stage_mr->lkey;
	if (sg->length <= vi->max_inline)
		wr->send_flags = IBV_SEND_INLINE;
	ohc_vx_chain_add(fr->q, wr);
}

/* The gathering send of record rec completes only once the WR just
 * chained on the fragment's QP did: the chain ends signaled. */
static void gx_mark(struct ohc_verbs_ep *e, const struct vx_frag *fr,
		    uint64_t rec)
{
	struct ohc_vx_qp *q = fr->q;

	q->chain_gx = 1;
	gx_rec(e, rec)->mark[fr->qpi] = q->sq_done + q->sq_inflight + q->nchain;
}

/* ---- the send protocols -------------------------------------------- */

/*
 * The next fragment of req: at most a slot's payload; a message of at
 * least pull_bytes (not a rendezvous's eager one) goes in halves (at most
 * a slot), every second one pulled (*pulled_p).
 */
static size_t frag_next(const struct ohc_verbs_iface *vi,
			const struct ohc_req *req, int *pulled_p)
{
	size_t payload = vi->slot_bytes - OHC_VX_HDR;
	size_t frag = OHC_MIN(req->len - req->done, payload);

	*pulled_p = 0;
	if (vi->pull_bytes && req->len >= vi->pull_bytes && !req->tp_priv) {
		size_t fs = OHC_MIN(((req->len + 1) / 2 + 63) & ~(size_t)63,
				    payload - OHC_VX_PULL_PAD);

		frag = OHC_MIN(frag, fs);
		*pulled_p = (int)((req->done / fs) & 1);
	}
	return frag;
}

/* Pulled: the payload staged behind a descriptor, only header and
 * descriptor written; the peer reads the payload. */
static void push_pulled(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			const struct vx_frag *fr, const struct ohc_req *req,
			size_t frag, unsigned *nw, unsigned *ns)
{
	struct vx_hdr *h = (struct vx_hdr *)fr->slot;
	struct vx_pull_desc *d = (struct vx_pull_desc *)(fr->slot + OHC_VX_HDR);
	char *data = fr->slot + OHC_VX_HDR + OHC_VX_PULL_PAD;

	memcpy(data, (const char *)req->sbuf + req->done, frag);
	d->addr = (uintptr_t)data;
	d->rkey = e->stage_mr->rkey;
	d->pad = 0;
	h->rdv = VX_PULL_FLAG;
	stage_wr(vi, e, fr, OHC_VX_HDR + sizeof(*d), nw, ns);
	vi->pull_tx++;
	e->pull_end = e->tx_slots + 1;
}

/* Inline: staged behind its header too (the send completes now, and a
 * replay may need the bytes again), one WR. */
static void push_inline(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			const struct vx_frag *fr, const struct ohc_req *req,
			size_t frag, unsigned *nw, unsigned *ns)
{
	memcpy(fr->slot + OHC_VX_HDR, (const char *)req->sbuf + req->done,
	       frag);
	stage_wr(vi, e, fr, OHC_VX_HDR + frag, nw, ns);
}

/* Gathered: the payload straight from the send buffer (registered by
 * gx_take), which replay finds again in tx_src. */
static void push_gathered(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			  const struct vx_frag *fr, const struct ohc_req *req,
			  size_t frag, unsigned *nw, unsigned *ns)
{
	struct vx_tx_src *src = &e->tx_src[fr->idx];

	src->pay = (const char *)req->sbuf + req->done;
	src->lkey = ohc_vx_mr_lkey(e->gx_mr);
	src->rec = e->gx_tail;
	frag_chain(vi, e, fr, src->pay, src->lkey, frag, nw, ns);
	gx_mark(e, fr, e->gx_tail);
}

/* Copied: the payload behind its header in the staging slot. */
static void push_copied(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			const struct vx_frag *fr, const struct ohc_req *req,
			size_t frag, unsigned *nw, unsigned *ns)
{
	memcpy(fr->slot + OHC_VX_HDR, (const char *)req->sbuf + req->done,
	       frag);
	frag_chain(vi, e, fr, fr->slot + OHC_VX_HDR, e->stage_mr->lkey, frag,
		   nw, ns);
}

/* Chain the next fragment of req, the head of sendq, by its protocol. */
static void push_frag(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      const struct vx_frag *fr, struct ohc_req *req,
		      unsigned *nw, unsigned *ns)
{
	struct vx_hdr *h = (struct vx_hdr *)fr->slot;
	int pulled;
	size_t frag = frag_next(vi, req, &pulled);

	e->tx_src[fr->idx].pay = NULL; /* in the staging slot */
	h->sig = req->sig;
	h->msg_len = req->len;
	h->off = req->done;
	h->frag_len = (uint32_t)frag;
	h->freed = rx_freed32(e);
	h->rdv = (uint64_t)(uintptr_t)req->tp_priv;
	if (pulled)
		push_pulled(vi, e, fr, req, frag, nw, ns);
	else if (OHC_VX_HDR + frag <= vi->max_inline)
		push_inline(vi, e, fr, req, frag, nw, ns);
	else if (gx_take(vi, e, req, frag))
		push_gathered(vi, e, fr, req, frag, nw, ns);
	else
		push_copied(vi, e, fr, req, frag, nw, ns);
	req->done += frag;
}

/* Chain req's next fragment into the ring's next slot (*fr) if its QP
 * has room; 0 if not (the send queue drains first). */
static int frag_push(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		     struct ohc_req *req, struct vx_frag *fr, unsigned *nw,
		     unsigned *ns)
{
	*fr = frag_at(vi, e, e->tx_slots);
	if (!frag_room(vi, fr))
		return 0;
	push_frag(vi, e, fr, req, nw, ns);
	e->tx_slots++;
	e->rx_reported = e->rx_next;
	return 1;
}

unsigned ohc_vx_ep_push(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct ohc_list done = OHC_LIST_INIT(done);
	unsigned n = 0, nw = 0, ns = 0;
	int rc = 0;
	uint32_t bad_q = 0;

	if (e->rp.state) /* replaying: the sends wait */
		return 0;
	while (!e->broken && !ohc_list_empty(&e->sendq) && credits(vi, e)) {
		struct ohc_req *req =
			ohc_container_of(e->sendq.next, struct ohc_req, link);
		struct vx_frag fr;

		if (!frag_push(vi, e, req, &fr, &nw, &ns))
			break;
		n++;
		if (req->done == req->len) {
			ohc_list_del(&req->link);
			if (!gx_posted(vi, e, req))
				ohc_list_add_tail(&done, &req->link);
		}
	}
	for (uint32_t i = 0; i < e->nqps; i++) {
		int r = ohc_vx_chain_post(vi, e, i, 0);

		if (r && !rc) {
			rc = r;
			bad_q = i;
		}
	}
	if (rc) {
		ohc_vx_queue_complete(&done, OHC_ERR_REMOTE);
		ohc_vx_post_failed(e, bad_q, "ibv_post_send", rc);
		return n;
	}
	ohc_vx_queue_complete(&done, OHC_OK);
	/*
	 * A gathering send whose last fragments were copied (below the
	 * threshold) and went out in a later push than its gathered ones
	 * (the credits ran out between them) may find every marked WR
	 * completed already: no completion is coming to reap it.
	 */
	if (!e->broken)
		ohc_vx_gx_reap(vi, e);
	return n;
}

/*
 * A message that goes inline in one slot, to a connected peer with no
 * send queued before it and a credit free (the usual small message):
 * written now, as ohc_vx_ep_push would write it, without passing through
 * the send queue, the other QPs' chains and the gathering sends' reaping
 * (about 200 instructions of a synchronous 8-byte HcclSend). 0 where it
 * does not apply: the queue takes it.
 */
static int send_inline_now(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			   struct ohc_req *req)
{
	unsigned nw = 0, ns = 0;
	struct vx_frag fr;
	int rc;

	if (OHC_VX_HDR + req->len > vi->max_inline || !e->connected ||
	    e->rp.state || !ohc_list_empty(&e->sendq) || !credits(vi, e) ||
	    (vi->pull_bytes && req->len >= vi->pull_bytes))
		return 0;
	if (!frag_push(vi, e, req, &fr, &nw, &ns))
		return 0;
	rc = ohc_vx_chain_post(vi, e, fr.qpi, 0);
	if (rc) {
		ohc_req_complete(req, OHC_ERR_REMOTE);
		ohc_vx_post_failed(e, fr.qpi, "ibv_post_send", rc);
		return 1;
	}
	ohc_req_complete(req, OHC_OK);
	return 1;
}

ohc_status_t ohc_vx_ep_send_locked(struct ohc_ep *ep, struct ohc_req *req)
{
	struct ohc_verbs_ep *e = ohc_vx_ep(ep);
	struct ohc_verbs_iface *vi = ohc_vx_iface(ep->iface);

	if (e->broken)
		return e->broken;
	req->status = OHC_INPROGRESS;
	req->done = 0;
	req->tp_priv = NULL;
	if (send_inline_now(vi, e, req))
		return OHC_OK;
	if (ohc_vx_rdv_large(vi, req->len))
		(void)ohc_vx_rdv_send(vi, e, req);
	else
		ohc_list_add_tail(&e->sendq, &req->link);
	/* unconnected: queued until connected, the first use connects it
	 * (vx_lazy.c; push and rendezvous progress wait for connected) */
	if (!e->connected)
		ohc_vx_lazy_start(vi, e);
	else
		ohc_vx_ep_push(vi, e);
	return OHC_OK;
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
	struct vx_frag fr = frag_at(vi, e, f);
	struct vx_hdr *h = (struct vx_hdr *)fr.slot;
	const struct vx_tx_src *src = &e->tx_src[fr.idx];
	unsigned nw = 0, ns = 0;
	int rc;

	if (!frag_room(vi, &fr))
		return 1;
	h->freed = rx_freed32(e);
	if (h->rdv == VX_PULL_FLAG) { /* header and descriptor only */
		stage_wr(vi, e, &fr, OHC_VX_HDR + sizeof(struct vx_pull_desc),
			 &nw, &ns);
	} else if (src->pay) {
		frag_chain(vi, e, &fr, src->pay, src->lkey, h->frag_len, &nw,
			   &ns);
		gx_mark(e, &fr, src->rec);
	} else {
		frag_chain(vi, e, &fr, fr.slot + OHC_VX_HDR, e->stage_mr->lkey,
			   h->frag_len, &nw, &ns);
	}
	rc = ohc_vx_chain_post(vi, e, fr.qpi, 0);
	if (rc) {
		ohc_vx_post_failed(e, fr.qpi, "ibv_post_send (replay)", rc);
		return -1;
	}
	return 0;
}

/* Tell the peer how many slots we freed, if it may be waiting for them. */
void ohc_vx_ep_credit(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		      int force)
{
	struct ohc_vx_qp *q = &e->qps[0];
	struct ibv_send_wr *wr = &e->wrs[vi->slots * vi->wr_per_slot];
	uint64_t owed = e->rx_next - e->rx_reported;
	int rc;

	if (e->broken || e->rp.state || e->closed_at || !owed ||
	    (!force && owed < vi->slots / 4))
		return;
	if (q->sq_inflight + 2 > vi->sq_depth)
		return; /* retried by the next progress */
	memset(wr, 0, sizeof(*wr));
	wr->opcode = IBV_WR_SEND_WITH_IMM;
	wr->imm_data = htonl(rx_freed32(e));
	ohc_vx_chain_add(q, wr);
	rc = ohc_vx_chain_post(vi, e, 0, 0);
	if (rc) {
		ohc_vx_post_failed(e, 0, "ibv_post_send", rc);
		return;
	}
	e->rx_reported = e->rx_next;
}
