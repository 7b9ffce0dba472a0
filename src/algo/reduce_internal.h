/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_REDUCE_INTERNAL_H
#define OHC_ALGO_REDUCE_INTERNAL_H

#include <string.h>

#include "algo/reduce.h"

/*
 * Kernel tables of one ISA, indexed [dtype][op]. A NULL slot means "this
 * ISA has no special kernel": the getters fall back to the next lower ISA.
 * The generic table has a kernel for every supported pair.
 */
struct ohc_reduce_table {
	ohc_reduce_fn fn[OHC_DTYPE_COUNT][OHC_REDOP_COUNT];
	ohc_reduce_n_fn n_fn[OHC_DTYPE_COUNT][OHC_REDOP_COUNT];
};

extern const struct ohc_reduce_table ohc_reduce_generic_table;
extern const struct ohc_reduce_table ohc_reduce_avx2_table;
extern const struct ohc_reduce_table ohc_reduce_avx512_table;

/*
 * Defines the pairwise kernel NAME and the n-way kernel NAME##_n for one
 * vector ISA. T is the element type in memory, V the vector type the
 * arithmetic runs in, W the elements per vector. ATTR carries the target
 * attribute. LD(p) loads W elements at p (any alignment) and widens them to
 * V; ST(p, v) narrows v and stores W elements at p; OP(x, y) combines.
 * Every element goes through the same vector code: a tail shorter than W
 * is staged through a zero-padded 64-byte scratch buffer (a vector is at
 * most 64 bytes in memory): PART_IN(buf, src, n) fills buf with src's n
 * bytes and zeros, PART_OUT(dst, buf, n) writes buf's first n bytes to
 * dst. Exact aliasing of dst with a source is safe because each vector is
 * loaded before its store.
 */
#define OHC_REDUCE_SIMD_PART(ATTR, NAME, T, V, W, LD, ST, OP, PART_IN,         \
			     PART_OUT)                                         \
	static ATTR void NAME(void *dst, const void *a, const void *b,         \
			      size_t count)                                    \
	{                                                                      \
		T *d = dst;                                                    \
		const T *x = a, *y = b;                                        \
		size_t i = 0;                                                  \
                                                                               \
		for (; i + 2 * (W) <= count; i += 2 * (W)) {                   \
			V r0 = OP(LD(x + i), LD(y + i));                       \
			V r1 = OP(LD(x + i + (W)), LD(y + i + (W)));           \
			ST(d + i, r0);                                         \
			ST(d + i + (W), r1);                                   \
		}                                                              \
		for (; i + (W) <= count; i += (W))                             \
			ST(d + i, OP(LD(x + i), LD(y + i)));                   \
		if (i < count) {                                               \
			_Alignas(64) T tx[64 / sizeof(T)];                     \
			_Alignas(64) T ty[64 / sizeof(T)];                     \
			_Alignas(64) T td[64 / sizeof(T)];                     \
			size_t rest = (count - i) * sizeof(T);                 \
                                                                               \
			PART_IN(tx, x + i, rest);                              \
			PART_IN(ty, y + i, rest);                              \
			ST(td, OP(LD(tx), LD(ty)));                            \
			PART_OUT(d + i, td, rest);                             \
		}                                                              \
	}                                                                      \
                                                                               \
	static ATTR void NAME##_n(void *dst, const void *const *srcs,          \
				  unsigned n, size_t count)                    \
	{                                                                      \
		T *d = dst;                                                    \
		const T *s0 = srcs[0];                                         \
		size_t i = 0;                                                  \
		unsigned k;                                                    \
                                                                               \
		if (n == 1) {                                                  \
			if (dst != s0)                                         \
				memcpy(dst, s0, count * sizeof(T));            \
			return;                                                \
		}                                                              \
		for (; i + 2 * (W) <= count; i += 2 * (W)) {                   \
			V r0 = LD(s0 + i);                                     \
			V r1 = LD(s0 + i + (W));                               \
                                                                               \
			for (k = 1; k < n; k++) {                              \
				const T *s = (const T *)srcs[k] + i;           \
                                                                               \
				r0 = OP(r0, LD(s));                            \
				r1 = OP(r1, LD(s + (W)));                      \
			}                                                      \
			ST(d + i, r0);                                         \
			ST(d + i + (W), r1);                                   \
		}                                                              \
		for (; i + (W) <= count; i += (W)) {                           \
			V r = LD(s0 + i);                                      \
                                                                               \
			for (k = 1; k < n; k++)                                \
				r = OP(r, LD((const T *)srcs[k] + i));         \
			ST(d + i, r);                                          \
		}                                                              \
		if (i < count) {                                               \
			_Alignas(64) T tx[64 / sizeof(T)];                     \
			_Alignas(64) T td[64 / sizeof(T)];                     \
			size_t rest = (count - i) * sizeof(T);                 \
			V r;                                                   \
                                                                               \
			PART_IN(tx, s0 + i, rest);                             \
			r = LD(tx);                                            \
			for (k = 1; k < n; k++) {                              \
				PART_IN(tx, (const T *)srcs[k] + i, rest);     \
				r = OP(r, LD(tx));                             \
			}                                                      \
			ST(td, r);                                             \
			PART_OUT(d + i, td, rest);                             \
		}                                                              \
	}

/* The scratch buffer of a tail by plain copies (any ISA). */
static inline void ohc_reduce_part_in(void *buf64, const void *src, size_t n)
{
	memset(buf64, 0, 64);
	memcpy(buf64, src, n);
}

static inline void ohc_reduce_part_out(void *dst, const void *buf64, size_t n)
{
	memcpy(dst, buf64, n);
}

#define OHC_REDUCE_SIMD(ATTR, NAME, T, V, W, LD, ST, OP)                       \
	OHC_REDUCE_SIMD_PART(ATTR, NAME, T, V, W, LD, ST, OP,                  \
			     ohc_reduce_part_in, ohc_reduce_part_out)

/* Table slot initialisers for a kernel pair made by OHC_REDUCE_SIMD. */
#define OHC_REDUCE_SLOT(DT, OP, NAME) [DT][OP] = NAME
#define OHC_REDUCE_N_SLOT(DT, OP, NAME) [DT][OP] = NAME##_n

#endif
