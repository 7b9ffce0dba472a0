/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The communicator's pool of op descriptors: ops without a tail are
 * carved from mmap'd slabs, recycled through a lock-free stack and
 * unmapped with the communicator (struct ohc_comm's op_pool fields).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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
 * The first slab holds OP_SLAB_FIRST ops (6 KiB, written through when
 * mapped: enough for a caller that waits for each call); the next ones
 * are 2 MiB, aligned and advised for a transparent huge page (5577 ops
 * each), up to OP_POOL_MAX ops in all (~6 MiB, the most an application
 * keeps queued at once in practice); past that, ops are calloc'd and
 * freed one by one.
 *
 * The huge slabs are for the first deep queue's sake. On the VMs we run
 * on, the first write to a fresh 4 KiB page costs microseconds even when
 * MAP_POPULATE faulted it in (6.3 us a page against 0.11 us inside a huge
 * page, 4 MiB written twice), so the first few thousand queued ops of a
 * communicator ran 1.5-1.7x slower than the same ops once the pool had
 * grown (2-rank 8-byte AllReduces on a stream, 3000 queued: 1.24-1.38 us
 * a call in the first round against 0.71-0.79 in later ones, or in a
 * first round after another deep one): the "first size of a sweep"
 * penalty of issue 24. Slabs that doubled from 16 ops still paid it for
 * their first 256 ops (a 550-call sweep's 8 B size: 0.57 us against 0.37
 * at 16 B).
 *
 * A huge slab costs 0.2 ms to map where the guest's memory was used
 * before and ~6 ms where it is fresh (the hypervisor faults in its 4 KiB
 * pages), and a loop pays that inside its timing wherever the queue first
 * outgrows the slab before: at op 17, all_reduce_test -n 20 -w 5 took
 * 0.83-8.95 us at 8 B in 5 of 8 runs (0.43-0.48 without huge slabs); at
 * op 129, -n 500 -w 50 took 0.46 against 0.25 for Open MPI. So the first
 * op a communicator queues on a stream maps one ahead of need
 * (ohc_op_pool_deepen): a stream is what lets a caller queue deep, and
 * its first op is a warm-up's. A communicator used only synchronously
 * keeps the small slab.
 */
#define OP_POOL_MAX 16384
#define OP_SLAB_FIRST 16
#define OP_HUGE_SLAB ((size_t)2 << 20)

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
 * bytes (a multiple of OP_HUGE_SLAB) at an OP_HUGE_SLAB boundary, advised
 * for huge pages and written in (where transparent huge pages are off,
 * this is a populated mapping of 4 KiB pages like the small slabs'), or
 * NULL.
 */
static void *map_huge(size_t bytes)
{
	size_t extra = OP_HUGE_SLAB;
	char *p = mmap(NULL, bytes + extra, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a, *end;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + extra - 1) & ~(uintptr_t)(extra - 1));
	end = p + bytes + extra;
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (end > a + bytes)
		munmap(a + bytes, (size_t)(end - (a + bytes)));
#ifdef MADV_HUGEPAGE
	(void)madvise(a, bytes, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
	if (madvise(a, bytes, MADV_POPULATE_WRITE) == 0)
		return a;
#endif
	for (size_t off = 0; off < bytes; off += 4096) /* older kernels */
		((volatile char *)a)[off] = 0;
	return a;
}

/*
 * Map the next slab and make it the one ops are carved from (the caller
 * holds op_pool_taking); ops of the slab before that were never handed
 * out go to op_taken. False when the cap is reached or mmap fails.
 */
static bool op_slab_add(struct ohc_comm *comm)
{
	unsigned left = OP_POOL_MAX - comm->op_slab_ops, n;
	struct ohc_op_slab *slab;
	size_t bytes;

	if (!left)
		return false;
	if (!comm->op_slab_ops) {
		n = OP_SLAB_FIRST;
		bytes = sizeof(*slab) + (size_t)n * sizeof(struct ohc_op);
		slab = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (slab == MAP_FAILED)
			return false;
		memset(slab, 0, bytes); /* the first writes, now */
	} else {
		bytes = OP_HUGE_SLAB;
		n = (unsigned)OHC_MIN((bytes - sizeof(*slab)) /
					      sizeof(struct ohc_op),
				      (size_t)left);
		slab = map_huge(bytes);
		if (!slab)
			return false;
	}
	while (comm->op_slab_next < comm->op_slab_n) {
		struct ohc_op *op =
			slab_op(comm->op_slabs, comm->op_slab_next++);

		op->pool_next = comm->op_taken;
		comm->op_taken = op;
	}
	slab->bytes = bytes;
	slab->next = comm->op_slabs;
	comm->op_slabs = slab;
	comm->op_slab_ops += n;
	comm->op_slab_n = n;
	comm->op_slab_next = 0;
	return true;
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
	if (comm->op_slab_next >= comm->op_slab_n && !op_slab_add(comm))
		return NULL;
	return slab_op(comm->op_slabs, comm->op_slab_next++);
}

void ohc_op_pool_deepen(struct ohc_comm *comm)
{
	if (__atomic_exchange_n(&comm->op_pool_taking, 1, __ATOMIC_ACQUIRE))
		return; /* another submitter: the next op tries again */
	if (!comm->op_pool_deep) {
		if (!comm->op_slab_ops)
			(void)op_slab_add(comm); /* the small one first */
		if (comm->op_slab_ops == OP_SLAB_FIRST)
			(void)op_slab_add(comm); /* failed: on demand later */
		__atomic_store_n(&comm->op_pool_deep, 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&comm->op_pool_taking, 0, __ATOMIC_RELEASE);
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
	comm->op_pool_deep = 0;
}
