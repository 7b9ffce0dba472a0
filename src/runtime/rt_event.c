/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Events. Every record is numbered when enqueued and, when the stream's
 * worker reaches it, stamps the event with CLOCK_MONOTONIC and marks that
 * number done. Default events order waits after a record; ACL_EVENT_SYNC
 * events are latches: a wait blocks its stream until some record of the
 * event executes (even one enqueued later, on another stream), and
 * aclrtResetEvent clears the latch. All event state is guarded by one lock
 * and waiters share one condition variable.
 */
#include <stdlib.h>

#include "runtime/rt_internal.h"

#define EVENT_FLAGS                                                            \
	(ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS |                  \
	 ACL_EVENT_TIME_LINE | ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_EXTERNAL)
#define EVENT_FLAGS_EX (EVENT_FLAGS | ACL_EVENT_IPC)

struct ohc_rt_event {
	struct ohc_rt_obj super;
	uint32_t flags;
	bool is_sync;	 /* ACL_EVENT_SYNC: latch semantics */
	atomic_int refs; /* the handle + one per queued task */
	/* Guarded by ev_lock: */
	uint64_t rec_seq;  /* records enqueued */
	uint64_t done_seq; /* highest record number executed */
	uint64_t ts_ns;	   /* completion time of done_seq */
	bool latch;	   /* set by an executed record, cleared by reset */
	bool destroyed;	   /* handle gone: waits on it end */
};

enum ev_op { EV_RECORD, EV_WAIT, EV_RESET };

struct ev_task {
	struct ohc_rt_task super;
	struct ohc_rt_event *ev;
	struct ohc_rt_stream *s; /* the stream running this task */
	uint64_t seq;		 /* record: its number; wait: the target */
};

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cond;
static pthread_once_t ev_once = PTHREAD_ONCE_INIT;

static void ev_init_once(void)
{
	ohc_rt_cond_init(&ev_cond);
}

void ohc_rt_event_kick(void)
{
	pthread_once(&ev_once, ev_init_once);
	pthread_mutex_lock(&ev_lock);
	pthread_cond_broadcast(&ev_cond);
	pthread_mutex_unlock(&ev_lock);
}

static aclError event_get(const char *fn, aclrtEvent handle,
			  struct ohc_rt_event **ev_p)
{
	struct ohc_rt_event *ev = NULL;
	struct ohc_rt_obj *o;

	if (!handle)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM, "%s: event is NULL",
				   fn);
	pthread_mutex_lock(&ohc_rt_reg_lock);
	o = ohc_rt_reg_find_locked(handle, OHC_RT_KIND_EVENT);
	if (o) {
		ev = ohc_derived_of(o, struct ohc_rt_event);
		atomic_fetch_add(&ev->refs, 1);
	}
	pthread_mutex_unlock(&ohc_rt_reg_lock);
	if (!ev)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: %p is not a live event", fn, handle);
	pthread_once(&ev_once, ev_init_once);
	*ev_p = ev;
	return ACL_SUCCESS;
}

/* event_get for a call that answers through out (named what): out first. */
static aclError event_get_out(const char *fn, const void *out, const char *what,
			      aclrtEvent handle, struct ohc_rt_event **ev_p)
{
	if (!out)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM, "%s: %s is NULL",
				   fn, what);
	return event_get(fn, handle, ev_p);
}

static void event_put(struct ohc_rt_event *ev)
{
	if (atomic_fetch_sub_explicit(&ev->refs, 1, memory_order_acq_rel) == 1)
		free(ev);
}

static aclError event_create(const char *fn, aclrtEvent *event, uint32_t flag,
			     uint32_t allowed)
{
	struct ohc_rt_event *ev;

	if (!event)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM, "%s: event is NULL",
				   fn);
	if (flag & ~allowed)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: unknown flag bits 0x%x", fn,
				   flag & ~allowed);
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "%s: out of memory", fn);
	ev->flags = flag;
	ev->is_sync = (flag & ACL_EVENT_SYNC) != 0;
	atomic_init(&ev->refs, 1);
	pthread_mutex_lock(&ohc_rt_reg_lock);
	ohc_rt_reg_add_locked(&ev->super, OHC_RT_KIND_EVENT);
	pthread_mutex_unlock(&ohc_rt_reg_lock);
	*event = ev;
	return ACL_SUCCESS;
}

/* A default event: timestamps and cross-stream ordering, not a latch. */
OHC_API aclError aclrtCreateEvent(aclrtEvent *event)
{
	return event_create("aclrtCreateEvent", event, ACL_EVENT_TIME_LINE,
			    EVENT_FLAGS);
}

OHC_API aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag)
{
	return event_create("aclrtCreateEventWithFlag", event, flag,
			    EVENT_FLAGS);
}

OHC_API aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag)
{
	return event_create("aclrtCreateEventExWithFlag", event, flag,
			    EVENT_FLAGS_EX);
}

/* Does not block: queued records and waits keep the object alive; waits
 * on a destroyed event end. */
OHC_API aclError aclrtDestroyEvent(aclrtEvent event)
{
	struct ohc_rt_event *ev = NULL;
	struct ohc_rt_obj *o;

	pthread_mutex_lock(&ohc_rt_reg_lock);
	o = ohc_rt_reg_find_locked(event, OHC_RT_KIND_EVENT);
	if (o) {
		ohc_rt_reg_del_locked(o);
		ev = ohc_derived_of(o, struct ohc_rt_event);
	}
	pthread_mutex_unlock(&ohc_rt_reg_lock);
	if (!ev)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtDestroyEvent: %p is not a live event",
				   event);
	pthread_once(&ev_once, ev_init_once);
	pthread_mutex_lock(&ev_lock);
	ev->destroyed = true;
	pthread_cond_broadcast(&ev_cond);
	pthread_mutex_unlock(&ev_lock);
	event_put(ev);
	return ACL_SUCCESS;
}

/* ---- tasks ---- */

static int ev_record_run(struct ohc_rt_task *t)
{
	struct ev_task *et = ohc_container_of(t, struct ev_task, super);
	struct ohc_rt_event *ev = et->ev;
	uint64_t now = ohc_time_ns();

	pthread_mutex_lock(&ev_lock);
	if (et->seq > ev->done_seq) {
		ev->done_seq = et->seq;
		ev->ts_ns = now;
	}
	ev->latch = true;
	pthread_cond_broadcast(&ev_cond);
	pthread_mutex_unlock(&ev_lock);
	return 0;
}

static int ev_wait_run(struct ohc_rt_task *t)
{
	struct ev_task *et = ohc_container_of(t, struct ev_task, super);
	struct ohc_rt_event *ev = et->ev;

	pthread_mutex_lock(&ev_lock);
	for (;;) {
		if (ev->is_sync ? ev->latch : ev->done_seq >= et->seq)
			break;
		if (ev->destroyed) {
			OHC_WARN(OHC_SS_RT,
				 "stream %p: event %p destroyed while the "
				 "stream waited on it; the wait ends",
				 (void *)et->s, (void *)ev);
			break;
		}
		if (atomic_load(&et->s->abort))
			break;
		pthread_cond_wait(&ev_cond, &ev_lock);
	}
	pthread_mutex_unlock(&ev_lock);
	return 0;
}

static int ev_reset_run(struct ohc_rt_task *t)
{
	struct ev_task *et = ohc_container_of(t, struct ev_task, super);

	pthread_mutex_lock(&ev_lock);
	et->ev->latch = false;
	pthread_mutex_unlock(&ev_lock);
	return 0;
}

static void ev_task_release(struct ohc_rt_task *t)
{
	struct ev_task *et = ohc_container_of(t, struct ev_task, super);

	event_put(et->ev);
	free(et);
}

/*
 * Build a task of op for ev on s. Takes its own event reference, dropped by
 * the release. ev_lock is not held.
 */
static aclError ev_task_new(const char *fn, enum ev_op op,
			    struct ohc_rt_event *ev, struct ohc_rt_stream *s,
			    struct ev_task **et_p)
{
	static const struct {
		ohc_rt_task_run_fn run;
		const char *name;
	} ops[] = {
		[EV_RECORD] = {ev_record_run, "event_record"},
		[EV_WAIT] = {ev_wait_run, "event_wait"},
		[EV_RESET] = {ev_reset_run, "event_reset"},
	};
	struct ev_task *et;

	et = calloc(1, sizeof(*et));
	if (!et)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "%s: out of memory", fn);
	et->super.run = ops[op].run;
	et->super.release = ev_task_release;
	et->super.name = ops[op].name;
	et->ev = ev;
	et->s = s;
	atomic_fetch_add(&ev->refs, 1);
	*et_p = et;
	return ACL_SUCCESS;
}

static void ev_task_free(struct ev_task *et)
{
	event_put(et->ev);
	free(et);
}

/* Queues one ev_task. What differs between record, wait and reset is how
 * it enters the stream: push (NULL: a plain push) queues et, or returns
 * an error (et is freed here), or frees et itself and returns success. */
typedef aclError (*ev_push_fn)(aclrtEvent event, struct ohc_rt_event *ev,
			       struct ohc_rt_stream *s, struct ev_task *et);

static aclError ev_enqueue(const char *fn, enum ev_op op, aclrtEvent event,
			   aclrtStream stream, ev_push_fn push)
{
	struct ohc_rt_event *ev;
	struct ohc_rt_stream *s;
	struct ev_task *et = NULL;
	aclError ret;

	ret = event_get(fn, event, &ev);
	if (ret)
		return ret;
	ret = ohc_rt_stream_get(stream, &s);
	if (ret)
		goto out_put_event;
	ret = ev_task_new(fn, op, ev, s, &et);
	if (ret)
		goto out_put_stream;
	ret = push ? push(event, ev, s, et)
		   : ohc_rt_stream_push(s, &et->super, NULL);
	if (ret)
		ev_task_free(et);
out_put_stream:
	ohc_rt_stream_put(s);
out_put_event:
	event_put(ev);
	return ret;
}

static aclError ev_record_push(aclrtEvent event, struct ohc_rt_event *ev,
			       struct ohc_rt_stream *s, struct ev_task *et)
{
	aclError ret;

	(void)event;
	/* Number and queue the record atomically so numbers follow the
	 * order records enter each stream. */
	pthread_mutex_lock(&ev_lock);
	et->seq = ev->rec_seq + 1;
	ret = ohc_rt_stream_push(s, &et->super, NULL);
	if (!ret)
		ev->rec_seq = et->seq;
	pthread_mutex_unlock(&ev_lock);
	return ret;
}

OHC_API aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream)
{
	return ev_enqueue("aclrtRecordEvent", EV_RECORD, event, stream,
			  ev_record_push);
}

static aclError ev_wait_push(aclrtEvent event, struct ohc_rt_event *ev,
			     struct ohc_rt_stream *s, struct ev_task *et)
{
	aclError ret;

	pthread_mutex_lock(&ev_lock);
	if (!ev->is_sync && ev->rec_seq == 0) {
		pthread_mutex_unlock(&ev_lock);
		return OHC_RT_FAIL(ACL_ERROR_RT_PARAM_INVALID,
				   "aclrtStreamWaitEvent: event %p was never "
				   "recorded (only ACL_EVENT_SYNC events wait "
				   "for a future record)",
				   event);
	}
	et->seq = ev->rec_seq;
	if (!ev->is_sync && ev->done_seq >= et->seq) {
		/* The record already executed: nothing to wait for. */
		pthread_mutex_unlock(&ev_lock);
		ev_task_free(et);
		return ACL_SUCCESS;
	}
	ret = ohc_rt_stream_push(s, &et->super, NULL);
	pthread_mutex_unlock(&ev_lock);
	return ret;
}

OHC_API aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event)
{
	return ev_enqueue("aclrtStreamWaitEvent", EV_WAIT, event, stream,
			  ev_wait_push);
}

OHC_API aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream)
{
	return ev_enqueue("aclrtResetEvent", EV_RESET, event, stream, NULL);
}

/* ---- queries ---- */

/*
 * For the two queries: whether event is complete (never-recorded events
 * count as complete: nothing was captured); status is checked first.
 */
static aclError event_complete(const char *fn, aclrtEvent event,
			       const void *status, bool *done_p)
{
	struct ohc_rt_event *ev;
	aclError ret;

	ret = event_get_out(fn, status, "status", event, &ev);
	if (ret)
		return ret;
	pthread_mutex_lock(&ev_lock);
	*done_p = ev->done_seq >= ev->rec_seq;
	pthread_mutex_unlock(&ev_lock);
	event_put(ev);
	return ACL_SUCCESS;
}

OHC_API aclError aclrtQueryEventStatus(aclrtEvent event,
				       aclrtEventRecordedStatus *status)
{
	bool done;
	aclError ret =
		event_complete("aclrtQueryEventStatus", event, status, &done);

	if (!ret)
		*status = done ? ACL_EVENT_RECORDED_STATUS_COMPLETE
			       : ACL_EVENT_RECORDED_STATUS_NOT_READY;
	return ret;
}

OHC_API aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status)
{
	bool done;
	aclError ret = event_complete("aclrtQueryEvent", event, status, &done);

	if (!ret)
		*status = done ? ACL_EVENT_STATUS_COMPLETE
			       : ACL_EVENT_STATUS_NOT_READY;
	return ret;
}

static aclError event_sync(const char *fn, aclrtEvent event, int32_t timeout)
{
	uint64_t deadline = ohc_rt_deadline_ms(timeout);
	struct ohc_rt_event *ev;
	aclError ret;
	uint64_t target;

	ret = event_get(fn, event, &ev);
	if (ret)
		return ret;
	pthread_mutex_lock(&ev_lock);
	target = ev->rec_seq;
	while (ev->done_seq < target) {
		if (ohc_rt_cond_wait(&ev_cond, &ev_lock, deadline)) {
			ret = ACL_ERROR_RT_EVENT_SYNC_TIMEOUT;
			break;
		}
	}
	pthread_mutex_unlock(&ev_lock);
	if (ret) {
		OHC_DEBUG(OHC_SS_RT, "%s: event %p not complete after %d ms",
			  fn, event, (int)timeout);
		ohc_rt_set_errmsg("%s: timed out after %d ms", fn,
				  (int)timeout);
	}
	event_put(ev);
	return ret;
}

OHC_API aclError aclrtSynchronizeEvent(aclrtEvent event)
{
	return event_sync("aclrtSynchronizeEvent", event, -1);
}

OHC_API aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event,
						  int32_t timeout)
{
	if (timeout < -1)
		return OHC_RT_FAIL(ACL_ERROR_RT_PARAM_INVALID,
				   "aclrtSynchronizeEventWithTimeout: timeout "
				   "%d ms (must be -1, 0 or positive)",
				   (int)timeout);
	return event_sync("aclrtSynchronizeEventWithTimeout", event, timeout);
}

/* Completion time of the event's last record, under ev_lock. */
static aclError event_stamp_locked(const char *fn, const void *handle,
				   const struct ohc_rt_event *ev,
				   uint64_t *ts_p)
{
	if (ev->flags & (ACL_EVENT_EXTERNAL | ACL_EVENT_IPC))
		return OHC_RT_FAIL(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
				   "%s: event %p is external/IPC: no "
				   "timestamps",
				   fn, handle);
	if (ev->rec_seq == 0)
		return OHC_RT_FAIL(ACL_ERROR_RT_INTERNAL_ERROR,
				   "%s: event %p was never recorded", fn,
				   handle);
	if (ev->done_seq < ev->rec_seq)
		return OHC_RT_FAIL(ACL_ERROR_RT_EVENT_NOT_COMPLETE,
				   "%s: the last record of event %p has not "
				   "executed yet (synchronize first)",
				   fn, handle);
	*ts_p = ev->ts_ns;
	return ACL_SUCCESS;
}

OHC_API aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent,
				       aclrtEvent endEvent)
{
	static const char fn[] = "aclrtEventElapsedTime";
	struct ohc_rt_event *a, *b;
	uint64_t ta = 0, tb = 0;
	aclError ret;

	ret = event_get_out(fn, ms, "ms", startEvent, &a);
	if (ret)
		return ret;
	ret = event_get(fn, endEvent, &b);
	if (ret)
		goto out_put_a;
	pthread_mutex_lock(&ev_lock);
	ret = event_stamp_locked(fn, startEvent, a, &ta);
	if (!ret)
		ret = event_stamp_locked(fn, endEvent, b, &tb);
	pthread_mutex_unlock(&ev_lock);
	if (ret)
		goto out_put_b;
	if (tb < ta) {
		ret = OHC_RT_FAIL(ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL,
				  "%s: end event %p completed before start "
				  "event %p",
				  fn, endEvent, startEvent);
		goto out_put_b;
	}
	*ms = (float)((double)(tb - ta) / 1e6);
out_put_b:
	event_put(b);
out_put_a:
	event_put(a);
	return ret;
}

/* Completion time of the last record in microseconds (CLOCK_MONOTONIC). */
OHC_API aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t *timestamp)
{
	static const char fn[] = "aclrtEventGetTimestamp";
	struct ohc_rt_event *ev;
	uint64_t ts = 0;
	aclError ret;

	ret = event_get_out(fn, timestamp, "timestamp", event, &ev);
	if (ret)
		return ret;
	pthread_mutex_lock(&ev_lock);
	ret = event_stamp_locked(fn, event, ev, &ts);
	pthread_mutex_unlock(&ev_lock);
	if (!ret)
		*timestamp = ts / 1000;
	event_put(ev);
	return ret;
}
