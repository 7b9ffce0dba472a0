/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"

/*
 * Linear reduce, for small vectors: every rank sends its vector to the
 * root in one step (common.h: over shm and self), which receives them
 * into scratch and reduces the n vectors in rank order in the next
 * (ohc_linear_reduce): deterministic, though in another order than the
 * binomial tree's (relative to the root). With the agreement at once
 * (ohc_sched_weave_agreement) one round of messages where the tree takes
 * ceil(log2 n) and the agreement one more. The n-1 messages leave their
 * senders together and arrive together (a link each, as the simulator
 * has them), then the root reduces: a + nb + (p-1) ng. Other ranks never
 * touch their receive buffer.
 */
static ohc_status_t accepts(const struct ohc_coll_args *a)
{
	return ohc_linear_accepts(a, a->count * a->esize);
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	return ohc_linear_reduce(a, s, a->sbuf, 0, a->count * a->esize, true);
}

static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	return c->alpha_us + (double)bytes * c->beta_us +
	       (double)(n - 1) * (double)bytes * c->gamma_us;
}

/* every rank but the root sends once, and the root reduces each */
static double work(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n,
		   uint32_t slices)
{
	(void)slices;
	return (n - 1) *
	       (c->alpha_us + (double)bytes * (c->beta_us + c->gamma_us));
}

const struct ohc_algo ohc_algo_reduce_linear = {
	.name = "linear",
	.op = OHC_COLL_REDUCE,
	.build = build,
	.accepts = accepts,
	.cost = cost,
	.work = work,
};
