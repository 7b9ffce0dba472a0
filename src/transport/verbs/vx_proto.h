/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TRANSPORT_VERBS_VX_PROTO_H
#define OHC_TRANSPORT_VERBS_VX_PROTO_H

/*
 * What names a work request: its wr_id, packed as
 *   peer << 32 | QP index << 24 | kind << 20 | low 20 bits,
 * where the low bits are the WRs a signaled send completion covers (it
 * and the unsignaled ones before it), for OHC_VX_WR_RDV the rendezvous
 * slot << 12 | covered, for OHC_VX_WR_RECV the replay epoch. The completion
 * handler (vx_cq.c) unpacks it; every poster packs it here.
 */
#include <stdint.h>

enum ohc_vx_wr_kind {
	OHC_VX_WR_SEND = 1,    /* slot-path and control sends */
	OHC_VX_WR_RECV = 2,    /* receive WRs (immediates) */
	OHC_VX_WR_RDV = 3,     /* the last write of a rendezvous stripe */
	OHC_VX_WR_PULL = 4,    /* the read of a pulled fragment */
	OHC_VX_WR_MARK_SQ = 5, /* replay's flush marker, send queue */
	OHC_VX_WR_KINDS
};

static inline uint64_t ohc_vx_wr_id(uint32_t peer, uint32_t qpi,
				    enum ohc_vx_wr_kind kind, uint32_t low)
{
	return (uint64_t)peer << 32 | (uint64_t)(qpi & 0xff) << 24 |
	       (uint64_t)kind << 20 | (low & 0xfffff);
}

static inline uint32_t ohc_vx_wr_peer(uint64_t id)
{
	return (uint32_t)(id >> 32);
}

static inline uint32_t ohc_vx_wr_qpi(uint64_t id)
{
	return (uint32_t)(id >> 24) & 0xff;
}

static inline unsigned ohc_vx_wr_kind(uint64_t id)
{
	return (unsigned)(id >> 20) & 0xf;
}

static inline uint32_t ohc_vx_wr_low(uint64_t id)
{
	return (uint32_t)id & 0xfffff;
}

#endif
