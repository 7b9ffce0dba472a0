/* SPDX-License-Identifier: Apache-2.0 */
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec.h"
#include "util/log.h"
#include "util/time.h"

#define EXEC_WAIT_MS 100     /* longest single sleep: bounds check latency */
#define EXEC_STACK_REQS 64
#define EXEC_YIELD_QUICK_NS 5000 /* a yield this short ran no one else */
#define EXEC_YIELD_MASK_MAX 1023 /* yield at least every 1024 polls */

/*
 * Idle polls between two yields of this thread, minus one: 16 while
 * yielding lets other threads run (a peer preempted onto our CPU), twice
 * as many after each yield that returned at once (nobody else wanted the
 * CPU: the syscall only delayed our reaction to the peer's message).
 */
static __thread unsigned yield_mask = 15;

/*
 * Let a peer that was preempted onto our CPU run. Measured on a loaded
 * 2-core host (all_reduce_test -np 2, 8 B..4 KiB): yielding every 16 polls
 * beat every 64 by ~1.5x and polling 2 us before yielding by ~2x.
 */
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
			off += snprintf(peers + off, sizeof(peers) - off,
					"%s%u (%s)", off ? ", " : "",
					xf[i].peer,
					xf[i].kind == OHC_XFER_SEND ? "send"
								    : "recv");
			x->err_peer = xf[i].peer;
		}
	}
	OHC_ERROR(OHC_SS_COLL,
		  "rank %u: %s timed out (exec timeout) in step %u waiting "
		  "for peers %s",
		  x->rank, x->what, step, peers);
}

/* Run one step: post everything, then progress until all complete. */
static ohc_status_t exec_step(struct ohc_exec *x, const struct ohc_xfer *xf,
			      unsigned n, unsigned step, struct ohc_req *reqs)
{
	unsigned pending = 0, polls = 0, idle = 0, check = 16;
	uint64_t idle_since = 0, now;
	int spinning = 1;	 /* until a reading says the spin is over */
	uint64_t next_check = 0; /* from the first idle sleep on */
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
			if (spinning && !(polls & yield_mask))
				exec_yield();
			continue;
		}
		now = ohc_time_ns();
		if (!idle_since)
			idle_since = now;
		spinning = now - idle_since < x->spin_ns;
		if (spinning) {
			check = idle * 2;
			if (!(polls & yield_mask))
				exec_yield();
			continue;
		}
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
					OHC_ERROR(OHC_SS_COLL,
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

		status = exec_step(x, &s->xfers[begin], end - begin, i, reqs);
		begin = end;
	}
	if (reqs != stack_reqs)
		free(reqs);
	return status;
}
