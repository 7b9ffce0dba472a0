/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gradient-fusion strategies of named groups (api_hcom.c), read back
 * through the private getter: stored per group (the world group and a
 * custom one), refused lists change nothing, a destroyed group's
 * settings go with it. One rank, a world named "hccl_world_group".
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include <hccl/hccl.h>
#include <hccl/hcom.h>

#include "api/api_hcom.h"

#define WORLD "hccl_world_group"

Test(hcom_fusion, stored_per_group)
{
	HcclRootInfo ri;
	HcclCommConfig cfg;
	HcclComm world = NULL;
	struct ohc_hcom_fusion f;
	uint32_t zero = 0, idx[3] = {4, 8, 15}, u = 9;
	float sizes[2] = {96.54f, 3.46f}, bad[2] = {60.0f, 30.0f};

	cr_assert_eq(HcclGetRootInfo(&ri), HCCL_SUCCESS);
	HcclCommConfigInit(&cfg);
	snprintf(cfg.hcclCommName, sizeof(cfg.hcclCommName), "%s", WORLD);
	cr_assert_eq(HcclCommInitRootInfoConfig(1, &ri, 0, &cfg, &world),
		     HCCL_SUCCESS);
	cr_expect_eq(ohc_hcom_grad_fusion(WORLD, &f), OHC_ERR_NOT_FOUND);

	cr_assert_eq(HcomCreateGroup("solo", 1, &zero), HCCL_SUCCESS);
	cr_expect_eq(HcomGetRankSize("solo", &u), HCCL_SUCCESS);
	cr_expect_eq(u, 1);
	cr_expect_eq(ohc_hcom_grad_fusion("solo", &f), OHC_ERR_NOT_FOUND);

	cr_expect_eq(HcomSetGradFusionByIndex(WORLD, 3, idx), HCCL_SUCCESS);
	cr_expect_eq(HcomSetGradFusionBySize("solo", 2, sizes), HCCL_SUCCESS);
	/* Refused: the stored strategies stay. */
	cr_expect_eq(HcomSetGradFusionBySize("solo", 2, bad), HCCL_E_PARA);
	idx[2] = 8;
	cr_expect_eq(HcomSetGradFusionByIndex(WORLD, 3, idx), HCCL_E_PARA);

	cr_assert_eq(ohc_hcom_grad_fusion(WORLD, &f), OHC_OK);
	cr_expect_eq(f.nidx, 3);
	cr_expect_eq(f.idx[0], 4);
	cr_expect_eq(f.idx[1], 8);
	cr_expect_eq(f.idx[2], 15);
	cr_expect_eq(f.nsize, 0);
	cr_assert_eq(ohc_hcom_grad_fusion("solo", &f), OHC_OK);
	cr_expect_eq(f.nidx, 0);
	cr_expect_eq(f.nsize, 2);
	cr_expect_float_eq(f.size[0], 96.54f, 1e-6);
	cr_expect_float_eq(f.size[1], 3.46f, 1e-6);

	cr_expect_eq(HcomDestroyGroup("solo"), HCCL_SUCCESS);
	cr_expect_eq(ohc_hcom_grad_fusion("solo", &f), OHC_ERR_NOT_FOUND);
	cr_expect_eq(ohc_hcom_grad_fusion(WORLD, &f), OHC_OK);
	cr_expect_eq(HcclCommDestroy(world), HCCL_SUCCESS);
}
