/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_COMMON_H
#define OHC_ALGO_COMMON_H

/*
 * Helpers shared by the algorithm files: memory overlap, scratch carving,
 * block geometry of regular and V collectives. Algorithm-private; not an
 * interface of src/algo.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algo/algo.h"
#include "algo/patterns/recursive.h"

/* 1 when [a, a + alen) and [b, b + blen) share a byte. */
static inline int ohc_mem_overlap(const void *a, size_t alen, const void *b,
				  size_t blen)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return alen && blen && x < y + blen && y < x + alen;
}

static inline size_t ohc_align64(size_t x)
{
	return (x + 63) & ~(size_t)63;
}

/*
 * Blocks of a collective: block i is len(i) bytes at byte offset off(i) of
 * its buffer. Regular collectives have count elements per block, packed;
 * V collectives take counts and displacements (elements) from arrays.
 */
struct ohc_blocks {
	uint64_t count;
	const uint64_t *counts, *displs;
	size_t esize;
};

static inline struct ohc_blocks ohc_blocks_regular(uint64_t count, size_t esize)
{
	struct ohc_blocks b = {count, NULL, NULL, esize};

	return b;
}

static inline struct ohc_blocks
ohc_blocks_v(const uint64_t *counts, const uint64_t *displs, size_t esize)
{
	struct ohc_blocks b = {0, counts, displs, esize};

	return b;
}

static inline uint64_t ohc_blk_len(const struct ohc_blocks *b, uint32_t i)
{
	return (b->counts ? b->counts[i] : b->count) * b->esize;
}

static inline uint64_t ohc_blk_off(const struct ohc_blocks *b, uint32_t i)
{
	return (b->displs ? b->displs[i] : (uint64_t)i * b->count) * b->esize;
}

/* Bytes from the buffer start to the end of the furthest block. */
static inline uint64_t ohc_blk_extent(const struct ohc_blocks *b, uint32_t n)
{
	uint64_t end = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t len = ohc_blk_len(b, i);

		if (len && ohc_blk_off(b, i) + len > end)
			end = ohc_blk_off(b, i) + len;
	}
	return end;
}

static inline uint64_t ohc_blk_max(const struct ohc_blocks *b, uint32_t n)
{
	uint64_t m = 0;

	for (uint32_t i = 0; i < n; i++)
		if (ohc_blk_len(b, i) > m)
			m = ohc_blk_len(b, i);
	return m;
}

/* Send/recv only non-empty messages: both ends see the same lengths. */
static inline void ohc_sched_send_nz(struct ohc_sched *s, uint32_t peer,
				     const void *src, uint64_t len)
{
	if (len)
		ohc_sched_send(s, peer, src, len);
}

static inline void ohc_sched_recv_nz(struct ohc_sched *s, uint32_t peer,
				     void *dst, uint64_t len)
{
	if (len)
		ohc_sched_recv(s, peer, dst, len);
}

static inline void ohc_sched_recv_reduce_nz(struct ohc_sched *s, uint32_t peer,
					    void *dst, const void *src2,
					    uint64_t len)
{
	if (len)
		ohc_sched_recv_reduce(s, peer, dst, src2, len);
}

static inline void ohc_sched_reduce_nz(struct ohc_sched *s, void *dst,
				       const void *a, const void *b,
				       uint64_t len)
{
	if (len)
		ohc_sched_reduce(s, dst, a, b, len);
}

/* A schedule built over the blocks of a collective (blocks.c). */
typedef ohc_status_t (*ohc_blocks_build_fn)(const struct ohc_coll_args *a,
					    struct ohc_sched *s,
					    const struct ohc_blocks *b);
/* Regular: blocks of a->count elements; nothing to do when that is 0. */
ohc_status_t ohc_algo_build_regular(const struct ohc_coll_args *a,
				    struct ohc_sched *s,
				    ohc_blocks_build_fn build);
/*
 * AllGatherV (counts = recv_counts) and ReduceScatterV (send_counts):
 * OHC_ERR_UNSUPPORTED without the arrays, OHC_ERR_INVALID (logged, name:
 * "allgatherv", "reduce_scatterv") when this rank's block is not
 * a->count elements.
 */
ohc_status_t ohc_algo_build_v(const struct ohc_coll_args *a,
			      struct ohc_sched *s, const uint64_t *counts,
			      const uint64_t *displs, const char *name,
			      ohc_blocks_build_fn build);

/* One rank: the op degenerates to a local copy of len bytes. */
static inline ohc_status_t ohc_algo_single(struct ohc_sched *s, void *dst,
					   const void *src, uint64_t len)
{
	ohc_sched_copy(s, dst, src, len);
	ohc_sched_step(s);
	return OHC_OK;
}

/*
 * An allgather's own block: the send buffer (len bytes) copied to own in
 * the receive buffer (extent bytes from a->rbuf), through scratch when it
 * overlaps that other than as own itself. *src_p: the send buffer or its
 * staged copy. OHC_OK or OHC_ERR_NO_MEMORY (blocks.c).
 */
ohc_status_t ohc_allgather_own(const struct ohc_coll_args *a,
			       struct ohc_sched *s, char *own, uint64_t len,
			       uint64_t extent, const char **src_p);

/*
 * A reduce of len bytes, dst = a OP b, put off to the next step (the
 * buffers it reads are still in flight); ohc_pending_flush schedules it.
 */
struct ohc_pending {
	void *dst;
	const void *a, *b;
	uint64_t len;
};

static inline void ohc_pending_flush(struct ohc_sched *s, struct ohc_pending *p)
{
	if (p->dst)
		ohc_sched_reduce_nz(s, p->dst, p->a, p->b, p->len);
	p->dst = NULL;
}

/*
 * The scratch of an allreduce: need bytes of its own, then, when the
 * send buffer partially overlaps the receive buffer, stage_len bytes
 * where the send buffer is copied first. *cur_p: the send buffer or that
 * copy; *tmp_p: the scratch, NULL when none was needed. OHC_OK or
 * OHC_ERR_NO_MEMORY (blocks.c).
 */
ohc_status_t ohc_stage_scratch(const struct ohc_coll_args *a,
			       struct ohc_sched *s, size_t need,
			       size_t stage_len, char **tmp_p,
			       const char **cur_p);

/*
 * The fold at the start of an allreduce of bytes for a non-power-of-two
 * n (patterns/recursive.h), then a step; nothing when rem (n - pof2) is
 * 0. A folded rank r sends *cur_p to r + 1, which reduces it into rb:
 * while receiving, or with tmp received into and the reduce put off in
 * *p; *cur_p is rb then.
 */
static inline void ohc_fold(struct ohc_sched *s, uint32_t r, uint32_t nr,
			    uint32_t rem, const char **cur_p, char *rb,
			    char *tmp, uint64_t bytes, struct ohc_pending *p)
{
	if (!rem)
		return;
	if (nr == OHC_FOLDED) {
		ohc_sched_send(s, r + 1, *cur_p, bytes);
	} else if (r < 2 * rem) {
		if (tmp) {
			ohc_sched_recv(s, r - 1, tmp, bytes);
			*p = (struct ohc_pending){rb, tmp, *cur_p, bytes};
		} else {
			ohc_sched_recv_reduce(s, r - 1, rb, *cur_p, bytes);
		}
		*cur_p = rb;
	}
	ohc_sched_step(s);
}

/*
 * The unfold at the end of a folded allreduce (patterns/recursive.h): a
 * folded rank r receives the result of bytes from r + 1, which sends it;
 * nothing when rem (n - pof2) is 0. No step.
 */
static inline void ohc_unfold(struct ohc_sched *s, uint32_t r, uint32_t nr,
			      uint32_t rem, char *rb, uint64_t bytes)
{
	if (!rem)
		return;
	if (nr == OHC_FOLDED)
		ohc_sched_recv(s, r + 1, rb, bytes);
	else if (r < 2 * rem)
		ohc_sched_send(s, r - 1, rb, bytes);
}

/*
 * The start of a broadcast into a->rbuf, vr the rank relative to the root
 * (ohc_binom_vrank): one rank copies its send buffer; an empty vector
 * needs nothing; else the root copies its send buffer to the receive
 * buffer (ohc_sched_copy: nothing when they are the same). True when the
 * schedule is complete then, *st its status (blocks.c).
 */
bool ohc_bcast_begin(const struct ohc_coll_args *a, struct ohc_sched *s,
		     uint32_t vr, ohc_status_t *st);

/*
 * The start of a reduce to the root (vr 0, vr the relative rank): one
 * rank copies its send buffer; an empty vector needs nothing. *acc_p is
 * where the rank accumulates: the root's receive buffer, or scratch when
 * that partially overlaps its send buffer (*stage_p: ohc_reduce_end
 * copies it back); a non-root's scratch when partial, else NULL. True
 * when the schedule is complete then (or scratch failed), *st its status
 * (blocks.c).
 */
bool ohc_reduce_begin(const struct ohc_coll_args *a, struct ohc_sched *s,
		      uint32_t vr, bool partial, char **acc_p, bool *stage_p,
		      ohc_status_t *st);

/* The end of a reduce: the root's staged result to its receive buffer. */
static inline ohc_status_t ohc_reduce_end(const struct ohc_coll_args *a,
					  struct ohc_sched *s, const char *acc,
					  bool stage)
{
	if (stage) {
		ohc_sched_copy(s, a->rbuf, acc, a->count * a->esize);
		ohc_sched_step(s);
	}
	return OHC_OK;
}

/*
 * A broadcast's work (ohc_algo.work) where every rank but the root
 * receives the vector once, in slices messages: the binomial tree, the
 * chain, linear.
 */
static inline double ohc_bcast_work(const struct ohc_cost_params *c,
				    uint64_t bytes, uint32_t n, uint32_t slices)
{
	return (double)(n - 1) * slices *
	       (c->alpha_us + ohc_cost_bytes(c, (double)bytes / slices, 1, 0));
}

/*
 * A broadcast of the whole vector down a tree of relative ranks: in each
 * of rounds(n) rounds a rank vr > 0 receives it from parent(vr) in round
 * recv_round(vr, n), then forwards it to child(vr, t, n) (0: none).
 */
ohc_status_t
ohc_bcast_tree_build(const struct ohc_coll_args *a, struct ohc_sched *s,
		     uint32_t (*rounds)(uint32_t),
		     uint32_t (*recv_round)(uint32_t, uint32_t),
		     uint32_t (*parent)(uint32_t),
		     uint32_t (*child)(uint32_t, uint32_t, uint32_t));

/*
 * The one-step algorithms (allgather_linear.c, allreduce_linear.c,
 * reduce_scatter_linear.c, bcast_linear.c, reduce_linear.c; linear
 * AlltoAll is alltoall_pairwise.c's, and has no size limit):
 * every message of a rank posted in one step. Over shm and self, where
 * posting a message costs a fraction of its latency (cost.h send_us); not
 * over RDMA, where every peer would write into one NIC at once. Messages
 * of at most OHC_LINEAR_MSG_MAX bytes: forced beside recursive doubling
 * and halving on 2 CPUs (bench/algo_sweep.sh at 4 and 8 ranks), they won
 * up to 512 B-1 KiB messages and lost from 4-8 KiB (by 1.1-1.3x), where
 * the model, which does not price a receiver's n-1 messages arriving at
 * once, still prefers them. A forced one builds at any size. Two ranks
 * exchange one message each way in the others already, with the
 * reduction fused into the receive.
 */
#define OHC_LINEAR_MSG_MAX ((uint64_t)2048)

static inline ohc_status_t ohc_linear_accepts(const struct ohc_coll_args *a,
					      uint64_t msg_bytes)
{
	return a->nranks <= 2 || a->link == OHC_LINK_RDMA ||
			       msg_bytes > OHC_LINEAR_MSG_MAX
		       ? OHC_ERR_UNSUPPORTED
		       : OHC_OK;
}

/*
 * A rank's blocks reduced in one step: block i of the input
 * (len bytes at sb + i * stride; stride 0: the whole vector to everyone)
 * goes to rank i, the n-1 blocks of the others arrive in scratch, and the
 * next step reduces them into a->rbuf in rank order, x0 OP x1 OP ... OP
 * x(n-1): the same expression on every rank, deterministic mode or not.
 * to_root: only a->root receives and reduces, the others send it theirs
 * (Reduce). One rank: a copy; len 0: nothing. OHC_OK or
 * OHC_ERR_NO_MEMORY (blocks.c).
 */
ohc_status_t ohc_linear_reduce(const struct ohc_coll_args *a,
			       struct ohc_sched *s, const char *sb,
			       uint64_t stride, uint64_t len, bool to_root);

/*
 * Scratch of bytes for s; NULL (s->status set, the build returns
 * OHC_ERR_NO_MEMORY and selection logs it) on failure.
 */
static inline char *ohc_algo_scratch(struct ohc_sched *s, size_t bytes)
{
	return ohc_sched_scratch(s, bytes);
}

#endif
