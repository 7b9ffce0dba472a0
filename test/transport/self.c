/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The self transport: ranks as threads of one process (and a rank talking
 * to itself). Blobs travel through a static table; no bootstrap.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include "helpers/ohc_test.h"
#include "transport/transport.h"
#include "util/time.h"

#define MAXR 4
#define MIB (1u << 20)

static struct {
	pthread_barrier_t bar;
	uint64_t session;
	size_t blob_len[MAXR];
	unsigned char blob[MAXR][OHC_ADDR_MAX];
	atomic_int flag[MAXR];
	_Atomic uint64_t t_mark;
	double ms[MAXR];
	int fds_before;
} g;

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "rank %d: ", c->rank);                         \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);             \
		return 1;                                                      \
	} while (0)

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			FAIL(__VA_ARGS__);                                     \
	} while (0)

static void setup_n(unsigned nranks)
{
	memset(&g, 0, sizeof(g));
	pthread_barrier_init(&g.bar, NULL, nranks);
	cr_assert(getrandom(&g.session, sizeof(g.session), 0) ==
		  sizeof(g.session));
	g.fds_before = ohc_test_count_fds();
}

static void teardown(void)
{
	pthread_barrier_destroy(&g.bar);
	cr_expect_eq(ohc_test_count_fds(), g.fds_before, "fd leak");
}

TestSuite(self, .fini = teardown, .timeout = 120);

struct rctx {
	int rank, nranks;
	const struct ohc_transport_ops *ops;
	struct ohc_iface *iface;
	struct ohc_ep *eps[MAXR];
};

static int rank_open(struct rctx *c, int rank, int nranks)
{
	struct ohc_transport_params p = {
		.rank = (uint32_t)rank,
		.nranks = (uint32_t)nranks,
		.session = g.session,
		.hostid = "test-host",
	};

	memset(c, 0, sizeof(*c));
	c->rank = rank;
	c->nranks = nranks;
	c->ops = ohc_transport_get("self");
	CHECK(c->ops, "no self transport");
	c->iface = calloc(1, c->ops->iface_size);
	c->iface->ops = c->ops;
	c->iface->rank = p.rank;
	c->iface->nranks = p.nranks;
	CHECK(c->ops->iface_open(c->iface, &p) == OHC_OK, "iface_open");
	g.blob_len[rank] = OHC_ADDR_MAX;
	CHECK(c->ops->iface_address(c->iface, g.blob[rank],
				    &g.blob_len[rank]) == OHC_OK,
	      "iface_address");
	return 0;
}

/* Eps to every rank, ourselves included, then connect them. */
static int rank_connect(struct rctx *c)
{
	struct ohc_ep *list[MAXR];

	for (int r = 0; r < c->nranks; r++) {
		CHECK(c->ops->iface_reachable(c->iface, g.blob[r],
					      g.blob_len[r]),
		      "rank %d not reachable", r);
		c->eps[r] = calloc(1, c->ops->ep_size);
		c->eps[r]->iface = c->iface;
		c->eps[r]->peer = (uint32_t)r;
		CHECK(c->ops->ep_init(c->iface, c->eps[r], (uint32_t)r,
				      g.blob[r], g.blob_len[r]) == OHC_OK,
		      "ep_init");
		list[r] = c->eps[r];
	}
	CHECK(c->ops->iface_connect(c->iface, list, (unsigned)c->nranks,
				    ohc_deadline_after_ms(5000)) == OHC_OK,
	      "iface_connect");
	return 0;
}

static int rank_up(struct rctx *c, int rank, int nranks)
{
	if (rank_open(c, rank, nranks))
		return 1;
	pthread_barrier_wait(&g.bar);
	return rank_connect(c);
}

static void rank_down(struct rctx *c)
{
	for (int r = 0; r < MAXR; r++) {
		if (!c->eps[r])
			continue;
		c->ops->ep_fini(c->eps[r]);
		free(c->eps[r]);
	}
	c->ops->iface_close(c->iface);
	free(c->iface);
}

static int drive(struct rctx *c, struct ohc_req **reqs, int n, int wait_ms,
		 int timeout_ms)
{
	uint64_t deadline = ohc_deadline_after_ms((uint64_t)timeout_ms);

	for (;;) {
		int pending = 0;
		unsigned moved = c->ops->iface_progress(c->iface);

		for (int i = 0; i < n; i++)
			pending += __atomic_load_n(&reqs[i]->status,
						   __ATOMIC_ACQUIRE) ==
				   OHC_INPROGRESS;
		if (!pending)
			return 0;
		if (ohc_deadline_passed(deadline)) {
			fprintf(stderr, "rank %d: %d requests pending\n",
				c->rank, pending);
			return -1;
		}
		if (!moved)
			c->ops->iface_wait(c->iface, wait_ms);
	}
}

/* Test bytes: word w of (src, dst, idx) is a hash; cheap to fill/verify. */
static uint64_t pat_word(size_t w, int src, int dst, int idx)
{
	uint64_t seed = (uint64_t)(src + 1) * 0x9e3779b97f4a7c15ull ^
			(uint64_t)(dst + 1) * 0xc2b2ae3d27d4eb4full ^
			(uint64_t)(idx + 1) * 0x165667b19e3779f9ull;

	return ((uint64_t)w + 1) * 0xff51afd7ed558ccdull ^ seed;
}

static void fill(uint8_t *b, size_t len, int src, int dst, int idx)
{
	size_t w;

	for (w = 0; w < len / 8; w++) {
		uint64_t v = pat_word(w, src, dst, idx);

		memcpy(b + 8 * w, &v, 8);
	}
	for (size_t i = 8 * w; i < len; i++)
		b[i] = (uint8_t)(pat_word(w, src, dst, idx) >> (8 * (i % 8)));
}

/* Index of the first wrong byte, or -1. */
static long verify(const uint8_t *b, size_t len, int src, int dst, int idx)
{
	size_t w;

	for (w = 0; w < len / 8; w++) {
		uint64_t v = pat_word(w, src, dst, idx);

		if (memcmp(b + 8 * w, &v, 8))
			break;
	}
	for (size_t i = 8 * w; i < len; i++)
		if (b[i] !=
		    (uint8_t)(pat_word(i / 8, src, dst, idx) >> (8 * (i % 8))))
			return (long)i;
	return -1;
}

static void req_send(struct ohc_req *q, const void *buf, size_t len,
		     uint64_t seq)
{
	memset(q, 0, sizeof(*q));
	q->sig.seq = seq;
	q->sig.len = len;
	q->sbuf = buf;
	q->len = len;
	q->status = OHC_INPROGRESS;
}

static void req_recv(struct ohc_req *q, void *buf, size_t len, uint64_t seq)
{
	memset(q, 0, sizeof(*q));
	q->sig.seq = seq;
	q->sig.len = len;
	q->dst = buf;
	q->len = len;
	q->kind = OHC_RECV_COPY;
	q->status = OHC_INPROGRESS;
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
	struct rctx c0, c1;
	size_t len = 3 * MIB + 5;
	uint8_t *sbuf = malloc(len), *rbuf = malloc(len);
	struct ohc_req s, r;

	setup_n(1);
	cr_assert_eq(rank_open(&c0, 0, 2), 0);
	cr_assert_eq(rank_open(&c1, 1, 2), 0);
	c0.rank = 0;
	cr_assert_eq(rank_connect(&c0), 0);
	cr_assert_eq(rank_connect(&c1), 0);

	fill(sbuf, len, 0, 1, 0);
	req_send(&s, sbuf, len, 5);
	cr_assert_eq(c0.ops->ep_send(c0.eps[1], &s), OHC_OK);
	for (int i = 0; i < 100; i++) {
		c0.ops->iface_progress(c0.iface);
		c1.ops->iface_progress(c1.iface);
	}
	cr_expect_eq(s.status, OHC_INPROGRESS, "send done without receive");
	cr_expect_eq(s.done, 0);

	fill(sbuf, len, 0, 1, 7); /* changed after posting: must arrive */
	zc_lo = sbuf;
	zc_hi = sbuf + len;
	req_recv(&r, rbuf, len, 5);
	r.kind = OHC_RECV_REDUCE; /* a copy through the spy */
	r.reduce = spy_copy;
	r.esize = 1;
	cr_assert_eq(c1.ops->ep_recv(c1.eps[0], &r), OHC_OK);
	while (r.status == OHC_INPROGRESS)
		c1.ops->iface_progress(c1.iface);
	cr_expect_eq(r.status, OHC_OK);
	cr_expect_eq(s.status, OHC_OK, "send completes with the receive");
	cr_expect_eq(verify(rbuf, len, 0, 1, 7), -1, "data at receive time");
	cr_expect_gt(atomic_load(&zc_calls), 1, "delivered in slices");
	cr_expect_eq(atomic_load(&zc_outside), 0,
		     "every fragment is the sender's own memory");

	rank_down(&c0);
	rank_down(&c1);
	free(sbuf);
	free(rbuf);
}

/*
 * Waiting sleeps and is woken: rank 1 waits for a message rank 0 sends
 * after 300 ms; rank 0 then waits for a send that rank 1 receives 300 ms
 * later. Both use 5 s waits: only a doorbell makes them return early.
 */
static double thread_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static int wait_rank(int rank, int nranks, void *arg)
{
	struct rctx cc, *c = &cc;
	uint8_t buf[1000];
	struct ohc_req q, *all[1] = {&q};
	double cpu0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	pthread_barrier_wait(&g.bar);
	cpu0 = thread_cpu();
	if (rank == 0) {
		usleep(300000);
		req_send(&q, buf, sizeof(buf), 1);
		atomic_store(&g.t_mark, ohc_time_ns());
		CHECK(c->ops->ep_send(c->eps[1], &q) == OHC_OK, "send");
		CHECK(drive(c, all, 1, 5000, 10000) == 0, "send 1");
		/* Now a send that waits for its receiver. */
		req_send(&q, buf, sizeof(buf), 2);
		CHECK(c->ops->ep_send(c->eps[1], &q) == OHC_OK, "send");
		CHECK(drive(c, all, 1, 5000, 10000) == 0, "send 2");
		g.ms[0] =
			(double)(ohc_time_ns() - atomic_load(&g.t_mark)) / 1e6;
	} else {
		req_recv(&q, buf, sizeof(buf), 1);
		CHECK(c->ops->ep_recv(c->eps[0], &q) == OHC_OK, "recv");
		CHECK(drive(c, all, 1, 5000, 10000) == 0, "recv 1");
		g.ms[1] =
			(double)(ohc_time_ns() - atomic_load(&g.t_mark)) / 1e6;
		usleep(300000);
		req_recv(&q, buf, sizeof(buf), 2);
		atomic_store(&g.t_mark, ohc_time_ns());
		CHECK(c->ops->ep_recv(c->eps[0], &q) == OHC_OK, "recv");
		CHECK(drive(c, all, 1, 5000, 10000) == 0, "recv 2");
	}
	CHECK(thread_cpu() - cpu0 < 0.1, "waiting used %.3f s of CPU",
	      thread_cpu() - cpu0);
	CHECK(q.status == OHC_OK, "status");
	pthread_barrier_wait(&g.bar);
	rank_down(c);
	return 0;
}

Test(self, wait_sleeps_and_is_woken)
{
	setup_n(2);
	cr_assert_eq(ohc_test_thread_ranks(2, wait_rank, NULL), 0);
	cr_expect_lt(g.ms[1], 1000.0, "receiver woke %.1f ms late", g.ms[1]);
	cr_expect_lt(g.ms[0], 1000.0, "sender woke %.1f ms late", g.ms[0]);
	printf("self: receiver woke %.3f ms after the send, sender %.3f ms "
	       "after the receive was posted\n",
	       g.ms[1], g.ms[0]);
}

Test(self, wake_pending_and_from_thread)
{
	struct rctx cc, *c = &cc;
	uint64_t t0;

	setup_n(1);
	cr_assert_eq(rank_open(c, 0, 1), 0);
	t0 = ohc_time_ns();
	c->ops->iface_wait(c->iface, 200);
	cr_expect_geq(ohc_time_ns() - t0, 150000000ull, "wait slept");
	c->ops->iface_wake(c->iface);
	t0 = ohc_time_ns();
	c->ops->iface_wait(c->iface, 5000);
	cr_expect_lt(ohc_time_ns() - t0, 100000000ull, "pending wake counts");
	rank_down(c);
}

/*
 * A peer that cancels its ep fails our queued send and our receive at
 * once; a peer that closed its iface refuses sends and fails ep_check.
 */
Test(self, cancel_and_close_reach_the_peer)
{
	struct rctx c0, c1;
	uint8_t buf[100];
	struct ohc_req s, r, s2;

	setup_n(1);
	cr_assert_eq(rank_open(&c0, 0, 2), 0);
	cr_assert_eq(rank_open(&c1, 1, 2), 0);
	cr_assert_eq(rank_connect(&c0), 0);
	cr_assert_eq(rank_connect(&c1), 0);

	req_send(&s, buf, sizeof(buf), 1);
	req_recv(&r, buf, sizeof(buf), 1);
	cr_assert_eq(c0.ops->ep_send(c0.eps[1], &s), OHC_OK);
	cr_assert_eq(c0.ops->ep_recv(c0.eps[1], &r), OHC_OK);
	c1.ops->ep_cancel(c1.eps[0], OHC_ERR_TIMEOUT);
	cr_expect_eq(s.status, OHC_ERR_REMOTE, "queued send refused");
	c0.ops->iface_progress(c0.iface);
	cr_expect_eq(r.status, OHC_ERR_REMOTE, "receive from a canceled ep");
	req_send(&s2, buf, sizeof(buf), 2);
	cr_expect_eq(c1.ops->ep_send(c1.eps[0], &s2), OHC_ERR_TIMEOUT,
		     "a canceled ep refuses posts");

	cr_expect_eq(c0.ops->ep_check(c0.eps[1]), OHC_OK);
	rank_down(&c1);
	cr_expect_eq(c0.ops->ep_check(c0.eps[1]), OHC_ERR_REMOTE,
		     "peer closed");
	rank_down(&c0);
}

/* Blobs: only ifaces of this process and session connect. */
Test(self, connect_checks_the_peer)
{
	struct rctx c0, c1;
	unsigned char forged[OHC_ADDR_MAX];
	struct ohc_ep *ep, *list[1];
	size_t len;

	setup_n(1);
	cr_assert_eq(rank_open(&c0, 0, 2), 0);
	cr_assert_eq(rank_open(&c1, 1, 2), 0);
	cr_expect(c0.ops->iface_reachable(c0.iface, g.blob[1], g.blob_len[1]));
	cr_expect_not(c0.ops->iface_reachable(c0.iface, g.blob[1],
					      g.blob_len[1] - 1));

	/* Rank 1's blob pointing at an iface that is not registered. */
	len = g.blob_len[1];
	memcpy(forged, g.blob[1], len);
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
	memcpy(forged, g.blob[1], len);
	forged[len - 16] ^= 1; /* the token precedes the iface pointer */
	cr_expect_not(c0.ops->iface_reachable(c0.iface, forged, len),
		      "same pid in another pid namespace");
	cr_expect_eq(c0.ops->ep_init(c0.iface, ep, 1, forged, len),
		     OHC_ERR_INVALID);
	/* A blob naming the wrong rank is refused at ep_init. */
	cr_expect_eq(c0.ops->ep_init(c0.iface, ep, 0, g.blob[1], len),
		     OHC_ERR_INVALID);
	free(ep);
	rank_down(&c0);
	rank_down(&c1);
}
