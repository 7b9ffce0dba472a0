/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/binomial.h"

/*
 * Binomial-tree broadcast: ceil(log2 n) rounds, top-down
 * (patterns/binomial.h); every rank receives the whole vector once from
 * its parent, then forwards it to its children. The latency optimum for
 * small vectors. The root's data is its send buffer; when the receive
 * buffer differs (never with HcclBroadcast, whose buffer is both) the
 * root copies it there first. No reduction.
 */
static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	return ohc_bcast_tree_build(a, s, ohc_binom_rounds,
				    ohc_binom_td_recv_round, ohc_binom_parent,
				    ohc_binom_td_child);
}

/* ceil(log p)(a + nb) */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	return ohc_binom_rounds(n) *
	       (c->alpha_us + ohc_cost_bytes(c, (double)bytes, 1, 0));
}

const struct ohc_algo ohc_algo_bcast_binomial = {
	.name = "binomial",
	.op = OHC_COLL_BROADCAST,
	.build = build,
	.cost = cost,
	.work = ohc_bcast_work, /* (p - 1)(a + nb) */
};
