/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_COMM_BOOTSTRAP_BS_SOCKET_H
#define OHC_COMM_BOOTSTRAP_BS_SOCKET_H

/*
 * Private to the socket endpoint (bs_socket.c, bs_sock_peer.c,
 * bs_sock_poll.c, bs_sock_join.c): its objects and the functions its files
 * share.
 *
 * Socket endpoint: each rank listens, registers with the root, receives
 * the table of everyone's listen address and host id, then talks to its
 * peers over one TCP connection per direction and pair: the "out"
 * connection is opened by the sender (the ring neighbour at init, others
 * on first use) and starts with an authenticated HELLO; the receiver reads
 * frames from its "in" connection into per-peer queues, matched by
 * (ctx, type, tag) in arrival order.
 *
 * Progress: all socket I/O happens with ep->lock held, on non-blocking
 * sockets. A waiting thread either polls (dropping the lock for the poll()
 * only, with ep->polling set) or, when another thread polls, sleeps on
 * ep->cond until that round ends. A thread that queues new output while
 * someone polls kicks ep->wake_fd. So a world bootstrap and its sub-groups
 * can run in different threads, and a rank busy sending still drains what
 * its peers send to it (no deadlock on large messages).
 */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "comm/bootstrap/bs_internal.h"
#include "util/list.h"

enum out_state { OUT_NONE, OUT_CONNECTING, OUT_OPEN, OUT_DOWN };

/* Why a direction of a peer is unusable. */
enum down_kind { DOWN_NO, DOWN_EOF, DOWN_ERROR, DOWN_CONNECT, DOWN_PROTO };

struct sock_msg {
	struct ohc_list link;
	uint64_t ctx, tag;
	uint8_t type;
	size_t len;
	uint8_t *data;
};

struct sock_tx {
	struct ohc_list link; /* peer's txq while queued */
	struct ohc_frame_tx tx;
	int done; /* written, or failed (status) */
	ohc_status_t status;
	int orphan; /* nobody waits: freed when done */
};

struct sock_peer {
	struct bs_addr addr;
	char where[BS_ADDR_STRLEN];
	char hostid[OHC_HOSTID_MAX];

	int out_fd; /* we connected; we write */
	enum out_state out_state;
	struct ohc_frame_rx out_rx; /* only ABORT frames come back */
	struct ohc_list txq; /* struct sock_tx, head in progress */
	enum down_kind out_down;
	int out_err;
	int out_written; /* a frame (the HELLO first) went out */

	int in_fd;   /* the peer connected; we read */
	int in_seen; /* its HELLO arrived (in_fd may be closed since) */
	struct ohc_frame_rx in_rx;
	struct ohc_list msgs; /* struct sock_msg, arrival order */
	enum down_kind in_down;
	int in_err;

	int aborted; /* the peer poisoned its bootstrap */
	uint32_t abort_culprit;
	int32_t abort_status;
};

struct sock_ep {
	struct bs_ep super;
	uint64_t token;
	int listen_fd;
	struct bs_addr listen_addr; /* as announced in our JOIN */
	int wake_fd;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; a poll round ended */
	int polling;	     /* under lock: a thread is inside poll() */
	int aborted;	     /* under lock */
	ohc_status_t broken; /* under lock: sticky collective failure */
	struct sock_peer *peers;
	struct bs_gate gate; /* connections yet to say HELLO */
	struct pollfd *pfd;  /* poller only */
	uint32_t *pwho;
	size_t pcap;
};

/* Close *fd if open and set it to -1. */
static inline void ohc_bs_close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* Wake the thread inside poll(), if any, to see new output or state. */
static inline void ohc_bs_sock_wake_locked(struct sock_ep *ep)
{
	uint64_t one = 1;

	if (ep->polling)
		(void)!write(ep->wake_fd, &one, sizeof(one));
}

/* ---------------------------------------------------------------------- */
/* Peers going down, and output (bs_sock_peer.c). The *_locked functions  */
/* here and below expect ep->lock held.                                   */

void ohc_bs_sock_out_down_locked(struct sock_peer *p, enum down_kind why,
				 int err);
void ohc_bs_sock_in_down_locked(struct sock_peer *p, enum down_kind why,
				int err);
/* No more messages can come from p / none can go to it. */
int ohc_bs_sock_recv_dead(const struct sock_peer *p);
int ohc_bs_sock_send_dead(const struct sock_peer *p);
/* p sent ABORT (payload pl, len bytes). */
void ohc_bs_sock_peer_aborted_locked(struct sock_peer *p, uint32_t nranks,
				     const uint8_t *pl, size_t len);
/* Log why p cannot serve x (one line) and return the status. */
ohc_status_t ohc_bs_sock_peer_error_locked(struct sock_ep *ep, uint32_t rank,
					   struct bs_xfer *x, int sending);
/* Write what p's out connection has queued, as far as it goes now. */
void ohc_bs_sock_flush_locked(struct sock_peer *p);
/* Start connecting to peer `rank` (with a queued HELLO) if not yet: 0, or
 * the errno of a local failure (logged). */
int ohc_bs_sock_ensure_out_locked(struct sock_ep *ep, uint32_t rank,
				  const char *what);

/* ---------------------------------------------------------------------- */
/* Input and the poll round (bs_sock_poll.c).                             */

/* Queue a COLL or DATA message from p (takes data). */
void ohc_bs_sock_queue_msg_locked(struct sock_peer *p,
				  const struct ohc_frame_hdr *h, uint8_t *data);
/* Poll, or wait for the thread that polls; bounded by deadline. */
void ohc_bs_sock_progress_locked(struct sock_ep *ep, uint64_t deadline);

/* ---------------------------------------------------------------------- */
/* The endpoint (bs_socket.c); joining is bs_sock_join.c.                 */

ohc_status_t ohc_bs_sock_alloc(uint32_t nranks, uint32_t rank, uint64_t token,
			       struct sock_ep **ep_p);
/* Close and free everything; locks: ep->lock and ep->cond exist. */
void ohc_bs_sock_free(struct sock_ep *ep, int locks);

#endif
