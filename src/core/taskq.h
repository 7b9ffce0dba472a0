/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_CORE_TASKQ_H
#define OHC_CORE_TASKQ_H

/*
 * A task queue: the prepared operations of one task context (the task
 * API, spec section 7) with their completion counters and their
 * dependencies on the tasks of other queues.
 *
 * A session holds at most OHC_TQ_MAX entries in prepare order, each either
 * a task of `repeat` rounds or a dependency ("everything after me waits
 * until task h of queue q has finished"). A task's rounds are committed
 * one at a time; a committed round is launched once every entry before
 * it has been launched in full (or, for a dependency, once its source
 * task finished). So rounds start in prepare order whatever the order of
 * the commits, which keeps the ranks' operations of a communicator in the
 * same order. Rounds of one queue are expected to end in launch order
 * (one in-order executor per queue); queues are independent of each
 * other except through dependencies.
 *
 * No thread of its own: rounds are launched by the thread that commits,
 * or by the thread that finished the source of a dependency (whatever
 * executes the source queue's rounds). Each queue has one lock; no code
 * path holds two queue locks at once except ohc_tq_add_dep, serialized by
 * a global lock (dependent, then source). A queue is refcounted: its
 * owner's reference, one per launched round, one per dependency entry
 * pointing at it and one per registered dependent.
 */
#include <stdbool.h>
#include <stdint.h>

#include "util/status.h"

#define OHC_TQ_MAX 63	       /* tasks + dependencies per session */
#define OHC_TQ_MAX_REPEAT 255u /* rounds of one task */

struct ohc_tq;

struct ohc_tq_ops {
	/*
	 * Start round `round` of task `handle` (argument arg) on the queue's
	 * executor and return OHC_OK; the executor later calls
	 * ohc_tq_round_start (optional) and ohc_tq_round_done exactly once
	 * for it, from another thread. Any error: the round did not start
	 * and fails with that status. Called with the queue's lock held (it
	 * must not call into this queue); never after ohc_tq_close began.
	 */
	ohc_status_t (*launch)(void *owner, void *arg, int handle,
			       unsigned round);
	/* Free a task's argument; called when the queue is freed. */
	void (*drop)(void *arg);
};

/*
 * A new queue with the owner's reference. name is used in log lines;
 * stall_ns (0: never) bounds waits: ohc_tq_wait and a synchronous
 * finalize give up with OHC_ERR_TIMEOUT once no round of the queue ended
 * and no dependency of it resolved for that long.
 */
ohc_status_t ohc_tq_create(const struct ohc_tq_ops *ops, void *owner,
			   const char *name, uint64_t stall_ns,
			   struct ohc_tq **tq_p);
void ohc_tq_get(struct ohc_tq *tq);
/* Drop a reference; the last one frees the queue (dropping args). */
void ohc_tq_put(struct ohc_tq *tq);

/*
 * Append a task of repeat (1..255) rounds; what names it in log lines
 * (static string). On success the queue owns arg and *handle_p is the
 * task's handle (0, 1, ... in prepare order). Errors (logged, nothing
 * changed, arg still the caller's): OHC_ERR_INVALID after finalize or
 * past OHC_TQ_MAX entries, OHC_ERR_NO_MEMORY.
 */
ohc_status_t ohc_tq_add_task(struct ohc_tq *tq, void *arg, unsigned repeat,
			     const char *what, int *handle_p);
/*
 * Append a dependency: every entry appended after it starts only once
 * task src_handle of src has finished all its rounds. If that task fails
 * or is discarded, the rounds after the dependency fail without running
 * (with its error, or OHC_ERR_CANCELED). Refused (OHC_ERR_INVALID,
 * logged, nothing changed): src == tq, src finalized or closed, an
 * unknown src_handle, tq finalized or full.
 */
ohc_status_t ohc_tq_add_dep(struct ohc_tq *tq, struct ohc_tq *src,
			    int src_handle);
/*
 * Release the next round of handle. OHC_ERR_INVALID (logged, nothing
 * changed) for an unknown handle, a task whose rounds are all committed,
 * or a finalized queue.
 */
ohc_status_t ohc_tq_commit(struct ohc_tq *tq, int handle);
/*
 * Block until the next unwaited round of handle ended; its status. Waits
 * follow prepare order: every round of each earlier task must have been
 * waited first (discarded rounds need not be). OHC_ERR_INVALID (logged, nothing
 * changed) for an unknown handle, a wait out of that order, a round not
 * committed, or more waits than rounds; OHC_ERR_TIMEOUT (nothing changed: wait
 * again) after the stall time. A round discarded by finalize or close:
 * OHC_ERR_CANCELED.
 */
ohc_status_t ohc_tq_wait(struct ohc_tq *tq, int handle);
/*
 * Non-blocking: rounds of handle that ended successfully (0..repeat), or
 * a negative status: OHC_ERR_INVALID for an unknown handle (logged), the
 * task's first failure once a round failed or was discarded.
 */
int ohc_tq_query(struct ohc_tq *tq, int handle);
/*
 * End the session: no entry can be appended and no round committed
 * afterwards. sync: refused (OHC_ERR_INVALID, logged, nothing changed)
 * while a task has uncommitted rounds; otherwise waits until every round
 * ended (the stall time bounds it) and returns the first failure of any
 * round. !sync: rounds never committed are discarded (they end as
 * canceled; a warning names them), the rest keeps running; returns at
 * once. Waits and queries still work afterwards. OHC_ERR_INVALID when
 * already finalized.
 */
ohc_status_t ohc_tq_finalize(struct ohc_tq *tq, bool sync);
/*
 * The owner is done with the queue (before its last put): rounds not
 * launched yet are discarded (a warning names them unless the session
 * was finalized with nothing pending), launched ones are waited for (each
 * is bounded by its executor), and dependents waiting on our tasks are
 * told. launch is never called again.
 */
void ohc_tq_close(struct ohc_tq *tq);

/* Executor side: round `round` of handle begins / ended with status. */
void ohc_tq_round_start(struct ohc_tq *tq, int handle, unsigned round);
void ohc_tq_round_done(struct ohc_tq *tq, int handle, unsigned round,
		       ohc_status_t status);

/*
 * When round `round` of handle started and ended (ohc_time_ns values; 0
 * for a round not started / not ended). OHC_ERR_INVALID for an unknown
 * handle or round (logged).
 */
ohc_status_t ohc_tq_round_times(struct ohc_tq *tq, int handle, unsigned round,
				uint64_t *start_p, uint64_t *end_p);

#endif
