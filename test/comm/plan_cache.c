/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The communicator's schedule cache (src/comm/plan_cache.h): a loop that
 * repeats calls on the same buffers reuses their schedules, with fresh
 * data every time; calls that differ in count, buffers, in-place-ness or
 * root get schedules of their own; large calls are never cached. Real
 * processes over shared memory, operations on a stream.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "comm/comm.h"
#include "helpers/ohc_test.h"

enum { ITERS = 40, N = 1000, BIG = 1 << 20 };

static int sync_ok(HcclResult ret, aclrtStream stream)
{
	return ret == HCCL_SUCCESS && aclrtSynchronizeStream(stream) == 0;
}

/* One iteration's calls; returns the number of wrong results. */
static int iteration(HcclComm comm, aclrtStream stream, int rank,
		     int nranks, int it, float *a, float *b, float *want)
{
	const HcclDataType f = HCCL_DATA_TYPE_FP32;
	const HcclReduceOp sum = HCCL_REDUCE_SUM;
	int bad = 0, root = it % nranks;

	/* out of place, A -> B */
	ohc_test_fill(a, f, sum, rank, N, it);
	if (!sync_ok(HcclAllReduce(a, b, N, f, sum, comm, stream), stream))
		return 1;
	ohc_test_expect(want, f, sum, nranks, N, it);
	bad += ohc_test_compare(b, want, f, N) >= 0;

	/* in place on A */
	ohc_test_fill(a, f, sum, rank, N, it + 1000);
	if (!sync_ok(HcclAllReduce(a, a, N, f, sum, comm, stream), stream))
		return bad + 1;
	ohc_test_expect(want, f, sum, nranks, N, it + 1000);
	bad += ohc_test_compare(a, want, f, N) >= 0;

	/* another count on the same buffers */
	ohc_test_fill(a, f, sum, rank, N - 1, it + 2000);
	if (!sync_ok(HcclAllReduce(a, b, N - 1, f, sum, comm, stream), stream))
		return bad + 1;
	ohc_test_expect(want, f, sum, nranks, N - 1, it + 2000);
	bad += ohc_test_compare(b, want, f, N - 1) >= 0;

	/* a root that changes every iteration */
	ohc_test_fill(want, f, sum, root, N, it + 3000);
	if (rank == root)
		memcpy(b, want, N * sizeof(float));
	else
		memset(b, 0x5a, N * sizeof(float));
	if (!sync_ok(HcclBroadcast(b, N, f, (uint32_t)root, comm, stream),
		     stream))
		return bad + 1;
	bad += ohc_test_compare(b, want, f, N) >= 0;
	return bad;
}

static int rank_main(int rank, int nranks, void *arg)
{
	HcclRootInfo *root = arg;
	float *a = malloc(BIG * sizeof(float)), *b = malloc(BIG * sizeof(float));
	float *want = malloc(BIG * sizeof(float));
	struct ohc_plan_cache *pc;
	aclrtStream stream = NULL;
	uint64_t hits, misses;
	HcclComm comm;
	int bad = 0;

	if (!a || !b || !want || aclInit(NULL) || aclrtSetDevice(rank) ||
	    aclrtCreateStream(&stream) ||
	    HcclCommInitRootInfo(nranks, root, rank, &comm) != HCCL_SUCCESS)
		return 1;
	pc = &ohc_comm_lookup(comm)->plans;
	for (int it = 0; it < ITERS; it++)
		bad += iteration(comm, stream, rank, nranks, it, a, b, want);

	/* 3 AllReduce shapes + one Broadcast per root: all fit the cache */
	hits = pc->hits;
	misses = pc->misses;
	if (misses != 3 + (uint64_t)nranks ||
	    hits != 4 * ITERS - misses) {
		fprintf(stderr,
			"rank %d: schedules built %llu times, reused %llu "
			"(want %d and %d)\n",
			rank, (unsigned long long)misses,
			(unsigned long long)hits, 3 + nranks,
			4 * ITERS - 3 - nranks);
		bad++;
	}

	/* a large operation is built every time and not kept */
	for (int it = 0; it < 2; it++) {
		ohc_test_fill(a, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, rank,
			      BIG, it);
		if (!sync_ok(HcclAllReduce(a, b, BIG, HCCL_DATA_TYPE_FP32,
					   HCCL_REDUCE_SUM, comm, stream),
			     stream)) {
			bad++;
			break;
		}
		ohc_test_expect(want, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
				nranks, BIG, it);
		bad += ohc_test_compare(b, want, HCCL_DATA_TYPE_FP32, BIG) >= 0;
	}
	if (pc->hits != hits || pc->misses != misses) {
		fprintf(stderr, "rank %d: a large AllReduce touched the "
				"schedule cache\n",
			rank);
		bad++;
	}
	if (HcclCommDestroy(comm) != HCCL_SUCCESS)
		bad++;
	aclrtDestroyStream(stream);
	aclrtResetDevice(rank);
	aclFinalize();
	free(a);
	free(b);
	free(want);
	return bad;
}

Test(plan_cache, repeated_calls_reuse_schedules, .timeout = 300)
{
	HcclRootInfo *root = mmap(NULL, sizeof(*root), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(root, MAP_FAILED);
	cr_assert_eq(HcclGetRootInfo(root), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_fork_ranks(3, rank_main, root, 240), 0,
		     "some ranks failed");
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(root, sizeof(*root));
}
