/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_REDUCE_H
#define OHC_ALGO_REDUCE_H

#include <stddef.h>

#include "algo/dtype.h"
#include "util/status.h"

/*
 * Element-wise reduction kernels for every supported (dtype, op) pair
 * (ohc_reduce_supported()). Semantics, identical on every ISA:
 * - integers wrap around (two's complement);
 * - fp32/fp64 sum and prod are plain IEEE operations (round to nearest);
 * - fp16/bf16 are widened to fp32, combined in fp32 and rounded back to
 *   nearest-even (overflow gives infinity, subnormals are exact);
 * - float max/min are IEEE 754-2019 maximum/minimum: a NaN operand gives a
 *   NaN result, and -0 < +0, so they are commutative;
 * - NaN results are quiet NaNs; when both operands of a sum or product are
 *   NaN, which one's sign and payload survive is not specified.
 * Kernels are pure functions of their inputs: no state, no locks, safe to
 * call from any thread. Buffers need no alignment beyond the element's.
 */

/*
 * dst[i] = a[i] OP b[i] for i < count. dst may alias a or b exactly (the
 * same address), not partially.
 */
typedef void (*ohc_reduce_fn)(void *dst, const void *a, const void *b,
			      size_t count);

/*
 * dst[i] = srcs[0][i] OP srcs[1][i] OP ... OP srcs[n-1][i], folded strictly
 * in index order, in one pass over memory (n reads, one write). n >= 1.
 * dst may alias any srcs[k] exactly. fp16/bf16 accumulate all n inputs in
 * fp32 and round once per element; for every other type the result is
 * bitwise that of the pairwise fold ((s0 OP s1) OP s2) ... n == 1 copies
 * srcs[0] unchanged (no rounding, NaNs not quieted).
 */
typedef void (*ohc_reduce_n_fn)(void *dst, const void *const *srcs, unsigned n,
				size_t count);

/* The kernel for (dtype, op) on the selected ISA; NULL when unsupported. */
ohc_reduce_fn ohc_reduce_get(int dtype, int op);
ohc_reduce_n_fn ohc_reduce_n_get(int dtype, int op);

/* "avx512", "avx2" or "generic": the ISA the getters currently pick from. */
const char *ohc_reduce_isa(void);

/* True when this CPU (and OS) can run kernels of the named ISA. */
bool ohc_reduce_isa_available(const char *isa);

/*
 * TEST-ONLY hook: make the getters pick kernels of `isa` ("generic",
 * "avx2", "avx512") from now on; NULL restores the automatic choice (the
 * best the CPU supports). Kernels fetched earlier are unaffected. Returns
 * OHC_ERR_INVALID for an unknown name, OHC_ERR_UNSUPPORTED when the CPU
 * cannot run it (nothing changes then). Not for production code paths.
 */
ohc_status_t ohc_reduce_force_isa(const char *isa);

#endif
