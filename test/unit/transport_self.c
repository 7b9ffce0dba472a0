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

/* All pairs (self included), one size at a time, everything posted. */
static int matrix_rank(int rank, int nranks, void *arg)
{
	struct rctx cc, *c = &cc;
	const size_t slice = 256u << 10;
	const size_t sizes[] = {
		0,	 1,	    63,	   64,	      65,
		4095,	 slice - 1, slice, slice + 1, 3 * slice + 7,
		16 * MIB};
	uint8_t *sb[MAXR], *rb[MAXR];
	struct ohc_req sreq[MAXR], rreq[MAXR], *all[2 * MAXR];

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	for (int r = 0; r < nranks; r++) {
		sb[r] = malloc(16 * MIB + 1);
		rb[r] = malloc(16 * MIB + 1);
	}
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t len = sizes[k];
		int n = 0;

		for (int r = 0; r < nranks; r++) {
			fill(sb[r], len, rank, r, (int)k);
			memset(rb[r], 0xee, len + 1);
		}
		pthread_barrier_wait(&g.bar);
		for (int d = 0; d < nranks; d++) {
			int to = (rank + d) % nranks;
			int from = (rank - d + nranks) % nranks;

			req_send(&sreq[to], sb[to], len, k);
			CHECK(c->ops->ep_send(c->eps[to], &sreq[to]) == OHC_OK,
			      "ep_send");
			req_recv(&rreq[from], rb[from], len, k);
			CHECK(c->ops->ep_recv(c->eps[from], &rreq[from]) ==
				      OHC_OK,
			      "ep_recv");
			all[n++] = &sreq[to];
			all[n++] = &rreq[from];
		}
		CHECK(drive(c, all, n, 100, 60000) == 0, "size %zu timed out",
		      len);
		for (int r = 0; r < nranks; r++) {
			long bad;

			CHECK(sreq[r].status == OHC_OK, "send to %d", r);
			CHECK(rreq[r].status == OHC_OK, "recv from %d", r);
			bad = verify(rb[r], len, r, rank, (int)k);
			CHECK(bad < 0, "size %zu from %d: byte %ld", len, r,
			      bad);
			CHECK(rb[r][len] == 0xee, "overrun");
		}
	}
	pthread_barrier_wait(&g.bar);
	for (int r = 0; r < nranks; r++) {
		free(sb[r]);
		free(rb[r]);
	}
	rank_down(c);
	return 0;
}

Test(self, matrix_4_threads)
{
	setup_n(4);
	cr_assert_eq(ohc_test_thread_ranks(4, matrix_rank, NULL), 0);
}

/* Many messages posted at once per ep keep FIFO matching. */
#define NFIFO 40

static int fifo_rank(int rank, int nranks, void *arg)
{
	struct rctx cc, *c = &cc;
	static __thread struct ohc_req sreq[MAXR][NFIFO], rreq[MAXR][NFIFO];
	struct ohc_req *all[2 * MAXR * NFIFO];
	uint8_t *sb[MAXR][NFIFO], *rb[MAXR][NFIFO];
	int n = 0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	for (int r = 0; r < nranks; r++) {
		for (int i = 0; i < NFIFO; i++) {
			size_t len = (size_t)(i * 7919 + rank) % 90000;
			size_t rlen = (size_t)(i * 7919 + r) % 90000;

			sb[r][i] = malloc(len + 1);
			rb[r][i] = malloc(rlen + 1);
			fill(sb[r][i], len, rank, r, i);
			req_send(&sreq[r][i], sb[r][i], len, (uint64_t)i);
			req_recv(&rreq[r][i], rb[r][i], rlen, (uint64_t)i);
		}
	}
	for (int r = 0; r < nranks; r++) {
		for (int i = 0; i < NFIFO; i++) {
			CHECK(c->ops->ep_send(c->eps[r], &sreq[r][i]) == OHC_OK,
			      "send");
			CHECK(c->ops->ep_recv(c->eps[r], &rreq[r][i]) == OHC_OK,
			      "recv");
			all[n++] = &sreq[r][i];
			all[n++] = &rreq[r][i];
		}
	}
	CHECK(drive(c, all, n, 100, 60000) == 0, "fifo timed out");
	for (int r = 0; r < nranks; r++) {
		for (int i = 0; i < NFIFO; i++) {
			CHECK(rreq[r][i].status == OHC_OK, "recv %d from %d", i,
			      r);
			CHECK(verify(rb[r][i], rreq[r][i].len, r, rank, i) < 0,
			      "message %d from %d has wrong bytes", i, r);
			free(sb[r][i]);
			free(rb[r][i]);
		}
	}
	pthread_barrier_wait(&g.bar);
	rank_down(c);
	return 0;
}

Test(self, fifo_many_posted)
{
	setup_n(4);
	cr_assert_eq(ohc_test_thread_ranks(4, fifo_rank, NULL), 0);
}

static void add_i32(void *dst, const void *a, const void *b, size_t count)
{
	int32_t *d = dst;
	const int32_t *x = a, *y = b;

	for (size_t i = 0; i < count; i++)
		d[i] = x[i] + y[i];
}

static int32_t rval(int rank, size_t i)
{
	return (int32_t)(rank * 1000003 + (int)(i * 7) - 5000);
}

#define RCOUNT 300001u

/* REDUCE into one accumulator and REDUCE_TO per peer, self included. */
static int reduce_rank(int rank, int nranks, void *arg)
{
	struct rctx cc, *c = &cc;
	int32_t *mine = malloc(RCOUNT * 4), *acc = malloc(RCOUNT * 4);
	int32_t *to[MAXR];
	struct ohc_req sreq[MAXR][2], rreq[MAXR], treq[MAXR], *all[4 * MAXR];
	int n = 0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	for (size_t i = 0; i < RCOUNT; i++) {
		mine[i] = rval(rank, i);
		acc[i] = 0;
	}
	for (int r = 0; r < nranks; r++) {
		to[r] = malloc(RCOUNT * 4);
		req_send(&sreq[r][0], mine, RCOUNT * 4, 1);
		req_send(&sreq[r][1], mine, RCOUNT * 4, 2);
		req_recv(&rreq[r], acc, RCOUNT * 4, 1);
		rreq[r].kind = OHC_RECV_REDUCE;
		rreq[r].reduce = add_i32;
		rreq[r].esize = 4;
		req_recv(&treq[r], to[r], RCOUNT * 4, 2);
		treq[r].kind = OHC_RECV_REDUCE_TO;
		treq[r].src2 = mine;
		treq[r].reduce = add_i32;
		treq[r].esize = 4;
		CHECK(c->ops->ep_recv(c->eps[r], &rreq[r]) == OHC_OK, "recv");
		CHECK(c->ops->ep_recv(c->eps[r], &treq[r]) == OHC_OK, "recv");
		CHECK(c->ops->ep_send(c->eps[r], &sreq[r][0]) == OHC_OK,
		      "send");
		CHECK(c->ops->ep_send(c->eps[r], &sreq[r][1]) == OHC_OK,
		      "send");
		all[n++] = &rreq[r];
		all[n++] = &treq[r];
		all[n++] = &sreq[r][0];
		all[n++] = &sreq[r][1];
	}
	CHECK(drive(c, all, n, 100, 60000) == 0, "reduce timed out");
	for (size_t i = 0; i < RCOUNT; i++) {
		int32_t want = 0;

		for (int r = 0; r < nranks; r++) {
			want += rval(r, i);
			CHECK(to[r][i] == rval(rank, i) + rval(r, i),
			      "reduce_to from %d: element %zu", r, i);
		}
		CHECK(acc[i] == want, "reduce: element %zu is %d, want %d", i,
		      acc[i], want);
	}
	pthread_barrier_wait(&g.bar);
	for (int r = 0; r < nranks; r++)
		free(to[r]);
	free(mine);
	free(acc);
	rank_down(c);
	return 0;
}

Test(self, reduce_and_reduce_to)
{
	setup_n(4);
	cr_assert_eq(ohc_test_thread_ranks(4, reduce_rank, NULL), 0);
}

/*
 * Desync: rank 0 sends seq 1, 2, 3, 4 to rank 1, which expects 1, 99, 3
 * with a wrong length, and 4. Both sides of a mismatch fail with
 * OHC_ERR_DESYNC and see the other's signature in got_sig.
 */
static int desync_rank(int rank, int nranks, void *arg)
{
	struct rctx cc, *c = &cc;
	const size_t lens[4] = {1000, 600000, 5000, 70000};
	uint8_t *buf[4];
	struct ohc_req q[4], *all[4];

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	for (int i = 0; i < 4; i++) {
		buf[i] = malloc(lens[i]);
		all[i] = &q[i];
	}
	if (rank == 0) {
		for (int i = 0; i < 4; i++) {
			fill(buf[i], lens[i], 0, 1, i);
			req_send(&q[i], buf[i], lens[i], (uint64_t)i + 1);
			CHECK(c->ops->ep_send(c->eps[1], &q[i]) == OHC_OK,
			      "send");
		}
		CHECK(drive(c, all, 4, 100, 30000) == 0, "sends timed out");
		CHECK(q[0].status == OHC_OK && q[3].status == OHC_OK, "sends");
		CHECK(q[1].status == OHC_ERR_DESYNC && q[1].got_sig.seq == 99,
		      "sender of B: %d", q[1].status);
		CHECK(q[2].status == OHC_ERR_DESYNC &&
			      q[2].got_sig.len == lens[2] - 1,
		      "sender of C: %d", q[2].status);
	} else if (rank == 1) {
		req_recv(&q[0], buf[0], lens[0], 1);
		req_recv(&q[1], buf[1], lens[1], 99);
		req_recv(&q[2], buf[2], lens[2] - 1, 3);
		req_recv(&q[3], buf[3], lens[3], 4);
		for (int i = 0; i < 4; i++)
			CHECK(c->ops->ep_recv(c->eps[0], &q[i]) == OHC_OK,
			      "recv");
		CHECK(drive(c, all, 4, 100, 30000) == 0, "recvs timed out");
		CHECK(q[0].status == OHC_OK, "A");
		CHECK(verify(buf[0], lens[0], 0, 1, 0) < 0, "A bytes");
		CHECK(q[1].status == OHC_ERR_DESYNC && q[1].got_sig.seq == 2 &&
			      q[1].got_sig.len == lens[1],
		      "B: %d", q[1].status);
		CHECK(q[2].status == OHC_ERR_DESYNC && q[2].got_sig.seq == 3 &&
			      q[2].got_sig.len == lens[2],
		      "C: %d", q[2].status);
		CHECK(q[3].status == OHC_OK, "D");
		CHECK(verify(buf[3], lens[3], 0, 1, 3) < 0, "D bytes");
	}
	pthread_barrier_wait(&g.bar);
	for (int i = 0; i < 4; i++)
		free(buf[i]);
	rank_down(c);
	return 0;
}

Test(self, desync_sig_and_length)
{
	setup_n(2);
	cr_assert_eq(ohc_test_thread_ranks(2, desync_rank, NULL), 0);
}

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
