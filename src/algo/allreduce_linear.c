/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"

/*
 * Linear allreduce, for small vectors: a rank sends its whole vector to
 * every other rank and receives theirs into scratch in one step (common.h:
 * over shm and self), then reduces the n vectors in rank order
 * (ohc_linear_reduce): the same expression on every rank, so results are
 * bitwise identical across ranks and runs. Recursive doubling takes
 * log2 n exchanges (more to fold a non-power of two), each waiting for
 * the one before; this one message round at the price of n-1 vectors
 * sent and reduced per rank: a + (p-2) o + (p-1) n (b + g).
 */
static ohc_status_t accepts(const struct ohc_coll_args *a)
{
	return ohc_linear_accepts(a, a->count * a->esize);
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	return ohc_linear_reduce(a, s, a->sbuf, 0, a->count * a->esize, false);
}

/* n vectors' worth of messages, each reduced */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	return ohc_cost_fan_out_reduce(c, bytes * n, n);
}

const struct ohc_algo ohc_algo_allreduce_linear = {
	.name = "linear",
	.op = OHC_COLL_ALLREDUCE,
	.build = build,
	.accepts = accepts,
	.cost = cost,
};
