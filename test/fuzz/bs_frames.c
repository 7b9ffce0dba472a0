/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every bootstrap frame a peer or a stranger can send, as the receiving
 * side reads it: the bytes go through a socket pair into the frame reader
 * (bs_rx_read: header decode, length limit, payload) in chunks the input
 * chooses, and each whole frame goes to every payload check there is
 * (bs_msg.c): JOIN as the root checks it, HELLO as a rank's gate does,
 * WELCOME and REFUSE as a joining rank reads the root's first answer,
 * TABLE, REFUSE and EXPIRED as it reads the verdict, ABORT as an endpoint
 * does. Whatever a check accepts must be usable as its caller uses it.
 *
 * Input: role (sets the reader's length limit as that reader has it),
 * nranks, rank, the expected token, the root's nranks, our listener's
 * port, a chunking seed, then the byte stream.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/bootstrap/bs_internal.h"
#include "fuzz.h"

struct ctx {
	uint32_t n, me, root_n;
	uint64_t token;
	uint16_t my_port;
};

static void check_text(const char *text, size_t size)
{
	size_t len = strnlen(text, size);

	FZ_ASSERT(len < size);
	for (size_t i = 0; i < len; i++)
		FZ_ASSERT(text[i] >= 0x20 && text[i] < 0x7f);
}

static void check_entry(const uint8_t *e)
{
	struct bs_addr a;
	const char *hid = NULL;

	if (bs_entry_decode(e, &a, &hid) != OHC_OK)
		return;
	FZ_ASSERT(hid == (const char *)e + BS_WIRE_ADDR_BYTES);
	FZ_ASSERT(hid[0] && strnlen(hid, OHC_HOSTID_MAX) < OHC_HOSTID_MAX);
	FZ_ASSERT(bs_addr_family(&a) == AF_INET ||
		  bs_addr_family(&a) == AF_INET6);
	FZ_ASSERT(bs_addr_port(&a) != 0);
}

/* A TABLE that passed its check, rank by rank as the joining rank
 * installs it. */
struct table_seen {
	const struct ctx *c;
	uint32_t next;
};

static void check_rank(void *arg, uint32_t r, const struct bs_addr *a,
		       const char *hostid)
{
	struct table_seen *t = arg;
	size_t hl = strnlen(hostid, OHC_HOSTID_MAX);

	FZ_ASSERT(r == t->next++ && r < t->c->n);
	FZ_ASSERT(hl > 0 && hl < OHC_HOSTID_MAX);
	FZ_ASSERT(bs_addr_family(a) == AF_INET ||
		  bs_addr_family(a) == AF_INET6);
	FZ_ASSERT(bs_addr_port(a) != 0);
	if (r == t->c->me)
		FZ_ASSERT(bs_addr_port(a) == t->c->my_port);
}

static void frame(const struct ctx *c, const struct ohc_frame_hdr *h,
		  const uint8_t *pl)
{
	char text[BS_TEXT_MAX + 1], why[BS_TEXT_MAX];
	struct bs_join j;
	uint32_t from, culprit;
	int32_t raw, status;

	FZ_ASSERT(h->type >= 1 && h->type <= BS_T_MAX);
	FZ_ASSERT(!h->len == !pl);
	/* root: JOIN */
	if (bs_join_decode(h, pl, &j) == OHC_OK) {
		FZ_ASSERT(h->len == BS_JOIN_BYTES);
		check_entry(j.entry);
		why[0] = '\0';
		if (bs_join_check(&j, c->root_n, why, sizeof(why)) == OHC_OK) {
			FZ_ASSERT(j.nranks >= 1 &&
				  j.nranks <= OHC_BOOTSTRAP_MAX_RANKS);
			FZ_ASSERT(!c->root_n || j.nranks == c->root_n);
			FZ_ASSERT(j.rank < j.nranks);
			FZ_ASSERT(bs_entry_decode(j.entry, NULL, NULL) ==
				  OHC_OK);
		} else {
			FZ_ASSERT(why[0]);
			check_text(why, sizeof(why));
		}
	}
	/* a rank's gate: HELLO */
	if (!bs_hello_check(h, pl, c->token, c->me, c->n, &from))
		FZ_ASSERT(from < c->n && from != c->me);
	else if (h->type != BS_T_HELLO || h->len != BS_HELLO_BYTES)
		FZ_ASSERT(from == BS_NO_RANK);
	/* a joining rank: WELCOME, REFUSE, EXPIRED, TABLE */
	if (bs_welcome_ok(h, pl, c->token))
		FZ_ASSERT(h->len == BS_WELCOME_BYTES);
	if (bs_refuse_parse(h, pl, &raw, text, sizeof(text)) == OHC_OK) {
		FZ_ASSERT(h->type == BS_T_REFUSE && h->len >= 4);
		check_text(text, sizeof(text));
		status = bs_refuse_status(raw);
		FZ_ASSERT(status == OHC_ERR_INVALID ||
			  status == OHC_ERR_TCP_CONNECT ||
			  status == OHC_ERR_NO_MEMORY);
	}
	if (h->type == BS_T_EXPIRED) {
		bs_text_clean(pl, h->len, text, sizeof(text));
		check_text(text, sizeof(text));
	}
	if (bs_table_check(h, pl, c->n, c->me, c->my_port) == OHC_OK) {
		struct table_seen seen = {.c = c};

		FZ_ASSERT(h->len <= bs_table_max_bytes(c->n));
		FZ_ASSERT(bs_table_decode(pl, h->len, check_rank, &seen) ==
			  OHC_OK);
		FZ_ASSERT(seen.next == c->n);
	}
	/* an endpoint: ABORT (COLL and DATA are matched by length only:
	 * see bs_endpoint.c) */
	if (h->type == BS_T_ABORT) {
		bs_abort_parse(pl, h->len, c->n, &culprit, &status);
		FZ_ASSERT(culprit == BS_NO_RANK || culprit < c->n);
		FZ_ASSERT(status < 0);
	}
}

/* Read what is there; 1 when the stream is over (EOF or refused). */
static int drain(const struct ctx *c, struct ohc_frame_rx *rx, size_t max_len)
{
	for (;;) {
		struct ohc_frame_hdr h;
		uint8_t *pl;
		int err = 0;
		ohc_status_t st = ohc_frame_rx_read(rx, max_len, &err);

		if (st == OHC_INPROGRESS)
			return 0;
		if (st < 0) {
			FZ_ASSERT(st == OHC_ERR_INVALID ||
				  st == OHC_ERR_REMOTE ||
				  st == OHC_ERR_NO_MEMORY);
			if (st == OHC_ERR_INVALID)
				FZ_ASSERT(err == EPROTO);
			ohc_frame_rx_reset(rx);
			return 1;
		}
		pl = ohc_frame_rx_take(rx, &h);
		FZ_ASSERT(h.len <= max_len);
		frame(c, &h, pl);
		free(pl);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = fz_init(data, size);
	struct ctx c;
	struct ohc_frame_rx rx;
	size_t max_len, want;
	uint8_t role, seed;
	int sv[2], over = 0;

	role = fz_u8(&f) % 6;
	c.n = 1 + fz_u8(&f) % 8;
	c.me = fz_u8(&f) % c.n;
	c.token = fz_u64(&f);
	c.root_n = fz_u8(&f) % 9;
	c.my_port = fz_u16(&f);
	seed = fz_u8(&f);
	want = bs_table_max_bytes(c.n);
	/* the limits the readers pass to bs_rx_read */
	switch (role) {
	case 0: /* the root's gate */
		max_len = BS_JOIN_BYTES;
		break;
	case 1: /* a rank's gate */
		max_len = BS_HELLO_BYTES;
		break;
	case 2: /* read_welcome */
		max_len = BS_TEXT_MAX + 4;
		break;
	case 3: /* read_verdict */
		max_len = want > BS_TEXT_MAX + 4 ? want : BS_TEXT_MAX + 4;
		break;
	case 4: /* an in connection */
		max_len = OHC_BOOTSTRAP_MAX_MSG;
		break;
	default: /* an out connection: ABORT only */
		max_len = BS_ABORT_BYTES;
		break;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
		abort();
	ohc_frame_rx_init(&rx, &bs_proto, sv[0]);
	/* chunk sizes 1..64 from the seed, or all at once for seed 0 */
	while (f.n && !over) {
		size_t k = seed ? 1 + (seed + f.n) % 64 : f.n, got;
		const uint8_t *p = fz_take(&f, k, &got);

		while (got && !over) {
			ssize_t w = write(sv[1], p, got);

			FZ_ASSERT(w > 0 || errno == EAGAIN);
			if (w > 0) {
				p += w;
				got -= (size_t)w;
			}
			over = drain(&c, &rx, max_len);
		}
	}
	shutdown(sv[1], SHUT_WR);
	if (!over)
		FZ_ASSERT(drain(&c, &rx, max_len) == 1);
	ohc_frame_rx_reset(&rx);
	close(sv[0]);
	close(sv[1]);
	return 0;
}
