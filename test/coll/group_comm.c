/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Communicator management inside a group (spec 2.6, use a): one thread
 * brings up the communicators of several devices between HcclGroupStart
 * and HcclGroupEnd (alone, each init would wait for the others forever),
 * runs grouped collectives on them, splits them in a group, and destroys
 * them in a group. Also:
 * nesting, a failure reported by HcclGroupEnd, and management mixed with
 * operations refused with nothing run.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

enum { NR = 4, COUNT = 4099 };

/* Init NR ranks from this thread in one group; every handle is set. */
static void group_init(HcclRootInfo *root, HcclComm *comms, int nest)
{
	cr_assert_eq(HcclGetRootInfo(root), HCCL_SUCCESS);
	cr_assert_eq(HcclGroupStart(), HCCL_SUCCESS);
	if (nest)
		cr_assert_eq(HcclGroupStart(), HCCL_SUCCESS);
	for (int r = 0; r < NR; r++) {
		comms[r] = NULL;
		cr_assert_eq(HcclCommInitRootInfo(NR, root, (uint32_t)r,
						  &comms[r]),
			     HCCL_SUCCESS);
		cr_assert_null(comms[r], "init ran before the group ended");
	}
	if (nest) {
		cr_assert_eq(HcclGroupEnd(), HCCL_SUCCESS);
		cr_assert_null(comms[0], "an inner group end ran the inits");
	}
	cr_assert_eq(HcclGroupEnd(), HCCL_SUCCESS);
	for (int r = 0; r < NR; r++) {
		uint32_t rank = 99, size = 0;

		cr_assert_not_null(comms[r]);
		cr_assert_eq(HcclGetRankId(comms[r], &rank), HCCL_SUCCESS);
		cr_assert_eq(HcclGetRankSize(comms[r], &size), HCCL_SUCCESS);
		cr_assert_eq(rank, (uint32_t)r);
		cr_assert_eq(size, NR);
	}
}

static void group_destroy(HcclComm *comms)
{
	cr_assert_eq(HcclGroupStart(), HCCL_SUCCESS);
	for (int r = 0; r < NR; r++)
		cr_assert_eq(HcclCommDestroy(comms[r]), HCCL_SUCCESS);
	cr_assert_eq(HcclGroupEnd(), HCCL_SUCCESS);
}

Test(group_comm, one_thread_inits_runs_and_destroys_four_ranks,
     .timeout = 300)
{
	HcclRootInfo root;
	HcclComm comms[NR];
	aclrtStream streams[NR];
	float *send[NR], *recv[NR], *want = malloc(COUNT * sizeof(float));

	cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
	group_init(&root, comms, 0);
	for (int r = 0; r < NR; r++) {
		cr_assert_eq(aclrtSetDevice(r), ACL_SUCCESS);
		cr_assert_eq(aclrtCreateStream(&streams[r]), ACL_SUCCESS);
		send[r] = malloc(COUNT * sizeof(float));
		recv[r] = malloc(COUNT * sizeof(float));
	}
	for (int it = 0; it < 3; it++) {
		cr_assert_eq(HcclGroupStart(), HCCL_SUCCESS);
		for (int r = 0; r < NR; r++) {
			ohc_test_fill(send[r], HCCL_DATA_TYPE_FP32,
				      HCCL_REDUCE_SUM, r, COUNT, it);
			cr_assert_eq(HcclAllReduce(send[r], recv[r], COUNT,
						   HCCL_DATA_TYPE_FP32,
						   HCCL_REDUCE_SUM, comms[r],
						   streams[r]),
				     HCCL_SUCCESS);
		}
		cr_assert_eq(HcclGroupEnd(), HCCL_SUCCESS);
		ohc_test_expect(want, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, NR,
				COUNT, it);
		for (int r = 0; r < NR; r++) {
			cr_assert_eq(aclrtSynchronizeStream(streams[r]),
				     ACL_SUCCESS);
			cr_assert_eq(ohc_test_compare(recv[r], want,
						      HCCL_DATA_TYPE_FP32,
						      COUNT),
				     -1, "rank %d, iteration %d", r, it);
		}
	}

	/* split even and odd ranks, from this thread, in a group */
	HcclComm subs[NR];
	uint32_t lists[2][NR / 2] = {{0, 2}, {1, 3}};
	HcclCommConfig cfg;

	HcclCommConfigInit(&cfg);
	cr_assert_eq(HcclGroupStart(), HCCL_SUCCESS);
	for (int r = 0; r < NR; r++) {
		subs[r] = NULL;
		cr_assert_eq(HcclCreateSubCommConfig(&comms[r], NR / 2,
						     lists[r % 2], 10 + r % 2,
						     (uint32_t)r / 2, &cfg,
						     &subs[r]),
			     HCCL_SUCCESS);
	}
	cr_assert_eq(HcclGroupEnd(), HCCL_SUCCESS);
	cr_assert_eq(HcclGroupStart(), HCCL_SUCCESS);
	for (int r = 0; r < NR; r++) {
		cr_assert_not_null(subs[r]);
		ohc_test_fill(send[r], HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
			      r / 2, COUNT, 77 + r % 2);
		cr_assert_eq(HcclAllReduce(send[r], recv[r], COUNT,
					   HCCL_DATA_TYPE_FP32,
					   HCCL_REDUCE_SUM, subs[r],
					   streams[r]),
			     HCCL_SUCCESS);
	}
	cr_assert_eq(HcclGroupEnd(), HCCL_SUCCESS);
	for (int r = 0; r < NR; r++) {
		cr_assert_eq(aclrtSynchronizeStream(streams[r]), ACL_SUCCESS);
		ohc_test_expect(want, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
				NR / 2, COUNT, 77 + r % 2);
		cr_assert_eq(ohc_test_compare(recv[r], want,
					      HCCL_DATA_TYPE_FP32, COUNT),
			     -1, "sub-communicator of rank %d", r);
	}
	group_destroy(subs);

	group_destroy(comms);
	for (int r = 0; r < NR; r++) {
		cr_assert_eq(aclrtDestroyStream(streams[r]), ACL_SUCCESS);
		free(send[r]);
		free(recv[r]);
	}
	free(want);
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	aclFinalize();
}

Test(group_comm, nested_groups_run_at_the_outermost_end, .timeout = 300)
{
	HcclRootInfo root;
	HcclComm comms[NR];

	group_init(&root, comms, 1);
	group_destroy(comms);
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
}

/* Two of three ranks come: the group end fails with the bootstrap's
 * timeout and leaves the handles alone. */
Test(group_comm, missing_rank_fails_the_group_end, .timeout = 120)
{
	HcclRootInfo root;
	HcclComm comms[2] = {NULL, NULL};
	double t0;

	setenv("HCCL_CONNECT_TIMEOUT", "3", 1);
	cr_assert_eq(HcclGetRootInfo(&root), HCCL_SUCCESS);
	cr_assert_eq(HcclGroupStart(), HCCL_SUCCESS);
	for (int r = 0; r < 2; r++)
		cr_assert_eq(HcclCommInitRootInfo(3, &root, (uint32_t)r,
						  &comms[r]),
			     HCCL_SUCCESS);
	t0 = ohc_test_now_s();
	cr_assert_eq(HcclGroupEnd(), HCCL_E_TIMEOUT);
	cr_assert_lt(ohc_test_now_s() - t0, 60.0);
	cr_assert_null(comms[0]);
	cr_assert_null(comms[1]);
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
}

Test(group_comm, bad_arguments, .timeout = 120)
{
	HcclRootInfo root;
	HcclComm comm = NULL;

	cr_assert_eq(HcclGetRootInfo(&root), HCCL_SUCCESS);
	cr_assert_eq(HcclGroupStart(), HCCL_SUCCESS);
	/* pointers are checked at the call */
	cr_assert_eq(HcclCommInitRootInfo(2, NULL, 0, &comm), HCCL_E_PTR);
	cr_assert_eq(HcclCommInitRootInfo(2, &root, 0, NULL), HCCL_E_PTR);
	cr_assert_eq(HcclCommInitClusterInfo(NULL, 0, &comm), HCCL_E_PTR);
	cr_assert_eq(HcclCommDestroy((HcclComm)&root), HCCL_E_PARA);
	/* the rest when the group ends */
	cr_assert_eq(HcclCommInitRootInfo(2, &root, 5, &comm), HCCL_SUCCESS);
	cr_assert_eq(HcclGroupEnd(), HCCL_E_PARA);
	cr_assert_null(comm);

	cr_assert_eq(HcclGroupStart(), HCCL_SUCCESS);
	cr_assert_eq(HcclCommInitClusterInfo("/nonexistent/ranktable.json", 0,
					     &comm),
		     HCCL_SUCCESS);
	cr_assert_neq(HcclGroupEnd(), HCCL_SUCCESS);
	cr_assert_null(comm);
}

/* Management and operations in one group: refused, nothing runs. */
Test(group_comm, management_mixed_with_operations_is_refused,
     .timeout = 120)
{
	HcclRootInfo root, root2;
	HcclComm comm = NULL, other = NULL;
	float x = 1, y = 0;

	cr_assert_eq(HcclGetRootInfo(&root), HCCL_SUCCESS);
	cr_assert_eq(HcclCommInitRootInfo(1, &root, 0, &comm), HCCL_SUCCESS);
	cr_assert_eq(HcclGetRootInfo(&root2), HCCL_SUCCESS);
	cr_assert_eq(HcclGroupStart(), HCCL_SUCCESS);
	cr_assert_eq(HcclCommInitRootInfo(1, &root2, 0, &other),
		     HCCL_SUCCESS);
	cr_assert_eq(HcclAllReduce(&x, &y, 1, HCCL_DATA_TYPE_FP32,
				   HCCL_REDUCE_SUM, comm, NULL),
		     HCCL_SUCCESS);
	cr_assert_eq(HcclGroupEnd(), HCCL_E_NOT_SUPPORT);
	cr_assert_null(other, "the deferred init ran");
	cr_assert_eq(y, 0.0f, "the held AllReduce ran");
	/* the group state is clean afterwards */
	cr_assert_eq(HcclAllReduce(&x, &y, 1, HCCL_DATA_TYPE_FP32,
				   HCCL_REDUCE_SUM, comm, NULL),
		     HCCL_SUCCESS);
	cr_assert_eq(y, 1.0f);
	cr_assert_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
}
