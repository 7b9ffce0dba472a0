/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a shm peer hands over at connect time: its hello on the abstract
 * socket (ohc_shm_hello_check, as the listener and the connector read
 * it) and its segment, whose header and ring directory decide where we
 * write (ohc_shm_seg_find_ring, as ohc_shm_seg_map_peer uses it). The
 * segment is a buffer of exactly its announced size: a ring it accepts
 * must lie inside it (the control block and every record byte are touched
 * here, so ASan sees one byte outside).
 *
 * Input: what to check (hello or segment), then for a hello the bytes as
 * received, for a segment its size (at least a page) and its first bytes
 * (the rest zero).
 */
#include <unistd.h>

#include "transport/shm/shm.h"
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
	struct ohc_shm_hello h;
	size_t len = f->n, got;
	const uint8_t *p = fz_take(f, len, &got);
	uint32_t kind = (len & 1) ? OHC_SHM_HELLO_REPLY : OHC_SHM_HELLO_CONNECT;

	/* recv() into the struct: never more than its size */
	memset(&h, 0, sizeof(h));
	memcpy(&h, p, OHC_MIN(got, sizeof(h)));
	if (!ohc_shm_hello_check(&h, got, kind, SESSION)) {
		FZ_ASSERT(got == sizeof(h));
		FZ_ASSERT(h.magic == OHC_SHM_HELLO_MAGIC && h.kind == kind &&
			  h.session == SESSION);
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
