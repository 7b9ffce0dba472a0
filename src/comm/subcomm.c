/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sub-communicators (HcclCreateSubCommConfig): a new communicator over a
 * subset of a parent's ranks, without a new rendezvous. The members first
 * agree over the parent's bootstrap (point to point, to the first listed
 * rank, the "leader"): each sends what it was asked to build, the leader
 * compares and answers everyone with one verdict. Only then the parent's
 * bootstrap is split (ohc_bootstrap_split, local) and a communicator with
 * transports and endpoints of its own is built over the sub-group, exactly
 * as a world communicator is (its own session token, hence its own shm
 * segments, abstract sockets and self mailboxes).
 *
 * Lifetime: the sub-communicator shares nothing with its parent but the
 * refcounted bootstrap endpoint, so either may be destroyed first and
 * both may run operations at the same time.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "util/config.h"
#include "util/log.h"

/* Point-to-point tags on the parent bootstrap (nobody else uses them). */
#define SPLIT_TAG_DESC 0x53504c31u    /* "SPL1": member -> leader */
#define SPLIT_TAG_VERDICT 0x53504c32u /* "SPL2": leader -> member */
#define SPLIT_TAG_LIST 0x53504c33u    /* "SPL3": member -> leader, rankIds */
#define SPLIT_MAGIC 0x6f68637370313031ull

/* What one member was asked to build (fixed size, no padding). */
struct split_desc {
	uint64_t magic;
	uint64_t id;
	uint64_t nranks;
	uint64_t list_hash;
	uint64_t algo_hash;
	int64_t deterministic;
	int64_t local_status; /* this member's own checks: OHC_OK or error */
	char name[OHC_COMM_NAME_MAX]; /* requested name, "" for the default */
};

/*
 * The leader's answer; it echoes the request of the member it goes to, so
 * a member drops an answer left over from an earlier, failed split.
 */
struct split_verdict {
	uint64_t id;
	uint64_t list_hash;
	int64_t status;
	char why[256];
};

/* Stale answers a member drops before giving up. */
#define SPLIT_STALE_MAX 64

/* Stable 64-bit mix (splitmix64). */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t hash_ranks(uint32_t nranks, const uint32_t *ranks)
{
	uint64_t h = mix64(nranks);

	for (uint32_t i = 0; i < nranks; i++)
		h = mix64(h ^ ranks[i]);
	return h;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return mix64(h);
}

/*
 * Checks that need nobody else: a list this rank cannot even address (out
 * of range, duplicates, without the caller) fails at once; the listed
 * members then time out waiting for this rank.
 */
static ohc_status_t split_check_list(const struct ohc_comm *parent,
				     uint32_t nranks, const uint32_t *ranks)
{
	ohc_status_t status = OHC_OK;
	uint8_t *seen;
	int found = 0;

	if (nranks == 0 || nranks > parent->nranks) {
		OHC_ERROR(OHC_SS_INIT,
			  "sub-communicator of '%s' (rank %u): rankNum %u is "
			  "not in [1, %u] (the parent's size)",
			  parent->name, parent->rank, nranks, parent->nranks);
		return OHC_ERR_INVALID;
	}
	seen = calloc(parent->nranks, 1);
	if (!seen)
		return OHC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < nranks && status == OHC_OK; i++) {
		if (ranks[i] >= parent->nranks) {
			OHC_ERROR(OHC_SS_INIT,
				  "sub-communicator of '%s' (rank %u): "
				  "rankIds[%u] = %u is not a rank of the "
				  "parent (size %u)",
				  parent->name, parent->rank, i, ranks[i],
				  parent->nranks);
			status = OHC_ERR_INVALID;
		} else if (seen[ranks[i]]) {
			OHC_ERROR(OHC_SS_INIT,
				  "sub-communicator of '%s' (rank %u): "
				  "rankIds[%u] = %u is listed twice",
				  parent->name, parent->rank, i, ranks[i]);
			status = OHC_ERR_INVALID;
		} else {
			seen[ranks[i]] = 1;
			found |= ranks[i] == parent->rank;
		}
	}
	free(seen);
	if (status == OHC_OK && !found) {
		OHC_ERROR(OHC_SS_INIT,
			  "sub-communicator of '%s': rank %u is not in rankIds "
			  "(a rank outside the sub-communicator passes "
			  "rankIds = NULL)",
			  parent->name, parent->rank);
		status = OHC_ERR_INVALID;
	}
	return status;
}

/* Checks whose failure the other members must hear about. */
static ohc_status_t split_check_local(const struct ohc_comm *parent,
				      const uint32_t *ranks, uint32_t index,
				      const struct ohc_comm_cfg *cfg,
				      const char *name, int nranks)
{
	if (!cfg)
		return OHC_ERR_INVALID; /* the config decoder logged it */
	if (index >= (uint32_t)nranks || ranks[index] != parent->rank) {
		OHC_ERROR(OHC_SS_INIT,
			  "sub-communicator '%s': subCommRankId %u is not the "
			  "index of the caller's parent rank %u in rankIds",
			  name, index, parent->rank);
		return OHC_ERR_INVALID;
	}
	if (ohc_comm_name_clash(name, index, parent->device)) {
		OHC_ERROR(OHC_SS_INIT,
			  "sub-communicator name '%s' is already used in this "
			  "process (choose another subCommId or "
			  "hcclCommName)",
			  name);
		return OHC_ERR_INVALID;
	}
	return OHC_OK;
}

/* The first difference between the leader's request and a member's. */
static int split_compare(const struct split_desc *mine,
			 const struct split_desc *d, uint32_t leader,
			 uint32_t member, char *why, size_t len)
{
	if (d->magic != SPLIT_MAGIC)
		snprintf(why, len, "rank %u sent a malformed request", member);
	else if (d->local_status != OHC_OK)
		snprintf(why, len,
			 "rank %u refused its own arguments (%s; see "
			 "its log)",
			 member, ohc_status_str((ohc_status_t)d->local_status));
	else if (mine->local_status != OHC_OK)
		snprintf(why, len,
			 "rank %u refused its own arguments (%s; see "
			 "its log)",
			 leader,
			 ohc_status_str((ohc_status_t)mine->local_status));
	else if (d->id != mine->id)
		snprintf(why, len,
			 "rank %u passed subCommId %" PRIu64
			 ", rank %u passed %" PRIu64,
			 member, d->id, leader, mine->id);
	else if (d->nranks != mine->nranks)
		snprintf(why, len,
			 "rank %u passed rankNum %" PRIu64
			 ", rank %u passed %" PRIu64,
			 member, d->nranks, leader, mine->nranks);
	else if (d->list_hash != mine->list_hash)
		snprintf(why, len,
			 "rank %u passed other rankIds than rank %u (same "
			 "rankNum %" PRIu64 ")",
			 member, leader, d->nranks);
	else if (strcmp(d->name, mine->name))
		snprintf(why, len,
			 "rank %u passed hcclCommName '%.100s', rank %u "
			 "passed '%.100s'",
			 member, d->name, leader, mine->name);
	else if (d->deterministic != mine->deterministic)
		snprintf(why, len,
			 "rank %u has hcclDeterministic %" PRId64
			 ", rank %u has %" PRId64,
			 member, d->deterministic, leader, mine->deterministic);
	else if (d->algo_hash != mine->algo_hash)
		snprintf(why, len, "rank %u has another hcclAlgo than rank %u",
			 member, leader);
	else
		return 0;
	return 1;
}

/*
 * The leader (ranks[0]) hears every member (request, then its rank list),
 * then answers each with the verdict. It reads every request even after
 * a mismatch, so nothing is left queued for a later split; it stops at
 * the first member that never comes (bounded by the bootstrap timeout).
 * Ranks that only a member's (different) list names believe they are in
 * too: they get the failed verdict as well, at once, rather than waiting
 * for an answer until the timeout. Their requests stay unread (a list may
 * name ranks that never call): a later split led by this rank would take
 * them for the current one and fail.
 */
static ohc_status_t split_lead(struct ohc_comm *parent, uint32_t nranks,
			       const uint32_t *ranks,
			       const struct split_desc *mine,
			       struct split_verdict *v)
{
	uint32_t np = parent->nranks, nextra = 0;
	uint64_t(*echo)[2] = calloc(np, sizeof(*echo));
	uint8_t *known = calloc(np, 1);
	uint32_t *extra = malloc(np * sizeof(*extra));
	uint32_t *list = malloc(np * sizeof(*list));
	ohc_status_t status = OHC_OK;

	if (!echo || !known || !extra || !list) {
		status = OHC_ERR_NO_MEMORY; /* the members time out */
		goto out;
	}
	for (uint32_t i = 0; i < nranks; i++) {
		known[ranks[i]] = 1;
		echo[ranks[i]][0] = mine->id;
		echo[ranks[i]][1] = mine->list_hash;
	}
	v->status = mine->local_status;
	v->why[0] = '\0';
	if (mine->local_status != OHC_OK)
		snprintf(v->why, sizeof(v->why),
			 "rank %u refused its own arguments (%s; see its log)",
			 parent->rank,
			 ohc_status_str((ohc_status_t)mine->local_status));
	for (uint32_t i = 1; i < nranks; i++) {
		struct split_desc d;
		int have_list = 0;

		status = ohc_bootstrap_recv(parent->bs, ranks[i],
					    SPLIT_TAG_DESC, &d, sizeof(d));
		if (status >= 0 && d.magic == SPLIT_MAGIC && d.nranks >= 1 &&
		    d.nranks <= np) {
			status = ohc_bootstrap_recv(parent->bs, ranks[i],
						    SPLIT_TAG_LIST, list,
						    d.nranks * sizeof(*list));
			have_list = status >= 0;
		}
		if (status < 0) {
			if (v->status == OHC_OK) {
				v->status = status;
				snprintf(v->why, sizeof(v->why),
					 "rank %u never asked for it (%s)",
					 ranks[i], ohc_status_str(status));
			}
			break;
		}
		d.name[sizeof(d.name) - 1] = '\0';
		echo[ranks[i]][0] = d.id;
		echo[ranks[i]][1] = d.list_hash;
		/* a desc whose count is out of range came without a list
		 * (split_compare refuses it below) */
		if (have_list && d.list_hash != mine->list_hash) {
			for (uint64_t k = 0; k < d.nranks; k++) {
				uint32_t x = list[k];

				if (x >= np || known[x])
					continue;
				known[x] = 1;
				echo[x][0] = d.id;
				echo[x][1] = d.list_hash;
				extra[nextra++] = x;
			}
		}
		if (v->status == OHC_OK &&
		    split_compare(mine, &d, parent->rank, ranks[i], v->why,
				  sizeof(v->why)))
			v->status = d.magic == SPLIT_MAGIC && d.local_status < 0
					    ? d.local_status
					    : OHC_ERR_INVALID;
	}
	status = (ohc_status_t)v->status;
	/* Members we did not hear get it too: they may be late. */
	for (uint32_t i = 1; i < nranks + nextra; i++) {
		uint32_t r = i < nranks ? ranks[i] : extra[i - nranks];

		v->id = echo[r][0];
		v->list_hash = echo[r][1];
		ohc_bootstrap_send(parent->bs, r, SPLIT_TAG_VERDICT, v,
				   sizeof(*v));
	}
out:
	free(echo);
	free(known);
	free(extra);
	free(list);
	return status;
}

ohc_status_t ohc_comm_split(struct ohc_comm *parent, uint32_t nranks,
			    const uint32_t *ranks, uint32_t index, uint64_t id,
			    const struct ohc_comm_cfg *cfg,
			    struct ohc_comm **sub_p)
{
	char name[OHC_COMM_NAME_MAX];
	int name_too_long = 0;
	struct ohc_bootstrap *sub_bs = NULL;
	struct ohc_comm *sub = NULL;
	struct split_desc mine;
	struct split_verdict v;
	ohc_status_t status;

	status = split_check_list(parent, nranks, ranks);
	if (status < 0)
		return status;

	if (cfg && cfg->name[0])
		snprintf(name, sizeof(name), "%s", cfg->name);
	else if (snprintf(name, sizeof(name), "%s_sub_%" PRIu64, parent->name,
			  id) >= (int)sizeof(name))
		name_too_long = 1;

	memset(&mine, 0, sizeof(mine));
	mine.magic = SPLIT_MAGIC;
	mine.id = id;
	mine.nranks = nranks;
	mine.list_hash = hash_ranks(nranks, ranks);
	if (name_too_long) {
		OHC_ERROR(OHC_SS_INIT,
			  "sub-communicator %" PRIu64 " of '%s': the default "
			  "name '<parent>_sub_<subCommId>' exceeds %d bytes; "
			  "set hcclCommName",
			  id, parent->name, OHC_COMM_NAME_MAX - 1);
		mine.local_status = OHC_ERR_INVALID;
	} else {
		mine.local_status = split_check_local(parent, ranks, index, cfg,
						      name, (int)nranks);
	}
	if (cfg) {
		mine.algo_hash = hash_str(cfg->algo);
		mine.deterministic = cfg->deterministic;
		snprintf(mine.name, sizeof(mine.name), "%s", cfg->name);
	}

	memset(&v, 0, sizeof(v));
	if (ranks[0] == parent->rank) {
		status = split_lead(parent, nranks, ranks, &mine, &v);
	} else {
		/*
		 * Wait a little longer than the leader waits for the others,
		 * to hear its verdict (which names who is missing) rather
		 * than time out first. Every bootstrap of a communicator runs
		 * with HCCL_CONNECT_TIMEOUT.
		 */
		uint64_t t_ms = (uint64_t)ohc_env()->connect_timeout_s * 1000;
		uint64_t grace = 250 + t_ms / 10;

		ohc_bootstrap_set_timeout(
			parent->bs, t_ms + (grace > 20000 ? 20000 : grace));
		status =
			ohc_bootstrap_send(parent->bs, ranks[0], SPLIT_TAG_DESC,
					   &mine, sizeof(mine));
		if (status >= 0)
			status = ohc_bootstrap_send(parent->bs, ranks[0],
						    SPLIT_TAG_LIST, ranks,
						    nranks * sizeof(*ranks));
		for (int stale = 0; status >= 0; stale++) {
			status = ohc_bootstrap_recv(parent->bs, ranks[0],
						    SPLIT_TAG_VERDICT, &v,
						    sizeof(v));
			if (status < 0 ||
			    (v.id == mine.id && v.list_hash == mine.list_hash))
				break;
			OHC_INFO(OHC_SS_INIT,
				 "rank %u: dropping an answer of rank %u to an "
				 "earlier split (subCommId %" PRIu64 ")",
				 parent->rank, ranks[0], v.id);
			if (stale == SPLIT_STALE_MAX)
				status = OHC_ERR_TIMEOUT;
		}
		ohc_bootstrap_set_timeout(parent->bs, t_ms);
		if (status < 0)
			snprintf(v.why, sizeof(v.why),
				 "no answer from rank %u (%s)", ranks[0],
				 ohc_status_str(status));
		else
			status = (ohc_status_t)v.status;
	}
	if (status < 0) {
		if (mine.local_status < 0)
			return status; /* this rank's own check logged it */
		v.why[sizeof(v.why) - 1] = '\0';
		OHC_ERROR(OHC_SS_INIT,
			  "sub-communicator '%s' of '%s' (parent rank %u, %u "
			  "ranks from %u): not created: %s",
			  name, parent->name, parent->rank, nranks, ranks[0],
			  v.why);
		return status;
	}

	/*
	 * Groups with the same id but other members (the halves of one
	 * split) must not share a context: the list goes into it too.
	 */
	status = ohc_bootstrap_split(parent->bs, nranks, ranks,
				     mix64(id) ^ mine.list_hash, &sub_bs);
	if (status < 0)
		return status;
	status = ohc_comm_create(sub_bs, cfg, name, parent->device, &sub);
	if (status < 0) {
		ohc_bootstrap_destroy(sub_bs);
		return status;
	}
	OHC_INFO(OHC_SS_INIT,
		 "sub-communicator '%s': parent '%s' rank %u is rank %u of %u",
		 sub->name, parent->name, parent->rank, sub->rank, sub->nranks);
	*sub_p = sub;
	return OHC_OK;
}
