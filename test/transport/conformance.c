/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transport conformance: the same tests over every transport, through
 * the transport ops alone (core/tp.h), so a transport that behaves
 * differently from the others shows here. self runs its ranks as threads
 * of this process (its peers are threads: the ranks of HcclCommInitAll),
 * shm and verbs as forked processes; verbs needs an RDMA device and skips
 * outside the Soft-RoCE VM, naming why. What each transport does on its
 * own (credits, rendezvous, replay, cross-memory attach, liveness) stays
 * in test/transport/<name>.c.
 *
 * Every case checks the bytes, the request states and that nothing is
 * left: fds after teardown.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/ohc_test.h"
#include "transport/harness.h"
#include "transport/transport.h"
#include "util/config.h"
#include "util/time.h"

#define MAXR 4 /* ranks of a case */
#define MIB (1024u * 1024u)

static void setup(void)
{
	tp_setup(0);
	/* the defaults, whatever the caller's environment says */
	unsetenv("OPENHCCL_RDMA_RNDV_KB");
	unsetenv("OPENHCCL_SHM_CMA_KB");
	ohc_env_reload();
}

TestSuite(conformance, .init = setup, .fini = tp_teardown, .timeout = 300);

static int rank_up(struct tp_rank *c, const char *tp, int rank, int nranks)
{
	struct ohc_transport_params p = {
		.hostid = "conformance-host",
		.numa_node = -1,
		.ring_bytes = (size_t)ohc_env()->shm_ring_kb * 1024,
	};

	return tp_rank_up(c, tp, rank, nranks, &p, 60000);
}

static int rank_down(struct tp_rank *c, int threads)
{
	tp_barrier(c->nranks); /* nobody closes under a peer still sending */
	tp_rank_close(c);
	/* threads share the fd table: the suite checks it once at the end */
	CHECK(threads || ohc_test_count_fds() == c->fds_before,
	      "fd leak: %d -> %d", c->fds_before, ohc_test_count_fds());
	return 0;
}

/* Progress until no request is in progress; -1 on timeout. */
static int drive(struct tp_rank *c, struct ohc_req **reqs, int n)
{
	return tp_drive(c, reqs, n, 10, 120000);
}

static void add_u8(void *dst, const void *a, const void *b, size_t count)
{
	uint8_t *d = dst;
	const uint8_t *x = a, *y = b;

	for (size_t i = 0; i < count; i++)
		d[i] = (uint8_t)(x[i] + y[i]);
}

/* ---- running ranks: threads (self) or processes (shm, verbs) -------- */

typedef int (*rank_fn)(struct tp_rank *c, int threads);

struct run {
	const char *tp;
	int nranks, threads;
	rank_fn fn;
};

struct thread_arg {
	const struct run *run;
	int rank, rc;
};

static int rank_main(const struct run *run, int rank)
{
	struct tp_rank c;

	if (rank_up(&c, run->tp, rank, run->nranks)) {
		tp_barrier(run->nranks); /* the others would wait for us */
		return 1;
	}
	if (run->fn(&c, run->threads)) {
		tp_barrier(run->nranks);
		return 1;
	}
	return rank_down(&c, run->threads);
}

static void *thread_main(void *p)
{
	struct thread_arg *a = p;

	a->rc = rank_main(a->run, a->rank);
	return NULL;
}

static const struct run *fork_run;

static int fork_main(int rank, int nranks, void *arg)
{
	(void)nranks;
	(void)arg;
	return rank_main(fork_run, rank);
}

static void run_on(const char *tp, int nranks, rank_fn fn)
{
	struct run run = {.tp = tp, .nranks = nranks, .fn = fn};
	int fds = ohc_test_count_fds();

	if (!strcmp(tp, "verbs") && !tp_have_rdma())
		cr_skip_test("verbs: no RDMA device here (runs in the "
			     "Soft-RoCE VM: ci/soft-roce/vm-suites.sh)");
	run.threads = !strcmp(tp, "self");
	if (run.threads) {
		pthread_t t[MAXR];
		struct thread_arg a[MAXR];
		int bad = 0;

		for (int r = 0; r < nranks; r++) {
			a[r] = (struct thread_arg){.run = &run, .rank = r};
			cr_assert_eq(
				pthread_create(&t[r], NULL, thread_main, &a[r]),
				0);
		}
		for (int r = 0; r < nranks; r++) {
			pthread_join(t[r], NULL);
			bad |= a[r].rc;
		}
		cr_assert_eq(bad, 0, "a rank failed (stderr says why)");
		cr_assert_eq(ohc_test_count_fds(), fds, "fd leak");
		return;
	}
	fork_run = &run;
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(nranks, fork_main, NULL, 280), 0);
}

/* ---- the cases ------------------------------------------------------ */

/*
 * Every rank sends one message of each size to every other rank, all
 * pairs at once (one size at a time, everything of it posted before any
 * progress): the bytes arrive whole, nothing is written past the end.
 */
static int exchange_rank(struct tp_rank *c, int threads)
{
	static const size_t sizes[] = {
		0, 1, 63, 4095, 65536 + 3, 1 * MIB + 17, 4 * MIB};
	uint8_t *sb[MAXR] = {0}, *rb[MAXR] = {0};
	struct ohc_req sreq[MAXR], rreq[MAXR], *all[2 * MAXR];
	int bad = 0;

	(void)threads;
	for (int r = 0; r < c->nranks; r++) {
		sb[r] = malloc(4 * MIB + 64);
		rb[r] = malloc(4 * MIB + 64);
		CHECK(sb[r] && rb[r], "malloc");
	}
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]) && !bad; k++) {
		size_t len = sizes[k];
		int n = 0;

		for (int r = 0; r < c->nranks; r++) {
			if (r == c->rank)
				continue;
			tp_fill(sb[r], len, c->rank, r, (int)k);
			memset(rb[r], 0xee, len + 1);
		}
		if (tp_post_all_pairs(c, sb, rb, len, k, sreq, rreq, all, &n))
			return 1;
		CHECK(drive(c, all, n) == 0, "size %zu: timeout", len);
		for (int r = 0; r < c->nranks; r++) {
			long at;

			if (r == c->rank)
				continue;
			CHECK(sreq[r].status == OHC_OK &&
				      rreq[r].status == OHC_OK,
			      "size %zu with %d: send %s, recv %s", len, r,
			      ohc_status_str(sreq[r].status),
			      ohc_status_str(rreq[r].status));
			at = tp_verify(rb[r], len, r, c->rank, (int)k);
			CHECK(at < 0, "size %zu from %d: byte %ld wrong", len,
			      r, at);
			CHECK(rb[r][len] == 0xee, "size %zu from %d: overrun",
			      len, r);
		}
		tp_barrier(c->nranks);
	}
	for (int r = 0; r < c->nranks; r++) {
		free(sb[r]);
		free(rb[r]);
	}
	return 0;
}

/*
 * Many messages posted on one pair before any progress, of varied sizes,
 * both directions: each receive gets the message of the same position
 * (FIFO matching), whatever path each size takes.
 */
#define FIFO_N 40
static int fifo_rank(struct tp_rank *c, int threads)
{
	int peer = c->rank ^ 1;
	static __thread struct ohc_req s[FIFO_N], r[FIFO_N];
	struct ohc_req *all[2 * FIFO_N];
	uint8_t *sb[FIFO_N], *rb[FIFO_N];
	size_t len[FIFO_N];

	(void)threads;
	for (int i = 0; i < FIFO_N; i++) {
		len[i] = (size_t)(i * 7919) % (300 * 1024) + (size_t)i;
		sb[i] = malloc(len[i] + 1);
		rb[i] = malloc(len[i] + 1);
		CHECK(sb[i] && rb[i], "malloc");
		tp_fill(sb[i], len[i], c->rank, peer, i);
		memset(rb[i], 0, len[i] + 1);
		tp_req_recv(&r[i], rb[i], len[i], (uint64_t)i);
		CHECK(c->ops->ep_recv(c->eps[peer], &r[i]) == OHC_OK, "recv");
		tp_req_send(&s[i], sb[i], len[i], (uint64_t)i);
		CHECK(c->ops->ep_send(c->eps[peer], &s[i]) == OHC_OK, "send");
		all[i] = &r[i];
		all[FIFO_N + i] = &s[i];
	}
	CHECK(drive(c, all, 2 * FIFO_N) == 0, "timeout");
	for (int i = 0; i < FIFO_N; i++) {
		long at;

		CHECK(s[i].status == OHC_OK && r[i].status == OHC_OK,
		      "msg %d: send %s, recv %s", i,
		      ohc_status_str(s[i].status), ohc_status_str(r[i].status));
		at = tp_verify(rb[i], len[i], peer, c->rank, i);
		CHECK(at < 0, "msg %d (%zu bytes): byte %ld wrong", i, len[i],
		      at);
		free(sb[i]);
		free(rb[i]);
	}
	return 0;
}

/*
 * Receives that reduce: REDUCE (dst = dst + message) and REDUCE_TO
 * (dst = src2 + message), small and large, both directions.
 */
static int reduce_rank(struct tp_rank *c, int threads)
{
	static const size_t sizes[] = {1000, 1 * MIB + 5};
	int peer = c->rank ^ 1;

	(void)threads;
	for (size_t k = 0; k < 2; k++) {
		size_t len = sizes[k];
		uint8_t *sb = malloc(len), *rd = malloc(len), *rt = malloc(len),
			*src2 = malloc(len), *sb2 = malloc(len);
		struct ohc_req s[2], r[2],
			*all[4] = {&s[0], &s[1], &r[0], &r[1]};

		CHECK(sb && rd && rt && src2 && sb2, "malloc");
		tp_fill(sb, len, c->rank, peer, (int)k);
		tp_fill(sb2, len, c->rank, peer, 10 + (int)k);
		tp_fill(rd, len, c->rank, c->rank, 20 + (int)k);
		tp_fill(src2, len, c->rank, c->rank, 30 + (int)k);
		tp_req_recv(&r[0], rd, len, 2 * k);
		r[0].kind = OHC_RECV_REDUCE;
		tp_req_recv(&r[1], rt, len, 2 * k + 1);
		r[1].kind = OHC_RECV_REDUCE_TO;
		r[1].src2 = src2;
		for (int i = 0; i < 2; i++) {
			r[i].reduce = add_u8;
			r[i].esize = 1;
			CHECK(c->ops->ep_recv(c->eps[peer], &r[i]) == OHC_OK,
			      "recv");
		}
		tp_req_send(&s[0], sb, len, 2 * k);
		tp_req_send(&s[1], sb2, len, 2 * k + 1);
		for (int i = 0; i < 2; i++)
			CHECK(c->ops->ep_send(c->eps[peer], &s[i]) == OHC_OK,
			      "send");
		CHECK(drive(c, all, 4) == 0, "timeout");
		for (int i = 0; i < 2; i++)
			CHECK(s[i].status == OHC_OK && r[i].status == OHC_OK,
			      "%zu bytes, %s: send %s, recv %s", len,
			      i ? "REDUCE_TO" : "REDUCE",
			      ohc_status_str(s[i].status),
			      ohc_status_str(r[i].status));
		for (size_t j = 0; j < len; j++) {
			uint8_t want_d =
				(uint8_t)(tp_pat(j, c->rank, c->rank,
						 20 + (int)k) +
					  tp_pat(j, peer, c->rank, (int)k));
			uint8_t want_t = (uint8_t)(tp_pat(j, c->rank, c->rank,
							  30 + (int)k) +
						   tp_pat(j, peer, c->rank,
							  10 + (int)k));

			CHECK(rd[j] == want_d, "%zu bytes: REDUCE byte %zu",
			      len, j);
			CHECK(rt[j] == want_t, "%zu bytes: REDUCE_TO byte %zu",
			      len, j);
		}
		free(sb);
		free(rd);
		free(rt);
		free(src2);
		free(sb2);
		tp_barrier(c->nranks);
	}
	return 0;
}

/*
 * A receive whose signature differs from the message's (another sequence
 * number; or the same signature and another length) fails with
 * OHC_ERR_DESYNC and names what came (got_sig); the message before it
 * arrives as usual. The sender's side of the mismatched message may
 * complete or fail with OHC_ERR_DESYNC; nothing else. What follows a
 * mismatch is not part of the contract (the executor cancels the eps of
 * a failed step): shm and self drop the mismatched message and go on,
 * verbs keeps it in its ring, so every later receive meets it.
 */
static int desync_by_length; /* set before the ranks start */

static int desync_rank(struct tp_rank *c, int threads)
{
	static const size_t lens[2] = {1000, 20000};
	uint8_t *buf[2];
	struct ohc_req q[2], *all[2];

	(void)threads;
	for (int i = 0; i < 2; i++) {
		buf[i] = malloc(lens[i] + 64);
		CHECK(buf[i], "malloc");
		all[i] = &q[i];
	}
	if (c->rank == 0) {
		for (int i = 0; i < 2; i++) {
			tp_fill(buf[i], lens[i], 0, 1, i);
			tp_req_send(&q[i], buf[i], lens[i], (uint64_t)i + 1);
			q[i].sig.root = 7;
			CHECK(c->ops->ep_send(c->eps[1], &q[i]) == OHC_OK,
			      "send");
		}
		CHECK(drive(c, all, 2) == 0, "sends timed out");
		CHECK(q[0].status == OHC_OK, "send A: %s",
		      ohc_status_str(q[0].status));
		CHECK(q[1].status == OHC_OK || q[1].status == OHC_ERR_DESYNC,
		      "send B: %s", ohc_status_str(q[1].status));
	} else if (c->rank == 1) {
		tp_req_recv(&q[0], buf[0], lens[0], 1);
		if (desync_by_length) {
			tp_req_recv(&q[1], buf[1], lens[1] - 1, 2);
			q[1].sig.len = lens[1]; /* sig agrees, length not */
		} else {
			tp_req_recv(&q[1], buf[1], lens[1], 99);
		}
		for (int i = 0; i < 2; i++) {
			q[i].sig.root = 7;
			CHECK(c->ops->ep_recv(c->eps[0], &q[i]) == OHC_OK,
			      "recv");
		}
		CHECK(drive(c, all, 2) == 0, "receives timed out");
		CHECK(q[0].status == OHC_OK, "A: %s",
		      ohc_status_str(q[0].status));
		CHECK(tp_verify(buf[0], lens[0], 0, 1, 0) < 0, "A: bytes");
		CHECK(q[1].status == OHC_ERR_DESYNC, "B: %s",
		      ohc_status_str(q[1].status));
		CHECK(q[1].got_sig.seq == 2 && q[1].got_sig.len == lens[1] &&
			      q[1].got_sig.root == 7,
		      "B: got_sig seq %llu len %llu root %u",
		      (unsigned long long)q[1].got_sig.seq,
		      (unsigned long long)q[1].got_sig.len, q[1].got_sig.root);
	}
	for (int i = 0; i < 2; i++)
		free(buf[i]);
	return 0;
}

/*
 * The wait set (iface_wait_arm, poll, iface_wait_disarm: how the waiter
 * sleeps on several transports in one poll): rank 1 sleeps on the fds
 * its transport hands out, with a 3 s timeout, until rank 0's message
 * arrives 300 ms later. The fds must wake it: the receive completes in
 * well under 3 s, after a few sleeps at most (spurious returns are
 * allowed, a busy loop is not).
 */
#define WAIT_SET_SEND_MS 300
#define WAIT_SET_POLL_MS 3000
static int wait_set_rank(struct tp_rank *c, int threads)
{
	uint8_t buf[4096];
	struct ohc_req q, *all[1] = {&q};

	(void)threads;
	if (!(c->ops->caps & OHC_TP_CAP_WAIT_SET))
		FAIL("no wait set (OHC_TP_CAP_WAIT_SET)");
	tp_barrier(c->nranks);
	if (c->rank == 0) {
		usleep(WAIT_SET_SEND_MS * 1000);
		tp_fill(buf, sizeof(buf), 0, 1, 0);
		tp_req_send(&q, buf, sizeof(buf), 1);
		CHECK(c->ops->ep_send(c->eps[1], &q) == OHC_OK, "send");
		CHECK(drive(c, all, 1) == 0, "send timed out");
	} else if (c->rank == 1) {
		uint64_t t0 = ohc_time_ns(), ms;
		unsigned sleeps = 0;

		tp_req_recv(&q, buf, sizeof(buf), 1);
		CHECK(c->ops->ep_recv(c->eps[0], &q) == OHC_OK, "recv");
		while (q.status == OHC_INPROGRESS && sleeps < 100) {
			struct pollfd *fds;
			unsigned n;

			if (c->ops->iface_progress(c->iface))
				continue;
			n = c->ops->iface_wait_arm(c->iface, &fds);
			if (n) {
				sleeps++;
				(void)poll(fds, n, WAIT_SET_POLL_MS);
			}
			c->ops->iface_wait_disarm(c->iface);
		}
		ms = (ohc_time_ns() - t0) / 1000000;
		CHECK(q.status == OHC_OK, "recv: %s",
		      ohc_status_str(q.status));
		CHECK(tp_verify(buf, sizeof(buf), 0, 1, 0) < 0, "bytes");
		CHECK(ms < WAIT_SET_POLL_MS - 500,
		      "woken after %llu ms: the fds did not stir",
		      (unsigned long long)ms);
		CHECK(sleeps <= 8, "%u sleeps in %llu ms", sleeps,
		      (unsigned long long)ms);
	}
	return 0;
}

#define CASES(tp)                                                              \
	Test(conformance, tp##_exchange_all_pairs)                             \
	{                                                                      \
		run_on(#tp, MAXR, exchange_rank);                              \
	}                                                                      \
	Test(conformance, tp##_fifo_order)                                     \
	{                                                                      \
		run_on(#tp, 2, fifo_rank);                                     \
	}                                                                      \
	Test(conformance, tp##_reduce_kinds)                                   \
	{                                                                      \
		run_on(#tp, 2, reduce_rank);                                   \
	}                                                                      \
	Test(conformance, tp##_desync_sequence)                                \
	{                                                                      \
		desync_by_length = 0;                                          \
		run_on(#tp, 2, desync_rank);                                   \
	}                                                                      \
	Test(conformance, tp##_desync_length)                                  \
	{                                                                      \
		desync_by_length = 1;                                          \
		run_on(#tp, 2, desync_rank);                                   \
	}                                                                      \
	Test(conformance, tp##_wait_set_sleeps_and_wakes)                      \
	{                                                                      \
		run_on(#tp, 2, wait_set_rank);                                 \
	}

CASES(self)
CASES(shm)
CASES(verbs)
