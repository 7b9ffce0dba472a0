/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The task API's fused AlltoAll -> AllGather (spec section 7): four
 * thread ranks, two communicators ("ep" routes tokens AlltoAll, "tp"
 * gathers the routed tokens). The compute loop produces the tokens in
 * SLICES slices and commits each slice of the AlltoAll (repeat = SLICES)
 * as soon as it is ready, while earlier slices are on the wire. The
 * AllGather, prepared and committed up front on the other communicator,
 * starts by itself once the whole AlltoAll finished
 * (HcclTaskInterHcclGroupSync), while the compute thread is free.
 *
 * Layout: rank r's tokens are a [NDEV][SLICES * SLICE] matrix, row k for
 * rank k; slice s is column block s of every row, so strideCount =
 * SLICES * SLICE places the blocks of round s (HCCL's tiled layout).
 */
#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_task.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NDEV 4
#define SLICES 8
#define SLICE 4096 /* floats per destination per slice */
#define ROW (SLICES * SLICE)
#define ALL (NDEV * ROW) /* floats per rank */

static HcclRootInfo roots[2];

/* The token rank `from` computes for rank `to`, element x of the row. */
static float token(int from, int to, int x)
{
	return (float)(from * 1000000 + to * 100000 + x % 100000);
}

static int rank_main(int rank)
{
	float *tokens = malloc(ALL * sizeof(float));
	float *routed = malloc(ALL * sizeof(float));
	float *gathered = malloc((size_t)NDEV * ALL * sizeof(float));
	HcclComm ep, tp;
	HcclTaskCtx a2a_ctx, ag_ctx;
	HcclHandle a2a, ag;
	int wrong = 0;

	aclrtSetDevice(rank);
	HcclCommInitRootInfo(NDEV, &roots[0], rank, &ep);
	HcclCommInitRootInfo(NDEV, &roots[1], rank, &tp);
	HcclTaskInit(ep, &a2a_ctx);
	HcclTaskInit(tp, &ag_ctx);

	/* Prepare: AlltoAll in SLICES rounds; the AllGather after it. */
	a2a = HcclTaskAlltoAll(a2a_ctx, tokens, routed, SLICE,
			       HCCL_DATA_TYPE_FP32, ROW, SLICES, false);
	HcclTaskInterHcclGroupSync(ag_ctx, a2a_ctx, a2a);
	ag = HcclTaskAllGather(ag_ctx, routed, gathered, ALL,
			       HCCL_DATA_TYPE_FP32, 0, 1, true);

	/* Compute a slice, commit it: earlier slices are in flight. */
	for (int s = 0; s < SLICES; s++) {
		for (int to = 0; to < NDEV; to++)
			for (int x = s * SLICE; x < (s + 1) * SLICE; x++)
				tokens[to * ROW + x] = token(rank, to, x);
		HcclTaskCommit(a2a_ctx, a2a);
	}
	for (int s = 0; s < SLICES; s++)
		if (HcclTaskWait(a2a_ctx, a2a) != HCCL_SUCCESS)
			wrong++;
	if (HcclTaskWait(ag_ctx, ag) != HCCL_SUCCESS)
		wrong++;

	/* gathered[q][from][x] = the token `from` computed for rank q */
	for (int q = 0; q < NDEV; q++)
		for (int from = 0; from < NDEV; from++)
			for (int x = 0; x < ROW; x++)
				wrong += gathered[(size_t)q * ALL + from * ROW +
						  x] != token(from, q, x);
	printf("rank %d: %d slices routed, %d tokens gathered: %s\n", rank,
	       SLICES, NDEV * ALL, wrong ? "WRONG" : "ok");

	HcclTaskFinalize(a2a_ctx, true);
	HcclTaskFinalize(ag_ctx, true);
	HcclTaskDestroy(ag_ctx);
	HcclTaskDestroy(a2a_ctx);
	HcclCommDestroy(ep);
	HcclCommDestroy(tp);
	free(tokens);
	free(routed);
	free(gathered);
	return wrong;
}

static void *thread_main(void *arg)
{
	return (void *)(long)rank_main((int)(long)arg);
}

int main(void)
{
	pthread_t t[NDEV];
	long bad = 0;

	aclInit(NULL);
	HcclGetRootInfo(&roots[0]);
	HcclGetRootInfo(&roots[1]);
	for (long r = 0; r < NDEV; r++)
		pthread_create(&t[r], NULL, thread_main, (void *)r);
	for (int r = 0; r < NDEV; r++) {
		void *ret;

		pthread_join(t[r], &ret);
		bad += (long)ret;
	}
	aclFinalize();
	return bad != 0;
}
