/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_RUNTIME_RT_INTERNAL_H
#define OHC_RUNTIME_RT_INTERNAL_H

/*
 * Internals of libascendcl shared by the rt_*.c files. Functions here
 * return aclError codes (0 = success) because every one of them produces
 * the result of an acl* call; the error is logged once where detected
 * (OHC_RT_FAIL) and callers propagate it unchanged.
 *
 * Lock order (outer to inner): device lock (or the device table lock) ->
 * registry lock -> stream lock, and event lock (rt_event.c) -> stream lock
 * (a record is numbered and queued atomically). Stream workers run tasks
 * without holding any lock. The VMM and memory locks are leaves; so is the
 * profiler's session lock (rt_prof.c), taken inside the init lock.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"
#include "runtime/ohc_rt.h"
#include "util/compiler.h"
#include "util/list.h"
#include "util/log.h"
#include "util/time.h"

/* Record msg as this thread's aclGetRecentErrMsg() text. */
void ohc_rt_set_errmsg(const char *fmt, ...) OHC_PRINTF(1, 2);

/* Log one error line (subsystem rt), remember it for aclGetRecentErrMsg()
 * and evaluate to code. */
#define OHC_RT_FAIL(code, ...)                                                 \
	({                                                                     \
		OHC_ERROR(OHC_SS_RT, __VA_ARGS__);                             \
		ohc_rt_set_errmsg(__VA_ARGS__);                                \
		(aclError)(code);                                              \
	})

/* Deadline of a timeout argument in ms: -1 forever, 0 poll once. */
static inline uint64_t ohc_rt_deadline_ms(int32_t ms)
{
	if (ms < 0)
		return OHC_DEADLINE_NEVER;
	return ohc_time_ns() + (uint64_t)ms * 1000000ull;
}

/* Absolute CLOCK_MONOTONIC timespec of a deadline (for timed waits on
 * condition variables created with ohc_rt_cond_init). */
static inline struct timespec ohc_rt_deadline_ts(uint64_t deadline)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(deadline / 1000000000ull);
	ts.tv_nsec = (long)(deadline % 1000000000ull);
	return ts;
}

/* Condition variable on CLOCK_MONOTONIC. */
static inline void ohc_rt_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

/*
 * Wait on c (mutex m held) until woken or deadline passes. Returns 0 when
 * woken (maybe spuriously), -1 when the deadline has passed.
 */
static inline int ohc_rt_cond_wait(pthread_cond_t *c, pthread_mutex_t *m,
				   uint64_t deadline)
{
	struct timespec ts;

	if (deadline == OHC_DEADLINE_NEVER) {
		pthread_cond_wait(c, m);
		return 0;
	}
	if (ohc_time_ns() >= deadline)
		return -1;
	ts = ohc_rt_deadline_ts(deadline);
	pthread_cond_timedwait(c, m, &ts);
	return 0;
}

/* ---- handle registry (rt_init.c) ---- */

/*
 * Every handle the runtime gives out (stream, event, context)
 * embeds a struct ohc_rt_obj and is registered by address,
 * so that a stale or foreign handle is refused instead of dereferenced.
 */
enum ohc_rt_kind {
	OHC_RT_KIND_STREAM = 1,
	OHC_RT_KIND_EVENT,
	OHC_RT_KIND_CONTEXT,
};

struct ohc_rt_obj {
	struct ohc_rt_obj *hnext; /* registry bucket chain */
	enum ohc_rt_kind kind;
};

/* The registry lock; hold it across find + taking a reference. */
extern pthread_mutex_t ohc_rt_reg_lock;

/* Caller holds ohc_rt_reg_lock. Add never fails (chained buckets). */
void ohc_rt_reg_add_locked(struct ohc_rt_obj *obj, enum ohc_rt_kind kind);
/* Caller holds ohc_rt_reg_lock. The object at handle if it is of kind. */
struct ohc_rt_obj *ohc_rt_reg_find_locked(const void *handle,
					  enum ohc_rt_kind kind);
/* Caller holds ohc_rt_reg_lock; obj must be registered. */
void ohc_rt_reg_del_locked(struct ohc_rt_obj *obj);

/* ---- devices (rt_device.c) ---- */

struct ohc_rt_stream;

struct ohc_rt_context {
	struct ohc_rt_obj super; /* registered only for created contexts */
	int dev;
	bool is_default;
};

struct ohc_rt_device {
	pthread_mutex_t lock;
	int id;
	atomic_int refs;		      /* aclrtSetDevice count */
	struct ohc_rt_stream *default_stream; /* lazily created; lock */
	struct ohc_list streams;	      /* created streams; lock */
	aclrtFloatOverflowMode sat_mode;      /* lock */
	struct ohc_rt_context default_ctx;
};

/* Number of logical devices (fixed at first use). */
int ohc_rt_device_count(void);
/* Device object of a valid id (created on first use), NULL on OOM. */
struct ohc_rt_device *ohc_rt_device_get(int dev);
/*
 * The calling thread's current device object, or NULL when no device is
 * set (or it was reset to zero references). Does not log.
 */
struct ohc_rt_device *ohc_rt_device_current(void);
/* Reset every device to zero references, destroying its streams. */
void ohc_rt_device_reset_all(void);
/* The NUMA node policy for memory of the calling thread: its device's
 * node, or -1 when no device is set. */
int ohc_rt_current_numa_node(void);
/* 1 if libnuma is usable in this process. */
bool ohc_rt_numa_usable(void);
/* Number of NUMA nodes the runtime spreads devices over (>= 1). */
int ohc_rt_numa_node_count(void);

/* ---- streams (rt_stream.c) ---- */

struct ohc_rt_stream {
	struct ohc_rt_obj super;
	struct ohc_list dev_node; /* device->streams; device lock */
	int dev;
	uint32_t flags;
	bool sync_noop; /* PERSISTENT, DEVICE_USE_ONLY, CPU_SCHEDULE */
	bool is_default;
	atomic_int refs;   /* creation reference + one per ohc_rt_stream_get */
	atomic_bool abort; /* force destroy: skip queued tasks, end waits */

	pthread_mutex_t lock;
	pthread_cond_t work_cond;	 /* worker: tasks queued or closing */
	pthread_cond_t done_cond;	 /* waiters: done_seq advanced */
	struct ohc_rt_task *head, *tail; /* FIFO; lock */
	uint64_t enq_seq;		 /* tasks enqueued so far; lock */
	uint64_t done_seq;    /* tasks finished (run or skipped); lock */
	uint64_t wake_at;     /* lowest done_seq a waiter needs; lock */
	uint64_t stuck_at;    /* done_seq when found stuck full; lock */
	int error;	      /* first error since the last synchronize; lock */
	bool stopped;	      /* STOP_ON_FAILURE tripped; lock */
	bool stop_on_failure; /* lock */
	bool closing; /* no new tasks; worker exits when drained; lock */
	bool busy;    /* a task runs (worker or synchronizer); lock */
	bool worker_waits; /* the worker sleeps on work_cond; lock */
	bool caller_runs; /* synchronize runs queued tasks itself */
	uint32_t prof_id;  /* the stream's lane in profiles, unique, >= 1 */
	pthread_t thread;
};

/*
 * Resolve an aclrtStream (NULL = current device's default stream, created
 * on first use) to a stream with a reference held. Logs and returns an
 * error for an unknown handle (100000) or a NULL stream without a current
 * device (107002).
 */
aclError ohc_rt_stream_get(aclrtStream handle, struct ohc_rt_stream **s_p);
void ohc_rt_stream_put(struct ohc_rt_stream *s);
/* Create a stream of device dev; the creation reference is returned. */
aclError ohc_rt_stream_create(int dev, uint32_t flags, bool is_default,
			      struct ohc_rt_stream **s_p);
/*
 * Stop a stream that is no longer reachable by handle: wait for its queued
 * work (or, with force, skip it and end event waits), join the worker and
 * drop the creation reference.
 */
void ohc_rt_stream_shutdown(struct ohc_rt_stream *s, bool force);
/* Enqueue on a stream the caller holds a reference to; never blocks on
 * progress. On success seq_p (may be NULL) receives the task's position. */
aclError ohc_rt_stream_push(struct ohc_rt_stream *s, struct ohc_rt_task *task,
			    uint64_t *seq_p);
/*
 * Wait until the first seq tasks finished or deadline (ohc_time_ns() value,
 * OHC_DEADLINE_NEVER) passes. 0 when done, else -1 (timeout). Does not
 * touch the stream error.
 */
int ohc_rt_stream_wait_seq(struct ohc_rt_stream *s, uint64_t seq,
			   uint64_t deadline);
/* Synchronize: wait for everything enqueued so far, then return and clear
 * the first error. Timeout in ms (-1 forever). */
aclError ohc_rt_stream_sync(struct ohc_rt_stream *s, int32_t timeout_ms);

/* ---- profiling (rt_prof.c) ---- */

/*
 * Run task t of stream stream_id on device dev and record it (only while
 * ohc_rt_prof_on()); returns what t->run returned.
 */
int ohc_rt_prof_run(struct ohc_rt_task *t, uint32_t stream_id, int dev);
/* OPENHCCL_PROFILE's session: started by the first aclInit, stopped (its
 * trace written) by aclFinalize. No-ops when the variable is unset. */
void ohc_rt_prof_env_begin(void);
void ohc_rt_prof_env_end(void);

/*
 * The recorder's buffers and sessions (rt_prof.c: the protocol between
 * the threads appending records and a stop reading them), read by the
 * trace writer (rt_prof_trace.c).
 */
/* 4096 records of 128 bytes: 512 KiB, mapped with its pages populated */
#define OHC_RT_PROF_CHUNK_RECS 4096u
/* Per thread and session span: 1 Mi records (128 MiB); later ones are
 * counted as dropped and reported. */
#define OHC_RT_PROF_THREAD_MAX (1024u * 1024u)

struct ohc_rt_prof_chunk {
	/* atomic: set once by the owner (release) */
	struct ohc_rt_prof_chunk *next;
	uint32_t n; /* atomic: published records (release) */
	struct ohc_rt_prof_rec recs[OHC_RT_PROF_CHUNK_RECS]
		__attribute__((aligned(64)));
};

/* One thread's records. */
struct ohc_rt_prof_buf {
	struct ohc_rt_prof_buf *next;	/* every buffer; sess_lock */
	struct ohc_rt_prof_chunk *head; /* atomic: set by the owner (release) */
	struct ohc_rt_prof_chunk *tail; /* owner (and a quiesced reset) */
	struct ohc_rt_prof_chunk *spare; /* owner (and a quiesced reset) */
	uint64_t nrecs;			 /* owner (and a quiesced reset) */
	uint64_t dropped;		 /* atomic: owner adds, stop reads */
	int writing; /* atomic: the owner is inside an append */
	bool orphan; /* its thread exited; sess_lock */
};

struct ohc_rt_prof_session {
	int id;			/* 0: free slot */
	bool env;		/* OPENHCCL_PROFILE's */
	char *dir;		/* where the trace goes */
	uint8_t *devs;		/* device bitmap; NULL: every device */
	uint32_t kinds;		/* enum ohc_rt_prof_kind mask */
	uint64_t start_ns;	/* CLOCK_MONOTONIC at start */
	uint64_t start_real_ns; /* CLOCK_REALTIME at start */
};

/*
 * rt_prof_trace.c: write session s's trace from the records in the list
 * of buffers bufs (the session lock held); the file's path into path_p
 * (path_len bytes, may be NULL). 0 or an aclError (logged).
 */
int ohc_rt_prof_write_locked(const struct ohc_rt_prof_session *s,
			     const struct ohc_rt_prof_buf *bufs, char *path_p,
			     size_t path_len);

/* ---- events (rt_event.c) ---- */

/* Wake every event waiter so it re-checks its stream's abort flag. */
void ohc_rt_event_kick(void);

/* ---- memory (rt_memory.c) ---- */

/* 1 if [ptr, ptr+len) lies in one aclrtMalloc/MallocHost allocation or one
 * VMM mapping (memory an async copy may use after the call returns). */
bool ohc_rt_mem_is_pinned(const void *ptr, size_t len);
/* Apply a preferred-node policy to [addr, addr+len); no-op without NUMA. */
void ohc_rt_mem_bind(void *addr, size_t len, int node);

/* ---- VMM (rt_vmm.c) ---- */

bool ohc_rt_vmm_is_mapped(const void *ptr, size_t len);

#endif
