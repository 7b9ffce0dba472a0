/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket endpoint, input and progress: frames read from the peers'
 * connections into their queues, new connections held by the gate until
 * their HELLO, and the poll round (one thread polls with the lock dropped,
 * the others wait for its round to end).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "comm/bootstrap/bs_socket.h"
#include "util/time.h"

#define WHO_WAKE 0u
#define WHO_LISTEN 1u
#define WHO_GATE 2u	     /* + gate entry */
#define WHO_PEER 0x40000000u /* + 2 * rank (+1 = in) */

/* ---------------------------------------------------------------------- */
/* Input                                                                  */

void ohc_bs_sock_queue_msg_locked(struct sock_peer *p,
				  const struct ohc_frame_hdr *h, uint8_t *data)
{
	struct sock_msg *m = malloc(sizeof(*m));

	if (!m) {
		free(data);
		ohc_bs_sock_in_down_locked(p, DOWN_ERROR, ENOMEM);
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

static void in_read_locked(struct sock_peer *p, uint32_t nranks)
{
	while (p->in_fd >= 0) {
		struct ohc_frame_hdr h;
		uint8_t *pl;
		int err = 0;
		ohc_status_t status = ohc_frame_rx_read(
			&p->in_rx, OHC_BOOTSTRAP_MAX_MSG, &err);

		if (status == OHC_INPROGRESS)
			return;
		if (status < 0) {
			ohc_bs_sock_in_down_locked(
				p, down_kind_of(status, err),
				status == OHC_ERR_NO_MEMORY ? ENOMEM : err);
			return;
		}
		pl = ohc_frame_rx_take(&p->in_rx, &h);
		if (h.type == BS_T_COLL || h.type == BS_T_DATA) {
			ohc_bs_sock_queue_msg_locked(p, &h, pl);
			continue;
		}
		if (h.type == BS_T_ABORT)
			ohc_bs_sock_peer_aborted_locked(p, nranks, pl, h.len);
		else
			ohc_bs_sock_in_down_locked(p, DOWN_PROTO, EPROTO);
		free(pl);
	}
}

static void out_read_locked(struct sock_peer *p, uint32_t nranks)
{
	while (p->out_fd >= 0) {
		struct ohc_frame_hdr h;
		uint8_t *pl;
		int err = 0;
		ohc_status_t status =
			ohc_frame_rx_read(&p->out_rx, BS_ABORT_BYTES, &err);

		if (status == OHC_INPROGRESS)
			return;
		if (status < 0) {
			ohc_bs_sock_out_down_locked(
				p, down_kind_of(status, err),
				status == OHC_ERR_NO_MEMORY ? ENOMEM : err);
			return;
		}
		pl = ohc_frame_rx_take(&p->out_rx, &h);
		if (h.type == BS_T_ABORT)
			ohc_bs_sock_peer_aborted_locked(p, nranks, pl, h.len);
		else
			ohc_bs_sock_out_down_locked(p, DOWN_PROTO, EPROTO);
		free(pl);
	}
}

/* Read the HELLO of gate entry i; install or refuse it. */
static void gate_read_locked(struct sock_ep *ep, unsigned i)
{
	uint32_t me = ep->super.rank, n = ep->super.nranks, from;
	const char *why;
	char who[48];
	struct ohc_frame_hdr h;
	uint8_t *pl = NULL;
	int fd;

	if (bs_gate_read(&ep->gate, i, &h, &pl) != OHC_OK)
		return;
	why = bs_hello_check(&h, pl, ep->token, me, n, &from);
	if (!why && ep->peers[from].in_seen)
		why = "a second connection from the same rank";
	free(pl);
	if (why) {
		snprintf(who, sizeof(who), "a peer claiming rank %u", from);
		bs_gate_refuse(&ep->gate, i, OHC_OK, who, why);
		return;
	}
	fd = bs_gate_take(&ep->gate, i, NULL);
	ep->peers[from].in_fd = fd;
	ep->peers[from].in_seen = 1;
	ohc_frame_rx_init(&ep->peers[from].in_rx, &bs_proto, fd);
	/* Frames may already follow the HELLO. */
	in_read_locked(&ep->peers[from], n);
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

static void out_event_locked(struct sock_peer *p, uint32_t nranks, short ev)
{
	int err = 0;

	if (p->out_state == OUT_CONNECTING) {
		if (!(ev & (POLLOUT | POLLERR | POLLHUP)))
			return;
		if (ohc_hs_connect_check(p->out_fd, &err) != OHC_OK) {
			ohc_bs_sock_out_down_locked(p, DOWN_CONNECT, err);
			return;
		}
		p->out_state = OUT_OPEN;
	}
	if (p->out_state != OUT_OPEN)
		return;
	if (ev & (POLLOUT | POLLERR))
		ohc_bs_sock_flush_locked(p);
	if (p->out_fd >= 0 && (ev & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)))
		out_read_locked(p, nranks);
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
	rc = ohc_hs_poll(ep->pfd, n, deadline, 1000);
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
			out_event_locked(&ep->peers[(who - WHO_PEER) / 2],
					 ep->super.nranks, ev);
		} else {
			in_read_locked(&ep->peers[(who - WHO_PEER) / 2],
				       ep->super.nranks);
		}
	}
	pthread_cond_broadcast(&ep->cond);
}

/* Poll, or wait for the thread that polls; bounded by deadline. */
void ohc_bs_sock_progress_locked(struct sock_ep *ep, uint64_t deadline)
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
