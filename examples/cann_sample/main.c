/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An HCCL program written the way CANN's samples and hccl_test are: one
 * process per device under mpirun, the root info sent with MPI_Bcast,
 * operations enqueued on a stream, the whole run profiled with the ACL
 * profiling API. Nothing here knows OpenHCCL: the Makefile builds it
 * against an install prefix given as ASCEND_DIR.
 *
 * usage: mpirun -n N ./hccl_cann_sample PROFILE_DIR
 * Prints "rank R: OPS ... ok" and exits 0 when every result is right.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl/acl_prof.h"
#include "hccl/hccl.h"

#define COUNT 4096

#define ACL_CHECK(call)                                                        \
	do {                                                                   \
		aclError e_ = (call);                                          \
		if (e_ != ACL_SUCCESS) {                                       \
			fprintf(stderr, "rank %d: %s failed: %d\n", rank,      \
				#call, (int)e_);                               \
			return 1;                                              \
		}                                                              \
	} while (0)
#define HCCL_CHECK(call)                                                       \
	do {                                                                   \
		HcclResult r_ = (call);                                        \
		if (r_ != HCCL_SUCCESS) {                                      \
			fprintf(stderr, "rank %d: %s failed: %d\n", rank,      \
				#call, (int)r_);                               \
			return 1;                                              \
		}                                                              \
	} while (0)

static int rank, nranks;

static int check(const char *what, const float *got, size_t n, float want)
{
	for (size_t i = 0; i < n; i++) {
		if (got[i] != want) {
			fprintf(stderr, "rank %d: %s[%zu] = %g, want %g\n",
				rank, what, i, (double)got[i], (double)want);
			return 1;
		}
	}
	return 0;
}

static int run(const char *prof_dir)
{
	HcclRootInfo root;
	HcclComm comm;
	aclrtStream stream;
	aclprofConfig *cfg;
	uint32_t dev_count = 0, dev;
	float *send, *recv, *host;
	size_t bytes = COUNT * sizeof(float);
	int bad = 0;

	ACL_CHECK(aclrtGetDeviceCount(&dev_count));
	dev = (uint32_t)rank % dev_count;
	ACL_CHECK(aclInit(NULL));
	ACL_CHECK(aclrtSetDevice((int32_t)dev));
	ACL_CHECK(aclrtCreateStream(&stream));

	/* the profile: hccl_test's data types, this process's device */
	ACL_CHECK(aclprofInit(prof_dir, strlen(prof_dir)));
	cfg = aclprofCreateConfig(&dev, 1, ACL_AICORE_PIPE_UTILIZATION, NULL,
				  ACL_PROF_ACL_API | ACL_PROF_TASK_TIME |
					  ACL_PROF_AICORE_METRICS |
					  ACL_PROF_AICPU | ACL_PROF_HCCL_TRACE |
					  ACL_PROF_MSPROFTX |
					  ACL_PROF_RUNTIME_API);
	if (!cfg) {
		fprintf(stderr, "rank %d: aclprofCreateConfig failed\n", rank);
		return 1;
	}
	ACL_CHECK(aclprofStart(cfg));

	if (rank == 0)
		HCCL_CHECK(HcclGetRootInfo(&root));
	MPI_Bcast(&root, HCCL_ROOT_INFO_BYTES, MPI_CHAR, 0, MPI_COMM_WORLD);
	HCCL_CHECK(HcclCommInitRootInfo((uint32_t)nranks, &root, (uint32_t)rank,
					&comm));

	ACL_CHECK(aclrtMalloc((void **)&send, bytes * (size_t)nranks,
			      ACL_MEM_MALLOC_HUGE_FIRST));
	ACL_CHECK(aclrtMalloc((void **)&recv, bytes * (size_t)nranks,
			      ACL_MEM_MALLOC_HUGE_FIRST));
	ACL_CHECK(aclrtMallocHost((void **)&host, bytes * (size_t)nranks));

	/* AllReduce of the ranks' numbers: 0 + 1 + ... + n-1 */
	for (size_t i = 0; i < COUNT; i++)
		host[i] = (float)rank;
	ACL_CHECK(aclrtMemcpyAsync(send, bytes, host, bytes,
				   ACL_MEMCPY_HOST_TO_DEVICE, stream));
	HCCL_CHECK(HcclAllReduce(send, recv, COUNT, HCCL_DATA_TYPE_FP32,
				 HCCL_REDUCE_SUM, comm, stream));
	/* Broadcast rank 0's send buffer (all 0) into send */
	HCCL_CHECK(HcclBroadcast(send, COUNT, HCCL_DATA_TYPE_FP32, 0, comm,
				 stream));
	ACL_CHECK(aclrtSynchronizeStream(stream));
	bad |= check("allreduce", recv, COUNT,
		     (float)(nranks * (nranks - 1) / 2));
	bad |= check("broadcast", send, COUNT, 0.0f);

	/* AllGather: block r is rank r's number */
	for (size_t i = 0; i < COUNT; i++)
		send[i] = (float)rank;
	HCCL_CHECK(HcclAllGather(send, recv, COUNT, HCCL_DATA_TYPE_FP32, comm,
				 stream));
	ACL_CHECK(aclrtSynchronizeStream(stream));
	for (int r = 0; r < nranks; r++)
		bad |= check("allgather", recv + (size_t)r * COUNT, COUNT,
			     (float)r);

	/* ReduceScatter of all ones: every block sums to nranks */
	for (size_t i = 0; i < (size_t)COUNT * (size_t)nranks; i++)
		send[i] = 1.0f;
	HCCL_CHECK(HcclReduceScatter(send, recv, COUNT, HCCL_DATA_TYPE_FP32,
				     HCCL_REDUCE_SUM, comm, stream));
	ACL_CHECK(aclrtSynchronizeStream(stream));
	bad |= check("reducescatter", recv, COUNT, (float)nranks);

	/* AlltoAll: block j of rank r holds r; rank r receives j from j */
	for (int j = 0; j < nranks; j++)
		for (size_t i = 0; i < COUNT; i++)
			send[(size_t)j * COUNT + i] = (float)rank;
	HCCL_CHECK(HcclAlltoAll(send, COUNT, HCCL_DATA_TYPE_FP32, recv, COUNT,
				HCCL_DATA_TYPE_FP32, comm, stream));
	ACL_CHECK(aclrtSynchronizeStream(stream));
	for (int j = 0; j < nranks; j++)
		bad |= check("alltoall", recv + (size_t)j * COUNT, COUNT,
			     (float)j);

	/*
	 * Send/Recv between pairs (0,1), (2,3), ...: each sends its number
	 * to the other, the even rank first (a rank without a partner, the
	 * last of an odd count, skips this).
	 */
	if (rank + 1 < nranks || rank % 2) {
		uint32_t peer = (uint32_t)(rank % 2 ? rank - 1 : rank + 1);

		for (size_t i = 0; i < COUNT; i++)
			send[i] = (float)(rank + 100);
		for (int turn = 0; turn < 2; turn++) {
			if (turn == rank % 2)
				HCCL_CHECK(HcclSend(send, COUNT,
						    HCCL_DATA_TYPE_FP32, peer,
						    comm, stream));
			else
				HCCL_CHECK(HcclRecv(recv, COUNT,
						    HCCL_DATA_TYPE_FP32, peer,
						    comm, stream));
		}
		ACL_CHECK(aclrtSynchronizeStream(stream));
		bad |= check("recv", recv, COUNT, (float)(peer + 100));
	}

	HCCL_CHECK(HcclBarrier(comm, stream));
	ACL_CHECK(aclrtMemcpyAsync(host, bytes, recv, bytes,
				   ACL_MEMCPY_DEVICE_TO_HOST, stream));
	ACL_CHECK(aclrtSynchronizeStream(stream));

	HCCL_CHECK(HcclCommDestroy(comm));
	ACL_CHECK(aclrtFree(send));
	ACL_CHECK(aclrtFree(recv));
	ACL_CHECK(aclrtFreeHost(host));
	ACL_CHECK(aclrtDestroyStream(stream));
	ACL_CHECK(aclrtResetDevice((int32_t)dev));
	/* as hccl_test: the profile stops after the device is reset */
	ACL_CHECK(aclprofStop(cfg));
	ACL_CHECK(aclprofDestroyConfig(cfg));
	ACL_CHECK(aclprofFinalize());
	ACL_CHECK(aclFinalize());
	if (bad)
		return 1;
	printf("rank %d: HcclAllReduce HcclBroadcast HcclAllGather "
	       "HcclReduceScatter HcclAlltoAll %sHcclBarrier ok\n",
	       rank, rank + 1 < nranks || rank % 2 ? "HcclSend HcclRecv " : "");
	return 0;
}

int main(int argc, char **argv)
{
	int ret;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (argc != 2) {
		if (rank == 0)
			fprintf(stderr, "usage: %s PROFILE_DIR\n", argv[0]);
		MPI_Finalize();
		return 2;
	}
	ret = run(argv[1]);
	if (ret)
		MPI_Abort(MPI_COMM_WORLD, ret);
	MPI_Finalize();
	return ret;
}
