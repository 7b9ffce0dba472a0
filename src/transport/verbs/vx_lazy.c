/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's connections on first use (OPENHCCL_RDMA_LAZY_RANKS):
 * on a large communicator iface_connect only makes the CQ and keeps the
 * setup listener open; an ep gets its QPs, ring and MRs, and its TCP
 * handshake, when it is first used, without blocking:
 *
 *   initiator: connect, hello (our connect record) -> answer (the peer's
 *              record): RTS, connected, the ready byte 'R'
 *   answerer:  accept, hello -> RTS, answer -> the ready byte: connected
 *
 * The answerer's QPs are at RTS before it answers and the initiator's
 * before it sends the ready byte, so neither side posts a WR to a QP not
 * yet ready to receive it (a packet dropped there costs a retransmit
 * timeout, seconds). The socket then is the liveness probe as after an
 * eager connect (vx_fail.c).
 *
 * Any hello is answered, whenever it comes, from iface_progress, from a
 * wait (the listener and the sockets are armed) or from the service
 * thread while the iface is idle, so a rank blocked on other peers (or
 * asleep outside any operation) still lets a peer connect to it. When
 * both sides start at once, the lower rank's attempt wins: the higher
 * answers the lower's hello and drops its own attempt; the lower drops
 * the higher's hello and waits for its own answer (an ep's QPs are made
 * once, so both hellos carry the same QP numbers). A higher rank whose
 * attempt ends without an answer waits for the lower's; a lower one
 * tries again every VX_LZ_RETRY_MS. An ep not connected within
 * HCCL_CONNECT_TIMEOUT of its first use fails (OHC_ERR_TIMEOUT) with
 * its requests. All under the iface's lock.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/verbs/verbs.h"
#include "util/config.h"
#include "util/hs.h"
#include "util/log.h"
#include "util/time.h"

#define VX_LZ_RETRY_MS 100 /* a lower rank's next attempt */
#define VX_LZ_SEND_MS 1000 /* a hello's write (a fresh socket: never full) */
#define VX_LZ_READY 'R'	   /* the initiator's QPs are at RTS */

static uint64_t lz_timeout_ns(void)
{
	return (uint64_t)ohc_env()->connect_timeout_s * 1000000000ull;
}

static unsigned lz_busy(const struct ohc_verbs_ep *e)
{
	return e->lz_state != VX_LZ_NONE && !e->connected && !e->broken;
}

/* Leave the attempt state (connected or failed): the busy count. */
static void lz_end(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	if (e->lz_state != VX_LZ_NONE && vi->lz_busy)
		vi->lz_busy--;
	e->lz_state = VX_LZ_NONE;
	if (e->lz_fd >= 0)
		close(e->lz_fd);
	e->lz_fd = -1;
	ohc_frame_rx_reset(&e->lz_rx);
}

static void lz_set(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		   enum vx_lz_state st)
{
	if (e->lz_state == VX_LZ_NONE && st != VX_LZ_NONE)
		vi->lz_busy++;
	e->lz_state = st;
}

/* The ep could not connect: its requests fail with status. */
static void lz_fail(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		    ohc_status_t status)
{
	lz_end(vi, e);
	if (e->broken)
		return;
	e->broken = status;
	ohc_vx_queue_complete(&e->sendq, status);
	ohc_vx_queue_complete(&e->recvq, status);
	ohc_vx_ep_release(vi, e, status);
}

/* Resources for the ep (once), the CQ grown for them first. */
static ohc_status_t lz_setup(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	ohc_status_t st;

	if (e->set_up)
		return OHC_OK;
	st = ohc_vx_cq_reserve(vi, e);
	if (st == OHC_OK)
		st = ohc_vx_ep_setup(vi, e);
	if (st < 0) /* logged where it failed */
		lz_fail(vi, e, st);
	return st;
}

static ohc_status_t lz_hello_send(struct ohc_verbs_iface *vi,
				  struct ohc_verbs_ep *e, int fd, char *why,
				  size_t size)
{
	struct vx_conn c;
	struct ohc_hs_hello m = ohc_vx_conn_hello(vi, e->super.peer, &c);
	struct ohc_hs hs;
	char name[80];
	ohc_status_t st;

	ohc_vx_conn_fill(vi, e, &c);
	(void)ohc_vx_peer_addr(e, NULL, name, sizeof(name));
	ohc_hs_init(&hs, &ohc_vx_proto, name, vi->session,
		    ohc_deadline_after_ms(VX_LZ_SEND_MS));
	st = ohc_hs_hello_send(&hs, fd, &m);
	if (st < 0)
		snprintf(why, size, "%s", hs.why);
	return st;
}

void ohc_vx_lazy_abort(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	char c = vi->aborted == OHC_ERR_DESYNC ? 'D' : 'X'; /* as vx_fail.c */
	int fd = e->connected			 ? e->sock
		 : e->lz_state == VX_LZ_ANSWERED ? e->lz_fd
						 : -1;

	if (!vi->aborted || e->lz_told || fd < 0)
		return;
	/* the peer reads it once connected, after our answer */
	(void)!send(fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	e->lz_told = 1;
}

/* Connected: say so once, then let what was queued go. */
static void lz_connected(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			 int fd, const char *how)
{
	char name[80];

	e->sock = fd;
	e->lz_fd = -1;
	lz_end(vi, e);
	(void)ohc_vx_peer_addr(e, NULL, name, sizeof(name));
	OHC_INFO(OHC_SS_VERBS,
		 "rank %u: RDMA connection to %s made on first use (%s) in "
		 "%.1f ms",
		 vi->super.rank, name, how,
		 (double)(ohc_time_ns() - e->lz_t0) / 1e6);
	ohc_vx_lazy_abort(vi, e); /* our communicator failed meanwhile */
	ohc_vx_ep_deliver(vi, e);
	ohc_vx_rdv_progress(vi, e);
	ohc_vx_ep_push(vi, e);
}

/*
 * The peer's listener refused us: it listens from iface_open on, before
 * the address exchange, so its iface is closed (communicator destroyed,
 * process gone): as EOF on a connected ep's socket, a failure now.
 */
static void lz_refused(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       const char *name)
{
	OHC_ERROR(OHC_SS_VERBS,
		  "rank %u: RDMA connection to %s refused: its communicator "
		  "is gone (destroyed, or its process ended)",
		  vi->super.rank, name);
	lz_fail(vi, e, OHC_ERR_REMOTE);
}

/* A new attempt of ours: connect; the hello goes once connected. */
static void lz_connect(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct sockaddr_storage ss;
	char name[80];
	socklen_t len = ohc_vx_peer_addr(e, &ss, name, sizeof(name));
	int fd = -1, err = 0;
	ohc_status_t st;

	st = ohc_hs_connect_start((struct sockaddr *)&ss, len, SOCK_STREAM, &fd,
				  &err);
	if (st < 0 && err == ECONNREFUSED) {
		lz_refused(vi, e, name);
		return;
	}
	if (st < 0) { /* unreachable for now: again later */
		OHC_DEBUG(OHC_SS_VERBS, "rank %u: connect to %s: %s",
			  vi->super.rank, name, strerror(err));
		e->lz_retry = ohc_time_ns() + VX_LZ_RETRY_MS * 1000000ull;
		lz_set(vi, e, VX_LZ_WAIT);
		return;
	}
	e->lz_fd = fd;
	lz_set(vi, e, VX_LZ_CONNECTING);
}

void ohc_vx_lazy_start(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	if (e->connected || e->broken || e->lz_state != VX_LZ_NONE)
		return;
	e->lz_t0 = ohc_time_ns();
	e->lz_deadline = e->lz_t0 + lz_timeout_ns();
	if (lz_setup(vi, e) < 0)
		return;
	lz_connect(vi, e);
	ohc_vx_lazy_progress(vi);
}

/* Our attempt ended without an answer: the higher rank waits for the
 * lower's attempt, the lower tries again. */
static void lz_attempt_lost(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			    const char *why)
{
	OHC_DEBUG(OHC_SS_VERBS, "rank %u: setup connection to rank %u: %s",
		  vi->super.rank, e->super.peer, why);
	if (e->lz_fd >= 0)
		close(e->lz_fd);
	e->lz_fd = -1;
	ohc_frame_rx_reset(&e->lz_rx);
	e->lz_retry = vi->super.rank > e->super.peer
			      ? UINT64_MAX
			      : ohc_time_ns() + VX_LZ_RETRY_MS * 1000000ull;
	lz_set(vi, e, VX_LZ_WAIT);
}

/*
 * A hello's frame from fd, checked: the peer's record in *c. OHC_OK,
 * OHC_INPROGRESS (not whole yet), or an error (why says it).
 */
static ohc_status_t lz_hello_read(struct ohc_verbs_iface *vi,
				  struct ohc_frame_rx *rx, uint32_t want_from,
				  struct vx_conn *c, char *why, size_t size)
{
	struct ohc_hs_hello m = ohc_vx_conn_hello(vi, vi->super.rank, c);
	char fwhy[OHC_FRAME_WHY_MAX];
	struct ohc_frame_hdr h;
	struct ohc_hs hs;
	uint8_t *pl;
	int err = 0;
	ohc_status_t st = ohc_frame_rx_read(rx, sizeof(*c), &err);

	if (st == OHC_INPROGRESS)
		return st;
	if (st < 0) {
		snprintf(why, size, "%s",
			 st == OHC_ERR_INVALID ? rx->why
			 : err		       ? strerror(err)
					       : "closed before its hello");
		return st;
	}
	pl = ohc_frame_rx_take(rx, &h);
	ohc_hs_init(&hs, &ohc_vx_proto, "", vi->session, 0);
	st = ohc_hs_hello_check(&hs, &h, &m, fwhy);
	if (st == OHC_OK && pl)
		memcpy(c, pl, sizeof(*c));
	free(pl);
	if (st == OHC_OK &&
	    (ohc_vx_conn_check(vi, c) < 0 || c->from != m.from ||
	     (want_from != OHC_HS_ANY && m.from != want_from))) {
		snprintf(fwhy, sizeof(fwhy),
			 "a record of another rank or geometry");
		st = OHC_ERR_INVALID;
	}
	if (st < 0)
		snprintf(why, size, "%s", fwhy);
	return st;
}

/* Drive our own attempt at the ep. Whether something moved. */
static unsigned lz_drive(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	char why[OHC_HS_WHY_MAX];
	struct vx_conn c;
	ohc_status_t st;
	int err = 0;

	if (e->lz_state == VX_LZ_WAIT && ohc_time_ns() >= e->lz_retry) {
		lz_connect(vi, e);
		return 0;
	}
	if (e->lz_state == VX_LZ_CONNECTING) {
		struct pollfd p = {.fd = e->lz_fd, .events = POLLOUT};

		if (poll(&p, 1, 0) <= 0)
			return 0;
		if (ohc_hs_connect_check(e->lz_fd, &err) < 0) {
			char name[80];

			(void)ohc_vx_peer_addr(e, NULL, name, sizeof(name));
			if (err == ECONNREFUSED)
				lz_refused(vi, e, name);
			else
				lz_attempt_lost(vi, e, strerror(err));
			return 1;
		}
		if (lz_hello_send(vi, e, e->lz_fd, why, sizeof(why)) < 0) {
			lz_attempt_lost(vi, e, why);
			return 0;
		}
		ohc_frame_rx_init(&e->lz_rx, &ohc_vx_proto, e->lz_fd);
		e->lz_state = VX_LZ_SENT;
	}
	if (e->lz_state == VX_LZ_SENT) {
		st = lz_hello_read(vi, &e->lz_rx, e->super.peer, &c, why,
				   sizeof(why));
		if (st == OHC_INPROGRESS)
			return 0;
		if (st < 0) {
			lz_attempt_lost(vi, e, why);
			return 0;
		}
		if (ohc_vx_ep_rts(vi, e, &c) < 0) {
			lz_fail(vi, e, OHC_ERR_ROCE_CONNECT);
			return 1;
		}
		{
			char r = VX_LZ_READY;

			(void)!send(e->lz_fd, &r, 1,
				    MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		lz_connected(vi, e, e->lz_fd, "ours");
		return 1;
	}
	if (e->lz_state == VX_LZ_ANSWERED) {
		char r = 0;
		ssize_t n = recv(e->lz_fd, &r, 1, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n != 1 || r != VX_LZ_READY) {
			/* the peer is gone before its QPs were ready */
			OHC_DEBUG(OHC_SS_VERBS,
				  "rank %u: rank %u closed the setup "
				  "connection before it was ready",
				  vi->super.rank, e->super.peer);
			lz_fail(vi, e, OHC_ERR_ROCE_CONNECT);
			return 1;
		}
		e->connected = 1; /* RTS since we answered */
		lz_connected(vi, e, e->lz_fd, "theirs");
		return 1;
	}
	return 0;
}

/*
 * The peer's hello c came on fd (accepted): answer it, unless our own
 * attempt wins (we are the lower rank) or the ep is past that. Takes fd.
 */
static unsigned lz_answer(struct ohc_verbs_iface *vi, int fd,
			  const struct vx_conn *c)
{
	struct ohc_verbs_ep *e = vi->by_peer[c->from];
	char why[OHC_HS_WHY_MAX];
	int ours;

	ours = e &&
	       (e->lz_state == VX_LZ_CONNECTING || e->lz_state == VX_LZ_SENT);
	if (!e || e->connected || e->broken || e->lz_state == VX_LZ_ANSWERED ||
	    (ours && vi->super.rank < c->from)) {
		OHC_DEBUG(OHC_SS_VERBS,
			  "rank %u: dropped a setup connection of rank %u "
			  "(%s)",
			  vi->super.rank, c->from,
			  !e		 ? "no endpoint"
			  : e->connected ? "connected already"
			  : e->broken	 ? "endpoint failed"
			  : ours	 ? "our own attempt wins"
					 : "answered already");
		close(fd);
		return 0;
	}
	if (e->lz_state == VX_LZ_NONE) { /* not used by us yet */
		e->lz_t0 = ohc_time_ns();
		e->lz_deadline = e->lz_t0 + lz_timeout_ns();
	}
	if (lz_setup(vi, e) < 0) {
		close(fd);
		return 1;
	}
	if (ours) { /* the lower rank's attempt wins over ours */
		close(e->lz_fd);
		e->lz_fd = -1;
		ohc_frame_rx_reset(&e->lz_rx);
	}
	if (ohc_vx_ep_rts(vi, e, c) < 0) {
		close(fd);
		lz_fail(vi, e, OHC_ERR_ROCE_CONNECT);
		return 1;
	}
	/* RTS: counted connected only once the ready byte came */
	e->connected = 0;
	if (lz_hello_send(vi, e, fd, why, sizeof(why)) < 0) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: RDMA connection setup: cannot answer %s",
			  vi->super.rank, why);
		close(fd);
		lz_fail(vi, e, OHC_ERR_ROCE_CONNECT);
		return 1;
	}
	e->lz_fd = fd;
	lz_set(vi, e, VX_LZ_ANSWERED);
	ohc_vx_lazy_abort(vi, e);
	return 1 + lz_drive(vi, e);
}

static void acc_drop(struct ohc_verbs_iface *vi, unsigned i)
{
	struct vx_lz_acc *a = &vi->lz_acc[i];

	ohc_frame_rx_reset(&a->rx);
	vi->lz_acc[i] = vi->lz_acc[--vi->lz_nacc];
	vi->lz_busy--;
}

/* Accept what is pending, read the accepted sockets' hellos. */
static unsigned lz_accept(struct ohc_verbs_iface *vi)
{
	uint64_t now = ohc_time_ns();
	unsigned n = 0;

	while (vi->listen_fd >= 0 && vi->lz_nacc < OHC_VX_LZ_ACC_MAX) {
		struct vx_lz_acc *a = &vi->lz_acc[vi->lz_nacc];
		int fd, err = 0;

		if (ohc_hs_accept_one(vi->listen_fd, &fd, NULL, NULL, &err) !=
		    OHC_OK)
			break;
		a->fd = fd;
		a->t0 = now;
		ohc_frame_rx_init(&a->rx, &ohc_vx_proto, fd);
		vi->lz_nacc++;
		vi->lz_busy++;
	}
	for (unsigned i = 0; i < vi->lz_nacc;) {
		struct vx_lz_acc *a = &vi->lz_acc[i];
		char why[OHC_HS_WHY_MAX];
		struct vx_conn c;
		int fd = a->fd;
		ohc_status_t st = lz_hello_read(vi, &a->rx, OHC_HS_ANY, &c, why,
						sizeof(why));

		if (st == OHC_INPROGRESS && now - a->t0 < lz_timeout_ns()) {
			i++;
			continue;
		}
		acc_drop(vi, i);
		if (st < 0 || st == OHC_INPROGRESS) {
			OHC_DEBUG(OHC_SS_VERBS,
				  "rank %u: dropped a setup connection: %s",
				  vi->super.rank,
				  st == OHC_INPROGRESS ? "no hello" : why);
			close(fd);
			continue;
		}
		n += lz_answer(vi, fd, &c);
	}
	return n;
}

unsigned ohc_vx_lazy_progress(struct ohc_verbs_iface *vi)
{
	uint64_t now = ohc_time_ns();
	unsigned n;

	if (!vi->lazy)
		return 0;
	vi->lz_poke = 0;
	n = lz_accept(vi);
	for (uint32_t r = 0; vi->lz_busy && r < vi->super.nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];
		char name[80];

		if (e && e->lz_state != VX_LZ_NONE && e->broken) {
			lz_end(vi, e); /* failed or cancelled meanwhile */
			continue;
		}
		if (!e || !lz_busy(e))
			continue;
		n += lz_drive(vi, e);
		if (!lz_busy(e) || now < e->lz_deadline)
			continue;
		(void)ohc_vx_peer_addr(e, NULL, name, sizeof(name));
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: RDMA connection to %s not made within "
			  "%lld s of first use (HCCL_CONNECT_TIMEOUT)",
			  vi->super.rank, name,
			  (long long)ohc_env()->connect_timeout_s);
		lz_fail(vi, e, OHC_ERR_TIMEOUT);
		n++;
	}
	return n;
}

unsigned ohc_vx_lazy_fds(struct ohc_verbs_iface *vi, struct pollfd *p)
{
	unsigned np = 0;

	if (!vi->lazy)
		return 0;
	if (vi->listen_fd >= 0 && vi->lz_nacc < OHC_VX_LZ_ACC_MAX)
		p[np++] =
			(struct pollfd){.fd = vi->listen_fd, .events = POLLIN};
	for (unsigned i = 0; i < vi->lz_nacc; i++)
		p[np++] = (struct pollfd){.fd = vi->lz_acc[i].fd,
					  .events = POLLIN};
	for (uint32_t r = 0; r < vi->super.nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];

		if (!e || !lz_busy(e) || e->lz_fd < 0)
			continue;
		p[np++] = (struct pollfd){
			.fd = e->lz_fd,
			.events = e->lz_state == VX_LZ_CONNECTING ? POLLOUT
								  : POLLIN};
	}
	return np;
}

void ohc_vx_lazy_peer_abort(struct ohc_verbs_iface *vi, uint32_t from,
			    ohc_status_t reason)
{
	for (uint32_t r = 0; vi->lz_busy && r < vi->super.nranks; r++) {
		struct ohc_verbs_ep *e = vi->by_peer[r];

		if (!e || !lz_busy(e))
			continue;
		OHC_WARN(OHC_SS_VERBS,
			 "rank %u: RDMA connection to rank %u abandoned: "
			 "rank %u's communicator failed (%s)",
			 vi->super.rank, r, from, ohc_status_str(reason));
		e->peer_abort = reason;
		lz_fail(vi, e, reason);
	}
}

void ohc_vx_lazy_close(struct ohc_verbs_iface *vi)
{
	while (vi->lz_nacc) {
		close(vi->lz_acc[0].fd);
		acc_drop(vi, 0);
	}
	free(vi->lz_acc);
	vi->lz_acc = NULL;
}

void ohc_vx_lazy_ep_fini(struct ohc_verbs_ep *e)
{
	lz_end(ohc_vx_iface(e->super.iface), e);
}

void ohc_verbs_ep_connect(struct ohc_ep *ep)
{
	VX_LOCK(ep->iface);
	ohc_vx_lazy_start(ohc_vx_iface(ep->iface), ohc_vx_ep(ep));
	VX_UNLOCK(ep->iface);
}

unsigned ohc_verbs_connected(struct ohc_iface *iface)
{
	struct ohc_verbs_iface *vi = ohc_vx_iface(iface);
	unsigned n = 0;

	VX_LOCK(iface);
	for (uint32_t r = 0; r < iface->nranks; r++)
		n += vi->by_peer[r] && vi->by_peer[r]->connected;
	VX_UNLOCK(iface);
	return n;
}
