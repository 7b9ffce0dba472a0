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
static uint32_t rounds(uint32_t n)
{
	return n - 1;
}

static uint32_t recv_round(uint32_t vr, uint32_t n)
{
	(void)n;
	return ohc_chain_down_recv_step(vr);
}

static uint32_t parent(uint32_t vr)
{
	return vr - 1;
}

/* vr sends to vr + 1 in step vr */
static uint32_t child(uint32_t vr, uint32_t t, uint32_t n)
{
	return vr + 1 < n && t == vr ? vr + 1 : 0;
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	return ohc_bcast_tree_build(a, s, rounds, recv_round, parent, child);
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
	.work = ohc_bcast_work, /* (p - 1) S (a + nb/S) */
};
