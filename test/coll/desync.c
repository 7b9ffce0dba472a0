/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Mismatched calls across ranks through the public API: 4 processes, a
 * correct AllReduce first, then rank 2 alone calls with a different
 * count, dtype, reduce op or root (each in a fresh communicator), on the
 * NULL stream and on a real stream (a root also for a small Broadcast, Reduce
 * and a Scatter, one-step schedules that check every signature in their
 * one step); and rank 2 calling ReduceScatter
 * while the others call AllReduce. Every rank must fail with HCCL_E_PARA
 * (the ranks that receive the mismatching message detect it, the others
 * learn it from the failed peer), well before HCCL_EXEC_TIMEOUT, so no
 * rank merely timed out; then every rank destroys its communicator and
 * exits cleanly, leaving nothing in /dev/shm.
 */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

#define NR 4
#define ODD 2		  /* the rank that calls differently */
#define EXEC_TIMEOUT_S 60 /* HCCL_EXEC_TIMEOUT for these runs */
#define BOUND_S 15.0	  /* far below it: nobody just timed out */
#define COUNT 1000

/* SMALL elements: a one-step schedule (linear Broadcast, Reduce and
 * Scatter over shm), whose agreement is every rank to every rank in it */
#define SMALL 16

enum what {
	W_COUNT,
	W_DTYPE,
	W_OP,
	W_ROOT,
	W_BCAST_ROOT,
	W_COLL,
	W_SMALL_BCAST_ROOT,
	W_SCATTER_ROOT,
	W_SMALL_ROOT,
};

#define THREADS 2 /* run()'s use_stream: thread ranks, no stream */
static const char *mode_name[] = {"NULL stream", "real stream",
				  "thread ranks"};

static const char *what_name[] = {
	"count",
	"dtype",
	"op",
	"root",
	"broadcast root",
	"collective",
	"small broadcast root",
	"scatter root",
	"small root",
};
_Static_assert(sizeof(what_name) / sizeof(what_name[0]) == W_SMALL_ROOT + 1,
	       "a name for every mismatch");

struct shared {
	HcclRootInfo root;
	int root_ready;
	int result[NR]; /* the mismatched call's outcome */
	int stream_failed[NR];
	double took[NR];
	int warmup_ok[NR];
	int destroyed[NR];
};

/* The mismatched call: rank ODD alone differs in one argument. */
static HcclResult odd_call(enum what w, int rank, float *send, float *recv,
			   HcclComm comm, aclrtStream stream)
{
	bool odd = rank == ODD;

	switch (w) {
	case W_COUNT:
		return HcclAllReduce(send, recv, odd ? COUNT + 1 : COUNT,
				     HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm,
				     stream);
	case W_DTYPE:
		/* same element size: only the signature tells them apart */
		return HcclAllReduce(send, recv, COUNT,
				     odd ? HCCL_DATA_TYPE_INT32
					 : HCCL_DATA_TYPE_FP32,
				     HCCL_REDUCE_SUM, comm, stream);
	case W_OP:
		return HcclAllReduce(send, recv, COUNT, HCCL_DATA_TYPE_FP32,
				     odd ? HCCL_REDUCE_MAX : HCCL_REDUCE_SUM,
				     comm, stream);
	case W_ROOT:
		return HcclReduce(send, recv, COUNT, HCCL_DATA_TYPE_FP32,
				  HCCL_REDUCE_SUM, odd ? 1 : 0, comm, stream);
	case W_BCAST_ROOT:
		return HcclBroadcast(send, COUNT, HCCL_DATA_TYPE_FP32,
				     odd ? 1 : 0, comm, stream);
	case W_SMALL_BCAST_ROOT:
		return HcclBroadcast(send, SMALL, HCCL_DATA_TYPE_FP32,
				     odd ? 1 : 0, comm, stream);
	case W_SMALL_ROOT:
		return HcclReduce(send, recv, SMALL, HCCL_DATA_TYPE_FP32,
				  HCCL_REDUCE_SUM, odd ? 1 : 0, comm, stream);
	case W_SCATTER_ROOT:
		return HcclScatter(send, recv, SMALL / NR, HCCL_DATA_TYPE_FP32,
				   odd ? 1 : 0, comm, stream);
	case W_COLL:
		/* same bytes on the wire per rank, another operation */
		if (odd)
			return HcclReduceScatter(send, recv, COUNT / NR,
						 HCCL_DATA_TYPE_FP32,
						 HCCL_REDUCE_SUM, comm, stream);
		return HcclAllReduce(send, recv, COUNT, HCCL_DATA_TYPE_FP32,
				     HCCL_REDUCE_SUM, comm, stream);
	}
	return HCCL_E_INTERNAL;
}

struct arg {
	struct shared *sh;
	enum what w;
	int use_stream;
};

/* The warm-up, then the mismatched call; the outcome goes to sh. */
static void mismatch(struct shared *sh, enum what w, int rank, HcclComm comm,
		     aclrtStream stream)
{
	float send[COUNT + 1], recv[COUNT + 1];
	HcclResult ret;
	double t0;
	int ok = 1;

	for (int i = 0; i <= COUNT; i++)
		send[i] = (float)(rank + 1);
	/* the communicator works while the calls agree */
	ret = HcclAllReduce(send, recv, COUNT, HCCL_DATA_TYPE_FP32,
			    HCCL_REDUCE_SUM, comm, stream);
	if (ret == HCCL_SUCCESS && stream && aclrtSynchronizeStream(stream))
		ret = HCCL_E_INTERNAL;
	for (int i = 0; i < COUNT && ret == HCCL_SUCCESS; i++)
		ok &= recv[i] == (float)(NR * (NR + 1) / 2);
	sh->warmup_ok[rank] = ret == HCCL_SUCCESS && ok;

	t0 = ohc_test_now_s();
	ret = odd_call(w, rank, send, recv, comm, stream);
	if (ret == HCCL_SUCCESS && stream) {
		sh->stream_failed[rank] = aclrtSynchronizeStream(stream) != 0;
		HcclGetCommAsyncError(comm, &ret);
	}
	sh->took[rank] = ohc_test_now_s() - t0;
	sh->result[rank] = ret;
}

static int desync_rank(int rank, int nranks, void *p)
{
	struct arg *a = p;
	struct shared *sh = a->sh;
	aclrtStream stream = NULL;
	HcclComm comm;

	if (a->use_stream && (aclInit(NULL) || aclrtSetDevice(rank) ||
			      aclrtCreateStream(&stream)))
		return 1;
	if (ohc_test_share_roots(&sh->root, 1, &sh->root_ready, rank, 60) ||
	    HcclCommInitRootInfo(nranks, &sh->root, rank, &comm))
		return 1;
	mismatch(sh, a->w, rank, comm, stream);
	sh->destroyed[rank] = HcclCommDestroy(comm) == HCCL_SUCCESS;
	if (stream) {
		aclrtDestroyStream(stream);
		aclrtResetDevice(rank);
		aclFinalize();
	}
	return 0;
}

/* Thread ranks (HcclCommInitAll): the same calls, synchronous. */
static HcclComm thread_comms[NR];

static int desync_thread(int rank, int nranks, void *p)
{
	struct arg *a = p;

	(void)nranks;
	mismatch(a->sh, a->w, rank, thread_comms[rank], NULL);
	return 0;
}

static void run(enum what w, int use_stream)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct arg a = {sh, w, use_stream};
	char v[16];
	int failed;

	cr_assert_neq(sh, MAP_FAILED);
	snprintf(v, sizeof(v), "%d", EXEC_TIMEOUT_S);
	setenv("HCCL_EXEC_TIMEOUT", v, 1);
	for (int r = 0; r < NR; r++)
		sh->result[r] = -1;
	if (use_stream == THREADS) {
		int32_t devs[NR];

		for (int r = 0; r < NR; r++)
			devs[r] = r;
		cr_assert_eq(HcclCommInitAll(NR, devs, thread_comms),
			     HCCL_SUCCESS);
		failed = ohc_test_thread_ranks(NR, desync_thread, &a);
		for (int r = 0; r < NR; r++)
			sh->destroyed[r] = HcclCommDestroy(thread_comms[r]) ==
					   HCCL_SUCCESS;
	} else {
		/* the fork bound is the "nobody hangs" check */
		failed = ohc_test_fork_ranks(NR, desync_rank, &a,
					     EXEC_TIMEOUT_S + 30);
	}
	for (int r = 0; r < NR; r++)
		fprintf(stderr,
			"%s mismatch (%s): rank %d got %d (%s) after "
			"%.2f s%s\n",
			what_name[w], mode_name[use_stream], r,
			sh->result[r], HcclGetErrorString(sh->result[r]),
			sh->took[r],
			use_stream == 1 && sh->result[r] != HCCL_SUCCESS &&
					!sh->stream_failed[r]
				? " (stream did not report it)"
				: "");
	cr_assert_eq(failed, 0, "ranks crashed or hung");
	for (int r = 0; r < NR; r++) {
		int e = sh->result[r];

		cr_assert(sh->warmup_ok[r], "rank %d: matching call failed", r);
		cr_expect_neq(e, HCCL_SUCCESS,
			      "rank %d: the mismatched %s went unnoticed", r,
			      what_name[w]);
		cr_expect_eq(e, HCCL_E_PARA,
			     "rank %d: expected HCCL_E_PARA, got %d (%s)", r, e,
			     HcclGetErrorString(e));
		if (use_stream == 1 && e != HCCL_SUCCESS)
			cr_expect(sh->stream_failed[r],
				  "rank %d: aclrtSynchronizeStream succeeded "
				  "although the operation failed",
				  r);
		cr_expect_lt(sh->took[r], BOUND_S, "rank %d took %.1f s", r,
			     sh->took[r]);
		cr_expect(sh->destroyed[r], "rank %d: HcclCommDestroy failed",
			  r);
	}
	cr_expect_eq(ohc_test_shm_leftovers(), 0);
	munmap(sh, sizeof(*sh));
}

Test(desync, count_sync, .timeout = 120)
{
	run(W_COUNT, 0);
}

Test(desync, count_stream, .timeout = 120)
{
	run(W_COUNT, 1);
}

Test(desync, dtype_sync, .timeout = 120)
{
	run(W_DTYPE, 0);
}

Test(desync, dtype_stream, .timeout = 120)
{
	run(W_DTYPE, 1);
}

Test(desync, op_sync, .timeout = 120)
{
	run(W_OP, 0);
}

Test(desync, op_stream, .timeout = 120)
{
	run(W_OP, 1);
}

Test(desync, root_sync, .timeout = 120)
{
	run(W_ROOT, 0);
}

Test(desync, root_stream, .timeout = 120)
{
	run(W_ROOT, 1);
}

Test(desync, bcast_root_sync, .timeout = 120)
{
	run(W_BCAST_ROOT, 0);
}

Test(desync, bcast_root_stream, .timeout = 120)
{
	run(W_BCAST_ROOT, 1);
}

Test(desync, small_bcast_root_sync, .timeout = 120)
{
	run(W_SMALL_BCAST_ROOT, 0);
}

Test(desync, small_bcast_root_stream, .timeout = 120)
{
	run(W_SMALL_BCAST_ROOT, 1);
}

Test(desync, small_bcast_root_threads, .timeout = 120)
{
	run(W_SMALL_BCAST_ROOT, THREADS);
}

Test(desync, scatter_root_sync, .timeout = 120)
{
	run(W_SCATTER_ROOT, 0);
}

Test(desync, scatter_root_stream, .timeout = 120)
{
	run(W_SCATTER_ROOT, 1);
}

Test(desync, small_root_sync, .timeout = 120)
{
	run(W_SMALL_ROOT, 0);
}

Test(desync, small_root_stream, .timeout = 120)
{
	run(W_SMALL_ROOT, 1);
}

Test(desync, collective_sync, .timeout = 120)
{
	run(W_COLL, 0);
}

Test(desync, collective_stream, .timeout = 120)
{
	run(W_COLL, 1);
}

Test(desync, count_threads, .timeout = 120)
{
	run(W_COUNT, THREADS);
}

Test(desync, root_threads, .timeout = 120)
{
	run(W_ROOT, THREADS);
}

Test(desync, bcast_root_threads, .timeout = 120)
{
	run(W_BCAST_ROOT, THREADS);
}

Test(desync, collective_threads, .timeout = 120)
{
	run(W_COLL, THREADS);
}
