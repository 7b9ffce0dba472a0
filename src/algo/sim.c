/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "algo/sim.h"

struct sim_msg {
	uint32_t src;
	unsigned step, xi; /* sender's step and transfer index */
	size_t len;
	int user;	  /* out of the user's buffers: zero copy applies */
	const void *data; /* rendezvous: the sender's buffer */
	void *copy;	  /* eager: snapshot taken at post */
	double ready;	  /* when it may leave the sender */
	struct sim_msg *next;
};

struct sim_recv {
	uint32_t peer;
	unsigned xi;
	double posted;
	struct sim_recv *next;
};

struct sim_rank {
	struct ohc_coll_args a;
	struct ohc_cost_params op_c; /* costs() of a cache-resident op */
	struct ohc_sched s;
	int built;
	unsigned step;
	int finished;
	unsigned pending;    /* sends/receives of the step not complete */
	unsigned char *done; /* per transfer of the schedule */
	double *tdone;	     /* completion time per transfer */
	double tstart;
	struct sim_msg *inq, **inq_tail; /* sends to us, unmatched */
	struct sim_recv *rq, **rq_tail;	 /* our receives, unmatched */
};

struct sim_run {
	struct ohc_sim *sim;
	struct sim_rank *rk;
	uint32_t *order;
	uint64_t rng;
};

static void sim_err(struct ohc_sim *sim, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sim_err(struct ohc_sim *sim, const char *fmt, ...)
{
	size_t off = strlen(sim->err);
	va_list ap;

	if (off >= sizeof(sim->err) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(sim->err + off, sizeof(sim->err) - off, fmt, ap);
	va_end(ap);
}

static unsigned step_begin(const struct ohc_sched *s, unsigned i)
{
	return i ? s->step_end[i - 1] : 0;
}

static const struct ohc_cost_params *costs(struct sim_run *run,
					   struct sim_rank *r)
{
	const struct ohc_cost_params *c =
		run->sim->cost ? run->sim->cost
			       : ohc_cost_params_get(r->a.link);

	return ohc_cost_for_op(c, ohc_coll_bytes(&r->a), &r->op_c);
}

static const char *kind_name(const struct ohc_xfer *x)
{
	switch (x->kind) {
	case OHC_XFER_SEND:
		return "send";
	case OHC_XFER_RECV:
		return "recv";
	case OHC_XFER_COPY:
		return "copy";
	case OHC_XFER_REDUCE:
		return "reduce";
	}
	return "?";
}

/* ---- hazards ---- */

struct region {
	const char *p;
	size_t len;
};

static int ovl(struct region a, struct region b)
{
	return a.p && b.p && a.len && b.len && a.p < b.p + b.len &&
	       b.p < a.p + a.len;
}

/* Regions a transfer reads (up to 2) and writes (up to 1). */
static void regions(const struct ohc_xfer *x, struct region rd[2],
		    struct region *wr)
{
	memset(rd, 0, 2 * sizeof(*rd));
	memset(wr, 0, sizeof(*wr));
	switch (x->kind) {
	case OHC_XFER_SEND:
		rd[0] = (struct region){x->src, x->len};
		break;
	case OHC_XFER_COPY:
		rd[0] = (struct region){x->src, x->len};
		*wr = (struct region){x->dst, x->len};
		break;
	case OHC_XFER_REDUCE:
		rd[0] = (struct region){x->src, x->len};
		rd[1] = (struct region){x->src2, x->len};
		*wr = (struct region){x->dst, x->len};
		break;
	case OHC_XFER_RECV:
		if (x->rkind == OHC_RECV_REDUCE)
			rd[0] = (struct region){x->dst, x->len};
		else if (x->rkind == OHC_RECV_REDUCE_TO)
			rd[0] = (struct region){x->src2, x->len};
		*wr = (struct region){x->dst, x->len};
		break;
	}
}

static int is_net(const struct ohc_xfer *x)
{
	return x->kind == OHC_XFER_SEND || x->kind == OHC_XFER_RECV;
}

/* 1 if a send reads the user's buffers, not the schedule's scratch. */
static int from_user(const struct ohc_sched *s, const struct ohc_xfer *x)
{
	const char *p = x->src, *b = s->scratch;

	return !(b && p >= b && p < b + s->scratch_cap);
}

/* 1 if x writes what y reads or writes (or y writes what x reads). */
static int conflict(const struct ohc_xfer *x, const struct ohc_xfer *y)
{
	struct region xr[2], xw, yr[2], yw;

	regions(x, xr, &xw);
	regions(y, yr, &yw);
	return ovl(xw, yw) || ovl(xw, yr[0]) || ovl(xw, yr[1]) ||
	       ovl(yw, xr[0]) || ovl(yw, xr[1]);
}

/* Partial aliasing inside one reduction breaks the kernels' contract. */
static int self_conflict(const struct ohc_xfer *x)
{
	struct region r[2], w;

	if (x->kind == OHC_XFER_SEND || x->kind == OHC_XFER_COPY)
		return 0;
	regions(x, r, &w);
	for (int i = 0; i < 2; i++)
		if (ovl(w, r[i]) && w.p != r[i].p)
			return 1;
	return 0;
}

static ohc_status_t check_hazards(struct sim_run *run, uint32_t r)
{
	struct sim_rank *R = &run->rk[r];
	unsigned b = step_begin(&R->s, R->step), e = R->s.step_end[R->step];

	for (unsigned i = b; i < e; i++) {
		const struct ohc_xfer *x = &R->s.xfers[i];

		if (self_conflict(x)) {
			sim_err(run->sim,
				"rank %u step %u: %s (transfer %u) "
				"partly overlaps its own operands",
				r, R->step, kind_name(x), i - b);
			return OHC_ERR_INTERNAL;
		}
		if (!is_net(x))
			continue; /* done before anything after it posts */
		for (unsigned j = i + 1; j < e; j++) {
			const struct ohc_xfer *y = &R->s.xfers[j];

			if (!conflict(x, y))
				continue;
			sim_err(run->sim,
				"rank %u step %u: %s (transfer %u, "
				"peer %u) and %s (transfer %u) touch the same "
				"memory and one of them writes it",
				r, R->step, kind_name(x), i - b, x->peer,
				kind_name(y), j - b);
			return OHC_ERR_INTERNAL;
		}
	}
	return OHC_OK;
}

/* ---- execution ---- */

static void local(struct sim_run *run, struct sim_rank *R,
		  const struct ohc_xfer *x, double *t, uint32_t r)
{
	struct ohc_sim_stats *st = run->sim->stats ? &run->sim->stats[r] : NULL;
	const struct ohc_cost_params *c = costs(run, R);

	if (x->kind == OHC_XFER_COPY) {
		if (!run->sim->dry_run)
			memmove(x->dst, x->src, x->len);
		*t += (double)x->len * c->copy_us;
		if (st)
			st->bytes_copied += x->len;
	} else {
		if (!run->sim->dry_run)
			run->sim->reduce(x->dst, x->src2, x->src,
					 R->a.esize ? x->len / R->a.esize : 0);
		*t += (double)x->len * c->gamma_us;
		if (st)
			st->bytes_reduced += x->len;
	}
}

static ohc_status_t post_step(struct sim_run *run, uint32_t r)
{
	struct ohc_sim *sim = run->sim;
	struct sim_rank *R = &run->rk[r];
	const struct ohc_cost_params *c = costs(run, R);
	unsigned b = step_begin(&R->s, R->step), e = R->s.step_end[R->step];
	struct ohc_sim_stats *st = sim->stats ? &sim->stats[r] : NULL;
	double t = R->tstart, nic = R->tstart;

	if (sim->check_hazards) {
		ohc_status_t status = check_hazards(run, r);

		if (status < 0)
			return status;
	}
	R->pending = 0;
	for (unsigned i = b; i < e; i++) {
		const struct ohc_xfer *x = &R->s.xfers[i];

		R->done[i] = 0;
		if (!is_net(x)) {
			local(run, R, x, &t, r);
			R->done[i] = 1;
			R->tdone[i] = t;
			continue;
		}
		if (x->peer >= sim->nranks || x->peer == r) {
			sim_err(sim,
				"rank %u step %u: %s with peer %u (of %u "
				"ranks): not a remote rank",
				r, R->step, kind_name(x), x->peer, sim->nranks);
			return OHC_ERR_INTERNAL;
		}
		if (x->kind == OHC_XFER_SEND) {
			struct sim_msg *m = calloc(1, sizeof(*m));
			struct sim_rank *D = &run->rk[x->peer];

			if (!m)
				return OHC_ERR_NO_MEMORY;
			m->src = r;
			m->step = R->step;
			m->xi = i;
			m->len = x->len;
			m->user = from_user(&R->s, x);
			m->data = x->src;
			if (sim->mode == OHC_SIM_EAGER && !sim->dry_run &&
			    x->len) {
				m->copy = malloc(x->len);
				if (!m->copy) {
					free(m);
					return OHC_ERR_NO_MEMORY;
				}
				memcpy(m->copy, x->src, x->len);
				m->data = m->copy;
			}
			/*
			 * an empty message (the agreement's) is a header
			 * behind the data: it leaves at once, keeps no one
			 * waiting, and only its latency counts
			 */
			m->ready = t > nic || !x->len ? t : nic;
			if (x->len)
				nic = m->ready + c->alpha_us +
				      ohc_cost_bytes(c, (double)x->len, m->user,
						     0);
			*D->inq_tail = m;
			D->inq_tail = &m->next;
			if (st) {
				st->msgs_sent++;
				st->bytes_sent += x->len;
			}
			if (sim->mode == OHC_SIM_EAGER) {
				R->done[i] = 1;
				R->tdone[i] =
					x->len ? nic : m->ready + c->alpha_us;
				continue;
			}
		} else {
			struct sim_recv *v = calloc(1, sizeof(*v));

			if (!v)
				return OHC_ERR_NO_MEMORY;
			v->peer = x->peer;
			v->xi = i;
			v->posted = t;
			*R->rq_tail = v;
			R->rq_tail = &v->next;
		}
		R->pending++;
	}
	return OHC_OK;
}

static void deliver(struct sim_run *run, struct sim_rank *D,
		    const struct ohc_xfer *x, const void *data)
{
	size_t count = D->a.esize ? x->len / D->a.esize : 0;

	if (run->sim->dry_run || !x->len)
		return;
	switch (x->rkind) {
	case OHC_RECV_COPY:
		memcpy(x->dst, data, x->len);
		break;
	case OHC_RECV_REDUCE:
		run->sim->reduce(x->dst, x->dst, data, count);
		break;
	case OHC_RECV_REDUCE_TO:
		run->sim->reduce(x->dst, x->src2, data, count);
		break;
	}
}

/* Match rank d's posted receives with messages sent to it; 1 if any. */
static ohc_status_t match(struct sim_run *run, uint32_t d, int *moved)
{
	struct ohc_sim *sim = run->sim;
	struct sim_rank *D = &run->rk[d];
	const struct ohc_cost_params *c = costs(run, D);
	struct sim_recv **vp = &D->rq;

	while (*vp) {
		struct sim_recv *v = *vp;
		struct sim_msg **mp = &D->inq, *m;
		const struct ohc_xfer *x = &D->s.xfers[v->xi];
		double arrive;

		while (*mp && (*mp)->src != v->peer)
			mp = &(*mp)->next;
		m = *mp;
		if (!m) {
			vp = &v->next;
			continue;
		}
		if (m->step != D->step) {
			sim_err(sim,
				"rank %u sends %zu bytes to rank %u in "
				"step %u, which receives it in step %u (the "
				"executor reports a desync)",
				m->src, m->len, d, m->step, D->step);
			return OHC_ERR_DESYNC;
		}
		if (m->len != x->len) {
			sim_err(sim,
				"rank %u sends %zu bytes to rank %u in "
				"step %u, which expects %zu bytes",
				m->src, m->len, d, m->step, x->len);
			return OHC_ERR_DESYNC;
		}
		deliver(run, D, x, m->data);
		arrive = (sim->mode == OHC_SIM_EAGER || m->ready > v->posted
				  ? m->ready
				  : v->posted) +
			 c->alpha_us;
		D->done[v->xi] = 1;
		D->tdone[v->xi] =
			arrive + ohc_cost_bytes(c, (double)m->len, m->user,
						x->rkind != OHC_RECV_COPY);
		arrive += ohc_cost_bytes(c, (double)m->len, m->user, 0);
		if (x->rkind != OHC_RECV_COPY && sim->stats)
			sim->stats[d].bytes_reduced += m->len;
		D->pending--;
		if (sim->stats) {
			sim->stats[d].msgs_recv++;
			sim->stats[d].bytes_recv += m->len;
		}
		if (sim->mode == OHC_SIM_RENDEZVOUS) {
			struct sim_rank *S = &run->rk[m->src];

			S->done[m->xi] = 1;
			S->tdone[m->xi] = arrive;
			S->pending--;
		}
		if (D->inq_tail == &m->next)
			D->inq_tail = mp;
		*mp = m->next;
		free(m->copy);
		free(m);
		if (D->rq_tail == &v->next)
			D->rq_tail = vp;
		*vp = v->next;
		free(v);
		*moved = 1;
	}
	return OHC_OK;
}

/* Advance rank r past every completed step. */
static ohc_status_t advance(struct sim_run *run, uint32_t r, int *moved)
{
	struct sim_rank *R = &run->rk[r];

	while (!R->finished && R->pending == 0) {
		unsigned b = step_begin(&R->s, R->step);
		double end = R->tstart;
		ohc_status_t status;

		for (unsigned i = b; i < R->s.step_end[R->step]; i++)
			if (R->tdone[i] > end)
				end = R->tdone[i];
		R->tstart = end;
		*moved = 1;
		if (++R->step == R->s.nsteps) {
			R->finished = 1;
			break;
		}
		status = post_step(run, r);
		if (status < 0)
			return status;
	}
	return OHC_OK;
}

static void report_deadlock(struct sim_run *run)
{
	struct ohc_sim *sim = run->sim;
	unsigned shown = 0;

	sim_err(sim, "deadlock: no rank can advance;");
	for (uint32_t r = 0; r < sim->nranks; r++) {
		struct sim_rank *R = &run->rk[r];
		unsigned b, e;

		if (R->finished)
			continue;
		if (++shown > 8) {
			sim_err(sim, " ...");
			break;
		}
		b = step_begin(&R->s, R->step);
		e = R->s.step_end[R->step];
		sim_err(sim, " rank %u in step %u of %u waits for", r, R->step,
			R->s.nsteps);
		for (unsigned i = b; i < e; i++)
			if (!R->done[i])
				sim_err(sim, " %s %s %u (%zu B)",
					kind_name(&R->s.xfers[i]),
					R->s.xfers[i].kind == OHC_XFER_SEND
						? "to"
						: "from",
					R->s.xfers[i].peer, R->s.xfers[i].len);
		sim_err(sim, ";");
	}
}

static void shuffle(struct sim_run *run)
{
	uint32_t n = run->sim->nranks;

	for (uint32_t i = 0; i < n; i++)
		run->order[i] = i;
	if (!run->sim->seed)
		return;
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j, t;

		run->rng ^= run->rng << 13;
		run->rng ^= run->rng >> 7;
		run->rng ^= run->rng << 17;
		j = (uint32_t)(run->rng % i);
		t = run->order[i - 1];
		run->order[i - 1] = run->order[j];
		run->order[j] = t;
	}
}

static ohc_status_t build_all(struct sim_run *run)
{
	struct ohc_sim *sim = run->sim;

	for (uint32_t r = 0; r < sim->nranks; r++) {
		struct sim_rank *R = &run->rk[r];
		const struct ohc_algo *al = sim->algo;
		ohc_status_t status;

		memset(&R->a, 0, sizeof(R->a));
		R->a.rank = r;
		R->a.nranks = sim->nranks;
		status = sim->args_fn(sim->ctx, r, &R->a);
		if (status < 0) {
			sim_err(sim, "rank %u: arguments: %s", r,
				ohc_status_str(status));
			return status;
		}
		R->a.rank = r;
		R->a.nranks = sim->nranks;
		ohc_sched_init(&R->s);
		R->built = 1;
		if (al) {
			status = al->build(&R->a, &R->s);
			if (status == OHC_OK && R->s.status < 0)
				status = R->s.status;
		} else {
			status = ohc_algo_build(&R->a, &R->s, &al);
		}
		if (status < 0) {
			sim_err(sim,
				"rank %u: building the schedule failed "
				"(%d)",
				r, (int)status);
			return status;
		}
		if (sim->stats) {
			sim->stats[r].steps = R->s.nsteps;
			sim->stats[r].scratch_bytes = R->s.scratch_bytes;
			sim->stats[r].algo = al;
		}
		R->done = calloc(R->s.nxfers + 1, 1);
		R->tdone = calloc(R->s.nxfers + 1, sizeof(double));
		if (!R->done || !R->tdone)
			return OHC_ERR_NO_MEMORY;
		R->inq_tail = &R->inq;
		R->rq_tail = &R->rq;
	}
	return OHC_OK;
}

static ohc_status_t run_all(struct sim_run *run)
{
	struct ohc_sim *sim = run->sim;
	ohc_status_t status;

	for (uint32_t r = 0; r < sim->nranks; r++) {
		struct sim_rank *R = &run->rk[r];

		if (R->s.nsteps == 0) {
			R->finished = 1;
			continue;
		}
		status = post_step(run, r);
		if (status < 0)
			return status;
	}
	for (;;) {
		int moved = 0, all = 1;

		shuffle(run);
		for (uint32_t i = 0; i < sim->nranks; i++) {
			status = match(run, run->order[i], &moved);
			if (status < 0)
				return status;
		}
		for (uint32_t i = 0; i < sim->nranks; i++) {
			status = advance(run, run->order[i], &moved);
			if (status < 0)
				return status;
		}
		for (uint32_t r = 0; r < sim->nranks && all; r++)
			all = run->rk[r].finished;
		if (all)
			break;
		if (!moved) {
			report_deadlock(run);
			return OHC_ERR_TIMEOUT;
		}
	}
	for (uint32_t d = 0; d < sim->nranks; d++) {
		struct sim_msg *m = run->rk[d].inq;

		if (m) {
			sim_err(sim,
				"rank %u sent %zu bytes to rank %u in "
				"step %u that were never received",
				m->src, m->len, d, m->step);
			return OHC_ERR_DESYNC;
		}
	}
	return OHC_OK;
}

/* ---- timing mode ---- */

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
		return from_user(s, x) ? T_SEND_USER : T_SEND;
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
	const struct ohc_algo *al = sim->algo;
	struct ohc_coll_args a;
	struct ohc_sched s;
	ohc_status_t status;
	size_t n = 0;

	memset(&a, 0, sizeof(a));
	a.rank = r;
	a.nranks = sim->nranks;
	status = sim->args_fn(sim->ctx, r, &a);
	if (status < 0) {
		sim_err(sim, "rank %u: arguments: %s", r,
			ohc_status_str(status));
		return status;
	}
	a.rank = r;
	a.nranks = sim->nranks;
	ohc_sched_init(&s);
	if (al) {
		status = al->build(&a, &s);
		if (status == OHC_OK && s.status < 0)
			status = s.status;
	} else {
		status = ohc_algo_build(&a, &s, &al);
	}
	if (status < 0) {
		sim_err(sim, "rank %u: building the schedule failed (%d)", r,
			(int)status);
		goto out;
	}
	R->c = ohc_cost_for_op(sim->cost ? sim->cost
					 : ohc_cost_params_get(a.link),
			       ohc_coll_bytes(&a), &R->op_c);
	R->nsteps = s.nsteps;
	if (s.nsteps > run->max_steps)
		run->max_steps = s.nsteps;
	if (first && sim->stats) {
		sim->stats[r].steps = s.nsteps;
		sim->stats[r].scratch_bytes = s.scratch_bytes;
		sim->stats[r].algo = al;
	}
	t_free_x(R);
	R->pos = 0;
	if (k1 > s.nsteps)
		k1 = s.nsteps;
	if (k0 >= k1)
		goto out;
	for (unsigned k = k0; k < k1; k++)
		n += s.step_end[k] > step_begin(&s, k)
			     ? s.step_end[k] - step_begin(&s, k)
			     : 1;
	if (!t_alloc_x(run, R, n)) {
		status = OHC_ERR_NO_MEMORY;
		goto out;
	}
	n = 0;
	for (unsigned k = k0; k < k1; k++) {
		for (unsigned i = step_begin(&s, k); i < s.step_end[k]; i++) {
			const struct ohc_xfer *x = &s.xfers[i];
			enum tkind kind = t_kind_of(&s, x);

			if ((uint64_t)x->len >> T_LEN_BITS) {
				sim_err(sim,
					"rank %u: a %zu-byte transfer is too "
					"long for the timing mode",
					r, x->len);
				status = OHC_ERR_INVALID;
				goto out;
			}
			if ((kind <= T_RECV_REDUCE || kind == T_SEND_USER) &&
			    (x->peer >= sim->nranks || x->peer == r)) {
				sim_err(sim,
					"rank %u step %u: %s with peer %u (of "
					"%u ranks): not a remote rank",
					r, k, kind_name(x), x->peer,
					sim->nranks);
				status = OHC_ERR_INTERNAL;
				goto out;
			}
			R->x[n++] = tx_pack(kind, x->peer, x->len);
		}
		if (step_begin(&s, k) == s.step_end[k])
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
	double t = R->t, nic = R->t, ready;
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
			if (len)
				nic = ready + lc->alpha_us +
				      ohc_cost_bytes(lc, (double)len,
						     tx_kind(x) == T_SEND_USER,
						     0);
			if (sim->mode == OHC_SIM_EAGER) {
				double left = len ? nic : ready + lc->alpha_us;

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
		sim_err(sim,
			"deadlock: rank %u in step %u waits for a message "
			"from rank %u, which sends it none in that step",
			v->rank, k, v->peer);
		return OHC_ERR_TIMEOUT;
	}
	if (m->len != v->len) {
		sim_err(sim,
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
		sim_err(sim,
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

static ohc_status_t timing_run(struct ohc_sim *sim)
{
	struct t_run run = {.sim = sim};
	ohc_status_t status = OHC_OK;
	unsigned window = ~0u, k0 = 0;
	uint64_t total, budget = sim->timing_budget ? sim->timing_budget
						    : T_BUDGET_XFERS;

	if (sim->nranks >= (1u << T_PEER_BITS)) {
		sim_err(sim, "timing mode: at most %u ranks",
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
		sim_err(sim, "simulator: out of memory");
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

ohc_status_t ohc_sim_run(struct ohc_sim *sim)
{
	struct sim_run run = {.sim = sim, .rng = 0x9e3779b97f4a7c15ull};
	ohc_status_t status;

	sim->err[0] = '\0';
	sim->time_us = 0;
	run.rng ^= sim->seed;
	if (sim->stats)
		memset(sim->stats, 0, sim->nranks * sizeof(*sim->stats));
	if (sim->nranks == 0 || !sim->args_fn ||
	    (!sim->reduce && !sim->dry_run && !sim->timing)) {
		sim_err(sim, "simulator: nranks, args_fn and reduce needed");
		return OHC_ERR_INVALID;
	}
	if (sim->timing)
		return timing_run(sim);
	run.rk = calloc(sim->nranks, sizeof(*run.rk));
	run.order = calloc(sim->nranks, sizeof(*run.order));
	if (!run.rk || !run.order) {
		status = OHC_ERR_NO_MEMORY;
		goto out;
	}
	status = build_all(&run);
	if (status == OHC_OK)
		status = run_all(&run);
	if (status == OHC_ERR_NO_MEMORY && !sim->err[0])
		sim_err(sim, "simulator: out of memory");
	for (uint32_t r = 0; status == OHC_OK && r < sim->nranks; r++) {
		if (sim->stats)
			sim->stats[r].time_us = run.rk[r].tstart;
		if (run.rk[r].tstart > sim->time_us)
			sim->time_us = run.rk[r].tstart;
	}
out:
	for (uint32_t r = 0; run.rk && r < sim->nranks; r++) {
		struct sim_rank *R = &run.rk[r];

		while (R->inq) {
			struct sim_msg *m = R->inq;

			R->inq = m->next;
			free(m->copy);
			free(m);
		}
		while (R->rq) {
			struct sim_recv *v = R->rq;

			R->rq = v->next;
			free(v);
		}
		if (R->built)
			ohc_sched_fini(&R->s);
		free(R->done);
		free(R->tdone);
	}
	free(run.rk);
	free(run.order);
	return status;
}
