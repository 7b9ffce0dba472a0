/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The machine's copy limit, for bench/scaling.sh: T threads at once, each
 * memcpy()ing its own buffer of MIB MiB into another (both first touched
 * by the thread, so they sit on its NUMA node), PASSES copies a round.
 * Thread t runs on the t-th CPU this process may use when the threads fit
 * those CPUs (as the hccl_test tools and the Open MPI bundle bind ranks),
 * else unbound. Per thread count the best of ROUNDS rounds; one line
 * "THREADS GBPS PER_THREAD_GBPS": bytes copied per second (GB = 1e9),
 * all threads together and per thread; a copy reads and writes each byte,
 * so the memory traffic is at least twice that.
 *
 * With -x, first the exchange floor: two threads on the first two CPUs
 * this process may use hand a cache line back and forth (each stores its
 * count, then spins until the other's count reaches it), the least time
 * any exchange between two ranks on those CPUs takes; one line
 * "floor_us US": microseconds per exchange, the best of ROUNDS rounds of
 * XCHG exchanges. It moves with where the host puts the two CPUs (0.08
 * to 0.3 us on the shared 2-core VMs), which is why small-message times
 * are best read against it, measured in the same run.
 *
 * usage: ohc_membw_bench [-s MIB] [-p PASSES] [-r ROUNDS] [-x] THREADS...
 *        (64 MiB, 4 passes, 3 rounds)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/compiler.h"

struct membw_thread {
	pthread_t tid;
	int cpu; /* -1: unbound */
	size_t bytes;
	int passes, rounds;
	pthread_barrier_t *start, *done;
	double *t0, *t1; /* per round: when this thread began and ended */
};

static int membw_fail(const char *what, int err)
{
	fprintf(stderr, "ohc_membw_bench: %s: %s\n", what, strerror(err));
	return 1;
}

static double membw_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The first max CPUs this process may use, into cpus; how many. */
static int membw_cpus(int *cpus, int max)
{
	cpu_set_t allowed;
	int n = 0;

	if (!sched_getaffinity(0, sizeof(allowed), &allowed))
		for (int c = 0; c < CPU_SETSIZE && n < max; c++)
			if (CPU_ISSET(c, &allowed))
				cpus[n++] = c;
	return n;
}

/* Run the calling thread on cpu (< 0: leave it unbound). */
static void membw_bind(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * Copies between the barriers of each round, timing itself: the main
 * thread may not run when the copies start (more threads than CPUs).
 */
static void *membw_run(void *arg)
{
	struct membw_thread *t = arg;
	char *src, *dst;

	membw_bind(t->cpu);
	src = malloc(t->bytes);
	dst = malloc(t->bytes);
	if (!src || !dst) {
		fprintf(stderr, "ohc_membw_bench: out of memory (%zu MiB)\n",
			t->bytes >> 20);
		exit(1);
	}
	memset(src, 1, t->bytes);
	memset(dst, 0, t->bytes);
	for (int r = 0; r < t->rounds; r++) {
		pthread_barrier_wait(t->start);
		t->t0[r] = membw_now();
		for (int p = 0; p < t->passes; p++) {
			src[p] = (char)p; /* not the same copy twice */
			memcpy(dst, src, t->bytes);
		}
		t->t1[r] = membw_now();
		pthread_barrier_wait(t->done);
	}
	free(src);
	free(dst);
	return NULL;
}

/* The best round's GB/s of n threads, or a negative value on failure. */
static double membw_threads(int n, size_t bytes, int passes, int rounds)
{
	struct membw_thread *th = calloc((size_t)n, sizeof(*th));
	double *times = calloc((size_t)n * 2 * (size_t)rounds, sizeof(double));
	pthread_barrier_t start, done;
	int cpus[CPU_SETSIZE], ncpu = membw_cpus(cpus, CPU_SETSIZE), err;
	double best = 0, copied = (double)n * passes * (double)bytes;

	if (!th || !times) {
		free(th);
		free(times);
		return -1;
	}
	pthread_barrier_init(&start, NULL, (unsigned)n + 1);
	pthread_barrier_init(&done, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		th[i] = (struct membw_thread){
			.cpu = n <= ncpu ? cpus[i] : -1,
			.bytes = bytes,
			.passes = passes,
			.rounds = rounds,
			.start = &start,
			.done = &done,
			.t0 = times + (size_t)i * 2 * (size_t)rounds,
			.t1 = times + ((size_t)i * 2 + 1) * (size_t)rounds,
		};
		err = pthread_create(&th[i].tid, NULL, membw_run, &th[i]);
		if (err) {
			membw_fail("pthread_create", err);
			exit(1);
		}
	}
	for (int r = 0; r < rounds; r++) {
		pthread_barrier_wait(&start);
		pthread_barrier_wait(&done);
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i].tid, NULL);
	/* a round: from the first thread's start to the last one's end */
	for (int r = 0; r < rounds; r++) {
		double t0 = th[0].t0[r], t1 = th[0].t1[r];

		for (int i = 1; i < n; i++) {
			t0 = th[i].t0[r] < t0 ? th[i].t0[r] : t0;
			t1 = th[i].t1[r] > t1 ? th[i].t1[r] : t1;
		}
		if (t1 > t0 && copied / (t1 - t0) > best)
			best = copied / (t1 - t0);
	}
	pthread_barrier_destroy(&start);
	pthread_barrier_destroy(&done);
	free(times);
	free(th);
	return best * 1e-9;
}

#define XCHG 200000 /* exchanges a floor round times */

struct xchg_side {
	pthread_t tid;
	int cpu;
	int rounds;
	_Alignas(64) unsigned long mine; /* a line of its own */
	_Alignas(64) char pad[64];
	struct xchg_side *other;
	double *best_us; /* side 0 times */
};

static void *xchg_run(void *arg)
{
	struct xchg_side *x = arg;
	unsigned long i = 0;

	membw_bind(x->cpu);
	for (int r = 0; r < x->rounds; r++) {
		double t0 = membw_now(), us;

		for (unsigned long end = i + XCHG; i < end;) {
			__atomic_store_n(&x->mine, ++i, __ATOMIC_RELEASE);
			while (__atomic_load_n(&x->other->mine,
					       __ATOMIC_ACQUIRE) < i)
				ohc_cpu_relax();
		}
		us = (membw_now() - t0) * 1e6 / XCHG;
		if (x->best_us && (*x->best_us == 0 || us < *x->best_us))
			*x->best_us = us;
	}
	return NULL;
}

/*
 * Microseconds per exchange between the first two CPUs this process may
 * use; -1 with fewer (two spinning threads on one CPU would take turns
 * a time slice at a time).
 */
static double xchg_floor(int rounds)
{
	static struct xchg_side side[2];
	double best = 0;
	int cpus[2], ncpu = membw_cpus(cpus, 2), err;

	if (ncpu < 2)
		return -1;
	for (int k = 0; k < 2; k++) {
		side[k].cpu = cpus[k];
		side[k].rounds = rounds;
		side[k].mine = 0;
		side[k].other = &side[1 - k];
		side[k].best_us = k == 0 ? &best : NULL;
	}
	for (int k = 0; k < 2; k++) {
		err = pthread_create(&side[k].tid, NULL, xchg_run, &side[k]);
		if (err) {
			membw_fail("pthread_create", err);
			exit(1);
		}
	}
	for (int k = 0; k < 2; k++)
		pthread_join(side[k].tid, NULL);
	return best;
}

static int membw_arg(const char *s, long lo, long hi, long *v_p)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*v_p = v;
	return 0;
}

int main(int argc, char **argv)
{
	long mib = 64, passes = 4, rounds = 3, n;
	bool xchg = false;
	int c;

	while ((c = getopt(argc, argv, "s:p:r:xh")) != -1) {
		long *v = c == 's' ? &mib : c == 'p' ? &passes : &rounds;

		if (c == 'x') {
			xchg = true;
			continue;
		}
		if ((c == 's' || c == 'p' || c == 'r') &&
		    !membw_arg(optarg, 1, 1 << 20, v))
			continue;
		fprintf(stderr,
			"usage: %s [-s MIB] [-p PASSES] [-r ROUNDS] [-x] "
			"THREADS...\n",
			argv[0]);
		return 2;
	}
	if (optind == argc) {
		fprintf(stderr, "ohc_membw_bench: no thread counts\n");
		return 2;
	}
	if (xchg) {
		double us = xchg_floor((int)rounds);

		if (us > 0)
			printf("# exchange floor: a cache line back and forth "
			       "between two CPUs, best of %ld rounds of %d\n"
			       "floor_us %.3f\n",
			       rounds, XCHG, us);
		else
			printf("# exchange floor: needs two CPUs\n");
	}
	printf("# ohc_membw_bench: memcpy of %ld MiB buffers, %ld passes, "
	       "best of %ld rounds; threads | copy GB/s | per thread\n",
	       mib, passes, rounds);
	fflush(stdout);
	for (int i = optind; i < argc; i++) {
		double gbps;

		if (membw_arg(argv[i], 1, 4096, &n)) {
			fprintf(stderr,
				"ohc_membw_bench: bad thread count "
				"'%s' (1-4096)\n",
				argv[i]);
			return 2;
		}
		gbps = membw_threads((int)n, (size_t)mib << 20, (int)passes,
				     (int)rounds);
		if (gbps < 0)
			return membw_fail("calloc", ENOMEM);
		printf("%ld %.2f %.2f\n", n, gbps, gbps / (double)n);
		fflush(stdout);
	}
	return 0;
}
