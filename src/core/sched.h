/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_CORE_SCHED_H
#define OHC_CORE_SCHED_H

/*
 * A schedule: what one rank does for one operation, as a list of steps.
 * Each step is a set of transfers that run concurrently; a step starts
 * when the previous one has completed. Algorithms (src/algo) build
 * schedules from pure rank arithmetic; the executor (exec.h) runs them.
 *
 * Step indices are global: a message carries the sender's step index in
 * its signature and the receiver must post its receive in the step with
 * the same index, or the executor reports a desync. Every rank therefore
 * closes the same sequence of steps up to its last message, including
 * steps in which it has nothing to do (empty steps cost nothing). This
 * also makes schedules deadlock-free under rendezvous sends: the rank
 * with the lowest step index can always complete it.
 *
 * Within a step, local transfers (COPY, REDUCE) run when the step is
 * posted, in order, before the transfers after them are posted; a local
 * transfer must not touch memory that a send or receive posted earlier
 * in the same step reads or writes, and sends and receives of one step
 * must not write memory another transfer of the step reads or writes.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/req.h"
#include "util/status.h"

enum ohc_xfer_kind {
	OHC_XFER_SEND,   /* len bytes at src to peer */
	OHC_XFER_RECV,   /* next message from peer, consumed per rkind */
	OHC_XFER_COPY,   /* local: dst = src */
	OHC_XFER_REDUCE, /* local: dst = src2 OP src */
};

struct ohc_xfer {
	enum ohc_xfer_kind kind;
	enum ohc_recv_kind rkind; /* RECV only */
	uint32_t peer;
	const void *src;
	void *dst;
	const void *src2;
	size_t len;
};

struct ohc_sched {
	struct ohc_xfer *xfers;
	unsigned nxfers, cap;
	unsigned *step_end; /* step i = xfers[step_end[i-1] .. step_end[i]) */
	unsigned nsteps, step_cap;
	ohc_status_t status; /* first allocation failure, sticky */
	void *scratch;       /* owned, freed by ohc_sched_fini */
	size_t scratch_bytes;
	size_t scratch_cap;  /* what scratch can hold (>= scratch_bytes) */
};

void ohc_sched_init(struct ohc_sched *s);
void ohc_sched_fini(struct ohc_sched *s);
/* Builders; failures are remembered in s->status (checked by the executor). */
void ohc_sched_send(struct ohc_sched *s, uint32_t peer, const void *src,
		    size_t len);
void ohc_sched_recv(struct ohc_sched *s, uint32_t peer, void *dst,
		    size_t len);
/* dst = (src2 ? src2 : dst) OP incoming */
void ohc_sched_recv_reduce(struct ohc_sched *s, uint32_t peer, void *dst,
			   const void *src2, size_t len);
void ohc_sched_copy(struct ohc_sched *s, void *dst, const void *src,
		    size_t len);
void ohc_sched_reduce(struct ohc_sched *s, void *dst, const void *a,
		      const void *b, size_t len);
/* Close the current step, even if it is empty (see step indices above). */
void ohc_sched_step(struct ohc_sched *s);
/*
 * Scratch memory for the schedule (temporary blocks of Bruck, recursive
 * halving...): one 64-byte aligned allocation of bytes, owned by s, NULL
 * (and s->status set) on failure. Call once per schedule.
 */
void *ohc_sched_scratch(struct ohc_sched *s, size_t bytes);
/*
 * Offer mem (bytes, from posix_memalign) to the next ohc_sched_scratch
 * of this thread that fits in it and needs at least half of it, which
 * then owns it (scratch_cap says its size); ohc_sched_offer_end withdraws the offer and returns mem if
 * nobody took it, else NULL (the taker owns it, and may have freed it).
 */
void ohc_sched_offer(void *mem, size_t bytes);
void *ohc_sched_offer_end(void);

/* Most slices ohc_sched_pipeline accepts. */
#define OHC_SCHED_MAX_SLICES 1024u

/*
 * Bytes [*lo_p, *hi_p) of slice i (0 <= i < slices) of a len-byte
 * transfer: whole elements of esize bytes split as evenly as possible
 * (slice i gets elements [e*i/slices, e*(i+1)/slices) of e = len/esize),
 * a remainder of len % esize bytes goes to the last slice. Both ends of a
 * message see the same len, so they cut it the same way.
 */
static inline void ohc_sched_slice(size_t len, size_t esize, uint32_t slices,
				   uint32_t i, size_t *lo_p, size_t *hi_p)
{
	uint64_t e = esize ? len / esize : 0, es = esize ? esize : 1;

	*lo_p = (size_t)(e * i / slices * es);
	*hi_p = (size_t)(e * (i + 1) / slices * es);
	if (i + 1 == slices)
		*hi_p = len;
}

/*
 * Pipeline s in slices (software pipelining): every transfer of step k is
 * cut into slices pieces along its byte range (ohc_sched_slice; empty
 * pieces are left out, a zero-length transfer stays whole in slice 0) and
 * piece i goes to step k + i, so the K steps become K + slices - 1 and
 * later pieces of early steps overlap earlier pieces of later steps. In
 * each new step pieces come in order of k, then of their position in step
 * k, so messages of one pair still match in FIFO order on both ends, and
 * a local transfer still runs before everything that followed it.
 *
 * Correct only when the schedule's data dependencies are slice-aligned:
 * whenever a transfer depends on memory an earlier transfer wrote or
 * read, the bytes in question must lie in the same or a later slice of
 * the later transfer (e.g. a tree that forwards exactly the buffer range
 * it received). Algorithms whose step k+1 reads what step k wrote at
 * other offsets (recursive halving, Bruck) must not be pipelined; the
 * algorithm marks itself safe (ohc_algo.cost_sliced) and
 * test/unit/algos.c proves it. slices must be the same on every rank
 * (1: no change). OHC_OK, OHC_ERR_INVALID for slices 0 or above
 * OHC_SCHED_MAX_SLICES, OHC_ERR_NO_MEMORY (s->status is set too).
 */
ohc_status_t ohc_sched_pipeline(struct ohc_sched *s, uint32_t slices,
				size_t esize);

/*
 * Make every rank agree on the operation before any rank can finish it.
 * Weaves empty messages into the first steps of s: in step 0 each rank
 * sends to rank+1 and receives from rank-1, and in step k (1 <= k <=
 * ceil(log2 nranks)) it sends to rank+2^(k-1) and receives from
 * rank-2^(k-1). Every message carries the operation's signature, so
 * neighbours with different calls fail in step 0, and the dissemination
 * after it makes each rank's last step depend on every rank having passed
 * step 0. For operations whose data does not flow from every rank to
 * every rank (broadcast, reduce, scatter), where a mismatch (a different
 * root, say) could otherwise let some ranks finish with wrong data. Costs
 * no extra step when the schedule has that many already.
 *
 * at_once: instead, in step 0 each rank sends to every other rank and
 * receives from every other rank (after the step's own transfers): every
 * rank checks every signature before it can finish step 0, so a mismatch
 * anywhere fails everyone in that step. n-1 messages each way where the
 * dissemination has one, but no step beyond a one-step schedule's.
 */
void ohc_sched_weave_agreement(struct ohc_sched *s, uint32_t rank,
			       uint32_t nranks, bool at_once);

#endif
