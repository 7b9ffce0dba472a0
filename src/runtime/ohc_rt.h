/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_RUNTIME_OHC_RT_H
#define OHC_RUNTIME_OHC_RT_H

/*
 * The private interface libascendcl offers libhccl (exported from
 * libascendcl.so in the OHC_PRIVATE version node, never installed).
 * libhccl enqueues its operations on an aclrtStream through it and asks
 * for the NUMA node and VMM facts of memory the runtime handed out.
 */
#include <stddef.h>
#include <stdint.h>

#include "util/compiler.h"

struct ohc_rt_task;

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

struct ohc_rt_task {
	ohc_rt_task_run_fn run;
	ohc_rt_task_release_fn release;
	const char *name;          /* for profiling/logs, static string */
	struct ohc_rt_task *next;  /* owned by the runtime while queued */
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

#endif
