/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_PATTERNS_PAIRWISE_H
#define OHC_ALGO_PATTERNS_PAIRWISE_H

#include <stdint.h>

/*
 * Pairwise exchange by ring distance: in step k (0 <= k < n) rank r sends
 * to (r + k) mod n and receives from (r - k) mod n; step 0 is the rank
 * itself. A message from a to b travels in step (b - a) mod n on both
 * sides, so every step pairs up and nothing waits on a later step.
 */
static inline uint32_t ohc_pairwise_to(uint32_t r, uint32_t k, uint32_t n)
{
	return (uint32_t)(((uint64_t)r + k) % n);
}

static inline uint32_t ohc_pairwise_from(uint32_t r, uint32_t k, uint32_t n)
{
	return (uint32_t)(((uint64_t)r + n - (k % n)) % n);
}

/* Step in which rank r exchanges with peer. */
static inline uint32_t ohc_pairwise_step(uint32_t r, uint32_t peer, uint32_t n)
{
	return (uint32_t)(((uint64_t)peer + n - r) % n);
}

/*
 * AlltoAllVC -> AlltoAllV for rank `rank` (hccl_api.md 2.2): matrix is the
 * row-major n x n send-count matrix (m[i][j]: elements i sends to j).
 * sc[j] = m[rank][j], sd[j] = sum_{k<j} m[rank][k], rc[i] = m[i][rank],
 * rd[i] = sum_{k<i} m[k][rank]: packed blocks in rank order.
 */
static inline void ohc_alltoallvc_to_v(const uint64_t *matrix, uint32_t n,
				       uint32_t rank, uint64_t *sc,
				       uint64_t *sd, uint64_t *rc, uint64_t *rd)
{
	uint64_t soff = 0, roff = 0;

	for (uint32_t j = 0; j < n; j++) {
		sc[j] = matrix[(uint64_t)rank * n + j];
		sd[j] = soff;
		soff += sc[j];
		rc[j] = matrix[(uint64_t)j * n + rank];
		rd[j] = roff;
		roff += rc[j];
	}
}

#endif
