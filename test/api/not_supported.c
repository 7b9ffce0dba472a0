/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The entry points whose capability belongs to a later issue. Each must
 * be exported and return HCCL_E_NOT_SUPPORT. This list may only shrink:
 * when a function gets implemented, remove it here (and lower the bound).
 */
#include <criterion/criterion.h>
#include <dlfcn.h>

#include <hccl/hccl.h>
#include <hccl/hccl_sym_win.h>
#include <hccl/hcom.h>

#define MAX_NOT_SUPPORTED 16 /* may only go down */

static const char *const not_supported[] = {
	"HcclCreateSubCommConfig",
	"HcclCommSuspend",
	"HcclCommResume",
	"HcclCommRegCommStateCallback",
	"HcclCommGetStatus",
	"HcclCommWorkingDevNicSet",
	"HcomCreateGroup",
	"HcomDestroyGroup",
	"HcomGetRankSize",
	"HcomGetLocalRankSize",
	"HcomGetRankId",
	"HcomGetLocalRankId",
	"HcomGetWorldRankFromGroupRank",
	"HcomGetGroupRankFromWorldRank",
	"HcomSetGradFusionByIndex",
	"HcomSetGradFusionBySize",
};

Test(not_supported, list_only_shrinks)
{
	cr_assert_leq(sizeof(not_supported) / sizeof(not_supported[0]),
		      MAX_NOT_SUPPORTED);
}

Test(not_supported, each_is_exported)
{
	void *h = dlopen("libhccl.so.1", RTLD_NOW);

	cr_assert_not_null(h, "%s", dlerror());
	for (size_t i = 0; i < sizeof(not_supported) / sizeof(*not_supported);
	     i++)
		cr_expect_not_null(dlsym(h, not_supported[i]), "%s",
				   not_supported[i]);
	dlclose(h);
}

Test(not_supported, each_returns_not_support)
{
	uint32_t u = 0;
	bool flag = false;
	HcclComm comm = NULL;
	float sz = 100.0f;

	cr_expect_eq(HcclCreateSubCommConfig(&comm, 1, &u, 0, 0, NULL, &comm),
		     HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclCommSuspend(comm), HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclCommResume(comm), HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclCommRegCommStateCallback("x", NULL, NULL),
		     HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclCommGetStatus("x", NULL), HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclCommWorkingDevNicSet(comm, &u, &flag, 1),
		     HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcomCreateGroup("g", 1, &u), HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcomDestroyGroup("g"), HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcomGetRankSize("g", &u), HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcomGetLocalRankSize("g", &u), HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcomGetRankId("g", &u), HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcomGetLocalRankId("g", &u), HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcomGetWorldRankFromGroupRank("g", 0, &u),
		     HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcomGetGroupRankFromWorldRank(0, "g", &u),
		     HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcomSetGradFusionByIndex("g", 1, &u), HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcomSetGradFusionBySize("g", 1, &sz), HCCL_E_NOT_SUPPORT);
}
