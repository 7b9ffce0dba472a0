/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TRANSPORT_VERBS_VX_RDV_H
#define OHC_TRANSPORT_VERBS_VX_RDV_H

/*
 * Rendezvous (vx_rdv.c) and the memory registration cache (vx_mr.c) of
 * the verbs transport: messages of at least OPENHCCL_RDMA_RNDV_KB bytes
 * go straight from the sender's buffer into the receiver's, with no
 * staging slot on either side.
 *
 * Receiver first: posting a large receive gives it the next receive
 * rendezvous number k. Once the number's table entry (k mod
 * OHC_VX_RDV_N) is free, the receiver writes a CTS into the sender's
 * control array, entry k mod N (RDMA WRITE_WITH_IMM on QP 0, immediate
 * OHC_VX_IMM_RDV | OHC_VX_IMM_CTS | k mod N). The CTS carries the
 * receive's signature and length and either the destination (address,
 * rkey: a COPY receive, or a REDUCE_TO whose operand does not overlap
 * the destination, and whose buffer could be registered), a landing
 * buffer (a reduction into its own destination: REDUCE, or REDUCE_TO
 * overlapping its operand; land_chunk != 0) or "eager" (registration
 * failed, no landing buffer free).
 * The sender numbers its large sends the same way and matches the k-th
 * with CTS k:
 *  - direct: it compares the signatures, then writes the message in up
 *    to nqps stripes, one per QP, each ending in an RDMA WRITE_WITH_IMM
 *    (immediate OHC_VX_IMM_RDV | stripes << 16 | k mod N); with
 *    OPENHCCL_RDMA_WRITE_KB a stripe is plain RDMA WRITEs of that size
 *    and the immediate comes with its last piece (posted in batches as
 *    the send queue has room). The receive completes when all stripes
 *    landed, the send when all were acknowledged.
 *  - landing, when the source lies in exported memory (req->smem; else
 *    the sender declines and goes eager): the receiver's landing buffer
 *    is a ring of land_n chunks of land_chunk bytes. The sender writes
 *    the message chunk by chunk, chunk i from its own buffer (its MR, no
 *    copy) into ring entry i mod land_n, ending in an RDMA
 *    WRITE_WITH_IMM (immediate OHC_VX_IMM_RDV | 1 << 16 | k mod N; in
 *    OPENHCCL_RDMA_WRITE_KB pieces like a stripe, but never more than a
 *    quarter of the send queue: a chunk is posted whole), all on QP
 *    k mod nqps so they land in order, at most land_n ahead of the
 *    receiver.
 *    The receiver reduces each chunk straight out of the ring into the
 *    destination (ohc_req_deliver) and, if the sender still has chunks
 *    it may not write yet, grants one more: a zero-length WRITE_WITH_IMM
 *    with OHC_VX_IMM_RDV | OHC_VX_IMM_CTS | OHC_VX_IMM_GRANT | k mod N.
 *    The receive completes with its last chunk (path OHC_PATH_LANDING),
 *    the send when every chunk was acknowledged.
 *  - eager: the message travels through the slot ring as usual, each
 *    header flagged with k, so the receiver routes it to its request
 *    whatever else is queued; the header's signature is checked there.
 *  - signatures differ: the send fails with OHC_ERR_DESYNC and a
 *    header-only fragment flagged with k carries the sender's signature
 *    to the receiver, which fails the same way.
 * At most N rendezvous per direction are past the CTS at any time, so a
 * control entry is never overwritten before it was read.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "core/req.h"
#include "core/tp.h"
#include "util/list.h"

#define OHC_VX_RDV_N 64u /* rendezvous past CTS per direction */
#define OHC_VX_IMM_RDV 0x80000000u
#define OHC_VX_IMM_CTS 0x40000000u
#define OHC_VX_IMM_GRANT 0x20000000u /* with OHC_VX_IMM_CTS */
#define OHC_VX_CTS_BYTES 64u
/* landing buffers: per iface, taken by a receive for its lifetime */
#define OHC_VX_LAND_CHUNK (256u * 1024u)
#define OHC_VX_LAND_CHUNKS 4u /* chunks per buffer */
#define OHC_VX_LAND_MAX 4u    /* buffers per iface */

struct ohc_verbs_iface;
struct ohc_verbs_ep;
struct vx_mr;

/* ---- registration cache (vx_mr.c) ---------------------------------- */

struct vx_mr_cache {
	pthread_mutex_t lock;
	struct ohc_list entries; /* least recently used first */
	unsigned n, idle;	 /* entries, of which unused and cached */
	unsigned max_idle;	 /* OPENHCCL_RDMA_MR_CACHE, or its default */
	int pm_fd;		 /* /proc/self/pagemap; -1: reuse unchecked */
	size_t page;		 /* one pagemap entry per page of this size */
	unsigned long stale;	 /* entries found remapped at reuse */
	int inited;
};

void ohc_vx_mr_cache_init(struct ohc_verbs_iface *vi);
/* Deregister everything (iface close; no request uses it any more). */
void ohc_vx_mr_cache_fini(struct ohc_verbs_iface *vi);
/*
 * A registration covering [addr, addr+len) (registered now if none is
 * cached), held until ohc_vx_mr_put; NULL if ibv_reg_mr failed (logged
 * at DEBUG). *zc_p: 1 if it is exported memory (mem_reg).
 */
struct vx_mr *ohc_vx_mr_get(struct ohc_verbs_iface *vi, const void *addr,
			    size_t len, int write, int *zc_p);
void ohc_vx_mr_put(struct ohc_verbs_iface *vi, struct vx_mr *m);
uint32_t ohc_vx_mr_lkey(const struct vx_mr *m);
uint32_t ohc_vx_mr_rkey(const struct vx_mr *m);
/* Registrations cached (in use or not), for tests. */
unsigned ohc_vx_mr_cached(struct ohc_verbs_iface *vi);
/* Cached registrations dropped because their address was remapped. */
unsigned long ohc_vx_mr_stale(struct ohc_verbs_iface *vi);
/* transport ops mem_reg / mem_dereg */
ohc_status_t ohc_vx_mem_reg(struct ohc_iface *iface, void *addr, size_t len,
			    const struct ohc_mem_desc *desc, void **handle_p);
void ohc_vx_mem_dereg(struct ohc_iface *iface, void *handle);

/* ---- landing buffers (vx_rdv.c) ------------------------------------ */

/*
 * Registered memory a reduction into its own destination lands in
 * before it is reduced (dst = dst OP message cannot land in dst). Up to
 * OHC_VX_LAND_MAX per iface, each OHC_VX_LAND_CHUNKS chunks, allocated
 * and registered at first need, kept until iface close. Used by the
 * progress thread only.
 */
struct vx_land {
	char *buf; /* NULL: not allocated yet */
	struct ibv_mr *mr;
	int busy; /* taken by a receive */
};

/* Free every landing buffer (iface close: no ep uses them any more). */
void ohc_vx_land_fini(struct ohc_verbs_iface *vi);

/* ---- rendezvous (vx_rdv.c) ----------------------------------------- */

struct vx_rdv_tx {
	struct ohc_req *req;
	struct vx_mr *mr;
	uint32_t left;	/* stripes (landing: chunks) not yet acknowledged */
	uint32_t ns;	/* stripes (one per QP) */
	size_t chunk;	/* bytes per stripe (the last may be shorter) */
	size_t posted;	/* bytes posted so far, stripe after stripe */
	uint64_t raddr; /* from the CTS: the destination or landing ring */
	uint32_t rkey;
	/* landing: the receiver's ring, chunks written and granted */
	int land;
	uint32_t land_qpi, land_chunk, land_n;
	uint64_t written;     /* bytes */
	uint64_t sent, freed; /* chunks written, chunks the receiver freed */
};

struct vx_rdv_rx {
	struct ohc_req *req;
	struct vx_mr *mr;     /* NULL: eager or landing */
	struct vx_land *land; /* landing buffer, or NULL */
	uint32_t seen;	      /* stripes (landing: chunks) landed */
	uint32_t grants;      /* landing: grants not yet written */
	int zc;		      /* the destination is exported memory */
	int rects;	      /* after a replay: write the CTS again */
};

struct vx_rdv_cts {
	struct ohc_sig sig;
	uint64_t len;
	uint64_t addr; /* 0: eager */
	uint32_t rkey;
	uint32_t seq;	     /* the full rendezvous number */
	uint32_t land_chunk; /* 0: addr is the destination, else landing */
	uint32_t land_n;     /* chunks in the landing ring */
};

_Static_assert(sizeof(struct vx_rdv_cts) <= OHC_VX_CTS_BYTES, "CTS fits");

/* Per ep and direction. */
struct vx_rdv {
	/* send side */
	struct ohc_list txq; /* large sends, in number order */
	uint32_t tx_seq;     /* numbers given to sends */
	struct vx_rdv_tx tx[OHC_VX_RDV_N];
	struct vx_rdv_cts cts[OHC_VX_RDV_N]; /* CTS read, not yet used */
	uint8_t cts_ok[OHC_VX_RDV_N];
	/* the last send of each entry that ended: its number and how
	 * (VX_TX_EAGER, VX_TX_DONE; 0: none yet), for a replay */
	uint32_t last_seq[OHC_VX_RDV_N];
	uint8_t last_how[OHC_VX_RDV_N];
	/* receive side */
	struct ohc_list rxq; /* large receives, in number order */
	uint32_t rx_seq;     /* numbers given to receives */
	uint32_t rx_cts;     /* CTS written (numbers below it) */
	struct vx_rdv_rx rx[OHC_VX_RDV_N];
	uint32_t grants_due; /* sum of rx[].grants */
	/* a header-only fragment telling the receiver of a desync */
	struct ohc_req probe;
};

/*
 * What the CTS in a send's table entry asks of the large send req (its
 * number in tp_priv): a check of what the peer wrote, pure. NOT_YET: no
 * CTS of this number (cts_ok 0, or another number); DESYNC: another
 * length or signature; BAD: a landing geometry no receiver offers (a
 * protocol error: land_n 1..OHC_VX_LAND_CHUNKS chunks of up to
 * OHC_VX_LAND_CHUNK, multiples of 64); LANDING: into the receiver's
 * landing ring (only for an exported source, req->smem); EAGER: through
 * the slots; DIRECT: straight into the destination.
 */
enum vx_cts_kind {
	VX_CTS_NOT_YET,
	VX_CTS_DESYNC,
	VX_CTS_BAD,
	VX_CTS_LANDING,
	VX_CTS_EAGER,
	VX_CTS_DIRECT,
};
enum vx_cts_kind ohc_vx_cts_kind(const struct vx_rdv_cts *cts, int cts_ok,
				 const struct ohc_req *req);

/* Large enough to go by rendezvous? */
int ohc_vx_rdv_large(const struct ohc_verbs_iface *vi, size_t len);
ohc_status_t ohc_vx_rdv_send(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			     struct ohc_req *req);
ohc_status_t ohc_vx_rdv_recv(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			     struct ohc_req *req);
/* CTS to write, sends to start, completions to report (progress). */
unsigned ohc_vx_rdv_progress(struct ohc_verbs_iface *vi,
			     struct ohc_verbs_ep *e);
/* An immediate with OHC_VX_IMM_RDV arrived. */
void ohc_vx_rdv_imm(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		    uint32_t imm);
/* A signaled rendezvous write of table entry slot was acknowledged. */
void ohc_vx_rdv_acked(struct ohc_verbs_ep *e, uint32_t slot);
/* The receive a flagged eager fragment belongs to (NULL: none). */
struct ohc_req *ohc_vx_rdv_route(struct ohc_verbs_ep *e, uint64_t flag);
/* Whether slot data may be routed into the rendezvous receive req: its
 * CTS was eager, or offered a landing ring (which the sender may
 * decline); not when the message is written into its destination. */
int ohc_vx_rdv_takes_slots(const struct ohc_verbs_ep *e,
			   const struct ohc_req *req);
/* A routed receive finished (done or failed): free its entry. */
void ohc_vx_rdv_rx_done(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
			struct ohc_req *req);
/*
 * Replay (vx_replay.c): a link failure flushed the queues, so neither
 * side knows which writes of a rendezvous in flight landed or were
 * acknowledged. Each side reports, per table entry, what it holds (its
 * receive past the CTS and the stripes or chunks that landed; its send:
 * started, gone eager, done, or a CTS not yet used) in the replay HELLO;
 * with the peer's report each side then decides alike:
 *  - a send the receiver no longer holds completed: it completes;
 *  - a send started and still wanted is written again, a direct one
 *    whole (the same bytes into the same destination), a landing one
 *    from the first chunk the receiver has not reduced yet;
 *  - a receive whose send completed takes what landed (its completions
 *    were dropped with the old queues);
 *  - a receive whose CTS the sender never saw gets it written again.
 * report: OHC_VX_RDV_REPORT bytes; apply: with the peer's, once both
 * sides drained and before any new write.
 */
#define OHC_VX_RDV_REPORT (OHC_VX_RDV_N * 24u)
/* How a send of a table entry went, for the report (last_how). */
enum { VX_TX_NONE, VX_TX_STARTED, VX_TX_EAGER, VX_TX_DONE };
void ohc_vx_rdv_report(const struct ohc_verbs_ep *e, uint8_t *out);
/* what a replay did to the rendezvous in flight, for its log line */
struct vx_rdv_replayed {
	unsigned rewound, completed, rects;
};
void ohc_vx_rdv_replay(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       const uint8_t *peer, struct vx_rdv_replayed *out);

/* For vx_rdv_replay.c: a request's rendezvous number; the ends of a
 * direct receive (every stripe landed), of a send (every write
 * acknowledged), and a landing receive's next chunk, as in vx_rdv.c. */
static inline uint32_t ohc_vx_rdv_seq(const struct ohc_req *req)
{
	return (uint32_t)(uintptr_t)req->tp_priv;
}
void ohc_vx_rdv_rx_direct_done(struct ohc_verbs_iface *vi, struct vx_rdv *r,
			       struct vx_rdv_rx *x);
void ohc_vx_rdv_tx_done(struct ohc_verbs_iface *vi, struct vx_rdv *r,
			struct vx_rdv_tx *t);
void ohc_vx_rdv_rx_land_chunk(struct ohc_verbs_iface *vi,
			      struct ohc_verbs_ep *e, struct vx_rdv_rx *x);

/* Fail every rendezvous request with status and release its MRs. */
void ohc_vx_rdv_fail(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		     ohc_status_t status);

#endif
