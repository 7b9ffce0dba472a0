/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport's connections: the setup listener, an ep's
 * resources (QPs, receive ring, staging, MRs), the connect record
 * exchange over one TCP socket per pair (the lower rank connects, the
 * higher answers; a hello each way through the handshake service,
 * util/hs.h) that brings the QPs to RTS, and the ep's end: quiesce
 * and fini. The socket stays open afterwards as the liveness probe
 * (vx_fail.c). See verbs.h for the protocol.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "transport/verbs/verbs.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/hs.h"
#include "util/log.h"
#include "util/time.h"

#define VX_DRAIN_MS 2000 /* ep_fini waits this long for sends to land */
#define VX_CQ_EPS_LAZY 16 /* eps a lazy iface's first CQ is sized for */

/* ---- the setup listener -------------------------------------------- */

int ohc_vx_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

ohc_status_t ohc_vx_listen(struct ohc_verbs_iface *vi)
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
	    ohc_vx_set_nonblock(fd)) {
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

/* ---- setup --------------------------------------------------------- */

static int cq_entries(const struct ohc_verbs_iface *vi, unsigned eps)
{
	return (int)(eps * vi->nqps * (vi->sq_depth + vi->rq_depth) + 16);
}

ohc_status_t ohc_vx_cq_reserve(struct ohc_verbs_iface *vi,
			       struct ohc_verbs_ep *e)
{
	unsigned eps = vi->cq_eps;
	int cqe;

	if (vi->nsetup < eps)
		return OHC_OK;
	eps = OHC_MAX(OHC_MIN(2 * eps, vi->neps), vi->nsetup + 1);
	cqe = cq_entries(vi, eps);
	if (ohc_vx_resize_cq(vi->cq, cqe)) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: RDMA connection to rank %u: cannot grow "
			  "the CQ to %d entries (%u connections) on %s: %s",
			  vi->super.rank, e->super.peer, cqe, eps, vi->dev_name,
			  strerror(errno));
		return OHC_ERR_UNAVAILABLE;
	}
	vi->cq_eps = eps;
	return OHC_OK;
}

/* QPs (INIT, receives posted), ring, staging, MRs of one ep (once). */
ohc_status_t ohc_vx_ep_setup(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	uint32_t rank = vi->super.rank, peer = e->super.peer;
	size_t len = (size_t)vi->slots * vi->slot_bytes;
	size_t ctrl = (size_t)OHC_VX_RDV_N * OHC_VX_CTS_BYTES;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	uint32_t psn;

	if (e->set_up)
		return OHC_OK;
	e->set_up = 1;
	vi->nsetup++;
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
		goto err_mem;
	for (uint32_t i = 0; i < e->gx_n; i++)
		e->gx[i].mark = e->gx_marks + (size_t)i * e->nqps;
	/* ring | CTS in | staging | CTS out */
	e->map_len = 2 * (len + ctrl);
	e->ring = mmap(NULL, e->map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->ring == MAP_FAILED) {
		e->ring = NULL;
		goto err_mem;
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
		ohc_status_t status = ohc_vx_qp_create(vi, e, i);

		if (status < 0)
			return status;
	}
	return OHC_OK;

err_mem:
	OHC_ERROR(OHC_SS_VERBS,
		  "rank %u: no memory for the RDMA connection to rank %u "
		  "(%zu bytes of rings)",
		  rank, peer, 2 * (len + ctrl));
	return OHC_ERR_NO_MEMORY;
}

void ohc_vx_conn_fill(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
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
ohc_status_t ohc_vx_ep_rts(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
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

/* The setup protocol's frames: one hello each way whose body is the
 * connect record (native byte order, as the blob), token the session. */
const struct ohc_frame_proto ohc_vx_proto = {
	.magic = 0x5658, /* "VX" */
	.version = VX_VERSION,
	.type_max = 1,
};

/* The peer's listener address (from its blob; ss may be NULL), and a
 * name for errors: "rank 5 (10.0.0.2:41234)". */
socklen_t ohc_vx_peer_addr(const struct ohc_verbs_ep *e,
			   struct sockaddr_storage *ss, char *name, size_t size)
{
	const struct vx_blob *b = &e->peer_blob;
	char ip[INET6_ADDRSTRLEN] = "?";
	struct sockaddr_storage tmp;
	socklen_t len;

	if (!ss)
		ss = &tmp;
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = b->family;
	if (b->family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		memcpy(&a->sin_addr, b->addr, 4);
		a->sin_port = htons(b->tcp_port);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		memcpy(&a->sin6_addr, b->addr, 16);
		a->sin6_port = htons(b->tcp_port);
		len = sizeof(*a);
	}
	inet_ntop(b->family, b->addr, ip, sizeof(ip));
	snprintf(name, size, "rank %u (%s%s%s:%u)", e->super.peer,
		 b->family == AF_INET6 ? "[" : "", ip,
		 b->family == AF_INET6 ? "]" : "", b->tcp_port);
	return len;
}

struct ohc_hs_hello ohc_vx_conn_hello(const struct ohc_verbs_iface *vi,
				      uint32_t to, struct vx_conn *c)
{
	return (struct ohc_hs_hello){.type = OHC_VX_T_CONN,
				     .from = vi->super.rank,
				     .to = to,
				     .body = c,
				     .len = sizeof(*c)};
}

ohc_status_t ohc_vx_conn_check(const struct ohc_verbs_iface *vi,
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

/* A higher rank drops a setup connection that brought no record for this
 * long (a stranger's, or a lower rank's record slowed past it). */
#define VX_CONN_SILENT_MS 2000

/* Connect to a higher rank's listener and send it our record. */
static ohc_status_t conn_offer(struct ohc_verbs_iface *vi,
			       struct ohc_verbs_ep *e, struct ohc_hs *hs)
{
	struct sockaddr_storage ss;
	socklen_t len = ohc_vx_peer_addr(e, &ss, NULL, 0);
	struct ohc_hs_hello m;
	struct vx_conn c;
	ohc_status_t status;

	status = ohc_hs_connect(hs, (struct sockaddr *)&ss, len, SOCK_STREAM,
				&e->sock);
	if (status < 0)
		return status;
	ohc_vx_conn_fill(vi, e, &c);
	m = ohc_vx_conn_hello(vi, e->super.peer, &c);
	e->offered = ohc_time_ns();
	return ohc_hs_hello_send(hs, e->sock, &m);
}

/* The higher rank closed the connection unanswered after waiting (half
 * its silence limit or more) since our record left: it dropped us as
 * silent, and takes a new offer. A close sooner is something else (a
 * failing peer, another program on the port). */
static bool conn_dropped_silent(const struct ohc_verbs_ep *e,
				ohc_status_t status)
{
	return status == OHC_ERR_REMOTE &&
	       ohc_time_ns() - e->offered >= VX_CONN_SILENT_MS * 500000ull;
}

ohc_status_t ohc_vx_iface_connect(struct ohc_iface *iface, struct ohc_ep **eps,
				  unsigned n, uint64_t deadline)
{
	struct ohc_verbs_iface *vi = ohc_vx_iface(iface);
	uint32_t rank = iface->rank;
	unsigned lower = 0, accepted = 0;
	ohc_status_t status = OHC_OK;
	char name[80];
	struct ohc_hs hs;
	struct vx_conn c;
	unsigned lazy_ranks;
	int cqe;

	if (!n)
		return OHC_OK;
	/* lazy: on a communicator of more than OPENHCCL_RDMA_LAZY_RANKS
	 * ranks (the same on every rank, unlike our count of verbs eps:
	 * an eager rank would wait for lazy ones that never come) */
	lazy_ranks = (unsigned)ohc_env()->rdma_lazy_ranks;
	vi->lazy =
		!vi->connect_now && (!lazy_ranks || iface->nranks > lazy_ranks);
	vi->neps = n;
	/* lazy: for the first few eps, grown as more connect (forced
	 * lazy: one, so that every further ep grows it) */
	vi->cq_eps = vi->lazy ? OHC_MIN(n, OHC_MAX(1u, OHC_MIN(lazy_ranks,
							       VX_CQ_EPS_LAZY)))
			      : n;
	cqe = cq_entries(vi, vi->cq_eps);
	vi->ch = ohc_vx_create_channel(vi->ctx);
	if (vi->ch && ohc_vx_set_nonblock(vi->ch->fd) == 0)
		vi->cq = ohc_vx_create_cq(vi->ctx, cqe, vi->ch);
	if (!vi->cq) {
		OHC_ERROR(OHC_SS_VERBS,
			  "rank %u: cannot create a CQ of %d entries on %s: %s",
			  rank, cqe, vi->dev_name, strerror(errno));
		return OHC_ERR_UNAVAILABLE;
	}
	if (vi->lazy) {
		/* each ep connects on first use (vx_lazy.c): the listener
		 * stays, the service thread answers while we are idle */
		OHC_INFO(OHC_SS_VERBS,
			 "rank %u: %u RDMA connections on %s are made on "
			 "first use (%u ranks, OPENHCCL_RDMA_LAZY_RANKS=%u)",
			 rank, n, vi->dev_name, iface->nranks, lazy_ranks);
		ohc_vx_service_add(vi);
		return OHC_OK;
	}
	for (unsigned i = 0; i < n; i++) {
		status = ohc_vx_ep_setup(vi, ohc_vx_ep(eps[i]));
		if (status < 0)
			return status;
	}
	/* Higher ranks: connect and send our half first. */
	for (unsigned i = 0; i < n; i++)
		lower += ohc_vx_ep(eps[i])->super.peer < rank;
	for (unsigned i = 0; i < n; i++) {
		struct ohc_verbs_ep *e = ohc_vx_ep(eps[i]);

		if (e->super.peer < rank)
			continue;
		(void)ohc_vx_peer_addr(e, NULL, name, sizeof(name));
		ohc_hs_init(&hs, &ohc_vx_proto, name, vi->session, deadline);
		status = conn_offer(vi, e, &hs);
		if (status < 0) {
			OHC_ERROR(
				OHC_SS_VERBS,
				"rank %u: RDMA connection setup: cannot reach "
				"%s",
				rank, hs.why);
			return status == OHC_ERR_TIMEOUT ? OHC_ERR_TIMEOUT
							 : OHC_ERR_ROCE_CONNECT;
		}
	}
	/* Lower ranks connect to us: accept, read theirs, answer. */
	while (accepted < lower) {
		struct ohc_hs_hello m = ohc_vx_conn_hello(vi, rank, &c);
		struct ohc_verbs_ep *e;
		int fd;

		ohc_hs_init(&hs, &ohc_vx_proto, "a setup connection",
			    vi->session, deadline);
		status = ohc_hs_accept(&hs, vi->listen_fd, &fd);
		if (status == OHC_ERR_TIMEOUT) {
			OHC_ERROR(OHC_SS_VERBS,
				  "rank %u: RDMA connection setup timed out: "
				  "%u of %u lower ranks connected",
				  rank, accepted, lower);
			return OHC_ERR_TIMEOUT;
		}
		if (status < 0)
			continue;
		/* a peer writes its record as soon as it is connected: a
		 * connection that says nothing for VX_CONN_SILENT_MS is
		 * dropped, not waited for until the deadline (a lower rank
		 * whose record was only slow offers it again) */
		hs.deadline = OHC_MIN(deadline,
				      ohc_deadline_after_ms(VX_CONN_SILENT_MS));
		status = ohc_hs_hello_recv(&hs, fd, &m);
		if (status < 0 || ohc_vx_conn_check(vi, &c) < 0 ||
		    c.from != m.from || c.from >= rank ||
		    !(e = vi->by_peer[c.from]) || e->sock >= 0) {
			/* a stranger or a duplicate */
			OHC_DEBUG(OHC_SS_VERBS, "rank %u: dropped %s", rank,
				  status < 0 ? hs.why
					     : "a setup connection: "
					       "not a record for us");
			close(fd);
			continue;
		}
		e->sock = fd;
		accepted++;
		status = ohc_vx_ep_rts(vi, e, &c);
		if (status < 0)
			return status;
		ohc_vx_conn_fill(vi, e, &c);
		m = ohc_vx_conn_hello(vi, e->super.peer, &c);
		(void)ohc_vx_peer_addr(e, NULL, name, sizeof(name));
		ohc_hs_name(&hs, name);
		hs.deadline = deadline;
		if (ohc_hs_hello_send(&hs, fd, &m) < 0) {
			OHC_ERROR(OHC_SS_VERBS,
				  "rank %u: RDMA connection setup: lost %s",
				  rank, hs.why);
			return OHC_ERR_ROCE_CONNECT;
		}
	}
	/* Higher ranks' answers. */
	for (unsigned i = 0; i < n; i++) {
		struct ohc_verbs_ep *e = ohc_vx_ep(eps[i]);
		struct ohc_hs_hello m = ohc_vx_conn_hello(vi, rank, &c);

		if (e->super.peer < rank)
			continue;
		(void)ohc_vx_peer_addr(e, NULL, name, sizeof(name));
		ohc_hs_init(&hs, &ohc_vx_proto, name, vi->session, deadline);
		status = ohc_hs_hello_recv(&hs, e->sock, &m);
		/* dropped as silent (our record was slower than its limit,
		 * e.g. TCP retransmitting it on a lossy wire): offer it
		 * again, until the deadline */
		while (conn_dropped_silent(e, status) &&
		       !ohc_deadline_passed(deadline)) {
			OHC_WARN(OHC_SS_VERBS,
				 "rank %u: RDMA connection setup: %s before "
				 "answering; connecting again",
				 rank, hs.why);
			close(e->sock);
			e->sock = -1;
			hs.once = 1; /* it listened: a refusal is final */
			status = conn_offer(vi, e, &hs);
			if (status == OHC_OK)
				status = ohc_hs_hello_recv(&hs, e->sock, &m);
		}
		if (status == OHC_OK &&
		    (ohc_vx_conn_check(vi, &c) < 0 || c.from != m.from ||
		     m.from != e->super.peer)) {
			snprintf(hs.why, sizeof(hs.why),
				 "%s: a record of another rank or geometry",
				 name);
			status = OHC_ERR_INVALID;
		}
		if (status < 0) {
			OHC_ERROR(OHC_SS_VERBS,
				  "rank %u: no valid RDMA connection reply: %s",
				  rank, hs.why);
			return OHC_ERR_ROCE_CONNECT;
		}
		status = ohc_vx_ep_rts(vi, e, &c);
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

/* ---- the ep's end ------------------------------------------------- */

/* The peer closed the setup socket (quietly: it may be ending too). */
static int sock_closed(const struct ohc_verbs_ep *e)
{
	struct pollfd p = {.fd = e->sock, .events = POLLIN};
	char c;

	return e->sock >= 0 && poll(&p, 1, 0) > 0 &&
	       recv(e->sock, &c, 1, MSG_DONTWAIT | MSG_PEEK) == 0;
}

/*
 * Let our last writes land and the peer read our last pulled fragment
 * (bounded): then the peer's QPs may go away, and our staging with them.
 */
void ohc_vx_ep_quiesce_locked(struct ohc_ep *ep)
{
	struct ohc_verbs_ep *e = ohc_vx_ep(ep);
	struct ohc_verbs_iface *vi = ohc_vx_iface(ep->iface);

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
			ohc_vx_chain_add(q, wr);
			if (ohc_vx_chain_post(vi, e, i, 1))
				e->broken = OHC_ERR_REMOTE;
		}
		/*
		 * 64 polls, then one per 1 ms sleep with a deadline check:
		 * a peer that closed first never acks, and spinning on the
		 * clock (a system call on an HPET clocksource) for the whole
		 * drain only takes CPU from others (seen in the TCG VMs).
		 */
		while (pending && !e->broken) {
			ohc_vx_cq_poll(vi);
			pending = reads && e->tx_freed < e->pull_end;
			for (uint32_t i = 0; i < e->nqps; i++)
				pending |= e->qps[i].sq_inflight != 0;
			if (!pending || ++polls < 64)
				continue;
			if (ohc_deadline_passed(deadline))
				break;
			if (e->closed_at || sock_closed(e))
				break; /* gone: it reads, acks nothing more */
			(void)poll(NULL, 0, 1);
		}
	}
}

void ohc_vx_ep_fini_locked(struct ohc_ep *ep)
{
	struct ohc_verbs_ep *e = ohc_vx_ep(ep);
	struct ohc_verbs_iface *vi = ohc_vx_iface(ep->iface);

	ohc_vx_queue_complete(&e->sendq, OHC_ERR_CANCELED);
	ohc_vx_queue_complete(&e->recvq, OHC_ERR_CANCELED);
	ohc_vx_ep_quiesce_locked(ep);
	ohc_vx_lazy_ep_fini(e);
	e->connected = 0;
	for (uint32_t i = 0; i < e->nqps; i++) {
		if (e->qps[i].qp)
			ohc_vx_destroy_qp(e->qps[i].qp);
		e->qps[i].qp = NULL;
	}
	ohc_vx_ep_release(vi, e, OHC_ERR_CANCELED);
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
