/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Argument checks of the zero-copy and symmetric-window entry points that
 * need no communicator (black box): NULL handles and pointers get
 * HCCL_E_PTR, handles that were never registered HCCL_E_PARA.
 */
#include <criterion/criterion.h>

#include <hccl/hccl.h>
#include <hccl/hccl_comm.h>
#include <hccl/hccl_sym_win.h>

Test(zerocopy_args, null_comm)
{
	char b[64];
	size_t off;
	HcclCommSymWindow win;

	cr_expect_eq(HcclCommSetMemoryRange(NULL, b, 64, 0, 0), HCCL_E_PTR);
	cr_expect_eq(HcclCommUnsetMemoryRange(NULL, b), HCCL_E_PTR);
	cr_expect_eq(HcclCommActivateCommMemory(NULL, b, 64, 0, b, 0),
		     HCCL_E_PTR);
	cr_expect_eq(HcclCommDeactivateCommMemory(NULL, b), HCCL_E_PTR);
	cr_expect_eq(HcclCommSymWinRegister(NULL, b, 64, &win, 1), HCCL_E_PTR);
	cr_expect_eq(HcclCommSymWinGet(NULL, b, 64, &win, &off), HCCL_E_PTR);
}

Test(zerocopy_args, not_a_comm)
{
	char fake[4096] = {0};
	size_t off;
	HcclCommSymWindow win;

	cr_expect_eq(HcclCommSetMemoryRange(fake, fake, 64, 0, 0), HCCL_E_PARA);
	cr_expect_eq(HcclCommSymWinGet(fake, fake, 64, &win, &off),
		     HCCL_E_PARA);
}

Test(zerocopy_args, windows_without_registration)
{
	char b[64];
	void *p = NULL;

	cr_expect_eq(HcclCommSymWinDeregister(NULL), HCCL_E_PTR);
	cr_expect_eq(HcclCommSymWinDeregister(b), HCCL_E_PARA);
	cr_expect_eq(HcclSymWinGetPeerPointer(NULL, 0, 0, &p), HCCL_E_PTR);
	cr_expect_eq(HcclSymWinGetPeerPointer(b, 0, 0, &p), HCCL_E_PARA);
	cr_expect_eq(HcclSymWinGetPeerPointer(b, 0, 0, NULL), HCCL_E_PTR);
	cr_expect_null(p);
}
