/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HCCL_ALGO parser (args->algo_override): which algorithm a string
 * of HCCL's grammar asks for an operation. Pure, no logging: selection
 * (select.c) warns about strings it cannot use.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "algo/algo.h"
#include "util/compiler.h"

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
 * The algorithm named by a "level0:<a>;level1:<b>" list in [b, e): level1
 * (inter-server) if set, else level0, into name; empty name (or NA):
 * automatic. *hier_p: both levels name an algorithm (not NA), i.e. a
 * hierarchical algorithm is asked for. OHC_ERR_INVALID when malformed.
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
	unsigned n;
	const struct ohc_algo *const *all = ohc_algo_all(&n);

	for (unsigned i = 0; i < n; i++)
		if (all[i]->op == op && !strcasecmp(all[i]->name, name))
			return all[i];
	return NULL;
}

static int known_name(const char *name)
{
	unsigned n;
	const struct ohc_algo *const *all = ohc_algo_all(&n);

	for (size_t i = 0; i < OHC_ARRAY_SIZE(hccl_algos); i++)
		if (!strcasecmp(hccl_algos[i].hccl, name))
			return 1;
	for (unsigned i = 0; i < n; i++)
		if (!strcasecmp(all[i]->name, name))
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
