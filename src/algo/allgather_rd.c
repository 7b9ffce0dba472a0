/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/recursive.h"

/*
 * Recursive-doubling allgather (n a power of two; declines otherwise):
 * in step k rank r swaps everything it has, the 2^k blocks of its aligned
 * group, with r ^ 2^k, straight in the receive buffer. log2(n) steps,
 * (n-1)/n of the output per rank. In place as in allgather_ring.c. No
 * reduction: nothing to make deterministic.
 */
static ohc_status_t accepts(const struct ohc_coll_args *a)
{
	return ohc_is_pof2(a->nranks) ? OHC_OK : OHC_ERR_UNSUPPORTED;
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank;
	uint64_t blk = a->count * a->esize;
	const char *src;
	char *rb = a->rbuf;
	ohc_status_t ret;

	if (accepts(a))
		return OHC_ERR_UNSUPPORTED;
	if (blk == 0)
		return OHC_OK;
	ret = ohc_allgather_own(a, s, rb + (uint64_t)r * blk, blk, blk * n,
				&src);
	if (ret)
		return ret;
	for (uint32_t mask = 1; mask < n; mask <<= 1) {
		uint32_t peer = r ^ mask;
		uint64_t mine = (uint64_t)(r & ~(mask - 1)) * blk;
		uint64_t theirs = (uint64_t)(peer & ~(mask - 1)) * blk;

		ohc_sched_send(s, peer, mask == 1 ? src : rb + mine,
			       mask * blk);
		ohc_sched_recv(s, peer, rb + theirs, mask * blk);
		ohc_sched_step(s);
	}
	if (n == 1)
		ohc_sched_step(s);
	return OHC_OK;
}

/* log p a + (p-1)/p nb, after the own block's copy */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	/* blocks doubling up to half the buffer, out of the user's */
	return ohc_log2_ceil(n) * c->alpha_us +
	       ohc_cost_halving(c, (double)bytes, ohc_log2_ceil(n), 1, 0) +
	       ohc_cost_own_block(c, bytes, n);
}

const struct ohc_algo ohc_algo_allgather_rd = {
	.name = "recursive_doubling",
	.op = OHC_COLL_ALLGATHER,
	.build = build,
	.accepts = accepts,
	.cost = cost,
};
