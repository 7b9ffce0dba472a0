/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bad input gets the documented HcclResult, never a crash: null pointers,
 * bad counts, data types, reduce ops, ranks, configs, root infos, rank
 * tables and environment values. Black box, through the shipped libraries.
 */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

static HcclComm one_rank_comm(void)
{
	int32_t dev = 0;
	HcclComm comm = NULL;

	cr_assert_eq(HcclCommInitAll(1, &dev, &comm), HCCL_SUCCESS);
	return comm;
}

Test(errors, null_pointers)
{
	HcclComm comm = one_rank_comm();
	float b[4];
	uint32_t u;

	cr_expect_eq(HcclAllReduce(NULL, b, 4, HCCL_DATA_TYPE_FP32,
				   HCCL_REDUCE_SUM, comm, NULL),
		     HCCL_E_PTR);
	cr_expect_eq(HcclAllReduce(b, NULL, 4, HCCL_DATA_TYPE_FP32,
				   HCCL_REDUCE_SUM, comm, NULL),
		     HCCL_E_PTR);
	cr_expect_eq(HcclAllReduce(b, b, 4, HCCL_DATA_TYPE_FP32,
				   HCCL_REDUCE_SUM, NULL, NULL),
		     HCCL_E_PTR);
	cr_expect_eq(HcclSend(NULL, 4, HCCL_DATA_TYPE_FP32, 0, comm, NULL),
		     HCCL_E_PTR);
	cr_expect_eq(HcclRecv(NULL, 4, HCCL_DATA_TYPE_FP32, 0, comm, NULL),
		     HCCL_E_PTR);
	cr_expect_eq(HcclBarrier(NULL, NULL), HCCL_E_PTR);
	cr_expect_eq(HcclGetRankSize(comm, NULL), HCCL_E_PTR);
	cr_expect_eq(HcclGetRankSize(NULL, &u), HCCL_E_PTR);
	cr_expect_eq(HcclGetRankId(comm, NULL), HCCL_E_PTR);
	cr_expect_eq(HcclGetCommName(comm, NULL), HCCL_E_PTR);
	cr_expect_eq(HcclGetCommAsyncError(comm, NULL), HCCL_E_PTR);
	cr_expect_eq(HcclGetRootInfo(NULL), HCCL_E_PTR);
	cr_expect_eq(HcclCommInitRootInfo(2, NULL, 0, &comm), HCCL_E_PTR);
	cr_expect_eq(HcclCommInitClusterInfo(NULL, 0, &comm), HCCL_E_PTR);
	cr_expect_eq(HcclCommInitAll(1, NULL, &comm), HCCL_E_PTR);
	cr_expect_eq(HcclCommGetHandleWithName(NULL, &comm), HCCL_E_PTR);
	cr_expect_eq(HcclGetConfig(HCCL_DETERMINISTIC, NULL), HCCL_E_PTR);
	cr_expect_eq(HcclCommDestroy(NULL), HCCL_SUCCESS);
	cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
}

Test(errors, counts_types_ops_ranks)
{
	HcclComm comm = one_rank_comm();
	float b[4] = {1, 2, 3, 4}, r[4];
	uint32_t n = 0, me = 9;

	cr_assert_eq(HcclGetRankSize(comm, &n), HCCL_SUCCESS);
	cr_assert_eq(n, 1);
	cr_assert_eq(HcclGetRankId(comm, &me), HCCL_SUCCESS);
	cr_assert_eq(me, 0);
	/* count 0 is a successful no-op, even with NULL buffers */
	cr_expect_eq(HcclAllReduce(NULL, NULL, 0, HCCL_DATA_TYPE_FP32,
				   HCCL_REDUCE_SUM, comm, NULL),
		     HCCL_SUCCESS);
	cr_expect_eq(HcclAllReduce(b, r, 0x800000000ull, HCCL_DATA_TYPE_FP32,
				   HCCL_REDUCE_SUM, comm, NULL),
		     HCCL_E_PARA);
	cr_expect_eq(HcclAllReduce(b, r, 4, (HcclDataType)13, HCCL_REDUCE_SUM,
				   comm, NULL),
		     HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclAllReduce(b, r, 4, (HcclDataType)99, HCCL_REDUCE_SUM,
				   comm, NULL),
		     HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclAllReduce(b, r, 4, HCCL_DATA_TYPE_FP32,
				   (HcclReduceOp)7, comm, NULL),
		     HCCL_E_PARA);
	cr_expect_eq(HcclAllReduce(b, r, 2, HCCL_DATA_TYPE_INT16,
				   HCCL_REDUCE_PROD, comm, NULL),
		     HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclAllReduce(b, r, 2, HCCL_DATA_TYPE_BFP16,
				   HCCL_REDUCE_PROD, comm, NULL),
		     HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclAllReduce(b, r, 4, HCCL_DATA_TYPE_UINT8,
				   HCCL_REDUCE_SUM, comm, NULL),
		     HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclAllReduce(b, r, 4, HCCL_DATA_TYPE_INT128,
				   HCCL_REDUCE_SUM, comm, NULL),
		     HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclSend(b, 4, HCCL_DATA_TYPE_FP32, 0, comm, NULL),
		     HCCL_E_NOT_SUPPORT, "send to self");
	cr_expect_eq(HcclSend(b, 4, HCCL_DATA_TYPE_FP32, 1, comm, NULL),
		     HCCL_E_PARA);
	cr_expect_eq(HcclRecv(b, 4, HCCL_DATA_TYPE_FP32, 5, comm, NULL),
		     HCCL_E_PARA);
	cr_expect_eq(HcclSend(b, 4, HCCL_DATA_TYPE_INT128, 0, comm, NULL),
		     HCCL_E_NOT_SUPPORT);
	/* a pointer that is no stream */
	cr_expect_eq(HcclAllReduce(b, r, 4, HCCL_DATA_TYPE_FP32,
				   HCCL_REDUCE_SUM, comm, (aclrtStream)b),
		     HCCL_E_PARA);
	/* a single rank's allreduce is a copy */
	cr_expect_eq(HcclAllReduce(b, r, 4, HCCL_DATA_TYPE_FP32,
				   HCCL_REDUCE_SUM, comm, NULL),
		     HCCL_SUCCESS);
	cr_expect_eq(memcmp(b, r, sizeof(b)), 0);
	cr_expect_eq(HcclBarrier(comm, NULL), HCCL_SUCCESS);
	cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
}

Test(errors, init_arguments)
{
	HcclRootInfo ri;
	HcclComm comm = NULL;
	int32_t devs[2] = {1, 1};
	HcclCommConfig cfg;

	cr_assert_eq(HcclGetRootInfo(&ri), HCCL_SUCCESS);
	cr_expect_eq(HcclCommInitRootInfo(0, &ri, 0, &comm), HCCL_E_PARA);
	cr_expect_eq(HcclCommInitRootInfo(2, &ri, 2, &comm), HCCL_E_PARA);
	cr_expect_eq(HcclCommInitAll(0, devs, &comm), HCCL_E_PARA);
	cr_expect_eq(HcclCommInitAll(2, devs, &comm), HCCL_E_PARA,
		     "duplicate device");
	devs[0] = 100000;
	cr_expect_eq(HcclCommInitAll(1, devs, &comm), HCCL_E_PARA);

	/* garbled and truncated root infos */
	memset(&ri, 0x41, sizeof(ri));
	cr_expect_eq(HcclCommInitRootInfo(2, &ri, 0, &comm), HCCL_E_PARA);
	cr_assert_eq(HcclGetRootInfo(&ri), HCCL_SUCCESS);
	memset(ri.internal + 16, 0, sizeof(ri) - 16);
	cr_expect_eq(HcclCommInitRootInfo(2, &ri, 0, &comm), HCCL_E_PARA);

	/* configs: missing magic, bad values */
	memset(&cfg, 0, sizeof(cfg));
	cr_expect_eq(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm),
		     HCCL_E_PARA);
	cr_expect_eq(HcclCommInitRootInfoConfig(1, &ri, 0, NULL, &comm),
		     HCCL_E_PTR);
	HcclCommConfigInit(&cfg);
	cfg.hcclBufferSize = 0;
	cr_assert_eq(HcclGetRootInfo(&ri), HCCL_SUCCESS);
	cr_expect_eq(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm),
		     HCCL_E_PARA);
	HcclCommConfigInit(&cfg);
	cfg.hcclDeterministic = 3;
	cr_expect_eq(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm),
		     HCCL_E_PARA);
	HcclCommConfigInit(&cfg);
	cfg.hcclRdmaTrafficClass = 130;
	cr_expect_eq(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm),
		     HCCL_E_PARA);

	/* rank table path problems */
	cr_expect_eq(HcclCommInitClusterInfo("/nonexistent/rank_table.json", 0,
					     &comm),
		     HCCL_E_OPEN_FILE_FAILURE);
}

Test(errors, config_one_rank_roundtrip)
{
	HcclRootInfo ri;
	HcclCommConfig cfg;
	HcclComm comm = NULL, found = NULL;
	char name[128];

	cr_assert_eq(HcclGetRootInfo(&ri), HCCL_SUCCESS);
	HcclCommConfigInit(&cfg);
	snprintf(cfg.hcclCommName, sizeof(cfg.hcclCommName), "my_comm");
	cr_assert_eq(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &comm),
		     HCCL_SUCCESS);
	cr_assert_eq(HcclGetCommName(comm, name), HCCL_SUCCESS);
	cr_expect_str_eq(name, "my_comm");
	cr_expect_eq(HcclCommGetHandleWithName("my_comm", &found),
		     HCCL_SUCCESS);
	cr_expect_eq(found, comm);
	cr_expect_eq(HcclCommGetHandleWithName("nope", &found),
		     HCCL_E_NOT_FOUND);
	/* the same name twice in one process is refused */
	cr_assert_eq(HcclGetRootInfo(&ri), HCCL_SUCCESS);
	cr_expect_eq(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &found),
		     HCCL_E_PARA);
	cr_expect_eq(HcclCommDestroy(comm), HCCL_SUCCESS);
}

Test(errors, bad_env_value)
{
	int32_t dev = 0;
	HcclComm comm = NULL;

	setenv("HCCL_BUFFSIZE", "lots", 1);
	cr_expect_eq(HcclCommInitAll(1, &dev, &comm), HCCL_E_PARA);
}

/* Only signals a user may send (more cases: unit.config). */
Test(errors, bad_env_flight_signal)
{
	int32_t dev = 0;
	HcclComm comm = NULL;

	setenv("OPENHCCL_FLIGHT_SIGNAL", "KILL", 1);
	cr_expect_eq(HcclCommInitAll(1, &dev, &comm), HCCL_E_PARA);
}

Test(errors, bad_env_deterministic)
{
	HcclRootInfo ri;

	setenv("HCCL_DETERMINISTIC", "maybe", 1);
	cr_expect_eq(HcclGetRootInfo(&ri), HCCL_E_PARA);
}

Test(errors, strings_capability_config)
{
	HcclConfigValue v = {.value = 5};

	cr_expect_str_eq(HcclGetErrorString(HCCL_SUCCESS), "no error");
	cr_expect_str_eq(HcclGetErrorString(HCCL_E_PARA), "parameter error");
	cr_expect_str_eq(HcclGetErrorString(HCCL_E_REMOTE), "error cqe");
	cr_expect_str_eq(HcclGetErrorString(HCCL_E_OOM), "out of memory");
	cr_expect_str_eq(HcclGetErrorString((HcclResult)-1), "unknown error");
	cr_expect_str_eq(HcclGetErrorString((HcclResult)1041), "unknown err");
	for (int c = 0; c <= 24; c++)
		cr_expect(HcclGetErrorString((HcclResult)c)[0] != '\0');
	cr_expect_eq(HcclGetCommConfigCapability(), 12u);
	cr_expect_eq(HcclSetConfig(HCCL_DETERMINISTIC, v), HCCL_E_PARA);
	v.value = 1;
	cr_expect_eq(HcclSetConfig(HCCL_DETERMINISTIC, v), HCCL_SUCCESS);
	v.value = 0;
	cr_expect_eq(HcclGetConfig(HCCL_DETERMINISTIC, &v), HCCL_SUCCESS);
	cr_expect_eq(v.value, 1);
}

/*
 * HcclCommWorkingDevNicSet's argument checks, on communicators without
 * RDMA links (thread ranks: every link is in-process): bad input fails the
 * same way on every rank; a good call succeeds with a warning (nothing to
 * switch) and the communicator keeps working. The switch itself is
 * test/comm/nic_switch.c, in two Soft-RoCE VMs.
 */
struct nic_case {
	HcclComm comms[2];
	uint32_t ranks[2][2];
	bool backup[2][2];
	uint32_t n;
	HcclResult want;
};

static int nic_rank(int rank, int nranks, void *arg)
{
	struct nic_case *c = arg;
	HcclResult r;
	float x = 1, y = 0;

	(void)nranks;
	r = HcclCommWorkingDevNicSet(c->comms[rank], c->ranks[rank],
				     c->backup[rank], c->n);
	if (r != c->want) {
		fprintf(stderr, "rank %d: got %d, want %d\n", rank, r, c->want);
		return 1;
	}
	/* the communicator still works, whatever the verdict */
	r = HcclAllReduce(&x, &y, 1, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
			  c->comms[rank], NULL);
	return r != HCCL_SUCCESS || y != 2;
}

static void nic_run(struct nic_case *c, uint32_t n, uint32_t r0a, uint32_t r0b,
		    uint32_t r1a, uint32_t r1b, bool b, HcclResult want)
{
	c->n = n;
	c->ranks[0][0] = r0a;
	c->ranks[0][1] = r0b;
	c->ranks[1][0] = r1a;
	c->ranks[1][1] = r1b;
	for (int i = 0; i < 2; i++)
		c->backup[i][0] = c->backup[i][1] = b;
	c->want = want;
	cr_expect_eq(ohc_test_thread_ranks(2, nic_rank, c), 0,
		     "n %u ranks {%u,%u}/{%u,%u} backup %d", n, r0a, r0b, r1a,
		     r1b, b);
}

Test(errors, working_dev_nic_set)
{
	HcclComm one = one_rank_comm();
	int32_t devs[2] = {0, 1};
	struct nic_case c;
	uint32_t r = 0;
	bool b = false;

	cr_expect_eq(HcclCommWorkingDevNicSet(NULL, &r, &b, 1), HCCL_E_PTR);
	cr_expect_eq(HcclCommWorkingDevNicSet(one, NULL, &b, 1), HCCL_E_PTR);
	cr_expect_eq(HcclCommWorkingDevNicSet(one, &r, NULL, 1), HCCL_E_PTR);
	cr_expect_eq(HcclCommWorkingDevNicSet(one, &r, &b, 0), HCCL_E_PARA);
	cr_expect_eq(HcclCommWorkingDevNicSet(one, &r, &b, 2), HCCL_E_PARA);
	r = 1;
	cr_expect_eq(HcclCommWorkingDevNicSet(one, &r, &b, 1), HCCL_E_PARA);
	r = 0;
	b = true; /* no rank table: no backup_device_ip */
	cr_expect_eq(HcclCommWorkingDevNicSet(one, &r, &b, 1), HCCL_E_PARA);
	b = false;
	cr_expect_eq(HcclCommWorkingDevNicSet(one, &r, &b, 1), HCCL_SUCCESS);
	cr_expect_eq(HcclCommDestroy(one), HCCL_SUCCESS);

	memset(&c, 0, sizeof(c));
	cr_assert_eq(HcclCommInitAll(2, devs, c.comms), HCCL_SUCCESS);
	nic_run(&c, 2, 1, 1, 1, 1, false, HCCL_E_PARA); /* duplicate */
	nic_run(&c, 1, 0, 0, 1, 0, false, HCCL_E_PARA); /* ranks differ */
	nic_run(&c, 2, 0, 1, 0, 1, true, HCCL_E_PARA);	/* no backup IP */
	nic_run(&c, 2, 0, 5, 0, 5, false, HCCL_E_PARA); /* rank 5 of 2 */
	nic_run(&c, 2, 1, 0, 1, 0, false, HCCL_SUCCESS);
	for (int i = 0; i < 2; i++)
		cr_expect_eq(HcclCommDestroy(c.comms[i]), HCCL_SUCCESS);
}

/* An operation queued on a stream: the switch is refused with
 * HCCL_E_AGAIN on every rank, and the operation completes afterwards. */
static int nic_busy_rank(int rank, int nranks, void *arg)
{
	HcclComm *comms = arg;
	uint32_t ranks[2] = {0, 1};
	bool backup[2] = {false, false};
	float x = 42, y = 0;
	aclrtStream st = NULL;
	HcclResult r;
	int bad = 0;

	(void)nranks;
	if (rank == 0) {
		if (aclrtSetDevice(0) || aclrtCreateStream(&st) ||
		    HcclRecv(&y, 1, HCCL_DATA_TYPE_FP32, 1, comms[0], st))
			return 1;
	}
	r = HcclCommWorkingDevNicSet(comms[rank], ranks, backup, 2);
	if (r != HCCL_E_AGAIN) {
		fprintf(stderr, "rank %d: got %d, want HCCL_E_AGAIN\n", rank,
			r);
		bad = 1;
	}
	if (rank == 1)
		return bad | (HcclSend(&x, 1, HCCL_DATA_TYPE_FP32, 0, comms[1],
				       NULL) != HCCL_SUCCESS);
	bad |= aclrtSynchronizeStream(st) != 0 || y != 42;
	aclrtDestroyStream(st);
	return bad;
}

Test(errors, working_dev_nic_set_busy)
{
	int32_t devs[2] = {0, 1};
	HcclComm comms[2];

	cr_assert_eq(HcclCommInitAll(2, devs, comms), HCCL_SUCCESS);
	cr_expect_eq(ohc_test_thread_ranks(2, nic_busy_rank, comms), 0);
	for (int i = 0; i < 2; i++)
		cr_expect_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
}
