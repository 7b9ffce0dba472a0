/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/binomial.h"

/*
 * Linear broadcast, for small vectors: the root sends the vector to every
 * other rank in one step (common.h: over shm and self), which receive it
 * straight into their buffer. The binomial tree takes ceil(log2 n) steps,
 * each waiting for the one before, and the agreement of rooted ops one
 * more; a one-step schedule gets its agreement in that step, every rank
 * to every rank (ohc_sched_weave_agreement at once), so the whole
 * broadcast is one round of messages: a + (p-2) o + (p-1) nb at the
 * root. The root's copy from its send buffer as in the tree. No
 * reduction.
 */
static ohc_status_t accepts(const struct ohc_coll_args *a)
{
	return ohc_linear_accepts(a, a->count * a->esize);
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, root = a->root;
	uint32_t vr = ohc_binom_vrank(a->rank, root, n);
	uint64_t bytes = a->count * a->esize;
	ohc_status_t st;

	if (ohc_bcast_begin(a, s, vr, &st))
		return st;
	if (vr)
		ohc_sched_recv(s, root, a->rbuf, bytes);
	for (uint32_t k = 1; vr == 0 && k < n; k++)
		ohc_sched_send(s, (root + k) % n, a->rbuf, bytes);
	ohc_sched_step(s);
	return OHC_OK;
}

static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	return ohc_cost_fan_out(c, bytes * n, n);
}

const struct ohc_algo ohc_algo_bcast_linear = {
	.name = "linear",
	.op = OHC_COLL_BROADCAST,
	.build = build,
	.accepts = accepts,
	.cost = cost,
	.work = ohc_bcast_work, /* (p - 1)(a + nb) */
};
