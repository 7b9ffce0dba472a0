/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AllReduce end to end through the public API: real processes over shared
 * memory (root info bootstrap) and thread ranks (HcclCommInitAll), every
 * dtype x reduce op HCCL allows, counts 0, 1, 7 and 1M+3, in place and
 * out of place, on streams and on the NULL (synchronous) stream.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"


/* One rank's whole matrix; returns the number of failures. */
static int allreduce_matrix(HcclComm comm, int rank, int nranks,
			    aclrtStream stream)
{
	const uint64_t counts[] = {0, 1, 7, ohc_test_big_count()};
	size_t maxc = counts[3];
	char *send = malloc(maxc * 8), *recv = malloc(maxc * 8),
	     *want = malloc(maxc * 8);
	int bad = 0;

	for (size_t p = 0; p < ohc_test_nreduce_pairs; p++) {
		HcclDataType t = ohc_test_reduce_pairs[p].dtype;
		HcclReduceOp op = ohc_test_reduce_pairs[p].op;

		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]);
		     c++) {
			for (int inplace = 0; inplace < 2; inplace++) {
				uint64_t n = counts[c];
				void *dst = inplace ? send : recv;
				HcclResult ret;
				long at;

				ohc_test_fill(send, t, op, rank, n, p * 7 + c);
				memset(recv, 0x5a, n * 8);
				ret = HcclAllReduce(send, dst, n, t, op, comm,
						    stream);
				if (ret == HCCL_SUCCESS && stream)
					ret = aclrtSynchronizeStream(stream)
						      ? HCCL_E_INTERNAL
						      : HCCL_SUCCESS;
				if (ret != HCCL_SUCCESS) {
					fprintf(stderr,
						"rank %d: allreduce %s op %d "
						"count %lu failed: %d\n",
						rank, ohc_test_dtype_name(t),
						op, (unsigned long)n, ret);
					bad++;
					continue;
				}
				if (n == 0)
					continue;
				ohc_test_expect(want, t, op, nranks, n,
						p * 7 + c);
				at = ohc_test_compare(dst, want, t, n);
				if (at >= 0) {
					fprintf(stderr,
						"rank %d: allreduce %s op %d "
						"count %lu %s: wrong at %ld\n",
						rank, ohc_test_dtype_name(t),
						op, (unsigned long)n,
						inplace ? "in place"
							: "out of place",
						at);
					bad++;
				}
			}
		}
	}
	free(send);
	free(recv);
	free(want);
	return bad;
}

struct proc_arg {
	HcclRootInfo *root;
	int use_stream;
};

static int proc_rank(int rank, int nranks, void *p)
{
	struct proc_arg *a = p;
	aclrtStream stream = NULL;
	HcclComm comm;
	int bad;

	if (a->use_stream) {
		if (aclInit(NULL) || aclrtSetDevice(rank % 8) ||
		    aclrtCreateStream(&stream))
			return 1;
	}
	if (HcclCommInitRootInfo(nranks, a->root, rank, &comm) !=
	    HCCL_SUCCESS)
		return 1;
	bad = allreduce_matrix(comm, rank, nranks, stream);
	if (HcclCommDestroy(comm) != HCCL_SUCCESS)
		bad++;
	if (stream) {
		aclrtDestroyStream(stream);
		aclrtResetDevice(rank % 8);
		aclFinalize();
	}
	return bad;
}

static void run_procs(int nranks, int use_stream)
{
	HcclRootInfo *root = mmap(NULL, sizeof(*root), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct proc_arg a = {root, use_stream};

	cr_assert_eq(HcclGetRootInfo(root), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_fork_ranks(nranks, proc_rank, &a, 600), 0,
		     "some ranks failed");
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(root, sizeof(*root));
}

Test(allreduce, procs4_stream, .timeout = 600)
{
	run_procs(4, 1);
}

Test(allreduce, procs8_sync, .timeout = 600)
{
	run_procs(8, 0);
}

static HcclComm thread_comms[8];

static int thread_rank(int rank, int nranks, void *p)
{
	aclrtStream stream = NULL;
	int bad;

	(void)p;
	if (aclrtSetDevice(rank) || aclrtCreateStream(&stream))
		return 1;
	bad = allreduce_matrix(thread_comms[rank], rank, nranks,
			       rank % 2 ? stream : NULL);
	aclrtDestroyStream(stream);
	aclrtResetDevice(rank);
	return bad;
}

/* nranks thread ranks on devices 0..nranks-1 (thread_comms) running fn. */
static void run_threads(int nranks, ohc_test_rank_fn fn)
{
	int32_t devs[8];

	for (int i = 0; i < nranks; i++)
		devs[i] = i;
	cr_assert_eq(aclInit(NULL), 0);
	cr_assert_eq(HcclCommInitAll((uint32_t)nranks, devs, thread_comms),
		     HCCL_SUCCESS);
	cr_assert_eq(ohc_test_thread_ranks(nranks, fn, NULL), 0);
	for (int i = 0; i < nranks; i++)
		cr_assert_eq(HcclCommDestroy(thread_comms[i]), HCCL_SUCCESS);
	aclFinalize();
}

Test(allreduce, threads4, .timeout = 600)
{
	run_threads(4, thread_rank);
}

/*
 * A queue deeper than the communicator's op slabs hold (16384): 20000
 * AllReduces enqueued before one synchronize, each on its own int32 slot,
 * so that slab ops, recycled ops and the calloc'd ops past the cap all
 * carry a result that is checked.
 */
#define DEEP_OPS 20000

static int deep_rank(int rank, int nranks, void *p)
{
	(void)p;
	return ohc_test_slot_allreduces(thread_comms[rank], rank, nranks,
					DEEP_OPS, 1);
}

Test(allreduce, threads2_deep_queue, .timeout = 600)
{
	run_threads(2, deep_rank);
}
