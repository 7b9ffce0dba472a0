/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a verbs peer writes or sends, checked without an RDMA device:
 *  - its connect record (ohc_vx_conn_check, as iface_connect reads it);
 *  - a CTS in our control array (ohc_vx_cts_kind, as tx_match reads it);
 *  - the slot ring: fragments (header + payload) it writes into our
 *    slots, the immediates naming them (ohc_vx_imm_landed: a slot, or a
 *    rendezvous event: CTS, grant, stripe, landing chunk) and its credits
 *    (ohc_vx_tx_freed_update), read by the real iface_progress into
 *    posted receives. The iface has a send queue of depth 0, so nothing
 *    is ever posted to a device (ep_credit, pull_frag, rx_cts wait for
 *    room); a rendezvous receive's CTS is emulated here as rx_cts writes
 *    it when the registration fails (eager) or into a landing buffer.
 * Receives are exactly their length (ASan sees a byte past them), and
 * reductions must start on a 64-byte boundary of the message.
 *
 * Input: a mode byte, then a connect record, or a CTS and the send it is
 * for, or the ring's geometry and steps (post a receive, emulate a CTS,
 * a fragment landing, a rendezvous immediate, credits, progress).
 */
#include <unistd.h>

#include "algo/dtype.h"
#include "algo/reduce.h"
#include "hccl/hccl_types.h"
#include "transport/verbs/verbs.h"
#include "transport/transport.h"
#include "fuzz.h"

#define SESSION 0xfeedface12345678ull
#define MAX_RECVS 8
#define LAND_BYTES ((size_t)OHC_VX_LAND_CHUNK * OHC_VX_LAND_CHUNKS)

static const struct ohc_transport_ops *vx;
static char *land_buf; /* one landing buffer, made once */

struct rx {
	struct ohc_req req;
	uint8_t *dst, *src2;
	ohc_reduce_fn kernel;
	int posted;
};

static struct rx *cur_rx;
static unsigned cur_nrx;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_quiet();
	vx = ohc_transport_get("verbs");
	FZ_ASSERT(vx);
	land_buf = malloc(LAND_BYTES);
	FZ_ASSERT(land_buf);
	memset(land_buf, 7, LAND_BYTES);
	return 0;
}

static void *zalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p)
		abort();
	return p;
}

/* Reductions see whole elements: fragments are whole lines but the last,
 * landing chunks whole chunks. */
static void reduce_check(void *dst, const void *a, const void *b, size_t n)
{
	for (unsigned i = 0; i < cur_nrx; i++) {
		struct rx *x = &cur_rx[i];
		size_t off = (size_t)((uint8_t *)dst - x->dst);

		if ((uint8_t *)dst < x->dst || off > x->req.len)
			continue;
		FZ_ASSERT(off % 64 == 0);
		FZ_ASSERT(off + n * x->req.esize <= x->req.len);
		x->kernel(dst, a, b, n);
		return;
	}
	FZ_ASSERT(!"a reduction outside every receive");
}

static void conn(struct fz *f)
{
	struct ohc_verbs_iface *vi = zalloc(vx->iface_size);
	struct vx_conn c;

	vi->super.rank = 1;
	vi->super.nranks = 4;
	vi->session = SESSION;
	vi->nqps = 2;
	vi->slots = 32;
	vi->slot_bytes = 4096 + OHC_VX_HDR;
	fz_bytes(f, &c, sizeof(c));
	if (ohc_vx_conn_check(vi, &c) == OHC_OK) {
		FZ_ASSERT(c.magic == VX_CONN_MAGIC && c.version == VX_VERSION);
		FZ_ASSERT(c.session == SESSION && c.to == 1 && c.from < 4);
		FZ_ASSERT(c.nqps == vi->nqps && c.slots == vi->slots &&
			  c.slot_bytes == vi->slot_bytes);
	}
	free(vi);
}

static void cts(struct fz *f)
{
	struct vx_rdv_cts c;
	struct ohc_mem_desc desc = {0};
	struct ohc_req req;
	int ok = fz_u8(f) & 1;
	enum vx_cts_kind kind;

	memset(&req, 0, sizeof(req));
	req.len = fz_u32(f);
	req.sig.seq = fz_u8(f);
	req.sig.len = req.len;
	req.tp_priv = (void *)(uintptr_t)fz_u32(f);
	if (fz_u8(f) & 1)
		req.smem = &desc;
	fz_bytes(f, &c, sizeof(c));
	kind = ohc_vx_cts_kind(&c, ok, &req);
	switch (kind) {
	case VX_CTS_NOT_YET:
		FZ_ASSERT(!ok || c.seq != (uint32_t)(uintptr_t)req.tp_priv);
		break;
	case VX_CTS_DESYNC:
		FZ_ASSERT(c.len != req.len ||
			  memcmp(&c.sig, &req.sig, sizeof(c.sig)));
		break;
	case VX_CTS_LANDING:
		FZ_ASSERT(req.smem);
		FZ_ASSERT(c.land_n >= 1 && c.land_n <= OHC_VX_LAND_CHUNKS);
		FZ_ASSERT(c.land_chunk >= 64 &&
			  c.land_chunk <= OHC_VX_LAND_CHUNK &&
			  c.land_chunk % 64 == 0);
		break;
	case VX_CTS_BAD:
		FZ_ASSERT(req.smem && c.land_chunk && c.land_n);
		break;
	case VX_CTS_EAGER:
		FZ_ASSERT(!c.addr || c.land_chunk);
		break;
	case VX_CTS_DIRECT:
		FZ_ASSERT(c.addr && !c.land_chunk && c.len == req.len);
		break;
	}
}

static void post(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e,
		 struct rx *x, struct fz *f, uint64_t seq)
{
	static const int dtypes[] = {HCCL_DATA_TYPE_INT8, HCCL_DATA_TYPE_FP16,
				     HCCL_DATA_TYPE_FP32, HCCL_DATA_TYPE_FP64};
	size_t len = fz_u16(f) % (8 * (vi->slot_bytes - OHC_VX_HDR) + 1);
	uint8_t how = fz_u8(f);
	int dt = dtypes[(how >> 2) % 4];
	struct ohc_req *r = &x->req;

	/* now and then a rendezvous message of landing chunks (large: slow) */
	if ((how & 0xc0) == 0xc0)
		len = OHC_VX_LAND_CHUNK * (size_t)(1 + fz_u8(f) % 2) +
		      fz_u8(f) * 64u;
	memset(x, 0, sizeof(*x));
	x->dst = malloc(len ? len : 1);
	x->src2 = malloc(len ? len : 1);
	if (!x->dst || !x->src2)
		abort();
	r->sig.seq = seq;
	r->sig.len = len;
	r->dst = x->dst;
	r->len = len;
	r->kind = (enum ohc_recv_kind)(how % 3);
	r->esize = (unsigned)ohc_dtype_size(dt);
	r->src2 = x->src2;
	x->kernel = ohc_reduce_get(dt, HCCL_REDUCE_SUM);
	FZ_ASSERT(x->kernel);
	r->reduce = reduce_check;
	if (vx->ep_recv(&e->super, r) == OHC_OK)
		x->posted = 1;
}

/* rx_cts's part for the next rendezvous receive, had its registration
 * failed: an eager CTS, or a landing buffer for a reduction. */
static void cts_sent(struct ohc_verbs_iface *vi, struct ohc_verbs_ep *e)
{
	struct vx_rdv *r = &e->rdv;
	struct ohc_list *p;

	ohc_list_for_each(p, &r->rxq)
	{
		struct ohc_req *req = ohc_container_of(p, struct ohc_req, link);
		uint32_t seq = (uint32_t)(uintptr_t)req->tp_priv;
		struct vx_rdv_rx *x = &r->rx[seq % OHC_VX_RDV_N];

		if (seq != r->rx_cts)
			continue;
		if (x->req)
			return;
		memset(x, 0, sizeof(*x));
		x->req = req;
		if (req->kind != OHC_RECV_COPY && !vi->land[0].busy) {
			x->land = &vi->land[0];
			x->land->busy = 1;
		}
		r->rx_cts++;
		return;
	}
}

static void slots(struct fz *f)
{
	struct ohc_verbs_iface *vi = zalloc(vx->iface_size);
	struct ohc_verbs_ep *e = zalloc(vx->ep_size);
	struct ohc_verbs_ep *by_peer[2] = {NULL, e};
	struct rx rx[MAX_RECVS];
	uint8_t geo = fz_u8(f);
	unsigned nrx = 0, steps = 0;

	vi->super.ops = vx;
	vi->super.rank = 0;
	vi->super.nranks = 2;
	vi->session = SESSION;
	vi->nqps = 1;
	vi->slots = 4u << (geo % 2);
	vi->slot_bytes = (geo & 0x20 ? 8192u : 4096u) + OHC_VX_HDR;
	vi->rndv_bytes = geo & 0x10 ? 16384 : 0;
	vi->sq_depth = vi->rq_depth = 0; /* nothing is ever posted */
	vi->wr_per_slot = 1;
	vi->listen_fd = vi->wake_fd = -1;
	vi->by_peer = by_peer;
	vi->land[0].buf = land_buf;

	e->super.iface = &vi->super;
	e->super.peer = 1;
	e->sock = -1;
	e->nqps = 1;
	e->connected = 1;
	ohc_list_init(&e->sendq);
	ohc_list_init(&e->recvq);
	ohc_list_init(&e->rdv.txq);
	ohc_list_init(&e->rdv.rxq);
	/* exactly the ring, the arrival flags and the control array */
	e->ring = zalloc((size_t)vi->slots * vi->slot_bytes);
	e->ring_len = (size_t)vi->slots * vi->slot_bytes;
	e->arrived = zalloc(vi->slots);
	e->ctrl_in = zalloc((size_t)OHC_VX_RDV_N * OHC_VX_CTS_BYTES);
	e->ctrl_out = zalloc((size_t)OHC_VX_RDV_N * OHC_VX_CTS_BYTES);
	e->wrs = zalloc(((size_t)vi->slots + 1) * sizeof(*e->wrs));
	e->sges = zalloc(2 * (size_t)vi->slots * sizeof(*e->sges));

	cur_rx = rx;
	cur_nrx = 0;
	while (f->n && steps++ < 256) {
		uint8_t op = fz_u8(f);

		switch (op & 7) { /* op >> 3: a step's own bits */
		case 0:
			if (nrx < MAX_RECVS) {
				cur_nrx = nrx + 1;
				post(vi, e, &rx[nrx], f, nrx);
				nrx++;
			}
			break;
		case 1:
			cts_sent(vi, e);
			break;
		case 2: { /* a fragment lands in a slot */
			uint32_t imm = (uint32_t)((e->rx_next + (op >> 4)) %
						  vi->slots);
			char *slot = e->ring + (size_t)imm * vi->slot_bytes;
			size_t len = fz_u16(f) % (vi->slot_bytes + 1), got;
			const uint8_t *p = fz_take(f, len, &got);

			if (op & 8)
				imm = fz_u32(f) & ~OHC_VX_IMM_RDV;
			memcpy(slot, p, got);
			ohc_vx_imm_landed(vi, e, imm, 0);
			break;
		}
		case 3: { /* a rendezvous immediate, with a CTS's bytes */
			uint32_t imm = OHC_VX_IMM_RDV | fz_u32(f);
			uint32_t k = imm & 0xffff;

			if (imm & OHC_VX_IMM_CTS && k < OHC_VX_RDV_N)
				fz_bytes(f,
					 e->ctrl_in +
						 (size_t)k * OHC_VX_CTS_BYTES,
					 OHC_VX_CTS_BYTES);
			ohc_vx_imm_landed(vi, e, imm, 0);
			break;
		}
		case 4: { /* credits for what we sent */
			uint64_t before = e->tx_freed;

			e->tx_slots += fz_u8(f);
			(void)ohc_vx_tx_freed_update(e, fz_u32(f), 0);
			FZ_ASSERT(e->tx_freed >= before);
			FZ_ASSERT(e->tx_freed <= e->tx_slots);
			break;
		}
		default:
			vx->iface_progress(&vi->super);
			break;
		}
	}
	vx->iface_progress(&vi->super);
	for (unsigned i = 0; i < nrx; i++) {
		struct ohc_req *r = &rx[i].req;

		if (!rx[i].posted)
			continue;
		FZ_ASSERT(r->done <= r->len);
		if (r->status == OHC_OK)
			FZ_ASSERT(r->done == r->len);
	}
	vx->ep_cancel(&e->super, OHC_ERR_CANCELED);
	for (unsigned i = 0; i < nrx; i++) {
		if (rx[i].posted)
			FZ_ASSERT(rx[i].req.status != OHC_INPROGRESS);
		free(rx[i].dst);
		free(rx[i].src2);
	}
	free(e->ring);
	free(e->arrived);
	free(e->ctrl_in);
	free(e->ctrl_out);
	free(e->wrs);
	free(e->sges);
	free(e);
	free(vi);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = fz_init(data, size);

	switch (fz_u8(&f) % 3) {
	case 0:
		conn(&f);
		break;
	case 1:
		cts(&f);
		break;
	default:
		slots(&f);
		break;
	}
	return 0;
}
