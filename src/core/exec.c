/* SPDX-License-Identifier: Apache-2.0 */
#include <inttypes.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec.h"
#include "util/log.h"
#include "util/time.h"

#define EXEC_WAIT_MS 100 /* longest single sleep: bounds check latency */
#define EXEC_STACK_REQS 64
#define EXEC_YIELD_QUICK_NS 5000 /* a yield this short ran no one else */
#define EXEC_YIELD_MASK_MAX 1023 /* yield at least every 1024 polls */
/* a wait this long: the peer is not running */
#define EXEC_LONG_WAIT_NS 50000
#define PACE_WINDOW 64	       /* steps per look at how waits end */
#define PACE_TRIAL 16	       /* steps a trial of the other mode runs */
#define PACE_STRETCH_MIN 256   /* steps before a mode that won is tried again */
#define PACE_STRETCH_MAX 65536 /* ... after it kept winning */
#define PACE_MEASURE 4096      /* a mode's mean step: over its last 4-8K */

/*
 * Pacing: whether a spinning thread yields its CPU. Both choices lose about
 * an order of magnitude in one setting (all_reduce_test -np 2 -b 8 on 2
 * cores):
 *  - a busy process beside us (another program, a compiler, the
 *    application's own compute threads): a yield hands it our CPU for a
 *    time slice (8-16 us measured), every wait, while the peer we wait for
 *    runs on the other CPU anyway. Spinning: 0.9-1.2 us per call;
 *    yielding: 6-8 us.
 *  - the thread beside us is what we wait for (a peer rank, or the ranks
 *    of a second job on the same CPUs): without a yield every wait runs
 *    out the spin (50-100 us) before it sleeps and lets it run. Yielding:
 *    6 us per call; spinning: 45-100 us.
 * Long waits happen in both (a peer that loses its CPU to a busy process
 * for a slice makes them too), so they only say when to look: the thread
 * then measures. It spins without yields until 9 of (up to) 64 steps
 * waited longer than 50 us (or than the spin, if that is shorter), then
 * tries yielding for 16 steps, from that very wait on, and keeps the mode
 * whose mean step (wall clock, over the kept mode's last 4-8K steps) was
 * shorter; the trial must be a third faster to win. A yielding stretch
 * then lasts 256 steps and ends in a trial of spinning; a spinning one
 * watches its waits again after as many steps. Each trial that the kept
 * mode wins doubles its stretch, up to 65536 steps, so a wrong trial
 * costs at most 16 steps in that many.
 */
static __thread struct exec_pace {
	bool yielding;	  /* the mode in force, on trial or not */
	unsigned trial;	  /* steps left in a trial of it, 0 = none */
	unsigned hold;	  /* steps before the next look (stretch) */
	unsigned stretch; /* what hold starts from after a trial */
	uint64_t since; /* ohc_time_ns() at the measure's start, 0 = not yet */
	unsigned steps; /* steps since */
	uint64_t old_since; /* the measure before it (the mean spans both) */
	unsigned old_steps;
	uint64_t kept_ns;   /* mean step of the mode a trial is against */
	unsigned win_steps; /* the watch (spinning): steps in the window */
	unsigned win_spent; /* ... and of them, waits that went on long */
} pace;
static unsigned long yield_regimes; /* switches to yielding, all threads */

static void pace_restart(uint64_t now)
{
	pace.since = pace.old_since = now;
	pace.steps = pace.old_steps = 0;
}

/* Try the other mode for PACE_TRIAL steps, from now on. */
static void pace_try(uint64_t now)
{
	unsigned steps = pace.old_steps + pace.steps;

	pace.kept_ns = (now - pace.old_since) / (steps ? steps : 1);
	pace.yielding = !pace.yielding;
	pace.trial = PACE_TRIAL;
	pace_restart(now);
}

/* The trial ended: keep the faster mode. */
static void pace_judge(uint64_t now)
{
	uint64_t tried_ns = (now - pace.since) / pace.steps;

	if (tried_ns * 3 < pace.kept_ns * 2) {
		pace.stretch = PACE_STRETCH_MIN;
		if (pace.yielding)
			__atomic_add_fetch(&yield_regimes, 1, __ATOMIC_RELAXED);
		OHC_DEBUG(OHC_SS_COLL,
			  "%s: %" PRIu64 " ns per step, against %" PRIu64
			  " ns %s",
			  pace.yielding ? "yielding"
					: "spinning without yields",
			  tried_ns, pace.kept_ns,
			  pace.yielding ? "spinning" : "yielding");
	} else {
		pace.yielding = !pace.yielding;
		pace.stretch =
			OHC_MIN(OHC_MAX(pace.stretch * 2, PACE_STRETCH_MIN),
				PACE_STRETCH_MAX);
	}
	pace.trial = 0;
	pace.hold = pace.stretch;
	pace.win_steps = pace.win_spent = 0;
	pace_restart(now);
}

/*
 * A step's wait went on past EXEC_LONG_WAIT_NS or ran out the spin (once
 * per step). Spinning and watching, the 9th in a window starts a trial
 * of yielding, in this very wait.
 */
static void exec_wait_long(uint64_t now)
{
	if (pace.yielding || pace.trial || pace.hold || !pace.since ||
	    ++pace.win_spent * 8 <= PACE_WINDOW)
		return;
	pace_try(now);
}

/* A step that waited for peers completed. */
static void exec_step_seen(void)
{
	if (!pace.since) {
		pace_restart(ohc_time_ns());
		return;
	}
	pace.steps++;
	if (pace.trial) {
		if (!--pace.trial)
			pace_judge(ohc_time_ns());
		return;
	}
	if (pace.steps >= PACE_MEASURE) { /* the mean follows recent steps */
		pace.old_since = pace.since;
		pace.old_steps = pace.steps;
		pace.since = ohc_time_ns();
		pace.steps = 0;
	}
	if (pace.hold) {
		if (!--pace.hold && pace.yielding)
			pace_try(ohc_time_ns());
	} else if (++pace.win_steps >= PACE_WINDOW) {
		pace.win_steps = pace.win_spent = 0;
	}
}

unsigned long ohc_exec_yield_regimes(void)
{
	return __atomic_load_n(&yield_regimes, __ATOMIC_RELAXED);
}

/*
 * Idle polls between two yields of this thread, minus one: 16 while
 * yielding lets other threads run (a peer preempted onto our CPU), twice
 * as many after each yield that returned at once (nobody else wanted the
 * CPU: the syscall only delayed our reaction to the peer's message).
 */
static __thread unsigned yield_mask = 15;

/* Let a thread sharing our CPU run (the yield regime only). */
static void exec_yield(void)
{
	uint64_t t0 = ohc_time_ns();

	sched_yield();
	if (ohc_time_ns() - t0 < EXEC_YIELD_QUICK_NS)
		yield_mask = OHC_MIN(yield_mask * 2 + 1, EXEC_YIELD_MASK_MAX);
	else
		yield_mask = 15;
}

static void sig_diff(const struct ohc_sig *ours, const struct ohc_sig *theirs,
		     char *buf, size_t len)
{
#define DIFF(f, name)                                                          \
	if (ours->f != theirs->f) {                                            \
		snprintf(buf, len, "%s: ours %" PRIu64 ", peer's %" PRIu64,    \
			 name, (uint64_t)ours->f, (uint64_t)theirs->f);        \
		return;                                                        \
	}
	DIFF(op, "operation");
	DIFF(seq, "sequence number");
	DIFF(dtype, "data type");
	DIFF(redop, "reduce op");
	DIFF(root, "root");
	DIFF(count, "count");
	DIFF(step, "algorithm step");
	DIFF(len, "message length");
#undef DIFF
	snprintf(buf, len, "unknown field");
}

static void exec_local(struct ohc_exec *x, const struct ohc_xfer *xf)
{
	if (xf->kind == OHC_XFER_COPY)
		memmove(xf->dst, xf->src, xf->len);
	else
		x->reduce(xf->dst, xf->src2, xf->src, xf->len / x->esize);
}

static ohc_status_t exec_post(struct ohc_exec *x, const struct ohc_xfer *xf,
			      struct ohc_req *req, unsigned step)
{
	struct ohc_ep *ep = x->eps[xf->peer];

	memset(req, 0, sizeof(*req));
	req->sig = x->sig;
	req->sig.step = (uint8_t)step;
	req->sig.len = xf->len;
	req->len = xf->len;
	req->status = OHC_INPROGRESS;
	ohc_list_init(&req->link);
	if (xf->kind == OHC_XFER_SEND) {
		req->sbuf = xf->src;
		if (x->mem_lookup &&
		    x->mem_lookup(x->mem_ctx, xf->src, xf->len, &req->smem_buf))
			req->smem = &req->smem_buf;
		return ep->iface->ops->ep_send(ep, req);
	}
	req->dst = xf->dst;
	req->src2 = xf->src2;
	req->kind = xf->rkind;
	req->reduce = x->reduce;
	req->esize = x->esize;
	return ep->iface->ops->ep_recv(ep, req);
}

static unsigned exec_progress(struct ohc_exec *x)
{
	unsigned n = 0;

	for (unsigned i = 0; i < x->nifaces; i++)
		n += x->ifaces[i]->ops->iface_progress(x->ifaces[i]);
	return n;
}

/* Sleep until something may have moved; now: an ohc_time_ns() value. */
static void exec_sleep(struct ohc_exec *x, uint64_t now)
{
	int ms = ohc_deadline_left_ms_at(x->deadline, now, EXEC_WAIT_MS);

	if (ms <= 0)
		return;
	if (x->nifaces == 1) {
		x->ifaces[0]->ops->iface_wait(x->ifaces[0], ms);
		return;
	}
	/* Several transports: short sleeps on each in turn. */
	for (unsigned i = 0; i < x->nifaces; i++)
		x->ifaces[i]->ops->iface_wait(x->ifaces[i], 1);
}

/*
 * The step failed: tell every peer why (so the ones blocked on us stop
 * with the same reason, see iface_abort), then cancel what is in flight.
 */
static void exec_cancel(struct ohc_exec *x, const struct ohc_xfer *xf,
			struct ohc_req *reqs, unsigned n, ohc_status_t status,
			ohc_status_t reason)
{
	for (unsigned i = 0; i < x->nifaces; i++)
		x->ifaces[i]->ops->iface_abort(x->ifaces[i], reason);
	for (unsigned i = 0; i < n; i++) {
		if (xf[i].kind != OHC_XFER_SEND && xf[i].kind != OHC_XFER_RECV)
			continue;
		if (reqs[i].status == OHC_INPROGRESS) {
			struct ohc_ep *ep = x->eps[xf[i].peer];

			ep->iface->ops->ep_cancel(ep, status);
		}
	}
}

static void exec_log_waiting(struct ohc_exec *x, const struct ohc_xfer *xf,
			     const struct ohc_req *reqs, unsigned n,
			     unsigned step)
{
	char peers[256] = "";
	size_t off = 0;

	for (unsigned i = 0; i < n && off < sizeof(peers) - 16; i++) {
		if ((xf[i].kind == OHC_XFER_SEND ||
		     xf[i].kind == OHC_XFER_RECV) &&
		    reqs[i].status == OHC_INPROGRESS) {
			off += snprintf(
				peers + off, sizeof(peers) - off, "%s%u (%s)",
				off ? ", " : "", xf[i].peer,
				xf[i].kind == OHC_XFER_SEND ? "send" : "recv");
			x->err_peer = xf[i].peer;
		}
	}
	OHC_ERROR(OHC_SS_COLL,
		  "rank %u: %s timed out (exec timeout) in step %u waiting "
		  "for peers %s",
		  x->rank, x->what, step + 1, peers);
}

/* Run one step: post everything, then progress until all complete. */
static ohc_status_t exec_step(struct ohc_exec *x, const struct ohc_xfer *xf,
			      unsigned n, unsigned step, struct ohc_req *reqs)
{
	unsigned pending = 0, posted, polls = 0, idle = 0, check = 16;
	uint64_t idle_since = 0, now;
	int spinning = 1;	 /* until a reading says the spin is over */
	uint64_t next_check = 0; /* from the first idle sleep on */
	int spent = 0;		 /* a wait went on long (exec_wait_long) */
	/* the pace's mode, read once: a thread-local costs a call per poll */
	bool yielding = pace.yielding;
	ohc_status_t status;

	for (unsigned i = 0; i < n; i++) {
		reqs[i].status = OHC_OK;
		if (xf[i].kind == OHC_XFER_COPY ||
		    xf[i].kind == OHC_XFER_REDUCE) {
			exec_local(x, &xf[i]);
			continue;
		}
		status = exec_post(x, &xf[i], &reqs[i], step);
		if (status < 0) {
			OHC_ERROR(OHC_SS_COLL,
				  "rank %u: %s: posting to peer %u failed: %s",
				  x->rank, x->what, xf[i].peer,
				  ohc_status_str(status));
			reqs[i].status = status;
			exec_cancel(x, xf, reqs, n, OHC_ERR_CANCELED, status);
			x->err_peer = xf[i].peer;
			return status;
		}
		pending++;
	}

	posted = pending;
	while (pending) {
		unsigned moved = exec_progress(x);

		pending = 0;
		for (unsigned i = 0; i < n; i++) {
			ohc_status_t st = __atomic_load_n(&reqs[i].status,
							  __ATOMIC_ACQUIRE);

			if (st == OHC_INPROGRESS) {
				pending++;
				continue;
			}
			if (st >= 0)
				continue;
			x->err_peer = xf[i].peer;
			if (st == OHC_ERR_DESYNC) {
				char why[160];

				sig_diff(&reqs[i].sig, &reqs[i].got_sig, why,
					 sizeof(why));
				OHC_ERROR(OHC_SS_COLL,
					  "rank %u: %s does not match the "
					  "operation of rank %u (%s)",
					  x->rank, x->what, xf[i].peer, why);
			} else {
				OHC_ERROR(OHC_SS_COLL,
					  "rank %u: %s: %s with peer %u "
					  "failed: %s",
					  x->rank, x->what,
					  xf[i].kind == OHC_XFER_SEND ? "send"
								      : "recv",
					  xf[i].peer, ohc_status_str(st));
			}
			exec_cancel(x, xf, reqs, n, OHC_ERR_CANCELED, st);
			return st;
		}
		if (!pending)
			break;
		if (moved) {
			idle_since = 0;
			idle = 0;
			check = 16;
			spinning = 1;
			continue;
		}
		/*
		 * Idle. The clock is read at the check-th idle poll of the
		 * spell only (every poll when not spinning), and that reading
		 * serves the spin, the deadline, the peer checks and the
		 * sleep: clock_gettime is a system call plus a device read
		 * where the clocksource has no vDSO reader (HPET in the TCG
		 * VMs: ~7 per HcclSend/Recv message on the two ranks there).
		 * A message that arrives within 16 polls costs none. The spin
		 * counts from the first reading (poll 16) and the polls
		 * between readings double while spinning (16, 32, 64...), so
		 * it ends within twice OPENHCCL_SPIN_US; sleeping, one
		 * reading per 16 polls (each ends in a sleep anyway).
		 */
		polls++;
		if (x->spin_ns && ++idle < check) {
			if (spinning && yielding && !(polls & yield_mask))
				exec_yield();
			continue;
		}
		now = ohc_time_ns();
		if (!idle_since)
			idle_since = now;
		if (spinning && x->spin_ns && !spent &&
		    now - idle_since >=
			    OHC_MIN(x->spin_ns, EXEC_LONG_WAIT_NS)) {
			spent = 1;
			exec_wait_long(now);
			yielding = pace.yielding;
		}
		if (spinning && now - idle_since < x->spin_ns) {
			check = idle * 2;
			if (yielding && !(polls & yield_mask))
				exec_yield();
			continue;
		}
		if (spinning && x->flight) /* a long wait: note on whom */
			for (unsigned i = 0; i < n; i++)
				if (reqs[i].status == OHC_INPROGRESS &&
				    (xf[i].kind == OHC_XFER_SEND ||
				     xf[i].kind == OHC_XFER_RECV)) {
					x->flight->wait_peer = xf[i].peer;
					break;
				}
		spinning = 0;
		check = idle + 16;

		/* Idle: check abort, deadline and peers, then sleep. */
		if (x->abort_flag &&
		    __atomic_load_n(x->abort_flag, __ATOMIC_ACQUIRE)) {
			OHC_ERROR(OHC_SS_COLL,
				  "rank %u: %s aborted: communicator is "
				  "being destroyed or failed",
				  x->rank, x->what);
			exec_cancel(x, xf, reqs, n, OHC_ERR_CANCELED,
				    OHC_ERR_CANCELED);
			return OHC_ERR_CANCELED;
		}
		if (ohc_deadline_passed_at(x->deadline, now)) {
			exec_log_waiting(x, xf, reqs, n, step);
			exec_cancel(x, xf, reqs, n, OHC_ERR_TIMEOUT,
				    OHC_ERR_TIMEOUT);
			return OHC_ERR_TIMEOUT;
		}
		if (!next_check)
			next_check = idle_since + EXEC_WAIT_MS * 1000000ull;
		if (now >= next_check) {
			for (unsigned i = 0; i < n; i++) {
				struct ohc_ep *ep;

				if (reqs[i].status != OHC_INPROGRESS)
					continue;
				ep = x->eps[xf[i].peer];
				status = ep->iface->ops->ep_check(ep);
				if (status < 0) {
					x->err_peer = xf[i].peer;
					OHC_ERROR(
						OHC_SS_COLL,
						"rank %u: %s: peer rank %u %s",
						x->rank, x->what, xf[i].peer,
						status == OHC_ERR_DESYNC
							? "stopped on a "
							  "mismatched "
							  "operation"
							: "is gone or "
							  "failed");
					exec_cancel(x, xf, reqs, n, status,
						    status);
					return status;
				}
			}
			next_check = now + EXEC_WAIT_MS * 1000000ull;
		}
		exec_sleep(x, now);
	}
	if (x->spin_ns && posted)
		exec_step_seen();
	if (x->stats) {
		for (unsigned i = 0; i < n; i++) {
			if (xf[i].kind != OHC_XFER_RECV ||
			    reqs[i].path >= OHC_PATH_N)
				continue;
			x->stats->bytes[reqs[i].path] += xf[i].len;
			x->stats->msgs[reqs[i].path]++;
		}
	}
	return OHC_OK;
}

ohc_status_t ohc_exec_run(struct ohc_exec *x, const struct ohc_sched *s)
{
	struct ohc_req stack_reqs[EXEC_STACK_REQS], *reqs = stack_reqs;
	unsigned max = 0, begin = 0;
	ohc_status_t status = OHC_OK;

	if (s->status < 0) {
		OHC_ERROR(OHC_SS_COLL, "rank %u: %s: cannot build schedule: %s",
			  x->rank, x->what, ohc_status_str(s->status));
		return s->status;
	}
	for (unsigned i = 0; i < s->nsteps; i++) {
		unsigned n = s->step_end[i] - (i ? s->step_end[i - 1] : 0);

		max = n > max ? n : max;
	}
	if (max > EXEC_STACK_REQS) {
		reqs = calloc(max, sizeof(*reqs));
		if (!reqs)
			return OHC_ERR_NO_MEMORY;
	}
	for (unsigned i = 0; i < s->nsteps && status == OHC_OK; i++) {
		unsigned end = s->step_end[i];

		if (x->flight) {
			x->flight->step = i;
			x->flight->wait_peer = OHC_FLIGHT_NO_PEER;
		}
		status = exec_step(x, &s->xfers[begin], end - begin, i, reqs);
		begin = end;
	}
	if (status < 0 && x->flight && x->err_peer != OHC_FLIGHT_NO_PEER)
		x->flight->wait_peer = x->err_peer;
	if (reqs != stack_reqs)
		free(reqs);
	return status;
}
