/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TOOLS_HCCL_TEST_H
#define OHC_TOOLS_HCCL_TEST_H

/*
 * A perf harness compatible with HCCL's hccl_test: same flags, same output
 * lines and columns (plus a bus-bandwidth column), result checking on by
 * default. Ranks come from a built-in local launcher (-np N: fork N ranks,
 * root info shared in memory), so nothing else is needed to run it.
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
	int iters, warmup, check, npus, nranks;
};

/* One collective's test: sizes, inputs, the call, the expected output. */
struct ht_test {
	const char *name;
	int is_reduce;
	/* busbw = algbw * factor(n) (nccl-tests definitions) */
	double (*busbw_factor)(int nranks);
	/* element counts for a data size in bytes */
	void (*counts)(const struct ht_opts *o, uint64_t bytes,
		       uint64_t *send_count, uint64_t *recv_count);
	/* bytes S used for alg_bandwidth = S / time */
	uint64_t (*alg_bytes)(const struct ht_opts *o, uint64_t send_count,
			      uint64_t recv_count);
	void (*fill)(const struct ht_opts *o, int rank, void *host,
		     uint64_t send_count);
	HcclResult (*run)(const struct ht_opts *o, void *send, void *recv,
			  uint64_t send_count, HcclComm comm,
			  aclrtStream stream);
	/* 0 if recv (host copy) is right for this rank */
	int (*check)(const struct ht_opts *o, int rank, const void *recv,
		     uint64_t recv_count);
};

int ht_main(int argc, char **argv, const struct ht_test *test);
size_t ht_dtype_size(HcclDataType t);
/* Store/load element i of a buffer of type t as a double. */
void ht_store(void *buf, HcclDataType t, uint64_t i, double v);
double ht_load(const void *buf, HcclDataType t, uint64_t i);

#endif
