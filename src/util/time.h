/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_TIME_H
#define OHC_UTIL_TIME_H

#include <stdint.h>
#include <time.h>

/* Monotonic clock in nanoseconds. */
static inline uint64_t ohc_time_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Deadlines: absolute ohc_time_ns() values; OHC_DEADLINE_NEVER never expires. */
#define OHC_DEADLINE_NEVER UINT64_MAX

static inline uint64_t ohc_deadline_after_ms(uint64_t ms)
{
	if (ms == 0 || ms >= UINT64_MAX / 2000000ull)
		return OHC_DEADLINE_NEVER;
	return ohc_time_ns() + ms * 1000000ull;
}

/* Milliseconds left before the deadline, clamped to [0, cap_ms]. */
static inline int ohc_deadline_left_ms(uint64_t deadline, int cap_ms)
{
	uint64_t now;

	if (deadline == OHC_DEADLINE_NEVER)
		return cap_ms;
	now = ohc_time_ns();
	if (now >= deadline)
		return 0;
	if ((deadline - now) / 1000000ull >= (uint64_t)cap_ms)
		return cap_ms;
	return (int)((deadline - now + 999999ull) / 1000000ull);
}

static inline int ohc_deadline_passed(uint64_t deadline)
{
	return deadline != OHC_DEADLINE_NEVER && ohc_time_ns() >= deadline;
}

#endif
