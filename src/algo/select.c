/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Selection: every candidate of the operation (registry.c) that accepts
 * the call is priced with the alpha-beta-gamma model of the
 * communicator's slowest link class (peers.md 2.1; constants in cost.c)
 * and the cheapest is built; ties go to the earlier candidate. HCCL_ALGO
 * (args->algo_override, hccl_algo.c) forces a choice.
 *
 * Ranks that outnumber their host's CPUs take turns on them: a candidate
 * then costs at least the work all its ranks do (ohc_algo.work) divided
 * among the CPUs. For the symmetric algorithms, whose ranks all work
 * throughout, that scales every candidate alike and keeps the flat
 * model's order (measured: 4 and 8 ranks on 2 cores, AllReduce,
 * AllGather, ReduceScatter, bench/README.md); the rooted ones differ: a
 * pipelined chain keeps every rank busy only when each has a CPU, and
 * the binomial tree, the least work, wins where they share.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/patterns/recursive.h"
#include "util/compiler.h"
#include "util/log.h"

#define MAX_PER_OP 8

static uint64_t sum(const uint64_t *v, uint32_t n)
{
	uint64_t t = 0;

	for (uint32_t i = 0; v && i < n; i++)
		t += v[i];
	return t;
}

uint64_t ohc_coll_bytes(const struct ohc_coll_args *a)
{
	uint64_t n = a->nranks, es = a->esize, t = 0;

	switch (a->op) {
	case OHC_COLL_ALLGATHER:
	case OHC_COLL_REDUCE_SCATTER:
	case OHC_COLL_SCATTER:
	case OHC_COLL_ALLTOALL:
	case OHC_COLL_GATHER:
		return a->count * es * n;
	case OHC_COLL_ALLGATHER_V:
		return sum(a->recv_counts, a->nranks) * es;
	case OHC_COLL_REDUCE_SCATTER_V:
	case OHC_COLL_ALLTOALLV:
	case OHC_COLL_ALLTOALLVC:
		return sum(a->send_counts, a->nranks) * es;
	case OHC_COLL_BATCH_SEND_RECV:
		for (uint32_t i = 0; a->items && i < a->nitems; i++)
			t += a->items[i].count * a->items[i].esize;
		return t;
	case OHC_COLL_BARRIER:
		return 0;
	default:
		return a->count * es;
	}
}

/*
 * The share of an algorithm's work that falls on one CPU of the busiest
 * host when its ranks take turns there: host_ranks / (nranks x
 * host_cpus); 0 when every rank has a CPU.
 */
static double cpu_share(const struct ohc_coll_args *a)
{
	if (!a->host_cpus || a->host_ranks <= a->host_cpus || a->nranks < 2)
		return 0;
	return (double)a->host_ranks / ((double)a->nranks * a->host_cpus);
}

double ohc_algo_cpu_floor_us(const struct ohc_algo *al,
			     const struct ohc_cost_params *c,
			     const struct ohc_coll_args *a, uint64_t bytes,
			     uint32_t slices, double us)
{
	double share = cpu_share(a);

	if (share == 0)
		return 0;
	return share * (al->work ? al->work(c, bytes, a->nranks, slices)
				 : a->nranks * us);
}

uint32_t ohc_algo_slices(const struct ohc_algo *al,
			 const struct ohc_cost_params *c, uint64_t bytes,
			 size_t esize, uint32_t nranks, double *us_p)
{
	uint64_t elems = esize ? bytes / esize : bytes;
	uint32_t best = 1;
	double best_us;

	if (!al->cost_sliced) {
		if (us_p)
			*us_p = al->cost ? al->cost(c, bytes, nranks) : 0;
		return 1;
	}
	best_us = al->cost_sliced(c, bytes, nranks, 1);
	for (uint32_t sl = 2; sl <= OHC_ALGO_MAX_SLICES && sl <= elems;
	     sl *= 2) {
		double us = al->cost_sliced(c, bytes, nranks, sl);

		if (us < best_us) {
			best_us = us;
			best = sl;
		}
	}
	if (us_p)
		*us_p = best_us;
	return best;
}

/* Costs that price only alpha, at 1: a cost function's step count (a
 * step's further sends cost send_us, next to nothing here). */
static const struct ohc_cost_params unit_alpha = {.alpha_us = 1.0,
						  .send_us = 1e-9};

/*
 * What the agreement adds to al with costs c on nranks (steps: al's own,
 * its cost function priced with unit_alpha), the cheaper way: the
 * dissemination costs alpha for each of its 1 + ceil(log2 n) steps beyond
 * al's; at once (ohc_sched_weave_agreement) n-1 more sends in step 0,
 * send_us each, which a schedule of one step pays rather than log2 n more
 * steps. Longer schedules keep the dissemination, which runs beside their
 * own steps: at once, a 4-rank binomial Reduce of 256 KiB took 1.2x as
 * long on 2 CPUs (its step 0 then waits for every rank, not for one
 * neighbour). 0 if al's op needs none. *at_once_p (may be NULL): which. It
 * depends on al, c, nranks and the step count only, the same on every
 * rank (the candidates of the V ops take n-1 steps whatever the counts),
 * so all ranks weave alike.
 */
static double agreement_us(const struct ohc_algo *al,
			   const struct ohc_cost_params *c, double steps,
			   uint32_t nranks, bool *at_once_p)
{
	double rounds = 1 + ohc_log2_ceil(nranks), spread, at_once;

	if (at_once_p)
		*at_once_p = false;
	if (!ohc_algo_needs_agreement(al->op) || nranks < 2)
		return 0;
	spread = rounds > steps ? c->alpha_us * (rounds - steps) : 0;
	at_once = (nranks - 1) * ohc_cost_send_us(c);
	if (steps >= 1.5 || at_once >= spread)
		return spread;
	if (at_once_p)
		*at_once_p = true;
	return at_once;
}

/* al's time with costs c as they are: what selection ranks by */
static double cost_flat(const struct ohc_algo *al,
			const struct ohc_cost_params *c, uint64_t bytes,
			uint32_t nranks)
{
	if (al->cost_topo && !al->cost)
		return HUGE_VAL; /* needs a layout: not predictable flat */
	if (!al->cost || nranks < 2)
		return 0;
	return al->cost(c, bytes, nranks) +
	       agreement_us(al, c, al->cost(&unit_alpha, bytes, nranks), nranks,
			    NULL);
}

/*
 * The prediction also prices a cache-resident op's zero copy
 * (ohc_cost_for_op); selection does not: the two choices it would change
 * here (2 ranks of 512 KiB to the ring, 4 ranks of 256 KiB to recursive
 * doubling) measured no faster (all_reduce_test, interleaved, best of 3).
 */
double ohc_algo_cost(const struct ohc_algo *al, const struct ohc_cost_params *c,
		     uint64_t bytes, uint32_t nranks)
{
	struct ohc_cost_params op_c;

	return cost_flat(al, ohc_cost_for_op(c, bytes, &op_c), bytes, nranks);
}

double ohc_algo_predict_us(const struct ohc_algo *a, enum ohc_coll_op op,
			   uint64_t bytes, uint32_t nranks,
			   enum ohc_link_class link)
{
	if (!a || a->op != op)
		return HUGE_VAL;
	return ohc_algo_cost(a, ohc_cost_params_get(link), bytes, nranks);
}

/* Warn about an unusable HCCL_ALGO string once per distinct string. */
static void warn_unknown_once(const char *spec, enum ohc_coll_op op)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char warned[256];
	int first;

	pthread_mutex_lock(&lock);
	first = strncmp(warned, spec, sizeof(warned) - 1) != 0;
	if (first)
		snprintf(warned, sizeof(warned), "%s", spec);
	pthread_mutex_unlock(&lock);
	if (first)
		OHC_WARN(OHC_SS_ALGO,
			 "HCCL_ALGO '%s': unknown algorithm name or malformed "
			 "entry (first seen for %s); choosing automatically "
			 "where it names nothing usable (names: ring, H-D_R, "
			 "NHR, NHR_V1, NB, AHC, pipeline, pairwise)",
			 spec, ohc_coll_op_name(op));
}

/* ---- selection ---- */

struct cand {
	const struct ohc_algo *algo;
	double us;
};

static int accepts(const struct ohc_algo *al, const struct ohc_coll_args *a)
{
	return !al->accepts || al->accepts(a) == OHC_OK;
}

/*
 * The slice count for al on a: the cost model's choice, from the
 * arguments every rank shares (bytes of the vector or of the whole
 * buffer, never a rank's own V lengths); 1 for ops whose byte count
 * differs between ranks.
 */
static uint32_t slices_for(const struct ohc_coll_args *a,
			   const struct ohc_algo *al, uint64_t bytes)
{
	switch (a->op) {
	case OHC_COLL_ALLTOALLV:
	case OHC_COLL_ALLTOALLVC:
	case OHC_COLL_BATCH_SEND_RECV:
	case OHC_COLL_SEND:
	case OHC_COLL_RECV:
		return 1;
	default:
		break;
	}
	if (a->nranks < 2 || !al->cost_sliced)
		return 1;
	if (a->pipeline_slices) {
		uint64_t elems = a->esize ? bytes / a->esize : bytes;
		uint32_t sl = a->pipeline_slices;

		if (sl > OHC_ALGO_MAX_SLICES)
			sl = OHC_ALGO_MAX_SLICES;
		return elems && sl > elems ? (uint32_t)elems : sl;
	}
	/*
	 * Ranks that take turns on shared CPUs do not pipeline: the slices'
	 * stages overlap only on CPUs of their own, and each slice adds a
	 * turn per rank (4 ranks on 2 cores, Broadcast of 4 MiB: the chain
	 * in 4 slices took 1.8x the binomial tree's time, in 16 1.5x)
	 */
	if (cpu_share(a) > 0)
		return 1;
	return ohc_algo_slices(al, ohc_cost_params_get(a->link), bytes,
			       a->esize, a->nranks, NULL);
}

/*
 * What selection ranks al by on a: the topology's formula (two-level), or
 * the flat cost, in the slice count it will be built in where that may
 * differ from the cost function's own choice (OPENHCCL_PIPELINE_SLICES,
 * shared CPUs); either raised to its work per CPU where ranks share them.
 */
static double candidate_us(const struct ohc_coll_args *a,
			   const struct ohc_algo *al, uint64_t bytes)
{
	const struct ohc_cost_params *cp = ohc_cost_params_get(a->link);
	double share = cpu_share(a), us, floor;
	uint32_t sl = 1;

	if (al->cost_topo) {
		us = al->cost_topo(a, bytes);
	} else if (al->cost_sliced && a->nranks > 1 &&
		   (a->pipeline_slices || share)) {
		sl = slices_for(a, al, bytes);
		us = al->cost_sliced(cp, bytes, a->nranks, sl) +
		     agreement_us(
			     al, cp,
			     al->cost_sliced(&unit_alpha, bytes, a->nranks, sl),
			     a->nranks, NULL);
	} else {
		us = cost_flat(al, cp, bytes, a->nranks);
	}
	floor = ohc_algo_cpu_floor_us(al, cp, a, bytes, sl, us);
	return floor > us ? floor : us;
}

/* Candidates of a->op that accept a, cheapest first (stable). */
static unsigned rank_candidates(const struct ohc_coll_args *a, uint64_t bytes,
				struct cand *c)
{
	unsigned n = 0, nall;
	const struct ohc_algo *const *all = ohc_algo_all(&nall);

	for (unsigned i = 0; i < nall; i++) {
		const struct ohc_algo *al = all[i];
		unsigned j;

		if (al->op != a->op || n == MAX_PER_OP || !accepts(al, a))
			continue;
		c[n].algo = al;
		c[n].us = candidate_us(a, al, bytes);
		for (j = n; j > 0 && c[j - 1].us > c[j].us; j--) {
			struct cand t = c[j];

			c[j] = c[j - 1];
			c[j - 1] = t;
		}
		n++;
	}
	return n;
}

/*
 * Operations whose data does not flow from every rank to every rank: a
 * rank could finish them although another rank called something else (a
 * different root, per-pair counts that disagree). Their schedules get an
 * agreement woven in (ohc_sched_weave_agreement); for the others, every
 * rank's result depends on messages from every rank, each of which is
 * checked against the receiver's signature.
 */
int ohc_algo_needs_agreement(enum ohc_coll_op op)
{
	switch (op) {
	case OHC_COLL_BROADCAST:
	case OHC_COLL_REDUCE:
	case OHC_COLL_SCATTER:
	case OHC_COLL_GATHER:
	case OHC_COLL_ALLTOALLV:
	case OHC_COLL_ALLTOALLVC:
		return 1;
	default:
		return 0;
	}
}

/* Whether al's schedule in slices pieces gets its agreement at once. */
static bool agree_at_once(const struct ohc_coll_args *a,
			  const struct ohc_algo *al, uint32_t slices)
{
	uint64_t bytes = ohc_coll_bytes(a);
	double steps =
		slices > 1 && al->cost_sliced
			? al->cost_sliced(&unit_alpha, bytes, a->nranks, slices)
		: al->cost ? al->cost(&unit_alpha, bytes, a->nranks)
			   : 1;
	bool at_once;

	agreement_us(al, ohc_cost_params_get(a->link), steps, a->nranks,
		     &at_once);
	return at_once;
}

static ohc_status_t try_build(const struct ohc_coll_args *a,
			      struct ohc_sched *s, const struct ohc_algo *al,
			      uint32_t slices)
{
	ohc_status_t status;

	ohc_sched_fini(s);
	ohc_sched_init(s);
	status = al->build(a, s);
	if (status == OHC_OK && slices > 1)
		status = ohc_sched_pipeline(s, slices, a->esize);
	/*
	 * count 0 is a no-op on every rank (the API returns before us); V
	 * counts are per rank, so those always agree.
	 */
	if (status == OHC_OK && ohc_algo_needs_agreement(a->op) &&
	    (a->count || a->send_counts || a->recv_counts))
		ohc_sched_weave_agreement(s, a->rank, a->nranks,
					  agree_at_once(a, al, slices));
	if (status == OHC_OK && s->status < 0)
		status = s->status;
	if (status == OHC_ERR_NO_MEMORY)
		OHC_ERROR(OHC_SS_ALGO,
			  "rank %u: %s: cannot build the %s schedule: out of "
			  "memory",
			  a->rank, ohc_coll_op_name(a->op), al->name);
	else if (status == OHC_ERR_UNSUPPORTED)
		OHC_DEBUG(OHC_SS_ALGO, "rank %u: %s: %s declined", a->rank,
			  ohc_coll_op_name(a->op), al->name);
	return status;
}

static void log_choice(const struct ohc_coll_args *a, uint64_t bytes,
		       const struct cand *c, unsigned n, unsigned chosen,
		       uint32_t slices, const char *why, const char *note)
{
	char tail[160], sl[32] = "", turns[64] = "";

	if (!ohc_log_enabled(OHC_LOG_INFO, OHC_SS_ALGO))
		return;
	if (why)
		snprintf(tail, sizeof(tail),
			 "%s, %.1f us predicted; cheapest "
			 "%s %.1f us",
			 why, c[chosen].us, c[0].algo->name, c[0].us);
	else if (n == 1 || chosen + 1 >= n)
		snprintf(tail, sizeof(tail),
			 "only candidate left, %.1f us "
			 "predicted",
			 c[chosen].us);
	else
		snprintf(tail, sizeof(tail),
			 "cheapest, %.1f us predicted; "
			 "runner-up %s %.1f us",
			 c[chosen].us, c[chosen + 1].algo->name,
			 c[chosen + 1].us);
	if (c[chosen].algo->cost_sliced)
		snprintf(sl, sizeof(sl), " in %u slice%s", slices,
			 slices == 1 ? "" : "s");
	if (cpu_share(a) > 0)
		snprintf(turns, sizeof(turns),
			 "; %u ranks take turns on %u CPUs", a->host_ranks,
			 a->host_cpus);
	OHC_INFO(OHC_SS_ALGO,
		 "rank %u: %s of %llu bytes on %u ranks over %s: "
		 "%s%s (%s%s%s)",
		 a->rank, ohc_coll_op_name(a->op), (unsigned long long)bytes,
		 a->nranks, ohc_link_class_name(a->link), c[chosen].algo->name,
		 sl, tail, turns, note ? note : "");
}

ohc_status_t ohc_algo_build(const struct ohc_coll_args *a, struct ohc_sched *s,
			    const struct ohc_algo **algo_p)
{
	uint64_t bytes = ohc_coll_bytes(a);
	struct cand c[MAX_PER_OP];
	unsigned n = rank_candidates(a, bytes, c);
	const struct ohc_algo *forced = NULL;
	char note[96] = "";
	ohc_status_t status;
	int unknown = 0;

	if (n == 0) {
		OHC_ERROR(OHC_SS_ALGO,
			  "rank %u: no algorithm implements %s for this call "
			  "(%u ranks)",
			  a->rank, ohc_coll_op_name(a->op), a->nranks);
		return OHC_ERR_UNSUPPORTED;
	}
	if (a->algo_override && a->algo_override[0]) {
		forced = ohc_algo_override_find(a->algo_override, a->op,
						&unknown);
		if (unknown)
			warn_unknown_once(a->algo_override, a->op);
	}
	if (forced) {
		unsigned i;

		for (i = 0; i < n && c[i].algo != forced; i++)
			;
		if (i < n) {
			uint32_t sl = slices_for(a, forced, bytes);

			status = try_build(a, s, forced, sl);
			if (status != OHC_ERR_UNSUPPORTED) {
				if (status == OHC_OK) {
					log_choice(a, bytes, c, n, i, sl,
						   "HCCL_ALGO override", NULL);
					*algo_p = forced;
				}
				return status;
			}
		}
		snprintf(note, sizeof(note),
			 "; HCCL_ALGO's %s cannot serve this call",
			 forced->name);
	} else if (unknown) {
		snprintf(note, sizeof(note), "; HCCL_ALGO not understood");
	}
	for (unsigned i = 0; i < n; i++) {
		uint32_t sl = slices_for(a, c[i].algo, bytes);

		status = try_build(a, s, c[i].algo, sl);
		if (status == OHC_ERR_UNSUPPORTED)
			continue;
		if (status == OHC_OK) {
			log_choice(a, bytes, c, n, i, sl, NULL,
				   note[0] ? note : NULL);
			*algo_p = c[i].algo;
		}
		return status;
	}
	OHC_ERROR(OHC_SS_ALGO, "rank %u: every algorithm for %s declined",
		  a->rank, ohc_coll_op_name(a->op));
	return OHC_ERR_UNSUPPORTED;
}
