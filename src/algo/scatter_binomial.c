/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/binomial.h"

/*
 * Binomial-tree scatter: ceil(log2 n) rounds, top-down
 * (patterns/binomial.h); every rank receives the blocks of its whole
 * (contiguous, relative-rank) subtree from its parent and forwards the
 * children's shares. The root first rotates its send buffer into relative
 * order in scratch unless it is rank 0; inner ranks keep their subtree's
 * blocks in scratch, leaves receive straight into the receive buffer.
 * log2(n) messages, (n-1)/n of the data leaves the root. No reduction.
 */
static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, root = a->root;
	uint32_t vr = ohc_binom_vrank(a->rank, root, n);
	uint32_t sz = ohc_binom_subtree(vr, n);
	uint64_t blk = a->count * a->esize;
	const char *sb = a->sbuf;
	char *rb = a->rbuf;
	const char *t = sb;
	char *sub = NULL;
	uint32_t rround = vr ? ohc_binom_td_recv_round(vr, n) : 0;

	if (n == 1)
		return ohc_algo_single(s, rb, sb, blk);
	if (blk == 0)
		return OHC_OK;
	if (vr == 0) {
		const char *own = sb + (uint64_t)root * blk;

		if (root != 0 ||
		    (rb != own && ohc_mem_overlap(rb, blk, sb, n * blk))) {
			char *rot = ohc_algo_scratch(s, n * blk);

			if (!rot)
				return OHC_ERR_NO_MEMORY;
			ohc_sched_copy(s, rot, own, (uint64_t)(n - root) * blk);
			ohc_sched_copy(s, rot + (uint64_t)(n - root) * blk, sb,
				       (uint64_t)root * blk);
			t = rot;
		}
		ohc_sched_copy(s, rb, t, blk);
	} else if (sz > 1) {
		sub = ohc_algo_scratch(s, sz * blk);
		if (!sub)
			return OHC_ERR_NO_MEMORY;
		t = sub;
	}
	for (uint32_t k = 0; k < ohc_binom_rounds(n); k++) {
		uint32_t child = ohc_binom_td_child(vr, k, n);

		if (vr && k == rround)
			ohc_sched_recv(
				s,
				ohc_binom_rank(ohc_binom_parent(vr), root, n),
				sub ? sub : rb, sz * blk);
		if (sub && k == rround + 1)
			ohc_sched_copy(s, rb, t, blk);
		if (child)
			ohc_sched_send(s, ohc_binom_rank(child, root, n),
				       t + (uint64_t)(child - vr) * blk,
				       ohc_binom_subtree(child, n) * blk);
		ohc_sched_step(s);
	}
	return OHC_OK;
}

/* ceil(log p) a + (p-1)/p nb */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	return ohc_binom_rounds(n) * c->alpha_us +
	       (double)(n - 1) / n * (double)bytes * c->beta_us;
}

/* every rank but the root receives its subtree's blocks once */
static double work(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n,
		   uint32_t slices)
{
	double blocks = 0;

	(void)slices;
	for (uint32_t vr = 1; vr < n; vr++)
		blocks += ohc_binom_subtree(vr, n);
	return (n - 1) * c->alpha_us +
	       blocks * ((double)bytes / n) * c->beta_us;
}

const struct ohc_algo ohc_algo_scatter_binomial = {
	.name = "binomial",
	.op = OHC_COLL_SCATTER,
	.build = build,
	.cost = cost,
	.work = work,
};
