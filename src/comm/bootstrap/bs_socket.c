/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket endpoint: the ops (xfer, fail, abort, hostid, release) and the
 * endpoint's allocation and teardown. How it works: bs_socket.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "comm/bootstrap/bs_socket.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/time.h"

static struct sock_ep *sock_ep_of(struct bs_ep *super)
{
	return ohc_derived_of(super, struct sock_ep);
}

/* ---------------------------------------------------------------------- */
/* Ops                                                                    */

static struct sock_msg *match_locked(struct sock_peer *p, uint64_t ctx,
				     uint8_t type, uint64_t tag)
{
	struct ohc_list *pos;

	ohc_list_for_each(pos, &p->msgs)
	{
		struct sock_msg *m =
			ohc_container_of(pos, struct sock_msg, link);

		if (m->ctx == ctx && m->type == type && m->tag == tag)
			return m;
	}
	return NULL;
}

static void msg_free(struct sock_msg *m)
{
	ohc_list_del(&m->link);
	free(m->data);
	free(m);
}

static ohc_status_t self_send_locked(struct sock_ep *ep, uint64_t ctx,
				     const struct bs_xfer *x)
{
	struct sock_peer *p = &ep->peers[ep->super.rank];
	struct ohc_frame_hdr h = {.type = x->type,
				  .ctx = ctx,
				  .tag = x->send_tag,
				  .len = x->send_len};
	uint8_t *copy = NULL;

	if (x->send_len) {
		copy = malloc(x->send_len);
		if (!copy)
			return OHC_ERR_NO_MEMORY;
		memcpy(copy, x->send_buf, x->send_len);
	}
	ohc_bs_sock_queue_msg_locked(p, &h, copy);
	return OHC_OK;
}

static ohc_status_t state_locked(struct sock_ep *ep)
{
	if (ep->aborted)
		return OHC_ERR_CANCELED;
	return ep->broken;
}

static ohc_status_t sock_xfer(struct bs_ep *super, uint64_t ctx,
			      struct bs_xfer *x, uint64_t deadline)
{
	struct sock_ep *ep = sock_ep_of(super);
	uint32_t me = super->rank;
	int sending = x->send_to != BS_NO_RANK;
	int receiving = x->recv_from != BS_NO_RANK;
	uint64_t t0 = ohc_time_ns();
	struct sock_tx *stx = NULL;
	ohc_status_t status;

	pthread_mutex_lock(&ep->lock);
	status = state_locked(ep);
	if (status < 0)
		goto out;
	if (sending && x->send_to == me) {
		status = self_send_locked(ep, ctx, x);
		if (status < 0)
			goto out;
		sending = 0;
	} else if (sending) {
		struct sock_peer *p = &ep->peers[x->send_to];
		struct ohc_frame_hdr h = {.type = x->type,
					  .ctx = ctx,
					  .tag = x->send_tag,
					  .len = x->send_len};

		if (ohc_bs_sock_ensure_out_locked(ep, x->send_to, x->what)) {
			x->culprit = x->send_to;
			status = OHC_ERR_SYSCALL;
			goto out;
		}
		if (ohc_bs_sock_send_dead(p)) {
			status = ohc_bs_sock_peer_error_locked(ep, x->send_to,
							       x, 1);
			goto out;
		}
		stx = calloc(1, sizeof(*stx));
		if (!stx) {
			status = OHC_ERR_NO_MEMORY;
			goto out;
		}
		ohc_frame_tx_init(&stx->tx, &bs_proto, &h, x->send_buf);
		ohc_list_add_tail(&p->txq, &stx->link);
		ohc_bs_sock_flush_locked(p);
		ohc_bs_sock_wake_locked(ep);
	}

	for (;;) {
		status = state_locked(ep);
		if (status < 0)
			break;
		if (stx && stx->done) {
			status = stx->status;
			free(stx);
			stx = NULL;
			sending = 0;
			if (status < 0) {
				status = ohc_bs_sock_peer_error_locked(
					ep, x->send_to, x, 1);
				break;
			}
		}
		if (receiving) {
			struct sock_peer *p = &ep->peers[x->recv_from];
			struct sock_msg *m =
				match_locked(p, ctx, x->type, x->recv_tag);

			if (m && m->len != x->recv_len) {
				OHC_ERROR(OHC_SS_BOOT,
					  "rank %u: bootstrap %s: rank %u sent "
					  "%zu bytes, %zu expected",
					  me, x->what, x->recv_from, m->len,
					  x->recv_len);
				msg_free(m);
				x->culprit = x->recv_from;
				status = OHC_ERR_INVALID;
				break;
			}
			if (m) {
				if (m->len)
					memcpy(x->recv_buf, m->data, m->len);
				msg_free(m);
				receiving = 0;
			} else if (ohc_bs_sock_recv_dead(p)) {
				status = ohc_bs_sock_peer_error_locked(
					ep, x->recv_from, x, 0);
				break;
			}
		}
		if (sending && ohc_bs_sock_send_dead(&ep->peers[x->send_to])) {
			status = ohc_bs_sock_peer_error_locked(ep, x->send_to,
							       x, 1);
			break;
		}
		if (!sending && !receiving) {
			status = OHC_OK;
			break;
		}
		if (ohc_deadline_passed(deadline)) {
			uint32_t who = receiving ? x->recv_from : x->send_to;

			OHC_ERROR(
				OHC_SS_BOOT,
				"rank %u: bootstrap %s timed out after %" PRIu64
				" ms waiting for rank %u (%s) to %s",
				me, x->what, bs_ms_since(t0), who,
				ep->peers[who].where,
				receiving ? "send" : "receive");
			x->culprit = who;
			status = OHC_ERR_TIMEOUT;
			break;
		}
		ohc_bs_sock_progress_locked(ep, deadline);
	}
out:
	if (stx) {
		if (stx->done) {
			free(stx);
		} else if (stx->tx.off == 0) {
			ohc_list_del(&stx->link);
			free(stx);
		} else if (ohc_frame_tx_own(&stx->tx) == OHC_OK) {
			stx->orphan = 1; /* finishes in the background */
		} else {
			ohc_bs_sock_out_down_locked(&ep->peers[x->send_to],
						    DOWN_ERROR, ENOMEM);
			free(stx);
		}
	}
	pthread_mutex_unlock(&ep->lock);
	return status;
}

static void sock_fail(struct bs_ep *super, ohc_status_t why, uint32_t culprit)
{
	struct sock_ep *ep = sock_ep_of(super);
	struct ohc_frame_hdr h = {.type = BS_T_ABORT, .len = BS_ABORT_BYTES};
	uint8_t pl[BS_ABORT_BYTES];

	pthread_mutex_lock(&ep->lock);
	if (ep->broken || ep->aborted) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	ep->broken = why;
	ohc_be_put32(pl, super->rank);
	ohc_be_put32(pl + 4, culprit);
	ohc_be_put32(pl + 8, (uint32_t)(int32_t)why);
	for (uint32_t r = 0; r < super->nranks; r++) {
		struct sock_peer *p = &ep->peers[r];
		struct ohc_frame_tx tx;
		int err;

		/* Tell the peer (unless a frame is half written there),
		 * then cut both directions: it sees ABORT or EOF at once. */
		if (p->out_state == OUT_OPEN && ohc_list_empty(&p->txq)) {
			ohc_frame_tx_init(&tx, &bs_proto, &h, pl);
			(void)ohc_frame_tx_write(p->out_fd, &tx, &err);
		}
		if (p->in_fd >= 0) {
			ohc_frame_tx_init(&tx, &bs_proto, &h, pl);
			(void)ohc_frame_tx_write(p->in_fd, &tx, &err);
		}
		if (p->out_fd >= 0)
			shutdown(p->out_fd, SHUT_RDWR);
		if (p->in_fd >= 0)
			shutdown(p->in_fd, SHUT_RDWR);
	}
	OHC_DEBUG(OHC_SS_BOOT, "rank %u: bootstrap poisoned (%s)", super->rank,
		  ohc_status_str(why));
	ohc_bs_sock_wake_locked(ep);
	pthread_cond_broadcast(&ep->cond);
	pthread_mutex_unlock(&ep->lock);
}

static void sock_abort(struct bs_ep *super)
{
	struct sock_ep *ep = sock_ep_of(super);

	pthread_mutex_lock(&ep->lock);
	ep->aborted = 1;
	ohc_bs_sock_wake_locked(ep);
	pthread_cond_broadcast(&ep->cond);
	pthread_mutex_unlock(&ep->lock);
}

static const char *sock_hostid(struct bs_ep *super, uint32_t rank)
{
	return sock_ep_of(super)->peers[rank].hostid;
}

void ohc_bs_sock_free(struct sock_ep *ep, int locks)
{
	for (uint32_t r = 0; ep->peers && r < ep->super.nranks; r++) {
		struct sock_peer *p = &ep->peers[r];

		while (!ohc_list_empty(&p->txq)) {
			struct sock_tx *stx =
				ohc_list_first(&p->txq, struct sock_tx, link);

			ohc_list_del(&stx->link);
			free(stx->tx.owned);
			free(stx);
		}
		while (!ohc_list_empty(&p->msgs))
			msg_free(ohc_list_first(&p->msgs, struct sock_msg,
						link));
		ohc_frame_rx_reset(&p->out_rx);
		ohc_frame_rx_reset(&p->in_rx);
		ohc_bs_close_fd(&p->out_fd);
		ohc_bs_close_fd(&p->in_fd);
	}
	bs_gate_fini(&ep->gate);
	ohc_bs_close_fd(&ep->listen_fd);
	ohc_bs_close_fd(&ep->wake_fd);
	if (locks) {
		pthread_mutex_destroy(&ep->lock);
		pthread_cond_destroy(&ep->cond);
	}
	free(ep->peers);
	free(ep->pfd);
	free(ep->pwho);
	free(ep);
}

static void sock_release(struct bs_ep *super)
{
	ohc_bs_sock_free(sock_ep_of(super), 1);
}

static const struct bs_ep_ops sock_ops = {
	.name = "socket",
	.xfer = sock_xfer,
	.fail = sock_fail,
	.abort = sock_abort,
	.hostid = sock_hostid,
	.release = sock_release,
};

/* ---------------------------------------------------------------------- */
/* Allocation                                                             */

ohc_status_t ohc_bs_sock_alloc(uint32_t nranks, uint32_t rank, uint64_t token,
			       struct sock_ep **ep_p)
{
	struct sock_ep *ep = calloc(1, sizeof(*ep));
	pthread_condattr_t ca;

	if (!ep)
		return OHC_ERR_NO_MEMORY;
	ep->super.ops = &sock_ops;
	ep->super.rank = rank;
	ep->super.nranks = nranks;
	ep->super.refs = 1;
	ep->token = token;
	{
		char where[48];

		snprintf(where, sizeof(where), "bootstrap rank %u", rank);
		bs_gate_init(&ep->gate, where, BS_HELLO_BYTES);
	}
	ep->listen_fd = -1;
	ep->wake_fd = -1;
	ep->peers = calloc(nranks, sizeof(*ep->peers));
	ep->pcap = 2 + 2 * (size_t)nranks;
	ep->pfd = calloc(ep->pcap, sizeof(*ep->pfd));
	ep->pwho = calloc(ep->pcap, sizeof(*ep->pwho));
	if (!ep->peers || !ep->pfd || !ep->pwho) {
		free(ep->peers);
		ep->peers = NULL;
		ohc_bs_sock_free(ep, 0);
		return OHC_ERR_NO_MEMORY;
	}
	for (uint32_t r = 0; r < nranks; r++) {
		struct sock_peer *p = &ep->peers[r];

		p->out_fd = p->in_fd = -1;
		ohc_frame_rx_init(&p->out_rx, &bs_proto, -1);
		ohc_frame_rx_init(&p->in_rx, &bs_proto, -1);
		ohc_list_init(&p->txq);
		ohc_list_init(&p->msgs);
	}
	ep->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ep->wake_fd < 0) {
		OHC_ERROR(OHC_SS_BOOT, "rank %u: eventfd failed: %s", rank,
			  strerror(errno));
		ohc_bs_sock_free(ep, 0);
		return OHC_ERR_SYSCALL;
	}
	pthread_mutex_init(&ep->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ep->cond, &ca);
	pthread_condattr_destroy(&ca);
	*ep_p = ep;
	return OHC_OK;
}
