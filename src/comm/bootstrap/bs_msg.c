/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The checks of every bootstrap message a peer (or a stranger) can send,
 * apart from the frame header (bs_proto below, checked by util/frame.c):
 * pure functions, no I/O and no logging, called by the root (JOIN), the
 * ranks' gate (HELLO), a joining rank (WELCOME, REFUSE, EXPIRED, TABLE)
 * and the endpoints (ABORT). test/fuzz/bs_frames.c drives these very
 * functions with arbitrary bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap/bs_internal.h"

const struct ohc_frame_proto bs_proto = {
	.magic = BS_WIRE_MAGIC,
	.version = BS_WIRE_VERSION,
	.type_max = BS_T_MAX,
};

void bs_text_clean(const uint8_t *text, size_t len, char *buf, size_t size)
{
	size_t i;

	if (!size)
		return;
	for (i = 0; i < len && i + 1 < size && text[i]; i++)
		buf[i] = (text[i] >= 0x20 && text[i] < 0x7f) ? (char)text[i]
							     : '?';
	buf[i] = '\0';
}

ohc_status_t bs_entry_decode(const uint8_t *e, struct bs_addr *a_p,
			     const char **hostid_p)
{
	const uint8_t *hid = e + BS_WIRE_ADDR_BYTES;
	struct bs_addr a;

	if (bs_addr_decode(e, &a) != OHC_OK ||
	    !memchr(hid, '\0', OHC_HOSTID_MAX) || !hid[0])
		return OHC_ERR_INVALID;
	if (a_p)
		*a_p = a;
	if (hostid_p)
		*hostid_p = (const char *)hid;
	return OHC_OK;
}

ohc_status_t bs_join_decode(const struct ohc_frame_hdr *h, const uint8_t *pl,
			    struct bs_join *j_p)
{
	if (h->type != BS_T_JOIN || h->len != BS_JOIN_BYTES || !pl)
		return OHC_ERR_INVALID;
	j_p->token = ohc_be_get64(pl);
	j_p->nranks = ohc_be_get32(pl + 8);
	j_p->rank = ohc_be_get32(pl + 12);
	j_p->timeout_ms = ohc_be_get64(pl + 16);
	j_p->entry = pl + 24;
	return OHC_OK;
}

ohc_status_t bs_join_check(const struct bs_join *j, uint32_t nranks, char *why,
			   size_t len)
{
	if (j->nranks == 0 || j->nranks > OHC_BOOTSTRAP_MAX_RANKS)
		snprintf(why, len, "nranks %u is not in [1, %u]", j->nranks,
			 OHC_BOOTSTRAP_MAX_RANKS);
	else if (nranks && j->nranks != nranks)
		snprintf(why, len,
			 "nranks %u does not match the %u of the ranks that "
			 "joined before",
			 j->nranks, nranks);
	else if (j->rank >= j->nranks)
		snprintf(why, len, "rank %u is out of range [0, %u)", j->rank,
			 j->nranks);
	else if (bs_entry_decode(j->entry, NULL, NULL) != OHC_OK)
		snprintf(why, len, "bad listen address or host id");
	else
		return OHC_OK;
	return OHC_ERR_INVALID;
}

const char *bs_hello_check(const struct ohc_frame_hdr *h, const uint8_t *pl,
			   uint64_t token, uint32_t me, uint32_t n,
			   uint32_t *from_p)
{
	uint32_t from, to, nr;

	*from_p = BS_NO_RANK;
	if (h->type != BS_T_HELLO || h->len != BS_HELLO_BYTES || !pl)
		return "not a bootstrap hello";
	from = ohc_be_get32(pl + 8);
	to = ohc_be_get32(pl + 12);
	nr = ohc_be_get32(pl + 16);
	*from_p = from;
	if (ohc_be_get64(pl) != token)
		return "wrong session token";
	if (to != me || nr != n || from >= n || from == me)
		return "rank numbers do not fit this communicator";
	return NULL;
}

uint32_t ohc_bs_table_direct = 64;

uint32_t bs_table_parent(uint32_t n, uint32_t r)
{
	uint32_t direct = ohc_bs_table_direct ? ohc_bs_table_direct : 1;

	if (r < direct || r >= n)
		return BS_NO_RANK;
	return (r - direct) / BS_TABLE_FANOUT;
}

uint32_t bs_table_child(uint32_t n, uint32_t p, unsigned k)
{
	uint64_t c = (uint64_t)(ohc_bs_table_direct ? ohc_bs_table_direct : 1) +
		     (uint64_t)p * BS_TABLE_FANOUT + k;

	return k < BS_TABLE_FANOUT && c < n ? (uint32_t)c : BS_NO_RANK;
}

/*
 * The TABLE payload: u32 n, u32 nhosts, the nhosts distinct host ids
 * (u16 length, the bytes, no NUL), then per rank its wire address and
 * u32 host index. Ranks of one host share one copy of its id: at 4,096
 * ranks on one host 115 KiB, not the 1.1 MiB of fixed 280-byte entries.
 */
#define TABLE_RANK_BYTES (BS_WIRE_ADDR_BYTES + 4)

size_t bs_table_max_bytes(uint32_t n)
{
	return 8 + (size_t)n * (2 + OHC_HOSTID_MAX - 1 + TABLE_RANK_BYTES);
}

static uint64_t hostid_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	while (*s)
		h = (h ^ (uint8_t)*s++) * 0x100000001b3ull;
	return h;
}

ohc_status_t bs_table_encode(const uint8_t *entry0, size_t stride, uint32_t n,
			     uint8_t **pl_p, size_t *len_p)
{
	size_t slots = 16, len = 8 + (size_t)n * TABLE_RANK_BYTES;
	uint32_t *slot, *host, nhosts = 0;
	size_t *hoff; /* where host id i's record starts in pl */
	uint8_t *pl, *at;

	while (slots < 2 * (size_t)n)
		slots <<= 1;
	slot = calloc(slots, sizeof(*slot)); /* host index + 1 */
	host = malloc((size_t)(n ? n : 1) * sizeof(*host));
	hoff = malloc((size_t)(n ? n : 1) * sizeof(*hoff));
	pl = malloc(bs_table_max_bytes(n));
	if (!slot || !host || !hoff || !pl) {
		free(slot);
		free(host);
		free(hoff);
		free(pl);
		return OHC_ERR_NO_MEMORY;
	}
	/* distinct host ids, in order of first appearance */
	at = pl + 8;
	for (uint32_t r = 0; r < n; r++) {
		const char *hid = (const char *)entry0 + (size_t)r * stride +
				  BS_WIRE_ADDR_BYTES;
		size_t k = hostid_hash(hid) & (slots - 1);

		for (; slot[k]; k = (k + 1) & (slots - 1)) {
			const uint8_t *h = pl + hoff[slot[k] - 1];

			if (ohc_be_get16(h) == strlen(hid) &&
			    !memcmp(h + 2, hid, ohc_be_get16(h)))
				break;
		}
		if (!slot[k]) {
			size_t hl = strlen(hid);

			hoff[nhosts] = (size_t)(at - pl);
			slot[k] = ++nhosts;
			ohc_be_put16(at, (uint16_t)hl);
			memcpy(at + 2, hid, hl);
			at += 2 + hl;
			len += 2 + hl;
		}
		host[r] = slot[k] - 1;
	}
	ohc_be_put32(pl, n);
	ohc_be_put32(pl + 4, nhosts);
	for (uint32_t r = 0; r < n; r++, at += TABLE_RANK_BYTES) {
		memcpy(at, entry0 + (size_t)r * stride, BS_WIRE_ADDR_BYTES);
		ohc_be_put32(at + BS_WIRE_ADDR_BYTES, host[r]);
	}
	free(slot);
	free(host);
	free(hoff);
	*pl_p = pl;
	*len_p = len;
	return OHC_OK;
}

/* The host ids' start and the rank records' start, or NULL. */
static const uint8_t *table_hosts_end(const uint8_t *pl, uint64_t len,
				      uint32_t nhosts)
{
	const uint8_t *h = pl + 8, *end = pl + len;

	for (uint32_t i = 0; i < nhosts; i++) {
		uint16_t hl;

		if (end - h < 2)
			return NULL;
		hl = ohc_be_get16(h);
		if (!hl || hl >= OHC_HOSTID_MAX || end - h - 2 < hl ||
		    memchr(h + 2, '\0', hl))
			return NULL;
		h += 2 + hl;
	}
	return h;
}

ohc_status_t bs_table_check(const struct ohc_frame_hdr *h, const uint8_t *pl,
			    uint32_t n, uint32_t me, uint16_t my_port)
{
	const uint8_t *recs;
	uint32_t nhosts;
	struct bs_addr a;

	if (h->type != BS_T_TABLE || !pl || h->len < 8 ||
	    h->len > bs_table_max_bytes(n) || ohc_be_get32(pl) != n)
		return OHC_ERR_INVALID;
	nhosts = ohc_be_get32(pl + 4);
	if (nhosts > n || (n && !nhosts))
		return OHC_ERR_INVALID;
	recs = table_hosts_end(pl, h->len, nhosts);
	if (!recs ||
	    (uint64_t)(pl + h->len - recs) != (uint64_t)n * TABLE_RANK_BYTES)
		return OHC_ERR_INVALID;
	for (uint32_t r = 0; r < n; r++, recs += TABLE_RANK_BYTES) {
		if (bs_addr_decode(recs, &a) != OHC_OK ||
		    ohc_be_get32(recs + BS_WIRE_ADDR_BYTES) >= nhosts)
			return OHC_ERR_INVALID;
		if (r == me && bs_addr_port(&a) != my_port)
			return OHC_ERR_INVALID;
	}
	return OHC_OK;
}

ohc_status_t bs_table_decode(const uint8_t *pl, uint64_t len,
			     void (*fn)(void *arg, uint32_t r,
					const struct bs_addr *a,
					const char *hostid),
			     void *arg)
{
	uint32_t n = ohc_be_get32(pl), nhosts = ohc_be_get32(pl + 4);
	const uint8_t **hosts = malloc((nhosts ? nhosts : 1) * sizeof(*hosts));
	const uint8_t *h = pl + 8, *recs = table_hosts_end(pl, len, nhosts);
	char hid[OHC_HOSTID_MAX];

	if (!hosts)
		return OHC_ERR_NO_MEMORY;
	for (uint32_t i = 0; i < nhosts; i++, h += 2 + ohc_be_get16(h))
		hosts[i] = h;
	for (uint32_t r = 0; r < n; r++, recs += TABLE_RANK_BYTES) {
		const uint8_t *e =
			hosts[ohc_be_get32(recs + BS_WIRE_ADDR_BYTES)];
		struct bs_addr a;

		(void)bs_addr_decode(recs, &a);
		memcpy(hid, e + 2, ohc_be_get16(e));
		hid[ohc_be_get16(e)] = '\0';
		fn(arg, r, &a, hid);
	}
	free(hosts);
	return OHC_OK;
}

ohc_status_t bs_refuse_parse(const struct ohc_frame_hdr *h, const uint8_t *pl,
			     int32_t *status_p, char *text, size_t size)
{
	if (h->type != BS_T_REFUSE || h->len < 4 || !pl)
		return OHC_ERR_INVALID;
	*status_p = (int32_t)ohc_be_get32(pl);
	bs_text_clean(pl + 4, h->len - 4, text, size);
	return OHC_OK;
}

ohc_status_t bs_refuse_status(int32_t raw)
{
	if (raw == OHC_ERR_TCP_CONNECT || raw == OHC_ERR_NO_MEMORY)
		return raw;
	return OHC_ERR_INVALID;
}

int bs_welcome_ok(const struct ohc_frame_hdr *h, const uint8_t *pl,
		  uint64_t proof)
{
	return h->type == BS_T_WELCOME && h->len == BS_WELCOME_BYTES && pl &&
	       ohc_be_get64(pl) == proof;
}

void bs_abort_parse(const uint8_t *pl, size_t len, uint32_t n,
		    uint32_t *culprit_p, int32_t *status_p)
{
	uint32_t culprit = BS_NO_RANK;
	int32_t status = OHC_ERR_REMOTE;

	if (len == BS_ABORT_BYTES && pl) {
		culprit = ohc_be_get32(pl + 4);
		status = (int32_t)ohc_be_get32(pl + 8);
		/* a peer's word, shown in our log lines: keep it sane */
		if (culprit >= n)
			culprit = BS_NO_RANK;
		if (status >= 0)
			status = OHC_ERR_REMOTE;
	}
	*culprit_p = culprit;
	*status_p = status;
}
