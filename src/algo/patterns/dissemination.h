/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_PATTERNS_DISSEMINATION_H
#define OHC_ALGO_PATTERNS_DISSEMINATION_H

#include <stdint.h>

/*
 * Dissemination barrier: ceil(log2 n) rounds; in round k rank r signals
 * (r + 2^k) mod n and waits for (r - 2^k) mod n.
 */
static inline uint32_t ohc_dissem_rounds(uint32_t n)
{
	uint32_t k = 0;

	while ((1ull << k) < n)
		k++;
	return k;
}

static inline uint32_t ohc_dissem_to(uint32_t r, uint32_t k, uint32_t n)
{
	return (uint32_t)(((uint64_t)r + (1ull << k)) % n);
}

static inline uint32_t ohc_dissem_from(uint32_t r, uint32_t k, uint32_t n)
{
	return (uint32_t)(((uint64_t)r + n - ((1ull << k) % n)) % n);
}

#endif
