/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/ring.h"

/*
 * Ring reduce-scatter, regular and V: n-1 steps; in step s rank r sends
 * its partial of block (r - s - 1) to the right and receives the left
 * neighbour's partial of block (r - s - 2), adding its own; after the
 * last step it holds block r, reduced over all ranks, written straight
 * into the receive buffer. Partials travel through two scratch blocks
 * used in turn. (n-1)/n of the input crosses each link and is reduced
 * once: the bandwidth optimum.
 *
 * In place: a receive buffer that is this rank's block of the send buffer
 * (NCCL style) is written only in the last step, when that block is the
 * one being reduced; any other overlap gets the result in scratch and a
 * final copy. V: block i is send_counts[i] elements at send_displs[i].
 *
 * Determinism: block b is reduced once, along the ring from rank b + 1 to
 * rank b, each rank computing mine OP incoming: a fixed order.
 */
static ohc_status_t ring(const struct ohc_coll_args *a, struct ohc_sched *s,
			 const struct ohc_blocks *b)
{
	uint32_t n = a->nranks, r = a->rank;
	uint32_t right = ohc_ring_right(r, n), left = ohc_ring_left(r, n);
	uint64_t rlen = ohc_blk_len(b, r), mx = ohc_blk_max(b, n);
	const char *sb = a->sbuf, *mine = sb + ohc_blk_off(b, r);
	char *rb = a->rbuf, *dst = rb, *buf[2];
	int stage;

	if (n == 1)
		return ohc_algo_single(s, rb, mine, rlen);
	if (mx == 0)
		return OHC_OK;
	stage = rb != mine &&
		ohc_mem_overlap(rb, rlen, sb, ohc_blk_extent(b, n));
	buf[0] = ohc_algo_scratch(s, 2 * ohc_align64(mx) + (stage ? rlen : 0));
	if (!buf[0])
		return OHC_ERR_NO_MEMORY;
	buf[1] = buf[0] + ohc_align64(mx);
	if (stage)
		dst = buf[1] + ohc_align64(mx);
	for (uint32_t st = 0; st + 1 < n; st++) {
		uint32_t sc = ohc_ring_back(r, st + 1, n);
		uint32_t rc = ohc_ring_back(r, st + 2, n);
		const char *from =
			st ? buf[(st - 1) % 2] : sb + ohc_blk_off(b, sc);
		char *to = st + 2 == n ? dst : buf[st % 2];

		ohc_sched_send_nz(s, right, from, ohc_blk_len(b, sc));
		ohc_sched_recv_reduce_nz(s, left, to, sb + ohc_blk_off(b, rc),
					 ohc_blk_len(b, rc));
		ohc_sched_step(s);
	}
	if (stage) {
		ohc_sched_copy(s, rb, dst, rlen);
		ohc_sched_step(s);
	}
	return OHC_OK;
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	return ohc_algo_build_regular(a, s, ring);
}

static ohc_status_t accepts_v(const struct ohc_coll_args *a)
{
	return a->send_counts && a->send_displs ? OHC_OK : OHC_ERR_UNSUPPORTED;
}

static ohc_status_t build_v(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	return ohc_algo_build_v(a, s, a->send_counts, a->send_displs,
				"reduce_scatterv", ring);
}

/* (p-1)a + (p-1)/p n(b + g) */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	double m = (double)bytes / n;

	/* the first block out of the user's buffer, partials from scratch */
	return (n - 1) * c->alpha_us + ohc_cost_bytes(c, m, 1, 1) +
	       (n - 2) * ohc_cost_bytes(c, m, 0, 1);
}

const struct ohc_algo ohc_algo_reduce_scatter_ring = {
	.name = "ring",
	.op = OHC_COLL_REDUCE_SCATTER,
	.build = build,
	.cost = cost,
};

const struct ohc_algo ohc_algo_reduce_scatterv_ring = {
	.name = "ring",
	.op = OHC_COLL_REDUCE_SCATTER_V,
	.build = build_v,
	.accepts = accepts_v,
	.cost = cost,
};
