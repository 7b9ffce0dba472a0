/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_SIM_SIM_INTERNAL_H
#define OHC_SIM_SIM_INTERNAL_H

/*
 * Private to src/sim/: what the data-moving simulator (sim.c) and the
 * timing mode (sim_timing.c) share. Pure, as sim.h says.
 */
#include "sim/sim.h"
#include "util/compiler.h"

/* Append to sim->err (truncated when full). */
void ohc_sim_err(struct ohc_sim *sim, const char *fmt, ...) OHC_PRINTF(2, 3);

/* The first transfer of step i of s. */
static inline unsigned ohc_sim_step_begin(const struct ohc_sched *s, unsigned i)
{
	return i ? s->step_end[i - 1] : 0;
}

/* "send", "recv", "copy" or "reduce", for messages. */
const char *ohc_sim_kind_name(const struct ohc_xfer *x);
/* 1 if a send reads the user's buffers, not the schedule's scratch. */
int ohc_sim_from_user(const struct ohc_sched *s, const struct ohc_xfer *x);
/*
 * The costs an op of a's sees: sim->cost, else the defaults of a's link,
 * as ohc_cost_for_op prices a cache-resident op (tmp: its storage).
 */
const struct ohc_cost_params *ohc_sim_costs(const struct ohc_sim *sim,
					    const struct ohc_coll_args *a,
					    struct ohc_cost_params *tmp);
/*
 * Rank r's arguments (sim->args_fn) into *a and its schedule into s,
 * built by sim->algo or, without one, by the library's selection. s is
 * initialised first, whatever happens next: the caller finis it. With
 * stats, sim->stats[r] (when there are stats) gets the schedule's steps,
 * scratch and algorithm. Failures are described in sim->err.
 */
ohc_status_t ohc_sim_build(struct ohc_sim *sim, uint32_t r, int stats,
			   struct ohc_coll_args *a, struct ohc_sched *s);

/* sim_timing.c: ohc_sim_run with sim->timing set. */
ohc_status_t ohc_sim_timing_run(struct ohc_sim *sim);

#endif
