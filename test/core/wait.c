/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core/wait.c: the waiter over several transports at once. Two ranks
 * (threads) share two self worlds, A and B, as a two-level communicator
 * shares shm and verbs: rank 1 waits for one receive on each, through
 * ohc_waiter_* exactly as the executor does, while rank 0 sends on B,
 * then on A, 300 ms apart. The waiter must sleep in one poll() over both
 * transports (the wait set), woken by whichever stirs: a handful of
 * sleeps for the whole 600 ms, where short sleeps on each in turn (the
 * fallback) take hundreds.
 *
 * And the wait set's second look: a transport whose ringer lost its ring
 * (bell.h: the ringer reads the armed mode without a fence) is armed
 * again OHC_TP_SETTLE_US into the sleep and must find what it missed.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/wait.h"
#include "helpers/ohc_test.h"
#include "transport/bell.h"
#include "transport/transport.h"
#include "util/time.h"

#define NW 2		/* worlds */
#define SEND_GAP_MS 300 /* rank 0: before each send */

struct world {
	uint64_t session;
	unsigned char blob[2][OHC_ADDR_MAX];
	size_t blob_len[2];
};

static struct {
	struct world w[NW];
	pthread_barrier_t bar;
	unsigned sleeps; /* rank 1's ohc_waiter_sleep calls */
	uint64_t ms;	 /* rank 1: from the first wait to the last receive */
	int done[NW];	 /* rank 1: the order its receives completed in */
} g;

struct side {
	const struct ohc_transport_ops *ops;
	struct ohc_iface *iface;
	struct ohc_ep *ep; /* to the other rank */
};

static int side_open(struct side *s, int w, int rank)
{
	struct ohc_transport_params p = {
		.rank = (uint32_t)rank,
		.nranks = 2,
		.session = g.w[w].session,
		.hostid = "wait-host",
		.numa_node = -1,
	};

	s->ops = ohc_transport_get("self");
	s->iface = calloc(1, s->ops->iface_size);
	s->ep = calloc(1, s->ops->ep_size);
	if (!s->iface || !s->ep)
		return 1;
	s->iface->ops = s->ops;
	s->iface->rank = p.rank;
	s->iface->nranks = 2;
	if (s->ops->iface_open(s->iface, &p) < 0)
		return 1;
	g.w[w].blob_len[rank] = OHC_ADDR_MAX;
	return s->ops->iface_address(s->iface, g.w[w].blob[rank],
				     &g.w[w].blob_len[rank]) < 0;
}

static int side_connect(struct side *s, int w, int rank)
{
	int peer = 1 - rank;

	if (s->ops->ep_init(s->iface, s->ep, (uint32_t)peer, g.w[w].blob[peer],
			    g.w[w].blob_len[peer]) < 0)
		return 1;
	return s->ops->iface_connect(s->iface, &s->ep, 1,
				     ohc_deadline_after_ms(5000)) < 0;
}

static void side_close(struct side *s)
{
	s->ops->ep_fini(s->ep);
	s->ops->iface_close(s->iface);
	free(s->ep);
	free(s->iface);
}

static int rank_main(int rank, int nranks, void *arg)
{
	struct side sides[NW];
	struct ohc_iface *ifaces[NW];
	struct ohc_req q[NW];
	char buf[NW][64];
	int rc = 0;

	(void)nranks;
	(void)arg;
	for (int w = 0; w < NW; w++) {
		if (side_open(&sides[w], w, rank))
			return 1;
		ifaces[w] = sides[w].iface;
	}
	pthread_barrier_wait(&g.bar);
	for (int w = 0; w < NW; w++)
		if (side_connect(&sides[w], w, rank))
			return 1;
	pthread_barrier_wait(&g.bar);
	memset(q, 0, sizeof(q));
	for (int w = 0; w < NW; w++) {
		q[w].status = OHC_INPROGRESS;
		q[w].sig.seq = 1;
		q[w].sig.len = sizeof(buf[w]);
		q[w].len = sizeof(buf[w]);
		q[w].dst = buf[w];
		q[w].sbuf = buf[w];
	}
	if (rank == 0) {
		/* B first, then A: the waiter must hear each on its own */
		for (int k = 0; k < NW && !rc; k++) {
			int w = NW - 1 - k;

			usleep(SEND_GAP_MS * 1000);
			memset(buf[w], 'a' + w, sizeof(buf[w]));
			rc = sides[w].ops->ep_send(sides[w].ep, &q[w]) < 0;
			while (!rc && __atomic_load_n(&q[w].status,
						      __ATOMIC_ACQUIRE) ==
					      OHC_INPROGRESS)
				sides[w].ops->iface_progress(sides[w].iface);
		}
	} else {
		struct ohc_waiter wt;
		uint64_t t0 = ohc_time_ns();
		int ndone = 0;

		for (int w = 0; w < NW && !rc; w++)
			rc = sides[w].ops->ep_recv(sides[w].ep, &q[w]) < 0;
		ohc_waiter_init(&wt, ifaces, NW, 20000, false);
		while (!rc && ndone < NW) {
			bool first;
			uint64_t now;

			if (ohc_waiter_progress(&wt)) {
				for (int w = 0; w < NW; w++)
					if (q[w].status != OHC_INPROGRESS &&
					    !g.done[w])
						g.done[w] = ++ndone;
				ohc_waiter_moved(&wt);
				continue;
			}
			now = ohc_waiter_idle(&wt, &first);
			if (!now)
				continue;
			if (now - t0 > 20000000000ull)
				rc = 1; /* 20 s: something is stuck */
			g.sleeps++;
			ohc_waiter_sleep(&wt, now, ohc_deadline_after_ms(10000),
					 (1u << NW) - 1);
		}
		g.ms = (ohc_time_ns() - t0) / 1000000;
		for (int w = 0; w < NW && !rc; w++)
			rc = q[w].status != OHC_OK || buf[w][7] != 'a' + w;
	}
	pthread_barrier_wait(&g.bar);
	for (int w = 0; w < NW; w++)
		side_close(&sides[w]);
	return rc;
}

Test(wait, one_sleep_over_two_transports, .timeout = 60)
{
	memset(&g, 0, sizeof(g));
	for (int w = 0; w < NW; w++)
		g.w[w].session = ohc_time_ns() ^ ((uint64_t)getpid() << 20) ^
				 (uint64_t)(w + 1) * 0x9e3779b97f4a7c15ull;
	pthread_barrier_init(&g.bar, NULL, 2);
	cr_assert_eq(ohc_test_thread_ranks(2, rank_main, NULL), 0);
	pthread_barrier_destroy(&g.bar);
	cr_expect_eq(g.done[1], 1, "B's message (sent first) came first");
	cr_expect_eq(g.done[0], 2, "then A's");
	cr_expect_geq(g.ms, SEND_GAP_MS, "waited for the sends");
	/* one sleep lasts until a wake or OHC_WAIT_MAX_MS (100 ms) */
	cr_expect_leq(g.sleeps, 3 * NW * SEND_GAP_MS / OHC_WAIT_MAX_MS,
		      "%u sleeps in %llu ms: not one poll over both", g.sleeps,
		      (unsigned long long)g.ms);
	printf("wait: %u sleeps in %llu ms over two transports\n", g.sleeps,
	       (unsigned long long)g.ms);
}

/*
 * A transport with a doorbell on an eventfd, as shm's in the wait set;
 * `lose`: a peer's store lands right after its first look, and that
 * peer's ring is lost (the fault the second look is for).
 */
struct lossy {
	struct ohc_iface super; /* first: the ops see a struct ohc_iface */
	struct ohc_bell bell;
	struct pollfd pfd;
	int fd;
	unsigned arms;
	bool lose, published, seen;
};

static unsigned lossy_arm(struct ohc_iface *iface, struct pollfd **fds_p)
{
	struct lossy *l = (struct lossy *)iface;

	ohc_bell_arm(&l->bell, OHC_BELL_FD);
	l->arms++;
	if (l->published) {
		l->seen = true;
		return 0;
	}
	l->published = l->lose; /* unrung */
	l->pfd = (struct pollfd){.fd = l->fd, .events = POLLIN};
	*fds_p = &l->pfd;
	return 1;
}

static void lossy_disarm(struct ohc_iface *iface)
{
	struct lossy *l = (struct lossy *)iface;

	ohc_bell_disarm(&l->bell, l->fd);
}

static const struct ohc_transport_ops lossy_ops = {
	.name = "lossy",
	.caps = OHC_TP_CAP_WAIT | OHC_TP_CAP_WAIT_SET,
	.iface_wait_arm = lossy_arm,
	.iface_wait_disarm = lossy_disarm,
};

Test(wait, ring_lost_while_arming_found_by_second_look, .timeout = 30)
{
	struct lossy l[2] = {{.lose = true}, {.lose = false}};
	struct ohc_iface *ifaces[2] = {&l[0].super, &l[1].super};
	struct ohc_waiter wt;
	uint64_t t0;

	for (int i = 0; i < 2; i++) {
		l[i].super.ops = &lossy_ops;
		l[i].fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		cr_assert_geq(l[i].fd, 0);
	}
	ohc_waiter_init(&wt, ifaces, 2, 20000, false);
	t0 = ohc_time_ns();
	ohc_waiter_sleep(&wt, t0, ohc_deadline_after_ms(5000), 3);
	cr_expect_eq(l[0].arms, 2, "armed %u times", l[0].arms);
	cr_expect(l[0].seen, "the second look found the store");
	for (int i = 0; i < 2; i++) {
		cr_expect_eq(atomic_load(&l[i].bell.sleeping), OHC_BELL_AWAKE,
			     "iface %d disarmed", i);
		close(l[i].fd);
	}
	printf("wait: a lost ring found after %llu us\n",
	       (unsigned long long)(ohc_time_ns() - t0) / 1000);
}
