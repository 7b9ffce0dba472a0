/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator's timing mode (sim.h, sim.timing): no data, and the
 * whole communicator advanced one global step at a time, so thousands of
 * ranks are cheap.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim/sim_internal.h"

/*
 * A transfer in 8 bytes: kind (3 bits), last of its step (1 bit), peer
 * (20 bits), length (40 bits); an empty step is one T_EMPTY. A rank's
 * window of steps is one forward stream, read once per step: at
 * thousands of ranks the run is bound by memory traffic, not arithmetic.
 */
enum tkind {
	T_SEND,
	T_RECV,
	T_RECV_REDUCE,
	T_COPY,
	T_REDUCE,
	T_EMPTY,
	T_SEND_USER, /* a send out of the user's buffers (zero copy) */
};

#define T_PEER_BITS 20
#define T_LEN_BITS 40
#define T_LAST ((uint64_t)1 << 3)
/* Transfers kept at once (8 bytes each); more are simulated in windows. */
#define T_BUDGET_XFERS ((uint64_t)72 << 20)

static inline uint64_t tx_pack(enum tkind k, uint32_t peer, uint64_t len)
{
	return (uint64_t)k | (uint64_t)peer << 4 | len << (4 + T_PEER_BITS);
}

static inline enum tkind tx_kind(uint64_t x)
{
	return (enum tkind)(x & 7);
}

static inline uint32_t tx_peer(uint64_t x)
{
	return (uint32_t)(x >> 4) & ((1u << T_PEER_BITS) - 1);
}

static inline uint64_t tx_len(uint64_t x)
{
	return x >> (4 + T_PEER_BITS);
}

struct t_rank {
	unsigned nsteps; /* of the whole schedule */
	int x_owned;	 /* x from malloc, not from the arena */
	uint64_t *x;	 /* the window's steps (T_LAST closes each) */
	size_t pos;	 /* start of the current step in x */
	double t;	 /* start of its current step */
	double end;	 /* end of the current step so far */
	const struct ohc_cost_params *c;
	struct ohc_cost_params op_c; /* c of a cache-resident op */
};

/* A send of the current step, queued at its destination. */
struct t_msg {
	uint32_t src, dst;
	int next; /* next message to the same rank, -1 */
	int matched;
	int user; /* out of the user's buffers: zero copy applies */
	uint64_t len;
	double ready;
};

/* A receive of the current step, in posting order. */
struct t_recv {
	uint32_t rank, peer;
	int reduce;
	uint64_t len;
	double posted;
};

struct t_run {
	struct ohc_sim *sim;
	struct t_rank *rk;
	struct t_msg *msgs;
	unsigned nmsgs, msg_cap;
	struct t_recv *recvs;
	unsigned nrecvs, recv_cap;
	int *head, *tail; /* per destination, this step */
	unsigned max_steps;
	uint64_t xfers0; /* rank 0's transfers and markers */
	/*
	 * The window's schedules, bump-allocated in one mapping backed by
	 * huge pages where the kernel offers them: a step touches every
	 * rank's stream, and 4 KiB pages would miss the TLB on each.
	 */
	uint64_t *arena;
	size_t arena_cap, arena_used; /* in transfers */
};

static void t_free_x(struct t_rank *R)
{
	if (R->x_owned)
		free(R->x);
	R->x = NULL;
	R->x_owned = 0;
}

static uint64_t *t_alloc_x(struct t_run *run, struct t_rank *R, size_t n)
{
	t_free_x(R);
	if (run->arena && run->arena_cap - run->arena_used >= n) {
		R->x = run->arena + run->arena_used;
		run->arena_used += n;
		return R->x;
	}
	R->x = malloc(n * sizeof(*R->x));
	R->x_owned = R->x != NULL;
	return R->x;
}

static enum tkind t_kind_of(const struct ohc_sched *s, const struct ohc_xfer *x)
{
	switch (x->kind) {
	case OHC_XFER_SEND:
		return ohc_sim_from_user(s, x) ? T_SEND_USER : T_SEND;
	case OHC_XFER_RECV:
		return x->rkind == OHC_RECV_COPY ? T_RECV : T_RECV_REDUCE;
	case OHC_XFER_COPY:
		return T_COPY;
	default:
		return T_REDUCE;
	}
}

/* Build rank r and keep steps [k0, k1) compactly. */
static ohc_status_t t_build(struct t_run *run, uint32_t r, unsigned k0,
			    unsigned k1, int first)
{
	struct ohc_sim *sim = run->sim;
	struct t_rank *R = &run->rk[r];
	struct ohc_coll_args a;
	struct ohc_sched s;
	ohc_status_t status;
	size_t n = 0;

	status = ohc_sim_build(sim, r, first, &a, &s);
	if (status < 0)
		goto out;
	R->c = ohc_sim_costs(sim, &a, &R->op_c);
	R->nsteps = s.nsteps;
	if (s.nsteps > run->max_steps)
		run->max_steps = s.nsteps;
	t_free_x(R);
	R->pos = 0;
	if (k1 > s.nsteps)
		k1 = s.nsteps;
	if (k0 >= k1)
		goto out;
	for (unsigned k = k0; k < k1; k++)
		n += s.step_end[k] > ohc_sim_step_begin(&s, k)
			     ? s.step_end[k] - ohc_sim_step_begin(&s, k)
			     : 1;
	if (!t_alloc_x(run, R, n)) {
		status = OHC_ERR_NO_MEMORY;
		goto out;
	}
	n = 0;
	for (unsigned k = k0; k < k1; k++) {
		for (unsigned i = ohc_sim_step_begin(&s, k); i < s.step_end[k];
		     i++) {
			const struct ohc_xfer *x = &s.xfers[i];
			enum tkind kind = t_kind_of(&s, x);

			if ((uint64_t)x->len >> T_LEN_BITS) {
				ohc_sim_err(
					sim,
					"rank %u: a %zu-byte transfer is too "
					"long for the timing mode",
					r, x->len);
				status = OHC_ERR_INVALID;
				goto out;
			}
			if ((kind <= T_RECV_REDUCE || kind == T_SEND_USER) &&
			    (x->peer >= sim->nranks || x->peer == r)) {
				ohc_sim_err(
					sim,
					"rank %u step %u: %s with peer %u (of "
					"%u ranks): not a remote rank",
					r, k, ohc_sim_kind_name(x), x->peer,
					sim->nranks);
				status = OHC_ERR_INTERNAL;
				goto out;
			}
			R->x[n++] = tx_pack(kind, x->peer, x->len);
		}
		if (ohc_sim_step_begin(&s, k) == s.step_end[k])
			R->x[n++] = tx_pack(T_EMPTY, 0, 0);
		R->x[n - 1] |= T_LAST;
	}
	if (r == 0)
		run->xfers0 = n;
out:
	ohc_sched_fini(&s);
	return status;
}

/* Costs of a message from a to b: inside a host, cost_intra. */
static const struct ohc_cost_params *t_link(const struct t_run *run, uint32_t a,
					    uint32_t b,
					    const struct ohc_cost_params *c)
{
	const struct ohc_sim *sim = run->sim;

	if (sim->host_of && sim->cost_intra &&
	    sim->host_of[a] == sim->host_of[b])
		return sim->cost_intra;
	return c;
}

static ohc_status_t t_grow(void **arr, unsigned *cap, size_t size)
{
	unsigned ncap = *cap ? 2 * *cap : 1024;
	void *p = realloc(*arr, ncap * size);

	if (!p)
		return OHC_ERR_NO_MEMORY;
	*arr = p;
	*cap = ncap;
	return OHC_OK;
}

static ohc_status_t t_post_send(struct t_run *run, uint32_t src, uint32_t dst,
				uint64_t len, int user, double ready)
{
	struct t_msg *m;

	if (run->nmsgs == run->msg_cap &&
	    t_grow((void **)&run->msgs, &run->msg_cap, sizeof(*m)) < 0)
		return OHC_ERR_NO_MEMORY;
	m = &run->msgs[run->nmsgs];
	m->src = src;
	m->dst = dst;
	m->next = -1;
	m->matched = 0;
	m->user = user;
	m->len = len;
	m->ready = ready;
	if (run->tail[dst] < 0)
		run->head[dst] = (int)run->nmsgs;
	else
		run->msgs[run->tail[dst]].next = (int)run->nmsgs;
	run->tail[dst] = (int)run->nmsgs;
	run->nmsgs++;
	return OHC_OK;
}

static ohc_status_t t_post_recv(struct t_run *run, uint32_t rank, uint64_t x,
				double posted)
{
	struct t_recv *v;

	if (run->nrecvs == run->recv_cap &&
	    t_grow((void **)&run->recvs, &run->recv_cap, sizeof(*v)) < 0)
		return OHC_ERR_NO_MEMORY;
	v = &run->recvs[run->nrecvs++];
	v->rank = rank;
	v->peer = tx_peer(x);
	v->reduce = tx_kind(x) == T_RECV_REDUCE;
	v->len = tx_len(x);
	v->posted = posted;
	return OHC_OK;
}

/* Rank r posts its step: locals run, sends leave, receives are queued. */
static ohc_status_t t_post(struct t_run *run, uint32_t r)
{
	struct ohc_sim *sim = run->sim;
	struct t_rank *R = &run->rk[r];
	struct ohc_sim_stats *st = sim->stats ? &sim->stats[r] : NULL;
	const struct ohc_cost_params *c = R->c, *lc;
	double t = R->t, nic = R->t, ready, bytes;
	ohc_status_t status;
	size_t i;

	R->end = R->t;
	for (i = R->pos;; i++) {
		uint64_t x = R->x[i], len = tx_len(x);

		switch (tx_kind(x)) {
		case T_COPY:
			t += (double)len * c->copy_us;
			if (st)
				st->bytes_copied += len;
			break;
		case T_REDUCE:
			t += (double)len * c->gamma_us;
			if (st)
				st->bytes_reduced += len;
			break;
		case T_SEND:
		case T_SEND_USER:
			lc = t_link(run, r, tx_peer(x), c);
			/*
			 * an empty message (the agreement's) is a header
			 * behind the data: it leaves at once and keeps no
			 * later send waiting; only its latency counts
			 */
			ready = t > nic || !len ? t : nic;
			/* the next send of the step starts when this one
			 * is posted (send_us); its bytes arrive alpha after
			 * it starts */
			bytes = len ? ohc_cost_bytes(lc, (double)len,
						     tx_kind(x) == T_SEND_USER,
						     0)
				    : 0;
			if (len)
				nic = ready + ohc_cost_send_us(lc) + bytes;
			if (sim->mode == OHC_SIM_EAGER) {
				double left = ready + lc->alpha_us + bytes;

				if (left > R->end)
					R->end = left;
			}
			status = t_post_send(run, r, tx_peer(x), len,
					     tx_kind(x) == T_SEND_USER, ready);
			if (status < 0)
				return status;
			if (st) {
				st->msgs_sent++;
				st->bytes_sent += len;
			}
			break;
		case T_RECV:
		case T_RECV_REDUCE:
			status = t_post_recv(run, r, x, t);
			if (status < 0)
				return status;
			break;
		default:
			break;
		}
		if (t > R->end)
			R->end = t;
		if (x & T_LAST)
			break;
	}
	R->pos = i + 1;
	return OHC_OK;
}

/* Match one receive with the first message of its peer this step. */
static ohc_status_t t_match(struct t_run *run, const struct t_recv *v,
			    unsigned k)
{
	struct ohc_sim *sim = run->sim;
	struct t_rank *D = &run->rk[v->rank];
	const struct ohc_cost_params *c = D->c,
				     *lc = t_link(run, v->peer, v->rank, c);
	struct t_msg *m = NULL;
	double arrive;

	for (int j = run->head[v->rank]; j >= 0; j = run->msgs[j].next)
		if (!run->msgs[j].matched && run->msgs[j].src == v->peer) {
			m = &run->msgs[j];
			break;
		}
	if (!m) {
		ohc_sim_err(sim,
			    "deadlock: rank %u in step %u waits for a message "
			    "from rank %u, which sends it none in that step",
			    v->rank, k, v->peer);
		return OHC_ERR_TIMEOUT;
	}
	if (m->len != v->len) {
		ohc_sim_err(sim,
			    "rank %u sends %llu bytes to rank %u in step %u, "
			    "which expects %llu bytes",
			    v->peer, (unsigned long long)m->len, v->rank, k,
			    (unsigned long long)v->len);
		return OHC_ERR_DESYNC;
	}
	m->matched = 1;
	arrive = (sim->mode == OHC_SIM_EAGER || m->ready > v->posted
			  ? m->ready
			  : v->posted) +
		 lc->alpha_us;
	if (sim->mode == OHC_SIM_RENDEZVOUS) {
		double sent =
			arrive + ohc_cost_bytes(lc, (double)v->len, m->user, 0);

		if (sent > run->rk[m->src].end)
			run->rk[m->src].end = sent;
	}
	if (v->reduce) {
		/* the reduction at the receiver's speed (c's gamma) */
		struct ohc_cost_params rc = *lc;

		rc.gamma_us = c->gamma_us;
		arrive += ohc_cost_bytes(&rc, (double)v->len, m->user, 1);
		if (sim->stats)
			sim->stats[v->rank].bytes_reduced += v->len;
	} else {
		arrive += ohc_cost_bytes(lc, (double)v->len, m->user, 0);
	}
	if (arrive > D->end)
		D->end = arrive;
	if (sim->stats) {
		sim->stats[v->rank].msgs_recv++;
		sim->stats[v->rank].bytes_recv += v->len;
	}
	return OHC_OK;
}

/* Global step k of every rank: post everything, then match. */
static ohc_status_t t_step(struct t_run *run, unsigned k)
{
	struct ohc_sim *sim = run->sim;
	ohc_status_t status;

	run->nmsgs = 0;
	run->nrecvs = 0;
	for (uint32_t r = 0; r < sim->nranks; r++)
		run->head[r] = run->tail[r] = -1;
	for (uint32_t r = 0; r < sim->nranks; r++) {
		/* the streams are too many for the hardware prefetcher */
		if (r + 16 < sim->nranks && run->rk[r + 16].x)
			__builtin_prefetch(run->rk[r + 16].x +
					   run->rk[r + 16].pos);
		if (k >= run->rk[r].nsteps)
			continue;
		status = t_post(run, r);
		if (status < 0)
			return status;
	}
	for (unsigned i = 0; i < run->nrecvs; i++) {
		status = t_match(run, &run->recvs[i], k);
		if (status < 0)
			return status;
	}
	for (unsigned j = 0; j < run->nmsgs; j++) {
		const struct t_msg *m = &run->msgs[j];

		if (m->matched)
			continue;
		ohc_sim_err(
			sim,
			"rank %u sent %llu bytes to rank %u in step %u that "
			"were never received",
			m->src, (unsigned long long)m->len, m->dst, k);
		return OHC_ERR_DESYNC;
	}
	for (uint32_t r = 0; r < sim->nranks; r++)
		if (k < run->rk[r].nsteps)
			run->rk[r].t = run->rk[r].end;
	return OHC_OK;
}

ohc_status_t ohc_sim_timing_run(struct ohc_sim *sim)
{
	struct t_run run = {.sim = sim};
	ohc_status_t status = OHC_OK;
	unsigned window = ~0u, k0 = 0;
	uint64_t total, budget = sim->timing_budget ? sim->timing_budget
						    : T_BUDGET_XFERS;

	if (sim->nranks >= (1u << T_PEER_BITS)) {
		ohc_sim_err(sim, "timing mode: at most %u ranks",
			    (1u << T_PEER_BITS) - 1);
		return OHC_ERR_INVALID;
	}
	run.rk = calloc(sim->nranks, sizeof(*run.rk));
	run.head = malloc(sim->nranks * sizeof(*run.head));
	run.tail = malloc(sim->nranks * sizeof(*run.tail));
	if (!run.rk || !run.head || !run.tail) {
		status = OHC_ERR_NO_MEMORY;
		goto out;
	}
	/* windows of steps sized from rank 0's schedule */
	status = t_build(&run, 0, 0, ~0u, 0);
	if (status < 0)
		goto out;
	total = run.xfers0 * sim->nranks;
	if (total > budget && run.rk[0].nsteps) {
		uint64_t passes = (total + budget - 1) / budget;

		window = (unsigned)((run.rk[0].nsteps + passes - 1) / passes);
	}
	run.max_steps = 0;
	t_free_x(&run.rk[0]);
	if (total > 4096) {
		/* room for ranks a little larger than rank 0 */
		size_t bytes =
			(total < budget ? 2 * total : budget + budget / 2) *
			sizeof(uint64_t);
		void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			       0);

		if (p != MAP_FAILED) {
#ifdef MADV_HUGEPAGE
			madvise(p, bytes, MADV_HUGEPAGE);
#endif
			run.arena = p;
			run.arena_cap = bytes / sizeof(uint64_t);
		}
	}
	do {
		unsigned k1 = window == ~0u ? ~0u : k0 + window;

		run.arena_used = 0;
		for (uint32_t r = 0; r < sim->nranks; r++)
			t_free_x(&run.rk[r]);
		for (uint32_t r = 0; r < sim->nranks; r++) {
			status = t_build(&run, r, k0, k1, k0 == 0);
			if (status < 0)
				goto out;
		}
		if (k1 > run.max_steps)
			k1 = run.max_steps;
		for (unsigned k = k0; k < k1; k++) {
			status = t_step(&run, k);
			if (status < 0)
				goto out;
		}
		k0 = k1;
	} while (k0 < run.max_steps);
	for (uint32_t r = 0; r < sim->nranks; r++) {
		if (sim->stats)
			sim->stats[r].time_us = run.rk[r].t;
		if (run.rk[r].t > sim->time_us)
			sim->time_us = run.rk[r].t;
	}
out:
	if (status == OHC_ERR_NO_MEMORY && !sim->err[0])
		ohc_sim_err(sim, "simulator: out of memory");
	for (uint32_t r = 0; run.rk && r < sim->nranks; r++)
		t_free_x(&run.rk[r]);
	if (run.arena)
		munmap(run.arena, run.arena_cap * sizeof(uint64_t));
	free(run.rk);
	free(run.head);
	free(run.tail);
	free(run.msgs);
	free(run.recvs);
	return status;
}
