/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/bruck.h"

/*
 * Bruck allgather for any n: ceil(log2 n) steps (patterns/bruck.h) in a
 * scratch buffer of n blocks kept in relative order, then a final local
 * rotation (two copies) into the receive buffer. The latency optimum for
 * small blocks when n is not a power of two. The send buffer is copied
 * into scratch first, so any in-place layout works. No reduction.
 */
static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank;
	uint64_t blk = a->count * a->esize;
	char *rb = a->rbuf, *t;

	if (blk == 0)
		return OHC_OK;
	if (n == 1)
		return ohc_algo_single(s, rb, a->sbuf, blk);
	t = ohc_algo_scratch(s, blk * n);
	if (!t)
		return OHC_ERR_NO_MEMORY;
	ohc_sched_copy(s, t, a->sbuf, blk);
	for (uint32_t k = 0; k < ohc_bruck_steps(n); k++) {
		uint32_t d = ohc_bruck_dist(k);
		uint64_t len = ohc_bruck_ag_nslots(k, n) * blk;

		ohc_sched_send(s, (r + n - d) % n, t, len);
		ohc_sched_recv(s, (r + d) % n, t + d * blk, len);
		ohc_sched_step(s);
	}
	/* Slot i is rank (r + i)'s block. */
	ohc_sched_copy(s, rb + (uint64_t)r * blk, t, (uint64_t)(n - r) * blk);
	ohc_sched_copy(s, rb, t + (uint64_t)(n - r) * blk, (uint64_t)r * blk);
	ohc_sched_step(s);
	return OHC_OK;
}

/* ceil(log p) a + (p-1)/p nb + n copy (rotation), after the own block's */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	return ohc_bruck_steps(n) * c->alpha_us +
	       (double)(n - 1) / n * (double)bytes * c->beta_us +
	       (double)bytes * c->copy_us + ohc_cost_own_block(c, bytes, n);
}

const struct ohc_algo ohc_algo_allgather_bruck = {
	.name = "bruck",
	.op = OHC_COLL_ALLGATHER,
	.build = build,
	.cost = cost,
};
