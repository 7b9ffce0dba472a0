/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_PATTERNS_RECURSIVE_H
#define OHC_ALGO_PATTERNS_RECURSIVE_H

#include <stdint.h>

/*
 * Powers of two and the fold of a non-power-of-two rank count onto one
 * (recursive doubling, recursive halving). With pof2 the largest power of
 * two <= n and rem = n - pof2, the first 2*rem ranks pair up as (even,
 * odd): the even rank is folded into its odd neighbour and sits out; the
 * others take part under a "new rank" in [0, pof2): odd r < 2*rem is
 * r / 2, r >= 2*rem is r - rem. New ranks keep the order of the ranks
 * they stand for, so a fold followed by rank-ordered combining still
 * combines in rank order.
 */
#define OHC_FOLDED UINT32_MAX

static inline uint32_t ohc_log2_floor(uint32_t n)
{
	uint32_t k = 0;

	while (k < 31 && (2u << k) <= n)
		k++;
	return k;
}

static inline uint32_t ohc_log2_ceil(uint32_t n)
{
	uint32_t k = 0;

	while ((1ull << k) < n)
		k++;
	return k;
}

static inline uint32_t ohc_pof2_floor(uint32_t n)
{
	return n ? 1u << ohc_log2_floor(n) : 0;
}

static inline int ohc_is_pof2(uint32_t n)
{
	return n && !(n & (n - 1));
}

/* New rank of r, or OHC_FOLDED for an even rank folded into r + 1. */
static inline uint32_t ohc_fold_newrank(uint32_t r, uint32_t n)
{
	uint32_t rem = n - ohc_pof2_floor(n);

	if (r < 2 * rem)
		return (r & 1) ? r / 2 : OHC_FOLDED;
	return r - rem;
}

/* The rank standing for new rank nr (inverse of ohc_fold_newrank). */
static inline uint32_t ohc_fold_rank(uint32_t nr, uint32_t n)
{
	uint32_t rem = n - ohc_pof2_floor(n);

	return nr < rem ? 2 * nr + 1 : nr + rem;
}

#endif
