/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the bootstrap grows with the rank count: N processes (forked here,
 * over loopback TCP) each time ohc_bootstrap_init_root (JOIN to the root,
 * the table, the ring's connections), then one allgather of the size a
 * communicator exchanges at init (its transports' address records), then
 * a barrier, then its destroy. One row per N on stdout (markdown): the median
 * and the slowest rank of each phase and the job's wall time from the first
 * fork to the last exit. Up to 8192 ranks; each rank holds a few sockets, the
 * root one per rank while they join (RLIMIT_NOFILE is raised to its hard
 * limit here). Each operation's timeout is BENCH_TIMEOUT_MS (600000).
 * Never run by ctest.
 *
 * usage: ohc_bootstrap_scale_bench [-b BYTES] N...
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/bootstrap/bootstrap.h"
#include "util/time.h"

#define MAX_RANKS 8192

enum { PH_INIT, PH_ALLGATHER, PH_BARRIER, PH_DESTROY, NPHASES };

struct shared {
	uint8_t root[OHC_ROOT_INFO_BYTES];
	uint64_t timeout_ms;
	double ms[MAX_RANKS][NPHASES];
	int ok[MAX_RANKS];
};

static double now_ms(void)
{
	return (double)ohc_time_ns() / 1e6;
}

static int rank_main(uint32_t rank, uint32_t nranks, size_t bytes,
		     struct shared *sh, int go_fd)
{
	struct ohc_bootstrap *bs = NULL;
	uint8_t *buf = malloc((size_t)nranks * bytes);
	double t;
	int ok = 1;
	char c;

	if (!buf)
		return 1;
	/* every rank starts at once: when the parent closes the pipe */
	while (read(go_fd, &c, 1) < 0 && errno == EINTR)
		;
	close(go_fd);
	t = now_ms();
	if (ohc_bootstrap_init_root(sh->root, nranks, rank, sh->timeout_ms,
				    &bs))
		return 1;
	sh->ms[rank][PH_INIT] = now_ms() - t;
	memset(buf + (size_t)rank * bytes, (int)(rank & 0xff), bytes);
	t = now_ms();
	if (ohc_bootstrap_allgather(bs, buf, bytes))
		return 1;
	sh->ms[rank][PH_ALLGATHER] = now_ms() - t;
	t = now_ms();
	if (ohc_bootstrap_barrier(bs))
		return 1;
	sh->ms[rank][PH_BARRIER] = now_ms() - t;
	for (uint32_t r = 0; r < nranks; r++)
		for (size_t i = 0; i < bytes; i++)
			if (buf[(size_t)r * bytes + i] != (uint8_t)(r & 0xff))
				ok = 0;
	sh->ok[rank] = ok;
	t = now_ms();
	ohc_bootstrap_destroy(bs);
	sh->ms[rank][PH_DESTROY] = now_ms() - t;
	free(buf);
	return ok ? 0 : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int run(uint32_t nranks, size_t bytes, struct shared *sh)
{
	static pid_t pids[MAX_RANKS];
	static double v[MAX_RANKS];
	double t0, wall;
	int failed = 0;

	int go[2];

	memset(sh, 0, sizeof(*sh));
	sh->timeout_ms =
		getenv("BENCH_TIMEOUT_MS")
			? strtoull(getenv("BENCH_TIMEOUT_MS"), NULL, 10)
			: 600000;
	if (ohc_root_info_create(sh->root) || pipe(go))
		return -1;
	fflush(NULL);
	t0 = now_ms();
	for (uint32_t r = 0; r < nranks; r++) {
		pids[r] = fork();
		if (pids[r] < 0) {
			perror("fork");
			nranks = r;
			failed++;
			break;
		}
		if (pids[r] == 0) {
			close(go[1]);
			_exit(rank_main(r, nranks, bytes, sh, go[0]));
		}
	}
	close(go[0]);
	close(go[1]); /* go */
	for (uint32_t r = 0; r < nranks; r++) {
		int st;

		while (waitpid(pids[r], &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			failed++;
	}
	wall = now_ms() - t0;
	printf("| %u | %zu | %.0f |", nranks, bytes, wall);
	for (int ph = 0; ph < NPHASES; ph++) {
		for (uint32_t r = 0; r < nranks; r++)
			v[r] = sh->ms[r][ph];
		qsort(v, nranks, sizeof(*v), cmp_double);
		printf(" %.1f | %.1f |", v[nranks / 2], v[nranks - 1]);
	}
	printf("%s\n", failed ? " FAILED" : "");
	fflush(stdout);
	return failed;
}

int main(int argc, char **argv)
{
	struct shared *sh;
	struct rlimit rl;
	size_t bytes = 774; /* 3 transports' address records */
	int failed = 0, first = 1;

	if (argc > 2 && !strcmp(argv[1], "-b")) {
		bytes = strtoul(argv[2], NULL, 10);
		first = 3;
	}
	if (argc <= first || !bytes) {
		fprintf(stderr, "usage: %s [-b BYTES] N...\n", argv[0]);
		return 2;
	}
	for (int i = first; i < argc; i++) {
		char *end;
		long n = strtol(argv[i], &end, 10);

		if (*end || n < 1 || n > MAX_RANKS) {
			fprintf(stderr, "%s: bad rank count '%s' (1-%d)\n",
				argv[0], argv[i], MAX_RANKS);
			return 2;
		}
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	printf("| ranks | bytes per rank | job wall ms | init ms median | "
	       "init ms max | allgather ms median | allgather ms max | "
	       "barrier ms median | barrier ms max | destroy ms median | "
	       "destroy ms max |\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int i = first; i < argc; i++)
		failed += run((uint32_t)atoi(argv[i]), bytes, sh) != 0;
	return failed ? 1 : 0;
}
