/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A rank's bootstrap endpoint fed by its peers: a socket endpoint
 * (bs_sock_adopt) whose connections from the other ranks carry the fuzzer's
 * bytes (COLL, DATA and ABORT frames, or anything else), then closed;
 * the rank runs up to three bootstrap operations (allgather, barrier,
 * bcast, send, recv) on it. What a peer sends is read by the real reader,
 * queued, matched by context, type and tag and checked for length before
 * it is copied; ABORT poisons. Every operation must end (the peers'
 * connections end, so nothing may wait), succeed only with the exact
 * bytes expected, and a failed collective must fail every later one.
 *
 * Input: nranks (2..4), our rank, the operations (kind, size, argument),
 * then chunks [peer, length, bytes] appended to what that peer sends.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/bootstrap/bs_internal.h"
#include "fuzz.h"

#define MAX_N 4
#define MAX_OPS 3
#define MAX_BYTES 512

enum { OP_ALLGATHER, OP_BARRIER, OP_BCAST, OP_SEND, OP_RECV, OP_N };

struct op {
	uint8_t kind, arg;
	uint16_t bytes;
};

static int is_coll(uint8_t kind)
{
	return kind == OP_ALLGATHER || kind == OP_BARRIER || kind == OP_BCAST;
}

static ohc_status_t run(struct ohc_bootstrap *bs, const struct op *o,
			uint32_t n, uint32_t me)
{
	uint8_t *buf = calloc(n, MAX_BYTES);
	uint32_t peer = o->arg % n;
	ohc_status_t st = OHC_OK;

	if (!buf)
		abort();
	memset(buf + (size_t)me * o->bytes, 0x40 + (int)me, o->bytes);
	switch (o->kind) {
	case OP_ALLGATHER:
		st = ohc_bootstrap_allgather(bs, buf, o->bytes);
		break;
	case OP_BARRIER:
		st = ohc_bootstrap_barrier(bs);
		break;
	case OP_BCAST:
		st = ohc_bootstrap_bcast(bs, buf, o->bytes, peer);
		break;
	case OP_SEND:
		if (peer != me)
			st = ohc_bootstrap_send(bs, peer, o->arg, buf,
						o->bytes);
		break;
	default:
		if (peer != me)
			st = ohc_bootstrap_recv(bs, peer, o->arg, buf,
						o->bytes);
		break;
	}
	/* our own slot is never written by a peer's message */
	if (o->kind == OP_ALLGATHER)
		for (size_t i = 0; i < o->bytes; i++)
			FZ_ASSERT(buf[(size_t)me * o->bytes + i] == 0x40 + me);
	free(buf);
	return st;
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
	int in_fds[MAX_N], out_fds[MAX_N], feed[MAX_N], sink[MAX_N];
	struct op ops[MAX_OPS];
	size_t fed[MAX_N] = {0};
	struct ohc_bootstrap *bs;
	struct bs_ep *ep;
	uint32_t n, me, nops;
	int poisoned = 0;

	n = 2 + fz_u8(&f) % (MAX_N - 1);
	me = fz_u8(&f) % n;
	nops = 1 + fz_u8(&f) % MAX_OPS;
	for (uint32_t i = 0; i < nops; i++) {
		ops[i].kind = fz_u8(&f) % OP_N;
		ops[i].arg = fz_u8(&f);
		ops[i].bytes = fz_u16(&f) % (MAX_BYTES + 1);
	}
	for (uint32_t r = 0; r < n; r++) {
		int a[2], b[2];

		in_fds[r] = out_fds[r] = feed[r] = sink[r] = -1;
		if (r == me)
			continue;
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, a) ||
		    socketpair(AF_UNIX, SOCK_STREAM, 0, b))
			abort();
		in_fds[r] = a[0];
		feed[r] = a[1];
		out_fds[r] = b[0];
		sink[r] = b[1];
	}
	/* what the peers send, whole, then their end of it */
	while (f.n) {
		uint32_t r = fz_u8(&f) % n;
		size_t len = fz_u16(&f), got;
		const uint8_t *p = fz_take(&f, len, &got);

		/* within what the socket buffers, as nothing reads yet */
		if (r == me || fed[r] + got > (64u << 10))
			continue;
		FZ_ASSERT(write(feed[r], p, got) == (ssize_t)got);
		fed[r] += got;
	}
	for (uint32_t r = 0; r < n; r++)
		if (r != me)
			shutdown(feed[r], SHUT_WR);

	FZ_ASSERT(bs_sock_adopt(n, me, 1, out_fds, in_fds, &ep) == OHC_OK);
	FZ_ASSERT(bs_handle_new(ep, 5000, &bs) == OHC_OK);
	for (uint32_t i = 0; i < nops; i++) {
		ohc_status_t st = run(bs, &ops[i], n, me);

		FZ_ASSERT(st == OHC_OK || st == OHC_ERR_REMOTE ||
			  st == OHC_ERR_INVALID);
		if (poisoned && is_coll(ops[i].kind))
			FZ_ASSERT(st < 0);
		if (st < 0 && is_coll(ops[i].kind))
			poisoned = 1;
	}
	ohc_bootstrap_destroy(bs);
	for (uint32_t r = 0; r < n; r++) {
		if (r == me)
			continue;
		close(feed[r]);
		close(sink[r]);
	}
	return 0;
}
