/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/ring.h"

/*
 * Ring allgather, regular and V: n-1 steps; in step s rank r passes block
 * (r - s) to its right neighbour and receives block (r - s - 1) from its
 * left one, straight into the receive buffer. Every rank's contribution
 * crosses each link once: (n-1)/n of the output, the bandwidth optimum.
 *
 * In place (NCCL style: the send buffer is the rank's own block of the
 * receive buffer) the own copy is skipped; a send buffer overlapping the
 * receive buffer in any other way is staged in scratch first. V: block i
 * is recv_counts[i] elements at recv_displs[i]; zero blocks are skipped
 * on both sides. No reduction: nothing to make deterministic.
 */
static ohc_status_t ring(const struct ohc_coll_args *a, struct ohc_sched *s,
			 const struct ohc_blocks *b)
{
	uint32_t n = a->nranks, r = a->rank;
	uint32_t right = ohc_ring_right(r, n), left = ohc_ring_left(r, n);
	uint64_t len = ohc_blk_len(b, r);
	const char *src;
	char *rb = a->rbuf;
	ohc_status_t ret;

	ret = ohc_allgather_own(a, s, rb + ohc_blk_off(b, r), len,
				ohc_blk_extent(b, n), &src);
	if (ret)
		return ret;
	if (n == 1) {
		ohc_sched_step(s);
		return OHC_OK;
	}
	for (uint32_t st = 0; st + 1 < n; st++) {
		uint32_t sc = ohc_ring_back(r, st, n);
		uint32_t rc = ohc_ring_back(r, st + 1, n);

		ohc_sched_send_nz(s, right, st ? rb + ohc_blk_off(b, sc) : src,
				  ohc_blk_len(b, sc));
		ohc_sched_recv_nz(s, left, rb + ohc_blk_off(b, rc),
				  ohc_blk_len(b, rc));
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
	return a->recv_counts && a->recv_displs ? OHC_OK : OHC_ERR_UNSUPPORTED;
}

static ohc_status_t build_v(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	return ohc_algo_build_v(a, s, a->recv_counts, a->recv_displs,
				"allgatherv", ring);
}

/* (p-1)a + (p-1)/p nb, after the own block's copy */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	return (n - 1) * (c->alpha_us +
			  ohc_cost_bytes(c, (double)bytes / n, 1, 0)) +
	       ohc_cost_own_block(c, bytes, n);
}

const struct ohc_algo ohc_algo_allgather_ring = {
	.name = "ring",
	.op = OHC_COLL_ALLGATHER,
	.build = build,
	.cost = cost,
};

const struct ohc_algo ohc_algo_allgatherv_ring = {
	.name = "ring",
	.op = OHC_COLL_ALLGATHER_V,
	.build = build_v,
	.accepts = accepts_v,
	.cost = cost,
};
