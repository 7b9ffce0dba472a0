/* SPDX-License-Identifier: Apache-2.0 */
/* Events: timestamps, default-event ordering, ACL_EVENT_SYNC latches. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt_test.h"

static void two_streams(aclrtStream *a, aclrtStream *b)
{
	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateStream(a), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateStream(b), ACL_SUCCESS);
}

Test(event, elapsed_time_of_a_sleeping_task)
{
	struct rt_probe *slow = rt_probe_new(0, 0, 60);
	aclrtEvent start, end;
	aclrtStream s, unused;
	float ms = -1.0f;

	two_streams(&s, &unused);
	cr_assert_eq(aclrtCreateEvent(&start), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateEvent(&end), ACL_SUCCESS);
	cr_assert_eq(aclrtEventElapsedTime(&ms, start, end),
		     ACL_ERROR_RT_INTERNAL_ERROR, "never recorded");
	cr_assert_eq(aclrtRecordEvent(start, s), ACL_SUCCESS);
	cr_assert_eq(ohc_rt_stream_submit(s, &slow->super), 0);
	cr_assert_eq(aclrtRecordEvent(end, s), ACL_SUCCESS);
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	cr_assert_eq(aclrtEventElapsedTime(&ms, start, end), ACL_SUCCESS);
	cr_assert_gt(ms, 0.0f);
	cr_assert_geq(ms, 55.0f, "elapsed %f ms", (double)ms);
	cr_assert_lt(ms, 5000.0f);
	cr_assert_eq(aclrtEventElapsedTime(&ms, end, start),
		     ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL);
	cr_assert_eq(aclrtEventElapsedTime(NULL, start, end),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtDestroyEvent(start), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyEvent(end), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(unused), ACL_SUCCESS);
	free(slow);
}

Test(event, timestamp_taken_when_the_stream_reaches_the_record)
{
	struct rt_probe *slow = rt_probe_new(0, 0, 100);
	aclrtEventRecordedStatus st;
	aclrtStream s, unused;
	aclrtEvent ev;
	uint64_t ts_us = 0;
	float ms;
	struct timespec t0;

	two_streams(&s, &unused);
	cr_assert_eq(aclrtCreateEvent(&ev), ACL_SUCCESS);
	cr_assert_eq(aclrtQueryEventStatus(ev, &st), ACL_SUCCESS);
	cr_assert_eq(st, ACL_EVENT_RECORDED_STATUS_COMPLETE, "nothing taken");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(ohc_rt_stream_submit(s, &slow->super), 0);
	cr_assert_eq(aclrtRecordEvent(ev, s), ACL_SUCCESS);
	cr_assert_eq(aclrtQueryEventStatus(ev, &st), ACL_SUCCESS);
	cr_assert_eq(st, ACL_EVENT_RECORDED_STATUS_NOT_READY);
	cr_assert_eq(aclrtEventGetTimestamp(ev, &ts_us),
		     ACL_ERROR_RT_EVENT_NOT_COMPLETE);
	cr_assert_eq(aclrtEventElapsedTime(&ms, ev, ev),
		     ACL_ERROR_RT_EVENT_NOT_COMPLETE);
	cr_assert_eq(aclrtSynchronizeEventWithTimeout(ev, 10),
		     ACL_ERROR_RT_EVENT_SYNC_TIMEOUT);
	cr_assert_eq(aclrtSynchronizeEventWithTimeout(ev, -2),
		     ACL_ERROR_RT_PARAM_INVALID);
	cr_assert_eq(aclrtSynchronizeEvent(ev), ACL_SUCCESS);
	cr_assert_eq(atomic_load(&slow->runs), 1, "event waited for the task");
	cr_assert_eq(aclrtQueryEventStatus(ev, &st), ACL_SUCCESS);
	cr_assert_eq(st, ACL_EVENT_RECORDED_STATUS_COMPLETE);
	cr_assert_eq(aclrtEventGetTimestamp(ev, &ts_us), ACL_SUCCESS);
	uint64_t t0_us =
		(uint64_t)t0.tv_sec * 1000000u + (uint64_t)t0.tv_nsec / 1000u;
	cr_assert_geq(ts_us, t0_us + 95000u, "stamped at enqueue time?");
	cr_assert_eq(aclrtDestroyEvent(ev), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(unused), ACL_SUCCESS);
	free(slow);
}

Test(event, wait_on_never_recorded_default_event)
{
	aclrtStream s, unused;
	aclrtEvent ev;

	two_streams(&s, &unused);
	cr_assert_eq(aclrtCreateEvent(&ev), ACL_SUCCESS);
	cr_assert_eq(aclrtStreamWaitEvent(s, ev), ACL_ERROR_RT_PARAM_INVALID);
	cr_assert_eq(aclrtStreamWaitEvent(s, NULL), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyEvent(ev), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyEvent(ev), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(unused), ACL_SUCCESS);
}

Test(event, default_event_orders_across_streams)
{
	struct rt_probe *slow = rt_probe_new(0, 0, 100),
			*after = rt_probe_new(1, 0, 0);
	atomic_int order = 0;
	aclrtStream a, b;
	aclrtEvent ev;

	two_streams(&a, &b);
	slow->order_ctr = &order;
	after->order_ctr = &order;
	cr_assert_eq(aclrtCreateEvent(&ev), ACL_SUCCESS);
	cr_assert_eq(ohc_rt_stream_submit(a, &slow->super), 0);
	cr_assert_eq(aclrtRecordEvent(ev, a), ACL_SUCCESS);
	cr_assert_eq(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS);
	cr_assert_eq(ohc_rt_stream_submit(b, &after->super), 0);
	cr_assert_eq(aclrtSynchronizeStream(b), ACL_SUCCESS);
	cr_assert_eq(slow->order, 1);
	cr_assert_eq(after->order, 2, "b waited for a's record");
	/* A completed record: the wait is a no-op. */
	cr_assert_eq(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS);
	cr_assert_eq(aclrtSynchronizeStream(b), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyEvent(ev), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(a), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(b), ACL_SUCCESS);
	free(slow);
	free(after);
}

/* hccl_test -t: wait on an unrecorded SYNC event, pile work behind it from
 * the same host thread, then record it from another stream. */
Test(event, sync_event_latch_across_streams)
{
	enum { N = 200 };
	struct rt_probe *p[N], *q;
	aclrtStreamStatus st;
	aclrtStream s, other;
	aclrtEvent ev;
	double t0;

	two_streams(&s, &other);
	cr_assert_eq(aclrtCreateEventWithFlag(&ev, ACL_EVENT_SYNC),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtStreamWaitEvent(s, ev), ACL_SUCCESS);
	cr_assert_eq(aclrtResetEvent(ev, s), ACL_SUCCESS);
	t0 = rt_now_ms();
	for (int i = 0; i < N; i++) {
		p[i] = rt_probe_new(i, 0, 0);
		cr_assert_eq(ohc_rt_stream_submit(s, &p[i]->super), 0);
	}
	cr_assert_lt(rt_now_ms() - t0, 1000.0, "enqueue blocked");
	rt_sleep_ms(100);
	for (int i = 0; i < N; i++)
		cr_assert_eq(atomic_load(&p[i]->runs), 0, "ran past the wait");
	cr_assert_eq(aclrtStreamQuery(s, &st), ACL_SUCCESS);
	cr_assert_eq(st, ACL_STREAM_STATUS_NOT_READY);
	cr_assert_eq(aclrtSynchronizeStreamWithTimeout(s, 20),
		     ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
	/* A later record, on another stream, releases the wait. */
	cr_assert_eq(aclrtRecordEvent(ev, other), ACL_SUCCESS);
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(atomic_load(&p[i]->runs), 1);
		free(p[i]);
	}
	/* The reset executed after the wait: the next wait blocks again. */
	q = rt_probe_new(0, 0, 0);
	cr_assert_eq(aclrtStreamWaitEvent(s, ev), ACL_SUCCESS);
	cr_assert_eq(ohc_rt_stream_submit(s, &q->super), 0);
	rt_sleep_ms(100);
	cr_assert_eq(atomic_load(&q->runs), 0, "reset did not re-arm");
	cr_assert_eq(aclrtRecordEvent(ev, other), ACL_SUCCESS);
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	cr_assert_eq(atomic_load(&q->runs), 1);
	/* Recorded and not reset: a further wait passes at once. */
	cr_assert_eq(aclrtStreamWaitEvent(s, ev), ACL_SUCCESS);
	cr_assert_eq(aclrtSynchronizeStreamWithTimeout(s, 2000), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyEvent(ev), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(other), ACL_SUCCESS);
	free(q);
}

Test(event, destroy_does_not_block_and_ends_waits)
{
	struct rt_probe *p = rt_probe_new(0, 0, 0);
	aclrtStream s, other;
	aclrtEvent ev;
	double t0;

	two_streams(&s, &other);
	cr_assert_eq(aclrtCreateEventWithFlag(&ev, ACL_EVENT_SYNC),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtStreamWaitEvent(s, ev), ACL_SUCCESS);
	cr_assert_eq(aclrtRecordEvent(ev, s), ACL_SUCCESS); /* queued too */
	cr_assert_eq(ohc_rt_stream_submit(s, &p->super), 0);
	rt_sleep_ms(20);
	t0 = rt_now_ms();
	cr_assert_eq(aclrtDestroyEvent(ev), ACL_SUCCESS);
	cr_assert_lt(rt_now_ms() - t0, 100.0);
	cr_assert_eq(aclrtSynchronizeStream(s), ACL_SUCCESS);
	cr_assert_eq(atomic_load(&p->runs), 1);
	cr_assert_eq(aclrtRecordEvent(ev, s), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(other), ACL_SUCCESS);
	free(p);
}

Test(event, force_destroy_of_a_waiting_stream)
{
	int before = rt_thread_count();
	aclrtStream s, other;
	aclrtEvent ev;

	two_streams(&s, &other);
	cr_assert_eq(aclrtCreateEventWithFlag(&ev, ACL_EVENT_SYNC),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtStreamWaitEvent(s, ev), ACL_SUCCESS);
	rt_sleep_ms(20);
	cr_assert_eq(aclrtDestroyStreamForce(s), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(other), ACL_SUCCESS);
	cr_assert_eq(rt_thread_count_settled(before), before);
	cr_assert_eq(aclrtDestroyEvent(ev), ACL_SUCCESS);
}

Test(event, create_checks)
{
	aclrtEvent ev;
	aclrtEventStatus st;

	cr_assert_eq(aclrtCreateEvent(NULL), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtCreateEventWithFlag(&ev, 0x80000000u),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtCreateEventWithFlag(&ev, ACL_EVENT_IPC),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtCreateEventExWithFlag(&ev, ACL_EVENT_IPC),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtQueryEvent(ev, &st), ACL_SUCCESS);
	cr_assert_eq(st, ACL_EVENT_STATUS_COMPLETE);
	cr_assert_eq(aclrtDestroyEvent(ev), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateEventWithFlag(&ev, ACL_EVENT_SYNC |
							   ACL_EVENT_TIME_LINE),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtQueryEventStatus(ev, NULL), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtDestroyEvent(ev), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyEvent(NULL), ACL_ERROR_INVALID_PARAM);
}

Test(event, null_stream_means_default_stream)
{
	struct rt_probe *slow = rt_probe_new(0, 0, 50);
	aclrtStream s, unused;
	aclrtEvent a, b;
	float ms;

	two_streams(&s, &unused);
	cr_assert_eq(aclrtCreateEvent(&a), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateEvent(&b), ACL_SUCCESS);
	cr_assert_eq(aclrtRecordEvent(a, NULL), ACL_SUCCESS);
	cr_assert_eq(aclrtStreamWaitEvent(s, a), ACL_SUCCESS);
	cr_assert_eq(ohc_rt_stream_submit(s, &slow->super), 0);
	cr_assert_eq(aclrtRecordEvent(b, s), ACL_SUCCESS);
	cr_assert_eq(aclrtStreamWaitEvent(NULL, b), ACL_SUCCESS);
	cr_assert_eq(aclrtSynchronizeStream(NULL), ACL_SUCCESS);
	cr_assert_eq(atomic_load(&slow->runs), 1, "default stream waited");
	cr_assert_eq(aclrtEventElapsedTime(&ms, a, b), ACL_SUCCESS);
	cr_assert_geq(ms, 45.0f);
	cr_assert_eq(aclrtDestroyEvent(a), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyEvent(b), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(s), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyStream(unused), ACL_SUCCESS);
	free(slow);
}
