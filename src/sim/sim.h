/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_SIM_H
#define OHC_ALGO_SIM_H

/*
 * Schedule simulator: builds every rank's schedule for one operation and
 * executes them all in memory, in one thread, with the executor's rules
 * (core/exec.c): a rank posts a step's transfers in order (local copies
 * and reductions run at once), the step ends when all of them completed;
 * messages of an ordered pair match in FIFO order; a message's step index
 * must be the same at both ends (the executor's signature check) and its
 * length too. Two send modes: eager (a send completes when posted) and
 * rendezvous (when the receiver has posted the matching receive, like the
 * self transport). No rank able to advance is a deadlock, reported with
 * every stuck rank's step and what it waits for.
 *
 * It moves real data (unless dry_run) with the reduce function given, and
 * counts per rank: steps, messages, bytes sent, reduced and copied, plus
 * a simulated time from the alpha-beta-gamma constants (sends of one step
 * leave one after another, each send_us plus its bytes after the one
 * before (ohc_cost_send_us: alpha unless the link posts cheaper); a
 * message arrives alpha + len*beta after it leaves; a reduction
 * len*gamma, a copy len*copy; a send out of the user's buffers, not the
 * schedule's scratch, of zc_bytes or more costs as ohc_cost_bytes says;
 * an empty message, the agreement's, leaves at once without holding the
 * sends after it and costs alpha), to check the cost formulas. Optionally it
 * checks the memory rules of sched.h: no send or receive of a step may
 * write what another transfer of the step reads or writes, and no local
 * transfer may touch what an earlier send or receive of its step still
 * uses. Pure: no transports, no threads, no logging; problems are
 * returned and described in sim->err.
 */
#include <stdint.h>

#include "algo/algo.h"
#include "core/req.h"

enum ohc_sim_mode {
	OHC_SIM_EAGER,
	OHC_SIM_RENDEZVOUS,
};

struct ohc_sim_stats {
	unsigned steps;
	uint64_t msgs_sent, msgs_recv;
	uint64_t bytes_sent, bytes_recv;
	uint64_t bytes_reduced; /* receive-reduce and local reduce */
	uint64_t bytes_copied;	/* local copies */
	size_t scratch_bytes;
	double time_us;		     /* simulated completion time */
	const struct ohc_algo *algo; /* what ran (selection or forced) */
};

/* Fill rank's arguments (rank and nranks are preset); OHC_OK or error. */
typedef ohc_status_t (*ohc_sim_args_fn)(void *ctx, uint32_t rank,
					struct ohc_coll_args *args);

struct ohc_sim {
	/* inputs */
	uint32_t nranks;
	enum ohc_sim_mode mode;
	const struct ohc_algo *algo; /* NULL: ohc_algo_build selects */
	ohc_sim_args_fn args_fn;
	void *ctx;
	ohc_reduce_fn reduce; /* element size from args->esize */
	int dry_run;	      /* match and count only, no data */
	int check_hazards;    /* fail on intra-step overlaps */
	unsigned seed;	      /* 0: ranks in order; else shuffled */
	const struct ohc_cost_params *cost; /* NULL: args->link defaults */
	/*
	 * Timing only (reduce, dry_run, check_hazards and seed ignored): no
	 * data, and the whole communicator advanced one global step at a
	 * time, which the executor's step rule (a message is received in
	 * the sender's step) makes exact: same time_us and stats as a dry
	 * run. Schedules are kept as 8 bytes per transfer, rebuilt in
	 * windows of steps when they would not fit in timing_budget, so
	 * thousands of ranks are cheap. Limits: 2^20 ranks, 2^40-byte
	 * messages.
	 */
	int timing;
	uint64_t timing_budget; /* transfers kept at once; 0: 72 Mi (576 MiB) */
	/*
	 * Timing mode only: rank -> host (nranks entries, NULL: no hosts);
	 * messages between ranks of one host cost cost_intra instead.
	 */
	const uint32_t *host_of;
	const struct ohc_cost_params *cost_intra;
	/* outputs */
	struct ohc_sim_stats *stats; /* nranks entries, or NULL */
	double time_us;		     /* max over ranks */
	char err[1024];		     /* what went wrong, "" if nothing */
};

/*
 * Run one operation. OHC_OK; OHC_ERR_TIMEOUT on deadlock; OHC_ERR_DESYNC
 * on a length or step mismatch or a message nobody received;
 * OHC_ERR_INTERNAL on a hazard or a transfer to oneself; a build error
 * as returned; OHC_ERR_NO_MEMORY.
 */
ohc_status_t ohc_sim_run(struct ohc_sim *sim);

#endif
