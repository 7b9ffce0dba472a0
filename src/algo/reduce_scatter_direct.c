/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/common.h"

/*
 * Direct reduce-scatter for exported (zero-copy) memory: n-1 steps; in
 * step k rank r sends block (r + k) of its input to rank r + k and
 * reduces rank (r - k)'s block r into its output (the first step from
 * its own block r). Every message leaves the sender's input buffer, so
 * when that buffer is exported the receiver reduces straight out of it
 * (over verbs the steps after the first, which reduce into the output
 * itself, land in the transport's registered landing buffer, written
 * from the sender's input, and are reduced from there): no partial ever
 * travels through scratch (the ring's partials do). Same bytes per link
 * as the ring, at the price of all-pairs messages.
 *
 * Not in the automatic selection: the communicator asks for it for ops
 * whose buffers are exported (src/zerocopy/README.md). The output may be
 * this rank's block of the input (in place); other overlaps decline.
 *
 * Determinism: rank r adds blocks in the fixed order r, r-1, r-2, ...
 */
static ohc_status_t accepts(const struct ohc_coll_args *a)
{
	struct ohc_blocks b = ohc_blocks_regular(a->count, a->esize);
	const char *sb = a->sbuf, *mine = sb + ohc_blk_off(&b, a->rank);

	if (a->send_counts)
		return OHC_ERR_UNSUPPORTED;
	if ((const char *)a->rbuf != mine &&
	    ohc_mem_overlap(a->rbuf, ohc_blk_len(&b, a->rank), sb,
			    ohc_blk_extent(&b, a->nranks)))
		return OHC_ERR_UNSUPPORTED;
	return OHC_OK;
}

static ohc_status_t build(const struct ohc_coll_args *a, struct ohc_sched *s)
{
	struct ohc_blocks b = ohc_blocks_regular(a->count, a->esize);
	uint32_t n = a->nranks, r = a->rank;
	const char *sb = a->sbuf;
	uint64_t len = ohc_blk_len(&b, r);

	if (a->count == 0)
		return OHC_OK;
	if (accepts(a) != OHC_OK)
		return OHC_ERR_UNSUPPORTED;
	if (n == 1)
		return ohc_algo_single(s, a->rbuf, sb + ohc_blk_off(&b, r),
				       len);
	for (uint32_t k = 1; k < n; k++) {
		uint32_t to = (r + k) % n, from = (r + n - k) % n;

		ohc_sched_send_nz(s, to, sb + ohc_blk_off(&b, to), len);
		ohc_sched_recv_reduce_nz(
			s, from, a->rbuf,
			k == 1 ? sb + ohc_blk_off(&b, r) : NULL, len);
		ohc_sched_step(s);
	}
	return OHC_OK;
}

const struct ohc_algo ohc_algo_reduce_scatter_direct = {
	.name = "direct",
	.op = OHC_COLL_REDUCE_SCATTER,
	.build = build,
	.accepts = accepts,
};
