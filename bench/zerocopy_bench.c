/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Zero-copy vs staged collectives over shm, in one run: nranks forked
 * processes run AllGather, AllReduce and ReduceScatter (fp32 sum) on
 * ordinary memory (aclrtMalloc: ring or CMA) and on activated VMM memory
 * (HcclCommActivateCommMemory: receivers read the senders' memfds
 * through their own mapping), per size, and rank 0 prints the time per
 * op of both and their ratio (staged / zero-copy: > 1 means zero-copy is
 * faster). With HCCL_INTRA_ROCE_ENABLE=1 (the Soft-RoCE VM) the same
 * over verbs: zero-copy is then RDMA into the peer's buffer (or its
 * landing buffer, for reductions). The two variants may use different
 * algorithms (zero-copy ops pick the ones that send only out of user
 * buffers). Sizes are the bytes of the op's output (ReduceScatter: of
 * its input). The two variants run in alternating rounds of iters ops;
 * each reports its best round's average (the machine is shared: the best
 * round is the least disturbed).
 *
 * usage: ohc_zerocopy_bench [nranks=2] [minbytes=1M] [maxbytes=64M]
 *                           [iters=20] [ops=allgather,allreduce,reducescatter]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_comm.h>

#define MIB ((size_t)1 << 20)

static HcclRootInfo *root;
static size_t min_b = MIB, max_b = 64 * MIB;
static int iters = 20;
static const int rounds = 5;
static const char *ops = "allgather,allreduce,reducescatter";

enum op { OP_AG, OP_AR, OP_RS };
static const char *const op_names[] = {"allgather", "allreduce",
				       "reducescatter"};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int map_block(void *va, size_t size, aclrtDrvMemHandle *h_p)
{
	aclrtPhysicalMemProp prop;

	memset(&prop, 0, sizeof(prop));
	prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
	prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
	prop.memAttr = ACL_HBM_MEM_HUGE;
	prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
	if (aclrtMallocPhysical(h_p, size, &prop, 0))
		return -1;
	return aclrtMapMem(va, size, 0, *h_p, 0) ? -1 : 0;
}

/* Average microseconds of one op (after 3 warm-up ops). */
static double time_op(HcclComm comm, enum op op, void *in, void *out,
		      size_t bytes, int nranks)
{
	size_t n = op == OP_AR ? bytes / 4 : bytes / 4 / nranks;
	double t0 = 0;

	for (int i = -3; i < iters; i++) {
		if (i == 0) {
			HcclBarrier(comm, NULL);
			t0 = now_us();
		}
		if (op == OP_AG)
			HcclAllGather(in, out, n, HCCL_DATA_TYPE_FP32, comm,
				      NULL);
		else if (op == OP_AR)
			HcclAllReduce(in, out, n, HCCL_DATA_TYPE_FP32,
				      HCCL_REDUCE_SUM, comm, NULL);
		else
			HcclReduceScatter(in, out, n, HCCL_DATA_TYPE_FP32,
					  HCCL_REDUCE_SUM, comm, NULL);
	}
	return (now_us() - t0) / iters;
}

static int rank_main(int rank, int nranks)
{
	size_t blk = (max_b + 2 * MIB - 1) / (2 * MIB) * (2 * MIB);
	aclrtDrvMemHandle hin, hout;
	void *pin, *pout;
	char *range;
	HcclComm comm;

	if (aclInit(NULL) || aclrtSetDevice(rank) ||
	    HcclCommInitRootInfo(nranks, root, rank, &comm))
		return 1;
	if (aclrtMalloc(&pin, blk, ACL_MEM_MALLOC_HUGE_FIRST) ||
	    aclrtMalloc(&pout, blk, ACL_MEM_MALLOC_HUGE_FIRST) ||
	    aclrtReserveMemAddress((void **)&range, 2 * blk, 0, NULL, 1) ||
	    map_block(range, blk, &hin) || map_block(range + blk, blk, &hout) ||
	    HcclCommSetMemoryRange(comm, range, 2 * blk, 0, 0) ||
	    HcclCommActivateCommMemory(comm, range, blk, 0, hin, 0) ||
	    HcclCommActivateCommMemory(comm, range + blk, blk, 0, hout, 0))
		return 1;
	memset(pin, 1, blk);
	memset(range, 1, blk);
	memset(pout, 0, blk);
	memset(range + blk, 0, blk);
	if (rank == 0)
		printf("%-13s %12s %14s %14s %8s\n", "op", "bytes", "staged_us",
		       "zerocopy_us", "ratio");
	for (int op = OP_AG; op <= OP_RS; op++) {
		if (!strstr(ops, op_names[op]))
			continue;
		for (size_t b = min_b; b <= max_b; b *= 2) {
			double st = 1e300, zc = 1e300;

			for (int k = 0; k < rounds; k++) {
				double t = time_op(comm, (enum op)op, pin, pout,
						   b, nranks);

				st = t < st ? t : st;
				t = time_op(comm, (enum op)op, range,
					    range + blk, b, nranks);
				zc = t < zc ? t : zc;
			}

			if (rank == 0)
				printf("%-13s %12zu %14.1f %14.1f %8.2f\n",
				       op_names[op], b, st, zc, st / zc);
		}
	}
	fflush(stdout);
	HcclCommDeactivateCommMemory(comm, range);
	HcclCommDeactivateCommMemory(comm, range + blk);
	HcclCommUnsetMemoryRange(comm, range);
	HcclCommDestroy(comm);
	aclrtUnmapMem(range);
	aclrtUnmapMem(range + blk);
	aclrtFreePhysical(hin);
	aclrtFreePhysical(hout);
	aclrtReleaseMemAddress(range);
	aclrtFree(pin);
	aclrtFree(pout);
	aclFinalize();
	return 0;
}

int main(int argc, char **argv)
{
	int nranks = argc > 1 ? atoi(argv[1]) : 2, bad = 0;

	if (argc > 2)
		min_b = strtoull(argv[2], NULL, 0);
	if (argc > 3)
		max_b = strtoull(argv[3], NULL, 0);
	if (argc > 4)
		iters = atoi(argv[4]);
	if (argc > 5)
		ops = argv[5];
	if (nranks < 2 || min_b < 4096 || max_b < min_b || iters < 1) {
		fprintf(stderr,
			"usage: %s [nranks>=2] [minbytes>=4096] "
			"[maxbytes] [iters]\n",
			argv[0]);
		return 2;
	}
	root = mmap(NULL, sizeof(*root), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (root == MAP_FAILED || HcclGetRootInfo(root) != HCCL_SUCCESS)
		return 1;
	fflush(stdout);
	for (int r = 0; r < nranks; r++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(rank_main(r, nranks));
		if (pid < 0)
			return 1;
	}
	for (int r = 0; r < nranks; r++) {
		int st = 0;

		wait(&st);
		bad += !WIFEXITED(st) || WEXITSTATUS(st);
	}
	return bad ? 1 : 0;
}
