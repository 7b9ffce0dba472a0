/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs rendezvous after a replay (vx_replay.c): each side's report
 * of its rendezvous table, and what both sides do with the peer's
 * (vx_rdv.h, "Replay").
 */
#include <string.h>

#include "transport/verbs/verbs.h"
#include "util/compiler.h"

/* A report entry: receive number, receive in flight (direct or landing),
 * send state (VX_TX_*), CTS not yet used, send number, CTS number,
 * stripes or chunks the receive has taken. */
enum {
	RP_RX_SEQ = 0,
	RP_RX_ON = 4,
	RP_TX_HOW = 5,
	RP_CTS_ON = 6,
	RP_TX_SEQ = 8,
	RP_CTS_SEQ = 12,
	RP_RX_SEEN = 16,
	RP_ENTRY = 24,
};

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

void ohc_vx_rdv_report(const struct ohc_verbs_ep *e, uint8_t *out)
{
	const struct vx_rdv *r = &e->rdv;

	_Static_assert(RP_ENTRY * OHC_VX_RDV_N == OHC_VX_RDV_REPORT,
		       "report size");
	memset(out, 0, OHC_VX_RDV_REPORT);
	for (uint32_t slot = 0; slot < OHC_VX_RDV_N; slot++) {
		const struct vx_rdv_rx *x = &r->rx[slot];
		const struct vx_rdv_tx *t = &r->tx[slot];
		uint8_t *p = out + (size_t)slot * RP_ENTRY;

		if (x->req && (x->mr || x->land)) {
			put32(p + RP_RX_SEQ, ohc_vx_rdv_seq(x->req));
			p[RP_RX_ON] = 1;
			put32(p + RP_RX_SEEN, x->seen);
		}
		if (t->req) {
			p[RP_TX_HOW] = VX_TX_STARTED;
			put32(p + RP_TX_SEQ, ohc_vx_rdv_seq(t->req));
		} else if (r->last_how[slot]) {
			p[RP_TX_HOW] = r->last_how[slot];
			put32(p + RP_TX_SEQ, r->last_seq[slot]);
		}
		if (r->cts_ok[slot]) {
			p[RP_CTS_ON] = 1;
			put32(p + RP_CTS_SEQ, r->cts[slot].seq);
		}
	}
}

/* Our send in t, which the peer still wants from `seen` on (stripes or
 * chunks it has): write it again from there. */
static void tx_rewind(struct vx_rdv_tx *t, uint32_t seen)
{
	if (!t->land) {
		t->posted = 0;
		t->left = t->ns;
		return;
	}
	t->sent = t->freed = seen;
	t->written = OHC_MIN((uint64_t)seen * t->land_chunk, t->req->len);
	t->left = 0;
}

void ohc_vx_rdv_replay(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		       const uint8_t *peer, struct vx_rdv_replayed *out)
{
	struct vx_rdv *r = &e->rdv;

	memset(out, 0, sizeof(*out));
	for (uint32_t slot = 0; slot < OHC_VX_RDV_N && !e->broken; slot++) {
		const uint8_t *p = peer + (size_t)slot * RP_ENTRY;
		struct vx_rdv_tx *t = &r->tx[slot];
		struct vx_rdv_rx *x = &r->rx[slot];
		uint32_t tx_seq = get32(p + RP_TX_SEQ);

		/* our send: still wanted, or it all landed */
		if (t->req) {
			if (p[RP_RX_ON] &&
			    get32(p + RP_RX_SEQ) == ohc_vx_rdv_seq(t->req)) {
				tx_rewind(t, get32(p + RP_RX_SEEN));
				out->rewound++;
			} else {
				ohc_vx_rdv_tx_done(vi, r, t);
				out->completed++;
			}
		}
		/* our receive past its CTS, written into */
		if (!x->req || (!x->mr && !x->land))
			continue;
		if (p[RP_CTS_ON] &&
		    get32(p + RP_CTS_SEQ) == ohc_vx_rdv_seq(x->req))
			continue; /* the sender has the CTS, unused */
		if (!p[RP_TX_HOW] || tx_seq != ohc_vx_rdv_seq(x->req)) {
			x->rects = 1; /* the CTS was lost */
			out->rects++;
			continue;
		}
		if (p[RP_TX_HOW] == VX_TX_EAGER)
			continue; /* through the slots, which replay */
		if (p[RP_TX_HOW] == VX_TX_STARTED) {
			/* written again: direct whole, landing from seen */
			if (!x->land)
				x->seen = 0;
			r->grants_due -= x->grants;
			x->grants = 0;
			continue;
		}
		/* VX_TX_DONE: it all landed; the completions were dropped */
		out->completed++;
		if (!x->land) {
			ohc_vx_rdv_rx_direct_done(vi, r, x);
			continue;
		}
		for (struct ohc_req *req = x->req; x->req == req && !e->broken;)
			ohc_vx_rdv_rx_land_chunk(vi, e, x);
	}
}
