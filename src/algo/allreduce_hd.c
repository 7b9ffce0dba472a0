/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/partition.h"
#include "algo/patterns/recursive.h"

/*
 * Halving-doubling (Rabenseifner) allreduce: a reduce-scatter by recursive
 * vector halving with distance doubling, then an allgather by recursive
 * vector doubling with distance halving; 2 log2(p) steps moving 2(p-1)/p
 * of the vector, like the ring but with logarithmic latency. The vector
 * is cut into pof2 blocks (ohc_part_*); a non-power-of-two n folds its
 * extra ranks first and unfolds at the end, as MPICH does.
 *
 * Determinism: each block is reduced by exactly one rank and then copied
 * to all, so all ranks end with the same bits and the order is fixed by
 * (n, count). In deterministic mode every combination is additionally
 * lower-rank-block OP higher-rank-block (the higher partner receives into
 * scratch and reduces in the next step), which with distance doubling
 * makes each block x0 OP x1 OP ... OP x(n-1) in rank order; otherwise
 * the higher partner reduces while receiving (mine OP incoming).
 */
static uint64_t boff(const struct ohc_coll_args *a, uint32_t pof2, uint32_t i)
{
	return ohc_part_offset(a->count, pof2, i) * a->esize;
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank;
	uint32_t pof2 = ohc_pof2_floor(n), rem = n - pof2;
	uint32_t nr = ohc_fold_newrank(r, n), lo = 0, hi = pof2;
	uint64_t bytes = a->count * a->esize;
	const char *cur;
	char *rb = a->rbuf, *tmp;
	struct ohc_pending p = {0};
	int det = a->deterministic;
	ohc_status_t st;

	if (n == 1)
		return ohc_algo_single(s, rb, a->sbuf, bytes);
	if (bytes == 0)
		return OHC_OK;
	/* scratch: [receive area, deterministic only][staged send buffer] */
	st = ohc_stage_scratch(a, s,
			       det && nr != OHC_FOLDED ? ohc_align64(bytes) : 0,
			       bytes, &tmp, &cur);
	if (st)
		return st;
	ohc_fold(s, r, nr, rem, &cur, rb, det ? tmp : NULL, bytes, &p);
	/* Reduce-scatter: halve the window, double the distance. */
	for (uint32_t mask = 1; mask < pof2; mask <<= 1) {
		if (nr != OHC_FOLDED) {
			uint32_t pn = nr ^ mask, peer = ohc_fold_rank(pn, n);
			uint32_t mid = lo + (hi - lo) / 2;
			uint32_t klo = nr < pn ? lo : mid,
				 khi = nr < pn ? mid : hi;
			uint32_t slo = nr < pn ? mid : lo,
				 shi = nr < pn ? hi : mid;
			uint64_t ko = boff(a, pof2, klo),
				 so = boff(a, pof2, slo);
			uint64_t klen = boff(a, pof2, khi) - ko;

			ohc_pending_flush(s, &p);
			ohc_sched_send_nz(s, peer, cur + so,
					  boff(a, pof2, shi) - so);
			if (det && nr > pn) {
				ohc_sched_recv_nz(s, peer, tmp + ko, klen);
				p = (struct ohc_pending){rb + ko, tmp + ko,
							 cur + ko, klen};
			} else {
				ohc_sched_recv_reduce_nz(s, peer, rb + ko,
							 cur + ko, klen);
			}
			cur = rb;
			lo = klo;
			hi = khi;
		}
		ohc_sched_step(s);
	}
	/* Allgather: double the window, halve the distance. */
	for (uint32_t mask = pof2 / 2; mask >= 1; mask >>= 1) {
		if (nr != OHC_FOLDED) {
			uint32_t pn = nr ^ mask, peer = ohc_fold_rank(pn, n);
			uint32_t w = hi - lo;
			uint32_t plo = nr < pn ? hi : lo - w, phi = plo + w;
			uint64_t o = boff(a, pof2, lo), po = boff(a, pof2, plo);

			ohc_pending_flush(s, &p);
			ohc_sched_send_nz(s, peer, rb + o,
					  boff(a, pof2, hi) - o);
			ohc_sched_recv_nz(s, peer, rb + po,
					  boff(a, pof2, phi) - po);
			lo = plo < lo ? plo : lo;
			hi = phi > hi ? phi : hi;
		}
		ohc_sched_step(s);
	}
	ohc_unfold(s, r, nr, rem, rb, bytes);
	if (rem)
		ohc_sched_step(s);
	return OHC_OK;
}

/* 2 log p a + 2(p-1)/p nb + (p-1)/p ng, + 2(a + nb) + ng to fold */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	uint32_t pof2 = ohc_pof2_floor(n);
	unsigned l = ohc_log2_floor(pof2);
	double nb = (double)bytes;

	/* halves out of the user's buffers, received-reduced, then back */
	return 2.0 * l * c->alpha_us + ohc_cost_halving(c, nb, l, 1, 1) +
	       ohc_cost_halving(c, nb, l, 1, 0) + ohc_cost_fold(c, nb, pof2, n);
}

const struct ohc_algo ohc_algo_allreduce_hd = {
	.name = "halving_doubling",
	.op = OHC_COLL_ALLREDUCE,
	.build = build,
	.cost = cost,
};
