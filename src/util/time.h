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

/*
 * The same monotonic clock, as of the last kernel tick: at most one tick
 * (1-10 ms) behind ohc_time_ns(), never ahead of it. The vDSO answers it
 * from memory on every clocksource, whereas ohc_time_ns() is a system call
 * plus a device read where the clocksource has no vDSO reader (HPET, as in
 * the TCG CI VMs). For the start of second-scale timeouts only.
 */
static inline uint64_t ohc_time_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Deadlines: absolute ohc_time_ns() values; OHC_DEADLINE_NEVER never expires. */
#define OHC_DEADLINE_NEVER UINT64_MAX

/* Longest kernel tick (HZ >= 100): how far the coarse clock may lag. */
#define OHC_TIME_COARSE_LAG_NS 10000000ull

static inline uint64_t ohc_deadline_after_ms(uint64_t ms)
{
	if (ms == 0 || ms >= UINT64_MAX / 2000000ull)
		return OHC_DEADLINE_NEVER;
	return ohc_time_ns() + ms * 1000000ull;
}

/*
 * A deadline ms from now read on the coarse clock: no clocksource read, and
 * never earlier than ohc_deadline_after_ms() (the tick the coarse clock may
 * lag is added), at most ~10 ms later. Checked like any deadline.
 */
static inline uint64_t ohc_deadline_coarse_after_ms(uint64_t ms)
{
	if (ms == 0 || ms >= UINT64_MAX / 2000000ull)
		return OHC_DEADLINE_NEVER;
	return ohc_time_coarse_ns() + OHC_TIME_COARSE_LAG_NS + ms * 1000000ull;
}

/* Milliseconds left at time now (an ohc_time_ns() value) before the
 * deadline, clamped to [0, cap_ms]. */
static inline int ohc_deadline_left_ms_at(uint64_t deadline, uint64_t now,
					  int cap_ms)
{
	if (deadline == OHC_DEADLINE_NEVER)
		return cap_ms;
	if (now >= deadline)
		return 0;
	if ((deadline - now) / 1000000ull >= (uint64_t)cap_ms)
		return cap_ms;
	return (int)((deadline - now + 999999ull) / 1000000ull);
}

/* Milliseconds left before the deadline, clamped to [0, cap_ms]. */
static inline int ohc_deadline_left_ms(uint64_t deadline, int cap_ms)
{
	if (deadline == OHC_DEADLINE_NEVER)
		return cap_ms;
	return ohc_deadline_left_ms_at(deadline, ohc_time_ns(), cap_ms);
}

/* The deadline has passed at time now (an ohc_time_ns() value). */
static inline int ohc_deadline_passed_at(uint64_t deadline, uint64_t now)
{
	return deadline != OHC_DEADLINE_NEVER && now >= deadline;
}

static inline int ohc_deadline_passed(uint64_t deadline)
{
	return deadline != OHC_DEADLINE_NEVER &&
	       ohc_deadline_passed_at(deadline, ohc_time_ns());
}

#endif
