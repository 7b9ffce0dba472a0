/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two hosts for real: runs in both VMs of `ci/soft-roce/run-vm.sh --vms 2`
 * (skipped anywhere else), two ranks per VM, one rank table naming both
 * VMs. Pairs inside a VM use shared memory, pairs across the wire use the
 * verbs transport (rxe on eth0). AllReduce and Send/Recv results are
 * checked; then a rank is killed mid-AllReduce and every survivor must get
 * HCCL_E_REMOTE (or a timeout) within bounded time, on both hosts.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

#define PER_VM 2
#define NR (2 * PER_VM)

static char table_path[256];
static int vm_index;

/* Skip unless in one of two VMs; write the shared rank table. */
static void two_vms_or_skip(int port)
{
	const char *ips[2];

	if (ohc_test_vm_ips("OHC_VM_IP", "OHC_VM_PEER_IP", ips) < 0)
		cr_skip_test("needs two hosts: ci/soft-roce/run-vm.sh --vms 2");
	snprintf(table_path, sizeof(table_path), "/tmp/ohc_two_node_%d.json",
		 (int)getpid());
	vm_index = ohc_test_two_vm_table(table_path, PER_VM, port);
	cr_assert(vm_index >= 0, "cannot write %s", table_path);
}

static int check_allreduce(HcclComm comm, int rank, size_t count)
{
	int32_t *s = malloc(count * 4), *r = malloc(count * 4);
	int bad = 0;

	for (size_t i = 0; i < count; i++)
		s[i] = (int32_t)(i * 3 + (size_t)rank * 1000);
	if (HcclAllReduce(s, r, count, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
			  comm, NULL) != HCCL_SUCCESS) {
		fprintf(stderr, "rank %d: allreduce %zu failed\n", rank, count);
		bad = 1;
	}
	for (size_t i = 0; i < count && !bad; i++) {
		int32_t want =
			(int32_t)(NR * i * 3 + 1000 * (NR * (NR - 1) / 2));

		if (r[i] != want) {
			fprintf(stderr,
				"rank %d: count %zu: [%zu] = %d, not %d\n",
				rank, count, i, r[i], want);
			bad = 1;
		}
	}
	free(s);
	free(r);
	return bad;
}

/* Send to rank+1 (crosses the wire from ranks 1 and 3), receive from
 * rank-1. */
static int check_ring(HcclComm comm, int rank, size_t bytes)
{
	unsigned char *s = malloc(bytes), *r = malloc(bytes);
	int right = (rank + 1) % NR, left = (rank + NR - 1) % NR, bad = 0;
	HcclResult ret;

	for (size_t i = 0; i < bytes; i++)
		s[i] = (unsigned char)(i * 7 + (size_t)rank);
	if (rank % 2 == 0) {
		ret = HcclSend(s, bytes, HCCL_DATA_TYPE_UINT8, right, comm,
			       NULL);
		ret |= HcclRecv(r, bytes, HCCL_DATA_TYPE_UINT8, left, comm,
				NULL);
	} else {
		ret = HcclRecv(r, bytes, HCCL_DATA_TYPE_UINT8, left, comm,
			       NULL);
		ret |= HcclSend(s, bytes, HCCL_DATA_TYPE_UINT8, right, comm,
				NULL);
	}
	for (size_t i = 0; i < bytes && !ret; i++)
		if (r[i] != (unsigned char)(i * 7 + (size_t)left)) {
			fprintf(stderr, "rank %d: ring %zu: byte %zu wrong\n",
				rank, bytes, i);
			bad = 1;
			break;
		}
	free(s);
	free(r);
	return bad || ret != HCCL_SUCCESS;
}

static int data_rank(int local, int nlocal, void *arg)
{
	static const size_t counts[] = {1, 7, 4099, 65539, 300007};
	int rank = vm_index * PER_VM + local;
	HcclComm comm;
	int bad = 0;

	(void)nlocal;
	(void)arg;
	if (aclrtSetDevice(local) ||
	    HcclCommInitClusterInfo(table_path, (uint32_t)rank, &comm)) {
		fprintf(stderr, "rank %d: init failed\n", rank);
		return 1;
	}
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		bad |= check_allreduce(comm, rank, counts[c]);
		bad |= check_ring(comm, rank, counts[c] * 4 + 1);
	}
	bad |= HcclBarrier(comm, NULL) != HCCL_SUCCESS;
	HcclCommDestroy(comm);
	return bad;
}

Test(two_node, mixed_shm_and_verbs, .timeout = 600)
{
	two_vms_or_skip(31000);
	/* a stalled operation fails with its flight record, not killed */
	setenv("HCCL_EXEC_TIMEOUT", "300", 0);
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(PER_VM, data_rank, NULL, 560), 0);
	unlink(table_path);
}

#define VICTIM 3
#define EXEC_TIMEOUT_S 40

static int kill_rank(int local, int nlocal, void *arg)
{
	int rank = vm_index * PER_VM + local;
	size_t count = 1 << 16;
	int32_t *buf = calloc(count, 4);
	HcclComm comm;
	HcclResult r = HCCL_SUCCESS, async = HCCL_SUCCESS;
	double t0 = 0;

	(void)nlocal;
	(void)arg;
	if (aclrtSetDevice(local) ||
	    HcclCommInitClusterInfo(table_path, (uint32_t)rank, &comm))
		return 1;
	for (int it = 0; it < 1000 && r == HCCL_SUCCESS; it++) {
		if (it == 3) {
			if (rank == VICTIM)
				raise(SIGKILL);
			t0 = ohc_test_now_s();
		}
		r = HcclAllReduce(buf, buf, count, HCCL_DATA_TYPE_INT32,
				  HCCL_REDUCE_SUM, comm, NULL);
	}
	HcclGetCommAsyncError(comm, &async);
	fprintf(stderr, "rank %d: failed after %.2f s: %d, async error %d\n",
		rank, ohc_test_now_s() - t0, r, async);
	if (r == HCCL_SUCCESS || ohc_test_now_s() - t0 > EXEC_TIMEOUT_S + 5 ||
	    (async != HCCL_E_REMOTE && async != HCCL_E_TIMEOUT))
		return 1;
	HcclCommDestroy(comm);
	free(buf);
	return 0;
}

Test(two_node, peer_killed_mid_allreduce, .timeout = 300)
{
	char v[16];
	int failed;

	two_vms_or_skip(32000);
	snprintf(v, sizeof(v), "%d", EXEC_TIMEOUT_S);
	setenv("HCCL_EXEC_TIMEOUT", v, 1);
	setenv("HCCL_RDMA_TIMEOUT", "14", 1);
	ohc_test_fork_settle();
	failed = ohc_test_fork_ranks(PER_VM, kill_rank, NULL, 240);
	/* the victim's VM counts the victim as failed */
	cr_assert_eq(failed, vm_index == VICTIM / PER_VM ? 1 : 0);
	unlink(table_path);
}
