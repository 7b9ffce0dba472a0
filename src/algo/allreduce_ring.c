/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/partition.h"
#include "algo/patterns/ring.h"

/*
 * Ring allreduce: reduce-scatter then allgather around the ring, n-1 steps
 * each; 2(n-1)/n of the data crosses each link, the bandwidth optimum.
 * Works in place and out of place: the first reduce-scatter step reads
 * the send buffer, everything later lives in the receive buffer (a send
 * buffer that partly overlaps the receive buffer is staged in scratch).
 *
 * Determinism: chunk c is reduced once, along the ring from rank c + 1 to
 * rank c (each rank computes mine OP incoming), and then copied to every
 * rank, so the order is fixed by (c, n) and all ranks end with the same
 * bits.
 */
static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank;
	uint32_t right = ohc_ring_right(r, n), left = ohc_ring_left(r, n);
	size_t es = a->esize, bytes = a->count * es;
	const char *sb = a->sbuf;
	char *rb = a->rbuf;

	if (n == 1)
		return ohc_algo_single(s, rb, sb, bytes);
	if (bytes == 0)
		return OHC_OK;
	if (sb != rb && ohc_mem_overlap(sb, bytes, rb, bytes)) {
		char *t = ohc_algo_scratch(s, bytes);

		if (!t)
			return OHC_ERR_NO_MEMORY;
		ohc_sched_copy(s, t, sb, bytes);
		sb = t;
	}
	for (uint32_t st = 0; st + 1 < n; st++) {
		uint32_t sc = ohc_ring_rs_send_chunk(r, st, n);
		uint32_t rc = ohc_ring_rs_recv_chunk(r, st, n);
		uint64_t soff = ohc_part_offset(a->count, n, sc) * es;
		uint64_t slen = ohc_part_count(a->count, n, sc) * es;
		uint64_t roff = ohc_part_offset(a->count, n, rc) * es;
		uint64_t rlen = ohc_part_count(a->count, n, rc) * es;

		ohc_sched_send_nz(s, right, (st ? rb : sb) + soff, slen);
		ohc_sched_recv_reduce_nz(s, left, rb + roff, sb + roff, rlen);
		ohc_sched_step(s);
	}
	for (uint32_t st = 0; st + 1 < n; st++) {
		uint32_t sc = ohc_ring_ag_send_chunk(r, st, n);
		uint32_t rc = ohc_ring_ag_recv_chunk(r, st, n);
		uint64_t soff = ohc_part_offset(a->count, n, sc) * es;
		uint64_t slen = ohc_part_count(a->count, n, sc) * es;
		uint64_t roff = ohc_part_offset(a->count, n, rc) * es;
		uint64_t rlen = ohc_part_count(a->count, n, rc) * es;

		ohc_sched_send_nz(s, right, rb + soff, slen);
		ohc_sched_recv_nz(s, left, rb + roff, rlen);
		ohc_sched_step(s);
	}
	return OHC_OK;
}

/* 2(p-1)a + 2(p-1)/p nb + (p-1)/p ng */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	double m = (double)bytes / n; /* a block, out of the user's buffers */

	return 2.0 * (n - 1) * c->alpha_us +
	       (n - 1) * (ohc_cost_bytes(c, m, 1, 1) +
			  ohc_cost_bytes(c, m, 1, 0));
}

const struct ohc_algo ohc_algo_allreduce_ring = {
	.name = "ring",
	.op = OHC_COLL_ALLREDUCE,
	.build = build,
	.cost = cost,
};
