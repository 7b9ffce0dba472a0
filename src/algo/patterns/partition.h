/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_PATTERNS_PARTITION_H
#define OHC_ALGO_PATTERNS_PARTITION_H

#include <stdint.h>

/*
 * Split count elements into n nearly equal parts: the first count % n parts
 * get one extra element. Pure functions, no transport.
 */
static inline uint64_t ohc_part_count(uint64_t count, uint32_t n, uint32_t i)
{
	return count / n + (i < count % n ? 1 : 0);
}

static inline uint64_t ohc_part_offset(uint64_t count, uint32_t n, uint32_t i)
{
	uint64_t q = count / n, r = count % n;

	return (uint64_t)i * q + (i < r ? i : r);
}

#endif
