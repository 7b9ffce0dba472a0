/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bootstrap's checks of what a peer sends (bs_msg.c), case by case:
 * JOIN, HELLO, TABLE, REFUSE, WELCOME, ABORT. test/fuzz/bs_frames.c
 * drives the same functions with arbitrary bytes; here each rule is
 * pinned with a frame that just passes and one that just fails.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bootstrap/bs_internal.h"

static void entry(uint8_t *e, uint16_t port, const char *hostid)
{
	struct bs_addr a;

	memset(e, 0, BS_ENTRY_BYTES);
	cr_assert_eq(bs_addr_from_ip("10.0.0.7", port, &a), OHC_OK);
	bs_addr_encode(&a, e);
	memcpy(e + BS_WIRE_ADDR_BYTES, hostid, strlen(hostid));
}

static void join(uint8_t *pl, uint32_t nranks, uint32_t rank)
{
	ohc_be_put64(pl, 77);
	ohc_be_put32(pl + 8, nranks);
	ohc_be_put32(pl + 12, rank);
	ohc_be_put64(pl + 16, 1000);
	entry(pl + 24, 4000, "host-a");
}

Test(bs_msg, join)
{
	struct ohc_frame_hdr h = {.type = BS_T_JOIN, .len = BS_JOIN_BYTES};
	uint8_t pl[BS_JOIN_BYTES];
	struct bs_join j;
	char why[BS_TEXT_MAX];

	join(pl, 4, 3);
	cr_assert_eq(bs_join_decode(&h, pl, &j), OHC_OK);
	cr_expect_eq(j.token, 77);
	cr_expect_eq(j.timeout_ms, 1000);
	cr_expect_eq(bs_join_check(&j, 0, why, sizeof(why)), OHC_OK);
	cr_expect_eq(bs_join_check(&j, 4, why, sizeof(why)), OHC_OK);
	cr_expect_eq(bs_join_check(&j, 5, why, sizeof(why)), OHC_ERR_INVALID);
	cr_expect(strstr(why, "does not match"), "%s", why);
	join(pl, 4, 4);
	cr_assert_eq(bs_join_decode(&h, pl, &j), OHC_OK);
	cr_expect_eq(bs_join_check(&j, 0, why, sizeof(why)), OHC_ERR_INVALID);
	cr_expect(strstr(why, "out of range"), "%s", why);
	join(pl, OHC_BOOTSTRAP_MAX_RANKS + 1, 0);
	cr_assert_eq(bs_join_decode(&h, pl, &j), OHC_OK);
	cr_expect_eq(bs_join_check(&j, 0, why, sizeof(why)), OHC_ERR_INVALID);
	join(pl, 4, 1);
	pl[24 + BS_WIRE_ADDR_BYTES] = '\0'; /* empty host id */
	cr_assert_eq(bs_join_decode(&h, pl, &j), OHC_OK);
	cr_expect_eq(bs_join_check(&j, 0, why, sizeof(why)), OHC_ERR_INVALID);
	cr_expect(strstr(why, "host id"), "%s", why);
	h.len--;
	cr_expect_eq(bs_join_decode(&h, pl, &j), OHC_ERR_INVALID);
	h.len++;
	h.type = BS_T_HELLO;
	cr_expect_eq(bs_join_decode(&h, pl, &j), OHC_ERR_INVALID);
}

Test(bs_msg, hello)
{
	struct ohc_frame_hdr h = {.type = BS_T_HELLO, .len = BS_HELLO_BYTES};
	uint8_t pl[BS_HELLO_BYTES] = {0};
	uint32_t from;

	ohc_be_put64(pl, 9);
	ohc_be_put32(pl + 8, 2);  /* from */
	ohc_be_put32(pl + 12, 1); /* to */
	ohc_be_put32(pl + 16, 4); /* nranks */
	cr_expect_null(bs_hello_check(&h, pl, 9, 1, 4, &from));
	cr_expect_eq(from, 2);
	cr_expect_str_eq(bs_hello_check(&h, pl, 8, 1, 4, &from),
			 "wrong session token");
	cr_expect_eq(from, 2);
	cr_expect_not_null(bs_hello_check(&h, pl, 9, 2, 4, &from));
	cr_expect_not_null(bs_hello_check(&h, pl, 9, 1, 3, &from));
	ohc_be_put32(pl + 8, 1); /* from itself */
	cr_expect_not_null(bs_hello_check(&h, pl, 9, 1, 4, &from));
	h.len = BS_HELLO_BYTES + 1;
	cr_expect_str_eq(bs_hello_check(&h, pl, 9, 1, 4, &from),
			 "not a bootstrap hello");
	cr_expect_eq(from, BS_NO_RANK);
}

struct decoded {
	uint16_t port[4];
	char hostid[4][OHC_HOSTID_MAX];
	uint32_t calls;
};

static void collect(void *arg, uint32_t r, const struct bs_addr *a,
		    const char *hostid)
{
	struct decoded *d = arg;

	cr_assert_eq(r, d->calls++);
	d->port[r] = bs_addr_port(a);
	snprintf(d->hostid[r], sizeof(d->hostid[r]), "%s", hostid);
}

/* Four ranks' JOIN entries on two hosts: a table with each host id once,
 * every rank's address and host id back out of it. */
Test(bs_msg, table)
{
	uint32_t n = 4;
	uint8_t ents[4][BS_ENTRY_BYTES], *pl = NULL;
	const char *hosts[4] = {"node-b", "node-a", "node-b", "node-a"};
	struct decoded d = {0};
	struct ohc_frame_hdr h = {.type = BS_T_TABLE};
	size_t len = 0;

	for (uint32_t r = 0; r < n; r++)
		entry(ents[r], (uint16_t)(5000 + r), hosts[r]);
	cr_assert_eq(bs_table_encode(ents[0], sizeof(ents[0]), n, &pl, &len),
		     OHC_OK);
	/* n, nhosts, two host ids, four addresses with their host index */
	cr_expect_eq(len, 8 + 2 * (2 + 6) + 4 * (BS_WIRE_ADDR_BYTES + 4));
	cr_expect_leq(len, bs_table_max_bytes(n));
	cr_expect_eq(ohc_be_get32(pl + 4), 2);
	h.len = len;
	cr_expect_eq(bs_table_check(&h, pl, n, 1, 5001), OHC_OK);
	cr_assert_eq(bs_table_decode(pl, len, collect, &d), OHC_OK);
	cr_expect_eq(d.calls, n);
	for (uint32_t r = 0; r < n; r++) {
		cr_expect_eq(d.port[r], 5000 + r);
		cr_expect_str_eq(d.hostid[r], hosts[r]);
	}
	/* our own entry must carry our listener's port */
	cr_expect_eq(bs_table_check(&h, pl, n, 1, 5000), OHC_ERR_INVALID);
	/* count, length */
	cr_expect_eq(bs_table_check(&h, pl, n + 1, 1, 5001), OHC_ERR_INVALID);
	h.len = len - 1;
	cr_expect_eq(bs_table_check(&h, pl, n, 1, 5001), OHC_ERR_INVALID);
	h.len = len;
	/* more hosts than ranks, none, a host index past them */
	ohc_be_put32(pl + 4, n + 1);
	cr_expect_eq(bs_table_check(&h, pl, n, 1, 5001), OHC_ERR_INVALID);
	ohc_be_put32(pl + 4, 0);
	cr_expect_eq(bs_table_check(&h, pl, n, 1, 5001), OHC_ERR_INVALID);
	ohc_be_put32(pl + 4, 2);
	ohc_be_put32(pl + len - 4, 2);
	cr_expect_eq(bs_table_check(&h, pl, n, 1, 5001), OHC_ERR_INVALID);
	ohc_be_put32(pl + len - 4, 1);
	cr_expect_eq(bs_table_check(&h, pl, n, 1, 5001), OHC_OK);
	/* a host id with a NUL in it, an empty one */
	pl[8 + 2 + 3] = 0;
	cr_expect_eq(bs_table_check(&h, pl, n, 1, 5001), OHC_ERR_INVALID);
	pl[8 + 2 + 3] = 'e';
	ohc_be_put16(pl + 8, 0);
	cr_expect_eq(bs_table_check(&h, pl, n, 1, 5001), OHC_ERR_INVALID);
	free(pl);
}

Test(bs_msg, refuse_welcome)
{
	struct ohc_frame_hdr h = {.type = BS_T_REFUSE, .len = 4 + 3};
	uint8_t pl[16];
	char text[8];
	int32_t raw;

	ohc_be_put32(pl, (uint32_t)(int32_t)OHC_ERR_TCP_CONNECT);
	memcpy(pl + 4, "a\x01z", 3);
	cr_assert_eq(bs_refuse_parse(&h, pl, &raw, text, sizeof(text)), OHC_OK);
	cr_expect_eq(raw, OHC_ERR_TCP_CONNECT);
	cr_expect_str_eq(text, "a?z");
	cr_expect_eq(bs_refuse_status(raw), OHC_ERR_TCP_CONNECT);
	cr_expect_eq(bs_refuse_status(OHC_ERR_UNAVAILABLE), OHC_ERR_INVALID);
	cr_expect_eq(bs_refuse_status(5), OHC_ERR_INVALID);
	h.len = 3;
	cr_expect_eq(bs_refuse_parse(&h, pl, &raw, text, sizeof(text)),
		     OHC_ERR_INVALID);

	h.type = BS_T_WELCOME;
	h.len = BS_WELCOME_BYTES;
	ohc_be_put64(pl, 1234);
	cr_expect(bs_welcome_ok(&h, pl, 1234));
	cr_expect(!bs_welcome_ok(&h, pl, 1235));
	h.len = BS_WELCOME_BYTES + 1;
	cr_expect(!bs_welcome_ok(&h, pl, 1234));
}

/* A peer's ABORT names a culprit and a status that end up in our log
 * line: a culprit outside the endpoint reads as none, a status that is
 * not an error as OHC_ERR_REMOTE. */
Test(bs_msg, abort)
{
	uint8_t pl[BS_ABORT_BYTES];
	uint32_t culprit;
	int32_t status;

	ohc_be_put32(pl, 0);
	ohc_be_put32(pl + 4, 2);
	ohc_be_put32(pl + 8, (uint32_t)(int32_t)OHC_ERR_TIMEOUT);
	bs_abort_parse(pl, sizeof(pl), 4, &culprit, &status);
	cr_expect_eq(culprit, 2);
	cr_expect_eq(status, OHC_ERR_TIMEOUT);
	bs_abort_parse(pl, sizeof(pl), 2, &culprit, &status);
	cr_expect_eq(culprit, BS_NO_RANK);
	ohc_be_put32(pl + 8, 7);
	bs_abort_parse(pl, sizeof(pl), 4, &culprit, &status);
	cr_expect_eq(status, OHC_ERR_REMOTE);
	bs_abort_parse(pl, sizeof(pl) - 1, 4, &culprit, &status);
	cr_expect_eq(culprit, BS_NO_RANK);
	cr_expect_eq(status, OHC_ERR_REMOTE);
	bs_abort_parse(NULL, 0, 4, &culprit, &status);
	cr_expect_eq(status, OHC_ERR_REMOTE);
}
