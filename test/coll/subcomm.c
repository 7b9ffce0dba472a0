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
#define RING "level0:NA;level1:ring"

#define FAIL OHC_RANK_FAIL
#define CHECK_RET(call, want) OHC_RANK_CHECK_RET(wr, call, want)

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
	int32_t *wsend = malloc(WORLD_COUNT * 4),
		*wrecv = malloc(WORLD_COUNT * 4);
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
			fprintf(stderr,
				"rank %d: half allreduce [%zu] = %d, "
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
	char algo[HCCL_COMM_ALGO_MAX_LENGTH];
	HcclCommConfig cfg;
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

	/*
	 * Ranks 3..7 are not in {0, 1, 2}: NULL list, NULL result. The
	 * members' config (an algorithm) is the sub-communicator's own.
	 */
	HcclCommConfigInit(&cfg);
	snprintf(cfg.hcclAlgo, sizeof(cfg.hcclAlgo), "%s", RING);
	first3 = (HcclComm)0x1;
	CHECK_RET(HcclCreateSubCommConfig(
			  &world, wr < 3 ? 3 : 0, wr < 3 ? three : NULL,
			  wr < 3 ? 5 : NOT_MEMBER,
			  wr < 3 ? (uint32_t)wr : NOT_MEMBER, &cfg, &first3),
		  HCCL_SUCCESS);
	CHECK((first3 != NULL) == (wr < 3));
	if (first3) {
		CHECK_RET(HcclConfigGetInfo(first3, HCCL_CONFIG_TYPE_HCCL_ALGO,
					    sizeof(algo), algo),
			  HCCL_SUCCESS);
		CHECK(!strcmp(algo, RING));
		CHECK_RET(HcclConfigGetInfo(world, HCCL_CONFIG_TYPE_HCCL_ALGO,
					    sizeof(algo), algo),
			  HCCL_SUCCESS);
		CHECK(strcmp(algo, RING));
		if (check_allreduce(first3, three, 3, wr))
			return 1;
	}

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
		/*
		 * Parent gone: the sub-comms still work, and split. (The
		 * barrier: ranks outside first3 and pair would otherwise
		 * destroy the world while a peer may still be reaping its
		 * last large send on it, which the shm transport takes for
		 * a dead peer; reported to the lead.)
		 */
		CHECK_RET(HcclBarrier(world, NULL), HCCL_SUCCESS);
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

/* ---- errors ------------------------------------------------------------ */

/* Arguments every rank gets wrong alike: refused locally, at once. */
static int local_errors(HcclComm world, int wr)
{
	uint32_t ok[4] = {0, 1, 2, 3}, unsorted[4] = {1, 0, 2, 3};
	uint32_t dup[3] = {0, 0, 1}, range[2] = {0, NR}, other[1];
	HcclCommConfig cfg;
	HcclComm sub = NULL, nullc = NULL, bogus = (HcclComm)&cfg;
	uint32_t me = (uint32_t)(wr % 4);

	HcclCommConfigInit(&cfg);
	other[0] = (uint32_t)((wr + 1) % NR);
	CHECK_RET(HcclCreateSubCommConfig(NULL, 4, ok, 1, me, &cfg, &sub),
		  HCCL_E_PTR);
	CHECK_RET(HcclCreateSubCommConfig(&nullc, 4, ok, 1, me, &cfg, &sub),
		  HCCL_E_PTR);
	CHECK_RET(HcclCreateSubCommConfig(&world, 4, ok, 1, me, &cfg, NULL),
		  HCCL_E_PTR);
	CHECK_RET(HcclCreateSubCommConfig(&world, 4, ok, 1, me, NULL, &sub),
		  HCCL_E_PTR);
	CHECK_RET(HcclCreateSubCommConfig(&world, 4, NULL, 1, me, &cfg, &sub),
		  HCCL_E_PTR);
	CHECK_RET(HcclCreateSubCommConfig(&bogus, 4, ok, 1, me, &cfg, &sub),
		  HCCL_E_PARA);
	CHECK_RET(HcclCreateSubCommConfig(&world, 0, ok, 1, me, &cfg, &sub),
		  HCCL_E_PARA);
	CHECK_RET(
		HcclCreateSubCommConfig(&world, NR + 1, ok, 1, me, &cfg, &sub),
		HCCL_E_PARA);
	CHECK_RET(
		HcclCreateSubCommConfig(&world, 4, unsorted, 1, me, &cfg, &sub),
		HCCL_E_PARA);
	CHECK_RET(HcclCreateSubCommConfig(&world, 3, dup, 1, me, &cfg, &sub),
		  HCCL_E_PARA);
	CHECK_RET(HcclCreateSubCommConfig(&world, 2, range, 1, me, &cfg, &sub),
		  HCCL_E_PARA);
	/* A list without the caller: non-members pass NULL instead. */
	CHECK_RET(HcclCreateSubCommConfig(&world, 1, other, 1, 0, &cfg, &sub),
		  HCCL_E_PARA);
	CHECK(sub == NULL);
	return 0;
}

enum disagree {
	DIS_ID,	     /* one member passes another subCommId */
	DIS_RANKNUM, /* one member passes a shorter list */
	DIS_LIST,    /* one member passes another list, same length */
	DIS_NAME,    /* one member asks for another hcclCommName */
	DIS_ALGO,    /* one member's config has another hcclAlgo */
	DIS_MAGIC,   /* one member's config was never initialised */
	DIS_INDEX,   /* one member passes a wrong subCommRankId */
	DIS_COUNT
};

/*
 * Half 0 splits with one member (rank 1 or the leader, rank 0) getting
 * something wrong: every member of half 0 gets HCCL_E_PARA at once (no
 * timeout). Half 1 splits correctly at the same time. A leader whose list
 * is short is tried last: the request of the rank it leaves out stays
 * queued at the leader. (Not among the cases: a leader whose list names a
 * rank that does not take part; it waits for that rank until the
 * timeout, see absent_body.)
 */
static int disagreement(HcclComm world, int wr, enum disagree d, int culprit)
{
	uint32_t ids[4], short3[3], other[4] = {0, 1, 2, 5};
	HcclCommConfig cfg;
	HcclComm sub = NULL;
	uint32_t n = 4, *list = ids, me = (uint32_t)(wr % 4);
	uint64_t id = 40 + (uint64_t)d;
	HcclResult want = wr < 4 ? HCCL_E_PARA : HCCL_SUCCESS, ret;
	double t0;

	for (int i = 0; i < 4; i++)
		ids[i] = (uint32_t)((wr / 4) * 4 + i);
	memcpy(short3, ids, sizeof(short3));
	HcclCommConfigInit(&cfg);
	if (wr == culprit) {
		switch (d) {
		case DIS_ID:
			id += 100;
			break;
		case DIS_RANKNUM:
			if (me == 3)
				return 1; /* not a valid scenario */
			n = 3;
			list = short3;
			break;
		case DIS_LIST:
			list = other;
			break;
		case DIS_NAME:
			snprintf(cfg.hcclCommName, sizeof(cfg.hcclCommName),
				 "odd_one");
			break;
		case DIS_ALGO:
			snprintf(cfg.hcclAlgo, sizeof(cfg.hcclAlgo),
				 "level0:NA;level1:ring");
			break;
		case DIS_MAGIC:
			memset(&cfg, 0, sizeof(cfg));
			break;
		case DIS_INDEX:
			me = (me + 1) % 4;
			break;
		default:
			return 1;
		}
	}
	t0 = ohc_test_now_s();
	ret = HcclCreateSubCommConfig(&world, n, list, id, me, &cfg, &sub);
	if (ret != want)
		FAIL("rank %d: disagreement %d (culprit %d): %d, want %d", wr,
		     (int)d, culprit, (int)ret, (int)want);
	if (ohc_test_now_s() - t0 > 5.0)
		FAIL("rank %d: disagreement %d took %.1f s: a timeout, not a "
		     "verdict",
		     wr, (int)d, ohc_test_now_s() - t0);
	if (ret == HCCL_SUCCESS) {
		if (check_allreduce(sub, ids, 4, wr))
			return 1;
		CHECK_RET(HcclCommDestroy(sub), HCCL_SUCCESS);
	}
	return 0;
}

static int errors_body(HcclComm world, int wr, const struct streams *st,
		       const struct scenario *sc)
{
	uint32_t all[NR], ids[4];
	HcclComm a, b;
	HcclResult ret;
	char name[32];

	(void)st;
	(void)sc;
	for (int i = 0; i < NR; i++)
		all[i] = (uint32_t)i;
	for (int i = 0; i < 4; i++)
		ids[i] = (uint32_t)((wr / 4) * 4 + i);
	if (local_errors(world, wr))
		return 1;
	for (int d = 0; d < DIS_COUNT; d++)
		for (int culprit = 0; culprit < 2; culprit++)
			if ((culprit || (d != DIS_RANKNUM && d != DIS_LIST)) &&
			    disagreement(world, wr, (enum disagree)d, culprit))
				return 1;

	/* A name in use is refused on every member. */
	snprintf(name, sizeof(name), "dup_%d", wr / 4);
	a = create_sub(world, 4, ids, 60, (uint32_t)(wr % 4), name, &ret);
	CHECK_RET(ret, HCCL_SUCCESS);
	b = create_sub(world, 4, ids, 61, (uint32_t)(wr % 4), name, &ret);
	CHECK_RET(ret, HCCL_E_PARA);
	CHECK(b == NULL);
	/*
	 * Nothing is left behind: a good split and the parent still work.
	 * (Ids differ per half: thread ranks share one process, where names
	 * must be unique.)
	 */
	b = create_sub(world, 4, ids, 62 + (uint64_t)(wr / 4),
		       (uint32_t)(wr % 4), NULL, &ret);
	CHECK_RET(ret, HCCL_SUCCESS);
	if (check_allreduce(b, ids, 4, wr) || check_allreduce(a, ids, 4, wr) ||
	    check_allreduce(world, all, NR, wr))
		return 1;
	CHECK_RET(HcclCommDestroy(a), HCCL_SUCCESS);
	CHECK_RET(HcclCommDestroy(b), HCCL_SUCCESS);
	/* rank 3, outside the leader's list, hears the verdict too */
	if (disagreement(world, wr, DIS_RANKNUM, 0))
		return 1;
	/* rank 3 may still be asking rank 0: keep the world until it is done */
	CHECK_RET(HcclBarrier(world, NULL), HCCL_SUCCESS);
	CHECK_RET(HcclCommDestroy(world), HCCL_SUCCESS);
	return 0;
}

/*
 * HCCL_CONNECT_TIMEOUT=5: in half 0 rank 3 never calls, in half 1 the
 * lowest rank (the one the others report to) never calls. The others get
 * HCCL_E_TIMEOUT within the bound; the parent's data path is unharmed,
 * and half 0 can split again. (Half 1 cannot: its lowest rank still holds
 * the requests of the failed split, and would refuse the next one as
 * another subCommId; a documented limit.)
 */
static int absent_body(HcclComm world, int wr, const struct streams *st,
		       const struct scenario *sc)
{
	uint32_t all[NR], ids[4];
	HcclComm sub = NULL;
	HcclResult ret;
	double t0, dt;

	(void)st;
	(void)sc;
	for (int i = 0; i < NR; i++)
		all[i] = (uint32_t)i;
	for (int i = 0; i < 4; i++)
		ids[i] = (uint32_t)((wr / 4) * 4 + i);
	if (wr != 3 && wr != 4) {
		t0 = ohc_test_now_s();
		sub = create_sub(world, 4, ids, 7, (uint32_t)(wr % 4), NULL,
				 &ret);
		dt = ohc_test_now_s() - t0;
		CHECK_RET(ret, HCCL_E_TIMEOUT);
		CHECK(sub == NULL);
		if (dt < 4.5 || dt > 20.0)
			FAIL("rank %d: gave up after %.1f s, bound 5 s", wr,
			     dt);
	}
	if (check_allreduce(world, all, NR, wr))
		return 1;
	/*
	 * Half 0 again, rank 3 included: the answer rank 0 sent it for the
	 * failed split is dropped, the new one taken.
	 */
	if (wr < 4) {
		sub = create_sub(world, 4, ids, 8, (uint32_t)wr, NULL, &ret);
		CHECK_RET(ret, HCCL_SUCCESS);
		if (check_allreduce(sub, ids, 4, wr))
			return 1;
		CHECK_RET(HcclCommDestroy(sub), HCCL_SUCCESS);
	}
	CHECK_RET(HcclCommDestroy(world), HCCL_SUCCESS);
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
		fprintf(stderr, "rank %d: %d descriptors open, %d before\n", wr,
			ohc_test_count_fds(), fds0);
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

Test(subcomm, threads_errors, .timeout = 300)
{
	struct thread_arg a = {.sc = {false, true, true}, .body = errors_body};

	setenv("HCCL_CONNECT_TIMEOUT", "20", 1); /* a bug fails sooner */
	run_threads(&a);
}

Test(subcomm, threads_absent_member, .timeout = 300)
{
	struct thread_arg a = {.sc = {false, true, true}, .body = absent_body};

	setenv("HCCL_CONNECT_TIMEOUT", "5", 1); /* world init too */
	run_threads(&a);
}

Test(subcomm, procs_errors, .timeout = 300)
{
	struct proc_arg a = {.sc = {false, true, false}, .body = errors_body};

	setenv("HCCL_CONNECT_TIMEOUT", "20", 1); /* a bug fails sooner */
	run_procs(&a);
}

Test(subcomm, procs_absent_member, .timeout = 300)
{
	struct proc_arg a = {.sc = {false, true, false}, .body = absent_body};

	setenv("HCCL_CONNECT_TIMEOUT", "5", 1); /* world init too */
	run_procs(&a);
}

/* One rank: names (default, given, too long, taken) and a 1-rank split. */
Test(subcomm, one_rank_names)
{
	HcclRootInfo ri;
	HcclCommConfig cfg;
	HcclComm world = NULL, a = NULL, b = NULL, found = NULL;
	char name[COMM_NAME_MAX_LENGTH], want[COMM_NAME_MAX_LENGTH];
	uint32_t zero = 0, u = 7;

	cr_assert_eq(HcclGetRootInfo(&ri), HCCL_SUCCESS);
	HcclCommConfigInit(&cfg);
	/* 120 characters: "<name>_sub_<id>" no longer fits in 128 bytes */
	memset(cfg.hcclCommName, 'w', 120);
	cfg.hcclCommName[120] = '\0';
	cr_assert_eq(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &world),
		     HCCL_SUCCESS);
	HcclCommConfigInit(&cfg);
	cr_expect_eq(HcclCreateSubCommConfig(&world, 1, &zero, 12345678, 0,
					     &cfg, &a),
		     HCCL_E_PARA);
	cr_expect_null(a);
	cr_expect_eq(HcclCreateSubCommConfig(&world, 1, &zero, 1, 0, &cfg, &a),
		     HCCL_SUCCESS);
	cr_assert_not_null(a);
	cr_expect_eq(HcclGetRankSize(a, &u), HCCL_SUCCESS);
	cr_expect_eq(u, 1);
	cr_expect_eq(HcclGetCommName(a, name), HCCL_SUCCESS);
	memset(want, 'w', 120);
	snprintf(want + 120, sizeof(want) - 120, "_sub_1");
	cr_expect_str_eq(name, want);
	snprintf(cfg.hcclCommName, sizeof(cfg.hcclCommName), "mine");
	cr_expect_eq(HcclCreateSubCommConfig(&a, 1, &zero, 2, 0, &cfg, &b),
		     HCCL_SUCCESS);
	cr_expect_eq(HcclCommGetHandleWithName("mine", &found), HCCL_SUCCESS);
	cr_expect_eq(found, b);
	/* taken, whatever the id */
	found = NULL;
	cr_expect_eq(
		HcclCreateSubCommConfig(&world, 1, &zero, 3, 0, &cfg, &found),
		HCCL_E_PARA);
	cr_expect_null(found);
	cr_expect_eq(HcclCommDestroy(world), HCCL_SUCCESS);
	cr_expect_eq(HcclCommDestroy(b), HCCL_SUCCESS);
	cr_expect_eq(HcclCommDestroy(a), HCCL_SUCCESS);
	cr_expect_eq(HcclCommGetHandleWithName("mine", &found),
		     HCCL_E_NOT_FOUND);
}
