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
 * OHC_BENCH_RANKS=N (even, 2..64; default 2) forks N ranks into one
 * communicator, rank r paired with r ^ 1, every pair at once; the numbers
 * are pair 0's. With more ranks than CPUs the library sleeps in its waits
 * (comm.c), so this measures what a message costs then. The exchange
 * mode (xchg) has both ranks of every pair send and receive at once
 * (HcclBatchSendRecv), as a step of recursive doubling does, enqueued on
 * a stream as hccl_test enqueues collectives: the time is one exchange,
 * on rank 0's clock.
 * usage: ohc_verbs_p2p_bench [MINBYTES] [MAXBYTES] [ITERS] [WARMUP]
 *                            [lat|xchg]
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

enum mode { M_BW, M_LAT, M_XCHG };

struct shared {
	HcclRootInfo root;
	double mbps[64]; /* or us: half round trip (lat), exchange (xchg) */
	int fail;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * One message of the sweep between rank and its partner rank ^ 1: a
 * one-way send (even to odd), a ping-pong round trip (lat), or both ways
 * at once (xchg: buf sends, buf + b receives).
 */
static HcclResult one_msg(HcclComm comm, char *buf, size_t b, int rank,
			  enum mode mode, aclrtStream st)
{
	uint32_t peer = (uint32_t)(rank ^ 1);
	HcclResult r;

	if (mode == M_XCHG) {
		HcclSendRecvItem it[2] = {
			{HCCL_SEND, buf, b, HCCL_DATA_TYPE_INT8, peer},
			{HCCL_RECV, buf + b, b, HCCL_DATA_TYPE_INT8, peer},
		};

		return HcclBatchSendRecv(it, 2, comm, st);
	}
	if (!(rank & 1)) {
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

static int run_rank(struct shared *sh, int nranks, int rank, size_t minb,
		    size_t maxb, int iters, int warmup, enum mode mode)
{
	HcclComm comm;
	char *buf = malloc(2 * maxb);
	const char *sync = getenv("OHC_BENCH_SYNC");
	aclrtStream st = NULL;
	int k = 0;

	if (!buf || aclrtSetDevice(rank) ||
	    HcclCommInitRootInfo((uint32_t)nranks, &sh->root, (uint32_t)rank,
				 &comm))
		return 1;
	if (mode != M_LAT && !(sync && atoi(sync)) && aclrtCreateStream(&st))
		return 1;
	memset(buf, rank + 1, 2 * maxb);
	for (size_t b = minb; b <= maxb; b *= 2, k++) {
		double t0 = 0;

		for (int i = 0; i < warmup + iters; i++) {
			HcclResult r;

			if (i == warmup) {
				/* both ranks start the timed part together */
				if (drain(st) || HcclBarrier(comm, NULL))
					return 1;
				t0 = now_s();
			}
			r = one_msg(comm, buf, b, rank, mode, st);
			if (r == HCCL_SUCCESS && i + 1 == warmup + iters)
				r = drain(st);
			if (r != HCCL_SUCCESS) {
				fprintf(stderr,
					"rank %d: %s of %zu bytes: %d\n", rank,
					mode == M_XCHG ? "HcclBatchSendRecv"
					: rank & 1     ? "HcclRecv"
						       : "HcclSend",
					b, (int)r);
				return 1;
			}
		}
		/* the round trips, on the clock of the rank that started them
		 */
		if (mode == M_LAT && rank == 0)
			sh->mbps[k] = (now_s() - t0) * 1e6 / iters / 2;
		if (mode == M_XCHG && rank == 0)
			sh->mbps[k] = (now_s() - t0) * 1e6 / iters;
		/* the receiver's clock: the last byte arrived */
		if (mode == M_BW && rank == 1)
			sh->mbps[k] = (double)b * iters / (now_s() - t0) /
				      (1024.0 * 1024.0);
	}
	/* the sender's last message may still be in flight: end together */
	if (HcclBarrier(comm, NULL))
		return 1;
	if (st)
		aclrtDestroyStream(st);
	HcclCommDestroy(comm);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	size_t minb = argc > 1 ? strtoull(argv[1], NULL, 0) : 65536;
	size_t maxb = argc > 2 ? strtoull(argv[2], NULL, 0) : 4u << 20;
	int iters = argc > 3 ? atoi(argv[3]) : 100;
	int warmup = argc > 4 ? atoi(argv[4]) : 5;
	const char *m = argc > 5 ? argv[5] : "";
	enum mode mode = !strcmp(m, "lat")    ? M_LAT
			 : !strcmp(m, "xchg") ? M_XCHG
					      : M_BW;
	const char *env = getenv("OHC_BENCH_RANKS");
	int nranks = env ? atoi(env) : 2;
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid[MAX_RANKS];
	int k = 0, bad = 0;

	if (sh == MAP_FAILED || !minb || maxb < minb || iters < 1 ||
	    (argc > 5 && mode == M_BW) || nranks < 2 || nranks > MAX_RANKS ||
	    nranks % 2 || HcclGetRootInfo(&sh->root) != HCCL_SUCCESS) {
		fprintf(stderr,
			"usage: %s [MINBYTES] [MAXBYTES] [ITERS] "
			"[WARMUP] [lat|xchg]\n"
			"  OHC_BENCH_RANKS: an even count of ranks, 2..%d\n",
			argv[0], MAX_RANKS);
		return 2;
	}
	for (int r = 0; r < nranks; r++) {
		pid[r] = fork();
		if (pid[r] == 0)
			_exit(run_rank(sh, nranks, r, minb, maxb, iters, warmup,
				       mode));
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
		printf(" %-10zu %-14d %.2f\n", b, iters, sh->mbps[k]);
	return 0;
}
