/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's failures and liveness: failing an ep (logged
 * once, every request failed, the QPs stopped), the device's async
 * events, the setup socket as a liveness probe (the peer's abort byte,
 * EOF, replay handshakes), iface_abort, ep_check and ep_cancel. All
 * under the iface's lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>

#include "transport/verbs/verbs.h"
#include "util/log.h"
#include "util/time.h"

/* The one byte iface_abort sends on the setup socket; ep_stop's. */
#define VX_ABORT_DESYNC 'D'
#define VX_ABORT_OTHER 'X'
#define VX_ABORT_BROKEN 'B'

/* ---- failing an endpoint ------------------------------------------- */

void ohc_vx_queue_complete(struct ohc_list *q, ohc_status_t status)
{
	while (!ohc_list_empty(q)) {
		struct ohc_req *req =
			ohc_container_of(q->next, struct ohc_req, link);

		ohc_list_del(&req->link);
		ohc_req_complete(req, status);
	}
}

void ohc_vx_ep_release(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       ohc_status_t status)
{
	ohc_vx_gx_fail(vi, e, status);
	ohc_vx_rd_release(vi, e);
	ohc_vx_rdv_fail(vi, e, status);
}

static void ep_stop(struct ohc_verbs_ep *e)
{
	for (uint32_t i = 0; i < e->nqps; i++)
		if (e->qps[i].qp)
			ohc_vx_fault_qp_error(e->qps[i].qp);
	/* tell the peer at once rather than after its retries run out; the
	 * byte tells a broken connection from a peer that ended (EOF) */
	if (e->sock >= 0) {
		char c = VX_ABORT_BROKEN;

		(void)!send(e->sock, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		shutdown(e->sock, SHUT_RDWR);
	}
}

/*
 * The connection to the peer is broken: log once (naming the peer, the QP
 * and why), fail every posted request, stop the QPs.
 */
void ohc_vx_ep_fail_qpn(struct ohc_verbs_ep *e, uint32_t qpn, const char *why)
{
	struct ohc_iface *iface = e->super.iface;
	ohc_status_t status = e->peer_abort ? e->peer_abort : OHC_ERR_REMOTE;

	char replay[96] = "";

	if (e->broken)
		return;
	e->broken = status;
	/* a replay cut short by this (the peer gave up first): where ours
	 * was, for the one who reads why both sides failed */
	if (e->rp.state != VX_RP_NONE)
		snprintf(replay, sizeof(replay),
			 " (our replay: %s, %.0f ms in)",
			 ohc_vx_replay_stage(e),
			 (double)(ohc_time_ns() - e->rp.start) / 1e6);
	e->rp.state = VX_RP_NONE;
	if (!ohc_list_empty(&e->sendq) || !ohc_list_empty(&e->recvq) ||
	    !ohc_list_empty(&e->rdv.txq) || !ohc_list_empty(&e->rdv.rxq))
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: RDMA connection to rank %u failed: QP %u: "
			  "%s%s",
			  iface->rank, e->super.peer, qpn, why, replay);
	else
		OHC_WARN(OHC_SS_VERBS,
			 "rank %u: RDMA connection to rank %u lost while "
			 "idle: QP %u: %s%s",
			 iface->rank, e->super.peer, qpn, why, replay);
	ohc_vx_queue_complete(&e->sendq, status);
	ohc_vx_queue_complete(&e->recvq, status);
	ep_stop(e);
	ohc_vx_ep_release(ohc_vx_iface(iface), e, status);
}

static uint32_t ep_qpn(const struct ohc_verbs_ep *e, uint32_t qpi)
{
	return qpi < e->nqps && e->qps[qpi].qp ? e->qps[qpi].qp->qp_num : 0;
}

void ohc_vx_ep_fail(struct ohc_verbs_ep *e, uint32_t qpi, const char *why)
{
	ohc_vx_ep_fail_qpn(e, ep_qpn(e, qpi), why);
}

/* ---- async events -------------------------------------------------- */

void ohc_vx_async_events(struct ohc_verbs_iface *vi)
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
						ohc_vx_ep_fail(e, q, why);
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
					ohc_vx_ep_fail(e, 0, why);
			}
			break;
		case IBV_EVENT_DEVICE_FATAL:
		case IBV_EVENT_CQ_ERR: /* completions lost: nothing is sure */
			/* and those connecting on first use (vx_lazy.c) */
			for (uint32_t r = 0; r < vi->super.nranks; r++)
				if (vi->by_peer[r] &&
				    (vi->by_peer[r]->connected ||
				     vi->by_peer[r]->lz_state != VX_LZ_NONE))
					ohc_vx_ep_fail(vi->by_peer[r], 0, why);
			break;
		default:
			OHC_DEBUG(OHC_SS_VERBS, "rank %u: %s", vi->super.rank,
				  why);
			break;
		}
		ohc_vx_ack_async_event(&ev);
	}
}

/* ---- liveness and cancel ------------------------------------------- */

/*
 * The peer closed its setup socket: its process is gone, or it destroyed
 * its communicator after its last operation. Everything it sent before
 * has landed here (its sends completed, so our side acknowledged them):
 * a peer that finished before us is no failure, and receives posted later
 * still take what it sent. A receive that finds nothing more fails: it
 * never comes. Our own sends may wait a moment for the acknowledgements
 * that were on their way (VX_CLOSE_GRACE_MS); one still waiting then
 * fails with the peer. No credits and no replays go to a closed peer.
 */
#define VX_CLOSE_GRACE_MS 200
#define VX_CLOSED_WHY                                                          \
	"the peer closed its connection (process gone or its side failed)"

static int ep_recv_pending(const struct ohc_verbs_ep *e)
{
	return !ohc_list_empty(&e->recvq) || !ohc_list_empty(&e->rdv.rxq);
}

static int ep_send_pending(const struct ohc_verbs_ep *e)
{
	return !ohc_list_empty(&e->sendq) || !ohc_list_empty(&e->rdv.txq) ||
	       e->gx_head != e->gx_tail;
}

/*
 * Take what the peer sent before it ended or failed (completions, slots,
 * rendezvous): its sends completed, so it is all here. Whether the ep
 * still stands.
 */
static int ep_drain(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	if (e->broken || e->rp.state)
		return !e->broken;
	ohc_vx_cq_poll(vi);
	if (e->broken)
		return 0;
	ohc_vx_ep_deliver(vi, e);
	ohc_vx_rdv_progress(vi, e);
	return !e->broken;
}

static void ep_peer_closed(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	uint64_t now = ohc_time_ns();

	if (e->rp.state) { /* mid-replay: the connection is gone already */
		ohc_vx_ep_fail(e, 0, VX_CLOSED_WHY);
		return;
	}
	if (!ep_drain(vi, e))
		return;
	if (!e->closed_at) {
		e->closed_at = now;
		OHC_DEBUG(OHC_SS_VERBS,
			  "rank %u: rank %u closed its connection",
			  e->super.iface->rank, e->super.peer);
	}
	if (ep_recv_pending(e) ||
	    (ep_send_pending(e) &&
	     now - e->closed_at >= VX_CLOSE_GRACE_MS * 1000000ull))
		ohc_vx_ep_fail(e, 0, VX_CLOSED_WHY);
}

/*
 * The setup socket: a reason byte (the peer's communicator failed, see
 * iface_abort) or EOF (its process is gone or its side stopped). Read even
 * when the ep is already broken: the peer's abort may have broken our QPs
 * before we saw its reason.
 */
void ohc_vx_ep_sock_check(struct ohc_verbs_ep *e)
{
	struct ohc_verbs_iface *vi = ohc_vx_iface(e->super.iface);
	struct pollfd p = {.fd = e->sock, .events = POLLIN};
	uint8_t m[1 + OHC_VX_RP_BODY];
	ssize_t n;

	if (e->closed_at) { /* at EOF: only the grace is left to decide */
		if (!e->broken)
			ep_peer_closed(vi, e);
		return;
	}
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
			/* what it sent before it failed is ours: a receive
			 * it completed must not fail with it (CI: a ring's
			 * last message lost to the abort that followed it) */
			(void)ep_drain(vi, e);
			e->peer_abort = m[0] == VX_ABORT_DESYNC
						? OHC_ERR_DESYNC
						: OHC_ERR_REMOTE;
			if (m[0] != VX_ABORT_BROKEN)
				ohc_vx_lazy_peer_abort(vi, e->super.peer,
						       e->peer_abort);
			ohc_vx_ep_fail(e, 0,
				       m[0] == VX_ABORT_DESYNC
					       ? "the peer failed on a "
						 "mismatched operation"
				       : m[0] == VX_ABORT_BROKEN
					       ? "the peer's side of the "
						 "connection failed"
					       : "the peer's communicator "
						 "failed");
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			if (e->broken)
				return;
			ep_peer_closed(vi, e);
		}
		return;
	}
}

ohc_status_t ohc_vx_ep_check_locked(struct ohc_ep *ep)
{
	struct ohc_verbs_ep *e = ohc_vx_ep(ep);

	ohc_vx_async_events(ohc_vx_iface(ep->iface));
	if (!e->connected) { /* connecting on first use: its deadline */
		if (e->lz_state != VX_LZ_NONE && !e->broken &&
		    ohc_time_ns() >= e->lz_deadline)
			ohc_vx_lazy_progress(ohc_vx_iface(ep->iface));
		if (e->peer_abort)
			return e->peer_abort;
		return e->broken == OHC_ERR_TIMEOUT ? OHC_ERR_TIMEOUT
		       : e->broken		    ? OHC_ERR_REMOTE
						    : OHC_OK;
	}
	ohc_vx_ep_sock_check(e);
	if (e->peer_abort)
		return e->peer_abort;
	return e->broken ? OHC_ERR_REMOTE : OHC_OK;
}

/*
 * Our communicator failed: send every connected peer the reason byte (the
 * socket buffer is empty after setup, so it never blocks). The QPs stay as
 * they are; the core cancels what is in flight.
 */
void ohc_vx_iface_abort_locked(struct ohc_iface *iface, ohc_status_t reason)
{
	struct ohc_verbs_iface *vi = ohc_vx_iface(iface);
	char c = reason == OHC_ERR_DESYNC ? VX_ABORT_DESYNC : VX_ABORT_OTHER;

	if (reason >= 0 || vi->aborted || !vi->by_peer)
		return;
	vi->aborted = reason;
	for (uint32_t r = 0; r < iface->nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];

		if (e && e->sock >= 0 && e->connected)
			(void)!send(e->sock, &c, 1,
				    MSG_NOSIGNAL | MSG_DONTWAIT);
		else if (e) /* connecting on first use (vx_lazy.c) */
			ohc_vx_lazy_abort(vi, e);
	}
}

void ohc_vx_ep_cancel_locked(struct ohc_ep *ep, ohc_status_t status)
{
	struct ohc_verbs_ep *e = ohc_vx_ep(ep);

	e->rp.state = VX_RP_NONE;
	ohc_vx_queue_complete(&e->sendq, status);
	ohc_vx_queue_complete(&e->recvq, status);
	if (!e->broken) {
		e->broken = status < 0 ? status : OHC_ERR_CANCELED;
		ep_stop(e);
	}
	ohc_vx_ep_release(ohc_vx_iface(ep->iface), e, status);
}
