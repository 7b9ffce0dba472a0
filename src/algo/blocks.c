/* SPDX-License-Identifier: Apache-2.0 */
#include <stdbool.h>

#include "algo/common.h"
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
