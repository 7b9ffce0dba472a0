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

#define MAX_NOT_SUPPORTED 4 /* may only go down */

static const char *const not_supported[] = {
	"HcclCommSuspend",
	"HcclCommResume",
	"HcclCommRegCommStateCallback",
	"HcclCommGetStatus",
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
	HcclComm comm = NULL;

	cr_expect_eq(HcclCommSuspend(comm), HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclCommResume(comm), HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclCommRegCommStateCallback("x", NULL, NULL),
		     HCCL_E_NOT_SUPPORT);
	cr_expect_eq(HcclCommGetStatus("x", NULL), HCCL_E_NOT_SUPPORT);
}
