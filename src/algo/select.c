/* SPDX-License-Identifier: Apache-2.0 */
#include "algo/algo.h"
#include "util/compiler.h"
#include "util/log.h"

/* Candidates per operation, best first; the first that accepts wins. */
static const struct ohc_algo *const candidates[] = {
	&ohc_algo_allreduce_ring,
	&ohc_algo_barrier_dissem,
	&ohc_algo_send,
	&ohc_algo_recv,
};

const char *ohc_coll_op_name(enum ohc_coll_op op)
{
	switch (op) {
	case OHC_COLL_BROADCAST: return "broadcast";
	case OHC_COLL_ALLREDUCE: return "allreduce";
	case OHC_COLL_REDUCE: return "reduce";
	case OHC_COLL_SEND: return "send";
	case OHC_COLL_RECV: return "recv";
	case OHC_COLL_ALLGATHER: return "allgather";
	case OHC_COLL_REDUCE_SCATTER: return "reduce_scatter";
	case OHC_COLL_ALLTOALLV: return "alltoallv";
	case OHC_COLL_ALLTOALLVC: return "alltoallvc";
	case OHC_COLL_ALLTOALL: return "alltoall";
	case OHC_COLL_GATHER: return "gather";
	case OHC_COLL_SCATTER: return "scatter";
	case OHC_COLL_BATCH_SEND_RECV: return "batch_send_recv";
	case OHC_COLL_ALLGATHER_V: return "allgatherv";
	case OHC_COLL_REDUCE_SCATTER_V: return "reduce_scatterv";
	case OHC_COLL_BARRIER: return "barrier";
	}
	return "unknown";
}

ohc_status_t ohc_algo_build(const struct ohc_coll_args *a,
			    struct ohc_sched *s, const struct ohc_algo **algo_p)
{
	for (size_t i = 0; i < OHC_ARRAY_SIZE(candidates); i++) {
		const struct ohc_algo *al = candidates[i];
		ohc_status_t status;

		if (al->op != a->op)
			continue;
		status = al->build(a, s);
		if (status == OHC_ERR_UNSUPPORTED) {
			OHC_DEBUG(OHC_SS_ALGO, "%s: %s declined",
				  ohc_coll_op_name(a->op), al->name);
			continue;
		}
		if (status == OHC_OK) {
			OHC_INFO(OHC_SS_ALGO,
				 "rank %u: %s of %llu elements on %u ranks: "
				 "%s (only candidate that accepted)",
				 a->rank, ohc_coll_op_name(a->op),
				 (unsigned long long)a->count, a->nranks,
				 al->name);
			*algo_p = al;
		}
		return status;
	}
	OHC_ERROR(OHC_SS_ALGO, "no algorithm implements %s yet",
		  ohc_coll_op_name(a->op));
	return OHC_ERR_UNSUPPORTED;
}
