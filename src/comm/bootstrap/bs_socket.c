/* SPDX-License-Identifier: Apache-2.0 */
/*
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
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "comm/bootstrap/bs_internal.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"
#include "util/time.h"

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
	struct bs_tx tx;
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
	struct bs_rx out_rx; /* only ABORT frames come back */
	struct ohc_list txq; /* struct sock_tx, head in progress */
	enum down_kind out_down;
	int out_err;
	int out_written; /* a frame (the HELLO first) went out */

	int in_fd;   /* the peer connected; we read */
	int in_seen; /* its HELLO arrived (in_fd may be closed since) */
	struct bs_rx in_rx;
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
	struct pollfd *pfd; /* poller only */
	uint32_t *pwho;
	size_t pcap;
};

#define WHO_WAKE 0u
#define WHO_LISTEN 1u
#define WHO_GATE 2u	     /* + gate entry */
#define WHO_PEER 0x40000000u /* + 2 * rank (+1 = in) */

static const struct bs_ep_ops sock_ops;

static struct sock_ep *sock_ep_of(struct bs_ep *super)
{
	return ohc_derived_of(super, struct sock_ep);
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

static void wake_locked(struct sock_ep *ep)
{
	uint64_t one = 1;

	if (ep->polling)
		(void)!write(ep->wake_fd, &one, sizeof(one));
}

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

static void out_down_locked(struct sock_peer *p, enum down_kind why, int err)
{
	if (p->out_down)
		return;
	p->out_down = why;
	p->out_err = err;
	p->out_state = OUT_DOWN;
	bs_rx_reset(&p->out_rx);
	close_fd(&p->out_fd);
	while (!ohc_list_empty(&p->txq))
		tx_finish(ohc_list_first(&p->txq, struct sock_tx, link),
			  OHC_ERR_REMOTE);
}

static void in_down_locked(struct sock_peer *p, enum down_kind why, int err)
{
	if (p->in_down)
		return;
	p->in_down = why;
	p->in_err = err;
	bs_rx_reset(&p->in_rx);
	close_fd(&p->in_fd);
}

/* No more messages can come from p: its connection to us ended, or it
 * never opened one and our connection to it shows it is gone. */
static int recv_dead(const struct sock_peer *p)
{
	int gone = p->out_down == DOWN_EOF || p->out_down == DOWN_ERROR ||
		   p->out_down == DOWN_PROTO ||
		   (p->out_down == DOWN_CONNECT && p->out_err == ECONNREFUSED);

	return p->aborted || p->in_down || (p->in_fd < 0 && gone);
}

static int send_dead(const struct sock_peer *p)
{
	return p->aborted || p->out_down;
}

static void peer_aborted_locked(struct sock_peer *p, const uint8_t *pl,
				size_t len)
{
	if (p->aborted)
		return;
	p->aborted = 1;
	p->abort_culprit = BS_NO_RANK;
	p->abort_status = OHC_ERR_REMOTE;
	if (len == BS_ABORT_BYTES) {
		p->abort_culprit = bs_get32(pl + 4);
		p->abort_status = (int32_t)bs_get32(pl + 8);
	}
}

/* Log why p cannot serve x (one line) and return the status. */
static ohc_status_t peer_error_locked(struct sock_ep *ep, uint32_t rank,
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

static void flush_locked(struct sock_peer *p)
{
	while (p->out_state == OUT_OPEN && !ohc_list_empty(&p->txq)) {
		struct sock_tx *stx =
			ohc_list_first(&p->txq, struct sock_tx, link);
		int err = 0;
		ohc_status_t status = bs_tx_write(p->out_fd, &stx->tx, &err);

		if (status == OHC_INPROGRESS)
			return;
		if (status < 0) {
			out_down_locked(p, DOWN_ERROR, err);
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
static int ensure_out_locked(struct sock_ep *ep, uint32_t rank,
			     const char *what)
{
	struct sock_peer *p = &ep->peers[rank];
	struct bs_hdr h = {.type = BS_T_HELLO, .len = BS_HELLO_BYTES};
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
	status = bs_connect_start(&p->addr, &fd, &err);
	if (status < 0) {
		free(hello);
		if (local_errno(err) || status == OHC_ERR_SYSCALL)
			goto local;
		out_down_locked(p, DOWN_CONNECT, err);
		return 0;
	}
	p->out_fd = fd;
	p->out_state = status == OHC_OK ? OUT_OPEN : OUT_CONNECTING;
	bs_rx_init(&p->out_rx, fd);
	pl = (uint8_t *)(hello + 1);
	bs_put64(pl, ep->token);
	bs_put32(pl + 8, ep->super.rank);
	bs_put32(pl + 12, rank);
	bs_put32(pl + 16, ep->super.nranks);
	bs_put32(pl + 20, 0);
	bs_tx_init(&hello->tx, &h, pl);
	hello->orphan = 1;
	ohc_list_add_tail(&p->txq, &hello->link);
	flush_locked(p);
	wake_locked(ep);
	return 0;

local:
	OHC_ERROR(OHC_SS_BOOT,
		  "rank %u: bootstrap %s: cannot open a connection to rank %u "
		  "(%s): %s",
		  ep->super.rank, what, rank, p->where, strerror(err));
	return err;
}

/* ---------------------------------------------------------------------- */
/* Input                                                                  */

static void queue_msg_locked(struct sock_peer *p, const struct bs_hdr *h,
			     uint8_t *data)
{
	struct sock_msg *m = malloc(sizeof(*m));

	if (!m) {
		free(data);
		in_down_locked(p, DOWN_ERROR, ENOMEM);
		return;
	}
	m->ctx = h->ctx;
	m->tag = h->tag;
	m->type = h->type;
	m->len = h->len;
	m->data = data;
	ohc_list_add_tail(&p->msgs, &m->link);
}

/* How a failed bs_rx_read leaves the connection. */
static enum down_kind down_kind_of(ohc_status_t status, int err)
{
	if (status == OHC_ERR_INVALID)
		return DOWN_PROTO;
	if (status == OHC_ERR_NO_MEMORY || err)
		return DOWN_ERROR;
	return DOWN_EOF;
}

static void in_read_locked(struct sock_peer *p)
{
	while (p->in_fd >= 0) {
		struct bs_hdr h;
		uint8_t *pl;
		int err = 0;
		ohc_status_t status =
			bs_rx_read(&p->in_rx, OHC_BOOTSTRAP_MAX_MSG, &err);

		if (status == OHC_INPROGRESS)
			return;
		if (status < 0) {
			in_down_locked(p, down_kind_of(status, err),
				       status == OHC_ERR_NO_MEMORY ? ENOMEM
								   : err);
			return;
		}
		pl = bs_rx_take(&p->in_rx, &h);
		if (h.type == BS_T_COLL || h.type == BS_T_DATA) {
			queue_msg_locked(p, &h, pl);
			continue;
		}
		if (h.type == BS_T_ABORT)
			peer_aborted_locked(p, pl, h.len);
		else
			in_down_locked(p, DOWN_PROTO, EPROTO);
		free(pl);
	}
}

static void out_read_locked(struct sock_peer *p)
{
	while (p->out_fd >= 0) {
		struct bs_hdr h;
		uint8_t *pl;
		int err = 0;
		ohc_status_t status =
			bs_rx_read(&p->out_rx, BS_ABORT_BYTES, &err);

		if (status == OHC_INPROGRESS)
			return;
		if (status < 0) {
			out_down_locked(p, down_kind_of(status, err),
					status == OHC_ERR_NO_MEMORY ? ENOMEM
								    : err);
			return;
		}
		pl = bs_rx_take(&p->out_rx, &h);
		if (h.type == BS_T_ABORT)
			peer_aborted_locked(p, pl, h.len);
		else
			out_down_locked(p, DOWN_PROTO, EPROTO);
		free(pl);
	}
}

/* Read the HELLO of gate entry i; install or refuse it. */
static void gate_read_locked(struct sock_ep *ep, unsigned i)
{
	uint32_t me = ep->super.rank, n = ep->super.nranks, from, to, nr;
	const char *why = NULL;
	char who[48];
	struct bs_hdr h;
	uint8_t *pl = NULL;
	int fd;

	if (bs_gate_read(&ep->gate, i, &h, &pl) != OHC_OK)
		return;
	from = to = nr = BS_NO_RANK;
	if (h.type != BS_T_HELLO || h.len != BS_HELLO_BYTES) {
		why = "not a bootstrap hello";
	} else {
		from = bs_get32(pl + 8);
		to = bs_get32(pl + 12);
		nr = bs_get32(pl + 16);
		if (bs_get64(pl) != ep->token)
			why = "wrong session token";
		else if (to != me || nr != n || from >= n || from == me)
			why = "rank numbers do not fit this communicator";
		else if (ep->peers[from].in_seen)
			why = "a second connection from the same rank";
	}
	free(pl);
	if (why) {
		snprintf(who, sizeof(who), "a peer claiming rank %u", from);
		bs_gate_refuse(&ep->gate, i, OHC_OK, who, why);
		return;
	}
	fd = bs_gate_take(&ep->gate, i, NULL);
	ep->peers[from].in_fd = fd;
	ep->peers[from].in_seen = 1;
	bs_rx_init(&ep->peers[from].in_rx, fd);
	/* Frames may already follow the HELLO. */
	in_read_locked(&ep->peers[from]);
}

/* New connections are read at once: a peer's HELLO is usually there. */
static void accept_locked(struct sock_ep *ep)
{
	unsigned first = bs_gate_accept(&ep->gate, ep->listen_fd);

	for (unsigned i = first; i < ep->gate.n; i++)
		gate_read_locked(ep, i);
}

/* Room in the pollset for what the gate and the peers may need. */
static int pollset_reserve_locked(struct sock_ep *ep)
{
	size_t cap = 2 + (size_t)ep->gate.n + 2 * (size_t)ep->super.nranks;
	struct pollfd *pfd;
	uint32_t *who;

	if (cap <= ep->pcap)
		return 1;
	pfd = realloc(ep->pfd, cap * sizeof(*pfd));
	if (!pfd)
		return 0;
	ep->pfd = pfd;
	who = realloc(ep->pwho, cap * sizeof(*who));
	if (!who)
		return 0;
	ep->pwho = who;
	ep->pcap = cap;
	return 1;
}

/* ---------------------------------------------------------------------- */
/* The poll round                                                         */

static size_t pollset_locked(struct sock_ep *ep)
{
	size_t n = 0;

	ep->pfd[n] = (struct pollfd){.fd = ep->wake_fd, .events = POLLIN};
	ep->pwho[n++] = WHO_WAKE;
	if (ep->listen_fd >= 0 && bs_gate_listening(&ep->gate)) {
		ep->pfd[n] =
			(struct pollfd){.fd = ep->listen_fd, .events = POLLIN};
		ep->pwho[n++] = WHO_LISTEN;
	}
	for (unsigned i = 0; i < ep->gate.n; i++) {
		ep->pfd[n] = (struct pollfd){.fd = ep->gate.conns[i].fd,
					     .events = POLLIN};
		ep->pwho[n++] = WHO_GATE + i;
	}
	for (uint32_t r = 0; r < ep->super.nranks; r++) {
		struct sock_peer *p = &ep->peers[r];

		if (p->out_fd >= 0) {
			short ev = POLLIN | POLLRDHUP;

			if (p->out_state == OUT_CONNECTING ||
			    !ohc_list_empty(&p->txq))
				ev |= POLLOUT;
			ep->pfd[n] =
				(struct pollfd){.fd = p->out_fd, .events = ev};
			ep->pwho[n++] = WHO_PEER + 2 * r;
		}
		if (p->in_fd >= 0) {
			ep->pfd[n] = (struct pollfd){.fd = p->in_fd,
						     .events = POLLIN};
			ep->pwho[n++] = WHO_PEER + 2 * r + 1;
		}
	}
	return n;
}

static void out_event_locked(struct sock_peer *p, short ev)
{
	int err = 0;

	if (p->out_state == OUT_CONNECTING) {
		if (!(ev & (POLLOUT | POLLERR | POLLHUP)))
			return;
		if (bs_connect_check(p->out_fd, &err) != OHC_OK) {
			out_down_locked(p, DOWN_CONNECT, err);
			return;
		}
		p->out_state = OUT_OPEN;
	}
	if (p->out_state != OUT_OPEN)
		return;
	if (ev & (POLLOUT | POLLERR))
		flush_locked(p);
	if (p->out_fd >= 0 && (ev & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)))
		out_read_locked(p);
}

/* One poll() with the lock dropped, then handle what it reported. */
static void poll_round_locked(struct sock_ep *ep, uint64_t deadline)
{
	size_t n;
	int rc;

	bs_gate_tidy(&ep->gate);
	if (!pollset_reserve_locked(ep)) {
		/* Out of memory: leave the newest connections waiting. */
		bs_gate_fini(&ep->gate);
	}
	n = pollset_locked(ep);
	ep->polling = 1;
	pthread_mutex_unlock(&ep->lock);
	rc = bs_poll(ep->pfd, n, deadline, 1000);
	pthread_mutex_lock(&ep->lock);
	ep->polling = 0;
	for (size_t k = 0; rc > 0 && k < n; k++) {
		short ev = ep->pfd[k].revents;
		uint32_t who = ep->pwho[k];

		if (!ev)
			continue;
		if (who == WHO_WAKE) {
			uint64_t v;

			(void)!read(ep->wake_fd, &v, sizeof(v));
		} else if (who == WHO_LISTEN) {
			accept_locked(ep);
		} else if (who < WHO_PEER) {
			gate_read_locked(ep, who - WHO_GATE);
		} else if ((who - WHO_PEER) % 2 == 0) {
			out_event_locked(&ep->peers[(who - WHO_PEER) / 2], ev);
		} else {
			in_read_locked(&ep->peers[(who - WHO_PEER) / 2]);
		}
	}
	pthread_cond_broadcast(&ep->cond);
}

/* Poll, or wait for the thread that polls; bounded by deadline. */
static void progress_locked(struct sock_ep *ep, uint64_t deadline)
{
	uint64_t until = ohc_time_ns() + 1000000000ull;
	struct timespec ts;

	if (!ep->polling) {
		poll_round_locked(ep, deadline);
		return;
	}
	if (deadline < until)
		until = deadline;
	ts.tv_sec = (time_t)(until / 1000000000ull);
	ts.tv_nsec = (long)(until % 1000000000ull);
	pthread_cond_timedwait(&ep->cond, &ep->lock, &ts);
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
	struct bs_hdr h = {.type = x->type,
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
	queue_msg_locked(p, &h, copy);
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
		struct bs_hdr h = {.type = x->type,
				   .ctx = ctx,
				   .tag = x->send_tag,
				   .len = x->send_len};

		if (ensure_out_locked(ep, x->send_to, x->what)) {
			x->culprit = x->send_to;
			status = OHC_ERR_SYSCALL;
			goto out;
		}
		if (send_dead(p)) {
			status = peer_error_locked(ep, x->send_to, x, 1);
			goto out;
		}
		stx = calloc(1, sizeof(*stx));
		if (!stx) {
			status = OHC_ERR_NO_MEMORY;
			goto out;
		}
		bs_tx_init(&stx->tx, &h, x->send_buf);
		ohc_list_add_tail(&p->txq, &stx->link);
		flush_locked(p);
		wake_locked(ep);
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
				status =
					peer_error_locked(ep, x->send_to, x, 1);
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
			} else if (recv_dead(p)) {
				status = peer_error_locked(ep, x->recv_from, x,
							   0);
				break;
			}
		}
		if (sending && send_dead(&ep->peers[x->send_to])) {
			status = peer_error_locked(ep, x->send_to, x, 1);
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
		progress_locked(ep, deadline);
	}
out:
	if (stx) {
		if (stx->done) {
			free(stx);
		} else if (stx->tx.off == 0) {
			ohc_list_del(&stx->link);
			free(stx);
		} else if (bs_tx_own(&stx->tx) == OHC_OK) {
			stx->orphan = 1; /* finishes in the background */
		} else {
			out_down_locked(&ep->peers[x->send_to], DOWN_ERROR,
					ENOMEM);
			free(stx);
		}
	}
	pthread_mutex_unlock(&ep->lock);
	return status;
}

static void sock_fail(struct bs_ep *super, ohc_status_t why, uint32_t culprit)
{
	struct sock_ep *ep = sock_ep_of(super);
	struct bs_hdr h = {.type = BS_T_ABORT, .len = BS_ABORT_BYTES};
	uint8_t pl[BS_ABORT_BYTES];

	pthread_mutex_lock(&ep->lock);
	if (ep->broken || ep->aborted) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	ep->broken = why;
	bs_put32(pl, super->rank);
	bs_put32(pl + 4, culprit);
	bs_put32(pl + 8, (uint32_t)(int32_t)why);
	for (uint32_t r = 0; r < super->nranks; r++) {
		struct sock_peer *p = &ep->peers[r];
		struct bs_tx tx;
		int err;

		/* Tell the peer (unless a frame is half written there),
		 * then cut both directions: it sees ABORT or EOF at once. */
		if (p->out_state == OUT_OPEN && ohc_list_empty(&p->txq)) {
			bs_tx_init(&tx, &h, pl);
			(void)bs_tx_write(p->out_fd, &tx, &err);
		}
		if (p->in_fd >= 0) {
			bs_tx_init(&tx, &h, pl);
			(void)bs_tx_write(p->in_fd, &tx, &err);
		}
		if (p->out_fd >= 0)
			shutdown(p->out_fd, SHUT_RDWR);
		if (p->in_fd >= 0)
			shutdown(p->in_fd, SHUT_RDWR);
	}
	OHC_DEBUG(OHC_SS_BOOT, "rank %u: bootstrap poisoned (%s)", super->rank,
		  ohc_status_str(why));
	wake_locked(ep);
	pthread_cond_broadcast(&ep->cond);
	pthread_mutex_unlock(&ep->lock);
}

static void sock_abort(struct bs_ep *super)
{
	struct sock_ep *ep = sock_ep_of(super);

	pthread_mutex_lock(&ep->lock);
	ep->aborted = 1;
	wake_locked(ep);
	pthread_cond_broadcast(&ep->cond);
	pthread_mutex_unlock(&ep->lock);
}

static const char *sock_hostid(struct bs_ep *super, uint32_t rank)
{
	return sock_ep_of(super)->peers[rank].hostid;
}

static void sock_free(struct sock_ep *ep, int locks)
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
		bs_rx_reset(&p->out_rx);
		bs_rx_reset(&p->in_rx);
		close_fd(&p->out_fd);
		close_fd(&p->in_fd);
	}
	bs_gate_fini(&ep->gate);
	close_fd(&ep->listen_fd);
	close_fd(&ep->wake_fd);
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
	sock_free(sock_ep_of(super), 1);
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
/* Joining                                                                */

static ohc_status_t sock_alloc(uint32_t nranks, uint32_t rank, uint64_t token,
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
		sock_free(ep, 0);
		return OHC_ERR_NO_MEMORY;
	}
	for (uint32_t r = 0; r < nranks; r++) {
		struct sock_peer *p = &ep->peers[r];

		p->out_fd = p->in_fd = -1;
		bs_rx_init(&p->out_rx, -1);
		bs_rx_init(&p->in_rx, -1);
		ohc_list_init(&p->txq);
		ohc_list_init(&p->msgs);
	}
	ep->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ep->wake_fd < 0) {
		OHC_ERROR(OHC_SS_BOOT, "rank %u: eventfd failed: %s", rank,
			  strerror(errno));
		sock_free(ep, 0);
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

/* The root's reply: the table, a refusal or an expiry. */
static ohc_status_t read_verdict(struct sock_ep *ep, int rfd, const char *root,
				 uint64_t deadline, uint64_t t0,
				 uint16_t my_port)
{
	uint32_t me = ep->super.rank, n = ep->super.nranks;
	size_t want = 4 + (size_t)n * BS_ENTRY_BYTES;
	char text[BS_TEXT_MAX + 1];
	struct bs_hdr h;
	uint8_t *pl = NULL;
	ohc_status_t status;
	int err = 0;

	status = bs_recv_frame(rfd,
			       want > BS_TEXT_MAX + 4 ? want : BS_TEXT_MAX + 4,
			       deadline, &h, &pl, &err);
	if (status == OHC_ERR_TIMEOUT) {
		OHC_ERROR(OHC_SS_BOOT,
			  "rank %u: no rank table from the bootstrap root at "
			  "%s after %" PRIu64 " ms",
			  me, root, bs_ms_since(t0));
		return OHC_ERR_TIMEOUT;
	}
	if (status < 0) {
		OHC_ERROR(OHC_SS_BOOT,
			  "rank %u: the bootstrap root at %s %s before sending "
			  "the rank table%s%s",
			  me, root,
			  status == OHC_ERR_INVALID ? "sent malformed data"
						    : "closed the connection",
			  err && status != OHC_ERR_INVALID ? ": " : "",
			  err && status != OHC_ERR_INVALID ? strerror(err)
							   : "");
		return OHC_ERR_TCP_CONNECT;
	}
	switch (h.type) {
	case BS_T_REFUSE:
		if (h.len < 4) {
			status = OHC_ERR_TCP_TRANSFER; /* logged below */
			break;
		}
		bs_text_clean(pl + 4, h.len - 4, text, sizeof(text));
		status = (ohc_status_t)(int32_t)bs_get32(pl);
		if (status != OHC_ERR_TCP_CONNECT &&
		    status != OHC_ERR_NO_MEMORY)
			status = OHC_ERR_INVALID;
		OHC_ERROR(
			OHC_SS_BOOT,
			"rank %u: the bootstrap root at %s refused this rank: "
			"%s",
			me, root, text);
		break;
	case BS_T_EXPIRED:
		bs_text_clean(pl, h.len, text, sizeof(text));
		OHC_ERROR(OHC_SS_BOOT,
			  "rank %u: bootstrap timed out at the root %s: %s", me,
			  root, text);
		status = OHC_ERR_TIMEOUT;
		break;
	case BS_T_TABLE:
		if (h.len != want || bs_get32(pl) != n) {
			status = OHC_ERR_TCP_TRANSFER;
			break;
		}
		for (uint32_t r = 0; r < n && status == OHC_OK; r++) {
			struct sock_peer *p = &ep->peers[r];
			const uint8_t *e = pl + 4 + (size_t)r * BS_ENTRY_BYTES;
			const uint8_t *hid = e + BS_WIRE_ADDR_BYTES;

			if (bs_addr_decode(e, &p->addr) != OHC_OK ||
			    !memchr(hid, '\0', OHC_HOSTID_MAX) || !hid[0] ||
			    (r == me && bs_addr_port(&p->addr) != my_port)) {
				status = OHC_ERR_TCP_TRANSFER;
				break;
			}
			memcpy(p->hostid, hid, OHC_HOSTID_MAX);
			bs_addr_str(&p->addr, p->where, sizeof(p->where));
		}
		break;
	default:
		status = OHC_ERR_TCP_TRANSFER;
		break;
	}
	if (status == OHC_ERR_TCP_TRANSFER)
		OHC_ERROR(
			OHC_SS_BOOT,
			"rank %u: malformed rank table from the bootstrap root "
			"at %s",
			me, root);
	free(pl);
	return status;
}

/* Connect to rank+1 and wait for rank-1 to connect to us. */
static ohc_status_t ring_up(struct sock_ep *ep, uint64_t deadline, uint64_t t0)
{
	uint32_t me = ep->super.rank, n = ep->super.nranks;
	uint32_t next = (me + 1) % n, prev = (me + n - 1) % n;
	struct sock_peer *pn = &ep->peers[next], *pp = &ep->peers[prev];
	ohc_status_t status = OHC_OK;

	pthread_mutex_lock(&ep->lock);
	if (ensure_out_locked(ep, next, "init")) {
		pthread_mutex_unlock(&ep->lock);
		return OHC_ERR_SYSCALL;
	}
	for (;;) {
		/* Both links came up; what happens to them later is for the
		 * next operation to find out. */
		if (pn->out_written && pp->in_seen)
			break;
		if (pn->out_down) {
			struct bs_xfer x = {.what = "init"};

			status = peer_error_locked(ep, next, &x, 1);
			break;
		}
		if (pp->aborted || pp->in_down) {
			struct bs_xfer x = {.what = "init"};

			status = peer_error_locked(ep, prev, &x, 0);
			break;
		}
		if (ohc_deadline_passed(deadline)) {
			OHC_ERROR(OHC_SS_BOOT,
				  "rank %u: bootstrap ring not connected after "
				  "%" PRIu64 " ms: %s",
				  me, bs_ms_since(t0),
				  !pp->in_seen ? "rank before us never "
						 "connected"
					       : "connection to the next rank "
						 "not established");
			status = OHC_ERR_TIMEOUT;
			break;
		}
		progress_locked(ep, deadline);
	}
	pthread_mutex_unlock(&ep->lock);
	return status;
}

/*
 * The root's first answer to our JOIN. OHC_OK: WELCOME with this job's
 * proof. OHC_ERR_NOT_FOUND (only when `probing`, i.e. other candidates
 * remain): not this job's root: refused for a wrong token, a wrong proof,
 * no answer by the deadline, closed; logged at DEBUG. Otherwise errors
 * are logged here: a refusal's status, OHC_ERR_TIMEOUT, or
 * OHC_ERR_TCP_CONNECT / OHC_ERR_TCP_TRANSFER.
 */
static ohc_status_t read_welcome(struct sock_ep *ep, int rfd, const char *root,
				 uint64_t deadline, uint64_t t0,
				 const struct bs_auth *auth, int probing)
{
	uint32_t me = ep->super.rank;
	char text[BS_TEXT_MAX + 1];
	const char *why = NULL;
	ohc_status_t status;
	struct bs_hdr h;
	uint8_t *pl = NULL;
	int err = 0;

	status = bs_recv_frame(rfd, BS_TEXT_MAX + 4, deadline, &h, &pl, &err);
	if (status == OHC_ERR_TIMEOUT) {
		why = "no answer to our join request";
		if (!probing) {
			OHC_ERROR(OHC_SS_BOOT,
				  "rank %u: no answer from the bootstrap root "
				  "at %s after %" PRIu64 " ms",
				  me, root, bs_ms_since(t0));
			return OHC_ERR_TIMEOUT;
		}
	} else if (status < 0) {
		why = status == OHC_ERR_INVALID ? "malformed data"
						: "connection closed";
		if (!probing) {
			OHC_ERROR(OHC_SS_BOOT,
				  "rank %u: the bootstrap root at %s %s "
				  "before accepting this rank",
				  me, root,
				  status == OHC_ERR_INVALID
					  ? "sent malformed data"
					  : "closed the connection");
			return OHC_ERR_TCP_CONNECT;
		}
	} else if (h.type == BS_T_WELCOME) {
		if (h.len == BS_WELCOME_BYTES &&
		    bs_get64(pl) == bs_auth_welcome(auth, me)) {
			free(pl);
			return OHC_OK;
		}
		why = "its welcome lacks this job's proof (another program on "
		      "the port, or a different OPENHCCL_BOOTSTRAP_SECRET)";
		if (!probing) {
			OHC_ERROR(OHC_SS_BOOT,
				  "rank %u: the bootstrap root at "
				  "%s is not this job's: %s",
				  me, root, why);
			free(pl);
			return OHC_ERR_INVALID;
		}
	} else if (h.type == BS_T_REFUSE && h.len >= 4) {
		bs_text_clean(pl + 4, h.len - 4, text, sizeof(text));
		status = (ohc_status_t)(int32_t)bs_get32(pl);
		if (probing && status == OHC_ERR_UNAVAILABLE) {
			why = "another job's root (wrong session token)";
		} else {
			if (status != OHC_ERR_TCP_CONNECT &&
			    status != OHC_ERR_NO_MEMORY)
				status = OHC_ERR_INVALID;
			OHC_ERROR(OHC_SS_BOOT,
				  "rank %u: the bootstrap root at %s refused "
				  "this rank: %s",
				  me, root, text);
			free(pl);
			return status;
		}
	} else {
		why = "unexpected data";
		if (!probing) {
			OHC_ERROR(OHC_SS_BOOT,
				  "rank %u: the bootstrap root at %s sent "
				  "malformed data before accepting this rank",
				  me, root);
			free(pl);
			return OHC_ERR_TCP_TRANSFER;
		}
	}
	free(pl);
	OHC_DEBUG(OHC_SS_BOOT,
		  "rank %u: %s is not this job's bootstrap root: %s", me, root,
		  why);
	return OHC_ERR_NOT_FOUND;
}

/*
 * Connect to one candidate root, open our listener on the way (the
 * address we reach the root from, unless configured), send JOIN and read
 * the WELCOME. On OHC_OK *rfd_p is the connection to wait on for the
 * table. OHC_ERR_NOT_FOUND (probing only): try the next candidate.
 */
static ohc_status_t try_root(struct sock_ep *ep, const struct bs_addr *root,
			     const struct bs_auth *auth, uint64_t timeout_ms,
			     uint64_t deadline, uint64_t verdict, uint64_t t0,
			     int probing, int *rfd_p)
{
	uint32_t rank = ep->super.rank, nranks = ep->super.nranks;
	uint8_t join[BS_JOIN_BYTES];
	struct bs_hdr h = {.type = BS_T_JOIN, .len = BS_JOIN_BYTES};
	char where[BS_ADDR_STRLEN], hostid[OHC_HOSTID_MAX];
	struct bs_addr laddr;
	struct bs_ports ports;
	socklen_t alen = sizeof(laddr.u);
	ohc_status_t status;
	uint64_t until;
	int rfd = -1, err = 0;

	bs_addr_str(root, where, sizeof(where));
	status = ohc_hostid_get(hostid, sizeof(hostid));
	if (status < 0)
		return status;
	until = probing ? OHC_MIN(deadline, ohc_deadline_after_ms(1000))
			: deadline;
	status = bs_connect(root, until, !probing, &rfd, &err);
	if (status < 0) {
		if (probing)
			return OHC_ERR_NOT_FOUND;
		OHC_ERROR(
			OHC_SS_BOOT,
			"rank %u: cannot reach the bootstrap root at %s%s: %s",
			rank, where,
			status == OHC_ERR_TIMEOUT ? " before the timeout" : "",
			strerror(err));
		return status;
	}
	if (ep->listen_fd < 0) {
		/* Listen where we reach the root from, unless told otherwise.
		 */
		memset(&laddr, 0, sizeof(laddr));
		if (bs_local_addr_forced()) {
			status = bs_local_addr(&laddr);
			if (status < 0)
				goto err_close;
		} else if (getsockname(rfd, &laddr.u.sa, &alen) != 0) {
			OHC_ERROR(OHC_SS_BOOT, "rank %u: getsockname: %s", rank,
				  strerror(errno));
			status = OHC_ERR_SYSCALL;
			goto err_close;
		} else {
			laddr.len = alen;
		}
		bs_addr_set_port(&laddr, 0);
		status = bs_ports_for_rank(&ports);
		if (status < 0)
			goto err_close;
		status = bs_listen(&laddr, &ports, &ep->listen_fd);
		if (status < 0)
			goto err_close;
		ep->listen_addr = laddr;
	}

	memset(join, 0, sizeof(join));
	bs_put64(join, ep->token);
	bs_put32(join + 8, nranks);
	bs_put32(join + 12, rank);
	bs_put64(join + 16, timeout_ms);
	bs_addr_encode(&ep->listen_addr, join + 24);
	memcpy(join + 24 + BS_WIRE_ADDR_BYTES, hostid, strlen(hostid) + 1);
	status = bs_send_frame(rfd, &h, join, deadline, &err);
	if (status < 0) {
		if (probing) {
			status = OHC_ERR_NOT_FOUND;
			goto err_close;
		}
		OHC_ERROR(OHC_SS_BOOT,
			  "rank %u: cannot register with the bootstrap root at "
			  "%s: %s",
			  rank, where,
			  status == OHC_ERR_TIMEOUT ? "timed out"
						    : strerror(err));
		if (status != OHC_ERR_TIMEOUT)
			status = OHC_ERR_TCP_CONNECT;
		goto err_close;
	}
	until = probing ? OHC_MIN(verdict, ohc_deadline_after_ms(2000))
			: verdict;
	status = read_welcome(ep, rfd, where, until, t0, auth, probing);
	if (status < 0)
		goto err_close;
	*rfd_p = rfd;
	return OHC_OK;

err_close:
	close_fd(&rfd);
	return status;
}

ohc_status_t bs_sock_join(const struct bs_addr *roots, unsigned nroots,
			  const struct bs_auth *auth, uint32_t nranks,
			  uint32_t rank, uint64_t timeout_ms,
			  struct bs_ep **ep_p)
{
	uint64_t t0 = ohc_time_ns();
	uint64_t deadline = ohc_deadline_after_ms(timeout_ms);
	uint64_t verdict =
		ohc_deadline_after_ms(timeout_ms + bs_grace_ms(timeout_ms));
	char where[BS_ADDR_STRLEN], last[BS_ADDR_STRLEN];
	struct sock_ep *ep;
	ohc_status_t status;
	int rfd = -1, probing = nroots > 1;
	unsigned k = 0;

	status = sock_alloc(nranks, rank, bs_auth_join(auth), &ep);
	if (status < 0)
		return status;
	/* With several candidates, round after round until one answers. */
	for (;;) {
		status = try_root(ep, &roots[k], auth, timeout_ms, deadline,
				  verdict, t0, probing, &rfd);
		if (status != OHC_ERR_NOT_FOUND)
			break;
		if (++k < nroots)
			continue;
		k = 0;
		if (ohc_deadline_passed(deadline)) {
			bs_addr_str(&roots[0], where, sizeof(where));
			bs_addr_str(&roots[nroots - 1], last, sizeof(last));
			OHC_ERROR(OHC_SS_BOOT,
				  "rank %u: no bootstrap root of this job "
				  "answered on %s .. %s within %" PRIu64 " ms",
				  rank, where, last, bs_ms_since(t0));
			status = OHC_ERR_TIMEOUT;
			break;
		}
		(void)bs_poll(NULL, 0,
			      OHC_MIN(deadline, ohc_deadline_after_ms(100)),
			      100);
	}
	if (status < 0)
		goto err_free;
	bs_addr_str(&roots[k], where, sizeof(where));
	status = read_verdict(ep, rfd, where, verdict, t0,
			      bs_addr_port(&ep->listen_addr));
	close_fd(&rfd);
	if (status < 0)
		goto err_free;

	if (nranks > 1) {
		status = ring_up(ep, verdict, t0);
		if (status < 0)
			goto err_free;
	}
	OHC_DEBUG(OHC_SS_BOOT, "rank %u/%u: bootstrap up (root %s)", rank,
		  nranks, where);
	*ep_p = &ep->super;
	return OHC_OK;

err_free:
	sock_free(ep, 1);
	return status;
}
