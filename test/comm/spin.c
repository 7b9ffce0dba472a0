/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How waiting ranks share a CPU (core/wait.c): a thread spins without
 * yielding until its waits keep running out the spin, then yields while it
 * spins. Two thread ranks pinned to one CPU with the spin forced on are
 * the case the yields are for: neither can progress until the other runs.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <sched.h>
#include <stdlib.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "core/wait.h"
#include "helpers/ohc_test.h"

#define SPIN_OPS 2000

static HcclComm comms[2];

static int spin_rank(int rank, int nranks, void *p)
{
	(void)p;
	return ohc_test_slot_allreduces(comms[rank], rank, nranks, SPIN_OPS, 3);
}

Test(spin, one_cpu_two_ranks_yield, .timeout = 300)
{
	int32_t devs[2] = {0, 1};
	cpu_set_t one;

	/* every thread made from here on (ranks, stream workers) inherits it */
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	/* auto would not spin at all: 2 ranks do not fit 1 CPU */
	setenv("OPENHCCL_SPIN_US", "50", 1);

	cr_assert_eq(ohc_wait_yield_regimes(), 0);
	cr_assert_eq(aclInit(NULL), 0);
	cr_assert_eq(HcclCommInitAll(2, devs, comms), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_thread_ranks(2, spin_rank, NULL), 0);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
	aclFinalize();
	cr_expect_gt(ohc_wait_yield_regimes(), 0,
		     "two ranks on one CPU never switched to yielding");
}
