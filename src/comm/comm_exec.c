/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Operations of a communicator: allocation (private copies of the
 * caller's arrays), launch (signature, sequence number, zero-copy pins,
 * inline or on a stream), execution (refused on a failed or suspended
 * communicator; the schedule from the plan cache or built, with large
 * scratch kept for the next build; run by core/exec.c), the profile
 * record of an op, and the count of ops in flight that destroy waits on.
 */
#include <stdlib.h>
#include <string.h>

#include "algo/reduce.h"
#include "comm/comm.h"
#include "comm/comm_int.h"
#include "core/exec.h"
#include "util/config.h"
#include "util/log.h"
#include "util/time.h"

/*
 * An operation on a failed communicator fails at once with the first
 * error. Only the first refusal is logged (the failure itself was, where
 * it was detected); the rest are counted and the count is logged at
 * destroy: a program that keeps calling after a peer died must not write
 * a line per call.
 */
static ohc_status_t comm_refuse(struct ohc_comm *comm, enum ohc_coll_op op,
				int failed)
{
	if (__atomic_fetch_add(&comm->refused, 1, __ATOMIC_RELAXED) == 0)
		OHC_ERROR(OHC_SS_COLL,
			  "rank %u: %s on communicator '%s' refused: %s; "
			  "later operations on it fail the same way, counted "
			  "but not logged",
			  comm->rank, ohc_coll_op_name(op), comm->name,
			  failed == OHC_ERR_SUSPENDING
				  ? "the communicator is suspended "
				    "(HcclCommSuspend)"
				  : ohc_status_str(failed));
	return failed;
}

/*
 * Zero-copy (src/zerocopy/README.md): the byte extents of an op's input
 * and output, for the ops that may run on exported memory.
 */
static int op_extents(const struct ohc_coll_args *a, size_t *slen_p,
		      size_t *rlen_p)
{
	size_t v = (size_t)a->count * a->esize;

	switch (a->op) {
	case OHC_COLL_ALLREDUCE:
	case OHC_COLL_BROADCAST:
		*slen_p = *rlen_p = v;
		return 1;
	case OHC_COLL_ALLGATHER:
		*slen_p = v;
		*rlen_p = v * a->nranks;
		return 1;
	case OHC_COLL_REDUCE_SCATTER:
		*slen_p = v * a->nranks;
		*rlen_p = v;
		return 1;
	case OHC_COLL_ALLTOALL:
		*slen_p = *rlen_p = v * a->nranks;
		return 1;
	default:
		return 0;
	}
}

/*
 * Ops on exported memory use algorithms that send only out of the user's
 * buffers (no scratch), so that every message can go zero-copy (shm peers
 * read the sender's memory, verbs rendezvous writes into the receiver's);
 * the usual selection when those decline or when HCCL_ALGO says
 * otherwise. Over RDMA that selection builds unsliced: a pipeline slice
 * below OPENHCCL_RDMA_RNDV_KB would travel through the slots.
 */
static ohc_status_t comm_build(struct ohc_op *op, struct ohc_sched *s,
			       const struct ohc_algo **algo_p)
{
	const struct ohc_coll_args *a = &op->args;
	const struct ohc_algo *pick = NULL;
	struct ohc_coll_args unsliced;

	if (op->zc.n && !(a->algo_override && a->algo_override[0])) {
		switch (a->op) {
		case OHC_COLL_ALLREDUCE:
			pick = &ohc_algo_allreduce_ring;
			break;
		case OHC_COLL_ALLGATHER:
			pick = &ohc_algo_allgather_ring;
			break;
		case OHC_COLL_REDUCE_SCATTER:
			pick = &ohc_algo_reduce_scatter_direct;
			break;
		case OHC_COLL_ALLTOALL:
			pick = &ohc_algo_alltoall_pairwise;
			break;
		default:
			break;
		}
	}
	if (pick && (!pick->accepts || pick->accepts(a) == OHC_OK) &&
	    pick->build(a, s) == OHC_OK) {
		*algo_p = pick;
		return OHC_OK;
	}
	if (pick) { /* declined: start over with the usual selection */
		ohc_sched_fini(s);
		ohc_sched_init(s);
	}
	if (op->zc.n && a->link == OHC_LINK_RDMA && !a->pipeline_slices) {
		unsliced = *a;
		unsliced.pipeline_slices = 1;
		a = &unsliced;
	}
	return ohc_algo_build(a, s, algo_p);
}

/*
 * Large scratch (recursive halving's partials, say) is kept for the next
 * schedule instead of freed: a fresh allocation of megabytes comes from
 * mmap, and every op then faulted its pages in again (a quarter of a
 * 4 MiB ReduceScatter's time at 4 ranks). The largest is kept, up to
 * SPARE_MAX, and offered to the next build (ohc_sched_offer). Under
 * exec_lock.
 */
#define SPARE_MIN ((size_t)128 << 10)
#define SPARE_MAX ((size_t)256 << 20)

static void scratch_keep(struct ohc_comm *comm, struct ohc_sched *s)
{
	if (!s->scratch || s->scratch_cap < SPARE_MIN ||
	    s->scratch_cap > SPARE_MAX || s->scratch_cap <= comm->spare_bytes)
		return;
	free(comm->spare);
	comm->spare = s->scratch;
	comm->spare_bytes = s->scratch_cap;
	s->scratch = NULL;
	s->scratch_bytes = s->scratch_cap = 0;
}

/*
 * Profiling (only while ohc_rt_prof_on()). comm_execute notes the
 * algorithm and the ranks the schedule sends to or receives from (in
 * order of first use) for the thread that runs the op; the op's record
 * is filled right after, on that thread (the runtime's describe call, or
 * op_run_profiled), so the note needs no room in struct ohc_op. Peers at
 * or above PROF_PEER_BITS are deduplicated among the listed ones only, so
 * at those rank counts npeers may count one twice.
 */
#define PROF_PEER_BITS 4096u
struct prof_note {
	const struct ohc_op *op; /* the op noted */
	const char *algo;
	uint32_t npeers;
	uint32_t peers[OHC_RT_PROF_PEERS];
};
static __thread struct prof_note prof_note;

static void op_prof_note(const struct ohc_op *op, const struct ohc_algo *algo,
			 const struct ohc_sched *run)
{
	struct prof_note *pn = &prof_note;
	uint64_t seen[PROF_PEER_BITS / 64];
	uint32_t n = 0;

	/* clear what the communicator's ranks can use */
	memset(seen, 0,
	       (OHC_MIN(op->args.nranks, PROF_PEER_BITS) + 63) / 64 * 8);
	pn->op = op;
	pn->algo = algo ? algo->name : NULL;
	for (unsigned i = 0; i < run->nxfers; i++) {
		const struct ohc_xfer *x = &run->xfers[i];
		uint32_t p = x->peer;
		bool dup = false;

		if ((x->kind != OHC_XFER_SEND && x->kind != OHC_XFER_RECV) ||
		    p == op->args.rank)
			continue;
		if (p < PROF_PEER_BITS) {
			dup = seen[p / 64] & (1ull << (p % 64));
			seen[p / 64] |= 1ull << (p % 64);
		} else {
			for (uint32_t j = 0; j < n && j < OHC_RT_PROF_PEERS;
			     j++)
				dup = dup || pn->peers[j] == p;
		}
		if (dup)
			continue;
		if (n < OHC_RT_PROF_PEERS)
			pn->peers[n] = p;
		n++;
	}
	pn->npeers = n;
}

/* What the profile records of an op (the runtime filled times and place). */
static void op_prof_fill(const struct ohc_op *op, struct ohc_rt_prof_rec *rec)
{
	struct ohc_comm *comm = op->comm;
	const struct prof_note *pn = &prof_note;
	const char *name = __atomic_load_n(&comm->prof_name, __ATOMIC_ACQUIRE);

	if (!name) { /* once per communicator; the same pointer if raced */
		name = ohc_rt_prof_intern(comm->name);
		__atomic_store_n(&comm->prof_name, name, __ATOMIC_RELEASE);
	}
	rec->kind = OHC_RT_PROF_HCCL;
	rec->name = ohc_coll_api_name(op->args.op);
	rec->comm = name;
	rec->bytes = ohc_coll_bytes(&op->args);
	rec->seq = op->sig.seq;
	rec->rank = (int32_t)op->args.rank;
	rec->nranks = (int32_t)op->args.nranks;
	if (pn->op == op) { /* not when it failed before building */
		uint32_t n = OHC_MIN(pn->npeers, (uint32_t)OHC_RT_PROF_PEERS);

		rec->algo = pn->algo;
		rec->npeers = (uint16_t)OHC_MIN(pn->npeers, 0xffffu);
		memcpy(rec->peers, pn->peers, n * sizeof(rec->peers[0]));
		prof_note.op = NULL;
	}
}

static void op_task_describe(const struct ohc_rt_task *task,
			     struct ohc_rt_prof_rec *rec)
{
	op_prof_fill((const struct ohc_op *)task, rec);
}

static int op_is_p2p(enum ohc_coll_op op)
{
	return op == OHC_COLL_SEND || op == OHC_COLL_RECV ||
	       op == OHC_COLL_BATCH_SEND_RECV;
}

/* What an op's messages carry for the peers to check (the sequence
 * number aside, which collectives take at launch). */
static struct ohc_sig op_sig(const struct ohc_coll_args *args)
{
	struct ohc_sig sig = {0};

	if (op_is_p2p(args->op)) {
		/*
		 * Point-to-point messages match in FIFO order per pair and may
		 * be batched with other counts and types: only the kind and
		 * the length (checked per message) must agree.
		 */
		sig.op = OHC_COLL_SEND;
		return sig;
	}
	sig.op = (uint8_t)args->op;
	sig.dtype = (uint8_t)args->dtype;
	sig.redop = (uint8_t)args->redop;
	sig.root = args->root;
	/* V variants' local counts differ by design */
	sig.count = args->send_counts || args->recv_counts ? 0 : args->count;
	return sig;
}

/*
 * Run schedule run of the op that args and sig describe: the executor's
 * context, the flight record, the transfer counts, and the communicator
 * failed on a peer's or time's error. Under exec_lock.
 */
static ohc_status_t comm_run(struct ohc_comm *comm,
			     const struct ohc_coll_args *args,
			     struct ohc_sig sig, const struct ohc_sched *run,
			     const struct ohc_algo *algo, struct ohc_zc_pin *zc)
{
	struct ohc_xfer_stats st = {{0}, {0}};
	struct ohc_exec x;
	ohc_status_t status;

	memset(&x, 0, sizeof(x));
	x.rank = comm->rank;
	x.nranks = comm->nranks;
	x.eps = comm->eps;
	x.ifaces = comm->ifaces;
	x.nifaces = comm->nifaces;
	/* second-scale: the coarse clock (no clocksource read per op) */
	x.deadline =
		comm->cfg.exec_timeout_s
			? ohc_deadline_coarse_after_ms(
				  (uint64_t)comm->cfg.exec_timeout_s * 1000)
			: OHC_DEADLINE_NEVER;
	x.spin_ns = comm->spin_ns;
	x.yield_first = comm->yield_first;
	x.abort_flag = &comm->abort_flag;
	/* point-to-point messages are copied, never reduced */
	if (!op_is_p2p(args->op))
		x.reduce = ohc_reduce_get(args->dtype, args->redop);
	x.esize = (unsigned)args->esize;
	x.sig = sig;
	x.what = ohc_coll_op_name(args->op);
	x.stats = &st;
	x.err_peer = OHC_FLIGHT_NO_PEER;
	x.flight = ohc_flight_begin(&comm->flight, sig.seq, x.what,
				    algo ? algo->name : NULL,
				    args->count * args->esize, run->nsteps);
	if (zc && zc->n) {
		x.mem_lookup = ohc_zc_mem_lookup;
		x.mem_ctx = zc;
	}
	status = ohc_exec_run(&x, run);
	ohc_flight_end(x.flight, status);
	for (int i = 0; i < OHC_PATH_N; i++) {
		if (!st.msgs[i]) /* most ops use one path: skip the others */
			continue;
		__atomic_fetch_add(&comm->stats.bytes[i], st.bytes[i],
				   __ATOMIC_RELAXED);
		__atomic_fetch_add(&comm->stats.msgs[i], st.msgs[i],
				   __ATOMIC_RELAXED);
	}
	if (status < 0 && __atomic_load_n(&comm->suspended, __ATOMIC_ACQUIRE))
		status = OHC_ERR_SUSPENDING; /* canceled by HcclCommSuspend */
	/* The first failure of a peer or of time: show what led to it. */
	if ((status == OHC_ERR_TIMEOUT || status == OHC_ERR_REMOTE ||
	     status == OHC_ERR_DESYNC) &&
	    !__atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE))
		ohc_comm_flight_dump(comm);
	if (status < 0)
		ohc_comm_fail(comm, status);
	return status;
}

/* The first error the communicator failed with (or its suspension), else 0. */
static int comm_refusal(struct ohc_comm *comm)
{
	if (__atomic_load_n(&comm->suspended, __ATOMIC_ACQUIRE))
		return OHC_ERR_SUSPENDING;
	return __atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE);
}

static ohc_status_t comm_execute(struct ohc_comm *comm, struct ohc_op *op)
{
	const struct ohc_algo *algo = NULL;
	struct ohc_plan_key key;
	struct ohc_plan *plan;
	struct ohc_sched s, *run;
	int cacheable;
	ohc_status_t status;
	int failed;
	OHC_LOG_SCOPE(comm->name, (int)comm->rank);

	pthread_mutex_lock(&comm->exec_lock);
	failed = comm_refusal(comm);
	if (failed) {
		status = comm_refuse(comm, op->args.op, failed);
		goto out;
	}
	op->args.host_of = comm->host_of;
	op->args.nhosts = comm->nhosts;
	op->args.host_ranks = comm->host_ranks;
	op->args.host_cpus = comm->host_cpus;
	cacheable = ohc_plan_key_of(&op->args, op->zc.n != 0, &key);
	plan = cacheable ? ohc_plan_cache_find(&comm->plans, &key) : NULL;
	if (plan) {
		run = &plan->sched;
		algo = plan->algo;
	} else {
		ohc_sched_init(&s);
		ohc_sched_offer(comm->spare, comm->spare_bytes);
		status = comm_build(op, &s, &algo);
		if (!ohc_sched_offer_end()) { /* taken (or none): not ours */
			comm->spare = NULL;
			comm->spare_bytes = 0;
		}
		if (status < 0) {
			ohc_sched_fini(&s);
			goto out;
		}
		plan = cacheable ? ohc_plan_cache_insert(&comm->plans, &key,
							 algo, &s)
				 : NULL;
		run = plan ? &plan->sched : &s;
	}
	if (OHC_UNLIKELY(ohc_rt_prof_on()))
		op_prof_note(op, algo, run);
	status = comm_run(comm, &op->args, op->sig, run, algo, &op->zc);
	if (run == &s) {
		scratch_keep(comm, &s);
		ohc_sched_fini(&s);
	}
out:
	pthread_mutex_unlock(&comm->exec_lock);
	return status;
}

/*
 * An op is done. While other ops are in flight, a decrement needs no lock:
 * they keep the communicator alive. The last one out (to zero) takes the
 * lock and wakes the idle waiters only when some are registered
 * (ohc_comm_wait_idle, destroy): a destroy may free the communicator as
 * soon as it sees zero, so that decrement happens under the lock, and
 * nothing touches comm after it. With nobody waiting the decrement is
 * the last access and needs no lock (a lock, a broadcast and an unlock
 * were a tenth of the instructions of a small synchronous AllReduce); a
 * waiter that registers just after the check is not woken, and sees
 * zero at the end of its wait's slice (comm_wait_locked).
 */
static void op_done(struct ohc_comm *comm)
{
	unsigned n = __atomic_load_n(&comm->inflight, __ATOMIC_RELAXED);

	while (n > 1)
		if (__atomic_compare_exchange_n(&comm->inflight, &n, n - 1, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return;
	if (!__atomic_load_n(&comm->idle_waiters, __ATOMIC_SEQ_CST) &&
	    __atomic_compare_exchange_n(&comm->inflight, &n, n - 1, 0,
					__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&comm->lock);
	if (__atomic_sub_fetch(&comm->inflight, 1, __ATOMIC_ACQ_REL) == 0)
		pthread_cond_broadcast(&comm->idle_cond);
	pthread_mutex_unlock(&comm->lock);
}

/* The aclError a stream reports for an op's status. */
static int op_status_rt(ohc_status_t status)
{
	switch (status) {
	case OHC_OK:
		return 0;
	case OHC_ERR_TIMEOUT:
		return OHC_RT_ERR_TASK_TIMEOUT;
	case OHC_ERR_REMOTE:
	case OHC_ERR_CANCELED:
		return OHC_RT_ERR_LINK;
	case OHC_ERR_DESYNC:
	case OHC_ERR_INVALID:
		return OHC_RT_ERR_PARAM;
	default:
		return OHC_RT_ERR_INTERNAL;
	}
}

static int op_task_run(struct ohc_rt_task *task)
{
	struct ohc_op *op = (struct ohc_op *)task;
	ohc_status_t status;

	if (op->notify)
		op->notify->start(op->notify_arg, op->notify_tag);
	status = comm_execute(op->comm, op);
	if (op->notify) {
		op->notified = true;
		op->notify->done(op->notify_arg, op->notify_tag, status);
	}
	return op_status_rt(status);
}

/* An op without a stream, run here and recorded (profile running). */
static ohc_status_t op_run_profiled(struct ohc_comm *comm, struct ohc_op *op)
{
	struct ohc_rt_prof_rec rec;
	ohc_status_t status;

	memset(&rec, 0, sizeof(rec));
	rec.start_ns = ohc_time_ns();
	status = comm_execute(comm, op);
	rec.end_ns = ohc_time_ns();
	rec.enq_ns = rec.start_ns;
	rec.status = status == OHC_OK ? 0 : op_status_rt(status);
	rec.dev = -1; /* the thread's current device */
	op_prof_fill(op, &rec);
	ohc_rt_prof_record(&rec);
	return status;
}

static void op_task_release(struct ohc_rt_task *task)
{
	struct ohc_op *op = (struct ohc_op *)task;
	struct ohc_comm *comm = op->comm;

	if (op->notify && !op->notified) /* skipped by its stream */
		op->notify->done(op->notify_arg, op->notify_tag,
				 OHC_ERR_CANCELED);
	ohc_zc_unpin(&op->zc);
	ohc_op_recycle(comm, op); /* before op_done: comm may go right after */
	op_done(comm);
}

/*
 * Allocate an operation and take copies of everything the caller may reuse
 * once the call returns (count/displacement arrays, batch items): the
 * schedule is built later, on the stream.
 */
struct ohc_op *ohc_op_alloc(struct ohc_comm *comm,
			    const struct ohc_coll_args *args)
{
	const uint64_t *const *arrays[4] = {
		&args->send_counts, &args->send_displs, &args->recv_counts,
		&args->recv_displs};
	size_t vbytes = (size_t)comm->nranks * sizeof(uint64_t), tail = 0;
	struct ohc_op *op;
	char *p;

	for (int i = 0; i < 4; i++)
		if (*arrays[i])
			tail += vbytes;
	tail += (size_t)args->nitems * sizeof(*args->items);
	op = tail ? NULL : ohc_op_pool_take(comm);
	if (op) {
		memset(op, 0, sizeof(*op));
		op->pooled = true;
	} else if (!(op = calloc(1, sizeof(*op) + tail))) {
		return NULL;
	}
	op->comm = comm;
	op->args = *args;
	p = op->tail;
	if (args->send_counts) {
		op->args.send_counts = memcpy(p, args->send_counts, vbytes);
		p += vbytes;
	}
	if (args->send_displs) {
		op->args.send_displs = memcpy(p, args->send_displs, vbytes);
		p += vbytes;
	}
	if (args->recv_counts) {
		op->args.recv_counts = memcpy(p, args->recv_counts, vbytes);
		p += vbytes;
	}
	if (args->recv_displs) {
		op->args.recv_displs = memcpy(p, args->recv_displs, vbytes);
		p += vbytes;
	}
	if (args->nitems)
		op->args.items = memcpy(p, args->items,
					args->nitems * sizeof(*args->items));
	op->args.rank = comm->rank;
	op->args.nranks = comm->nranks;
	op->args.deterministic =
		__atomic_load_n(&comm->cfg.deterministic, __ATOMIC_ACQUIRE);
	op->args.link = comm->link_class;
	op->args.algo_override = comm->cfg.algo;
	op->args.pipeline_slices = (uint32_t)ohc_env()->pipeline_slices;
	op->task.run = op_task_run;
	op->task.release = op_task_release;
	op->task.describe = op_task_describe;
	op->task.name = ohc_coll_op_name(args->op);
	return op;
}

ohc_status_t ohc_op_launch(struct ohc_op *op, void *stream)
{
	struct ohc_comm *comm = op->comm;
	const struct ohc_coll_args *args = &op->args;
	size_t slen = 0, rlen = 0;
	ohc_status_t status;
	int ret;

	op->sig = op_sig(args);
	/* lock-free: the stream worker finishing ops does not contend */
	if (!op_is_p2p(args->op))
		op->sig.seq = __atomic_fetch_add(&comm->coll_seq, 1,
						 __ATOMIC_RELAXED);
	__atomic_fetch_add(&comm->inflight, 1, __ATOMIC_ACQ_REL);
	/* Exported buffers stay pinned until the op is done. */
	if (op_extents(args, &slen, &rlen))
		ohc_zc_pin(args->sbuf, slen, args->rbuf, rlen, &op->zc);

	if (!stream) {
		if (OHC_UNLIKELY(ohc_rt_prof_on()))
			status = op_run_profiled(comm, op);
		else
			status = comm_execute(comm, op);
		ohc_zc_unpin(&op->zc);
		ohc_op_recycle(comm, op);
		op_done(comm);
		return status;
	}
	/* a stream may queue deep (collectives, group batches, tasks) */
	if (OHC_UNLIKELY(
		    !__atomic_load_n(&comm->op_pool_deep, __ATOMIC_RELAXED)))
		ohc_op_pool_deepen(comm);
	ret = ohc_rt_stream_submit(stream, &op->task);
	if (ret != 0) {
		OHC_ERROR(OHC_SS_API,
			  "cannot enqueue %s on stream %p (acl "
			  "error %d)",
			  op->task.name, stream, ret);
		ohc_zc_unpin(&op->zc);
		ohc_op_recycle(comm, op);
		op_done(comm);
		return OHC_ERR_INVALID;
	}
	return OHC_OK;
}

ohc_status_t ohc_comm_submit(struct ohc_comm *comm,
			     const struct ohc_coll_args *args, void *stream)
{
	int failed = __atomic_load_n(&comm->failed, __ATOMIC_ACQUIRE);
	struct ohc_op *op;

	if (__atomic_load_n(&comm->suspended, __ATOMIC_ACQUIRE))
		return comm_refuse(comm, args->op, OHC_ERR_SUSPENDING);
	if (failed)
		return comm_refuse(comm, args->op, failed);
	op = ohc_op_alloc(comm, args);
	if (!op)
		return OHC_ERR_NO_MEMORY;
	if (ohc_group_depth() > 0)
		return ohc_group_add(op, stream);
	return ohc_op_launch(op, stream);
}

/*
 * HcclSend/HcclRecv without a stream, outside a group (else, and while a
 * profile records, ohc_comm_submit takes it): one message, run here. Its
 * schedule is the one transfer, on the stack: no op from the pool, no plan to
 * look up, no schedule to build; what comm_execute does around the run
 * (refusal, flight record, counts, failure) is the same (comm_run). On a
 * latency-bound link every instruction of a synchronous message is on the round
 * trip. While a profile records, the usual path runs, which writes the op's
 * record.
 */
ohc_status_t ohc_comm_p2p(struct ohc_comm *comm,
			  const struct ohc_coll_args *args, void *stream)
{
	bool send = args->op == OHC_COLL_SEND;
	struct ohc_xfer xf = {
		.kind = send ? OHC_XFER_SEND : OHC_XFER_RECV,
		.rkind = OHC_RECV_COPY,
		.peer = args->peer,
		.src = args->sbuf,
		.dst = args->rbuf,
		.len = (size_t)(args->count * args->esize),
	};
	unsigned end = 1;
	const struct ohc_sched s = {.xfers = &xf,
				    .nxfers = 1,
				    .cap = 1,
				    .step_end = &end,
				    .nsteps = 1,
				    .step_cap = 1};
	ohc_status_t status;
	int failed;

	if (stream || ohc_group_depth() > 0 || OHC_UNLIKELY(ohc_rt_prof_on()))
		return ohc_comm_submit(comm, args, stream);
	__atomic_fetch_add(&comm->inflight, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_lock(&comm->exec_lock);
	failed = comm_refusal(comm);
	if (failed)
		status = comm_refuse(comm, args->op, failed);
	else
		status = comm_run(comm, args, op_sig(args), &s,
				  send ? &ohc_algo_send : &ohc_algo_recv, NULL);
	pthread_mutex_unlock(&comm->exec_lock);
	op_done(comm);
	return status;
}
