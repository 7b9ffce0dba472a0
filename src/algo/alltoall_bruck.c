/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"
#include "algo/patterns/bruck.h"

/*
 * Bruck alltoall for small blocks: ceil(log2 n) steps instead of n-1
 * (patterns/bruck.h). Blocks are rotated into scratch slots (slot i for
 * rank r + i); in step k the slots whose index has bit k set are packed,
 * sent to r + 2^k, received from r - 2^k and unpacked into the same slots
 * at the start of the next step; finally slot i, now the block of rank
 * r - i, is copied to its place. Each step moves about half of the
 * buffer, so it pays log2(n)/2 times the bytes of pairwise exchange for
 * fewer messages. The send buffer is read once at the start: any overlap
 * with the receive buffer is harmless. No reduction.
 */
static void slots_with_bit(struct ohc_sched *s, char *t, char *pk, uint32_t k,
			   uint32_t n, uint64_t blk, int unpack)
{
	uint32_t d = ohc_bruck_dist(k);
	uint64_t at = 0;

	for (uint32_t base = d; base < n; base += 2 * d) {
		uint32_t end = base + d < n ? base + d : n;
		uint64_t len = (uint64_t)(end - base) * blk;

		if (unpack)
			ohc_sched_copy(s, t + base * blk, pk + at, len);
		else
			ohc_sched_copy(s, pk + at, t + base * blk, len);
		at += len;
	}
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank, steps = ohc_bruck_steps(n);
	uint64_t blk = a->count * a->esize, most = 0;
	const char *sb = a->sbuf;
	char *rb = a->rbuf, *t, *pk, *rv;

	if (blk == 0)
		return OHC_OK;
	if (n == 1)
		return ohc_algo_single(s, rb, sb, blk);
	for (uint32_t k = 0; k < steps; k++)
		if (ohc_bruck_a2a_nslots(k, n) > most)
			most = ohc_bruck_a2a_nslots(k, n);
	most *= blk;
	t = ohc_algo_scratch(s, ohc_align64(n * blk) + 2 * ohc_align64(most));
	if (!t)
		return OHC_ERR_NO_MEMORY;
	pk = t + ohc_align64(n * blk);
	rv = pk + ohc_align64(most);
	ohc_sched_copy(s, t, sb + (uint64_t)r * blk, (uint64_t)(n - r) * blk);
	ohc_sched_copy(s, t + (uint64_t)(n - r) * blk, sb, (uint64_t)r * blk);
	for (uint32_t k = 0; k < steps; k++) {
		uint32_t d = ohc_bruck_dist(k);
		uint64_t len = ohc_bruck_a2a_nslots(k, n) * blk;

		if (k)
			slots_with_bit(s, t, rv, k - 1, n, blk, 1);
		slots_with_bit(s, t, pk, k, n, blk, 0);
		ohc_sched_send(s, (r + d) % n, pk, len);
		ohc_sched_recv(s, (r + n - d) % n, rv, len);
		ohc_sched_step(s);
	}
	slots_with_bit(s, t, rv, steps - 1, n, blk, 1);
	for (uint32_t i = 0; i < n; i++)
		ohc_sched_copy(s, rb + (uint64_t)((r + n - i) % n) * blk,
			       t + (uint64_t)i * blk, blk);
	ohc_sched_step(s);
	return OHC_OK;
}

/* L a + L n/2 b + (L + 2) n copy, L = ceil(log p) */
static double cost(const struct ohc_cost_params *c, uint64_t bytes, uint32_t n)
{
	double l = ohc_bruck_steps(n), nb = (double)bytes;

	return l * c->alpha_us + l * nb / 2 * c->beta_us +
	       (l + 2) * nb * c->copy_us;
}

const struct ohc_algo ohc_algo_alltoall_bruck = {
	.name = "bruck",
	.op = OHC_COLL_ALLTOALL,
	.build = build,
	.cost = cost,
};
