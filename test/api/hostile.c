/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A careless or hostile caller: displacements that wrap, handles of
 * destroyed communicators, handles never handed out. Each call must fail
 * with HCCL_E_PARA and touch nothing: no byte around the user's buffers
 * changes, nothing is read through a stale handle (the ASan build turns
 * any such read into a failure). Black box, through the shipped libraries.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

#define GUARD 64
#define N 16

static HcclComm one_rank_comm(void)
{
	int32_t dev = 0;
	HcclComm comm = NULL;

	cr_assert_eq(HcclCommInitAll(1, &dev, &comm), HCCL_SUCCESS);
	return comm;
}

/* A buffer of N floats with GUARD bytes of 0xA5 on either side. */
struct guarded {
	uint8_t bytes[GUARD + N * sizeof(float) + GUARD];
};

static float *guarded_init(struct guarded *g)
{
	memset(g->bytes, 0xA5, sizeof(g->bytes));
	return (float *)(g->bytes + GUARD);
}

static int guarded_intact(const struct guarded *g)
{
	for (size_t i = 0; i < sizeof(g->bytes); i++)
		if (g->bytes[i] != 0xA5)
			return 0;
	return 1;
}

static const uint64_t bad_displs[] = {UINT64_MAX, UINT64_MAX / 4 + 1,
				      1ull << 40, 0x800000000ull};

Test(hostile, displacements_one_rank)
{
	HcclComm comm = one_rank_comm();
	struct guarded sg, rg;

	for (size_t k = 0; k < sizeof(bad_displs) / sizeof(*bad_displs); k++) {
		uint64_t cnt[1] = {4}, ok[1] = {0}, bad[1] = {bad_displs[k]};
		float *s = guarded_init(&sg), *r = guarded_init(&rg);

		cr_expect_eq(HcclAllGatherV(s, 4, r, cnt, bad,
					    HCCL_DATA_TYPE_FP32, comm, NULL),
			     HCCL_E_PARA, "AllGatherV recvDispls %llu",
			     (unsigned long long)bad[0]);
		cr_expect_eq(HcclReduceScatterV(s, cnt, bad, r, 4,
						HCCL_DATA_TYPE_FP32,
						HCCL_REDUCE_SUM, comm, NULL),
			     HCCL_E_PARA, "ReduceScatterV sendDispls %llu",
			     (unsigned long long)bad[0]);
		cr_expect_eq(HcclAlltoAllV(s, cnt, bad, HCCL_DATA_TYPE_FP32, r,
					   cnt, ok, HCCL_DATA_TYPE_FP32, comm,
					   NULL),
			     HCCL_E_PARA, "AlltoAllV sdispls %llu",
			     (unsigned long long)bad[0]);
		cr_expect_eq(HcclAlltoAllV(s, cnt, ok, HCCL_DATA_TYPE_FP32, r,
					   cnt, bad, HCCL_DATA_TYPE_FP32, comm,
					   NULL),
			     HCCL_E_PARA, "AlltoAllV rdispls %llu",
			     (unsigned long long)bad[0]);
		cr_expect(guarded_intact(&sg) && guarded_intact(&rg),
			  "a refused call changed memory (displacement %llu)",
			  (unsigned long long)bad[0]);
	}
	/* The largest legal displacement of an empty block is not read. */
	{
		uint64_t cnt[1] = {0}, bad[1] = {UINT64_MAX};
		float *s = guarded_init(&sg), *r = guarded_init(&rg);

		cr_expect_eq(HcclAllGatherV(s, 0, r, cnt, bad,
					    HCCL_DATA_TYPE_FP32, comm, NULL),
			     HCCL_SUCCESS);
		cr_expect(guarded_intact(&rg));
	}
	cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
}

/* Two thread ranks, as in the report: recvDispls = {0, UINT64_MAX}. */
struct two {
	HcclComm comm;
	int rank;
	HcclResult agv, rsv, a2av;
	struct guarded sg, rg;
};

static void *two_main(void *p)
{
	struct two *t = p;
	uint64_t cnt[2] = {4, 4}, displs[2] = {0, UINT64_MAX}, ok[2] = {0, 4};
	float *s = guarded_init(&t->sg), *r = guarded_init(&t->rg);

	aclrtSetDevice(t->rank);
	t->agv = HcclAllGatherV(s, 4, r, cnt, displs, HCCL_DATA_TYPE_FP32,
				t->comm, NULL);
	t->rsv = HcclReduceScatterV(s, cnt, displs, r, 4, HCCL_DATA_TYPE_FP32,
				    HCCL_REDUCE_SUM, t->comm, NULL);
	t->a2av = HcclAlltoAllV(s, cnt, ok, HCCL_DATA_TYPE_FP32, r, cnt, displs,
				HCCL_DATA_TYPE_FP32, t->comm, NULL);
	return NULL;
}

Test(hostile, displacements_two_ranks)
{
	int32_t devs[2] = {0, 1};
	HcclComm comms[2];
	struct two t[2] = {0};
	pthread_t th[2];

	cr_assert_eq(HcclCommInitAll(2, devs, comms), HCCL_SUCCESS);
	for (int i = 0; i < 2; i++) {
		t[i].comm = comms[i];
		t[i].rank = i;
		pthread_create(&th[i], NULL, two_main, &t[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++) {
		cr_expect_eq(t[i].agv, HCCL_E_PARA, "rank %d AllGatherV", i);
		cr_expect_eq(t[i].rsv, HCCL_E_PARA, "rank %d ReduceScatterV",
			     i);
		cr_expect_eq(t[i].a2av, HCCL_E_PARA, "rank %d AlltoAllV", i);
		cr_expect(guarded_intact(&t[i].sg) && guarded_intact(&t[i].rg),
			  "rank %d: memory around the buffers changed", i);
		cr_expect_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
	}
}

Test(hostile, destroyed_handle)
{
	HcclComm comm = one_rank_comm(), again;
	float b[4] = {1, 2, 3, 4};
	uint32_t u = 77;
	char name[COMM_NAME_MAX_LENGTH];

	cr_assert_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
	cr_expect_eq(HcclGetRankSize(comm, &u), HCCL_E_PARA);
	cr_expect_eq(u, 77, "output written through a destroyed handle");
	cr_expect_eq(HcclGetRankId(comm, &u), HCCL_E_PARA);
	cr_expect_eq(HcclGetCommName(comm, name), HCCL_E_PARA);
	cr_expect_eq(HcclAllReduce(b, b, 4, HCCL_DATA_TYPE_FP32,
				   HCCL_REDUCE_SUM, comm, NULL),
		     HCCL_E_PARA);
	cr_expect_eq(HcclCommDestroy(comm), HCCL_E_PARA, "double destroy");

	/* A handle is never handed out twice, so a new communicator (which
	 * may well sit where the old one was) never answers to the old
	 * handle. */
	for (int i = 0; i < 20; i++) {
		again = one_rank_comm();
		cr_expect_neq(again, comm,
			      "round %d: a destroyed handle came "
			      "back for a new communicator",
			      i);
		cr_expect_eq(HcclGetRankSize(comm, &u), HCCL_E_PARA);
		cr_expect_eq(HcclGetRankSize(again, &u), HCCL_SUCCESS);
		cr_expect_eq(u, 1);
		cr_expect_eq(HcclCommDestroy(again), HCCL_SUCCESS);
		cr_expect_eq(HcclCommDestroy(again), HCCL_E_PARA);
	}
}

Test(hostile, wild_handles)
{
	HcclComm live = one_rank_comm();
	void *page =
		mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *wild[] = {(void *)0x10, page, (void *)(uintptr_t)-1,
			(uint8_t *)live + 1, (void *)&page};
	float b[4] = {0};
	uint32_t u;

	cr_assert_neq(page, MAP_FAILED);
	for (size_t i = 0; i < sizeof(wild) / sizeof(*wild); i++) {
		cr_expect_eq(HcclGetRankSize(wild[i], &u), HCCL_E_PARA,
			     "wild handle %p", wild[i]);
		cr_expect_eq(HcclAllReduce(b, b, 4, HCCL_DATA_TYPE_FP32,
					   HCCL_REDUCE_SUM, wild[i], NULL),
			     HCCL_E_PARA, "wild handle %p", wild[i]);
		cr_expect_eq(HcclCommDestroy(wild[i]), HCCL_E_PARA,
			     "wild handle %p", wild[i]);
	}
	munmap(page, 4096);
	cr_expect_eq(HcclGetRankSize(live, &u), HCCL_SUCCESS);
	cr_expect_eq(HcclCommDestroy(live), HCCL_SUCCESS);
}
