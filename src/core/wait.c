/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The waiter (wait.h): polling, the pace of yields, sleeping on the
 * transports that hold a step's requests, and the spin's default.
 */
#define _GNU_SOURCE /* ppoll */
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/wait.h"
#include "util/cpus.h"
#include "util/log.h"
#include "util/time.h"

#define WAIT_YIELD_QUICK_NS 5000 /* a yield this short ran no one else */
#define WAIT_YIELD_LONG_NS 500000 /* ... this long: a time slice went */
#define WAIT_YIELD_MASK_MAX 3	  /* after quick yields: every 4 polls */
#define WAIT_YIELD_MASK_LONG 255  /* after a long one: every 256 polls */
/* a wait this long: the peer is not running */
#define WAIT_LONG_WAIT_NS 50000
#define PACE_WINDOW 64	       /* steps per look at how waits end */
#define PACE_TRIAL 16	       /* steps a trial of the other mode runs */
#define PACE_STRETCH_MIN 256   /* steps before a mode that won is tried again */
#define PACE_STRETCH_MAX 65536 /* ... after it kept winning */
#define PACE_MEASURE 4096      /* a mode's mean step: over its last 4-8K */

/*
 * Pacing: how a waiting thread spends its CPU while its peers have not
 * answered. Each of three modes loses an order of magnitude somewhere
 * (all_reduce_test -b 8 -e 4K on 2 cores, 2026-12-07):
 *  - spinning without yields: best while every rank has a CPU, also when
 *    a busy process shares ours (2 ranks beside 2 busy loops: 0.3-2 us a
 *    call): a yield would hand it our CPU for a time slice, every wait,
 *    while the peer runs on the other CPU anyway (yielding: 6-8 us);
 *  - yielding while spinning: best when the thread beside us is what we
 *    wait for (ranks outnumbering the CPUs, or a second job's ranks):
 *    spinning alone runs out the spin (50-100 us) at every wait before
 *    the peer gets our CPU (4 ranks: 2 us yielding, 45-100 spinning);
 *  - sleeping at once: best when ranks outnumber the CPUs and busy
 *    processes share them too (4 ranks beside 2 busy loops: 80-160 us a
 *    call sleeping, 1.5-2.9 ms yielding). A yield hands our CPU to the busy
 *    process for its slice, and we run again when our turn comes round; a
 *    rank that slept is woken by its peer's message and, having used
 *    little CPU, preempts the busy process at once.
 * Long waits happen in all of them (a peer that loses its CPU to a busy
 * process for a slice makes them too), so they only say when to look:
 * the thread then measures. Spinning, it watches its waits until 9 of (up
 * to) 64 steps waited longer than 50 us (or than the spin, if that is
 * shorter), then tries another mode for 16 steps, from that very wait on,
 * and keeps the mode whose mean step (wall clock, over the kept mode's
 * last 4-8K steps) was shorter; the trial must be a third faster to win,
 * and ends as soon as it cannot (one step, where the mode tried is that
 * much slower). Yielding or sleeping, a stretch lasts 256 steps (the
 * first, 64) and ends in a trial. Trials take the two other modes in
 * turn, with two exceptions: ranks that outnumber the CPUs never spin
 * alone (ohc_waiter_init's yield_first), and a yielding thread tries
 * sleeping only where its yields handed out time slices (one in 16 steps
 * or more: yields of 0.5 ms and longer) - where they did not, a sleep
 * costs its peers 10-20x a step (8-16 ranks on 2 quiet CPUs: 1-2 ms). Each
 * trial that the kept mode wins, or skips, doubles its stretch, up to
 * 65536 steps, so wrong trials cost at most a few steps in that many.
 * Ranks count the same steps, so their trials mostly begin together: the
 * sleeping at once of 4 loaded ranks shows only when all of them sleep.
 */
enum pace_mode { PACE_SPIN, PACE_YIELD, PACE_SLEEP, PACE_MODES };

static const char *const pace_names[PACE_MODES] = {
	"spinning without yields", "yielding", "sleeping at once"};

static __thread struct exec_pace {
	uint8_t mode;	  /* the mode in force, on trial or not */
	uint8_t kept;	  /* in a trial: the mode it is against */
	bool crowded;	  /* ranks outnumber the CPUs: never spin alone */
	unsigned tries;	  /* trials begun: which mode the next one takes */
	unsigned trial;	  /* steps left in a trial, 0 = none */
	unsigned hold;	  /* steps before the next look (stretch) */
	unsigned held;	  /* ... what it started from */
	unsigned stretch; /* what hold starts from after a trial */
	unsigned slices;  /* yields that lasted a time slice, in the hold */
	uint64_t since; /* ohc_time_ns() at the measure's start, 0 = not yet */
	unsigned steps; /* steps since */
	uint64_t old_since; /* the measure before it (the mean spans both) */
	unsigned old_steps;
	uint64_t kept_ns;   /* mean step of the mode a trial is against */
	unsigned win_steps; /* the watch (spinning): steps in the window */
	unsigned win_spent; /* ... and of them, waits that went on long */
} pace;
/* switches to yielding and to sleeping, all threads */
static unsigned long pace_regimes[PACE_MODES];

static void pace_restart(uint64_t now)
{
	pace.since = pace.old_since = now;
	pace.steps = pace.old_steps = 0;
}

static void pace_hold(unsigned steps)
{
	pace.hold = pace.held = steps;
	pace.slices = 0;
}

/* The kept mode stays: its next stretch is twice as long. */
static void pace_stretch(void)
{
	pace.stretch = OHC_MIN(OHC_MAX(pace.stretch * 2, PACE_STRETCH_MIN),
			       PACE_STRETCH_MAX);
	pace_hold(pace.stretch);
}

/* The mode the next trial takes; pace.mode if none is worth trying. */
static enum pace_mode pace_pick(void)
{
	enum pace_mode m = (pace.mode + 1 + (pace.tries & 1)) % PACE_MODES;

	if (pace.crowded)
		m = pace.mode == PACE_YIELD ? PACE_SLEEP : PACE_YIELD;
	if (m == PACE_SLEEP && pace.mode == PACE_YIELD &&
	    pace.slices * 16 < pace.held)
		m = pace.crowded ? PACE_YIELD : PACE_SPIN;
	pace.tries++;
	return m;
}

/* A stretch ended: try the mode pace_pick takes for PACE_TRIAL steps,
 * from now on. */
static void pace_try(uint64_t now)
{
	unsigned steps = pace.old_steps + pace.steps;
	enum pace_mode m = pace_pick();

	if (m == pace.mode) { /* as if the kept mode had won */
		pace_stretch();
		return;
	}
	pace.kept_ns = (now - pace.old_since) / (steps ? steps : 1);
	pace.kept = pace.mode;
	pace.mode = m;
	pace.trial = PACE_TRIAL;
	pace_restart(now);
}

/* Whether the trial, at now, is a third faster than the kept mode. */
static bool pace_trial_wins(uint64_t now, unsigned steps)
{
	return (now - pace.since) * 3 < pace.kept_ns * 2 * steps;
}

/* The trial ended (or cannot win any more): keep the faster mode. */
static void pace_judge(uint64_t now)
{
	if (pace_trial_wins(now, pace.steps)) {
		pace.stretch = PACE_STRETCH_MIN;
		pace_hold(pace.stretch);
		__atomic_add_fetch(&pace_regimes[pace.mode], 1,
				   __ATOMIC_RELAXED);
		OHC_DEBUG(OHC_SS_COLL,
			  "%s: %" PRIu64 " ns per step, against %" PRIu64
			  " ns %s",
			  pace_names[pace.mode],
			  (now - pace.since) / pace.steps, pace.kept_ns,
			  pace_names[pace.kept]);
	} else {
		pace.mode = pace.kept;
		pace_stretch();
	}
	pace.trial = 0;
	pace.win_steps = pace.win_spent = 0;
	pace_restart(now);
}

/*
 * A step's wait went on past WAIT_LONG_WAIT_NS or ran out the spin (once
 * per step). Spinning and watching, the 9th in a window starts a trial,
 * in this very wait.
 */
static void pace_wait_long(uint64_t now)
{
	if (pace.mode != PACE_SPIN || pace.trial || pace.hold || !pace.since ||
	    ++pace.win_spent * 8 <= PACE_WINDOW)
		return;
	pace_try(now);
}

/* A step that waited for peers completed. */
static void pace_step_seen(void)
{
	uint64_t now;

	if (!pace.since) {
		pace_restart(ohc_time_ns());
		return;
	}
	pace.steps++;
	if (pace.trial) {
		/* it cannot win once its time is the whole trial's budget */
		now = ohc_time_ns();
		if (!--pace.trial || !pace_trial_wins(now, PACE_TRIAL))
			pace_judge(now);
		return;
	}
	if (pace.steps >= PACE_MEASURE) { /* the mean follows recent steps */
		pace.old_since = pace.since;
		pace.old_steps = pace.steps;
		pace.since = ohc_time_ns();
		pace.steps = 0;
	}
	if (pace.hold) {
		if (!--pace.hold && pace.mode != PACE_SPIN)
			pace_try(ohc_time_ns());
	} else if (++pace.win_steps >= PACE_WINDOW) {
		pace.win_steps = pace.win_spent = 0;
	}
}

unsigned long ohc_wait_yield_regimes(void)
{
	return __atomic_load_n(&pace_regimes[PACE_YIELD], __ATOMIC_RELAXED);
}

unsigned long ohc_wait_sleep_regimes(void)
{
	return __atomic_load_n(&pace_regimes[PACE_SLEEP], __ATOMIC_RELAXED);
}

/*
 * Idle polls between two yields of this thread, minus one, from how long
 * the last yield took:
 *  - under 5 us, nobody else wanted the CPU (the syscall only delayed our
 *    reaction to a peer elsewhere): twice as many, up to 4;
 *  - from 5 us to 0.5 ms, a thread sharing our CPU ran, most likely a
 *    peer rank that waits for us in turn: none, yield at every idle poll;
 *  - longer, a time slice went to a thread that does not wait for us (a
 *    busy process): 256, so that a slice is not handed over at every
 *    poll.
 * Measured (2026-12-07, 2 vCPUs, all_reduce_test -b 8 -e 4K -f 8, 8 B
 * column, variants taking turns): 4 ranks 4.1-4.3 us with the old rule
 * (16 polls after a yield that ran someone, doubling up to 64 after
 * quick ones: a peer woken onto our CPU waited out up to 64 polls) and
 * 2.0-2.1 us now (Open MPI, bound with overload allowed: 2.1-2.2); 8
 * ranks 10.6-11.3 -> 8.0; 16 ranks 47-48.6 -> 37.9-38.5 (Open MPI
 * 34.4-34.6); 4 ranks beside 2 busy loops 1.07-1.16 ms -> 0.96-1.0 ms
 * (Open MPI 3.7 ms). Up to 1024 or 4096 polls after a long yield made
 * 4 loaded ranks 4x faster but 16 quiet ranks 30x slower (a yield among
 * 8 ranks per CPU can take a slice's length too); with up to 1024 polls
 * between yields whatever the yield took (before the pace), 8 or 16
 * ranks on 2 CPUs fell into a state where most slept and the rest spun
 * past the ones just woken (8-rank AllReduces of 8 B-4 KiB: 370-430 us).
 */
static __thread unsigned yield_mask;

/* Let a thread sharing our CPU run (the yield regime only). */
static void wait_yield(void)
{
	uint64_t t0 = ohc_time_ns(), took;

	sched_yield();
	took = ohc_time_ns() - t0;
	if (took < WAIT_YIELD_QUICK_NS)
		yield_mask = OHC_MIN(yield_mask * 2 + 1, WAIT_YIELD_MASK_MAX);
	else if (took < WAIT_YIELD_LONG_NS)
		yield_mask = 0;
	else {
		yield_mask = WAIT_YIELD_MASK_LONG;
		pace.slices++;
	}
}

/* The pace's mode into the waiter: a thread-local costs a call per poll. */
static void waiter_read_pace(struct ohc_waiter *w)
{
	w->yielding = pace.mode == PACE_YIELD;
	w->sleeping = pace.mode == PACE_SLEEP;
}

void ohc_waiter_init(struct ohc_waiter *w, struct ohc_iface *const *ifaces,
		     unsigned nifaces, uint64_t spin_ns, bool yield_first)
{
	w->ifaces = ifaces;
	w->nifaces = nifaces;
	w->spin_ns = spin_ns;
	/* a thread that has not measured yet starts in the likelier mode */
	if (yield_first && !pace.since) {
		pace.mode = PACE_YIELD;
		pace.crowded = true;
		pace_hold(PACE_WINDOW); /* ... and soon sees it tried */
	}
	ohc_waiter_begin(w);
}

void ohc_waiter_begin(struct ohc_waiter *w)
{
	w->polls = 0;
	w->spent = false;
	waiter_read_pace(w);
	ohc_waiter_moved(w);
}

void ohc_waiter_moved(struct ohc_waiter *w)
{
	w->idle_since = 0;
	w->idle = 0;
	w->check = 16;
	w->spinning = true;
}

unsigned ohc_waiter_progress(struct ohc_waiter *w)
{
	unsigned n = 0;

	for (unsigned i = 0; i < w->nifaces; i++)
		n += w->ifaces[i]->ops->iface_progress(w->ifaces[i]);
	return n;
}

/*
 * The clock is read at the check-th idle poll of the spell only (every
 * 16th when not spinning), and that reading serves the spin, the
 * deadline, the peer checks and the sleep: clock_gettime is a system
 * call plus a device read where the clocksource has no vDSO reader (HPET
 * in the TCG VMs: ~7 per HcclSend/Recv message on the two ranks there).
 * A message that arrives within 16 polls costs none. The spin counts from
 * the first reading (poll 16) and the polls between readings double while
 * spinning (16, 32, 64...), so it ends within twice OPENHCCL_SPIN_US;
 * sleeping, one reading per 16 polls (each ends in a sleep anyway).
 */
uint64_t ohc_waiter_idle(struct ohc_waiter *w, bool *first)
{
	uint64_t now;

	w->polls++;
	if (w->spin_ns && ++w->idle < w->check) {
		if (w->spinning && w->yielding && !(w->polls & yield_mask))
			wait_yield();
		else
			ohc_cpu_relax();
		return 0;
	}
	now = ohc_time_ns();
	if (!w->idle_since)
		w->idle_since = now;
	if (w->spinning && w->spin_ns && !w->spent &&
	    now - w->idle_since >= OHC_MIN(w->spin_ns, WAIT_LONG_WAIT_NS)) {
		w->spent = true;
		pace_wait_long(now);
		waiter_read_pace(w);
	}
	if (w->spinning && !w->sleeping && now - w->idle_since < w->spin_ns) {
		w->check = w->idle * 2;
		if (w->yielding && !(w->polls & yield_mask))
			wait_yield();
		return 0;
	}
	*first = w->spinning;
	w->spinning = false;
	w->check = w->idle + 16;
	return now ? now : 1;
}

/* Whether iface i is one a step pends on (busy: see ohc_waiter_sleep). */
static inline bool in_busy(uint32_t busy, unsigned i)
{
	return !busy || i >= OHC_WAIT_MAX_IFACES || (busy >> i) & 1;
}

/* The wait set's pollfds (per thread: a waiter sleeps in its thread). */
static __thread struct pollfd *set_fds;
static __thread unsigned set_cap;

/* Whether the transports of busy (as ohc_waiter_sleep) all join a set. */
static bool set_capable(const struct ohc_waiter *w, uint32_t busy)
{
	if (w->nifaces > OHC_WAIT_MAX_IFACES)
		return false;
	for (unsigned i = 0; i < w->nifaces; i++)
		if (in_busy(busy, i) &&
		    !(w->ifaces[i]->ops->caps & OHC_TP_CAP_WAIT_SET))
			return false;
	return true;
}

/* One arming of the set: the transports' fds (fds, nfds), gathered in
 * set_fds; how many, 0 if one has something ready (or no memory). */
static unsigned set_arm(struct ohc_waiter *w, uint32_t busy,
			struct pollfd **fds, unsigned *nfds)
{
	unsigned total = 0, at = 0;
	bool ready = false;

	for (unsigned i = 0; i < w->nifaces; i++) {
		nfds[i] = 0;
		if (!in_busy(busy, i))
			continue;
		nfds[i] = w->ifaces[i]->ops->iface_wait_arm(w->ifaces[i],
							     &fds[i]);
		ready |= !nfds[i];
		total += nfds[i];
	}
	if (ready)
		return 0;
	if (total > set_cap) {
		struct pollfd *grown = realloc(set_fds, total * sizeof(*grown));

		if (!grown)
			return 0; /* a look now; the caller polls on */
		set_fds = grown;
		set_cap = total;
	}
	for (unsigned i = 0; i < w->nifaces; i++) {
		if (!nfds[i]) /* not busy: fds[i] was never set */
			continue;
		memcpy(set_fds + at, fds[i], nfds[i] * sizeof(*set_fds));
		at += nfds[i];
	}
	return total;
}

/* Poll the armed set for at most us; whether something stirred (the
 * transports' revents filled in). */
static bool set_poll(struct ohc_waiter *w, unsigned total, long us,
		     struct pollfd **fds, const unsigned *nfds)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	unsigned at = 0;

	if (ppoll(set_fds, total, &ts, NULL) <= 0)
		return false;
	for (unsigned i = 0; i < w->nifaces; i++) {
		for (unsigned k = 0; k < nfds[i]; k++)
			fds[i][k].revents = set_fds[at + k].revents;
		at += nfds[i];
	}
	return true;
}

/*
 * One poll() over the transports of busy: each arms (hands out its fds),
 * the first to stir wakes us, each disarms. A transport with something
 * ready at its arming makes it a look, not a sleep (so does a set that
 * found no memory: the caller polls on). After OHC_TP_SETTLE_US the set
 * is armed again, a second look for a ring lost while we armed (tp.h).
 */
static void set_sleep(struct ohc_waiter *w, int ms, uint32_t busy)
{
	struct pollfd *fds[OHC_WAIT_MAX_IFACES];
	unsigned nfds[OHC_WAIT_MAX_IFACES];
	long us = ms * 1000L;
	unsigned total = set_arm(w, busy, fds, nfds);

	/* ms >= 1 (ohc_waiter_sleep): the settle comes first (tp.h) */
	if (total) {
		if (set_poll(w, total, OHC_TP_SETTLE_US, fds, nfds))
			total = 0; /* stirred */
		else
			total = set_arm(w, busy, fds, nfds);
	}
	if (total)
		(void)set_poll(w, total, us - OHC_TP_SETTLE_US, fds, nfds);
	for (unsigned i = 0; i < w->nifaces; i++)
		if (in_busy(busy, i))
			w->ifaces[i]->ops->iface_wait_disarm(w->ifaces[i]);
}

void ohc_waiter_sleep(struct ohc_waiter *w, uint64_t now, uint64_t deadline,
		      uint32_t busy)
{
	int ms = ohc_deadline_left_ms_at(deadline, now, OHC_WAIT_MAX_MS);
	unsigned nbusy = 0, last = 0;

	if (ms <= 0)
		return;
	for (unsigned i = 0; i < w->nifaces; i++)
		if (in_busy(busy, i)) {
			nbusy++;
			last = i;
		}
	if (nbusy == 1) {
		/* one transport holds the step: the others only hear that
		 * we sleep (iface_wait 0), then its wait, for the time */
		for (unsigned i = 0; i < w->nifaces; i++)
			if (i != last)
				w->ifaces[i]->ops->iface_wait(w->ifaces[i], 0);
		w->ifaces[last]->ops->iface_wait(w->ifaces[last], ms);
		return;
	}
	/* several: one poll() over all of them (the wait set) where they
	 * can join one; else short sleeps on each in turn */
	if (set_capable(w, busy)) {
		set_sleep(w, ms, busy);
		return;
	}
	for (unsigned i = 0; i < w->nifaces; i++)
		if (in_busy(busy, i))
			w->ifaces[i]->ops->iface_wait(w->ifaces[i], 1);
}

void ohc_waiter_step_done(struct ohc_waiter *w)
{
	if (w->spin_ns)
		pace_step_seen();
}

bool ohc_wait_oversubscribed(uint32_t local_ranks)
{
	return local_ranks > ohc_host_cpus();
}

uint64_t ohc_wait_spin_ns(long spin_us_env)
{
	return spin_us_env >= 0 ? (uint64_t)spin_us_env * 1000 : 50000;
}
