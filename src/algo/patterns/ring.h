/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_PATTERNS_RING_H
#define OHC_ALGO_PATTERNS_RING_H

#include <stdint.h>

/*
 * Ring rank arithmetic. Rank r sends to its right neighbour and receives
 * from its left one. In the reduce-scatter phase, at step s (0 <= s < n-1)
 * rank r sends chunk (r - s) and receives chunk (r - s - 1), so after n-1
 * steps it owns the fully reduced chunk (r + 1). In the allgather phase,
 * at step s it sends chunk (r + 1 - s) and receives chunk (r - s).
 */
static inline uint32_t ohc_ring_right(uint32_t r, uint32_t n)
{
	return (r + 1) % n;
}

static inline uint32_t ohc_ring_left(uint32_t r, uint32_t n)
{
	return (r + n - 1) % n;
}

/* (r - k) mod n for any k >= 0 */
static inline uint32_t ohc_ring_back(uint32_t r, uint32_t k, uint32_t n)
{
	return (uint32_t)(((uint64_t)r + n - (k % n)) % n);
}

static inline uint32_t ohc_ring_rs_send_chunk(uint32_t r, uint32_t s,
					      uint32_t n)
{
	return ohc_ring_back(r, s, n);
}

static inline uint32_t ohc_ring_rs_recv_chunk(uint32_t r, uint32_t s,
					      uint32_t n)
{
	return ohc_ring_back(r, s + 1, n);
}

static inline uint32_t ohc_ring_ag_send_chunk(uint32_t r, uint32_t s,
					      uint32_t n)
{
	return ohc_ring_back((r + 1) % n, s, n);
}

static inline uint32_t ohc_ring_ag_recv_chunk(uint32_t r, uint32_t s,
					      uint32_t n)
{
	return ohc_ring_back(r, s, n);
}

#endif
