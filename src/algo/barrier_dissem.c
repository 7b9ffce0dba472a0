/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/algo.h"
#include "algo/patterns/dissemination.h"

/*
 * Dissemination barrier: ceil(log2 n) rounds of zero-byte messages; in
 * round k rank r signals r + 2^k and waits for r - 2^k, so after the last
 * round every rank has heard, directly or not, from every other. Both
 * ends agree on the zero-length messages. No data, no reduction.
 */
static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank;

	for (uint32_t k = 0; k < ohc_dissem_rounds(n); k++) {
		ohc_sched_send(s, ohc_dissem_to(r, k, n), NULL, 0);
		ohc_sched_recv(s, ohc_dissem_from(r, k, n), NULL, 0);
		ohc_sched_step(s);
	}
	return OHC_OK;
}

/* ceil(log p) a */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	(void)bytes;
	return ohc_dissem_rounds(n) * c->alpha_us;
}

const struct ohc_algo ohc_algo_barrier_dissem = {
	.name = "dissemination",
	.op = OHC_COLL_BARRIER,
	.build = build,
	.cost = cost,
};
