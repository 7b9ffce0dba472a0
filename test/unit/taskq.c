/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The task queue (core/taskq.h) alone, with a fake executor: the test
 * records what the queue launches and ends rounds itself. Launch order
 * against commit order, every repeat from 1 to 255 (counters and times),
 * dependencies that finish, fail or are discarded, a launch that fails,
 * the stall timeout, close with pending rounds, and the limits.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "core/taskq.h"

#define LOG_MAX 4096

struct fake {
	int handle[LOG_MAX];
	unsigned round[LOG_MAX];
	int n;			  /* launches recorded */
	int done;		  /* launches ended by run() */
	ohc_status_t fail_launch; /* < 0: launch refuses with it */
	int dropped;
};

static ohc_status_t fake_launch(void *owner, void *arg, int handle,
				unsigned round)
{
	struct fake *f = owner;

	(void)arg;
	if (f->fail_launch < 0)
		return f->fail_launch;
	cr_assert_lt(f->n, LOG_MAX);
	f->handle[f->n] = handle;
	f->round[f->n] = round;
	f->n++;
	return OHC_OK;
}

static struct fake *dropped_to; /* task args point at their fake */

static void fake_drop(void *arg)
{
	(void)arg;
	if (dropped_to)
		dropped_to->dropped++;
}

static const struct ohc_tq_ops fake_ops = {
	.launch = fake_launch,
	.drop = fake_drop,
};

/* Execute what q launched and did not end yet, with status st. */
static void run(struct ohc_tq *q, struct fake *f, ohc_status_t st)
{
	while (f->done < f->n) {
		int i = f->done++;

		ohc_tq_round_start(q, f->handle[i], f->round[i]);
		ohc_tq_round_done(q, f->handle[i], f->round[i], st);
	}
}

static struct ohc_tq *new_q(struct fake *f, uint64_t stall_ns)
{
	struct ohc_tq *q;

	memset(f, 0, sizeof(*f));
	cr_assert_eq(ohc_tq_create(&fake_ops, f, "unit", stall_ns, &q), OHC_OK);
	return q;
}

static int add(struct ohc_tq *q, unsigned repeat)
{
	int h = -1;

	cr_assert_eq(ohc_tq_add_task(q, NULL, repeat, "task", &h), OHC_OK);
	return h;
}

Test(taskq, launch_in_prepare_order_whatever_the_commits)
{
	struct fake f;
	struct ohc_tq *q = new_q(&f, 0);
	int a = add(q, 3), b = add(q, 2);
	static const int want_h[] = {0, 0, 0, 1, 1};
	static const unsigned want_r[] = {0, 1, 2, 0, 1};

	cr_assert_eq(ohc_tq_commit(q, b), OHC_OK);
	cr_assert_eq(ohc_tq_commit(q, b), OHC_OK);
	cr_assert_eq(f.n, 0, "b launched before a was committed");
	cr_assert_eq(ohc_tq_commit(q, a), OHC_OK);
	cr_assert_eq(f.n, 1);
	cr_assert_eq(ohc_tq_commit(q, a), OHC_OK);
	cr_assert_eq(ohc_tq_commit(q, a), OHC_OK);
	cr_assert_eq(f.n, 5);
	for (int i = 0; i < 5; i++)
		cr_expect(f.handle[i] == want_h[i] && f.round[i] == want_r[i],
			  "launch %d: handle %d round %u", i, f.handle[i],
			  f.round[i]);
	cr_assert_eq(ohc_tq_commit(q, a), OHC_ERR_INVALID, "4th commit");
	cr_assert_eq(ohc_tq_wait(q, b), OHC_ERR_INVALID, "out of order");
	run(q, &f, OHC_OK);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(ohc_tq_wait(q, a), OHC_OK);
	cr_assert_eq(ohc_tq_wait(q, a), OHC_ERR_INVALID, "4th wait");
	cr_assert_eq(ohc_tq_query(q, b), 2);
	cr_assert_eq(ohc_tq_finalize(q, true), OHC_OK);
	ohc_tq_close(q);
	ohc_tq_put(q);
}

Test(taskq, every_repeat_counts_and_times)
{
	struct fake f;
	struct ohc_tq *q = new_q(&f, 0);
	uint64_t s, e, prev = 0;

	for (unsigned rep = 1; rep <= OHC_TQ_MAX_REPEAT; rep += 18) {
		int h = add(q, rep);

		cr_assert_eq(ohc_tq_query(q, h), 0);
		for (unsigned r = 0; r < rep; r++) {
			cr_assert_eq(ohc_tq_commit(q, h), OHC_OK);
			run(q, &f, OHC_OK);
			cr_assert_eq(ohc_tq_query(q, h), (int)r + 1);
		}
		for (unsigned r = 0; r < rep; r++) {
			cr_assert_eq(ohc_tq_wait(q, h), OHC_OK);
			cr_assert_eq(ohc_tq_round_times(q, h, r, &s, &e),
				     OHC_OK);
			cr_assert(s && e >= s && s >= prev,
				  "repeat %u round %u: %llu..%llu", rep, r,
				  (unsigned long long)s, (unsigned long long)e);
			prev = e;
		}
		cr_assert_eq(ohc_tq_round_times(q, h, rep, &s, &e),
			     OHC_ERR_INVALID);
	}
	ohc_tq_close(q);
	ohc_tq_put(q);
}

Test(taskq, dependency_released_by_its_source)
{
	struct fake f0, f1;
	struct ohc_tq *q0 = new_q(&f0, 0), *q1 = new_q(&f1, 0);
	int a = add(q0, 2), b;

	cr_assert_eq(ohc_tq_add_dep(q1, q0, a), OHC_OK);
	b = add(q1, 1);
	cr_assert_eq(ohc_tq_commit(q1, b), OHC_OK);
	cr_assert_eq(ohc_tq_commit(q0, a), OHC_OK);
	run(q0, &f0, OHC_OK);
	cr_assert_eq(f1.n, 0, "launched after half of its source");
	cr_assert_eq(ohc_tq_commit(q0, a), OHC_OK);
	run(q0, &f0, OHC_OK);
	cr_assert_eq(f1.n, 1, "not launched once its source finished");
	run(q1, &f1, OHC_OK);
	cr_assert_eq(ohc_tq_wait(q1, b), OHC_OK);
	/* a dependency on a finished task is met at once */
	cr_assert_eq(ohc_tq_add_dep(q1, q0, a), OHC_OK);
	b = add(q1, 1);
	cr_assert_eq(ohc_tq_commit(q1, b), OHC_OK);
	cr_assert_eq(f1.n, 2);
	run(q1, &f1, OHC_OK);
	/* refused: itself, unknown handle, a finalized source */
	cr_assert_eq(ohc_tq_add_dep(q1, q1, 0), OHC_ERR_INVALID);
	cr_assert_eq(ohc_tq_add_dep(q1, q0, 5), OHC_ERR_INVALID);
	cr_assert_eq(ohc_tq_finalize(q0, true), OHC_OK);
	cr_assert_eq(ohc_tq_add_dep(q1, q0, a), OHC_ERR_INVALID);
	ohc_tq_close(q1);
	ohc_tq_put(q1);
	ohc_tq_close(q0);
	ohc_tq_put(q0);
}

Test(taskq, failed_or_discarded_sources_fail_dependents_unrun)
{
	struct fake f0, f1;
	struct ohc_tq *q0 = new_q(&f0, 0), *q1 = new_q(&f1, 0);
	int a = add(q0, 3), c = add(q0, 1), b;

	/* a round of the source fails: the dependent fails, unlaunched */
	cr_assert_eq(ohc_tq_add_dep(q1, q0, a), OHC_OK);
	b = add(q1, 2);
	cr_assert_eq(ohc_tq_commit(q1, b), OHC_OK);
	cr_assert_eq(ohc_tq_commit(q0, a), OHC_OK);
	run(q0, &f0, OHC_ERR_REMOTE);
	cr_assert_eq(f1.n, 0);
	cr_assert_eq(ohc_tq_wait(q1, b), OHC_ERR_REMOTE);
	cr_assert_eq(ohc_tq_wait(q1, b), OHC_ERR_INVALID, "not committed");
	cr_assert_eq(ohc_tq_commit(q1, b), OHC_OK);
	cr_assert_eq(ohc_tq_wait(q1, b), OHC_ERR_REMOTE);
	cr_assert_eq(ohc_tq_query(q1, b), OHC_ERR_REMOTE);
	cr_assert_eq(ohc_tq_wait(q0, a), OHC_ERR_REMOTE);
	cr_assert_eq(ohc_tq_query(q0, a), OHC_ERR_REMOTE);

	/* a discarded source (finalize without sync) */
	cr_assert_eq(ohc_tq_add_dep(q1, q0, c), OHC_OK);
	b = add(q1, 1);
	cr_assert_eq(ohc_tq_commit(q1, b), OHC_OK);
	cr_assert_eq(ohc_tq_finalize(q0, true), OHC_ERR_INVALID);
	cr_assert_eq(ohc_tq_finalize(q0, false), OHC_OK);
	/* discarded rounds need no wait, but may be waited */
	cr_assert_eq(ohc_tq_wait(q0, c), OHC_ERR_CANCELED);
	cr_assert_eq(ohc_tq_wait(q0, a), OHC_ERR_CANCELED);
	/* q1 failed for good with its first broken dependency */
	cr_assert_eq(ohc_tq_wait(q1, b), OHC_ERR_REMOTE);
	cr_assert_eq(f1.n, 0);
	ohc_tq_close(q0);
	ohc_tq_put(q0);
	ohc_tq_close(q1);
	ohc_tq_put(q1);
}

Test(taskq, source_closed_before_its_task_ran)
{
	struct fake f0, f1;
	struct ohc_tq *q0 = new_q(&f0, 0), *q1 = new_q(&f1, 0);
	int a = add(q0, 1), b;

	cr_assert_eq(ohc_tq_add_dep(q1, q0, a), OHC_OK);
	b = add(q1, 1);
	cr_assert_eq(ohc_tq_commit(q1, b), OHC_OK);
	ohc_tq_close(q0);
	ohc_tq_put(q0); /* q1's dependency entry still holds it */
	cr_assert_eq(ohc_tq_wait(q1, b), OHC_ERR_CANCELED);
	cr_assert_eq(f1.n, 0);
	ohc_tq_close(q1);
	ohc_tq_put(q1);
}

Test(taskq, launch_failure_and_stall_timeout)
{
	struct fake f;
	struct ohc_tq *q = new_q(&f, 50000000ull); /* 50 ms */
	int a = add(q, 2);

	f.fail_launch = OHC_ERR_NO_MEMORY;
	cr_assert_eq(ohc_tq_commit(q, a), OHC_OK);
	cr_assert_eq(ohc_tq_wait(q, a), OHC_ERR_NO_MEMORY);
	f.fail_launch = OHC_OK;
	cr_assert_eq(ohc_tq_commit(q, a), OHC_OK);
	cr_assert_eq(f.n, 1);
	/* launched, never ended: the wait gives up, changing nothing */
	cr_assert_eq(ohc_tq_wait(q, a), OHC_ERR_TIMEOUT);
	cr_assert_eq(ohc_tq_finalize(q, true), OHC_ERR_TIMEOUT);
	run(q, &f, OHC_OK);
	cr_assert_eq(ohc_tq_wait(q, a), OHC_OK);
	ohc_tq_close(q);
	ohc_tq_put(q);
}

struct late {
	struct ohc_tq *q;
	struct fake *f;
};

/* An executor on another thread: end what was launched, 50 ms late. */
static void *end_late(void *arg)
{
	struct late *l = arg;

	usleep(50000);
	run(l->q, l->f, OHC_OK);
	return NULL;
}

Test(taskq, limit_and_close_with_pending)
{
	struct fake f;
	struct ohc_tq *q = new_q(&f, 0), *other;
	struct late late;
	struct fake fo;
	pthread_t t;
	int h;

	other = new_q(&fo, 0);
	add(other, 1);
	for (int i = 0; i < OHC_TQ_MAX - 1; i++)
		add(q, 2);
	cr_assert_eq(ohc_tq_add_dep(q, other, 0), OHC_OK);
	cr_assert_eq(ohc_tq_add_task(q, NULL, 1, "task", &h), OHC_ERR_INVALID);
	cr_assert_eq(ohc_tq_add_dep(q, other, 0), OHC_ERR_INVALID);
	cr_assert_eq(ohc_tq_add_task(other, NULL, 0, "task", &h),
		     OHC_ERR_INVALID, "repeat 0");
	cr_assert_eq(ohc_tq_add_task(other, NULL, 256, "task", &h),
		     OHC_ERR_INVALID, "repeat 256");
	cr_assert_eq(ohc_tq_commit(q, 0), OHC_OK);
	cr_assert_eq(ohc_tq_commit(q, 1), OHC_OK); /* held back */
	cr_assert_eq(f.n, 1);
	/* close waits for the launched round, discards the rest */
	late.q = q;
	late.f = &f;
	cr_assert_eq(pthread_create(&t, NULL, end_late, &late), 0);
	ohc_tq_close(q);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(ohc_tq_wait(q, 0), OHC_OK);
	cr_assert_eq(ohc_tq_wait(q, 0), OHC_ERR_CANCELED);
	cr_assert_eq(ohc_tq_wait(q, 1), OHC_ERR_CANCELED);
	/* q stays allocated while other may still pump it */
	dropped_to = &f;
	ohc_tq_put(q);
	cr_assert_eq(f.dropped, 0);
	ohc_tq_close(other);
	ohc_tq_put(other);
	cr_assert_eq(f.dropped, OHC_TQ_MAX, "62 tasks of q, 1 of other");
	dropped_to = NULL;
}
