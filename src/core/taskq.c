/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Task queues (taskq.h): prepared rounds launched in prepare order as
 * they are committed, completion counters, and dependency edges between
 * queues. Every piece of state is under the queue's lock except a task's
 * `state`, which dependents read without it (release/acquire), and the
 * round start times (relaxed: diagnostics).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/taskq.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/time.h"

enum round_state {
	R_PENDING = 0,
	R_OK,
	R_FAILED,
	R_CANCELED,
};

/* A queue to pump once a task's state is final (holds a reference). */
struct tq_waiter {
	struct ohc_tq *tq;
	struct tq_waiter *next;
};

struct tq_task {
	void *arg;
	const char *what;
	unsigned repeat;
	unsigned committed; /* rounds released by commits */
	unsigned launched;  /* rounds handed to launch (or failed there) */
	unsigned limit;	    /* rounds that may still launch: repeat, or less
			       once the rest was discarded */
	unsigned finished;  /* rounds ended: ok, failed or discarded */
	unsigned ok;	    /* rounds ended successfully */
	unsigned waited;    /* rounds returned by ohc_tq_wait */
	ohc_status_t err;   /* first failure of a round */
	int state; /* atomic: 0 open, 1 every round ok, < 0 first failure */
	uint8_t *rstate;	   /* per round: enum round_state */
	uint64_t *t_start, *t_end; /* per round, ohc_time_ns(); 0: not yet */
	struct tq_waiter *waiters; /* pumped once state is final */
};

struct tq_entry {
	bool dep;
	int task;	    /* own task's handle, or the source's handle */
	struct ohc_tq *src; /* dep: the source queue (a reference) */
};

struct ohc_tq {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a round ended, a dependency resolved */
	int refs;	     /* atomic */
	const struct ohc_tq_ops *ops;
	void *owner;
	char name[128];
	uint64_t stall_ns;
	struct tq_task tasks[OHC_TQ_MAX];
	unsigned ntasks;
	struct tq_entry order[OHC_TQ_MAX];
	unsigned norder;
	unsigned cursor;     /* next entry of order to launch from */
	unsigned inflight;   /* rounds launched and not ended */
	uint64_t progress;   /* rounds ended + dependencies resolved */
	ohc_status_t broken; /* a dependency failed: later rounds fail */
	bool finalized, closed;
};

/* Serializes ohc_tq_add_dep, the one path that holds two queue locks. */
static pthread_mutex_t dep_lock = PTHREAD_MUTEX_INITIALIZER;

ohc_status_t ohc_tq_create(const struct ohc_tq_ops *ops, void *owner,
			   const char *name, uint64_t stall_ns,
			   struct ohc_tq **tq_p)
{
	struct ohc_tq *tq = calloc(1, sizeof(*tq));
	pthread_condattr_t ca;

	if (!tq)
		return OHC_ERR_NO_MEMORY;
	pthread_mutex_init(&tq->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&tq->cond, &ca);
	pthread_condattr_destroy(&ca);
	tq->refs = 1;
	tq->ops = ops;
	tq->owner = owner;
	tq->stall_ns = stall_ns;
	snprintf(tq->name, sizeof(tq->name), "%s", name ? name : "?");
	*tq_p = tq;
	return OHC_OK;
}

void ohc_tq_get(struct ohc_tq *tq)
{
	__atomic_fetch_add(&tq->refs, 1, __ATOMIC_RELAXED);
}

static void tq_free(struct ohc_tq *tq)
{
	for (unsigned h = 0; h < tq->ntasks; h++) {
		struct tq_task *t = &tq->tasks[h];

		while (t->waiters) { /* never closed: drop the references */
			struct tq_waiter *w = t->waiters;

			t->waiters = w->next;
			ohc_tq_put(w->tq);
			free(w);
		}
		if (tq->ops->drop)
			tq->ops->drop(t->arg);
		free(t->rstate);
	}
	for (unsigned i = 0; i < tq->norder; i++)
		if (tq->order[i].dep && tq->order[i].src)
			ohc_tq_put(tq->order[i].src);
	pthread_cond_destroy(&tq->cond);
	pthread_mutex_destroy(&tq->lock);
	free(tq);
}

void ohc_tq_put(struct ohc_tq *tq)
{
	if (__atomic_sub_fetch(&tq->refs, 1, __ATOMIC_ACQ_REL) == 0)
		tq_free(tq);
}

/* A reference dropped under the lock: never the last (the caller's). */
static void put_locked(struct ohc_tq *tq)
{
	__atomic_sub_fetch(&tq->refs, 1, __ATOMIC_RELEASE);
}

/* Round r of task h ended as rs; queue the dependents of a final task. */
static void round_end_locked(struct ohc_tq *tq, int h, unsigned r, int rs,
			     ohc_status_t status, struct tq_waiter **pokes)
{
	struct tq_task *t = &tq->tasks[h];

	if (t->rstate[r] != R_PENDING)
		return;
	t->rstate[r] = (uint8_t)rs;
	t->t_end[r] = ohc_time_ns();
	t->finished++;
	if (rs == R_OK)
		t->ok++;
	else if (!t->err)
		t->err = rs == R_CANCELED || status >= 0 ? OHC_ERR_CANCELED
							 : status;
	tq->progress++;
	if (!t->state && (t->err || t->ok == t->repeat)) {
		__atomic_store_n(&t->state, t->err ? (int)t->err : 1,
				 __ATOMIC_RELEASE);
		while (t->waiters) {
			struct tq_waiter *w = t->waiters;

			t->waiters = w->next;
			w->next = *pokes;
			*pokes = w;
		}
	}
	pthread_cond_broadcast(&tq->cond);
}

/* Discard the rounds of task h from `from` on (none of them launched). */
static unsigned discard_from_locked(struct ohc_tq *tq, int h, unsigned from,
				    struct tq_waiter **pokes)
{
	struct tq_task *t = &tq->tasks[h];
	unsigned n = 0;

	if (from < t->limit)
		t->limit = from;
	for (unsigned r = from; r < t->repeat; r++) {
		if (t->rstate[r] != R_PENDING)
			continue;
		round_end_locked(tq, h, r, R_CANCELED, OHC_ERR_CANCELED, pokes);
		n++;
	}
	return n;
}

/* A dependency of tq failed (state < 0): say so, once. */
static void log_broken(const struct ohc_tq *tq, const struct tq_entry *e,
		       int state)
{
	const char *what = e->src->tasks[e->task].what;

	if (state == OHC_ERR_CANCELED)
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': handle %d (%s) of context '%s', "
			  "which it depends on (InterHcclGroupSync), was "
			  "discarded before it ran (its context was finalized "
			  "without sync, or destroyed); the rounds prepared "
			  "after that dependency fail without running",
			  tq->name, e->task, what, e->src->name);
	else
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': handle %d (%s) of context '%s', "
			  "which it depends on (InterHcclGroupSync), failed: "
			  "%s; the rounds prepared after that dependency fail "
			  "without running",
			  tq->name, e->task, what, e->src->name,
			  ohc_status_str(state));
}

/*
 * Launch what may start: committed rounds in prepare order, up to the
 * first entry that is not complete (a task with rounds not committed, or
 * a dependency whose source has not finished).
 */
static void pump_locked(struct ohc_tq *tq, struct tq_waiter **pokes)
{
	while (!tq->closed && tq->cursor < tq->norder) {
		struct tq_entry *e = &tq->order[tq->cursor];
		struct tq_task *t;

		if (e->dep) {
			const struct tq_task *st = &e->src->tasks[e->task];
			int state =
				__atomic_load_n(&st->state, __ATOMIC_ACQUIRE);

			if (!state)
				return;
			if (state < 0 && !tq->broken) {
				tq->broken = state;
				log_broken(tq, e, state);
			}
			tq->cursor++;
			tq->progress++;
			pthread_cond_broadcast(&tq->cond);
			continue;
		}
		t = &tq->tasks[e->task];
		while (t->launched < t->committed && t->launched < t->limit) {
			unsigned r = t->launched++;
			ohc_status_t st = tq->broken;

			if (!st) {
				tq->inflight++;
				ohc_tq_get(tq); /* the round's, put when done */
				st = tq->ops->launch(tq->owner, t->arg, e->task,
						     r);
				if (st < 0) {
					tq->inflight--;
					put_locked(tq);
				}
			}
			if (st < 0)
				round_end_locked(tq, e->task, r, R_FAILED, st,
						 pokes);
		}
		if (t->launched < t->limit)
			return;
		tq->cursor++;
	}
}

/* Pump every queue in the list (and those their pumps make final). */
static void poke_all(struct tq_waiter *w)
{
	while (w) {
		struct tq_waiter *next = w->next, *more = NULL;
		struct ohc_tq *d = w->tq;

		pthread_mutex_lock(&d->lock);
		pump_locked(d, &more);
		pthread_mutex_unlock(&d->lock);
		ohc_tq_put(d);
		free(w);
		if (more) {
			struct tq_waiter *tail = more;

			while (tail->next)
				tail = tail->next;
			tail->next = next;
			next = more;
		}
		w = next;
	}
}

/*
 * Wait on the queue's condition (lock held). 0 when woken, -1 once no
 * round ended and no dependency resolved for stall_ns: *seen and
 * *deadline carry the progress count seen and the deadline it set.
 */
static int stall_wait_locked(struct ohc_tq *tq, uint64_t *seen,
			     uint64_t *deadline)
{
	struct timespec ts;
	uint64_t now;

	if (tq->progress != *seen || !*deadline) {
		*seen = tq->progress;
		*deadline = tq->stall_ns ? ohc_time_ns() + tq->stall_ns
					 : OHC_DEADLINE_NEVER;
	}
	if (*deadline == OHC_DEADLINE_NEVER) {
		pthread_cond_wait(&tq->cond, &tq->lock);
		return 0;
	}
	now = ohc_time_ns();
	if (now >= *deadline)
		return -1;
	ts.tv_sec = (time_t)(*deadline / 1000000000ull);
	ts.tv_nsec = (long)(*deadline % 1000000000ull);
	pthread_cond_timedwait(&tq->cond, &tq->lock, &ts);
	return 0;
}

/* Task h of tq, or NULL with a log line naming fn and the handle. */
static struct tq_task *task_of_locked(struct ohc_tq *tq, int h, const char *fn)
{
	if (h >= 0 && (unsigned)h < tq->ntasks)
		return &tq->tasks[h];
	OHC_ERROR(OHC_SS_COLL,
		  "task context '%s': %s: handle %d is not a prepared task "
		  "of this context (it has %u: handles 0..%d)",
		  tq->name, fn, h, tq->ntasks, (int)tq->ntasks - 1);
	return NULL;
}

ohc_status_t ohc_tq_add_task(struct ohc_tq *tq, void *arg, unsigned repeat,
			     const char *what, int *handle_p)
{
	struct tq_task *t;
	ohc_status_t status = OHC_OK;
	uint8_t *mem;

	if (repeat < 1 || repeat > OHC_TQ_MAX_REPEAT) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': %s: repeat %u is outside 1..%u",
			  tq->name, what, repeat, OHC_TQ_MAX_REPEAT);
		return OHC_ERR_INVALID;
	}
	/* per round: a state, then (8-byte aligned) start and end times */
	mem = calloc(1, ((repeat + 7) & ~7u) + 2 * sizeof(uint64_t) * repeat);
	if (!mem)
		return OHC_ERR_NO_MEMORY;
	pthread_mutex_lock(&tq->lock);
	if (tq->finalized || tq->closed) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': %s prepared after Finalize: "
			  "the session is over (create a new context)",
			  tq->name, what);
		status = OHC_ERR_INVALID;
	} else if (tq->norder == OHC_TQ_MAX) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': %s refused: the session already "
			  "holds %d prepares and syncs, the most one may "
			  "(HCCL_MAX_HANDLE_ID); finalize it and create a new "
			  "context",
			  tq->name, what, OHC_TQ_MAX);
		status = OHC_ERR_INVALID;
	}
	if (status < 0) {
		pthread_mutex_unlock(&tq->lock);
		free(mem);
		return status;
	}
	t = &tq->tasks[tq->ntasks];
	memset(t, 0, sizeof(*t));
	t->arg = arg;
	t->what = what;
	t->repeat = t->limit = repeat;
	t->rstate = mem;
	/* the times follow the states, 8-byte aligned */
	t->t_start = (uint64_t *)(void *)(mem + ((repeat + 7) & ~7u));
	t->t_end = t->t_start + repeat;
	tq->order[tq->norder].dep = false;
	tq->order[tq->norder].task = (int)tq->ntasks;
	tq->order[tq->norder].src = NULL;
	tq->norder++;
	*handle_p = (int)tq->ntasks++;
	pthread_mutex_unlock(&tq->lock);
	return OHC_OK;
}

ohc_status_t ohc_tq_add_dep(struct ohc_tq *tq, struct ohc_tq *src,
			    int src_handle)
{
	struct tq_waiter *w = malloc(sizeof(*w)), *pokes = NULL;
	ohc_status_t status = OHC_OK;
	struct tq_entry *e;

	if (!w)
		return OHC_ERR_NO_MEMORY;
	pthread_mutex_lock(&dep_lock);
	pthread_mutex_lock(&tq->lock);
	if (src == tq) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': InterHcclGroupSync on its own "
			  "handle %d: a context's tasks already run in prepare "
			  "order; name another context",
			  tq->name, src_handle);
		status = OHC_ERR_INVALID;
	} else if (tq->finalized || tq->closed) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': InterHcclGroupSync after "
			  "Finalize: the session is over",
			  tq->name);
		status = OHC_ERR_INVALID;
	} else if (tq->norder == OHC_TQ_MAX) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': InterHcclGroupSync refused: the "
			  "session already holds %d prepares and syncs, the "
			  "most one may (HCCL_MAX_HANDLE_ID)",
			  tq->name, OHC_TQ_MAX);
		status = OHC_ERR_INVALID;
	}
	if (status < 0)
		goto out;
	pthread_mutex_lock(&src->lock);
	if (src->closed || src->finalized) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': InterHcclGroupSync on handle %d "
			  "of context '%s', which was %s: declare dependencies "
			  "before the source's Finalize",
			  tq->name, src_handle, src->name,
			  src->closed ? "destroyed" : "finalized");
		status = OHC_ERR_INVALID;
	} else if (src_handle < 0 || (unsigned)src_handle >= src->ntasks) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': InterHcclGroupSync: handle %d is "
			  "not a prepared task of context '%s' (it has %u)",
			  tq->name, src_handle, src->name, src->ntasks);
		status = OHC_ERR_INVALID;
	} else {
		struct tq_task *st = &src->tasks[src_handle];

		if (!st->state) { /* told when it becomes final */
			ohc_tq_get(tq);
			w->tq = tq;
			w->next = st->waiters;
			st->waiters = w;
			w = NULL;
		}
		ohc_tq_get(src); /* the entry's */
	}
	pthread_mutex_unlock(&src->lock);
	if (status < 0)
		goto out;
	e = &tq->order[tq->norder++];
	e->dep = true;
	e->task = src_handle;
	e->src = src;
	pump_locked(tq, &pokes);
out:
	pthread_mutex_unlock(&tq->lock);
	pthread_mutex_unlock(&dep_lock);
	free(w);
	poke_all(pokes);
	return status;
}

ohc_status_t ohc_tq_commit(struct ohc_tq *tq, int handle)
{
	struct tq_waiter *pokes = NULL;
	ohc_status_t status = OHC_OK;
	struct tq_task *t;

	pthread_mutex_lock(&tq->lock);
	t = task_of_locked(tq, handle, "Commit");
	if (!t) {
		status = OHC_ERR_INVALID;
	} else if (tq->finalized || tq->closed) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': Commit of handle %d (%s) after "
			  "Finalize: the session is over",
			  tq->name, handle, t->what);
		status = OHC_ERR_INVALID;
	} else if (t->committed == t->repeat) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': Commit of handle %d (%s): all "
			  "%u rounds are already committed (repeat = %u); one "
			  "commit per round",
			  tq->name, handle, t->what, t->repeat, t->repeat);
		status = OHC_ERR_INVALID;
	} else {
		t->committed++;
		pump_locked(tq, &pokes);
	}
	pthread_mutex_unlock(&tq->lock);
	poke_all(pokes);
	return status;
}

/* Why round r of task h has not ended, for a timeout's log line. */
static void describe_wait_locked(struct ohc_tq *tq, int h, unsigned r,
				 char *buf, size_t len)
{
	const struct tq_task *t = &tq->tasks[h];
	const struct tq_entry *e;

	if (r < t->launched) {
		snprintf(buf, len,
			 "it is running or queued behind the "
			 "context's earlier rounds");
		return;
	}
	if (tq->cursor >= tq->norder) {
		snprintf(buf, len, "it has not started");
		return;
	}
	e = &tq->order[tq->cursor];
	if (e->dep)
		snprintf(buf, len,
			 "it is held back by the dependency on handle %d "
			 "(%s) of context '%s', which has not finished",
			 e->task, e->src->tasks[e->task].what, e->src->name);
	else
		snprintf(buf, len,
			 "it waits for handle %d (%s) ahead of it in prepare "
			 "order, %u of whose %u rounds are committed",
			 e->task, tq->tasks[e->task].what,
			 tq->tasks[e->task].committed,
			 tq->tasks[e->task].repeat);
}

/* Rounds of t still to be waited for (discarded ones need no wait). */
static unsigned unwaited_locked(const struct tq_task *t)
{
	unsigned n = 0;

	for (unsigned r = t->waited; r < t->repeat; r++)
		n += t->rstate[r] != R_CANCELED;
	return n;
}

ohc_status_t ohc_tq_wait(struct ohc_tq *tq, int handle)
{
	uint64_t seen = 0, deadline = 0;
	ohc_status_t status = OHC_OK;
	struct tq_task *t;
	char why[256];
	unsigned r;

	pthread_mutex_lock(&tq->lock);
	t = task_of_locked(tq, handle, "Wait");
	if (!t) {
		status = OHC_ERR_INVALID;
		goto out;
	}
	for (int g = 0; g < handle; g++) {
		const struct tq_task *e = &tq->tasks[g];

		if (!unwaited_locked(e))
			continue;
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': Wait on handle %d (%s) out of "
			  "prepare order: handle %d (%s) has %u of its %u "
			  "rounds not waited yet (waits follow the prepares, "
			  "repeat times each)",
			  tq->name, handle, t->what, g, e->what,
			  unwaited_locked(e), e->repeat);
		status = OHC_ERR_INVALID;
		goto out;
	}
	if (t->waited == t->repeat) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': Wait on handle %d (%s): all %u "
			  "rounds were already waited (repeat = %u)",
			  tq->name, handle, t->what, t->repeat, t->repeat);
		status = OHC_ERR_INVALID;
		goto out;
	}
	r = t->waited;
	if (r >= t->committed && t->rstate[r] == R_PENDING) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': Wait on handle %d (%s): round %u "
			  "is not committed (%u of %u rounds committed); "
			  "commit it before waiting for it",
			  tq->name, handle, t->what, r, t->committed,
			  t->repeat);
		status = OHC_ERR_INVALID;
		goto out;
	}
	while (t->rstate[r] == R_PENDING) {
		if (stall_wait_locked(tq, &seen, &deadline) == 0)
			continue;
		describe_wait_locked(tq, handle, r, why, sizeof(why));
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': Wait on handle %d (%s) round "
			  "%u: nothing of the context finished for %llu ms "
			  "(HCCL_EXEC_TIMEOUT); %s",
			  tq->name, handle, t->what, r,
			  (unsigned long long)(tq->stall_ns / 1000000ull), why);
		status = OHC_ERR_TIMEOUT;
		goto out;
	}
	t->waited++;
	if (t->rstate[r] == R_CANCELED)
		status = OHC_ERR_CANCELED;
	else if (t->rstate[r] == R_FAILED)
		status = t->err;
out:
	pthread_mutex_unlock(&tq->lock);
	return status;
}

int ohc_tq_query(struct ohc_tq *tq, int handle)
{
	struct tq_task *t;
	int ret;

	pthread_mutex_lock(&tq->lock);
	t = task_of_locked(tq, handle, "Query");
	if (!t)
		ret = OHC_ERR_INVALID;
	else
		ret = t->err ? (int)t->err : (int)t->ok;
	pthread_mutex_unlock(&tq->lock);
	return ret;
}

static bool all_ended_locked(const struct ohc_tq *tq)
{
	for (unsigned h = 0; h < tq->ntasks; h++)
		if (tq->tasks[h].finished < tq->tasks[h].repeat)
			return false;
	return true;
}

ohc_status_t ohc_tq_finalize(struct ohc_tq *tq, bool sync)
{
	struct tq_waiter *pokes = NULL;
	uint64_t seen = 0, deadline = 0;
	ohc_status_t status = OHC_OK;
	unsigned discarded = 0;
	int first = -1;

	pthread_mutex_lock(&tq->lock);
	if (tq->finalized || tq->closed) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': Finalize called twice: the "
			  "session is already over",
			  tq->name);
		pthread_mutex_unlock(&tq->lock);
		return OHC_ERR_INVALID;
	}
	for (unsigned h = 0; sync && h < tq->ntasks; h++) {
		const struct tq_task *t = &tq->tasks[h];

		if (t->committed == t->repeat)
			continue;
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': Finalize with sync: handle %u "
			  "(%s) has %u of its %u rounds committed; commit the "
			  "rest (a synchronous Finalize waits for every round) "
			  "or finalize without sync to discard them",
			  tq->name, h, t->what, t->committed, t->repeat);
		pthread_mutex_unlock(&tq->lock);
		return OHC_ERR_INVALID;
	}
	tq->finalized = true;
	for (unsigned h = 0; !sync && h < tq->ntasks; h++) {
		const struct tq_task *t = &tq->tasks[h];
		unsigned n;

		if (t->committed == t->repeat)
			continue;
		n = discard_from_locked(tq, (int)h, t->committed, &pokes);
		if (n && first < 0)
			first = (int)h;
		discarded += n;
	}
	if (discarded)
		OHC_WARN(OHC_SS_COLL,
			 "task context '%s': Finalize without sync discarded "
			 "%u rounds that were never committed (the first of "
			 "handle %d, %s); waiting for them gives "
			 "HCCL_E_INTERNAL (canceled)",
			 tq->name, discarded, first, tq->tasks[first].what);
	pump_locked(tq, &pokes);
	pthread_mutex_unlock(&tq->lock);
	poke_all(pokes);
	if (!sync)
		return OHC_OK;

	pthread_mutex_lock(&tq->lock);
	while (!all_ended_locked(tq)) {
		if (stall_wait_locked(tq, &seen, &deadline) == 0)
			continue;
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': Finalize with sync: nothing of "
			  "the context finished for %llu ms "
			  "(HCCL_EXEC_TIMEOUT); rounds are still pending",
			  tq->name,
			  (unsigned long long)(tq->stall_ns / 1000000ull));
		status = OHC_ERR_TIMEOUT;
		break;
	}
	for (unsigned h = 0; status == OHC_OK && h < tq->ntasks; h++)
		status = tq->tasks[h].err;
	pthread_mutex_unlock(&tq->lock);
	return status;
}

void ohc_tq_close(struct ohc_tq *tq)
{
	struct tq_waiter *pokes = NULL;
	unsigned held = 0, never = 0;

	pthread_mutex_lock(&tq->lock);
	if (tq->closed) {
		pthread_mutex_unlock(&tq->lock);
		return;
	}
	tq->closed = true;
	for (unsigned h = 0; h < tq->ntasks; h++) {
		struct tq_task *t = &tq->tasks[h];

		for (unsigned r = t->launched; r < t->repeat; r++) {
			if (t->rstate[r] != R_PENDING)
				continue;
			if (r < t->committed)
				held++;
			else
				never++;
		}
		discard_from_locked(tq, (int)h, t->launched, &pokes);
	}
	if (held || never)
		OHC_WARN(OHC_SS_COLL,
			 "task context '%s' destroyed with %u rounds that "
			 "never started: %u committed (held back in prepare "
			 "order or by a dependency) and %u never committed; "
			 "they are discarded",
			 tq->name, held + never, held, never);
	/* launched rounds end on their own (the executor bounds them) */
	while (tq->inflight)
		pthread_cond_wait(&tq->cond, &tq->lock);
	pthread_mutex_unlock(&tq->lock);
	poke_all(pokes);
	for (unsigned i = 0; i < tq->norder; i++) {
		struct tq_entry *e = &tq->order[i];

		if (e->dep && e->src) {
			ohc_tq_put(e->src);
			e->src = NULL;
		}
	}
}

void ohc_tq_round_start(struct ohc_tq *tq, int handle, unsigned round)
{
	__atomic_store_n(&tq->tasks[handle].t_start[round], ohc_time_ns(),
			 __ATOMIC_RELAXED);
}

void ohc_tq_round_done(struct ohc_tq *tq, int handle, unsigned round,
		       ohc_status_t status)
{
	struct tq_waiter *pokes = NULL;

	pthread_mutex_lock(&tq->lock);
	round_end_locked(tq, handle, round, status < 0 ? R_FAILED : R_OK,
			 status, &pokes);
	tq->inflight--;
	pthread_mutex_unlock(&tq->lock);
	poke_all(pokes);
	ohc_tq_put(tq); /* the round's */
}

ohc_status_t ohc_tq_round_times(struct ohc_tq *tq, int handle, unsigned round,
				uint64_t *start_p, uint64_t *end_p)
{
	struct tq_task *t;
	ohc_status_t status = OHC_OK;

	pthread_mutex_lock(&tq->lock);
	t = task_of_locked(tq, handle, "round times");
	if (!t) {
		status = OHC_ERR_INVALID;
	} else if (round >= t->repeat) {
		OHC_ERROR(OHC_SS_COLL,
			  "task context '%s': round %u of handle %d (%s) does "
			  "not exist (repeat = %u)",
			  tq->name, round, handle, t->what, t->repeat);
		status = OHC_ERR_INVALID;
	} else {
		*start_p =
			__atomic_load_n(&t->t_start[round], __ATOMIC_RELAXED);
		*end_p = t->t_end[round];
	}
	pthread_mutex_unlock(&tq->lock);
	return status;
}
