/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TRANSPORT_BELL_H
#define OHC_TRANSPORT_BELL_H

/*
 * A doorbell: how whoever published something for a sleeping owner (data,
 * free space, a wake) wakes it, for transports whose peers write into
 * memory the owner polls (self, shm). One futex word and the owner's
 * sleeping mode. The owner arms the bell with the way it will sleep, then
 * looks at its queues once more; a ringer publishes, then reads the mode
 * and, if the owner sleeps, bumps seq and wakes it: a FUTEX_WAKE on seq
 * (OHC_BELL_FUTEX: the owner sleeps on this transport alone,
 * ohc_bell_wait) or a write to the owner's eventfd (OHC_BELL_FD: the owner
 * sleeps in the waiter's one poll() over several transports, core/wait.c).
 * `shared`: the bell lives in memory mapped by several processes (a shared
 * futex), else in one process's (a private one).
 *
 * The ringer reads the mode without a fence: a full fence there waits for
 * the published lines to come back from the owner that polls them (a
 * cross-core transfer on every message; 15 % of a 64 B AllGather at 2
 * ranks). So a ringer whose store still sits in its CPU's store buffer
 * can read "awake" from an owner that is arming, and the owner's look can
 * miss that store: a lost ring. The owner covers it: the first sleep after
 * arming lasts at most OHC_TP_SETTLE_US, then it looks again, still
 * armed (the mode it published has been seen by every ringer since), and
 * sleeps the rest. A store buffer drains in nanoseconds, so the look finds
 * what the ring missed; nothing waits on that bound for correctness, as
 * every sleep is bounded and followed by a look (OHC_WAIT_MAX_MS).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/tp.h"

enum ohc_bell_mode { OHC_BELL_AWAKE, OHC_BELL_FUTEX, OHC_BELL_FD };

struct ohc_bell {
	_Atomic uint32_t seq;	   /* futex word; bumped by ringers */
	_Atomic uint32_t sleeping; /* an ohc_bell_mode, owner-written */
};

/* Ring after publishing; fd: the owner's eventfd (-1: none, a futex). */
void ohc_bell_ring(struct ohc_bell *bell, int fd, bool shared);

/* The owner will sleep (mode: how to be woken); look once more after. */
static inline void ohc_bell_arm(struct ohc_bell *bell, enum ohc_bell_mode mode)
{
	atomic_store_explicit(&bell->sleeping, mode, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

/*
 * The owner's sleep on the futex (mode OHC_BELL_FUTEX), whole: look(arg)
 * arms the bell (ohc_bell_arm) and says whether something is ready; if
 * not, sleep until rung, timeout_ms passes (< 0: none) or a signal, with
 * the look again after OHC_TP_SETTLE_US; then disarm. Any return is
 * fine (spurious wakes included).
 */
void ohc_bell_wait(struct ohc_bell *bell, int timeout_ms, bool shared,
		   int (*look)(void *arg), void *arg);

/*
 * The owner is awake. fd >= 0: take what rang on its eventfd (now or
 * since the last sleep), so that the next poll() sleeps; a ring that
 * comes later wakes that poll at once, spuriously.
 */
void ohc_bell_disarm(struct ohc_bell *bell, int fd);

#endif
