/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's completions and progress: the CQ is drained and
 * each completion accounted to its ep and QP (wr_id: vx_proto.h);
 * iface_progress then refills, delivers, runs the rendezvous and pushes
 * per ep; iface_wait sleeps on the completion channel, the wake eventfd,
 * the async-event fd and the setup sockets.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "transport/verbs/verbs.h"
#include "util/compiler.h"

#define VX_POLL_BATCH 32

static void handle_wc(struct ohc_verbs_iface *vi, const struct ibv_wc *wc)
{
	uint32_t peer = ohc_vx_wr_peer(wc->wr_id);
	uint32_t qpi = ohc_vx_wr_qpi(wc->wr_id);
	unsigned kind = ohc_vx_wr_kind(wc->wr_id);
	uint32_t covered = ohc_vx_wr_low(wc->wr_id);
	struct ohc_verbs_ep *e =
		peer < vi->super.nranks ? vi->by_peer[peer] : NULL;
	struct ohc_vx_qp *q;

	if (!e || qpi >= e->nqps || kind < OHC_VX_WR_SEND ||
	    kind >= OHC_VX_WR_KINDS)
		return; /* a finalized ep's leftovers */
	q = &e->qps[qpi];
	if (kind == OHC_VX_WR_MARK_SQ) {
		if (e->rp.state == VX_RP_DRAIN && e->rp.marks)
			e->rp.marks--; /* this queue flushed to its marker */
		return;
	}
	if (kind == OHC_VX_WR_RECV && covered != (e->rp.epoch & 0xfffff))
		return; /* a receive WR of before a replay */
	if (kind == OHC_VX_WR_RDV)
		covered &= 0xfff;
	if (wc->status != IBV_WC_SUCCESS && e->rp.state) {
		/* flushed by the replay's drain: the drain accounts for the
		 * queues; it is neither done nor a new failure */
		return;
	}
	if (kind != OHC_VX_WR_RECV) {
		covered = OHC_MIN(covered, q->sq_inflight);
		q->sq_inflight -= covered;
		q->sq_done += covered;
	} else if (q->rq_posted) {
		q->rq_posted--;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		char why[160];
		int transient;

		snprintf(why, sizeof(why),
			 "%s (%s completion, vendor error "
			 "0x%x)",
			 ohc_vx_wc_status_str(wc->status),
			 kind != OHC_VX_WR_RECV ? "send" : "receive",
			 wc->vendor_err);
		/* retries ran out, or rxe failed a post on a link that is
		 * down or going down (its port event may come after, and
		 * reading it may have started our replay or failed us): the
		 * link may come back */
		transient = wc->status == IBV_WC_RETRY_EXC_ERR ||
			    wc->status == IBV_WC_RNR_RETRY_EXC_ERR;
		if (wc->status == IBV_WC_LOC_QP_OP_ERR) {
			transient = ohc_vx_link_lost(vi);
			if (e->rp.state || e->broken)
				return;
		}
		if (transient && ohc_vx_replay_start(vi, e, why))
			return;
		ohc_vx_ep_fail_qpn(e, wc->qp_num, why);
		return;
	}
	if (kind == OHC_VX_WR_RDV && !e->broken)
		ohc_vx_rdv_acked(e, ((uint32_t)wc->wr_id >> 12) & 0xff);
	if (kind == OHC_VX_WR_PULL && e->rd)
		e->rd_done = 1; /* ep_deliver takes it */
	if (kind != OHC_VX_WR_RECV) {
		if (!e->broken && !e->rp.state)
			ohc_vx_gx_reap(vi, e);
		return;
	}
	if (e->broken)
		return;
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		ohc_vx_imm_landed(vi, e, ntohl(wc->imm_data), wc->qp_num);
	} else if (wc->opcode == IBV_WC_RECV) {
		(void)ohc_vx_tx_freed_update(e, ntohl(wc->imm_data),
					     wc->qp_num);
	}
}

unsigned ohc_vx_cq_poll(struct ohc_verbs_iface *vi)
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
		rc = ohc_vx_recvs_post(vi, e, i);
		if (rc)
			ohc_vx_post_failed(e, i, "ibv_post_recv", rc);
	}
}

/*
 * Nothing for deliver, the rendezvous or push to do: no fragment landed
 * at the ring's next slot, fewer freed slots owed than a credit message
 * waits for, no send queued or gathering, no rendezvous under way. The
 * usual state of a peer between messages; the three calls it saves cost
 * a spinning rank about 250 instructions a poll (callgrind, 2 ranks).
 */
static bool ep_idle(const struct ohc_verbs_iface *vi,
		    const struct ohc_verbs_ep *e)
{
	return !e->arrived[e->rx_next % vi->slots] &&
	       e->rx_next - e->rx_reported < vi->slots / 4 &&
	       ohc_list_empty(&e->sendq) && e->gx_head == e->gx_tail &&
	       ohc_list_empty(&e->rdv.rxq) && !e->rdv.grants_due &&
	       ohc_list_empty(&e->rdv.txq);
}

unsigned ohc_vx_iface_progress_locked(struct ohc_iface *iface)
{
	struct ohc_verbs_iface *vi = ohc_vx_iface(iface);
	unsigned n = ohc_vx_cq_poll(vi);

	if (ohc_vx_lazy_due(vi))
		n += ohc_vx_lazy_progress(vi);

	for (uint32_t r = 0; r < iface->nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];

		if (!e || !e->connected || e->broken)
			continue;
		if (e->closed_at) { /* the peer ended: left out of the polls */
			ohc_vx_ep_sock_check(e);
			if (e->broken)
				continue;
		}
		if (e->rp.state) {
			ohc_vx_ep_sock_check(e);
			ohc_vx_replay_progress(vi, e);
			if (e->rp.state)
				continue; /* the data path waits */
		}
		ep_refill(vi, e);
		if (ep_idle(vi, e))
			continue;
		n += ohc_vx_ep_deliver(vi, e);
		n += ohc_vx_rdv_progress(vi, e);
		n += ohc_vx_ep_push(vi, e);
	}
	return n;
}

/* ---- waiting ------------------------------------------------------- */

/*
 * Sleep until a completion, a wake, an async event or a setup socket
 * stirs, or timeout_ms: arm, poll, disarm (the waiter's wait set polls
 * these fds with other transports'). The lock is held to prepare and to
 * look at what woke us, not while asleep.
 */
unsigned ohc_vx_iface_wait_arm(struct ohc_iface *iface, struct pollfd **fds_p)
{
	struct ohc_verbs_iface *vi = ohc_vx_iface(iface);
	struct pollfd *p = vi->wait_fds;
	nfds_t np = 3;

	*fds_p = p;
	vi->wait_n = 0;
	if (!vi->cq) { /* not connected yet: only wakes */
		p[0].fd = vi->wake_fd;
		p[0].events = POLLIN;
		p[0].revents = 0;
		vi->wait_n = 1;
		return 1;
	}
	VX_LOCK(iface);
	/* about to sleep: hand back every freed slot, so no sender waits on
	 * credits we sit on (the quarter-ring batching is for busy times) */
	for (uint32_t r = 0; r < iface->nranks; r++)
		if (vi->by_peer[r] && vi->by_peer[r]->connected)
			ohc_vx_ep_credit(vi, vi->by_peer[r], 1);
	if (!vi->armed) {
		/* a failed arming: keep polling; completions that came
		 * before the arming give no event */
		if (ohc_vx_req_notify_cq(vi->cq)) {
			VX_UNLOCK(iface);
			return 0;
		}
		vi->armed = 1;
		if (ohc_vx_cq_poll(vi)) {
			VX_UNLOCK(iface);
			return 0;
		}
	}
	p[0].fd = vi->ch->fd;
	p[1].fd = vi->wake_fd;
	p[2].fd = vi->ctx->async_fd;
	/* and the setup sockets: a peer's abort, its end or a replay
	 * handshake wakes us at once */
	for (uint32_t r = 0; r < iface->nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];

		if (e && e->connected && !e->broken && e->sock >= 0 &&
		    !e->peer_abort && !e->closed_at)
			p[np++].fd = e->sock;
	}
	for (nfds_t k = 0; k < np; k++)
		p[k].events = POLLIN;
	/* and what connects on first use: a peer's hello is answered even
	 * while we sleep waiting for others (vx_lazy.c) */
	vi->wait_lazy = (unsigned)np;
	np += ohc_vx_lazy_fds(vi, p + np);
	for (nfds_t k = 0; k < np; k++)
		p[k].revents = 0;
	vi->wait_n = (unsigned)np;
	VX_UNLOCK(iface);
	return vi->wait_n;
}

void ohc_vx_iface_wait_disarm(struct ohc_iface *iface)
{
	struct ohc_verbs_iface *vi = ohc_vx_iface(iface);
	struct pollfd *p = vi->wait_fds;
	unsigned np = vi->wait_n;
	uint64_t v;
	int socks = 0;

	vi->wait_n = 0;
	if (!np)
		return;
	if (!vi->cq) {
		if (p[0].revents & POLLIN)
			(void)!read(vi->wake_fd, &v, sizeof(v));
		return;
	}
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
		ohc_vx_async_events(vi);
	for (unsigned k = 3; k < vi->wait_lazy && k < np; k++)
		socks |= p[k].revents != 0;
	for (unsigned k = vi->wait_lazy; k < np; k++)
		vi->lz_poke |= p[k].revents != 0;
	if (vi->lz_poke)
		ohc_vx_lazy_progress(vi);
	/* the eps may have changed while we slept: look at all of them */
	for (uint32_t r = 0; socks && r < iface->nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];

		if (e && e->connected && !e->broken)
			ohc_vx_ep_sock_check(e);
	}
	VX_UNLOCK(iface);
}

ohc_status_t ohc_vx_iface_wait(struct ohc_iface *iface, int timeout_ms)
{
	struct pollfd *p;
	unsigned n = ohc_vx_iface_wait_arm(iface, &p);

	if (n && poll(p, n, timeout_ms) < 0)
		for (unsigned k = 0; k < n; k++)
			p[k].revents = 0; /* EINTR: nothing woke us */
	ohc_vx_iface_wait_disarm(iface);
	return OHC_OK;
}

void ohc_vx_iface_wake(struct ohc_iface *iface)
{
	struct ohc_verbs_iface *vi = ohc_vx_iface(iface);
	uint64_t one = 1;

	if (vi->wake_fd >= 0)
		(void)!write(vi->wake_fd, &one, sizeof(one));
}
