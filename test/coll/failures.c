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
#define EXEC_TIMEOUT_S_SR 2 /* suspend/resume: the stall outlasts it */

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

/* ---------------------------------------------------------------------- */
/* Suspend and resume around a fault                                      */

#define SR_NR 2
#define SR_COUNT (256u * 1024) /* 1 MiB of int32: every transport path */

struct sr_shared {
	HcclRootInfo root;
	int root_ready;
	int phases[SR_NR][8]; /* callback phases in order, -1 terminated */
	int nphases[SR_NR];
	int step[SR_NR]; /* how far each rank got (for the message) */
};

static struct sr_shared *sr_sh;

static HcclResult sr_callback(HcclComm comm, HcclCommStatePhase phase,
			      void *args)
{
	int rank = (int)(long)args;

	(void)comm;
	if (sr_sh->nphases[rank] < 8)
		sr_sh->phases[rank][sr_sh->nphases[rank]++] = (int)phase;
	return HCCL_SUCCESS;
}

/* One correct AllReduce of SR_COUNT int32 (sum of rank + i). */
static int sr_allreduce(HcclComm comm, int rank, int32_t *buf)
{
	for (uint32_t i = 0; i < SR_COUNT; i++)
		buf[i] = rank + (int32_t)i;
	if (HcclAllReduce(buf, buf, SR_COUNT, HCCL_DATA_TYPE_INT32,
			  HCCL_REDUCE_SUM, comm, NULL) != HCCL_SUCCESS)
		return 1;
	for (uint32_t i = 0; i < SR_COUNT; i++)
		if (buf[i] != 1 + 2 * (int32_t)i)
			return 1;
	return 0;
}

/*
 * The fault: rank 1 stalls past the exec timeout while rank 0 is inside
 * an AllReduce, so rank 0's operation times out and its communicator
 * fails (and rank 1's next one fails too: rank 0's transports were
 * aborted). Both suspend (operations fail with HCCL_E_SUSPENDING, the
 * status says SUSPENDING), resume (collective; the transports are built
 * anew) and run correct AllReduces again. The state callbacks fire
 * RESUME_PRE, RESUME_POST, DESTROY_PRE, DESTROY_POST in that order.
 */
static int sr_rank(int rank, int nranks, void *p)
{
	struct sr_shared *sh = p;
	int32_t *buf = malloc(SR_COUNT * sizeof(int32_t));
	HcclCommStatus st = HCCL_COMM_STATUS_INVALID;
	HcclResult err = HCCL_SUCCESS;
	char name[COMM_NAME_MAX_LENGTH];
	HcclComm comm;

	(void)nranks;
	sr_sh = sh;
	if (!buf ||
	    ohc_test_share_roots(&sh->root, 1, &sh->root_ready, rank, 60) ||
	    HcclCommRegCommStateCallback("test", sr_callback,
					 (void *)(long)rank) ||
	    HcclCommInitRootInfo(SR_NR, &sh->root, rank, &comm) ||
	    HcclGetCommName(comm, name))
		OHC_RANK_FAIL("rank %d: setup", rank);
	sh->step[rank] = 1;
	if (sr_allreduce(comm, rank, buf))
		OHC_RANK_FAIL("rank %d: first AllReduce", rank);
	sh->step[rank] = 2;
	if (rank == 1)
		sleep(EXEC_TIMEOUT_S_SR + 2); /* the stall */
	if (sr_allreduce(comm, rank, buf) == 0)
		OHC_RANK_FAIL("rank %d: the AllReduce across the stall "
			      "succeeded",
			      rank);
	sh->step[rank] = 3;
	OHC_RANK_CHECK_RET(rank, HcclCommSuspend(comm), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclCommGetStatus(name, &st), HCCL_SUCCESS);
	if (st != HCCL_COMM_STATUS_SUSPENDING)
		OHC_RANK_FAIL("rank %d: status %d after suspend", rank, st);
	OHC_RANK_CHECK_RET(rank,
			   HcclAllReduce(buf, buf, 4, HCCL_DATA_TYPE_INT32,
					 HCCL_REDUCE_SUM, comm, NULL),
			   HCCL_E_SUSPENDING);
	sh->step[rank] = 4;
	OHC_RANK_CHECK_RET(rank, HcclCommResume(comm), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclCommGetStatus(name, &st), HCCL_SUCCESS);
	if (st != HCCL_COMM_STATUS_READY)
		OHC_RANK_FAIL("rank %d: status %d after resume", rank, st);
	OHC_RANK_CHECK_RET(rank, HcclGetCommAsyncError(comm, &err),
			   HCCL_SUCCESS);
	if (err != HCCL_SUCCESS)
		OHC_RANK_FAIL("rank %d: async error %d after resume", rank,
			      err);
	sh->step[rank] = 5;
	for (int i = 0; i < 5; i++)
		if (sr_allreduce(comm, rank, buf))
			OHC_RANK_FAIL("rank %d: AllReduce %d after resume",
				      rank, i);
	sh->step[rank] = 6;
	OHC_RANK_CHECK_RET(rank, HcclCommDestroy(comm), HCCL_SUCCESS);
	HcclCommRegCommStateCallback("test", NULL, NULL);
	free(buf);
	return 0;
}

Test(suspend_resume, around_a_stalled_peer, .timeout = 120)
{
	static const int want[] = {
		HCCL_COMM_STATE_PHASE_RESUME_PRE,
		HCCL_COMM_STATE_PHASE_RESUME_POST,
		HCCL_COMM_STATE_PHASE_DESTROY_PRE,
		HCCL_COMM_STATE_PHASE_DESTROY_POST,
	};
	struct sr_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char v[16];
	int failed;

	snprintf(v, sizeof(v), "%d", EXEC_TIMEOUT_S_SR);
	setenv("HCCL_EXEC_TIMEOUT", v, 1);
	failed = ohc_test_fork_ranks(SR_NR, sr_rank, sh, 100);
	unsetenv("HCCL_EXEC_TIMEOUT");
	cr_assert_eq(failed, 0, "ranks reached steps %d and %d", sh->step[0],
		     sh->step[1]);
	for (int r = 0; r < SR_NR; r++) {
		cr_expect_eq(sh->nphases[r], 4, "rank %d: %d callbacks", r,
			     sh->nphases[r]);
		for (int k = 0; k < 4 && k < sh->nphases[r]; k++)
			cr_expect_eq(sh->phases[r][k], want[k],
				     "rank %d callback %d: phase %d", r, k,
				     sh->phases[r][k]);
	}
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(sh, sizeof(*sh));
}

/* Suspend while an operation is in flight on a stream: it is canceled
 * (the stream reports the error), later ones fail with SUSPENDING. */
static int sr_inflight_rank(int rank, int nranks, void *p)
{
	struct sr_shared *sh = p;
	int32_t *buf = malloc(SR_COUNT * sizeof(int32_t));
	aclrtStream stream;
	HcclComm comm;

	(void)nranks;
	if (!buf ||
	    ohc_test_share_roots(&sh->root, 1, &sh->root_ready, rank, 60) ||
	    aclInit(NULL) || aclrtSetDevice(rank) ||
	    aclrtCreateStream(&stream) ||
	    HcclCommInitRootInfo(SR_NR, &sh->root, rank, &comm))
		OHC_RANK_FAIL("rank %d: setup", rank);
	if (rank == 0) {
		/* rank 1 does not take part: this one cannot finish */
		OHC_RANK_CHECK_RET(rank,
				   HcclAllReduce(buf, buf, SR_COUNT,
						 HCCL_DATA_TYPE_INT32,
						 HCCL_REDUCE_SUM, comm, stream),
				   HCCL_SUCCESS);
		usleep(200000);
	} else {
		usleep(600000);
	}
	OHC_RANK_CHECK_RET(rank, HcclCommSuspend(comm), HCCL_SUCCESS);
	if (rank == 0 && aclrtSynchronizeStream(stream) == ACL_SUCCESS)
		OHC_RANK_FAIL("rank 0: the canceled AllReduce succeeded");
	OHC_RANK_CHECK_RET(rank,
			   HcclAllReduce(buf, buf, 4, HCCL_DATA_TYPE_INT32,
					 HCCL_REDUCE_SUM, comm, stream),
			   HCCL_E_SUSPENDING);
	OHC_RANK_CHECK_RET(rank, HcclCommResume(comm), HCCL_SUCCESS);
	for (int i = 0; i < 3; i++)
		if (sr_allreduce(comm, rank, buf))
			OHC_RANK_FAIL("rank %d: AllReduce %d after resume",
				      rank, i);
	OHC_RANK_CHECK_RET(rank, HcclCommDestroy(comm), HCCL_SUCCESS);
	aclrtDestroyStream(stream);
	free(buf);
	return 0;
}

Test(suspend_resume, cancels_what_is_in_flight, .timeout = 120)
{
	struct sr_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_eq(ohc_test_fork_ranks(SR_NR, sr_inflight_rank, sh, 100), 0);
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(sh, sizeof(*sh));
}

/* Arguments: NULLs, dead handles, unknown names, long callback names. */
Test(suspend_resume, bad_arguments)
{
	char longname[200];
	HcclCommStatus st;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	cr_expect_eq(HcclCommSuspend(NULL), HCCL_E_PTR);
	cr_expect_eq(HcclCommResume(NULL), HCCL_E_PTR);
	cr_expect_eq(HcclCommSuspend((HcclComm)0x10), HCCL_E_PARA);
	cr_expect_eq(HcclCommResume((HcclComm)0x10), HCCL_E_PARA);
	cr_expect_eq(HcclCommGetStatus(NULL, &st), HCCL_E_PTR);
	cr_expect_eq(HcclCommGetStatus("x", NULL), HCCL_E_PTR);
	cr_expect_eq(HcclCommGetStatus("no_such_comm", &st), HCCL_E_NOT_FOUND);
	cr_expect_eq(HcclCommRegCommStateCallback(NULL, sr_callback, NULL),
		     HCCL_E_PTR);
	cr_expect_eq(HcclCommRegCommStateCallback("", sr_callback, NULL),
		     HCCL_E_PARA);
	cr_expect_eq(HcclCommRegCommStateCallback(longname, sr_callback, NULL),
		     HCCL_E_PARA);
	cr_expect_eq(HcclCommRegCommStateCallback("gone", NULL, NULL),
		     HCCL_SUCCESS);
}

/* ---------------------------------------------------------------------- */
/* Flight recorder                                                        */

struct fl_shared {
	HcclRootInfo root;
	int root_ready;
	int go; /* rank 0 -> rank 1: join the operation now */
	char log_path[SR_NR][64];
};

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static int fl_setup(struct fl_shared *sh, int rank, HcclComm *comm)
{
	int fd = open(sh->log_path[rank], O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		return 1;
	dup2(fd, 2);
	close(fd);
	return ohc_test_share_roots(&sh->root, 1, &sh->root_ready, rank, 60) ||
	       HcclCommInitRootInfo(SR_NR, &sh->root, rank, comm);
}

/*
 * Timeout: rank 1 skips the third AllReduce. Rank 0 times out; its log
 * holds the flight recorder: two operations done, the third FAILED in its
 * first step waiting for rank 1. Rank 1, failing on its next operation
 * (a barrier) once rank 0's abort reached it, writes its record too.
 */
static int fl_timeout_rank(int rank, int nranks, void *p)
{
	struct fl_shared *sh = p;
	int32_t v = 1, out = 0;
	HcclComm comm;

	(void)nranks;
	if (fl_setup(sh, rank, &comm))
		return 1;
	for (int i = 0; i < 2; i++)
		OHC_RANK_CHECK_RET(rank,
				   HcclAllReduce(&v, &out, 1,
						 HCCL_DATA_TYPE_INT32,
						 HCCL_REDUCE_SUM, comm, NULL),
				   HCCL_SUCCESS);
	if (rank == 0) {
		if (HcclAllReduce(&v, &out, 1, HCCL_DATA_TYPE_INT32,
				  HCCL_REDUCE_SUM, comm,
				  NULL) != HCCL_E_TIMEOUT)
			return 1;
		__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	} else {
		while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
			usleep(10000);
		usleep(200000); /* rank 0's abort has reached us */
		/* a barrier, not the skipped AllReduce: over verbs that one
		 * may still complete from what rank 0 had sent before it
		 * timed out (a send completes when posted) */
		if (HcclBarrier(comm, NULL) == HCCL_SUCCESS)
			return 1;
	}
	HcclCommDestroy(comm);
	return 0;
}

Test(flight_recorder, dumped_on_a_timeout, .timeout = 120)
{
	struct fl_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *log0, *log1;

	for (int r = 0; r < SR_NR; r++)
		snprintf(sh->log_path[r], sizeof(sh->log_path[r]),
			 "/tmp/ohc_flight_%d_%d.log", (int)getpid(), r);
	setenv("HCCL_EXEC_TIMEOUT", "2", 1);
	cr_assert_eq(ohc_test_fork_ranks(SR_NR, fl_timeout_rank, sh, 100), 0);
	unsetenv("HCCL_EXEC_TIMEOUT");
	log0 = read_file(sh->log_path[0]);
	log1 = read_file(sh->log_path[1]);
	cr_assert(log0 && log1);
	cr_expect(strstr(log0, "flight recorder, the last 3 of 3 operations"),
		  "%s", log0);
	cr_expect(strstr(log0, "#0 allreduce 4 B"), "%s", log0);
	cr_expect(strstr(log0, ": done in "), "%s", log0);
	cr_expect(strstr(log0, "#2 allreduce 4 B") &&
			  strstr(log0, "FAILED (timed out)") &&
			  strstr(log0, "waiting for rank 1"),
		  "%s", log0);
	cr_expect(strstr(log1, "flight recorder") && strstr(log1, "FAILED (") &&
			  strstr(log1, "waiting for rank 0"),
		  "%s", log1);
	fputs(log0, stderr); /* what a user sees */
	for (int r = 0; r < SR_NR; r++)
		unlink(sh->log_path[r]);
	free(log0);
	free(log1);
	munmap(sh, sizeof(*sh));
}

/* On the signal named by OPENHCCL_FLIGHT_SIGNAL, a rank stuck in an
 * operation says so: RUNNING, which step, on whom it waits. */
static int fl_signal_rank(int rank, int nranks, void *p)
{
	struct fl_shared *sh = p;
	int32_t v = 1, out = 0;
	aclrtStream stream;
	HcclComm comm;

	(void)nranks;
	if (fl_setup(sh, rank, &comm) || aclInit(NULL) ||
	    aclrtSetDevice(rank) || aclrtCreateStream(&stream))
		return 1;
	if (rank == 0) {
		OHC_RANK_CHECK_RET(rank,
				   HcclAllReduce(&v, &out, 1,
						 HCCL_DATA_TYPE_INT32,
						 HCCL_REDUCE_SUM, comm, stream),
				   HCCL_SUCCESS);
		usleep(300000); /* the op waits for rank 1 */
		kill(getpid(), SIGUSR1);
		usleep(300000); /* the watcher writes the record */
		__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	} else {
		while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
			usleep(10000);
		OHC_RANK_CHECK_RET(rank,
				   HcclAllReduce(&v, &out, 1,
						 HCCL_DATA_TYPE_INT32,
						 HCCL_REDUCE_SUM, comm, stream),
				   HCCL_SUCCESS);
	}
	if (aclrtSynchronizeStream(stream) != ACL_SUCCESS || out != 2)
		return 1;
	HcclCommDestroy(comm);
	aclrtDestroyStream(stream);
	return 0;
}

Test(flight_recorder, dumped_on_a_signal, .timeout = 120)
{
	struct fl_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *log0;

	for (int r = 0; r < SR_NR; r++)
		snprintf(sh->log_path[r], sizeof(sh->log_path[r]),
			 "/tmp/ohc_flight_%d_%d.log", (int)getpid(), r);
	setenv("OPENHCCL_FLIGHT_SIGNAL", "USR1", 1);
	cr_assert_eq(ohc_test_fork_ranks(SR_NR, fl_signal_rank, sh, 100), 0);
	unsetenv("OPENHCCL_FLIGHT_SIGNAL");
	log0 = read_file(sh->log_path[0]);
	cr_assert(log0);
	cr_expect(strstr(log0, "signal 10 (OPENHCCL_FLIGHT_SIGNAL)"), "%s",
		  log0);
	cr_expect(strstr(log0, "#0 allreduce 4 B") &&
			  strstr(log0, "RUNNING for") &&
			  strstr(log0, "in step 1 of") &&
			  strstr(log0, "waiting for rank 1"),
		  "%s", log0);
	fputs(log0, stderr); /* what a user sees */
	for (int r = 0; r < SR_NR; r++)
		unlink(sh->log_path[r]);
	free(log0);
	munmap(sh, sizeof(*sh));
}
