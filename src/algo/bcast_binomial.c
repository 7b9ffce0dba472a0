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
	uint32_t n = a->nranks, vr = ohc_binom_vrank(a->rank, a->root, n);
	uint64_t bytes = a->count * a->esize;
	char *rb = a->rbuf;

	if (n == 1)
		return ohc_algo_single(s, rb, a->sbuf, bytes);
	if (bytes == 0)
		return OHC_OK;
	if (vr == 0)
		ohc_sched_copy(s, rb, a->sbuf, bytes);
	for (uint32_t t = 0; t < ohc_binom_rounds(n); t++) {
		uint32_t child = ohc_binom_td_child(vr, t, n);

		if (vr && t == ohc_binom_td_recv_round(vr, n))
			ohc_sched_recv(s,
				       ohc_binom_rank(ohc_binom_parent(vr),
						      a->root, n),
				       rb, bytes);
		if (child)
			ohc_sched_send(s, ohc_binom_rank(child, a->root, n), rb,
				       bytes);
		ohc_sched_step(s);
	}
	return OHC_OK;
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
};
