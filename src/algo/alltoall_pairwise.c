/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/pairwise.h"
#include "util/log.h"

/*
 * Pairwise-exchange alltoall, regular and V: in step k (1 <= k < n) rank
 * r sends its block for (r + k) and receives the block of (r - k)
 * (patterns/pairwise.h), and copies its own block in the first: one
 * message in and one out per step, so no rank is flooded ("incast"); n-1
 * messages per rank, the bandwidth optimum for large blocks. V: send
 * block j is send_counts[j] elements at send_displs[j], receive block i
 * is recv_counts[i] at recv_displs[i]; empty blocks are skipped on both
 * sides. A send buffer overlapping the receive buffer (HCCL rejects it)
 * is staged in scratch. No reduction.
 */
static ohc_status_t exchange(const struct ohc_coll_args *a, struct ohc_sched *s,
			     const struct ohc_blocks *sbk,
			     const struct ohc_blocks *rbk, bool one_step)
{
	uint32_t n = a->nranks, r = a->rank;
	uint64_t sext = ohc_blk_extent(sbk, n);
	const char *sb = a->sbuf;
	char *rb = a->rbuf;

	if (ohc_blk_len(sbk, r) != ohc_blk_len(rbk, r)) {
		OHC_ERROR(OHC_SS_ALGO,
			  "rank %u: %s: sendCounts[%u] = %llu but "
			  "recvCounts[%u] = %llu",
			  r, ohc_coll_op_name(a->op), r,
			  (unsigned long long)(ohc_blk_len(sbk, r) / a->esize),
			  r,
			  (unsigned long long)(ohc_blk_len(rbk, r) / a->esize));
		return OHC_ERR_INVALID;
	}
	if (ohc_mem_overlap(sb, sext, rb, ohc_blk_extent(rbk, n))) {
		char *t = ohc_algo_scratch(s, sext);

		if (!t)
			return OHC_ERR_NO_MEMORY;
		ohc_sched_copy(s, t, sb, sext);
		sb = t;
	}
	if (n == 1) {
		ohc_sched_copy(s, rb + ohc_blk_off(rbk, r),
			       sb + ohc_blk_off(sbk, r), ohc_blk_len(sbk, r));
		ohc_sched_step(s);
		return OHC_OK;
	}
	for (uint32_t k = 1; k < n; k++) {
		uint32_t to = ohc_pairwise_to(r, k, n);
		uint32_t from = ohc_pairwise_from(r, k, n);

		ohc_sched_send_nz(s, to, sb + ohc_blk_off(sbk, to),
				  ohc_blk_len(sbk, to));
		ohc_sched_recv_nz(s, from, rb + ohc_blk_off(rbk, from),
				  ohc_blk_len(rbk, from));
		/* the own block while the first exchange is on its way (its
		 * own step cost a 2-rank AlltoAll a second pass through the
		 * executor) */
		if (k == 1)
			ohc_sched_copy(s, rb + ohc_blk_off(rbk, r),
				       sb + ohc_blk_off(sbk, r),
				       ohc_blk_len(sbk, r));
		if (!one_step)
			ohc_sched_step(s);
	}
	if (one_step)
		ohc_sched_step(s);
	return OHC_OK;
}

static ohc_status_t pairwise(const struct ohc_coll_args *a, struct ohc_sched *s,
			     const struct ohc_blocks *sbk,
			     const struct ohc_blocks *rbk)
{
	return exchange(a, s, sbk, rbk, false);
}

static ohc_status_t pairwise_regular(const struct ohc_coll_args *a,
				     struct ohc_sched *s,
				     const struct ohc_blocks *b)
{
	return pairwise(a, s, b, b);
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	return ohc_algo_build_regular(a, s, pairwise_regular);
}

static ohc_status_t accepts_v(const struct ohc_coll_args *a)
{
	return a->send_counts && a->send_displs && a->recv_counts &&
			       a->recv_displs
		       ? OHC_OK
		       : OHC_ERR_UNSUPPORTED;
}

static ohc_status_t build_v(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	struct ohc_blocks sbk, rbk;

	if (accepts_v(a))
		return OHC_ERR_UNSUPPORTED;
	sbk = ohc_blocks_v(a->send_counts, a->send_displs, a->esize);
	rbk = ohc_blocks_v(a->recv_counts, a->recv_displs, a->esize);
	return pairwise(a, s, &sbk, &rbk);
}

/* (p-1) a + (p-1)/p nb */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	return (n - 1) * c->alpha_us +
	       (double)(n - 1) / n * (double)bytes * c->beta_us;
}

const struct ohc_algo ohc_algo_alltoall_pairwise = {
	.name = "pairwise",
	.op = OHC_COLL_ALLTOALL,
	.build = build,
	.cost = cost,
};

const struct ohc_algo ohc_algo_alltoallv_pairwise = {
	.name = "pairwise",
	.op = OHC_COLL_ALLTOALLV,
	.build = build_v,
	.accepts = accepts_v,
	.cost = cost,
};

/*
 * Linear alltoall: the same messages in one step, every send and receive
 * posted at once, so no step waits for the slowest pair of the one
 * before, as pairwise's n-1 steps do. The sender posts its n-1 messages
 * send_us apart and their latencies overlap: a + (p-2) o + (p-1)/p nb
 * (o = send_us; pairwise's cost where o is alpha, as over RDMA). On the
 * 2-core machines here (bench/algo_sweep.sh, bench/README.md) it was the
 * fastest of the three at 4, 8 and 16 ranks from 8 B to 2 MiB (pairwise
 * tied it at 16 ranks' 2 MiB). Not over RDMA, where every peer would write
 * into one NIC at once (incast), nor for V, where only one candidate may
 * exist (each rank prices its own bytes, and the choice must be the same
 * on all).
 */
static ohc_status_t linear(const struct ohc_coll_args *a, struct ohc_sched *s,
			   const struct ohc_blocks *b)
{
	return exchange(a, s, b, b, true);
}

static ohc_status_t accepts_linear(const struct ohc_coll_args *a)
{
	return a->link == OHC_LINK_RDMA ? OHC_ERR_UNSUPPORTED : OHC_OK;
}

static ohc_status_t build_linear(const struct ohc_coll_args *a,
				 struct ohc_sched *s)
{
	return ohc_algo_build_regular(a, s, linear);
}

const struct ohc_algo ohc_algo_alltoall_linear = {
	.name = "linear",
	.op = OHC_COLL_ALLTOALL,
	.build = build_linear,
	.accepts = accepts_linear,
	.cost = ohc_cost_fan_out,
};
