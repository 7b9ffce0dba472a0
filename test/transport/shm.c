/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shm transport between real processes (fork). Address blobs travel
 * through the harness's MAP_SHARED page (harness.h), made before the
 * fork; no bootstrap. Every rank checks its own fds and mappings after
 * teardown; the test process checks that nothing appeared in /dev/shm.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/ohc_test.h"
#include "transport/harness.h"
#include "transport/shm/shm.h"
#include "util/cpus.h"
#include "transport/transport.h"
#include "util/config.h"
#include "util/time.h"

#define MAXR 8
#define RING (64u << 10) /* small ring: wraps and partial fragments */
#define MIB (1u << 20)

/* State shared by the test process and its ranks, past the harness's. */
struct shared {
	size_t ring;
	int cma; /* rendezvous allowed */
	atomic_int flag[MAXR];
	_Atomic uint64_t t_mark; /* ohc_time_ns of an event */
	double cpu_s[MAXR];	 /* measured by ranks */
	double lat_ms[MAXR];
	char note[MAXR][160]; /* why a rank failed */
};

static struct shared *sh;

static void setup(void)
{
	sh = tp_setup(sizeof(*sh));
	sh->ring = RING;
	sh->cma = 1;
}

static void teardown(void)
{
	tp_teardown();
	cr_expect_eq(ohc_test_shm_leftovers(), 0, "nothing in /dev/shm");
}

TestSuite(shm, .init = setup, .fini = teardown, .timeout = 120);

static int count_our_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "memfd:ohc") != NULL;
	fclose(f);
	return n;
}

static int rank_open(struct tp_rank *c, int rank, int nranks)
{
	struct ohc_transport_params p = {
		.numa_node = 0,
		.ring_bytes = sh->ring,
		.spin = 100,
	};

	ohc_shm_cma_threshold = sh->cma ? 256u << 10 : SIZE_MAX;
	return tp_rank_open(c, "shm", rank, nranks, &p);
}

/* Open, exchange blobs, connect to all. */
static int rank_up(struct tp_rank *c, int rank, int nranks)
{
	if (rank_open(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	return tp_rank_eps(c, 0) || tp_rank_connect(c, 20000);
}

/* Tear down and check that nothing leaked: fds, memory, our mappings. */
static int rank_down(struct tp_rank *c)
{
	if (tp_rank_down(c))
		return 1;
	CHECK(count_our_maps() == 0, "segment mappings left: %d",
	      count_our_maps());
	return 0;
}

/* Pages of our own segment's rings (past the directory) in memory. */
static size_t rings_resident(struct tp_rank *c, size_t *pages_p)
{
	struct ohc_shm_iface *sif = ohc_shm_iface_of(c->iface);
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n, in = 0;
	unsigned char *vec;

	n = sif->body_bytes / page;
	vec = malloc(n);
	if (!vec || mincore(sif->body, n * page, vec)) {
		free(vec);
		return (size_t)-1;
	}
	for (size_t i = 0; i < n; i++)
		in += vec[i] & 1;
	free(vec);
	*pages_p = n;
	return in;
}

/*
 * Above OPENHCCL_SHM_PREFAULT local ranks a rank attaches to a peer's
 * segment on the pair's first traffic: after connect no page of any
 * peer's segment is resident in this process; after an exchange with one
 * peer, that peer's are and the others' still are not.
 */
static int lazy_attach_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	int peer = rank ^ 1;
	uint8_t sb[256], rb[256];
	struct ohc_req sq, rq, *all[2] = {&sq, &rq};

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	for (int p = 0; p < nranks; p++) {
		struct ohc_shm_ep *sep;

		if (p == rank)
			continue;
		sep = ohc_shm_ep_of(c->eps[p]);
		CHECK(sep->peer_seg, "rank %d's segment is mapped", p);
		CHECK(ohc_test_smaps_kb(sep->peer_seg, "Rss") == 0,
		      "%ld KiB of rank %d's segment resident before any "
		      "traffic",
		      ohc_test_smaps_kb(sep->peer_seg, "Rss"), p);
	}
	tp_barrier(nranks);
	memset(sb, 'A' + rank, sizeof(sb));
	tp_req_send(&sq, sb, sizeof(sb), 1);
	tp_req_recv(&rq, rb, sizeof(rb), 1);
	CHECK(c->ops->ep_send(c->eps[peer], &sq) == OHC_OK, "send");
	CHECK(c->ops->ep_recv(c->eps[peer], &rq) == OHC_OK, "recv");
	CHECK(tp_drive(c, all, 2, 10, 20000) == 0, "exchange timed out");
	CHECK(rq.status == OHC_OK && rb[0] == 'A' + peer &&
		      rb[255] == 'A' + peer,
	      "recv: %s", ohc_status_str(rq.status));
	for (int p = 0; p < nranks; p++) {
		long kb;

		if (p == rank)
			continue;
		kb = ohc_test_smaps_kb(ohc_shm_ep_of(c->eps[p])->peer_seg, "Rss");
		CHECK(p == peer ? kb > 0 : kb == 0,
		      "rank %d's segment: %ld KiB resident after talking to "
		      "rank %d only",
		      p, kb, peer);
	}
	tp_barrier(nranks);
	return rank_down(c);
}

Test(shm, lazy_attach_on_first_traffic)
{
	setenv("OPENHCCL_SHM_PREFAULT", "0", 1);
	ohc_env_reload();
	cr_assert_eq(ohc_test_fork_ranks(4, lazy_attach_rank, NULL, 100), 0);
	unsetenv("OPENHCCL_SHM_PREFAULT");
	ohc_env_reload();
}

/*
 * An ep keeps two fds (the peer's pidfd and doorbell eventfd): with the
 * soft open-file limit just above what is open at connect, connect must
 * raise it (up to the hard limit) rather than fail on the 8th rank's
 * exchange, and the eps must work.
 */
static int fd_limit_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	struct rlimit rl;
	uint8_t sb[64], rb[MAXR][64];
	struct ohc_req sq[MAXR], rq[MAXR], *all[2 * MAXR];
	int n = 0, open_now;

	(void)arg;
	if (rank_open(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	if (tp_rank_eps(c, 0))
		return 1;
	open_now = ohc_test_count_fds();
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit");
	CHECK(rl.rlim_max == RLIM_INFINITY ||
		      rl.rlim_max > (rlim_t)open_now + 64,
	      "the hard limit %llu leaves no room to test",
	      (unsigned long long)rl.rlim_max);
	rl.rlim_cur = (rlim_t)open_now + 4; /* two peers' worth */
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit: %s",
	      strerror(errno));
	if (tp_rank_connect(c, 20000))
		return 1;
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		      rl.rlim_cur > (rlim_t)open_now + 4,
	      "the soft limit was not raised: %llu",
	      (unsigned long long)rl.rlim_cur);
	memset(sb, rank, sizeof(sb));
	for (int p = 0; p < nranks; p++) {
		if (p == rank)
			continue;
		tp_req_send(&sq[p], sb, sizeof(sb), 1);
		tp_req_recv(&rq[p], rb[p], sizeof(rb[p]), 1);
		CHECK(c->ops->ep_send(c->eps[p], &sq[p]) == OHC_OK, "send");
		CHECK(c->ops->ep_recv(c->eps[p], &rq[p]) == OHC_OK, "recv");
		all[n++] = &sq[p];
		all[n++] = &rq[p];
	}
	CHECK(tp_drive(c, all, n, 10, 20000) == 0, "exchange timed out");
	for (int p = 0; p < nranks; p++)
		CHECK(p == rank || (rq[p].status == OHC_OK && rb[p][0] == p &&
				    rb[p][63] == p),
		      "from rank %d: %s", p, ohc_status_str(rq[p].status));
	tp_barrier(nranks);
	return rank_down(c);
}

Test(shm, connect_makes_room_for_its_fds)
{
	cr_assert_eq(ohc_test_fork_ranks(MAXR, fd_limit_rank, NULL, 100), 0);
}

/*
 * All pairs at once: every rank sends one message of each size to every
 * other rank (one size at a time, everything of that size posted at once).
 * arg "prefault": every page of our rings is in memory after connect;
 * "lazy" (OPENHCCL_SHM_PREFAULT below the rank count): at most 1 in 8 is
 * until traffic went through them, and the data is right all the same.
 */
static int matrix_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	size_t ring = sh->ring;
	const size_t sizes[] = {0,    1,	63,   64,	    65,
				4095, ring - 1, ring, ring * 3 + 7, 16 * MIB};
	uint8_t *sb[MAXR] = {0}, *rb[MAXR] = {0};
	struct ohc_req sreq[MAXR], rreq[MAXR], *all[2 * MAXR];

	size_t pages = 0, in;

	if (rank_up(c, rank, nranks))
		return 1;
	in = rings_resident(c, &pages);
	CHECK(in != (size_t)-1, "mincore: %s", strerror(errno));
	if (arg && !strcmp(arg, "prefault"))
		CHECK(in == pages,
		      "%zu of %zu ring pages in memory after "
		      "connect, want all (prefaulted)",
		      in, pages);
	if (arg && !strcmp(arg, "lazy"))
		CHECK(in * 8 <= pages,
		      "%zu of %zu ring pages in memory after connect, want "
		      "at most 1 in 8 (OPENHCCL_SHM_PREFAULT=0)",
		      in, pages);
	for (int r = 0; r < nranks; r++) {
		sb[r] = malloc(16 * MIB + 1);
		rb[r] = malloc(16 * MIB + 1);
	}
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t len = sizes[k];
		uint64_t t0;
		int n = 0;

		for (int r = 0; r < nranks; r++) {
			if (r == rank)
				continue;
			tp_fill(sb[r], len, rank, r, (int)k);
			memset(rb[r], 0xee, len + 1);
		}
		tp_barrier(nranks);
		t0 = ohc_time_ns();
		if (tp_post_all_pairs(c, sb, rb, len, k, sreq, rreq, all, &n))
			return 1;
		CHECK(tp_drive(c, all, n, 100, 60000) == 0,
		      "size %zu timed out", len);
		if (len == 16 * MIB && rank == 0) {
			printf("shm %d ranks, cma %s: all-pairs 16 MiB "
			       "exchange in %.1f ms (%.2f GB/s received per "
			       "rank)\n",
			       nranks, sh->cma ? "on" : "off",
			       (ohc_time_ns() - t0) / 1e6,
			       (double)len * (nranks - 1) /
				       (double)(ohc_time_ns() - t0));
			fflush(stdout);
		}
		for (int r = 0; r < nranks; r++) {
			long bad;

			if (r == rank)
				continue;
			CHECK(sreq[r].status == OHC_OK, "send to %d: %d", r,
			      sreq[r].status);
			CHECK(rreq[r].status == OHC_OK, "recv from %d: %d", r,
			      rreq[r].status);
			CHECK(rreq[r].done == len, "recv from %d: done %zu", r,
			      rreq[r].done);
			bad = tp_verify(rb[r], len, r, rank, (int)k);
			CHECK(bad < 0, "size %zu from %d: byte %ld wrong", len,
			      r, bad);
			CHECK(rb[r][len] == 0xee, "size %zu from %d: overrun",
			      len, r);
		}
	}
	for (int r = 0; r < nranks; r++) {
		free(sb[r]);
		free(rb[r]);
	}
	if (arg && !strcmp(arg, "lazy")) {
		size_t after = rings_resident(c, &pages);

		CHECK(after != (size_t)-1 && after * 2 > pages,
		      "%zu of %zu ring pages in memory after 16 MiB went "
		      "through each ring, want most",
		      after, pages);
	}
	return rank_down(c);
}

Test(shm, matrix_2_ranks_ring_only)
{
	sh->cma = 0;
	cr_assert_eq(ohc_test_fork_ranks(2, matrix_rank, NULL, 100), 0);
}

Test(shm, matrix_2_ranks_cma)
{
	cr_assert_eq(ohc_test_fork_ranks(2, matrix_rank, NULL, 100), 0);
}

Test(shm, matrix_2_ranks_odd_ring)
{
	sh->cma = 0;
	sh->ring = 100000; /* not a power of two (rounded to 64) */
	cr_assert_eq(ohc_test_fork_ranks(2, matrix_rank, NULL, 100), 0);
}

Test(shm, matrix_4_ranks)
{
	cr_assert_eq(ohc_test_fork_ranks(4, matrix_rank, "prefault", 100), 0);
}

/* Above OPENHCCL_SHM_PREFAULT local ranks the rings fault in on use. */
Test(shm, matrix_4_ranks_lazy_rings)
{
	sh->cma = 0;
	setenv("OPENHCCL_SHM_PREFAULT", "0", 1);
	ohc_env_reload();
	cr_assert_eq(ohc_test_fork_ranks(4, matrix_rank, "lazy", 100), 0);
	unsetenv("OPENHCCL_SHM_PREFAULT");
	ohc_env_reload();
}

Test(shm, matrix_8_ranks_ring_only)
{
	sh->cma = 0;
	cr_assert_eq(ohc_test_fork_ranks(8, matrix_rank, NULL, 100), 0);
}

Test(shm, matrix_8_ranks_cma)
{
	cr_assert_eq(ohc_test_fork_ranks(8, matrix_rank, NULL, 100), 0);
}

/* Many messages posted at once per ep: FIFO matching is kept. */
#define NFIFO 48

static size_t fifo_len(int i)
{
	return (size_t)(i * 7919) % 150000 + (i % 3 == 0 ? 0 : 1);
}

static int fifo_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	struct ohc_req *sreq, *rreq, **all;
	uint8_t *sb[MAXR][NFIFO], *rb[MAXR][NFIFO];
	int n = 0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	sreq = calloc((size_t)nranks * NFIFO, sizeof(*sreq));
	rreq = calloc((size_t)nranks * NFIFO, sizeof(*rreq));
	all = calloc((size_t)nranks * NFIFO * 2, sizeof(*all));
	for (int r = 0; r < nranks; r++) {
		if (r == rank)
			continue;
		for (int i = 0; i < NFIFO; i++) {
			size_t len = fifo_len(i + rank);
			size_t rlen = fifo_len(i + r);

			sb[r][i] = malloc(len + 1);
			rb[r][i] = malloc(rlen + 1);
			tp_fill(sb[r][i], len, rank, r, i);
			tp_req_send(&sreq[r * NFIFO + i], sb[r][i], len,
				    (uint64_t)i);
			tp_req_recv(&rreq[r * NFIFO + i], rb[r][i], rlen,
				    (uint64_t)i);
		}
	}
	tp_barrier(nranks);
	for (int r = 0; r < nranks; r++) {
		if (r == rank)
			continue;
		for (int i = 0; i < NFIFO; i++) {
			CHECK(c->ops->ep_recv(c->eps[r],
					      &rreq[r * NFIFO + i]) == OHC_OK,
			      "recv");
			all[n++] = &rreq[r * NFIFO + i];
		}
		for (int i = 0; i < NFIFO; i++) {
			CHECK(c->ops->ep_send(c->eps[r],
					      &sreq[r * NFIFO + i]) == OHC_OK,
			      "send");
			all[n++] = &sreq[r * NFIFO + i];
		}
	}
	CHECK(tp_drive(c, all, n, 100, 60000) == 0, "fifo timed out");
	for (int r = 0; r < nranks; r++) {
		if (r == rank)
			continue;
		for (int i = 0; i < NFIFO; i++) {
			struct ohc_req *q = &rreq[r * NFIFO + i];

			CHECK(q->status == OHC_OK, "recv %d from %d: %d", i, r,
			      q->status);
			CHECK(sreq[r * NFIFO + i].status == OHC_OK, "send");
			CHECK(tp_verify(rb[r][i], q->len, r, rank, i) < 0,
			      "message %d from %d has wrong bytes", i, r);
			free(sb[r][i]);
			free(rb[r][i]);
		}
	}
	free(sreq);
	free(rreq);
	free(all);
	return rank_down(c);
}

Test(shm, fifo_many_posted_2_ranks)
{
	cr_assert_eq(ohc_test_fork_ranks(2, fifo_rank, NULL, 100), 0);
}

Test(shm, fifo_many_posted_4_ranks_ring_only)
{
	sh->cma = 0;
	cr_assert_eq(ohc_test_fork_ranks(4, fifo_rank, NULL, 100), 0);
}

/* REDUCE and REDUCE_TO straight out of the ring (or CMA bounce). */
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

#define RCOUNT 300001u /* not a multiple of 16: a short last fragment */

static int reduce_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	int32_t *mine = malloc(RCOUNT * 4), *acc = malloc(RCOUNT * 4);
	int32_t *to[MAXR] = {0};
	struct ohc_req sreq[MAXR], rreq[MAXR], treq[MAXR], *all[2 * MAXR];
	int n = 0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	for (size_t i = 0; i < RCOUNT; i++)
		mine[i] = acc[i] = rval(rank, i);
	tp_barrier(nranks);
	for (int r = 0; r < nranks; r++) {
		if (r == rank)
			continue;
		/* Two messages per pair: one reduced into acc, one into to[r].
		 */
		tp_req_send(&sreq[r], mine, RCOUNT * 4, 1);
		tp_req_recv(&rreq[r], acc, RCOUNT * 4, 1);
		rreq[r].kind = OHC_RECV_REDUCE;
		rreq[r].reduce = add_i32;
		rreq[r].esize = 4;
		to[r] = malloc(RCOUNT * 4);
		tp_req_recv(&treq[r], to[r], RCOUNT * 4, 2);
		treq[r].kind = OHC_RECV_REDUCE_TO;
		treq[r].src2 = mine;
		treq[r].reduce = add_i32;
		treq[r].esize = 4;
		CHECK(c->ops->ep_recv(c->eps[r], &rreq[r]) == OHC_OK, "recv");
		CHECK(c->ops->ep_recv(c->eps[r], &treq[r]) == OHC_OK, "recv");
		CHECK(c->ops->ep_send(c->eps[r], &sreq[r]) == OHC_OK, "send");
		all[n++] = &sreq[r];
		all[n++] = &rreq[r];
	}
	/* The second send reuses the same buffer once the first is done. */
	CHECK(tp_drive(c, all, n, 100, 60000) == 0, "reduce timed out");
	n = 0;
	for (int r = 0; r < nranks; r++) {
		if (r == rank)
			continue;
		tp_req_send(&sreq[r], mine, RCOUNT * 4, 2);
		CHECK(c->ops->ep_send(c->eps[r], &sreq[r]) == OHC_OK, "send");
		all[n++] = &sreq[r];
		all[n++] = &treq[r];
	}
	CHECK(tp_drive(c, all, n, 100, 60000) == 0, "reduce_to timed out");
	for (size_t i = 0; i < RCOUNT; i++) {
		int32_t want = 0;

		for (int r = 0; r < nranks; r++)
			want += rval(r, i);
		CHECK(acc[i] == want, "reduce: element %zu is %d, want %d", i,
		      acc[i], want);
		for (int r = 0; r < nranks; r++) {
			if (r == rank)
				continue;
			CHECK(to[r][i] == rval(rank, i) + rval(r, i),
			      "reduce_to from %d: element %zu wrong", r, i);
		}
	}
	for (int r = 0; r < nranks; r++) {
		if (r != rank) {
			CHECK(rreq[r].status == OHC_OK &&
				      treq[r].status == OHC_OK,
			      "status");
		}
		free(to[r]);
	}
	free(mine);
	free(acc);
	return rank_down(c);
}

Test(shm, reduce_and_reduce_to_ring_only)
{
	sh->cma = 0;
	cr_assert_eq(ohc_test_fork_ranks(3, reduce_rank, NULL, 100), 0);
}

Test(shm, reduce_and_reduce_to_cma)
{
	cr_assert_eq(ohc_test_fork_ranks(3, reduce_rank, NULL, 100), 0);
}

/*
 * Desync: rank 0 sends A(seq 1), B(seq 2, large), C(seq 3, 5000 bytes),
 * D(seq 4); rank 1 expects A, then seq 99 (sig mismatch), then C with a
 * wrong length, then D. The mismatches fail with OHC_ERR_DESYNC and what
 * arrived in got_sig; the stream stays usable (D arrives intact).
 */
static int desync_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	const size_t lens[4] = {1000, 3 * RING + 100, 5000, 70000};
	uint8_t *buf[4];
	struct ohc_req q[4], *all[4];

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	for (int i = 0; i < 4; i++) {
		buf[i] = malloc(lens[i] + 64);
		all[i] = &q[i];
	}
	if (rank == 0) {
		for (int i = 0; i < 4; i++) {
			tp_fill(buf[i], lens[i], 0, 1, i);
			tp_req_send(&q[i], buf[i], lens[i], (uint64_t)i + 1);
			q[i].sig.root = 7;
			CHECK(c->ops->ep_send(c->eps[1], &q[i]) == OHC_OK,
			      "send");
		}
		CHECK(tp_drive(c, all, 4, 100, 30000) == 0, "sends timed out");
		for (int i = 0; i < 4; i++)
			CHECK(q[i].status == OHC_OK, "send %d: %d", i,
			      q[i].status);
	} else {
		tp_req_recv(&q[0], buf[0], lens[0], 1);
		tp_req_recv(&q[1], buf[1], lens[1], 99);
		tp_req_recv(&q[2], buf[2], lens[2] - 1, 3);
		q[2].sig.len = lens[2]; /* sig agrees, length does not */
		tp_req_recv(&q[3], buf[3], lens[3], 4);
		for (int i = 0; i < 4; i++) {
			q[i].sig.root = 7;
			CHECK(c->ops->ep_recv(c->eps[0], &q[i]) == OHC_OK,
			      "recv");
		}
		CHECK(tp_drive(c, all, 4, 100, 30000) == 0, "recvs timed out");
		CHECK(q[0].status == OHC_OK, "A: %d", q[0].status);
		CHECK(tp_verify(buf[0], lens[0], 0, 1, 0) < 0, "A bytes");
		CHECK(q[1].status == OHC_ERR_DESYNC, "B: %d", q[1].status);
		CHECK(q[1].got_sig.seq == 2 && q[1].got_sig.len == lens[1] &&
			      q[1].got_sig.root == 7,
		      "B got_sig seq %llu len %llu",
		      (unsigned long long)q[1].got_sig.seq,
		      (unsigned long long)q[1].got_sig.len);
		CHECK(q[2].status == OHC_ERR_DESYNC, "C: %d", q[2].status);
		CHECK(q[2].got_sig.seq == 3 && q[2].got_sig.len == lens[2],
		      "C got_sig");
		CHECK(q[3].status == OHC_OK, "D: %d", q[3].status);
		CHECK(tp_verify(buf[3], lens[3], 0, 1, 3) < 0, "D bytes");
	}
	tp_barrier(nranks);
	for (int i = 0; i < 4; i++)
		free(buf[i]);
	return rank_down(c);
}

Test(shm, desync_sig_and_length_ring_only)
{
	sh->cma = 0;
	cr_assert_eq(ohc_test_fork_ranks(2, desync_rank, NULL, 60), 0);
}

Test(shm, desync_sig_and_length_cma)
{
	cr_assert_eq(ohc_test_fork_ranks(2, desync_rank, NULL, 60), 0);
}

/*
 * A peer killed with SIGKILL mid-transfer: the survivor, waiting in a loop
 * of progress + iface_wait(100 ms) + ep_check, gets OHC_ERR_REMOTE within
 * a bound. The test process reaps the victim only after the survivor is
 * done, so the victim is a zombie while the survivor checks.
 */
#define KILL_BOUND_MS 1500

static int victim_rank(struct tp_rank *c, int survivor, int sending)
{
	size_t len = 16 * MIB;
	uint8_t *buf = calloc(1, len);
	struct ohc_req q;

	if (sending) {
		tp_req_send(&q, buf, len, 1);
		CHECK(c->ops->ep_send(c->eps[survivor], &q) == OHC_OK, "send");
	} else {
		tp_req_recv(&q, buf, len, 1);
		CHECK(c->ops->ep_recv(c->eps[survivor], &q) == OHC_OK, "recv");
	}
	/* Move a few MiB, then stop and wait to be killed. */
	while (q.done < 4 * MIB && q.status == OHC_INPROGRESS) {
		if (!c->ops->iface_progress(c->iface))
			c->ops->iface_wait(c->iface, 10);
	}
	atomic_store(&sh->flag[c->rank], 1);
	for (;;)
		pause();
}

static int survivor_rank(struct tp_rank *c, int victim, int sending)
{
	size_t len = 16 * MIB;
	uint8_t *buf = calloc(1, len);
	struct ohc_req q;
	ohc_status_t st;
	uint64_t t_kill, now;

	if (sending) {
		tp_req_send(&q, buf, len, 1);
		CHECK(c->ops->ep_send(c->eps[victim], &q) == OHC_OK, "send");
	} else {
		tp_req_recv(&q, buf, len, 1);
		CHECK(c->ops->ep_recv(c->eps[victim], &q) == OHC_OK, "recv");
	}
	for (uint64_t end = ohc_deadline_after_ms(20000);;) {
		CHECK(!ohc_deadline_passed(end), "no kill within 20 s");
		c->ops->iface_progress(c->iface);
		CHECK(q.status == OHC_INPROGRESS, "request finished: %d",
		      q.status);
		st = c->ops->ep_check(c->eps[victim]);
		if (st != OHC_OK)
			break;
		CHECK(!atomic_load(&sh->t_mark) ||
			      ohc_time_ns() - atomic_load(&sh->t_mark) <
				      (uint64_t)KILL_BOUND_MS * 1000000u,
		      "death not noticed within %d ms", KILL_BOUND_MS);
		c->ops->iface_wait(c->iface, 100);
	}
	now = ohc_time_ns();
	t_kill = atomic_load(&sh->t_mark);
	CHECK(st == OHC_ERR_REMOTE, "ep_check: %d", st);
	CHECK(t_kill != 0, "death reported before the kill");
	sh->lat_ms[c->rank] = (double)(now - t_kill) / 1e6;
	c->ops->ep_cancel(c->eps[victim], st);
	CHECK(q.status == OHC_ERR_REMOTE, "canceled request: %d", q.status);
	free(buf);
	return rank_down(c);
}

static void run_kill_test(int victim_sends)
{
	pid_t pid[2];
	int st;

	sh->cma = 0;
	for (int r = 0; r < 2; r++) {
		fflush(NULL);
		pid[r] = fork();
		if (pid[r] == 0) { /* no Criterion calls in children */
			struct tp_rank cc, *c = &cc;
			int rc;

			if (rank_up(c, r, 2))
				_exit(1);
			rc = r == 1 ? victim_rank(c, 0, victim_sends)
				    : survivor_rank(c, 1, !victim_sends);
			_exit(rc);
		}
		cr_assert(pid[r] > 0, "fork");
	}
	/* Wait until the victim is mid-transfer, then kill it. */
	for (int i = 0; i < 20000 && !atomic_load(&sh->flag[1]); i++)
		usleep(1000);
	cr_assert(atomic_load(&sh->flag[1]), "victim never got going");
	usleep(200000); /* the survivor settles into waiting */
	atomic_store(&sh->t_mark, ohc_time_ns());
	kill(pid[1], SIGKILL);
	cr_assert_eq(waitpid(pid[0], &st, 0), pid[0]);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "survivor failed");
	cr_assert_eq(waitpid(pid[1], &st, 0), pid[1]);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	printf("shm: death of a %s noticed after %.1f ms\n",
	       victim_sends ? "sender" : "receiver", sh->lat_ms[0]);
	fflush(stdout);
}

Test(shm, peer_killed_while_sending)
{
	run_kill_test(1);
}

Test(shm, peer_killed_while_receiving)
{
	run_kill_test(0);
}

/* A peer that never connects: iface_connect times out by the deadline. */
static int noconnect_rank(int rank, int nranks, void *arg)
{
	int gone = *(int *)arg;
	struct tp_rank cc, *c = &cc;
	uint64_t t0;
	ohc_status_t st;
	struct ohc_ep *list[1];

	if (rank_open(c, rank, nranks))
		return 1;
	if (rank == 1) {
		if (gone) {
			/* Leaves before anyone connects: no listener. */
			c->ops->iface_close(c->iface);
			free(c->iface);
			tp_barrier(nranks);
		} else {
			/* Listens, but never calls iface_connect. */
			tp_barrier(nranks);
			while (!atomic_load(&sh->flag[0]))
				usleep(1000);
			c->ops->iface_close(c->iface);
			free(c->iface);
		}
		CHECK(ohc_test_count_fds() == c->fds_before, "fd leak");
		return 0;
	}
	tp_barrier(nranks);
	if (tp_rank_eps(c, 0))
		return 1;
	list[0] = c->eps[1];
	t0 = ohc_time_ns();
	st = c->ops->iface_connect(c->iface, list, 1,
				   ohc_deadline_after_ms(700));
	atomic_store(&sh->flag[0], 1);
	CHECK(st == OHC_ERR_TIMEOUT, "connect: %d", st);
	CHECK(ohc_time_ns() - t0 >= 690000000ull, "returned early");
	CHECK(ohc_time_ns() - t0 < 2000000000ull,
	      "overshot the deadline: "
	      "%.0f ms",
	      (ohc_time_ns() - t0) / 1e6);
	return rank_down(c);
}

Test(shm, connect_times_out_peer_silent)
{
	int gone = 0;

	cr_assert_eq(ohc_test_fork_ranks(2, noconnect_rank, &gone, 30), 0);
}

Test(shm, connect_times_out_peer_gone)
{
	int gone = 1;

	cr_assert_eq(ohc_test_fork_ranks(2, noconnect_rank, &gone, 30), 0);
}

/*
 * A peer that reads our hello and closes the connection without a word
 * (ohc_shm_test_drop_hellos; a live peer did so twice in CI): after one
 * such drop we connect again and both sides connect, nothing leaked.
 * A peer that keeps dropping fails our connect after the second retry,
 * long before the deadline.
 */
static int unanswered_rank(int rank, int nranks, void *arg)
{
	int drops = *(int *)arg;
	struct tp_rank cc, *c = &cc;
	struct ohc_ep *list[1];
	uint64_t t0, ms;
	ohc_status_t st;

	if (rank == 1)
		ohc_shm_test_drop_hellos = drops;
	if (rank_open(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	if (tp_rank_eps(c, 0))
		return 1;
	list[0] = c->eps[1 - rank];
	t0 = ohc_time_ns();
	st = c->ops->iface_connect(c->iface, list, 1,
				   ohc_deadline_after_ms(3000));
	ms = (ohc_time_ns() - t0) / 1000000u;
	if (drops == 1) {
		CHECK(st == OHC_OK, "connect after one dropped hello: %d", st);
		CHECK(rank == 0 || ohc_shm_test_drop_hellos == 0,
		      "the hello was not dropped");
	} else if (rank == 0) {
		CHECK(st == OHC_ERR_REMOTE, "connect: %d, want REMOTE", st);
		CHECK(ms < 1500, "gave up after %" PRIu64 " ms", ms);
	} else {
		CHECK(st != OHC_OK, "connect to a rank that failed: OK");
		CHECK(ohc_shm_test_drop_hellos == drops - 3,
		      "%d hellos dropped, want 3",
		      drops - ohc_shm_test_drop_hellos);
	}
	return rank_down(c);
}

/*
 * A peer whose answer never reached us (ohc_shm_test_lose_answers: it
 * counts the answer as sent, as a CI run's listener did) and that still
 * listens (a third rank connects a second late, so its connect goes on):
 * our second hello gets the same answer again, every rank connects, and
 * a message each way between every pair arrives.
 */
#define LOST_MSG 4096

static int lost_answer_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	static uint8_t msg[3][LOST_MSG], got[3][LOST_MSG];
	uint8_t *sb[3] = {msg[0], msg[1], msg[2]};
	uint8_t *rb[3] = {got[0], got[1], got[2]};
	struct ohc_req sreq[3], rreq[3], *all[6];
	int n = 0;

	(void)arg;
	if (rank == 1)
		ohc_shm_test_lose_answers = 1;
	if (rank_open(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	if (rank == 2)
		usleep(1000 * 1000);
	if (tp_rank_eps(c, 0) || tp_rank_connect(c, 20000))
		return 1;
	CHECK(rank != 1 || ohc_shm_test_lose_answers == 0,
	      "no answer was lost");
	for (int r = 0; r < nranks; r++)
		if (r != rank)
			tp_fill(sb[r], LOST_MSG, rank, r, 0);
	if (tp_post_all_pairs(c, sb, rb, LOST_MSG, 0, sreq, rreq, all, &n))
		return 1;
	CHECK(tp_drive(c, all, n, 100, 10000) == 0, "the messages timed out");
	for (int r = 0; r < nranks; r++)
		CHECK(r == rank || (rreq[r].status == OHC_OK &&
				    tp_verify(rb[r], LOST_MSG, r, rank, 0) < 0),
		      "the message from rank %d did not arrive intact", r);
	return rank_down(c);
}

Test(shm, connect_again_after_a_lost_answer)
{
	cr_assert_eq(ohc_test_fork_ranks(3, lost_answer_rank, NULL, 30), 0);
}

Test(shm, connect_again_after_an_unanswered_hello)
{
	int drops = 1;

	cr_assert_eq(ohc_test_fork_ranks(2, unanswered_rank, &drops, 30), 0);
}

Test(shm, connect_gives_up_on_a_peer_that_never_answers)
{
	int drops = 100;

	cr_assert_eq(ohc_test_fork_ranks(2, unanswered_rank, &drops, 30), 0);
}

/*
 * A peer that cancels its ep fails our blocked send and our receive
 * promptly (its doorbell wakes us from a 5 s wait); its own ep refuses
 * further posts.
 */
static int cancel_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	size_t len = 4 * MIB;
	uint8_t *buf = calloc(1, len);
	struct ohc_req s, r, *all[2] = {&s, &r};

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	if (rank == 0) {
		tp_req_send(&s, buf, len, 1);
		tp_req_recv(&r, buf, 100, 2);
		CHECK(c->ops->ep_send(c->eps[1], &s) == OHC_OK, "send");
		CHECK(c->ops->ep_recv(c->eps[1], &r) == OHC_OK, "recv");
		atomic_store(&sh->flag[0], 1);
		CHECK(tp_drive(c, all, 2, 5000, 10000) == 0, "not failed");
		sh->lat_ms[0] =
			(double)(ohc_time_ns() - atomic_load(&sh->t_mark)) /
			1e6;
		CHECK(s.status == OHC_ERR_REMOTE, "send: %d", s.status);
		CHECK(r.status == OHC_ERR_REMOTE, "recv: %d", r.status);
		CHECK(sh->lat_ms[0] < 1000, "noticed after %.0f ms",
		      sh->lat_ms[0]);
		tp_req_send(&s, buf, 10, 3);
		CHECK(c->ops->ep_send(c->eps[1], &s) == OHC_ERR_REMOTE,
		      "post after the peer canceled");
	} else {
		while (!atomic_load(&sh->flag[0]))
			usleep(1000);
		usleep(100000);
		atomic_store(&sh->t_mark, ohc_time_ns());
		c->ops->ep_cancel(c->eps[0], OHC_ERR_TIMEOUT);
		tp_req_send(&s, buf, 10, 3);
		CHECK(c->ops->ep_send(c->eps[0], &s) == OHC_ERR_TIMEOUT,
		      "post on a canceled ep");
	}
	tp_barrier(nranks);
	free(buf);
	return rank_down(c);
}

Test(shm, cancel_reaches_the_peer)
{
	sh->cma = 0;
	cr_assert_eq(ohc_test_fork_ranks(2, cancel_rank, NULL, 60), 0);
}

/* A corrupt record in the ring fails the receive, not the process. */
static int corrupt_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	uint8_t buf[256];
	struct ohc_req r, *all[1] = {&r};

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	if (rank == 0) {
		struct ohc_shm_ep *sep = (struct ohc_shm_ep *)c->eps[1];
		struct ohc_shm_rec *rec =
			(struct ohc_shm_rec *)(sep->tx_data +
					       sep->tx_tail % sep->tx_bytes);

		memset(rec, 0, sizeof(*rec));
		rec->kind = OHC_SHM_REC_DATA;
		rec->flags = OHC_SHM_FRAG_FIRST | OHC_SHM_FRAG_LAST;
		rec->frag_len = 1u << 31; /* far past the ring */
		rec->msg_len = sizeof(buf);
		ohc_shm_rec_stamp(rec, sep->tx_tail);
		sep->tx_tail += OHC_SHM_REC_HDR;
		ohc_bell_ring(&sep->peer_bell->b, sep->peer_bell_fd, true);
	} else {
		tp_req_recv(&r, buf, sizeof(buf), 0);
		CHECK(c->ops->ep_recv(c->eps[0], &r) == OHC_OK, "recv");
		CHECK(tp_drive(c, all, 1, 100, 10000) == 0, "not failed");
		CHECK(r.status == OHC_ERR_REMOTE, "recv: %d", r.status);
		CHECK(c->ops->ep_check(c->eps[0]) == OHC_ERR_REMOTE,
		      "ep_check after a broken stream");
	}
	tp_barrier(nranks);
	return rank_down(c);
}

Test(shm, corrupt_record_fails_the_receive)
{
	cr_assert_eq(ohc_test_fork_ranks(2, corrupt_rank, NULL, 60), 0);
}

/*
 * A fragment that is not the last must be whole 64-byte lines (what a
 * reduction relies on): a 3-byte first fragment and a 5-byte last one of
 * an 8-byte message fail the receive (test/fuzz/corpus/shm_ring/
 * crash-odd_fragment found it delivered, reduced misaligned).
 */
static int odd_fragment_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	uint8_t buf[8];
	struct ohc_req r, *all[1] = {&r};

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	if (rank == 0) {
		struct ohc_shm_ep *sep = (struct ohc_shm_ep *)c->eps[1];

		for (int k = 0; k < 2; k++) {
			struct ohc_shm_rec *rec =
				(struct ohc_shm_rec *)(sep->tx_data +
						       sep->tx_tail %
							       sep->tx_bytes);

			memset(rec, 0, ohc_shm_rec_bytes(64));
			rec->kind = OHC_SHM_REC_DATA;
			rec->flags = k ? OHC_SHM_FRAG_LAST : OHC_SHM_FRAG_FIRST;
			rec->frag_len = k ? 5 : 3;
			rec->sig.len = sizeof(buf); /* as req_recv's */
			rec->msg_len = sizeof(buf);
			ohc_shm_rec_stamp(rec, sep->tx_tail);
			sep->tx_tail += ohc_shm_rec_bytes(rec->frag_len);
		}
		ohc_bell_ring(&sep->peer_bell->b, sep->peer_bell_fd, true);
	} else {
		tp_req_recv(&r, buf, sizeof(buf), 0);
		CHECK(c->ops->ep_recv(c->eps[0], &r) == OHC_OK, "recv");
		CHECK(tp_drive(c, all, 1, 100, 10000) == 0, "not failed");
		CHECK(r.status == OHC_ERR_REMOTE, "recv: %d", r.status);
	}
	tp_barrier(nranks);
	return rank_down(c);
}

Test(shm, odd_fragment_fails_the_receive)
{
	cr_assert_eq(ohc_test_fork_ranks(2, odd_fragment_rank, NULL, 60), 0);
}

/*
 * Stale stamps: every 64-byte line of every payload holds the stamp a
 * record header at that place would carry one lap later. The consumer polls
 * stamps where its next record will start, so unless the producer clears
 * that place before it stamps the record in front of it, such a line is
 * taken for a record (a corrupt one here) before it is written.
 */
#define STALE_MSGS 400
#define STALE_MAX 4000 /* records <= 4 KiB: a misfit is PADded, never cut */

static size_t stale_len(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return OHC_SHM_INLINE_MAX + 1 + (*seed >> 8) % (STALE_MAX - 16);
}

static int stale_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	static uint8_t buf[STALE_MAX];
	struct ohc_req r, *all[1] = {&r};
	unsigned seed = 7;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	for (int i = 0; i < STALE_MSGS; i++) {
		size_t len = stale_len(&seed);

		if (rank == 0) {
			struct ohc_shm_ep *sep = (struct ohc_shm_ep *)c->eps[1];
			uint64_t at = sep->tx_tail;
			uint64_t contig = sep->tx_bytes - at % sep->tx_bytes;

			if (ohc_shm_rec_bytes(len) > contig)
				at += contig; /* after a PAD record */
			/* payload byte o lies at count at + 64 + o */
			for (size_t o = 0; o + 8 <= len; o += 8) {
				uint64_t v = at + OHC_SHM_REC_HDR + o +
					     sep->tx_bytes + 1;

				memcpy(buf + o, &v, 8);
			}
			tp_req_send(&r, buf, len, (uint64_t)i);
			CHECK(c->ops->ep_send(c->eps[1], &r) == OHC_OK, "send");
		} else {
			tp_req_recv(&r, buf, len, (uint64_t)i);
			CHECK(c->ops->ep_recv(c->eps[0], &r) == OHC_OK, "recv");
		}
		CHECK(tp_drive(c, all, 1, 100, 10000) == 0, "message %d", i);
		CHECK(r.status == OHC_OK, "message %d (%zu bytes): %d", i, len,
		      r.status);
	}
	tp_barrier(nranks);
	return rank_down(c);
}

Test(shm, stale_payload_is_never_a_stamp)
{
	sh->cma = 0;
	cr_assert_eq(ohc_test_fork_ranks(2, stale_rank, NULL, 60), 0);
}

/*
 * Waiting sleeps: 8 processes on a 2-core machine; rank 0 sends to the 7
 * others after sleeping 1 s. The 7 receivers wait with iface_wait (5 s
 * timeouts, so only the doorbell can wake them promptly) and must use
 * little CPU; together far less than the 2 CPU-seconds spinning would.
 */
static int sleep_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	uint8_t buf[4096];
	struct ohc_req q[MAXR], *all[MAXR];
	int n = 0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	if (rank == 0) {
		usleep(1000000);
		atomic_store(&sh->t_mark, ohc_time_ns());
		for (int r = 1; r < nranks; r++) {
			tp_fill(buf, sizeof(buf), 0, r, 0);
			tp_req_send(&q[r], buf, sizeof(buf), 1);
			CHECK(c->ops->ep_send(c->eps[r], &q[r]) == OHC_OK,
			      "send");
			all[n++] = &q[r];
		}
		CHECK(tp_drive(c, all, n, 5000, 10000) == 0, "send timed out");
	} else {
		double cpu0 = tp_cpu_seconds(RUSAGE_SELF);

		tp_req_recv(&q[0], buf, sizeof(buf), 1);
		CHECK(c->ops->ep_recv(c->eps[0], &q[0]) == OHC_OK, "recv");
		all[0] = &q[0];
		CHECK(tp_drive(c, all, 1, 5000, 10000) == 0, "recv timed out");
		sh->lat_ms[rank] =
			(double)(ohc_time_ns() - atomic_load(&sh->t_mark)) /
			1e6;
		sh->cpu_s[rank] = tp_cpu_seconds(RUSAGE_SELF) - cpu0;
		CHECK(q[0].status == OHC_OK &&
			      tp_verify(buf, sizeof(buf), 0, rank, 0) < 0,
		      "data");
	}
	tp_barrier(nranks);
	return rank_down(c);
}

Test(shm, waiting_sleeps_8_ranks)
{
	double total = 0, worst_lat = 0;

	cr_assert_eq(ohc_test_fork_ranks(8, sleep_rank, NULL, 60), 0);
	for (int r = 1; r < 8; r++) {
		cr_expect_lt(sh->cpu_s[r], 0.1, "rank %d used %.3f s of CPU", r,
			     sh->cpu_s[r]);
		cr_expect_lt(sh->lat_ms[r], 1000.0,
			     "rank %d woke %.0f ms after the send", r,
			     sh->lat_ms[r]);
		total += sh->cpu_s[r];
		worst_lat =
			sh->lat_ms[r] > worst_lat ? sh->lat_ms[r] : worst_lat;
	}
	cr_expect_lt(total, 0.25, "receivers used %.3f CPU-seconds", total);
	printf("shm: 7 receivers waiting 1 s used %.1f ms CPU in total; woke "
	       "%.2f ms after the send at worst\n",
	       total * 1e3, worst_lat);
	fflush(stdout);
}

/* iface_wake: wakes a sleeping wait, and a wake before a wait counts. */
struct wake_arg {
	struct tp_rank *c;
	uint64_t t;
};

static void *waker(void *p)
{
	struct wake_arg *w = p;

	usleep(100000);
	w->t = ohc_time_ns();
	w->c->ops->iface_wake(w->c->iface);
	return NULL;
}

Test(shm, wake_from_another_thread)
{
	struct tp_rank cc, *c = &cc;
	struct wake_arg w = {.c = c};
	pthread_t th;
	uint64_t t0;

	cr_assert_eq(rank_open(c, 0, 1), 0);
	t0 = ohc_time_ns();
	c->ops->iface_wait(c->iface, 300);
	cr_expect_geq(ohc_time_ns() - t0, 250000000ull, "wait slept");

	c->ops->iface_wake(c->iface);
	t0 = ohc_time_ns();
	c->ops->iface_wait(c->iface, 5000);
	cr_expect_lt(ohc_time_ns() - t0, 100000000ull, "pending wake counts");

	pthread_create(&th, NULL, waker, &w);
	c->ops->iface_wait(c->iface, 5000);
	t0 = ohc_time_ns();
	pthread_join(th, NULL);
	cr_expect_lt(t0 - w.t, 200000000ull, "woken by the other thread");
	cr_assert_eq(rank_down(c), 0);
}

/* Stream rates between 2 processes, printed (not asserted). */
static int bw_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	size_t len = 64 * MIB;
	uint8_t *buf = malloc(len), small[8];
	struct ohc_req q, *all[1] = {&q};
	double best = 1e30, lat;
	uint64_t t0;
	const int reps = 4, pings = 2000;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	memset(buf, rank + 1, len);
	for (int i = 0; i <= reps; i++) {
		tp_barrier(nranks);
		t0 = ohc_time_ns();
		if (rank == 0) {
			tp_req_send(&q, buf, len, (uint64_t)i);
			CHECK(c->ops->ep_send(c->eps[1], &q) == OHC_OK, "send");
		} else {
			tp_req_recv(&q, buf, len, (uint64_t)i);
			CHECK(c->ops->ep_recv(c->eps[0], &q) == OHC_OK, "recv");
		}
		CHECK(tp_drive(c, all, 1, 100, 30000) == 0 &&
			      q.status == OHC_OK,
		      "stream");
		if (rank == 1 && i > 0) /* the first one warms up */
			best = OHC_MIN(best, (double)(ohc_time_ns() - t0));
	}
	if (rank == 1) {
		printf("shm: 64 MiB one-way stream, ring %zu KiB, cma %s: "
		       "%.2f GB/s (best of %d)\n",
		       sh->ring >> 10, sh->cma ? "on" : "off",
		       (double)len / best, reps);
		fflush(stdout);
	}
	tp_barrier(nranks);
	t0 = ohc_time_ns();
	for (int i = 0; i < pings; i++) {
		for (int leg = 0; leg < 2; leg++) {
			if ((leg == 0) == (rank == 0)) {
				tp_req_send(&q, small, sizeof(small), 0);
				c->ops->ep_send(c->eps[1 - rank], &q);
			} else {
				tp_req_recv(&q, small, sizeof(small), 0);
				c->ops->ep_recv(c->eps[1 - rank], &q);
			}
			/* Like the executor: poll a while, then sleep. */
			for (unsigned spin = 0; q.status == OHC_INPROGRESS;) {
				if (c->ops->iface_progress(c->iface) ||
				    ++spin < 2000)
					continue;
				c->ops->iface_wait(c->iface, 100);
				spin = 0;
			}
		}
	}
	lat = (double)(ohc_time_ns() - t0) / pings / 2 / 1e3;
	if (rank == 0) {
		printf("shm: 8-byte ping-pong (2000 polls, then futex "
		       "wait): %.2f us one way\n",
		       lat);
		fflush(stdout);
	}
	free(buf);
	tp_barrier(nranks);
	return rank_down(c);
}

Test(shm, bandwidth_print_ring)
{
	sh->cma = 0;
	sh->ring = 1u << 20;
	cr_assert_eq(ohc_test_fork_ranks(2, bw_rank, NULL, 100), 0);
}

Test(shm, bandwidth_print_cma)
{
	sh->ring = 1u << 20;
	cr_assert_eq(ohc_test_fork_ranks(2, bw_rank, NULL, 100), 0);
}

/* Open an extra iface in this process and publish its blob in slot. */
static struct ohc_iface *open_extra(int slot, uint64_t session,
				    const char *hostid)
{
	const struct ohc_transport_ops *ops = ohc_transport_get("shm");
	struct ohc_transport_params p = {
		.rank = (uint32_t)slot,
		.nranks = MAXR,
		.session = session,
		.hostid = hostid,
		.ring_bytes = RING,
	};
	struct ohc_iface *iface = calloc(1, ops->iface_size);

	iface->ops = ops;
	if (ops->iface_open(iface, &p) != OHC_OK) {
		free(iface);
		return NULL;
	}
	tp_sh->blob_len[slot] = OHC_ADDR_MAX;
	ops->iface_address(iface, tp_sh->blob[slot], &tp_sh->blob_len[slot]);
	return iface;
}

/* Blobs: reachable iff same host, same session and another process. */
Test(shm, reachability)
{
	struct tp_rank cc, *c = &cc;
	struct ohc_iface *longer;
	char long_x[300], long_y[300];
	pid_t pid;
	int st;

	memset(long_x, 'h', sizeof(long_x));
	long_x[sizeof(long_x) - 2] = 'x';
	long_x[sizeof(long_x) - 1] = 0;
	memcpy(long_y, long_x, sizeof(long_x));
	long_y[sizeof(long_y) - 2] = 'y';
	fflush(NULL);
	pid = fork();
	if (pid == 0) { /* no Criterion calls in the child */
		struct ohc_iface *f[5];
		int ok = 1;

		f[0] = open_extra(1, tp_sh->session, "test-host");
		f[1] = open_extra(2, tp_sh->session, "other-host");
		f[2] = open_extra(3, tp_sh->session + 1, "test-host");
		f[3] = open_extra(4, tp_sh->session, long_x);
		f[4] = open_extra(5, tp_sh->session, long_y);
		atomic_store(&sh->flag[1], 1);
		while (!atomic_load(&sh->flag[0]))
			usleep(1000);
		for (int i = 0; i < 5; i++) {
			if (f[i])
				f[i]->ops->iface_close(f[i]);
			ok &= f[i] != NULL;
			free(f[i]);
		}
		_exit(ok ? 0 : 1);
	}
	cr_assert(pid > 0, "fork");
	cr_assert_eq(rank_open(c, 0, 2), 0);
	while (!atomic_load(&sh->flag[1]))
		usleep(1000);
	cr_expect(c->ops->iface_reachable(c->iface, tp_sh->blob[1],
					  tp_sh->blob_len[1]),
		  "same host, other process");
	cr_expect_not(c->ops->iface_reachable(c->iface, tp_sh->blob[1],
					      tp_sh->blob_len[1] - 1),
		      "truncated blob");
	cr_expect_not(c->ops->iface_reachable(c->iface, tp_sh->blob[2],
					      tp_sh->blob_len[2]),
		      "another host");
	cr_expect_not(c->ops->iface_reachable(c->iface, tp_sh->blob[3],
					      tp_sh->blob_len[3]),
		      "another session");
	cr_expect_not(c->ops->iface_reachable(c->iface, tp_sh->blob[0],
					      tp_sh->blob_len[0]),
		      "our own process");
	/* Host ids longer than the blob keeps: still told apart. */
	longer = open_extra(6, tp_sh->session, long_y);
	cr_assert_not_null(longer);
	cr_expect_not(c->ops->iface_reachable(longer, tp_sh->blob[4],
					      tp_sh->blob_len[4]),
		      "long host ids differing at the end");
	cr_expect(c->ops->iface_reachable(longer, tp_sh->blob[5],
					  tp_sh->blob_len[5]),
		  "same long host id");
	c->ops->iface_close(longer);
	free(longer);
	atomic_store(&sh->flag[0], 1);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed");
	cr_assert_eq(rank_down(c), 0);
}

/*
 * The automatic ring size (OPENHCCL_SHM_RING_KB=0): 1 MiB, halved while a
 * rank's 2 x peers rings exceed its L2 cache, never below 128 KiB: a power
 * of two, never growing with the peers, and the largest that fits.
 */
Test(shm, auto_ring_fits_the_l2_cache)
{
	size_t l2 = ohc_l2_cache_bytes();
	size_t budget = l2 ? l2 : (size_t)2 << 20, last = SIZE_MAX;

	for (unsigned n = 1; n <= 300; n++) {
		size_t ring = ohc_shm_auto_ring(n);

		cr_assert(ring >= (128u << 10) && ring <= (1u << 20) &&
				  (ring & (ring - 1)) == 0,
			  "%u peers: %zu bytes", n, ring);
		cr_assert_leq(ring, last, "%u peers: grew to %zu", n, ring);
		cr_assert(ring == (128u << 10) || 2 * n * ring <= budget,
			  "%u peers: %zu bytes exceed the L2's %zu", n, ring,
			  budget);
		cr_assert(ring == (1u << 20) || 4 * n * ring > budget,
			  "%u peers: %zu bytes, twice would fit", n, ring);
		last = ring;
	}
	cr_expect_eq(ohc_shm_auto_ring(300), 128u << 10);
}

/*
 * A peer's ring directory entry must name a ring inside its segment, with
 * arithmetic that cannot wrap: off = 4096, bytes = 2^64 - 64 once passed
 * as "end = off + ctl + bytes <= seg_bytes" and made us write past the
 * mapping.
 */
Test(shm, directory_entries_checked_without_wrapping)
{
	const uint64_t seg = 1u << 20, ctl = sizeof(struct ohc_shm_ring_ctl);
	struct ohc_shm_dir_ent ok = {.off = 4096, .bytes = 64 * 1024};
	struct ohc_shm_dir_ent e;

	cr_expect(ohc_shm_dir_ent_valid(&ok, seg));
	e = ok;
	e.bytes = seg - e.off - ctl; /* exactly fills the segment */
	cr_expect(ohc_shm_dir_ent_valid(&e, seg));
	e.bytes += OHC_SHM_REC_ALIGN; /* one record past the end */
	cr_expect(!ohc_shm_dir_ent_valid(&e, seg));
	e.bytes = UINT64_MAX - 63; /* wraps off + ctl + bytes */
	cr_expect(!ohc_shm_dir_ent_valid(&e, seg));
	e = ok;
	e.off = UINT64_MAX - 63;
	cr_expect(!ohc_shm_dir_ent_valid(&e, seg));
	e.off = seg - ctl + 64; /* control block past the end */
	cr_expect(!ohc_shm_dir_ent_valid(&e, seg));
	e = ok;
	e.off += 8; /* misaligned */
	cr_expect(!ohc_shm_dir_ent_valid(&e, seg));
	e = ok;
	e.bytes = 64; /* below the smallest ring */
	cr_expect(!ohc_shm_dir_ent_valid(&e, seg));
}

/*
 * Importing a peer's exported memory (zero-copy) trusts only a sealed
 * memfd: an unsealed one could shrink under our reads (SIGBUS), and a
 * descriptor naming a FIFO must not block the open (through /proc, as
 * on kernels without pidfd_getfd). Here the "peer" is this process.
 */
Test(shm_zc, import_refuses_unsealed_and_special_files, .timeout = 30)
{
	struct ohc_iface iface = {.rank = 0};
	struct ohc_shm_ep *sep = calloc(1, sizeof(*sep));
	size_t len = 1 << 20;
	struct ohc_mem_desc desc = {.id = 1, .fd_size = len};
	char dir[] = "/tmp/ohc_zc_XXXXXX", fifo[64];
	const char *p;
	int fd;

	cr_assert_not_null(sep);
	sep->super.iface = &iface;
	sep->super.peer = 1;
	sep->pid = getpid();
	sep->pidfd = -1;

	/* Unsealed: refused. */
	fd = memfd_create("zc-unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)len), 0);
	desc.fd = fd;
	cr_expect_null(ohc_shm_zc_import(sep, &desc, 4096));

	/* Sealed against shrinking: mapped, the bytes are the memfd's. */
	cr_assert_eq(pwrite(fd, "sealed", 6, 4096), 6);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	desc.id = 2;
	desc.fd_off = 4096;
	p = ohc_shm_zc_import(sep, &desc, 4096);
	cr_assert_not_null(p);
	cr_expect_eq(memcmp(p, "sealed", 6), 0);
	close(fd);

	/* A FIFO with no writer: refused at once, not a hang. */
	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	desc.id = 3;
	desc.fd = fd;
	desc.fd_off = 0;
	cr_expect_null(ohc_shm_zc_import(sep, &desc, 4096));
	close(fd);
	unlink(fifo);
	rmdir(dir);

	for (unsigned i = 0; i < OHC_SHM_ZC_CACHE; i++)
		if (sep->zc_imp[i].id)
			munmap(sep->zc_imp[i].base, sep->zc_imp[i].size);
	free(sep);
}
