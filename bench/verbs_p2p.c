/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HcclSend/HcclRecv bandwidth between two forked ranks, one direction,
 * sizes MIN..MAX doubling; the same shape as ib_write_bw's report (bytes,
 * iterations, MB/s average with MB = 2^20 bytes) so bench/verbs_p2p.sh
 * can put them side by side. The transport is whatever the communicator
 * picks: HCCL_INTRA_ROCE_ENABLE=1 makes it verbs.
 *
 * Bandwidth runs like hccl_test: each rank enqueues all ITERS messages on
 * a stream (aclrtCreateStream) and synchronizes once at the end, so
 * consecutive messages may overlap as ib_write_bw's do (it keeps up to 128
 * writes in flight). OHC_BENCH_SYNC=1 runs each message as its own
 * synchronous call (NULL stream) instead, as this benchmark did before.
 * The latency mode (lat) is always synchronous.
 *
 * OHC_BENCH_RANKS=N (even but for barrier, 2..64; default 2) forks N ranks into
 * one communicator, rank r paired with r + N/2 (mod N), every pair at once; the
 * numbers are pair 0's. With more ranks than CPUs the library sleeps in its
 * waits (core/wait.c), so this measures what a message costs then. The exchange
 * mode (xchg) has both ranks of every pair send and receive at once
 * (HcclBatchSendRecv), as a step of recursive doubling does, enqueued on a
 * stream as hccl_test enqueues collectives: the time is one exchange, on rank
 * 0's clock. (The partner is N/2 away because a batch runs its items by ring
 * distance, sending to r + k and receiving from r - k in step k: only at k =
 * N/2 are both one step.) The barrier mode (barrier) times HcclBarrier alone,
 * enqueued the same way (the size only names the row): ceil(log2 N) steps of
 * empty messages in which every rank takes part, which is what a collective's
 * step costs when ranks share CPUs (bench/sim_validate.sh's wake).
 * WINDOWS (1) times each size that many times, ITERS messages each,
 * and reports the best (a window the host stalled drops out).
 * OHC_BENCH_ACL=1 takes the buffers from aclrtMalloc, as hccl_test does:
 * large ones are then shared memory, which shm reads zero-copy.
 * usage: ohc_verbs_p2p_bench [MINBYTES] [MAXBYTES] [ITERS] [WARMUP]
 *                            [bw|lat|xchg|barrier] [WINDOWS]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#define MAX_RANKS 64

/* M_XCHG and after: every rank takes part in each call at once, timed
 * on rank 0's clock, the slowest rank's window beside it */
enum mode { M_BW, M_LAT, M_XCHG, M_BARRIER };

struct shared {
	HcclRootInfo root;
	double mbps[64];    /* or us: half round trip (lat), exchange (xchg) */
	double slowest[64]; /* xchg: the best window of the slowest rank */
	double dt[MAX_RANKS]; /* xchg: each rank's last window */
	int fail;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * One message of the sweep between rank and its partner rank + n/2: a
 * one-way send (from the lower half), a ping-pong round trip (lat), or
 * both ways at once (xchg: buf sends, buf + b receives).
 */
static HcclResult one_msg(HcclComm comm, char *buf, size_t b, int n, int rank,
			  enum mode mode, aclrtStream st)
{
	uint32_t peer = (uint32_t)((rank + n / 2) % n);
	HcclResult r;

	if (mode == M_BARRIER)
		return HcclBarrier(comm, st);
	if (mode == M_XCHG) {
		HcclSendRecvItem it[2] = {
			{HCCL_SEND, buf, b, HCCL_DATA_TYPE_INT8, peer},
			{HCCL_RECV, buf + b, b, HCCL_DATA_TYPE_INT8, peer},
		};

		return HcclBatchSendRecv(it, 2, comm, st);
	}
	if (rank < n / 2) {
		r = HcclSend(buf, b, HCCL_DATA_TYPE_INT8, peer, comm, st);
		if (r == HCCL_SUCCESS && mode == M_LAT)
			r = HcclRecv(buf, b, HCCL_DATA_TYPE_INT8, peer, comm,
				     st);
	} else {
		r = HcclRecv(buf, b, HCCL_DATA_TYPE_INT8, peer, comm, st);
		if (r == HCCL_SUCCESS && mode == M_LAT)
			r = HcclSend(buf, b, HCCL_DATA_TYPE_INT8, peer, comm,
				     st);
	}
	return r;
}

/* Wait for what was enqueued on st (nothing to do without a stream). */
static HcclResult drain(aclrtStream st)
{
	return st && aclrtSynchronizeStream(st) ? HCCL_E_INTERNAL
						: HCCL_SUCCESS;
}

/* rank's failure of its message of b bytes */
static int msg_failed(int nranks, int rank, enum mode mode, size_t b,
		      HcclResult r)
{
	fprintf(stderr, "rank %d: %s of %zu bytes: %d\n", rank,
		mode == M_BARRIER    ? "HcclBarrier"
		: mode == M_XCHG     ? "HcclBatchSendRecv"
		: rank >= nranks / 2 ? "HcclRecv"
				     : "HcclSend",
		b, (int)r);
	return 1;
}

/*
 * Each size: warmup messages, then windows of iters messages that every
 * rank starts together (a barrier); the best window counts (the least
 * time, the most bandwidth), so a window the host stalled drops out.
 */
static int run_rank(struct shared *sh, int nranks, int rank, size_t minb,
		    size_t maxb, int iters, int warmup, int windows,
		    enum mode mode)
{
	HcclComm comm;
	const char *acl = getenv("OHC_BENCH_ACL");
	int dev = acl && atoi(acl);
	void *mem = NULL;
	char *buf;
	const char *sync = getenv("OHC_BENCH_SYNC");
	aclrtStream st = NULL;
	HcclResult r = HCCL_SUCCESS;
	int k = 0;

	if (aclrtSetDevice(rank))
		return 1;
	if (dev ? aclrtMalloc(&mem, 2 * maxb, ACL_MEM_MALLOC_HUGE_FIRST)
		: !(mem = malloc(2 * maxb)))
		return 1;
	buf = mem;
	if (HcclCommInitRootInfo((uint32_t)nranks, &sh->root, (uint32_t)rank,
				 &comm))
		return 1;
	if (mode != M_LAT && !(sync && atoi(sync)) && aclrtCreateStream(&st))
		return 1;
	memset(buf, rank + 1, 2 * maxb);
	for (size_t b = minb; b <= maxb; b *= 2, k++) {
		for (int i = 0; i < warmup && r == HCCL_SUCCESS; i++)
			r = one_msg(comm, buf, b, nranks, rank, mode, st);
		if (r != HCCL_SUCCESS)
			return msg_failed(nranks, rank, mode, b, r);
		for (int w = 0; w < windows; w++) {
			double t0, dt, v;

			/* every rank starts the window together */
			if (drain(st) || HcclBarrier(comm, NULL))
				return 1;
			t0 = now_s();
			for (int i = 0; i < iters && r == HCCL_SUCCESS; i++)
				r = one_msg(comm, buf, b, nranks, rank, mode,
					    st);
			if (r == HCCL_SUCCESS)
				r = drain(st);
			if (r != HCCL_SUCCESS)
				return msg_failed(nranks, rank, mode, b, r);
			dt = now_s() - t0;
			if (mode >= M_XCHG && nranks > 2) {
				/* the window of the rank that took longest */
				double mx = 0;

				sh->dt[rank] = dt;
				if (HcclBarrier(comm, NULL))
					return 1;
				for (int q = 0; q < nranks; q++)
					mx = sh->dt[q] > mx ? sh->dt[q] : mx;
				mx = mx * 1e6 / iters;
				if (rank == 0 && (!w || mx < sh->slowest[k]))
					sh->slowest[k] = mx;
			}
			/*
			 * lat: the round trips on the clock of the rank that
			 * started them; xchg, barrier: rank 0's; bandwidth: the
			 * receiver's clock, the last byte arrived
			 */
			if (mode == M_LAT && rank == 0)
				v = dt * 1e6 / iters / 2;
			else if (mode >= M_XCHG && rank == 0)
				v = dt * 1e6 / iters;
			else if (mode == M_BW && rank == nranks / 2)
				v = (double)b * iters / dt / (1024.0 * 1024.0);
			else
				continue;
			if (!w ||
			    (mode == M_BW ? v > sh->mbps[k] : v < sh->mbps[k]))
				sh->mbps[k] = v;
		}
	}
	/* the sender's last message may still be in flight: end together */
	if (HcclBarrier(comm, NULL))
		return 1;
	if (st)
		aclrtDestroyStream(st);
	HcclCommDestroy(comm);
	if (dev)
		aclrtFree(mem);
	else
		free(mem);
	return 0;
}

int main(int argc, char **argv)
{
	size_t minb = argc > 1 ? strtoull(argv[1], NULL, 0) : 65536;
	size_t maxb = argc > 2 ? strtoull(argv[2], NULL, 0) : 4u << 20;
	int iters = argc > 3 ? atoi(argv[3]) : 100;
	int warmup = argc > 4 ? atoi(argv[4]) : 5;
	const char *m = argc > 5 ? argv[5] : "";
	enum mode mode = !strcmp(m, "lat")	 ? M_LAT
			 : !strcmp(m, "xchg")	 ? M_XCHG
			 : !strcmp(m, "barrier") ? M_BARRIER
						 : M_BW;
	const char *env = getenv("OHC_BENCH_RANKS");
	int nranks = env ? atoi(env) : 2;
	int windows = argc > 6 ? atoi(argv[6]) : 1;
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid[MAX_RANKS];
	int k = 0, bad = 0;

	if (sh == MAP_FAILED || !minb || maxb < minb || iters < 1 ||
	    (argc > 5 && mode == M_BW && strcmp(m, "bw")) || windows < 1 ||
	    nranks < 2 || nranks > MAX_RANKS ||
	    (nranks % 2 && mode != M_BARRIER) ||
	    HcclGetRootInfo(&sh->root) != HCCL_SUCCESS) {
		fprintf(stderr,
			"usage: %s [MINBYTES] [MAXBYTES] [ITERS] "
			"[WARMUP] [bw|lat|xchg|barrier] [WINDOWS]\n"
			"  OHC_BENCH_RANKS: a count of ranks, 2..%d, even "
			"but for barrier\n",
			argv[0], MAX_RANKS);
		return 2;
	}
	for (int r = 0; r < nranks; r++) {
		pid[r] = fork();
		if (pid[r] == 0)
			_exit(run_rank(sh, nranks, r, minb, maxb, iters, warmup,
				       windows, mode));
	}
	for (int r = 0; r < nranks; r++) {
		int st;

		waitpid(pid[r], &st, 0);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	if (bad) {
		fprintf(stderr, "a rank failed\n");
		return 1;
	}
	printf(mode != M_BW
		       ? " #bytes     #iterations    t_avg[usec]\n"
		       : " #bytes     #iterations    BW average[MB/sec]\n");
	for (size_t b = minb; b <= maxb; b *= 2, k++)
		if (mode >= M_XCHG && nranks > 2)
			printf(" %-10zu %-14d %.2f (slowest rank %.2f)\n", b,
			       iters, sh->mbps[k], sh->slowest[k]);
		else
			printf(" %-10zu %-14d %.2f\n", b, iters, sh->mbps[k]);
	return 0;
}
