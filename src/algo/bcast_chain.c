/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/binomial.h"
#include "algo/patterns/chain.h"

/*
 * Chain broadcast (patterns/chain.h): the root sends the whole vector to
 * relative rank 1, which forwards it to 2, and so on; n - 1 steps. Built
 * whole and pipelined by selection (ohc_sched_pipeline) in the slice
 * count the cost model picks: every rank forwards exactly the byte range
 * it received, so the pieces of one slice only depend on the same slice
 * of the step before (test/unit/algos.c checks it). Pipelined in S
 * slices it costs (n - 2 + S)(a + nb/S): for large vectors close to one
 * vector's time, against ceil(log2 n) for the binomial tree and two for
 * scatter + allgather. The root copies its send buffer to the receive
 * buffer first if they differ. No reduction.
 */
static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, vr = ohc_binom_vrank(a->rank, a->root, n);
	uint64_t bytes = a->count * a->esize;
	char *rb = a->rbuf;

	if (n == 1)
		return ohc_algo_single(s, rb, a->sbuf, bytes);
	if (bytes == 0)
		return OHC_OK;
	if (vr == 0)
		ohc_sched_copy(s, rb, a->sbuf, bytes);
	for (uint32_t t = 0; t < n - 1; t++) {
		if (vr && t == ohc_chain_down_recv_step(vr))
			ohc_sched_recv(s, ohc_binom_rank(vr - 1, a->root, n),
				       rb, bytes);
		if (vr + 1 < n && t == vr)
			ohc_sched_send(s, ohc_binom_rank(vr + 1, a->root, n),
				       rb, bytes);
		ohc_sched_step(s);
	}
	return OHC_OK;
}

/* (p - 2 + S)(a + nb/S) */
static double cost_sliced(const struct ohc_cost_params *c, uint64_t bytes,
			  uint32_t n, uint32_t slices)
{
	return ohc_chain_steps(n, slices) *
	       (c->alpha_us + ohc_cost_bytes(c, (double)bytes / slices, 1, 0));
}

static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	double us;

	ohc_algo_slices(&ohc_algo_bcast_chain, c, bytes, 1, n, &us);
	return us;
}

const struct ohc_algo ohc_algo_bcast_chain = {
	.name = "chain",
	.op = OHC_COLL_BROADCAST,
	.build = build,
	.cost = cost,
	.cost_sliced = cost_sliced,
};
