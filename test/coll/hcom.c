/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Named groups (hcom.h) end to end, as 4 forked processes over a world
 * communicator named "hccl_world_group" (root info, shm): groups {0,1}
 * and {1,2,3} (world rank 1 in both) created by their members only, and
 * {3,0,2} (unsorted: group ranks follow the list, roots and AllGather
 * blocks too);
 * sizes, ranks, local ranks and both rank mappings; an AllReduce on each
 * group's communicator (found by name); destroy and re-create; a group
 * whose communicator the application destroyed itself; argument
 * errors (NULL, the world name, unknown groups, non-members, bad rank
 * lists, names, gradient-fusion lists); /dev/shm entries released.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hcom.h>

#include "helpers/ohc_test.h"

#define NR 4
#define WORLD "hccl_world_group"
#define COUNT 1031u

#define FAIL OHC_RANK_FAIL
#define CHECK_RET(call, want) OHC_RANK_CHECK_RET(wr, call, want)

#define CHECK_EQ(got, want)                                                    \
	do {                                                                   \
		unsigned long _g = (got), _w = (want);                         \
		if (_g != _w)                                                  \
			FAIL("rank %d: %s:%d: %s is %lu, want %lu", wr,        \
			     __FILE__, __LINE__, #got, _g, _w);                \
	} while (0)

static int32_t in_val(int wr, size_t i)
{
	return (int32_t)((wr + 1) * 100 + (int)(i % 61));
}

/* AllReduce (sum) on the group's communicator, checked element-wise. */
static int group_allreduce(const char *group, const uint32_t *members,
			   uint32_t n, int wr)
{
	static int32_t send[COUNT], recv[COUNT];
	HcclComm c = NULL;
	uint32_t size;

	CHECK_RET(HcclCommGetHandleWithName(group, &c), HCCL_SUCCESS);
	CHECK_RET(HcclGetRankSize(c, &size), HCCL_SUCCESS);
	CHECK_EQ(size, n);
	for (size_t i = 0; i < COUNT; i++)
		send[i] = in_val(wr, i);
	CHECK_RET(HcclAllReduce(send, recv, COUNT, HCCL_DATA_TYPE_INT32,
				HCCL_REDUCE_SUM, c, NULL),
		  HCCL_SUCCESS);
	for (size_t i = 0; i < COUNT; i++) {
		int32_t want = 0;

		for (uint32_t k = 0; k < n; k++)
			want += in_val((int)members[k], i);
		if (recv[i] != want)
			FAIL("rank %d: '%s' allreduce: [%zu] = %d, want %d", wr,
			     group, i, recv[i], want);
	}
	return 0;
}

/*
 * The group's communicator numbers its ranks in list order: an AllGather
 * of world ranks lands in members[] order, and a Broadcast from group
 * rank 1 carries world rank members[1]'s value.
 */
static int group_order(const char *group, const uint32_t *members, uint32_t n,
		       int wr)
{
	uint32_t mine = (uint32_t)wr, all[NR], root_val;
	HcclComm c = NULL;

	CHECK_RET(HcclCommGetHandleWithName(group, &c), HCCL_SUCCESS);
	CHECK_RET(HcclAllGather(&mine, all, 1, HCCL_DATA_TYPE_UINT32, c, NULL),
		  HCCL_SUCCESS);
	for (uint32_t i = 0; i < n; i++)
		CHECK_EQ(all[i], members[i]);
	root_val = (uint32_t)wr * 10 + 7;
	CHECK_RET(
		HcclBroadcast(&root_val, 1, HCCL_DATA_TYPE_UINT32, 1, c, NULL),
		HCCL_SUCCESS);
	CHECK_EQ(root_val, members[1] * 10 + 7);
	return 0;
}

/* Every query of a group the caller is a member of. */
static int check_group(const char *group, const uint32_t *members, uint32_t n,
		       int wr)
{
	uint32_t u, me = n;

	for (uint32_t i = 0; i < n; i++)
		if (members[i] == (uint32_t)wr)
			me = i;
	CHECK_RET(HcomGetRankSize(group, &u), HCCL_SUCCESS);
	CHECK_EQ(u, n);
	CHECK_RET(HcomGetRankId(group, &u), HCCL_SUCCESS);
	CHECK_EQ(u, me);
	/* All ranks of this test are on one host. */
	CHECK_RET(HcomGetLocalRankSize(group, &u), HCCL_SUCCESS);
	CHECK_EQ(u, n);
	CHECK_RET(HcomGetLocalRankId(group, &u), HCCL_SUCCESS);
	CHECK_EQ(u, me);
	for (uint32_t g = 0; g < n; g++) {
		CHECK_RET(HcomGetWorldRankFromGroupRank(group, g, &u),
			  HCCL_SUCCESS);
		CHECK_EQ(u, members[g]);
	}
	for (uint32_t w = 0; w < NR; w++) {
		uint32_t want = n;

		for (uint32_t i = 0; i < n; i++)
			if (members[i] == w)
				want = i;
		u = 12345;
		CHECK_RET(HcomGetGroupRankFromWorldRank(w, group, &u),
			  want < n ? HCCL_SUCCESS : HCCL_E_PARA);
		CHECK_EQ(u, want < n ? want : 12345);
	}
	CHECK_RET(HcomGetWorldRankFromGroupRank(group, n, &u), HCCL_E_PARA);
	return 0;
}

static int check_world(int wr)
{
	uint32_t ids[NR] = {0, 1, 2, 3};

	return check_group(WORLD, ids, NR, wr);
}

/* Errors every rank can provoke alone. */
static int check_errors(int wr)
{
	uint32_t u = 7, pair[2] = {0, 1}, bad[2];
	char longname[200];
	uint32_t idx[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	float sizes[2] = {96.54f, 3.46f};

	/* NULL pointers. */
	CHECK_RET(HcomCreateGroup(NULL, 2, pair), HCCL_E_PTR);
	CHECK_RET(HcomCreateGroup("gn", 2, NULL), HCCL_E_PTR);
	CHECK_RET(HcomDestroyGroup(NULL), HCCL_E_PTR);
	CHECK_RET(HcomGetRankSize(NULL, &u), HCCL_E_PTR);
	CHECK_RET(HcomGetRankSize(WORLD, NULL), HCCL_E_PTR);
	CHECK_RET(HcomGetLocalRankSize(WORLD, NULL), HCCL_E_PTR);
	CHECK_RET(HcomGetRankId(WORLD, NULL), HCCL_E_PTR);
	CHECK_RET(HcomGetLocalRankId(NULL, &u), HCCL_E_PTR);
	CHECK_RET(HcomGetWorldRankFromGroupRank(WORLD, 0, NULL), HCCL_E_PTR);
	CHECK_RET(HcomGetGroupRankFromWorldRank(0, NULL, &u), HCCL_E_PTR);
	CHECK_RET(HcomSetGradFusionByIndex(WORLD, 1, NULL), HCCL_E_PTR);
	CHECK_RET(HcomSetGradFusionBySize(NULL, 2, sizes), HCCL_E_PTR);
	CHECK_EQ(u, 7);

	/* The world group cannot be created or destroyed. */
	CHECK_RET(HcomCreateGroup(WORLD, 2, pair), HCCL_E_PARA);
	CHECK_RET(HcomDestroyGroup(WORLD), HCCL_E_PARA);

	/* Unknown groups. */
	CHECK_RET(HcomDestroyGroup("nope"), HCCL_E_PARA);
	CHECK_RET(HcomGetRankSize("nope", &u), HCCL_E_PARA);
	CHECK_RET(HcomGetLocalRankId("nope", &u), HCCL_E_PARA);
	CHECK_RET(HcomGetGroupRankFromWorldRank(0, "nope", &u), HCCL_E_PARA);
	CHECK_RET(HcomSetGradFusionByIndex("nope", 1, idx), HCCL_E_PARA);
	CHECK_EQ(u, 7);

	/* Names: empty, 128 characters. */
	memset(longname, 'a', sizeof(longname));
	longname[128] = '\0';
	CHECK_RET(HcomCreateGroup("", 2, pair), HCCL_E_PARA);
	CHECK_RET(HcomCreateGroup(longname, 2, pair), HCCL_E_PARA);
	CHECK_RET(HcomGetRankSize(longname, &u), HCCL_E_PARA);

	/* Bad rank lists: nobody else is involved, they fail at once. */
	bad[0] = (uint32_t)wr;
	bad[1] = NR; /* out of range */
	CHECK_RET(HcomCreateGroup("gbad", 2, bad), HCCL_E_PARA);
	bad[1] = (uint32_t)wr; /* duplicate */
	CHECK_RET(HcomCreateGroup("gbad", 2, bad), HCCL_E_PARA);
	CHECK_RET(HcomCreateGroup("gbad", 0, pair), HCCL_E_PARA);
	CHECK_RET(HcomCreateGroup("gbad", NR + 1, idx), HCCL_E_PARA);
	/* Not a member. */
	bad[0] = (uint32_t)(wr + 1) % NR;
	bad[1] = (uint32_t)(wr + 2) % NR;
	if (bad[0] > bad[1]) {
		u = bad[0];
		bad[0] = bad[1];
		bad[1] = u;
	}
	CHECK_RET(HcomCreateGroup("gbad", 2, bad), HCCL_E_PARA);
	CHECK_RET(HcomGetRankSize("gbad", &u), HCCL_E_PARA);

	/* World rank mapping out of range. */
	CHECK_RET(HcomGetGroupRankFromWorldRank(NR, WORLD, &u), HCCL_E_PARA);
	CHECK_RET(HcomGetWorldRankFromGroupRank(WORLD, NR, &u), HCCL_E_PARA);

	/* Gradient fusion lists. */
	CHECK_RET(HcomSetGradFusionByIndex(WORLD, 0, idx), HCCL_E_PARA);
	CHECK_RET(HcomSetGradFusionByIndex(WORLD, 9, idx), HCCL_E_PARA);
	CHECK_RET(HcomSetGradFusionByIndex(WORLD, 8, idx), HCCL_SUCCESS);
	idx[1] = idx[0]; /* not strictly ascending */
	CHECK_RET(HcomSetGradFusionByIndex(WORLD, 2, idx), HCCL_E_PARA);
	idx[1] = 0;
	CHECK_RET(HcomSetGradFusionByIndex(WORLD, 2, idx), HCCL_E_PARA);
	CHECK_RET(HcomSetGradFusionBySize(WORLD, 2, sizes), HCCL_SUCCESS);
	CHECK_RET(HcomSetGradFusionBySize(WORLD, 0, sizes), HCCL_E_PARA);
	CHECK_RET(HcomSetGradFusionBySize(WORLD, 9, sizes), HCCL_E_PARA);
	sizes[1] = 3.0f; /* sums to 99.54 */
	CHECK_RET(HcomSetGradFusionBySize(WORLD, 2, sizes), HCCL_E_PARA);
	sizes[0] = 101.0f;
	sizes[1] = -1.0f; /* sums to 100 but negative */
	CHECK_RET(HcomSetGradFusionBySize(WORLD, 2, sizes), HCCL_E_PARA);
	sizes[0] = 100.0f;
	CHECK_RET(HcomSetGradFusionBySize(WORLD, 1, sizes), HCCL_SUCCESS);
	return 0;
}

static const uint32_t g01[2] = {0, 1};
static const uint32_t g123[3] = {1, 2, 3};
/* Unsorted, and overlapping both groups above. */
static const uint32_t g302[3] = {3, 0, 2};

static int in_list(const uint32_t *l, uint32_t n, int wr)
{
	for (uint32_t i = 0; i < n; i++)
		if (l[i] == (uint32_t)wr)
			return 1;
	return 0;
}

static int scenario(int wr)
{
	uint32_t ids01[2], ids123[3], u;
	uint32_t idx[2] = {3, 9};
	float sizes[3] = {20.0f, 30.0f, 50.0f};
	int in01 = in_list(g01, 2, wr), in123 = in_list(g123, 3, wr);

	memcpy(ids01, g01, sizeof(ids01));
	memcpy(ids123, g123, sizeof(ids123));
	if (check_world(wr) || check_errors(wr))
		return 1;
	if (in01)
		CHECK_RET(HcomCreateGroup("g01", 2, ids01), HCCL_SUCCESS);
	if (in123)
		CHECK_RET(HcomCreateGroup("g123", 3, ids123), HCCL_SUCCESS);
	/* The caller's list is not kept: scribbling on it changes nothing. */
	ids01[0] = ids01[1] = ids123[0] = 77;
	if (in01) {
		CHECK_RET(HcomCreateGroup("g01", 2, (uint32_t[]){0, 1}),
			  HCCL_E_PARA); /* exists */
		if (check_group("g01", g01, 2, wr) ||
		    group_allreduce("g01", g01, 2, wr))
			return 1;
		CHECK_RET(HcomSetGradFusionByIndex("g01", 2, idx),
			  HCCL_SUCCESS);
		CHECK_RET(HcomSetGradFusionBySize("g01", 3, sizes),
			  HCCL_SUCCESS);
	} else {
		CHECK_RET(HcomGetRankSize("g01", &u), HCCL_E_PARA);
		CHECK_RET(HcomDestroyGroup("g01"), HCCL_E_PARA);
		CHECK_RET(HcomSetGradFusionByIndex("g01", 2, idx), HCCL_E_PARA);
	}
	if (in123) {
		if (check_group("g123", g123, 3, wr) ||
		    group_allreduce("g123", g123, 3, wr))
			return 1;
	} else {
		CHECK_RET(HcomGetRankId("g123", &u), HCCL_E_PARA);
	}
	if (in_list(g302, 3, wr)) {
		CHECK_RET(HcomCreateGroup("g302", 3, (uint32_t[]){3, 0, 2}),
			  HCCL_SUCCESS);
		if (check_group("g302", g302, 3, wr) ||
		    group_allreduce("g302", g302, 3, wr) ||
		    group_order("g302", g302, 3, wr))
			return 1;
		CHECK_RET(HcomDestroyGroup("g302"), HCCL_SUCCESS);
	} else {
		CHECK_RET(HcomGetRankId("g302", &u), HCCL_E_PARA);
	}
	/* The world group is untouched. */
	if (check_world(wr))
		return 1;
	if (in01) {
		CHECK_RET(HcomDestroyGroup("g01"), HCCL_SUCCESS);
		CHECK_RET(HcomGetRankSize("g01", &u), HCCL_E_PARA);
		CHECK_RET(HcomDestroyGroup("g01"), HCCL_E_PARA);
		/* The name is free again. */
		CHECK_RET(HcomCreateGroup("g01", 2, (uint32_t[]){0, 1}),
			  HCCL_SUCCESS);
		if (check_group("g01", g01, 2, wr) ||
		    group_allreduce("g01", g01, 2, wr))
			return 1;
		CHECK_RET(HcomDestroyGroup("g01"), HCCL_SUCCESS);
	}
	if (in123) {
		/* The application destroys the group's communicator itself:
		 * the group is forgotten, not used after free, and its name
		 * can be created again. */
		HcclComm c = NULL;

		CHECK_RET(HcclCommGetHandleWithName("g123", &c), HCCL_SUCCESS);
		CHECK_RET(HcclCommDestroy(c), HCCL_SUCCESS);
		CHECK_RET(HcomGetRankSize("g123", &u), HCCL_E_PARA);
		CHECK_RET(HcomDestroyGroup("g123"), HCCL_E_PARA);
		CHECK_RET(HcomCreateGroup("g123", 3, (uint32_t[]){1, 2, 3}),
			  HCCL_SUCCESS);
		if (check_group("g123", g123, 3, wr) ||
		    group_allreduce("g123", g123, 3, wr))
			return 1;
		CHECK_RET(HcomDestroyGroup("g123"), HCCL_SUCCESS);
	}
	return 0;
}

struct proc_arg {
	HcclRootInfo *root;
	int *ready;
};

static int proc_rank(int wr, int nranks, void *p)
{
	struct proc_arg *a = p;
	HcclCommConfig cfg;
	HcclComm world = NULL;
	uint32_t u;
	int bad = 1;

	if (ohc_test_share_roots(a->root, 1, a->ready, wr, 30))
		return 1;
	if (aclInit(NULL) || aclrtSetDevice(wr))
		return 1;
	/* No world group yet. */
	CHECK_RET(HcomGetRankSize(WORLD, &u), HCCL_E_PARA);
	CHECK_RET(HcomCreateGroup("g01", 2, (uint32_t[]){0, 1}), HCCL_E_PARA);
	HcclCommConfigInit(&cfg);
	snprintf(cfg.hcclCommName, sizeof(cfg.hcclCommName), "%s", WORLD);
	if (HcclCommInitRootInfoConfig((uint32_t)nranks, a->root, (uint32_t)wr,
				       &cfg, &world) != HCCL_SUCCESS)
		goto out;
	bad = scenario(wr);
	if (HcclCommDestroy(world) != HCCL_SUCCESS)
		bad = 1;
out:
	aclrtResetDevice(wr);
	aclFinalize();
	return bad;
}

Test(hcom, groups_procs, .timeout = 120)
{
	struct proc_arg a;
	void *shared = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(shared, MAP_FAILED);
	a.root = shared;
	a.ready = (int *)((char *)shared + 2 * 4096);
	*a.ready = 0;
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(NR, proc_rank, &a, 90), 0,
		     "some ranks failed");
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(shared, 3 * 4096);
}
