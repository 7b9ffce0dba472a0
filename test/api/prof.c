/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The aclprof* calls (libmsprofiler, black box): every misuse gets its
 * error code, and what a profile records is checked in the trace it
 * writes: which operations, on which rank, device and stream, with their
 * algorithm, bytes and peers, in order on each lane, nothing from before
 * the start or from devices not profiled. Thread ranks (HcclCommInitAll)
 * on devices 0 and 1.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <acl/acl.h>
#include <acl/acl_prof.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

/* hccl_test's mask (spec/acl_runtime.md 10.1) */
#define HCCL_TEST_MASK                                                         \
	(ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_AICORE_METRICS |     \
	 ACL_PROF_AICPU | ACL_PROF_HCCL_TRACE | ACL_PROF_MSPROFTX |            \
	 ACL_PROF_RUNTIME_API)
#define COUNT 1000 /* fp32 elements per operation */

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/ohc_prof_test_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
	char cmd[128];

	if (!dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

/* Names of the trace files in dir, sorted; returns how many. */
static int trace_files(char names[][512], int max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d, "%s", dir);
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "openhccl_", 9))
			continue;
		if (n < max)
			snprintf(names[n], 512, "%s/%s", dir, e->d_name);
		n++;
	}
	closedir(d);
	if (n > 1 && n <= max)
		qsort(names, (size_t)n, 512,
		      (int (*)(const void *, const void *))strcmp);
	return n;
}

static json_t *load(const char *path)
{
	json_error_t err;
	json_t *root = json_load_file(path, 0, &err);

	cr_assert_not_null(root, "%s:%d:%d: %s", path, err.line, err.column,
			   err.text);
	cr_assert(json_is_array(json_object_get(root, "traceEvents")));
	return root;
}

/* The one trace in dir. */
static json_t *load_only(void)
{
	char names[4][512];
	int n = trace_files(names, 4);

	cr_assert_eq(n, 1, "%d trace files in %s", n, dir);
	return load(names[0]);
}

/* "X" events named name (NULL: any) of rank (-1: any), cat (NULL: any). */
static int count(json_t *root, const char *name, int rank, const char *cat)
{
	json_t *ev = json_object_get(root, "traceEvents"), *e;
	size_t i;
	int n = 0;

	json_array_foreach(ev, i, e)
	{
		json_t *args = json_object_get(e, "args");

		if (strcmp(json_string_value(json_object_get(e, "ph")), "X"))
			continue;
		if (name &&
		    strcmp(json_string_value(json_object_get(e, "name")), name))
			continue;
		if (cat &&
		    strcmp(json_string_value(json_object_get(e, "cat")), cat))
			continue;
		if (rank >= 0 &&
		    json_integer_value(json_object_get(args, "rank")) != rank)
			continue;
		n++;
	}
	return n;
}

/*
 * Every HCCL event names its algorithm, its bytes and its one peer (two
 * ranks); on every lane the events follow each other without overlap,
 * each starting after its enqueue.
 */
static void check_events(json_t *root, uint64_t bytes)
{
	json_t *ev = json_object_get(root, "traceEvents"), *e;
	double end[64] = {0};
	long long lane_id[64];
	int nlanes = 0;
	size_t i;

	json_array_foreach(ev, i, e)
	{
		json_t *args = json_object_get(e, "args");
		long long tid = json_integer_value(json_object_get(e, "tid"));
		double ts = json_number_value(json_object_get(e, "ts"));
		double dur = json_number_value(json_object_get(e, "dur"));
		json_t *enq = json_object_get(args, "enqueue_ts");
		int l;

		if (strcmp(json_string_value(json_object_get(e, "ph")), "X"))
			continue;
		cr_expect_geq(ts, 0.0);
		cr_expect_geq(dur, 0.0);
		if (enq)
			cr_expect_leq(json_number_value(enq), ts + 0.001);
		if (!strcmp(json_string_value(json_object_get(e, "cat")),
			    "hccl")) {
			json_t *peers = json_object_get(args, "peers");
			long long rank = json_integer_value(
				json_object_get(args, "rank"));

			cr_expect(json_is_string(
					  json_object_get(args, "algorithm")),
				  "event %zu has no algorithm", i);
			cr_expect_eq(json_integer_value(
					     json_object_get(args, "bytes")),
				     (long long)bytes);
			cr_expect_eq(json_array_size(peers), 1);
			cr_expect_eq(
				json_integer_value(json_array_get(peers, 0)),
				1 - rank);
			cr_expect_eq(json_integer_value(
					     json_object_get(args, "nranks")),
				     2);
		}
		for (l = 0; l < nlanes && lane_id[l] != tid; l++)
			;
		if (l == nlanes) {
			cr_assert_lt(nlanes, 64);
			lane_id[nlanes++] = tid;
			end[l] = 0.0;
		}
		cr_expect_geq(ts + 0.0015, end[l],
			      "lane %lld: event %zu at %.3f starts before the "
			      "last one ends (%.3f)",
			      tid, i, ts, end[l]);
		end[l] = ts + dur;
	}
}

/* ---- argument checks ---- */

Test(prof, init_errors, .init = make_dir, .fini = remove_dir)
{
	char long_path[4200];

	cr_expect_eq(aclprofInit("/tmp", 4), ACL_ERROR_UNINITIALIZE);
	cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
	cr_expect_eq(aclprofInit(NULL, 4), ACL_ERROR_INVALID_PARAM);
	cr_expect_eq(aclprofInit("/tmp", 0), ACL_ERROR_INVALID_PARAM);
	memset(long_path, 'a', sizeof(long_path) - 1);
	long_path[sizeof(long_path) - 1] = '\0';
	cr_expect_eq(aclprofInit(long_path, 4097), ACL_ERROR_INVALID_PARAM);
	cr_expect_eq(aclprofInit("", 1), ACL_ERROR_INVALID_PARAM);
	cr_expect_eq(aclprofFinalize(), ACL_ERROR_UNINITIALIZE);
	cr_expect_eq(aclprofInit(dir, strlen(dir)), ACL_SUCCESS);
	cr_expect_eq(aclprofInit(dir, strlen(dir)),
		     ACL_ERROR_REPEAT_INITIALIZE);
	cr_expect_eq(aclprofFinalize(), ACL_SUCCESS);
	cr_expect_eq(aclprofFinalize(), ACL_ERROR_UNINITIALIZE);
	/* a length past the string's end: the string */
	cr_expect_eq(aclprofInit(dir, sizeof(dir)), ACL_SUCCESS);
	cr_expect_eq(aclprofFinalize(), ACL_SUCCESS);
	cr_expect_eq(trace_files(NULL, 0), 0);
	aclFinalize();
}

Test(prof, config_errors)
{
	uint32_t devs[3] = {0, 1, 0};
	uint32_t far = 16; /* OPENHCCL_DEVICE_COUNT's default */
	aclprofConfig *cfg;

	cr_expect_null(aclprofCreateConfig(NULL, 1, ACL_AICORE_NONE, NULL,
					   HCCL_TEST_MASK));
	cr_expect_null(aclprofCreateConfig(
		devs, 1, ACL_AICORE_NONE,
		(const aclprofAicoreEvents *)(const void *)devs,
		HCCL_TEST_MASK));
	cr_expect_null(aclprofCreateConfig(devs, 3, ACL_AICORE_NONE, NULL,
					   HCCL_TEST_MASK));
	cr_expect_null(aclprofCreateConfig(&far, 1, ACL_AICORE_NONE, NULL,
					   HCCL_TEST_MASK));
	cr_expect_null(aclprofCreateConfig(devs, 17, ACL_AICORE_NONE, NULL,
					   HCCL_TEST_MASK));
	cr_expect_null(aclprofCreateConfig(devs, 0, ACL_AICORE_NONE, NULL,
					   ACL_PROF_TASK_TIME));
	cr_expect_null(aclprofCreateConfig(devs, 1, (aclprofAicoreMetrics)9,
					   NULL, HCCL_TEST_MASK));
	cfg = aclprofCreateConfig(devs, 0, ACL_AICORE_NONE, NULL,
				  ACL_PROF_MSPROFTX);
	cr_expect_not_null(cfg);
	cr_expect_eq(aclprofDestroyConfig(cfg), ACL_SUCCESS);
	cfg = aclprofCreateConfig(devs, 2, ACL_AICORE_PIPE_UTILIZATION, NULL,
				  HCCL_TEST_MASK);
	cr_assert_not_null(cfg);
	cr_expect_eq(aclprofDestroyConfig(NULL), ACL_ERROR_INVALID_PARAM);
	cr_expect_eq(aclprofDestroyConfig(cfg), ACL_SUCCESS);
	cr_expect_eq(aclprofDestroyConfig(cfg), ACL_ERROR_INVALID_PARAM);
}

Test(prof, start_stop_errors, .init = make_dir, .fini = remove_dir)
{
	uint32_t d01[2] = {1, 0}, d12[2] = {1, 2}, d3 = 3, d01b[2] = {0, 1};
	aclprofConfig *a, *b, *c, *same, *api, *gone;

	cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
	a = aclprofCreateConfig(d01, 2, ACL_AICORE_NONE, NULL, HCCL_TEST_MASK);
	b = aclprofCreateConfig(d12, 2, ACL_AICORE_NONE, NULL, HCCL_TEST_MASK);
	c = aclprofCreateConfig(&d3, 1, ACL_AICORE_NONE, NULL,
				ACL_PROF_HCCL_TRACE);
	same = aclprofCreateConfig(d01b, 2, ACL_AICORE_NONE, NULL,
				   ACL_PROF_TASK_TIME);
	api = aclprofCreateConfig(&d3, 1, ACL_AICORE_NONE, NULL,
				  ACL_PROF_ACL_API);
	gone = aclprofCreateConfig(&d3, 1, ACL_AICORE_NONE, NULL,
				   HCCL_TEST_MASK);
	cr_assert(a && b && c && same && api && gone);
	cr_expect_eq(aclprofDestroyConfig(gone), ACL_SUCCESS);

	cr_expect_eq(aclprofStart(a), ACL_ERROR_UNINITIALIZE);
	cr_expect_eq(aclprofStop(a), ACL_ERROR_UNINITIALIZE);
	cr_assert_eq(aclprofInit(dir, strlen(dir)), ACL_SUCCESS);
	cr_expect_eq(aclprofStart(NULL), ACL_ERROR_INVALID_PARAM);
	cr_expect_eq(aclprofStop(NULL), ACL_ERROR_INVALID_PARAM);
	cr_expect_eq(aclprofStart(gone), ACL_ERROR_INVALID_PARAM);
	cr_expect_eq(aclprofStop(a), ACL_ERROR_PROF_NOT_RUN);
	cr_expect_eq(aclprofStart(api), ACL_ERROR_PROF_MODULES_UNSUPPORTED);
	cr_expect_eq(aclprofStart(a), ACL_SUCCESS);
	cr_expect_eq(aclprofStart(a), ACL_ERROR_PROF_ALREADY_RUN);
	cr_expect_eq(aclprofStart(same), ACL_ERROR_PROF_ALREADY_RUN);
	cr_expect_eq(aclprofStart(b), ACL_ERROR_PROF_ALREADY_RUN); /* dev 1 */
	cr_expect_eq(aclprofStart(c), ACL_SUCCESS); /* dev 3: disjoint */
	cr_expect_eq(aclprofStop(b), ACL_ERROR_PROF_NOT_RUN);
	/* another config of the same devices stops what a started */
	cr_expect_eq(aclprofStop(same), ACL_SUCCESS);
	cr_expect_eq(aclprofStop(a), ACL_ERROR_PROF_NOT_RUN);
	cr_expect_eq(aclprofStart(b), ACL_SUCCESS);
	cr_expect_eq(aclprofStop(b), ACL_SUCCESS);
	cr_expect_eq(aclprofStop(c), ACL_SUCCESS);
	cr_expect_eq(aclprofFinalize(), ACL_SUCCESS);
	cr_expect_eq(trace_files(NULL, 0), 3, "one trace per stop");
	cr_expect_eq(aclprofDestroyConfig(a), ACL_SUCCESS);
	cr_expect_eq(aclprofDestroyConfig(b), ACL_SUCCESS);
	cr_expect_eq(aclprofDestroyConfig(c), ACL_SUCCESS);
	cr_expect_eq(aclprofDestroyConfig(same), ACL_SUCCESS);
	cr_expect_eq(aclprofDestroyConfig(api), ACL_SUCCESS);
	aclFinalize();
}

/* Stop cannot write: an error, and the profiler still works after it. */
Test(prof, unwritable_dir)
{
	const char *bad = "/proc/ohc_no_such_dir/traces";
	uint32_t d0 = 0;
	aclprofConfig *cfg;

	cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
	/* hccl_test ignores Init's result: a bad path must not fail Start */
	cr_expect_eq(aclprofInit(bad, strlen(bad)), ACL_SUCCESS);
	cfg = aclprofCreateConfig(&d0, 1, ACL_AICORE_NONE, NULL,
				  HCCL_TEST_MASK);
	cr_assert_not_null(cfg);
	cr_expect_eq(aclprofStart(cfg), ACL_SUCCESS);
	cr_expect_eq(aclprofStop(cfg), ACL_ERROR_PROFILING_FAILURE);
	cr_expect_eq(aclprofStart(cfg), ACL_SUCCESS);
	cr_expect_eq(aclprofFinalize(), ACL_ERROR_PROFILING_FAILURE);
	cr_expect_eq(aclprofDestroyConfig(cfg), ACL_SUCCESS);
	aclFinalize();
}

/* ---- what is recorded ---- */

static HcclComm comms[2];
static pthread_barrier_t phase;
static aclprofConfig *per_rank_cfg[2]; /* per_rank_sessions */

struct plan {
	bool per_rank; /* each rank starts and stops its own device */
};

/*
 * One AllReduce before the profile starts (not recorded); then, profiled:
 * an AllReduce and a Broadcast on the stream, a 4000-byte device copy on
 * the stream, an AllReduce on the NULL stream.
 */
static int rank_ops(int rank, int nranks, void *arg)
{
	const struct plan *p = arg;
	aclrtStream stream = NULL;
	float *buf = NULL, *copy = NULL;
	int bad = 0;

	(void)nranks;
	if (aclrtSetDevice(rank) || aclrtCreateStream(&stream) ||
	    aclrtMalloc((void **)&buf, COUNT * sizeof(float),
			ACL_MEM_MALLOC_HUGE_FIRST) ||
	    aclrtMalloc((void **)&copy, COUNT * sizeof(float),
			ACL_MEM_MALLOC_HUGE_FIRST))
		return 1;
	for (int i = 0; i < COUNT; i++)
		buf[i] = 1.0f;
	OHC_RANK_CHECK_RET(rank,
			   HcclAllReduce(buf, buf, COUNT, HCCL_DATA_TYPE_FP32,
					 HCCL_REDUCE_SUM, comms[rank], stream),
			   HCCL_SUCCESS);
	if (aclrtSynchronizeStream(stream))
		return 1;
	if (p && p->per_rank && aclprofStart(per_rank_cfg[rank]))
		return 1;
	pthread_barrier_wait(&phase); /* the main thread starts the profile */
	pthread_barrier_wait(&phase);
	OHC_RANK_CHECK_RET(rank,
			   HcclAllReduce(buf, buf, COUNT, HCCL_DATA_TYPE_FP32,
					 HCCL_REDUCE_SUM, comms[rank], stream),
			   HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank,
			   HcclBroadcast(buf, COUNT, HCCL_DATA_TYPE_FP32, 0,
					 comms[rank], stream),
			   HCCL_SUCCESS);
	if (aclrtMemcpyAsync(copy, COUNT * sizeof(float), buf,
			     COUNT * sizeof(float), ACL_MEMCPY_DEVICE_TO_DEVICE,
			     stream) ||
	    aclrtSynchronizeStream(stream))
		return 1;
	OHC_RANK_CHECK_RET(rank,
			   HcclAllReduce(copy, copy, COUNT, HCCL_DATA_TYPE_FP32,
					 HCCL_REDUCE_SUM, comms[rank], NULL),
			   HCCL_SUCCESS);
	bad += copy[0] != 8.0f; /* (1 + 1) * 2 * 2 */
	if (p && p->per_rank && aclprofStop(per_rank_cfg[rank]))
		bad++;
	aclrtFree(buf);
	aclrtFree(copy);
	aclrtDestroyStream(stream);
	aclrtResetDevice(rank);
	return bad;
}

struct runner {
	const struct plan *plan;
	int failed;
};

static void *run_ranks(void *arg)
{
	struct runner *r = arg;

	r->failed = ohc_test_thread_ranks(2, rank_ops, (void *)r->plan);
	return NULL;
}

/*
 * Two thread ranks run rank_ops; the profile of cfg (NULL: the ranks
 * profile themselves, per_rank_cfg) covers the profiled phase.
 */
static void run_profiled(aclprofConfig *cfg, const struct plan *plan)
{
	int32_t devs[2] = {0, 1};
	struct runner r = {plan, 0};
	pthread_t t;

	cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
	cr_assert_eq(aclprofInit(dir, strlen(dir)), ACL_SUCCESS);
	cr_assert_eq(HcclCommInitAll(2, devs, comms), HCCL_SUCCESS);
	pthread_barrier_init(&phase, NULL, 3);
	pthread_create(&t, NULL, run_ranks, &r);
	pthread_barrier_wait(&phase);
	if (cfg)
		cr_expect_eq(aclprofStart(cfg), ACL_SUCCESS);
	pthread_barrier_wait(&phase);
	pthread_join(t, NULL);
	cr_expect_eq(r.failed, 0);
	/* after the streams are gone, as hccl_test does */
	if (cfg)
		cr_expect_eq(aclprofStop(cfg), ACL_SUCCESS);
	for (int i = 0; i < 2; i++)
		cr_expect_eq(HcclCommDestroy(comms[i]), HCCL_SUCCESS);
	pthread_barrier_destroy(&phase);
	cr_expect_eq(aclprofFinalize(), ACL_SUCCESS);
	cr_expect_eq(aclFinalize(), ACL_SUCCESS);
}

Test(prof, records_ranks_streams, .init = make_dir, .fini = remove_dir,
     .timeout = 120)
{
	uint32_t devs[2] = {0, 1};
	aclprofConfig *cfg = aclprofCreateConfig(
		devs, 2, ACL_AICORE_PIPE_UTILIZATION, NULL, HCCL_TEST_MASK);
	json_t *root, *ranks;

	cr_assert_not_null(cfg);
	run_profiled(cfg, NULL);
	root = load_only();
	for (int r = 0; r < 2; r++) {
		/* one on the stream, one on the NULL stream; none before */
		cr_expect_eq(count(root, "HcclAllReduce", r, "hccl"), 2,
			     "rank %d", r);
		cr_expect_eq(count(root, "HcclBroadcast", r, "hccl"), 1);
	}
	cr_expect_eq(count(root, "memcpy", -1, "runtime"), 2);
	cr_expect_eq(count(root, NULL, -1, NULL), 8);
	check_events(root, COUNT * sizeof(float));
	ranks = json_object_get(json_object_get(root, "otherData"), "ranks");
	cr_expect_eq(json_array_size(ranks), 2);
	json_decref(root);
	cr_expect_eq(aclprofDestroyConfig(cfg), ACL_SUCCESS);
}

/* Device 1 only, HCCL operations only: nothing of rank 0, no copies. */
Test(prof, filters_devices_and_types, .init = make_dir, .fini = remove_dir,
     .timeout = 120)
{
	uint32_t d1 = 1;
	aclprofConfig *cfg = aclprofCreateConfig(&d1, 1, ACL_AICORE_NONE, NULL,
						 ACL_PROF_HCCL_TRACE);
	json_t *root;

	cr_assert_not_null(cfg);
	run_profiled(cfg, NULL);
	root = load_only();
	cr_expect_eq(count(root, NULL, 0, "hccl"), 0);
	cr_expect_eq(count(root, "HcclAllReduce", 1, "hccl"), 2);
	cr_expect_eq(count(root, "HcclBroadcast", 1, "hccl"), 1);
	cr_expect_eq(count(root, NULL, -1, "runtime"), 0);
	json_decref(root);
	cr_expect_eq(aclprofDestroyConfig(cfg), ACL_SUCCESS);
}

/* Each thread rank profiles its own device: one trace per rank. */
Test(prof, per_rank_sessions, .init = make_dir, .fini = remove_dir,
     .timeout = 120)
{
	const struct plan plan = {.per_rank = true};
	char names[4][512];
	uint32_t devs[2] = {0, 1};

	for (int r = 0; r < 2; r++) {
		per_rank_cfg[r] = aclprofCreateConfig(
			&devs[r], 1, ACL_AICORE_NONE, NULL, HCCL_TEST_MASK);
		cr_assert_not_null(per_rank_cfg[r]);
	}
	run_profiled(NULL, &plan);
	cr_assert_eq(trace_files(names, 4), 2);
	for (int f = 0; f < 2; f++) {
		json_t *root = load(names[f]);
		int mine = count(root, "HcclAllReduce", 0, NULL) ? 0 : 1;

		cr_expect_eq(count(root, "HcclAllReduce", mine, "hccl"), 2);
		cr_expect_eq(count(root, NULL, 1 - mine, "hccl"), 0,
			     "%s holds the other rank's ops", names[f]);
		cr_expect_eq(count(root, "memcpy", -1, "runtime"), 1);
		check_events(root, COUNT * sizeof(float));
		json_decref(root);
	}
	for (int r = 0; r < 2; r++)
		cr_expect_eq(aclprofDestroyConfig(per_rank_cfg[r]),
			     ACL_SUCCESS);
}

/* aclprofFinalize stops a profile still running and writes its trace. */
Test(prof, finalize_writes_running, .init = make_dir, .fini = remove_dir)
{
	uint32_t d0 = 0;
	aclprofConfig *cfg;
	json_t *root;

	cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
	cr_assert_eq(aclprofInit(dir, strlen(dir)), ACL_SUCCESS);
	cfg = aclprofCreateConfig(&d0, 1, ACL_AICORE_NONE, NULL,
				  HCCL_TEST_MASK);
	cr_assert_not_null(cfg);
	cr_expect_eq(aclprofStart(cfg), ACL_SUCCESS);
	cr_expect_eq(aclprofFinalize(), ACL_SUCCESS);
	root = load_only();
	cr_expect_eq(count(root, NULL, -1, NULL), 0);
	json_decref(root);
	cr_expect_eq(aclprofDestroyConfig(cfg), ACL_SUCCESS);
	aclFinalize();
}

/*
 * OPENHCCL_PROFILE profiles the whole process from aclInit to aclFinalize
 * (the AllReduce before the aclprof* calls too); the aclprof* calls then
 * succeed and do nothing.
 */
static void env_init(void)
{
	make_dir();
	setenv("OPENHCCL_PROFILE", dir, 1);
}

Test(prof, env_variable, .init = env_init, .fini = remove_dir, .timeout = 120)
{
	uint32_t devs[2] = {0, 1};
	aclprofConfig *cfg = aclprofCreateConfig(devs, 2, ACL_AICORE_NONE, NULL,
						 HCCL_TEST_MASK);
	json_t *root;

	cr_assert_not_null(cfg);
	run_profiled(cfg, NULL);
	root = load_only();
	for (int r = 0; r < 2; r++)
		cr_expect_eq(count(root, "HcclAllReduce", r, "hccl"), 3,
			     "rank %d", r);
	check_events(root, COUNT * sizeof(float));
	json_decref(root);
	cr_expect_eq(aclprofDestroyConfig(cfg), ACL_SUCCESS);
}

/*
 * A process forked while a profile runs profiles nothing of it: its exit
 * writes no trace (the parent's aclFinalize writes the one trace).
 */
Test(prof, fork_child_writes_nothing, .init = env_init, .fini = remove_dir)
{
	int status = -1;
	pid_t pid;

	cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		exit(0); /* runs the runtime's destructor */
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_expect_eq(trace_files(NULL, 0), 0);
	cr_expect_eq(aclFinalize(), ACL_SUCCESS);
	cr_expect_eq(trace_files(NULL, 0), 1);
}
