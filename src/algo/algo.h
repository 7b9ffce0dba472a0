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

#include "algo/cost.h"
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

/* One item of a batch send/recv (HcclSendRecvItem, resolved). */
enum ohc_batch_kind {
	OHC_BATCH_SEND = 0,
	OHC_BATCH_RECV = 1,
};

struct ohc_batch_item {
	enum ohc_batch_kind kind;
	int dtype;	/* compared between paired self items */
	void *buf;	/* source (send) or destination (recv) */
	uint64_t count; /* elements; 0: the item is ignored */
	size_t esize;	/* bytes per element of dtype */
	uint32_t peer;	/* remote rank; may be ourselves */
};

struct ohc_coll_args {
	enum ohc_coll_op op;
	int dtype, redop;
	uint32_t root; /* broadcast/reduce/scatter */
	uint32_t peer; /* send/recv */
	const void *sbuf;
	void *rbuf;
	/*
	 * Elements, as the HCCL call defines it: AllReduce/Bcast/Reduce the
	 * vector; AllGather(V) the send count; ReduceScatter(V)/Scatter the
	 * receive count per rank; AlltoAll the count per peer.
	 */
	uint64_t count;
	size_t esize; /* bytes per element */
	uint32_t rank, nranks;
	/*
	 * V variants: arrays of nranks element counts/displacements, read
	 * while the schedule is built. AllGatherV: recv_*; ReduceScatterV:
	 * send_*; AlltoAllV: all four.
	 */
	const uint64_t *send_counts, *send_displs;
	const uint64_t *recv_counts, *recv_displs;
	/* BatchSendRecv: the items, read while the schedule is built. */
	const struct ohc_batch_item *items;
	uint32_t nitems;
	int deterministic;	  /* fixed reduction order required */
	enum ohc_link_class link; /* slowest link class in the comm */
	/*
	 * Hosts: host_of[r] is rank r's host index (0..nhosts-1), the same
	 * array on every rank; NULL when the comm is on one host. Two-level
	 * algorithms use it; links inside a host are SHM (or SELF), between
	 * hosts RDMA.
	 */
	const uint32_t *host_of;
	uint32_t nhosts;
	const char *algo_override; /* HCCL_ALGO / config algo string */
	/*
	 * OPENHCCL_PIPELINE_SLICES: 0 the cost model picks the slice count
	 * of algorithms that can be pipelined; n > 0 forces n (1: none),
	 * at most one slice per element. The same on every rank.
	 */
	uint32_t pipeline_slices;
	/*
	 * CPUs shared (select.c): the ranks of the comm's busiest host and
	 * the CPUs of rank 0's host (ohc_host_cpus: online, capped by the
	 * cgroup's CPU time; the same numbers on every rank: rank
	 * 0's count is broadcast at init). When the ranks outnumber the
	 * CPUs they take turns, and selection prices each candidate at no
	 * less than its work divided among the CPUs. host_cpus 0: a CPU
	 * per rank.
	 */
	uint32_t host_ranks, host_cpus;
};

struct ohc_algo {
	const char *name;
	enum ohc_coll_op op;
	/* Build rank a->rank's schedule; OHC_ERR_UNSUPPORTED declines. */
	ohc_status_t (*build)(const struct ohc_coll_args *a,
			      struct ohc_sched *s);
	/*
	 * Optional: OHC_OK if build would accept a, OHC_ERR_UNSUPPORTED if
	 * not; same answer on every rank. NULL: accepts everything.
	 */
	ohc_status_t (*accepts)(const struct ohc_coll_args *a);
	/*
	 * Predicted time in microseconds for bytes (ohc_coll_bytes) over
	 * nranks ranks with link costs c. NULL: 0 (the only candidate).
	 */
	double (*cost)(const struct ohc_cost_params *c, uint64_t bytes,
		       uint32_t nranks);
	/*
	 * Optional, for algorithms that need the topology (two-level): the
	 * predicted time for a's layout; used instead of cost when set.
	 */
	double (*cost_topo)(const struct ohc_coll_args *a, uint64_t bytes);
	/*
	 * Optional: the predicted time when the schedule is pipelined in
	 * slices pieces (ohc_sched_pipeline). Set only by algorithms whose
	 * data dependencies are slice-aligned (sched.h), so pipelining them
	 * is correct; selection then picks the slice count (1: none) with
	 * the lowest prediction, and cost is that minimum.
	 */
	double (*cost_sliced)(const struct ohc_cost_params *c, uint64_t bytes,
			      uint32_t nranks, uint32_t slices);
	/*
	 * Optional, for the rooted algorithms, whose ranks idle for part of
	 * the op: the work of all ranks together in slices pieces (1 for an
	 * algorithm that is not pipelined), each message's alpha and bytes
	 * and each reduction counted once. Ranks that share CPUs do that
	 * work in turns, so selection prices an algorithm at no less than
	 * its work divided among them (ohc_coll_args.host_cpus). NULL: every
	 * rank works throughout the op, nranks times its cost, which keeps
	 * the ranking of the algorithms of an op the flat model gives.
	 */
	double (*work)(const struct ohc_cost_params *c, uint64_t bytes,
		       uint32_t nranks, uint32_t slices);
};

/*
 * The slice count the cost model prefers for al (1: no slicing, and
 * always 1 without cost_sliced): a power of two up to
 * OHC_ALGO_MAX_SLICES, at most bytes / esize (every slice gets an
 * element), from arguments that are the same on every rank. *us_p (may
 * be NULL) gets the prediction.
 */
#define OHC_ALGO_MAX_SLICES 256u
uint32_t ohc_algo_slices(const struct ohc_algo *al,
			 const struct ohc_cost_params *c, uint64_t bytes,
			 size_t esize, uint32_t nranks, double *us_p);

/*
 * Pick an algorithm for a and build its schedule into s (initialised by
 * the caller). *algo_p names what was chosen. The cheapest candidate by
 * the cost model that accepts wins, unless a->algo_override names one.
 */
ohc_status_t ohc_algo_build(const struct ohc_coll_args *a, struct ohc_sched *s,
			    const struct ohc_algo **algo_p);

const char *ohc_coll_op_name(enum ohc_coll_op op);
/* The HCCL call an op runs for ("HcclAllReduce"): profile event names. */
const char *ohc_coll_api_name(enum ohc_coll_op op);

/*
 * al's predicted time with costs c (those of a cache-resident op,
 * ohc_cost_for_op, which selection leaves out: select.c): al->cost plus,
 * for the operations whose schedules get the agreement woven in
 * (Broadcast, Reduce, Scatter, Gather, AlltoAllV; ohc_sched_weave_
 * agreement), alpha for every agreement step beyond the algorithm's own
 * steps (the agreement takes 1 + ceil(log2 n) steps; its empty messages
 * ride along with the algorithm's in the steps it has). HUGE_VAL without
 * a flat cost (two-level), 0 below 2 ranks.
 */
double ohc_algo_cost(const struct ohc_algo *al, const struct ohc_cost_params *c,
		     uint64_t bytes, uint32_t nranks);
/*
 * Where a's ranks take turns on shared CPUs (more on the busiest host
 * than its CPUs), the least time al can take in slices pieces with costs
 * c: the work its ranks do together (ohc_algo.work; an algorithm without
 * one keeps every rank busy throughout: nranks x us, us its time) times
 * the busiest CPU's share, host_ranks / (nranks x host_cpus). 0 where
 * every rank has a CPU. Selection prices a candidate at no less
 * (select.c); so does hccl_simulate --cores.
 */
double ohc_algo_cpu_floor_us(const struct ohc_algo *al,
			     const struct ohc_cost_params *c,
			     const struct ohc_coll_args *a, uint64_t bytes,
			     uint32_t slices, double us);
/* 1 if op's schedules get the agreement woven in. */
int ohc_algo_needs_agreement(enum ohc_coll_op op);

/*
 * The size the cost model is in: bytes of one rank's vector (AllReduce,
 * Reduce, Broadcast, Send/Recv), of the whole gathered or scattered buffer
 * (AllGather(V), ReduceScatter(V), Scatter), of one rank's send buffer
 * (AlltoAll(V)), of all items (BatchSendRecv); 0 for Barrier.
 */
uint64_t ohc_coll_bytes(const struct ohc_coll_args *a);

/*
 * Pure cost model for simulators and tests: a's predicted time for op
 * over bytes (as ohc_coll_bytes counts them) and nranks ranks on link,
 * with the default constants. HUGE_VAL if a does not implement op.
 */
double ohc_algo_predict_us(const struct ohc_algo *a, enum ohc_coll_op op,
			   uint64_t bytes, uint32_t nranks,
			   enum ohc_link_class link);

/*
 * The algorithm that an HCCL_ALGO string asks for op, or NULL (automatic:
 * no string, level NA, no equivalent for this op, or unknown names; the
 * latter are reported in *unknown_p when not NULL). Pure, no logging.
 * Grammar: "level0:NA;level1:<algo>" for every op, or per op
 * "<op>=level0:NA;level1:<algo>/<op>=..." with ops allgather,
 * reducescatter, allreduce, broadcast, reduce, scatter, alltoall (and
 * others as a default). HCCL names ring, H-D_R, NHR, NHR_V1, NB, AHC,
 * pipeline, pairwise map to ours; our own names are accepted too.
 */
const struct ohc_algo *
ohc_algo_override_find(const char *spec, enum ohc_coll_op op, int *unknown_p);

/* All candidates, for tests and tools; *n_p entries. */
const struct ohc_algo *const *ohc_algo_all(unsigned *n_p);

/*
 * BatchSendRecv: check items (HCCL rules: kind 0/1, peer < nranks,
 * non-NULL buf when count > 0, self sends and receives pair up in order
 * with equal count and dtype). Logs the first problem; OHC_ERR_INVALID.
 */
ohc_status_t ohc_batch_validate(const struct ohc_batch_item *items,
				uint32_t nitems, uint32_t rank,
				uint32_t nranks);

extern const struct ohc_algo ohc_algo_allreduce_ring;
extern const struct ohc_algo ohc_algo_allreduce_rd;
extern const struct ohc_algo ohc_algo_allreduce_hd;
extern const struct ohc_algo ohc_algo_allreduce_2level;
extern const struct ohc_algo ohc_algo_allreduce_linear;
extern const struct ohc_algo ohc_algo_allgather_ring;
extern const struct ohc_algo ohc_algo_allgatherv_ring;
extern const struct ohc_algo ohc_algo_allgather_rd;
extern const struct ohc_algo ohc_algo_allgather_bruck;
extern const struct ohc_algo ohc_algo_allgather_linear;
extern const struct ohc_algo ohc_algo_reduce_scatter_ring;
extern const struct ohc_algo ohc_algo_reduce_scatterv_ring;
extern const struct ohc_algo ohc_algo_reduce_scatter_rh;
extern const struct ohc_algo ohc_algo_reduce_scatter_linear;
/* Not in the automatic selection: for ops on exported memory only. */
extern const struct ohc_algo ohc_algo_reduce_scatter_direct;
extern const struct ohc_algo ohc_algo_bcast_binomial;
extern const struct ohc_algo ohc_algo_bcast_scatter_ag;
extern const struct ohc_algo ohc_algo_bcast_chain;
extern const struct ohc_algo ohc_algo_bcast_linear;
extern const struct ohc_algo ohc_algo_reduce_binomial;
extern const struct ohc_algo ohc_algo_reduce_chain;
extern const struct ohc_algo ohc_algo_reduce_linear;
extern const struct ohc_algo ohc_algo_scatter_binomial;
extern const struct ohc_algo ohc_algo_scatter_linear;
extern const struct ohc_algo ohc_algo_alltoall_pairwise;
extern const struct ohc_algo ohc_algo_alltoallv_pairwise;
extern const struct ohc_algo ohc_algo_alltoall_bruck;
extern const struct ohc_algo ohc_algo_alltoall_linear;
extern const struct ohc_algo ohc_algo_batch_pairwise;
extern const struct ohc_algo ohc_algo_barrier_dissem;
extern const struct ohc_algo ohc_algo_send;
extern const struct ohc_algo ohc_algo_recv;

#endif
