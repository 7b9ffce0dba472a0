/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hccl_simulate: the library's own algorithm builders and selection, run
 * against a simulated network (alpha-beta-gamma per link) for 2 to
 * thousands of ranks. For each collective it prints one table: message
 * sizes as rows, algorithms as columns, each cell the cost model's
 * prediction and the time of the schedule simulation (src/sim/sim.c in
 * timing mode: every rank's real schedule, messages matched step by step,
 * no data), the selection's choice marked. --measure compares predictions
 * with the times of an hccl_test output file.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "algo/algo.h"
#include "sim/sim.h"
#include "util/compiler.h"

#define MAX_ALGOS 8
#define MAX_LIST 64
#define MAX_RANKS (1u << 20)

/*
 * Networks: every one of the cost table (src/algo/cost.c) but threads of
 * one process (self): "shm" and "rxe" are the library's own defaults,
 * the RoCE ones the hardware's. Copies: --alpha and the like change them.
 */
#define MAX_NETS 16
static struct ohc_cost_net nets[MAX_NETS];
static unsigned n_nets;

/* The collectives the tool covers, with hccl_test's sizing of data_size. */
enum sizing { SZ_SAME, SZ_GATHER, SZ_SCATTER, SZ_ALLTOALL, SZ_NONE };

static const struct {
	const char *name;
	enum ohc_coll_op op;
	enum sizing sizing;
} ops[] = {
	{"allreduce", OHC_COLL_ALLREDUCE, SZ_SAME},
	{"allgather", OHC_COLL_ALLGATHER, SZ_GATHER},
	{"reduce_scatter", OHC_COLL_REDUCE_SCATTER, SZ_SCATTER},
	{"broadcast", OHC_COLL_BROADCAST, SZ_SAME},
	{"reduce", OHC_COLL_REDUCE, SZ_SAME},
	{"scatter", OHC_COLL_SCATTER, SZ_SCATTER},
	{"alltoall", OHC_COLL_ALLTOALL, SZ_ALLTOALL},
	{"barrier", OHC_COLL_BARRIER, SZ_NONE},
};

struct opts {
	unsigned op_idx[OHC_ARRAY_SIZE(ops)], nops;
	unsigned net_idx[MAX_NETS], nnets;
	uint32_t ranks[MAX_LIST];
	unsigned nranks;
	uint64_t minbytes, maxbytes;
	double factor;
	size_t esize;
	enum ohc_sim_mode mode;
	int no_sim;
	uint32_t ppn; /* ranks per host on RDMA networks; 0: one per host */
	const char *measure;
	uint32_t cores;	     /* CPUs per host; 0: one CPU per rank */
	uint32_t host_ranks; /* ranks sharing a host's CPUs; 0: by --ppn */
	double wake_us;	     /* --cores: a message waits wake_us x s x s */
	double turn_bytes;   /* --cores: bytes a rank streams per turn */
};

/* One simulated call: what every rank's args are. */
struct call {
	enum ohc_coll_op op;
	uint64_t count;
	size_t esize;
	enum ohc_link_class link;
	const uint32_t *host_of; /* NULL: one host, or one rank per host */
	uint32_t nhosts;
	const char *force; /* "level0:NA;level1:<name>", or NULL */
	uint32_t host_ranks, host_cpus; /* --cores: ohc_coll_args' */
};

/*
 * Buffers are never touched (timing mode): fixed, far apart addresses
 * stand for them, so 4096 ranks need no memory for data.
 */
#define FAKE_SBUF ((uintptr_t)1 << 44)
#define FAKE_RBUF ((uintptr_t)3 << 44)

static ohc_status_t call_args(void *ctx, uint32_t rank, struct ohc_coll_args *a)
{
	const struct call *c = ctx;

	(void)rank;
	a->op = c->op;
	a->dtype = 3; /* fp32's HcclDataType; only esize matters here */
	a->redop = 0;
	a->root = 0;
	a->count = c->count;
	a->esize = c->esize;
	a->sbuf = (const void *)FAKE_SBUF;
	a->rbuf = (void *)FAKE_RBUF;
	if (c->op == OHC_COLL_BROADCAST) /* HcclBroadcast: one buffer */
		a->sbuf = a->rbuf;
	a->link = c->link;
	a->host_of = c->host_of;
	a->nhosts = c->nhosts;
	a->algo_override = c->force;
	a->host_ranks = c->host_ranks;
	a->host_cpus = c->host_cpus;
	return OHC_OK;
}

/* hccl_test's count for data_size bytes (tools/hccl_test size_counts). */
static uint64_t op_count(unsigned oi, uint64_t bytes, size_t es, uint32_t n)
{
	uint64_t count = (bytes + es - 1) / es;

	switch (ops[oi].sizing) {
	case SZ_GATHER:
	case SZ_SCATTER:
	case SZ_ALLTOALL:
		return (count + n - 1) / n;
	case SZ_NONE:
		return 0;
	default:
		return count;
	}
}

/*
 * Where ranks take turns on shared CPUs, no schedule finishes before the
 * CPUs have done the work of all its ranks: al's at the flat constants,
 * as selection prices it (ohc_algo_cpu_floor_us); 0 where every rank has
 * a CPU, and for a two-level algorithm (its own formula). The turns
 * themselves (net_for) price what a message waits for its receiver's
 * turn, and this the CPUs' throughput: 8 ranks on 2 CPUs, linear
 * AllGather of 1 KiB, each rank posting and taking 7 messages, measured
 * 11.6 us, the turns alone priced it at 5.3, the work per CPU at 8.0
 * (bench/sim_validate.sh, 2026-12-08).
 */
static double cpu_floor(const struct ohc_algo *al,
			const struct ohc_cost_net *flat,
			const struct ohc_coll_args *a, uint64_t bytes)
{
	if (al->cost_topo)
		return 0;
	return ohc_algo_cpu_floor_us(
		al, &flat->c, a, bytes, 1,
		ohc_algo_cost(al, &flat->c, bytes, a->nranks));
}

/*
 * al's model, the selection's prediction (select.c): the flat formula at
 * nt's constants, no less than floor (cpu_floor); a two-level
 * algorithm's own topology formula (which uses the library's shm and
 * rdma constants).
 */
static double model(const struct ohc_algo *al, const struct ohc_cost_net *nt,
		    const struct ohc_coll_args *a, uint64_t bytes, double floor)
{
	double us;

	if (al->cost_topo)
		return al->cost_topo(a, bytes);
	us = ohc_algo_cost(al, &nt->c, bytes, a->nranks);
	return floor > us ? floor : us;
}

struct row {
	const struct ohc_algo *algo[MAX_ALGOS];
	unsigned nalgo;
	int accepted[MAX_ALGOS];
	double model[MAX_ALGOS], sim[MAX_ALGOS];
	int sim_ok[MAX_ALGOS];
	int chosen;			/* cheapest accepting by the model */
	int fastest;			/* fastest simulated */
	const struct ohc_algo *library; /* ohc_algo_build's choice */
	uint64_t bytes;			/* as ohc_coll_bytes counts them */
};

static unsigned op_algos(enum ohc_coll_op op, const struct ohc_algo **out)
{
	unsigned n, k = 0;
	const struct ohc_algo *const *all = ohc_algo_all(&n);

	for (unsigned i = 0; i < n && k < MAX_ALGOS; i++)
		if (all[i]->op == op)
			out[k++] = all[i];
	return k;
}

/*
 * Ranks that share a host's CPUs (--cores): with s = ranks per host /
 * cores above 1, the library stops spinning (core/wait.c) and ranks take
 * turns on the CPUs. Every message then waits wake_us x s x s: its
 * receiver waits for its own turn, which comes after the other s - 1
 * ranks' of its CPU, and each of those waited so for its message (a step
 * of HcclBarrier on 2 CPUs: 4.6 us above 2 ranks' at 4 ranks, 19 at 8,
 * four times for twice the ranks; the collectives' steps alike, one
 * message or seven). A stream of bytes pays a turn (wake_us x s) for
 * every turn_bytes (a sender runs ahead into the shared ring, then waits
 * for the receiver's turn). What the CPUs can do at all is cpu_floor's:
 * the ranks' copies and reductions at the flat constants, divided among
 * the CPUs (before 2026-12-08 every byte here cost s times its flat
 * price, which a binomial tree's first steps, one or two ranks busy, do
 * not pay). The constants are measured (bench/sim_validate.sh). The
 * library's selection does not use the turns: it keeps the flat
 * constants and prices each candidate at no less than its work divided
 * among the CPUs (algo/select.c), which the "library" column shows with
 * --cores (the rooted operations' choice changes, the symmetric ones'
 * does not).
 */
static struct ohc_cost_params share_cpus(const struct opts *o,
					 const struct ohc_cost_params *base,
					 uint32_t per_host)
{
	struct ohc_cost_params c = *base;
	double s = o->cores ? (double)per_host / o->cores : 0;

	if (s <= 1.0)
		return c;
	c.alpha_us += o->wake_us * s * s;
	c.beta_us = c.beta_us + o->wake_us * s / o->turn_bytes;
	c.zc_beta_us = c.zc_beta_us + o->wake_us * s / o->turn_bytes;
	c.zc_hot_beta_us = c.zc_hot_beta_us + o->wake_us * s / o->turn_bytes;
	return c;
}

/* Ranks of one host: --host-ranks, else --ppn on RDMA (one), else all. */
static uint32_t ranks_per_host(const struct opts *o,
			       const struct ohc_cost_net *nt, uint32_t n)
{
	if (o->host_ranks)
		return o->host_ranks < n ? o->host_ranks : n;
	if (nt->link == OHC_LINK_RDMA)
		return o->ppn ? (o->ppn < n ? o->ppn : n) : 1;
	return n;
}

/*
 * The network as n ranks see it: nt with its CPUs shared (--cores), and
 * with --host-ranks on an RDMA network, the host's one device shared by
 * its ranks (every rank of these algorithms sends at once: each gets its
 * share of the bandwidth); a CPU device (rxe) with --cores only through
 * the CPUs: in the Soft-RoCE VM (2 vCPUs, bench/compare.sh -R) 2 ranks
 * each moved 1 MiB at the single stream's rate, 4 ranks at half of it.
 */
static struct ohc_cost_net net_for(const struct opts *o,
				   const struct ohc_cost_net *nt, uint32_t n)
{
	struct ohc_cost_net eff = *nt;
	uint32_t per_host = ranks_per_host(o, nt, n);

	if (o->host_ranks && nt->link == OHC_LINK_RDMA &&
	    !(nt->cpu_device && o->cores))
		eff.c.beta_us *= per_host;
	eff.c = share_cpus(o, &eff.c, per_host);
	return eff;
}

/*
 * Time al's schedules: forced through the library's own selection path
 * (HCCL_ALGO naming al), so they are built exactly as the library builds
 * them (agreement messages woven in for rooted ops, say). OHC_ERR_UNSUPPORTED
 * when al declines the call.
 */
static ohc_status_t simulate(const struct opts *o, const struct ohc_algo *al,
			     struct call *c, uint32_t n,
			     const struct ohc_cost_net *nt, double *us_p,
			     char *err, size_t len)
{
	struct ohc_sim sim = {0};
	struct ohc_sim_stats st0;
	struct ohc_cost_params intra;
	char force[96];
	ohc_status_t status;

	snprintf(force, sizeof(force), "level0:NA;level1:%s", al->name);
	c->force = force;
	sim.nranks = n;
	sim.mode = o->mode;
	sim.args_fn = call_args;
	sim.ctx = c;
	sim.cost = &nt->c;
	sim.timing = 1;
	sim.host_of = c->host_of;
	intra = share_cpus(o, ohc_cost_params_get(OHC_LINK_SHM),
			   o->ppn && o->ppn < n ? o->ppn : n);
	sim.cost_intra = &intra;
	sim.stats = calloc(n, sizeof(*sim.stats));
	if (!sim.stats) {
		c->force = NULL;
		snprintf(err, len, "out of memory");
		return OHC_ERR_NO_MEMORY;
	}
	status = ohc_sim_run(&sim);
	st0 = sim.stats[0];
	free(sim.stats);
	c->force = NULL;
	if (status != OHC_OK) {
		snprintf(err, len, "%s", sim.err);
		return status;
	}
	if (st0.algo != al) /* declined: selection built another one */
		return OHC_ERR_UNSUPPORTED;
	*us_p = sim.time_us;
	return OHC_OK;
}

/* Fill one row: model, simulation and selection for bytes. */
static int fill_row(const struct opts *o, unsigned oi,
		    const struct ohc_cost_net *nt,
		    const struct ohc_cost_net *flat, uint32_t n,
		    const uint32_t *host_of, uint32_t nhosts, uint64_t bytes,
		    struct row *row)
{
	struct call c = {ops[oi].op, op_count(oi, bytes, o->esize, n),
			 o->esize,   nt->link,
			 host_of,    nhosts,
			 NULL,	     ranks_per_host(o, nt, n),
			 o->cores};
	struct ohc_coll_args a = {0};
	struct ohc_sched s;
	ohc_status_t status;
	char err[1024];

	call_args(&c, 0, &a);
	a.rank = 0;
	a.nranks = n;
	row->bytes = ohc_coll_bytes(&a);
	row->nalgo = op_algos(ops[oi].op, row->algo);
	row->chosen = row->fastest = -1;
	for (unsigned i = 0; i < row->nalgo; i++) {
		const struct ohc_algo *al = row->algo[i];

		double floor = cpu_floor(al, flat, &a, row->bytes);

		row->accepted[i] = !al->accepts || al->accepts(&a) == OHC_OK;
		row->model[i] = model(al, nt, &a, row->bytes, floor);
		row->sim_ok[i] = 0;
		if (!row->accepted[i])
			continue;
		if (row->chosen < 0 || row->model[i] < row->model[row->chosen])
			row->chosen = (int)i;
		if (o->no_sim)
			continue;
		status = simulate(o, al, &c, n, nt, &row->sim[i], err,
				  sizeof(err));
		if (status != OHC_OK) {
			if (status != OHC_ERR_UNSUPPORTED) /* declined */
				fprintf(stderr,
					"hccl_simulate: %s/%s at %u ranks, "
					"%llu bytes: %s\n",
					ops[oi].name, al->name, n,
					(unsigned long long)bytes, err);
			continue;
		}
		row->sim_ok[i] = 1;
		if (row->sim[i] < floor)
			row->sim[i] = floor;
		if (row->fastest < 0 || row->sim[i] < row->sim[row->fastest])
			row->fastest = (int)i;
	}
	/* the library's own selection, for the link class it would see */
	ohc_sched_init(&s);
	row->library = NULL;
	if (ohc_algo_build(&a, &s, &row->library) != OHC_OK)
		row->library = NULL;
	ohc_sched_fini(&s);
	return 0;
}

static void fmt_us(char *buf, size_t len, double v)
{
	snprintf(buf, len, "%.5g", v);
}

/*
 * Hosts of --ppn on an RDMA network: rank r on host r / ppn. NULL (one
 * rank per host, or one host for shm) otherwise, or out of memory.
 */
static uint32_t *make_hosts(const struct opts *o, const struct ohc_cost_net *nt,
			    uint32_t n, uint32_t *nhosts_p)
{
	uint32_t *h;

	*nhosts_p = 0;
	if (nt->link != OHC_LINK_RDMA || o->ppn < 2 || o->ppn >= n)
		return NULL;
	h = malloc(n * sizeof(*h));
	if (!h) {
		fprintf(stderr, "hccl_simulate: out of memory, no hosts\n");
		return NULL;
	}
	for (uint32_t r = 0; r < n; r++)
		h[r] = r / o->ppn;
	*nhosts_p = (n + o->ppn - 1) / o->ppn;
	return h;
}

static void print_table(const struct opts *o, unsigned oi,
			const struct ohc_cost_net *net, uint32_t n)
{
	struct ohc_cost_net eff = net_for(o, net, n);
	const struct ohc_cost_net *nt = &eff;
	uint32_t nhosts, *host_of = make_hosts(o, nt, n, &nhosts);
	struct row row;
	const struct ohc_algo *algos[MAX_ALGOS];
	unsigned na = op_algos(ops[oi].op, algos);
	uint64_t maxb = ops[oi].sizing == SZ_NONE ? o->minbytes : o->maxbytes;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("\n%s over %s (%s): %u ranks, %zu-byte elements\n", ops[oi].name,
	       nt->name, nt->desc, n, o->esize);
	printf("alpha %.3g us, beta %.4g ns/B (%.3g GB/s), gamma %.4g ns/B, "
	       "copy %.4g ns/B\n",
	       nt->c.alpha_us, nt->c.beta_us * 1e3, 1e-3 / nt->c.beta_us,
	       nt->c.gamma_us * 1e3, nt->c.copy_us * 1e3);
	if (nt->c.zc_bytes)
		printf("zero copy of messages from %llu bytes at %.4g ns/B; in "
		       "ops of at most %llu bytes (cache-resident) at %.4g "
		       "ns/B\n",
		       (unsigned long long)nt->c.zc_bytes,
		       nt->c.zc_beta_us * 1e3,
		       (unsigned long long)nt->c.zc_hot_bytes,
		       nt->c.zc_hot_beta_us * 1e3);
	if (host_of)
		printf("%u hosts of up to %u ranks: messages inside a host at "
		       "the shm constants\n",
		       nhosts, o->ppn);
	if (nt->c.alpha_us != net->c.alpha_us)
		printf("ranks share %u CPUs per host: the constants above "
		       "include the turns (--cores)\n",
		       o->cores);
	printf("cells: model%s us; * selection's choice (cheapest model)%s\n",
	       o->no_sim ? "" : " / simulated",
	       o->no_sim ? "" : ", + fastest simulated");
	printf("%12s", "bytes");
	for (unsigned i = 0; i < na; i++)
		printf("  %-24s", algos[i]->name);
	printf("  %-24s %s\n", "selected", "library");
	for (uint64_t b = o->minbytes; b <= maxb;) {
		char cell[64], m[24], s[24];

		fill_row(o, oi, nt, net, n, host_of, nhosts, b, &row);
		printf("%12llu", (unsigned long long)b);
		for (unsigned i = 0; i < row.nalgo; i++) {
			if (!row.accepted[i]) {
				printf("  %-24s", "-");
				continue;
			}
			fmt_us(m, sizeof(m), row.model[i]);
			if (o->no_sim)
				s[0] = '\0';
			else if (row.sim_ok[i])
				fmt_us(s, sizeof(s), row.sim[i]);
			else
				snprintf(s, sizeof(s), "declined");
			snprintf(cell, sizeof(cell), "%s%s%s %s%s", m,
				 o->no_sim ? "" : " / ", s,
				 (int)i == row.chosen ? "*" : "",
				 (int)i == row.fastest ? "+" : "");
			printf("  %-24s", cell);
		}
		printf("  %-24s %s\n",
		       row.chosen >= 0 ? row.algo[row.chosen]->name : "-",
		       row.library ? row.library->name : "-");
		{
			uint64_t nb = (uint64_t)ceil((double)b * o->factor);

			b = nb > b ? nb : b + 1;
		}
	}
	free(host_of);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("(%.2f s)\n", (double)(t1.tv_sec - t0.tv_sec) +
				     (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
}

/* ---- --measure ---- */

#define FIT_MAX 256

/* One measured size: the cost formula's coefficients and the time. */
struct fit_pt {
	double a, b, k; /* model = a * alpha + b * beta + k */
	double us;
};

/*
 * The cost formulas are linear in the constants: their coefficients are
 * the formula at unit constants.
 */
static void fit_point(const struct ohc_algo *al, const struct ohc_cost_net *nt,
		      uint64_t bytes, uint32_t n, double us, struct fit_pt *p)
{
	/* beta: the ring's and zero copy's per-byte cost alike */
	struct ohc_cost_params one = {.alpha_us = 1,
				      .zc_bytes = nt->c.zc_bytes,
				      .zc_hot_bytes = nt->c.zc_hot_bytes},
			       rest = nt->c;

	p->a = al->cost ? ohc_algo_cost(al, &one, bytes, n) : 0;
	one.alpha_us = 0;
	one.beta_us = one.zc_beta_us = one.zc_hot_beta_us = 1;
	p->b = al->cost ? ohc_algo_cost(al, &one, bytes, n) : 0;
	rest.alpha_us = 0;
	rest.beta_us = rest.zc_beta_us = rest.zc_hot_beta_us = 0;
	p->k = al->cost ? ohc_algo_cost(al, &rest, bytes, n) : 0;
	p->us = us;
}

/*
 * Alpha and beta that minimise the squared relative error over pts (the
 * reduction and copy constants kept); 0 if the points cannot tell.
 */
static int fit(const struct fit_pt *pts, unsigned n, double *alpha_p,
	       double *beta_p)
{
	double saa = 0, sab = 0, sbb = 0, say = 0, sby = 0, det, al, be;

	for (unsigned i = 0; i < n; i++) {
		double a = pts[i].a / pts[i].us, b = pts[i].b / pts[i].us;
		double y = (pts[i].us - pts[i].k) / pts[i].us;

		saa += a * a;
		sab += a * b;
		sbb += b * b;
		say += a * y;
		sby += b * y;
	}
	det = saa * sbb - sab * sab;
	if (n < 2 || fabs(det) <= 1e-12 * saa * sbb)
		return 0;
	al = (say * sbb - sby * sab) / det;
	be = (saa * sby - sab * say) / det;
	if (al < 0) { /* bandwidth alone */
		al = 0;
		be = sbb > 0 ? sby / sbb : 0;
	} else if (be < 0) {
		be = 0;
		al = saa > 0 ? say / saa : 0;
	}
	*alpha_p = al;
	*beta_p = be;
	return 1;
}

/*
 * Rows of hccl_test output: "<bytes> | <us> | <algbw> | <check> | ...".
 * Lines that do not start with a number are skipped.
 */
static int measure(const struct opts *o)
{
	unsigned oi = o->op_idx[0];
	uint32_t n = o->ranks[0], nhosts;
	struct ohc_cost_net eff = net_for(o, &nets[o->net_idx[0]], n);
	const struct ohc_cost_net *nt = &eff;
	uint32_t *host_of = make_hosts(o, nt, n, &nhosts);
	FILE *f = fopen(o->measure, "r");
	char line[512];
	unsigned rows = 0, within = 0, npts = 0;
	double worst = 1.0, alpha, beta;
	struct fit_pt pts[FIT_MAX];

	if (!f) {
		fprintf(stderr, "hccl_simulate: cannot open %s: %s\n",
			o->measure, strerror(errno));
		free(host_of);
		return 2;
	}
	printf("%s over %s, %u ranks: measured (%s) against the model of "
	       "the algorithm the library selects\n",
	       ops[oi].name, nt->name, n, o->measure);
	printf("%12s  %-20s %12s %12s %12s %8s\n", "bytes", "algorithm",
	       "measured_us", "model_us", "simulated_us", "ratio");
	while (fgets(line, sizeof(line), f)) {
		unsigned long long b;
		double us, ratio;
		struct row row;
		int pos = 0, k;
		char sim[24] = "-";

		if (sscanf(line, " %llu | %lf |%n", &b, &us, &pos) != 2 || !pos)
			continue;
		fill_row(o, oi, nt, &nets[o->net_idx[0]], n, host_of, nhosts, b,
			 &row);
		if (!row.library)
			continue;
		for (k = 0; k < (int)row.nalgo && row.algo[k] != row.library;
		     k++)
			;
		if (k == (int)row.nalgo)
			continue;
		if (row.sim_ok[k])
			fmt_us(sim, sizeof(sim), row.sim[k]);
		if (npts < FIT_MAX && us > 0)
			fit_point(row.library, nt, row.bytes, n, us,
				  &pts[npts++]);
		ratio = row.model[k] > 0 ? us / row.model[k] : 0;
		printf("%12llu  %-20s %12.2f %12.2f %12s %8.2f%s\n", b,
		       row.library->name, us, row.model[k], sim, ratio,
		       ratio >= 0.5 && ratio <= 2.0 ? "" : "  (outside 2x)");
		rows++;
		if (ratio >= 0.5 && ratio <= 2.0)
			within++;
		if (ratio > 0 && fabs(log(ratio)) > fabs(log(worst)))
			worst = ratio;
	}
	fclose(f);
	free(host_of);
	if (!rows) {
		fprintf(stderr,
			"hccl_simulate: %s has no hccl_test result rows "
			"(\"bytes | us | ...\")\n",
			o->measure);
		return 2;
	}
	printf("%u of %u sizes within 2x of the model (worst ratio %.2f)\n",
	       within, rows, worst);
	if (fit(pts, npts, &alpha, &beta)) {
		double lo = HUGE_VAL, hi = 0;

		for (unsigned i = 0; i < npts; i++) {
			double r = pts[i].us / (pts[i].a * alpha +
						pts[i].b * beta + pts[i].k);

			lo = r < lo ? r : lo;
			hi = r > hi ? r : hi;
		}
		printf("fitted to these times: alpha %.3g us, beta %.4g ns/B "
		       "(%.3g GB/s); with them measured/model is %.2f .. "
		       "%.2f\n",
		       alpha, beta * 1e3, beta > 0 ? 1e-3 / beta : 0, lo, hi);
	}
	return within == rows ? 0 : 1;
}

/* ---- arguments ---- */

static int parse_size(const char *s, uint64_t *v_p)
{
	char *end;
	double v;
	uint64_t mul = 1;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		mul = 1ull << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1ull << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1ull << 30;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v * (double)mul > 1e15)
		return -1;
	*v_p = (uint64_t)(v * (double)mul);
	return 0;
}

static int parse_ranks(const char *spec, struct opts *o)
{
	char buf[512], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", spec);
	o->nranks = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned long lo, hi;
		char *end;

		errno = 0;
		lo = strtoul(tok, &end, 10);
		hi = lo;
		if (*end == '-') {
			char *e2;

			hi = strtoul(end + 1, &e2, 10);
			end = e2;
		}
		if (errno || *end || tok[0] == '-' || lo < 2 || hi < lo ||
		    hi > MAX_RANKS) {
			fprintf(stderr,
				"hccl_simulate: --ranks '%s': need counts "
				"or ranges (doubling) between 2 and %u, e.g. "
				"8 or 2,64 or 2-4096\n",
				spec, MAX_RANKS);
			return -1;
		}
		for (unsigned long r = lo; r <= hi; r *= 2) {
			if (o->nranks == MAX_LIST) {
				fprintf(stderr,
					"hccl_simulate: --ranks: more than "
					"%d rank counts\n",
					MAX_LIST);
				return -1;
			}
			o->ranks[o->nranks++] = (uint32_t)r;
		}
	}
	if (!o->nranks) {
		fprintf(stderr, "hccl_simulate: --ranks is empty\n");
		return -1;
	}
	return 0;
}

/* Comma list of names (or "all") into indices of names. */
static int parse_names(const char *spec, const char *const *names,
		       unsigned count, unsigned *idx, unsigned *n_p,
		       const char *what)
{
	char buf[512], *save = NULL, *tok;

	*n_p = 0;
	if (!strcmp(spec, "all")) {
		for (unsigned i = 0; i < count; i++)
			idx[(*n_p)++] = i;
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned i;

		for (i = 0; i < count && strcasecmp(names[i], tok); i++)
			;
		if (i == count) {
			fprintf(stderr, "hccl_simulate: unknown %s '%s' (",
				what, tok);
			for (unsigned j = 0; j < count; j++)
				fprintf(stderr, "%s%s", j ? ", " : "",
					names[j]);
			fprintf(stderr, ", all)\n");
			return -1;
		}
		if (*n_p < count)
			idx[(*n_p)++] = i;
	}
	if (!*n_p) {
		fprintf(stderr, "hccl_simulate: empty %s list\n", what);
		return -1;
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hccl_simulate [--op LIST] [--net LIST] [--ranks LIST] "
		"[-b MIN] [-e MAX]\n"
		"                     [-f FACTOR] [-d BYTES] [--mode "
		"eager|rendezvous] [--no-sim]\n"
		"       hccl_simulate --measure FILE --op OP --ranks N [--net "
		"NET] [-d BYTES]\n"
		"  --op     allreduce,allgather,reduce_scatter,broadcast,"
		"reduce,scatter,\n"
		"           alltoall,barrier or all (default all)\n"
		"  --net    shm,rxe,roce100,roce200,roce400 or all "
		"(default shm)\n"
		"  --ranks  counts and doubling ranges, e.g. 8 or 2-4096 "
		"(default 8)\n"
		"  -b/-e/-f sizes as hccl_test's data_size (default 8 .. 64M, "
		"x8)\n"
		"  -d       element size in bytes: 1, 2, 4, 8 (default 4)\n"
		"  --no-sim cost model only, no schedule simulation\n"
		"  --ppn N  RDMA networks: N ranks per host (messages inside "
		"a host at\n"
		"           shm costs; two-level algorithms apply); default "
		"one per host\n"
		"  --measure FILE  an hccl_test output: compare its times "
		"with the model\n"
		"           of the algorithm the library selects (ratio "
		"measured/model)\n"
		"  --alpha US, --bw GB/s  override the networks' per-message "
		"cost and\n"
		"           bandwidth (calibration from measurements, e.g. "
		"ib_write_lat/bw)\n"
		"  --gamma GB/s, --copy GB/s  override the reduction and "
		"local copy speeds\n"
		"  --zc GB/s  override shm's zero copy rate (ops above its "
		"in-cache size)\n"
		"  --cores N  CPUs per host: more ranks than that on a host "
		"take turns\n"
		"           (default 0: a CPU per rank)\n"
		"  --wake-us US, --turn-kb KB  with --cores, s ranks per CPU: "
		"a message\n"
		"           waits US x s x s (%g), a turn (US x s) per KB "
		"streamed (%g)\n"
		"  --host-ranks N  ranks sharing one host's CPUs (with "
		"--cores) and, on\n"
		"           RDMA networks, its device's bandwidth (default: "
		"all on shm,\n"
		"           --ppn on RDMA networks, the device not shared); "
		"e.g. every rank\n"
		"           of an rxe loopback run in one VM (rxe with "
		"--cores: "
		"only the CPUs\n"
		"           are shared, its device is the CPUs)\n"
		"  --constants  print the cost model's constants (src/algo/"
		"cost.c) as\n"
		"           NAME VALUE lines, microseconds and bytes, and "
		"exit\n",
		ohc_cost_share.wake_us, ohc_cost_share.turn_kb);
}

/* NET.FIELD VALUE, VALUE the shortest of %.15g and %.17g that reads back
 * as v: exact, and 5e-05 rather than 5.0000000000000002e-05. */
static void put_constant(const char *net, const char *field, double v)
{
	char b[32];

	snprintf(b, sizeof(b), "%.15g", v);
	if (strtod(b, NULL) != v)
		snprintf(b, sizeof(b), "%.17g", v);
	printf("%s.%s %s\n", net, field, b);
}

/*
 * --constants: the cost table as the library sees it in this environment
 * (shm's zero copy follows OPENHCCL_SHM_ZC_KB and OPENHCCL_MALLOC_SHARED_KB),
 * one "NET.FIELD VALUE" line each: the scripts' only source of these
 * numbers (bench/analysis.py constants).
 */
static void print_constants(void)
{
	const struct ohc_cost_net *t;
	unsigned n;

	t = ohc_cost_nets(&n);
	for (unsigned i = 0; i < n; i++) {
		const struct ohc_cost_params *c = &t[i].c;
		const char *nm = t[i].name;

		printf("%s.link %s\n", nm, ohc_link_class_name(t[i].link));
		put_constant(nm, "cpu_device", t[i].cpu_device);
		put_constant(nm, "alpha_us", c->alpha_us);
		put_constant(nm, "send_us", ohc_cost_send_us(c));
		put_constant(nm, "beta_us", c->beta_us);
		put_constant(nm, "gamma_us", c->gamma_us);
		put_constant(nm, "copy_us", c->copy_us);
		put_constant(nm, "zc_bytes", (double)c->zc_bytes);
		put_constant(nm, "zc_beta_us", c->zc_beta_us);
		put_constant(nm, "zc_hot_bytes", (double)c->zc_hot_bytes);
		put_constant(nm, "zc_hot_beta_us", c->zc_hot_beta_us);
	}
	put_constant("share", "wake_us", ohc_cost_share.wake_us);
	put_constant("share", "turn_kb", ohc_cost_share.turn_kb);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"op", required_argument, NULL, 'o'},
		{"net", required_argument, NULL, 'n'},
		{"ranks", required_argument, NULL, 'p'},
		{"min-bytes", required_argument, NULL, 'b'},
		{"max-bytes", required_argument, NULL, 'e'},
		{"factor", required_argument, NULL, 'f'},
		{"esize", required_argument, NULL, 'd'},
		{"mode", required_argument, NULL, 'm'},
		{"no-sim", no_argument, NULL, 'x'},
		{"measure", required_argument, NULL, 'M'},
		{"ppn", required_argument, NULL, 'P'},
		{"alpha", required_argument, NULL, 'A'},
		{"bw", required_argument, NULL, 'B'},
		{"gamma", required_argument, NULL, 'G'},
		{"copy", required_argument, NULL, 'C'},
		{"zc", required_argument, NULL, 'Z'},
		{"cores", required_argument, NULL, 'c'},
		{"wake-us", required_argument, NULL, 'W'},
		{"turn-kb", required_argument, NULL, 'T'},
		{"host-ranks", required_argument, NULL, 'H'},
		{"constants", no_argument, NULL, 'K'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *op_names[OHC_ARRAY_SIZE(ops)];
	const char *net_names[MAX_NETS];
	struct opts o = {0};
	const char *opspec = "all", *netspec = "shm", *rankspec = "8";
	int c, op_given = 0, ranks_given = 0;
	double alpha = -1, bw = -1, gamma = -1, copy = -1, zc = -1;
	double turn_kb = ohc_cost_share.turn_kb;
	const struct ohc_cost_net *table;
	unsigned ntable;
	char *end;

	for (unsigned i = 0; i < OHC_ARRAY_SIZE(ops); i++)
		op_names[i] = ops[i].name;
	table = ohc_cost_nets(&ntable);
	for (unsigned i = 0; i < ntable && n_nets < MAX_NETS; i++)
		if (table[i].link != OHC_LINK_SELF)
			nets[n_nets++] = table[i];
	for (unsigned i = 0; i < n_nets; i++)
		net_names[i] = nets[i].name;
	o.minbytes = 8;
	o.maxbytes = 64ull << 20;
	o.factor = 8;
	o.esize = 4;
	o.mode = OHC_SIM_EAGER;
	o.wake_us = ohc_cost_share.wake_us;
	while ((c = getopt_long(argc, argv, "b:e:f:d:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			opspec = optarg;
			op_given = 1;
			break;
		case 'n':
			netspec = optarg;
			break;
		case 'p':
			rankspec = optarg;
			ranks_given = 1;
			break;
		case 'b':
		case 'e':
			if (parse_size(optarg,
				       c == 'b' ? &o.minbytes : &o.maxbytes)) {
				fprintf(stderr,
					"hccl_simulate: -%c '%s' is not a "
					"size (e.g. 8, 64K, 1M)\n",
					c, optarg);
				return 2;
			}
			break;
		case 'f':
			errno = 0;
			o.factor = strtod(optarg, &end);
			if (errno || *end || !(o.factor > 1.0) ||
			    o.factor > 1e6) {
				fprintf(stderr,
					"hccl_simulate: -f '%s': need a "
					"factor > 1\n",
					optarg);
				return 2;
			}
			break;
		case 'd':
			o.esize = strtoul(optarg, &end, 10);
			if (*end || (o.esize != 1 && o.esize != 2 &&
				     o.esize != 4 && o.esize != 8)) {
				fprintf(stderr,
					"hccl_simulate: -d '%s': element "
					"size must be 1, 2, 4 or 8\n",
					optarg);
				return 2;
			}
			break;
		case 'm':
			if (!strcmp(optarg, "eager")) {
				o.mode = OHC_SIM_EAGER;
			} else if (!strcmp(optarg, "rendezvous")) {
				o.mode = OHC_SIM_RENDEZVOUS;
			} else {
				fprintf(stderr,
					"hccl_simulate: --mode '%s': eager "
					"or rendezvous\n",
					optarg);
				return 2;
			}
			break;
		case 'x':
			o.no_sim = 1;
			break;
		case 'M':
			o.measure = optarg;
			break;
		case 'P':
			errno = 0;
			o.ppn = (uint32_t)strtoul(optarg, &end, 10);
			if (errno || *end || optarg[0] == '-' || o.ppn < 1 ||
			    o.ppn > MAX_RANKS) {
				fprintf(stderr,
					"hccl_simulate: --ppn '%s': ranks per "
					"host, 1..%u\n",
					optarg, MAX_RANKS);
				return 2;
			}
			break;
		case 'A':
		case 'B':
			errno = 0;
			*(c == 'A' ? &alpha : &bw) = strtod(optarg, &end);
			if (errno || *end || end == optarg ||
			    !((c == 'A' ? alpha : bw) >= 0) ||
			    (c == 'B' && bw == 0)) {
				fprintf(stderr,
					"hccl_simulate: --%s '%s': need a "
					"number %s\n",
					c == 'A' ? "alpha" : "bw", optarg,
					c == 'A' ? ">= 0 (us)" : "> 0 (GB/s)");
				return 2;
			}
			break;
		case 'G':
		case 'C':
		case 'Z':
		case 'W':
		case 'T': {
			double *v = c == 'G'   ? &gamma
				    : c == 'C' ? &copy
				    : c == 'Z' ? &zc
				    : c == 'W' ? &o.wake_us
					       : &turn_kb;

			errno = 0;
			*v = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(*v >= 0) ||
			    (c != 'W' && *v == 0)) {
				fprintf(stderr,
					"hccl_simulate: --%s '%s': need a "
					"number %s\n",
					c == 'G'   ? "gamma"
					: c == 'C' ? "copy"
					: c == 'Z' ? "zc"
					: c == 'W' ? "wake-us"
						   : "turn-kb",
					optarg, c == 'W' ? ">= 0" : "> 0");
				return 2;
			}
			break;
		}
		case 'c':
		case 'H': {
			uint32_t *v = c == 'c' ? &o.cores : &o.host_ranks;

			errno = 0;
			*v = (uint32_t)strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg ||
			    optarg[0] == '-' || *v > MAX_RANKS) {
				fprintf(stderr,
					"hccl_simulate: --%s '%s': %s per "
					"host, 0..%u\n",
					c == 'c' ? "cores" : "host-ranks",
					optarg, c == 'c' ? "CPUs" : "ranks",
					MAX_RANKS);
				return 2;
			}
			break;
		}
		case 'K':
			print_constants();
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hccl_simulate: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	if (o.minbytes == 0 || o.minbytes > o.maxbytes) {
		fprintf(stderr,
			"hccl_simulate: need 0 < min bytes (-b) <= max bytes "
			"(-e)\n");
		return 2;
	}
	if (parse_names(opspec, op_names, OHC_ARRAY_SIZE(ops), o.op_idx,
			&o.nops, "op") ||
	    parse_names(netspec, net_names, n_nets, o.net_idx, &o.nnets,
			"net") ||
	    parse_ranks(rankspec, &o))
		return 2;
	for (unsigned ni = 0; ni < o.nnets; ni++) {
		struct ohc_cost_net *nt = &nets[o.net_idx[ni]];

		if (alpha >= 0)
			nt->c.alpha_us = alpha;
		if (bw > 0)
			nt->c.beta_us = 1e-3 / bw; /* us per byte */
		if (gamma > 0)
			nt->c.gamma_us = 1e-3 / gamma;
		if (copy > 0)
			nt->c.copy_us = 1e-3 / copy;
		if (zc > 0 && nt->c.zc_bytes)
			nt->c.zc_beta_us = 1e-3 / zc;
	}
	o.turn_bytes = turn_kb * 1024;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (o.measure) {
		if (!op_given || !ranks_given || o.nops != 1 || o.nnets != 1 ||
		    o.nranks != 1) {
			fprintf(stderr,
				"hccl_simulate: --measure needs one --op, "
				"one --ranks and one --net (the run's)\n");
			return 2;
		}
		return measure(&o);
	}
	for (unsigned ni = 0; ni < o.nnets; ni++)
		for (unsigned ri = 0; ri < o.nranks; ri++)
			for (unsigned oi = 0; oi < o.nops; oi++)
				print_table(&o, o.op_idx[oi],
					    &nets[o.net_idx[ni]], o.ranks[ri]);
	return 0;
}
