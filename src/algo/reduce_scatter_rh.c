/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/recursive.h"

/*
 * Recursive-halving reduce-scatter (n a power of two; declines otherwise):
 * in step k rank r exchanges half of its current window of blocks with
 * r ^ (n / 2^(k+1)), keeping the half that contains block r and reducing
 * the partner's partial of it into scratch; after log2(n) steps the window
 * is block r alone, reduced straight into the receive buffer. (n-1)/n of
 * the input is sent and reduced, in log2(n) messages.
 *
 * In place as in reduce_scatter_ring.c. Determinism: every block is
 * reduced by a fixed binary tree (mine OP incoming at each level).
 */
static ohc_status_t accepts(const struct ohc_coll_args *a)
{
	return ohc_is_pof2(a->nranks) ? OHC_OK : OHC_ERR_UNSUPPORTED;
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank, lo = 0, hi = n, base = 0;
	uint64_t blk = a->count * a->esize;
	const char *sb = a->sbuf, *cur = sb;
	char *rb = a->rbuf, *dst = rb, *acc;
	int stage;

	if (accepts(a))
		return OHC_ERR_UNSUPPORTED;
	if (n == 1)
		return ohc_algo_single(s, rb, sb, blk);
	if (blk == 0)
		return OHC_OK;
	stage = rb != sb + r * blk && ohc_mem_overlap(rb, blk, sb, n * blk);
	acc = ohc_algo_scratch(s,
			       ohc_align64(blk * (n / 2)) + (stage ? blk : 0));
	if (!acc)
		return OHC_ERR_NO_MEMORY;
	if (stage)
		dst = acc + ohc_align64(blk * (n / 2));
	for (uint32_t mask = n / 2; mask >= 1; mask >>= 1) {
		uint32_t peer = r ^ mask, mid = lo + (hi - lo) / 2;
		uint32_t klo = (r & mask) ? mid : lo,
			 khi = (r & mask) ? hi : mid;
		uint32_t slo = (r & mask) ? lo : mid;
		/* cur holds blocks from base on: sb from 0, acc from base */
		const char *from = cur + (uint64_t)(slo - base) * blk;
		const char *src2 = cur + (uint64_t)(klo - base) * blk;
		char *to;

		if (mask == n / 2)
			base = klo;
		to = mask == 1 ? dst : acc + (uint64_t)(klo - base) * blk;
		ohc_sched_send(s, peer, from, (uint64_t)(mid - lo) * blk);
		ohc_sched_recv_reduce(s, peer, to, src2,
				      (uint64_t)(khi - klo) * blk);
		ohc_sched_step(s);
		cur = acc;
		lo = klo;
		hi = khi;
	}
	if (stage) {
		ohc_sched_copy(s, rb, dst, blk);
		ohc_sched_step(s);
	}
	return OHC_OK;
}

/* log p a + (p-1)/p n(b + g) */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	unsigned l = ohc_log2_ceil(n);
	double nb = (double)bytes;

	/* the first half out of the user's buffer, the rest from scratch */
	return l * c->alpha_us + ohc_cost_bytes(c, nb / 2, 1, 1) +
	       ohc_cost_halving(c, nb / 2, l - 1, 0, 1);
}

const struct ohc_algo ohc_algo_reduce_scatter_rh = {
	.name = "recursive_halving",
	.op = OHC_COLL_REDUCE_SCATTER,
	.build = build,
	.accepts = accepts,
	.cost = cost,
};
