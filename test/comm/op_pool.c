/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The communicator's pool of op descriptors (src/comm/comm_oppool.c) under
 * a deep queue: a stream held behind an event until thousands of
 * AllReduces are queued on it, each on its own element, so every one
 * needs a descriptor of its own. Synchronous calls keep to the small
 * first slab; the first call queued on a stream maps a 2 MiB slab ahead
 * of need (so a benchmark's timed loop never maps one); the pool grows
 * into more 2 MiB slabs at 2 MiB boundaries (in huge pages where
 * transparent huge pages are on), every result is right, and destroy
 * unmaps every slab. Real processes over shared memory.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "comm/comm.h"
#include "helpers/ohc_test.h"

enum { NOPS = 10000 };
#define HUGE_SLAB ((uintptr_t)2 << 20)

static int thp_on(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char buf[128] = "";

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	return strstr(buf, "[always]") || strstr(buf, "[madvise]");
}

static int rank_main(int rank, int nranks, void *arg)
{
	HcclRootInfo *root = arg;
	float *a = malloc(NOPS * sizeof(float)),
	      *b = malloc(NOPS * sizeof(float));
	aclrtStream stream = NULL, side = NULL;
	aclrtEvent gate = NULL;
	struct ohc_comm *c;
	uintptr_t slab;
	long huge_kb;
	HcclComm comm;
	int bad = 0;

	if (!a || !b || aclInit(NULL) || aclrtSetDevice(rank) ||
	    aclrtCreateStream(&stream) || aclrtCreateStream(&side) ||
	    aclrtCreateEventWithFlag(&gate, ACL_EVENT_SYNC) ||
	    HcclCommInitRootInfo(nranks, root, rank, &comm) != HCCL_SUCCESS)
		return 1;
	c = ohc_comm_lookup(comm);
	for (int i = 0; i < NOPS; i++) {
		a[i] = (float)((rank + 1) * (i % 97));
		b[i] = -1.0f;
	}
	/* synchronous calls (no stream) need one descriptor at a time */
	for (int i = 0; i < 100; i++)
		if (HcclAllReduce(a, b, 1, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
				  comm, NULL) != HCCL_SUCCESS)
			return 1;
	if (c->op_slab_ops == 0 || c->op_slab_ops > 64 || c->op_pool_deep) {
		fprintf(stderr,
			"rank %d: %u ops in slabs (deep %d) after synchronous "
			"calls, want the small slab only\n",
			rank, c->op_slab_ops, c->op_pool_deep);
		bad++;
	}
	/* held until every op is queued: NOPS descriptors at once */
	if (aclrtStreamWaitEvent(stream, gate))
		return 1;
	for (int i = 0; i < NOPS; i++) {
		if (HcclAllReduce(a + i, b + i, 1, HCCL_DATA_TYPE_FP32,
				  HCCL_REDUCE_SUM, comm,
				  stream) != HCCL_SUCCESS) {
			fprintf(stderr, "rank %d: AllReduce %d refused\n", rank,
				i);
			return 1;
		}
		/* the first queued call mapped a huge slab ahead of need */
		if (i == 0 && (c->op_slab_ops <= 64 || !c->op_pool_deep ||
			       (uintptr_t)(void *)c->op_slabs % HUGE_SLAB)) {
			fprintf(stderr,
				"rank %d: %u ops in slabs (deep %d) after the "
				"first queued call, want a huge slab\n",
				rank, c->op_slab_ops, c->op_pool_deep);
			bad++;
		}
	}
	if (aclrtRecordEvent(gate, side) || aclrtSynchronizeStream(stream))
		return 1;
	for (int i = 0; i < NOPS; i++) {
		float want = (float)((i % 97) * nranks * (nranks + 1) / 2);

		if (b[i] != want) {
			fprintf(stderr, "rank %d: op %d gave %g, want %g\n",
				rank, i, (double)b[i], (double)want);
			bad++;
			break;
		}
	}

	/* the newest slab is a 2 MiB one at a 2 MiB boundary */
	slab = (uintptr_t)(void *)c->op_slabs;
	if (c->op_slab_ops < NOPS || !slab || slab % HUGE_SLAB ||
	    c->op_slab_n != (HUGE_SLAB - 64) / sizeof(struct ohc_op)) {
		fprintf(stderr,
			"rank %d: %u ops in slabs, newest at %#lx with %u "
			"ops (want >= %d, 2 MiB-aligned, %zu)\n",
			rank, c->op_slab_ops, (unsigned long)slab, c->op_slab_n,
			NOPS,
			(size_t)((HUGE_SLAB - 64) / sizeof(struct ohc_op)));
		bad++;
	}
	huge_kb = ohc_test_smaps_kb((void *)slab, "AnonHugePages");
	if (!thp_on()) {
		fprintf(stderr,
			"rank %d: transparent huge pages are off: "
			"slab placement checked only\n",
			rank);
	} else if (huge_kb < 2048) {
		fprintf(stderr,
			"rank %d: the newest slab has %ld kB in huge pages "
			"(want 2048)\n",
			rank, huge_kb);
		bad++;
	}

	if (HcclCommDestroy(comm) != HCCL_SUCCESS)
		bad++;
	if (ohc_test_smaps_kb((void *)slab, "AnonHugePages") != -1) {
		fprintf(stderr, "rank %d: a slab outlived its communicator\n",
			rank);
		bad++;
	}
	aclrtDestroyEvent(gate);
	aclrtDestroyStream(side);
	aclrtDestroyStream(stream);
	aclrtResetDevice(rank);
	aclFinalize();
	free(a);
	free(b);
	return bad;
}

Test(op_pool, deep_queue_grows_into_huge_slabs_and_unmaps_them, .timeout = 300)
{
	HcclRootInfo *root = mmap(NULL, sizeof(*root), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(root, MAP_FAILED);
	cr_assert_eq(HcclGetRootInfo(root), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_fork_ranks(2, rank_main, root, 240), 0,
		     "some ranks failed");
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(root, sizeof(*root));
}
