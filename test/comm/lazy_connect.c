/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RDMA connections on first use (OPENHCCL_RDMA_LAZY_RANKS) through the
 * HCCL API: 4 forked ranks, every pair over verbs
 * (HCCL_INTRA_ROCE_ENABLE=1, all on rxe0 in the Soft-RoCE VM), lazy
 * forced. After init nothing is connected and no QP exists; a ring
 * AllGather connects each rank to its two ring neighbours, not more; a
 * Send/Recv with the opposite rank makes 3. An AlltoAll on a fresh
 * communicator (every pair's first contact from both sides at once)
 * delivers everything. Results are checked. Also a measurement, printed:
 * QPs, MRs and resident memory per rank after init with 8 ranks, eager
 * against lazy. Outside a machine with an RDMA device the tests skip.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "comm/comm.h"
#include "helpers/ohc_test.h"
#include "transport/verbs/verbs.h"
#include "util/time.h"

struct arg {
	HcclRootInfo root[2];
};

static int have_rdma(void)
{
	int n = 0;
	struct ibv_device **l = ohc_vx_get_device_list(&n);

	ohc_vx_free_device_list(l);
	return l && n > 0;
}

#define NEED_RDMA()                                                            \
	do {                                                                   \
		if (!have_rdma())                                              \
			cr_skip_test("no RDMA device here (runs in the "       \
				     "Soft-RoCE VM: ci/soft-roce/run-vm.sh)"); \
	} while (0)

/* Verbs eps connected on the communicator (-1: no verbs iface). */
static int connected(HcclComm comm)
{
	struct ohc_comm *c = ohc_comm_lookup(comm);

	for (unsigned i = 0; c && i < c->nifaces; i++)
		if (!strcmp(c->ifaces[i]->ops->name, "verbs"))
			return (int)ohc_verbs_connected(c->ifaces[i]);
	return -1;
}

#define RFAIL(...) OHC_RANK_FAIL("rank %d: " __VA_ARGS__)

static int ring_rank(int rank, int nranks, void *p)
{
	struct arg *a = p;
	enum { N = 1000 };
	int32_t *s = malloc(N * sizeof(*s)), *r = malloc(nranks * N * 4);
	int peer = (rank + 2) % nranks, n;
	aclrtStream stream = NULL;
	HcclComm comm;

	if (aclInit(NULL) || aclrtSetDevice(rank % 4) ||
	    aclrtCreateStream(&stream))
		RFAIL("acl", rank);
	if (HcclCommInitRootInfo(nranks, &a->root[0], rank, &comm))
		RFAIL("init", rank);
	if ((n = connected(comm)) != 0)
		RFAIL("%d verbs eps connected after init, want 0", rank, n);
	if (ohc_vx_qp_live() != 0)
		RFAIL("%ld QPs after init, want 0", rank, ohc_vx_qp_live());
	for (int i = 0; i < N; i++)
		s[i] = rank * 100000 + i;
	if (HcclAllGather(s, r, N, HCCL_DATA_TYPE_INT32, comm, stream) ||
	    aclrtSynchronizeStream(stream))
		RFAIL("allgather", rank);
	for (int k = 0; k < nranks; k++)
		for (int i = 0; i < N; i++)
			if (r[k * N + i] != k * 100000 + i)
				RFAIL("allgather: block %d [%d] = %d", rank, k,
				      i, r[k * N + i]);
	if ((n = connected(comm)) != 2)
		RFAIL("%d verbs eps connected after a ring AllGather, want "
		      "the 2 neighbours",
		      rank, n);
	/* the opposite rank: the lower one sends first */
	for (int i = 0; i < N; i++)
		s[i] = rank * 7 + i;
	for (int step = 0; step < 2; step++) {
		HcclResult ret = (step == 0) == (rank < peer)
					 ? HcclSend(s, N, HCCL_DATA_TYPE_INT32,
						    peer, comm, stream)
					 : HcclRecv(r, N, HCCL_DATA_TYPE_INT32,
						    peer, comm, stream);

		if (ret || aclrtSynchronizeStream(stream))
			RFAIL("send/recv step %d", rank, step);
	}
	for (int i = 0; i < N; i++)
		if (r[i] != peer * 7 + i)
			RFAIL("recv from %d: [%d] = %d", rank, peer, i, r[i]);
	if ((n = connected(comm)) != 3)
		RFAIL("%d verbs eps connected after Send/Recv with the "
		      "opposite rank, want 3",
		      rank, n);
	if (HcclCommDestroy(comm))
		RFAIL("destroy", rank);
	if (ohc_vx_qp_live() != 0 || ohc_vx_mr_live() != 0)
		RFAIL("%ld QPs, %ld MRs left after destroy", rank,
		      ohc_vx_qp_live(), ohc_vx_mr_live());

	/* a fresh communicator: every pair's first contact at once */
	if (HcclCommInitRootInfo(nranks, &a->root[1], rank, &comm))
		RFAIL("init 2", rank);
	for (int k = 0; k < nranks; k++)
		s[k] = rank * 1000 + k;
	if (HcclAlltoAll(s, 1, HCCL_DATA_TYPE_INT32, r, 1, HCCL_DATA_TYPE_INT32,
			 comm, stream) ||
	    aclrtSynchronizeStream(stream))
		RFAIL("alltoall", rank);
	for (int k = 0; k < nranks; k++)
		if (r[k] != k * 1000 + rank)
			RFAIL("alltoall: from %d: %d", rank, k, r[k]);
	if ((n = connected(comm)) != nranks - 1)
		RFAIL("%d verbs eps connected after an AlltoAll", rank, n);
	if (HcclCommDestroy(comm))
		RFAIL("destroy 2", rank);
	if (ohc_vx_qp_live() != 0 || ohc_vx_mr_live() != 0)
		RFAIL("%ld QPs, %ld MRs left after destroy", rank,
		      ohc_vx_qp_live(), ohc_vx_mr_live());
	aclrtDestroyStream(stream);
	aclFinalize();
	free(s);
	free(r);
	return 0;
}

static void roce_env(const char *lazy_ranks)
{
	setenv("HCCL_INTRA_ROCE_ENABLE", "1", 1);
	setenv("OPENHCCL_RDMA_LAZY_RANKS", lazy_ranks, 1);
	setenv("HCCL_ALGO", "allgather=level0:NA;level1:ring", 1);
}

Test(lazy_connect, only_the_used_peers_connect, .timeout = 300)
{
	struct arg *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	NEED_RDMA();
	roce_env("0");
	cr_assert_eq(HcclGetRootInfo(&a->root[0]), HCCL_SUCCESS);
	cr_assert_eq(HcclGetRootInfo(&a->root[1]), HCCL_SUCCESS);
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(4, ring_rank, a, 240), 0);
	munmap(a, sizeof(*a));
}

/* Resident KiB of this process (/proc/self/statm). */
static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, res = 0;

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static int measure_rank(int rank, int nranks, void *p)
{
	struct arg *a = p;
	uint64_t t0 = ohc_time_ns();
	aclrtStream stream = NULL;
	HcclComm comm;
	int32_t x = rank, sum = 0;

	if (aclInit(NULL) || aclrtSetDevice(rank % 4) ||
	    aclrtCreateStream(&stream))
		RFAIL("acl", rank);
	if (HcclCommInitRootInfo(nranks, &a->root[0], rank, &comm))
		RFAIL("init", rank);
	if (rank == 0 || rank == nranks - 1)
		fprintf(stderr,
			"lazy_connect: %s, %d ranks, rank %d after init: %.2f "
			"s, %ld QPs, %ld MRs, %d connected, RSS %ld KiB\n",
			getenv("OPENHCCL_RDMA_LAZY_RANKS")[0] == '0' ? "lazy"
								     : "eager",
			nranks, rank, (double)(ohc_time_ns() - t0) / 1e9,
			ohc_vx_qp_live(), ohc_vx_mr_live(), connected(comm),
			rss_kib());
	if (HcclAllReduce(&x, &sum, 1, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
			  comm, stream) ||
	    aclrtSynchronizeStream(stream))
		RFAIL("allreduce", rank);
	if (sum != nranks * (nranks - 1) / 2)
		RFAIL("allreduce: %d", rank, sum);
	if (rank == 0 || rank == nranks - 1)
		fprintf(stderr,
			"lazy_connect: %s, %d ranks, rank %d after an "
			"AllReduce: %ld QPs, %ld MRs, %d connected, RSS %ld "
			"KiB\n",
			getenv("OPENHCCL_RDMA_LAZY_RANKS")[0] == '0' ? "lazy"
								     : "eager",
			nranks, rank, ohc_vx_qp_live(), ohc_vx_mr_live(),
			connected(comm), rss_kib());
	if (HcclCommDestroy(comm))
		RFAIL("destroy", rank);
	aclrtDestroyStream(stream);
	aclFinalize();
	return 0;
}

static void measure(const char *lazy_ranks)
{
	struct arg *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	roce_env(lazy_ranks);
	unsetenv("HCCL_ALGO");
	cr_assert_eq(HcclGetRootInfo(&a->root[0]), HCCL_SUCCESS);
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(8, measure_rank, a, 240), 0);
	munmap(a, sizeof(*a));
}

/* Not a check: numbers for the record (bench/README.md). */
Test(lazy_connect, measure_eager_8_ranks, .timeout = 300)
{
	NEED_RDMA();
	measure("16");
}

Test(lazy_connect, measure_lazy_8_ranks, .timeout = 300)
{
	NEED_RDMA();
	measure("0");
}
