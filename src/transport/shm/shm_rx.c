/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shm transport's consumer side: records of the peer's ring in our
 * segment are matched against the posted receives in FIFO order and
 * delivered (copied, or reduced) into them; rendezvous and ZC messages
 * are read out of the sender (process_vm_readv, or our mapping of its
 * memory) and acknowledged. Everything the peer wrote is checked before
 * use. One thread drives an ep (shm.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shm/shm.h"
#include "util/compiler.h"
#include "util/log.h"

#define SHM_CMA_CHUNK (1u << 20)  /* bytes per process_vm_readv */
#define SHM_CMA_BUDGET (4u << 20) /* CMA bytes per ep per progress call */
#define SHM_BOUNCE (256u << 10)	  /* CMA reads that feed a reduction */

/* The stream from the peer is broken: fail everything posted on the ep. */
static void shm_rx_fail(struct ohc_shm_ep *sep, ohc_status_t status,
			const char *why)
{
	if (!sep->dead_logged)
		OHC_ERROR(OHC_SS_SHM, "rank %u: shm stream from rank %u: %s",
			  sep->super.iface->rank, sep->super.peer, why);
	sep->dead_logged = 1;
	sep->err = status;
	sep->rndv_on = 0;
	sep->discard = 0;
	ohc_shm_fail_all(sep, status);
	ohc_shm_ring_cons_fail(sep->rx, OHC_ERR_REMOTE);
}

/* Consumer: check a new message against the front receive. */
static int rx_match(struct ohc_shm_ep *sep, struct ohc_req *req,
		    const struct ohc_shm_rec *rec, uint64_t msg_len)
{
	if (!memcmp(&rec->sig, &req->sig, sizeof(req->sig)) &&
	    msg_len == req->len)
		return 1;
	OHC_DEBUG(OHC_SS_SHM,
		  "rank %u: message from rank %u does not match: seq %" PRIu64
		  "/%" PRIu64 " len %" PRIu64 "/%zu",
		  sep->super.iface->rank, sep->super.peer, rec->sig.seq,
		  req->sig.seq, msg_len, req->len);
	req->got_sig = rec->sig;
	ohc_list_del(&req->link);
	ohc_req_complete(req, OHC_ERR_DESYNC);
	return 0;
}

/* Consumer: finish a rendezvous message (read or rejected). */
static void rndv_ack(struct ohc_shm_ep *sep)
{
	sep->rx_acked++;
	ohc_shm_ring_cma_ack(sep->rx, sep->rx_acked);
	sep->rndv_on = 0;
}

/* Consumer: read part of the current rendezvous message out of the peer. */
static ohc_status_t rndv_step(struct ohc_shm_ep *sep, size_t *budget_p)
{
	struct ohc_req *req = ohc_list_first(&sep->recvs, struct ohc_req, link);
	uint64_t src = sep->rndv_rec.addr + req->done;
	size_t chunk = OHC_MIN(req->len - req->done, (size_t)SHM_CMA_CHUNK);
	ohc_status_t status;

	if (sep->rndv_src) {
		/* zero-copy: straight out of our mapping of the sender */
		req->path = OHC_PATH_ZC;
		ohc_req_deliver(req, req->done, sep->rndv_src + req->done,
				chunk);
	} else if (req->kind == OHC_RECV_COPY) {
		req->path = OHC_PATH_DIRECT;
		status = ohc_shm_cma_read(sep, (char *)req->dst + req->done,
					  src, chunk);
		if (status < 0)
			return status;
		req->done += chunk;
	} else {
		req->path = OHC_PATH_STAGED; /* through the bounce buffer */
		if (!sep->bounce && !(sep->bounce = malloc(SHM_BOUNCE)))
			return OHC_ERR_NO_MEMORY;
		chunk = OHC_MIN(chunk, (size_t)SHM_BOUNCE);
		status = ohc_shm_cma_read(sep, sep->bounce, src, chunk);
		if (status < 0)
			return status;
		ohc_req_deliver(req, req->done, sep->bounce, chunk);
	}
	*budget_p -= OHC_MIN(*budget_p, chunk);
	if (req->done < req->len)
		return OHC_INPROGRESS;
	/* Data read after the producer canceled may be stale: refuse it. */
	if (ohc_shm_ring_prod_err(sep->rx))
		return OHC_ERR_REMOTE;
	rndv_ack(sep);
	ohc_list_del(&req->link);
	ohc_req_complete(req, OHC_OK);
	return OHC_OK;
}

/*
 * Small records: ask for all their payload lines at once (up to
 * SHM_PREFETCH bytes of the record), so that they cross from the
 * producer's cache in one round trip instead of one per line or pair of
 * lines. AllReduce, 2 ranks: 128-512 B went from 0.83-1.05 us to
 * 0.59-0.77, 8-64 B unchanged. Prefetching the producer's next lines for
 * writing (PREFETCHW) as well gained nothing more and cost some at 32-64 B.
 */
#define SHM_PREFETCH 512u
static inline void rx_prefetch(const struct ohc_shm_ep *sep, uint64_t pos,
			       uint64_t bytes)
{
	const char *p = sep->rx_data + pos;

	bytes = OHC_MIN(bytes, (uint64_t)SHM_PREFETCH);
	for (uint64_t off = OHC_CACHELINE; off < bytes; off += OHC_CACHELINE)
		__builtin_prefetch(p + off, 0);
}

/* Consumer: is the header at pos (of `bytes` in all, contig before the
 * end) a record we can take? */
static int rx_rec_ok(const struct ohc_shm_ep *sep,
		     const struct ohc_shm_rec *rec, uint64_t bytes,
		     uint64_t contig)
{
	const uint16_t whole = OHC_SHM_FRAG_FIRST | OHC_SHM_FRAG_LAST;

	if (bytes > contig)
		return 0;
	switch (rec->kind) {
	case OHC_SHM_REC_PAD:
		return bytes == contig;
	case OHC_SHM_REC_DATA:
		return rec->frag_len <= sep->rx_max_frag;
	case OHC_SHM_REC_INLINE:
		return rec->frag_len <= OHC_SHM_INLINE_MAX &&
		       rec->flags == whole;
	case OHC_SHM_REC_RNDV:
		return !rec->frag_len && rec->flags == whole && sep->rx_cma;
	case OHC_SHM_REC_ZC:
		return rec->frag_len == sizeof(struct ohc_shm_zc) &&
		       rec->flags == whole && sep->rx_cma;
	default:
		return 0;
	}
}

/* Consumer: drain records into posted receives; returns records read. */
unsigned ohc_shm_pull(struct ohc_shm_ep *sep)
{
	size_t budget = SHM_CMA_BUDGET;
	unsigned moved = 0;

	if (OHC_UNLIKELY(sep->cold) && !ohc_list_empty(&sep->recvs))
		ohc_shm_warm(sep, 0);

	while (!ohc_list_empty(&sep->recvs) || sep->discard) {
		uint64_t pos, contig, bytes, msg_len;
		const unsigned char *payload;
		struct ohc_shm_rec rec;
		struct ohc_req *req;
		int is_zc;

		if (sep->rndv_on) {
			ohc_status_t st;

			if (!budget)
				break;
			st = rndv_step(sep, &budget);
			if (st < 0) {
				shm_rx_fail(sep, st, "rendezvous read failed");
				break;
			}
			moved++;
			continue;
		}
		/*
		 * After a record with payload lines, ask for the line after
		 * the next header while polling it: the next record likely
		 * has the same shape, and its payload line then arrives
		 * with its header, not one round trip after. Not after a
		 * one-line record: that line is where the producer clears
		 * ahead (ohc_shm_push), and taking it would make it wait.
		 */
		if (sep->rx_multi)
			__builtin_prefetch(sep->rx_data + (sep->rx_head +
							   OHC_SHM_REC_ALIGN) %
								  sep->rx_bytes,
					   0);
		if (!ohc_shm_rec_ready(sep->rx_data, sep->rx_bytes,
				       sep->rx_head)) {
			ohc_status_t why;

			if (!ohc_shm_ring_prod_err(sep->rx))
				break;
			/*
			 * The producer publishes its last records before it
			 * cancels, so after seeing the cancel look again: the
			 * first look may predate both (a consumer preempted
			 * between the two loads saw a peer that completed its
			 * last send and then left).
			 */
			if (ohc_shm_rec_ready(sep->rx_data, sep->rx_bytes,
					      sep->rx_head))
				continue;
			if (!ohc_list_empty(&sep->recvs)) {
				why = ohc_shm_peer_stop_reason(sep);
				shm_rx_fail(sep, why,
					    why == OHC_ERR_DESYNC
						    ? "the peer stopped on a "
						      "mismatched operation"
						    : "the peer canceled its "
						      "sends");
			}
			break;
		}
		pos = sep->rx_head % sep->rx_bytes;
		contig = sep->rx_bytes - pos;
		memcpy(&rec, sep->rx_data + pos, sizeof(rec));
		bytes = rec.kind == OHC_SHM_REC_PAD ? rec.frag_len
			: rec.kind == OHC_SHM_REC_RNDV ||
					rec.kind == OHC_SHM_REC_INLINE
				? OHC_SHM_REC_HDR
				: ohc_shm_rec_bytes(rec.frag_len);
		if (!rx_rec_ok(sep, &rec, bytes, contig)) {
			shm_rx_fail(sep, OHC_ERR_REMOTE, "corrupt record");
			break;
		}
		rx_prefetch(sep, pos, bytes);
		is_zc = rec.kind == OHC_SHM_REC_ZC;
		msg_len = rec.kind == OHC_SHM_REC_INLINE ? rec.frag_len
							 : rec.msg_len;
		payload = rec.kind == OHC_SHM_REC_INLINE
				  ? rec.data
				  : (const unsigned char *)sep->rx_data + pos +
					    OHC_SHM_REC_HDR;
		moved++;
		if (rec.kind == OHC_SHM_REC_PAD)
			goto consume;
		if (sep->discard) {
			if (rec.kind == OHC_SHM_REC_RNDV || is_zc)
				rndv_ack(sep);
			if (rec.flags & OHC_SHM_FRAG_LAST)
				sep->discard = 0;
			goto consume;
		}
		req = ohc_list_first(&sep->recvs, struct ohc_req, link);
		if (!(rec.flags & OHC_SHM_FRAG_FIRST) != (req->done != 0)) {
			shm_rx_fail(sep, OHC_ERR_REMOTE,
				    "fragment out of order");
			break;
		}
		if ((rec.flags & OHC_SHM_FRAG_FIRST) &&
		    !rx_match(sep, req, &rec, msg_len)) {
			if (rec.kind == OHC_SHM_REC_RNDV || is_zc)
				rndv_ack(sep);
			else if (!(rec.flags & OHC_SHM_FRAG_LAST))
				sep->discard = 1;
			goto consume;
		}
		if (rec.kind == OHC_SHM_REC_RNDV || is_zc) {
			sep->rndv_rec = rec;
			sep->rndv_on = 1;
			sep->rndv_src = NULL;
			if (is_zc) {
				struct ohc_shm_zc zc;

				memcpy(&zc, payload, sizeof(zc));
				sep->rndv_src = ohc_shm_zc_import(
					sep, &zc.desc, (size_t)rec.msg_len);
			}
			goto consume;
		}
		/* whole lines but for the last (core/req.h): a reduction
		 * must see whole elements */
		if (req->done + rec.frag_len > req->len ||
		    !!(rec.flags & OHC_SHM_FRAG_LAST) !=
			    (req->done + rec.frag_len == req->len) ||
		    (!(rec.flags & OHC_SHM_FRAG_LAST) &&
		     rec.frag_len % OHC_SHM_REC_ALIGN)) {
			shm_rx_fail(sep, OHC_ERR_REMOTE,
				    "fragment lengths do not add up");
			break;
		}
		if (rec.frag_len)
			ohc_req_deliver(req, req->done, payload, rec.frag_len);
		if (rec.flags & OHC_SHM_FRAG_LAST) {
			ohc_list_del(&req->link);
			ohc_req_complete(req, OHC_OK);
		}
	consume:
		sep->rx_multi = bytes > OHC_SHM_REC_HDR;
		sep->rx_head += bytes;
		ohc_shm_ring_head_release(sep->rx, sep->rx_head);
	}
	return moved;
}
