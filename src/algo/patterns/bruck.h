/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_PATTERNS_BRUCK_H
#define OHC_ALGO_PATTERNS_BRUCK_H

#include <stdint.h>

#include "algo/patterns/recursive.h"

/*
 * Bruck, ceil(log2 n) steps for any n, distance 2^k in step k.
 *
 * AllGather: rank r keeps blocks in relative order (slot i holds rank
 * (r + i) mod n's block). In step k it sends slots [0, c) to
 * (r - 2^k) mod n and receives slots [2^k, 2^k + c) from (r + 2^k) mod n,
 * c = min(2^k, n - 2^k). After the last step slot i is rank (r + i)'s
 * block: a final rotation puts it in place.
 *
 * AlltoAll: after a local rotation slot i holds the block for rank
 * (r + i) mod n. In step k every slot whose index has bit k set goes to
 * (r + 2^k) mod n, which stores it in the same slot; a block thus travels
 * i ranks in total and slot i finally holds the block from (r - i) mod n.
 */
static inline uint32_t ohc_bruck_steps(uint32_t n)
{
	return ohc_log2_ceil(n);
}

static inline uint32_t ohc_bruck_dist(uint32_t k)
{
	return 1u << k;
}

/* AllGather: slots moved in step k. */
static inline uint32_t ohc_bruck_ag_nslots(uint32_t k, uint32_t n)
{
	uint32_t d = ohc_bruck_dist(k);

	return d < n - d ? d : n - d;
}

/* AlltoAll: number of slots i in [0, n) with bit k set. */
static inline uint32_t ohc_bruck_a2a_nslots(uint32_t k, uint32_t n)
{
	uint32_t d = ohc_bruck_dist(k), full = n / (2 * d), rest = n % (2 * d);

	return full * d + (rest > d ? rest - d : 0);
}

#endif
