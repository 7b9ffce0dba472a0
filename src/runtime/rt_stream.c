/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Streams: a FIFO of tasks drained in order by one worker thread per
 * stream. Enqueueing waits only when the queue is full (see
 * throttle_locked); synchronize waits for the tasks enqueued before it and
 * reports the first error since the last synchronize.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <numa.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"
#include "util/config.h"
#include "util/time.h"

/*
 * Bumped under the registry lock whenever a stream leaves the registry: a
 * thread that found a handle registered at generation g knows it still is
 * while the generation reads g (the lock-free ohc_rt_stream_valid and
 * ohc_rt_stream_submit).
 */
static uint64_t stream_gen;		  /* atomic */
static uint32_t stream_prof_ids;	  /* atomic: last profile lane id */
static __thread const void *valid_handle; /* last handle found live */
static __thread uint64_t valid_gen;	  /* stream_gen when found */

/* The stream behind handle if this thread found it live and none left
 * since, else NULL. (A created stream's handle is its object.) */
static struct ohc_rt_stream *stream_cached(const void *handle)
{
	if (handle && handle == valid_handle &&
	    __atomic_load_n(&stream_gen, __ATOMIC_ACQUIRE) == valid_gen)
		return (struct ohc_rt_stream *)(uintptr_t)handle;
	return NULL;
}

#define SYNC_NOOP_FLAGS                                                        \
	(ACL_STREAM_PERSISTENT | ACL_STREAM_DEVICE_USE_ONLY |                  \
	 ACL_STREAM_CPU_SCHEDULE)

/*
 * Run the task at the head of the queue (s->lock held, s->busy clear, a
 * task queued): the caller takes the stream's single execution token
 * (busy), so tasks run one at a time and in order whichever thread runs
 * them. Returns with the lock held and the token given back.
 */
static void run_head_locked(struct ohc_rt_stream *s)
{
	struct ohc_rt_task *t = s->head;
	bool skip;
	int rc = 0;

	s->head = t->next;
	if (!s->head)
		s->tail = NULL;
	t->next = NULL;
	skip = s->stopped || atomic_load(&s->abort);
	s->busy = true;
	pthread_mutex_unlock(&s->lock);

	if (skip)
		OHC_DEBUG(OHC_SS_RT, "device %d stream %p: task %s skipped",
			  s->dev, (void *)s, t->name ? t->name : "?");
	else if (OHC_UNLIKELY(ohc_rt_prof_on()))
		rc = ohc_rt_prof_run(t, s->prof_id, s->dev);
	else
		rc = t->run(t);
	if (rc)
		OHC_DEBUG(OHC_SS_RT,
			  "device %d stream %p: task %s failed with %d", s->dev,
			  (void *)s, t->name ? t->name : "?", rc);
	if (t->release)
		t->release(t);

	pthread_mutex_lock(&s->lock);
	s->busy = false;
	if (rc) {
		if (!s->error)
			s->error = rc;
		if (s->stop_on_failure)
			s->stopped = true;
	}
	s->done_seq++;
	/* wake waiters only when one of them is satisfied */
	if (s->done_seq >= s->wake_at) {
		s->wake_at = UINT64_MAX;
		pthread_cond_broadcast(&s->done_cond);
	}
}

/*
 * The queue ran empty (s->lock held): yield the CPU for up to
 * STREAM_IDLE_YIELD_NS before sleeping, in case the thread that feeds us
 * is about to enqueue more. When that thread shares our CPU (hccl_test
 * -np binds a rank's threads to one CPU; so does any application pinned
 * to one core) it is usually the one we preempted: sleeping here would
 * get us woken, and preempt it again, for every task it enqueues (two
 * context switches per task: 10-15 us per 8-byte AllReduce where 0.2 us
 * is the cost once the queue is full). A yield lets it enqueue until its
 * slice ends or it synchronizes. On a CPU of our own the yields return at
 * once and this is a short poll. Returns with the lock held; true if
 * work arrived.
 */
#define STREAM_IDLE_YIELD_NS 20000
static bool idle_yield(struct ohc_rt_stream *s)
{
	uint64_t end = ohc_time_ns() + STREAM_IDLE_YIELD_NS;
	bool work;

	pthread_mutex_unlock(&s->lock);
	do {
		sched_yield();
		work = __atomic_load_n(&s->head, __ATOMIC_RELAXED) ||
		       __atomic_load_n(&s->closing, __ATOMIC_RELAXED);
	} while (!work && ohc_time_ns() < end);
	pthread_mutex_lock(&s->lock);
	return work;
}

static void *stream_worker(void *arg)
{
	struct ohc_rt_stream *s = arg;
	char name[16];
	int node;

	snprintf(name, sizeof(name), "ohc-rt-d%d", s->dev);
	pthread_setname_np(pthread_self(), name);
	if (ohc_rt_numa_usable() && ohc_rt_numa_node_count() > 1) {
		node = ohc_rt_device_numa_node(s->dev);
		if (numa_run_on_node(node) != 0)
			OHC_DEBUG(OHC_SS_RT,
				  "stream worker of device %d: cannot run on "
				  "numa node %d: %s",
				  s->dev, node, strerror(errno));
	}

	pthread_mutex_lock(&s->lock);
	for (;;) {
		if (!s->busy && !s->head && !s->closing && idle_yield(s))
			continue;
		/* a synchronizing thread may hold the token (busy) */
		while (s->busy || (!s->head && !s->closing)) {
			s->worker_waits = true;
			pthread_cond_wait(&s->work_cond, &s->lock);
			s->worker_waits = false;
		}
		if (!s->head)
			break;
		run_head_locked(s);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

aclError ohc_rt_stream_create(int dev, uint32_t flags, bool is_default,
			      struct ohc_rt_stream **s_p)
{
	struct ohc_rt_stream *s;
	sigset_t all, old;
	int rc;

	s = calloc(1, sizeof(*s));
	if (!s)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "stream of device %d: out of memory", dev);
	s->dev = dev;
	s->wake_at = UINT64_MAX;
	s->stuck_at = UINT64_MAX;
	s->caller_runs = ohc_env()->sync_runs_tasks != 0;
	s->flags = flags;
	s->sync_noop = (flags & SYNC_NOOP_FLAGS) != 0;
	s->is_default = is_default;
	s->prof_id = __atomic_add_fetch(&stream_prof_ids, 1, __ATOMIC_RELAXED);
	atomic_init(&s->refs, 1);
	atomic_init(&s->abort, false);
	ohc_list_init(&s->dev_node);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->work_cond, NULL);
	ohc_rt_cond_init(&s->done_cond);

	/* Workers take no asynchronous signals: those belong to the app. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&s->thread, NULL, stream_worker, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_cond_destroy(&s->done_cond);
		pthread_cond_destroy(&s->work_cond);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return OHC_RT_FAIL(ACL_ERROR_RT_NO_STREAM_RESOURCE,
				   "stream of device %d: pthread_create: %s",
				   dev, strerror(rc));
	}
	*s_p = s;
	return ACL_SUCCESS;
}

void ohc_rt_stream_put(struct ohc_rt_stream *s)
{
	struct ohc_rt_task *t;

	if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	/* Last reference: the worker was joined and the queue is empty. */
	while ((t = s->head)) {
		s->head = t->next;
		if (t->release)
			t->release(t);
	}
	pthread_cond_destroy(&s->done_cond);
	pthread_cond_destroy(&s->work_cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void ohc_rt_stream_shutdown(struct ohc_rt_stream *s, bool force)
{
	if (!s->is_default) {
		pthread_mutex_lock(&ohc_rt_reg_lock);
		ohc_rt_reg_del_locked(&s->super);
		__atomic_fetch_add(&stream_gen, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&ohc_rt_reg_lock);
	}
	pthread_mutex_lock(&s->lock);
	s->closing = true;
	if (force)
		atomic_store(&s->abort, true);
	pthread_cond_signal(&s->work_cond);
	pthread_mutex_unlock(&s->lock);
	if (force)
		ohc_rt_event_kick();

	if (pthread_equal(pthread_self(), s->thread)) {
		/* A task tore down its own stream: the worker exits after
		 * this task; it cannot join itself, so the object stays. */
		OHC_ERROR(OHC_SS_RT,
			  "device %d stream %p destroyed from its "
			  "own worker; the stream object is leaked",
			  s->dev, (void *)s);
		pthread_detach(s->thread);
		return;
	}
	pthread_join(s->thread, NULL);
	ohc_rt_stream_put(s);
}

aclError ohc_rt_stream_get(aclrtStream handle, struct ohc_rt_stream **s_p)
{
	struct ohc_rt_device *d;
	struct ohc_rt_stream *s = NULL;
	struct ohc_rt_obj *o;
	aclError ret;

	if (!handle) {
		d = ohc_rt_device_current();
		if (!d)
			return OHC_RT_FAIL(ACL_ERROR_RT_CONTEXT_NULL,
					   "NULL stream (the default stream) "
					   "used without a device set on this "
					   "thread");
		pthread_mutex_lock(&d->lock);
		if (!d->default_stream) {
			ret = ohc_rt_stream_create(d->id, 0, true,
						   &d->default_stream);
			if (ret) {
				pthread_mutex_unlock(&d->lock);
				return ret;
			}
		}
		s = d->default_stream;
		atomic_fetch_add(&s->refs, 1);
		pthread_mutex_unlock(&d->lock);
		*s_p = s;
		return ACL_SUCCESS;
	}
	pthread_mutex_lock(&ohc_rt_reg_lock);
	o = ohc_rt_reg_find_locked(handle, OHC_RT_KIND_STREAM);
	if (o) {
		s = ohc_derived_of(o, struct ohc_rt_stream);
		atomic_fetch_add(&s->refs, 1);
	}
	pthread_mutex_unlock(&ohc_rt_reg_lock);
	if (!s)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "stream %p is not a live stream", handle);
	*s_p = s;
	return ACL_SUCCESS;
}

/*
 * Bounded depth. A thread that enqueues faster than the stream drains
 * (hccl_test enqueues all its iterations, then synchronizes) waits once
 * STREAM_DEPTH_MAX tasks are queued until half of them are done, as a
 * device's launch queue blocks when full: what is queued stays within the
 * communicator's pool of op descriptors (OP_POOL_MAX, comm_oppool.c), and the
 * memory of a queue that never drains stays bounded. Unbounded, 100000
 * queued 8-byte AllReduces took 0.74-1.29 us each (a page fault per 14
 * calloc'd descriptors past the pool), bounded 0.53-0.82. A depth of 1024
 * was tried: the enqueuing thread then wakes every 512 ops and preempts
 * the worker it shares a CPU with (hccl_test -np binds), which the peer
 * waits out: 0.30-0.43 us per op against 0.19-0.27 unbounded (20000
 * iterations, interleaved runs).
 *
 * A queue can also be full because its head waits for something only
 * this thread would enqueue later (an event it records on another
 * stream, or, with ranks as threads, the matching op of another rank it
 * drives). So the wait ends when the stream makes no progress for
 * STREAM_STUCK_NS: the stream is then unbounded until it moves again.
 */
#define STREAM_DEPTH_MAX 16384
#define STREAM_STUCK_NS 1000000000ull /* 1 s: long past a busy CPU's wait */

static int wait_done_locked(struct ohc_rt_stream *s, uint64_t target,
			    uint64_t deadline);

/* s->lock held; may release it while waiting */
static void throttle_locked(struct ohc_rt_stream *s)
{
	uint64_t seen = s->done_seq;

	if (s->enq_seq - s->done_seq < STREAM_DEPTH_MAX ||
	    s->done_seq == s->stuck_at ||
	    pthread_equal(pthread_self(), s->thread))
		return;
	while (wait_done_locked(s, s->enq_seq - STREAM_DEPTH_MAX / 2,
				ohc_time_ns() + STREAM_STUCK_NS)) {
		if (s->done_seq == seen) {
			s->stuck_at = seen;
			OHC_DEBUG(
				OHC_SS_RT,
				"stream %p: %llu tasks queued and none "
				"done in %llu ms; queueing past %d",
				(void *)s,
				(unsigned long long)(s->enq_seq - s->done_seq),
				STREAM_STUCK_NS / 1000000ull, STREAM_DEPTH_MAX);
			return;
		}
		seen = s->done_seq;
	}
}

aclError ohc_rt_stream_push(struct ohc_rt_stream *s, struct ohc_rt_task *task,
			    uint64_t *seq_p)
{
	task->enq_ns = OHC_UNLIKELY(ohc_rt_prof_on()) ? ohc_time_ns() : 0;
	pthread_mutex_lock(&s->lock);
	throttle_locked(s);
	if (s->closing) {
		pthread_mutex_unlock(&s->lock);
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "stream %p is being destroyed; task %s "
				   "refused",
				   (void *)s, task->name ? task->name : "?");
	}
	task->next = NULL;
	if (s->tail)
		s->tail->next = task;
	else
		s->head = task;
	s->tail = task;
	s->enq_seq++;
	if (seq_p)
		*seq_p = s->enq_seq;
	if (s->worker_waits) /* else it looks at the queue before waiting */
		pthread_cond_signal(&s->work_cond);
	pthread_mutex_unlock(&s->lock);
	return ACL_SUCCESS;
}

/*
 * Wait (s->lock held) until done_seq reaches target; -1 at the deadline.
 * The worker wakes waiters only once done_seq passes the lowest target
 * (wake_at), not after every task.
 */
static int wait_done_locked(struct ohc_rt_stream *s, uint64_t target,
			    uint64_t deadline)
{
	while (s->done_seq < target) {
		if (target < s->wake_at)
			s->wake_at = target;
		if (ohc_rt_cond_wait(&s->done_cond, &s->lock, deadline))
			return -1;
	}
	return 0;
}

int ohc_rt_stream_wait_seq(struct ohc_rt_stream *s, uint64_t seq,
			   uint64_t deadline)
{
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	ret = wait_done_locked(s, seq, deadline);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

aclError ohc_rt_stream_sync(struct ohc_rt_stream *s, int32_t timeout_ms)
{
	uint64_t deadline = ohc_rt_deadline_ms(timeout_ms);
	aclError err = ACL_SUCCESS;

	if (s->sync_noop)
		return ACL_SUCCESS;
	if (pthread_equal(pthread_self(), s->thread))
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "stream %p synchronized from its own "
				   "worker (would deadlock)",
				   (void *)s);
	pthread_mutex_lock(&s->lock);
	uint64_t target = s->enq_seq;

	/*
	 * Caller runs: an unbounded synchronize would only sleep while the
	 * worker drains the queue, so while the worker is idle it runs the
	 * queued tasks itself. For short operations this saves two thread
	 * hand-offs (worker wake-up, synchronizer wake-up) per task.
	 */
	if (deadline == OHC_DEADLINE_NEVER && s->caller_runs) {
		while (s->done_seq < target && s->head && !s->busy)
			run_head_locked(s);
		/* tasks queued after ours, or a destroy, need the worker */
		if (s->head || s->closing)
			pthread_cond_signal(&s->work_cond);
	}
	if (wait_done_locked(s, target, deadline)) {
		uint64_t done = s->done_seq;

		pthread_mutex_unlock(&s->lock);
		OHC_DEBUG(OHC_SS_RT,
			  "stream %p: synchronize timed out after %d ms (%llu "
			  "of %llu tasks done)",
			  (void *)s, (int)timeout_ms, (unsigned long long)done,
			  (unsigned long long)target);
		ohc_rt_set_errmsg("stream synchronize timed out after %d ms",
				  (int)timeout_ms);
		return ACL_ERROR_RT_STREAM_SYNC_TIMEOUT;
	}
	/* The error is reported once; a stopped stream runs tasks again. */
	err = s->error;
	s->error = 0;
	s->stopped = false;
	pthread_mutex_unlock(&s->lock);
	return err;
}

/* ---- private interface ---- */

OHC_API int ohc_rt_stream_submit(void *stream, struct ohc_rt_task *task)
{
	struct ohc_rt_stream *s;
	uint64_t gen;
	aclError ret;

	if (!stream || !task || !task->run)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "ohc_rt_stream_submit: NULL %s",
				   !stream ? "stream"
				   : !task ? "task"
					   : "task->run");
	/*
	 * Every collective enqueues here: a stream this thread found live
	 * (the API checked it just before) takes no registry lock and no
	 * reference, 4 atomic operations of the ~10 an enqueue cost (8-byte
	 * AllReduce enqueue: 0.085 -> 0.064 us). As with any stream call, the
	 * stream must not be destroyed while the call runs; one destroyed
	 * before it changed the generation and takes the checked path.
	 */
	s = stream_cached(stream);
	if (s)
		return ohc_rt_stream_push(s, task, NULL);
	gen = __atomic_load_n(&stream_gen, __ATOMIC_ACQUIRE);
	ret = ohc_rt_stream_get(stream, &s);
	if (ret)
		return ret;
	valid_handle = stream; /* a registered stream: never the default */
	valid_gen = gen;
	ret = ohc_rt_stream_push(s, task, NULL);
	ohc_rt_stream_put(s);
	return ret;
}

OHC_API int ohc_rt_stream_open(int dev, void **stream_p)
{
	struct ohc_rt_stream *s;
	aclError ret;

	if (!stream_p)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "ohc_rt_stream_open: stream_p is NULL");
	if (dev < 0 || dev >= ohc_rt_device_count())
		dev = 0; /* only its NUMA node depends on it */
	ret = ohc_rt_stream_create(dev, 0, false, &s);
	if (ret)
		return ret;
	pthread_mutex_lock(&ohc_rt_reg_lock);
	ohc_rt_reg_add_locked(&s->super, OHC_RT_KIND_STREAM);
	pthread_mutex_unlock(&ohc_rt_reg_lock);
	*stream_p = s;
	return ACL_SUCCESS;
}

OHC_API void ohc_rt_stream_close(void *stream)
{
	struct ohc_rt_stream *s;

	if (!stream || ohc_rt_stream_get(stream, &s))
		return;
	ohc_rt_stream_shutdown(s, false);
	ohc_rt_stream_put(s);
}

OHC_API int ohc_rt_stream_valid(void *stream)
{
	uint64_t gen;
	int ok;

	if (!stream)
		return 0;
	if (stream_cached(stream))
		return 1;
	pthread_mutex_lock(&ohc_rt_reg_lock);
	gen = __atomic_load_n(&stream_gen, __ATOMIC_RELAXED);
	ok = ohc_rt_reg_find_locked(stream, OHC_RT_KIND_STREAM) != NULL;
	pthread_mutex_unlock(&ohc_rt_reg_lock);
	if (ok) {
		valid_handle = stream;
		valid_gen = gen;
	}
	return ok;
}

/* ---- acl* ---- */

OHC_API aclError aclrtCreateStreamWithConfig(aclrtStream *stream,
					     uint32_t priority, uint32_t flag)
{
	struct ohc_rt_device *d;
	struct ohc_rt_stream *s;
	aclError ret;

	if (!stream)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtCreateStream: stream is NULL");
	if (priority > 7)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtCreateStreamWithConfig: priority %u "
				   "outside 0..7",
				   priority);
	d = ohc_rt_device_current();
	if (!d)
		return OHC_RT_FAIL(ACL_ERROR_RT_CONTEXT_NULL,
				   "aclrtCreateStream: no device set on this "
				   "thread (call aclrtSetDevice first)");
	ret = ohc_rt_stream_create(d->id, flag, false, &s);
	if (ret)
		return ret;
	pthread_mutex_lock(&d->lock);
	pthread_mutex_lock(&ohc_rt_reg_lock);
	ohc_rt_reg_add_locked(&s->super, OHC_RT_KIND_STREAM);
	pthread_mutex_unlock(&ohc_rt_reg_lock);
	ohc_list_add_tail(&d->streams, &s->dev_node);
	pthread_mutex_unlock(&d->lock);
	*stream = s;
	return ACL_SUCCESS;
}

OHC_API aclError aclrtCreateStream(aclrtStream *stream)
{
	return aclrtCreateStreamWithConfig(stream, 0, 0);
}

static aclError destroy_stream(const char *fn, aclrtStream stream, bool force)
{
	struct ohc_rt_device *d;
	struct ohc_rt_stream *s;
	bool owned = false;
	aclError ret;

	if (!stream)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: stream is NULL", fn);
	ret = ohc_rt_stream_get(stream, &s);
	if (ret)
		return ret;
	if (pthread_equal(pthread_self(), s->thread)) {
		ohc_rt_stream_put(s);
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: stream %p destroyed from its own "
				   "worker",
				   fn, stream);
	}
	/* Whoever unlinks the stream from its device shuts it down. */
	d = ohc_rt_device_get(s->dev);
	pthread_mutex_lock(&d->lock);
	if (!ohc_list_empty(&s->dev_node)) {
		ohc_list_del(&s->dev_node);
		owned = true;
	}
	pthread_mutex_unlock(&d->lock);
	if (!owned) {
		ohc_rt_stream_put(s);
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "%s: stream %p is already being destroyed",
				   fn, stream);
	}
	ohc_rt_stream_shutdown(s, force);
	ohc_rt_stream_put(s);
	return ACL_SUCCESS;
}

/* Waits for the stream's pending work, then joins its worker. */
OHC_API aclError aclrtDestroyStream(aclrtStream stream)
{
	return destroy_stream("aclrtDestroyStream", stream, false);
}

/* Skips queued tasks (their release still runs) and ends event waits. */
OHC_API aclError aclrtDestroyStreamForce(aclrtStream stream)
{
	return destroy_stream("aclrtDestroyStreamForce", stream, true);
}

OHC_API aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode)
{
	struct ohc_rt_stream *s;
	aclError ret;

	if (mode != ACL_CONTINUE_ON_FAILURE && mode != ACL_STOP_ON_FAILURE)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtSetStreamFailureMode: mode %llu is "
				   "neither CONTINUE (0) nor STOP (1)",
				   (unsigned long long)mode);
	ret = ohc_rt_stream_get(stream, &s);
	if (ret)
		return ret;
	pthread_mutex_lock(&s->lock);
	s->stop_on_failure = mode == ACL_STOP_ON_FAILURE;
	pthread_mutex_unlock(&s->lock);
	ohc_rt_stream_put(s);
	return ACL_SUCCESS;
}

OHC_API aclError aclrtSynchronizeStream(aclrtStream stream)
{
	struct ohc_rt_stream *s;
	aclError ret;

	ret = ohc_rt_stream_get(stream, &s);
	if (ret)
		return ret;
	ret = ohc_rt_stream_sync(s, -1);
	ohc_rt_stream_put(s);
	return ret;
}

OHC_API aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream,
						   int32_t timeout)
{
	struct ohc_rt_stream *s;
	aclError ret;

	if (timeout < -1)
		return OHC_RT_FAIL(ACL_ERROR_RT_PARAM_INVALID,
				   "aclrtSynchronizeStreamWithTimeout: timeout "
				   "%d ms (must be -1, 0 or positive)",
				   (int)timeout);
	ret = ohc_rt_stream_get(stream, &s);
	if (ret)
		return ret;
	ret = ohc_rt_stream_sync(s, timeout);
	ohc_rt_stream_put(s);
	return ret;
}

OHC_API aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status)
{
	struct ohc_rt_stream *s;
	aclError ret;

	if (!status)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtStreamQuery: status is NULL");
	ret = ohc_rt_stream_get(stream, &s);
	if (ret)
		return ret;
	pthread_mutex_lock(&s->lock);
	*status = s->done_seq == s->enq_seq ? ACL_STREAM_STATUS_COMPLETE
					    : ACL_STREAM_STATUS_NOT_READY;
	pthread_mutex_unlock(&s->lock);
	ohc_rt_stream_put(s);
	return ACL_SUCCESS;
}
