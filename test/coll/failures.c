/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Failure model through the public API: a rank killed with SIGKILL in the
 * middle of an AllReduce, and a rank that never arrives at init. The
 * survivors must get an error within the configured timeout, name the
 * failure, and leave nothing behind in /dev/shm.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

#define NR 4
#define VICTIM 2
#define EXEC_TIMEOUT_S 20

#define AFTER_CALLS 2000

struct shared {
	HcclRootInfo root;
	int iterations_done[NR];
	double detect_s[NR];
	int async_err[NR];
	int after_ok[NR];  /* calls after the failure that did not fail */
	int log_lines[NR]; /* lines the survivor logged in all */
	char log_path[NR][64];
};

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int n = 0, c;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static int kill_rank(int rank, struct shared *sh, int use_stream)
{
	size_t n = 4u << 20; /* 16 MiB of fp32 */
	float *buf = malloc(n * sizeof(float));
	aclrtStream stream = NULL;
	HcclComm comm;
	double t0;

	for (size_t i = 0; i < n; i++)
		buf[i] = 1.0f;
	if (use_stream && (aclInit(NULL) || aclrtSetDevice(rank) ||
			   aclrtCreateStream(&stream)))
		return 1;
	if (HcclCommInitRootInfo(NR, &sh->root, rank, &comm))
		return 1;
	for (int it = 0;; it++) {
		HcclResult ret;

		if (rank == VICTIM && it == 3)
			raise(SIGKILL); /* mid-sequence, peers are in flight */
		t0 = ohc_test_now_s();
		ret = HcclAllReduce(buf, buf, n, HCCL_DATA_TYPE_FP32,
				    HCCL_REDUCE_SUM, comm, stream);
		if (ret == HCCL_SUCCESS && stream &&
		    aclrtSynchronizeStream(stream))
			ret = HCCL_E_INTERNAL;
		if (ret != HCCL_SUCCESS)
			break;
		sh->iterations_done[rank] = it + 1;
		if (it > 1000)
			return 1; /* never noticed */
	}
	sh->detect_s[rank] = ohc_test_now_s() - t0;
	HcclGetCommAsyncError(comm, (HcclResult *)&sh->async_err[rank]);
	/* later operations on the failed communicator fail at once, and a
	 * program that keeps calling does not get a log line per call */
	for (int i = 0; i < AFTER_CALLS; i++) {
		HcclResult r = HcclAllReduce(buf, buf, 1, HCCL_DATA_TYPE_FP32,
					     HCCL_REDUCE_SUM, comm, stream);

		if (r == HCCL_SUCCESS && stream)
			r = aclrtSynchronizeStream(stream) ? HCCL_E_REMOTE : r;
		sh->after_ok[rank] += r == HCCL_SUCCESS;
	}
	HcclCommDestroy(comm);
	fflush(stderr);
	sh->log_lines[rank] = count_lines(sh->log_path[rank]);
	if (stream)
		aclrtDestroyStream(stream);
	free(buf);
	return 0;
}

static void run_kill(int use_stream)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pids[NR];
	int gate[2];
	char v[16];

	snprintf(v, sizeof(v), "%d", EXEC_TIMEOUT_S);
	setenv("HCCL_EXEC_TIMEOUT", v, 1);
	cr_assert_eq(HcclGetRootInfo(&sh->root), HCCL_SUCCESS);
	cr_assert_eq(pipe(gate), 0);
	for (int r = 0; r < NR; r++)
		snprintf(sh->log_path[r], sizeof(sh->log_path[r]),
			 "/tmp/ohc_failures_%d_%d.log", (int)getpid(), r);
	ohc_test_fork_settle();
	for (int r = 0; r < NR; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			char c;

			int fd = open(sh->log_path[r],
				      O_WRONLY | O_CREAT | O_TRUNC, 0600);

			close(gate[1]); /* start once every fork is done */
			if (fd >= 0)
				dup2(fd, 2);
			(void)!read(gate[0], &c, 1);
			_exit(kill_rank(r, sh, use_stream));
		}
	}
	close(gate[0]);
	close(gate[1]);
	for (int r = 0; r < NR; r++) {
		int st;

		cr_assert_eq(waitpid(pids[r], &st, 0), pids[r]);
		if (r == VICTIM) {
			cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
			continue;
		}
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "survivor rank %d did not see the failure", r);
		cr_assert_lt(sh->detect_s[r], EXEC_TIMEOUT_S + 5.0,
			     "rank %d took %.1f s", r, sh->detect_s[r]);
		cr_assert(sh->async_err[r] == HCCL_E_REMOTE ||
				  sh->async_err[r] == HCCL_E_TIMEOUT,
			  "rank %d async error %d", r, sh->async_err[r]);
		cr_expect_eq(sh->after_ok[r], 0,
			     "rank %d: %d calls after the failure succeeded", r,
			     sh->after_ok[r]);
		/* the failure, its detection, one refusal, the count at
		 * destroy, a few lines of teardown: not one per call */
		cr_expect(sh->log_lines[r] >= 1 && sh->log_lines[r] <= 12,
			  "rank %d logged %d lines for %d calls after the "
			  "failure",
			  r, sh->log_lines[r], AFTER_CALLS);
		fprintf(stderr, "rank %d detected the dead peer in %.2f s\n",
			r, sh->detect_s[r]);
	}
	for (int r = 0; r < NR; r++)
		unlink(sh->log_path[r]);
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(sh, sizeof(*sh));
}

Test(failures, kill9_mid_allreduce_sync, .timeout = 120)
{
	run_kill(0);
}

Test(failures, kill9_mid_allreduce_stream, .timeout = 120)
{
	run_kill(1);
}

struct absent {
	HcclRootInfo root;
	int result[NR];
	double took[NR];
};

static int absent_rank(int rank, int nranks, void *p)
{
	struct absent *a = p;
	HcclComm comm = NULL;
	double t0 = ohc_test_now_s();

	(void)nranks;
	a->result[rank] = HcclCommInitRootInfo(NR, &a->root, rank, &comm);
	a->took[rank] = ohc_test_now_s() - t0;
	return a->result[rank] == HCCL_SUCCESS;
}

Test(failures, rank_never_arrives, .timeout = 60)
{
	struct absent *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	setenv("HCCL_CONNECT_TIMEOUT", "3", 1);
	cr_assert_eq(HcclGetRootInfo(&a->root), HCCL_SUCCESS);
	/* only ranks 0..2 of 4 start */
	cr_assert_eq(ohc_test_fork_ranks(NR - 1, absent_rank, a, 50), 0);
	for (int r = 0; r < NR - 1; r++) {
		cr_assert_eq(a->result[r], HCCL_E_TIMEOUT, "rank %d got %d", r,
			     a->result[r]);
		cr_assert_lt(a->took[r], 3.0 + 10.0);
	}
	munmap(a, sizeof(*a));
}
