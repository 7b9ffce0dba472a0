/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_COMM_TASK_H
#define OHC_COMM_TASK_H

/*
 * Task contexts (the task API, spec section 7): a communicator's prepared
 * operations, committed round by round, executed in prepare order on the
 * context's own stream (one worker thread per context, none per task),
 * with completion counters and dependencies on other contexts' tasks
 * (core/taskq.h holds that machinery; this file binds it to a
 * communicator and its operations).
 *
 * One context per communicator at a time. Calls on one context may come
 * from several threads (they are serialized); the ordering rules (waits
 * in prepare order) still apply to the calls' combined sequence.
 */
#include <stdbool.h>
#include <stdint.h>

#include "algo/algo.h"
#include "util/status.h"

struct ohc_comm;
struct ohc_task_ctx;

/* At most this many distinct algorithm configurations per context. */
#define OHC_TASK_TILINGS 8

/*
 * One prepare, arguments already checked (api/api_task.c). Elements:
 * AllReduce count; AllGather the send count; ReduceScatter the receive
 * count; AlltoAll the count per peer. stride (0: none) places rank i's
 * block at element i * stride: AllGather's output, ReduceScatter's input,
 * both sides of AlltoAll. Round r (0..repeat-1) works on the buffers
 * advanced by r * count elements (AlltoAllV: each displacement k by
 * r * its count). AlltoAllV's four arrays have nranks entries and are
 * copied.
 */
struct ohc_task_desc {
	enum ohc_coll_op
		op; /* ALLREDUCE ALLGATHER REDUCE_SCATTER ALLTOALL(V) */
	const void *sbuf;
	void *rbuf;
	uint64_t count;
	uint64_t stride;
	int dtype, redop;
	size_t esize;
	const uint64_t *send_counts, *send_displs;
	const uint64_t *recv_counts, *recv_displs;
	unsigned repeat;
};

/*
 * Bind a new context to comm: its stream, its queue. OHC_ERR_BUSY when
 * comm already has one; OHC_ERR_NO_MEMORY, OHC_ERR_UNAVAILABLE (no
 * stream). Logged.
 */
ohc_status_t ohc_task_ctx_create(struct ohc_comm *comm,
				 struct ohc_task_ctx **ctx_p);
/*
 * Unbind and free: the handle dies at once; rounds not started are
 * discarded (ohc_tq_close), started ones are waited for.
 */
void ohc_task_ctx_destroy(struct ohc_task_ctx *ctx);
/* The live context behind a user's handle, or NULL (never dereferenced). */
struct ohc_task_ctx *ohc_task_ctx_lookup(const void *handle);
void *ohc_task_ctx_handle(const struct ohc_task_ctx *ctx);
struct ohc_comm *ohc_task_ctx_comm(const struct ohc_task_ctx *ctx);

/*
 * The algorithm configuration of the prepares that follow (HCCL_ALGO
 * grammar); NULL or "" returns to the communicator's. OHC_ERR_INVALID
 * (logged) for a string the selection does not understand or past
 * OHC_TASK_TILINGS distinct ones.
 */
ohc_status_t ohc_task_set_algo(struct ohc_task_ctx *ctx, const char *algo);

/* Prepare (and with commit, commit one round); *handle_p on success. */
ohc_status_t ohc_task_prepare(struct ohc_task_ctx *ctx,
			      const struct ohc_task_desc *d, bool commit,
			      int *handle_p);
/* The rest map onto the queue (core/taskq.h) of ctx. */
ohc_status_t ohc_task_commit(struct ohc_task_ctx *ctx, int handle);
ohc_status_t ohc_task_wait(struct ohc_task_ctx *ctx, int handle);
int ohc_task_query(struct ohc_task_ctx *ctx, int handle);
ohc_status_t ohc_task_depend(struct ohc_task_ctx *ctx, struct ohc_task_ctx *src,
			     int src_handle);
ohc_status_t ohc_task_finalize(struct ohc_task_ctx *ctx, bool sync);
ohc_status_t ohc_task_round_times(struct ohc_task_ctx *ctx, int handle,
				  unsigned round, uint64_t *start_p,
				  uint64_t *end_p);

#endif
