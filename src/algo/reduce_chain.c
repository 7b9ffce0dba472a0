/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/binomial.h"
#include "algo/patterns/chain.h"

/*
 * Chain reduce (patterns/chain.h): the last relative rank sends its
 * vector to the one before it, which adds its own and passes the partial
 * on, up to the root; n - 1 steps. Built whole and pipelined by
 * selection (ohc_sched_pipeline) in the slice count the cost model
 * picks: a rank's partial is reduced and forwarded over the same byte
 * range, so pipelining is correct (test/unit/algos.c checks it).
 * Pipelined in S slices it costs (n - 2 + S)(a + n(b + g)/S), for large
 * vectors close to one vector's time where the binomial tree needs
 * ceil(log2 n). Partials of non-roots live in scratch; the root reduces
 * straight into its receive buffer (in place works; a partial overlap of
 * the buffers goes through scratch and a final copy).
 *
 * Determinism: relative rank v computes mine OP partial(v + 1), so the
 * root gets x0 OP (x1 OP (... OP x(n-1))): relative-rank order with a
 * fixed bracketing. Slicing only splits the elements, every element is
 * combined the same way whatever the slice count.
 */
static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, root = a->root;
	uint32_t vr = ohc_binom_vrank(a->rank, root, n);
	uint64_t bytes = a->count * a->esize;
	char *acc;
	bool stage;
	ohc_status_t st;

	if (ohc_reduce_begin(a, s, vr, vr + 1 < n, &acc, &stage, &st))
		return st;
	for (uint32_t t = 0; t < n - 1; t++) {
		if (vr + 1 < n && t == ohc_chain_up_recv_step(vr, n))
			ohc_sched_recv_reduce(s,
					      ohc_binom_rank(vr + 1, root, n),
					      acc, a->sbuf, bytes);
		if (vr && t == n - 1 - vr)
			ohc_sched_send(s, ohc_binom_rank(vr - 1, root, n),
				       vr + 1 < n ? acc : a->sbuf, bytes);
		ohc_sched_step(s);
	}
	return ohc_reduce_end(a, s, acc, stage);
}

/* (p - 2 + S)(a + n(b + g)/S) */
static double cost_sliced(const struct ohc_cost_params *c, uint64_t bytes,
			  uint32_t n, uint32_t slices)
{
	double m = (double)bytes / slices;

	/* partials from scratch (the leaf's own buffer only at 2 ranks) */
	return ohc_chain_steps(n, slices) *
	       (c->alpha_us + ohc_cost_bytes(c, m, n == 2, 1));
}

/* every rank but the root sends its partial once, in S messages */
static double work(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n,
		   uint32_t slices)
{
	double m = (double)bytes / slices;

	return (double)(n - 1) * slices *
	       (c->alpha_us + ohc_cost_bytes(c, m, n == 2, 1));
}

static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	double us;

	ohc_algo_slices(&ohc_algo_reduce_chain, c, bytes, 1, n, &us);
	return us;
}

const struct ohc_algo ohc_algo_reduce_chain = {
	.name = "chain",
	.op = OHC_COLL_REDUCE,
	.build = build,
	.cost = cost,
	.cost_sliced = cost_sliced,
	.work = work,
};
