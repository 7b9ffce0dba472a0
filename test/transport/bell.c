/* SPDX-License-Identifier: Apache-2.0 */
/*
 * transport/bell.c: the doorbell's sleep on its futex. A ringer reads the
 * owner's mode without a fence, so a ring can be lost to an owner that is
 * arming (bell.h); the owner's second look, OHC_TP_SETTLE_US after the
 * first, must find what the lost ring was for. The loss is injected in
 * the look itself (the only place it can be made to happen on demand): a
 * store that lands right after the first look, with no ring.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <unistd.h>

#include "transport/bell.h"
#include "util/time.h"

#define WAIT_MS 5000 /* the owner's timeout: far beyond any settle */

struct owner {
	struct ohc_bell bell;
	_Atomic unsigned looks;
	_Atomic int published;
	bool lose; /* publish right after the first look, unrung */
};

static int look(void *arg)
{
	struct owner *o = arg;
	unsigned n;

	ohc_bell_arm(&o->bell, OHC_BELL_FUTEX);
	n = atomic_fetch_add(&o->looks, 1);
	if (atomic_load(&o->published))
		return 1;
	if (o->lose && n == 0)
		atomic_store(&o->published, 1); /* its ring is lost */
	return 0;
}

static uint64_t wait_ms(struct owner *o)
{
	uint64_t t0 = ohc_time_ns();

	ohc_bell_wait(&o->bell, WAIT_MS, false, look, o);
	return (ohc_time_ns() - t0) / 1000000;
}

Test(bell, lost_ring_found_by_second_look, .timeout = 30)
{
	struct owner o = {.lose = true};
	uint64_t ms = wait_ms(&o);

	cr_expect_eq(atomic_load(&o.looks), 2, "%u looks",
		     atomic_load(&o.looks));
	cr_expect_lt(ms, WAIT_MS / 2,
		     "slept %llu ms on a lost ring (the timeout: %d ms)",
		     (unsigned long long)ms, WAIT_MS);
	cr_expect_eq(atomic_load(&o.bell.sleeping), OHC_BELL_AWAKE,
		     "disarmed after the wait");
}

static void *ringer(void *arg)
{
	struct owner *o = arg;

	/* the owner is past its first look and settle: in its long sleep */
	while (atomic_load(&o->looks) < 2)
		usleep(1000);
	usleep(20000);
	atomic_store(&o->published, 1);
	ohc_bell_ring(&o->bell, -1, false);
	return NULL;
}

Test(bell, ring_wakes_the_long_sleep, .timeout = 30)
{
	struct owner o = {0};
	pthread_t t;
	uint64_t ms;

	cr_assert_eq(pthread_create(&t, NULL, ringer, &o), 0);
	ms = wait_ms(&o);
	pthread_join(t, NULL);
	/* the owner stayed armed after its second look: the ring found it */
	cr_expect_eq(atomic_load(&o.looks), 2, "%u looks",
		     atomic_load(&o.looks));
	cr_expect_lt(ms, WAIT_MS / 2, "woken after %llu ms (the timeout: %d)",
		     (unsigned long long)ms, WAIT_MS);
}

Test(bell, no_time_no_look)
{
	struct owner o = {.lose = true};

	ohc_bell_wait(&o.bell, 0, false, look, &o);
	cr_expect_eq(atomic_load(&o.looks), 0);
}
