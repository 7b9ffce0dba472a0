/* SPDX-License-Identifier: Apache-2.0 */
#include <stdbool.h>

#include "algo/common.h"
#include "algo/patterns/binomial.h"
#include "util/log.h"

ohc_status_t ohc_algo_build_regular(const struct ohc_coll_args *a,
				    struct ohc_sched *s,
				    ohc_blocks_build_fn build)
{
	struct ohc_blocks b = ohc_blocks_regular(a->count, a->esize);

	if (a->count == 0)
		return OHC_OK;
	return build(a, s, &b);
}

ohc_status_t ohc_algo_build_v(const struct ohc_coll_args *a,
			      struct ohc_sched *s, const uint64_t *counts,
			      const uint64_t *displs, const char *name,
			      ohc_blocks_build_fn build)
{
	bool ag = counts == a->recv_counts;
	struct ohc_blocks b;

	if (!counts || !displs)
		return OHC_ERR_UNSUPPORTED;
	if (counts[a->rank] != a->count) {
		OHC_ERROR(OHC_SS_ALGO,
			  "rank %u: %s: %s %llu differs from %s[%u] = %llu",
			  a->rank, name, ag ? "sendCount" : "recvCount",
			  (unsigned long long)a->count,
			  ag ? "recvCounts" : "sendCounts", a->rank,
			  (unsigned long long)counts[a->rank]);
		return OHC_ERR_INVALID;
	}
	b = ohc_blocks_v(counts, displs, a->esize);
	return build(a, s, &b);
}

bool ohc_bcast_begin(const struct ohc_coll_args *a, struct ohc_sched *s,
		     uint32_t vr, ohc_status_t *st)
{
	uint64_t bytes = a->count * a->esize;

	*st = OHC_OK;
	if (a->nranks == 1) {
		*st = ohc_algo_single(s, a->rbuf, a->sbuf, bytes);
		return true;
	}
	if (bytes == 0)
		return true;
	if (vr == 0)
		ohc_sched_copy(s, a->rbuf, a->sbuf, bytes);
	return false;
}

ohc_status_t
ohc_bcast_tree_build(const struct ohc_coll_args *a, struct ohc_sched *s,
		     uint32_t (*rounds)(uint32_t n),
		     uint32_t (*recv_round)(uint32_t vr, uint32_t n),
		     uint32_t (*parent)(uint32_t vr),
		     uint32_t (*child)(uint32_t vr, uint32_t t, uint32_t n))
{
	uint32_t n = a->nranks, vr = ohc_binom_vrank(a->rank, a->root, n);
	ohc_status_t st;
	uint64_t bytes = a->count * a->esize;

	if (ohc_bcast_begin(a, s, vr, &st))
		return st;
	for (uint32_t t = 0; t < rounds(n); t++) {
		uint32_t c = child(vr, t, n);

		if (vr && t == recv_round(vr, n))
			ohc_sched_recv(s,
				       ohc_binom_rank(parent(vr), a->root, n),
				       a->rbuf, bytes);
		if (c)
			ohc_sched_send(s, ohc_binom_rank(c, a->root, n),
				       a->rbuf, bytes);
		ohc_sched_step(s);
	}
	return OHC_OK;
}

bool ohc_reduce_begin(const struct ohc_coll_args *a, struct ohc_sched *s,
		      uint32_t vr, bool partial, char **acc_p, bool *stage_p,
		      ohc_status_t *st)
{
	uint64_t bytes = a->count * a->esize;
	const char *sb = a->sbuf;
	char *rb = a->rbuf;

	*acc_p = NULL;
	*stage_p = false;
	*st = OHC_OK;
	if (a->nranks == 1) {
		*st = ohc_algo_single(s, rb, sb, bytes);
		return true;
	}
	if (bytes == 0)
		return true;
	if (vr == 0) {
		*stage_p = rb != sb && ohc_mem_overlap(rb, bytes, sb, bytes);
		*acc_p = rb;
	}
	if ((vr != 0 && partial) || *stage_p) {
		*acc_p = ohc_algo_scratch(s, bytes);
		if (!*acc_p) {
			*st = OHC_ERR_NO_MEMORY;
			return true;
		}
	}
	return false;
}

ohc_status_t ohc_stage_scratch(const struct ohc_coll_args *a,
			       struct ohc_sched *s, size_t need,
			       size_t stage_len, char **tmp_p,
			       const char **cur_p)
{
	uint64_t bytes = a->count * a->esize;
	const char *sb = a->sbuf;
	bool stage =
		sb != a->rbuf && ohc_mem_overlap(sb, bytes, a->rbuf, bytes);

	*tmp_p = NULL;
	*cur_p = sb;
	if (!need && !stage)
		return OHC_OK;
	*tmp_p = ohc_algo_scratch(s, need + (stage ? stage_len : 0));
	if (!*tmp_p)
		return OHC_ERR_NO_MEMORY;
	if (stage) {
		ohc_sched_copy(s, *tmp_p + need, sb, bytes);
		*cur_p = *tmp_p + need;
	}
	return OHC_OK;
}

ohc_status_t ohc_allgather_own(const struct ohc_coll_args *a,
			       struct ohc_sched *s, char *own, uint64_t len,
			       uint64_t extent, const char **src_p)
{
	const char *src = a->sbuf;

	if (src != own && ohc_mem_overlap(src, len, a->rbuf, extent)) {
		char *t = ohc_algo_scratch(s, len);

		if (!t)
			return OHC_ERR_NO_MEMORY;
		ohc_sched_copy(s, t, src, len);
		src = t;
	}
	ohc_sched_copy(s, own, src, len);
	*src_p = src;
	return OHC_OK;
}

/*
 * The scratch holds a slot per rank; the own one is used only when the
 * result buffer would overwrite the own block before its turn (the first
 * reduce writes the result from x0 and x1, so at the same address ranks 0
 * and 1 read their own block just in time). The sends leave in step 0,
 * which completes before the reductions of step 1 write anything.
 */
ohc_status_t ohc_linear_reduce(const struct ohc_coll_args *a,
			       struct ohc_sched *s, const char *sb,
			       uint64_t stride, uint64_t len, bool to_root)
{
	uint32_t n = a->nranks, r = a->rank;
	bool gets = !to_root || r == a->root;
	size_t slot = ohc_align64(len);
	char *rb = a->rbuf, *tmp = NULL;
	const char *own = sb + r * stride;

	if (n == 1)
		return ohc_algo_single(s, rb, sb, len);
	if (len == 0)
		return OHC_OK;
	if (gets && !(tmp = ohc_algo_scratch(s, n * slot)))
		return OHC_ERR_NO_MEMORY;
	if (gets && ohc_mem_overlap(rb, len, own, len) &&
	    (rb != own || r >= 2)) {
		ohc_sched_copy(s, tmp + r * slot, own, len);
		own = tmp + r * slot;
	}
	for (uint32_t k = 1; k < n; k++) {
		uint32_t to = (r + k) % n, from = (r + n - k) % n;

		if (!to_root || to == a->root)
			ohc_sched_send(s, to, sb + to * stride, len);
		if (gets)
			ohc_sched_recv(s, from, tmp + from * slot, len);
	}
	ohc_sched_step(s);
	if (!gets)
		return OHC_OK;
	for (uint32_t i = 1; i < n; i++) {
		const char *x0 = r == 0 ? own : tmp;
		const char *xi = i == r ? own : tmp + i * slot;

		ohc_sched_reduce(s, rb, i == 1 ? x0 : rb, xi, len);
	}
	ohc_sched_step(s);
	return OHC_OK;
}
