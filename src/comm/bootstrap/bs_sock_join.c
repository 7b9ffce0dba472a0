/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket endpoint, joining: find this job's root among the candidates
 * (JOIN, then its WELCOME), open our listener on the way, read the root's
 * verdict (the table, or word that our parent in the table tree has it),
 * hand the table on to our children, bring the ring up; and, for tests and
 * fuzzing, an endpoint over connections that already exist.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/bootstrap/bs_socket.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/time.h"

unsigned ohc_bs_test_join_delay_ms;

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

ohc_status_t bs_sock_adopt(uint32_t nranks, uint32_t rank, uint64_t token,
			   const int *out_fds, const int *in_fds,
			   struct bs_ep **ep_p)
{
	struct sock_ep *ep = NULL;
	ohc_status_t status = OHC_ERR_INVALID;

	if (nranks && rank < nranks)
		status = ohc_bs_sock_alloc(nranks, rank, token, &ep);
	for (uint32_t r = 0; r < nranks; r++) {
		struct sock_peer *p = status < 0 ? NULL : &ep->peers[r];
		int fds[2] = {out_fds[r], in_fds[r]};

		for (int k = 0; k < 2; k++)
			if (fds[k] >= 0 &&
			    (!p || r == rank || set_nonblock(fds[k]) < 0)) {
				close(fds[k]);
				fds[k] = -1;
			}
		if (!p)
			continue;
		snprintf(p->where, sizeof(p->where), "fd %d/%d", fds[0],
			 fds[1]);
		if (fds[0] >= 0) {
			p->out_fd = fds[0];
			p->out_state = OUT_OPEN;
			p->out_written = 1;
			ohc_frame_rx_init(&p->out_rx, &bs_proto, fds[0]);
		}
		if (fds[1] >= 0) {
			p->in_fd = fds[1];
			p->in_seen = 1;
			ohc_frame_rx_init(&p->in_rx, &bs_proto, fds[1]);
		}
	}
	if (status < 0)
		return status;
	*ep_p = &ep->super;
	return OHC_OK;
}

static void peer_install(void *arg, uint32_t r, const struct bs_addr *a,
			 const char *hostid)
{
	struct sock_peer *p = &((struct sock_ep *)arg)->peers[r];

	p->addr = *a;
	snprintf(p->hostid, sizeof(p->hostid), "%s", hostid);
	bs_addr_str(&p->addr, p->where, sizeof(p->where));
}

/* Every rank's address and host id, from a TABLE payload that passed
 * bs_table_check. */
static ohc_status_t table_install(struct sock_ep *ep, const uint8_t *pl,
				  uint64_t len)
{
	return bs_table_decode(pl, len, peer_install, ep);
}

/*
 * The root's reply: the table (OHC_OK, *table_p is the payload, ours to
 * free), word that it comes from our parent in the table tree
 * (OHC_INPROGRESS), a refusal or an expiry.
 */
static ohc_status_t read_verdict(struct sock_ep *ep, int rfd, const char *root,
				 uint64_t deadline, uint64_t t0,
				 uint16_t my_port, uint8_t **table_p,
				 size_t *table_len_p)
{
	uint32_t me = ep->super.rank, n = ep->super.nranks;
	size_t want = bs_table_max_bytes(n);
	char text[BS_TEXT_MAX + 1];
	struct ohc_frame_hdr h;
	uint8_t *pl = NULL;
	ohc_status_t status;
	int32_t raw;
	int err = 0;

	status = ohc_frame_recv(rfd, &bs_proto,
				want > BS_TEXT_MAX + 4 ? want : BS_TEXT_MAX + 4,
				deadline, &h, &pl, &err, NULL);
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
		if (bs_refuse_parse(&h, pl, &raw, text, sizeof(text)) < 0) {
			status = OHC_ERR_TCP_TRANSFER; /* logged below */
			break;
		}
		status = bs_refuse_status(raw);
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
		if (bs_table_check(&h, pl, n, me, my_port) < 0) {
			status = OHC_ERR_TCP_TRANSFER;
			break;
		}
		status = table_install(ep, pl, h.len);
		if (status < 0)
			break;
		*table_p = pl;
		*table_len_p = h.len;
		pl = NULL;
		break;
	case BS_T_TABLE_VIA:
		if (h.len || bs_table_parent(n, me) == BS_NO_RANK)
			status = OHC_ERR_TCP_TRANSFER;
		else
			status = OHC_INPROGRESS;
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

/* One message of the table tree: its length (tag BS_TABLE_TAG), then
 * the table itself (BS_TABLE_TAG + 1), on context 0. */
static ohc_status_t table_xfer(struct sock_ep *ep, uint32_t to, uint32_t from,
			       uint64_t tag, void *buf, size_t len,
			       const char *what, uint64_t deadline)
{
	struct bs_xfer x = {
		.type = BS_T_COLL,
		.send_tag = tag,
		.recv_tag = tag,
		.send_to = to,
		.send_buf = to == BS_NO_RANK ? NULL : buf,
		.send_len = to == BS_NO_RANK ? 0 : len,
		.recv_from = from,
		.recv_buf = from == BS_NO_RANK ? NULL : buf,
		.recv_len = from == BS_NO_RANK ? 0 : len,
		.what = what,
		.culprit = BS_NO_RANK,
	};

	return ep->super.ops->xfer(&ep->super, 0, &x, deadline);
}

#define FROM_PARENT "init (the rank table from our parent in the table tree)"

/* The table from our parent in the table tree, as the root told us. */
static ohc_status_t table_from_parent(struct sock_ep *ep, uint64_t deadline,
				      uint16_t my_port, uint8_t **table_p,
				      size_t *table_len_p)
{
	uint32_t me = ep->super.rank, n = ep->super.nranks;
	uint32_t parent = bs_table_parent(n, me);
	struct ohc_frame_hdr h = {.type = BS_T_TABLE};
	uint8_t lenbuf[8], *pl = NULL;
	ohc_status_t status;

	snprintf(ep->peers[parent].where, sizeof(ep->peers[parent].where),
		 "address not known yet");
	status = table_xfer(ep, BS_NO_RANK, parent, BS_TABLE_TAG, lenbuf,
			    sizeof(lenbuf), FROM_PARENT, deadline);
	if (status < 0)
		return status;
	h.len = ohc_be_get64(lenbuf);
	if (h.len < 8 || h.len > bs_table_max_bytes(n)) {
		status = OHC_ERR_TCP_TRANSFER;
		goto bad;
	}
	pl = malloc(h.len);
	if (!pl)
		return OHC_ERR_NO_MEMORY;
	status = table_xfer(ep, BS_NO_RANK, parent, BS_TABLE_TAG + 1, pl, h.len,
			    FROM_PARENT, deadline);
	if (status < 0) {
		free(pl);
		return status;
	}
	if (bs_table_check(&h, pl, n, me, my_port) < 0) {
		status = OHC_ERR_TCP_TRANSFER;
		goto bad;
	}
	status = table_install(ep, pl, h.len);
	if (status < 0) {
		free(pl);
		return status;
	}
	*table_p = pl;
	*table_len_p = h.len;
	return OHC_OK;
bad:
	OHC_ERROR(OHC_SS_BOOT,
		  "rank %u: malformed rank table from rank %u, our parent in "
		  "the table tree",
		  me, parent);
	free(pl);
	return status;
}

/* Hand the table on to our children in the table tree. A child that is
 * gone is logged here and fails the job at its first operation. */
static void table_to_children(struct sock_ep *ep, uint8_t *table, size_t len,
			      uint64_t deadline)
{
	uint32_t me = ep->super.rank, n = ep->super.nranks;
	const char *what = "init (the rank table to a child in the table tree)";
	uint8_t lenbuf[8];

	ohc_be_put64(lenbuf, len);
	for (unsigned k = 0; k < BS_TABLE_FANOUT; k++) {
		uint32_t c = bs_table_child(n, me, k);

		if (c == BS_NO_RANK)
			break;
		if (table_xfer(ep, c, BS_NO_RANK, BS_TABLE_TAG, lenbuf,
			       sizeof(lenbuf), what, deadline) == OHC_OK)
			(void)table_xfer(ep, c, BS_NO_RANK, BS_TABLE_TAG + 1,
					 table, len, what, deadline);
	}
}

/* Connect to rank+1 and wait for rank-1 to connect to us. */
static ohc_status_t ring_up(struct sock_ep *ep, uint64_t deadline, uint64_t t0)
{
	uint32_t me = ep->super.rank, n = ep->super.nranks;
	uint32_t next = (me + 1) % n, prev = (me + n - 1) % n;
	struct sock_peer *pn = &ep->peers[next], *pp = &ep->peers[prev];
	ohc_status_t status = OHC_OK;

	pthread_mutex_lock(&ep->lock);
	if (ohc_bs_sock_ensure_out_locked(ep, next, "init")) {
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

			status = ohc_bs_sock_peer_error_locked(ep, next, &x, 1);
			break;
		}
		if (pp->aborted || pp->in_down) {
			struct bs_xfer x = {.what = "init"};

			status = ohc_bs_sock_peer_error_locked(ep, prev, &x, 0);
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
		ohc_bs_sock_progress_locked(ep, deadline);
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
	struct ohc_frame_hdr h;
	uint8_t *pl = NULL;
	int32_t raw;
	int err = 0;

	status = ohc_frame_recv(rfd, &bs_proto, BS_TEXT_MAX + 4, deadline, &h,
				&pl, &err, NULL);
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
		if (bs_welcome_ok(&h, pl, bs_auth_welcome(auth, me))) {
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
	} else if (bs_refuse_parse(&h, pl, &raw, text, sizeof(text)) ==
		   OHC_OK) {
		if (probing && raw == OHC_ERR_UNAVAILABLE) {
			why = "another job's root (wrong session token)";
		} else {
			status = bs_refuse_status(raw);
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
	struct ohc_frame_hdr h = {.type = BS_T_JOIN, .len = BS_JOIN_BYTES};
	char where[BS_ADDR_STRLEN], hostid[OHC_HOSTID_MAX];
	struct bs_addr laddr;
	struct bs_ports ports;
	struct ohc_hs hs;
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
	ohc_hs_init(&hs, &bs_proto, where, 0, until);
	hs.once = probing;
	status = ohc_hs_connect(&hs, &root->u.sa, root->len, SOCK_STREAM, &rfd);
	err = hs.err;
	if (status == OHC_OK && ohc_bs_test_join_delay_ms)
		(void)ohc_hs_poll(
			NULL, 0,
			ohc_deadline_after_ms(ohc_bs_test_join_delay_ms),
			ohc_bs_test_join_delay_ms);
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
	ohc_be_put64(join, ep->token);
	ohc_be_put32(join + 8, nranks);
	ohc_be_put32(join + 12, rank);
	ohc_be_put64(join + 16, timeout_ms);
	bs_addr_encode(&ep->listen_addr, join + 24);
	memcpy(join + 24 + BS_WIRE_ADDR_BYTES, hostid, strlen(hostid) + 1);
	status = ohc_frame_send(rfd, &bs_proto, &h, join, deadline, &err);
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
	ohc_bs_close_fd(&rfd);
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
	uint8_t *table = NULL;
	size_t table_len = 0;
	int rfd = -1, probing = nroots > 1;
	unsigned k = 0;

	status = ohc_bs_sock_alloc(nranks, rank, bs_auth_join(auth), &ep);
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
		(void)ohc_hs_poll(NULL, 0,
				  OHC_MIN(deadline, ohc_deadline_after_ms(100)),
				  100);
	}
	if (status < 0)
		goto err_free;
	bs_addr_str(&roots[k], where, sizeof(where));
	status = read_verdict(ep, rfd, where, verdict, t0,
			      bs_addr_port(&ep->listen_addr), &table,
			      &table_len);
	ohc_bs_close_fd(&rfd);
	if (status == OHC_INPROGRESS)
		status = table_from_parent(ep, verdict,
					   bs_addr_port(&ep->listen_addr),
					   &table, &table_len);
	if (status < 0)
		goto err_free;
	table_to_children(ep, table, table_len, verdict);
	free(table);
	table = NULL;

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
	free(table);
	ohc_bs_sock_free(ep, 1);
	return status;
}
