/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>

#include "algo/common.h"
#include "algo/dtype.h"
#include "algo/patterns/pairwise.h"
#include "util/log.h"

/*
 * BatchSendRecv: the items are reordered into a pairwise schedule by ring
 * distance (patterns/pairwise.h): step k sends every item for (r + k) and
 * receives every item from (r - k), so a message travels in the same step
 * at both ends and no rank waits on another's later step: deadlock-free
 * whatever the item order, with rendezvous sends too. Several items for
 * the same peer and direction go in array order and so match the peer's
 * items in array order (FIFO per pair). Step 0 pairs self sends with self
 * receives, in array order, as local copies. Items with count 0 are
 * ignored. Empty steps are kept (cheap) so step indices agree at both
 * ends.
 */
ohc_status_t ohc_batch_validate(const struct ohc_batch_item *items,
				uint32_t nitems, uint32_t rank, uint32_t nranks)
{
	uint32_t sends = 0, recvs = 0;

	for (uint32_t i = 0; i < nitems; i++) {
		const struct ohc_batch_item *it = &items[i];

		if (it->kind != OHC_BATCH_SEND && it->kind != OHC_BATCH_RECV) {
			OHC_ERROR(OHC_SS_ALGO,
				  "rank %u: batch item %u: sendRecvType %d is "
				  "neither HCCL_SEND (0) nor HCCL_RECV (1)",
				  rank, i, (int)it->kind);
			return OHC_ERR_INVALID;
		}
		if (it->count == 0)
			continue;
		if (!it->buf) {
			OHC_ERROR(OHC_SS_ALGO,
				  "rank %u: batch item %u: buf is NULL with "
				  "count %llu",
				  rank, i, (unsigned long long)it->count);
			return OHC_ERR_INVALID;
		}
		if (it->peer >= nranks) {
			OHC_ERROR(
				OHC_SS_ALGO,
				"rank %u: batch item %u: remoteRank %u is not "
				"in [0, %u)",
				rank, i, it->peer, nranks);
			return OHC_ERR_INVALID;
		}
		if (it->peer != rank)
			continue;
		if (it->kind == OHC_BATCH_SEND)
			sends++;
		else
			recvs++;
	}
	if (sends != recvs) {
		OHC_ERROR(OHC_SS_ALGO,
			  "rank %u: batch has %u sends to itself but %u "
			  "receives from itself; they must pair up",
			  rank, sends, recvs);
		return OHC_ERR_INVALID;
	}
	/* Pair the k-th self send with the k-th self receive. */
	for (uint32_t i = 0, j = 0;; i++, j++) {
		while (i < nitems &&
		       !(items[i].count && items[i].peer == rank &&
			 items[i].kind == OHC_BATCH_SEND))
			i++;
		while (j < nitems &&
		       !(items[j].count && items[j].peer == rank &&
			 items[j].kind == OHC_BATCH_RECV))
			j++;
		if (i >= nitems || j >= nitems)
			break;
		if (items[i].count != items[j].count ||
		    items[i].dtype != items[j].dtype) {
			OHC_ERROR(OHC_SS_ALGO,
				  "rank %u: batch items %u (self send, %llu of "
				  "%s) and %u (self receive, %llu of %s) pair "
				  "up but differ",
				  rank, i, (unsigned long long)items[i].count,
				  ohc_dtype_name(items[i].dtype), j,
				  (unsigned long long)items[j].count,
				  ohc_dtype_name(items[j].dtype));
			return OHC_ERR_INVALID;
		}
	}
	return OHC_OK;
}

static uint32_t item_step(const struct ohc_batch_item *it, uint32_t r,
			  uint32_t n)
{
	return it->kind == OHC_BATCH_SEND ? ohc_pairwise_step(r, it->peer, n)
					  : ohc_pairwise_step(it->peer, r, n);
}

struct order {
	uint32_t step, idx;
};

static int order_cmp(const void *x, const void *y)
{
	const struct order *a = x, *b = y;

	if (a->step != b->step)
		return a->step < b->step ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	uint32_t n = a->nranks, r = a->rank, m = 0, step = 0;
	const struct ohc_batch_item *it = a->items;
	struct order *ord;
	ohc_status_t status;

	status = ohc_batch_validate(it, a->nitems, r, n);
	if (status < 0)
		return status;
	ord = malloc((a->nitems ? a->nitems : 1) * sizeof(*ord));
	if (!ord)
		return OHC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < a->nitems; i++)
		if (it[i].count)
			ord[m++] = (struct order){item_step(&it[i], r, n), i};
	qsort(ord, m, sizeof(*ord), order_cmp);
	/* Self pairs: the k-th self send with the k-th self receive. */
	for (uint32_t i = 0, j = 0; i < m && ord[i].step == 0; i++) {
		const struct ohc_batch_item *snd = &it[ord[i].idx];

		if (snd->kind != OHC_BATCH_SEND)
			continue;
		while (it[ord[j].idx].kind != OHC_BATCH_RECV)
			j++;
		ohc_sched_copy(s, it[ord[j].idx].buf, snd->buf,
			       snd->count * snd->esize);
		j++;
	}
	for (uint32_t i = 0; i < m; i++) {
		const struct ohc_batch_item *x = &it[ord[i].idx];

		if (ord[i].step == 0)
			continue;
		while (step < ord[i].step) {
			ohc_sched_step(s);
			step++;
		}
		if (x->kind == OHC_BATCH_SEND)
			ohc_sched_send(s, x->peer, x->buf, x->count * x->esize);
		else
			ohc_sched_recv(s, x->peer, x->buf, x->count * x->esize);
	}
	ohc_sched_step(s);
	free(ord);
	return OHC_OK;
}

const struct ohc_algo ohc_algo_batch_pairwise = {
	.name = "pairwise",
	.op = OHC_COLL_BATCH_SEND_RECV,
	.build = build,
};
