/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shm transport's producer side: posted sends go into our ring in the
 * peer's segment as records (inline, data fragments, rendezvous or ZC
 * descriptors; shm_ring.h), and rendezvous sends complete when the
 * consumer acknowledges them. One thread drives an ep (shm.h).
 */
#include <string.h>

#include "runtime/ohc_rt.h"
#include "transport/shm/shm.h"
#include "util/compiler.h"

#define SHM_PARTIAL_MIN 4096u /* smallest fragment cut to fit space */

enum tx_plan { PLAN_WAIT, PLAN_PAD, PLAN_DATA, PLAN_RNDV, PLAN_ZC };

/*
 * Free bytes of the ring, at least `need` if the consumer has freed them.
 * The consumer's head is read only when our last reading of it shows less:
 * a read per send moved its cache line to us and back each time (the
 * consumer writes it after every record). An old reading is only smaller.
 */
static uint64_t tx_free(struct ohc_shm_ep *sep, uint64_t need)
{
	uint64_t free_b = sep->tx_bytes - (sep->tx_tail - sep->tx_head);

	if (free_b >= need)
		return free_b;
	sep->tx_head = ohc_shm_ring_head_acquire(sep->tx);
	return sep->tx_bytes - (sep->tx_tail - sep->tx_head);
}

/* Does the whole of req fit inside a record header (an INLINE record)? */
static int tx_inline(const struct ohc_req *req)
{
	return req->done == 0 && req->len <= OHC_SHM_INLINE_MAX;
}

/* Decide what the front send can write now; *payload_p for PLAN_DATA. */
static enum tx_plan tx_plan(struct ohc_shm_ep *sep, const struct ohc_req *req,
			    uint64_t *payload_p)
{
	uint64_t rem = req->len - req->done;
	uint64_t want = OHC_MIN(rem, sep->tx_max_frag);
	uint64_t need = tx_inline(req) ? OHC_SHM_REC_HDR
				       : ohc_shm_rec_bytes(want),
		 fit;
	/* enough for any record this send may write here (a ZC one: 128) */
	uint64_t free_b = tx_free(
		sep,
		OHC_MAX(need, ohc_shm_rec_bytes(sizeof(struct ohc_shm_zc))));
	uint64_t contig = sep->tx_bytes - sep->tx_tail % sep->tx_bytes;
	uint64_t avail = OHC_MIN(free_b, contig);

	/* Exported source: the reader copies out of its mapping of it. */
	if (req->done == 0 && req->smem && ohc_shm_ring_cma_ok(sep->tx)) {
		need = ohc_shm_rec_bytes(sizeof(struct ohc_shm_zc));
		if (avail >= need)
			return PLAN_ZC;
		return contig < need && free_b >= contig ? PLAN_PAD : PLAN_WAIT;
	}
	if (req->done == 0 &&
	    req->len >= ohc_shm_iface_of(sep->super.iface)->cma_min &&
	    ohc_shm_ring_cma_ok(sep->tx))
		return avail >= OHC_SHM_REC_HDR ? PLAN_RNDV : PLAN_WAIT;
	if (avail >= need) {
		*payload_p = want;
		return PLAN_DATA;
	}
	fit = avail > OHC_SHM_REC_HDR
		      ? (avail - OHC_SHM_REC_HDR) / OHC_SHM_REC_ALIGN *
				OHC_SHM_REC_ALIGN
		      : 0;
	if (fit >= OHC_MIN((uint64_t)SHM_PARTIAL_MIN, sep->tx_max_frag)) {
		*payload_p = fit; /* < want: not the last, a multiple of 64 */
		return PLAN_DATA;
	}
	if (contig < need && free_b >= contig)
		return PLAN_PAD;
	return PLAN_WAIT;
}

/*
 * Clear the stamp where the record after the next rb bytes will go, if
 * that place is free (else it holds an older header: shm_ring.h).
 */
static void tx_unstamp_next(struct ohc_shm_ep *sep, uint64_t rb)
{
	if (tx_free(sep, rb + OHC_SHM_REC_ALIGN) >= rb + OHC_SHM_REC_ALIGN)
		ohc_shm_rec_unstamp(sep->tx_data, sep->tx_bytes,
				    sep->tx_tail + rb);
}

/* Producer: move posted sends into the ring; returns records written. */
unsigned ohc_shm_push(struct ohc_shm_ep *sep)
{
	unsigned moved = 0;

	if (OHC_UNLIKELY(sep->cold) && !ohc_list_empty(&sep->sends))
		ohc_shm_warm(sep, 1);

	while (!ohc_list_empty(&sep->sends)) {
		struct ohc_req *req =
			ohc_list_first(&sep->sends, struct ohc_req, link);
		uint64_t pos = sep->tx_tail % sep->tx_bytes, payload = 0, rb;
		struct ohc_shm_rec *rec =
			(struct ohc_shm_rec *)(sep->tx_data + pos);
		enum tx_plan plan = tx_plan(sep, req, &payload);
		int inl;

		if (plan == PLAN_WAIT)
			break;
		if (plan == PLAN_PAD) {
			rb = sep->tx_bytes - pos;
			tx_unstamp_next(sep, rb);
			rec->kind = OHC_SHM_REC_PAD;
			rec->frag_len = (uint32_t)rb;
			goto stamp;
		}
		inl = plan == PLAN_DATA && tx_inline(req);
		rb = inl ? OHC_SHM_REC_HDR
		     : plan == PLAN_ZC
			     ? ohc_shm_rec_bytes(sizeof(struct ohc_shm_zc))
			     : ohc_shm_rec_bytes(payload);
		tx_unstamp_next(sep, rb);
		/*
		 * The payload lines first, then the header line whole, its
		 * stamp last: the consumer polls the header, so each line
		 * it polls or prefetches is taken from it once. Header
		 * fields, payload, then stamp took the header line twice,
		 * and the stores commit in order. AllReduce, 2 ranks,
		 * synchronous, 5 interleaved runs with the clear-ahead
		 * below: 128 B 0.75-0.77 -> 0.70-0.72 us, 1 KiB 1.06-1.13
		 * -> 0.95-1.01.
		 */
		if (plan == PLAN_ZC) {
			struct ohc_shm_zc zc;

			memset(&zc, 0, sizeof(zc));
			zc.desc = *req->smem;
			memcpy(rec + 1, &zc, sizeof(zc));
			payload = sizeof(zc);
		} else if (plan == PLAN_DATA && payload && !inl) {
			memcpy(rec + 1, (const char *)req->sbuf + req->done,
			       payload);
		}
		rec->kind = inl			? OHC_SHM_REC_INLINE
			    : plan == PLAN_RNDV ? OHC_SHM_REC_RNDV
			    : plan == PLAN_ZC	? OHC_SHM_REC_ZC
						: OHC_SHM_REC_DATA;
		rec->flags = req->done == 0 ? OHC_SHM_FRAG_FIRST : 0;
		if (plan != PLAN_DATA || req->done + payload == req->len)
			rec->flags |= OHC_SHM_FRAG_LAST;
		rec->frag_len = (uint32_t)payload;
		rec->sig = req->sig;
		if (inl) {
			if (payload)
				memcpy(rec->data, req->sbuf, payload);
		} else {
			rec->msg_len = req->len;
			rec->addr = (uint64_t)(uintptr_t)req->sbuf;
		}
		if (plan == PLAN_DATA)
			req->done += payload;
	stamp:
		ohc_shm_rec_stamp(rec, sep->tx_tail);
		sep->tx_tail += rb;
		/*
		 * Clear where the next record of this one's shape will
		 * clear, now, off the critical path: its own clearing then
		 * finds that line already ours, instead of fetching it back
		 * (a lap ago the consumer read it) before its stamp can be
		 * seen. One line further (INLINE records): AllReduce, 2
		 * ranks, interleaved: 16 B 0.58-0.63 -> 0.47-0.49 us, 8 B
		 * 0.75-0.91 -> 0.65-0.74. A record's size further for the
		 * others (one line further was their own payload line).
		 */
		tx_unstamp_next(sep, plan == PLAN_PAD ? OHC_SHM_REC_ALIGN : rb);
		moved++;
		if (plan == PLAN_RNDV || plan == PLAN_ZC) {
			ohc_list_del(&req->link);
			ohc_list_add_tail(&sep->rndv, &req->link);
		} else if (plan == PLAN_DATA && req->done == req->len) {
			ohc_list_del(&req->link);
			ohc_req_complete(req, OHC_OK);
		}
	}
	return moved;
}

/* Producer: complete rendezvous sends the consumer has read. */
unsigned ohc_shm_reap_rndv(struct ohc_shm_ep *sep)
{
	uint64_t acked;
	unsigned n = 0;

	if (ohc_list_empty(&sep->rndv))
		return 0;
	acked = ohc_shm_ring_cma_acked(sep->tx);
	while (sep->tx_acked < acked && !ohc_list_empty(&sep->rndv)) {
		struct ohc_req *req =
			ohc_list_first(&sep->rndv, struct ohc_req, link);

		req->done = req->len;
		ohc_list_del(&req->link);
		ohc_req_complete(req, OHC_OK);
		sep->tx_acked++;
		n++;
	}
	return n;
}

/*
 * Implicit zero copy: a large message out of a shared aclrtMalloc buffer
 * (runtime/rt_memory.c) goes as a ZC record naming that buffer's memfd,
 * as if it were exported: the reader maps it once (cached by id) and
 * copies straight out of it. Only to another process that can take our
 * fds (it announced CMA); a thread rank of ours reads us directly anyway.
 */
void ohc_shm_tx_implicit_zc(struct ohc_shm_ep *sep, struct ohc_req *req)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(sep->super.iface);
	struct ohc_rt_mem_info info;

	if (req->smem || req->len < sif->zc_min || sep->pid == sif->pid ||
	    !ohc_shm_ring_cma_ok(sep->tx) ||
	    ohc_rt_mem_info(req->sbuf, req->len, &info) != 0)
		return;
	req->smem_buf = (struct ohc_mem_desc){
		.id = OHC_SHM_ZC_IMPLICIT | info.id,
		.fd = info.fd,
		.fd_off = info.offset,
		.fd_size = info.size,
	};
	req->smem = &req->smem_buf;
}

int ohc_shm_tx_ready(struct ohc_shm_ep *sep)
{
	uint64_t payload;

	return tx_plan(sep, ohc_list_first(&sep->sends, struct ohc_req, link),
		       &payload) != PLAN_WAIT;
}
