/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The self transport: ranks as threads of one process (and a rank talking
 * to itself). Blobs travel through the harness's shared page (harness.h);
 * no bootstrap. The fds are checked once per test, after all its ranks.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "helpers/ohc_test.h"
#include "transport/harness.h"
#include "transport/transport.h"
#include "util/time.h"

#define MIB (1u << 20)

/* Timings the ranks leave for the test (threads: plain memory will do). */
static struct {
	_Atomic uint64_t t_mark;
	double ms[2];
} g;

static int fds_before;

static void setup(void)
{
	memset(&g, 0, sizeof(g));
	tp_setup(0);
	fds_before = ohc_test_count_fds();
}

static void teardown(void)
{
	tp_teardown();
	cr_expect_eq(ohc_test_count_fds(), fds_before, "fd leak");
}

TestSuite(self, .init = setup, .fini = teardown, .timeout = 120);

static int rank_open(struct tp_rank *c, int rank, int nranks)
{
	return tp_rank_open(c, "self", rank, nranks, NULL);
}

/* Eps to every rank, ourselves included, then connect them. */
static int rank_connect(struct tp_rank *c)
{
	return tp_rank_eps(c, 1) || tp_rank_connect(c, 5000);
}

static int rank_up(struct tp_rank *c, int rank, int nranks)
{
	if (rank_open(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	return rank_connect(c);
}

/* Exchanges of every size, FIFO matching, reducing receives and
 * mismatched signatures: test/transport/conformance.c, over every
 * transport. What is the self transport's own follows. */

/*
 * Zero copy: the receive reads the sender's buffer itself. The send stays
 * in progress until the receive is posted and progressed; bytes changed in
 * the send buffer meanwhile arrive; every fragment handed to the reduce
 * function points into the sender's buffer.
 */
static const uint8_t *zc_lo, *zc_hi;
static atomic_int zc_outside, zc_calls;

static void spy_copy(void *dst, const void *a, const void *b, size_t count)
{
	(void)a;
	atomic_fetch_add(&zc_calls, 1);
	if ((const uint8_t *)b < zc_lo || (const uint8_t *)b + count > zc_hi)
		atomic_fetch_add(&zc_outside, 1);
	memcpy(dst, b, count);
}

Test(self, zero_copy_send_completes_after_receive)
{
	struct tp_rank c0, c1;
	size_t len = 3 * MIB + 5;
	uint8_t *sbuf = malloc(len), *rbuf = malloc(len);
	struct ohc_req s, r;

	cr_assert_eq(rank_open(&c0, 0, 2), 0);
	cr_assert_eq(rank_open(&c1, 1, 2), 0);
	c0.rank = 0;
	cr_assert_eq(rank_connect(&c0), 0);
	cr_assert_eq(rank_connect(&c1), 0);

	tp_fill(sbuf, len, 0, 1, 0);
	tp_req_send(&s, sbuf, len, 5);
	cr_assert_eq(c0.ops->ep_send(c0.eps[1], &s), OHC_OK);
	for (int i = 0; i < 100; i++) {
		c0.ops->iface_progress(c0.iface);
		c1.ops->iface_progress(c1.iface);
	}
	cr_expect_eq(s.status, OHC_INPROGRESS, "send done without receive");
	cr_expect_eq(s.done, 0);

	tp_fill(sbuf, len, 0, 1, 7); /* changed after posting: must arrive */
	zc_lo = sbuf;
	zc_hi = sbuf + len;
	tp_req_recv(&r, rbuf, len, 5);
	r.kind = OHC_RECV_REDUCE; /* a copy through the spy */
	r.reduce = spy_copy;
	r.esize = 1;
	cr_assert_eq(c1.ops->ep_recv(c1.eps[0], &r), OHC_OK);
	while (r.status == OHC_INPROGRESS)
		c1.ops->iface_progress(c1.iface);
	cr_expect_eq(r.status, OHC_OK);
	cr_expect_eq(s.status, OHC_OK, "send completes with the receive");
	cr_expect_eq(tp_verify(rbuf, len, 0, 1, 7), -1, "data at receive time");
	cr_expect_gt(atomic_load(&zc_calls), 1, "delivered in slices");
	cr_expect_eq(atomic_load(&zc_outside), 0,
		     "every fragment is the sender's own memory");

	tp_rank_close(&c0);
	tp_rank_close(&c1);
	free(sbuf);
	free(rbuf);
}

/*
 * Waiting sleeps and is woken: rank 1 waits for a message rank 0 sends
 * after 300 ms; rank 0 then waits for a send that rank 1 receives 300 ms
 * later. Both use 5 s waits: only a doorbell makes them return early.
 */
static int wait_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	uint8_t buf[1000];
	struct ohc_req q, *all[1] = {&q};
	double cpu0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	cpu0 = tp_cpu_seconds(RUSAGE_THREAD);
	if (rank == 0) {
		usleep(300000);
		tp_req_send(&q, buf, sizeof(buf), 1);
		atomic_store(&g.t_mark, ohc_time_ns());
		CHECK(c->ops->ep_send(c->eps[1], &q) == OHC_OK, "send");
		CHECK(tp_drive(c, all, 1, 5000, 10000) == 0, "send 1");
		/* Now a send that waits for its receiver. */
		tp_req_send(&q, buf, sizeof(buf), 2);
		CHECK(c->ops->ep_send(c->eps[1], &q) == OHC_OK, "send");
		CHECK(tp_drive(c, all, 1, 5000, 10000) == 0, "send 2");
		g.ms[0] =
			(double)(ohc_time_ns() - atomic_load(&g.t_mark)) / 1e6;
	} else {
		tp_req_recv(&q, buf, sizeof(buf), 1);
		CHECK(c->ops->ep_recv(c->eps[0], &q) == OHC_OK, "recv");
		CHECK(tp_drive(c, all, 1, 5000, 10000) == 0, "recv 1");
		g.ms[1] =
			(double)(ohc_time_ns() - atomic_load(&g.t_mark)) / 1e6;
		usleep(300000);
		tp_req_recv(&q, buf, sizeof(buf), 2);
		atomic_store(&g.t_mark, ohc_time_ns());
		CHECK(c->ops->ep_recv(c->eps[0], &q) == OHC_OK, "recv");
		CHECK(tp_drive(c, all, 1, 5000, 10000) == 0, "recv 2");
	}
	CHECK(tp_cpu_seconds(RUSAGE_THREAD) - cpu0 < 0.1,
	      "waiting used %.3f s of CPU",
	      tp_cpu_seconds(RUSAGE_THREAD) - cpu0);
	CHECK(q.status == OHC_OK, "status");
	tp_barrier(nranks);
	tp_rank_close(c);
	return 0;
}

Test(self, wait_sleeps_and_is_woken)
{
	cr_assert_eq(ohc_test_thread_ranks(2, wait_rank, NULL), 0);
	cr_expect_lt(g.ms[1], 1000.0, "receiver woke %.1f ms late", g.ms[1]);
	cr_expect_lt(g.ms[0], 1000.0, "sender woke %.1f ms late", g.ms[0]);
	printf("self: receiver woke %.3f ms after the send, sender %.3f ms "
	       "after the receive was posted\n",
	       g.ms[1], g.ms[0]);
}

Test(self, wake_pending_and_from_thread)
{
	struct tp_rank cc, *c = &cc;
	uint64_t t0;

	cr_assert_eq(rank_open(c, 0, 1), 0);
	t0 = ohc_time_ns();
	c->ops->iface_wait(c->iface, 200);
	cr_expect_geq(ohc_time_ns() - t0, 150000000ull, "wait slept");
	c->ops->iface_wake(c->iface);
	t0 = ohc_time_ns();
	c->ops->iface_wait(c->iface, 5000);
	cr_expect_lt(ohc_time_ns() - t0, 100000000ull, "pending wake counts");
	tp_rank_close(c);
}

/*
 * A peer that cancels its ep fails our queued send and our receive at
 * once; a peer that closed its iface refuses sends and fails ep_check.
 */
Test(self, cancel_and_close_reach_the_peer)
{
	struct tp_rank c0, c1;
	uint8_t buf[100];
	struct ohc_req s, r, s2;

	cr_assert_eq(rank_open(&c0, 0, 2), 0);
	cr_assert_eq(rank_open(&c1, 1, 2), 0);
	cr_assert_eq(rank_connect(&c0), 0);
	cr_assert_eq(rank_connect(&c1), 0);

	tp_req_send(&s, buf, sizeof(buf), 1);
	tp_req_recv(&r, buf, sizeof(buf), 1);
	cr_assert_eq(c0.ops->ep_send(c0.eps[1], &s), OHC_OK);
	cr_assert_eq(c0.ops->ep_recv(c0.eps[1], &r), OHC_OK);
	c1.ops->ep_cancel(c1.eps[0], OHC_ERR_TIMEOUT);
	cr_expect_eq(s.status, OHC_ERR_REMOTE, "queued send refused");
	c0.ops->iface_progress(c0.iface);
	cr_expect_eq(r.status, OHC_ERR_REMOTE, "receive from a canceled ep");
	tp_req_send(&s2, buf, sizeof(buf), 2);
	cr_expect_eq(c1.ops->ep_send(c1.eps[0], &s2), OHC_ERR_TIMEOUT,
		     "a canceled ep refuses posts");

	cr_expect_eq(c0.ops->ep_check(c0.eps[1]), OHC_OK);
	tp_rank_close(&c1);
	cr_expect_eq(c0.ops->ep_check(c0.eps[1]), OHC_ERR_REMOTE,
		     "peer closed");
	tp_rank_close(&c0);
}

/* Blobs: only ifaces of this process and session connect. */
Test(self, connect_checks_the_peer)
{
	struct tp_rank c0, c1;
	unsigned char forged[OHC_ADDR_MAX];
	struct ohc_ep *ep, *list[1];
	size_t len;

	cr_assert_eq(rank_open(&c0, 0, 2), 0);
	cr_assert_eq(rank_open(&c1, 1, 2), 0);
	cr_expect(c0.ops->iface_reachable(c0.iface, tp_sh->blob[1],
					  tp_sh->blob_len[1]));
	cr_expect_not(c0.ops->iface_reachable(c0.iface, tp_sh->blob[1],
					      tp_sh->blob_len[1] - 1));

	/* Rank 1's blob pointing at an iface that is not registered. */
	len = tp_sh->blob_len[1];
	memcpy(forged, tp_sh->blob[1], len);
	memset(forged + len - 8, 0x5a, 8);
	ep = calloc(1, c0.ops->ep_size);
	ep->iface = c0.iface;
	ep->peer = 1;
	cr_assert_eq(c0.ops->ep_init(c0.iface, ep, 1, forged, len), OHC_OK);
	list[0] = ep;
	cr_expect_eq(c0.ops->iface_connect(c0.iface, list, 1,
					   ohc_deadline_after_ms(100)),
		     OHC_ERR_INVALID);
	c0.ops->ep_fini(ep);
	/* Same pid, another process token (another pid namespace). */
	memcpy(forged, tp_sh->blob[1], len);
	forged[len - 16] ^= 1; /* the token precedes the iface pointer */
	cr_expect_not(c0.ops->iface_reachable(c0.iface, forged, len),
		      "same pid in another pid namespace");
	cr_expect_eq(c0.ops->ep_init(c0.iface, ep, 1, forged, len),
		     OHC_ERR_INVALID);
	/* A blob naming the wrong rank is refused at ep_init. */
	cr_expect_eq(c0.ops->ep_init(c0.iface, ep, 0, tp_sh->blob[1], len),
		     OHC_ERR_INVALID);
	free(ep);
	tp_rank_close(&c0);
	tp_rank_close(&c1);
}
