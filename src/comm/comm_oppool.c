/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The communicator's pool of op descriptors: ops without a tail are
 * carved from mmap'd slabs, recycled through a lock-free stack and
 * unmapped with the communicator (struct ohc_comm's op_pool fields).
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "comm/comm.h"
#include "comm/comm_int.h"

/*
 * Ops without a tail come from slabs: page-populated arrays handed out op
 * by op, each op then recycled through the communicator's pool and never
 * freed on its own. A deep queue (hccl_test enqueues all its iterations
 * before it synchronizes) thus costs one mmap per slab instead of a
 * calloc and a first-touch page fault per op; the first 20000 8-byte
 * AllReduces of all_reduce_test took ~2900 page faults more than 100 did.
 * Slabs grow from OP_SLAB_MIN to OP_SLAB_MAX ops and stop at OP_POOL_MAX
 * ops in all (~4.5 MiB, the most an application keeps queued at once in
 * practice); past that, ops are calloc'd and freed one by one.
 */
#define OP_POOL_MAX 16384
#define OP_SLAB_MIN 16
#define OP_SLAB_MAX 1024

struct ohc_op_slab {
	struct ohc_op_slab *next;
	size_t bytes; /* of the mapping, this header included */
	/* ops, sizeof(struct ohc_op) apart (its tail stays empty) */
	char mem[] __attribute__((aligned(64)));
};

static struct ohc_op *slab_op(struct ohc_op_slab *slab, unsigned i)
{
	return (struct ohc_op *)(void *)(slab->mem +
					 (size_t)i * sizeof(struct ohc_op));
}

/* Push the chain first..last (linked by pool_next) onto comm's pool. */
static void pool_push(struct ohc_comm *comm, struct ohc_op *first,
		      struct ohc_op *last)
{
	struct ohc_op *top = __atomic_load_n(&comm->op_pool, __ATOMIC_RELAXED);

	do
		last->pool_next = top;
	while (!__atomic_compare_exchange_n(&comm->op_pool, &top, first, 0,
					    __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

/*
 * The next op never used yet: from the newest slab, or a new slab mapped
 * (the caller holds op_pool_taking). Ops are handed out one by one rather
 * than linked into the pool when the slab is mapped: that pass over cold
 * memory was half of the enqueue's time in the first 16384 ops. NULL
 * when the cap is reached or mmap fails.
 */
static struct ohc_op *op_slab_carve(struct ohc_comm *comm)
{
	unsigned n = comm->op_slab_ops ? comm->op_slab_ops : OP_SLAB_MIN;
	struct ohc_op_slab *slab;
	size_t bytes;

	if (comm->op_slab_next < comm->op_slab_n)
		return slab_op(comm->op_slabs, comm->op_slab_next++);
	n = OHC_MIN(OHC_MIN(n, (unsigned)OP_SLAB_MAX),
		    OP_POOL_MAX - comm->op_slab_ops);
	if (!n)
		return NULL;
	bytes = sizeof(*slab) + (size_t)n * sizeof(struct ohc_op);
	slab = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (slab == MAP_FAILED)
		return NULL;
	slab->bytes = bytes;
	slab->next = comm->op_slabs;
	comm->op_slabs = slab;
	comm->op_slab_ops += n;
	comm->op_slab_n = n;
	comm->op_slab_next = 1;
	return slab_op(slab, 0);
}

/*
 * A spare op of comm (from the pool, or a new slab), or NULL (the cap is
 * reached, or another submitter is taking).
 */
struct ohc_op *ohc_op_pool_take(struct ohc_comm *comm)
{
	struct ohc_op *op;

	if (__atomic_exchange_n(&comm->op_pool_taking, 1, __ATOMIC_ACQUIRE))
		return NULL;
	/* one atomic per op: the pool is taken over whole when we run out */
	if (!comm->op_taken &&
	    __atomic_load_n(&comm->op_pool, __ATOMIC_RELAXED))
		comm->op_taken = __atomic_exchange_n(&comm->op_pool, NULL,
						     __ATOMIC_ACQUIRE);
	op = comm->op_taken;
	if (op)
		comm->op_taken = op->pool_next;
	else
		op = op_slab_carve(comm);
	__atomic_store_n(&comm->op_pool_taking, 0, __ATOMIC_RELEASE);
	return op;
}

/*
 * Free op or give it back to the pool. The caller still holds the op's
 * count in comm->inflight (if it took one), so comm outlives this call.
 */
void ohc_op_recycle(struct ohc_comm *comm, struct ohc_op *op)
{
	if (op->pooled)
		pool_push(comm, op, op);
	else
		free(op);
}

void ohc_op_free(struct ohc_op *op)
{
	ohc_op_recycle(op->comm, op);
}

/* Comm is idle (no op in flight, none being submitted). */
void ohc_op_pool_fini(struct ohc_comm *comm)
{
	struct ohc_op_slab *slab = comm->op_slabs;

	while (slab) {
		struct ohc_op_slab *next = slab->next;

		munmap(slab, slab->bytes);
		slab = next;
	}
	comm->op_slabs = NULL;
	comm->op_slab_ops = 0;
	comm->op_slab_next = comm->op_slab_n = 0;
	comm->op_pool = comm->op_taken = NULL;
}
