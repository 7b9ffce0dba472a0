/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/algo.h"

/* Point-to-point: one message, matched in issue order per peer pair. */
static ohc_status_t build_send(const struct ohc_coll_args *a,
			       struct ohc_sched *s)
{
	ohc_sched_send(s, a->peer, a->sbuf, a->count * a->esize);
	ohc_sched_step(s);
	return OHC_OK;
}

static ohc_status_t build_recv(const struct ohc_coll_args *a,
			       struct ohc_sched *s)
{
	ohc_sched_recv(s, a->peer, a->rbuf, a->count * a->esize);
	ohc_sched_step(s);
	return OHC_OK;
}

/* a + nb */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	(void)n;
	return c->alpha_us + (double)bytes * c->beta_us;
}

const struct ohc_algo ohc_algo_send = {
	.name = "direct",
	.op = OHC_COLL_SEND,
	.build = build_send,
	.cost = cost,
};

const struct ohc_algo ohc_algo_recv = {
	.name = "direct",
	.op = OHC_COLL_RECV,
	.build = build_recv,
	.cost = cost,
};
