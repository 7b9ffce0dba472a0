/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_HS_H
#define OHC_UTIL_HS_H

/*
 * The handshake service: how the library's socket protocols (the
 * bootstrap, the verbs and shm address exchanges, the doctor's ping)
 * connect, accept and speak frames (util/frame.h) before a deadline.
 *
 * Two levels:
 * - socket primitives for multiplexed loops (a started and checked
 *   connect, a non-blocking accept, poll and wait with deadlines): a
 *   status and an errno value, no text;
 * - a session with one peer (struct ohc_hs): connect (a refused or
 *   absent listener retried until the deadline), accept, whole frames,
 *   hellos that carry the session token, a frame with an fd over AF_UNIX.
 *   Every failure leaves hs->err (errno; EACCES for a hello with another
 *   token, 0 for other bytes that are not the protocol's) and
 *   hs->why, which names the peer and what happened:
 *   "rank 3 (10.0.0.2:5000): timed out after 200 ms waiting for a
 *   frame", "...: frame too long: 300 > 24", "...: wrong token". Nothing
 *   here logs: the caller logs hs->why once, with its subsystem and
 *   level, or shows it (the doctor).
 *
 * All sockets are non-blocking and close-on-exec; TCP ones have
 * TCP_NODELAY. Deadlines are ohc_time_ns() values (util/time.h).
 */
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "util/frame.h"
#include "util/status.h"

/* ---- socket primitives ------------------------------------------------ */

/* poll() with a deadline, capped at cap_ms, restarting on EINTR with the
 * time left; returns poll's result (0 on expiry) or -1. */
int ohc_hs_poll(struct pollfd *fds, nfds_t n, uint64_t deadline, int cap_ms);
/* Wait until fd is ready for events: OHC_OK, OHC_ERR_TIMEOUT when the
 * deadline passed, OHC_ERR_SYSCALL (errno). */
ohc_status_t ohc_hs_wait_fd(int fd, short events, uint64_t deadline);
/*
 * Start a connect of a socket of type (SOCK_STREAM, SOCK_SEQPACKET) to
 * sa: OHC_OK connected, OHC_INPROGRESS poll for POLLOUT then
 * ohc_hs_connect_check, OHC_ERR_TCP_CONNECT (*err_p) refused or
 * unreachable, OHC_ERR_SYSCALL no socket (*err_p).
 */
ohc_status_t ohc_hs_connect_start(const struct sockaddr *sa, socklen_t len,
				  int type, int *fd_p, int *err_p);
/* After POLLOUT/POLLERR on a connecting socket: OHC_OK or
 * OHC_ERR_TCP_CONNECT (*err_p). */
ohc_status_t ohc_hs_connect_check(int fd, int *err_p);
/* A connect error that means "nobody listens there yet": retried. */
int ohc_hs_connect_retryable(int err);
/* Accept one pending connection (peer, len_p may be NULL): OHC_OK,
 * OHC_INPROGRESS when none is pending, OHC_ERR_SYSCALL (*err_p). */
ohc_status_t ohc_hs_accept_one(int lfd, int *fd_p, struct sockaddr *peer,
			       socklen_t *len_p, int *err_p);

/* ---- a session with one peer ------------------------------------------ */

#define OHC_HS_WHY_MAX 256
#define OHC_HS_ANY UINT32_MAX /* hello: addressed to anyone */

struct ohc_hs {
	const struct ohc_frame_proto *proto;
	const char *peer;  /* names the peer in why ("rank 3 (ip:port)") */
	uint64_t token;	   /* the session token hellos carry and check */
	uint64_t deadline; /* every wait of the session ends by then */
	uint64_t t0;	   /* ohc_hs_init's time: "after N ms" */
	int once;	   /* connect: one try, no retry of a refusal */
	int err;	   /* errno of the last failure; 0: the bytes */
	char why[OHC_HS_WHY_MAX]; /* the last failure, peer named */
};

/* A session: peer is kept (not copied) until the last call. */
void ohc_hs_init(struct ohc_hs *hs, const struct ohc_frame_proto *p,
		 const char *peer, uint64_t token, uint64_t deadline);
/* Point the session at another peer (a listener learns who came). */
void ohc_hs_name(struct ohc_hs *hs, const char *peer);

/* Connect (retrying a refused or absent listener until the deadline,
 * unless hs->once): OHC_OK, OHC_ERR_TIMEOUT, OHC_ERR_TCP_CONNECT,
 * OHC_ERR_SYSCALL. */
ohc_status_t ohc_hs_connect(struct ohc_hs *hs, const struct sockaddr *sa,
			    socklen_t len, int type, int *fd_p);
/* Accept one connection before the deadline: OHC_OK, OHC_ERR_TIMEOUT,
 * OHC_ERR_SYSCALL. */
ohc_status_t ohc_hs_accept(struct ohc_hs *hs, int lfd, int *fd_p);

/* Whole frames (ohc_frame_send / ohc_frame_recv with the peer named). */
ohc_status_t ohc_hs_send(struct ohc_hs *hs, int fd,
			 const struct ohc_frame_hdr *h, const void *payload);
ohc_status_t ohc_hs_recv(struct ohc_hs *hs, int fd, size_t max_len,
			 struct ohc_frame_hdr *h_p, uint8_t **payload_p);

/*
 * A hello: a frame of `type` whose ctx is the session token and tag
 * from << 32 | to, and a body of exactly len bytes (the protocol's
 * record). Received: of that type, the session's token, addressed to
 * `to` (unless OHC_HS_ANY), exactly len bytes; from is filled in. fds:
 * the nfds descriptors passed with it (messages only).
 */
#define OHC_HS_FDS_MAX 2
struct ohc_hs_hello {
	uint8_t type;
	uint32_t from;
	uint32_t to;
	void *body;
	size_t len;
	int fds[OHC_HS_FDS_MAX];
	unsigned nfds;
};

/* On a stream socket, before the deadline: OHC_OK or the statuses of
 * ohc_hs_send / ohc_hs_recv; a hello of others: OHC_ERR_INVALID. */
ohc_status_t ohc_hs_hello_send(struct ohc_hs *hs, int fd,
			       const struct ohc_hs_hello *m);
ohc_status_t ohc_hs_hello_recv(struct ohc_hs *hs, int fd,
			       struct ohc_hs_hello *m);
/*
 * A hello as one message on a message socket (AF_UNIX SOCK_SEQPACKET),
 * with m->fds[0..nfds) passed (SCM_RIGHTS); one non-blocking call:
 * OHC_OK, OHC_INPROGRESS (try again when the socket is ready),
 * OHC_ERR_REMOTE (closed: hs->err 0, or failed), OHC_ERR_INVALID (a
 * message of others). Received: m->nfds fds (close-on-exec, the
 * caller's); more than OHC_HS_FDS_MAX: OHC_ERR_INVALID; fds cut off
 * because this process has none left: OHC_ERR_INVALID, hs->err EMFILE.
 */
ohc_status_t ohc_hs_msg_send(struct ohc_hs *hs, int fd,
			     const struct ohc_hs_hello *m);
ohc_status_t ohc_hs_msg_recv(struct ohc_hs *hs, int fd, struct ohc_hs_hello *m);
/* Check a received hello's header against m (pure, fuzzed; the two
 * receive forms use it): OHC_OK with m->from filled in, or
 * OHC_ERR_INVALID and what is wrong in why. */
ohc_status_t ohc_hs_hello_check(const struct ohc_hs *hs,
				const struct ohc_frame_hdr *h,
				struct ohc_hs_hello *m,
				char why[OHC_FRAME_WHY_MAX]);

#endif
