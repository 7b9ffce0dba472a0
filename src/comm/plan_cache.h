/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_COMM_PLAN_CACHE_H
#define OHC_COMM_PLAN_CACHE_H

/*
 * A communicator's cache of recently built schedules ("plans"). A
 * schedule is a pure function of the call (operation, buffers, count,
 * type, root, peer, determinism, HCCL_ALGO) and the communicator's
 * fixed topology, so a loop that repeats the same call on the same
 * buffers can run the same schedule again instead of selecting and
 * building it each time (selection, allocation and building are most of
 * the per-operation cost of small messages). Only small operations with
 * no per-call arrays are cached, and only schedules whose scratch memory
 * is small, so the cache never pins much memory. Not thread-safe: used
 * under the communicator's exec_lock.
 */
#include <stdint.h>

#include "algo/algo.h"
#include "core/sched.h"

#define OHC_PLAN_CACHE_SLOTS 8

struct ohc_plan_key {
	const void *sbuf;
	void *rbuf;
	const char *algo_override;
	uint64_t count;
	uint32_t root, peer;
	int32_t op, dtype, redop, deterministic;
	uint32_t zc; /* the operation touches exported memory */
	uint32_t pad;
};

struct ohc_plan {
	struct ohc_plan_key key;
	const struct ohc_algo *algo;
	struct ohc_sched sched;
	int valid;
};

struct ohc_plan_cache {
	struct ohc_plan plans[OHC_PLAN_CACHE_SLOTS];
	unsigned next;	       /* slot the next insert replaces */
	unsigned last, prev;   /* slots of the last hit and the one before */
	uint64_t hits, misses; /* for tests and the INFO line on destroy */
};

/* Key of args; 0 if such an operation is never cached. */
int ohc_plan_key_of(const struct ohc_coll_args *args, int zc,
		    struct ohc_plan_key *key_p);
/* The cached plan for key, or NULL. */
struct ohc_plan *ohc_plan_cache_find(struct ohc_plan_cache *c,
				     const struct ohc_plan_key *key);
/*
 * Keep s (built by algo for key) if it is small enough: returns the plan,
 * which took s over (the caller must not fini s), else NULL.
 */
struct ohc_plan *ohc_plan_cache_insert(struct ohc_plan_cache *c,
				       const struct ohc_plan_key *key,
				       const struct ohc_algo *algo,
				       struct ohc_sched *s);
void ohc_plan_cache_fini(struct ohc_plan_cache *c);

#endif
