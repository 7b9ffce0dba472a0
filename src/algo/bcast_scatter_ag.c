/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/binomial.h"
#include "algo/patterns/partition.h"

/*
 * Scatter + ring allgather broadcast (van de Geijn): the vector is cut
 * into n parts, part i belonging to relative rank i; a binomial scatter
 * (contiguous subtrees, patterns/binomial.h) gives every rank its part,
 * then a ring allgather over relative ranks completes everyone. About
 * 2(n-1)/n of the vector per rank instead of log2(n) whole vectors: the
 * large-message broadcast. Everything happens in place in the receive
 * buffer (the root copies its send buffer there first if it differs).
 * No reduction.
 */
static uint64_t poff(const struct ohc_coll_args *a, uint32_t i)
{
	return ohc_part_offset(a->count, a->nranks, i) * a->esize;
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, root = a->root;
	uint32_t vr = ohc_binom_vrank(a->rank, root, n);
	uint32_t right = ohc_binom_rank((vr + 1) % n, root, n);
	uint32_t left = ohc_binom_rank((vr + n - 1) % n, root, n);
	char *rb = a->rbuf;
	ohc_status_t ret;

	if (ohc_bcast_begin(a, s, vr, &ret))
		return ret;
	for (uint32_t t = 0; t < ohc_binom_rounds(n); t++) {
		uint32_t child = ohc_binom_td_child(vr, t, n);

		if (vr && t == ohc_binom_td_recv_round(vr, n)) {
			uint32_t end = vr + ohc_binom_subtree(vr, n);

			ohc_sched_recv_nz(
				s,
				ohc_binom_rank(ohc_binom_parent(vr), root, n),
				rb + poff(a, vr), poff(a, end) - poff(a, vr));
		}
		if (child) {
			uint32_t end = child + ohc_binom_subtree(child, n);

			ohc_sched_send_nz(s, ohc_binom_rank(child, root, n),
					  rb + poff(a, child),
					  poff(a, end) - poff(a, child));
		}
		ohc_sched_step(s);
	}
	for (uint32_t st = 0; st + 1 < n; st++) {
		uint32_t sp = (vr + n - st % n) % n,
			 rp = (vr + 2 * n - st - 1) % n;

		ohc_sched_send_nz(s, right, rb + poff(a, sp),
				  poff(a, sp + 1) - poff(a, sp));
		ohc_sched_recv_nz(s, left, rb + poff(a, rp),
				  poff(a, rp + 1) - poff(a, rp));
		ohc_sched_step(s);
	}
	return OHC_OK;
}

/* (ceil(log p) + p - 1) a + 2(p-1)/p nb */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	unsigned l = ohc_binom_rounds(n);
	double nb = (double)bytes;

	/* the root's halving subtrees, then n - 1 parts around the ring */
	return (l + n - 1) * c->alpha_us +
	       ohc_cost_halving(c, nb, l, 1, 0) * ((double)(n - 1) / n) /
		       (1.0 - 1.0 / (double)(1u << l)) +
	       (n - 1) * ohc_cost_bytes(c, nb / n, 1, 0);
}

/*
 * The scatter's n - 1 messages (round k: 2^k of a 2^(k+1)-th of the
 * vector each), then n(n - 1) ring messages of a part each.
 */
static double work(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n,
		   uint32_t slices)
{
	unsigned l = ohc_binom_rounds(n);
	double nb = (double)bytes, scatter = 0;

	(void)slices;
	for (unsigned k = 0; k < l; k++)
		scatter += (double)(1u << k) *
			   ohc_cost_bytes(c, nb / (double)(2u << k), 1, 0);
	return (n - 1 + (double)n * (n - 1)) * c->alpha_us + scatter +
	       (double)n * (n - 1) * ohc_cost_bytes(c, nb / n, 1, 0);
}

const struct ohc_algo ohc_algo_bcast_scatter_ag = {
	.name = "scatter_ring_allgather",
	.op = OHC_COLL_BROADCAST,
	.build = build,
	.cost = cost,
	.work = work,
};
