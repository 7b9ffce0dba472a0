/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TOOLS_HCCL_TEST_H
#define OHC_TOOLS_HCCL_TEST_H

/*
 * A perf harness compatible with HCCL's hccl_test: same flags, same output
 * lines and columns (plus a bus-bandwidth column), result checking on by
 * default. Ranks come from mpirun when the environment shows an MPI
 * launcher and the tools were built with MPI (root info goes out with
 * MPI_Bcast, as in hccl_test), else from a built-in local launcher (-np N:
 * fork N ranks, root info shared in memory).
 *
 * Each tool (one per collective) is a small file: how its buffers are
 * sized, what its inputs are, the call, and what every result element must
 * be. Everything else (sweep, timing, checking, output) is here.
 */
#include <stddef.h>
#include <stdint.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

struct ht_opts {
	uint64_t minbytes, maxbytes, stepbytes;
	double stepfactor;
	HcclReduceOp op;
	uint32_t root;
	HcclDataType dtype;
	/* npus: -p, devices per node (0: the runtime's device count) */
	int iters, warmup, check, npus, nranks;
	/*
	 * -z 1: buffers in VMM memory, activated for zero copy
	 * (HcclCommSetMemoryRange + HcclCommActivateCommMemory); -m 1: VMM
	 * memory registered as symmetric windows (HcclCommSymWinRegister)
	 */
	int zero_copy, symmetric;
	/* testing aid (--corrupt_rank R): rank R flips a result byte */
	int corrupt_rank;
	/* --bind none: -np leaves the ranks unbound */
	int no_bind;
	/* testing aid (--kill_rank R): rank R kills itself (SIGKILL) */
	int kill_rank;
	/* --touch_input 1: the send buffer written again before each call */
	int touch;
	/* --json FILE / --csv FILE ("-": stdout): rank 0 writes the rows */
	const char *json_path, *csv_path;
	/* which launcher started the ranks: "local", "mpi", "pmi" */
	const char *launcher;
};

/* How a data size maps to the per-rank send and receive element counts. */
enum ht_sizing {
	HT_SIZE_SAME,	  /* send = recv = count (AllReduce, Bcast, Reduce) */
	HT_SIZE_GATHER,	  /* send = ceil(count / n), recv = send * n */
	HT_SIZE_SCATTER,  /* recv = ceil(count / n), send = recv * n */
	HT_SIZE_ALLTOALL, /* send = recv = count rounded up to n blocks */
};

/* busbw = algbw * factor(n), the nccl-tests definitions */
enum ht_busbw {
	HT_BUS_DEFAULT,	  /* 1 for HT_SIZE_SAME, else (n - 1) / n */
	HT_BUS_ALLREDUCE, /* 2 (n - 1) / n */
};

/* One rank's view of one size, set up by the harness. */
struct ht_ctx {
	const struct ht_opts *o;
	int rank, nranks;
	uint64_t send_count, recv_count; /* elements per buffer */
	uint64_t block;			 /* elements per peer block */
	void *send, *recv;		 /* device buffers */
	/* --touch_input: what is copied into send before each call */
	const void *touch_src;
	/* scratch for the V ops: nranks * nranks counts, nranks displs */
	uint64_t *counts, *displs;
	HcclComm comm;
	aclrtStream stream;
};

/* One collective's test. */
struct ht_test {
	const char *name;
	enum ht_sizing sizing;
	enum ht_busbw busbw;
	/* reduction: takes -o, every input element is 2 */
	int reduce;
	/* the result is in the send buffer (Broadcast) */
	int in_place;
	/*
	 * Value of send element i on this rank. NULL: 2 for a reduction,
	 * else this rank's own pattern.
	 */
	double (*input)(const struct ht_ctx *c, uint64_t i);
	/*
	 * Value result element i must have; NAN: not checked here. NULL: the
	 * reduction of the 2s, or for HT_SIZE_GATHER block j is rank j's
	 * pattern, for HT_SIZE_ALLTOALL block j is rank j's block for us.
	 */
	double (*expect)(const struct ht_ctx *c, uint64_t i);
	HcclResult (*run)(struct ht_ctx *c);
};

/* A tool's whole main: HT_TOOL(.name = "x_test", .run = run, ...); */
#define HT_TOOL(...)                                                           \
	static const struct ht_test ht_tool = {__VA_ARGS__};                   \
	int main(int argc, char **argv)                                        \
	{                                                                      \
		return ht_main(argc, argv, &ht_tool);                          \
	}

int ht_main(int argc, char **argv, const struct ht_test *test);
size_t ht_dtype_size(HcclDataType t);
/* Store/load element i of a buffer of type t as a double. */
void ht_store(void *buf, HcclDataType t, uint64_t i, double v);
double ht_load(const void *buf, HcclDataType t, uint64_t i);

/*
 * Data patterns shared by the tools. ht_pattern(src, i) is element i of
 * rank src's data: small integers, exact in every type, that differ
 * between ranks and between neighbouring elements.
 */
double ht_pattern(int src, uint64_t i);
/* the root's pattern on the root, zero elsewhere */
double ht_input_root(const struct ht_ctx *c, uint64_t i);
/* the reduction of every rank's 2s (sum 2n, prod 2^n, max/min 2) */
double ht_expect_reduced(const struct ht_ctx *c, uint64_t i);
/* fill c->counts[0..n-1] with c->block and c->displs with j * block */
void ht_uniform_v(struct ht_ctx *c);

#endif
