/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The schedule simulator's timing mode (sim/sim.h, sim.timing): for every
 * algorithm, rank count, size and send mode it must give the same time and
 * the same counters as the full simulator's dry run, also when it works
 * in windows of steps, and report broken schedules as errors.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "algo/algo.h"
#include "sim/sim.h"
#include "core/sched.h"
#include "util/compiler.h"

struct tc {
	enum ohc_coll_op op;
	uint64_t count;
	uint32_t root;
	enum ohc_link_class link;
};

/* Buffers are never touched by either mode: far apart fake addresses. */
static ohc_status_t tc_args(void *ctx, uint32_t rank, struct ohc_coll_args *a)
{
	const struct tc *t = ctx;

	(void)rank;
	a->op = t->op;
	a->count = t->count;
	a->esize = 4;
	a->root = t->root;
	a->sbuf = (const void *)((uintptr_t)1 << 40);
	a->rbuf = (void *)((uintptr_t)3 << 40);
	a->link = t->link;
	return OHC_OK;
}

/* Ops whose arguments tc_args fills completely. */
static int plain_op(enum ohc_coll_op op)
{
	switch (op) {
	case OHC_COLL_ALLREDUCE:
	case OHC_COLL_ALLGATHER:
	case OHC_COLL_REDUCE_SCATTER:
	case OHC_COLL_BROADCAST:
	case OHC_COLL_REDUCE:
	case OHC_COLL_SCATTER:
	case OHC_COLL_ALLTOALL:
	case OHC_COLL_BARRIER:
		return 1;
	default:
		return 0;
	}
}

static void same_run(const struct ohc_algo *al, uint32_t n, struct tc *t,
		     enum ohc_sim_mode mode, uint64_t budget)
{
	static struct ohc_sim_stats s1[64], s2[64];
	struct ohc_sim a = {0}, b = {0};
	ohc_status_t st1, st2;

	cr_assert(n <= 64);
	a.nranks = b.nranks = n;
	a.mode = b.mode = mode;
	a.algo = b.algo = al;
	a.args_fn = b.args_fn = tc_args;
	a.ctx = b.ctx = t;
	a.dry_run = 1;
	a.stats = s1;
	b.timing = 1;
	b.timing_budget = budget;
	b.stats = s2;
	st1 = ohc_sim_run(&a);
	st2 = ohc_sim_run(&b);
	cr_assert_eq(st1, st2,
		     "%s/%s n=%u count=%llu: dry run %d (%s), "
		     "timing %d (%s)",
		     ohc_coll_op_name(t->op), al->name, n,
		     (unsigned long long)t->count, st1, a.err, st2, b.err);
	if (st1 != OHC_OK)
		return;
	cr_assert(fabs(a.time_us - b.time_us) <= 1e-9 * (1 + a.time_us),
		  "%s/%s n=%u count=%llu mode %d: dry run %.9g us, timing "
		  "%.9g us",
		  ohc_coll_op_name(t->op), al->name, n,
		  (unsigned long long)t->count, mode, a.time_us, b.time_us);
	for (uint32_t r = 0; r < n; r++) {
		cr_assert_eq(s1[r].steps, s2[r].steps);
		cr_assert_eq(s1[r].msgs_sent, s2[r].msgs_sent);
		cr_assert_eq(s1[r].msgs_recv, s2[r].msgs_recv);
		cr_assert_eq(s1[r].bytes_sent, s2[r].bytes_sent);
		cr_assert_eq(s1[r].bytes_recv, s2[r].bytes_recv);
		cr_assert_eq(s1[r].bytes_reduced, s2[r].bytes_reduced,
			     "%s/%s rank %u", ohc_coll_op_name(t->op), al->name,
			     r);
		cr_assert_eq(s1[r].bytes_copied, s2[r].bytes_copied);
		cr_assert_eq(s1[r].algo, s2[r].algo);
		cr_assert(fabs(s1[r].time_us - s2[r].time_us) <=
			  1e-9 * (1 + s1[r].time_us));
	}
}

Test(sim_timing, equals_dry_run_for_every_algorithm)
{
	static const uint32_t ranks[] = {2, 3, 4, 5, 7, 8, 12, 16};
	static const uint64_t counts[] = {0, 1, 7, 1000, 65536};
	unsigned na, runs = 0;
	const struct ohc_algo *const *all = ohc_algo_all(&na);

	for (unsigned i = 0; i < na; i++) {
		if (!plain_op(all[i]->op))
			continue;
		for (size_t ri = 0; ri < sizeof(ranks) / sizeof(*ranks); ri++)
			for (size_t ci = 0;
			     ci < sizeof(counts) / sizeof(*counts); ci++)
				for (int m = 0; m < 2; m++) {
					struct tc t = {all[i]->op, counts[ci],
						       ranks[ri] - 1,
						       OHC_LINK_SHM};

					same_run(all[i], ranks[ri], &t,
						 m ? OHC_SIM_RENDEZVOUS
						   : OHC_SIM_EAGER,
						 0);
					runs++;
				}
	}
	cr_assert(runs > 500, "only %u runs", runs);
}

Test(sim_timing, selection_and_windows)
{
	/* no algo given: ohc_algo_build picks, per link class */
	for (uint32_t n = 2; n <= 33; n += 5) {
		struct tc t = {OHC_COLL_ALLREDUCE, 100000, 0, OHC_LINK_RDMA};

		same_run(NULL, n, &t, OHC_SIM_EAGER, 0);
		t.link = OHC_LINK_SHM;
		t.count = 3;
		same_run(NULL, n, &t, OHC_SIM_RENDEZVOUS, 0);
	}
	/* tiny budgets: schedules simulated in many windows of steps */
	for (uint64_t budget = 1; budget <= 4096; budget *= 8) {
		struct tc t = {OHC_COLL_ALLREDUCE, 5000, 0, OHC_LINK_SHM};

		same_run(&ohc_algo_allreduce_ring, 13, &t, OHC_SIM_EAGER,
			 budget);
		t.op = OHC_COLL_ALLTOALL;
		same_run(&ohc_algo_alltoall_pairwise, 9, &t, OHC_SIM_RENDEZVOUS,
			 budget);
		t.op = OHC_COLL_BROADCAST;
		t.root = 5;
		same_run(&ohc_algo_bcast_binomial, 11, &t, OHC_SIM_EAGER,
			 budget);
	}
}

/* ---- broken schedules ---- */

static ohc_status_t build_len(const struct ohc_coll_args *a,
			      struct ohc_sched *s)
{
	if (a->rank == 0)
		ohc_sched_send(s, 1, a->sbuf, 8);
	else if (a->rank == 1)
		ohc_sched_recv(s, 0, a->rbuf, 16);
	ohc_sched_step(s);
	return OHC_OK;
}

static ohc_status_t build_wait(const struct ohc_coll_args *a,
			       struct ohc_sched *s)
{
	if (a->rank == 1)
		ohc_sched_recv(s, 0, a->rbuf, 8);
	ohc_sched_step(s);
	return OHC_OK;
}

static ohc_status_t build_lost(const struct ohc_coll_args *a,
			       struct ohc_sched *s)
{
	if (a->rank == 0)
		ohc_sched_send(s, 1, a->sbuf, 8);
	ohc_sched_step(s);
	return OHC_OK;
}

static ohc_status_t build_self(const struct ohc_coll_args *a,
			       struct ohc_sched *s)
{
	ohc_sched_send(s, a->rank, a->sbuf, 8);
	ohc_sched_step(s);
	return OHC_OK;
}

static ohc_status_t build_decline(const struct ohc_coll_args *a,
				  struct ohc_sched *s)
{
	(void)a;
	(void)s;
	return OHC_ERR_UNSUPPORTED;
}

Test(sim_timing, broken_schedules_are_errors)
{
	static const struct {
		ohc_status_t (*build)(const struct ohc_coll_args *,
				      struct ohc_sched *);
		ohc_status_t want;
		const char *says;
	} cases[] = {
		{build_len, OHC_ERR_DESYNC, "expects 16 bytes"},
		{build_wait, OHC_ERR_TIMEOUT, "deadlock"},
		{build_lost, OHC_ERR_DESYNC, "never received"},
		{build_self, OHC_ERR_INTERNAL, "not a remote rank"},
		{build_decline, OHC_ERR_UNSUPPORTED, "building"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct ohc_algo al = {.name = "broken",
				      .op = OHC_COLL_ALLREDUCE,
				      .build = cases[i].build};
		struct tc t = {OHC_COLL_ALLREDUCE, 2, 0, OHC_LINK_SHM};
		struct ohc_sim sim = {0};
		ohc_status_t st;

		sim.nranks = 3;
		sim.algo = &al;
		sim.args_fn = tc_args;
		sim.ctx = &t;
		sim.timing = 1;
		st = ohc_sim_run(&sim);
		cr_assert_eq(st, cases[i].want, "case %zu: %d (%s)", i, st,
			     sim.err);
		cr_assert(strstr(sim.err, cases[i].says), "case %zu: %s", i,
			  sim.err);
	}
}

Test(sim_timing, thousands_of_ranks)
{
	struct tc t = {OHC_COLL_ALLREDUCE, 1 << 20, 0, OHC_LINK_SHM};
	const struct ohc_cost_params *c = ohc_cost_params_get(OHC_LINK_SHM);
	struct ohc_sim sim = {0};
	double want;

	sim.nranks = 2048;
	sim.algo = &ohc_algo_allreduce_hd;
	sim.args_fn = tc_args;
	sim.ctx = &t;
	sim.timing = 1;
	cr_assert_eq(ohc_sim_run(&sim), OHC_OK, "%s", sim.err);
	/* a power of two: the model is the schedule's exact time */
	want = ohc_algo_allreduce_hd.cost(c, t.count * 4, sim.nranks);
	cr_assert(fabs(sim.time_us - want) <= 1e-6 * want,
		  "halving-doubling at 2048 ranks: %.6f us simulated, %.6f "
		  "model",
		  sim.time_us, want);
}

static double hosts_run(uint32_t n, const uint32_t *host_of,
			enum ohc_link_class inter, enum ohc_link_class intra)
{
	struct tc t = {OHC_COLL_ALLREDUCE, 1 << 16, 0, OHC_LINK_RDMA};
	struct ohc_sim sim = {0};

	sim.nranks = n;
	sim.algo = &ohc_algo_allreduce_ring;
	sim.args_fn = tc_args;
	sim.ctx = &t;
	sim.timing = 1;
	sim.cost = ohc_cost_params_get(inter);
	sim.host_of = host_of;
	sim.cost_intra = ohc_cost_params_get(intra);
	cr_assert_eq(ohc_sim_run(&sim), OHC_OK, "%s", sim.err);
	return sim.time_us;
}

Test(sim_timing, messages_inside_a_host_cost_less)
{
	static const uint32_t one_host[4] = {0, 0, 0, 0};
	static const uint32_t two_hosts[4] = {0, 0, 1, 1};
	double shm = hosts_run(4, NULL, OHC_LINK_SHM, OHC_LINK_SHM);
	double rdma = hosts_run(4, NULL, OHC_LINK_RDMA, OHC_LINK_RDMA);
	double mixed = hosts_run(4, two_hosts, OHC_LINK_RDMA, OHC_LINK_SHM);

	cr_assert(fabs(hosts_run(4, one_host, OHC_LINK_RDMA, OHC_LINK_SHM) -
		       shm) <= 1e-9 * shm,
		  "all ranks on one host must cost as shm");
	cr_assert(shm < mixed && mixed < rdma,
		  "shm %.3f < two hosts %.3f < rdma %.3f us expected", shm,
		  mixed, rdma);
}

/* One buffer, as HcclBroadcast has; selection builds (with agreement). */
static ohc_status_t bcast_args(void *ctx, uint32_t rank,
			       struct ohc_coll_args *a)
{
	const struct tc *t = ctx;

	(void)rank;
	a->op = OHC_COLL_BROADCAST;
	a->count = t->count;
	a->esize = 4;
	a->root = t->root;
	a->sbuf = a->rbuf = (void *)((uintptr_t)3 << 40);
	a->link = t->link;
	a->algo_override = "level0:NA;level1:binomial";
	return OHC_OK;
}

/*
 * Simulate n ranks of args_fn's op in both modes: *a a dry run (with
 * stats, if given), *b the timing mode. Both must succeed.
 */
static void sim_both(uint32_t n, ohc_sim_args_fn args_fn, void *ctx,
		     struct ohc_sim_stats *stats, struct ohc_sim *a,
		     struct ohc_sim *b)
{
	*a = (struct ohc_sim){.nranks = n,
			      .args_fn = args_fn,
			      .ctx = ctx,
			      .dry_run = 1,
			      .stats = stats};
	*b = (struct ohc_sim){
		.nranks = n, .args_fn = args_fn, .ctx = ctx, .timing = 1};
	cr_assert_eq(ohc_sim_run(a), OHC_OK, "%s", a->err);
	cr_assert_eq(ohc_sim_run(b), OHC_OK, "%s", b->err);
}

/*
 * The agreement woven into rooted ops (ohc_sched_weave_agreement):
 * 1 + ceil(log2 n) steps of empty messages, which ride along with the
 * algorithm's in the steps it has. A binomial broadcast (ceil(log2 n)
 * steps) then takes one step more: simulated, exactly what the model
 * (ohc_algo_cost) says, alpha more than the algorithm alone, in both
 * simulation modes.
 */
Test(sim_timing, agreement_steps_as_the_model_prices_them)
{
	const uint32_t ns[] = {2, 8, 5};

	for (size_t k = 0; k < OHC_ARRAY_SIZE(ns); k++) {
		struct tc t = {OHC_COLL_BROADCAST, 4096, 0, OHC_LINK_RDMA};
		const struct ohc_cost_params *c =
			ohc_cost_params_get(OHC_LINK_RDMA);
		struct ohc_sim a = {0}, b = {0};
		double want = ohc_algo_cost(&ohc_algo_bcast_binomial, c,
					    t.count * 4, ns[k]);

		cr_assert(fabs(want -
			       ohc_algo_bcast_binomial.cost(c, t.count * 4,
							    ns[k]) -
			       c->alpha_us) < 1e-9,
			  "n=%u: the agreement adds one step", ns[k]);
		sim_both(ns[k], bcast_args, &t, NULL, &a, &b);
		cr_assert(fabs(a.time_us - want) <= 1e-9 * want &&
				  fabs(b.time_us - want) <= 1e-9 * want,
			  "binomial broadcast n=%u: simulated %.3f / %.3f us, "
			  "model %.3f",
			  ns[k], a.time_us, b.time_us, want);
	}
	/* algorithms with enough steps of their own pay nothing more */
	cr_assert_eq(ohc_algo_cost(&ohc_algo_bcast_scatter_ag,
				   ohc_cost_params_get(OHC_LINK_RDMA), 1 << 20,
				   8),
		     ohc_algo_bcast_scatter_ag.cost(
			     ohc_cost_params_get(OHC_LINK_RDMA), 1 << 20, 8));
	cr_assert_eq(ohc_algo_cost(&ohc_algo_allreduce_rd,
				   ohc_cost_params_get(OHC_LINK_RDMA), 64, 2),
		     ohc_algo_allreduce_rd.cost(
			     ohc_cost_params_get(OHC_LINK_RDMA), 64, 2));
}

/* Selection's own choice (no override), as HcclBroadcast calls it. */
static ohc_status_t bcast_auto_args(void *ctx, uint32_t rank,
				    struct ohc_coll_args *a)
{
	bcast_args(ctx, rank, a);
	a->algo_override = NULL;
	return OHC_OK;
}

/*
 * A one-step schedule gets the agreement at once (every rank to every
 * rank in its step) where that is cheaper than the dissemination's
 * log2 n more steps: a small Broadcast over shm on 8 ranks is linear and
 * one step. The model charges the root's n-1 agreement messages send_us
 * each after its n-1 data messages, a + (2n-3) send_us + the bytes; the
 * simulator lets an empty message leave at once (its rule: a header
 * behind the data), so it sees a + (n-2) send_us + the bytes, in both
 * modes: the model is the upper bound. Over RDMA, where every message
 * costs its sender alpha, the tree and the dissemination's extra step.
 */
Test(sim_timing, agreement_at_once_in_a_one_step_schedule)
{
	struct tc t = {OHC_COLL_BROADCAST, 2, 3, OHC_LINK_SHM};
	const struct ohc_cost_params *c = ohc_cost_params_get(OHC_LINK_SHM);
	const struct ohc_cost_params *rdma = ohc_cost_params_get(OHC_LINK_RDMA);
	const uint32_t n = 8;
	double model = ohc_algo_cost(&ohc_algo_bcast_linear, c, t.count * 4, n);
	double sim_want =
		c->alpha_us + (n - 2) * c->send_us + (n - 1) * 8 * c->beta_us;
	struct ohc_sim_stats st[8];
	struct ohc_sim a = {0}, b = {0};

	cr_assert(fabs(model - sim_want - (n - 1) * c->send_us) < 1e-9,
		  "model %.4f us", model);
	memset(st, 0, sizeof(st));
	sim_both(n, bcast_auto_args, &t, st, &a, &b);
	cr_assert(fabs(a.time_us - sim_want) <= 1e-9 * sim_want &&
			  fabs(b.time_us - sim_want) <= 1e-9 * sim_want,
		  "linear broadcast n=%u: simulated %.4f / %.4f us, want "
		  "%.4f (model %.4f)",
		  n, a.time_us, b.time_us, sim_want, model);
	/* the root's data and, from every rank, an empty message to each */
	for (uint32_t r = 0; r < n; r++)
		cr_assert_eq(st[r].msgs_sent, r == t.root ? 2 * (n - 1) : n - 1,
			     "rank %u sent %llu messages", r,
			     (unsigned long long)st[r].msgs_sent);
	cr_assert_eq(ohc_algo_cost(&ohc_algo_bcast_binomial, rdma, 8, n),
		     ohc_algo_bcast_binomial.cost(rdma, 8, n) + rdma->alpha_us);
}

/*
 * shm zero copy is per message and only out of the user's buffers:
 * recursive halving's first step sends half the user's send buffer, the
 * next from its scratch partials. At 4 ranks and 4 MiB per rank's block
 * both messages are above the threshold, only the first goes zero-copy,
 * and the simulation of the schedule is the model's time exactly.
 */
Test(sim_timing, zero_copy_only_out_of_the_users_buffers)
{
	struct tc t = {OHC_COLL_REDUCE_SCATTER, 1 << 20, 0, OHC_LINK_SHM};
	const struct ohc_cost_params *c = ohc_cost_params_get(OHC_LINK_SHM);
	struct ohc_cost_params ring = *c;
	struct ohc_sim sim = {0};
	double nb = 4.0 * 4 * t.count, want, all_user;

	cr_assert(c->zc_bytes && c->zc_bytes <= nb / 4);
	ring.zc_bytes = 0;
	want = ohc_algo_reduce_scatter_rh.cost(c, (uint64_t)nb, 4);
	all_user = 2 * c->alpha_us + ohc_cost_bytes(c, nb / 2, 1, 1) +
		   ohc_cost_bytes(c, nb / 4, 1, 1);
	cr_assert(
		fabs(want - (2 * c->alpha_us + ohc_cost_bytes(c, nb / 2, 1, 1) +
			     ohc_cost_bytes(c, nb / 4, 0, 1))) < 1e-9);
	cr_assert(all_user < want && want < ohc_algo_reduce_scatter_rh.cost(
						    &ring, (uint64_t)nb, 4));
	sim.nranks = 4;
	sim.algo = &ohc_algo_reduce_scatter_rh;
	sim.args_fn = tc_args;
	sim.ctx = &t;
	sim.timing = 1;
	cr_assert_eq(ohc_sim_run(&sim), OHC_OK, "%s", sim.err);
	cr_assert(fabs(sim.time_us - want) <= 1e-9 * want,
		  "recursive halving, 4 ranks, 16 MiB: simulated %.3f us, "
		  "model %.3f",
		  sim.time_us, want);
}
