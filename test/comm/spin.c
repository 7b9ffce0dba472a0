/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How waiting ranks share a CPU (core/wait.c): a thread spins without
 * yielding until its waits keep running out the spin, then yields while it
 * spins. Two thread ranks pinned to one CPU with the spin forced on are
 * the case the yields are for: neither can progress until the other runs.
 * With a busy thread beside them, crowded ranks learn to sleep instead.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "core/wait.h"
#include "helpers/ohc_test.h"
#include "util/cpus.h"

#define SPIN_OPS 2000
#define SLEEP_OPS 400

static HcclComm *comms; /* run_ranks's, by rank */

/*
 * n thread ranks of one HcclCommInitAll (as many devices as ranks,
 * whatever the host), each running fn, then destroyed.
 */
static void run_ranks(int n, ohc_test_rank_fn fn)
{
	char count[16];
	int32_t *devs = calloc((size_t)n, sizeof(*devs));

	comms = calloc((size_t)n, sizeof(*comms));
	cr_assert(devs && comms);
	snprintf(count, sizeof(count), "%d", n);
	setenv("OPENHCCL_DEVICE_COUNT", count, 1);
	for (int i = 0; i < n; i++)
		devs[i] = i;
	cr_assert_eq(aclInit(NULL), 0);
	cr_assert_eq(HcclCommInitAll((uint32_t)n, devs, comms), HCCL_SUCCESS);
	cr_assert_eq(ohc_test_thread_ranks(n, fn, NULL), 0);
	for (int i = 0; i < n; i++)
		cr_assert_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
	aclFinalize();
	free(devs);
	free(comms);
	comms = NULL;
}

static int spin_rank(int rank, int nranks, void *p)
{
	(void)p;
	return ohc_test_slot_allreduces(comms[rank], rank, nranks, SPIN_OPS, 3);
}

Test(spin, one_cpu_two_ranks_yield, .timeout = 300)
{
	cpu_set_t one;

	/* every thread made from here on (ranks, stream workers) inherits it */
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	/* auto would not spin at all: 2 ranks do not fit 1 CPU */
	setenv("OPENHCCL_SPIN_US", "50", 1);

	cr_assert_eq(ohc_wait_yield_regimes(), 0);
	run_ranks(2, spin_rank);
	cr_expect_gt(ohc_wait_yield_regimes(), 0,
		     "two ranks on one CPU never switched to yielding");
}

/*
 * Ranks that outnumber the host's CPUs, with a busy thread among them on
 * one CPU: a rank's yield hands that thread its time slice, so the ranks
 * learn to sleep at once (their peers' messages wake them ahead of it).
 * As many thread ranks as the library counts CPUs, and one more, all
 * pinned to one CPU with the busy thread.
 */
static atomic_bool busy_stop;

static void *busy_loop(void *p)
{
	(void)p;
	while (!atomic_load_explicit(&busy_stop, memory_order_relaxed))
		;
	return NULL;
}

static int crowd_rank(int rank, int nranks, void *p)
{
	(void)p;
	return ohc_test_slot_allreduces(comms[rank], rank, nranks, SLEEP_OPS,
					5);
}

Test(spin, crowded_ranks_beside_a_busy_thread_sleep, .timeout = 300)
{
	int n = (int)ohc_host_cpus() + 1;
	pthread_t busy;
	cpu_set_t one;

	cr_assert_leq(n, 129, "a thread rank per CPU and one more: %d", n);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	cr_assert_eq(pthread_create(&busy, NULL, busy_loop, NULL), 0);

	cr_assert_eq(ohc_wait_sleep_regimes(), 0);
	run_ranks(n, crowd_rank);
	atomic_store(&busy_stop, true);
	pthread_join(busy, NULL);
	cr_expect_gt(ohc_wait_sleep_regimes(), 0,
		     "%d ranks beside a busy thread on one CPU never switched "
		     "to sleeping at once",
		     n);
}

/*
 * Ranks that outnumber the host's CPUs take turns on them, and selection
 * prices by work (algo/select.c): the communicator hands it the busiest
 * host's rank count and rank 0's CPU count (online, capped by the
 * cgroup's CPU time). One more thread rank than there are CPUs; a 4 MiB
 * Broadcast is then never the pipelined chain, the log line says why, and the
 * data arrives.
 */
#define BCAST_COUNT (1u << 20)

static int bcast_rank(int rank, int nranks, void *p)
{
	int32_t *buf = malloc(BCAST_COUNT * sizeof(*buf));
	aclrtStream stream;
	int bad = 0;

	(void)nranks;
	(void)p;
	if (!buf || aclrtSetDevice(rank) || aclrtCreateStream(&stream)) {
		free(buf);
		return 1;
	}
	for (uint32_t i = 0; i < BCAST_COUNT; i++)
		buf[i] = rank == 0 ? (int32_t)(i * 7 + 1) : -1;
	if (HcclBroadcast(buf, BCAST_COUNT, HCCL_DATA_TYPE_INT32, 0,
			  comms[rank], stream) != HCCL_SUCCESS ||
	    aclrtSynchronizeStream(stream))
		bad = 1;
	for (uint32_t i = 0; !bad && i < BCAST_COUNT; i++)
		bad = buf[i] != (int32_t)(i * 7 + 1);
	aclrtDestroyStream(stream);
	free(buf);
	return bad;
}

Test(spin, more_ranks_than_cpus_select_by_work, .timeout = 300)
{
	long cpus = (long)ohc_host_cpus(); /* as the library counts them */
	int n = (int)cpus + 1;
	char log[] = "/tmp/ohc_spin_log.XXXXXX", want[96], *text, *line, *end;
	FILE *f;
	size_t len;
	int fd;

	cr_assert_gt(cpus, 0);
	cr_assert_leq(n, 129, "a thread rank per CPU and one more: %d", n);
	fd = mkstemp(log);
	cr_assert_geq(fd, 0);
	close(fd);
	setenv("OPENHCCL_LOG_FILE", log, 1);
	setenv("OPENHCCL_DEBUG", "INFO", 1);
	run_ranks(n, bcast_rank);

	f = fopen(log, "r");
	cr_assert(f);
	text = calloc(1, 1 << 20);
	cr_assert(text);
	len = fread(text, 1, (1 << 20) - 1, f);
	text[len] = '\0';
	fclose(f);
	unlink(log);
	snprintf(want, sizeof(want),
		 "rank 0: broadcast of %u bytes on %d ranks over ",
		 BCAST_COUNT * 4, n);
	cr_assert(strstr(text, want), "no selection line '%s' in:\n%.4000s",
		  want, text);
	line = strstr(text, want);
	end = strchr(line, '\n');
	if (end)
		*end = '\0';
	snprintf(want, sizeof(want), "; %d ranks take turns on %ld CPUs", n,
		 cpus);
	cr_assert(strstr(line, want), "%s", line);
	cr_assert_null(strstr(line, " slices"), "pipelined: %s", line);
	free(text);
}
