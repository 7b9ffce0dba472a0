/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"

/*
 * Linear scatter: the root sends block i to rank i, all in one step; every
 * other rank receives straight into its receive buffer. n-1 messages from
 * the root, no relaying, no scratch: fine for few ranks. The root's own
 * block is copied in the same step, or after the sends when its receive
 * buffer overlaps the send buffer other than at its own block. No
 * reduction.
 */
static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank;
	uint64_t blk = a->count * a->esize;
	const char *sb = a->sbuf, *own;
	char *rb = a->rbuf;
	int late;

	if (n == 1)
		return ohc_algo_single(s, rb, sb, blk);
	if (blk == 0)
		return OHC_OK;
	if (r != a->root) {
		ohc_sched_recv(s, a->root, rb, blk);
		ohc_sched_step(s);
		return OHC_OK;
	}
	own = sb + (uint64_t)r * blk;
	late = rb != own && ohc_mem_overlap(rb, blk, sb, n * blk);
	if (!late)
		ohc_sched_copy(s, rb, own, blk);
	for (uint32_t i = 1; i < n; i++) {
		uint32_t to = (r + i) % n;

		ohc_sched_send(s, to, sb + (uint64_t)to * blk, blk);
	}
	ohc_sched_step(s);
	if (late) {
		ohc_sched_copy(s, rb, own, blk);
		ohc_sched_step(s);
	}
	return OHC_OK;
}

/* the root's sends are all the work there is, a whole alpha each (the
 * overlapped latency is a handoff, CPU time where ranks take turns) */
static double work(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n,
		   uint32_t slices)
{
	(void)slices;
	return (n - 1) * c->alpha_us +
	       (double)(n - 1) / n * (double)bytes * c->beta_us;
}

const struct ohc_algo ohc_algo_scatter_linear = {
	.name = "linear",
	.op = OHC_COLL_SCATTER,
	.build = build,
	.cost = ohc_cost_fan_out, /* the root posts every block */
	.work = work,
};
