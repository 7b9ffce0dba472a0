/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bootstrap common part: the root info blob, the entry points, and the
 * collectives, built as rings of exchange steps over the endpoint ops
 * (socket or in-process), so sub-groups come for free.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap/bs_internal.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"
#include "util/time.h"

/* ---------------------------------------------------------------------- */
/* Root info: 4108 plain bytes, multi-byte fields big-endian.              */

#define RI_MAGIC 0x4f484352u /* "OHCR" */
#define RI_VERSION 1
#define RI_OFF_MAGIC 0
#define RI_OFF_VERSION 4
#define RI_OFF_FAMILY 6 /* 4 or 6 */
#define RI_OFF_PORT 8
#define RI_OFF_RESERVED 10
#define RI_OFF_SCOPE 12 /* IPv6 scope id (link-local roots) */
#define RI_OFF_TOKEN 16
#define RI_OFF_IP 24 /* NUL-terminated text */
#define RI_IP_MAX 64
#define RI_OFF_NAME (RI_OFF_IP + RI_IP_MAX) /* NUL-terminated text */
#define RI_NAME_MAX 128

_Static_assert(RI_OFF_NAME + RI_NAME_MAX <= OHC_ROOT_INFO_BYTES,
	       "root info layout exceeds HCCL_ROOT_INFO_BYTES");

/* Checks without logging; why gets the reason. */
static ohc_status_t ri_validate(const uint8_t *b, char *why, size_t len)
{
	uint16_t fam, ver;
	unsigned char tmp[sizeof(struct in6_addr)];
	const char *ip = (const char *)b + RI_OFF_IP;
	const char *name = (const char *)b + RI_OFF_NAME;

	if (ohc_be_get32(b + RI_OFF_MAGIC) != RI_MAGIC) {
		snprintf(why, len,
			 "bad magic 0x%08x (not made by HcclGetRootInfo, or "
			 "overwritten)",
			 ohc_be_get32(b + RI_OFF_MAGIC));
		return OHC_ERR_INVALID;
	}
	ver = ohc_be_get16(b + RI_OFF_VERSION);
	if (ver != RI_VERSION) {
		snprintf(why, len, "format version %u, this library reads %u",
			 ver, (unsigned)RI_VERSION);
		return OHC_ERR_INVALID;
	}
	fam = ohc_be_get16(b + RI_OFF_FAMILY);
	if (fam != 4 && fam != 6) {
		snprintf(why, len,
			 "address family code %u is neither 4 (IPv4) nor 6 "
			 "(IPv6)",
			 fam);
		return OHC_ERR_INVALID;
	}
	if (ohc_be_get16(b + RI_OFF_PORT) == 0) {
		snprintf(why, len, "root port is 0");
		return OHC_ERR_INVALID;
	}
	if (ohc_be_get16(b + RI_OFF_RESERVED) != 0) {
		snprintf(why, len, "reserved field is not zero");
		return OHC_ERR_INVALID;
	}
	if (!memchr(ip, '\0', RI_IP_MAX)) {
		snprintf(why, len,
			 "root address is not NUL-terminated (truncated or "
			 "garbled)");
		return OHC_ERR_INVALID;
	}
	if (inet_pton(fam == 4 ? AF_INET : AF_INET6, ip, tmp) != 1) {
		char clean[RI_IP_MAX];

		bs_text_clean((const uint8_t *)ip, RI_IP_MAX, clean,
			      sizeof(clean));
		snprintf(why, len, "root address '%s' is not an IPv%u address",
			 clean, fam);
		return OHC_ERR_INVALID;
	}
	if (!memchr(name, '\0', RI_NAME_MAX) || !name[0]) {
		snprintf(why, len,
			 "identifier is empty or not NUL-terminated (truncated "
			 "or garbled)");
		return OHC_ERR_INVALID;
	}
	if (ohc_be_get64(b + RI_OFF_TOKEN) == 0) {
		snprintf(why, len, "session token is 0");
		return OHC_ERR_INVALID;
	}
	return OHC_OK;
}

ohc_status_t ohc_root_info_check(const void *root_info)
{
	char why[160];
	ohc_status_t status;

	if (!root_info) {
		OHC_ERROR(OHC_SS_BOOT, "root info is NULL");
		return OHC_ERR_NULL;
	}
	status = ri_validate(root_info, why, sizeof(why));
	if (status < 0)
		OHC_ERROR(OHC_SS_BOOT, "root info: %s", why);
	return status;
}

const char *ohc_root_info_name(const void *root_info)
{
	char why[160];

	if (!root_info || ri_validate(root_info, why, sizeof(why)) < 0)
		return NULL;
	return (const char *)root_info + RI_OFF_NAME;
}

uint64_t ohc_root_info_session(const void *root_info)
{
	char why[160];

	if (!root_info || ri_validate(root_info, why, sizeof(why)) < 0)
		return 0;
	return ohc_be_get64((const uint8_t *)root_info + RI_OFF_TOKEN);
}

ohc_status_t bs_root_info_addr(const void *root_info, struct bs_addr *a_p)
{
	const uint8_t *b = root_info;
	ohc_status_t status;

	status = bs_addr_from_ip((const char *)b + RI_OFF_IP,
				 ohc_be_get16(b + RI_OFF_PORT), a_p);
	if (status < 0)
		return status;
	if (bs_addr_family(a_p) == AF_INET6)
		a_p->u.in6.sin6_scope_id = ohc_be_get32(b + RI_OFF_SCOPE);
	return OHC_OK;
}

ohc_status_t ohc_root_info_create(void *root_info)
{
	uint8_t *b = root_info;
	struct bs_addr addr, bound;
	struct bs_ports ports;
	struct bs_auth auth;
	char ip[RI_IP_MAX];
	uint64_t token, id;
	ohc_status_t status;

	if (!root_info) {
		OHC_ERROR(OHC_SS_BOOT, "root info buffer is NULL");
		return OHC_ERR_NULL;
	}
	ohc_root_listeners_reap();
	status = bs_local_addr(&addr);
	if (status < 0)
		return status;
	status = bs_ports_for_root(&ports);
	if (status < 0)
		return status;
	status = bs_random64(&token);
	if (status < 0)
		return status;
	status = bs_auth_init(token, &auth);
	if (status < 0)
		return status;
	status = bs_root_start(&addr, &ports, &auth, 0,
			       (uint64_t)ohc_env()->connect_timeout_s * 1000,
			       &bound, &id);
	memset(&auth, 0, sizeof(auth));
	if (status < 0)
		return status;

	memset(b, 0, OHC_ROOT_INFO_BYTES);
	ohc_be_put32(b + RI_OFF_MAGIC, RI_MAGIC);
	ohc_be_put16(b + RI_OFF_VERSION, RI_VERSION);
	ohc_be_put16(b + RI_OFF_FAMILY,
		     bs_addr_family(&bound) == AF_INET6 ? 6 : 4);
	ohc_be_put16(b + RI_OFF_PORT, bs_addr_port(&bound));
	if (bs_addr_family(&bound) == AF_INET6)
		ohc_be_put32(b + RI_OFF_SCOPE, bound.u.in6.sin6_scope_id);
	ohc_be_put64(b + RI_OFF_TOKEN, token);
	bs_addr_ip_str(&bound, ip, sizeof(ip));
	memcpy(b + RI_OFF_IP, ip, strlen(ip) + 1);
	/* The name shows an id derived from the token, never the token. */
	snprintf((char *)b + RI_OFF_NAME, RI_NAME_MAX, "%s_%u_%016" PRIx64, ip,
		 bs_addr_port(&bound), bs_auth_public_id(token));
	OHC_INFO(OHC_SS_BOOT, "root info %s created",
		 (const char *)b + RI_OFF_NAME);
	return OHC_OK;
}

/* ---------------------------------------------------------------------- */
/* Handles                                                                */

static void ep_put(struct bs_ep *ep)
{
	if (__atomic_sub_fetch(&ep->refs, 1, __ATOMIC_ACQ_REL) == 0)
		ep->ops->release(ep);
}

ohc_status_t bs_handle_new(struct bs_ep *ep, uint64_t timeout_ms,
			   struct ohc_bootstrap **bs_p)
{
	struct ohc_bootstrap *bs = calloc(1, sizeof(*bs));

	if (!bs) {
		ep_put(ep);
		return OHC_ERR_NO_MEMORY;
	}
	bs->ep = ep;
	bs->rank = ep->rank;
	bs->nranks = ep->nranks;
	bs->timeout_ms = timeout_ms;
	*bs_p = bs;
	return OHC_OK;
}

static uint64_t default_timeout_ms(uint64_t timeout_ms)
{
	return timeout_ms ? timeout_ms
			  : (uint64_t)ohc_env()->connect_timeout_s * 1000;
}

static ohc_status_t check_ranks(uint32_t nranks, uint32_t rank,
				struct ohc_bootstrap **bs_p)
{
	if (!bs_p) {
		OHC_ERROR(OHC_SS_BOOT, "bootstrap output pointer is NULL");
		return OHC_ERR_NULL;
	}
	if (nranks == 0 || nranks > OHC_BOOTSTRAP_MAX_RANKS || rank >= nranks) {
		OHC_ERROR(OHC_SS_BOOT,
			  "bootstrap: rank %u / nranks %u out of range (nranks "
			  "in [1, %u], rank below nranks)",
			  rank, nranks, OHC_BOOTSTRAP_MAX_RANKS);
		return OHC_ERR_INVALID;
	}
	return OHC_OK;
}

ohc_status_t ohc_bootstrap_init_root(const void *root_info, uint32_t nranks,
				     uint32_t rank, uint64_t timeout_ms,
				     struct ohc_bootstrap **bs_p)
{
	struct bs_addr root;
	struct bs_auth auth;
	struct bs_ep *ep;
	ohc_status_t status;

	OHC_CHECK(check_ranks(nranks, rank, bs_p));
	OHC_CHECK(ohc_root_info_check(root_info));
	timeout_ms = default_timeout_ms(timeout_ms);
	ohc_root_listeners_reap();
	if (bs_root_info_addr(root_info, &root) != OHC_OK) {
		OHC_ERROR(OHC_SS_BOOT, "root info: unusable root address");
		return OHC_ERR_INVALID;
	}
	status = bs_auth_init(ohc_root_info_session(root_info), &auth);
	if (status < 0)
		return status;
	status = bs_sock_join(&root, 1, &auth, nranks, rank, timeout_ms, &ep);
	memset(&auth, 0, sizeof(auth));
	if (status < 0)
		return status;
	return bs_handle_new(ep, timeout_ms, bs_p);
}

ohc_status_t ohc_bootstrap_init_addr(const char *root_ip, uint16_t root_port,
				     unsigned nports, uint64_t token,
				     uint32_t nranks, uint32_t rank,
				     uint64_t timeout_ms,
				     struct ohc_bootstrap **bs_p)
{
	struct bs_addr root, targets[OHC_BOOTSTRAP_PORTS_MAX];
	struct bs_ep *ep;
	struct bs_auth auth;
	uint64_t root_id = 0;
	unsigned ntargets;
	ohc_status_t status;

	OHC_CHECK(check_ranks(nranks, rank, bs_p));
	if (!root_ip) {
		OHC_ERROR(OHC_SS_BOOT, "bootstrap root address is NULL");
		return OHC_ERR_NULL;
	}
	if (root_port == 0 || nports == 0 || nports > OHC_BOOTSTRAP_PORTS_MAX ||
	    root_port + (nports - 1u) > 65535u ||
	    bs_addr_from_ip(root_ip, root_port, &root) < 0) {
		OHC_ERROR(OHC_SS_BOOT,
			  "bootstrap root '%s' port %u (%u ports) is not an IP "
			  "address and a non-zero port range",
			  root_ip, root_port, nports);
		return OHC_ERR_INVALID;
	}
	/* One rank needs nobody: no listener, no port. */
	if (nranks == 1)
		return ohc_bootstrap_inproc_create(1, bs_p);
	timeout_ms = default_timeout_ms(timeout_ms);
	ohc_root_listeners_reap();
	status = bs_auth_init(token, &auth);
	if (status < 0)
		return status;
	for (ntargets = 0; ntargets < nports; ntargets++) {
		targets[ntargets] = root;
		bs_addr_set_port(&targets[ntargets],
				 (uint16_t)(root_port + ntargets));
	}
	if (rank == 0) {
		struct bs_addr bind = root, bound;
		struct bs_ports ports = {
			.n = 1,
			.lo = {root_port},
			.hi = {(uint16_t)(root_port + nports - 1)}};
		char where[BS_ADDR_STRLEN];

		snprintf(ports.desc, sizeof(ports.desc), "%u-%u", root_port,
			 root_port + nports - 1);
		if (!bs_addr_is_local(&root)) {
			OHC_WARN(OHC_SS_BOOT,
				 "rank 0: the root address %s is not an "
				 "address of this host; the bootstrap root "
				 "listens on every interface",
				 root_ip);
			bs_addr_make_any(&bind);
		}
		status = bs_root_start(&bind, &ports, &auth, nranks, timeout_ms,
				       &bound, &root_id);
		if (status < 0)
			goto out;
		if (bs_addr_port(&bound) != root_port)
			OHC_WARN(OHC_SS_BOOT,
				 "rank 0: port %u is taken; the bootstrap "
				 "root listens on %s (the other ranks try the "
				 "ports in turn)",
				 root_port,
				 bs_addr_str(&bound, where, sizeof(where)));
		/* Rank 0 joins where it listens. */
		targets[0] = bound;
		if (bs_addr_is_any(&targets[0]))
			bs_addr_make_loopback(&targets[0]);
		ntargets = 1;
	}
	status = bs_sock_join(targets, ntargets, &auth, nranks, rank,
			      timeout_ms, &ep);
	if (status < 0) {
		if (root_id)
			bs_root_cancel(root_id);
		goto out;
	}
	status = bs_handle_new(ep, timeout_ms, bs_p);
out:
	memset(&auth, 0, sizeof(auth));
	return status;
}

uint32_t ohc_bootstrap_rank(const struct ohc_bootstrap *bs)
{
	return bs->rank;
}

uint32_t ohc_bootstrap_nranks(const struct ohc_bootstrap *bs)
{
	return bs->nranks;
}

static uint32_t ep_rank(const struct ohc_bootstrap *bs, uint32_t r)
{
	return bs->map ? bs->map[r] : r;
}

const char *ohc_bootstrap_hostid(const struct ohc_bootstrap *bs, uint32_t rank)
{
	if (!bs || rank >= bs->nranks)
		return NULL;
	return bs->ep->ops->hostid(bs->ep, ep_rank(bs, rank));
}

void ohc_bootstrap_set_timeout(struct ohc_bootstrap *bs, uint64_t timeout_ms)
{
	if (bs)
		bs->timeout_ms = timeout_ms;
}

void ohc_bootstrap_abort(struct ohc_bootstrap *bs)
{
	if (bs)
		bs->ep->ops->abort(bs->ep);
}

void ohc_bootstrap_destroy(struct ohc_bootstrap *bs)
{
	if (!bs)
		return;
	ep_put(bs->ep);
	free(bs->map);
	free(bs);
	ohc_root_listeners_reap();
}

/* Stable 64-bit mix (splitmix64). */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

ohc_status_t ohc_bootstrap_split(struct ohc_bootstrap *parent, uint32_t nranks,
				 const uint32_t *ranks, uint64_t id,
				 struct ohc_bootstrap **sub_p)
{
	struct ohc_bootstrap *sub;
	uint32_t me = BS_NO_RANK;
	uint8_t *seen;

	if (!parent || !ranks || !sub_p) {
		OHC_ERROR(OHC_SS_BOOT, "bootstrap split: %s is NULL",
			  !parent  ? "parent"
			  : !ranks ? "ranks"
				   : "sub_p");
		return OHC_ERR_NULL;
	}
	if (nranks == 0 || nranks > parent->nranks) {
		OHC_ERROR(OHC_SS_BOOT,
			  "bootstrap split: rank %u: %u ranks requested of a "
			  "group of %u",
			  parent->rank, nranks, parent->nranks);
		return OHC_ERR_INVALID;
	}
	seen = calloc(parent->nranks, 1);
	if (!seen)
		return OHC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < nranks; i++) {
		if (ranks[i] >= parent->nranks || seen[ranks[i]]) {
			OHC_ERROR(OHC_SS_BOOT,
				  "bootstrap split: rank %u: ranks[%u] = %u is "
				  "%s",
				  parent->rank, i, ranks[i],
				  ranks[i] >= parent->nranks ? "out of range"
							     : "listed twice");
			free(seen);
			return OHC_ERR_INVALID;
		}
		seen[ranks[i]] = 1;
		if (ranks[i] == parent->rank)
			me = i;
	}
	free(seen);
	if (me == BS_NO_RANK) {
		OHC_ERROR(OHC_SS_BOOT,
			  "bootstrap split: rank %u is not in the sub-group",
			  parent->rank);
		return OHC_ERR_INVALID;
	}
	sub = calloc(1, sizeof(*sub));
	if (sub)
		sub->map = malloc(nranks * sizeof(*sub->map));
	if (!sub || !sub->map) {
		free(sub);
		return OHC_ERR_NO_MEMORY;
	}
	for (uint32_t i = 0; i < nranks; i++)
		sub->map[i] = ep_rank(parent, ranks[i]);
	sub->rank = me;
	sub->nranks = nranks;
	sub->ctx = mix64(parent->ctx ^ mix64(id));
	if (sub->ctx == 0)
		sub->ctx = 1;
	sub->timeout_ms = parent->timeout_ms;
	sub->ep = parent->ep;
	__atomic_add_fetch(&sub->ep->refs, 1, __ATOMIC_ACQ_REL);
	*sub_p = sub;
	return OHC_OK;
}

/* ---------------------------------------------------------------------- */
/* Collectives                                                            */

#define BCAST_CHUNK ((size_t)1 << 20)

enum coll_kind { COLL_ALLGATHER = 1, COLL_BARRIER = 2, COLL_BCAST = 3 };

/* Collective tags: sequence number, kind, step; ranks that disagree on
 * the kind never match each other's messages. */
static uint64_t coll_tag(uint64_t seq, enum coll_kind kind, uint64_t step)
{
	return (seq << 32) | ((uint64_t)kind << 24) | (step & 0xffffffu);
}

static uint64_t op_deadline(const struct ohc_bootstrap *bs)
{
	return ohc_deadline_after_ms(bs->timeout_ms);
}

/* A failed collective leaves the ring out of step: poison the endpoint. */
static ohc_status_t coll_failed(struct ohc_bootstrap *bs, ohc_status_t status,
				uint32_t culprit)
{
	if (status != OHC_ERR_CANCELED)
		bs->ep->ops->fail(bs->ep, status, culprit);
	return status;
}

/* Abort and poison check for operations with nothing to exchange. */
static ohc_status_t ep_state(struct ohc_bootstrap *bs, const char *what)
{
	struct bs_xfer x = {.type = BS_T_COLL,
			    .send_to = BS_NO_RANK,
			    .recv_from = BS_NO_RANK,
			    .what = what,
			    .culprit = BS_NO_RANK};

	return bs->ep->ops->xfer(bs->ep, bs->ctx, &x, op_deadline(bs));
}

/*
 * One exchange step of a collective: send to one peer, receive from
 * another, progressed together.
 */
static ohc_status_t coll_step(struct ohc_bootstrap *bs, uint64_t tag,
			      uint32_t to, const void *sbuf, uint32_t from,
			      void *rbuf, size_t len, const char *what,
			      uint64_t deadline)
{
	struct bs_xfer x = {
		.type = BS_T_COLL,
		.send_tag = tag,
		.recv_tag = tag,
		.send_to = ep_rank(bs, to),
		.send_buf = len ? sbuf : NULL,
		.send_len = len,
		.recv_from = ep_rank(bs, from),
		.recv_buf = len ? rbuf : NULL,
		.recv_len = len,
		.what = what,
		.culprit = BS_NO_RANK,
	};
	ohc_status_t status = bs->ep->ops->xfer(bs->ep, bs->ctx, &x, deadline);

	return status < 0 ? coll_failed(bs, status, x.culprit) : OHC_OK;
}

/* The ring: n-1 steps of one record each. For records too large to
 * gather whole in one buffer. */
static ohc_status_t ring_gather(struct ohc_bootstrap *bs, uint8_t *buf,
				size_t bytes, uint64_t seq, enum coll_kind kind,
				const char *what, uint64_t deadline)
{
	uint32_t n = bs->nranks, r = bs->rank;

	for (uint32_t s = 0; s + 1 < n; s++) {
		uint32_t sslot = (r + n - s) % n,
			 rslot = (r + 2 * n - s - 1) % n;
		ohc_status_t status = coll_step(
			bs, coll_tag(seq, kind, s), (r + 1) % n,
			buf + (size_t)sslot * bytes, (r + n - 1) % n,
			buf + (size_t)rslot * bytes, bytes, what, deadline);

		if (status < 0)
			return status;
	}
	return OHC_OK;
}

/*
 * Bruck's allgather: ceil(log2 n) steps. After step k a rank holds the
 * records of itself and the 2^(k+1)-1 ranks after it, in that order, in
 * tmp; it sends what it holds (at most the n-2^k still missing at its
 * peer) to the rank 2^k before it and appends what the rank 2^k after
 * it sends. With no records (bytes 0) it is the dissemination barrier.
 * Rank r's peers are r +- 2^k: O(log n) connections per rank, opened on
 * first use, and no rank waits for a chain of n-1 others.
 */
static ohc_status_t bruck_gather(struct ohc_bootstrap *bs, uint8_t *buf,
				 uint8_t *tmp, size_t bytes, uint64_t seq,
				 enum coll_kind kind, const char *what,
				 uint64_t deadline)
{
	uint32_t n = bs->nranks, r = bs->rank;
	uint64_t step = 0;

	if (bytes)
		memcpy(tmp, buf + (size_t)r * bytes, bytes);
	for (uint32_t dist = 1; dist < n; dist <<= 1, step++) {
		size_t len = (size_t)OHC_MIN(dist, n - dist) * bytes;
		ohc_status_t status =
			coll_step(bs, coll_tag(seq, kind, step),
				  (r + n - dist) % n, tmp, (r + dist) % n,
				  bytes ? tmp + (size_t)dist * bytes : NULL,
				  len, what, deadline);

		if (status < 0)
			return status;
		if (dist > n / 2)
			break; /* dist << 1 would overflow for n > 2^31 */
	}
	for (uint32_t i = 1; bytes && i < n; i++)
		memcpy(buf + (size_t)((r + i) % n) * bytes,
		       tmp + (size_t)i * bytes, bytes);
	return OHC_OK;
}

/* Above this many bytes in all, an allgather goes round the ring (a
 * variable: tests lower it to run the ring). */
size_t ohc_bs_bruck_max_bytes = (size_t)64 << 20;

static ohc_status_t gather(struct ohc_bootstrap *bs, uint8_t *buf, size_t bytes,
			   enum coll_kind kind, const char *what)
{
	uint32_t n = bs->nranks;
	uint64_t seq = bs->seq++, deadline;
	uint8_t *tmp = NULL;
	ohc_status_t status;

	if (n == 1)
		return ep_state(bs, what);
	deadline = op_deadline(bs);
	if (bytes && bytes <= ohc_bs_bruck_max_bytes / n)
		tmp = malloc((size_t)n * bytes);
	if (bytes && !tmp)
		return ring_gather(bs, buf, bytes, seq, kind, what, deadline);
	status = bruck_gather(bs, buf, tmp, bytes, seq, kind, what, deadline);
	free(tmp);
	return status;
}

ohc_status_t ohc_bootstrap_allgather(struct ohc_bootstrap *bs, void *buf,
				     size_t bytes_per_rank)
{
	if (!bs || (!buf && bytes_per_rank)) {
		OHC_ERROR(OHC_SS_BOOT, "bootstrap allgather: %s is NULL",
			  !bs ? "bootstrap" : "buffer");
		return OHC_ERR_NULL;
	}
	if (bytes_per_rank > OHC_BOOTSTRAP_MAX_MSG) {
		OHC_ERROR(OHC_SS_BOOT,
			  "bootstrap allgather: rank %u: %zu bytes per rank is "
			  "above the limit of %zu",
			  bs->rank, bytes_per_rank, OHC_BOOTSTRAP_MAX_MSG);
		return OHC_ERR_INVALID;
	}
	return gather(bs, buf, bytes_per_rank, COLL_ALLGATHER, "allgather");
}

ohc_status_t ohc_bootstrap_barrier(struct ohc_bootstrap *bs)
{
	if (!bs) {
		OHC_ERROR(OHC_SS_BOOT, "bootstrap barrier: bootstrap is NULL");
		return OHC_ERR_NULL;
	}
	return gather(bs, NULL, 0, COLL_BARRIER, "barrier");
}

ohc_status_t ohc_bootstrap_bcast(struct ohc_bootstrap *bs, void *buf,
				 size_t bytes, uint32_t root)
{
	uint32_t n, me, next;
	uint64_t seq, deadline, nchunks;
	uint8_t *b = buf;
	int forward;

	if (!bs || (!buf && bytes)) {
		OHC_ERROR(OHC_SS_BOOT, "bootstrap bcast: %s is NULL",
			  !bs ? "bootstrap" : "buffer");
		return OHC_ERR_NULL;
	}
	if (root >= bs->nranks) {
		OHC_ERROR(OHC_SS_BOOT,
			  "bootstrap bcast: rank %u: root %u is not below "
			  "nranks %u",
			  bs->rank, root, bs->nranks);
		return OHC_ERR_INVALID;
	}
	n = bs->nranks;
	me = bs->rank;
	seq = bs->seq++;
	if (n == 1)
		return ep_state(bs, "bcast");
	deadline = op_deadline(bs);
	next = (me + 1) % n;
	forward = next != root;
	nchunks = bytes ? (bytes + BCAST_CHUNK - 1) / BCAST_CHUNK : 1;
	/* A pipelined ring: step c receives chunk c and forwards chunk c-1. */
	for (uint64_t c = 0; c <= nchunks; c++) {
		struct bs_xfer x = {.type = BS_T_COLL,
				    .send_to = BS_NO_RANK,
				    .recv_from = BS_NO_RANK,
				    .what = "bcast",
				    .culprit = BS_NO_RANK};
		ohc_status_t status;

		if (me == root ? c < nchunks : (forward && c > 0)) {
			uint64_t sc = me == root ? c : c - 1;
			size_t off = (size_t)sc * BCAST_CHUNK;

			x.send_to = ep_rank(bs, next);
			x.send_tag = coll_tag(seq, COLL_BCAST, sc);
			x.send_buf = bytes ? b + off : NULL;
			x.send_len =
				bytes ? OHC_MIN(BCAST_CHUNK, bytes - off) : 0;
		}
		if (me != root && c < nchunks) {
			size_t off = (size_t)c * BCAST_CHUNK;

			x.recv_from = ep_rank(bs, (me + n - 1) % n);
			x.recv_tag = coll_tag(seq, COLL_BCAST, c);
			x.recv_buf = bytes ? b + off : NULL;
			x.recv_len =
				bytes ? OHC_MIN(BCAST_CHUNK, bytes - off) : 0;
		}
		if (x.send_to == BS_NO_RANK && x.recv_from == BS_NO_RANK)
			continue;
		status = bs->ep->ops->xfer(bs->ep, bs->ctx, &x, deadline);
		if (status < 0)
			return coll_failed(bs, status, x.culprit);
	}
	return OHC_OK;
}

/* ---------------------------------------------------------------------- */
/* Point to point                                                         */

static ohc_status_t p2p_check(struct ohc_bootstrap *bs, uint32_t peer,
			      const void *buf, size_t bytes, const char *what)
{
	if (!bs || (!buf && bytes)) {
		OHC_ERROR(OHC_SS_BOOT, "bootstrap %s: %s is NULL", what,
			  !bs ? "bootstrap" : "buffer");
		return OHC_ERR_NULL;
	}
	if (peer >= bs->nranks) {
		OHC_ERROR(OHC_SS_BOOT,
			  "bootstrap %s: rank %u: peer %u is not below nranks "
			  "%u",
			  what, bs->rank, peer, bs->nranks);
		return OHC_ERR_INVALID;
	}
	if (bytes > OHC_BOOTSTRAP_MAX_MSG) {
		OHC_ERROR(OHC_SS_BOOT,
			  "bootstrap %s: rank %u: %zu bytes is above the limit "
			  "of %zu",
			  what, bs->rank, bytes, OHC_BOOTSTRAP_MAX_MSG);
		return OHC_ERR_INVALID;
	}
	return OHC_OK;
}

ohc_status_t ohc_bootstrap_send(struct ohc_bootstrap *bs, uint32_t peer,
				uint32_t tag, const void *buf, size_t bytes)
{
	struct bs_xfer x = {.type = BS_T_DATA,
			    .send_tag = tag,
			    .send_len = bytes,
			    .recv_from = BS_NO_RANK,
			    .what = "send",
			    .culprit = BS_NO_RANK};

	OHC_CHECK(p2p_check(bs, peer, buf, bytes, "send"));
	x.send_to = ep_rank(bs, peer);
	x.send_buf = buf;
	return bs->ep->ops->xfer(bs->ep, bs->ctx, &x, op_deadline(bs));
}

ohc_status_t ohc_bootstrap_recv(struct ohc_bootstrap *bs, uint32_t peer,
				uint32_t tag, void *buf, size_t bytes)
{
	struct bs_xfer x = {.type = BS_T_DATA,
			    .recv_tag = tag,
			    .send_to = BS_NO_RANK,
			    .recv_len = bytes,
			    .what = "recv",
			    .culprit = BS_NO_RANK};

	OHC_CHECK(p2p_check(bs, peer, buf, bytes, "recv"));
	x.recv_from = ep_rank(bs, peer);
	x.recv_buf = buf;
	return bs->ep->ops->xfer(bs->ep, bs->ctx, &x, op_deadline(bs));
}
