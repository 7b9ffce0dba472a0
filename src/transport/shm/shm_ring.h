/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TRANSPORT_SHM_RING_H
#define OHC_TRANSPORT_SHM_RING_H

/*
 * Shared-memory layout of the shm transport: what lives in a segment, and
 * the single-producer/single-consumer ring protocol. Everything here is
 * shared between processes, so only fixed-size types and lock-free C11
 * atomics (address-free) appear in it.
 *
 * A segment belongs to the rank that reads from it (the consumer of every
 * ring in it) and is NUMA-local to that rank:
 *
 *   page 0      struct ohc_shm_seg_hdr (with the owner's doorbell)
 *   dir_off     struct ohc_shm_dir_ent[nrings]: which peer writes which ring
 *   ring i      struct ohc_shm_ring_ctl, then `bytes` of records
 *
 * Ring protocol. head and tail count bytes since the ring was created and
 * only grow; a position is count % bytes. The producer owns tail, the
 * consumer owns head. A record is a 64-byte header plus its payload padded
 * to 64 bytes (a message of up to 16 bytes rides inside the header: one
 * line in all), and never crosses the end of the ring: when the contiguous
 * space left before the end is too small, the producer fills it with a PAD
 * record. The producer writes a record, then its header's stamp (the
 * record's count + 1) with release; the consumer polls the stamp where its
 * head points, reads the record, then publishes head with release, after
 * which the producer may overwrite it. The tail is not published at all:
 * polling the stamp, a small message costs the consumer one line from the
 * producer's cache instead of two in a row (the tail's line, then the
 * record's), and the producer's control line, which the consumer reads
 * on every empty poll (prod_err), changes only when the producer cancels.
 * A published tail shared that line and moved it to the producer and
 * back with every message.
 *
 * A stamp must never be mistaken: whatever the previous lap left where the
 * next header will go (payload bytes of any value) is overwritten with 0
 * before the record in front of it is stamped (the producer stores it
 * first, so it is visible first). When that place is not free, the ring is
 * full and it holds the header of the record at the consumer's head, whose
 * stamp is a lap older.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "core/req.h"
#include "transport/bell.h"
#include "util/compiler.h"

#define OHC_SHM_MAGIC 0x4f48435348534547ull /* "OHCSHSEG" */
#define OHC_SHM_VERSION 7u  /* 7: doorbell modes, its eventfd */
#define OHC_SHM_REC_HDR 64u /* bytes of a record header */
#define OHC_SHM_REC_ALIGN 64u

/* A rank's doorbell (transport/bell.h), a cache line of its own. */
struct ohc_shm_bell {
	struct ohc_bell b;
	uint8_t pad[OHC_CACHELINE - sizeof(struct ohc_bell)];
};

struct ohc_shm_seg_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t owner_rank;
	uint64_t session;
	int32_t owner_pid;
	uint32_t nrings;     /* valid once the segment was handed out */
	uint64_t seg_bytes;  /* total bytes of the memfd */
	uint64_t dir_off;    /* offset of the ring directory */
	uint64_t probe_addr; /* owner's address of probe_val (CMA probe) */
	uint64_t probe_val;  /* random value a peer reads through CMA */
	uint8_t pad[OHC_CACHELINE - 64];
	/* the owner's communicator failed with this status (0: it did not) */
	_Atomic int32_t abort_status;
	uint8_t pad2[OHC_CACHELINE - 4];
	struct ohc_shm_bell bell; /* the owner's doorbell */
};

_Static_assert(sizeof(struct ohc_shm_seg_hdr) == 3 * OHC_CACHELINE,
	       "segment header layout");

struct ohc_shm_dir_ent {
	uint32_t producer; /* rank that writes this ring */
	uint32_t pad;
	uint64_t off;	/* offset of the ring's ohc_shm_ring_ctl */
	uint64_t bytes; /* record bytes following the control block */
};

/*
 * Ring control block: no line is written by both sides, and what one side
 * reads on every message or every empty poll (cons_err, prod_err) is on a
 * line the other side writes only when it cancels. head (written after
 * every record) shared a line with cons_err, which the producer checks
 * before each push: every send then waited for that line to come over
 * before its record could be stamped.
 */
struct ohc_shm_ring_ctl {
	/* written by the consumer: as it reads */
	_Alignas(OHC_CACHELINE) _Atomic uint64_t head;
	_Atomic uint64_t cma_acked; /* rendezvous messages read so far */
	/* written by the consumer: once at connect, or when it cancels */
	_Alignas(OHC_CACHELINE) _Atomic int32_t cons_err; /* sends fail */
	_Atomic uint32_t cma_ok; /* consumer can read the producer (CMA) */
	/* written by the producer, only when it cancels */
	_Alignas(OHC_CACHELINE) _Atomic int32_t prod_err; /* no more data */
};

_Static_assert(sizeof(struct ohc_shm_ring_ctl) == 3 * OHC_CACHELINE,
	       "ring control layout");

enum {
	OHC_SHM_REC_DATA = 0x4441,   /* payload follows the header */
	OHC_SHM_REC_PAD = 0x5041,    /* skip to the end of the ring */
	OHC_SHM_REC_RNDV = 0x524e,   /* payload is in the sender (CMA) */
	OHC_SHM_REC_ZC = 0x5a43,     /* payload is exported memory (memfd) */
	OHC_SHM_REC_INLINE = 0x494e, /* a whole message inside the header */
};

#define OHC_SHM_INLINE_MAX 16u /* bytes of an INLINE record's message */

enum {
	OHC_SHM_FRAG_FIRST = 1u << 0, /* first fragment of a message */
	OHC_SHM_FRAG_LAST = 1u << 1,  /* last fragment of a message */
};

/*
 * Record header; the record is OHC_SHM_REC_HDR + align64(frag_len) bytes
 * (INLINE: OHC_SHM_REC_HDR; PAD: frag_len).
 */
struct ohc_shm_rec {
	uint64_t stamp;	   /* count of the record + 1, stored last */
	uint16_t kind;	   /* OHC_SHM_REC_* */
	uint16_t flags;	   /* OHC_SHM_FRAG_* */
	uint32_t frag_len; /* payload bytes; PAD: bytes to skip */
	struct ohc_sig sig;
	union {
		struct {
			uint64_t msg_len; /* bytes of the whole message */
			uint64_t addr;	  /* RNDV: the sender's address */
		};
		unsigned char data[OHC_SHM_INLINE_MAX]; /* INLINE */
	};
};

_Static_assert(sizeof(struct ohc_shm_rec) == OHC_SHM_REC_HDR,
	       "record header fills its slot");

/*
 * Payload of a ZC record: where the message lies in the sender's exported
 * memory. Like RNDV, the message is acknowledged through cma_acked; the
 * reader maps the memfd (or falls back to CMA at addr).
 */
struct ohc_shm_zc {
	struct ohc_mem_desc desc;
	uint8_t pad[OHC_SHM_REC_ALIGN - sizeof(struct ohc_mem_desc)];
};

_Static_assert(sizeof(struct ohc_shm_zc) == OHC_SHM_REC_ALIGN,
	       "zc payload is one slot");

/* Bytes a record of frag_len payload bytes occupies in the ring. */
static inline uint64_t ohc_shm_rec_bytes(uint64_t frag_len)
{
	return OHC_SHM_REC_HDR + OHC_ALIGN_UP(frag_len, OHC_SHM_REC_ALIGN);
}

/* Consumer side: is the record at count `at` written? (acquire: it is) */
static inline int ohc_shm_rec_ready(const char *data, uint64_t bytes,
				    uint64_t at)
{
	const struct ohc_shm_rec *rec =
		(const struct ohc_shm_rec *)(const void *)(data + at % bytes);

	return __atomic_load_n(&rec->stamp, __ATOMIC_ACQUIRE) == at + 1;
}

/* Producer side: the record at count `at` (in data) is complete. */
static inline void ohc_shm_rec_stamp(struct ohc_shm_rec *rec, uint64_t at)
{
	__atomic_store_n(&rec->stamp, at + 1, __ATOMIC_RELEASE);
}

/* Producer side: no stale stamp where the record at `at` will go. */
static inline void ohc_shm_rec_unstamp(char *data, uint64_t bytes, uint64_t at)
{
	struct ohc_shm_rec *rec =
		(struct ohc_shm_rec *)(void *)(data + at % bytes);

	__atomic_store_n(&rec->stamp, 0, __ATOMIC_RELAXED);
}

/* Consumer side: give records back to the producer (release: reads done). */
static inline void ohc_shm_ring_head_release(struct ohc_shm_ring_ctl *c,
					     uint64_t head)
{
	atomic_store_explicit(&c->head, head, memory_order_release);
}

/* Producer side: the consumer's published head (acquire: reads finished). */
static inline uint64_t ohc_shm_ring_head_acquire(struct ohc_shm_ring_ctl *c)
{
	return atomic_load_explicit(&c->head, memory_order_acquire);
}

/* Producer side: tell the consumer no more data will come (canceled). */
static inline void ohc_shm_ring_prod_fail(struct ohc_shm_ring_ctl *c,
					  int32_t status)
{
	atomic_store_explicit(&c->prod_err, status, memory_order_release);
}

/* Consumer side: has the producer canceled? */
static inline int32_t ohc_shm_ring_prod_err(struct ohc_shm_ring_ctl *c)
{
	return atomic_load_explicit(&c->prod_err, memory_order_acquire);
}

/* Consumer side: tell the producer nothing more will be read (canceled). */
static inline void ohc_shm_ring_cons_fail(struct ohc_shm_ring_ctl *c,
					  int32_t status)
{
	atomic_store_explicit(&c->cons_err, status, memory_order_release);
}

/* Producer side: has the consumer canceled? */
static inline int32_t ohc_shm_ring_cons_err(struct ohc_shm_ring_ctl *c)
{
	return atomic_load_explicit(&c->cons_err, memory_order_acquire);
}

/* Consumer side: one more rendezvous message was read out of the sender. */
static inline void ohc_shm_ring_cma_ack(struct ohc_shm_ring_ctl *c,
					uint64_t acked)
{
	atomic_store_explicit(&c->cma_acked, acked, memory_order_release);
}

/* Producer side: how many rendezvous messages the consumer finished. */
static inline uint64_t ohc_shm_ring_cma_acked(struct ohc_shm_ring_ctl *c)
{
	return atomic_load_explicit(&c->cma_acked, memory_order_acquire);
}

/* Consumer side: announce (once, at connect) that CMA reads work. */
static inline void ohc_shm_ring_cma_enable(struct ohc_shm_ring_ctl *c)
{
	atomic_store_explicit(&c->cma_ok, 1, memory_order_release);
}

/* Producer side: may messages to this consumer go by rendezvous? */
static inline int ohc_shm_ring_cma_ok(struct ohc_shm_ring_ctl *c)
{
	return atomic_load_explicit(&c->cma_ok, memory_order_acquire) != 0;
}

#endif
