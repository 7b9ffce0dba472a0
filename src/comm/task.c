/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Task contexts (task.h). Each context owns a stream of the runtime (one
 * worker thread) and a task queue (core/taskq.h). A round, when the queue
 * launches it, becomes an ordinary operation of the communicator
 * (ohc_op_alloc + ohc_op_launch) on that stream, with a notify hook that
 * feeds the queue's counters. Why a stream per context and dependency
 * edges in the queue rather than stream waits on events: src/comm/README.md.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/task.h"
#include "core/taskq.h"
#include "util/log.h"

struct ohc_task_ctx {
	void *handle; /* the user's HcclTaskCtx */
	struct ohc_comm *comm;
	struct ohc_tq *tq;
	void *stream;
	pthread_mutex_t lock; /* algo and tilings */
	const char *algo;     /* the next prepares'; NULL: the comm's */
	char *tilings[OHC_TASK_TILINGS];
	unsigned ntilings;
};

/* A prepared task: the queue's argument. */
struct task_prep {
	struct ohc_task_desc d; /* AlltoAllV arrays point into vec */
	const char *algo;	/* algorithm override, or NULL */
	uint64_t *scratch;	/* 4 * nranks: a round's arrays, or NULL */
	uint64_t vec[];		/* AlltoAllV's arrays, then scratch */
};

/* ---- handles: slot + generation, as communicators' (comm_registry.c) ---- */

struct ctx_slot {
	struct ohc_task_ctx *ctx; /* NULL: free */
	uint32_t gen;		  /* >= 1 */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ctx_slot *slots; /* under reg_lock */
static uint32_t nslots;

static ohc_status_t handle_add(struct ohc_task_ctx *ctx)
{
	ohc_status_t status = OHC_OK;
	uint32_t i;

	pthread_mutex_lock(&reg_lock);
	for (i = 0; i < nslots && slots[i].ctx; i++)
		;
	if (i == nslots) {
		uint32_t cap = nslots ? 2 * nslots : 16;
		struct ctx_slot *grown = NULL;

		if (nslots < (1u << 30))
			grown = realloc(slots, cap * sizeof(*slots));
		if (!grown) {
			status = OHC_ERR_NO_MEMORY;
			goto out;
		}
		for (uint32_t k = nslots; k < cap; k++)
			grown[k] = (struct ctx_slot){NULL, 1};
		slots = grown;
		nslots = cap;
	}
	slots[i].ctx = ctx;
	ctx->handle = (void *)(uintptr_t)(((uint64_t)slots[i].gen << 32) |
					  (i + 1ull));
out:
	pthread_mutex_unlock(&reg_lock);
	return status;
}

static void handle_remove(struct ohc_task_ctx *ctx)
{
	uint64_t v = (uint64_t)(uintptr_t)ctx->handle;
	struct ctx_slot *sl;

	pthread_mutex_lock(&reg_lock);
	sl = &slots[(uint32_t)v - 1];
	sl->ctx = NULL;
	if (++sl->gen == 0)
		sl->gen = 1;
	pthread_mutex_unlock(&reg_lock);
}

struct ohc_task_ctx *ohc_task_ctx_lookup(const void *handle)
{
	uint64_t v = (uint64_t)(uintptr_t)handle;
	uint32_t slot = (uint32_t)v - 1, gen = (uint32_t)(v >> 32);
	struct ohc_task_ctx *found = NULL;

	if ((uint32_t)v == 0 || gen == 0)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	if (slot < nslots && slots[slot].gen == gen)
		found = slots[slot].ctx;
	pthread_mutex_unlock(&reg_lock);
	return found;
}

void *ohc_task_ctx_handle(const struct ohc_task_ctx *ctx)
{
	return ctx->handle;
}

struct ohc_comm *ohc_task_ctx_comm(const struct ohc_task_ctx *ctx)
{
	return ctx->comm;
}

/* ---- rounds ---- */

static void round_start(void *arg, uint64_t tag)
{
	ohc_tq_round_start(arg, (int)(tag >> 32), (unsigned)(uint32_t)tag);
}

static void round_done(void *arg, uint64_t tag, ohc_status_t status)
{
	ohc_tq_round_done(arg, (int)(tag >> 32), (unsigned)(uint32_t)tag,
			  status);
}

static const struct ohc_op_notify round_notify = {
	.start = round_start,
	.done = round_done,
};

/* Whether the task's blocks are laid out other than back to back. */
static bool strided(const struct ohc_task_desc *d)
{
	return d->stride && d->stride != d->count;
}

/*
 * The operation of round r (spec section 7): the buffers advance by
 * r * count elements; a stride other than the count turns the
 * collective into its V form with the blocks at i * stride.
 */
static void round_args(const struct ohc_comm *comm, struct task_prep *p,
		       unsigned r, struct ohc_coll_args *a)
{
	const struct ohc_task_desc *d = &p->d;
	const char *sb = d->sbuf;
	char *rb = d->rbuf;
	uint64_t off = (uint64_t)r * d->count, n = comm->nranks;
	uint64_t *v1 = p->scratch, *v2 = p->scratch + n;
	size_t es = d->esize;

	memset(a, 0, sizeof(*a));
	a->op = d->op;
	a->dtype = d->dtype;
	a->redop = d->redop;
	a->esize = es;
	a->count = d->count;
	a->sbuf = sb + off * es;
	a->rbuf = rb + off * es;
	switch (d->op) {
	case OHC_COLL_ALLGATHER:
		if (!strided(d))
			break;
		a->op = OHC_COLL_ALLGATHER_V;
		a->rbuf = rb;
		for (uint64_t i = 0; i < n; i++) {
			v1[i] = d->count;
			v2[i] = off + i * d->stride;
		}
		a->recv_counts = v1;
		a->recv_displs = v2;
		break;
	case OHC_COLL_REDUCE_SCATTER:
		if (!strided(d))
			break;
		a->op = OHC_COLL_REDUCE_SCATTER_V;
		a->sbuf = sb;
		for (uint64_t i = 0; i < n; i++) {
			v1[i] = d->count;
			v2[i] = off + i * d->stride;
		}
		a->send_counts = v1;
		a->send_displs = v2;
		break;
	case OHC_COLL_ALLTOALL:
		if (!strided(d))
			break;
		a->op = OHC_COLL_ALLTOALLV;
		a->count = 0;
		a->sbuf = sb;
		a->rbuf = rb;
		for (uint64_t i = 0; i < n; i++) {
			v1[i] = d->count;
			v2[i] = off + i * d->stride;
		}
		a->send_counts = a->recv_counts = v1;
		a->send_displs = a->recv_displs = v2;
		break;
	case OHC_COLL_ALLTOALLV:
		a->count = 0;
		a->sbuf = sb;
		a->rbuf = rb;
		for (uint64_t i = 0; i < n; i++) {
			v1[i] = d->send_displs[i] + r * d->send_counts[i];
			v2[i] = d->recv_displs[i] + r * d->recv_counts[i];
		}
		a->send_counts = d->send_counts;
		a->send_displs = v1;
		a->recv_counts = d->recv_counts;
		a->recv_displs = v2;
		break;
	default:
		break;
	}
}

/* The queue's launch (its lock held): the round as an op on our stream. */
static ohc_status_t task_launch(void *owner, void *arg, int handle,
				unsigned round)
{
	struct ohc_task_ctx *ctx = owner;
	struct task_prep *p = arg;
	struct ohc_coll_args a;
	struct ohc_op *op;

	round_args(ctx->comm, p, round, &a);
	op = ohc_op_alloc(ctx->comm, &a); /* copies the arrays */
	if (!op) {
		OHC_ERROR(OHC_SS_COLL,
			  "rank %u: task handle %d round %u: out of memory for "
			  "its operation",
			  ctx->comm->rank, handle, round);
		return OHC_ERR_NO_MEMORY;
	}
	if (p->algo)
		op->args.algo_override = p->algo;
	op->notify = &round_notify;
	op->notify_arg = ctx->tq;
	op->notify_tag = ((uint64_t)(uint32_t)handle << 32) | round;
	return ohc_op_launch(op, ctx->stream);
}

static void task_drop(void *arg)
{
	free(arg);
}

static const struct ohc_tq_ops task_ops = {
	.launch = task_launch,
	.drop = task_drop,
};

/* ---- contexts ---- */

ohc_status_t ohc_task_ctx_create(struct ohc_comm *comm,
				 struct ohc_task_ctx **ctx_p)
{
	struct ohc_task_ctx *ctx = calloc(1, sizeof(*ctx)), *none = NULL;
	char name[OHC_COMM_NAME_MAX + 32];
	ohc_status_t status;
	int ret;

	if (!ctx)
		return OHC_ERR_NO_MEMORY;
	if (!__atomic_compare_exchange_n(&comm->task_ctx, &none, ctx, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		OHC_ERROR(OHC_SS_API,
			  "rank %u: communicator '%s' already has a task "
			  "context (one per communicator); destroy it first",
			  comm->rank, comm->name);
		free(ctx);
		return OHC_ERR_BUSY;
	}
	ctx->comm = comm;
	pthread_mutex_init(&ctx->lock, NULL);
	ret = ohc_rt_stream_open(comm->device, &ctx->stream);
	if (ret) {
		OHC_ERROR(OHC_SS_API,
			  "rank %u: no stream for a task context of '%s' (acl "
			  "error %d)",
			  comm->rank, comm->name, ret);
		status = OHC_ERR_UNAVAILABLE;
		goto undo_bind;
	}
	snprintf(name, sizeof(name), "%s rank %u", comm->name, comm->rank);
	status = ohc_tq_create(
		&task_ops, ctx, name,
		(uint64_t)comm->cfg.exec_timeout_s * 1000000000ull, &ctx->tq);
	if (status < 0)
		goto undo_stream;
	status = handle_add(ctx);
	if (status < 0)
		goto undo_tq;
	*ctx_p = ctx;
	return OHC_OK;

undo_tq:
	ohc_tq_close(ctx->tq);
	ohc_tq_put(ctx->tq);
undo_stream:
	ohc_rt_stream_close(ctx->stream);
undo_bind:
	pthread_mutex_destroy(&ctx->lock);
	__atomic_store_n(&comm->task_ctx, NULL, __ATOMIC_RELEASE);
	free(ctx);
	return status;
}

void ohc_task_ctx_destroy(struct ohc_task_ctx *ctx)
{
	handle_remove(ctx);
	ohc_tq_close(ctx->tq); /* nothing launches after this */
	ohc_rt_stream_close(ctx->stream);
	__atomic_store_n(&ctx->comm->task_ctx, NULL, __ATOMIC_RELEASE);
	ohc_tq_put(ctx->tq); /* dependents may still hold it */
	for (unsigned i = 0; i < ctx->ntilings; i++)
		free(ctx->tilings[i]);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

ohc_status_t ohc_task_set_algo(struct ohc_task_ctx *ctx, const char *algo)
{
	static const enum ohc_coll_op ops[] = {
		OHC_COLL_ALLREDUCE, OHC_COLL_ALLGATHER, OHC_COLL_REDUCE_SCATTER,
		OHC_COLL_ALLTOALL};
	ohc_status_t status = OHC_OK;
	unsigned i;

	if (!algo || !algo[0]) {
		pthread_mutex_lock(&ctx->lock);
		ctx->algo = NULL;
		pthread_mutex_unlock(&ctx->lock);
		return OHC_OK;
	}
	if (strlen(algo) >= sizeof(ctx->comm->cfg.algo)) {
		OHC_ERROR(OHC_SS_API,
			  "algConfig is %zu characters long, at most %zu",
			  strlen(algo), sizeof(ctx->comm->cfg.algo) - 1);
		return OHC_ERR_INVALID;
	}
	for (i = 0; i < OHC_ARRAY_SIZE(ops); i++) {
		int unknown = 0;

		ohc_algo_override_find(algo, ops[i], &unknown);
		if (!unknown)
			continue;
		OHC_ERROR(OHC_SS_API,
			  "algConfig '%s' is not an HCCL_ALGO string the "
			  "selection understands (e.g. \"level0:ring\" or "
			  "\"AllReduce=level0:ring/AllGather=level0:NHR\"; "
			  "algorithms: ring, H-D_R, NHR, NHR_V1, NB, AHC, "
			  "pipeline, pairwise)",
			  algo);
		return OHC_ERR_INVALID;
	}
	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < ctx->ntilings && strcmp(ctx->tilings[i], algo); i++)
		;
	if (i == ctx->ntilings) {
		if (i == OHC_TASK_TILINGS) {
			OHC_ERROR(OHC_SS_API,
				  "algConfig '%s': a context takes at most %d "
				  "distinct algorithm configurations",
				  algo, OHC_TASK_TILINGS);
			status = OHC_ERR_INVALID;
		} else if (!(ctx->tilings[i] = strdup(algo))) {
			status = OHC_ERR_NO_MEMORY;
		} else {
			ctx->ntilings++;
		}
	}
	if (status == OHC_OK)
		ctx->algo = ctx->tilings[i];
	pthread_mutex_unlock(&ctx->lock);
	return status;
}

ohc_status_t ohc_task_prepare(struct ohc_task_ctx *ctx,
			      const struct ohc_task_desc *d, bool commit,
			      int *handle_p)
{
	size_t n = ctx->comm->nranks, words = 0;
	bool v = d->op == OHC_COLL_ALLTOALLV;
	struct task_prep *p;
	ohc_status_t status;
	int handle;

	if (v)
		words = 8 * n; /* the user's four arrays, then scratch */
	else if (strided(d))
		words = 4 * n;
	p = calloc(1, sizeof(*p) + words * sizeof(uint64_t));
	if (!p)
		return OHC_ERR_NO_MEMORY;
	p->d = *d;
	if (v) {
		memcpy(p->vec, d->send_counts, n * sizeof(uint64_t));
		memcpy(p->vec + n, d->send_displs, n * sizeof(uint64_t));
		memcpy(p->vec + 2 * n, d->recv_counts, n * sizeof(uint64_t));
		memcpy(p->vec + 3 * n, d->recv_displs, n * sizeof(uint64_t));
		p->d.send_counts = p->vec;
		p->d.send_displs = p->vec + n;
		p->d.recv_counts = p->vec + 2 * n;
		p->d.recv_displs = p->vec + 3 * n;
		p->scratch = p->vec + 4 * n;
	} else {
		p->d.send_counts = p->d.send_displs = NULL;
		p->d.recv_counts = p->d.recv_displs = NULL;
		p->scratch = words ? p->vec : NULL;
	}
	pthread_mutex_lock(&ctx->lock);
	p->algo = ctx->algo;
	pthread_mutex_unlock(&ctx->lock);
	status = ohc_tq_add_task(ctx->tq, p, d->repeat, ohc_coll_op_name(d->op),
				 &handle);
	if (status < 0) {
		free(p);
		return status;
	}
	if (commit) {
		status = ohc_tq_commit(ctx->tq, handle);
		if (status < 0)
			return status;
	}
	*handle_p = handle;
	return OHC_OK;
}

ohc_status_t ohc_task_commit(struct ohc_task_ctx *ctx, int handle)
{
	return ohc_tq_commit(ctx->tq, handle);
}

ohc_status_t ohc_task_wait(struct ohc_task_ctx *ctx, int handle)
{
	return ohc_tq_wait(ctx->tq, handle);
}

int ohc_task_query(struct ohc_task_ctx *ctx, int handle)
{
	return ohc_tq_query(ctx->tq, handle);
}

ohc_status_t ohc_task_depend(struct ohc_task_ctx *ctx, struct ohc_task_ctx *src,
			     int src_handle)
{
	return ohc_tq_add_dep(ctx->tq, src->tq, src_handle);
}

ohc_status_t ohc_task_finalize(struct ohc_task_ctx *ctx, bool sync)
{
	return ohc_tq_finalize(ctx->tq, sync);
}

ohc_status_t ohc_task_round_times(struct ohc_task_ctx *ctx, int handle,
				  unsigned round, uint64_t *start_p,
				  uint64_t *end_p)
{
	return ohc_tq_round_times(ctx->tq, handle, round, start_p, end_p);
}
