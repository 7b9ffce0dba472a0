/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/recursive.h"

/*
 * Recursive-doubling allreduce: log2(p) exchanges of the whole vector
 * with partners at distance 1, 2, 4, ...; the latency optimum for small
 * vectors. A non-power-of-two n first folds the extra ranks into their
 * odd neighbours (ohc_fold_newrank) and sends them the result at the end.
 *
 * Each exchange receives into scratch and reduces in the next step (the
 * vector being sent cannot be overwritten while it travels), and always
 * as lower-rank-block OP higher-rank-block. So every rank computes the
 * same expression, x0 OP x1 OP ... OP x(n-1) in rank order, from the same
 * operands: results are bitwise identical run to run and across ranks,
 * deterministic mode or not.
 */
static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank;
	uint32_t pof2 = ohc_pof2_floor(n), rem = n - pof2;
	uint32_t nr = ohc_fold_newrank(r, n);
	uint64_t bytes = a->count * a->esize;
	const char *cur;
	char *rb = a->rbuf, *tmp;
	struct ohc_pending p = {0};
	ohc_status_t st;

	if (n == 1)
		return ohc_algo_single(s, rb, a->sbuf, bytes);
	if (bytes == 0)
		return OHC_OK;
	/* scratch: [receive area][staged send buffer] */
	st = ohc_stage_scratch(a, s, ohc_align64(bytes), ohc_align64(bytes),
			       &tmp, &cur);
	if (st)
		return st;
	ohc_fold(s, r, nr, rem, &cur, rb, tmp, bytes, &p);
	for (uint32_t mask = 1; mask < pof2; mask <<= 1) {
		if (nr != OHC_FOLDED) {
			uint32_t pn = nr ^ mask, peer = ohc_fold_rank(pn, n);

			if (p.dst) {
				ohc_pending_flush(s, &p);
				cur = rb;
			}
			ohc_sched_send(s, peer, cur, bytes);
			ohc_sched_recv(s, peer, tmp, bytes);
			if (nr < pn)
				p = (struct ohc_pending){rb, cur, tmp, bytes};
			else
				p = (struct ohc_pending){rb, tmp, cur, bytes};
		}
		ohc_sched_step(s);
	}
	ohc_pending_flush(s, &p);
	ohc_unfold(s, r, nr, rem, rb, bytes);
	ohc_sched_step(s);
	return OHC_OK;
}

/* log p (a + nb + ng), + 2(a + nb) + ng to fold a non-power of two */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	uint32_t pof2 = ohc_pof2_floor(n);
	double nb = (double)bytes;

	/* sends out of the user's buffers; received into scratch */
	return ohc_log2_floor(pof2) *
		       (c->alpha_us + ohc_cost_bytes(c, nb, 1, 0) +
			nb * c->gamma_us) +
	       ohc_cost_fold(c, nb, pof2, n);
}

const struct ohc_algo ohc_algo_allreduce_rd = {
	.name = "recursive_doubling",
	.op = OHC_COLL_ALLREDUCE,
	.build = build,
	.cost = cost,
};
