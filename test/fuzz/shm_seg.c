/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a shm peer hands over at connect time: its hello on the abstract
 * socket (a frame of ohc_shm_proto: ohc_frame_hdr_decode and
 * ohc_hs_hello_check, as ohc_hs_msg_recv reads it) and its segment, whose
 * header and ring directory decide where we write (ohc_shm_seg_find_ring, as
 * ohc_shm_seg_map_peer uses it). The segment is a buffer of exactly its
 * announced size: a ring it accepts must lie inside it (the control block and
 * every record byte are touched here, so ASan sees one byte outside).
 *
 * Input: what to check (hello or segment), then for a hello the bytes as
 * received, for a segment its size (at least a page) and its first bytes
 * (the rest zero).
 */
#include <unistd.h>

#include "transport/shm/shm.h"
#include "util/hs.h"
#include "fuzz.h"

#define SESSION 0x0123456789abcdefull
#define OWNER 3u
#define ME 1u
#define PAGE 4096u

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_quiet();
	return 0;
}

static void hello(struct fz *f)
{
	size_t len = f->n, got;
	const uint8_t *p = fz_take(f, len, &got);
	/* the size picks the kind: a REPLY has a body */
	size_t body = len > OHC_FRAME_HDR_BYTES ? OHC_SHM_REPLY_BYTES : 0;
	uint8_t kind = body ? OHC_SHM_HELLO_REPLY : OHC_SHM_HELLO_CONNECT;
	struct ohc_hs_hello m = {.type = kind, .to = ME, .len = body};
	char why[OHC_FRAME_WHY_MAX];
	struct ohc_frame_hdr h;
	struct ohc_hs hs;

	/* a message: a header, then exactly its length (ohc_hs_msg_recv) */
	ohc_hs_init(&hs, &ohc_shm_proto, "rank 3", SESSION, 0);
	if (got < OHC_FRAME_HDR_BYTES ||
	    ohc_frame_hdr_decode(&ohc_shm_proto, p, body, &h, why) < 0 ||
	    got != OHC_FRAME_HDR_BYTES + h.len)
		return;
	if (ohc_hs_hello_check(&hs, &h, &m, why) == OHC_OK) {
		FZ_ASSERT(h.type == kind && h.ctx == SESSION);
		FZ_ASSERT(h.len == body && (uint32_t)h.tag == ME);
		FZ_ASSERT(m.from == (uint32_t)(h.tag >> 32));
	}
}

static void segment(struct fz *f)
{
	uint64_t seg_bytes = PAGE + fz_u16(f) % (16 * PAGE);
	struct ohc_shm_seg_hdr head;
	struct ohc_shm_dir_ent ent;
	volatile uint8_t sink = 0;
	const char *why;
	uint8_t *seg;

	seg = malloc(seg_bytes); /* exactly: ASan sees a byte past it */
	if (!seg)
		abort();
	fz_bytes(f, seg, (size_t)seg_bytes);
	why = ohc_shm_seg_find_ring(seg, seg_bytes, SESSION, OWNER, ME, &head,
				    &ent);
	if (!why) {
		const uint8_t *ring = seg + ent.off;

		FZ_ASSERT(head.seg_bytes == seg_bytes);
		FZ_ASSERT(ent.producer == ME);
		FZ_ASSERT(ohc_shm_dir_ent_valid(&ent, seg_bytes));
		FZ_ASSERT(ent.bytes % OHC_SHM_REC_ALIGN == 0);
		/* the control block, the first and the last record byte */
		sink ^= ring[0];
		sink ^= ring[sizeof(struct ohc_shm_ring_ctl) - 1];
		sink ^= ring[sizeof(struct ohc_shm_ring_ctl)];
		sink ^= ring[sizeof(struct ohc_shm_ring_ctl) + ent.bytes - 1];
	} else {
		FZ_ASSERT(why[0]);
	}
	(void)sink;
	free(seg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = fz_init(data, size);

	if (fz_u8(&f) & 1)
		segment(&f);
	else
		hello(&f);
	return 0;
}
