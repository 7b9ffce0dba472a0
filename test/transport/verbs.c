/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs transport between real processes (fork) on a real RDMA device
 * (Soft-RoCE in the CI VM). Address blobs travel through the harness's
 * MAP_SHARED page (harness.h), made before the fork. Outside a machine
 * with an RDMA device every test is skipped, naming why. Each rank checks
 * its own fds and MRs after teardown; failures are reported by the ranks
 * on stderr.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers/ohc_test.h"
#include "transport/harness.h"
#include "transport/transport.h"
#include "transport/verbs/verbs.h"
#include "util/config.h"
#include "util/pagemap.h"
#include "util/time.h"

#define MAXR 4
#define KIB 1024u
#define MIB (1024u * 1024u)

/* Past the harness's shared page. */
struct shared {
	atomic_uint sent;      /* pulled_send_outlives_its_sender */
	atomic_uint lz_sent;   /* lazy_idle_peer_answers */
	atomic_uint lz_closed; /* lazy_unanswered_connect_times_out */
};

static struct shared *sh;

/* Skips the test, naming why, where there is no RDMA device. */
#define NEED_RDMA()                                                            \
	do {                                                                   \
		if (!tp_have_rdma())                                           \
			cr_skip_test("no RDMA device here (runs in the "       \
				     "Soft-RoCE VM: ci/soft-roce/run-vm.sh)"); \
	} while (0)

static void setup(void)
{
	sh = tp_setup(sizeof(*sh));
}

TestSuite(verbs, .init = setup, .fini = tp_teardown, .timeout = 300);

static ohc_status_t iface_open(struct tp_rank *c, int rank, int nranks)
{
	return tp_iface_open(c, "verbs", rank, nranks, NULL);
}

/* Up with no ep connected where they connect on first use. */
static int lazy_rank_up(struct tp_rank *c, int rank, int nranks)
{
	return tp_rank_up(c, "verbs", rank, nranks, NULL, 30000);
}

/*
 * Up and connected to every peer: where eps connect on first use
 * (OPENHCCL_RDMA_LAZY_RANKS, the VM stage runs this suite with it
 * forced) every rank starts all its connections at once and waits for
 * them, so the tests below find their eps as after an eager connect.
 */
static int rank_up(struct tp_rank *c, int rank, int nranks)
{
	uint64_t deadline = ohc_deadline_after_ms(30000);

	if (lazy_rank_up(c, rank, nranks))
		return 1;
	if (!ohc_vx_iface(c->iface)->lazy)
		return 0;
	for (int r = 0; r < nranks; r++)
		if (c->eps[r])
			ohc_verbs_ep_connect(c->eps[r]);
	while (ohc_verbs_connected(c->iface) < (unsigned)nranks - 1 &&
	       !ohc_deadline_passed(deadline))
		if (!c->ops->iface_progress(c->iface))
			c->ops->iface_wait(c->iface, 10);
	CHECK(ohc_verbs_connected(c->iface) == (unsigned)nranks - 1,
	      "%u of %d eps connected on first use",
	      ohc_verbs_connected(c->iface), nranks - 1);
	return 0;
}

/* Tear down and check that nothing leaked: fds, memory, MRs. */
static int rank_down(struct tp_rank *c)
{
	if (tp_rank_down(c))
		return 1;
	CHECK(ohc_vx_mr_live() == 0, "MR leak: %ld left", ohc_vx_mr_live());
	CHECK(ohc_vx_qp_live() == 0, "QP leak: %ld left", ohc_vx_qp_live());
	return 0;
}

/* Progress until no request is in progress (waits of 50 ms when nothing
 * moved); -1 on timeout. */
static int drive(struct tp_rank *c, struct ohc_req **reqs, int n,
		 int timeout_ms)
{
	return tp_drive(c, reqs, n, 50, timeout_ms);
}

/* Verbs' payloads are named by their sender and an index alone. */
static uint8_t pat(size_t i, int src, int idx)
{
	return tp_pat(i, src, 0, idx);
}

static void fill(uint8_t *b, size_t len, int src, int idx)
{
	tp_fill(b, len, src, 0, idx);
}

static long verify(const uint8_t *b, size_t len, int src, int idx)
{
	return tp_verify(b, len, src, 0, idx);
}

/* Small rings so that messages span many slots and credits run out. */
static void small_rings(void)
{
	setenv("OPENHCCL_RDMA_SLOTS", "4", 1);
	setenv("OPENHCCL_RDMA_SLOT_KB", "8", 1);
	ohc_env_reload();
}

/*
 * Both ranks send each other every size at once (all posted before any
 * completes): 0, inline sizes, slot boundaries, larger than the ring.
 */
static int sizes_rank(int rank, int nranks, void *arg)
{
	static const size_t sizes[] = {
		0,
		1,
		63,
		64,
		65,
		191,
		192,
		193,
		8 * KIB - 64,
		8 * KIB - 63,
		8 * KIB,
		24 * KIB + 5,
		32 * KIB,
		96 * KIB + 3,
		1 * MIB + 17,
		3 * MIB,
	};
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	struct tp_rank cc, *c = &cc;
	struct ohc_req sreq[N], rreq[N], *all[2 * N];
	uint8_t *sb[N], *rb[N];
	int peer = 1 - rank;

	if (rank_up(c, rank, nranks))
		return 1;
	for (int i = 0; i < N; i++) {
		sb[i] = malloc(sizes[i] + 1);
		rb[i] = malloc(sizes[i] + 1);
		fill(sb[i], sizes[i], rank, i);
		memset(rb[i], 0xee, sizes[i] + 1);
		tp_req_recv(&rreq[i], rb[i], sizes[i], (uint64_t)i);
		CHECK(c->ops->ep_recv(c->eps[peer], &rreq[i]) == OHC_OK,
		      "ep_recv %d", i);
		all[i] = &rreq[i];
	}
	for (int i = 0; i < N; i++) {
		tp_req_send(&sreq[i], sb[i], sizes[i], (uint64_t)i);
		CHECK(c->ops->ep_send(c->eps[peer], &sreq[i]) == OHC_OK,
		      "ep_send %d", i);
		all[N + i] = &sreq[i];
	}
	CHECK(drive(c, all, 2 * N, 60000) == 0, "sizes: timeout");
	for (int i = 0; i < N; i++) {
		long bad;

		CHECK(sreq[i].status == OHC_OK, "send %zu: %s", sizes[i],
		      ohc_status_str(sreq[i].status));
		CHECK(rreq[i].status == OHC_OK, "recv %zu: %s", sizes[i],
		      ohc_status_str(rreq[i].status));
		bad = verify(rb[i], sizes[i], peer, i);
		CHECK(bad < 0, "size %zu: byte %ld wrong", sizes[i], bad);
		CHECK(rb[i][sizes[i]] == 0xee, "size %zu: wrote past the end",
		      sizes[i]);
		/* arg: the rendezvous threshold, whose messages must land
		 * straight in the destination */
		CHECK(!arg || sizes[i] < *(const size_t *)arg ||
			      rreq[i].path == OHC_PATH_DIRECT,
		      "size %zu: path %d, want direct", sizes[i],
		      (int)rreq[i].path);
		free(sb[i]);
		free(rb[i]);
	}
	CHECK(c->ops->ep_check(c->eps[peer]) == OHC_OK, "ep_check");
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, sizes_both_directions_small_ring)
{
	NEED_RDMA();
	small_rings();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, sizes_rank, NULL, 240), 0);
}

/* Each slot written as several WRs (OPENHCCL_RDMA_WRITE_KB, for lossy
 * links): 1 KiB writes into 8 KiB slots over 2 QPs, every size arrives;
 * the rendezvous ones (256 KiB and more) still land directly, their
 * stripes written in 1 KiB pieces (3 MiB: 3072 WRs, in batches as the
 * send queues drain). */
Test(verbs, sizes_split_writes)
{
	static const size_t rndv = 256 * KIB;

	NEED_RDMA();
	small_rings();
	setenv("OPENHCCL_RDMA_WRITE_KB", "1", 1);
	setenv("OPENHCCL_RDMA_RNDV_KB", "256", 1);
	setenv("HCCL_RDMA_QPS_PER_CONNECTION", "2", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, sizes_rank, (void *)&rndv, 240), 0);
}

Test(verbs, sizes_both_directions_default_ring)
{
	NEED_RDMA();
	unsetenv("OPENHCCL_RDMA_SLOTS");
	unsetenv("OPENHCCL_RDMA_SLOT_KB");
	setenv("HCCL_RDMA_QPS_PER_CONNECTION", "3", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, sizes_rank, NULL, 240), 0);
}

/*
 * The defaults follow the device: on a software device (Soft-RoCE, siw),
 * where the CPUs do the RDMA work, no rendezvous and fragments pulled
 * from 64 KiB, so a 1 MiB message goes through the slots with half of it
 * read by the receiver; on a NIC the rendezvous from 256 KiB and no
 * pulling.
 */
static int defaults_rank(int rank, int nranks, void *arg)
{
	const size_t len = 1 * MIB + 17;
	struct tp_rank cc, *c = &cc;
	struct ohc_verbs_iface *vi;
	struct ibv_device_attr da;
	struct ohc_req sreq, rreq, *all[2] = {&sreq, &rreq};
	uint8_t *sb, *rb;
	int peer = 1 - rank, soft;
	long bad;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	sb = malloc(len);
	rb = malloc(len);
	CHECK(sb && rb, "malloc");
	vi = (struct ohc_verbs_iface *)c->iface;
	CHECK(ohc_vx_query_device(vi->ctx, &da) == 0, "ibv_query_device");
	soft = da.vendor_id == OHC_VX_VENDOR_RXE ||
	       da.vendor_id == OHC_VX_VENDOR_SIW;
	CHECK(vi->rndv_bytes == (soft ? 0 : 256 * KIB) &&
		      vi->pull_bytes == (soft ? 64 * KIB : 0),
	      "vendor %#x: rendezvous from %u, pulled from %u", da.vendor_id,
	      vi->rndv_bytes, vi->pull_bytes);
	fill(sb, len, rank, 1);
	tp_req_recv(&rreq, rb, len, 1);
	tp_req_send(&sreq, sb, len, 1);
	CHECK(c->ops->ep_recv(c->eps[peer], &rreq) == OHC_OK, "ep_recv");
	CHECK(c->ops->ep_send(c->eps[peer], &sreq) == OHC_OK, "ep_send");
	CHECK(drive(c, all, 2, 60000) == 0, "timeout");
	CHECK(sreq.status == OHC_OK && rreq.status == OHC_OK,
	      "send %s, recv %s", ohc_status_str(sreq.status),
	      ohc_status_str(rreq.status));
	bad = verify(rb, len, peer, 1);
	CHECK(bad < 0, "byte %ld wrong", bad);
	CHECK(soft ? rreq.path != OHC_PATH_DIRECT && vi->pull_rx > 0
		   : rreq.path == OHC_PATH_DIRECT && vi->pull_rx == 0,
	      "path %d, %lu fragments pulled", (int)rreq.path,
	      (unsigned long)vi->pull_rx);
	free(sb);
	free(rb);
	CHECK(c->ops->ep_check(c->eps[peer]) == OHC_OK, "ep_check");
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, defaults_follow_the_device)
{
	NEED_RDMA();
	unsetenv("OPENHCCL_RDMA_SLOTS");
	unsetenv("OPENHCCL_RDMA_SLOT_KB");
	unsetenv("OPENHCCL_RDMA_RNDV_KB");
	unsetenv("OPENHCCL_RDMA_PULL_KB");
	unsetenv("OPENHCCL_RDMA_WRITE_KB");
	unsetenv("HCCL_RDMA_QPS_PER_CONNECTION");
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, defaults_rank, NULL, 120), 0);
}

/*
 * Credits under pressure: 4 ranks, every rank streams many small and
 * medium messages to every other rank with only 4 slots per pair; the
 * receiver posts its receives late, in batches, so senders stall on
 * credits and must resume.
 */
#define PRESS_MSGS 96
static int pressure_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	static struct ohc_req sreq[MAXR][PRESS_MSGS], rreq[MAXR][PRESS_MSGS];
	struct ohc_req *all[2 * MAXR * PRESS_MSGS];
	static uint8_t sb[MAXR][PRESS_MSGS][700], rb[MAXR][PRESS_MSGS][700];
	int n = 0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	for (int p = 0; p < nranks; p++) {
		if (p == rank)
			continue;
		for (int i = 0; i < PRESS_MSGS; i++) {
			size_t len = (size_t)(i * 37) % 700;

			fill(sb[p][i], len, rank * 8 + p, i);
			tp_req_send(&sreq[p][i], sb[p][i], len, (uint64_t)i);
			CHECK(c->ops->ep_send(c->eps[p], &sreq[p][i]) == OHC_OK,
			      "ep_send");
			all[n++] = &sreq[p][i];
		}
	}
	/* let the senders run out of credits before anything is received */
	for (int k = 0; k < 20; k++) {
		c->ops->iface_progress(c->iface);
		usleep(5000);
	}
	for (int b = 0; b < PRESS_MSGS; b += 16) {
		for (int p = 0; p < nranks; p++) {
			if (p == rank)
				continue;
			for (int i = b; i < b + 16; i++) {
				size_t len = (size_t)(i * 37) % 700;

				tp_req_recv(&rreq[p][i], rb[p][i], len,
					    (uint64_t)i);
				CHECK(c->ops->ep_recv(c->eps[p], &rreq[p][i]) ==
					      OHC_OK,
				      "ep_recv");
				all[n++] = &rreq[p][i];
			}
		}
		c->ops->iface_progress(c->iface);
	}
	CHECK(drive(c, all, n, 60000) == 0, "pressure: timeout");
	for (int p = 0; p < nranks; p++) {
		if (p == rank)
			continue;
		for (int i = 0; i < PRESS_MSGS; i++) {
			size_t len = (size_t)(i * 37) % 700;

			CHECK(rreq[p][i].status == OHC_OK &&
				      sreq[p][i].status == OHC_OK,
			      "peer %d msg %d: %s/%s", p, i,
			      ohc_status_str(sreq[p][i].status),
			      ohc_status_str(rreq[p][i].status));
			CHECK(verify(rb[p][i], len, p * 8 + rank, i) < 0,
			      "peer %d msg %d corrupt", p, i);
		}
	}
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, credits_under_pressure)
{
	NEED_RDMA();
	small_rings();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(4, pressure_rank, NULL, 240), 0);
}

/* The connection to peer broke on its side: ep_check says so within 10 s
 * (progressing meanwhile); 0, or 1 after reporting. */
static int notices_broken_peer(struct tp_rank *c, int peer)
{
	uint64_t deadline = ohc_deadline_after_ms(10000);

	while (c->ops->ep_check(c->eps[peer]) == OHC_OK &&
	       !ohc_deadline_passed(deadline)) {
		c->ops->iface_progress(c->iface);
		usleep(10000);
	}
	CHECK(c->ops->ep_check(c->eps[peer]) == OHC_ERR_REMOTE,
	      "peer did not notice the broken connection");
	return 0;
}

/*
 * A QP forced into the error state through the wrapper seam: the posted
 * requests fail with OHC_ERR_REMOTE, ep_check says so, the log line names
 * the peer, the QP and the completion status, and the peer learns of it
 * too (its ep_check fails, not a hang).
 */
static int qp_error_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	struct ohc_req r1, r2, *all[2] = {&r1, &r2};
	char buf[256], logpath[] = "/tmp/ohc-verbs-log-XXXXXX";
	int peer = 1 - rank, logfd = -1, saved = -1;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	if (rank == 0) {
		uint32_t qpn = ((struct ohc_verbs_ep *)c->eps[peer])
				       ->qps[0]
				       .qp->qp_num;
		char want_qp[32];

		logfd = mkstemp(logpath);
		CHECK(logfd >= 0, "mkstemp");
		saved = dup(2);
		dup2(logfd, 2);
		tp_req_recv(&r1, buf, sizeof(buf), 1);
		tp_req_recv(&r2, buf, sizeof(buf), 2);
		CHECK(c->ops->ep_recv(c->eps[peer], &r1) == OHC_OK, "recv");
		CHECK(c->ops->ep_recv(c->eps[peer], &r2) == OHC_OK, "recv");
		CHECK(ohc_verbs_ep_inject_qp_error(c->eps[peer]) == 0,
		      "inject");
		drive(c, all, 2, 10000);
		dup2(saved, 2);
		close(saved);
		CHECK(r1.status == OHC_ERR_REMOTE &&
			      r2.status == OHC_ERR_REMOTE,
		      "requests: %s, %s", ohc_status_str(r1.status),
		      ohc_status_str(r2.status));
		CHECK(c->ops->ep_check(c->eps[peer]) == OHC_ERR_REMOTE,
		      "ep_check after QP error");
		CHECK(c->ops->ep_recv(c->eps[peer], &r1) < 0,
		      "a broken ep refuses new requests");
		{
			char log[4096] = "";
			ssize_t n = pread(logfd, log, sizeof(log) - 1, 0);

			log[n > 0 ? n : 0] = 0;
			snprintf(want_qp, sizeof(want_qp), "QP %u", qpn);
			CHECK(strstr(log, "rank 1") && strstr(log, want_qp) &&
				      strstr(log, "Flush"),
			      "log does not name peer, QP and status: %s", log);
		}
		close(logfd);
		unlink(logpath);
	} else {
		/* the peer's side fails too, within bounded time */
		if (notices_broken_peer(c, peer))
			return 1;
	}
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, qp_error_fails_requests_and_names_peer)
{
	NEED_RDMA();
	unsetenv("HCCL_RDMA_QPS_PER_CONNECTION");
	setenv("OPENHCCL_DEBUG", "WARN", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, qp_error_rank, NULL, 120), 0);
}

/*
 * iface_abort: rank 0's communicator fails with a reason; rank 1, blocked
 * on a receive from it, fails at its next ep_check with OHC_ERR_DESYNC for
 * a mismatched operation and OHC_ERR_REMOTE for anything else (as shm),
 * its request with it, well before any timeout.
 */
static int abort_rank(int rank, int nranks, void *arg)
{
	ohc_status_t reason = *(ohc_status_t *)arg;
	ohc_status_t want =
		reason == OHC_ERR_DESYNC ? OHC_ERR_DESYNC : OHC_ERR_REMOTE;
	struct tp_rank cc, *c = &cc;
	struct ohc_req r1, *all[1] = {&r1};
	char buf[64];
	int peer = 1 - rank;
	uint64_t t0, deadline;
	ohc_status_t st = OHC_OK;

	if (rank_up(c, rank, nranks))
		return 1;
	tp_req_recv(&r1, buf, sizeof(buf), 1);
	CHECK(c->ops->ep_recv(c->eps[peer], &r1) == OHC_OK, "recv");
	tp_barrier(nranks);
	if (rank == 0) {
		c->ops->iface_abort(c->iface, reason);
		c->ops->iface_abort(c->iface, OHC_ERR_TIMEOUT); /* 1st sticks */
		c->ops->ep_cancel(c->eps[peer], reason);
		CHECK(r1.status == reason, "own request: %s",
		      ohc_status_str(r1.status));
	} else {
		t0 = ohc_time_ns();
		deadline = ohc_deadline_after_ms(5000);
		while ((st = c->ops->ep_check(c->eps[peer])) == OHC_OK &&
		       !ohc_deadline_passed(deadline)) {
			c->ops->iface_progress(c->iface);
			usleep(1000);
		}
		CHECK(st == want, "ep_check gave %s, not %s after %.3f s",
		      ohc_status_str(st), ohc_status_str(want),
		      (double)(ohc_time_ns() - t0) / 1e9);
		CHECK(c->ops->ep_check(c->eps[peer]) == want, "sticks");
		drive(c, all, 1, 1000);
		CHECK(r1.status == want, "blocked request: %s",
		      ohc_status_str(r1.status));
	}
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, abort_tells_peer_desync)
{
	ohc_status_t reason = OHC_ERR_DESYNC;

	NEED_RDMA();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, abort_rank, &reason, 60), 0);
}

Test(verbs, abort_tells_peer_other_reason)
{
	ohc_status_t reason = OHC_ERR_TIMEOUT;

	NEED_RDMA();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, abort_rank, &reason, 60), 0);
}

/* Bad input: open fails with OHC_ERR_INVALID and leaks nothing. */
static int bad_open(const char *var, const char *val)
{
	struct tp_rank cc, *c = &cc;
	ohc_status_t st;

	setenv(var, val, 1);
	ohc_env_reload();
	st = iface_open(c, 0, 2);
	unsetenv(var);
	ohc_env_reload();
	CHECK(st == OHC_ERR_INVALID, "%s=%s: open gave %s", var, val,
	      ohc_status_str(st));
	CHECK(ohc_test_count_fds() == c->fds_before, "fd leak");
	return 0;
}

Test(verbs, bad_device_ip_gid_or_name)
{
	struct tp_rank cc, *c = &cc;

	NEED_RDMA();
	c->rank = 0;
	cr_expect_eq(bad_open("HCCL_IF_IP", "203.0.113.77"), 0);
	cr_expect_eq(bad_open("OPENHCCL_RDMA_GID_INDEX", "1000"), 0);
	cr_expect_eq(bad_open("OPENHCCL_RDMA_DEVICE", "no_such_dev0"), 0);
}

/* A failing ibv call during connect: clean error, nothing leaked. */
static int fault_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	struct ohc_ep *list[1];
	ohc_status_t st;
	int peer = 1 - rank;

	(void)arg;
	if (tp_rank_open(c, "verbs", rank, nranks, NULL))
		return 1;
	tp_barrier(nranks);
	if (tp_rank_eps(c, 0))
		return 1;
	list[0] = c->eps[peer];
	if (rank == 0)
		ohc_vx_fault_arm(OHC_VX_REG_MR, 1, ENOMEM); /* 2nd MR */
	st = c->ops->iface_connect(c->iface, list, 1,
				   ohc_deadline_after_ms(3000));
	ohc_vx_fault_clear();
	CHECK(st < 0, "connect should fail (%s)", rank ? "peer" : "fault");
	return rank_down(c);
}

Test(verbs, injected_failure_during_connect)
{
	NEED_RDMA();
	/* the connect at init (on first use: lazy_setup_failure_...) */
	setenv("OPENHCCL_RDMA_LAZY_RANKS", "16", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, fault_rank, NULL, 60), 0);
}

/* ---- rendezvous ---------------------------------------------------- */

static void add_u8(void *dst, const void *a, const void *b, size_t count)
{
	uint8_t *d = dst;
	const uint8_t *x = a, *y = b;

	for (size_t i = 0; i < count; i++)
		d[i] = (uint8_t)(x[i] + y[i]);
}

static void rdv_env(const char *qps)
{
	unsetenv("OPENHCCL_RDMA_SLOTS");
	unsetenv("OPENHCCL_RDMA_SLOT_KB");
	setenv("OPENHCCL_RDMA_RNDV_KB", "64", 1);
	setenv("HCCL_RDMA_QPS_PER_CONNECTION", qps, 1);
	unsetenv("OPENHCCL_RDMA_MR_CACHE"); /* the default */
	ohc_env_reload();
}

/*
 * Sizes around the threshold, misaligned buffers, more messages in
 * flight than rendezvous slots (OHC_VX_RDV_N), reductions among them
 * (REDUCE goes eager, flagged; REDUCE_TO lands in place, then reduces),
 * both directions at once: data right, COPY and REDUCE_TO receives
 * direct (no staging), the REDUCE staged. Afterwards no MR is in use:
 * arg NULL, the default cache keeps 64 (where the pagemap check works,
 * else none), none found stale; arg: OPENHCCL_RDMA_MR_CACHE=0 keeps none.
 */
#define RDV_MSGS 80
static int rdv_rank(int rank, int nranks, void *arg)
{
	static const size_t sizes[] = {
		64 * KIB - 1,  64 * KIB,     64 * KIB + 1, 64 * KIB + 63,
		128 * KIB + 5, 1 * MIB + 17, 4 * MIB,
	};
	enum { NS = sizeof(sizes) / sizeof(sizes[0]) };
	struct tp_rank cc, *c = &cc;
	static struct ohc_req sreq[RDV_MSGS], rreq[RDV_MSGS];
	struct ohc_req *all[2 * RDV_MSGS];
	uint8_t *sb[RDV_MSGS], *rb[RDV_MSGS];
	size_t len[RDV_MSGS];
	int peer = 1 - rank;
	uint8_t *zeros = calloc(1, 70 * KIB);
	struct ohc_verbs_iface *vi;
	unsigned want = arg || !ohc_pagemap_usable() ? 0u : 64u;

	if (rank_up(c, rank, nranks))
		return 1;
	for (int i = 0; i < RDV_MSGS; i++) {
		int mis = i % 3; /* 0, 1, 2 bytes off alignment */

		len[i] = i < NS ? sizes[i] : 64 * KIB + (size_t)(i * 131);
		sb[i] = malloc(len[i] + 8);
		rb[i] = malloc(len[i] + 8);
		CHECK(sb[i] && rb[i], "malloc");
		sb[i] += mis;
		rb[i] += mis;
		fill(sb[i], len[i], rank, i);
		memset(rb[i], 0, len[i] + 1);
		rb[i][len[i]] = 0xee;
		CHECK(i != 10 || len[i] <= 70 * KIB, "msg 10 too large");
		tp_req_recv(&rreq[i], rb[i], len[i], (uint64_t)i);
		if (i == 9 || i == 10) { /* reductions: rb = 0 + incoming */
			rreq[i].kind = OHC_RECV_REDUCE;
			rreq[i].reduce = add_u8;
			rreq[i].esize = 1;
		}
		if (i == 10) { /* REDUCE_TO: lands in rb, then rb = z + rb */
			rreq[i].kind = OHC_RECV_REDUCE_TO;
			rreq[i].src2 = zeros;
			rb[i][0] = 0x55; /* overwritten by the message */
		}
		all[i] = &rreq[i];
	}
	/* half the receives before, half after the sends */
	for (int i = 0; i < RDV_MSGS / 2; i++)
		CHECK(c->ops->ep_recv(c->eps[peer], &rreq[i]) == OHC_OK,
		      "ep_recv %d", i);
	for (int i = 0; i < RDV_MSGS; i++) {
		tp_req_send(&sreq[i], sb[i], len[i], (uint64_t)i);
		CHECK(c->ops->ep_send(c->eps[peer], &sreq[i]) == OHC_OK,
		      "ep_send %d", i);
		all[RDV_MSGS + i] = &sreq[i];
	}
	c->ops->iface_progress(c->iface);
	for (int i = RDV_MSGS / 2; i < RDV_MSGS; i++)
		CHECK(c->ops->ep_recv(c->eps[peer], &rreq[i]) == OHC_OK,
		      "ep_recv %d", i);
	CHECK(zeros, "calloc");
	CHECK(drive(c, all, 2 * RDV_MSGS, 120000) == 0, "rdv: timeout");
	for (int i = 0; i < RDV_MSGS; i++) {
		long bad;

		CHECK(sreq[i].status == OHC_OK && rreq[i].status == OHC_OK,
		      "msg %d (%zu bytes): send %s, recv %s", i, len[i],
		      ohc_status_str(sreq[i].status),
		      ohc_status_str(rreq[i].status));
		bad = verify(rb[i], len[i], peer, i);
		CHECK(bad < 0, "msg %d (%zu bytes): byte %ld wrong", i, len[i],
		      bad);
		CHECK(rb[i][len[i]] == 0xee, "msg %d: wrote past the end", i);
		CHECK(rreq[i].path == (i == 9 || len[i] < 64 * KIB
					       ? OHC_PATH_STAGED
					       : OHC_PATH_DIRECT),
		      "msg %d: path %d", i, (int)rreq[i].path);
		free(sb[i] - i % 3);
		free(rb[i] - i % 3);
	}
	free(zeros);
	vi = (struct ohc_verbs_iface *)c->iface;
	CHECK(ohc_vx_mr_cached(vi) == want,
	      "%u MRs cached, want %u (OPENHCCL_RDMA_MR_CACHE %s)",
	      ohc_vx_mr_cached(vi), want, arg ? "=0" : "unset");
	CHECK(ohc_vx_mr_stale(vi) == 0, "%lu entries stale",
	      ohc_vx_mr_stale(vi));
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, rendezvous_sizes_misaligned_many_in_flight)
{
	NEED_RDMA();
	rdv_env("3");
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, rdv_rank, NULL, 280), 0);
}

Test(verbs, rendezvous_one_qp_no_cache)
{
	NEED_RDMA();
	rdv_env("1");
	setenv("OPENHCCL_RDMA_MR_CACHE", "0", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, rdv_rank, "", 280), 0);
}

/*
 * A replay (OPENHCCL_RDMA_REPLAY_MS) with rendezvous in flight: both
 * directions, direct COPY receives and landing REDUCE receives (the
 * sources exported), each rank starts a replay of its connection (unless
 * all arrived before) while its writes are on the wire: the QPs are moved to
 * error and drained, reset and connected again, the handshake on the setup
 * socket settles each rendezvous (written again, found complete, or its CTS
 * again) and every message arrives whole and reduced once. What the
 * replays did is printed.
 */
#define RP_MSGS 12
static int rdv_replay_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	static struct ohc_req sreq[RP_MSGS], rreq[RP_MSGS];
	struct ohc_req *all[2 * RP_MSGS];
	uint8_t *sb[RP_MSGS], *rb[RP_MSGS];
	size_t len[RP_MSGS];
	int peer = 1 - rank, kicks = 0;
	struct ohc_verbs_iface *vi;
	struct ohc_verbs_ep *e;
	unsigned rewound = 0, completed = 0, rects = 0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	vi = (struct ohc_verbs_iface *)c->iface;
	e = ohc_vx_ep(c->eps[peer]);
	for (int i = 0; i < RP_MSGS; i++) {
		int reduce = i % 3 == 2; /* a landing reduction */

		len[i] = (i % 4 + 1) * MIB + (size_t)i * 129;
		sb[i] = malloc(len[i]);
		rb[i] = malloc(len[i] + 1);
		CHECK(sb[i] && rb[i], "malloc");
		fill(sb[i], len[i], rank, i);
		fill(rb[i], len[i], rank, 100 + i);
		rb[i][len[i]] = 0xee;
		tp_req_recv(&rreq[i], rb[i], len[i], (uint64_t)i);
		if (reduce) {
			rreq[i].kind = OHC_RECV_REDUCE;
			rreq[i].reduce = add_u8;
			rreq[i].esize = 1;
		}
		CHECK(c->ops->ep_recv(c->eps[peer], &rreq[i]) == OHC_OK,
		      "ep_recv %d", i);
		tp_req_send(&sreq[i], sb[i], len[i], (uint64_t)i);
		sreq[i].smem = &sreq[i].smem_buf; /* lands if reduced */
		CHECK(c->ops->ep_send(c->eps[peer], &sreq[i]) == OHC_OK,
		      "ep_send %d", i);
		all[i] = &rreq[i];
		all[RP_MSGS + i] = &sreq[i];
	}
	/* progress until writes are on the wire, then replay (unless
	 * everything arrived before) */
	for (uint64_t dl = ohc_deadline_after_ms(120000); kicks < 1;) {
		int busy = 0, pending = 0;

		c->ops->iface_progress(c->iface);
		for (int i = 0; i < 2 * RP_MSGS; i++)
			pending += __atomic_load_n(&all[i]->status,
						   __ATOMIC_ACQUIRE) ==
				   OHC_INPROGRESS;
		if (!pending)
			break;
		VX_LOCK(c->iface);
		for (uint32_t q = 0; q < e->nqps; q++)
			busy |= e->qps[q].sq_inflight > 0;
		if (busy && !e->rp.state && !e->broken) {
			CHECK(ohc_vx_replay_start(vi, e,
						  "injected by the "
						  "test") == 1,
			      "replay refused");
			kicks++;
		}
		VX_UNLOCK(c->iface);
		CHECK(!ohc_deadline_passed(dl), "no write in flight seen");
		CHECK(!e->broken, "the ep failed");
	}
	CHECK(kicks > 0, "every message arrived before a replay began");
	CHECK(drive(c, all, 2 * RP_MSGS, 120000) == 0, "replay: timeout");
	for (int i = 0; i < RP_MSGS; i++) {
		CHECK(sreq[i].status == OHC_OK && rreq[i].status == OHC_OK,
		      "msg %d (%zu bytes): send %s, recv %s", i, len[i],
		      ohc_status_str(sreq[i].status),
		      ohc_status_str(rreq[i].status));
		for (size_t j = 0; j < len[i]; j++) {
			uint8_t want = pat(j, peer, i);

			if (i % 3 == 2)
				want = (uint8_t)(want + pat(j, rank, 100 + i));
			if (rb[i][j] != want)
				FAIL("msg %d (%zu bytes, path %d): byte %zu "
				     "wrong",
				     i, len[i], (int)rreq[i].path, j);
		}
		CHECK(rb[i][len[i]] == 0xee, "msg %d: wrote past the end", i);
		free(sb[i]);
		free(rb[i]);
	}
	VX_LOCK(c->iface);
	rewound = e->rp.rdv.rewound;
	completed = e->rp.rdv.completed;
	rects = e->rp.rdv.rects;
	VX_UNLOCK(c->iface);
	fprintf(stderr,
		"rank %d: %lu replays; the last: %u rendezvous written "
		"again, %u found complete, %u CTS again\n",
		rank, (unsigned long)vi->replays, rewound, completed, rects);
	CHECK(vi->replays >= (uint64_t)kicks, "%lu replays, want %d or more",
	      (unsigned long)vi->replays, kicks);
	CHECK(c->ops->ep_check(c->eps[peer]) == OHC_OK, "ep_check");
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, rendezvous_replayed_mid_flight)
{
	NEED_RDMA();
	rdv_env("2");
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, rdv_replay_rank, NULL, 280), 0);
}

/*
 * Reductions into their own destination (REDUCE) from exported memory
 * (smem set) land in the receiver's landing buffers: the sender writes
 * chunk by chunk from its buffer, at most OHC_VX_LAND_CHUNKS ahead, the
 * receiver reduces each and grants its room back. Both directions, two
 * QPs, misaligned, sizes around the chunk size and up to 17 chunks, more
 * such receives than landing buffers (the first OHC_VX_LAND_MAX get one,
 * later ones one freed meanwhile or the slots), and one from ordinary
 * memory, which the sender declines (the slots, staged). No MR is left.
 */
static int landing_rank(int rank, int nranks, void *arg)
{
	static const size_t sizes[] = {
		64 * KIB,    256 * KIB,	   256 * KIB + 1, 1 * MIB + 17,
		4 * MIB + 3, 96 * KIB + 5, 2 * MIB,	  300 * KIB,
	};
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	struct tp_rank cc, *c = &cc;
	struct ohc_req sreq[N], rreq[N], *all[2 * N];
	uint8_t *sb[N], *rb[N];
	int peer = 1 - rank, landed = 0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	for (int i = 0; i < N; i++) {
		sb[i] = malloc(sizes[i] + 8);
		rb[i] = malloc(sizes[i] + 8);
		CHECK(sb[i] && rb[i], "malloc");
		sb[i] += i % 3;
		rb[i] += i % 3;
		fill(sb[i], sizes[i], rank, i);
		fill(rb[i], sizes[i], rank, 100 + i);
		rb[i][sizes[i]] = 0xee;
		tp_req_recv(&rreq[i], rb[i], sizes[i], (uint64_t)i);
		rreq[i].kind = OHC_RECV_REDUCE;
		rreq[i].reduce = add_u8;
		rreq[i].esize = 1;
		CHECK(c->ops->ep_recv(c->eps[peer], &rreq[i]) == OHC_OK,
		      "ep_recv %d", i);
		all[i] = &rreq[i];
	}
	for (int i = 0; i < N; i++) {
		tp_req_send(&sreq[i], sb[i], sizes[i], (uint64_t)i);
		if (i != N - 1) /* the transport only tests smem for NULL */
			sreq[i].smem = &sreq[i].smem_buf;
		CHECK(c->ops->ep_send(c->eps[peer], &sreq[i]) == OHC_OK,
		      "ep_send %d", i);
		all[N + i] = &sreq[i];
	}
	CHECK(drive(c, all, 2 * N, 120000) == 0, "landing: timeout");
	for (int i = 0; i < N; i++) {
		CHECK(sreq[i].status == OHC_OK && rreq[i].status == OHC_OK,
		      "msg %d (%zu bytes): send %s, recv %s", i, sizes[i],
		      ohc_status_str(sreq[i].status),
		      ohc_status_str(rreq[i].status));
		for (size_t j = 0; j < sizes[i]; j++)
			if (rb[i][j] !=
			    (uint8_t)(pat(j, rank, 100 + i) + pat(j, peer, i)))
				FAIL("msg %d (%zu bytes): byte %zu wrong", i,
				     sizes[i], j);
		CHECK(rb[i][sizes[i]] == 0xee, "msg %d: wrote past the end", i);
		if (i < (int)OHC_VX_LAND_MAX)
			CHECK(rreq[i].path == OHC_PATH_LANDING,
			      "msg %d: path %d, want landing", i,
			      (int)rreq[i].path);
		else if (i == N - 1)
			CHECK(rreq[i].path == OHC_PATH_STAGED,
			      "msg %d: path %d, want staged", i,
			      (int)rreq[i].path);
		else
			CHECK(rreq[i].path == OHC_PATH_LANDING ||
				      rreq[i].path == OHC_PATH_STAGED,
			      "msg %d: path %d", i, (int)rreq[i].path);
		landed += rreq[i].path == OHC_PATH_LANDING;
		free(sb[i] - i % 3);
		free(rb[i] - i % 3);
	}
	fprintf(stderr,
		"rank %d: %d of %d reductions through a landing "
		"buffer\n",
		rank, landed, N);
	CHECK(c->ops->ep_check(c->eps[peer]) == OHC_OK, "ep_check");
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, rendezvous_landing_reductions)
{
	NEED_RDMA();
	rdv_env("2");
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, landing_rank, NULL, 280), 0);
}

Test(verbs, rendezvous_landing_reductions_in_pieces)
{
	NEED_RDMA();
	rdv_env("2");
	setenv("OPENHCCL_RDMA_WRITE_KB", "64", 1); /* 4 pieces per chunk */
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, landing_rank, NULL, 280), 0);
}

/*
 * Cancel and fini while rendezvous are pending. Ranks 0 and 1 post large
 * receives from each other (their CTS went, their buffers are
 * registered) but never send; rank 2's large sends to rank 0 wait for a
 * CTS that never comes. Rank 0 finalizes its ep, rank 1 cancels, rank 2
 * finalizes: every request fails and no registration is left.
 */
static int rdv_cancel_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	struct ohc_verbs_iface *vi;
	struct ohc_req q[3];
	uint8_t *buf;
	int peer = rank == 0 ? 1 : 0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	buf = malloc(3 * 256 * KIB);
	CHECK(buf, "malloc");
	vi = (struct ohc_verbs_iface *)c->iface;
	for (int i = 0; i < 3; i++) {
		if (rank < 2) {
			tp_req_recv(&q[i], buf + i * 256 * KIB, 256 * KIB,
				    (uint64_t)i);
			CHECK(c->ops->ep_recv(c->eps[peer], &q[i]) == OHC_OK,
			      "recv");
		} else {
			tp_req_send(&q[i], buf + i * 256 * KIB, 256 * KIB,
				    (uint64_t)i);
			CHECK(c->ops->ep_send(c->eps[peer], &q[i]) == OHC_OK,
			      "send");
		}
	}
	for (int k = 0; k < 20; k++) {
		c->ops->iface_progress(c->iface);
		usleep(5000);
	}
	tp_barrier(nranks);
	for (int i = 0; i < 3; i++)
		CHECK(q[i].status == OHC_INPROGRESS, "req %d finished: %s", i,
		      ohc_status_str(q[i].status));
	CHECK(ohc_vx_mr_cached(vi) == (rank < 2 ? 3u : 0u),
	      "%u MRs cached before", ohc_vx_mr_cached(vi));
	if (rank == 1) {
		c->ops->ep_cancel(c->eps[peer], OHC_ERR_CANCELED);
		CHECK(ohc_vx_mr_cached(vi) == 0, "cancel left %u MRs",
		      ohc_vx_mr_cached(vi));
	}
	tp_barrier(nranks);
	c->ops->ep_fini(c->eps[peer]);
	/* rank 1's cancel fails its connection to rank 0, and one fini of
	 * ranks 0 and 2 theirs: the other side may notice that (the peer's
	 * side failed) before its own fini */
	for (int i = 0; i < 3; i++)
		CHECK(q[i].status == OHC_ERR_CANCELED ||
			      (rank != 1 && q[i].status == OHC_ERR_REMOTE),
		      "req %d: %s", i, ohc_status_str(q[i].status));
	CHECK(ohc_vx_mr_cached(vi) == 0, "fini left %u MRs",
	      ohc_vx_mr_cached(vi));
	free(c->eps[peer]);
	c->eps[peer] = NULL;
	free(buf);
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, rendezvous_cancel_and_fini_leave_no_mr)
{
	NEED_RDMA();
	rdv_env("2");
	/* no cache: a released MR is deregistered, not kept for reuse */
	setenv("OPENHCCL_RDMA_MR_CACHE", "0", 1);
	setenv("OPENHCCL_DEBUG", "ERROR", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(3, rdv_cancel_rank, NULL, 120), 0);
}

/*
 * Signatures on the rendezvous path: a large message whose signature
 * differs fails with OHC_ERR_DESYNC on both sides, and the receiver sees
 * the sender's signature; a large COPY into memory registered by mem_reg
 * (exported memory) arrives zero-copy, and mem_dereg releases the MR.
 */
static int rdv_sig_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	struct ohc_req a, b, *all[2] = {&a, &b};
	size_t len = 512 * KIB;
	uint8_t *buf = aligned_alloc(4096, 2 * len);
	int peer = 1 - rank;
	void *h = NULL;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	CHECK(buf, "malloc");
	if (rank == 0) {
		tp_req_recv(&a, buf, len, 7);
		CHECK(c->ops->mem_reg(c->iface, buf + len, len, NULL, &h) ==
			      OHC_OK,
		      "mem_reg");
		tp_req_recv(&b, buf + len, len, 8);
		c->ops->ep_recv(c->eps[peer], &a);
		c->ops->ep_recv(c->eps[peer], &b);
	} else {
		fill(buf, 2 * len, rank, 0);
		tp_req_send(&a, buf, len, 99); /* the receiver expects 7 */
		tp_req_send(&b, buf + len, len, 8);
		c->ops->ep_send(c->eps[peer], &a);
		c->ops->ep_send(c->eps[peer], &b);
	}
	CHECK(drive(c, all, 2, 60000) == 0, "timeout");
	CHECK(a.status == OHC_ERR_DESYNC, "mismatch gave %s",
	      ohc_status_str(a.status));
	CHECK(a.got_sig.seq == (rank == 0 ? 99u : 7u),
	      "got the peer's signature seq %llu",
	      (unsigned long long)a.got_sig.seq);
	CHECK(b.status == OHC_OK, "after the mismatch: %s",
	      ohc_status_str(b.status));
	if (rank == 0) {
		uint8_t *ref = malloc(2 * len);

		fill(ref, 2 * len, peer, 0);
		CHECK(!memcmp(buf + len, ref + len, len), "zc data wrong");
		free(ref);
		CHECK(b.path == OHC_PATH_ZC, "path %d, want zc", (int)b.path);
		CHECK(ohc_vx_mr_live() >= 1, "mem_reg's MR");
		c->ops->mem_dereg(c->iface, h);
	}
	tp_barrier(nranks);
	free(buf);
	return rank_down(c);
}

Test(verbs, rendezvous_desync_and_exported_memory)
{
	NEED_RDMA();
	rdv_env("2");
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, rdv_sig_rank, NULL, 120), 0);
}

/*
 * A buffer we only send from is registered for local access only: a peer
 * never gets write access to it. Rank 0 sends a rendezvous message from B
 * (one cached MR), then receives into the same B: the source MR cannot
 * serve a receive, so a second one with remote write access is made; a
 * third round sending from B again hits the cache. Rank 1 receives into
 * its B first (remote write), and that MR may serve its send in round 1.
 */
static int sources_rank(int rank, int nranks, void *arg)
{
	const size_t len = 512 * KIB;
	static const unsigned want[2][3] = {{1, 2, 2}, {1, 1, 1}};
	struct tp_rank cc, *c = &cc;
	struct ohc_verbs_iface *vi;
	struct ohc_req q, *all[1] = {&q};
	uint8_t *buf;
	int peer = 1 - rank;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	vi = (struct ohc_verbs_iface *)c->iface;
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(buf != MAP_FAILED, "mmap");
	for (int round = 0; round < 3; round++) {
		int sender = round == 1 ? 1 : 0;

		if (rank == sender) {
			fill(buf, len, rank, round);
			tp_req_send(&q, buf, len, (uint64_t)round);
			CHECK(c->ops->ep_send(c->eps[peer], &q) == OHC_OK,
			      "ep_send");
		} else {
			memset(buf, 0xee, len);
			tp_req_recv(&q, buf, len, (uint64_t)round);
			CHECK(c->ops->ep_recv(c->eps[peer], &q) == OHC_OK,
			      "ep_recv");
		}
		CHECK(drive(c, all, 1, 60000) == 0, "round %d: timeout", round);
		CHECK(q.status == OHC_OK, "round %d: %s", round,
		      ohc_status_str(q.status));
		if (rank != sender) {
			long bad = verify(buf, len, peer, round);

			CHECK(bad < 0, "round %d: byte %ld wrong", round, bad);
		}
		CHECK(ohc_vx_mr_cached(vi) == want[rank][round],
		      "round %d: %u MRs cached, want %u", round,
		      ohc_vx_mr_cached(vi), want[rank][round]);
		tp_barrier(nranks);
	}
	munmap(buf, len);
	CHECK(c->ops->ep_check(c->eps[peer]) == OHC_OK, "ep_check");
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, sources_are_not_remotely_writable)
{
	NEED_RDMA();
	if (!ohc_pagemap_usable())
		cr_skip_test("/proc/self/pagemap shows no PFNs here (no "
			     "CAP_SYS_ADMIN): the cache is off by default");
	unsetenv("OPENHCCL_RDMA_SLOTS");
	unsetenv("OPENHCCL_RDMA_SLOT_KB");
	setenv("OPENHCCL_RDMA_RNDV_KB", "256", 1); /* off on rxe by default */
	unsetenv("OPENHCCL_RDMA_MR_CACHE");
	setenv("HCCL_RDMA_QPS_PER_CONNECTION", "2", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, sources_rank, NULL, 120), 0);
}

/*
 * The registration cache is on by default (where /proc/self/pagemap shows
 * PFNs) and safe: rank 0 sends a rendezvous-size message from S into
 * rank 1's R; again from the same buffers (a cache hit: no new MR, no
 * stale entry); then both unmap their buffer and map fresh memory at the
 * same address, and the third message must land in the new R, with the
 * new S's data: both caches found their entry stale (the old pages are
 * still pinned by it, so the PFNs differ). Last, rank 1 receives into
 * another buffer while its first ibv_reg_mr fails: the unused cached
 * entries are dropped and the registration retried, so it still lands
 * directly.
 */
static int remap_rank(int rank, int nranks, void *arg)
{
	const size_t len = 512 * KIB;
	struct tp_rank cc, *c = &cc;
	struct ohc_verbs_iface *vi;
	struct ohc_req q, *all[1] = {&q};
	uint8_t *buf, *fresh, *other;
	int peer = 1 - rank;
	long live = 0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	vi = (struct ohc_verbs_iface *)c->iface;
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	other = mmap(NULL, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(buf != MAP_FAILED && other != MAP_FAILED, "mmap");
	for (int round = 0; round < 4; round++) {
		uint8_t *b = round == 3 && rank == 1 ? other : buf;

		if (round == 2) { /* same address, new pages */
			CHECK(munmap(buf, len) == 0, "munmap");
			fresh = mmap(buf, len, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				     -1, 0);
			CHECK(fresh == buf, "mmap at %p gave %p", (void *)buf,
			      (void *)fresh);
		}
		if (round == 3 && rank == 1)
			ohc_vx_fault_arm(OHC_VX_REG_MR, 0, ENOMEM);
		if (rank == 0) {
			fill(b, len, rank, round);
			tp_req_send(&q, b, len, (uint64_t)round);
			CHECK(c->ops->ep_send(c->eps[peer], &q) == OHC_OK,
			      "ep_send");
		} else {
			memset(b, 0xee, len);
			tp_req_recv(&q, b, len, (uint64_t)round);
			CHECK(c->ops->ep_recv(c->eps[peer], &q) == OHC_OK,
			      "ep_recv");
		}
		CHECK(drive(c, all, 1, 60000) == 0, "round %d: timeout", round);
		ohc_vx_fault_clear();
		CHECK(q.status == OHC_OK, "round %d: %s", round,
		      ohc_status_str(q.status));
		if (rank == 1) {
			long bad = verify(b, len, peer, round);

			CHECK(bad < 0, "round %d: byte %ld wrong", round, bad);
			CHECK(q.path == OHC_PATH_DIRECT, "round %d: path %d",
			      round, (int)q.path);
		}
		/* kept for reuse; stale only after the remap */
		CHECK(ohc_vx_mr_cached(vi) == 1, "round %d: %u MRs cached",
		      round, ohc_vx_mr_cached(vi));
		CHECK(ohc_vx_mr_stale(vi) == (round < 2 ? 0u : 1u),
		      "round %d: %lu stale entries", round,
		      ohc_vx_mr_stale(vi));
		if (round == 1)
			CHECK(ohc_vx_mr_live() == live,
			      "round 1 registered again: %ld MRs, %ld before",
			      ohc_vx_mr_live(), live);
		live = ohc_vx_mr_live();
		tp_barrier(nranks);
	}
	munmap(buf, len);
	munmap(other, len);
	CHECK(c->ops->ep_check(c->eps[peer]) == OHC_OK, "ep_check");
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, rendezvous_cache_sees_remapped_buffers)
{
	NEED_RDMA();
	if (!ohc_pagemap_usable())
		cr_skip_test("/proc/self/pagemap shows no PFNs here (no "
			     "CAP_SYS_ADMIN): the cache is off by default");
	unsetenv("OPENHCCL_RDMA_SLOTS");
	unsetenv("OPENHCCL_RDMA_SLOT_KB");
	setenv("OPENHCCL_RDMA_RNDV_KB", "256", 1); /* off on rxe by default */
	unsetenv("OPENHCCL_RDMA_MR_CACHE");
	setenv("HCCL_RDMA_QPS_PER_CONNECTION", "2", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, remap_rank, NULL, 120), 0);
}

/* ---- gathering sends (OPENHCCL_RDMA_GATHER_KB) ----------------------- */

static void gather_env(const char *write_kb)
{
	unsetenv("OPENHCCL_RDMA_SLOTS");
	unsetenv("OPENHCCL_RDMA_SLOT_KB");	   /* 64 KiB */
	setenv("OPENHCCL_RDMA_RNDV_KB", "256", 1); /* off on rxe by default */
	setenv("OPENHCCL_RDMA_GATHER_KB", "16", 1);
	/* explicit: gathering needs the cache, also where the pagemap
	 * check is unavailable (entries are then reused unchecked; the
	 * buffers here live until the end) */
	setenv("OPENHCCL_RDMA_MR_CACHE", "64", 1);
	setenv("HCCL_RDMA_QPS_PER_CONNECTION", "2", 1);
	setenv("OPENHCCL_RDMA_PULL_KB", "0", 1); /* the pushes alone */
	if (write_kb)
		setenv("OPENHCCL_RDMA_WRITE_KB", write_kb, 1);
	else
		unsetenv("OPENHCCL_RDMA_WRITE_KB");
	ohc_env_reload();
}

/* Send sb (len) to peer and receive rb (len) from it, both seq; wait. */
static int gx_exchange(struct tp_rank *c, int peer, const uint8_t *sb,
		       uint8_t *rb, size_t len, uint64_t seq)
{
	struct ohc_req s, r, *all[2] = {&s, &r};

	tp_req_recv(&r, rb, len, seq);
	tp_req_send(&s, sb, len, seq);
	CHECK(c->ops->ep_recv(c->eps[peer], &r) == OHC_OK, "ep_recv");
	CHECK(c->ops->ep_send(c->eps[peer], &s) == OHC_OK, "ep_send");
	CHECK(drive(c, all, 2, 60000) == 0, "exchange: timeout");
	CHECK(s.status == OHC_OK && r.status == OHC_OK, "send %s, recv %s",
	      ohc_status_str(s.status), ohc_status_str(r.status));
	return 0;
}

/*
 * REUSE_ROUNDS messages of len bytes from one buffer sb (seq 2000 + k),
 * each received into a buffer of its own: sb is overwritten with the next
 * round's pattern as soon as a send completed, so every receive holding
 * its own round's bytes means a send completes only once its data left.
 */
#define REUSE_ROUNDS 8
static int reuse_rounds(struct tp_rank *c, int peer, int rank, uint8_t *sb,
			size_t len)
{
	static struct ohc_req rreq[REUSE_ROUNDS];
	struct ohc_req *all[REUSE_ROUNDS];
	uint8_t *rr[REUSE_ROUNDS];

	for (int k = 0; k < REUSE_ROUNDS; k++) {
		rr[k] = malloc(len);
		CHECK(rr[k], "malloc");
		memset(rr[k], 0, len);
		tp_req_recv(&rreq[k], rr[k], len, 2000 + (uint64_t)k);
		CHECK(c->ops->ep_recv(c->eps[peer], &rreq[k]) == OHC_OK,
		      "ep_recv round %d", k);
		all[k] = &rreq[k];
	}
	fill(sb, len, rank, 2000);
	for (int k = 0; k < REUSE_ROUNDS; k++) {
		struct ohc_req s, *sp[1] = {&s};

		tp_req_send(&s, sb, len, 2000 + (uint64_t)k);
		CHECK(c->ops->ep_send(c->eps[peer], &s) == OHC_OK,
		      "ep_send round %d", k);
		CHECK(drive(c, sp, 1, 60000) == 0, "round %d: timeout", k);
		CHECK(s.status == OHC_OK, "round %d: %s", k,
		      ohc_status_str(s.status));
		fill(sb, len, rank, 2001 + k); /* at once */
	}
	CHECK(drive(c, all, REUSE_ROUNDS, 120000) == 0, "reuse: timeout");
	for (int k = 0; k < REUSE_ROUNDS; k++) {
		long bad = verify(rr[k], len, peer, 2000 + k);

		CHECK(rreq[k].status == OHC_OK, "round %d recv: %s", k,
		      ohc_status_str(rreq[k].status));
		CHECK(bad < 0, "round %d: byte %ld is another round's", k, bad);
		free(rr[k]);
	}
	return 0;
}

/*
 * Slot fragments of 16 KiB and more go out as header (staging) + payload
 * (the registered send buffer), below the rendezvous (256 KiB), both
 * directions, two QPs:
 *  1. the first gathering send's registration fails (injected, nothing
 *     cached to drop): it copies through the staging slot, data right,
 *     nothing registered; the same buffer then gathers;
 *  2. many sends back to back from different, misaligned buffers, sizes
 *     at and around the threshold and the slot size (a last fragment
 *     below the threshold copies), one below the threshold: every byte
 *     right, nothing written past the end, the gathering count right;
 *  3. one buffer reused: each send completes, the buffer is overwritten
 *     at once and sent again; every receive has its own round's
 *     pattern, so a send completed only after its data left;
 * then every registration is a cached one (live MRs = the ep's own +
 * the cache's), and after teardown none is left (rank_down).
 */
#define GX_MSGS 12
static int gather_rank(int rank, int nranks, void *arg)
{
	static const size_t sizes[GX_MSGS] = {
		16 * KIB,  16 * KIB + 1, 20 * KIB + 3, 64 * KIB - 1,
		64 * KIB,  64 * KIB + 1, 80 * KIB + 5, 100 * KIB + 7,
		128 * KIB, 200 * KIB,	 255 * KIB,    8 * KIB,
	};
	struct tp_rank cc, *c = &cc;
	struct ohc_verbs_iface *vi;
	static struct ohc_req sreq[GX_MSGS], rreq[GX_MSGS];
	struct ohc_req *all[2 * GX_MSGS];
	uint8_t *sb[GX_MSGS], *rb[GX_MSGS], *one, *back;
	const size_t rlen = 200 * KIB;
	int peer = 1 - rank, n = 0;
	uint64_t want = 0;
	long base;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	vi = (struct ohc_verbs_iface *)c->iface;
	base = ohc_vx_mr_live(); /* the rings and staging copies */
	CHECK(vi->gx_bytes == 16 * KIB, "threshold %u", vi->gx_bytes);

	/* 1: registration fails, the send copies, then gathers */
	one = malloc(64 * KIB);
	back = malloc(64 * KIB);
	CHECK(one && back, "malloc");
	fill(one, 64 * KIB, rank, 1000);
	ohc_vx_fault_arm(OHC_VX_REG_MR, 0, ENOMEM);
	if (gx_exchange(c, peer, one, back, 64 * KIB, 1000))
		return 1;
	ohc_vx_fault_clear();
	CHECK(verify(back, 64 * KIB, peer, 1000) < 0, "fallback: data wrong");
	CHECK(vi->gx_sends == 0 && ohc_vx_mr_cached(vi) == 0 &&
		      ohc_vx_mr_live() == base,
	      "fallback: %lu gathered, %u cached, %ld MRs (%ld before)",
	      (unsigned long)vi->gx_sends, ohc_vx_mr_cached(vi),
	      ohc_vx_mr_live(), base);
	memset(back, 0, 64 * KIB);
	if (gx_exchange(c, peer, one, back, 64 * KIB, 1001))
		return 1;
	CHECK(verify(back, 64 * KIB, peer, 1000) < 0, "gathered: data wrong");
	CHECK(vi->gx_sends == 1 && ohc_vx_mr_cached(vi) == 1,
	      "after fallback: %lu gathered, %u cached",
	      (unsigned long)vi->gx_sends, ohc_vx_mr_cached(vi));
	want = 1;
	tp_barrier(nranks);

	/* 2: back to back from different buffers, both directions */
	for (int i = 0; i < GX_MSGS; i++) {
		sb[i] = malloc(sizes[i] + 8);
		rb[i] = malloc(sizes[i] + 8);
		CHECK(sb[i] && rb[i], "malloc");
		sb[i] += i % 3;
		rb[i] += i % 3;
		fill(sb[i], sizes[i], rank, i);
		memset(rb[i], 0, sizes[i]);
		rb[i][sizes[i]] = 0xee;
		tp_req_recv(&rreq[i], rb[i], sizes[i], (uint64_t)i);
		CHECK(c->ops->ep_recv(c->eps[peer], &rreq[i]) == OHC_OK,
		      "ep_recv %d", i);
		all[n++] = &rreq[i];
		want += sizes[i] >= 16 * KIB;
	}
	for (int i = 0; i < GX_MSGS; i++) {
		tp_req_send(&sreq[i], sb[i], sizes[i], (uint64_t)i);
		CHECK(c->ops->ep_send(c->eps[peer], &sreq[i]) == OHC_OK,
		      "ep_send %d", i);
		all[n++] = &sreq[i];
	}
	CHECK(drive(c, all, n, 120000) == 0, "back to back: timeout");
	for (int i = 0; i < GX_MSGS; i++) {
		long bad;

		CHECK(sreq[i].status == OHC_OK && rreq[i].status == OHC_OK,
		      "msg %d (%zu bytes): send %s, recv %s", i, sizes[i],
		      ohc_status_str(sreq[i].status),
		      ohc_status_str(rreq[i].status));
		bad = verify(rb[i], sizes[i], peer, i);
		CHECK(bad < 0, "msg %d (%zu bytes): byte %ld wrong", i,
		      sizes[i], bad);
		CHECK(rb[i][sizes[i]] == 0xee, "msg %d: wrote past the end", i);
	}
	CHECK(vi->gx_sends == want, "%lu sends gathered, want %lu",
	      (unsigned long)vi->gx_sends, (unsigned long)want);
	tp_barrier(nranks);

	/* 3: one buffer, overwritten as soon as each send completed */
	/* message 9's buffer, already registered: rlen bytes, aligned */
	CHECK(sizes[9] == rlen, "message 9 is %zu bytes", sizes[9]);
	if (reuse_rounds(c, peer, rank, sb[9], rlen))
		return 1;
	want += REUSE_ROUNDS;
	CHECK(vi->gx_sends == want, "%lu sends gathered, want %lu",
	      (unsigned long)vi->gx_sends, (unsigned long)want);
	/* only cached registrations remain, none of them in use */
	CHECK(ohc_vx_mr_live() == base + (long)ohc_vx_mr_cached(vi),
	      "%ld MRs live, %ld + %u cached", ohc_vx_mr_live(), base,
	      ohc_vx_mr_cached(vi));
	CHECK(ohc_vx_mr_stale(vi) == 0, "%lu entries stale",
	      ohc_vx_mr_stale(vi));
	CHECK(c->ops->ep_check(c->eps[peer]) == OHC_OK, "ep_check");
	tp_barrier(nranks);
	for (int i = 0; i < GX_MSGS; i++) {
		free(sb[i] - i % 3);
		free(rb[i] - i % 3);
	}
	free(one);
	free(back);
	return rank_down(c);
}

Test(verbs, gather_sends_straight_from_the_buffer)
{
	NEED_RDMA();
	gather_env(NULL);
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, gather_rank, NULL, 280), 0);
}

/* The same in OPENHCCL_RDMA_WRITE_KB pieces: the header shares the first
 * WR with the start of the payload, the other WRs read the buffer. */
Test(verbs, gather_sends_in_pieces)
{
	NEED_RDMA();
	gather_env("4");
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, gather_rank, NULL, 280), 0);
}

/*
 * A gathering send whose gathered WRs all complete before its last
 * fragment, a copied one (below the threshold), can go out: 4 slots, a
 * message of 4 full fragments and 1000 bytes. The receiver posts its
 * receive only once the sender saw the completions of the 4 gathered
 * fragments (the credits come back then), so the tail goes out in a
 * push of its own, carrying none of the gathered payload, and no
 * completion of a gathering WR follows. The send must complete anyway
 * (it once waited for a completion that never came: a 2 MiB eager
 * REDUCE, 32 slots plus a small tail, hung coll.random procs8).
 */
static int gather_tail_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	const size_t len = 4 * (64 * KIB - 64) + 1000;
	uint8_t *buf = malloc(len + 1);
	struct ohc_req q, *all[1] = {&q};
	int peer = 1 - rank;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	CHECK(buf, "malloc");
	if (rank == 0) {
		struct ohc_verbs_iface *vi = (struct ohc_verbs_iface *)c->iface;
		struct ohc_verbs_ep *e = (struct ohc_verbs_ep *)c->eps[peer];
		uint64_t deadline = ohc_deadline_after_ms(20000);
		uint32_t inflight;

		fill(buf, len, rank, 7);
		tp_req_send(&q, buf, len, 7);
		CHECK(c->ops->ep_send(c->eps[peer], &q) == OHC_OK, "ep_send");
		CHECK(e->tx_slots == 4 && q.status == OHC_INPROGRESS,
		      "%lu fragments posted, want the 4 the slots take",
		      (unsigned long)e->tx_slots);
		do { /* until the gathered WRs completed */
			c->ops->iface_progress(c->iface);
			inflight = 0;
			for (uint32_t i = 0; i < e->nqps; i++)
				inflight += e->qps[i].sq_inflight;
			CHECK(!ohc_deadline_passed(deadline),
			      "gathered WRs not completed: %u in flight",
			      inflight);
		} while (inflight);
		tp_barrier(nranks);
		CHECK(drive(c, all, 1, 10000) == 0,
		      "the send never completed (%lu fragments posted)",
		      (unsigned long)e->tx_slots);
		CHECK(q.status == OHC_OK, "send: %s", ohc_status_str(q.status));
		CHECK(vi->gx_sends == 1, "%lu sends gathered, want 1",
		      (unsigned long)vi->gx_sends);
	} else {
		tp_barrier(nranks);
		buf[len] = 0xee;
		tp_req_recv(&q, buf, len, 7);
		CHECK(c->ops->ep_recv(c->eps[peer], &q) == OHC_OK, "ep_recv");
		CHECK(drive(c, all, 1, 20000) == 0, "recv: timeout");
		CHECK(q.status == OHC_OK, "recv: %s", ohc_status_str(q.status));
		CHECK(verify(buf, len, peer, 7) < 0, "data wrong");
		CHECK(buf[len] == 0xee, "wrote past the end");
	}
	CHECK(c->ops->ep_check(c->eps[peer]) == OHC_OK, "ep_check");
	tp_barrier(nranks);
	free(buf);
	return rank_down(c);
}

Test(verbs, gather_send_with_copied_tail_after_its_completions)
{
	NEED_RDMA();
	gather_env(NULL);
	setenv("OPENHCCL_RDMA_SLOTS", "4", 1);
	setenv("OPENHCCL_RDMA_RNDV_KB", "1024", 1); /* the slots carry it */
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, gather_tail_rank, NULL, 60), 0);
}

/*
 * A gathering send whose QP breaks under its post (injected): it fails
 * with OHC_ERR_REMOTE rather than completing, its registration is
 * released (rank_down: no MR left), and the peer notices.
 */
static int gather_err_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	struct ohc_req s, *all[1] = {&s};
	uint8_t *buf = malloc(100 * KIB);
	int peer = 1 - rank;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	CHECK(buf, "malloc");
	fill(buf, 100 * KIB, rank, 0);
	tp_barrier(nranks);
	if (rank == 0) {
		struct ohc_verbs_iface *vi = (struct ohc_verbs_iface *)c->iface;

		ohc_vx_fault_arm(OHC_VX_POST_SEND, 0, OHC_VX_FAULT_QP_ERR);
		tp_req_send(&s, buf, 100 * KIB, 1);
		CHECK(c->ops->ep_send(c->eps[peer], &s) == OHC_OK, "ep_send");
		ohc_vx_fault_clear();
		CHECK(vi->gx_sends == 1, "the send did not gather");
		drive(c, all, 1, 10000);
		CHECK(s.status == OHC_ERR_REMOTE, "send: %s",
		      ohc_status_str(s.status));
		CHECK(c->ops->ep_check(c->eps[peer]) == OHC_ERR_REMOTE,
		      "ep_check");
	} else {
		if (notices_broken_peer(c, peer))
			return 1;
	}
	tp_barrier(nranks);
	free(buf);
	return rank_down(c);
}

Test(verbs, gather_send_fails_with_its_qp)
{
	NEED_RDMA();
	gather_env(NULL);
	setenv("OPENHCCL_DEBUG", "NONE", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, gather_err_rank, NULL, 120), 0);
}

/* ---- pulled fragments (OPENHCCL_RDMA_PULL_KB) ----------------------- */

static void pull_env(const char *slots, const char *cache)
{
	gather_env(NULL);
	setenv("OPENHCCL_RDMA_PULL_KB", "16", 1);
	if (slots)
		setenv("OPENHCCL_RDMA_SLOTS", slots, 1);
	if (cache)
		setenv("OPENHCCL_RDMA_MR_CACHE", cache, 1);
	ohc_env_reload();
}

/* Fragments a message of len bytes has pulled (64 KiB slots). */
static uint64_t pulled_frags(size_t len)
{
	size_t fs = ((len + 1) / 2 + 63) & ~(size_t)63;

	if (len < 16 * KIB)
		return 0;
	fs = fs < 64 * KIB - OHC_VX_PULL_PAD ? fs : 64 * KIB - OHC_VX_PULL_PAD;
	return (len + fs - 1) / fs / 2;
}

/*
 * Slot-path messages of 16 KiB and more (below the rendezvous) go in
 * halves, every second fragment read by the receiver from the sender's
 * staging slot; both directions, two QPs:
 *  1. back to back from misaligned buffers, sizes around the threshold
 *     and the slot size, COPY receives (read straight into the buffer
 *     with the cache, else into the slot), a REDUCE and a REDUCE_TO
 *     (read into the slot, reduced from there): every byte right,
 *     nothing written past the end, the pulled counts right;
 *  2. one buffer reused: each send completes, the buffer is overwritten
 *     at once and sent again; every receive has its own round's
 *     pattern (the pulled halves are read from the staging copy);
 * then no registration is in use, and after teardown none is left
 * (rank_down). With 4 slots the credits run out inside messages.
 */
#define PL_MSGS 12
static int pull_rank(int rank, int nranks, void *arg)
{
	static const size_t sizes[PL_MSGS] = {
		16 * KIB,  16 * KIB + 1, 20 * KIB + 3, 64 * KIB - 1,
		64 * KIB,  64 * KIB + 1, 80 * KIB + 5, 100 * KIB + 7,
		128 * KIB, 200 * KIB,	 255 * KIB,    8 * KIB,
	};
	struct tp_rank cc, *c = &cc;
	struct ohc_verbs_iface *vi;
	static struct ohc_req sreq[PL_MSGS], rreq[PL_MSGS];
	struct ohc_req *all[2 * PL_MSGS];
	uint8_t *sb[PL_MSGS], *rb[PL_MSGS], *src2;
	const size_t rlen = 200 * KIB;
	int peer = 1 - rank, n = 0;
	uint64_t want = 0;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	vi = (struct ohc_verbs_iface *)c->iface;
	CHECK(vi->pull_bytes == 16 * KIB, "threshold %u", vi->pull_bytes);
	src2 = malloc(100 * KIB + 7);
	CHECK(src2, "malloc");
	fill(src2, 100 * KIB + 7, rank, 77);

	/* 1: back to back, both directions, reductions among them */
	for (int i = 0; i < PL_MSGS; i++) {
		sb[i] = malloc(sizes[i] + 8);
		rb[i] = malloc(sizes[i] + 8);
		CHECK(sb[i] && rb[i], "malloc");
		sb[i] += i % 3;
		rb[i] += i % 3;
		fill(sb[i], sizes[i], rank, i);
		fill(rb[i], sizes[i], rank, 100 + i);
		rb[i][sizes[i]] = 0xee;
		tp_req_recv(&rreq[i], rb[i], sizes[i], (uint64_t)i);
		if (i == 4) { /* dst = dst + message */
			rreq[i].kind = OHC_RECV_REDUCE;
			rreq[i].reduce = add_u8;
			rreq[i].esize = 1;
		} else if (i == 7) { /* dst = src2 + message */
			rreq[i].kind = OHC_RECV_REDUCE_TO;
			rreq[i].src2 = src2;
			rreq[i].reduce = add_u8;
			rreq[i].esize = 1;
		}
		CHECK(c->ops->ep_recv(c->eps[peer], &rreq[i]) == OHC_OK,
		      "ep_recv %d", i);
		all[n++] = &rreq[i];
		want += pulled_frags(sizes[i]);
	}
	for (int i = 0; i < PL_MSGS; i++) {
		tp_req_send(&sreq[i], sb[i], sizes[i], (uint64_t)i);
		CHECK(c->ops->ep_send(c->eps[peer], &sreq[i]) == OHC_OK,
		      "ep_send %d", i);
		all[n++] = &sreq[i];
	}
	CHECK(drive(c, all, n, 120000) == 0, "back to back: timeout");
	for (int i = 0; i < PL_MSGS; i++) {
		CHECK(sreq[i].status == OHC_OK && rreq[i].status == OHC_OK,
		      "msg %d (%zu bytes): send %s, recv %s", i, sizes[i],
		      ohc_status_str(sreq[i].status),
		      ohc_status_str(rreq[i].status));
		for (size_t j = 0; j < sizes[i]; j++) {
			uint8_t w = pat(j, peer, i);

			if (i == 4)
				w = (uint8_t)(w + pat(j, rank, 100 + i));
			else if (i == 7)
				w = (uint8_t)(w + pat(j, rank, 77));
			if (rb[i][j] != w)
				FAIL("msg %d (%zu bytes): byte %zu wrong", i,
				     sizes[i], j);
		}
		CHECK(rb[i][sizes[i]] == 0xee, "msg %d: wrote past the end", i);
	}
	CHECK(vi->pull_tx == want && vi->pull_rx == want,
	      "%lu fragments pulled by the peer, %lu by us, want %lu",
	      (unsigned long)vi->pull_tx, (unsigned long)vi->pull_rx,
	      (unsigned long)want);
	tp_barrier(nranks);

	/* 2: one buffer, overwritten as soon as each send completed */
	CHECK(sizes[9] == rlen, "message 9 is %zu bytes", sizes[9]);
	if (reuse_rounds(c, peer, rank, sb[9], rlen))
		return 1;
	want += REUSE_ROUNDS * pulled_frags(rlen);
	CHECK(vi->pull_tx == want && vi->pull_rx == want,
	      "%lu fragments pulled by the peer, %lu by us, want %lu",
	      (unsigned long)vi->pull_tx, (unsigned long)vi->pull_rx,
	      (unsigned long)want);
	/* no registration in use (the cache keeps unused ones) */
	CHECK(vi->mrc.n == vi->mrc.idle, "%u registrations, %u unused",
	      vi->mrc.n, vi->mrc.idle);
	CHECK(c->ops->ep_check(c->eps[peer]) == OHC_OK, "ep_check");
	tp_barrier(nranks);
	for (int i = 0; i < PL_MSGS; i++) {
		free(sb[i] - i % 3);
		free(rb[i] - i % 3);
	}
	free(src2);
	return rank_down(c);
}

Test(verbs, pulled_fragments_read_by_the_receiver)
{
	NEED_RDMA();
	pull_env(NULL, NULL);
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, pull_rank, NULL, 280), 0);
}

Test(verbs, pulled_fragments_with_few_slots)
{
	NEED_RDMA();
	pull_env("4", NULL);
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, pull_rank, NULL, 280), 0);
}

/* Without the cache every pulled fragment is read into its slot. */
Test(verbs, pulled_fragments_into_the_slots)
{
	NEED_RDMA();
	pull_env(NULL, "0");
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, pull_rank, NULL, 280), 0);
}

/*
 * A pulled fragment whose read breaks the receiver's QP (injected under
 * the read's post): the receive fails with OHC_ERR_REMOTE, the read's
 * registration of the destination is released, and the sender (whose
 * send completed when posted, or failed) sees the broken peer.
 */
static int pull_err_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	struct ohc_verbs_iface *vi;
	struct ohc_verbs_ep *e;
	struct ohc_req q, *all[1] = {&q};
	uint8_t *buf = malloc(100 * KIB);
	int peer = 1 - rank;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	vi = (struct ohc_verbs_iface *)c->iface;
	e = (struct ohc_verbs_ep *)c->eps[peer];
	CHECK(buf, "malloc");
	fill(buf, 100 * KIB, rank, 0);
	tp_barrier(nranks);
	if (rank == 0) {
		tp_req_send(&q, buf, 100 * KIB, 1);
		CHECK(c->ops->ep_send(c->eps[peer], &q) == OHC_OK, "ep_send");
		CHECK(vi->pull_tx == 1, "%lu fragments pulled, want 1",
		      (unsigned long)vi->pull_tx);
		tp_barrier(nranks);
		if (notices_broken_peer(c, peer))
			return 1;
		CHECK(q.status == OHC_OK || q.status == OHC_ERR_REMOTE,
		      "send: %s", ohc_status_str(q.status));
	} else {
		uint64_t until;

		/* both fragments landed before the receive is posted: the
		 * read is then our first post (no credit is owed before) */
		tp_barrier(nranks);
		until = ohc_deadline_after_ms(300);
		while (!ohc_deadline_passed(until))
			c->ops->iface_progress(c->iface);
		ohc_vx_fault_arm(OHC_VX_POST_SEND, 0, OHC_VX_FAULT_QP_ERR);
		tp_req_recv(&q, buf, 100 * KIB, 1);
		CHECK(c->ops->ep_recv(c->eps[peer], &q) == OHC_OK, "ep_recv");
		drive(c, all, 1, 20000);
		ohc_vx_fault_clear();
		CHECK(q.status == OHC_ERR_REMOTE, "recv: %s",
		      ohc_status_str(q.status));
		CHECK(vi->pull_rx == 0 && !e->rd && !e->rd_mr,
		      "%lu pulled, read %d", (unsigned long)vi->pull_rx, e->rd);
		CHECK(c->ops->ep_check(c->eps[peer]) == OHC_ERR_REMOTE,
		      "ep_check");
	}
	CHECK(vi->mrc.n == vi->mrc.idle, "%u registrations, %u unused",
	      vi->mrc.n, vi->mrc.idle);
	tp_barrier(nranks);
	free(buf);
	return rank_down(c);
}

Test(verbs, pulled_fragment_fails_with_the_readers_qp)
{
	NEED_RDMA();
	pull_env(NULL, NULL);
	setenv("OPENHCCL_DEBUG", "NONE", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, pull_err_rank, NULL, 120), 0);
}

/*
 * A pulled fragment's send completes when posted, while its bytes wait in
 * the sender's staging for the receiver's read. Rank 0 sends one such
 * message and closes its endpoint as soon as the send completed; rank 1
 * posts its receive only after that (a delay well inside the close's
 * bound). The close must wait for the read: every byte arrives, and the
 * sender's close returned only after the receive was posted.
 */
static int pull_close_rank(int rank, int nranks, void *arg)
{
	const size_t len = 100 * KIB;
	struct tp_rank cc, *c = &cc;
	struct ohc_req q, *all[1] = {&q};
	uint8_t *buf = malloc(len);
	int peer = 1 - rank;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	CHECK(buf, "malloc");
	tp_barrier(nranks);
	if (rank == 0) {
		fill(buf, len, rank, 5);
		tp_req_send(&q, buf, len, 1);
		CHECK(c->ops->ep_send(c->eps[peer], &q) == OHC_OK, "ep_send");
		CHECK(drive(c, all, 1, 20000) == 0 && q.status == OHC_OK,
		      "send: %s", ohc_status_str(q.status));
		CHECK(((struct ohc_verbs_iface *)c->iface)->pull_tx == 1,
		      "no fragment pulled");
		atomic_store(&sh->sent, 1);
		free(buf);
		if (rank_down(c))
			return 1;
		CHECK(atomic_load(&sh->sent) == 2,
		      "closed before the receive was posted");
		return 0;
	}
	while (!atomic_load(&sh->sent))
		usleep(100);
	usleep(200 * 1000); /* the sender is closing meanwhile */
	memset(buf, 0, len);
	tp_req_recv(&q, buf, len, 1);
	atomic_store(&sh->sent, 2);
	CHECK(c->ops->ep_recv(c->eps[peer], &q) == OHC_OK, "ep_recv");
	CHECK(drive(c, all, 1, 20000) == 0 && q.status == OHC_OK, "recv: %s",
	      ohc_status_str(q.status));
	CHECK(verify(buf, len, peer, 5) < 0, "byte %ld wrong",
	      verify(buf, len, peer, 5));
	free(buf);
	return rank_down(c);
}

Test(verbs, pulled_send_outlives_its_sender)
{
	NEED_RDMA();
	pull_env(NULL, NULL);
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, pull_close_rank, NULL, 120), 0);
}

/*
 * A peer that lies about the slots it freed: rank 1 adds 1000 to every
 * credit count it sends. Rank 0, streaming a message of far more
 * fragments than its ring has slots, must take that for the protocol
 * error it is and fail the ep (its send ends with an error), instead of
 * posting fragments beyond the ring and beyond its work-request arrays.
 */
static void inflate_credits(struct ibv_send_wr *wr)
{
	for (; wr; wr = wr->next)
		if (wr->opcode == IBV_WR_SEND_WITH_IMM)
			wr->imm_data = htonl(ntohl(wr->imm_data) + 1000);
}

static int liar_rank(int rank, int nranks, void *arg)
{
	const size_t len = 8 * MIB; /* 128+ fragments, 32 slots */
	struct tp_rank cc, *c = &cc;
	struct ohc_req q, *all[1] = {&q};
	uint8_t *buf = malloc(len);
	int peer = 1 - rank;

	(void)arg;
	if (rank_up(c, rank, nranks))
		return 1;
	CHECK(buf, "malloc");
	tp_barrier(nranks);
	if (rank == 0) {
		fill(buf, len, rank, 7);
		tp_req_send(&q, buf, len, 1);
		CHECK(c->ops->ep_send(c->eps[peer], &q) == OHC_OK, "ep_send");
		CHECK(drive(c, all, 1, 60000) == 0, "send never ended");
		CHECK(q.status == OHC_ERR_REMOTE,
		      "the send to a lying peer ended with '%s'",
		      ohc_status_str(q.status));
	} else {
		ohc_vx_fault_mutate(inflate_credits);
		tp_req_recv(&q, buf, len, 1);
		CHECK(c->ops->ep_recv(c->eps[peer], &q) == OHC_OK, "ep_recv");
		(void)drive(c, all, 1, 20000); /* ends with an error */
		ohc_vx_fault_mutate(NULL);
	}
	free(buf);
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, lying_credits_fail_the_ep)
{
	NEED_RDMA();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, liar_rank, NULL, 180), 0);
}

/* ---- connections on first use (OPENHCCL_RDMA_LAZY_RANKS) ----------- */

static void lazy_env(void)
{
	setenv("OPENHCCL_RDMA_LAZY_RANKS", "0", 1);
	ohc_env_reload();
}

/* Send len bytes (message idx) to rank + d and receive from rank - d.
 * send_first: the send is driven to completion before the receive is
 * posted (eager sizes complete without the peer's receive). */
static int lz_shift(struct tp_rank *c, int d, size_t len, int idx,
		    int send_first)
{
	int n = c->nranks, to = (c->rank + d) % n, from = (c->rank - d + n) % n;
	uint8_t *sb = malloc(len), *rb = malloc(len + 1);
	struct ohc_req s, r, *all[2] = {&s, &r};
	long bad;

	fill(sb, len, c->rank, idx);
	memset(rb, 0xee, len + 1);
	tp_req_send(&s, sb, len, (uint64_t)idx);
	tp_req_recv(&r, rb, len, (uint64_t)idx);
	CHECK(c->ops->ep_send(c->eps[to], &s) == OHC_OK, "send to %d", to);
	if (send_first)
		CHECK(drive(c, all, 1, 60000) == 0 && s.status == OHC_OK,
		      "send to %d before any receive: %s", to,
		      ohc_status_str(s.status));
	CHECK(c->ops->ep_recv(c->eps[from], &r) == OHC_OK, "recv from %d",
	      from);
	CHECK(drive(c, all, 2, 60000) == 0, "shift %d: timeout", d);
	CHECK(s.status == OHC_OK && r.status == OHC_OK, "shift %d: %s / %s", d,
	      ohc_status_str(s.status), ohc_status_str(r.status));
	bad = verify(rb, len, from, idx);
	CHECK(bad < 0, "shift %d from %d: byte %ld wrong", d, from, bad);
	CHECK(rb[len] == 0xee, "shift %d: wrote past the end", d);
	free(sb);
	free(rb);
	return 0;
}

/*
 * 4 ranks, forced lazy: nothing is connected (and nothing registered)
 * after connect; a ring where every rank sends first connects exactly
 * the two neighbours (each pair's first contact from both sides at
 * once: one wins); the opposite rank, both sending at once, makes 3;
 * then every pair still carries messages larger than the ring. The CQ
 * sized for one ep grows with each. Teardown leaves no fd or MR.
 */
static int lazy_ring_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;

	(void)arg;
	if (lazy_rank_up(c, rank, nranks))
		return 1;
	CHECK(ohc_verbs_connected(c->iface) == 0, "%u connected after init",
	      ohc_verbs_connected(c->iface));
	CHECK(ohc_vx_mr_live() == 0, "%ld MRs after init", ohc_vx_mr_live());
	CHECK(ohc_vx_qp_live() == 0, "%ld QPs after init", ohc_vx_qp_live());
	if (lz_shift(c, 1, 100, 1, 1))
		return 1;
	/* every rank counts before any starts the next shift: the first one
	 * there connects to its opposite rank, whose progress, still in the
	 * ring, answers it (CI once saw 3 on a rank that was slower) */
	tp_barrier(nranks);
	CHECK(ohc_verbs_connected(c->iface) == 2,
	      "%u connected after the ring, want the 2 neighbours",
	      ohc_verbs_connected(c->iface));
	tp_barrier(nranks);
	if (lz_shift(c, 2, 3000, 2, 0))
		return 1;
	CHECK(ohc_verbs_connected(c->iface) == 3,
	      "%u connected after the opposite rank, want 3",
	      ohc_verbs_connected(c->iface));
	for (int d = 1; d < nranks; d++)
		if (lz_shift(c, d, 1 * MIB + 17, 10 + d, 0))
			return 1;
	CHECK(ohc_verbs_connected(c->iface) == 3, "%u connected at the end",
	      ohc_verbs_connected(c->iface));
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, lazy_connects_only_what_is_used)
{
	NEED_RDMA();
	lazy_env();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(4, lazy_ring_rank, NULL, 240), 0);
}

/* Every pair's first contact at once (both sides send and receive):
 * all arrive, whatever side's attempt won. */
static int lazy_all_pairs_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	struct ohc_req sreq[MAXR], rreq[MAXR], *all[2 * MAXR];
	uint8_t *sb[MAXR] = {0}, *rb[MAXR] = {0};
	size_t len = *(const size_t *)arg;
	int n = 0;

	if (lazy_rank_up(c, rank, nranks))
		return 1;
	for (int r = 0; r < nranks; r++) {
		sb[r] = malloc(len);
		rb[r] = malloc(len);
		fill(sb[r], len, rank, 7);
		memset(rb[r], 0xee, len);
	}
	CHECK(tp_post_all_pairs(c, sb, rb, len, 7, sreq, rreq, all, &n) == 0,
	      "post");
	CHECK(drive(c, all, n, 60000) == 0, "all pairs: timeout");
	for (int r = 0; r < nranks; r++) {
		long bad;

		if (r == rank)
			continue;
		CHECK(rreq[r].status == OHC_OK && sreq[r].status == OHC_OK,
		      "pair with %d: %s / %s", r,
		      ohc_status_str(sreq[r].status),
		      ohc_status_str(rreq[r].status));
		bad = verify(rb[r], len, r, 7);
		CHECK(bad < 0, "from %d: byte %ld wrong", r, bad);
	}
	CHECK(ohc_verbs_connected(c->iface) == (unsigned)nranks - 1,
	      "%u connected", ohc_verbs_connected(c->iface));
	for (int r = 0; r < nranks; r++) {
		free(sb[r]);
		free(rb[r]);
	}
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, lazy_first_contact_from_all_sides_at_once)
{
	static const size_t len = 200 * KIB + 3;

	NEED_RDMA();
	lazy_env();
	ohc_test_fork_settle();
	cr_assert_eq(
		ohc_test_fork_ranks(4, lazy_all_pairs_rank, (void *)&len, 240),
		0);
}

/*
 * A peer that sleeps outside any operation (no progress of its own)
 * still answers: its service thread accepts our hello, and our eager
 * send completes into its ring before it wakes up and receives it.
 */
static int lazy_idle_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	struct ohc_req q, *all[1] = {&q};
	uint8_t buf[1000];
	uint64_t deadline;

	(void)arg;
	if (lazy_rank_up(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	if (rank == 0) {
		fill(buf, sizeof(buf), rank, 3);
		tp_req_send(&q, buf, sizeof(buf), 3);
		CHECK(c->ops->ep_send(c->eps[1], &q) == OHC_OK, "send");
		CHECK(drive(c, all, 1, 20000) == 0 && q.status == OHC_OK,
		      "send to a sleeping peer: %s", ohc_status_str(q.status));
		atomic_store(&sh->lz_sent, 1);
	} else {
		deadline = ohc_deadline_after_ms(20000);
		while (!atomic_load(&sh->lz_sent) &&
		       !ohc_deadline_passed(deadline))
			usleep(10000); /* no progress of ours */
		CHECK(atomic_load(&sh->lz_sent), "the send never completed "
						 "while we slept");
		/* the ready byte comes after the peer's QPs are at RTS: the
		 * service thread counts the ep connected when it reads it */
		deadline = ohc_deadline_after_ms(5000);
		while (ohc_verbs_connected(c->iface) != 1 &&
		       !ohc_deadline_passed(deadline))
			usleep(10000);
		CHECK(ohc_verbs_connected(c->iface) == 1,
		      "%u connected by the service thread",
		      ohc_verbs_connected(c->iface));
		memset(buf, 0, sizeof(buf));
		tp_req_recv(&q, buf, sizeof(buf), 3);
		CHECK(c->ops->ep_recv(c->eps[0], &q) == OHC_OK, "recv");
		CHECK(drive(c, all, 1, 20000) == 0 && q.status == OHC_OK,
		      "recv: %s", ohc_status_str(q.status));
		CHECK(verify(buf, sizeof(buf), 0, 3) < 0, "data");
	}
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, lazy_idle_peer_answers)
{
	NEED_RDMA();
	lazy_env();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, lazy_idle_rank, NULL, 120), 0);
}

/*
 * A peer whose listener takes our connection but never answers (arg 1:
 * a plain socket on its port, as a hung process would hold it): the send
 * fails with OHC_ERR_TIMEOUT after HCCL_CONNECT_TIMEOUT (2 s), not before
 * and not much after. A peer that is gone, its listener closed (arg 0):
 * the connection is refused and the send fails at once with
 * OHC_ERR_REMOTE. ep_check says the same.
 */
static int lazy_timeout_rank(int rank, int nranks, void *arg)
{
	int hung = *(const int *)arg;
	struct tp_rank cc, *c = &cc;
	struct ohc_req q, *all[1] = {&q};
	ohc_status_t want = hung ? OHC_ERR_TIMEOUT : OHC_ERR_REMOTE;
	uint8_t buf[100];
	uint64_t t0;
	double s;

	if (lazy_rank_up(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	if (rank == 1) { /* gone: the listener with it */
		struct sockaddr_storage ss =
			ohc_vx_iface(c->iface)->listen_addr;
		int one = 1, fd = -1;

		tp_rank_close(c);
		if (hung) { /* the port held by a socket that never answers */
			fd = socket(ss.ss_family, SOCK_STREAM, 0);
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				   sizeof(one));
			CHECK(bind(fd, (struct sockaddr *)&ss,
				   ss.ss_family == AF_INET
					   ? sizeof(struct sockaddr_in)
					   : sizeof(struct sockaddr_in6)) ==
					      0 &&
				      listen(fd, 4) == 0,
			      "listen again: %s", strerror(errno));
		}
		atomic_store(&sh->lz_closed, 1);
		while (atomic_load(&sh->lz_sent) == 0)
			usleep(1000);
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (!atomic_load(&sh->lz_closed))
		usleep(1000);
	memset(buf, 1, sizeof(buf));
	tp_req_send(&q, buf, sizeof(buf), 1);
	t0 = ohc_time_ns();
	CHECK(c->ops->ep_send(c->eps[1], &q) == OHC_OK, "send");
	CHECK(drive(c, all, 1, 20000) == 0, "no end to the connect");
	s = (double)(ohc_time_ns() - t0) / 1e9;
	atomic_store(&sh->lz_sent, 1);
	CHECK(q.status == want, "send: %s, want %s", ohc_status_str(q.status),
	      ohc_status_str(want));
	CHECK(hung ? s > 1.5 && s < 8 : s < 1, "failed after %.2f s", s);
	CHECK(c->ops->ep_check(c->eps[1]) == want, "ep_check");
	CHECK(ohc_verbs_connected(c->iface) == 0, "connected");
	return rank_down(c);
}

static void lazy_timeout(int hung)
{
	lazy_env();
	setenv("HCCL_CONNECT_TIMEOUT", "2", 1);
	setenv("OPENHCCL_DEBUG", "ERROR", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, lazy_timeout_rank, &hung, 60), 0);
}

Test(verbs, lazy_unanswered_connect_times_out)
{
	NEED_RDMA();
	lazy_timeout(1);
}

Test(verbs, lazy_refused_connect_fails_at_once)
{
	NEED_RDMA();
	lazy_timeout(0);
}

/*
 * A failing ibv call while an ep sets up on first use: that send fails at
 * once with the reason (no memory to register the ring), the ep stays
 * failed, and the peer, whose hello is then dropped, times out after
 * HCCL_CONNECT_TIMEOUT; both tear down without leaks (a half set-up ep).
 */
static int lazy_fault_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	struct ohc_req q, *all[1] = {&q};
	uint8_t buf[100];
	ohc_status_t st;

	(void)arg;
	if (lazy_rank_up(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	memset(buf, 1, sizeof(buf));
	if (rank == 0) {
		ohc_vx_fault_arm(OHC_VX_REG_MR, 1, ENOMEM); /* staging's MR */
		tp_req_send(&q, buf, sizeof(buf), 1);
		st = c->ops->ep_send(c->eps[1], &q);
		ohc_vx_fault_clear();
		CHECK(st == OHC_OK && q.status == OHC_ERR_NO_MEMORY,
		      "send: %s, completed with %s, want no memory",
		      ohc_status_str(st), ohc_status_str(q.status));
		CHECK(c->ops->ep_send(c->eps[1], &q) < 0, "a failed ep sends");
		atomic_store(&sh->lz_sent, 1);
		/* keep answering (and dropping) until the peer gave up */
		while (atomic_load(&sh->lz_closed) == 0) {
			c->ops->iface_progress(c->iface);
			usleep(1000);
		}
	} else {
		while (!atomic_load(&sh->lz_sent))
			usleep(1000);
		tp_req_recv(&q, buf, sizeof(buf), 1);
		CHECK(c->ops->ep_recv(c->eps[0], &q) == OHC_OK, "recv");
		CHECK(drive(c, all, 1, 20000) == 0, "no end to the connect");
		atomic_store(&sh->lz_closed, 1);
		CHECK(q.status == OHC_ERR_TIMEOUT, "recv: %s, want a timeout",
		      ohc_status_str(q.status));
	}
	tp_barrier(nranks);
	return rank_down(c);
}

Test(verbs, lazy_setup_failure_fails_the_first_use)
{
	NEED_RDMA();
	lazy_env();
	setenv("HCCL_CONNECT_TIMEOUT", "2", 1);
	setenv("OPENHCCL_DEBUG", "ERROR", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(2, lazy_fault_rank, NULL, 60), 0);
}

/* Exchange len bytes (message idx) with peer, both ways at once. */
static int lz_pair(struct tp_rank *c, int peer, size_t len, int idx)
{
	uint8_t *sb = malloc(len), *rb = malloc(len);
	struct ohc_req s, r, *all[2] = {&s, &r};

	fill(sb, len, c->rank, idx);
	tp_req_send(&s, sb, len, (uint64_t)idx);
	tp_req_recv(&r, rb, len, (uint64_t)idx);
	CHECK(c->ops->ep_recv(c->eps[peer], &r) == OHC_OK, "recv");
	CHECK(c->ops->ep_send(c->eps[peer], &s) == OHC_OK, "send");
	CHECK(drive(c, all, 2, 30000) == 0 && s.status == OHC_OK &&
		      r.status == OHC_OK,
	      "pair with %d: %s / %s", peer, ohc_status_str(s.status),
	      ohc_status_str(r.status));
	CHECK(verify(rb, len, peer, idx) < 0, "pair with %d: data", peer);
	free(sb);
	free(rb);
	return 0;
}

/*
 * The CQ of a lazy iface is sized for the first eps and grows as more
 * connect (forced lazy: for one). A growth that fails fails that ep's
 * first use with a clear error, the ep already connected keeps working,
 * and the peer whose hello we then drop times out.
 */
static int lazy_cq_rank(int rank, int nranks, void *arg)
{
	struct tp_rank cc, *c = &cc;
	struct ohc_req q, *all[1] = {&q};
	uint8_t buf[100];

	(void)arg;
	if (lazy_rank_up(c, rank, nranks))
		return 1;
	tp_barrier(nranks);
	if (rank < 2 && lz_pair(c, 1 - rank, 100, 1)) /* 0 <-> 1 */
		return 1;
	if (rank == 0) {
		CHECK(ohc_verbs_connected(c->iface) == 1, "connected");
		ohc_vx_fault_arm(OHC_VX_RESIZE_CQ, 0, ENOMEM);
		memset(buf, 1, sizeof(buf));
		tp_req_send(&q, buf, sizeof(buf), 2);
		CHECK(c->ops->ep_send(c->eps[2], &q) == OHC_OK, "send");
		ohc_vx_fault_clear();
		CHECK(q.status == OHC_ERR_UNAVAILABLE,
		      "send to rank 2: %s, want unavailable (no CQ room)",
		      ohc_status_str(q.status));
		atomic_store(&sh->lz_sent, 1);
		while (atomic_load(&sh->lz_closed) == 0) {
			c->ops->iface_progress(c->iface);
			usleep(1000);
		}
	} else if (rank == 2) {
		while (!atomic_load(&sh->lz_sent))
			usleep(1000);
		tp_req_recv(&q, buf, sizeof(buf), 2);
		CHECK(c->ops->ep_recv(c->eps[0], &q) == OHC_OK, "recv");
		CHECK(drive(c, all, 1, 20000) == 0, "no end to the connect");
		atomic_store(&sh->lz_closed, 1);
		CHECK(q.status == OHC_ERR_TIMEOUT, "recv: %s, want a timeout",
		      ohc_status_str(q.status));
	}
	tp_barrier(nranks);
	if (rank < 2 && lz_pair(c, 1 - rank, 3000, 3)) /* still works */
		return 1;
	return rank_down(c);
}

Test(verbs, lazy_cq_growth_failure_fails_that_ep)
{
	NEED_RDMA();
	lazy_env();
	setenv("HCCL_CONNECT_TIMEOUT", "2", 1);
	setenv("OPENHCCL_DEBUG", "ERROR", 1);
	ohc_env_reload();
	ohc_test_fork_settle();
	cr_assert_eq(ohc_test_fork_ranks(3, lazy_cq_rank, NULL, 60), 0);
}

/*
 * rxe fails a send on a netdev going down (IBV_WC_LOC_QP_OP_ERR) before
 * it reports the port down; such a send is a lost link, to be replayed,
 * only while the netdev holding the iface's address is down: the soak's
 * link flap failed a connection on one (CI, its port event read 2 ms
 * after). ohc_vx_link_lost follows the netdev down and up again.
 */
Test(verbs, link_lost_follows_the_netdev, .timeout = 120)
{
	const char *nd = getenv("OHC_VM_NETDEV");
	const char *dev = getenv("OHC_VM_RDMA_DEV");
	const char *gid = getenv("OHC_VM_GID_INDEX");
	struct tp_rank cc, *c = &cc;
	struct ohc_verbs_iface *vi;
	double end;
	int lost_down, back = 0;

	NEED_RDMA();
	if (!nd)
		cr_skip_test("needs the VM's netdev (OHC_VM_NETDEV): "
			     "ci/soft-roce/run-vm.sh");
	memset(c, 0, sizeof(*c));
	cr_assert_eq(iface_open(c, 0, 2), OHC_OK);
	vi = ohc_vx_iface(c->iface);
	cr_expect_eq(ohc_vx_link_lost(vi), 0, "lost with %s up (ip %s)", nd,
		     vi->ip);
	cr_assert_eq(ohc_test_sh("ip link set dev %s down", nd), 0);
	lost_down = ohc_vx_link_lost(vi);
	cr_assert_eq(ohc_test_sh("ip link set dev %s up", nd), 0);
	/* back: the port ACTIVE again and its GID in place (rxe) */
	end = ohc_test_now_s() + 30;
	while (!back && ohc_test_now_s() < end) {
		usleep(200000);
		back = ohc_test_sh("grep -q ACTIVE "
				   "/sys/class/infiniband/%s/ports/1/state && "
				   "! grep -q '^0000:0000:0000:0000:0000:0000:"
				   "0000:0000' "
				   "/sys/class/infiniband/%s/ports/1/gids/%s",
				   dev ? dev : "rxe0", dev ? dev : "rxe0",
				   gid ? gid : "1") == 0 &&
		       !ohc_vx_link_lost(vi);
	}
	cr_expect_eq(lost_down, 1, "not lost with %s down (ip %s)", nd, vi->ip);
	cr_expect(back, "still lost 30 s after %s came up", nd);
	tp_rank_close(c);
}
