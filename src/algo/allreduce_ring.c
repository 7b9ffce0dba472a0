/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/algo.h"
#include "algo/patterns/partition.h"
#include "algo/patterns/ring.h"

/*
 * Ring allreduce: reduce-scatter then allgather around the ring, n-1 steps
 * each; 2(n-1)/n of the data crosses each link, the bandwidth optimum.
 * Works in place and out of place: the first reduce-scatter step reads
 * the send buffer, everything later lives in the receive buffer.
 */
static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank;
	uint32_t right = ohc_ring_right(r, n), left = ohc_ring_left(r, n);
	const char *sb = a->sbuf;
	char *rb = a->rbuf;
	size_t es = a->esize;

	if (n == 1) {
		ohc_sched_copy(s, rb, sb, a->count * es);
		ohc_sched_step(s);
		return OHC_OK;
	}
	for (uint32_t st = 0; st + 1 < n; st++) {
		uint32_t sc = ohc_ring_rs_send_chunk(r, st, n);
		uint32_t rc = ohc_ring_rs_recv_chunk(r, st, n);
		uint64_t soff = ohc_part_offset(a->count, n, sc) * es;
		uint64_t slen = ohc_part_count(a->count, n, sc) * es;
		uint64_t roff = ohc_part_offset(a->count, n, rc) * es;
		uint64_t rlen = ohc_part_count(a->count, n, rc) * es;

		if (slen)
			ohc_sched_send(s, right, (st ? rb : sb) + soff, slen);
		if (rlen)
			ohc_sched_recv_reduce(s, left, rb + roff, sb + roff,
					      rlen);
		ohc_sched_step(s);
	}
	for (uint32_t st = 0; st + 1 < n; st++) {
		uint32_t sc = ohc_ring_ag_send_chunk(r, st, n);
		uint32_t rc = ohc_ring_ag_recv_chunk(r, st, n);
		uint64_t soff = ohc_part_offset(a->count, n, sc) * es;
		uint64_t slen = ohc_part_count(a->count, n, sc) * es;
		uint64_t roff = ohc_part_offset(a->count, n, rc) * es;
		uint64_t rlen = ohc_part_count(a->count, n, rc) * es;

		if (slen)
			ohc_sched_send(s, right, rb + soff, slen);
		if (rlen)
			ohc_sched_recv(s, left, rb + roff, rlen);
		ohc_sched_step(s);
	}
	return OHC_OK;
}

const struct ohc_algo ohc_algo_allreduce_ring = {
	.name = "ring",
	.op = OHC_COLL_ALLREDUCE,
	.build = build,
};
