/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The wire format's bytes: big-endian fields, printable text, and frames
 * (32-byte header + payload): the header's encoding, the incremental
 * reader and writer on non-blocking sockets, and the deadline-bounded
 * whole-frame send and receive.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "comm/bootstrap/bs_internal.h"

/* ---------------------------------------------------------------------- */
/* Big-endian fields                                                      */

void bs_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void bs_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

void bs_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

uint16_t bs_get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

uint32_t bs_get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v = (v << 8) | p[i];
	return v;
}

uint64_t bs_get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

void bs_text_clean(const uint8_t *text, size_t len, char *buf, size_t size)
{
	size_t i;

	if (!size)
		return;
	for (i = 0; i < len && i + 1 < size && text[i]; i++)
		buf[i] = (text[i] >= 0x20 && text[i] < 0x7f) ? (char)text[i]
							     : '?';
	buf[i] = '\0';
}

/* ---------------------------------------------------------------------- */
/* Frames                                                                 */

void bs_hdr_encode(const struct bs_hdr *h, uint8_t *out)
{
	bs_put16(out, BS_WIRE_MAGIC);
	out[2] = BS_WIRE_VERSION;
	out[3] = h->type;
	bs_put32(out + 4, 0);
	bs_put64(out + 8, h->ctx);
	bs_put64(out + 16, h->tag);
	bs_put64(out + 24, h->len);
}

ohc_status_t bs_hdr_decode(const uint8_t *in, struct bs_hdr *h_p)
{
	if (bs_get16(in) != BS_WIRE_MAGIC || in[2] != BS_WIRE_VERSION ||
	    in[3] == 0 || in[3] > BS_T_MAX || bs_get32(in + 4) != 0)
		return OHC_ERR_INVALID;
	h_p->type = in[3];
	h_p->ctx = bs_get64(in + 8);
	h_p->tag = bs_get64(in + 16);
	h_p->len = bs_get64(in + 24);
	return OHC_OK;
}

void bs_rx_init(struct bs_rx *rx, int fd)
{
	memset(rx, 0, sizeof(*rx));
	rx->fd = fd;
}

void bs_rx_reset(struct bs_rx *rx)
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
 * The payload buffer doubles as bytes arrive, from BS_RX_FIRST: a header
 * alone (up to max_len) makes us hold no more than a peer really sent.
 */
#define BS_RX_FIRST ((size_t)64 << 10)

static ohc_status_t rx_grow(struct bs_rx *rx)
{
	size_t cap = rx->pcap ? rx->pcap * 2 : BS_RX_FIRST;
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

ohc_status_t bs_rx_read(struct bs_rx *rx, size_t max_len, int *err_p)
{
	ohc_status_t status;
	size_t got;

	for (;;) {
		if (!rx->have_hdr) {
			status = rx_recv(rx->fd, rx->hbuf + rx->hgot,
					 BS_HDR_BYTES - rx->hgot, &got, err_p);
			if (status != OHC_OK)
				return status;
			rx->hgot += got;
			if (rx->hgot < BS_HDR_BYTES)
				continue;
			if (bs_hdr_decode(rx->hbuf, &rx->hdr) != OHC_OK ||
			    rx->hdr.len > max_len) {
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

uint8_t *bs_rx_take(struct bs_rx *rx, struct bs_hdr *h_p)
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

void bs_tx_init(struct bs_tx *tx, const struct bs_hdr *h, const void *payload)
{
	memset(tx, 0, sizeof(*tx));
	bs_hdr_encode(h, tx->hbuf);
	tx->payload = payload;
	tx->len = h->len;
}

ohc_status_t bs_tx_write(int fd, struct bs_tx *tx, int *err_p)
{
	size_t total = BS_HDR_BYTES + tx->len;

	while (tx->off < total) {
		struct iovec iov[2];
		struct msghdr m;
		ssize_t n;
		int cnt = 0;

		if (tx->off < BS_HDR_BYTES) {
			iov[cnt].iov_base = tx->hbuf + tx->off;
			iov[cnt++].iov_len = BS_HDR_BYTES - tx->off;
			if (tx->len) {
				iov[cnt].iov_base = (void *)tx->payload;
				iov[cnt++].iov_len = tx->len;
			}
		} else {
			iov[cnt].iov_base =
				(void *)(tx->payload + tx->off - BS_HDR_BYTES);
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

ohc_status_t bs_tx_own(struct bs_tx *tx)
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

ohc_status_t bs_send_frame(int fd, const struct bs_hdr *h, const void *payload,
			   uint64_t deadline, int *err_p)
{
	struct bs_tx tx;
	ohc_status_t status;

	bs_tx_init(&tx, h, payload);
	for (;;) {
		status = bs_tx_write(fd, &tx, err_p);
		if (status != OHC_INPROGRESS)
			return status;
		status = bs_wait_fd(fd, POLLOUT, deadline);
		if (status < 0)
			return status;
	}
}

ohc_status_t bs_recv_frame(int fd, size_t max_len, uint64_t deadline,
			   struct bs_hdr *h_p, uint8_t **payload_p, int *err_p)
{
	struct bs_rx rx;
	ohc_status_t status;

	bs_rx_init(&rx, fd);
	for (;;) {
		status = bs_rx_read(&rx, max_len, err_p);
		if (status == OHC_OK) {
			*payload_p = bs_rx_take(&rx, h_p);
			return OHC_OK;
		}
		if (status == OHC_INPROGRESS)
			status = bs_wait_fd(fd, POLLIN, deadline);
		if (status < 0) {
			bs_rx_reset(&rx);
			return status;
		}
	}
}
