/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_BENCH_PEER_COMMON_H
#define OHC_BENCH_PEER_COMMON_H

/*
 * What the peer programs of bench/compare.sh share with OpenHCCL's
 * hccl_test tools, so their rows compare line by line: the collectives,
 * how a data size becomes per-rank fp32 counts (tools/hccl_test), the
 * alg_bandwidth bytes S and the busbw factors (nccl-tests), and the
 * output columns. C and C++ (the Gloo peer) alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum peer_op {
	PEER_ALLREDUCE,
	PEER_ALLGATHER,
	PEER_REDUCE_SCATTER,
	PEER_BROADCAST,
	PEER_REDUCE,
	PEER_ALLTOALL,
	PEER_NOPS
};

static const char *const peer_op_names[PEER_NOPS] = {
	"allreduce", "allgather", "reduce_scatter",
	"broadcast", "reduce",    "alltoall",
};

/* -1 if name is no collective we compare */
static inline int peer_op_parse(const char *name)
{
	for (int k = 0; k < PEER_NOPS; k++)
		if (!strcmp(name, peer_op_names[k]))
			return k;
	return -1;
}

/* fp32 elements per rank for a data size; block = elements per peer. */
struct peer_counts {
	unsigned long long send, recv, block;
};

static inline struct peer_counts peer_sizing(int op, unsigned long long bytes,
					     int n)
{
	unsigned long long count = (bytes + 3) / 4, nn = (unsigned long long)n;
	unsigned long long blk = (count + nn - 1) / nn;
	struct peer_counts c = {count, count, count};

	if (op == PEER_ALLGATHER) {
		c.send = c.block = blk;
		c.recv = blk * nn;
	} else if (op == PEER_REDUCE_SCATTER) {
		c.recv = c.block = blk;
		c.send = blk * nn;
	} else if (op == PEER_ALLTOALL) {
		c.block = blk;
		c.send = c.recv = blk * nn;
	}
	return c;
}

static inline double peer_busbw_factor(int op, int n)
{
	if (n <= 1 || op == PEER_BROADCAST || op == PEER_REDUCE)
		return 1.0;
	return (op == PEER_ALLREDUCE ? 2.0 : 1.0) * (n - 1) / n;
}

static inline void peer_print_header(void)
{
	printf("%-15s | %-12s | %-18s | %-13s | %s\n", "data_size(Bytes):",
	       "aveg_time(us):", "alg_bandwidth(GB/s):", "check_result:",
	       "bus_bandwidth(GB/s):");
	fflush(stdout);
}

static inline void peer_print_row(int op, int n, unsigned long long bytes,
				  double us, int ok)
{
	struct peer_counts c = peer_sizing(op, bytes, n);
	unsigned long long s = c.send > c.recv ? c.send : c.recv;
	double algbw = us > 0 ? (double)s * 4 / us * 1e-3 : 0;

	printf("%-17llu | %-14.2f | %-20.5f | %-13s | %.5f\n", bytes, us,
	       algbw, ok ? "success" : "failed",
	       algbw * peer_busbw_factor(op, n));
	fflush(stdout);
}

/*
 * OHC_BENCH_TOUCH=1 (bench/compare.sh -F, bench/scaling.sh -F): the
 * input is written again, copied from a pristine copy, before each timed
 * call, as hccl_test's --touch_input 1 does for OpenHCCL: data fresh from
 * the CPU, as an application's is, instead of unchanged since the last
 * call (which a single-copy path then reads out of the reader's own
 * cache). The copy's time counts on both sides.
 */
static inline int peer_touch(void)
{
	const char *e = getenv("OHC_BENCH_TOUCH");

	return e && !strcmp(e, "1");
}

/* Input element i of rank r: 2 for reductions, else r + 1. */
static inline float peer_input(int op, int r)
{
	if (op == PEER_ALLREDUCE || op == PEER_REDUCE ||
	    op == PEER_REDUCE_SCATTER)
		return 2.0f;
	return (float)(r + 1);
}

/*
 * Whether result element i is right on rank r (root 0). The reductions
 * sum 2s; gathers and all-to-all hold the sender's r + 1 in block j.
 */
static inline int peer_result_ok(int op, int r, int n, unsigned long long i,
				 unsigned long long block, float v)
{
	switch (op) {
	case PEER_ALLREDUCE:
	case PEER_REDUCE_SCATTER:
		return v == 2.0f * (float)n;
	case PEER_REDUCE:
		return r != 0 || v == 2.0f * (float)n;
	case PEER_BROADCAST:
		return v == 1.0f;
	default:
		return v == (float)(i / block + 1);
	}
}

#endif
