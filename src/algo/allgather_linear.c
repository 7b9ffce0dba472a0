/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"

/*
 * Linear allgather: a rank sends its block to every other rank and
 * receives theirs straight into the receive buffer, all in one step
 * (common.h: over shm and self). Recursive doubling and Bruck take
 * ceil(log2 n) steps, each waiting for the slowest pair of the one
 * before; where ranks take turns on fewer CPUs each step is a round of
 * the scheduler. The sender posts its n-1 messages send_us apart and
 * their latencies overlap: a + (p-2) o + (p-1)/p nb (ohc_cost_fan_out),
 * after the own block's copy. In place as in allgather_ring.c. No
 * reduction.
 */
static ohc_status_t accepts(const struct ohc_coll_args *a)
{
	return ohc_linear_accepts(a, a->count * a->esize);
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank;
	uint64_t blk = a->count * a->esize;
	char *rb = a->rbuf;
	const char *src;
	ohc_status_t ret;

	if (blk == 0)
		return OHC_OK;
	ret = ohc_allgather_own(a, s, rb + (uint64_t)r * blk, blk, blk * n,
				&src);
	if (ret)
		return ret;
	for (uint32_t k = 1; k < n; k++) {
		uint32_t to = (r + k) % n, from = (r + n - k) % n;

		ohc_sched_send(s, to, src, blk);
		ohc_sched_recv(s, from, rb + (uint64_t)from * blk, blk);
	}
	ohc_sched_step(s);
	return OHC_OK;
}

static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	return ohc_cost_fan_out(c, bytes, n) + ohc_cost_own_block(c, bytes, n);
}

const struct ohc_algo ohc_algo_allgather_linear = {
	.name = "linear",
	.op = OHC_COLL_ALLGATHER,
	.build = build,
	.accepts = accepts,
	.cost = cost,
};
