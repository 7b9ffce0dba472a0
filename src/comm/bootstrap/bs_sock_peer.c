/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket endpoint, per peer: a direction going down (why, and the one
 * line that says so), and output: frames queued on the out connection,
 * which is opened on first use and starts with our HELLO.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap/bs_socket.h"
#include "util/log.h"

/* ---------------------------------------------------------------------- */
/* Peers going down                                                       */

static void tx_finish(struct sock_tx *stx, ohc_status_t status)
{
	ohc_list_del(&stx->link);
	stx->done = 1;
	stx->status = status;
	if (stx->orphan) {
		free(stx->tx.owned);
		free(stx);
	}
}

void ohc_bs_sock_out_down_locked(struct sock_peer *p, enum down_kind why,
				 int err)
{
	if (p->out_down)
		return;
	p->out_down = why;
	p->out_err = err;
	p->out_state = OUT_DOWN;
	ohc_frame_rx_reset(&p->out_rx);
	ohc_bs_close_fd(&p->out_fd);
	while (!ohc_list_empty(&p->txq))
		tx_finish(ohc_list_first(&p->txq, struct sock_tx, link),
			  OHC_ERR_REMOTE);
}

void ohc_bs_sock_in_down_locked(struct sock_peer *p, enum down_kind why,
				int err)
{
	if (p->in_down)
		return;
	p->in_down = why;
	p->in_err = err;
	ohc_frame_rx_reset(&p->in_rx);
	ohc_bs_close_fd(&p->in_fd);
}

/* No more messages can come from p: its connection to us ended, or it
 * never opened one and our connection to it shows it is gone. */
int ohc_bs_sock_recv_dead(const struct sock_peer *p)
{
	int gone = p->out_down == DOWN_EOF || p->out_down == DOWN_ERROR ||
		   p->out_down == DOWN_PROTO ||
		   (p->out_down == DOWN_CONNECT && p->out_err == ECONNREFUSED);

	return p->aborted || p->in_down || (p->in_fd < 0 && gone);
}

int ohc_bs_sock_send_dead(const struct sock_peer *p)
{
	return p->aborted || p->out_down;
}

void ohc_bs_sock_peer_aborted_locked(struct sock_peer *p, uint32_t nranks,
				     const uint8_t *pl, size_t len)
{
	if (p->aborted)
		return;
	p->aborted = 1;
	bs_abort_parse(pl, len, nranks, &p->abort_culprit, &p->abort_status);
}

/* Log why p cannot serve x (one line) and return the status. */
ohc_status_t ohc_bs_sock_peer_error_locked(struct sock_ep *ep, uint32_t rank,
					   struct bs_xfer *x, int sending)
{
	struct sock_peer *p = &ep->peers[rank];
	uint32_t me = ep->super.rank;
	enum down_kind why = sending ? p->out_down : p->in_down;
	int err = sending ? p->out_err : p->in_err;

	x->culprit = rank;
	if (p->aborted) {
		char c[32] = "";

		if (p->abort_culprit != BS_NO_RANK && p->abort_culprit != rank)
			snprintf(c, sizeof(c), " after rank %u failed",
				 p->abort_culprit);
		OHC_ERROR(OHC_SS_BOOT,
			  "rank %u: bootstrap %s: rank %u (%s) gave up on the "
			  "bootstrap%s: %s",
			  me, x->what, rank, p->where, c,
			  ohc_status_str((ohc_status_t)p->abort_status));
		if (p->abort_culprit != BS_NO_RANK)
			x->culprit = p->abort_culprit;
		return OHC_ERR_REMOTE;
	}
	if (!sending && !why && p->out_down) {
		why = p->out_down;
		err = p->out_err;
	}
	switch (why) {
	case DOWN_CONNECT:
		OHC_ERROR(OHC_SS_BOOT,
			  "rank %u: bootstrap %s: cannot connect to rank %u at "
			  "%s: %s",
			  me, x->what, rank, p->where, strerror(err));
		break;
	case DOWN_EOF:
		OHC_ERROR(OHC_SS_BOOT,
			  "rank %u: bootstrap %s: rank %u (%s) closed its "
			  "connection (exited or destroyed its bootstrap)",
			  me, x->what, rank, p->where);
		break;
	case DOWN_PROTO:
		OHC_ERROR(OHC_SS_BOOT,
			  "rank %u: bootstrap %s: rank %u (%s) sent malformed "
			  "data",
			  me, x->what, rank, p->where);
		break;
	default:
		OHC_ERROR(OHC_SS_BOOT,
			  "rank %u: bootstrap %s: connection to rank %u (%s) "
			  "failed: %s",
			  me, x->what, rank, p->where, strerror(err));
		break;
	}
	return OHC_ERR_REMOTE;
}

/* ---------------------------------------------------------------------- */
/* Output                                                                 */

void ohc_bs_sock_flush_locked(struct sock_peer *p)
{
	while (p->out_state == OUT_OPEN && !ohc_list_empty(&p->txq)) {
		struct sock_tx *stx =
			ohc_list_first(&p->txq, struct sock_tx, link);
		int err = 0;
		ohc_status_t status =
			ohc_frame_tx_write(p->out_fd, &stx->tx, &err);

		if (status == OHC_INPROGRESS)
			return;
		if (status < 0) {
			ohc_bs_sock_out_down_locked(p, DOWN_ERROR, err);
			return;
		}
		p->out_written = 1;
		tx_finish(stx, OHC_OK);
	}
}

/* Errors of this process, not of the peer: the connection may be tried
 * again later. */
static int local_errno(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS ||
	       err == ENOMEM || err == EAGAIN;
}

/*
 * Start connecting to peer `rank` (with a queued HELLO) if not yet.
 * Returns 0, or the errno of a local failure (logged here; nothing
 * changes, so a later call may succeed). A refused connection marks the
 * peer's out direction down.
 */
int ohc_bs_sock_ensure_out_locked(struct sock_ep *ep, uint32_t rank,
				  const char *what)
{
	struct sock_peer *p = &ep->peers[rank];
	struct ohc_frame_hdr h = {.type = BS_T_HELLO, .len = BS_HELLO_BYTES};
	struct sock_tx *hello;
	uint8_t *pl;
	ohc_status_t status;
	int fd = -1, err = 0;

	if (p->out_state != OUT_NONE)
		return 0;
	hello = calloc(1, sizeof(*hello) + BS_HELLO_BYTES);
	if (!hello) {
		err = ENOMEM;
		goto local;
	}
	status = ohc_hs_connect_start(&p->addr.u.sa, p->addr.len, SOCK_STREAM,
				      &fd, &err);
	if (status < 0) {
		free(hello);
		if (local_errno(err) || status == OHC_ERR_SYSCALL)
			goto local;
		ohc_bs_sock_out_down_locked(p, DOWN_CONNECT, err);
		return 0;
	}
	p->out_fd = fd;
	p->out_state = status == OHC_OK ? OUT_OPEN : OUT_CONNECTING;
	ohc_frame_rx_init(&p->out_rx, &bs_proto, fd);
	pl = (uint8_t *)(hello + 1);
	ohc_be_put64(pl, ep->token);
	ohc_be_put32(pl + 8, ep->super.rank);
	ohc_be_put32(pl + 12, rank);
	ohc_be_put32(pl + 16, ep->super.nranks);
	ohc_be_put32(pl + 20, 0);
	ohc_frame_tx_init(&hello->tx, &bs_proto, &h, pl);
	hello->orphan = 1;
	ohc_list_add_tail(&p->txq, &hello->link);
	ohc_bs_sock_flush_locked(p);
	ohc_bs_sock_wake_locked(ep);
	return 0;

local:
	OHC_ERROR(OHC_SS_BOOT,
		  "rank %u: bootstrap %s: cannot open a connection to rank %u "
		  "(%s): %s",
		  ep->super.rank, what, rank, p->where, strerror(err));
	return err;
}
