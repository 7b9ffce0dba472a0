/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/binomial.h"

/*
 * Binomial-tree reduce: ceil(log2 n) rounds, bottom-up
 * (patterns/binomial.h); a rank adds its children's partials in rounds
 * 0, 1, ... and sends its own to its parent in the round of its lowest
 * set bit. The result exists only in the root's receive buffer: other
 * ranks keep their partials in scratch and never touch theirs (HCCL
 * validates a non-root recvBuf but does not promise anything about it).
 * In place at the root works (send buffer == receive buffer); a partial
 * overlap is handled in scratch with a final copy.
 *
 * Determinism: a rank's partial covers relative ranks [vr, vr + 2^k) and
 * the child's [vr + 2^k, vr + 2^(k+1)), combined as mine OP incoming, so
 * the result is the reduction in relative-rank order (root, root + 1, ...)
 * with a fixed bracketing, whatever the timing.
 */
static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, root = a->root;
	uint32_t vr = ohc_binom_vrank(a->rank, root, n);
	uint64_t bytes = a->count * a->esize;
	const char *sb = a->sbuf;
	char *acc;
	int first = 1;
	bool stage;
	ohc_status_t st;

	if (ohc_reduce_begin(a, s, vr, (vr & 1) == 0 && vr + 1 < n, &acc,
			     &stage, &st))
		return st;
	for (uint32_t k = 0; k < ohc_binom_rounds(n); k++) {
		uint32_t mask = 1u << k;

		if (vr & mask) {
			ohc_sched_send(s, ohc_binom_rank(vr - mask, root, n),
				       first ? sb : acc, bytes);
			ohc_sched_step(s);
			return OHC_OK;
		}
		if (vr + mask < n) {
			ohc_sched_recv_reduce(
				s, ohc_binom_rank(vr + mask, root, n), acc,
				first ? sb : acc, bytes);
			first = 0;
		}
		ohc_sched_step(s);
	}
	return ohc_reduce_end(a, s, acc, stage);
}

/* ceil(log p)(a + nb + ng) */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	double nb = (double)bytes;

	/* leaves send their own buffer, inner ranks their partial */
	return ohc_binom_rounds(n) * c->alpha_us + ohc_cost_bytes(c, nb, 1, 1) +
	       (ohc_binom_rounds(n) - 1) * ohc_cost_bytes(c, nb, 0, 1);
}

/*
 * Every rank but the root sends once: the leaves (a subtree of one) their
 * own buffer, the others their partial; each is reduced.
 */
static double work(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n,
		   uint32_t slices)
{
	double nb = (double)bytes, leaves = 0;

	(void)slices;
	for (uint32_t vr = 1; vr < n; vr++)
		leaves += ohc_binom_subtree(vr, n) == 1;
	return (n - 1) * c->alpha_us + leaves * ohc_cost_bytes(c, nb, 1, 1) +
	       (n - 1 - leaves) * ohc_cost_bytes(c, nb, 0, 1);
}

const struct ohc_algo ohc_algo_reduce_binomial = {
	.name = "binomial",
	.op = OHC_COLL_REDUCE,
	.build = build,
	.cost = cost,
	.work = work,
};
