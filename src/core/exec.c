/* SPDX-License-Identifier: Apache-2.0 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec.h"
#include "core/wait.h"
#include "util/log.h"
#include "util/time.h"

#define EXEC_STACK_REQS 64

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

/* The transports (bits: indices into x->ifaces) that hold the step's
 * pending requests. */
static uint32_t exec_busy(const struct ohc_exec *x, const struct ohc_xfer *xf,
			  const struct ohc_req *reqs, unsigned n)
{
	uint32_t busy = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct ohc_iface *iface;

		if (reqs[i].status != OHC_INPROGRESS)
			continue;
		iface = x->eps[xf[i].peer]->iface;
		for (unsigned k = 0; k < x->nifaces; k++)
			if (x->ifaces[k] == iface) {
				busy |= k < OHC_WAIT_MAX_IFACES ? 1u << k : 0;
				break;
			}
	}
	return busy;
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

/*
 * Every request of a step finished while it was posted (an inline verbs
 * fragment, a ring record with room): the step needs no poll, which on
 * verbs is a locked CQ poll on a sender's way back to its caller.
 */
static bool exec_all_done(const struct ohc_req *reqs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		ohc_status_t st =
			__atomic_load_n(&reqs[i].status, __ATOMIC_ACQUIRE);

		if (st == OHC_INPROGRESS || st < 0)
			return false;
	}
	return true;
}

/* Run one step: post everything, then progress until all complete. */
static ohc_status_t exec_step(struct ohc_exec *x, struct ohc_waiter *w,
			      const struct ohc_xfer *xf, unsigned n,
			      unsigned step, struct ohc_req *reqs)
{
	unsigned pending = 0, posted;
	uint64_t now, idle_since = 0;
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

	posted = pending;
	ohc_waiter_begin(w);
	if (pending && exec_all_done(reqs, n))
		pending = 0;
	while (pending) {
		unsigned moved = ohc_waiter_progress(w);
		bool first = false;

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
			ohc_waiter_moved(w);
			continue;
		}
		now = ohc_waiter_idle(w, &first);
		if (!now)
			continue; /* spinning */
		if (!idle_since)
			idle_since = now;
		if (first && x->flight) /* a long wait: note on whom */
			for (unsigned i = 0; i < n; i++)
				if (reqs[i].status == OHC_INPROGRESS &&
				    (xf[i].kind == OHC_XFER_SEND ||
				     xf[i].kind == OHC_XFER_RECV)) {
					x->flight->wait_peer = xf[i].peer;
					break;
				}

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
			next_check = idle_since + OHC_WAIT_MAX_MS * 1000000ull;
		if (now >= next_check) {
			for (unsigned i = 0; i < n; i++) {
				struct ohc_ep *ep;

				if (reqs[i].status != OHC_INPROGRESS)
					continue;
				ep = x->eps[xf[i].peer];
				status = ep->iface->ops->ep_check(ep);
				/* a peer that ended after its last message:
				 * what it sent may be here, unread yet */
				if (status < 0 && ohc_waiter_progress(w) &&
				    __atomic_load_n(&reqs[i].status,
						    __ATOMIC_ACQUIRE) !=
					    OHC_INPROGRESS)
					continue;
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
			next_check = now + OHC_WAIT_MAX_MS * 1000000ull;
		}
		ohc_waiter_sleep(w, now, x->deadline,
				 exec_busy(x, xf, reqs, n));
	}
	if (posted)
		ohc_waiter_step_done(w);
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
	struct ohc_waiter w;

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
	ohc_waiter_init(&w, x->ifaces, x->nifaces, x->spin_ns, x->yield_first);
	for (unsigned i = 0; i < s->nsteps && status == OHC_OK; i++) {
		unsigned end = s->step_end[i];

		if (x->flight) {
			x->flight->step = i;
			x->flight->wait_peer = OHC_FLIGHT_NO_PEER;
		}
		status = exec_step(x, &w, &s->xfers[begin], end - begin, i,
				   reqs);
		begin = end;
	}
	if (status < 0 && x->flight && x->err_peer != OHC_FLIGHT_NO_PEER)
		x->flight->wait_peer = x->err_peer;
	if (reqs != stack_reqs)
		free(reqs);
	return status;
}
