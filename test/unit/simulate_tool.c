/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hccl_simulate run as a user runs it: its model column must be the
 * library's ohc_algo_predict_us, the selection mark must sit on the
 * cheapest prediction and agree with the library's own choice, 4096 ranks
 * must stay cheap, --measure must compute ratios against the model, and
 * bad arguments must give clear errors.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/ohc_test.h"
#include "algo/algo.h"

#define OUT_MAX (1 << 20)

struct run {
	int status;
	double cpu_s; /* user + system time of the child */
	char *out;
};

static const char *sim_path(void)
{
	return ohc_test_tool_path("simulate/hccl_simulate");
}

static void run_sim(char *const args[], struct run *r)
{
	char *argv[24] = {(char *)sim_path()};
	struct rusage ru;
	size_t len = 0;
	ssize_t n;
	int p[2], st, k = 1;
	pid_t pid;

	for (; args[k - 1] && k < 23; k++)
		argv[k] = args[k - 1];
	argv[k] = NULL;
	if (!r->out)
		r->out = malloc(OUT_MAX);
	cr_assert(r->out && pipe(p) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	while ((n = read(p[0], r->out + len, OUT_MAX - 1 - len)) > 0)
		len += (size_t)n;
	r->out[len] = '\0';
	close(p[0]);
	cr_assert(wait4(pid, &st, 0, &ru) == pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	r->cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
		   (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static const struct ohc_algo *algo_named(enum ohc_coll_op op, const char *name)
{
	unsigned n;
	const struct ohc_algo *const *all = ohc_algo_all(&n);

	for (unsigned i = 0; i < n; i++)
		if (all[i]->op == op && !strcmp(all[i]->name, name))
			return all[i];
	cr_assert_fail("no %s algorithm '%s'", ohc_coll_op_name(op), name);
	return NULL;
}

/*
 * Check every row of the table of op (shm, 8 ranks): model values against
 * ohc_algo_predict_us, '*' on the minimum, "selected" and "library" the
 * same algorithm. Returns the number of rows checked.
 */
static unsigned check_table(const char *out, enum ohc_coll_op op,
			    uint32_t nranks)
{
	char head[64], *p, *line, names[8][64];
	const struct ohc_algo *algos[8];
	unsigned na = 0, rows = 0;

	snprintf(head, sizeof(head), "\n%s over shm ", ohc_coll_op_name(op));
	p = strstr(out, head);
	cr_assert(p, "no %s table:\n%s", ohc_coll_op_name(op), out);
	p = strstr(p, "       bytes");
	cr_assert(p);
	line = strndup(p, strcspn(p, "\n"));
	for (char *tok = strtok(line, " "); tok; tok = strtok(NULL, " ")) {
		if (!strcmp(tok, "bytes") || !strcmp(tok, "selected") ||
		    !strcmp(tok, "library"))
			continue;
		cr_assert(na < 8);
		snprintf(names[na], sizeof(names[na]), "%s", tok);
		algos[na] = algo_named(op, tok);
		na++;
	}
	free(line);
	cr_assert(na >= 1);
	p = strchr(p, '\n') + 1;
	while (*p == ' ') {
		unsigned long long bytes;
		double model[8], best = HUGE_VAL;
		int star = -1, off = 0;
		char sel[64], lib[64];

		cr_assert(sscanf(p, "%llu%n", &bytes, &off) == 1);
		p += off;
		for (unsigned i = 0; i < na; i++) {
			double sim;
			char mark[8] = "";
			int used = 0;

			while (*p == ' ')
				p++;
			if (*p == '-') {
				/* declines the layout (two-level on one host)
				 */
				cr_assert(algos[i]->accepts);
				model[i] = HUGE_VAL;
				p++;
				continue;
			}
			cr_assert(sscanf(p, " %lf / %lf%n", &model[i], &sim,
					 &used) == 2,
				  "row %llu: %.60s", bytes, p);
			p += used;
			if (*p == ' ' && (p[1] == '*' || p[1] == '+'))
				sscanf(p, " %7[*+]%n", mark, &used), p += used;
			if (strchr(mark, '*')) {
				cr_assert(star < 0, "two selections in a row");
				star = (int)i;
			}
			double want = ohc_algo_predict_us(algos[i], op, bytes,
							  nranks, OHC_LINK_SHM);
			cr_assert(fabs(model[i] - want) <= 1e-4 * want + 1e-3,
				  "%s %llu bytes: table %.6g, "
				  "ohc_algo_predict_us %.6g",
				  names[i], bytes, model[i], want);
			if (model[i] < best)
				best = model[i];
		}
		cr_assert(sscanf(p, " %63s %63s", sel, lib) == 2);
		cr_assert(star >= 0, "row %llu has no selection mark", bytes);
		cr_assert(model[star] <= best,
			  "row %llu: * on %s (%g), "
			  "cheapest %g",
			  bytes, names[star], model[star], best);
		cr_assert_str_eq(sel, names[star]);
		cr_assert_str_eq(lib, sel,
				 "row %llu: the library picks %s, the table "
				 "%s",
				 bytes, lib, sel);
		p = strchr(p, '\n') + 1;
		rows++;
	}
	return rows;
}

Test(simulate, table_agrees_with_the_cost_model_and_selection)
{
	static struct run r;
	/* sizes divisible by 8 ranks x 4 bytes: no rounding of counts */
	char *args[] = {"--net",
			"shm",
			"--ranks",
			"8",
			"--op",
			"allreduce,allgather,reduce_scatter,broadcast,"
			"reduce,scatter,alltoall",
			"-b",
			"64",
			"-e",
			"16M",
			"-f",
			"8",
			NULL};
	static const enum ohc_coll_op ops[] = {
		OHC_COLL_ALLREDUCE, OHC_COLL_ALLGATHER, OHC_COLL_REDUCE_SCATTER,
		OHC_COLL_BROADCAST, OHC_COLL_REDUCE,	OHC_COLL_SCATTER,
		OHC_COLL_ALLTOALL,
	};

	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	for (size_t i = 0; i < sizeof(ops) / sizeof(*ops); i++)
		cr_assert_eq(check_table(r.out, ops[i], 8), 7,
			     "%s: 7 rows wanted", ohc_coll_op_name(ops[i]));
	free(r.out);
}

Test(simulate, four_thousand_ranks_are_cheap)
{
	static struct run r;
	/* the ring's 67 M transfers cost the same at every size */
	char *args[] = {"--op", "allreduce", "--ranks", "4096", "-b",
			"16M",	"-e",	     "16M",	NULL};
	double limit = 20.0;

#if defined(__SANITIZE_ADDRESS__)
	limit *= 10; /* the tool is instrumented, unoptimized, too:
		      * 93 s measured in the Debug ASan build */
#endif
	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.out, "allreduce over shm"), "%s", r.out);
	cr_assert(strstr(r.out, "4096 ranks"), "%s", r.out);
	cr_assert(strstr(r.out, "16777216 "), "%s", r.out);
	cr_assert(r.cpu_s < limit, "4096 ranks took %.1f s of CPU", r.cpu_s);
	free(r.out);
}

Test(simulate, hosts_bring_the_two_level_algorithm)
{
	static struct run r;
	char *args[] = {"--net", "rxe",	 "--ranks",   "16", "--ppn",
			"4",	 "--op", "allreduce", "-b", "4M",
			"-e",	 "4M",	 NULL};
	const char *p;
	char row[512];

	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.out, "4 hosts of up to 4 ranks"), "%s", r.out);
	p = strstr(r.out, "\n     4194304 ");
	cr_assert(p, "%s", r.out);
	snprintf(row, sizeof(row), "%.*s", (int)strcspn(p + 1, "\n"), p + 1);
	/* on 4 hosts the two-level model wins at 4 MiB, as in the library */
	cr_assert(strstr(row, " *"), "%s", row);
	cr_assert(strstr(row, "two_level_ring           two_level_ring"),
		  "the two-level algorithm should be selected:\n%s", row);
	free(r.out);
}

Test(simulate, measure_compares_with_the_model)
{
	static struct run r;
	char path[] = "/tmp/ohc_sim_measure_XXXXXX";
	const struct ohc_algo *al = NULL;
	int fd = mkstemp(path);
	FILE *f;
	char *args[] = {"--measure", path,    "--op", "allreduce", "--ranks",
			"4",	     "--net", "shm",  NULL};

	cr_assert(fd >= 0);
	/* what the library picks for 1 MiB at 4 ranks, and its model */
	{
		unsigned n;
		const struct ohc_algo *const *all = ohc_algo_all(&n);
		double best = HUGE_VAL;

		for (unsigned i = 0; i < n; i++) {
			double us =
				ohc_algo_predict_us(all[i], OHC_COLL_ALLREDUCE,
						    1 << 20, 4, OHC_LINK_SHM);

			if (us < best) {
				best = us;
				al = all[i];
			}
		}
	}
	f = fdopen(fd, "w");
	cr_assert(f);
	fprintf(f,
		"the minbytes is 1048576, maxbytes is 1048576\n"
		"data_size(Bytes): | aveg_time(us): | ...\n"
		"1048576           | %-14.2f | 1.0 | success | 1.0\n",
		1.5 * ohc_algo_predict_us(al, OHC_COLL_ALLREDUCE, 1 << 20, 4,
					  OHC_LINK_SHM));
	fclose(f);
	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.out, al->name), "%s", r.out);
	cr_assert(strstr(r.out, "    1.50\n"), "ratio 1.50 wanted:\n%s", r.out);
	cr_assert(strstr(r.out, "1 of 1 sizes within 2x"), "%s", r.out);

	f = fopen(path, "w");
	cr_assert(f);
	fprintf(f, "1048576 | %.2f | 1.0 | success | 1.0\n",
		3.0 * ohc_algo_predict_us(al, OHC_COLL_ALLREDUCE, 1 << 20, 4,
					  OHC_LINK_SHM));
	fclose(f);
	run_sim(args, &r);
	cr_assert_eq(r.status, 1, "%s", r.out);
	cr_assert(strstr(r.out, "(outside 2x)"), "%s", r.out);
	unlink(path);
	free(r.out);
}

/* The first model value of the 1024-byte row of the only table in out. */
static double model_at(const char *out, uint64_t bytes)
{
	char row[32];
	const char *p;
	double us = 0;

	snprintf(row, sizeof(row), "\n%12llu ", (unsigned long long)bytes);
	p = strstr(out, row);
	cr_assert(p, "no %llu-byte row:\n%s", (unsigned long long)bytes, out);
	cr_assert(sscanf(p + strlen(row), "%lf", &us) == 1, "%s", out);
	return us;
}

static double first_model(const char *out)
{
	return model_at(out, 1024);
}

/*
 * hccl_simulate's --cores model of a symmetric algorithm al (its ranks
 * busy throughout) on n ranks, s per CPU, with flat constants c: the
 * turns (a wake x s x s per message, a turn per turn_kb streamed), no
 * less than the n ranks' work at the flat constants on n / s CPUs.
 */
static double turns_model(const struct ohc_algo *al,
			  const struct ohc_cost_params *c, double s,
			  double wake_us, double turn_kb, uint32_t n)
{
	struct ohc_cost_params t = *c;
	double turns, work = s * al->cost(c, 1024, n);

	t.alpha_us += wake_us * s * s;
	t.beta_us += wake_us * s / (turn_kb * 1024);
	t.zc_beta_us += wake_us * s / (turn_kb * 1024);
	t.zc_hot_beta_us += wake_us * s / (turn_kb * 1024);
	turns = al->cost(&t, 1024, n);
	return turns > work ? turns : work;
}

/*
 * --cores: 8 ranks on 2 CPUs take turns (s = 4): alpha + wake x s x s, a
 * turn per turn-kb on the bandwidth terms, and no less than the 8 ranks'
 * work on 2 CPUs (s times the flat model; with a small wake the work
 * decides, with a large one the turns); on 8 CPUs nothing changes.
 * --gamma and --copy set the host speeds.
 */
Test(simulate, ranks_sharing_cpus_pay_turns)
{
	static struct run r;
	char *shared[] = {"--op",     "allreduce", "--ranks", "8",
			  "-b",	      "1K",	   "-e",      "1K",
			  "--no-sim", "--gamma",   "20",      "--copy",
			  "40",	      "--cores",   "2",	      "--wake-us",
			  "10",	      "--turn-kb", "64",      NULL};
	struct ohc_cost_params c = *ohc_cost_params_get(OHC_LINK_SHM);
	const struct ohc_algo *al =
		algo_named(OHC_COLL_ALLREDUCE, "recursive_doubling");
	double want, got;

	c.gamma_us = 1e-3 / 20;
	c.copy_us = 1e-3 / 40;
	run_sim(shared + 0, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(strstr(r.out, "ranks share 2 CPUs per host"), "%s", r.out);
	got = first_model(r.out);
	want = turns_model(al, &c, 4, 10, 64, 8);
	cr_assert(fabs(got - want) <= 1e-4 * want, "model %g, want %g\n%s", got,
		  want, r.out);
	cr_assert_gt(want, 4 * al->cost(&c, 1024, 8) * 1.01,
		     "the turns decide (wake 10 us)");

	shared[16] = "0.01"; /* a small wake: the CPUs' work decides */
	run_sim(shared, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	got = first_model(r.out);
	want = 4 * al->cost(&c, 1024, 8);
	cr_assert(fabs(got - want) <= 1e-4 * want, "model %g, want %g\n%s", got,
		  want, r.out);
	cr_assert(fabs(turns_model(al, &c, 4, 0.01, 64, 8) - want) <=
		  1e-4 * want);
	shared[16] = "10";

	shared[14] = "8"; /* a CPU per rank: the constants as they are */
	run_sim(shared, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(!strstr(r.out, "ranks share"), "%s", r.out);
	c = *ohc_cost_params_get(OHC_LINK_SHM);
	c.gamma_us = 1e-3 / 20;
	c.copy_us = 1e-3 / 40;
	want = al->cost(&c, 1024, 8);
	got = first_model(r.out);
	cr_assert(fabs(got - want) <= 1e-4 * want, "model %g, want %g\n%s", got,
		  want, r.out);
	free(r.out);
}

/*
 * The model of the first algorithm (allgather: recursive doubling) at
 * 4 ranks and 1 KiB on net, host_ranks ranks per host sharing cores CPUs,
 * then the options of more (NULL-terminated; NULL: none).
 */
static double model_1k(const char *net, const char *host_ranks,
		       const char *cores, char *const *more)
{
	struct run r = {0};
	char *args[24] = {"--op",
			  "allgather",
			  "--ranks",
			  "4",
			  "-b",
			  "1K",
			  "-e",
			  "1K",
			  "--no-sim",
			  "--net",
			  (char *)net,
			  "--host-ranks",
			  (char *)host_ranks,
			  "--cores",
			  (char *)cores,
			  NULL};
	unsigned k = 15;
	double us;

	for (; more && *more && k < 23; more++)
		args[k++] = *more;
	args[k] = NULL;
	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	us = first_model(r.out);
	free(r.out);
	return us;
}

/*
 * --host-ranks on an RDMA network: a hardware device (roce100) is shared
 * by its host's ranks; rxe's work runs on the sending CPU, so with
 * --cores and a CPU per rank (4 ranks, 4 CPUs) it is not shared at all,
 * while without --cores it still is (the old pricing, kept).
 */
Test(simulate, rxe_device_is_shared_only_through_cpus)
{
	double alone = model_1k("rxe", "1", "4", NULL);

	cr_assert_float_eq(model_1k("rxe", "4", "4", NULL), alone, 1e-6 * alone,
			   "rxe, 4 ranks on 4 CPUs priced as sharing a device");
	cr_assert_gt(model_1k("rxe", "4", "0", NULL), alone * 1.01,
		     "rxe without --cores: the device is shared");
	cr_assert_gt(model_1k("roce100", "4", "4", NULL),
		     model_1k("roce100", "1", "4", NULL) * 1.01,
		     "roce100: 4 ranks share one device");
}

/*
 * The rxe pricing bench/sim_validate.sh -x calibrates: 4 ranks of one VM
 * on 2 CPUs (s = 2) pay the wake given per message (--wake-us x s x s on top
 * of --alpha) and a turn per turn-kb (the device not shared beyond that:
 * its work is the CPUs', turns_model); on 4 CPUs they spin and pay none
 * of it.
 */
Test(simulate, rxe_ranks_beyond_cpus_pay_the_wake_given)
{
	static char *const given[] = {"--wake-us", "200",  "--alpha", "40",
				      "--bw",	   "0.05", NULL};
	const struct ohc_algo *al =
		algo_named(OHC_COLL_ALLGATHER, "recursive_doubling");
	struct ohc_cost_params c = *ohc_cost_params_get(OHC_LINK_RDMA);
	double got = model_1k("rxe", "4", "2", given), want;

	c.alpha_us = 40;
	c.beta_us = 1e-3 / 0.05;
	want = al->cost(&c, 1024, 4);
	cr_assert(fabs(model_1k("rxe", "4", "4", given) - want) <= 1e-4 * want,
		  "4 CPUs: no turns, model %g", want);
	want = turns_model(al, &c, 2, 200, 512, 4); /* default --turn-kb */
	cr_assert(fabs(got - want) <= 1e-4 * want, "model %g, want %g", got,
		  want);
	/* two steps of recursive doubling: two wakes of 800 us at least */
	cr_assert_gt(got, 2 * (40 + 800.0), "model %g", got);
}

/*
 * --zc sets shm's zero-copy rate (bench/sim_validate.sh: the host's
 * memcpy), for ops above the in-cache size: a 2-rank AllGather of 4 MiB
 * copies its own block and zero-copies the peer's; one of 256 KiB keeps
 * the in-cache rate. rxe has no zero copy: nothing changes there.
 */
Test(simulate, zc_sets_the_zero_copy_rate)
{
	static char *args[] = {"--op", "allgather", "--ranks",	"2",
			       "-b",   "256K",	    "-e",	"4M",
			       "-f",   "16",	    "--no-sim", "--net",
			       "shm",  "--zc",	    "10",	NULL};
	const struct ohc_algo *al =
		algo_named(OHC_COLL_ALLGATHER, "recursive_doubling");
	struct ohc_cost_params c = *ohc_cost_params_get(OHC_LINK_SHM), hot;
	struct run r = {0};
	double big, small;

	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	big = model_at(r.out, 4u << 20);
	small = model_at(r.out, 256u << 10);
	free(r.out);
	r.out = NULL;
	c.zc_beta_us = 1e-4;
	cr_assert(fabs(big - al->cost(&c, 4u << 20, 2)) <= 1e-4 * big,
		  "4 MiB: model %g, want %g", big, al->cost(&c, 4u << 20, 2));
	cr_assert(fabs(small - al->cost(ohc_cost_for_op(&c, 256u << 10, &hot),
					256u << 10, 2)) <= 1e-4 * small,
		  "256 KiB: model %g, the in-cache rate", small);
	/* 2 MiB zero-copied at 10 GB/s, the own 2 MiB at the copy rate */
	cr_assert_gt(big, 1e-4 * (2u << 20) + c.copy_us * (2u << 20));

	args[12] = "rxe";
	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	big = model_at(r.out, 4u << 20);
	free(r.out);
	r.out = NULL;
	args[13] = NULL;
	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert(fabs(big - model_at(r.out, 4u << 20)) <= 1e-9 * big,
		  "rxe: --zc changed the model");
	free(r.out);
	r.out = NULL;
	args[13] = "--zc";
	args[12] = "shm";
}

Test(simulate, bad_arguments_are_clear_errors)
{
	static const struct {
		char *args[8];
		const char *says;
	} cases[] = {
		{{"--ranks", "1", NULL}, "--ranks '1'"},
		{{"--ranks", "8-4", NULL}, "--ranks '8-4'"},
		{{"--op", "allfoo", NULL}, "unknown op 'allfoo'"},
		{{"--net", "ethernet", NULL}, "unknown net 'ethernet'"},
		{{"-b", "0", NULL}, "need 0 < min bytes"},
		{{"-b", "1M", "-e", "1K", NULL}, "need 0 < min bytes"},
		{{"-b", "12Q", NULL}, "-b '12Q' is not a size"},
		{{"-f", "1", NULL}, "-f '1'"},
		{{"-d", "3", NULL}, "-d '3'"},
		{{"--measure", "/tmp/x", NULL}, "--measure needs one --op"},
		{{"--measure", "/nonexistent", "--op", "allreduce", "--ranks",
		  "4", NULL},
		 "cannot open /nonexistent"},
		{{"extra", NULL}, "unexpected argument 'extra'"},
		{{"--cores", "-1", NULL}, "--cores '-1'"},
		{{"--wake-us", "x", NULL}, "--wake-us 'x'"},
		{{"--turn-kb", "0", NULL}, "--turn-kb '0'"},
		{{"--gamma", "0", NULL}, "--gamma '0'"},
		{{"--zc", "0", NULL}, "--zc '0'"},
		{{"--host-ranks", "x", NULL}, "--host-ranks 'x'"},
	};
	static struct run r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		run_sim(cases[i].args, &r);
		cr_assert_eq(r.status, 2, "case %zu: status %d\n%s", i,
			     r.status, r.out);
		cr_assert(strstr(r.out, cases[i].says), "case %zu:\n%s", i,
			  r.out);
	}
	free(r.out);
}

/* The model of the first column in the row of bytes of the only table. */
static double row_model(const char *out, const char *bytes)
{
	char key[32];
	const char *p;
	double us = 0;

	snprintf(key, sizeof(key), "\n%12s ", bytes);
	p = strstr(out, key);
	cr_assert(p, "no %s-byte row:\n%s", bytes, out);
	cr_assert(sscanf(p + strlen(key), "%lf", &us) == 1, "%s", out);
	return us;
}

/*
 * shm's zero copy (a message of OPENHCCL_SHM_ZC_KB or more out of a
 * shared aclrtMalloc buffer of OPENHCCL_MALLOC_SHARED_KB or more is one
 * copy): the simulator prices it from the same variables as the library.
 * A 2-rank binomial broadcast of 4 MiB is one 4 MiB message (plus the
 * agreement's message the other way, at once: send_us): zero copy by
 * default, the ring's two copies when either threshold is above 4 MiB or
 * off.
 */
Test(simulate, shm_zero_copy_threshold_from_the_environment)
{
	char *args[] = {"--op",	 "broadcast", "--ranks",  "2",
			"-b",	 "4M",	      "-e",	  "4M",
			"--net", "shm",	      "--no-sim", NULL};
	const struct ohc_cost_params *c = ohc_cost_params_get(OHC_LINK_SHM);
	const double nb = 4194304.0;
	double zc, ring, big, off;
	struct run r = {0};

	unsetenv("OPENHCCL_SHM_ZC_KB");
	unsetenv("OPENHCCL_MALLOC_SHARED_KB");
	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	zc = row_model(r.out, "4194304");
	setenv("OPENHCCL_SHM_ZC_KB", "8192", 1);
	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	big = row_model(r.out, "4194304");
	unsetenv("OPENHCCL_SHM_ZC_KB");
	setenv("OPENHCCL_MALLOC_SHARED_KB", "0", 1);
	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	off = row_model(r.out, "4194304");
	unsetenv("OPENHCCL_MALLOC_SHARED_KB");
	cr_assert(c->zc_bytes == 256u << 10 && c->zc_beta_us < c->beta_us,
		  "shm: zero copy from 256 KiB, cheaper per byte");
	ring = c->alpha_us + ohc_cost_send_us(c) + nb * c->beta_us;
	cr_assert(fabs(zc - (c->alpha_us + ohc_cost_send_us(c) +
			     nb * c->zc_beta_us)) < 0.01,
		  "zero copy: %.3f us, want alpha + send_us + 4 MiB at "
		  "zc_beta",
		  zc);
	cr_assert(fabs(big - ring) < 0.01 && fabs(off - ring) < 0.01,
		  "OPENHCCL_SHM_ZC_KB=8192: %.3f us, "
		  "OPENHCCL_MALLOC_SHARED_KB=0: %.3f us, want the ring's %.3f",
		  big, off, ring);
	free(r.out);
}

/*
 * An op whose buffers fit in a core's L2 (zc_hot_bytes: half the L2, at
 * most 1 MiB) zero-copies at zc_hot_beta_us: a 2-rank broadcast of
 * 256 KiB is one such message where the L2 holds it, in the model and in
 * the simulation alike; 4 MiB stays at zc_beta (the test above). The
 * agreement's message from the root leaves send_us after the data, which
 * the receiver reads meanwhile: the model adds send_us, the simulation
 * overlaps it.
 */
Test(simulate, shm_zero_copy_of_a_cache_resident_op)
{
	char *args[] = {"--op",	 "broadcast", "--ranks", "2", "-b", "256K",
			"-e",	 "256K",      "--net",	 "shm", NULL};
	const struct ohc_cost_params *c;
	const double nb = 262144.0;
	double model = 0, sim = 0, want;
	struct run r = {0};
	const char *p;

	unsetenv("OPENHCCL_SHM_ZC_KB");
	unsetenv("OPENHCCL_MALLOC_SHARED_KB");
	c = ohc_cost_params_get(OHC_LINK_SHM);
	cr_assert(c->zc_hot_bytes > 0 && c->zc_hot_bytes <= 1u << 20 &&
			  c->zc_hot_beta_us < c->zc_beta_us,
		  "hot zero copy: up to %llu bytes at %g us/B",
		  (unsigned long long)c->zc_hot_bytes, c->zc_hot_beta_us);
	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	p = strstr(r.out, "\n      262144 ");
	cr_assert(p && sscanf(p, " 262144 %lf / %lf", &model, &sim) == 2,
		  "%s", r.out);
	want = c->alpha_us + nb * (nb <= (double)c->zc_hot_bytes
					   ? c->zc_hot_beta_us
					   : c->zc_beta_us);
	cr_assert(fabs(model - want - ohc_cost_send_us(c)) < 0.01 &&
			  fabs(sim - want) < 0.01,
		  "model %.3f, simulated %.3f us, want %.3f + send_us and "
		  "%.3f",
		  model, sim, want, want);
	free(r.out);
}

/* "\nKEY " in out, its value read back; NAN if none. */
static double constant_of(const char *out, const char *key)
{
	char k[64];
	const char *at;

	snprintf(k, sizeof(k), "\n%s ", key);
	at = strstr(out, k);
	return at ? strtod(at + strlen(k), NULL) : NAN;
}

/* --constants: every entry of the cost table, exactly as the library holds
 * it, for the scripts that read it instead of keeping copies. */
Test(simulate, constants_are_the_cost_table)
{
	static struct run r;
	char *args[] = {"--constants", NULL};
	const struct ohc_cost_net *t;
	unsigned n;
	char key[64];

	run_sim(args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	t = ohc_cost_nets(&n);
	cr_assert_gt(n, OHC_LINK_RDMA);
	for (unsigned i = 0; i < n; i++) {
		const double want[] = {t[i].c.alpha_us, t[i].c.beta_us,
				       t[i].c.gamma_us, t[i].c.copy_us};
		static const char *const field[] = {"alpha_us", "beta_us",
						    "gamma_us", "copy_us"};

		for (unsigned f = 0; f < 4; f++) {
			snprintf(key, sizeof(key), "%s.%s", t[i].name,
				 field[f]);
			cr_assert(constant_of(r.out, key) == want[f],
				  "%s: %.17g wanted in:\n%s", key, want[f],
				  r.out);
		}
	}
	cr_assert(constant_of(r.out, "share.wake_us") ==
		  ohc_cost_share.wake_us);
	cr_assert(constant_of(r.out, "share.turn_kb") ==
		  ohc_cost_share.turn_kb);
	free(r.out);
}
