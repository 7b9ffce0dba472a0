/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sub-communicators (HcclCreateSubCommConfig) end to end, as 8 forked
 * processes (root info, shm) and as 8 thread ranks (HcclCommInitAll,
 * self): halves (2 x 4) and odd/even splits running AllReduce, Broadcast
 * and AllGather on their own streams while the parent runs an AllReduce
 * on another; a split of a split; non-members; names and lookup by name;
 * both destroy orders; argument errors, members that disagree (every
 * member fails at once with HCCL_E_PARA) and a member that never comes
 * (bounded by HCCL_CONNECT_TIMEOUT); descriptors and /dev/shm entries
 * all released.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

#define NR 8
#define NOT_MEMBER 0xFFFFFFFFu
#define WORLD_COUNT (1u << 18)
#define SUB_COUNT (1u << 16)
#define GATHER_COUNT 1000u

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		return 1;                                                      \
	} while (0)

#define CHECK_RET(call, want)                                                  \
	do {                                                                   \
		HcclResult _r = (call);                                        \
		if (_r != (want))                                              \
			FAIL("rank %d: %s:%d: %s returned %d, want %d", wr,    \
			     __FILE__, __LINE__, #call, (int)_r, (int)(want)); \
	} while (0)

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			FAIL("rank %d: %s:%d: %s is false", wr, __FILE__,      \
			     __LINE__, #cond);                                 \
	} while (0)

/* ---- building blocks ------------------------------------------------ */

static int sync_stream(aclrtStream s)
{
	return aclrtSynchronizeStream(s) == 0 ? 0 : 1;
}

static int32_t in_val(int wr, size_t i)
{
	return (int32_t)((wr + 1) * 1000 + (int)(i % 977));
}

static void fill_in(int32_t *b, size_t n, int wr)
{
	for (size_t i = 0; i < n; i++)
		b[i] = in_val(wr, i);
}

/* Sum over the listed world ranks of in_val, element i. */
static int32_t sum_val(const uint32_t *members, uint32_t n, size_t i)
{
	int32_t s = 0;

	for (uint32_t k = 0; k < n; k++)
		s += in_val((int)members[k], i);
	return s;
}

static HcclComm create_sub(HcclComm parent, uint32_t n, uint32_t *ids,
			   uint64_t sub_id, uint32_t me, const char *name,
			   HcclResult *ret_p)
{
	HcclCommConfig cfg;
	HcclComm sub = (HcclComm)0x1; /* must be overwritten on success */

	HcclCommConfigInit(&cfg);
	if (name)
		snprintf(cfg.hcclCommName, sizeof(cfg.hcclCommName), "%s",
			 name);
	*ret_p = HcclCreateSubCommConfig(&parent, n, ids, sub_id, me, &cfg,
					 &sub);
	return *ret_p == HCCL_SUCCESS ? sub : NULL;
}

/* The index of rank wr in ids[0..n), or NOT_MEMBER. */
static uint32_t index_of(const uint32_t *ids, uint32_t n, int wr)
{
	for (uint32_t i = 0; i < n; i++)
		if (ids[i] == (uint32_t)wr)
			return i;
	return NOT_MEMBER;
}

static int check_ident(HcclComm c, int wr, uint32_t size, uint32_t rank,
		       const char *name)
{
	char got[COMM_NAME_MAX_LENGTH];
	uint32_t u;
	HcclComm found = NULL;
	HcclResult async;

	CHECK_RET(HcclGetRankSize(c, &u), HCCL_SUCCESS);
	if (u != size)
		FAIL("rank %d: size %u, want %u", wr, u, size);
	CHECK_RET(HcclGetRankId(c, &u), HCCL_SUCCESS);
	if (u != rank)
		FAIL("rank %d: sub rank %u, want %u", wr, u, rank);
	CHECK_RET(HcclGetCommName(c, got), HCCL_SUCCESS);
	if (strcmp(got, name))
		FAIL("rank %d: name '%s', want '%s'", wr, got, name);
	CHECK_RET(HcclCommGetHandleWithName(name, &found), HCCL_SUCCESS);
	if (found != c)
		FAIL("rank %d: lookup of '%s' gave %p, want %p", wr, name,
		     found, c);
	CHECK_RET(HcclGetCommAsyncError(c, &async), HCCL_SUCCESS);
	CHECK(async == HCCL_SUCCESS);
	return 0;
}

/* ---- the main scenario ---------------------------------------------- */

struct streams {
	aclrtStream world, half, parity;
};

/*
 * Parent AllReduce on its stream while the halves run AllReduce and
 * AllGather and the odd/even sub-communicators a Broadcast, each on a
 * stream of its own; all issued before any is waited for.
 */
static int run_concurrent(HcclComm world, HcclComm half, HcclComm parity,
			  const struct streams *st, int wr, int round)
{
	uint32_t hm[4], pm[4];
	int32_t *wsend = malloc(WORLD_COUNT * 4), *wrecv = malloc(WORLD_COUNT * 4);
	int32_t *hsend = malloc(SUB_COUNT * 4), *hrecv = malloc(SUB_COUNT * 4);
	int32_t *bc = malloc(SUB_COUNT * 4);
	int32_t *gsend = malloc(GATHER_COUNT * 4),
		*grecv = malloc(GATHER_COUNT * 4 * 4);
	uint32_t wall[NR];
	int bad = 0, root_wr;

	for (int i = 0; i < 4; i++) {
		hm[i] = (uint32_t)((wr / 4) * 4 + i);
		pm[i] = (uint32_t)(wr % 2 + 2 * i);
	}
	for (int i = 0; i < NR; i++)
		wall[i] = (uint32_t)i;
	root_wr = (int)pm[(1 + round) % 4];
	fill_in(wsend, WORLD_COUNT, wr);
	fill_in(hsend, SUB_COUNT, wr + round);
	fill_in(gsend, GATHER_COUNT, wr * 3 + round);
	if (wr == root_wr)
		fill_in(bc, SUB_COUNT, 100 + round);
	else
		memset(bc, 0, SUB_COUNT * 4);
	memset(wrecv, 0, WORLD_COUNT * 4);
	memset(hrecv, 0, SUB_COUNT * 4);
	memset(grecv, 0, GATHER_COUNT * 16);

	if (HcclAllReduce(wsend, wrecv, WORLD_COUNT, HCCL_DATA_TYPE_INT32,
			  HCCL_REDUCE_SUM, world, st->world) ||
	    HcclAllReduce(hsend, hrecv, SUB_COUNT, HCCL_DATA_TYPE_INT32,
			  HCCL_REDUCE_SUM, half, st->half) ||
	    HcclBroadcast(bc, SUB_COUNT, HCCL_DATA_TYPE_INT32,
			  (uint32_t)((1 + round) % 4), parity, st->parity) ||
	    HcclAllGather(gsend, grecv, GATHER_COUNT, HCCL_DATA_TYPE_INT32,
			  half, st->half)) {
		fprintf(stderr, "rank %d: enqueue failed\n", wr);
		bad++;
	}
	bad += sync_stream(st->world) + sync_stream(st->half) +
	       sync_stream(st->parity);
	for (size_t i = 0; i < WORLD_COUNT && !bad; i++)
		if (wrecv[i] != sum_val(wall, NR, i)) {
			fprintf(stderr, "rank %d: world allreduce [%zu] = %d\n",
				wr, i, wrecv[i]);
			bad++;
		}
	for (size_t i = 0; i < SUB_COUNT && !bad; i++) {
		int32_t want = 0;

		for (int k = 0; k < 4; k++)
			want += in_val((int)hm[k] + round, i);
		if (hrecv[i] != want) {
			fprintf(stderr, "rank %d: half allreduce [%zu] = %d, "
					"want %d\n",
				wr, i, hrecv[i], want);
			bad++;
		}
		if (bc[i] != in_val(100 + round, i)) {
			fprintf(stderr, "rank %d: parity bcast [%zu] = %d\n",
				wr, i, bc[i]);
			bad++;
		}
	}
	for (int k = 0; k < 4 && !bad; k++)
		for (size_t i = 0; i < GATHER_COUNT; i++)
			if (grecv[k * GATHER_COUNT + i] !=
			    in_val((int)hm[k] * 3 + round, i)) {
				fprintf(stderr,
					"rank %d: half allgather block %d "
					"[%zu] wrong\n",
					wr, k, i);
				bad++;
				break;
			}
	free(wsend);
	free(wrecv);
	free(hsend);
	free(hrecv);
	free(bc);
	free(gsend);
	free(grecv);
	return bad;
}

/* AllReduce on c over the world ranks members[0..n); NULL stream. */
static int check_allreduce(HcclComm c, const uint32_t *members, uint32_t n,
			   int wr)
{
	int32_t send[513], recv[513];

	fill_in(send, 513, wr);
	CHECK_RET(HcclAllReduce(send, recv, 513, HCCL_DATA_TYPE_INT32,
				HCCL_REDUCE_SUM, c, NULL),
		  HCCL_SUCCESS);
	for (size_t i = 0; i < 513; i++)
		if (recv[i] != sum_val(members, n, i))
			FAIL("rank %d: allreduce over %u ranks wrong at %zu",
			     wr, n, i);
	return 0;
}

struct scenario {
	bool parent_first; /* destroy the parent before the sub-comms */
	bool check_fds;
	bool threads; /* other thread ranks may still hold the names */
};

static int scenario(HcclComm world, int wr, const struct streams *st,
		    const struct scenario *sc)
{
	char wname[COMM_NAME_MAX_LENGTH], want[COMM_NAME_MAX_LENGTH + 32];
	uint32_t half_ids[4], par_ids[4], pair_ids[2], three[3] = {0, 1, 2};
	uint32_t pair_world[2];
	HcclComm half, parity, pair, first3;
	HcclResult ret;
	int g = wr / 4, p = wr % 2;

	CHECK_RET(HcclGetCommName(world, wname), HCCL_SUCCESS);
	for (int i = 0; i < 4; i++) {
		half_ids[i] = (uint32_t)(g * 4 + i);
		par_ids[i] = (uint32_t)(p + 2 * i);
	}

	/* 2 x 4 with default names, odd/even with given names. */
	half = create_sub(world, 4, half_ids, 10 + (uint64_t)g,
			  (uint32_t)(wr % 4), NULL, &ret);
	CHECK_RET(ret, HCCL_SUCCESS);
	CHECK(half != NULL);
	snprintf(want, sizeof(want), "%s_sub_%d", wname, 10 + g);
	if (check_ident(half, wr, 4, (uint32_t)(wr % 4), want))
		return 1;
	snprintf(want, sizeof(want), "parity_%d", p);
	parity = create_sub(world, 4, par_ids, 77, (uint32_t)(wr / 2), want,
			    &ret);
	CHECK_RET(ret, HCCL_SUCCESS);
	if (check_ident(parity, wr, 4, (uint32_t)(wr / 2), want))
		return 1;
	/* The parent is untouched. */
	if (check_ident(world, wr, NR, (uint32_t)wr, wname))
		return 1;

	for (int round = 0; round < 3; round++)
		if (run_concurrent(world, half, parity, st, wr, round))
			return 1;

	/* Ranks 3..7 are not in {0, 1, 2}: NULL list, NULL result. */
	first3 = create_sub(world, wr < 3 ? 3 : 0, wr < 3 ? three : NULL,
			    wr < 3 ? 5 : NOT_MEMBER,
			    wr < 3 ? (uint32_t)wr : NOT_MEMBER, NULL, &ret);
	CHECK_RET(ret, HCCL_SUCCESS);
	CHECK((first3 != NULL) == (wr < 3));
	if (first3 && check_allreduce(first3, three, 3, wr))
		return 1;

	/* A split of a split: pairs of each half. */
	pair_ids[0] = (uint32_t)((wr % 4) / 2 * 2);
	pair_ids[1] = pair_ids[0] + 1;
	pair_world[0] = (uint32_t)(g * 4) + pair_ids[0];
	pair_world[1] = pair_world[0] + 1;
	pair = create_sub(half, 2, pair_ids, 3 + pair_ids[0] / 2,
			  (uint32_t)(wr % 2), NULL, &ret);
	CHECK_RET(ret, HCCL_SUCCESS);
	snprintf(want, sizeof(want), "%s_sub_%d_sub_%u", wname, 10 + g,
		 3 + pair_ids[0] / 2);
	if (check_ident(pair, wr, 2, (uint32_t)(wr % 2), want))
		return 1;
	if (check_allreduce(pair, pair_world, 2, wr))
		return 1;

	if (sc->parent_first) {
		/* Parent gone: the sub-comms still work, and split. */
		CHECK_RET(HcclCommDestroy(world), HCCL_SUCCESS);
		if (check_allreduce(half, half_ids, 4, wr) ||
		    check_allreduce(parity, par_ids, 4, wr))
			return 1;
		CHECK_RET(HcclCommDestroy(half), HCCL_SUCCESS);
		if (check_allreduce(pair, pair_world, 2, wr))
			return 1;
	} else {
		CHECK_RET(HcclCommDestroy(pair), HCCL_SUCCESS);
		CHECK_RET(HcclCommDestroy(half), HCCL_SUCCESS);
		/* The parent goes on after its children are gone. */
		if (check_allreduce(world, (uint32_t[]){0, 1, 2, 3, 4, 5, 6, 7},
				    NR, wr))
			return 1;
	}
	CHECK_RET(HcclCommDestroy(parity), HCCL_SUCCESS);
	if (first3)
		CHECK_RET(HcclCommDestroy(first3), HCCL_SUCCESS);
	if (sc->parent_first)
		CHECK_RET(HcclCommDestroy(pair), HCCL_SUCCESS);
	else
		CHECK_RET(HcclCommDestroy(world), HCCL_SUCCESS);
	/* Names are free again once destroyed. */
	if (!sc->threads)
		CHECK_RET(HcclCommGetHandleWithName(p ? "parity_1" : "parity_0",
						    &half),
			  HCCL_E_NOT_FOUND);
	return 0;
}

/* ---- process ranks ---------------------------------------------------- */

struct proc_arg {
	HcclRootInfo *root;
	struct scenario sc;
	int (*body)(HcclComm world, int wr, const struct streams *st,
		    const struct scenario *sc);
};

static int proc_rank(int wr, int nranks, void *p)
{
	struct proc_arg *a = p;
	struct streams st;
	HcclComm world;
	int bad, fds0;

	if (aclInit(NULL) || aclrtSetDevice(wr) ||
	    aclrtCreateStream(&st.world) || aclrtCreateStream(&st.half) ||
	    aclrtCreateStream(&st.parity))
		return 1;
	fds0 = ohc_test_count_fds();
	if (HcclCommInitRootInfo((uint32_t)nranks, a->root, (uint32_t)wr,
				 &world) != HCCL_SUCCESS)
		return 1;
	bad = a->body(world, wr, &st, &a->sc);
	if (!bad && a->sc.check_fds && ohc_test_count_fds() != fds0) {
		fprintf(stderr, "rank %d: %d descriptors open, %d before\n",
			wr, ohc_test_count_fds(), fds0);
		bad = 1;
	}
	aclrtDestroyStream(st.world);
	aclrtDestroyStream(st.half);
	aclrtDestroyStream(st.parity);
	aclrtResetDevice(wr);
	aclFinalize();
	return bad;
}

static void run_procs(struct proc_arg *a)
{
	HcclRootInfo *root = mmap(NULL, sizeof(*root), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(root, MAP_FAILED);
	a->root = root;
	cr_assert_eq(HcclGetRootInfo(root), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_fork_ranks(NR, proc_rank, a, 240), 0,
		     "some ranks failed");
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(root, sizeof(*root));
}

Test(subcomm, procs_children_first, .timeout = 300)
{
	struct proc_arg a = {.sc = {false, true}, .body = scenario};

	run_procs(&a);
}

Test(subcomm, procs_parent_first, .timeout = 300)
{
	struct proc_arg a = {.sc = {true, true}, .body = scenario};

	run_procs(&a);
}

/* ---- thread ranks ----------------------------------------------------- */

struct thread_arg {
	HcclComm comms[NR];
	struct scenario sc;
	int (*body)(HcclComm world, int wr, const struct streams *st,
		    const struct scenario *sc);
};

static int thread_rank(int wr, int nranks, void *p)
{
	struct thread_arg *a = p;
	struct streams st;
	int bad;

	(void)nranks;
	if (aclrtSetDevice(wr) || aclrtCreateStream(&st.world) ||
	    aclrtCreateStream(&st.half) || aclrtCreateStream(&st.parity))
		return 1;
	bad = a->body(a->comms[wr], wr, &st, &a->sc);
	aclrtDestroyStream(st.world);
	aclrtDestroyStream(st.half);
	aclrtDestroyStream(st.parity);
	aclrtResetDevice(wr);
	return bad;
}

static void run_threads(struct thread_arg *a)
{
	int32_t devs[NR];
	int fds0;

	for (int i = 0; i < NR; i++)
		devs[i] = i;
	cr_assert_eq(aclInit(NULL), 0);
	fds0 = ohc_test_count_fds();
	cr_assert_eq(HcclCommInitAll(NR, devs, a->comms), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_thread_ranks(NR, thread_rank, a), 0);
	cr_assert_eq(ohc_test_count_fds(), fds0);
	aclFinalize();
}

Test(subcomm, threads_children_first, .timeout = 300)
{
	struct thread_arg a = {.sc = {false, true, true}, .body = scenario};

	run_threads(&a);
}

Test(subcomm, threads_parent_first, .timeout = 300)
{
	struct thread_arg a = {.sc = {true, true, true}, .body = scenario};

	run_threads(&a);
}
