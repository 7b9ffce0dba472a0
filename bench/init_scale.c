/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How communicator init grows with the number of ranks on one host: N
 * processes (forked here, over shared memory) each time the span from
 * HcclCommInitRootInfo to the end of their first AllReduce (8 B, fp32
 * sum), then read their resident memory (VmRSS, VmHWM) and proportional
 * share (Pss: shared rings counted once across the ranks that map them).
 * The job's wall time runs from the first fork to the last exit. One row
 * per N on stdout (markdown); bench/init_scale.sh puts Open MPI's launch
 * of the same AllReduce beside it. Never run by ctest.
 *
 * usage: ohc_init_scale_bench N...
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#define MAX_RANKS 1024

struct result {
	double init_ms;
	long rss_kb, hwm_kb, pss_kb;
	int ok;
};

struct shared {
	HcclRootInfo root;
	int ready;
	struct result res[MAX_RANKS];
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The value of "key:" in a /proc file, in kB; -1 if absent. */
static long proc_kb(const char *path, const char *key)
{
	char line[256];
	size_t n = strlen(key);
	long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static int rank_main(int rank, int nranks, struct shared *sh)
{
	struct result *res = &sh->res[rank];
	HcclComm comm;
	aclrtStream stream;
	float *in, *out;
	double t0;

	if (aclInit(NULL) || aclrtSetDevice(rank) || aclrtCreateStream(&stream))
		return 1;
	if (rank == 0) {
		if (HcclGetRootInfo(&sh->root))
			return 1;
		__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
	}
	while (!__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE))
		usleep(200);
	t0 = now_ms();
	if (HcclCommInitRootInfo((uint32_t)nranks, &sh->root, (uint32_t)rank,
				 &comm))
		return 1;
	if (aclrtMalloc((void **)&in, 64, ACL_MEM_MALLOC_HUGE_FIRST) ||
	    aclrtMalloc((void **)&out, 64, ACL_MEM_MALLOC_HUGE_FIRST))
		return 1;
	in[0] = (float)rank;
	in[1] = 1.0f;
	if (HcclAllReduce(in, out, 2, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
			  comm, stream) ||
	    aclrtSynchronizeStream(stream))
		return 1;
	res->init_ms = now_ms() - t0;
	res->rss_kb = proc_kb("/proc/self/status", "VmRSS");
	res->hwm_kb = proc_kb("/proc/self/status", "VmHWM");
	res->pss_kb = proc_kb("/proc/self/smaps_rollup", "Pss");
	res->ok = out[0] == (float)nranks * (float)(nranks - 1) / 2 &&
		  out[1] == (float)nranks;
	HcclCommDestroy(comm);
	aclrtFree(in);
	aclrtFree(out);
	aclrtDestroyStream(stream);
	aclrtResetDevice(rank);
	aclFinalize();
	return res->ok ? 0 : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int run(int nranks, struct shared *sh)
{
	static pid_t pids[MAX_RANKS];
	static double v[MAX_RANKS];
	double t0, wall, init_med, init_max = 0, rss_med, pss_med, hwm_max = 0;
	int failed = 0;

	memset(sh, 0, sizeof(*sh));
	fflush(NULL);
	t0 = now_ms();
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			return -1;
		if (pids[r] == 0)
			_exit(rank_main(r, nranks, sh));
	}
	for (int r = 0; r < nranks; r++) {
		int st;

		while (waitpid(pids[r], &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			failed++;
	}
	wall = now_ms() - t0;
	for (int r = 0; r < nranks; r++) {
		v[r] = sh->res[r].init_ms;
		if (v[r] > init_max)
			init_max = v[r];
		if (sh->res[r].hwm_kb > hwm_max)
			hwm_max = (double)sh->res[r].hwm_kb;
	}
	init_med = median(v, nranks);
	for (int r = 0; r < nranks; r++)
		v[r] = (double)sh->res[r].rss_kb;
	rss_med = median(v, nranks);
	for (int r = 0; r < nranks; r++)
		v[r] = (double)sh->res[r].pss_kb;
	pss_med = median(v, nranks);
	printf("| %d | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f |%s\n", nranks,
	       wall, init_med, init_max, rss_med / 1024, pss_med / 1024,
	       hwm_max / 1024, failed ? " FAILED" : "");
	fflush(stdout);
	return failed;
}

int main(int argc, char **argv)
{
	struct shared *sh;
	int failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s N...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		char *end;
		long n = strtol(argv[i], &end, 10);

		if (*end || n < 1 || n > MAX_RANKS) {
			fprintf(stderr, "%s: bad rank count '%s' (1-%d)\n",
				argv[0], argv[i], MAX_RANKS);
			return 2;
		}
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	printf("| ranks | job wall ms | init ms median | init ms max | RSS "
	       "MiB median | Pss MiB median | peak RSS MiB max |\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int i = 1; i < argc; i++) {
		int n = atoi(argv[i]);
		char count[16];

		/* one logical device per rank, however many CPUs */
		snprintf(count, sizeof(count), "%d", n);
		setenv("OPENHCCL_DEVICE_COUNT", count, 1);
		failed += run(n, sh) != 0;
	}
	return failed != 0;
}
