/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registry of algorithms (the candidates selection considers, in its
 * order of preference on equal cost) and the names of the operations.
 */
#include "algo/algo.h"
#include "util/compiler.h"

/*
 * Every algorithm. Selection (select.c) prices each candidate of the
 * operation that accepts the call and builds the cheapest; ties go to
 * the earlier entry below.
 */
static const struct ohc_algo *const candidates[] = {
	&ohc_algo_allreduce_rd,
	&ohc_algo_allreduce_hd,
	&ohc_algo_allreduce_ring,
	&ohc_algo_allreduce_2level,
	&ohc_algo_allreduce_linear, /* after the others: they win a tie */
	&ohc_algo_allgather_rd,
	&ohc_algo_allgather_bruck,
	&ohc_algo_allgather_ring,
	&ohc_algo_allgather_linear,
	&ohc_algo_allgatherv_ring,
	&ohc_algo_reduce_scatter_rh,
	&ohc_algo_reduce_scatter_ring,
	&ohc_algo_reduce_scatter_linear,
	&ohc_algo_reduce_scatterv_ring,
	&ohc_algo_bcast_binomial,
	&ohc_algo_bcast_scatter_ag,
	&ohc_algo_bcast_chain,
	&ohc_algo_bcast_linear,
	&ohc_algo_reduce_binomial,
	&ohc_algo_reduce_chain,
	&ohc_algo_reduce_linear,
	&ohc_algo_scatter_binomial,
	&ohc_algo_scatter_linear,
	&ohc_algo_alltoall_bruck,
	&ohc_algo_alltoall_linear, /* before pairwise: it wins a tie */
	&ohc_algo_alltoall_pairwise,
	&ohc_algo_alltoallv_pairwise,
	&ohc_algo_batch_pairwise,
	&ohc_algo_barrier_dissem,
	&ohc_algo_send,
	&ohc_algo_recv,
};

const struct ohc_algo *const *ohc_algo_all(unsigned *n_p)
{
	*n_p = OHC_ARRAY_SIZE(candidates);
	return candidates;
}

const char *ohc_coll_op_name(enum ohc_coll_op op)
{
	switch (op) {
	case OHC_COLL_BROADCAST:
		return "broadcast";
	case OHC_COLL_ALLREDUCE:
		return "allreduce";
	case OHC_COLL_REDUCE:
		return "reduce";
	case OHC_COLL_SEND:
		return "send";
	case OHC_COLL_RECV:
		return "recv";
	case OHC_COLL_ALLGATHER:
		return "allgather";
	case OHC_COLL_REDUCE_SCATTER:
		return "reduce_scatter";
	case OHC_COLL_ALLTOALLV:
		return "alltoallv";
	case OHC_COLL_ALLTOALLVC:
		return "alltoallvc";
	case OHC_COLL_ALLTOALL:
		return "alltoall";
	case OHC_COLL_GATHER:
		return "gather";
	case OHC_COLL_SCATTER:
		return "scatter";
	case OHC_COLL_BATCH_SEND_RECV:
		return "batch_send_recv";
	case OHC_COLL_ALLGATHER_V:
		return "allgatherv";
	case OHC_COLL_REDUCE_SCATTER_V:
		return "reduce_scatterv";
	case OHC_COLL_BARRIER:
		return "barrier";
	}
	return "unknown";
}

const char *ohc_coll_api_name(enum ohc_coll_op op)
{
	switch (op) {
	case OHC_COLL_BROADCAST:
		return "HcclBroadcast";
	case OHC_COLL_ALLREDUCE:
		return "HcclAllReduce";
	case OHC_COLL_REDUCE:
		return "HcclReduce";
	case OHC_COLL_SEND:
		return "HcclSend";
	case OHC_COLL_RECV:
		return "HcclRecv";
	case OHC_COLL_ALLGATHER:
		return "HcclAllGather";
	case OHC_COLL_REDUCE_SCATTER:
		return "HcclReduceScatter";
	case OHC_COLL_ALLTOALLV:
		return "HcclAlltoAllV";
	case OHC_COLL_ALLTOALLVC:
		return "HcclAlltoAllVC";
	case OHC_COLL_ALLTOALL:
		return "HcclAlltoAll";
	case OHC_COLL_GATHER:
		return "HcclGather";
	case OHC_COLL_SCATTER:
		return "HcclScatter";
	case OHC_COLL_BATCH_SEND_RECV:
		return "HcclBatchSendRecv";
	case OHC_COLL_ALLGATHER_V:
		return "HcclAllGatherV";
	case OHC_COLL_REDUCE_SCATTER_V:
		return "HcclReduceScatterV";
	case OHC_COLL_BARRIER:
		return "HcclBarrier";
	}
	return "HcclUnknown";
}
