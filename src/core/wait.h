/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_CORE_WAIT_H
#define OHC_CORE_WAIT_H

/*
 * How a thread waits for its transports: the one place that decides when
 * to poll, yield, sleep and on what. An executor run owns one waiter over
 * its communicator's transports; each step's wait is a spell:
 *
 *	ohc_waiter_begin(w);
 *	while (requests pending) {
 *		if (ohc_waiter_progress(w)) { ohc_waiter_moved(w); continue; }
 *		now = ohc_waiter_idle(w);
 *		if (!now) continue;            still spinning
 *		... deadline, abort, peer checks at time now ...
 *		ohc_waiter_sleep(w, now, deadline, busy);
 *	}
 *	ohc_waiter_step_done(w);
 *
 * Polls: for the communicator's spin (ohc_wait_spin_ns), reading the
 * clock only every 16, 32, 64... idle polls. Yields while polling: only
 * when measured to pay (the pace, per thread, see wait.c). Sleeps: at
 * most OHC_WAIT_MAX_MS at a time, and only on the transports that hold
 * the step's pending requests (busy). A step of one transport sleeps in
 * its iface_wait (shm and self: a futex), so in a two-transport
 * communicator it wakes when its message comes; the others are told
 * first that we sleep (iface_wait 0: verbs hands back its credits). A
 * step pending on several sleeps in one poll() over all of theirs (the
 * wait set: each arms and hands out its fds, the first to stir wakes us,
 * each disarms: verbs' completion channel, wake eventfd, async fd and
 * setup sockets; shm's and self's doorbell eventfds); a transport
 * without OHC_TP_CAP_WAIT_SET makes it 1 ms sleeps on each in turn.
 */
#include <stdbool.h>
#include <stdint.h>

#include "core/tp.h"

#define OHC_WAIT_MAX_MS 100    /* longest single sleep: bounds check latency */
#define OHC_WAIT_MAX_IFACES 32 /* busy is a mask of iface indices */

struct ohc_waiter {
	struct ohc_iface *const *ifaces;
	unsigned nifaces;
	uint64_t spin_ns; /* idle time polled before sleeping; 0: none */
	/* the spell: one step's wait */
	unsigned polls, idle, check;
	uint64_t idle_since; /* first clock reading of the spell, 0 = none */
	bool spinning;	     /* until a reading says the spin is over */
	bool spent;	     /* a wait went on long (told to the pace) */
	bool yielding;	     /* the pace's mode, read once per spell: */
	bool sleeping;	     /* ... yield while spinning, or do not spin */
};

void ohc_waiter_init(struct ohc_waiter *w, struct ohc_iface *const *ifaces,
		     unsigned nifaces, uint64_t spin_ns, bool yield_first);
/* A step's wait begins. */
void ohc_waiter_begin(struct ohc_waiter *w);
/* Progress every transport; how many things moved. */
unsigned ohc_waiter_progress(struct ohc_waiter *w);
/* Something moved: the spin starts over. */
void ohc_waiter_moved(struct ohc_waiter *w);
/*
 * Nothing moved. 0: keep polling (the spin goes on; this may have
 * yielded). Else the clock, read now: the spin is over, the caller checks
 * what it must (deadline, aborts, peers), then sleeps. *first: whether
 * this is the spell's first such reading.
 */
uint64_t ohc_waiter_idle(struct ohc_waiter *w, bool *first);
/* Sleep until something may have moved, at most until deadline (an
 * ohc_deadline value): on the transports whose bit is set in busy
 * (index into ifaces; 0 or all bits: every one). */
void ohc_waiter_sleep(struct ohc_waiter *w, uint64_t now, uint64_t deadline,
		      uint32_t busy);
/* The step's wait ended with every request done. */
void ohc_waiter_step_done(struct ohc_waiter *w);

/*
 * The spin of a communicator: spin_us_env (OPENHCCL_SPIN_US) if set
 * (>= 0), else 50 us.
 */
uint64_t ohc_wait_spin_ns(long spin_us_env);
/*
 * Whether local_ranks ranks on this host outnumber its CPUs (ohc_host_cpus:
 * online, capped by the cgroup's CPU time). Their waiters
 * start yielding while they poll (yield_first): the peer we wait for is
 * then most often queued behind us on our CPU. They never spin without
 * yields, and sleep at once where that is measured to be faster (busy
 * processes among them, wait.c). Sleeping at once instead
 * (the old default: no spin) made every step a futex wake and a context
 * switch: 4 ranks on 2 cores, 8 B AllGather 53 us, against 12 us
 * polling with yields and Open MPI's 13 us.
 */
bool ohc_wait_oversubscribed(uint32_t local_ranks);

/*
 * How often a waiting thread switched to yielding while it spins (a
 * trial of it was a third faster than the mode it had), process-wide.
 */
unsigned long ohc_wait_yield_regimes(void);
/* ... and to sleeping at once (a trial of it was a third faster). */
unsigned long ohc_wait_sleep_regimes(void);

#endif
