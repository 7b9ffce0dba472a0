/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_PATTERNS_CHAIN_H
#define OHC_ALGO_PATTERNS_CHAIN_H

#include <stdint.h>

/*
 * Chain over relative ranks vr = (r - root) mod n (see binomial.h for
 * the mapping): n - 1 steps. Down the chain (broadcast): in step t, vr t
 * sends to vr t + 1. Up the chain (reduce): in step t, vr n - 1 - t sends
 * to vr n - 2 - t, so vr 0 (the root) receives in the last step. Alone a
 * chain is slow (n - 1 full messages in a row); pipelined in S slices
 * (core/sched.h) it takes n - 2 + S steps of 1/S of the vector, which
 * approaches one vector's time for large vectors.
 */

/* Down: the step in which vr (> 0) receives from vr - 1; vr sends in
 * the step after it (vr 0 in step 0), unless vr == n - 1. */
static inline uint32_t ohc_chain_down_recv_step(uint32_t vr)
{
	return vr - 1;
}

/* Up: the step in which vr (< n - 1) receives from vr + 1; vr sends to
 * vr - 1 in the step after it (vr n - 1 in step 0), unless vr == 0. */
static inline uint32_t ohc_chain_up_recv_step(uint32_t vr, uint32_t n)
{
	return n - 2 - vr;
}

/* Pipelined chain: steps for n ranks and s slices. */
static inline uint32_t ohc_chain_steps(uint32_t n, uint32_t s)
{
	return n < 2 ? 0 : n - 2 + s;
}

#endif
