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
struct pending {
	void *dst;
	const void *a, *b;
	uint64_t len;
};

static void flush(struct ohc_sched *s, struct pending *p)
{
	if (p->dst)
		ohc_sched_reduce_nz(s, p->dst, p->a, p->b, p->len);
	p->dst = NULL;
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank;
	uint32_t pof2 = ohc_pof2_floor(n), rem = n - pof2;
	uint32_t nr = ohc_fold_newrank(r, n);
	uint64_t bytes = a->count * a->esize;
	const char *cur = a->sbuf;
	char *rb = a->rbuf, *tmp;
	struct pending p = {0};
	int stage;

	if (n == 1)
		return ohc_algo_single(s, rb, cur, bytes);
	if (bytes == 0)
		return OHC_OK;
	stage = cur != rb && ohc_mem_overlap(cur, bytes, rb, bytes);
	tmp = ohc_algo_scratch(s, ohc_align64(bytes) * (stage ? 2 : 1));
	if (!tmp)
		return OHC_ERR_NO_MEMORY;
	if (stage) {
		char *t = tmp + ohc_align64(bytes);

		ohc_sched_copy(s, t, cur, bytes);
		cur = t;
	}
	if (rem) {
		if (nr == OHC_FOLDED) {
			ohc_sched_send(s, r + 1, cur, bytes);
		} else if (r < 2 * rem) {
			ohc_sched_recv(s, r - 1, tmp, bytes);
			p = (struct pending){rb, tmp, cur, bytes};
		}
		ohc_sched_step(s);
	}
	for (uint32_t mask = 1; mask < pof2; mask <<= 1) {
		if (nr != OHC_FOLDED) {
			uint32_t pn = nr ^ mask, peer = ohc_fold_rank(pn, n);

			if (p.dst) {
				flush(s, &p);
				cur = rb;
			}
			ohc_sched_send(s, peer, cur, bytes);
			ohc_sched_recv(s, peer, tmp, bytes);
			if (nr < pn)
				p = (struct pending){rb, cur, tmp, bytes};
			else
				p = (struct pending){rb, tmp, cur, bytes};
		}
		ohc_sched_step(s);
	}
	flush(s, &p);
	if (rem) {
		if (nr == OHC_FOLDED)
			ohc_sched_recv(s, r + 1, rb, bytes);
		else if (r < 2 * rem)
			ohc_sched_send(s, r - 1, rb, bytes);
	}
	ohc_sched_step(s);
	return OHC_OK;
}

/* log p (a + nb + ng), + 2(a + nb) + ng to fold a non-power of two */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	uint32_t pof2 = ohc_pof2_floor(n);
	double nb = (double)bytes, t;

	/* sends out of the user's buffers; received into scratch */
	t = ohc_log2_floor(pof2) *
	    (c->alpha_us + ohc_cost_bytes(c, nb, 1, 0) + nb * c->gamma_us);
	if (pof2 != n)
		t += 2 * (c->alpha_us + ohc_cost_bytes(c, nb, 1, 0)) +
		     nb * c->gamma_us;
	return t;
}

const struct ohc_algo ohc_algo_allreduce_rd = {
	.name = "recursive_doubling",
	.op = OHC_COLL_ALLREDUCE,
	.build = build,
	.cost = cost,
};
