/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bootstrap listeners: listen on the first free port of a list,
 * non-blocking and close-on-exec. Connect, accept and poll are the
 * handshake service's (util/hs.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/bootstrap/bs_internal.h"
#include "util/log.h"

/* ---------------------------------------------------------------------- */
/* Sockets                                                                */

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
