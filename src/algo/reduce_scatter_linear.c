/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"

/*
 * Linear reduce-scatter, for small blocks: a rank sends block i of its
 * input to rank i and receives its own block of everyone's input into
 * scratch, in one step (common.h: over shm and self), then reduces them
 * in rank order (ohc_linear_reduce; deterministic). Recursive halving
 * and the ring take log2 n and n-1 steps, each waiting for the one
 * before: a + (p-2) o + (p-1)/p n (b + g), where n is the whole input.
 */
static ohc_status_t accepts(const struct ohc_coll_args *a)
{
	return ohc_linear_accepts(a, a->count * a->esize);
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint64_t blk = a->count * a->esize;

	return ohc_linear_reduce(a, s, a->sbuf, blk, blk, false);
}

const struct ohc_algo ohc_algo_reduce_scatter_linear = {
	.name = "linear",
	.op = OHC_COLL_REDUCE_SCATTER,
	.build = build,
	.accepts = accepts,
	.cost = ohc_cost_fan_out_reduce,
};
