/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "algo/algo.h"
#include "algo/patterns/recursive.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"

/*
 * Selection: every candidate of the operation that accepts the call is
 * priced with the alpha-beta-gamma model of the communicator's slowest
 * link class (peers.md 2.1) and the cheapest is built; ties go to the
 * earlier entry below. HCCL_ALGO (args->algo_override) forces a choice.
 */
static const struct ohc_algo *const candidates[] = {
	&ohc_algo_allreduce_rd,
	&ohc_algo_allreduce_hd,
	&ohc_algo_allreduce_ring,
	&ohc_algo_allreduce_2level,
	&ohc_algo_allgather_rd,
	&ohc_algo_allgather_bruck,
	&ohc_algo_allgather_ring,
	&ohc_algo_allgatherv_ring,
	&ohc_algo_reduce_scatter_rh,
	&ohc_algo_reduce_scatter_ring,
	&ohc_algo_reduce_scatterv_ring,
	&ohc_algo_bcast_binomial,
	&ohc_algo_bcast_scatter_ag,
	&ohc_algo_bcast_chain,
	&ohc_algo_reduce_binomial,
	&ohc_algo_reduce_chain,
	&ohc_algo_scatter_binomial,
	&ohc_algo_scatter_linear,
	&ohc_algo_alltoall_bruck,
	&ohc_algo_alltoall_pairwise,
	&ohc_algo_alltoallv_pairwise,
	&ohc_algo_batch_pairwise,
	&ohc_algo_barrier_dissem,
	&ohc_algo_send,
	&ohc_algo_recv,
};

#define MAX_PER_OP 8

/*
 * Default constants (microseconds). SELF: threads of one process, one
 * copy per message (~10 GB/s), a handoff of a fraction of a microsecond.
 * SHM: processes of one host, fitted to measurements (bench/
 * sim_validate.sh over 2, 4 and 8 ranks, 1 KiB..4 MiB, on the 2-core CI
 * machines): about 1 us per message with spinning peers, and the ring's
 * pipelined copies near 20 GB/s (the fragments stay in cache). RDMA:
 * sized for soft-RoCE (rxe), the CI fabric: tens of microseconds per
 * message, ~1 GB/s; real RoCE is far better. Reductions and local copies
 * run on the host whatever the link, at the speed measured with shm
 * (~20 GB/s of output).
 *
 * SHM zero copy: aclrtMalloc buffers of OPENHCCL_MALLOC_SHARED_KB and more
 * are memfds, and a message of OPENHCCL_SHM_ZC_KB and more out of one is
 * read by the receiver straight out of the sender's pages (shm_iface.c
 * tx_implicit_zc): one copy, fitted at 2 ranks (bench/sim_validate.sh,
 * 1-16 MiB: Broadcast's one message 22-110 us per 1-4 MiB, AllGather's
 * 512 KiB-2 MiB at 37-45 GB/s per rank pair) to ~40 GB/s; a
 * receive-reduce out of the mapping is the reduction's one pass. The
 * threshold is the larger of the two variables (a message below the
 * allocation threshold may come from a private buffer), read from the
 * environment as the library reads it; scratch never goes zero-copy.
 *
 * In an op whose buffers fit in a core's L2 (at most half of it per
 * rank's data: sysconf, capped at 1 MiB), the zero copy runs at ~100 GB/s
 * (ohc_cost_for_op): a 2-rank Broadcast of 256 KiB, one such message,
 * took 3.5-3.9 us in every run of bench/sim_validate.sh (the 40 GB/s
 * price: 8.6 us), while 1-4 MiB copy at 0.021-0.027 ns/B.
 */
#define SHM_ZC_BETA_US 2.5e-5
#define SHM_ZC_HOT_BETA_US 1.0e-5
#define SHM_ZC_HOT_MAX ((uint64_t)1 << 20)
static struct ohc_cost_params cost_defaults[] = {
	[OHC_LINK_SELF] = {.alpha_us = 0.5,
			   .beta_us = 1.0e-4,
			   .gamma_us = 5.0e-5,
			   .copy_us = 5.0e-5},
	[OHC_LINK_SHM] = {.alpha_us = 1.0,
			  .beta_us = 5.0e-5,
			  .gamma_us = 5.0e-5,
			  .copy_us = 5.0e-5},
	[OHC_LINK_RDMA] = {.alpha_us = 30.0,
			   .beta_us = 1.0e-3,
			   .gamma_us = 5.0e-5,
			   .copy_us = 5.0e-5},
};

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

const char *ohc_link_class_name(enum ohc_link_class link)
{
	switch (link) {
	case OHC_LINK_SELF:
		return "self";
	case OHC_LINK_SHM:
		return "shm";
	case OHC_LINK_RDMA:
		return "rdma";
	}
	return "unknown";
}

static pthread_once_t zc_once = PTHREAD_ONCE_INIT;

static void zc_init(void)
{
	const struct ohc_env *e = ohc_env();
	int64_t kb = e->shm_zc_kb > e->malloc_shared_kb ? e->shm_zc_kb
							: e->malloc_shared_kb;

	long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
	uint64_t hot = l2 > 0 ? (uint64_t)l2 / 2 : SHM_ZC_HOT_MAX / 2;

	if (e->shm_zc_kb > 0 && e->malloc_shared_kb > 0) {
		cost_defaults[OHC_LINK_SHM].zc_bytes = (uint64_t)kb << 10;
		cost_defaults[OHC_LINK_SHM].zc_beta_us = SHM_ZC_BETA_US;
		cost_defaults[OHC_LINK_SHM].zc_hot_bytes =
			OHC_MIN(hot, SHM_ZC_HOT_MAX);
		cost_defaults[OHC_LINK_SHM].zc_hot_beta_us = SHM_ZC_HOT_BETA_US;
	}
}

const struct ohc_cost_params *ohc_cost_params_get(enum ohc_link_class link)
{
	pthread_once(&zc_once, zc_init);
	if ((unsigned)link >= OHC_ARRAY_SIZE(cost_defaults))
		link = OHC_LINK_RDMA;
	return &cost_defaults[link];
}

const struct ohc_algo *const *ohc_algo_all(unsigned *n_p)
{
	*n_p = OHC_ARRAY_SIZE(candidates);
	return candidates;
}

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

/* Costs that price only alpha, at 1: a cost function's step count. */
static const struct ohc_cost_params unit_alpha = {.alpha_us = 1.0};

/*
 * What the agreement adds to al with costs c on nranks: alpha for each of
 * its 1 + ceil(log2 n) steps beyond the algorithm's own steps (the cost
 * function priced with unit_alpha); 0 if al's op needs none.
 */
static double agreement_us(const struct ohc_algo *al,
			   const struct ohc_cost_params *c, double steps,
			   uint32_t nranks)
{
	double rounds = 1 + ohc_log2_ceil(nranks);

	if (!ohc_algo_needs_agreement(al->op) || nranks < 2 || rounds <= steps)
		return 0;
	return c->alpha_us * (rounds - steps);
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
	       agreement_us(al, c, al->cost(&unit_alpha, bytes, nranks),
			    nranks);
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

static double selection_cost(const struct ohc_algo *al, uint64_t bytes,
			     uint32_t nranks, enum ohc_link_class link)
{
	return cost_flat(al, ohc_cost_params_get(link), bytes, nranks);
}

double ohc_algo_predict_us(const struct ohc_algo *a, enum ohc_coll_op op,
			   uint64_t bytes, uint32_t nranks,
			   enum ohc_link_class link)
{
	if (!a || a->op != op)
		return HUGE_VAL;
	return ohc_algo_cost(a, ohc_cost_params_get(link), bytes, nranks);
}

/* ---- HCCL_ALGO ---- */

enum family { F_AR, F_AG, F_RS, F_BC, F_RED, F_SC, F_A2A, F_NONE };

static enum family op_family(enum ohc_coll_op op)
{
	switch (op) {
	case OHC_COLL_ALLREDUCE:
		return F_AR;
	case OHC_COLL_ALLGATHER:
	case OHC_COLL_ALLGATHER_V:
		return F_AG;
	case OHC_COLL_REDUCE_SCATTER:
	case OHC_COLL_REDUCE_SCATTER_V:
		return F_RS;
	case OHC_COLL_BROADCAST:
		return F_BC;
	case OHC_COLL_REDUCE:
		return F_RED;
	case OHC_COLL_SCATTER:
		return F_SC;
	case OHC_COLL_ALLTOALL:
	case OHC_COLL_ALLTOALLV:
	case OHC_COLL_ALLTOALLVC:
		return F_A2A;
	default:
		return F_NONE;
	}
}

/* HCCL op names of the per-op grammar; F_NONE: accepted, not ours. */
static const struct {
	const char *name;
	enum family fam;
} hccl_ops[] = {
	{"allreduce", F_AR}, {"allgather", F_AG},  {"reducescatter", F_RS},
	{"broadcast", F_BC}, {"reduce", F_RED},	   {"scatter", F_SC},
	{"alltoall", F_A2A}, {"send", F_NONE},	   {"receive", F_NONE},
	{"gather", F_NONE},  {"sendrecv", F_NONE},
};

/* HCCL algorithm names -> ours, per family (NULL: no equivalent). */
static const struct {
	const char *hccl;
	const char *ours[F_NONE];
} hccl_algos[] = {
	{"ring",
	 {"ring", "ring", "ring", "scatter_ring_allgather", NULL, NULL, NULL}},
	{"H-D_R",
	 {"halving_doubling", "recursive_doubling", "recursive_halving",
	  "binomial", "binomial", "binomial", NULL}},
	{"NHR",
	 {"halving_doubling", "bruck", "ring", "binomial", "binomial",
	  "binomial", NULL}},
	{"NHR_V1",
	 {"halving_doubling", "bruck", "ring", "binomial", "binomial",
	  "binomial", NULL}},
	{"NB",
	 {"halving_doubling", "bruck", "ring", "binomial", "binomial",
	  "binomial", "bruck"}},
	{"AHC",
	 {"halving_doubling", "ring", "ring", "scatter_ring_allgather",
	  "binomial", "binomial", NULL}},
	{"pipeline",
	 {"ring", "ring", "ring", "chain", "chain", "linear", NULL}},
	{"pairwise", {NULL, NULL, NULL, NULL, NULL, NULL, "pairwise"}},
};

/* Copy [b, e) trimmed into out (NUL-terminated, truncated). */
static void trim_copy(const char *b, const char *e, char *out, size_t len)
{
	size_t n;

	while (b < e && isspace((unsigned char)*b))
		b++;
	while (e > b && isspace((unsigned char)e[-1]))
		e--;
	n = (size_t)(e - b) < len - 1 ? (size_t)(e - b) : len - 1;
	memcpy(out, b, n);
	out[n] = '\0';
}

/*
 * The algorithm named by a "level0:NA;level1:x" list in [b, e): level1,
 * else level0, into name; empty name (or NA): automatic. OHC_ERR_INVALID
 * when malformed.
 */
/*
 * The algorithm named by "level0:<a>;level1:<b>": level1 (inter-server)
 * if set, else level0. *hier_p: both levels name an algorithm (not NA),
 * i.e. a hierarchical algorithm is asked for.
 */
static ohc_status_t levels_pick(const char *b, const char *e, char *name,
				size_t len, int *hier_p)
{
	char lv0[64] = "", lv1[64] = "";

	name[0] = '\0';
	while (b < e) {
		const char *semi = memchr(b, ';', (size_t)(e - b));
		const char *end = semi ? semi : e, *colon;
		char key[16];

		colon = memchr(b, ':', (size_t)(end - b));
		if (!colon) {
			char tok[64];

			trim_copy(b, end, tok, sizeof(tok));
			if (tok[0])
				return OHC_ERR_INVALID;
		} else {
			trim_copy(b, colon, key, sizeof(key));
			if (!strcasecmp(key, "level0"))
				trim_copy(colon + 1, end, lv0, sizeof(lv0));
			else if (!strcasecmp(key, "level1"))
				trim_copy(colon + 1, end, lv1, sizeof(lv1));
			else if (strcasecmp(key, "level2") &&
				 strcasecmp(key, "level3"))
				return OHC_ERR_INVALID;
		}
		b = semi ? semi + 1 : e;
	}
	snprintf(name, len, "%s", lv1[0] ? lv1 : lv0);
	if (!strcasecmp(name, "NA"))
		name[0] = '\0';
	*hier_p = lv0[0] && lv1[0] && strcasecmp(lv0, "NA") &&
		  strcasecmp(lv1, "NA");
	return OHC_OK;
}

static const struct ohc_algo *find_ours(const char *name, enum ohc_coll_op op)
{
	for (size_t i = 0; i < OHC_ARRAY_SIZE(candidates); i++)
		if (candidates[i]->op == op &&
		    !strcasecmp(candidates[i]->name, name))
			return candidates[i];
	return NULL;
}

static int known_name(const char *name)
{
	for (size_t i = 0; i < OHC_ARRAY_SIZE(hccl_algos); i++)
		if (!strcasecmp(hccl_algos[i].hccl, name))
			return 1;
	for (size_t i = 0; i < OHC_ARRAY_SIZE(candidates); i++)
		if (!strcasecmp(candidates[i]->name, name))
			return 1;
	return 0;
}

const struct ohc_algo *
ohc_algo_override_find(const char *spec, enum ohc_coll_op op, int *unknown_p)
{
	enum family fam = op_family(op);
	const char *b = NULL, *e = NULL, *others_b = NULL, *others_e = NULL;
	char name[64];
	int unknown = 0, hier = 0;
	const struct ohc_algo *found = NULL;

	if (!spec)
		goto out;
	while (isspace((unsigned char)*spec))
		spec++;
	if (!*spec)
		goto out;
	if (!strchr(spec, '=')) {
		b = spec;
		e = spec + strlen(spec);
	} else {
		const char *p = spec;

		while (*p) {
			const char *slash = strchr(p, '/');
			const char *end = slash ? slash : p + strlen(p);
			const char *eq = memchr(p, '=', (size_t)(end - p));
			char opname[32] = "";
			int matched = 0;

			if (eq)
				trim_copy(p, eq, opname, sizeof(opname));
			if (eq && !strcasecmp(opname, "others")) {
				others_b = eq + 1;
				others_e = end;
				matched = 1;
			}
			for (size_t i = 0; eq && i < OHC_ARRAY_SIZE(hccl_ops);
			     i++) {
				if (strcasecmp(opname, hccl_ops[i].name))
					continue;
				matched = 1;
				if (fam != F_NONE && hccl_ops[i].fam == fam) {
					b = eq + 1;
					e = end;
				}
			}
			if (!matched)
				unknown = 1;
			p = slash ? slash + 1 : end;
		}
		if (!b) {
			b = others_b;
			e = others_e;
		}
	}
	if (!b)
		goto out;
	if (levels_pick(b, e, name, sizeof(name), &hier) < 0) {
		unknown = 1;
		goto out;
	}
	if (!name[0])
		goto out;
	if (!known_name(name)) {
		unknown = 1;
		goto out;
	}
	if (hier && op == OHC_COLL_ALLREDUCE) {
		/* an intra-server and an inter-server level: two-level */
		found = &ohc_algo_allreduce_2level;
		goto out;
	}
	for (size_t i = 0; i < OHC_ARRAY_SIZE(hccl_algos); i++) {
		if (strcasecmp(hccl_algos[i].hccl, name))
			continue;
		if (fam != F_NONE && hccl_algos[i].ours[fam])
			found = find_ours(hccl_algos[i].ours[fam], op);
		goto out;
	}
	found = find_ours(name, op);
out:
	if (unknown_p)
		*unknown_p = unknown;
	return found;
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
	return ohc_algo_slices(al, ohc_cost_params_get(a->link), bytes,
			       a->esize, a->nranks, NULL);
}

/* Candidates of a->op that accept a, cheapest first (stable). */
static unsigned rank_candidates(const struct ohc_coll_args *a, uint64_t bytes,
				struct cand *c)
{
	unsigned n = 0;

	for (size_t i = 0; i < OHC_ARRAY_SIZE(candidates); i++) {
		const struct ohc_algo *al = candidates[i];
		unsigned j;

		if (al->op != a->op || n == MAX_PER_OP || !accepts(al, a))
			continue;
		c[n].algo = al;
		c[n].us = al->cost_topo ? al->cost_topo(a, bytes)
					: selection_cost(al, bytes, a->nranks,
							 a->link);
		/* OPENHCCL_PIPELINE_SLICES: priced as it will be built */
		if (al->cost_sliced && a->pipeline_slices && a->nranks > 1) {
			const struct ohc_cost_params *cp =
				ohc_cost_params_get(a->link);
			uint32_t sl = slices_for(a, al, bytes);

			c[n].us =
				al->cost_sliced(cp, bytes, a->nranks, sl) +
				agreement_us(al, cp,
					     al->cost_sliced(&unit_alpha, bytes,
							     a->nranks, sl),
					     a->nranks);
		}
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
		ohc_sched_weave_agreement(s, a->rank, a->nranks);
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
	char tail[160], sl[32] = "";

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
	OHC_INFO(OHC_SS_ALGO,
		 "rank %u: %s of %llu bytes on %u ranks over %s: "
		 "%s%s (%s%s)",
		 a->rank, ohc_coll_op_name(a->op), (unsigned long long)bytes,
		 a->nranks, ohc_link_class_name(a->link), c[chosen].algo->name,
		 sl, tail, note ? note : "");
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
