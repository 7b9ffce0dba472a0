/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handshake service (util/frame.h, util/hs.h): frames over a
 * socketpair, read a byte at a time, refused with the peer named (too
 * long, wrong magic, wrong token), connect and accept bounded by their
 * deadlines, and fds passed over AF_UNIX.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/frame.h"
#include "util/hs.h"
#include "util/time.h"

static const struct ohc_frame_proto proto = {
	.magic = 0x5554, /* "UT" */
	.version = 3,
	.type_max = 4,
};

static void pair(int type, int sv[2])
{
	cr_assert_eq(socketpair(AF_UNIX, type | SOCK_NONBLOCK, 0, sv), 0);
}

static uint64_t ms_since(uint64_t t0)
{
	return (ohc_time_ns() - t0) / 1000000u;
}

Test(hs, frame_round_trip)
{
	struct ohc_frame_hdr h = {.type = 2,
				  .ctx = 7,
				  .tag = 1ull << 40,
				  .len = 5},
			     g;
	uint8_t *pl = NULL;
	struct ohc_hs a, b;
	int sv[2];

	pair(SOCK_STREAM, sv);
	ohc_hs_init(&a, &proto, "rank 1 (test)", 0,
		    ohc_deadline_after_ms(1000));
	ohc_hs_init(&b, &proto, "rank 0 (test)", 0,
		    ohc_deadline_after_ms(1000));
	cr_assert_eq(ohc_hs_send(&a, sv[0], &h, "hello"), OHC_OK, "%s", a.why);
	cr_assert_eq(ohc_hs_recv(&b, sv[1], 16, &g, &pl), OHC_OK, "%s", b.why);
	cr_expect_eq(g.type, 2);
	cr_expect_eq(g.ctx, 7);
	cr_expect_eq(g.tag, 1ull << 40);
	cr_expect_eq(g.len, 5);
	cr_expect(pl && !memcmp(pl, "hello", 5));
	free(pl);
	/* the peer goes away: named, "closed" */
	close(sv[0]);
	cr_expect_eq(ohc_hs_recv(&b, sv[1], 16, &g, &pl), OHC_ERR_REMOTE);
	cr_expect(strstr(b.why, "rank 0 (test): closed"), "%s", b.why);
	close(sv[1]);
}

Test(hs, big_endian_header_bytes)
{
	struct ohc_frame_hdr h = {
		.type = 1, .ctx = 0x0102030405060708ull, .tag = 9, .len = 0x10};
	uint8_t out[OHC_FRAME_HDR_BYTES];
	static const uint8_t want[OHC_FRAME_HDR_BYTES] = {
		0x55, 0x54, 3, 1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
		0,    0,    0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0x10};

	ohc_frame_hdr_encode(&proto, &h, out);
	cr_expect_arr_eq(out, want, sizeof(want));
	cr_expect_eq(ohc_be_get64(out + 8), h.ctx);
	cr_expect_eq(ohc_be_get16(out), 0x5554);
}

Test(hs, frame_read_one_byte_at_a_time)
{
	struct ohc_frame_hdr h = {.type = 4, .ctx = 1, .tag = 2, .len = 40}, g;
	uint8_t wire[OHC_FRAME_HDR_BYTES + 40 + 3], body[40], *pl;
	struct ohc_frame_rx rx;
	int sv[2], err = 0, rounds = 0;
	ohc_status_t st = OHC_INPROGRESS;

	for (int i = 0; i < 40; i++)
		body[i] = (uint8_t)(i * 7);
	ohc_frame_hdr_encode(&proto, &h, wire);
	memcpy(wire + OHC_FRAME_HDR_BYTES, body, 40);
	memcpy(wire + OHC_FRAME_HDR_BYTES + 40, "abc", 3); /* next frame */
	pair(SOCK_STREAM, sv);
	ohc_frame_rx_init(&rx, &proto, sv[1]);
	for (size_t i = 0; i < OHC_FRAME_HDR_BYTES + 40; i++) {
		cr_assert_eq(st, OHC_INPROGRESS, "complete after %zu bytes", i);
		cr_assert_eq(write(sv[0], wire + i, 1), 1);
		st = ohc_frame_rx_read(&rx, 64, &err);
		rounds++;
	}
	cr_assert_eq(st, OHC_OK);
	cr_assert_eq(write(sv[0], wire + OHC_FRAME_HDR_BYTES + 40, 3), 3);
	pl = ohc_frame_rx_take(&rx, &g);
	cr_expect_eq(g.type, 4);
	cr_expect_eq(g.len, 40);
	cr_expect_arr_eq(pl, body, 40);
	free(pl);
	/* it never read past its frame: the 3 bytes after are still there */
	cr_expect_eq(recv(sv[1], wire, sizeof(wire), 0), 3);
	cr_expect_eq(rounds, OHC_FRAME_HDR_BYTES + 40);
	close(sv[0]);
	close(sv[1]);
}

Test(hs, oversized_frame_names_the_peer)
{
	struct ohc_frame_hdr h = {.type = 1, .len = 300}, g;
	uint8_t *pl = NULL, hdr[OHC_FRAME_HDR_BYTES];
	struct ohc_hs hs;
	int sv[2];

	pair(SOCK_STREAM, sv);
	ohc_frame_hdr_encode(&proto, &h, hdr);
	cr_assert_eq(write(sv[0], hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	ohc_hs_init(&hs, &proto, "rank 3 (10.0.0.2:5000)", 0,
		    ohc_deadline_after_ms(1000));
	cr_expect_eq(ohc_hs_recv(&hs, sv[1], 256, &g, &pl), OHC_ERR_INVALID);
	cr_expect_null(pl);
	cr_expect_str_eq(hs.why,
			 "rank 3 (10.0.0.2:5000): frame too long: 300 > 256");
	close(sv[0]);
	close(sv[1]);
}

Test(hs, wrong_magic_and_version)
{
	static const struct ohc_frame_proto other = {0x4f42, 3, 4};
	struct ohc_frame_hdr h = {.type = 1}, g;
	uint8_t hdr[OHC_FRAME_HDR_BYTES], *pl = NULL;
	char why[OHC_FRAME_WHY_MAX];
	struct ohc_hs hs;
	int sv[2];

	pair(SOCK_STREAM, sv);
	ohc_frame_hdr_encode(&other, &h, hdr);
	cr_assert_eq(write(sv[0], hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	ohc_hs_init(&hs, &proto, "the root", 0, ohc_deadline_after_ms(1000));
	cr_expect_eq(ohc_hs_recv(&hs, sv[1], 256, &g, &pl), OHC_ERR_INVALID);
	cr_expect_str_eq(hs.why, "the root: wrong magic 0x4f42");
	cr_expect_eq(hs.err, 0);
	/* the checks of decode, one by one */
	ohc_frame_hdr_encode(&proto, &h, hdr);
	cr_expect_eq(ohc_frame_hdr_decode(&proto, hdr, 0, &g, why), OHC_OK);
	hdr[2] = 2;
	cr_expect_eq(ohc_frame_hdr_decode(&proto, hdr, 0, &g, why),
		     OHC_ERR_INVALID);
	cr_expect_str_eq(why, "version 2, not 3");
	hdr[2] = 3;
	hdr[3] = 5;
	cr_expect_eq(ohc_frame_hdr_decode(&proto, hdr, 0, &g, why),
		     OHC_ERR_INVALID);
	cr_expect_str_eq(why, "unknown type 5");
	hdr[3] = 1;
	hdr[6] = 1;
	cr_expect_eq(ohc_frame_hdr_decode(&proto, hdr, 0, &g, why),
		     OHC_ERR_INVALID);
	cr_expect_str_eq(why, "reserved bits set");
	close(sv[0]);
	close(sv[1]);
}

Test(hs, hello_token_checked)
{
	uint8_t out[4] = {1, 2, 3, 4}, in[4] = {0};
	struct ohc_hs_hello m = {
		.type = 2, .from = 5, .to = 9, .body = out, .len = 4};
	struct ohc_hs a, b;
	int sv[2];

	pair(SOCK_STREAM, sv);
	ohc_hs_init(&a, &proto, "rank 9", 0xabc, ohc_deadline_after_ms(1000));
	ohc_hs_init(&b, &proto, "rank 5", 0xabc, ohc_deadline_after_ms(1000));
	cr_assert_eq(ohc_hs_hello_send(&a, sv[0], &m), OHC_OK, "%s", a.why);
	m = (struct ohc_hs_hello){.type = 2, .to = 9, .body = in, .len = 4};
	cr_assert_eq(ohc_hs_hello_recv(&b, sv[1], &m), OHC_OK, "%s", b.why);
	cr_expect_eq(m.from, 5);
	cr_expect_arr_eq(in, out, 4);
	/* another session's token */
	a.token = 0xabd;
	m = (struct ohc_hs_hello){
		.type = 2, .from = 5, .to = 9, .body = out, .len = 4};
	cr_assert_eq(ohc_hs_hello_send(&a, sv[0], &m), OHC_OK);
	m = (struct ohc_hs_hello){.type = 2, .to = 9, .body = in, .len = 4};
	cr_expect_eq(ohc_hs_hello_recv(&b, sv[1], &m), OHC_ERR_INVALID);
	cr_expect_str_eq(b.why, "rank 5: wrong token");
	cr_expect_eq(b.err, EACCES);
	/* the right token, but for another rank */
	a.token = 0xabc;
	m = (struct ohc_hs_hello){
		.type = 2, .from = 5, .to = 8, .body = out, .len = 4};
	cr_assert_eq(ohc_hs_hello_send(&a, sv[0], &m), OHC_OK);
	m = (struct ohc_hs_hello){.type = 2, .to = 9, .body = in, .len = 4};
	cr_expect_eq(ohc_hs_hello_recv(&b, sv[1], &m), OHC_ERR_INVALID);
	cr_expect_str_eq(b.why, "rank 5: hello for 8, not 9");
	close(sv[0]);
	close(sv[1]);
}

Test(hs, connect_to_nobody_fails_at_its_deadline)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	struct ohc_hs hs;
	uint64_t t0;
	int lfd, fd = -1;

	/* a port that was free a moment ago, on loopback: refused */
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	close(lfd);
	t0 = ohc_time_ns();
	ohc_hs_init(&hs, &proto, "rank 2 (127.0.0.1)", 0,
		    ohc_deadline_after_ms(200));
	cr_expect_eq(ohc_hs_connect(&hs, (struct sockaddr *)&sa, len,
				    SOCK_STREAM, &fd),
		     OHC_ERR_TIMEOUT);
	cr_expect_eq(fd, -1);
	cr_expect_geq(ms_since(t0), 190);
	cr_expect_lt(ms_since(t0), 1000);
	cr_expect_eq(hs.err, ECONNREFUSED);
	cr_expect(strstr(hs.why, "rank 2 (127.0.0.1): connect timed out "
				 "after "),
		  "%s", hs.why);
	cr_expect(strstr(hs.why, "Connection refused"), "%s", hs.why);
	/* once: no retry, no wait */
	hs.once = 1;
	hs.deadline = ohc_deadline_after_ms(5000);
	t0 = ohc_time_ns();
	cr_expect_eq(ohc_hs_connect(&hs, (struct sockaddr *)&sa, len,
				    SOCK_STREAM, &fd),
		     OHC_ERR_TCP_CONNECT);
	cr_expect_lt(ms_since(t0), 1000);
}

Test(hs, connect_and_accept)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	struct ohc_hs hs;
	uint64_t t0;
	int lfd, cfd = -1, afd = -1, one = 0;
	socklen_t ol = sizeof(one);

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(lfd, 4), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	/* nobody comes: accept times out at its deadline */
	t0 = ohc_time_ns();
	ohc_hs_init(&hs, &proto, "a lower rank", 0, ohc_deadline_after_ms(150));
	cr_expect_eq(ohc_hs_accept(&hs, lfd, &afd), OHC_ERR_TIMEOUT);
	cr_expect_geq(ms_since(t0), 140);
	cr_expect_lt(ms_since(t0), 1000);
	cr_expect(strstr(hs.why, "a lower rank: no connection: accept timed "
				 "out after "),
		  "%s", hs.why);
	/* someone comes */
	ohc_hs_init(&hs, &proto, "the listener", 0,
		    ohc_deadline_after_ms(2000));
	cr_assert_eq(ohc_hs_connect(&hs, (struct sockaddr *)&sa, len,
				    SOCK_STREAM, &cfd),
		     OHC_OK, "%s", hs.why);
	cr_expect(fcntl(cfd, F_GETFD) & FD_CLOEXEC);
	cr_expect(fcntl(cfd, F_GETFL) & O_NONBLOCK);
	cr_assert_eq(getsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, &ol), 0);
	cr_expect(one);
	cr_assert_eq(ohc_hs_accept(&hs, lfd, &afd), OHC_OK, "%s", hs.why);
	cr_expect(fcntl(afd, F_GETFD) & FD_CLOEXEC);
	close(afd);
	close(cfd);
	close(lfd);
}

Test(hs, fd_passed_over_af_unix)
{
	uint8_t body[8], got[8];
	struct ohc_hs_hello m;
	struct ohc_hs a, b;
	int sv[2], mfd, efd;
	eventfd_t ev = 0;
	char *p;

	efd = eventfd(0, EFD_CLOEXEC);
	cr_assert_geq(efd, 0);
	cr_assert_eq(eventfd_write(efd, 7), 0);
	mfd = memfd_create("ohc-test", MFD_CLOEXEC);
	cr_assert_geq(mfd, 0);
	cr_assert_eq(ftruncate(mfd, 4096), 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	cr_assert_neq(p, MAP_FAILED);
	strcpy(p, "shared page");
	pair(SOCK_SEQPACKET, sv);
	ohc_hs_init(&a, &proto, "rank 1", 42, OHC_DEADLINE_NEVER);
	ohc_hs_init(&b, &proto, "rank 0", 42, OHC_DEADLINE_NEVER);
	/* nothing yet */
	m = (struct ohc_hs_hello){.type = 3, .to = 0, .body = got, .len = 8};
	cr_expect_eq(ohc_hs_msg_recv(&b, sv[1], &m), OHC_INPROGRESS);
	ohc_be_put64(body, 4096);
	m = (struct ohc_hs_hello){.type = 3,
				  .from = 1,
				  .to = 0,
				  .body = body,
				  .len = 8,
				  .fds = {mfd, efd},
				  .nfds = 2};
	cr_assert_eq(ohc_hs_msg_send(&a, sv[0], &m), OHC_OK, "%s", a.why);
	close(mfd);
	close(efd);
	m = (struct ohc_hs_hello){.type = 3, .to = 0, .body = got, .len = 8};
	cr_assert_eq(ohc_hs_msg_recv(&b, sv[1], &m), OHC_OK, "%s", b.why);
	cr_expect_eq(m.from, 1);
	cr_expect_eq(ohc_be_get64(got), 4096);
	cr_assert_eq(m.nfds, 2);
	cr_expect(fcntl(m.fds[0], F_GETFD) & FD_CLOEXEC);
	munmap(p, 4096);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, m.fds[0], 0);
	cr_assert_neq(p, MAP_FAILED);
	cr_expect_str_eq(p, "shared page");
	munmap(p, 4096);
	/* the second is the eventfd: what was written comes out */
	cr_expect_eq(eventfd_read(m.fds[1], &ev), 0);
	cr_expect_eq(ev, 7);
	close(m.fds[0]);
	close(m.fds[1]);
	/* a message of another session: refused, named, fd closed */
	a.token = 43;
	m = (struct ohc_hs_hello){.type = 3,
				  .from = 1,
				  .to = 0,
				  .body = body,
				  .len = 8,
				  .fds = {sv[0]},
				  .nfds = 1};
	cr_assert_eq(ohc_hs_msg_send(&a, sv[0], &m), OHC_OK, "%s", a.why);
	m = (struct ohc_hs_hello){.type = 3, .to = 0, .body = got, .len = 8};
	cr_expect_eq(ohc_hs_msg_recv(&b, sv[1], &m), OHC_ERR_INVALID);
	cr_expect_eq(m.nfds, 0);
	cr_expect_str_eq(b.why, "rank 0: wrong token");
	close(sv[0]);
	m = (struct ohc_hs_hello){.type = 3, .to = 0, .body = got, .len = 8};
	cr_expect_eq(ohc_hs_msg_recv(&b, sv[1], &m), OHC_ERR_REMOTE);
	cr_expect_str_eq(b.why, "rank 0: closed the connection");
	close(sv[1]);
}
