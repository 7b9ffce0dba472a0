/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TRANSPORT_BELL_H
#define OHC_TRANSPORT_BELL_H

/*
 * A doorbell: how whoever published something for a sleeping owner (data,
 * free space, a wake) wakes it, for transports whose peers write into
 * memory the owner polls (self, shm). One futex word and the owner's
 * sleeping mode. The owner arms the bell with the way it will sleep, then
 * looks at its queues once more (a ringer that published before it saw
 * the mode did not ring); a ringer publishes, then reads the mode after a
 * full fence and, if the owner sleeps, bumps seq and wakes it: a
 * FUTEX_WAKE on seq (OHC_BELL_FUTEX: the owner sleeps on this transport
 * alone, ohc_bell_sleep) or a write to the owner's eventfd (OHC_BELL_FD:
 * the owner sleeps in the waiter's one poll() over several transports,
 * core/wait.c). `shared`: the bell lives in memory mapped by several
 * processes (a shared futex), else in one process's (a private one).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum ohc_bell_mode { OHC_BELL_AWAKE, OHC_BELL_FUTEX, OHC_BELL_FD };

struct ohc_bell {
	_Atomic uint32_t seq;	   /* futex word; bumped by ringers */
	_Atomic uint32_t sleeping; /* an ohc_bell_mode, owner-written */
};

/* Ring after publishing; fd: the owner's eventfd (-1: none, a futex). */
void ohc_bell_ring(struct ohc_bell *bell, int fd, bool shared);

/* The word to sleep on: read before arming, passed to ohc_bell_sleep. */
static inline uint32_t ohc_bell_seq(struct ohc_bell *bell)
{
	return atomic_load_explicit(&bell->seq, memory_order_acquire);
}

/* The owner will sleep (mode: how to be woken); look once more after. */
static inline void ohc_bell_arm(struct ohc_bell *bell, enum ohc_bell_mode mode)
{
	atomic_store_explicit(&bell->sleeping, mode, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

/*
 * Sleep on the futex until rung after seq was read, timeout_ms passes (<
 * 0: none) or a signal; any return is fine (spurious wakes included).
 */
void ohc_bell_sleep(struct ohc_bell *bell, uint32_t seq, int timeout_ms,
		    bool shared);

/*
 * The owner is awake. fd >= 0: take what rang on its eventfd (now or
 * since the last sleep), so that the next poll() sleeps; a ring that
 * comes later wakes that poll at once, spuriously.
 */
void ohc_bell_disarm(struct ohc_bell *bell, int fd);

#endif
