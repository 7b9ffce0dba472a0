/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rank table build: size the arrays, walk the servers (ranktable_fields.c),
 * then the checks that need the whole table: server_id unique (which also
 * gives the lookup by id), rank ids exactly 0..n-1 with each server's
 * ranks one contiguous block, device_ip on every device or none, and the
 * 1.2 super_pod_list against the servers. The ranks come out sorted by
 * rank id.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ranktable_int.h"

static int rt_cmp_server(const void *a, const void *b)
{
	const struct rt_sid *x = a, *y = b;
	int r = strcmp(x->id, y->id);

	if (r)
		return r;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Index of the server named id, or RT_NONE (binary search). */
static uint32_t rt_find_server(const struct rt_ctx *c, const char *id)
{
	size_t lo = 0, hi = c->rt->nservers;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rt_sid *e = &c->server_order[mid];
		int r = strcmp(e->id, id);

		if (r == 0)
			return e->index;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return RT_NONE;
}

/* server_id must be unique; also builds the lookup order. */
static ohc_status_t rt_check_server_ids(struct rt_ctx *c)
{
	const struct ohc_rt_server *srv = c->rt->servers;
	struct rt_sid *o = c->server_order;
	uint32_t n = c->rt->nservers, dup = RT_NONE, orig = 0;
	char f[RT_FIELD_MAX], q[RT_QUOTE_MAX + 4];

	for (uint32_t i = 0; i < n; i++) {
		o[i].id = srv[i].server_id;
		o[i].index = i;
	}
	qsort(o, n, sizeof(*o), rt_cmp_server);
	/*
	 * Report the earliest repeat in file order; after the sort by (id,
	 * index) the first of each run of equal ids is the original.
	 */
	for (uint32_t i = 1, first = 0; i < n; i++) {
		if (strcmp(o[i].id, o[first].id)) {
			first = i;
			continue;
		}
		if (o[i].index < dup) {
			dup = o[i].index;
			orig = o[first].index;
		}
	}
	if (dup == RT_NONE)
		return OHC_OK;
	ohc_ranktable_path(f, "server_list[%u].server_id", dup);
	return ohc_ranktable_fail(
		c, f, "\"%s\" is also the server_id of server_list[%u]",
		ohc_ranktable_quote(q, sizeof(q), srv[dup].server_id), orig);
}

/*
 * Rank ids: each < ndevs and unique (hence exactly 0..ndevs-1), and the
 * ranks of a server one contiguous block. Fills rt->ranks sorted.
 */
static ohc_status_t rt_check_ranks(struct rt_ctx *c)
{
	struct ohc_ranktable *rt = c->rt;
	uint32_t n = c->ndevs, *owner, prev;
	ohc_status_t st = OHC_OK;
	char f[RT_FIELD_MAX];
	bool *closed;

	owner = malloc(n * sizeof(*owner));
	closed = calloc(rt->nservers, sizeof(*closed));
	if (!owner || !closed) {
		st = ohc_ranktable_fail_file(OHC_ERR_NO_MEMORY, c->path,
					     "out of memory for %u ranks", n);
		goto out_free;
	}
	for (uint32_t r = 0; r < n; r++)
		owner[r] = RT_NONE;
	for (uint32_t i = 0; i < n; i++) {
		const struct rt_dev *d = &c->devs[i];
		uint32_t r = d->r.rank_id;

		ohc_ranktable_path(f, "server_list[%u].device[%u].rank_id",
				   d->server, d->index);
		if (r >= n) {
			st = ohc_ranktable_fail(
				c, f,
				"\"%u\" is out of range: the table lists "
				"%u devices, so rank ids are 0..%u",
				r, n, n - 1);
			goto out_free;
		}
		if (owner[r] != RT_NONE) {
			st = ohc_ranktable_fail(c, f,
						"\"%u\" is also the rank_id of "
						"server_list[%u].device[%u]",
						r, c->devs[owner[r]].server,
						c->devs[owner[r]].index);
			goto out_free;
		}
		owner[r] = i;
	}
	prev = c->devs[owner[0]].server;
	for (uint32_t r = 1; r < n; r++) {
		const struct rt_dev *d = &c->devs[owner[r]];

		if (d->server == prev)
			continue;
		closed[prev] = true;
		if (closed[d->server]) {
			ohc_ranktable_path(f,
					   "server_list[%u].device[%u].rank_id",
					   d->server, d->index);
			st = ohc_ranktable_fail(
				c, f,
				"rank %u is on server_list[%u], which "
				"also holds lower ranks, but rank %u is "
				"on server_list[%u]; the ranks of one "
				"server must form one contiguous block, "
				"not interleave with another server's",
				r, d->server, r - 1, prev);
			goto out_free;
		}
		prev = d->server;
	}
	for (uint32_t r = 0; r < n; r++) {
		struct ohc_rt_server *s;

		rt->ranks[r] = c->devs[owner[r]].r;
		s = &rt->servers[rt->ranks[r].server_index];
		if (r == 0 ||
		    rt->ranks[r - 1].server_index != rt->ranks[r].server_index)
			s->first_rank = r;
		rt->ranks[r].local_index = r - s->first_rank;
	}
out_free:
	free(closed);
	free(owner);
	return st;
}

/* All devices have a device_ip or none; several servers need them. */
static ohc_status_t rt_check_device_ips(struct rt_ctx *c)
{
	const struct rt_dev *d0 = &c->devs[0];
	char f[RT_FIELD_MAX];

	for (uint32_t i = 0; i < c->ndevs; i++) {
		const struct rt_dev *d = &c->devs[i];

		ohc_ranktable_path(f, "server_list[%u].device[%u].device_ip",
				   d->server, d->index);
		if (!d->has_ip && c->rt->nservers > 1)
			return ohc_ranktable_fail(
				c, f,
				"missing; device_ip is required when "
				"there are several servers");
		if (d->has_ip != d0->has_ip)
			return ohc_ranktable_fail(
				c, f,
				"%s, but server_list[%u].device[%u] "
				"has %s; all devices must have the "
				"same number of device_ip entries",
				d->has_ip ? "present" : "missing", d0->server,
				d0->index, d0->has_ip ? "one" : "none");
	}
	return OHC_OK;
}

static const char *const rt_pod_keys[] = {"super_pod_id", "server_list", NULL};
static const char *const rt_pod_member_keys[] = {"server_id", NULL};

/* One super_pod_list entry: id unique, members known and not shared. */
static ohc_status_t rt_parse_super_pod(struct rt_ctx *c, json_t *pods,
				       uint32_t pi, uint32_t *pod_of,
				       uint32_t *slot_of)
{
	char pre[RT_FIELD_MAX], f[RT_FIELD_MAX], q[RT_QUOTE_MAX + 4];
	char id[OHC_RANKTABLE_SUPER_POD_ID_MAX + 1];
	json_t *pod = json_array_get(pods, pi), *list;
	const char *sid;

	ohc_ranktable_path(pre, "super_pod_list[%u]", pi);
	if (!json_is_object(pod))
		return ohc_ranktable_fail(c, pre, "must be an object, not %s",
					  ohc_ranktable_kind(pod));
	OHC_CHECK(ohc_ranktable_get_id(c, pod, pre, "super_pod_id",
				       OHC_RANKTABLE_SUPER_POD_ID_MAX, id));
	for (uint32_t pj = 0; pj < pi; pj++) {
		json_t *o = json_object_get(json_array_get(pods, pj),
					    "super_pod_id");

		if (strcmp(json_string_value(o), id))
			continue;
		return ohc_ranktable_fail(
			c, ohc_ranktable_field(f, pre, "super_pod_id"),
			"\"%s\" is also the super_pod_id of "
			"super_pod_list[%u]",
			ohc_ranktable_quote(q, sizeof(q), id), pj);
	}
	OHC_CHECK(ohc_ranktable_get_array(c, pod, pre, "server_list", false,
					  &list));
	ohc_ranktable_warn_unknown(c, pod, pre, rt_pod_keys);
	for (size_t k = 0; k < json_array_size(list); k++) {
		json_t *m = json_array_get(list, k);
		char mpre[RT_FIELD_MAX];
		uint32_t s;

		ohc_ranktable_path(mpre, "%s.server_list[%zu]", pre, k);
		if (!json_is_object(m))
			return ohc_ranktable_fail(c, mpre,
						  "must be an object, not %s",
						  ohc_ranktable_kind(m));
		OHC_CHECK(ohc_ranktable_get_str(c, m, mpre, "server_id", true,
						&sid));
		ohc_ranktable_warn_unknown(c, m, mpre, rt_pod_member_keys);
		ohc_ranktable_field(f, mpre, "server_id");
		s = rt_find_server(c, sid);
		if (s == RT_NONE)
			return ohc_ranktable_fail(
				c, f,
				"\"%s\" is not a server_id of the "
				"top-level server_list",
				ohc_ranktable_quote(q, sizeof(q), sid));
		if (pod_of[s] != RT_NONE)
			return ohc_ranktable_fail(
				c, f,
				"server \"%s\" is already listed in "
				"super_pod_list[%u].server_list[%u]; a "
				"server belongs to at most one super pod",
				ohc_ranktable_quote(q, sizeof(q), sid),
				pod_of[s], slot_of[s]);
		pod_of[s] = pi;
		slot_of[s] = (uint32_t)k;
		memcpy(c->rt->servers[s].super_pod_id, id, sizeof(id));
	}
	return OHC_OK;
}

/* 1.2 super_pod_list (optional); servers of a pod listed contiguously. */
static ohc_status_t rt_parse_super_pods(struct rt_ctx *c, json_t *root)
{
	uint32_t n = c->rt->nservers, *pod_of, *slot_of, prev = RT_NONE;
	ohc_status_t st = OHC_OK;
	json_t *pods;
	bool *closed;
	char f[RT_FIELD_MAX];

	if (c->version != 12 || !json_object_get(root, "super_pod_list"))
		return OHC_OK;
	OHC_CHECK(ohc_ranktable_get_array(c, root, "", "super_pod_list", true,
					  &pods));
	if (json_array_size(pods) > UINT32_MAX / 2)
		return ohc_ranktable_fail(c, "super_pod_list",
					  "too many super pods");
	pod_of = malloc(n * sizeof(*pod_of));
	slot_of = malloc(n * sizeof(*slot_of));
	closed = calloc(json_array_size(pods) + 1, sizeof(*closed));
	if (!pod_of || !slot_of || !closed) {
		st = ohc_ranktable_fail_file(OHC_ERR_NO_MEMORY, c->path,
					     "out of memory");
		goto out_free;
	}
	for (uint32_t s = 0; s < n; s++)
		pod_of[s] = RT_NONE;
	for (uint32_t pi = 0; pi < json_array_size(pods); pi++)
		OHC_CHECK_GOTO(rt_parse_super_pod(c, pods, pi, pod_of, slot_of),
			       st, out_free);
	c->rt->nsuper_pods = (uint32_t)json_array_size(pods);
	for (uint32_t s = 0; s < n; s++) {
		uint32_t p = pod_of[s];

		if (p == prev)
			continue;
		if (prev != RT_NONE)
			closed[prev] = true;
		prev = p;
		if (p == RT_NONE || !closed[p])
			continue;
		ohc_ranktable_path(
			f, "super_pod_list[%u].server_list[%u].server_id", p,
			slot_of[s]);
		st = ohc_ranktable_fail(
			c, f,
			"server_list[%u] is separated from the other "
			"servers of super pod \"%s\"; the servers of one "
			"super pod must be listed contiguously in "
			"server_list",
			s, c->rt->servers[s].super_pod_id);
		goto out_free;
	}
out_free:
	free(closed);
	free(slot_of);
	free(pod_of);
	return st;
}

ohc_status_t ohc_ranktable_build(struct rt_ctx *c, json_t *root)
{
	struct ohc_ranktable *rt = c->rt;
	json_t *servers, *srv, *devs;
	size_t ndevs = 0, i;

	OHC_CHECK(ohc_ranktable_parse_top(c, root, &servers));
	rt->version = c->version;
	rt->nservers = (uint32_t)json_array_size(servers);
	/* size the device array; structure is checked in order below */
	json_array_foreach(servers, i, srv)
	{
		devs = json_object_get(srv, "device");
		if (json_is_array(devs))
			ndevs += json_array_size(devs);
	}
	if (ndevs > UINT32_MAX / 2)
		return ohc_ranktable_fail(c, "server_list", "too many devices");
	rt->servers = calloc(rt->nservers, sizeof(*rt->servers));
	c->server_order = calloc(rt->nservers, sizeof(*c->server_order));
	c->devs = calloc(ndevs ? ndevs : 1, sizeof(*c->devs));
	if (!rt->servers || !c->server_order || !c->devs) {
		return ohc_ranktable_fail_file(
			OHC_ERR_NO_MEMORY, c->path,
			"out of memory for %u servers, %zu devices",
			rt->nservers, ndevs);
	}
	for (uint32_t si = 0; si < rt->nservers; si++)
		OHC_CHECK(ohc_ranktable_parse_server(
			c, json_array_get(servers, si), si));
	OHC_CHECK(rt_check_server_ids(c));
	rt->nranks = c->ndevs;
	rt->ranks = calloc(rt->nranks, sizeof(*rt->ranks));
	if (!rt->ranks) {
		return ohc_ranktable_fail_file(OHC_ERR_NO_MEMORY, c->path,
					       "out of memory for %u ranks",
					       rt->nranks);
	}
	OHC_CHECK(rt_check_ranks(c));
	OHC_CHECK(rt_check_device_ips(c));
	return rt_parse_super_pods(c, root);
}
