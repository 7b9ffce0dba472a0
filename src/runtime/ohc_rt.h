/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_RUNTIME_OHC_RT_H
#define OHC_RUNTIME_OHC_RT_H

/*
 * The private interface libascendcl offers libhccl and libmsprofiler
 * (exported from libascendcl.so in the OHC_PRIVATE version node, never
 * installed). libhccl enqueues its operations on an aclrtStream through
 * it, asks for the NUMA node and VMM facts of memory the runtime handed
 * out, and describes its operations to the profile recorder;
 * libmsprofiler starts and stops profile sessions.
 */
#include <stddef.h>
#include <stdint.h>

#include "util/compiler.h"

struct ohc_rt_task;
struct ohc_rt_prof_rec;

/* aclError values a task may return (the numbers of acl's constants). */
#define OHC_RT_ERR_PARAM 107000        /* ACL_ERROR_RT_PARAM_INVALID */
#define OHC_RT_ERR_TASK_TIMEOUT 107020 /* ACL_ERROR_RT_TASK_TIMEOUT */
#define OHC_RT_ERR_INTERNAL 507000     /* ACL_ERROR_RT_INTERNAL_ERROR */
#define OHC_RT_ERR_LINK 507056         /* ACL_ERROR_RT_LINK_ERROR */

/*
 * Runs on the stream's worker thread, in stream order. Returns 0 (success)
 * or an aclError; a non-zero return becomes the error that the next
 * aclrtSynchronizeStream of that stream reports (the first one wins), and
 * with ACL_STOP_ON_FAILURE later tasks are skipped (release still runs).
 */
typedef int (*ohc_rt_task_run_fn)(struct ohc_rt_task *task);
/* Always called exactly once, after run (or instead of it when skipped). */
typedef void (*ohc_rt_task_release_fn)(struct ohc_rt_task *task);
/*
 * Optional, called only while a profile records: after run and before
 * release, on the thread that ran the task, to add what the task's owner
 * knows (kind, name, bytes, communicator, ...) to rec, whose times,
 * stream, device, thread and status the runtime has filled.
 */
typedef void (*ohc_rt_task_describe_fn)(const struct ohc_rt_task *task,
					struct ohc_rt_prof_rec *rec);

struct ohc_rt_task {
	ohc_rt_task_run_fn run;
	ohc_rt_task_release_fn release;
	ohc_rt_task_describe_fn describe; /* NULL: name and times only */
	const char *name;          /* for profiling/logs, static string */
	struct ohc_rt_task *next;  /* owned by the runtime while queued */
	uint64_t enq_ns; /* set by the runtime at enqueue while profiling */
};

/*
 * Enqueue task on stream (never NULL here: callers run NULL-stream work
 * inline). Never blocks on the stream's progress. Returns 0 or an aclError
 * (ACL_ERROR_INVALID_PARAM for an unknown or destroyed stream); on error
 * the task was not queued and release was not called.
 */
OHC_API int ohc_rt_stream_submit(void *stream, struct ohc_rt_task *task);

/*
 * A stream for libhccl's own use (a task context's, comm/task.c): a live
 * stream handle like aclrtCreateStream's, whose worker prefers device
 * dev's NUMA node, but created without a current device and on no
 * device's list, so aclrtResetDevice and aclFinalize leave it alone.
 * Returns 0 or an aclError (logged).
 */
OHC_API int ohc_rt_stream_open(int dev, void **stream_p);
/*
 * Close a stream of ohc_rt_stream_open: its queued tasks run first, then
 * its worker is joined and it is freed. Not from its own worker.
 */
OHC_API void ohc_rt_stream_close(void *stream);

/* 1 if stream is a live stream handle of this runtime, else 0. */
OHC_API int ohc_rt_stream_valid(void *stream);

/* The calling thread's current logical device, or -1 if none is set. */
OHC_API int ohc_rt_current_device(void);

/* NUMA node serving logical device dev (round robin over nodes), >= 0. */
OHC_API int ohc_rt_device_numa_node(int dev);

/*
 * VMM lookup: if [ptr, ptr+len) lies inside one aclrtMapMem mapping, write
 * the backing memfd (owned by the runtime; dup it to keep it), the byte
 * offset of ptr inside that physical allocation, and the mapping's start
 * and size, and return 0. Otherwise return -1.
 */
OHC_API int ohc_rt_vmm_lookup(const void *ptr, size_t len, int *fd_p,
			      size_t *offset_p, void **map_base_p,
			      size_t *map_size_p);

/* Everything the VMM knows about the mapping that holds an address. */
struct ohc_rt_vmm_info {
	int fd;            /* backing memfd, owned by the runtime (dup it) */
	size_t offset;     /* byte offset of the address in the allocation */
	void *map_base;    /* the aclrtMapMem address of the mapping */
	size_t map_size;   /* bytes of the mapping (= the allocation) */
	void *handle;      /* the aclrtDrvMemHandle mapped there */
	size_t gran;       /* allocation granularity of the handle */
	uint64_t map_id;   /* unique per aclrtMapMem call, never reused */
};

/*
 * Like ohc_rt_vmm_lookup, with the handle, granularity and the identity
 * of the mapping (a later unmap + map at the same place has another
 * map_id, so a cache keyed by it notices). 0, or -1 if not mapped.
 */
OHC_API int ohc_rt_vmm_info(const void *ptr, size_t len,
			    struct ohc_rt_vmm_info *info_p);

/* A shared device allocation (aclrtMalloc of OPENHCCL_MALLOC_SHARED_KB+). */
struct ohc_rt_mem_info {
	int fd;		 /* its memfd, owned by the runtime until freed */
	size_t offset;	 /* of the address in the allocation */
	size_t size;	 /* bytes of the allocation (= the memfd) */
	uint64_t id;	 /* unique per allocation, never reused */
};

/*
 * What holds [ptr, ptr + len) if one shared allocation does: 0, else -1
 * (private or foreign memory).
 */
OHC_API int ohc_rt_mem_info(const void *ptr, size_t len,
			    struct ohc_rt_mem_info *info_p);

/* ---- profiling (rt_prof.c) ---- */

/*
 * Non-zero while at least one profile session records. The hot paths
 * (enqueue, a stream running a task, an HCCL operation run without a
 * stream) test it once through ohc_rt_prof_on(): with no profile
 * running that is one load and one predictable branch; everything else
 * of profiling sits behind it.
 */
extern OHC_API int ohc_rt_prof_active;

static inline int ohc_rt_prof_on(void)
{
	return __atomic_load_n(&ohc_rt_prof_active, __ATOMIC_RELAXED);
}

enum ohc_rt_prof_kind {
	OHC_RT_PROF_RUNTIME = 1, /* copies, memsets, event records/waits */
	OHC_RT_PROF_HCCL = 2,    /* HCCL operations */
};

#define OHC_RT_PROF_PEERS 8 /* peers listed per record */

/*
 * One recorded piece of work (128 bytes). Times are CLOCK_MONOTONIC
 * nanoseconds. Strings are never copied: they must live as long as the
 * process (literals, or ohc_rt_prof_intern).
 */
struct ohc_rt_prof_rec {
	const char *name; /* what ran */
	const char *algo; /* HCCL: algorithm that ran, or NULL */
	const char *comm; /* HCCL: communicator name (interned), or NULL */
	uint64_t enq_ns;  /* when it was enqueued; 0 = not known */
	uint64_t start_ns, end_ns;
	uint64_t bytes; /* HCCL: ohc_coll_bytes; runtime: bytes copied/set */
	uint64_t seq;   /* HCCL: the collective's number in its communicator */
	uint32_t stream_id; /* the stream's profile id; 0 = no stream */
	int32_t dev;	    /* device of the stream (or thread); -1 = none */
	uint32_t tid;	    /* thread that ran it */
	int32_t status;	    /* what the task returned (0 = success) */
	int32_t rank, nranks; /* HCCL: in the communicator; else -1, 0 */
	uint16_t kind;	      /* enum ohc_rt_prof_kind */
	uint16_t npeers;      /* ranks exchanged with (first ones in peers) */
	uint32_t peers[OHC_RT_PROF_PEERS];
};

/*
 * A copy of s that lives until the process ends (the same pointer for
 * equal strings), for names a record outlives (communicators). NULL when
 * out of memory. Takes a lock: call it once per name, not per record.
 */
OHC_API const char *ohc_rt_prof_intern(const char *s);

/*
 * Record work that ran without a stream (an HCCL operation on a NULL
 * stream, run by the calling thread). The runtime fills rec->tid, and
 * rec->dev with the thread's current device when it is negative. Only
 * while ohc_rt_prof_on(); lock-free (the thread's own buffer).
 */
OHC_API void ohc_rt_prof_record(struct ohc_rt_prof_rec *rec);

/*
 * Sessions, for libmsprofiler. Start recording the kinds (mask of enum
 * ohc_rt_prof_kind) of the ndevs devices in devs (ndevs 0: every device)
 * into directory dir; *id_p names the session. Returns 0, or an aclError:
 * ACL_ERROR_PROF_ALREADY_RUN when a running session records one of the
 * devices, ACL_ERROR_INVALID_PARAM for a bad device or argument.
 */
OHC_API int ohc_rt_prof_start(const char *dir, const uint32_t *devs,
			      uint32_t ndevs, uint32_t kinds, int *id_p);
/*
 * Stop session id and write its trace (path_p, path_len: the file written,
 * may be NULL). Returns 0, ACL_ERROR_PROF_NOT_RUN for an unknown id, or
 * ACL_ERROR_PROFILING_FAILURE when the file cannot be written (logged; the
 * session is stopped all the same).
 */
OHC_API int ohc_rt_prof_stop(int id, char *path_p, size_t path_len);
/* The session that ran devs (same set), or 0 if none runs. */
OHC_API int ohc_rt_prof_find(const uint32_t *devs, uint32_t ndevs);
/* 1 while OPENHCCL_PROFILE profiles the whole process (aclInit to
 * aclFinalize), else 0. */
OHC_API int ohc_rt_prof_env_session(void);
/* 1 between aclInit and aclFinalize, else 0. */
OHC_API int ohc_rt_initialized(void);
/* The number of logical devices (OPENHCCL_DEVICE_COUNT). */
OHC_API int ohc_rt_device_total(void);

#endif
