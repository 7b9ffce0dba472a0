/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_COMPILER_H
#define OHC_UTIL_COMPILER_H

#include <stddef.h>

#define OHC_API __attribute__((visibility("default")))
#define OHC_LIKELY(x) __builtin_expect(!!(x), 1)
#define OHC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define OHC_UNUSED __attribute__((unused))
#define OHC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define OHC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define OHC_CACHELINE 64

#define OHC_MIN(a, b) ((a) < (b) ? (a) : (b))
#define OHC_MAX(a, b) ((a) > (b) ? (a) : (b))
#define OHC_ALIGN_UP(x, a) ((((x) + (a)-1) / (a)) * (a))

#define ohc_container_of(ptr, type, member)                                    \
	((type *)((char *)(ptr)-offsetof(type, member)))

/* Downcast from an embedded `super` that must sit at offset 0. */
#define ohc_derived_of(ptr, type)                                              \
	({                                                                     \
		_Static_assert(offsetof(type, super) == 0,                     \
			       "super must be the first member");              \
		(type *)(ptr);                                                 \
	})

/*
 * One turn of a spin loop: tells the core it is spinning (x86 PAUSE, Arm
 * YIELD), so that the line it polls is not pulled away from the writer on
 * every iteration and the exit from the loop does not flush the pipeline.
 */
static inline void ohc_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif
