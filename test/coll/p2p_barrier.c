/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HcclSend/HcclRecv and HcclBarrier between real processes and between
 * thread ranks: ring exchanges in both directions, many messages in
 * flight per pair (FIFO matching), all datatypes, counts 1, 7, 1M+3;
 * a receive posted after its sender destroyed its communicator; and a
 * synchronous receive of the wrong length, which fails both ranks fast
 * and leaves the communicator refusing what follows.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

static const HcclDataType p2p_types[] = {
	HCCL_DATA_TYPE_INT8,  HCCL_DATA_TYPE_INT16,  HCCL_DATA_TYPE_INT32,
	HCCL_DATA_TYPE_FP16,  HCCL_DATA_TYPE_FP32,   HCCL_DATA_TYPE_INT64,
	HCCL_DATA_TYPE_UINT64, HCCL_DATA_TYPE_UINT8, HCCL_DATA_TYPE_UINT16,
	HCCL_DATA_TYPE_UINT32, HCCL_DATA_TYPE_FP64,  HCCL_DATA_TYPE_BFP16,
};

static void pattern(unsigned char *b, size_t n, int from, int to, int k)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 31 + from * 7 + to * 13 + k);
}

static int p2p_matrix(HcclComm comm, int rank, int nranks,
		      aclrtStream stream)
{
	const uint64_t counts[] = {1, 7, ohc_test_big_count()};
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
	int bad = 0;

	for (size_t t = 0; t < sizeof(p2p_types) / sizeof(p2p_types[0]); t++) {
		for (size_t c = 0; c < 3; c++) {
			size_t es = ohc_test_dtype_size(p2p_types[t]);
			size_t n = counts[c], bytes = n * es;
			unsigned char *s = malloc(bytes), *r = malloc(bytes),
				      *w = malloc(bytes);
			HcclResult ret;

			pattern(s, bytes, rank, right, (int)(t + c));
			memset(r, 0, bytes);
			/* even ranks send first, odd ranks receive first */
			if (rank % 2 == 0) {
				ret = HcclSend(s, n, p2p_types[t], right, comm,
					       stream);
				ret |= HcclRecv(r, n, p2p_types[t], left, comm,
						stream);
			} else {
				ret = HcclRecv(r, n, p2p_types[t], left, comm,
					       stream);
				ret |= HcclSend(s, n, p2p_types[t], right,
						comm, stream);
			}
			if (stream && aclrtSynchronizeStream(stream))
				ret = HCCL_E_INTERNAL;
			pattern(w, bytes, left, rank, (int)(t + c));
			if (ret != HCCL_SUCCESS || memcmp(r, w, bytes)) {
				fprintf(stderr,
					"rank %d: p2p %s count %lu: ret %d "
					"data %s\n",
					rank, ohc_test_dtype_name(p2p_types[t]),
					(unsigned long)n, ret,
					memcmp(r, w, bytes) ? "wrong" : "ok");
				bad++;
			}
			free(s);
			free(r);
			free(w);
		}
	}
	/* FIFO: 16 messages in flight from every rank to its right. */
	if (nranks > 1) {
		int msgs[16], got[16];

		for (int k = 0; k < 16; k++)
			msgs[k] = rank * 1000 + k;
		memset(got, 0, sizeof(got));
		if (rank % 2 == 0) {
			for (int k = 0; k < 16; k++)
				HcclSend(&msgs[k], 1, HCCL_DATA_TYPE_INT32,
					 right, comm, stream);
			for (int k = 0; k < 16; k++)
				HcclRecv(&got[k], 1, HCCL_DATA_TYPE_INT32, left,
					 comm, stream);
		} else {
			for (int k = 0; k < 16; k++)
				HcclRecv(&got[k], 1, HCCL_DATA_TYPE_INT32, left,
					 comm, stream);
			for (int k = 0; k < 16; k++)
				HcclSend(&msgs[k], 1, HCCL_DATA_TYPE_INT32,
					 right, comm, stream);
		}
		if (stream)
			aclrtSynchronizeStream(stream);
		for (int k = 0; k < 16; k++) {
			if (got[k] != left * 1000 + k) {
				fprintf(stderr, "rank %d: fifo msg %d = %d\n",
					rank, k, got[k]);
				bad++;
				break;
			}
		}
	}
	return bad;
}

/* Barrier: nobody leaves before the last rank (who arrives late) enters. */
static int barrier_check(HcclComm comm, int rank, int nranks,
			 aclrtStream stream, volatile int *arrived)
{
	int bad = 0;

	for (int round = 0; round < 3; round++) {
		if (rank == nranks - 1)
			usleep(100000);
		__atomic_add_fetch(arrived, 1, __ATOMIC_SEQ_CST);
		if (HcclBarrier(comm, stream) != HCCL_SUCCESS)
			bad++;
		if (stream && aclrtSynchronizeStream(stream))
			bad++;
		if (__atomic_load_n(arrived, __ATOMIC_SEQ_CST) <
		    (round + 1) * nranks) {
			fprintf(stderr, "rank %d left barrier %d early\n",
				rank, round);
			bad++;
		}
		/* second barrier so nobody races into the next round */
		if (HcclBarrier(comm, NULL) != HCCL_SUCCESS)
			bad++;
	}
	return bad;
}

struct proc_arg {
	HcclRootInfo root;
	int arrived;
};

static int proc_rank(int rank, int nranks, void *p)
{
	struct proc_arg *a = p;
	aclrtStream stream = NULL;
	HcclComm comm;
	int bad;

	if (aclInit(NULL) || aclrtSetDevice(rank % 4) ||
	    aclrtCreateStream(&stream))
		return 1;
	if (HcclCommInitRootInfo(nranks, &a->root, rank, &comm))
		return 1;
	bad = p2p_matrix(comm, rank, nranks, rank % 2 ? stream : NULL);
	bad += p2p_matrix(comm, rank, nranks, stream);
	bad += barrier_check(comm, rank, nranks, stream, &a->arrived);
	bad += HcclCommDestroy(comm) != HCCL_SUCCESS;
	aclrtDestroyStream(stream);
	aclFinalize();
	return bad;
}

static void run_procs(int nranks)
{
	struct proc_arg *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_eq(HcclGetRootInfo(&a->root), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_fork_ranks(nranks, proc_rank, a, 300), 0);
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(a, sizeof(*a));
}

Test(p2p_barrier, procs4, .timeout = 400)
{
	run_procs(4);
}

Test(p2p_barrier, procs8, .timeout = 400)
{
	run_procs(8);
}

/*
 * A sender that ends first: rank 1 sends two small messages, destroys its
 * communicator and is gone before rank 0 posts the receives. What it sent
 * had landed: the receives take it (over verbs in the VM, where the
 * closed connection is seen first; over shm on the host).
 */
struct gone_arg {
	HcclRootInfo root;
	int gone;
};

static int gone_rank(int rank, int nranks, void *p)
{
	static const size_t counts[2] = {16, 250}; /* int32: 64 B, 1000 B */
	struct gone_arg *a = p;
	aclrtStream stream = NULL;
	int32_t buf[250];
	HcclComm comm;
	int bad = 0;

	if (aclInit(NULL) || aclrtSetDevice(rank) ||
	    aclrtCreateStream(&stream) ||
	    HcclCommInitRootInfo(nranks, &a->root, rank, &comm))
		return 1;
	/* both connected before rank 1 goes */
	if (HcclBarrier(comm, stream) || aclrtSynchronizeStream(stream))
		return 1;
	for (int m = 0; m < 2; m++) {
		if (rank == 1) {
			for (size_t i = 0; i < counts[m]; i++)
				buf[i] = (int32_t)(1000 * m + i);
			bad += HcclSend(buf, counts[m], HCCL_DATA_TYPE_INT32, 0,
					comm, stream) != HCCL_SUCCESS ||
			       aclrtSynchronizeStream(stream) != 0;
			continue;
		}
		if (m == 0) { /* rank 0: wait until rank 1 is gone */
			while (!__atomic_load_n(&a->gone, __ATOMIC_ACQUIRE))
				usleep(1000);
			usleep(300 * 1000); /* its close seen by now */
		}
		memset(buf, 0xff, sizeof(buf));
		if (HcclRecv(buf, counts[m], HCCL_DATA_TYPE_INT32, 1, comm,
			     stream) != HCCL_SUCCESS ||
		    aclrtSynchronizeStream(stream) != 0) {
			fprintf(stderr,
				"rank 0: receive %d of a sender that "
				"is gone failed\n",
				m);
			bad++;
			continue;
		}
		for (size_t i = 0; i < counts[m]; i++)
			if (buf[i] != (int32_t)(1000 * m + i)) {
				fprintf(stderr,
					"rank 0: message %d [%zu] = %d\n", m, i,
					buf[i]);
				bad++;
				break;
			}
	}
	bad += HcclCommDestroy(comm) != HCCL_SUCCESS;
	if (rank == 1)
		__atomic_store_n(&a->gone, 1, __ATOMIC_RELEASE);
	aclrtDestroyStream(stream);
	aclFinalize();
	return bad;
}

Test(p2p_barrier, receive_after_the_sender_is_gone, .timeout = 120)
{
	struct gone_arg *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_eq(HcclGetRootInfo(&a->root), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_fork_ranks(2, gone_rank, a, 60), 0);
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(a, sizeof(*a));
}

/*
 * Synchronous point to point (NULL stream: no op, no schedule, comm_exec.c
 * ohc_comm_p2p) on the error path: rank 1 receives 32 ints where rank 0
 * sent 16. Rank 1 fails with HCCL_E_PARA (the message's length is not
 * the receive's), rank 0's next receive from it fails the same way (rank
 * 1 announced the mismatch), both far below HCCL_EXEC_TIMEOUT; then each
 * rank's next send is refused at once with the same code, the
 * communicator reports the failure, and both destroy it cleanly.
 */
#define MISMATCH_TIMEOUT_S 60
#define MISMATCH_BOUND_S 15.0

struct mismatch_arg {
	HcclRootInfo root;
	int result[2], after[2], async[2];
	double took[2];
};

static int mismatch_rank(int rank, int nranks, void *p)
{
	struct mismatch_arg *a = p;
	int32_t buf[32];
	HcclResult async = HCCL_SUCCESS;
	HcclComm comm;
	double t0;
	int bad = 0;

	(void)nranks;
	if (aclInit(NULL) || aclrtSetDevice(rank) ||
	    HcclCommInitRootInfo(2, &a->root, rank, &comm))
		return 1;
	for (int i = 0; i < 32; i++)
		buf[i] = rank * 100 + i;
	/* a good message first: connected, and the path warm */
	if (rank == 0)
		bad += HcclSend(buf, 16, HCCL_DATA_TYPE_INT32, 1, comm, NULL) !=
		       HCCL_SUCCESS;
	else
		bad += HcclRecv(buf, 16, HCCL_DATA_TYPE_INT32, 0, comm, NULL) !=
			       HCCL_SUCCESS ||
		       buf[15] != 15;
	t0 = ohc_test_now_s();
	if (rank == 0) {
		a->result[0] =
			HcclSend(buf, 16, HCCL_DATA_TYPE_INT32, 1, comm, NULL);
		if (a->result[0] == HCCL_SUCCESS) /* then wait for rank 1 */
			a->result[0] = HcclRecv(buf, 1, HCCL_DATA_TYPE_INT32, 1,
						comm, NULL);
	} else {
		a->result[1] =
			HcclRecv(buf, 32, HCCL_DATA_TYPE_INT32, 0, comm, NULL);
	}
	a->took[rank] = ohc_test_now_s() - t0;
	a->after[rank] =
		HcclSend(buf, 1, HCCL_DATA_TYPE_INT32, 1 - rank, comm, NULL);
	bad += HcclGetCommAsyncError(comm, &async) != HCCL_SUCCESS;
	a->async[rank] = async;
	bad += HcclCommDestroy(comm) != HCCL_SUCCESS;
	aclFinalize();
	return bad;
}

Test(p2p_barrier, sync_length_mismatch_fails_fast, .timeout = 120)
{
	struct mismatch_arg *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char v[16];

	snprintf(v, sizeof(v), "%d", MISMATCH_TIMEOUT_S);
	setenv("HCCL_EXEC_TIMEOUT", v, 1);
	cr_assert_eq(HcclGetRootInfo(&a->root), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_fork_ranks(2, mismatch_rank, a, 100), 0);
	unsetenv("HCCL_EXEC_TIMEOUT");
	for (int r = 0; r < 2; r++) {
		cr_expect_eq(a->result[r], HCCL_E_PARA,
			     "rank %d: the mismatched exchange returned %d, "
			     "want HCCL_E_PARA",
			     r, a->result[r]);
		cr_expect_lt(a->took[r], MISMATCH_BOUND_S,
			     "rank %d took %.1f s: it waited for its timeout",
			     r, a->took[r]);
		cr_expect_eq(a->after[r], HCCL_E_PARA,
			     "rank %d: the send after it returned %d, want "
			     "the same failure",
			     r, a->after[r]);
		cr_expect_neq(a->async[r], HCCL_SUCCESS,
			      "rank %d: no asynchronous error reported", r);
	}
	cr_expect_eq(ohc_test_shm_leftovers(), 0);
	munmap(a, sizeof(*a));
}

static HcclComm tcomms[4];
static int t_arrived;

static int thread_rank(int rank, int nranks, void *p)
{
	aclrtStream stream;
	int bad;

	(void)p;
	if (aclrtSetDevice(rank) || aclrtCreateStream(&stream))
		return 1;
	bad = p2p_matrix(tcomms[rank], rank, nranks, stream);
	bad += barrier_check(tcomms[rank], rank, nranks, NULL, &t_arrived);
	aclrtDestroyStream(stream);
	return bad;
}

Test(p2p_barrier, threads4, .timeout = 300)
{
	int32_t devs[4] = {3, 2, 1, 0};
	char name[128];

	cr_assert_eq(aclInit(NULL), 0);
	cr_assert_eq(HcclCommInitAll(4, devs, tcomms), HCCL_SUCCESS);
	cr_assert_eq(HcclGetCommName(tcomms[0], name), HCCL_SUCCESS);
	cr_assert_str_eq(name, "hccl_world_group");
	cr_assert_eq(ohc_test_thread_ranks(4, thread_rank, NULL), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(HcclCommDestroy(tcomms[i]), HCCL_SUCCESS);
	aclFinalize();
}
