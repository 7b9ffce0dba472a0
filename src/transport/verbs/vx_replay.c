/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replay after a transient link failure (OPENHCCL_RDMA_REPLAY_MS).
 *
 * An RC connection whose retries ran out (a link down longer than the
 * QP's retry window, a switch reboot) or whose port went down is not
 * given up at once. Its QPs are moved to the error state and drained
 * (a signaled marker posted behind everything on each queue tells when
 * all of it has flushed), the port is waited for, the QPs are reset and
 * connected again with new PSNs, and every fragment the peer did not
 * receive is written again. That works because on the slot path nothing
 * a sender has not had acknowledged is lost:
 * - a copied (or inline) fragment stays in its staging slot until the
 *   peer's credits free the slot, which happens only after it took it;
 * - a gathering send completes only when its writes completed, which for
 *   RC means the peer's adapter acknowledged them: until then the send
 *   buffer is the user's promise to us;
 * - a pulled fragment's bytes wait in our staging until the peer freed
 *   their slot (the peer reads them again after a replay).
 * The peer says what it holds: `have`, the fragments received in order
 * (counted after its own drain, so no landed fragment is missed), and
 * `next`, the ones it consumed (its credits). Fragments from `have` on are
 * sent again on the QP they first went on; the receiver forgets the ones
 * that arrived beyond a gap (they come again).
 *
 * The handshake runs on the setup socket, which survives a short link
 * failure (TCP retransmits): HELLO {epoch, psn, have, next} once our QPs
 * are in INIT with receives posted, READY once they are in RTR; data
 * flows again when both READYs are in. Whoever noticed first starts; a
 * HELLO from the peer starts the other side. Rendezvous transfers in
 * flight are replayed too: the HELLO carries each side's rendezvous
 * report, and with both in hand each side completes, rewinds or asks
 * again what the flush left unsure (ohc_vx_rdv_replay, vx_rdv.h), before
 * its READY, so before any new write. Deaths are not replayed: a peer
 * process that is gone closes the setup socket, and that fails the ep at
 * once, replay or not. A replay that does not finish
 * within the budget fails the ep with HCCL_E_REMOTE, naming why.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "transport/verbs/verbs.h"
#include "util/log.h"
#include "util/time.h"

#define RP_MAGIC 0x52504c59u /* "RPLY" */

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void rp_fail(struct ohc_verbs_ep *e, const char *stage)
{
	char why[320];

	snprintf(why, sizeof(why),
		 "the connection did not come back (%s) within "
		 "OPENHCCL_RDMA_REPLAY_MS after: %s",
		 stage, e->rp.why);
	e->rp.state = VX_RP_NONE;
	ohc_vx_ep_fail(e, 0, why);
}

/* One handshake message; the socket's buffer is empty, so it never
 * blocks (a broken socket shows in the next check). */
static void rp_send(struct ohc_verbs_ep *e, char type)
{
	uint8_t m[1 + OHC_VX_RP_BODY];

	memset(m, 0, sizeof(m));
	m[0] = (uint8_t)type;
	put32(m + 1, RP_MAGIC);
	put32(m + 5, e->rp.epoch);
	put32(m + 9, e->rp.psn);
	put64(m + 17, e->rp.have);
	put64(m + 25, e->rx_next);
	if (type == OHC_VX_RP_HELLO)
		ohc_vx_rdv_report(e, m + 33);
	(void)!send(e->sock, m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/*
 * Move every QP to ERR and post a signaled marker behind everything on
 * its send queue: on an ERR QP posts flush in order, so when all markers
 * flushed no send of before is in flight. Receive queues are not waited
 * for (rxe of Linux 6.1 does not flush them): their WRs carry the replay
 * epoch, and completions of an older epoch are dropped (vx_cq.c).
 */
static int rp_drain_start(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	e->rp.marks = 0;
	for (uint32_t i = 0; i < e->nqps; i++) {
		struct ibv_send_wr sw;
		struct ohc_vx_qp *q = &e->qps[i];

		if (ohc_vx_fault_qp_error(q->qp))
			return -1;
		memset(&sw, 0, sizeof(sw));
		sw.opcode = IBV_WR_RDMA_WRITE;
		sw.send_flags = IBV_SEND_SIGNALED;
		sw.wr_id = ohc_vx_wr_id(e->super.peer, i, OHC_VX_WR_MARK_SQ, 0);
		if (ohc_vx_post_send(q->qp, &sw))
			return -1;
		e->rp.marks++;
	}
	(void)vi;
	return 0;
}

int ohc_vx_replay_start(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			const char *why)
{
	struct vx_replay *rp = &e->rp;

	if (rp->state != VX_RP_NONE)
		return 1;
	if (!vi->replay_ms || e->broken || e->peer_abort || e->closed_at ||
	    vi->aborted || !e->connected)
		return 0;
	memset(rp->why, 0, sizeof(rp->why));
	snprintf(rp->why, sizeof(rp->why), "%s", why);
	rp->start = ohc_time_ns();
	rp->deadline = ohc_deadline_after_ms(vi->replay_ms);
	rp->peer_hello = rp->peer_ready = 0;
	rp->resent = 0;
	rp->epoch++; /* the receive WRs posted from now on carry it */
	if (rp_drain_start(vi, e)) {
		rp->state = VX_RP_NONE;
		return 0;
	}
	rp->state = VX_RP_DRAIN;
	/* a pulled fragment's read was flushed with the rest: read again */
	ohc_vx_rd_release(vi, e);
	OHC_WARN(OHC_SS_VERBS,
		 "rank %u: RDMA connection to rank %u interrupted (%s); "
		 "reconnecting, for at most %u ms",
		 vi->super.rank, e->super.peer, why, vi->replay_ms);
	return 1;
}

/* Everything flushed: the queues are empty, count what we hold. */
static void rp_drained(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	uint64_t have = e->rx_next;

	for (uint32_t i = 0; i < e->nqps; i++) {
		struct ohc_vx_qp *q = &e->qps[i];

		q->sq_done += q->sq_inflight; /* flushed: posted, not done */
		q->sq_inflight = 0;
		q->unsig = 0;
		q->rq_posted = 0;
	}
	while (have - e->rx_next < vi->slots && e->arrived[have % vi->slots])
		have++;
	/* what landed beyond a gap comes again */
	for (uint64_t f = have; f < e->rx_next + vi->slots; f++)
		e->arrived[f % vi->slots] = 0;
	e->rp.have = have;
	e->rp.state = VX_RP_PORT;
}

/*
 * Mostly the async events say (PORT_ERR, PORT_ACTIVE); the port is asked
 * directly at most once a second, in case an event was missed. Not more:
 * on rxe each ibv_query_port makes the kernel log a line ("speed is
 * unknown"), and a flood of those on a serial console stalled a VM.
 */
int ohc_vx_port_active(struct ohc_verbs_iface *vi)
{
	struct ibv_port_attr pa;
	uint64_t now = ohc_time_coarse_ns();

	if (now - vi->port_checked < 1000000000ull)
		return !vi->port_down;
	vi->port_checked = now;
	if (ohc_vx_query_port(vi->ctx, vi->port, &pa) == 0)
		vi->port_down = pa.state != IBV_PORT_ACTIVE;
	return !vi->port_down;
}

/* Whether the interface holding ip is up and running (1 if not found). */
static int netdev_running(const char *ip)
{
	struct ifaddrs *all, *i;
	char addr[INET6_ADDRSTRLEN];
	int running = 1;

	if (getifaddrs(&all) != 0)
		return 1;
	for (i = all; i; i = i->ifa_next) {
		const void *a;

		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
				     i->ifa_addr->sa_family != AF_INET6))
			continue;
		a = i->ifa_addr->sa_family == AF_INET
			    ? (const void *)&(
				      (struct sockaddr_in *)(void *)i->ifa_addr)
				      ->sin_addr
			    : (const void *)&((struct sockaddr_in6 *)(void *)
						      i->ifa_addr)
				      ->sin6_addr;
		if (!inet_ntop(i->ifa_addr->sa_family, a, addr, sizeof(addr)) ||
		    strcmp(addr, ip) != 0)
			continue;
		running =
			(i->ifa_flags & IFF_UP) && (i->ifa_flags & IFF_RUNNING);
		break;
	}
	freeifaddrs(all);
	return running;
}

int ohc_vx_link_lost(struct ohc_verbs_iface *vi)
{
	ohc_vx_async_events(vi);
	return !ohc_vx_port_active(vi) || !netdev_running(vi->ip);
}

/* QPs back to INIT with receives, a new PSN, HELLO. */
static int rp_hello(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	uint32_t psn;

	for (uint32_t i = 0; i < e->nqps; i++) {
		struct ibv_qp_attr a;

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RESET;
		if (ohc_vx_modify_qp(e->qps[i].qp, &a, IBV_QP_STATE) ||
		    ohc_vx_qp_init(vi, e, i) || ohc_vx_recvs_post(vi, e, i))
			return -1;
	}
	if (getrandom(&psn, sizeof(psn), 0) != sizeof(psn))
		psn = (uint32_t)ohc_time_ns();
	e->rp.psn = psn & 0xffffff;
	e->psn = e->rp.psn;
	rp_send(e, OHC_VX_RP_HELLO);
	e->rp.state = VX_RP_HELLO;
	return 0;
}

/*
 * Both in RTR: RTS, credits from what the peer consumed, gathering sends'
 * marks for the WRs that will carry them now, and send again from the
 * peer's `have`.
 */
static int rp_resume(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct vx_replay *rp = &e->rp;

	for (uint32_t i = 0; i < e->nqps; i++)
		if (ohc_vx_qp_rts(vi, e, i))
			return -1;
	if (rp->peer_have > e->tx_slots || rp->peer_next > rp->peer_have ||
	    rp->peer_have + vi->slots < e->tx_slots) {
		snprintf(rp->why + strlen(rp->why),
			 sizeof(rp->why) - strlen(rp->why),
			 "; the peer holds fragments %" PRIu64 "..%" PRIu64
			 " of %" PRIu64 " sent",
			 rp->peer_next, rp->peer_have, e->tx_slots);
		return -1;
	}
	if (rp->peer_next > e->tx_freed)
		e->tx_freed = rp->peer_next;
	/* gathering sends: done ones complete now, the others wait for the
	 * WRs that carry them again */
	for (uint64_t g = e->gx_head; g < e->gx_tail + 1; g++) {
		struct vx_gx *x = &e->gx[g % e->gx_n];

		if (g == e->gx_tail && !e->gx_mr)
			break; /* no send being gathered */
		memset(x->mark, 0, e->nqps * sizeof(*x->mark));
	}
	rp->resend = rp->peer_have;
	rp->state = VX_RP_RESEND;
	return 0;
}

static void rp_resend(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct vx_replay *rp = &e->rp;

	while (rp->resend < e->tx_slots) {
		int rc = ohc_vx_frag_resend(vi, e, rp->resend);

		if (rc < 0)
			return; /* the ep failed */
		if (rc > 0)
			return; /* no room now: the next progress goes on */
		rp->resend++;
		rp->resent++;
	}
	rp->state = VX_RP_NONE;
	vi->replays++;
	OHC_WARN(OHC_SS_VERBS,
		 "rank %u: RDMA connection to rank %u back after %.1f ms; "
		 "%" PRIu64 " fragments sent again; rendezvous in flight: "
		 "%u written again, %u found complete, %u CTS again",
		 vi->super.rank, e->super.peer,
		 (double)(ohc_time_ns() - rp->start) / 1e6, rp->resent,
		 rp->rdv.rewound, rp->rdv.completed, rp->rdv.rects);
}

const char *ohc_vx_replay_stage(const struct ohc_verbs_ep *e)
{
	static const char *const stage[] = {"not replaying",
					    "queues draining",
					    "port down",
					    "no HELLO from the peer",
					    "no READY from the peer",
					    "sending again"};

	return (unsigned)e->rp.state < sizeof(stage) / sizeof(stage[0])
		       ? stage[e->rp.state]
		       : "?";
}

void ohc_vx_replay_progress(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct vx_replay *rp = &e->rp;

	if (rp->state == VX_RP_NONE || e->broken)
		return;
	if (ohc_deadline_passed(rp->deadline)) {
		rp_fail(e, ohc_vx_replay_stage(e));
		return;
	}
	switch (rp->state) {
	case VX_RP_DRAIN:
		if (rp->marks)
			return;
		rp_drained(vi, e);
		/* fall through */
	case VX_RP_PORT:
		if (!ohc_vx_port_active(vi))
			return;
		if (rp_hello(vi, e)) {
			rp_fail(e, "QPs could not be reset");
			return;
		}
		/* fall through */
	case VX_RP_HELLO:
		if (!rp->peer_hello)
			return;
		for (uint32_t i = 0; i < e->nqps; i++) {
			if (ohc_vx_qp_rtr(vi, e, i, rp->peer_psn)) {
				rp_fail(e, "QPs could not reconnect");
				return;
			}
		}
		/* both reports are in and nothing new was written yet */
		ohc_vx_rdv_replay(vi, e, rp->peer_rdv, &rp->rdv);
		if (e->broken)
			return;
		rp_send(e, OHC_VX_RP_READY);
		rp->state = VX_RP_READY;
		/* fall through */
	case VX_RP_READY:
		if (!rp->peer_ready)
			return;
		if (rp_resume(vi, e)) {
			rp_fail(e, "QPs could not resume");
			return;
		}
		/* fall through */
	case VX_RP_RESEND:
		rp_resend(vi, e);
		break;
	default:
		break;
	}
}

void ohc_vx_replay_msg(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       char t, const uint8_t *body)
{
	struct vx_replay *rp = &e->rp;
	uint32_t epoch = get32(body + 4);

	if (get32(body) != RP_MAGIC || epoch < rp->epoch)
		return; /* not ours, or of a replay that ended */
	if (epoch > rp->epoch && rp->state == VX_RP_RESEND)
		/* the peer failed again while we were still sending again:
		 * the next replay's HELLOs say anew what each side holds */
		rp->state = VX_RP_NONE;
	if (rp->state == VX_RP_NONE &&
	    !ohc_vx_replay_start(vi, e, "the peer reconnects")) {
		ohc_vx_ep_fail(e, 0,
			       "the peer reconnects after a link failure, "
			       "which this side cannot follow (OPENHCCL_RDMA_"
			       "REPLAY_MS=0)");
		return;
	}
	if (t == OHC_VX_RP_HELLO) {
		rp->peer_hello = 1;
		rp->peer_psn = get32(body + 8);
		rp->peer_have = get64(body + 16);
		rp->peer_next = get64(body + 24);
		memcpy(rp->peer_rdv, body + 32, sizeof(rp->peer_rdv));
	} else if (t == OHC_VX_RP_READY) {
		rp->peer_ready = 1;
	}
	ohc_vx_replay_progress(vi, e);
}
