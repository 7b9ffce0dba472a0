/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_COMM_COMM_H
#define OHC_COMM_COMM_H

/*
 * A communicator: one rank's membership in a group, its transports and
 * endpoints, its configuration, and the queue discipline of its
 * operations. Created collectively from a bootstrap; destroyed locally.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "algo/algo.h"
#include "comm/bootstrap/bootstrap.h"
#include "comm/plan_cache.h"
#include "core/exec.h"
#include "core/flight.h"
#include "core/req.h"
#include "runtime/ohc_rt.h"
#include "core/tp.h"
#include "util/list.h"
#include "util/status.h"
#include "zerocopy/zc.h"

#define OHC_COMM_NAME_MAX 128
#define OHC_MAX_TRANSPORTS 4

/* Effective per-communicator configuration (config > env > default). */
struct ohc_comm_cfg {
	uint32_t buffsize_mb;
	int deterministic;	/* enum ohc_deterministic */
	int64_t exec_timeout_s; /* 0 = never */
	char name[OHC_COMM_NAME_MAX];
	char udi[128];
	uint32_t op_expansion_mode;
	uint32_t rdma_tc, rdma_sl;
	uint32_t world_rank_id;
	uint64_t job_id;
	uint8_t graph_zero_copy;
	char algo[1600];
	char buffer_name[128];
	uint32_t qos;
	uint64_t symwin_max_gb;
	uint32_t sq_depth;
	char device_ip[64]; /* the rank's RDMA IP (rank table), "" if none */
	char backup_ip[64]; /* its backup_device_ip (rank table), "" if none */
};

/* Fill c with the environment's values (and built-in defaults). */
void ohc_comm_cfg_default(struct ohc_comm_cfg *c);

/*
 * Process-wide deterministic setting (HcclSetConfig): -1 = not set. A set
 * value is the default of new communicators and is applied to all
 * existing ones.
 */
void ohc_comm_set_deterministic_all(int value);
int ohc_comm_get_deterministic_global(void);

struct ohc_comm {
	void *handle; /* the user's HcclComm (ohc_comm_lookup) */
	char name[OHC_COMM_NAME_MAX];
	const char *prof_name; /* atomic: name interned for profiles, lazily */
	uint32_t rank, nranks;
	int device; /* logical device at init, or -1 */
	struct ohc_comm_cfg cfg;
	struct ohc_bootstrap *bs;
	struct ohc_iface *ifaces[OHC_MAX_TRANSPORTS];
	unsigned nifaces;
	struct ohc_ep **eps;		/* per rank; NULL for ourselves */
	const struct ohc_transport_ops **ep_ops; /* transport per rank */
	enum ohc_link_class link_class; /* slowest link in use */
	uint32_t *host_of;		/* host index per rank; NULL: one */
	uint32_t nhosts;
	uint32_t host_ranks; /* ranks of the busiest host (selection) */
	uint32_t host_cpus;  /* rank 0's ohc_host_cpus(), broadcast */
	uint64_t spin_ns;   /* idle polling before sleeping */
	bool yield_first;   /* more local ranks than CPUs (ohc_wait_...) */
	uint32_t local_ranks; /* ranks of this host (comm_choose_spin) */
	uint64_t session;   /* transports' session token */
	uint8_t *on_backup; /* per rank: NIC switched; NULL: none */

	pthread_mutex_t lock;	   /* with idle_cond: waits for idle */
	pthread_cond_t idle_cond;  /* signalled when inflight hits 0 */
	unsigned idle_waiters;	   /* atomic: threads waiting for idle */
	pthread_mutex_t exec_lock; /* one operation executes at a time */
	uint64_t coll_seq;	   /* atomic: next collective seq */
	unsigned inflight;	   /* atomic: enqueued, not finished */

	int abort_flag;	 /* atomic: destroy/failure/suspend cancels */
	int suspended;	 /* atomic: HcclCommSuspend until resumed */
	int failed;	 /* atomic: sticky ohc_status_t (<0) */
	uint64_t refused; /* atomic: operations refused since (one line) */
	int async_error; /* atomic: sticky ohc_status_t (<0) */

	struct ohc_flight flight;    /* the last operations (core/flight.h) */
	struct ohc_list link;	     /* process registry */
	struct ohc_xfer_stats stats; /* bytes received per path (atomic) */
	struct ohc_plan_cache plans; /* recent schedules; exec_lock */
	void *spare;		     /* scratch kept for reuse; exec_lock */
	size_t spare_bytes;

	/*
	 * Spare ops without a tail, carved from slabs (comm_oppool.c) and
	 * recycled instead of calloc/free per op: a stack pushed lock-free
	 * by whoever finishes an op, which one submitter at a time
	 * (op_pool_taking) takes over whole into op_taken and pops from
	 * there without atomics (no ABA: nothing pops op_pool). The slabs
	 * are unmapped with the communicator.
	 */
	struct ohc_op *op_pool;	      /* atomic: stack top */
	int op_pool_taking;	      /* atomic: 1 while a submitter pops */
	struct ohc_op *op_taken;      /* under op_pool_taking */
	struct ohc_op_slab *op_slabs; /* under op_pool_taking */
	unsigned op_slab_ops;	      /* ops mapped; under op_pool_taking */
	unsigned op_slab_next;	      /* next never used op of op_slabs */
	unsigned op_slab_n;	      /* ops in op_slabs (the newest) */
	int op_pool_deep; /* atomic: a huge slab was mapped ahead (or tried) */

	/* atomic: the task context bound to us (comm/task.c), or NULL */
	struct ohc_task_ctx *task_ctx;
};

/*
 * Collective: build a communicator over bs (taken over on success; on
 * failure the caller still owns it). default_name is used when
 * cfg->name is empty.
 */
ohc_status_t ohc_comm_create(struct ohc_bootstrap *bs,
			     const struct ohc_comm_cfg *cfg,
			     const char *default_name, int device,
			     struct ohc_comm **comm_p);
/*
 * Sub-communicator (subcomm.c, HcclCreateSubCommConfig): collective over
 * the parent ranks ranks[0..nranks) only (in any order, no duplicates, the
 * caller's parent rank at ranks[index]; rank i of the result is parent rank
 * ranks[i]); ranks outside the list do not call. HcclCreateSubCommConfig
 * asks for a sorted list (HCCL's rule), HcomCreateGroup takes any order.
 * Members must pass the same list, id and configuration: the first listed
 * rank compares them and every member gets the same verdict
 * (OHC_ERR_INVALID naming the rank and the field that differ, or the
 * bootstrap's OHC_ERR_TIMEOUT naming a rank that never came). cfg NULL
 * means the caller's configuration was refused (already logged): the call
 * still takes part, so the other members fail at once too. The name is
 * cfg->name, else "<parent name>_sub_<id>". The result owns its
 * transports and a sub-group of the parent's bootstrap: parent and
 * sub-communicator may run operations concurrently and be destroyed in
 * any order. A parent may itself be a sub-communicator. Not thread-safe
 * per parent: one split (or none) at a time on a given parent handle.
 */
ohc_status_t ohc_comm_split(struct ohc_comm *parent, uint32_t nranks,
			    const uint32_t *ranks, uint32_t index, uint64_t id,
			    const struct ohc_comm_cfg *cfg,
			    struct ohc_comm **sub_p);
/* Local: waits for enqueued operations (bounded), then frees all. */
void ohc_comm_destroy(struct ohc_comm *comm);

/* Registry by name (and, for thread ranks, device). */
struct ohc_comm *ohc_comm_find(const char *name, int device);
/*
 * The live communicator behind a user's handle, or NULL: a destroyed
 * communicator's handle, a value never handed out or garbage are refused
 * without being dereferenced. Lock-free when this thread looked the same
 * handle up last and nothing was destroyed since.
 */
struct ohc_comm *ohc_comm_lookup(const void *handle);
/* The handle users get for comm (valid from create to destroy). */
void *ohc_comm_handle(const struct ohc_comm *comm);
int ohc_comm_name_taken(const char *name, uint32_t rank);
/* Whether a live communicator is named name and has this rank or was made
 * on this device (sub-communicator names are unique per process/device). */
int ohc_comm_name_clash(const char *name, uint32_t rank, int device);

/*
 * Who hears of an op's execution (the task API's completion counters):
 * start(arg, tag) when it begins to run and done(arg, tag, status) once
 * it ended, on the executing thread; done is called exactly once for a
 * launched op, with OHC_ERR_CANCELED when its stream skipped it.
 */
struct ohc_op_notify {
	void (*start)(void *arg, uint64_t tag);
	void (*done)(void *arg, uint64_t tag, ohc_status_t status);
};

/* An operation of a communicator, queued on a stream or run inline. */
struct ohc_op {
	struct ohc_rt_task task; /* first: the stream owns us through it */
	struct ohc_comm *comm;
	struct ohc_coll_args args;
	struct ohc_sig sig;
	struct ohc_op *group_next; /* pending in an open group */
	void *group_stream;
	struct ohc_zc_pin zc;	  /* exported memory pinned while in flight */
	struct ohc_op *pool_next; /* in comm->op_pool */
	bool pooled;		  /* from a slab: back to the pool */
	/* set by comm_execute only while a profile records (ohc_rt_prof_on) */
	const char *prof_algo; /* the algorithm that ran */
	uint32_t prof_npeers;  /* ranks its schedule exchanged with */
	uint32_t prof_peers[OHC_RT_PROF_PEERS];
	bool notified;		  /* notify->done was called */
	const struct ohc_op_notify *notify; /* NULL: nobody */
	void *notify_arg;
	uint64_t notify_tag;
	char tail[] __attribute__((aligned(8))); /* copied arrays, items */
};

/* Allocate an op with private copies of args' arrays and items. */
struct ohc_op *ohc_op_alloc(struct ohc_comm *comm,
			    const struct ohc_coll_args *args);
/* Free an op that was never launched (back to its pool, or free()). */
void ohc_op_free(struct ohc_op *op);
/* Assign the op its sequence number and run or enqueue it; takes op. */
ohc_status_t ohc_op_launch(struct ohc_op *op, void *stream);

/*
 * Group calls (group.c): a thread-local depth; while it is > 0, submitted
 * operations are held and launched together by the outermost group end.
 * Send/Recv of one communicator and stream are merged into one batch, so
 * pairs that would deadlock alone complete.
 */
int ohc_group_depth(void);
ohc_status_t ohc_group_add(struct ohc_op *op, void *stream);
/*
 * Communicator management inside a group (HCCL's first group use: one
 * thread initialising the communicators of several devices): run(arg) is
 * called at the outermost group end, at the same time as the other
 * parallel calls next to it when parallel is set; drop(arg) (if set)
 * frees arg afterwards, or when the group ends without running it.
 */
typedef ohc_status_t (*ohc_group_fn)(void *arg);
typedef void (*ohc_group_drop_fn)(void *arg);
ohc_status_t ohc_group_defer(ohc_group_fn run, ohc_group_drop_fn drop,
			     void *arg, int parallel);
void ohc_group_start(void);
ohc_status_t ohc_group_end(void);

/*
 * Prepare an operation (assigns its sequence number in issue order) and
 * either run it now (stream NULL; returns its status) or enqueue it on
 * stream (returns OHC_OK once queued; errors surface on the stream).
 */
ohc_status_t ohc_comm_submit(struct ohc_comm *comm,
			     const struct ohc_coll_args *args, void *stream);
/*
 * A point-to-point op (args->op SEND or RECV, esize set): as
 * ohc_comm_submit; without a stream, outside a group and while no
 * profile records, run now without an op or a schedule to build (the
 * one message is the schedule).
 */
ohc_status_t ohc_comm_p2p(struct ohc_comm *comm,
			  const struct ohc_coll_args *args, void *stream);

/*
 * Debug counters: bytes (and messages) this rank received through staging
 * buffers, directly out of the sender (CMA, same process) and zero-copy
 * through a shared mapping, since creation. Private accessor for tests;
 * printed at OPENHCCL_DEBUG=INFO on destroy.
 */
void ohc_comm_stats(struct ohc_comm *comm, struct ohc_xfer_stats *stats_p);

/*
 * HcclCommWorkingDevNicSet (nic_switch.c): collective; ranks[i] moves to
 * its backup NIC (backup[i]) or back to its primary one. Every rank passes
 * the same arrays, with no operation in flight. Verbs endpoints are
 * rebuilt on the new devices; shm and self links stay. Errors leave the
 * communicator as it was: OHC_ERR_INVALID (bad or differing arguments, a
 * rank without a usable backup device), OHC_ERR_BUSY (operations in
 * flight), or a connection error.
 */
ohc_status_t ohc_comm_nic_set(struct ohc_comm *comm, const uint32_t *ranks,
			      const bool *backup, uint32_t n);

/*
 * Transport parameters of comm's rank (hostid must hold 256 bytes);
 * device_ip is the IP its verbs iface binds to, or NULL.
 */
void ohc_comm_tp_params(struct ohc_comm *comm, const char *device_ip,
			char *hostid, struct ohc_transport_params *params);

/* Sticky asynchronous error of the communicator (OHC_OK if none). */
ohc_status_t ohc_comm_async_error(struct ohc_comm *comm);

/*
 * Suspend (comm_state.c), local: operations in flight are canceled (they
 * and every later one fail with OHC_ERR_SUSPENDING; the peers' transports
 * are told, so their operations with us fail too), and it returns once
 * none is left in flight (bounded by the exec timeout: OHC_ERR_BUSY).
 */
ohc_status_t ohc_comm_suspend(struct ohc_comm *comm);
/*
 * Resume, collective over every rank of comm: the ranks agree over the
 * bootstrap (a rank with exported memory or zero-copy windows registered
 * refuses, and then everyone gets OHC_ERR_INVALID), every transport is
 * closed and opened anew with a new session (as at init: rank table
 * device_ip, not a NIC switched to), the failure and the suspension are
 * cleared. Works on a suspended, a failed or a healthy communicator.
 */
ohc_status_t ohc_comm_resume(struct ohc_comm *comm);

/*
 * Flight recorder (comm_flight.c): dump comm's to the log; and, once
 * per process when OPENHCCL_FLIGHT_SIGNAL is set, install the handler
 * that makes every communicator dump its record.
 */
void ohc_comm_flight_dump(struct ohc_comm *comm);
void ohc_comm_flight_arm(void);
/* Call fn for every live communicator, under the registry lock. */
void ohc_comm_for_each(void (*fn)(struct ohc_comm *comm, void *arg), void *arg);

/* For comm/ only: what create and resume share (comm.c, comm_connect.c). */
void ohc_comm_fail(struct ohc_comm *comm, ohc_status_t status);
void ohc_comm_transports_close(struct ohc_comm *comm);
ohc_status_t ohc_comm_transports_open(struct ohc_comm *comm, uint64_t session,
				      uint64_t deadline);
/* Wait until no operation is in flight, at most timeout_ms: 0 or -1. */
int ohc_comm_wait_idle(struct ohc_comm *comm, uint64_t timeout_ms);

#endif
