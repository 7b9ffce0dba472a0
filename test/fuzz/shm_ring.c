/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shm transport's consumer against a hostile producer: an ep whose
 * receive ring (in our segment, written by the peer) is filled here with
 * records whose headers come from the fuzzer (kind, flags, lengths,
 * signature, message length, address), laid out as a producer would lay
 * them and stamped, while receives of the fuzzer's sizes and kinds (copy,
 * sum reduction of a few element sizes) are posted and the real
 * iface_progress reads the ring. The consumer may only deliver whole,
 * in-order messages that fit the posted receives: the destinations are
 * exactly their length (ASan sees one byte more), a completed receive
 * has all its bytes, anything else fails the ep.
 *
 * The peer is this process's nobody (pid -1): rendezvous and zero-copy
 * records go the CMA / pidfd way and fail there, as for a peer that went
 * away. The peer's segment header (its abort status) is a buffer here.
 *
 * Input: ring size, CMA allowed, the peer's abort status, then steps:
 * post a receive (length, kind, element size, signature), write a record
 * (header bytes, then its payload), or progress.
 */
#include "algo/dtype.h"
#include "algo/reduce.h"
#include "hccl/hccl_types.h"
#include "transport/shm/shm.h"
#include "transport/transport.h"
#include "fuzz.h"

#define MAX_RECVS 8

enum { STEP_RECV, STEP_RECORD, STEP_PROGRESS, STEP_N };

struct rx {
	struct ohc_req req;
	uint8_t *dst, *src2;
	ohc_reduce_fn kernel;
	int posted;
};

static const struct ohc_transport_ops *shm;
static struct rx *cur_rx; /* this input's receives, for reduce_check */
static unsigned cur_nrx;

/*
 * The reduction of a receive: fragments reach it whole lines at a time
 * but for the last (core/req.h), so each starts on a 64-byte boundary of
 * the message and reductions see whole elements.
 */
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

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_quiet();
	shm = ohc_transport_get("shm");
	FZ_ASSERT(shm);
	return 0;
}

static void *xalloc(size_t align, size_t n)
{
	void *p = aligned_alloc(align, OHC_ALIGN_UP(n ? n : 1, align));

	if (!p)
		abort();
	memset(p, 0, OHC_ALIGN_UP(n ? n : 1, align));
	return p;
}

static void post(struct ohc_shm_ep *sep, struct rx *x, struct fz *f,
		 uint64_t seq)
{
	static const int dtypes[] = {HCCL_DATA_TYPE_INT8, HCCL_DATA_TYPE_FP16,
				     HCCL_DATA_TYPE_FP32, HCCL_DATA_TYPE_FP64};
	size_t len = fz_u16(f) % (3 * (size_t)sep->rx_bytes);
	uint8_t how = fz_u8(f);
	int dt = dtypes[(how >> 2) % 4];
	struct ohc_req *r = &x->req;

	memset(x, 0, sizeof(*x));
	/* exact-size destinations: a byte past them is an ASan report */
	x->dst = malloc(len ? len : 1);
	x->src2 = malloc(len ? len : 1);
	if (!x->dst || !x->src2)
		abort();
	memset(x->dst, 1, len);
	memset(x->src2, 2, len);
	r->sig.seq = seq;
	r->sig.len = len;
	r->sig.step = how >> 4;
	r->dst = x->dst;
	r->len = len;
	r->kind = (enum ohc_recv_kind)(how % 3);
	r->esize = (unsigned)ohc_dtype_size(dt);
	r->src2 = x->src2;
	x->kernel = ohc_reduce_get(dt, HCCL_REDUCE_SUM);
	FZ_ASSERT(x->kernel);
	r->reduce = reduce_check;
	r->status = OHC_INPROGRESS;
	if (shm->ep_recv(&sep->super, r) == OHC_OK)
		x->posted = 1;
}

/* Free room and contiguous room at the producer's tail. */
static uint64_t room(const struct ohc_shm_ep *sep, uint64_t tail)
{
	uint64_t head = ohc_shm_ring_head_acquire(sep->rx);
	uint64_t free_b = sep->rx_bytes - (tail - head);
	uint64_t contig = sep->rx_bytes - tail % sep->rx_bytes;

	FZ_ASSERT(head <= tail && tail - head <= sep->rx_bytes);
	return OHC_MIN(free_b, contig);
}

/* Write one record as a producer lays it out. 1: written; -1: no room
 * now (dropped); 0: its length is a lie, nothing can follow it. */
static int record(struct ohc_shm_ep *sep, struct fz *f, uint64_t *tail_p)
{
	uint64_t tail = *tail_p, at = tail % sep->rx_bytes, rb, have;
	struct ohc_shm_rec rec;
	size_t got;
	const uint8_t *pl;

	fz_bytes(f, &rec, sizeof(rec));
	rb = rec.kind == OHC_SHM_REC_PAD ? rec.frag_len
	     : rec.kind == OHC_SHM_REC_RNDV || rec.kind == OHC_SHM_REC_INLINE
		     ? OHC_SHM_REC_HDR
		     : ohc_shm_rec_bytes(rec.frag_len);
	have = room(sep, tail);
	if (have < OHC_SHM_REC_HDR)
		return -1;
	/* the payload as far as it fits; the consumer must check the rest */
	pl = fz_take(f, OHC_MIN(rb, have) - OHC_MIN(rb, OHC_SHM_REC_HDR), &got);
	memcpy(sep->rx_data + at + OHC_SHM_REC_HDR, pl, got);
	memcpy(sep->rx_data + at, &rec, sizeof(rec));
	ohc_shm_rec_stamp((struct ohc_shm_rec *)(void *)(sep->rx_data + at),
			  tail);
	if (rb < OHC_SHM_REC_HDR || rb % OHC_SHM_REC_ALIGN || rb > have)
		return 0; /* a lie about its length: nothing can follow */
	*tail_p = tail + rb;
	/* no stale stamp where the next header goes */
	if (room(sep, *tail_p) >= OHC_SHM_REC_HDR)
		ohc_shm_rec_unstamp(sep->rx_data, sep->rx_bytes, *tail_p);
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = fz_init(data, size);
	struct ohc_shm_iface *sif = xalloc(64, shm->iface_size);
	struct ohc_shm_ep *sep = xalloc(64, shm->ep_size);
	struct ohc_shm_seg_hdr *peer = xalloc(64, sizeof(*peer));
	struct rx rx[MAX_RECVS];
	unsigned nrx = 0, steps = 0;
	uint64_t tail = 0;
	int producing = 1;

	cur_rx = rx;
	cur_nrx = 0;

	sif->super.ops = shm;
	sif->super.rank = 0;
	sif->super.nranks = 2;
	sif->listen_fd = sif->seg_fd = -1;
	ohc_list_init(&sif->eps);

	sep->super.iface = &sif->super;
	sep->super.peer = 1;
	sep->pid = -1;
	sep->pidfd = -1;
	sep->connected = 1;
	ohc_list_init(&sep->sends);
	ohc_list_init(&sep->rndv);
	ohc_list_init(&sep->recvs);
	ohc_list_add_tail(&sif->eps, &sep->link);
	sep->rx_bytes = 4096u << (fz_u8(&f) % 3);
	sep->rx_max_frag = OHC_MIN(sep->rx_bytes / 4, (uint64_t)64 << 10);
	sep->rx = xalloc(64, sizeof(*sep->rx));
	sep->rx_data = xalloc(64, sep->rx_bytes);
	sep->tx = xalloc(64, sizeof(*sep->tx));
	sep->tx_bytes = 4096;
	sep->tx_max_frag = 1024;
	sep->tx_data = xalloc(64, sep->tx_bytes);
	sep->rx_cma = fz_u8(&f) & 1;
	if (sep->rx_cma)
		ohc_shm_ring_cma_enable(sep->rx);
	peer->abort_status = (int32_t)(fz_u8(&f) % 3 == 2 ? OHC_ERR_DESYNC : 0);
	sep->peer_seg = peer;
	sep->peer_bell = &peer->bell;

	while (f.n && steps++ < 256) {
		switch (fz_u8(&f) % STEP_N) {
		case STEP_RECV:
			if (nrx < MAX_RECVS) {
				cur_nrx = nrx + 1;
				post(sep, &rx[nrx], &f, nrx);
				nrx++;
			}
			break;
		case STEP_RECORD:
			if (producing)
				producing = record(sep, &f, &tail) != 0;
			break;
		default:
			shm->iface_progress(&sif->super);
			(void)shm->ep_check(&sep->super);
			break;
		}
	}
	for (int i = 0; i < 4; i++)
		shm->iface_progress(&sif->super);
	for (unsigned i = 0; i < nrx; i++) {
		struct ohc_req *r = &rx[i].req;

		if (!rx[i].posted)
			continue;
		FZ_ASSERT(r->done <= r->len);
		if (r->status == OHC_OK)
			FZ_ASSERT(r->done == r->len);
		else
			FZ_ASSERT(r->status == OHC_INPROGRESS ||
				  r->status == OHC_ERR_DESYNC ||
				  r->status == OHC_ERR_REMOTE);
	}
	/* what ep_fini does, but for the mappings this ep does not have */
	shm->ep_cancel(&sep->super, OHC_ERR_CANCELED);
	ohc_shm_zc_drop_all(sep);
	free(sep->bounce);
	for (unsigned i = 0; i < nrx; i++) {
		free(rx[i].dst);
		free(rx[i].src2);
	}
	free(sep->rx);
	free(sep->rx_data);
	free(sep->tx);
	free(sep->tx_data);
	free(peer);
	free(sep);
	free(sif);
	return 0;
}
