/* SPDX-License-Identifier: Apache-2.0 */
/* Streams: order, worker thread, errors, failure mode, destroy. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt_test.h"
#include "util/config.h"

static aclrtStream new_stream(void)
{
	aclrtStream s = NULL;

	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
	cr_assert_not_null(s);
	cr_assert_eq(ohc_rt_stream_valid(s), 1);
	return s;
}

/* With OPENHCCL_SYNC_RUNS_TASKS=0 only the worker runs tasks. */
Test(stream, tasks_run_in_order_on_a_worker)
{
	enum { N = 200 };
	struct rt_probe *p[N];
	atomic_int order = 0, gate = 0;
	pthread_t worker;
	aclrtStream s;

	setenv("OPENHCCL_SYNC_RUNS_TASKS", "0", 1);
	ohc_env_reload();
	s = new_stream();

	for (int i = 0; i < N; i++) {
		p[i] = rt_probe_new(i, 0, 0);
		p[i]->order_ctr = &order;
	}
	/* The first task waits for a flag set only after every submit has
	 * returned: inline execution could never see it. */
	p[0]->gate = &gate;
	for (int i = 0; i < N; i++)
		cr_assert_eq(ohc_rt_stream_submit(s, &p[i]->super), 0);
	atomic_store(&gate, 1);
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	cr_assert_eq(p[0]->gate_seen, 1, "task ran before submit returned");
	worker = p[0]->ran_on;
	for (int i = 0; i < N; i++) {
		cr_assert_eq(p[i]->order, i + 1);
		cr_assert_eq(atomic_load(&p[i]->runs), 1);
		cr_assert_eq(atomic_load(&p[i]->releases), 1);
		cr_assert(!pthread_equal(p[i]->ran_on, pthread_self()));
		cr_assert(pthread_equal(p[i]->ran_on, worker),
			  "one worker per stream (task %d)", i);
		free(p[i]);
	}
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	unsetenv("OPENHCCL_SYNC_RUNS_TASKS");
	ohc_env_reload();
}

/*
 * By default a synchronizing thread runs queued tasks itself while the
 * worker is idle (caller runs). Whoever runs them, tasks run exactly once,
 * in order, one at a time, and only on the worker or a synchronizer, and
 * an error reaches the synchronize either way. Rounds alternate single
 * tasks synchronized at once (the synchronizer usually wins the race with
 * the worker's wake-up) with bursts and 2 ms tasks (the worker often
 * holds the token when the synchronizer arrives).
 */
Test(stream, synchronizer_runs_tasks_in_order_one_at_a_time)
{
	enum { ROUNDS = 300, BURST = 8 };
	atomic_int order = 0, active = 0, max_active = 0;
	struct rt_probe *p[BURST];
	aclrtStream s = new_stream();
	pthread_t worker = 0;
	int by_caller = 0, by_worker = 0, expect = 0;

	for (int r = 0; r < ROUNDS; r++) {
		int n = r % 3 ? 1 : BURST;

		for (int i = 0; i < n; i++) {
			p[i] = rt_probe_new(i, r % 50 == 7 && i == 0 ? 7 : 0,
					    r % 5 == 4 && i == 0 ? 2 : 0);
			p[i]->order_ctr = &order;
			p[i]->active = &active;
			p[i]->max_active = &max_active;
			cr_assert_eq(ohc_rt_stream_submit(s, &p[i]->super), 0);
		}
		cr_assert_eq(aclrtSynchronizeStream(s),
			     r % 50 == 7 ? 7 : ACL_SUCCESS, "round %d", r);
		for (int i = 0; i < n; i++) {
			cr_assert_eq(p[i]->order, ++expect, "round %d", r);
			cr_assert_eq(atomic_load(&p[i]->runs), 1);
			cr_assert_eq(atomic_load(&p[i]->releases), 1);
			if (pthread_equal(p[i]->ran_on, pthread_self())) {
				by_caller++;
			} else {
				if (!by_worker)
					worker = p[i]->ran_on;
				cr_assert(pthread_equal(p[i]->ran_on, worker),
					  "a third thread ran a task");
				by_worker++;
			}
			free(p[i]);
		}
	}
	cr_assert_eq(atomic_load(&max_active), 1,
		     "two tasks of one stream ran at once");
	cr_log_info("tasks run by the synchronizer %d, by the worker %d",
		    by_caller, by_worker);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
}

Test(stream, sync_returns_first_error_and_clears_it)
{
	struct rt_probe *a = rt_probe_new(0, 0, 0), *b = rt_probe_new(1, 11, 0),
			*c = rt_probe_new(2, 22, 0), *d = rt_probe_new(3, 0, 0);
	aclrtStream s = new_stream();

	cr_assert_eq(ohc_rt_stream_submit(s, &a->super), 0);
	cr_assert_eq(ohc_rt_stream_submit(s, &b->super), 0);
	cr_assert_eq(ohc_rt_stream_submit(s, &c->super), 0);
	cr_assert_eq(ohc_rt_stream_submit(s, &d->super), 0);
	cr_assert_eq(aclrtSynchronizeStream(s), 11);
	/* CONTINUE_ON_FAILURE (default): every task ran. */
	cr_assert_eq(atomic_load(&d->runs), 1);
	cr_assert_eq(atomic_load(&c->runs), 1);
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS, "error cleared");
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	free(a);
	free(b);
	free(c);
	free(d);
}

Test(stream, stop_on_failure_skips_later_tasks)
{
	struct rt_probe *ok = rt_probe_new(0, 0, 0),
			*bad = rt_probe_new(1, 7, 0),
			*l1 = rt_probe_new(2, 0, 0),
			*l2 = rt_probe_new(3, 5, 0),
			*after = rt_probe_new(4, 0, 0);
	aclrtStream s = new_stream();

	cr_assert_eq(aclrtSetStreamFailureMode(s, 2), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtSetStreamFailureMode(s, ACL_STOP_ON_FAILURE),
		     ACL_SUCCESS);
	cr_assert_eq(ohc_rt_stream_submit(s, &ok->super), 0);
	cr_assert_eq(ohc_rt_stream_submit(s, &bad->super), 0);
	cr_assert_eq(ohc_rt_stream_submit(s, &l1->super), 0);
	cr_assert_eq(ohc_rt_stream_submit(s, &l2->super), 0);
	cr_assert_eq(aclrtSynchronizeStream(s), 7);
	cr_assert_eq(atomic_load(&ok->runs), 1);
	cr_assert_eq(atomic_load(&bad->runs), 1);
	cr_assert_eq(atomic_load(&l1->runs), 0, "skipped");
	cr_assert_eq(atomic_load(&l2->runs), 0, "skipped");
	cr_assert_eq(atomic_load(&l1->releases), 1, "release still called");
	cr_assert_eq(atomic_load(&l2->releases), 1, "release still called");
	/* The reported failure re-arms the stream. */
	cr_assert_eq(ohc_rt_stream_submit(s, &after->super), 0);
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	cr_assert_eq(atomic_load(&after->runs), 1);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	free(ok);
	free(bad);
	free(l1);
	free(l2);
	free(after);
}

Test(stream, sync_timeout_and_query)
{
	struct rt_probe *slow = rt_probe_new(0, 0, 300);
	aclrtStreamStatus st;
	aclrtStream s = new_stream();
	double t0;

	cr_assert_eq(aclrtStreamQuery(s, &st), ACL_SUCCESS);
	cr_assert_eq(st, ACL_STREAM_STATUS_COMPLETE);
	cr_assert_eq(ohc_rt_stream_submit(s, &slow->super), 0);
	cr_assert_eq(aclrtStreamQuery(s, &st), ACL_SUCCESS);
	cr_assert_eq(st, ACL_STREAM_STATUS_NOT_READY);
	cr_assert_eq(aclrtSynchronizeStreamWithTimeout(s, -2),
		     ACL_ERROR_RT_PARAM_INVALID);
	cr_assert_eq(aclrtSynchronizeStreamWithTimeout(s, 0),
		     ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
	t0 = rt_now_ms();
	cr_assert_eq(aclrtSynchronizeStreamWithTimeout(s, 50),
		     ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
	cr_assert_geq(rt_now_ms() - t0, 45.0);
	cr_assert_eq(aclrtSynchronizeStreamWithTimeout(s, -1), ACL_SUCCESS);
	cr_assert_eq(atomic_load(&slow->runs), 1);
	cr_assert_eq(aclrtStreamQuery(s, &st), ACL_SUCCESS);
	cr_assert_eq(st, ACL_STREAM_STATUS_COMPLETE);
	cr_assert_eq(aclrtStreamQuery(s, NULL), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	free(slow);
}

Test(stream, destroy_waits_and_joins_worker)
{
	struct rt_probe *slow = rt_probe_new(0, 0, 150);
	int before = rt_thread_count();
	aclrtStream s;

	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
	cr_assert_eq(rt_thread_count_settled(before + 1), before + 1);
	cr_assert_eq(ohc_rt_stream_submit(s, &slow->super), 0);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	cr_assert_eq(atomic_load(&slow->runs), 1, "pending work ran");
	cr_assert_eq(atomic_load(&slow->releases), 1);
	cr_assert_eq(rt_thread_count_settled(before), before, "worker joined");
	cr_assert_eq(ohc_rt_stream_valid(s), 0);
	cr_assert_eq(aclrtDestroyStream(NULL), ACL_ERROR_INVALID_PARAM);
	free(slow);
}

Test(stream, many_streams_no_thread_leak)
{
	enum { N = 20 };
	aclrtStream s[N];
	int before = rt_thread_count();

	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++)
			cr_assert_eq(aclrtCreateStream(&s[i]), ACL_SUCCESS);
		cr_assert_eq(rt_thread_count_settled(before + N), before + N);
		for (int i = 0; i < N; i++)
			cr_assert_eq(aclrtDestroyStream(s[i]), ACL_SUCCESS);
		cr_assert_eq(rt_thread_count_settled(before), before);
	}
}

Test(stream, force_destroy_skips_queued_tasks)
{
	struct rt_probe *slow = rt_probe_new(0, 0, 100),
			*queued = rt_probe_new(1, 0, 0);
	aclrtStream s = new_stream();

	cr_assert_eq(ohc_rt_stream_submit(s, &slow->super), 0);
	cr_assert_eq(ohc_rt_stream_submit(s, &queued->super), 0);
	/* wait (bounded) until the slow task is running, however loaded */
	for (int i = 0; i < 5000 && !atomic_load(&slow->started); i++)
		rt_sleep_ms(1);
	cr_assert(atomic_load(&slow->started), "the worker never ran");
	cr_assert_eq(aclrtDestroyStreamForce(s), ACL_SUCCESS);
	cr_assert_eq(atomic_load(&slow->runs), 1);
	cr_assert_eq(atomic_load(&queued->runs), 0);
	cr_assert_eq(atomic_load(&queued->releases), 1);
	free(slow);
	free(queued);
}

Test(stream, submit_checks)
{
	struct rt_probe *p = rt_probe_new(0, 0, 0);
	struct rt_probe *ok = rt_probe_new(0, 0, 0);
	struct ohc_rt_task bad = {0};
	int x;
	aclrtStream s = new_stream();

	cr_assert_eq(ohc_rt_stream_submit(NULL, &p->super),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(ohc_rt_stream_submit(&x, &p->super),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(ohc_rt_stream_submit(s, NULL), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(ohc_rt_stream_submit(s, &bad), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(ohc_rt_stream_valid(NULL), 0);
	cr_assert_eq(ohc_rt_stream_valid(&x), 0);
	cr_assert_eq(atomic_load(&p->releases), 0, "refused: no release");
	/* a stream this thread used (found live, cached) and then destroyed */
	cr_assert_eq(ohc_rt_stream_submit(s, &ok->super), 0);
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	cr_assert_eq(atomic_load(&ok->releases), 1);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	cr_assert_eq(ohc_rt_stream_submit(s, &p->super),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(atomic_load(&p->releases), 0);
	free(p);
	free(ok);
}

Test(stream, needs_a_device)
{
	aclrtStream s;

	cr_assert_eq(aclrtCreateStream(&s), ACL_ERROR_RT_CONTEXT_NULL);
	cr_assert_eq(aclrtSynchronizeStream(NULL), ACL_ERROR_RT_CONTEXT_NULL);
	cr_assert_eq(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateStreamWithConfig(&s, 8, 0),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtSynchronizeStream(NULL), ACL_SUCCESS);
}

Test(stream, default_stream_is_per_device_and_ordered)
{
	int before = rt_thread_count();
	static char a[64], b[64];

	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtMemsetAsync(a, sizeof(a), 0x5a, sizeof(a), NULL),
		     ACL_SUCCESS);
	/* a and b are not runtime memory: the copy completes on return,
	 * after the memset queued before it. */
	cr_assert_eq(aclrtMemcpyAsync(b, sizeof(b), a, sizeof(a),
				      ACL_MEMCPY_HOST_TO_HOST, NULL),
		     ACL_SUCCESS);
	for (size_t i = 0; i < sizeof(b); i++)
		cr_assert_eq(b[i], 0x5a);
	cr_assert_eq(rt_thread_count_settled(before + 1), before + 1,
		     "one default stream");
	cr_assert_eq(aclrtSynchronizeStream(NULL), ACL_SUCCESS);
	cr_assert_eq(rt_thread_count_settled(before + 1), before + 1);
	cr_assert_eq(aclrtResetDevice(0), ACL_SUCCESS);
	cr_assert_eq(rt_thread_count_settled(before), before, "reset joins it");
}

Test(stream, sync_noop_flags)
{
	const uint32_t flags[] = {ACL_STREAM_PERSISTENT,
				  ACL_STREAM_DEVICE_USE_ONLY,
				  ACL_STREAM_CPU_SCHEDULE};

	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct rt_probe *slow = rt_probe_new(0, 0, 200);
		aclrtStream s;
		double t0;

		cr_assert_eq(aclrtCreateStreamWithConfig(&s, 0, flags[i]),
			     ACL_SUCCESS);
		cr_assert_eq(ohc_rt_stream_submit(s, &slow->super), 0);
		t0 = rt_now_ms();
		cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
		cr_assert_lt(rt_now_ms() - t0, 150.0, "returns at once");
		cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
		cr_assert_eq(atomic_load(&slow->runs), 1);
		free(slow);
	}
	/* Other flags give an ordinary stream that does wait. */
	{
		struct rt_probe *slow = rt_probe_new(0, 0, 100);
		aclrtStream s;

		cr_assert_eq(aclrtCreateStreamWithConfig(
				     &s, 3, ACL_STREAM_FAST_LAUNCH | 0x100),
			     ACL_SUCCESS);
		cr_assert_eq(ohc_rt_stream_submit(s, &slow->super), 0);
		cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
		cr_assert_eq(atomic_load(&slow->runs), 1);
		cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
		free(slow);
	}
}

struct thr_streams {
	int dev;
	int ok;
};

static void *thr_stream_work(void *arg)
{
	enum { N = 300 };
	struct thr_streams *t = arg;
	struct rt_probe *p[N];
	atomic_int order = 0;
	aclrtStream s;

	if (aclrtSetDevice(t->dev) || aclrtCreateStream(&s))
		return NULL;
	for (int i = 0; i < N; i++) {
		p[i] = rt_probe_new(i, i == 10 ? 99 : 0, 0);
		p[i]->order_ctr = &order;
		if (ohc_rt_stream_submit(s, &p[i]->super))
			return NULL;
	}
	t->ok = aclrtSynchronizeStream(s) == 99 &&
		aclrtSynchronizeDevice() == ACL_SUCCESS;
	for (int i = 0; i < N; i++) {
		if (p[i]->order != i + 1)
			t->ok = 0;
		free(p[i]);
	}
	if (aclrtDestroyStream(s) || aclrtResetDevice(t->dev))
		t->ok = 0;
	return NULL;
}

Test(stream, threads_per_device)
{
	enum { T = 4 };
	struct thr_streams t[T];
	pthread_t th[T];
	int before = rt_thread_count();

	for (int i = 0; i < T; i++) {
		t[i] = (struct thr_streams){.dev = i};
		cr_assert_eq(
			pthread_create(&th[i], NULL, thr_stream_work, &t[i]),
			0);
	}
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(t[i].ok, 1, "thread %d", i);
	}
	cr_assert_eq(rt_thread_count_settled(before), before);
}

Test(stream, synchronize_device_reports_errors)
{
	struct rt_probe *bad = rt_probe_new(0, 42, 50);
	aclrtStream s = new_stream();

	cr_assert_eq(ohc_rt_stream_submit(s, &bad->super), 0);
	cr_assert_eq(aclrtSynchronizeDevice(), 42);
	cr_assert_eq(atomic_load(&bad->runs), 1);
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	free(bad);
}

/* A task that keeps its worker busy for about 20 us and counts itself. */
struct slow_task {
	struct ohc_rt_task super;
	atomic_int *done;
};

static int slow_task_run(struct ohc_rt_task *t)
{
	struct slow_task *st = (struct slow_task *)t;
	double end = rt_now_ms() + 0.02;

	while (rt_now_ms() < end)
		;
	atomic_fetch_add(st->done, 1);
	return 0;
}

/*
 * An enqueuing thread far ahead of the worker waits once 16384 tasks are
 * queued, until half of them are done. Unbounded, the 40000 submits below
 * return within some milliseconds while the worker needs 800.
 */
Test(stream, enqueue_waits_while_the_queue_is_full)
{
	enum { N = 40000, DEPTH = 16384 };
	struct slow_task *t = calloc(N, sizeof(*t));
	atomic_int done = 0;
	int deepest = 0;
	aclrtStream s = new_stream();

	cr_assert_not_null(t);
	for (int i = 0; i < N; i++) {
		t[i].super.run = slow_task_run;
		t[i].done = &done;
		cr_assert_eq(ohc_rt_stream_submit(s, &t[i].super), 0);
		if (i + 1 - atomic_load(&done) > deepest)
			deepest = i + 1 - atomic_load(&done);
	}
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	cr_assert_eq(atomic_load(&done), N);
	/* the one running is counted out only when it ends */
	cr_assert_leq(deepest, DEPTH + 1, "%d tasks were queued at once",
		      deepest);
	cr_assert_geq(deepest, DEPTH / 2, "the queue never filled (%d)",
		      deepest);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	free(t);
}

/*
 * A full queue whose head waits for something this thread does only after
 * its submits (here a flag; an event it records later on another stream,
 * or another rank's op with ranks as threads): the submit that finds the
 * queue full and not moving goes on after a second instead of waiting
 * forever (the head would give up after 5 s: gate_seen 0).
 */
Test(stream, full_queue_stuck_on_the_submitter_does_not_block_it)
{
	enum { N = 20000 };
	struct rt_probe **p = calloc(N, sizeof(*p));
	atomic_int order = 0, gate = 0;
	double t0;
	aclrtStream s = new_stream();

	cr_assert_not_null(p);
	for (int i = 0; i < N; i++) {
		p[i] = rt_probe_new(i, 0, 0);
		p[i]->order_ctr = &order;
	}
	p[0]->gate = &gate;
	t0 = rt_now_ms();
	for (int i = 0; i < N; i++)
		cr_assert_eq(ohc_rt_stream_submit(s, &p[i]->super), 0);
	cr_assert_lt(rt_now_ms() - t0, 4000.0, "submits waited for the head");
	atomic_store(&gate, 1);
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	cr_assert_eq(p[0]->gate_seen, 1, "the head gave up waiting");
	for (int i = 0; i < N; i++) {
		cr_assert_eq(p[i]->order, i + 1);
		free(p[i]);
	}
	free(p);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
}
