/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handshake service (hs.h): socket primitives with deadlines, and
 * sessions with one peer whose failures name the peer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/compiler.h"
#include "util/hs.h"
#include "util/time.h"

/* ---- socket primitives ------------------------------------------------ */

int ohc_hs_poll(struct pollfd *fds, nfds_t n, uint64_t deadline, int cap_ms)
{
	for (;;) {
		int ms = ohc_deadline_left_ms(deadline, cap_ms);
		int r = poll(fds, n, ms);

		if (r >= 0 || errno != EINTR)
			return r;
		if (ohc_deadline_passed(deadline))
			return 0;
	}
}

ohc_status_t ohc_hs_wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int r = ohc_hs_poll(&p, 1, deadline, 1000);

		if (r > 0)
			return OHC_OK;
		if (r < 0)
			return OHC_ERR_SYSCALL;
		if (ohc_deadline_passed(deadline))
			return OHC_ERR_TIMEOUT;
	}
}

static void set_nodelay(int fd, int family)
{
	int one = 1;

	/* Best effort: only latency depends on it. */
	if (family == AF_INET || family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				 sizeof(one));
}

ohc_status_t ohc_hs_connect_start(const struct sockaddr *sa, socklen_t len,
				  int type, int *fd_p, int *err_p)
{
	int fd = socket(sa->sa_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		*err_p = errno;
		return OHC_ERR_SYSCALL;
	}
	set_nodelay(fd, sa->sa_family);
	if (connect(fd, sa, len) == 0) {
		*fd_p = fd;
		return OHC_OK;
	}
	if (errno == EINPROGRESS || errno == EINTR) {
		*fd_p = fd;
		return OHC_INPROGRESS;
	}
	*err_p = errno;
	close(fd);
	return OHC_ERR_TCP_CONNECT;
}

ohc_status_t ohc_hs_connect_check(int fd, int *err_p)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		err = errno;
	if (err) {
		*err_p = err;
		return OHC_ERR_TCP_CONNECT;
	}
	return OHC_OK;
}

int ohc_hs_connect_retryable(int err)
{
	return err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET ||
	       err == EHOSTUNREACH || err == ENETUNREACH || err == EAGAIN ||
	       err == ENOENT;
}

ohc_status_t ohc_hs_accept_one(int lfd, int *fd_p, struct sockaddr *peer,
			       socklen_t *len_p, int *err_p)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			set_nodelay(fd, ss.ss_family);
			if (peer && len_p) {
				if (len > *len_p)
					len = *len_p;
				memcpy(peer, &ss, len);
				*len_p = len;
			}
			*fd_p = fd;
			return OHC_OK;
		}
		if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return OHC_INPROGRESS;
		*err_p = errno;
		return OHC_ERR_SYSCALL;
	}
}

/* ---- a session with one peer ------------------------------------------ */

void ohc_hs_init(struct ohc_hs *hs, const struct ohc_frame_proto *p,
		 const char *peer, uint64_t token, uint64_t deadline)
{
	memset(hs, 0, sizeof(*hs));
	hs->proto = p;
	hs->peer = peer;
	hs->token = token;
	hs->deadline = deadline;
	hs->t0 = ohc_time_ns();
}

void ohc_hs_name(struct ohc_hs *hs, const char *peer)
{
	hs->peer = peer;
}

static uint64_t hs_ms(const struct ohc_hs *hs)
{
	return (ohc_time_ns() - hs->t0) / 1000000u;
}

/* Record a failure: err, and "<peer>: <fmt...>" in why. Returns status. */
OHC_PRINTF(4, 5)
static ohc_status_t hs_fail(struct ohc_hs *hs, ohc_status_t status, int err,
			    const char *fmt, ...)
{
	va_list ap;
	int n;

	hs->err = err;
	n = snprintf(hs->why, sizeof(hs->why),
		     "%s: ", hs->peer ? hs->peer : "peer");
	if (n < 0 || (size_t)n >= sizeof(hs->why))
		return status;
	va_start(ap, fmt);
	vsnprintf(hs->why + n, sizeof(hs->why) - (size_t)n, fmt, ap);
	va_end(ap);
	return status;
}

ohc_status_t ohc_hs_connect(struct ohc_hs *hs, const struct sockaddr *sa,
			    socklen_t len, int type, int *fd_p)
{
	int backoff_ms = 10, err = 0;

	for (;;) {
		ohc_status_t status;
		int fd = -1;

		status = ohc_hs_connect_start(sa, len, type, &fd, &err);
		if (status == OHC_INPROGRESS) {
			status = ohc_hs_wait_fd(fd, POLLOUT, hs->deadline);
			if (status == OHC_OK)
				status = ohc_hs_connect_check(fd, &err);
			else if (status == OHC_ERR_TIMEOUT)
				err = ETIMEDOUT;
			else
				err = errno;
			if (status != OHC_OK)
				close(fd);
		}
		if (status == OHC_OK) {
			*fd_p = fd;
			return OHC_OK;
		}
		if (status == OHC_ERR_SYSCALL)
			return hs_fail(hs, status, err, "cannot connect: %s",
				       strerror(err));
		if (status != OHC_ERR_TIMEOUT &&
		    (hs->once || !ohc_hs_connect_retryable(err)))
			return hs_fail(hs, status, err, "connect failed: %s",
				       strerror(err));
		if (status != OHC_ERR_TIMEOUT &&
		    !ohc_deadline_passed(hs->deadline)) {
			(void)ohc_hs_poll(NULL, 0, hs->deadline, backoff_ms);
			backoff_ms = backoff_ms >= 100 ? 200 : backoff_ms * 2;
		}
		if (status == OHC_ERR_TIMEOUT ||
		    ohc_deadline_passed(hs->deadline))
			return hs_fail(hs, OHC_ERR_TIMEOUT, err,
				       "connect timed out after %" PRIu64
				       " ms: %s",
				       hs_ms(hs), strerror(err));
	}
}

ohc_status_t ohc_hs_accept(struct ohc_hs *hs, int lfd, int *fd_p)
{
	for (;;) {
		ohc_status_t status;
		int err = 0;

		status = ohc_hs_accept_one(lfd, fd_p, NULL, NULL, &err);
		if (status == OHC_OK)
			return OHC_OK;
		if (status < 0)
			return hs_fail(hs, status, err, "accept failed: %s",
				       strerror(err));
		status = ohc_hs_wait_fd(lfd, POLLIN, hs->deadline);
		if (status == OHC_ERR_TIMEOUT)
			return hs_fail(hs, status, ETIMEDOUT,
				       "no connection: accept timed out after "
				       "%" PRIu64 " ms",
				       hs_ms(hs));
		if (status < 0)
			return hs_fail(hs, status, errno, "poll failed: %s",
				       strerror(errno));
	}
}

/* A failed send or receive of a frame, in words. */
static ohc_status_t io_fail(struct ohc_hs *hs, ohc_status_t status, int err,
			    const char *what, const char *fault)
{
	if (status == OHC_ERR_TIMEOUT)
		return hs_fail(hs, status, ETIMEDOUT,
			       "timed out after %" PRIu64 " ms %s", hs_ms(hs),
			       what);
	if (status == OHC_ERR_INVALID)
		return hs_fail(hs, status, 0, "%s", fault);
	if (status == OHC_ERR_REMOTE && !err)
		return hs_fail(hs, status, 0, "closed the connection");
	if (status == OHC_ERR_NO_MEMORY)
		return hs_fail(hs, status, ENOMEM, "out of memory %s", what);
	return hs_fail(hs, status, err, "connection failed %s: %s", what,
		       strerror(err));
}

ohc_status_t ohc_hs_send(struct ohc_hs *hs, int fd,
			 const struct ohc_frame_hdr *h, const void *payload)
{
	ohc_status_t status;
	int err = 0;

	status = ohc_frame_send(fd, hs->proto, h, payload, hs->deadline, &err);
	if (status < 0)
		return io_fail(hs, status, err, "sending a frame", NULL);
	return OHC_OK;
}

ohc_status_t ohc_hs_recv(struct ohc_hs *hs, int fd, size_t max_len,
			 struct ohc_frame_hdr *h_p, uint8_t **payload_p)
{
	char why[OHC_FRAME_WHY_MAX];
	ohc_status_t status;
	int err = 0;

	status = ohc_frame_recv(fd, hs->proto, max_len, hs->deadline, h_p,
				payload_p, &err, why);
	if (status < 0)
		return io_fail(hs, status, err, "waiting for a frame", why);
	return OHC_OK;
}

/* ---- hellos ----------------------------------------------------------- */

static void hello_hdr(const struct ohc_hs *hs, const struct ohc_hs_hello *m,
		      struct ohc_frame_hdr *h)
{
	h->type = m->type;
	h->ctx = hs->token;
	h->tag = (uint64_t)m->from << 32 | m->to;
	h->len = m->len;
}

ohc_status_t ohc_hs_hello_check(const struct ohc_hs *hs,
				const struct ohc_frame_hdr *h,
				struct ohc_hs_hello *m,
				char why[OHC_FRAME_WHY_MAX])
{
	uint32_t to = (uint32_t)h->tag;

	if (h->type != m->type)
		snprintf(why, OHC_FRAME_WHY_MAX, "a frame of type %u, not %u",
			 h->type, m->type);
	else if (h->ctx != hs->token)
		snprintf(why, OHC_FRAME_WHY_MAX, "wrong token");
	else if (m->to != OHC_HS_ANY && to != m->to)
		snprintf(why, OHC_FRAME_WHY_MAX, "hello for %u, not %u", to,
			 m->to);
	else if (h->len != m->len)
		snprintf(why, OHC_FRAME_WHY_MAX,
			 "frame too short: %" PRIu64 " < %zu", h->len, m->len);
	else {
		m->from = (uint32_t)(h->tag >> 32);
		return OHC_OK;
	}
	return OHC_ERR_INVALID;
}

ohc_status_t ohc_hs_hello_send(struct ohc_hs *hs, int fd,
			       const struct ohc_hs_hello *m)
{
	struct ohc_frame_hdr h;

	hello_hdr(hs, m, &h);
	return ohc_hs_send(hs, fd, &h, m->body);
}

ohc_status_t ohc_hs_hello_recv(struct ohc_hs *hs, int fd,
			       struct ohc_hs_hello *m)
{
	char why[OHC_FRAME_WHY_MAX];
	struct ohc_frame_hdr h;
	uint8_t *pl = NULL;
	ohc_status_t status;

	status = ohc_hs_recv(hs, fd, m->len, &h, &pl);
	if (status < 0)
		return status;
	status = ohc_hs_hello_check(hs, &h, m, why);
	if (status == OHC_OK && m->len)
		memcpy(m->body, pl, m->len);
	free(pl);
	if (status < 0)
		return hs_fail(hs, status, h.ctx != hs->token ? EACCES : 0,
			       "%s", why);
	return OHC_OK;
}

ohc_status_t ohc_hs_msg_send(struct ohc_hs *hs, int fd,
			     const struct ohc_hs_hello *m)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * OHC_HS_FDS_MAX)];
		struct cmsghdr align;
	} cbuf;
	uint8_t hbuf[OHC_FRAME_HDR_BYTES];
	struct iovec iov[2] = {{hbuf, sizeof(hbuf)}, {m->body, m->len}};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = m->len ? 2 : 1};
	struct ohc_frame_hdr h;
	ssize_t r;

	hello_hdr(hs, m, &h);
	ohc_frame_hdr_encode(hs->proto, &h, hbuf);
	if (m->nfds > OHC_HS_FDS_MAX)
		return hs_fail(hs, OHC_ERR_INVALID, EINVAL,
			       "%u descriptors to pass (at most %d)", m->nfds,
			       OHC_HS_FDS_MAX);
	if (m->nfds) {
		struct cmsghdr *c;

		memset(&cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * m->nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * m->nfds);
		memcpy(CMSG_DATA(c), m->fds, sizeof(int) * m->nfds);
	}
	do
		r = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r == (ssize_t)(sizeof(hbuf) + m->len))
		return OHC_OK;
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return OHC_INPROGRESS;
	if (r >= 0)
		return hs_fail(hs, OHC_ERR_REMOTE, EMSGSIZE,
			       "message cut short: %zd of %zu bytes", r,
			       sizeof(hbuf) + m->len);
	return hs_fail(hs, OHC_ERR_REMOTE, errno, "send failed: %s",
		       strerror(errno));
}

/* The fds that came with msg: the first OHC_HS_FDS_MAX to fds, the
 * count returned; others closed. */
static unsigned msg_fds(struct msghdr *msg, int fds[OHC_HS_FDS_MAX])
{
	unsigned n = 0;

	for (unsigned i = 0; i < OHC_HS_FDS_MAX; i++)
		fds[i] = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c;
	     c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0;
		     i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int),
			       sizeof(int));
			if (n < OHC_HS_FDS_MAX)
				fds[n] = got;
			else
				close(got);
			n++;
		}
	}
	return n;
}

ohc_status_t ohc_hs_msg_recv(struct ohc_hs *hs, int fd, struct ohc_hs_hello *m)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} cbuf;
	uint8_t hbuf[OHC_FRAME_HDR_BYTES], extra;
	struct iovec iov[3] = {
		{hbuf, sizeof(hbuf)}, {m->body, m->len}, {&extra, 1}};
	struct msghdr msg = {
		.msg_iov = iov,
		.msg_iovlen = 3,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	char why[OHC_FRAME_WHY_MAX];
	struct ohc_frame_hdr h;
	int passed[OHC_HS_FDS_MAX], err = 0;
	unsigned nfds;
	ssize_t r;

	m->nfds = 0;
	do
		r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return OHC_INPROGRESS;
	if (r < 0)
		return hs_fail(hs, OHC_ERR_REMOTE, errno, "recv failed: %s",
			       strerror(errno));
	nfds = msg_fds(&msg, passed);
	if (r == 0 && !nfds)
		return hs_fail(hs, OHC_ERR_REMOTE, 0, "closed the connection");
	if ((size_t)r < sizeof(hbuf))
		snprintf(why, sizeof(why), "frame too short: %zd bytes", r);
	else if (ohc_frame_hdr_decode(hs->proto, hbuf, m->len, &h, why) < 0)
		;
	else if ((msg.msg_flags & MSG_TRUNC) ||
		 (size_t)r != sizeof(hbuf) + h.len)
		snprintf(why, sizeof(why), "frame of %" PRIu64 " bytes in %zd",
			 h.len, r - (ssize_t)sizeof(hbuf));
	else if (ohc_hs_hello_check(hs, &h, m, why) < 0)
		err = h.ctx != hs->token ? EACCES : 0;
	else if (msg.msg_flags & MSG_CTRUNC) {
		snprintf(why, sizeof(why),
			 "fds cut off: none left (ulimit -n)");
		err = EMFILE;
	} else if (nfds > OHC_HS_FDS_MAX)
		snprintf(why, sizeof(why), "%u descriptors attached", nfds);
	else {
		memcpy(m->fds, passed, sizeof(passed));
		m->nfds = nfds;
		return OHC_OK;
	}
	for (unsigned i = 0; i < OHC_HS_FDS_MAX; i++)
		if (passed[i] >= 0)
			close(passed[i]);
	return hs_fail(hs, OHC_ERR_INVALID, err, "%s", why);
}
