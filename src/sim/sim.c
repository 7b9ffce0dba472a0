/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The schedule simulator (sim.h): every rank's schedule run in memory
 * with the executor's rules, moving real data (or counting, dry run),
 * ranks advanced in shuffled order. The timing mode is sim_timing.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"

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

void ohc_sim_err(struct ohc_sim *sim, const char *fmt, ...)
{
	size_t off = strlen(sim->err);
	va_list ap;

	if (off >= sizeof(sim->err) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(sim->err + off, sizeof(sim->err) - off, fmt, ap);
	va_end(ap);
}

const struct ohc_cost_params *ohc_sim_costs(const struct ohc_sim *sim,
					    const struct ohc_coll_args *a,
					    struct ohc_cost_params *tmp)
{
	const struct ohc_cost_params *c =
		sim->cost ? sim->cost : ohc_cost_params_get(a->link);

	return ohc_cost_for_op(c, ohc_coll_bytes(a), tmp);
}

static const struct ohc_cost_params *costs(struct sim_run *run,
					   struct sim_rank *r)
{
	return ohc_sim_costs(run->sim, &r->a, &r->op_c);
}

const char *ohc_sim_kind_name(const struct ohc_xfer *x)
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
int ohc_sim_from_user(const struct ohc_sched *s, const struct ohc_xfer *x)
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
	unsigned b = ohc_sim_step_begin(&R->s, R->step),
		 e = R->s.step_end[R->step];

	for (unsigned i = b; i < e; i++) {
		const struct ohc_xfer *x = &R->s.xfers[i];

		if (self_conflict(x)) {
			ohc_sim_err(run->sim,
				    "rank %u step %u: %s (transfer %u) "
				    "partly overlaps its own operands",
				    r, R->step, ohc_sim_kind_name(x), i - b);
			return OHC_ERR_INTERNAL;
		}
		if (!is_net(x))
			continue; /* done before anything after it posts */
		for (unsigned j = i + 1; j < e; j++) {
			const struct ohc_xfer *y = &R->s.xfers[j];

			if (!conflict(x, y))
				continue;
			ohc_sim_err(
				run->sim,
				"rank %u step %u: %s (transfer %u, "
				"peer %u) and %s (transfer %u) touch the same "
				"memory and one of them writes it",
				r, R->step, ohc_sim_kind_name(x), i - b,
				x->peer, ohc_sim_kind_name(y), j - b);
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
	unsigned b = ohc_sim_step_begin(&R->s, R->step),
		 e = R->s.step_end[R->step];
	struct ohc_sim_stats *st = sim->stats ? &sim->stats[r] : NULL;
	double t = R->tstart, nic = R->tstart, bytes;

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
			ohc_sim_err(sim,
				    "rank %u step %u: %s with peer %u (of %u "
				    "ranks): not a remote rank",
				    r, R->step, ohc_sim_kind_name(x), x->peer,
				    sim->nranks);
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
			m->user = ohc_sim_from_user(&R->s, x);
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
			/* the next send of the step starts when this one
			 * is posted (send_us); its bytes arrive alpha after
			 * it starts */
			bytes = x->len ? ohc_cost_bytes(c, (double)x->len,
							m->user, 0)
				       : 0;
			if (x->len)
				nic = m->ready + ohc_cost_send_us(c) + bytes;
			*D->inq_tail = m;
			D->inq_tail = &m->next;
			if (st) {
				st->msgs_sent++;
				st->bytes_sent += x->len;
			}
			if (sim->mode == OHC_SIM_EAGER) {
				R->done[i] = 1;
				R->tdone[i] = m->ready + c->alpha_us + bytes;
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
			ohc_sim_err(
				sim,
				"rank %u sends %zu bytes to rank %u in "
				"step %u, which receives it in step %u (the "
				"executor reports a desync)",
				m->src, m->len, d, m->step, D->step);
			return OHC_ERR_DESYNC;
		}
		if (m->len != x->len) {
			ohc_sim_err(sim,
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
		unsigned b = ohc_sim_step_begin(&R->s, R->step);
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

	ohc_sim_err(sim, "deadlock: no rank can advance;");
	for (uint32_t r = 0; r < sim->nranks; r++) {
		struct sim_rank *R = &run->rk[r];
		unsigned b, e;

		if (R->finished)
			continue;
		if (++shown > 8) {
			ohc_sim_err(sim, " ...");
			break;
		}
		b = ohc_sim_step_begin(&R->s, R->step);
		e = R->s.step_end[R->step];
		ohc_sim_err(sim, " rank %u in step %u of %u waits for", r,
			    R->step, R->s.nsteps);
		for (unsigned i = b; i < e; i++)
			if (!R->done[i])
				ohc_sim_err(sim, " %s %s %u (%zu B)",
					    ohc_sim_kind_name(&R->s.xfers[i]),
					    R->s.xfers[i].kind == OHC_XFER_SEND
						    ? "to"
						    : "from",
					    R->s.xfers[i].peer,
					    R->s.xfers[i].len);
		ohc_sim_err(sim, ";");
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

ohc_status_t ohc_sim_build(struct ohc_sim *sim, uint32_t r, int stats,
			   struct ohc_coll_args *a, struct ohc_sched *s)
{
	const struct ohc_algo *al = sim->algo;
	ohc_status_t status;

	ohc_sched_init(s);
	memset(a, 0, sizeof(*a));
	a->rank = r;
	a->nranks = sim->nranks;
	status = sim->args_fn(sim->ctx, r, a);
	if (status < 0) {
		ohc_sim_err(sim, "rank %u: arguments: %s", r,
			    ohc_status_str(status));
		return status;
	}
	a->rank = r;
	a->nranks = sim->nranks;
	if (al) {
		status = al->build(a, s);
		if (status == OHC_OK && s->status < 0)
			status = s->status;
	} else {
		status = ohc_algo_build(a, s, &al);
	}
	if (status < 0) {
		ohc_sim_err(sim, "rank %u: building the schedule failed (%d)",
			    r, (int)status);
		return status;
	}
	if (stats && sim->stats) {
		sim->stats[r].steps = s->nsteps;
		sim->stats[r].scratch_bytes = s->scratch_bytes;
		sim->stats[r].algo = al;
	}
	return OHC_OK;
}

static ohc_status_t build_all(struct sim_run *run)
{
	struct ohc_sim *sim = run->sim;

	for (uint32_t r = 0; r < sim->nranks; r++) {
		struct sim_rank *R = &run->rk[r];
		ohc_status_t status;

		R->built = 1;
		status = ohc_sim_build(sim, r, 1, &R->a, &R->s);
		if (status < 0)
			return status;
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
			ohc_sim_err(sim,
				    "rank %u sent %zu bytes to rank %u in "
				    "step %u that were never received",
				    m->src, m->len, d, m->step);
			return OHC_ERR_DESYNC;
		}
	}
	return OHC_OK;
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
		ohc_sim_err(sim,
			    "simulator: nranks, args_fn and reduce needed");
		return OHC_ERR_INVALID;
	}
	if (sim->timing)
		return ohc_sim_timing_run(sim);
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
		ohc_sim_err(sim, "simulator: out of memory");
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
