/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_FRAME_H
#define OHC_UTIL_FRAME_H

/*
 * Frames of the library's socket protocols (the bootstrap, the verbs and
 * shm address exchanges, the doctor's ping): a 32-byte header in network
 * byte order
 *
 *   0 magic u16 | 2 version u8 | 3 type u8 | 4 reserved u32 (0)
 *   8 ctx u64 | 16 tag u64 | 24 len u64
 *
 * then len bytes of payload. Each protocol names its magic, version and
 * highest type (struct ohc_frame_proto); a header of another protocol or
 * version, of type 0 or above the highest, with reserved bits set or a
 * length above what the reader expects is refused before anything is
 * allocated. Nothing here logs: failures come back as a status and an
 * errno value, with a short text where the bytes were at fault.
 * Sessions over these frames (connect, accept, hellos, peer-named
 * errors): util/hs.h.
 */
#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

/* ---- big-endian fields ------------------------------------------------ */

static inline void ohc_be_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void ohc_be_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static inline void ohc_be_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static inline uint16_t ohc_be_get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t ohc_be_get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t ohc_be_get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

/* ---- the header ------------------------------------------------------- */

#define OHC_FRAME_HDR_BYTES 32
#define OHC_FRAME_WHY_MAX 64 /* a header fault's text, NUL included */

/* One protocol's constants. Valid types are 1..type_max. */
struct ohc_frame_proto {
	uint16_t magic;
	uint8_t version;
	uint8_t type_max;
};

struct ohc_frame_hdr {
	uint8_t type;
	uint64_t ctx;
	uint64_t tag;
	uint64_t len;
};

void ohc_frame_hdr_encode(const struct ohc_frame_proto *p,
			  const struct ohc_frame_hdr *h, uint8_t *out);
/*
 * OHC_OK: in is a header of p with len <= max_len, decoded to *h_p.
 * OHC_ERR_INVALID otherwise; why (may be NULL) gets what is wrong:
 * "wrong magic 0x4745", "version 3, not 2", "unknown type 12",
 * "reserved bits set", "frame too long: 300 > 256".
 */
ohc_status_t ohc_frame_hdr_decode(const struct ohc_frame_proto *p,
				  const uint8_t *in, uint64_t max_len,
				  struct ohc_frame_hdr *h_p,
				  char why[OHC_FRAME_WHY_MAX]);

/* ---- incremental reader and writer (non-blocking sockets) ------------- */

/* Reads one frame at a time; never reads past the current frame. */
struct ohc_frame_rx {
	const struct ohc_frame_proto *proto;
	int fd;
	uint8_t hbuf[OHC_FRAME_HDR_BYTES];
	size_t hgot;
	struct ohc_frame_hdr hdr;
	int have_hdr;
	uint8_t *payload;
	size_t pgot;
	size_t pcap; /* bytes allocated: grows with what arrived */
	char why[OHC_FRAME_WHY_MAX]; /* after OHC_ERR_INVALID: the fault */
};

void ohc_frame_rx_init(struct ohc_frame_rx *rx, const struct ohc_frame_proto *p,
		       int fd);
/* Free a partial payload and forget the frame in progress. */
void ohc_frame_rx_reset(struct ohc_frame_rx *rx);
/*
 * Read without blocking. OHC_OK: a complete frame is in rx->hdr and
 * rx->payload (take it with ohc_frame_rx_take). OHC_INPROGRESS: no more
 * data now. OHC_ERR_REMOTE: end of stream (*err_p 0) or connection error
 * (*err_p errno). OHC_ERR_INVALID: a bad header or a length above
 * max_len (*err_p EPROTO, rx->why says which). OHC_ERR_NO_MEMORY.
 */
ohc_status_t ohc_frame_rx_read(struct ohc_frame_rx *rx, size_t max_len,
			       int *err_p);
/* The completed frame: header to *h_p, payload returned (caller frees;
 * NULL if empty); rx is ready for the next frame. */
uint8_t *ohc_frame_rx_take(struct ohc_frame_rx *rx, struct ohc_frame_hdr *h_p);

/* Writes one frame; the payload must live until it is written or owned. */
struct ohc_frame_tx {
	uint8_t hbuf[OHC_FRAME_HDR_BYTES];
	const uint8_t *payload;
	size_t len;  /* payload bytes */
	size_t off;  /* bytes of header + payload written */
	void *owned; /* payload copy owned by the tx, or NULL */
};

void ohc_frame_tx_init(struct ohc_frame_tx *tx, const struct ohc_frame_proto *p,
		       const struct ohc_frame_hdr *h, const void *payload);
/* OHC_OK: all written. OHC_INPROGRESS: socket full. OHC_ERR_REMOTE: the
 * connection failed (*err_p errno). */
ohc_status_t ohc_frame_tx_write(int fd, struct ohc_frame_tx *tx, int *err_p);
/* Copy the unwritten payload so the caller's buffer may go away. */
ohc_status_t ohc_frame_tx_own(struct ohc_frame_tx *tx);

/* ---- whole frames before a deadline (blocking) ------------------------ */

/*
 * OHC_OK, OHC_ERR_TIMEOUT (deadline: an ohc_time_ns() value), or the
 * statuses of the incremental forms above. recv: the payload to
 * *payload_p (caller frees; NULL if empty); why (may be NULL) gets the
 * fault of an OHC_ERR_INVALID header.
 */
ohc_status_t ohc_frame_send(int fd, const struct ohc_frame_proto *p,
			    const struct ohc_frame_hdr *h, const void *payload,
			    uint64_t deadline, int *err_p);
ohc_status_t ohc_frame_recv(int fd, const struct ohc_frame_proto *p,
			    size_t max_len, uint64_t deadline,
			    struct ohc_frame_hdr *h_p, uint8_t **payload_p,
			    int *err_p, char why[OHC_FRAME_WHY_MAX]);

#endif
