/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_ALGO_H
#define OHC_ALGO_ALGO_H

/*
 * Algorithms turn one collective call into one rank's schedule. Each
 * algorithm is a pure function of (rank, nranks, buffers, counts); it
 * declines a case it cannot serve with OHC_ERR_UNSUPPORTED and selection
 * moves on to the next candidate.
 */
#include <stdint.h>

#include "core/sched.h"
#include "util/status.h"

/* Operation codes: the numeric values of HcclCMDType. */
enum ohc_coll_op {
	OHC_COLL_BROADCAST = 1,
	OHC_COLL_ALLREDUCE = 2,
	OHC_COLL_REDUCE = 3,
	OHC_COLL_SEND = 4,
	OHC_COLL_RECV = 5,
	OHC_COLL_ALLGATHER = 6,
	OHC_COLL_REDUCE_SCATTER = 7,
	OHC_COLL_ALLTOALLV = 8,
	OHC_COLL_ALLTOALLVC = 9,
	OHC_COLL_ALLTOALL = 10,
	OHC_COLL_GATHER = 11,
	OHC_COLL_SCATTER = 12,
	OHC_COLL_BATCH_SEND_RECV = 13,
	OHC_COLL_ALLGATHER_V = 16,
	OHC_COLL_REDUCE_SCATTER_V = 17,
	OHC_COLL_BARRIER = 103,
};

/* Transport classes, for the cost model. */
enum ohc_link_class {
	OHC_LINK_SELF = 0,  /* threads of one process: direct copies */
	OHC_LINK_SHM = 1,   /* processes of one host */
	OHC_LINK_RDMA = 2,  /* other hosts */
};

struct ohc_coll_args {
	enum ohc_coll_op op;
	int dtype, redop;
	uint32_t root;    /* broadcast/reduce/scatter */
	uint32_t peer;    /* send/recv */
	const void *sbuf;
	void *rbuf;
	/*
	 * Elements, as the HCCL call defines it: AllReduce/Bcast/Reduce the
	 * vector; AllGather the send count; ReduceScatter/Scatter the receive
	 * count per rank; AlltoAll the count per peer.
	 */
	uint64_t count;
	size_t esize;     /* bytes per element */
	uint32_t rank, nranks;
	/* V variants: arrays of nranks element counts/displacements. */
	const uint64_t *send_counts, *send_displs;
	const uint64_t *recv_counts, *recv_displs;
	int deterministic;          /* fixed reduction order required */
	enum ohc_link_class link;   /* slowest link class in the comm */
	const char *algo_override;  /* HCCL_ALGO / config algo string */
};

struct ohc_algo {
	const char *name;
	enum ohc_coll_op op;
	ohc_status_t (*build)(const struct ohc_coll_args *a,
			      struct ohc_sched *s);
};

/*
 * Pick an algorithm for a and build its schedule into s (initialised by
 * the caller). *algo_p names what was chosen.
 */
ohc_status_t ohc_algo_build(const struct ohc_coll_args *a,
			    struct ohc_sched *s, const struct ohc_algo **algo_p);

const char *ohc_coll_op_name(enum ohc_coll_op op);

extern const struct ohc_algo ohc_algo_allreduce_ring;
extern const struct ohc_algo ohc_algo_barrier_dissem;
extern const struct ohc_algo ohc_algo_send;
extern const struct ohc_algo ohc_algo_recv;

#endif
