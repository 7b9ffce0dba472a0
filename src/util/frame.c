/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Frames (frame.h): the header's encoding and checks, the incremental
 * reader and writer on non-blocking sockets, and the deadline-bounded
 * whole-frame send and receive. Moved from the bootstrap, whose bytes
 * they still are (magic "OB", version 2).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "util/frame.h"
#include "util/hs.h"

void ohc_frame_hdr_encode(const struct ohc_frame_proto *p,
			  const struct ohc_frame_hdr *h, uint8_t *out)
{
	ohc_be_put16(out, p->magic);
	out[2] = p->version;
	out[3] = h->type;
	ohc_be_put32(out + 4, 0);
	ohc_be_put64(out + 8, h->ctx);
	ohc_be_put64(out + 16, h->tag);
	ohc_be_put64(out + 24, h->len);
}

ohc_status_t ohc_frame_hdr_decode(const struct ohc_frame_proto *p,
				  const uint8_t *in, uint64_t max_len,
				  struct ohc_frame_hdr *h_p,
				  char why[OHC_FRAME_WHY_MAX])
{
	char tmp[OHC_FRAME_WHY_MAX];
	uint64_t len = ohc_be_get64(in + 24);

	if (!why)
		why = tmp;
	if (ohc_be_get16(in) != p->magic)
		snprintf(why, OHC_FRAME_WHY_MAX, "wrong magic 0x%04x",
			 ohc_be_get16(in));
	else if (in[2] != p->version)
		snprintf(why, OHC_FRAME_WHY_MAX, "version %u, not %u", in[2],
			 p->version);
	else if (in[3] == 0 || in[3] > p->type_max)
		snprintf(why, OHC_FRAME_WHY_MAX, "unknown type %u", in[3]);
	else if (ohc_be_get32(in + 4) != 0)
		snprintf(why, OHC_FRAME_WHY_MAX, "reserved bits set");
	else if (len > max_len)
		snprintf(why, OHC_FRAME_WHY_MAX,
			 "frame too long: %" PRIu64 " > %" PRIu64, len,
			 max_len);
	else {
		h_p->type = in[3];
		h_p->ctx = ohc_be_get64(in + 8);
		h_p->tag = ohc_be_get64(in + 16);
		h_p->len = len;
		return OHC_OK;
	}
	return OHC_ERR_INVALID;
}

void ohc_frame_rx_init(struct ohc_frame_rx *rx, const struct ohc_frame_proto *p,
		       int fd)
{
	memset(rx, 0, sizeof(*rx));
	rx->proto = p;
	rx->fd = fd;
}

void ohc_frame_rx_reset(struct ohc_frame_rx *rx)
{
	free(rx->payload);
	rx->payload = NULL;
	rx->hgot = 0;
	rx->pgot = 0;
	rx->pcap = 0;
	rx->have_hdr = 0;
}

/* recv() once: >0 bytes, OHC_INPROGRESS, or OHC_ERR_REMOTE. */
static ohc_status_t rx_recv(int fd, void *buf, size_t len, size_t *got_p,
			    int *err_p)
{
	for (;;) {
		ssize_t n = recv(fd, buf, len, 0);

		if (n > 0) {
			*got_p = (size_t)n;
			return OHC_OK;
		}
		if (n == 0) {
			*err_p = 0;
			return OHC_ERR_REMOTE;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return OHC_INPROGRESS;
		*err_p = errno;
		return OHC_ERR_REMOTE;
	}
}

/*
 * The payload buffer doubles as bytes arrive, from RX_FIRST: a header
 * alone (up to max_len) makes us hold no more than a peer really sent.
 */
#define RX_FIRST ((size_t)64 << 10)

static ohc_status_t rx_grow(struct ohc_frame_rx *rx)
{
	size_t cap = rx->pcap ? rx->pcap * 2 : RX_FIRST;
	uint8_t *p;

	if (cap > rx->hdr.len)
		cap = rx->hdr.len;
	p = realloc(rx->payload, cap);
	if (!p)
		return OHC_ERR_NO_MEMORY;
	rx->payload = p;
	rx->pcap = cap;
	return OHC_OK;
}

ohc_status_t ohc_frame_rx_read(struct ohc_frame_rx *rx, size_t max_len,
			       int *err_p)
{
	ohc_status_t status;
	size_t got;

	for (;;) {
		if (!rx->have_hdr) {
			status = rx_recv(rx->fd, rx->hbuf + rx->hgot,
					 OHC_FRAME_HDR_BYTES - rx->hgot, &got,
					 err_p);
			if (status != OHC_OK)
				return status;
			rx->hgot += got;
			if (rx->hgot < OHC_FRAME_HDR_BYTES)
				continue;
			if (ohc_frame_hdr_decode(rx->proto, rx->hbuf, max_len,
						 &rx->hdr, rx->why) != OHC_OK) {
				*err_p = EPROTO;
				return OHC_ERR_INVALID;
			}
			rx->have_hdr = 1;
			rx->pgot = 0;
		}
		if (rx->pgot == rx->hdr.len)
			return OHC_OK;
		if (rx->pgot == rx->pcap) {
			status = rx_grow(rx);
			if (status != OHC_OK)
				return status;
		}
		status = rx_recv(rx->fd, rx->payload + rx->pgot,
				 rx->pcap - rx->pgot, &got, err_p);
		if (status != OHC_OK)
			return status;
		rx->pgot += got;
	}
}

uint8_t *ohc_frame_rx_take(struct ohc_frame_rx *rx, struct ohc_frame_hdr *h_p)
{
	uint8_t *p = rx->payload;

	*h_p = rx->hdr;
	rx->payload = NULL;
	rx->hgot = 0;
	rx->pgot = 0;
	rx->pcap = 0;
	rx->have_hdr = 0;
	return p;
}

void ohc_frame_tx_init(struct ohc_frame_tx *tx, const struct ohc_frame_proto *p,
		       const struct ohc_frame_hdr *h, const void *payload)
{
	memset(tx, 0, sizeof(*tx));
	ohc_frame_hdr_encode(p, h, tx->hbuf);
	tx->payload = payload;
	tx->len = h->len;
}

ohc_status_t ohc_frame_tx_write(int fd, struct ohc_frame_tx *tx, int *err_p)
{
	size_t total = OHC_FRAME_HDR_BYTES + tx->len;

	while (tx->off < total) {
		struct iovec iov[2];
		struct msghdr m;
		ssize_t n;
		int cnt = 0;

		if (tx->off < OHC_FRAME_HDR_BYTES) {
			iov[cnt].iov_base = tx->hbuf + tx->off;
			iov[cnt++].iov_len = OHC_FRAME_HDR_BYTES - tx->off;
			if (tx->len) {
				iov[cnt].iov_base = (void *)tx->payload;
				iov[cnt++].iov_len = tx->len;
			}
		} else {
			iov[cnt].iov_base = (void *)(tx->payload + tx->off -
						     OHC_FRAME_HDR_BYTES);
			iov[cnt++].iov_len = total - tx->off;
		}
		memset(&m, 0, sizeof(m));
		m.msg_iov = iov;
		m.msg_iovlen = (size_t)cnt;
		n = sendmsg(fd, &m, MSG_NOSIGNAL);
		if (n >= 0) {
			tx->off += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return OHC_INPROGRESS;
		*err_p = errno;
		return OHC_ERR_REMOTE;
	}
	return OHC_OK;
}

ohc_status_t ohc_frame_tx_own(struct ohc_frame_tx *tx)
{
	void *copy;

	if (tx->owned || !tx->len)
		return OHC_OK;
	copy = malloc(tx->len);
	if (!copy)
		return OHC_ERR_NO_MEMORY;
	memcpy(copy, tx->payload, tx->len);
	tx->owned = copy;
	tx->payload = copy;
	return OHC_OK;
}

ohc_status_t ohc_frame_send(int fd, const struct ohc_frame_proto *p,
			    const struct ohc_frame_hdr *h, const void *payload,
			    uint64_t deadline, int *err_p)
{
	struct ohc_frame_tx tx;
	ohc_status_t status;

	ohc_frame_tx_init(&tx, p, h, payload);
	for (;;) {
		status = ohc_frame_tx_write(fd, &tx, err_p);
		if (status != OHC_INPROGRESS)
			return status;
		status = ohc_hs_wait_fd(fd, POLLOUT, deadline);
		if (status < 0) {
			*err_p = status == OHC_ERR_TIMEOUT ? ETIMEDOUT : errno;
			return status;
		}
	}
}

ohc_status_t ohc_frame_recv(int fd, const struct ohc_frame_proto *p,
			    size_t max_len, uint64_t deadline,
			    struct ohc_frame_hdr *h_p, uint8_t **payload_p,
			    int *err_p, char why[OHC_FRAME_WHY_MAX])
{
	struct ohc_frame_rx rx;
	ohc_status_t status;

	ohc_frame_rx_init(&rx, p, fd);
	for (;;) {
		status = ohc_frame_rx_read(&rx, max_len, err_p);
		if (status == OHC_OK) {
			*payload_p = ohc_frame_rx_take(&rx, h_p);
			return OHC_OK;
		}
		if (status == OHC_ERR_INVALID && why)
			memcpy(why, rx.why, OHC_FRAME_WHY_MAX);
		if (status == OHC_INPROGRESS) {
			status = ohc_hs_wait_fd(fd, POLLIN, deadline);
			if (status < 0)
				*err_p = status == OHC_ERR_TIMEOUT ? ETIMEDOUT
								   : errno;
		}
		if (status < 0) {
			ohc_frame_rx_reset(&rx);
			return status;
		}
	}
}
