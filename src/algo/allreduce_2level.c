/* SPDX-License-Identifier: Apache-2.0 */
#include <math.h>
#include <stdlib.h>

#include "algo/common.h"
#include "algo/patterns/partition.h"
#include "algo/patterns/ring.h"

/*
 * Two-level allreduce, for communicators spanning hosts with the same
 * number of ranks p >= 2 on each of H >= 2 hosts:
 *
 *   1. inside each host, a ring reduce-scatter over the p local ranks
 *      (shared memory): local rank j ends with chunk (j+1) % p of the
 *      vector reduced over its host;
 *   2. across hosts, a ring allreduce of that chunk among the H ranks
 *      holding the same chunk (one per host, over RDMA);
 *   3. inside each host, a ring allgather of the p chunks.
 *
 * Only 2(H-1)/H of a chunk, i.e. 2(H-1)/(H p) of the vector, crosses the
 * network per rank, against 2(P-1)/P for a flat ring over all P = H p
 * ranks; the p ranks of a host use the network in parallel. Local ranks
 * are the host's ranks in ascending order, so every rank derives the same
 * groups from host_of alone, and every rank runs the same steps
 * ((p-1) + 2(H-1) + (p-1)), keeping step indices global.
 *
 * Determinism: every chunk is reduced in a fixed order (along the local
 * ring, then along the host ring) and copied to everyone: all ranks end
 * with the same bits.
 */

struct group {
	uint32_t *ranks; /* global ranks, in group order */
	uint32_t n, me;	 /* size, our index */
};

/* Ring reduce-scatter over g: afterwards rb's chunk (me+1)%n is reduced. */
static void ring_rs(struct ohc_sched *s, const struct group *g,
		    const char *sb, char *rb, uint64_t count, size_t es)
{
	uint32_t n = g->n, r = g->me;
	uint32_t right = g->ranks[ohc_ring_right(r, n)];
	uint32_t left = g->ranks[ohc_ring_left(r, n)];

	for (uint32_t st = 0; st + 1 < n; st++) {
		uint32_t sc = ohc_ring_rs_send_chunk(r, st, n);
		uint32_t rc = ohc_ring_rs_recv_chunk(r, st, n);

		ohc_sched_send_nz(s, right,
				  (st ? rb : sb) + ohc_part_offset(count, n, sc) * es,
				  ohc_part_count(count, n, sc) * es);
		ohc_sched_recv_reduce_nz(s, left,
					 rb + ohc_part_offset(count, n, rc) * es,
					 sb + ohc_part_offset(count, n, rc) * es,
					 ohc_part_count(count, n, rc) * es);
		ohc_sched_step(s);
	}
}

/* Ring allgather over g of rb's chunks, starting from chunk (me+1)%n. */
static void ring_ag(struct ohc_sched *s, const struct group *g, char *rb,
		    uint64_t count, size_t es)
{
	uint32_t n = g->n, r = g->me;
	uint32_t right = g->ranks[ohc_ring_right(r, n)];
	uint32_t left = g->ranks[ohc_ring_left(r, n)];

	for (uint32_t st = 0; st + 1 < n; st++) {
		uint32_t sc = ohc_ring_ag_send_chunk(r, st, n);
		uint32_t rc = ohc_ring_ag_recv_chunk(r, st, n);

		ohc_sched_send_nz(s, right,
				  rb + ohc_part_offset(count, n, sc) * es,
				  ohc_part_count(count, n, sc) * es);
		ohc_sched_recv_nz(s, left,
				  rb + ohc_part_offset(count, n, rc) * es,
				  ohc_part_count(count, n, rc) * es);
		ohc_sched_step(s);
	}
}

/* Ranks per host if every host has the same number >= 2, else 0. */
static uint32_t per_host(const struct ohc_coll_args *a)
{
	uint32_t h0 = 0, *cnt;

	if (!a->host_of || a->nhosts < 2 || a->nranks % a->nhosts)
		return 0;
	cnt = calloc(a->nhosts, sizeof(*cnt));
	if (!cnt)
		return 0;
	for (uint32_t r = 0; r < a->nranks; r++) {
		if (a->host_of[r] >= a->nhosts) {
			free(cnt);
			return 0;
		}
		cnt[a->host_of[r]]++;
	}
	h0 = cnt[0];
	for (uint32_t h = 1; h < a->nhosts; h++)
		if (cnt[h] != h0)
			h0 = 0;
	free(cnt);
	return h0 >= 2 ? h0 : 0;
}

static ohc_status_t accepts(const struct ohc_coll_args *a)
{
	return per_host(a) ? OHC_OK : OHC_ERR_UNSUPPORTED;
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t p = per_host(a), H = a->nhosts, me = a->rank;
	size_t es = a->esize, bytes = a->count * es;
	struct group local = {0}, cross = {0};
	ohc_status_t status = OHC_ERR_NO_MEMORY;
	const char *sb = a->sbuf;
	char *rb = a->rbuf;
	uint32_t host, *seen = NULL, own;
	uint64_t off, cnt;

	if (!p)
		return OHC_ERR_UNSUPPORTED;
	if (bytes == 0)
		return OHC_OK;
	host = a->host_of[me];
	local.ranks = malloc(p * sizeof(uint32_t));
	cross.ranks = malloc(H * sizeof(uint32_t));
	seen = calloc(H, sizeof(uint32_t));
	if (!local.ranks || !cross.ranks || !seen)
		goto out;
	/* local group: our host's ranks ascending, we are local.me */
	for (uint32_t r = 0; r < a->nranks; r++) {
		if (a->host_of[r] != host)
			continue;
		if (r == me)
			local.me = local.n;
		local.ranks[local.n++] = r;
	}
	/* cross group: the rank with our local index on every host */
	for (uint32_t r = 0; r < a->nranks; r++)
		if (seen[a->host_of[r]]++ == local.me)
			cross.ranks[a->host_of[r]] = r;
	cross.n = H;
	cross.me = host;

	if (sb != rb && ohc_mem_overlap(sb, bytes, rb, bytes)) {
		char *t = ohc_algo_scratch(s, bytes);

		if (!t)
			goto out;
		ohc_sched_copy(s, t, sb, bytes);
		sb = t;
	}
	ring_rs(s, &local, sb, rb, a->count, es);
	own = (local.me + 1) % p;
	off = ohc_part_offset(a->count, p, own) * es;
	cnt = ohc_part_count(a->count, p, own);
	ring_rs(s, &cross, rb + off, rb + off, cnt, es);
	ring_ag(s, &cross, rb + off, cnt, es);
	ring_ag(s, &local, rb, a->count, es);
	status = OHC_OK;
out:
	free(seen);
	free(local.ranks);
	free(cross.ranks);
	return status;
}

/*
 * Intra-host phases at SHM costs, the inter-host phase at RDMA costs on
 * bytes/p: 2(p-1)a_s + 2(p-1)/p n b_s + (p-1)/p n g
 *        + 2(H-1)a_r + 2(H-1)/H (n/p) b_r + (H-1)/H (n/p) g.
 */
static double cost_topo(const struct ohc_coll_args *a, uint64_t bytes)
{
	const struct ohc_cost_params *in = ohc_cost_params_get(OHC_LINK_SHM);
	const struct ohc_cost_params *x = ohc_cost_params_get(OHC_LINK_RDMA);
	uint32_t p = per_host(a), H = a->nhosts;
	double n = (double)bytes, fl, fx;

	if (!p)
		return HUGE_VAL;
	fl = (double)(p - 1) / p * n;
	fx = (double)(H - 1) / H * (n / p);
	return 2.0 * (p - 1) * in->alpha_us + 2 * fl * in->beta_us +
	       fl * in->gamma_us + 2.0 * (H - 1) * x->alpha_us +
	       2 * fx * x->beta_us + fx * x->gamma_us;
}

const struct ohc_algo ohc_algo_allreduce_2level = {
	.name = "two_level_ring",
	.op = OHC_COLL_ALLREDUCE,
	.build = build,
	.accepts = accepts,
	.cost_topo = cost_topo,
};
