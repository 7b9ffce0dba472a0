/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bad input gets the documented HcclResult, never a crash: null pointers,
 * bad counts, data types, reduce ops, ranks, configs, root infos, rank
 * tables and environment values. Black box, through the shipped libraries.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

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
