/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bootstrap sockets: listen on the first free port of a list, connect
 * (started and checked, or within a deadline with retries), accept, and
 * poll with deadlines. All are non-blocking and close-on-exec; nothing
 * here blocks without a deadline.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/bootstrap/bs_internal.h"
#include "util/log.h"
#include "util/time.h"

/* ---------------------------------------------------------------------- */
/* Sockets                                                                */

static void set_nodelay(int fd)
{
	int one = 1;

	/* Best effort: only latency depends on it. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* socket + bind + listen on one port; -1 with errno on failure. */
static int try_listen(const struct bs_addr *addr, uint16_t port)
{
	struct bs_addr a = *addr;
	int fd, one = 1, err;

	bs_addr_set_port(&a, port);
	fd = socket(a.u.sa.sa_family,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, &a.u.sa, a.len) || listen(fd, SOMAXCONN)) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

ohc_status_t bs_listen(struct bs_addr *addr, const struct bs_ports *ports,
		       int *fd_p)
{
	char where[BS_ADDR_STRLEN];
	struct bs_addr bound;
	socklen_t len = sizeof(bound.u);
	int fd = -1;

	bs_addr_ip_str(addr, where, sizeof(where));
	for (unsigned i = 0; i <= ports->n && fd < 0; i++) {
		unsigned lo = 0, hi = 0;

		if (i == ports->n && !ports->ephemeral)
			break;
		if (i < ports->n) {
			lo = ports->lo[i];
			hi = ports->hi[i];
		}
		for (unsigned port = lo; port <= hi && fd < 0; port++) {
			fd = try_listen(addr, (uint16_t)port);
			if (fd >= 0)
				break;
			if (errno != EADDRINUSE) {
				OHC_ERROR(OHC_SS_BOOT,
					  "cannot listen on %s port %u: %s",
					  where, port, strerror(errno));
				return errno == EADDRNOTAVAIL ? OHC_ERR_INVALID
							      : OHC_ERR_SYSCALL;
			}
		}
	}
	if (fd < 0) {
		OHC_ERROR(OHC_SS_BOOT,
			  "cannot listen on %s: every port of %s is in use",
			  where, ports->desc);
		return OHC_ERR_UNAVAILABLE;
	}
	memset(&bound, 0, sizeof(bound));
	if (getsockname(fd, &bound.u.sa, &len) != 0) {
		OHC_ERROR(OHC_SS_BOOT, "getsockname on %s failed: %s", where,
			  strerror(errno));
		close(fd);
		return OHC_ERR_SYSCALL;
	}
	bs_addr_set_port(addr, ntohs(bound.u.sa.sa_family == AF_INET6
					     ? bound.u.in6.sin6_port
					     : bound.u.in.sin_port));
	*fd_p = fd;
	return OHC_OK;
}

ohc_status_t bs_connect_start(const struct bs_addr *a, int *fd_p, int *err_p)
{
	int fd = socket(a->u.sa.sa_family,
			SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		*err_p = errno;
		return OHC_ERR_SYSCALL;
	}
	set_nodelay(fd);
	if (connect(fd, &a->u.sa, a->len) == 0) {
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

ohc_status_t bs_connect_check(int fd, int *err_p)
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

static int connect_retryable(int err)
{
	return err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET ||
	       err == EHOSTUNREACH || err == ENETUNREACH || err == EAGAIN;
}

ohc_status_t bs_connect(const struct bs_addr *a, uint64_t deadline, int retry,
			int *fd_p, int *err_p)
{
	int backoff_ms = 10;

	for (;;) {
		ohc_status_t status;
		int fd = -1;

		status = bs_connect_start(a, &fd, err_p);
		if (status == OHC_INPROGRESS) {
			status = bs_wait_fd(fd, POLLOUT, deadline);
			if (status == OHC_OK)
				status = bs_connect_check(fd, err_p);
			else if (status == OHC_ERR_TIMEOUT)
				*err_p = ETIMEDOUT;
			if (status != OHC_OK)
				close(fd);
		}
		if (status == OHC_OK) {
			*fd_p = fd;
			return OHC_OK;
		}
		if (status == OHC_ERR_TIMEOUT)
			return status;
		if (!retry || !connect_retryable(*err_p))
			return status;
		if (ohc_deadline_passed(deadline))
			return OHC_ERR_TIMEOUT;
		(void)bs_poll(NULL, 0, deadline, backoff_ms);
		if (ohc_deadline_passed(deadline))
			return OHC_ERR_TIMEOUT;
		backoff_ms = backoff_ms >= 100 ? 200 : backoff_ms * 2;
	}
}

ohc_status_t bs_accept(int lfd, int *fd_p, struct bs_addr *peer_p, int *err_p)
{
	struct bs_addr peer;

	for (;;) {
		socklen_t len = sizeof(peer.u);
		int fd;

		memset(&peer, 0, sizeof(peer));
		fd = accept4(lfd, &peer.u.sa, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			set_nodelay(fd);
			peer.len = len;
			*peer_p = peer;
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

int bs_poll(struct pollfd *fds, nfds_t n, uint64_t deadline, int cap_ms)
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

ohc_status_t bs_wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int r = bs_poll(&p, 1, deadline, 1000);

		if (r > 0)
			return OHC_OK;
		if (r < 0)
			return OHC_ERR_SYSCALL;
		if (ohc_deadline_passed(deadline))
			return OHC_ERR_TIMEOUT;
	}
}
