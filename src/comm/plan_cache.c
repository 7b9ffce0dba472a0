/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "comm/plan_cache.h"

/*
 * Operations up to this many bytes are cached: above it, building the
 * schedule is a small part of moving the data. Scratch memory a cached
 * schedule may keep is bounded by the same order of magnitude.
 */
#define PLAN_MAX_BYTES (256u << 10)
#define PLAN_MAX_SCRATCH (1u << 20)

int ohc_plan_key_of(const struct ohc_coll_args *args, int zc,
		    struct ohc_plan_key *key_p)
{
	/* per-call arrays (V counts, batch items) are not part of a key */
	if (args->send_counts || args->send_displs || args->recv_counts ||
	    args->recv_displs || args->items || args->nitems)
		return 0;
	if (args->count > PLAN_MAX_BYTES / (args->esize ? args->esize : 1))
		return 0;
	memset(key_p, 0, sizeof(*key_p));
	key_p->sbuf = args->sbuf;
	key_p->rbuf = args->rbuf;
	key_p->algo_override = args->algo_override;
	key_p->count = args->count;
	key_p->root = args->root;
	key_p->peer = args->peer;
	key_p->op = (int32_t)args->op;
	key_p->dtype = args->dtype;
	key_p->redop = args->redop;
	key_p->deterministic = args->deterministic;
	key_p->zc = zc != 0;
	return 1;
}

static int plan_matches(const struct ohc_plan *p,
			const struct ohc_plan_key *key)
{
	/* the operation and count sort out most slots without a memcmp */
	return p->valid && p->key.op == key->op && p->key.count == key->count &&
	       !memcmp(&p->key, key, sizeof(*key));
}

struct ohc_plan *ohc_plan_cache_find(struct ohc_plan_cache *c,
				     const struct ohc_plan_key *key)
{
	/* the slots of the last two hits first: loops repeat one operation,
	 * or alternate two (a send/receive ping-pong, a compute loop's
	 * AllReduce and Broadcast) */
	unsigned last = c->last, prev = c->prev;

	if (plan_matches(&c->plans[last], key)) {
		c->hits++;
		return &c->plans[last];
	}
	for (unsigned n = 0; n < OHC_PLAN_CACHE_SLOTS; n++) {
		unsigned i = (prev + n) % OHC_PLAN_CACHE_SLOTS;

		if (i != last && plan_matches(&c->plans[i], key)) {
			c->prev = last;
			c->last = i;
			c->hits++;
			return &c->plans[i];
		}
	}
	c->misses++;
	return NULL;
}

struct ohc_plan *ohc_plan_cache_insert(struct ohc_plan_cache *c,
				       const struct ohc_plan_key *key,
				       const struct ohc_algo *algo,
				       struct ohc_sched *s)
{
	struct ohc_plan *p;

	if (s->status < 0 || s->scratch_bytes > PLAN_MAX_SCRATCH)
		return NULL;
	p = &c->plans[c->next];
	c->next = (c->next + 1) % OHC_PLAN_CACHE_SLOTS;
	if (p->valid)
		ohc_sched_fini(&p->sched);
	p->key = *key;
	p->algo = algo;
	p->sched = *s;
	p->valid = 1;
	return p;
}

void ohc_plan_cache_fini(struct ohc_plan_cache *c)
{
	for (unsigned i = 0; i < OHC_PLAN_CACHE_SLOTS; i++)
		if (c->plans[i].valid)
			ohc_sched_fini(&c->plans[i].sched);
	memset(c, 0, sizeof(*c));
}
