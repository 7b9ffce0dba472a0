/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_PATTERNS_BINOMIAL_H
#define OHC_ALGO_PATTERNS_BINOMIAL_H

#include <stdint.h>

#include "algo/patterns/recursive.h"

/*
 * Binomial tree over relative ranks vr = (r - root) mod n, root vr 0, with
 * contiguous subtrees: the parent of vr is vr with its lowest set bit
 * cleared, and the subtree of vr is [vr, vr + size) with size
 * min(lowbit(vr), n - vr) (n for the root). It has R = ceil(log2 n)
 * rounds. Top-down (broadcast, scatter): in round t, with mask
 * 2^(R-1-t), every vr that is a multiple of 2*mask sends to vr + mask
 * when that is < n. Bottom-up (reduce, gather): in round k, with mask
 * 2^k, every vr whose lowest set bit is mask sends to vr - mask.
 */
static inline uint32_t ohc_binom_vrank(uint32_t r, uint32_t root, uint32_t n)
{
	return (uint32_t)(((uint64_t)r + n - root) % n);
}

static inline uint32_t ohc_binom_rank(uint32_t vr, uint32_t root, uint32_t n)
{
	return (uint32_t)(((uint64_t)vr + root) % n);
}

static inline uint32_t ohc_binom_rounds(uint32_t n)
{
	return ohc_log2_ceil(n);
}

static inline uint32_t ohc_binom_lowbit(uint32_t vr)
{
	return vr & (~vr + 1);
}

static inline uint32_t ohc_binom_parent(uint32_t vr)
{
	return vr & (vr - 1);
}

static inline uint32_t ohc_binom_subtree(uint32_t vr, uint32_t n)
{
	uint32_t lb = ohc_binom_lowbit(vr);

	if (vr == 0)
		return n;
	return lb < n - vr ? lb : n - vr;
}

/* Mask of top-down round t: 2^(R-1-t). */
static inline uint32_t ohc_binom_td_mask(uint32_t t, uint32_t n)
{
	return 1u << (ohc_binom_rounds(n) - 1 - t);
}

/* Top-down round t: the child vr sends to, or 0 if none. */
static inline uint32_t ohc_binom_td_child(uint32_t vr, uint32_t t, uint32_t n)
{
	uint32_t mask = ohc_binom_td_mask(t, n);

	if (vr % (2 * mask) == 0 && vr + mask < n)
		return vr + mask;
	return 0;
}

/* Top-down round in which vr (!= 0) receives from its parent. */
static inline uint32_t ohc_binom_td_recv_round(uint32_t vr, uint32_t n)
{
	return ohc_binom_rounds(n) - 1 - ohc_log2_floor(ohc_binom_lowbit(vr));
}

#endif
