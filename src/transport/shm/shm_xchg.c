/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shm connect-time exchange: every rank listens on an abstract unix
 * socket named after the session and its rank, connects to each peer's,
 * and each side of a pair hands the other its segment's memfd and its
 * doorbell's eventfd (SCM_RIGHTS), after checking the session token (the
 * hello) and the peer's uid (SO_PEERCRED). Strangers are refused and
 * logged. The sockets are closed once every peer's segment is mapped
 * (shm_seg.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport/shm/shm.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/time.h"

#define CONNECT_RETRY_MS 5 /* between connect() attempts to a peer */
#define RECONNECTS_MAX 2   /* connections that ended without an answer */

int ohc_shm_test_drop_hellos;

/* Abstract socket address of (session, rank); returns the address length. */
socklen_t ohc_shm_sockaddr(uint64_t session, uint32_t rank,
			   struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
		     "ohc-%016" PRIx64 "-%" PRIu32, session, rank);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   (size_t)n);
}

const char *ohc_shm_hello_check(const struct ohc_shm_hello *h, size_t len,
				uint32_t kind, uint64_t session)
{
	if (len != sizeof(*h) || h->magic != OHC_SHM_HELLO_MAGIC ||
	    h->kind != kind)
		return "malformed hello";
	if (h->session != session)
		return "wrong session token";
	return NULL;
}

/* Per-peer state of the exchange. */
struct xpeer {
	struct ohc_shm_ep *ep;
	int out_fd;    /* our connection to the peer's listener */
	int out_state; /* 0 none, 1 connecting, 2 hello sent, 3 done */
	uint64_t retry_at;
	int reconnects; /* connections that ended without an answer */
	int in_done;	/* our memfd went to the peer */
	int peer_fd; /* the peer's memfd, once received */
	int peer_bell_fd; /* and its doorbell's eventfd */
	uint64_t peer_seg_bytes;
};

struct xchg {
	struct ohc_shm_iface *sif;
	struct xpeer *peers;
	unsigned n;
	int *pending; /* accepted, not yet identified; -1 = free slot */
	unsigned npending;
	uid_t uid;
};

static struct xpeer *xchg_find(struct xchg *x, uint32_t rank)
{
	for (unsigned i = 0; i < x->n; i++)
		if (x->peers[i].ep->super.peer == rank)
			return &x->peers[i];
	return NULL;
}

static int xchg_cred_ok(struct xchg *x, int fd, pid_t *pid_p)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) ||
	    cr.uid != x->uid)
		return 0;
	*pid_p = cr.pid;
	return 1;
}

static ohc_status_t xchg_send_hello(struct xchg *x, struct xpeer *p)
{
	struct ohc_shm_hello h = {
		.magic = OHC_SHM_HELLO_MAGIC,
		.session = x->sif->session,
		.kind = OHC_SHM_HELLO_CONNECT,
		.rank = x->sif->super.rank,
		.pid = x->sif->pid,
	};
	ssize_t r = send(p->out_fd, &h, sizeof(h), MSG_NOSIGNAL);

	if (r == (ssize_t)sizeof(h)) {
		p->out_state = 2;
		return OHC_OK;
	}
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		p->out_state = 1;
		return OHC_OK;
	}
	OHC_ERROR(OHC_SS_SHM, "rank %u: shm hello to rank %u failed: %s",
		  x->sif->super.rank, p->ep->super.peer,
		  r < 0 ? strerror(errno) : "short write");
	return OHC_ERR_SYSCALL;
}

/* Try to connect to a peer's listener; a missing listener is retried. */
static ohc_status_t xchg_connect(struct xchg *x, struct xpeer *p)
{
	struct sockaddr_un sa;
	socklen_t salen =
		ohc_shm_sockaddr(x->sif->session, p->ep->super.peer, &sa);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
			0);

	if (fd < 0) {
		OHC_ERROR(OHC_SS_SHM, "rank %u: socket(AF_UNIX) failed: %s",
			  x->sif->super.rank, strerror(errno));
		return OHC_ERR_SYSCALL;
	}
	if (connect(fd, (struct sockaddr *)&sa, salen) == 0) {
		p->out_fd = fd;
		return xchg_send_hello(x, p);
	}
	if (errno == EINPROGRESS) {
		p->out_fd = fd;
		p->out_state = 1;
		return OHC_OK;
	}
	close(fd);
	if (p->reconnects && (errno == ECONNREFUSED || errno == ENOENT)) {
		/* it listened before: its connect is over, ours failed */
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: shm connect to rank %u failed: it stopped "
			  "listening before answering us",
			  x->sif->super.rank, p->ep->super.peer);
		return OHC_ERR_REMOTE;
	}
	if (errno == ECONNREFUSED || errno == ENOENT || errno == EAGAIN ||
	    errno == EINTR) {
		p->retry_at = ohc_time_ns() + CONNECT_RETRY_MS * 1000000ull;
		return OHC_OK;
	}
	OHC_ERROR(OHC_SS_SHM, "rank %u: connect to rank %u's @%s failed: %s",
		  x->sif->super.rank, p->ep->super.peer, sa.sun_path + 1,
		  strerror(errno));
	return OHC_ERR_SYSCALL;
}

/* The peer answered on our connection: take its memfd. */
static ohc_status_t xchg_take_reply(struct xchg *x, struct xpeer *p)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} cbuf;
	struct ohc_shm_hello h;
	struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *c;
	int fd = -1, bell_fd = -1, nfds = 0;
	const char *why = NULL;
	pid_t cred_pid = 0;
	ssize_t r;

	r = recvmsg(p->out_fd, &msg, MSG_CMSG_CLOEXEC);
	if (r < 0 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return OHC_OK;
	for (c = CMSG_FIRSTHDR(&msg); r >= 0 && c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0;
		     i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int),
			       sizeof(int));
			if (nfds == 0)
				fd = got;
			else if (nfds == 1)
				bell_fd = got;
			else
				close(got);
			nfds++;
		}
	}
	if (r == 0 && p->reconnects < RECONNECTS_MAX) {
		/*
		 * Ended with nothing to read and no error: the peer closed
		 * our connection with our hello read but unanswered, and a
		 * peer that refuses one logs why. Seen twice in CI under
		 * load (a rank's connection to a live peer that logged
		 * nothing; not reproduced in 400 stress runs), so connect
		 * once more: a peer that still listens answers the new one,
		 * a peer whose connect is over refuses it at once.
		 */
		OHC_WARN(OHC_SS_SHM,
			 "rank %u: shm connection to rank %u ended without an "
			 "answer; connecting again (%d of %d)",
			 x->sif->super.rank, p->ep->super.peer,
			 p->reconnects + 1, RECONNECTS_MAX);
		if (fd >= 0)
			close(fd);
		if (bell_fd >= 0)
			close(bell_fd);
		close(p->out_fd);
		p->out_fd = -1;
		p->out_state = 0;
		p->retry_at = 0;
		p->reconnects++;
		return OHC_OK;
	}
	if (r < 0)
		why = strerror(errno);
	else if (r == 0)
		why = "it closed the connection without answering";
	else if ((why = ohc_shm_hello_check(&h, (size_t)r, OHC_SHM_HELLO_REPLY,
					    x->sif->session)))
		;
	else if (h.rank != p->ep->super.peer)
		why = "answer from another rank";
	else if (msg.msg_flags & MSG_CTRUNC)
		why = "its segment's fds were cut off: this process has no "
		      "file descriptors left (ulimit -n)";
	else if (nfds != 2)
		why = "no segment and doorbell attached";
	else if (!xchg_cred_ok(x, p->out_fd, &cred_pid))
		why = "peer runs as another user";
	if (why) {
		if (fd >= 0)
			close(fd);
		if (bell_fd >= 0)
			close(bell_fd);
		OHC_ERROR(OHC_SS_SHM,
			  "rank %u: shm connect to rank %u refused: %s",
			  x->sif->super.rank, p->ep->super.peer, why);
		return OHC_ERR_REMOTE;
	}
	p->peer_fd = fd;
	p->peer_bell_fd = bell_fd;
	p->peer_seg_bytes = h.seg_bytes;
	p->out_state = 3;
	close(p->out_fd);
	p->out_fd = -1;
	if (cred_pid != p->ep->pid)
		OHC_DEBUG(OHC_SS_SHM,
			  "rank %u: rank %u has pid %d here, %d in its blob "
			  "(pid namespaces differ)",
			  x->sif->super.rank, p->ep->super.peer, (int)cred_pid,
			  (int)p->ep->pid);
	p->ep->pid = cred_pid;
	return OHC_OK;
}

/*
 * An accepted connection spoke: check the token and who it is, then send
 * our memfd. Strangers are refused and logged; they do not fail connect.
 */
static void xchg_serve(struct xchg *x, unsigned slot)
{
	int fd = x->pending[slot];
	int fds[2] = {x->sif->seg_fd, x->sif->bell_fd};
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} cbuf;
	struct ohc_shm_hello h, rep;
	struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *c;
	struct xpeer *p = NULL;
	const char *why = NULL;
	pid_t cred_pid = 0;
	ssize_t r;

	r = recv(fd, &h, sizeof(h), 0);
	if (r < 0 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r <= 0)
		why = "closed before saying who it is";
	else if ((why = ohc_shm_hello_check(&h, (size_t)r,
					    OHC_SHM_HELLO_CONNECT,
					    x->sif->session)))
		;
	else if (!xchg_cred_ok(x, fd, &cred_pid))
		why = "runs as another user";
	else if (!(p = xchg_find(x, h.rank)))
		why = "not a peer of this connect";
	else if (p->in_done)
		why = "second hello from the same rank";
	if (why) {
		OHC_WARN(OHC_SS_SHM,
			 "rank %u: refused a shm connection (claims rank %d, "
			 "pid %d): %s",
			 x->sif->super.rank, r > 0 ? (int)h.rank : -1,
			 (int)cred_pid, why);
		goto done;
	}

	if (OHC_UNLIKELY(ohc_shm_test_drop_hellos > 0)) {
		ohc_shm_test_drop_hellos--; /* the fault seam: no word */
		goto done;
	}
	memset(&rep, 0, sizeof(rep));
	rep.magic = OHC_SHM_HELLO_MAGIC;
	rep.session = x->sif->session;
	rep.kind = OHC_SHM_HELLO_REPLY;
	rep.rank = x->sif->super.rank;
	rep.pid = x->sif->pid;
	rep.seg_bytes = x->sif->hdr->seg_bytes;
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	if (sendmsg(fd, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof(rep)) {
		/* The peer sees EOF and reports us; nothing else to do. */
		OHC_WARN(OHC_SS_SHM,
			 "rank %u: sending the shm segment to rank %u failed: "
			 "%s",
			 x->sif->super.rank, h.rank, strerror(errno));
		goto done;
	}
	p->in_done = 1;
done:
	close(fd);
	x->pending[slot] = -1;
}

static void xchg_accept(struct xchg *x)
{
	for (;;) {
		int fd = accept4(x->sif->listen_fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		unsigned i;

		if (fd < 0)
			return;
		for (i = 0; i < x->npending && x->pending[i] >= 0; i++)
			;
		if (i == x->npending) {
			OHC_WARN(OHC_SS_SHM,
				 "rank %u: too many unidentified shm "
				 "connections; dropping one",
				 x->sif->super.rank);
			close(fd);
			continue;
		}
		x->pending[i] = fd;
	}
}

static int xchg_done(const struct xchg *x)
{
	for (unsigned i = 0; i < x->n; i++)
		if (x->peers[i].out_state != 3 || !x->peers[i].in_done)
			return 0;
	return 1;
}

static void xchg_log_timeout(const struct xchg *x, uint64_t t0)
{
	char list[512];
	size_t off = 0;

	list[0] = 0;
	for (unsigned i = 0; i < x->n && off < sizeof(list) - 48; i++) {
		const struct xpeer *p = &x->peers[i];
		const char *why = NULL;

		if (p->out_state == 0)
			why = "not listening";
		else if (p->out_state < 3)
			why = "no answer";
		else if (!p->in_done)
			why = "never connected to us";
		if (why)
			off += (size_t)snprintf(list + off, sizeof(list) - off,
						"%s%u (%s)", off ? ", " : "",
						p->ep->super.peer, why);
	}
	OHC_ERROR(OHC_SS_SHM,
		  "rank %u: shm connect timed out after %" PRIu64
		  " ms; peers that did not answer: %s",
		  x->sif->super.rank,
		  (uint64_t)((ohc_time_ns() - t0) / 1000000u), list);
}

/* One round of the poll loop; OHC_INPROGRESS while not finished. */
static ohc_status_t xchg_round(struct xchg *x, struct pollfd *pfd,
			       uint64_t deadline)
{
	unsigned np = 0, retry = 0;
	uint64_t now = ohc_time_ns();
	ohc_status_t status;
	int ms;

	for (unsigned i = 0; i < x->n; i++) {
		struct xpeer *p = &x->peers[i];

		if (p->out_state == 0 && now >= p->retry_at) {
			status = xchg_connect(x, p);
			if (status < 0)
				return status;
		}
		retry |= p->out_state == 0;
	}
	if (xchg_done(x))
		return OHC_OK;

	pfd[np++] = (struct pollfd){.fd = x->sif->listen_fd, .events = POLLIN};
	for (unsigned i = 0; i < x->n; i++) {
		struct xpeer *p = &x->peers[i];

		if (p->out_state == 1)
			pfd[np++] = (struct pollfd){.fd = p->out_fd,
						    .events = POLLOUT};
		else if (p->out_state == 2)
			pfd[np++] = (struct pollfd){.fd = p->out_fd,
						    .events = POLLIN};
	}
	for (unsigned i = 0; i < x->npending; i++)
		if (x->pending[i] >= 0)
			pfd[np++] = (struct pollfd){.fd = x->pending[i],
						    .events = POLLIN};

	ms = ohc_deadline_left_ms(deadline, retry ? CONNECT_RETRY_MS : 100);
	if (ms <= 0 && ohc_deadline_passed(deadline))
		return OHC_ERR_TIMEOUT;
	if (poll(pfd, np, ms) < 0 && errno != EINTR) {
		OHC_ERROR(OHC_SS_SHM, "rank %u: poll failed: %s",
			  x->sif->super.rank, strerror(errno));
		return OHC_ERR_SYSCALL;
	}

	if (pfd[0].revents)
		xchg_accept(x);
	for (unsigned i = 0; i < x->n; i++) {
		struct xpeer *p = &x->peers[i];

		if (p->out_state == 1) {
			status = xchg_send_hello(x, p);
			if (status < 0)
				return status;
		} else if (p->out_state == 2) {
			status = xchg_take_reply(x, p);
			if (status < 0)
				return status;
		}
	}
	for (unsigned i = 0; i < x->npending; i++)
		if (x->pending[i] >= 0)
			xchg_serve(x, i);
	return xchg_done(x) ? OHC_OK : OHC_INPROGRESS;
}

ohc_status_t ohc_shm_seg_connect(struct ohc_shm_iface *sif,
				 struct ohc_shm_ep **eps, unsigned n,
				 uint64_t deadline)
{
	struct xchg x = {.sif = sif, .n = n, .uid = geteuid()};
	struct pollfd *pfd = NULL;
	uint64_t t0 = ohc_time_ns();
	ohc_status_t status;
	unsigned mapped = 0;

	status = ohc_shm_seg_build(sif, eps, n);
	if (status < 0)
		return status;

	x.npending = 2 * n + 8;
	x.peers = calloc(n ? n : 1, sizeof(*x.peers));
	x.pending = malloc(x.npending * sizeof(*x.pending));
	pfd = calloc(1 + n + x.npending, sizeof(*pfd));
	if (!x.peers || !x.pending || !pfd) {
		status = OHC_ERR_NO_MEMORY;
		goto out;
	}
	for (unsigned i = 0; i < x.npending; i++)
		x.pending[i] = -1;
	for (unsigned i = 0; i < n; i++) {
		x.peers[i].ep = eps[i];
		x.peers[i].out_fd = -1;
		x.peers[i].peer_fd = -1;
		x.peers[i].peer_bell_fd = -1;
	}

	do {
		status = xchg_round(&x, pfd, deadline);
		if (status == OHC_INPROGRESS && ohc_deadline_passed(deadline))
			status = OHC_ERR_TIMEOUT;
	} while (status == OHC_INPROGRESS);
	if (status == OHC_ERR_TIMEOUT)
		xchg_log_timeout(&x, t0);
	if (status < 0)
		goto out;

	for (mapped = 0; mapped < n; mapped++) {
		struct xpeer *p = &x.peers[mapped];

		status = ohc_shm_seg_map_peer(sif, p->ep, p->peer_fd,
					      p->peer_bell_fd,
					      p->peer_seg_bytes);
		if (status < 0)
			goto out;
		p->peer_bell_fd = -1; /* the ep's now */
	}

out:
	if (status < 0) {
		for (unsigned i = 0; i < mapped; i++)
			ohc_shm_ep_unmap(x.peers[i].ep);
	}
	for (unsigned i = 0; x.peers && i < n; i++) {
		if (x.peers[i].out_fd >= 0)
			close(x.peers[i].out_fd);
		if (x.peers[i].peer_fd >= 0)
			close(x.peers[i].peer_fd);
		if (x.peers[i].peer_bell_fd >= 0)
			close(x.peers[i].peer_bell_fd);
	}
	for (unsigned i = 0; x.pending && i < x.npending; i++)
		if (x.pending[i] >= 0)
			close(x.pending[i]);
	free(pfd);
	free(x.pending);
	free(x.peers);
	return status;
}
