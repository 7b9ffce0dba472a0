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
 * usage: ohc_verbs_p2p_bench [MINBYTES] [MAXBYTES] [ITERS] [WARMUP] [lat]
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

struct shared {
	HcclRootInfo root;
	double mbps[64]; /* or us, half round trip (lat) */
	int fail;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* one message of the sweep: a one-way send, or a ping-pong round trip */
static HcclResult one_msg(HcclComm comm, char *buf, size_t b, int rank, int lat,
			  aclrtStream st)
{
	HcclResult r;

	if (rank == 0) {
		r = HcclSend(buf, b, HCCL_DATA_TYPE_INT8, 1, comm, st);
		if (r == HCCL_SUCCESS && lat)
			r = HcclRecv(buf, b, HCCL_DATA_TYPE_INT8, 1, comm, st);
	} else {
		r = HcclRecv(buf, b, HCCL_DATA_TYPE_INT8, 0, comm, st);
		if (r == HCCL_SUCCESS && lat)
			r = HcclSend(buf, b, HCCL_DATA_TYPE_INT8, 0, comm, st);
	}
	return r;
}

/* Wait for what was enqueued on st (nothing to do without a stream). */
static HcclResult drain(aclrtStream st)
{
	return st && aclrtSynchronizeStream(st) ? HCCL_E_INTERNAL
						: HCCL_SUCCESS;
}

static int run_rank(struct shared *sh, int rank, size_t minb, size_t maxb,
		    int iters, int warmup, int lat)
{
	HcclComm comm;
	char *buf = malloc(maxb);
	const char *sync = getenv("OHC_BENCH_SYNC");
	aclrtStream st = NULL;
	int k = 0;

	if (!buf || aclrtSetDevice(rank) ||
	    HcclCommInitRootInfo(2, &sh->root, (uint32_t)rank, &comm))
		return 1;
	if (!lat && !(sync && atoi(sync)) && aclrtCreateStream(&st))
		return 1;
	memset(buf, rank + 1, maxb);
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
			r = one_msg(comm, buf, b, rank, lat, st);
			if (r == HCCL_SUCCESS && i + 1 == warmup + iters)
				r = drain(st);
			if (r != HCCL_SUCCESS) {
				fprintf(stderr,
					"rank %d: %s of %zu bytes: %d\n", rank,
					rank ? "HcclRecv" : "HcclSend", b,
					(int)r);
				return 1;
			}
		}
		/* the round trips, on the clock of the rank that started them
		 */
		if (lat && rank == 0)
			sh->mbps[k] = (now_s() - t0) * 1e6 / iters / 2;
		/* the receiver's clock: the last byte arrived */
		if (!lat && rank == 1)
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
	int lat = argc > 5 && !strcmp(argv[5], "lat");
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid[2];
	int k = 0, bad = 0;

	if (sh == MAP_FAILED || !minb || maxb < minb || iters < 1 ||
	    (argc > 5 && !lat) || HcclGetRootInfo(&sh->root) != HCCL_SUCCESS) {
		fprintf(stderr,
			"usage: %s [MINBYTES] [MAXBYTES] [ITERS] "
			"[WARMUP] [lat]\n",
			argv[0]);
		return 2;
	}
	for (int r = 0; r < 2; r++) {
		pid[r] = fork();
		if (pid[r] == 0)
			_exit(run_rank(sh, r, minb, maxb, iters, warmup, lat));
	}
	for (int r = 0; r < 2; r++) {
		int st;

		waitpid(pid[r], &st, 0);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	if (bad) {
		fprintf(stderr, "a rank failed\n");
		return 1;
	}
	printf(lat ? " #bytes     #iterations    t_avg[usec]\n"
		   : " #bytes     #iterations    BW average[MB/sec]\n");
	for (size_t b = minb; b <= maxb; b *= 2, k++)
		printf(" %-10zu %-14d %.2f\n", b, iters, sh->mbps[k]);
	return 0;
}
