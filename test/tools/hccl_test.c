/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hccl_test-compatible tools, run as a user runs them (-np N, and
 * under Open MPI's and MPICH's mpirun where they are installed): exit
 * status, the exact line and column layout, the data sizes of the sweep,
 * the bandwidth formulas per collective, that a corrupted result is
 * reported as failed, JSON and CSV output, strict options, more ranks
 * than CPUs, and a launcher that stops every rank at the first failure
 * and names it. (Slurm's srun: test/tools/slurm.sh, a ci/test.sh stage.)
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/ohc_test.h"

extern char **environ;

enum kind { SAME, GATHER, SCATTER, ALLTOALL };

static const struct tool {
	const char *name;
	enum kind kind;
	double busbw2; /* busbw / algbw at 2 ranks */
	int reduce;
} tools[] = {
	{"all_reduce_test", SAME, 1.0, 1},
	{"reduce_test", SAME, 1.0, 1},
	{"broadcast_test", SAME, 1.0, 0},
	{"all_gather_test", GATHER, 0.5, 0},
	{"all_gatherv_test", GATHER, 0.5, 0},
	{"reduce_scatter_test", SCATTER, 0.5, 1},
	{"reduce_scatterv_test", SCATTER, 0.5, 1},
	{"scatter_test", SCATTER, 0.5, 0},
	{"alltoall_test", ALLTOALL, 0.5, 0},
	{"alltoallv_test", ALLTOALL, 0.5, 0},
	{"alltoallvc_test", ALLTOALL, 0.5, 0},
};
#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

#define MAX_ROWS 64

struct row {
	unsigned long long bytes;
	double us, algbw, busbw;
	char check[16];
};

struct run {
	int status; /* exit status, -1 if it did not exit */
	char out[1 << 16];
	unsigned long long minb, maxb;
	int iters, warmup, headers;
	struct row rows[MAX_ROWS];
	int nrows;
};

static const char *tools_dir(void)
{
	const char *d = getenv("OHC_TOOLS_DIR");

	cr_assert(d, "OHC_TOOLS_DIR is not set (run through ctest)");
	return d;
}

/* Check one line against hccl_test's exact layout; add it to r. */
static void parse_line(struct run *r, const char *line)
{
	char want[256];
	struct row w;

	if (sscanf(line,
		   "the minbytes is %llu, maxbytes is %llu, iters is "
		   "%d, warmup_iters is %d",
		   &r->minb, &r->maxb, &r->iters, &r->warmup) == 4) {
		r->headers++;
		return;
	}
	snprintf(want, sizeof(want), "%-15s | %-12s | %-18s | %-13s | %s",
		 "data_size(Bytes):", "aveg_time(us):", "alg_bandwidth(GB/s):",
		 "check_result:", "bus_bandwidth(GB/s):");
	if (!strcmp(line, want) || !strncmp(line, "data_size", 9)) {
		cr_expect_str_eq(line, want, "header line");
		return;
	}
	if (sscanf(line, "%llu | %lf | %lf | %15s | %lf", &w.bytes, &w.us,
		   &w.algbw, w.check, &w.busbw) != 5)
		return;
	/* the same values printed with hccl_test's format: same line */
	snprintf(want, sizeof(want),
		 "%-17llu | %-14.2f | %-20.5f | %-13s | %.5f", w.bytes, w.us,
		 w.algbw, w.check, w.busbw);
	cr_expect_str_eq(line, want, "row layout");
	cr_assert_lt(r->nrows, MAX_ROWS);
	r->rows[r->nrows++] = w;
}

/* Run argv (NULL-terminated) with a time limit; output into r. */
static void run_argv(const char *const *argv, struct run *r)
{
	const char *full[40] = {"timeout", "120"};
	posix_spawn_file_actions_t fa;
	size_t len = 0, n = 2;
	int pfd[2], st;
	ssize_t got;
	pid_t pid;
	char *line, *save, *copy;

	memset(r, 0, sizeof(*r));
	for (; *argv && n < 39; argv++)
		full[n++] = *argv;
	full[n] = NULL;
	cr_assert_eq(pipe(pfd), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	cr_assert_eq(posix_spawnp(&pid, "timeout", &fa, NULL,
				  (char *const *)full, environ),
		     0);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	while ((got = read(pfd[0], r->out + len, sizeof(r->out) - 1 - len)) > 0)
		len += (size_t)got;
	close(pfd[0]);
	r->out[len] = '\0';
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	copy = strdup(r->out);
	cr_assert(copy);
	for (line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		parse_line(r, line);
	free(copy);
}

/* tools/<name> -np <np> <extra...> */
static void run_tool(const char *name, const char *np, const char *const *extra,
		     struct run *r)
{
	char path[4096];
	const char *argv[32] = {path, "-np", np};
	int n = 3;

	snprintf(path, sizeof(path), "%s/%s", tools_dir(), name);
	while (*extra && n < 31)
		argv[n++] = *extra++;
	argv[n] = NULL;
	run_argv(argv, r);
}

/* S of alg_bandwidth = S / time (spec 8.3) for a requested size. */
static double alg_bytes(const struct tool *t, unsigned long long bytes, int n,
			size_t es)
{
	unsigned long long count = (bytes + es - 1) / es;

	if (t->kind == SAME)
		return (double)(count * es);
	return (double)((count + n - 1) / n * n * es);
}

/* Rows of a -b 8 -e 64K -f 8 sweep: sizes, verdicts and bandwidths. */
static void expect_sweep(const struct tool *t, const struct run *r, int n,
			 size_t es, double factor, const char *verdict)
{
	unsigned long long want = 8;

	cr_expect_eq(r->headers, 1, "%s: one first line (rank 0 only):\n%s",
		     t->name, r->out);
	cr_expect_eq(r->minb, 8);
	cr_expect_eq(r->maxb, 65536);
	cr_assert_eq(r->nrows, 5, "%s: rows\n%s", t->name, r->out);
	for (int i = 0; i < r->nrows; i++, want *= 8) {
		const struct row *w = &r->rows[i];
		double s = alg_bytes(t, w->bytes, n, es);

		cr_expect_eq(w->bytes, want, "%s row %d", t->name, i);
		cr_expect_str_eq(w->check, verdict, "%s at %llu:\n%s", t->name,
				 w->bytes, r->out);
		cr_expect_gt(w->us, 0.0, "%s at %llu", t->name, w->bytes);
		if (w->us < 0.05)
			continue;
		/* time is printed to 0.01 us, bandwidths to 1e-5 GB/s */
		cr_expect_leq(fabs(w->algbw - s / w->us * 1e-3),
			      s / (w->us - 0.005) * 1e-3 - s / w->us * 1e-3 +
				      2e-5,
			      "%s at %llu: algbw %g for S %g us %g", t->name,
			      w->bytes, w->algbw, s, w->us);
		cr_expect_leq(fabs(w->busbw - w->algbw * factor),
			      1e-5 * (1 + factor),
			      "%s at %llu: busbw %g algbw %g", t->name,
			      w->bytes, w->busbw, w->algbw);
	}
}

static const char *const small_sweep[] = {"-b", "8", "-e", "64K", "-f", "8",
					  "-n", "2", "-w", "1",	  NULL};

/* Every tool at 2 ranks with args: the small sweep, every row checked. */
static void every_tool_two_ranks(const char *const *args)
{
	static struct run run;
	struct run *r = &run;

	ohc_test_fork_settle();
	for (size_t k = 0; k < NTOOLS; k++) {
		run_tool(tools[k].name, "2", args, r);
		cr_expect_eq(r->status, 0, "%s exit %d:\n%s", tools[k].name,
			     r->status, r->out);
		expect_sweep(&tools[k], r, 2, 4, tools[k].busbw2, "success");
	}
}

Test(tools, every_tool_two_ranks, .timeout = 300)
{
	every_tool_two_ranks(small_sweep);
}

/*
 * --touch_input 1: each call's input is copied in again on the stream
 * first; every tool's results still check (Broadcast's in-place buffer
 * included, which the copy restores on every rank before the root's
 * data overwrites it).
 */
Test(tools, fresh_inputs_still_check, .timeout = 300)
{
	static const char *const fresh[] = {"-b", "8", "-e", "64K", "-f", "8",
					    "-n", "3", "-w", "1", "--touch_input",
					    "1", NULL};

	every_tool_two_ranks(fresh);
}

/*
 * Four ranks, int8, product, the last rank as root: 2^4 fits int8, the
 * patterns differ per rank, and block placement is checked by the tools.
 */
Test(tools, every_tool_four_ranks_int8_root3, .timeout = 300)
{
	static const char *const args[] = {
		"-b", "8",  "-e",   "64K", "-f",   "8",	 "-n", "2", "-w",
		"1",  "-d", "int8", "-o",  "prod", "-r", "3",  NULL};
	static struct run run;
	struct run *r = &run;

	ohc_test_fork_settle();
	for (size_t k = 0; k < NTOOLS; k++) {
		const struct tool *t = &tools[k];
		double f = t->busbw2 == 1.0 ? 1.0 : 0.75;

		if (!strcmp(t->name, "all_reduce_test"))
			f = 1.5;
		if (t->reduce && t->kind == SCATTER)
			continue; /* prod: ReduceScatter(V) sum/max/min only */
		run_tool(t->name, "4", args, r);
		cr_expect_eq(r->status, 0, "%s exit %d:\n%s", t->name,
			     r->status, r->out);
		expect_sweep(t, r, 4, 1, f, "success");
	}
}

/* ReduceScatter(V) at four ranks with max over fp16. */
Test(tools, reduce_scatter_four_ranks_fp16_max, .timeout = 120)
{
	static const char *const args[] = {"-b", "8",	 "-e", "64K", "-f",
					   "8",	 "-n",	 "2",  "-w",  "1",
					   "-d", "fp16", "-o", "max", NULL};
	static struct run run;
	struct run *r = &run;

	ohc_test_fork_settle();
	for (size_t k = 0; k < NTOOLS; k++) {
		if (!tools[k].reduce || tools[k].kind != SCATTER)
			continue;
		run_tool(tools[k].name, "4", args, r);
		cr_expect_eq(r->status, 0, "%s:\n%s", tools[k].name, r->out);
		expect_sweep(&tools[k], r, 4, 2, 0.75, "success");
	}
}

/* A flipped result byte (through the tool, not the library) must fail. */
/*
 * -z 1 (activated VMM blocks) and -m 1 (symmetric windows): correct
 * results, and the data really went zero-copy: receivers mapped the
 * senders' exported memory (the mem subsystem's debug line), which
 * ordinary buffers never do.
 */
Test(tools, zero_copy_and_windows, .timeout = 300)
{
	static const char *const zc[] = {"-b", "8",  "-e", "64K", "-f",
					 "8",  "-n", "2",  "-w",  "1",
					 "-z", "1",  NULL};
	static const char *const win[] = {"-b", "8",  "-e", "64K", "-f",
					  "8",	"-n", "2",  "-w",  "1",
					  "-m", "1",  NULL};
	static const char *const *const modes[] = {zc, win, small_sweep};
	static struct run run;
	struct run *r = &run;

	ohc_test_fork_settle();
	setenv("OPENHCCL_DEBUG", "DEBUG", 1);
	setenv("OPENHCCL_DEBUG_SUBSYS", "mem", 1);
	for (size_t k = 0; k < NTOOLS; k++) {
		const struct tool *t = &tools[k];

		if (strcmp(t->name, "all_reduce_test") &&
		    strcmp(t->name, "all_gather_test") &&
		    strcmp(t->name, "reduce_scatter_test") &&
		    strcmp(t->name, "broadcast_test"))
			continue;
		for (int m = 0; m < 3; m++) {
			run_tool(t->name, "2", modes[m], r);
			cr_expect_eq(r->status, 0, "%s mode %d:\n%s", t->name,
				     m, r->out);
			expect_sweep(t, r, 2, 4, t->busbw2, "success");
			if (m < 2)
				cr_expect(strstr(r->out, "mapped export"),
					  "%s mode %d: no zero-copy:\n%s",
					  t->name, m, r->out);
			else
				cr_expect(!strstr(r->out, "mapped export"),
					  "%s: zero-copy on ordinary memory",
					  t->name);
		}
	}
}

/* A corrupted result still fails under -z 1; -m 1 works for any op. */
Test(tools, zero_copy_checks_and_windows_any_op, .timeout = 120)
{
	static const char *const bad[] = {"-b",
					  "4K",
					  "-e",
					  "4K",
					  "-n",
					  "1",
					  "-w",
					  "0",
					  "-z",
					  "1",
					  "--corrupt_rank",
					  "1",
					  NULL};
	static const char *const win[] = {"-b", "4K", "-e", "64K", "-f",
					  "4",	"-n", "1",  "-w",  "0",
					  "-m", "1",  NULL};
	static struct run r;

	ohc_test_fork_settle();
	run_tool("all_reduce_test", "2", bad, &r);
	cr_expect_neq(r.status, 0, "%s", r.out);
	cr_assert_eq(r.nrows, 1, "%s", r.out);
	cr_expect_str_eq(r.rows[0].check, "failed", "%s", r.out);
	run_tool("alltoall_test", "3", win, &r);
	cr_expect_eq(r.status, 0, "%s", r.out);
	cr_expect_eq(r.nrows, 3, "%s", r.out);
	for (int i = 0; i < r.nrows; i++)
		cr_expect_str_eq(r.rows[i].check, "success", "%s", r.out);
}

/* -z/-m values and combinations the tools refuse, each with a reason. */
Test(tools, zero_copy_bad_arguments, .timeout = 60)
{
	static const char *const a2a[] = {"-z", "1", NULL};
	static const char *const two[] = {"-z", "2", NULL};
	static const char *const both[] = {"-z", "1", "-m", "1", NULL};
	static struct run r;

	ohc_test_fork_settle();
	run_tool("alltoall_test", "2", a2a, &r);
	cr_expect_neq(r.status, 0, "%s", r.out);
	cr_expect(strstr(r.out, "zero copy covers all_reduce_test"), "%s",
		  r.out);
	run_tool("all_reduce_test", "2", two, &r);
	cr_expect_neq(r.status, 0, "%s", r.out);
	cr_expect(strstr(r.out, "bad -z 2: 0 or 1"), "%s", r.out);
	run_tool("broadcast_test", "2", both, &r);
	cr_expect_neq(r.status, 0, "%s", r.out);
	cr_expect(strstr(r.out, "exclude each other"), "%s", r.out);
	cr_expect_eq(r.nrows, 0);
}

Test(tools, corrupted_result_fails, .timeout = 300)
{
	static const char *const args[] = {"-b",
					   "8",
					   "-e",
					   "64K",
					   "-f",
					   "8",
					   "-n",
					   "1",
					   "-w",
					   "0",
					   "--corrupt_rank",
					   "0",
					   NULL};
	static struct run run;
	struct run *r = &run;

	ohc_test_fork_settle();
	for (size_t k = 0; k < NTOOLS; k++) {
		run_tool(tools[k].name, "2", args, r);
		cr_expect_neq(r->status, 0, "%s exit status:\n%s",
			      tools[k].name, r->out);
		cr_expect_eq(r->nrows, 1, "%s stops at the first failure:\n%s",
			     tools[k].name, r->out);
		if (r->nrows)
			cr_expect_str_eq(r->rows[0].check, "failed", "%s:\n%s",
					 tools[k].name, r->out);
		cr_expect(
			strstr(r->out, "local rank_id 0, check result failed"),
			"%s:\n%s", tools[k].name, r->out);
	}
}

/* Corrupting rank 1 fails every rank's verdict too (agreed by all). */
Test(tools, corrupted_other_rank_fails, .timeout = 60)
{
	static const char *const args[] = {
		"-b", "4K", "-e", "4K", "-n", "1", "-c", "2", "--corrupt_rank",
		"1",  NULL};
	static struct run r;

	ohc_test_fork_settle();
	run_tool("all_gather_test", "2", args, &r);
	cr_expect_neq(r.status, 0, "%s", r.out);
	cr_assert_eq(r.nrows, 1, "%s", r.out);
	cr_expect_str_eq(r.rows[0].check, "failed");
	/* -c 2 names the wrong element */
	cr_expect(strstr(r.out, "local rank_id 1, element "), "%s", r.out);
}

/* One size that must pass with check_result NULL. */
static void expect_unchecked(const char *np, const char *const *args)
{
	static struct run r;

	run_tool("all_reduce_test", np, args, &r);
	cr_expect_eq(r.status, 0, "%s", r.out);
	cr_assert_eq(r.nrows, 1, "%s", r.out);
	cr_expect_str_eq(r.rows[0].check, "NULL");
}

/* -c 0, and a result that does not fit the type, print NULL and pass. */
Test(tools, unchecked_is_null, .timeout = 120)
{
	static const char *const off[] = {"-b", "1K", "-e", "1K", "-n",
					  "1",	"-c", "0",  NULL};
	/* 2^7 = 128 does not fit int8: hccl_test does not check either */
	static const char *const big[] = {"-b", "1K",	"-e", "1K",   "-n", "1",
					  "-d", "int8", "-o", "prod", NULL};

	ohc_test_fork_settle();
	expect_unchecked("2", off);
	expect_unchecked("7", big);
}

/*
 * Without checks nothing else synchronises the ranks: the first to finish
 * must not tear down while another still runs its last calls.
 */
Test(tools, unchecked_sweep_ends_cleanly, .timeout = 300)
{
	static const char *const args[] = {"-b", "256K", "-e", "1M", "-f",
					   "2",	 "-n",	 "3",  "-w", "1",
					   "-c", "0",	 NULL};
	static struct run r;

	ohc_test_fork_settle();
	for (size_t k = 0; k < NTOOLS; k++) {
		run_tool(tools[k].name, "2", args, &r);
		cr_expect_eq(r.status, 0, "%s:\n%s", tools[k].name, r.out);
		cr_expect_eq(r.nrows, 3, "%s:\n%s", tools[k].name, r.out);
		for (int i = 0; i < r.nrows; i++)
			cr_expect_str_eq(r.rows[i].check, "NULL");
	}
}

/* Every malformed option is an error that names it, before any rank runs. */
Test(tools, bad_options_named, .timeout = 60)
{
	static const struct {
		const char *args[4], *want;
	} cases[] = {
		{{"-b", "1X"}, "bad -b '1X': a byte count"},
		{{"-e", "12.5M"}, "bad -e '12.5M': a byte count"},
		{{"-b", "64Q"}, "bad -b '64Q'"},
		{{"-i", "-1"}, "bad -i '-1'"},
		{{"-n", "abc"}, "bad -n 'abc': an integer from 1"},
		{{"-n", "0"}, "bad -n '0': an integer from 1"},
		{{"-w", "2x"}, "bad -w '2x'"},
		{{"-c", "3"}, "bad -c '3': an integer from 0 to 2"},
		{{"-f", "1"}, "bad -f '1': a factor above 1"},
		{{"-f", "two"}, "bad -f 'two'"},
		{{"-p", "0"}, "bad -p '0'"},
		{{"-r", "x"}, "bad -r 'x'"},
		{{"-o", "avg"}, "bad -o 'avg': sum, prod, max or min"},
		{{"--kill_rank", "one"}, "bad --kill_rank 'one'"},
		{{"--touch_input", "2"},
		 "bad --touch_input '2': an integer from 0 to 1"},
		{{"-q"}, "unknown option '-q'"},
		{{"--frobnicate"}, "unknown option '--frobnicate'"},
		{{"-b"}, "option -b needs a value"},
		{{"stray"}, "unexpected argument 'stray'"},
		{{"-b", "1M", "-e", "1K"}, "-b 1048576 is larger than -e 1024"},
	};
	static const char *const np_cases[][2] = {
		{"0", "bad -np '0': an integer from 1 to 65536"},
		{"-2", "bad -np '-2'"},
		{"abc", "bad -np 'abc'"},
		{"3x", "bad -np '3x'"},
	};
	static struct run r;
	char path[4096];

	snprintf(path, sizeof(path), "%s/all_reduce_test", tools_dir());
	for (size_t k = 0; k < sizeof(cases) / sizeof(*cases); k++) {
		const char *argv[8] = {path, "-np", "2"};
		int n = 3;

		for (int a = 0; a < 4 && cases[k].args[a]; a++)
			argv[n++] = cases[k].args[a];
		run_argv(argv, &r);
		cr_expect_eq(r.status, 1, "%s %s: exit %d\n%s",
			     cases[k].args[0],
			     cases[k].args[1] ? cases[k].args[1] : "", r.status,
			     r.out);
		cr_expect(strstr(r.out, cases[k].want), "want '%s' in:\n%s",
			  cases[k].want, r.out);
		cr_expect_eq(r.headers, 0, "no rank may start:\n%s", r.out);
	}
	for (size_t k = 0; k < sizeof(np_cases) / sizeof(*np_cases); k++) {
		const char *argv[] = {path, "-np", np_cases[k][0], NULL};

		run_argv(argv, &r);
		cr_expect_eq(r.status, 1, "-np %s:\n%s", np_cases[k][0], r.out);
		cr_expect(strstr(r.out, np_cases[k][1]), "want '%s' in:\n%s",
			  np_cases[k][1], r.out);
	}
	{
		const char *argv[] = {path, "-np", NULL};

		run_argv(argv, &r);
		cr_expect_eq(r.status, 1, "%s", r.out);
		cr_expect(strstr(r.out, "-np needs a rank count"), "%s", r.out);
	}
	{
		const char *argv[] = {path, "--version", NULL};

		run_argv(argv, &r);
		cr_expect_eq(r.status, 0, "%s", r.out);
		cr_expect(strstr(r.out, "all_reduce_test (OpenHCCL) "), "%s",
			  r.out);
	}
}

/* More ranks than CPUs and than 16 NPU-style devices: the check passes. */
Test(tools, more_ranks_than_cpus, .timeout = 300)
{
	static const char *const args[] = {"-b", "8", "-e", "1K", "-f", "8",
					   "-n", "2", "-w", "1",  NULL};
	static struct run r;

	ohc_test_fork_settle();
	run_tool("all_reduce_test", "24", args, &r);
	cr_expect_eq(r.status, 0, "exit %d:\n%s", r.status, r.out);
	cr_assert_eq(r.nrows, 3, "%s", r.out); /* 8, 64, 512 */
	for (int i = 0; i < r.nrows; i++)
		cr_expect_str_eq(r.rows[i].check, "success", "%s", r.out);
}

/* The output's last line (without its newline). */
static const char *last_line(const struct run *r)
{
	static char buf[1024];
	size_t len = strlen(r->out);
	const char *p;

	while (len && r->out[len - 1] == '\n')
		len--;
	for (p = r->out + len; p > r->out && p[-1] != '\n'; p--)
		;
	snprintf(buf, sizeof(buf), "%.*s", (int)(r->out + len - p), p);
	return buf;
}

/*
 * A rank that dies (SIGKILL in the middle of the sweep) stops the other
 * ranks within a second, though they wait for it inside a collective
 * with the default timeouts (minutes): the exit status is the killed
 * rank's (128 + 9), the last line names the rank and the signal.
 */
Test(tools, killed_rank_stops_the_others, .timeout = 120)
{
	static const char *const args[] = {
		"-b", "8",  "-e", "1M",		 "-f", "2", "-n",
		"20", "-w", "1",  "--kill_rank", "2",  NULL};
	static struct run r;
	double t0, secs, ms = -1;
	const char *last, *p;

	ohc_test_fork_settle();
	t0 = ohc_test_now_s();
	run_tool("all_reduce_test", "4", args, &r);
	secs = ohc_test_now_s() - t0;
	cr_expect_eq(r.status, 128 + 9, "exit %d:\n%s", r.status, r.out);
	last = last_line(&r);
	cr_expect(strstr(last, "all_reduce_test: rank 2 of 4 was killed by "
			       "signal 9"),
		  "last line: %s\n%s", last, r.out);
	p = strstr(last, "stopped the other 3 ranks in ");
	cr_assert(p, "%s", last);
	cr_assert_eq(sscanf(p, "stopped the other 3 ranks in %lf ms", &ms), 1);
	cr_expect_lt(ms, 1000, "%s", last);
	/* the whole run: init, the kill, the stop; not a timeout */
	cr_expect_lt(secs, 20, "took %.1f s:\n%s", secs, r.out);
}

/*
 * A rank given a device past the runtime's count fails at once; the
 * others, waiting for it in communicator init, are stopped within a
 * second; the exit status is the rank's and the last line says which
 * rank, what failed and which variable to set.
 */
Test(tools, bad_device_stops_the_others, .timeout = 120)
{
	static const char *const args[] = {"-p", "4", "-b", "8",
					   "-e", "8", NULL};
	static struct run r;
	double t0, secs, ms = -1;
	const char *last, *p;

	ohc_test_fork_settle();
	setenv("OPENHCCL_DEVICE_COUNT", "3", 1);
	t0 = ohc_test_now_s();
	run_tool("all_reduce_test", "4", args, &r);
	secs = ohc_test_now_s() - t0;
	unsetenv("OPENHCCL_DEVICE_COUNT");
	cr_expect_eq(r.status, 1, "exit %d:\n%s", r.status, r.out);
	last = last_line(&r);
	cr_expect(strstr(last, "all_reduce_test: rank 3 of 4 failed (exit "
			       "status 1): aclrtSetDevice(dev) failed"),
		  "last line: %s", last);
	cr_expect(strstr(last, "set OPENHCCL_DEVICE_COUNT=4 or more"),
		  "last line: %s", last);
	p = strstr(last, "stopped the other 3 ranks in ");
	cr_assert(p, "%s", last);
	cr_assert_eq(sscanf(p, "stopped the other 3 ranks in %lf ms", &ms), 1);
	cr_expect_lt(ms, 1000, "%s", last);
	cr_expect_lt(secs, 20, "took %.1f s:\n%s", secs, r.out);
	cr_expect_eq(r.headers, 0, "%s", r.out);
}

/*
 * --json FILE and --csv FILE: every row with size, time, algbw, busbw and
 * the check result, the same numbers as the table; --json - puts the
 * JSON alone on stdout.
 */
Test(tools, json_and_csv_output, .timeout = 120)
{
	char dir[] = "/tmp/ohc_ht_out_XXXXXX", jpath[256], cpath[256];
	const char *args[] = {"-b",	"8",   "-e",	"4K",  "-f",
			      "8",	"-n",  "2",	"-w",  "1",
			      "--json", jpath, "--csv", cpath, NULL};
	static struct run r;
	json_error_t jerr;
	json_t *doc, *rows;
	FILE *f;
	char line[512];
	int nlines = 0;

	cr_assert(mkdtemp(dir));
	snprintf(jpath, sizeof(jpath), "%s/out.json", dir);
	snprintf(cpath, sizeof(cpath), "%s/out.csv", dir);
	ohc_test_fork_settle();
	run_tool("all_gather_test", "2", args, &r);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert_eq(r.nrows, 4, "%s", r.out);
	doc = json_load_file(jpath, 0, &jerr);
	cr_assert(doc, "%s: %s (line %d)", jpath, jerr.text, jerr.line);
	cr_expect_str_eq(json_string_value(json_object_get(doc, "tool")),
			 "all_gather_test");
	cr_expect_eq(json_integer_value(json_object_get(doc, "ranks")), 2);
	cr_expect_str_eq(json_string_value(json_object_get(doc, "datatype")),
			 "fp32");
	cr_expect_str_eq(json_string_value(json_object_get(doc, "result")),
			 "success");
	cr_expect(json_string_value(json_object_get(doc, "version")));
	rows = json_object_get(doc, "rows");
	cr_assert_eq(json_array_size(rows), 4);
	for (int i = 0; i < 4; i++) {
		json_t *row = json_array_get(rows, (size_t)i);

		cr_expect_eq(json_integer_value(json_object_get(row, "bytes")),
			     (json_int_t)r.rows[i].bytes);
		cr_expect_float_eq(
			json_number_value(json_object_get(row, "time_us")),
			r.rows[i].us, 0.006);
		cr_expect_float_eq(
			json_number_value(json_object_get(row, "algbw_GBps")),
			r.rows[i].algbw, 1e-5);
		cr_expect_float_eq(
			json_number_value(json_object_get(row, "busbw_GBps")),
			r.rows[i].busbw, 1e-5);
		cr_expect_str_eq(
			json_string_value(json_object_get(row, "check")),
			"success");
	}
	json_decref(doc);
	f = fopen(cpath, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long bytes;
		double us, alg, bus;
		char check[16];

		if (nlines++ == 0) {
			cr_expect_str_eq(line, "tool,ranks,datatype,op,bytes,"
					       "time_us,algbw_GBps,busbw_GBps,"
					       "check\n");
			continue;
		}
		cr_assert_eq(sscanf(line,
				    "all_gather_test,2,fp32,sum,%llu,%lf,%lf,"
				    "%lf,%15s",
				    &bytes, &us, &alg, &bus, check),
			     5, "%s", line);
		cr_expect_eq(bytes, r.rows[nlines - 2].bytes);
		cr_expect_str_eq(check, "success");
	}
	fclose(f);
	cr_expect_eq(nlines, 5);
	unlink(jpath);
	unlink(cpath);
	rmdir(dir);

	/* --json -: stdout is the JSON (the table goes to stderr) */
	{
		char path[4096];
		const char *argv[] = {"sh", "-c", NULL, NULL};
		char cmd[8192];

		snprintf(path, sizeof(path), "%s/all_reduce_test", tools_dir());
		snprintf(cmd, sizeof(cmd),
			 "'%s' -np 2 -b 8 -e 64 -f 8 -n 1 -w 0 --json - "
			 "2>/dev/null",
			 path);
		argv[2] = cmd;
		run_argv(argv, &r);
		cr_assert_eq(r.status, 0, "%s", r.out);
		doc = json_loads(r.out, 0, &jerr);
		cr_assert(doc, "%s: %s", r.out, jerr.text);
		cr_expect_eq(json_array_size(json_object_get(doc, "rows")), 2);
		json_decref(doc);
	}
}

/* A failed run's JSON says so, and names every row it got to. */
Test(tools, json_of_a_failed_check, .timeout = 60)
{
	char path[] = "/tmp/ohc_ht_fail_XXXXXX";
	int fd = mkstemp(path);
	const char *args[] = {
		"-b", "4K",	"-e", "4K", "-n", "1", "--corrupt_rank",
		"1",  "--json", path, NULL};
	static struct run r;
	json_error_t jerr;
	json_t *doc;

	cr_assert(fd >= 0);
	close(fd);
	ohc_test_fork_settle();
	run_tool("all_reduce_test", "2", args, &r);
	cr_expect_neq(r.status, 0, "%s", r.out);
	doc = json_load_file(path, 0, &jerr);
	unlink(path);
	cr_assert(doc, "%s", jerr.text);
	cr_expect_str_eq(json_string_value(json_object_get(doc, "result")),
			 "failed");
	cr_expect_str_eq(
		json_string_value(json_object_get(
			json_array_get(json_object_get(doc, "rows"), 0),
			"check")),
		"failed");
	json_decref(doc);
	cr_expect(strstr(last_line(&r), "rank 1 of 2 failed (exit status 1): "
					"check result failed at 4096 bytes") ||
			  strstr(last_line(&r),
				 "rank 0 of 2 failed (exit status "
				 "1): check result failed at "
				 "4096 bytes"),
		  "%s", r.out);
}

/*
 * -np binds rank r to CPU r mod N of the N CPUs it may use, ranks that
 * outnumber them included (round-robin, as mpirun's --bind-to
 * core:overload-allowed); -c 2 says where. Run on at most two of this
 * process's CPUs, with one rank more than that, so the last one wraps.
 */
Test(tools, np_binds_ranks_round_robin, .timeout = 120)
{
	static const char *const args[] = {"-b", "8", "-e", "8", "-n", "2",
					   "-w", "1", "-c", "2", NULL};
	static struct run r;
	cpu_set_t saved, two;
	int cpus[2], ncpus = 0;
	char np[8], want[64];

	cr_assert_eq(sched_getaffinity(0, sizeof(saved), &saved), 0);
	CPU_ZERO(&two);
	for (int c = 0; c < CPU_SETSIZE && ncpus < 2; c++)
		if (CPU_ISSET(c, &saved)) {
			cpus[ncpus++] = c;
			CPU_SET(c, &two);
		}
	cr_assert_eq(sched_setaffinity(0, sizeof(two), &two), 0);
	snprintf(np, sizeof(np), "%d", ncpus + 1);
	ohc_test_fork_settle();
	run_tool("all_reduce_test", np, args, &r);
	cr_assert_eq(sched_setaffinity(0, sizeof(saved), &saved), 0);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_eq(r.nrows, 1, "%s", r.out);
	for (int rank = 0; rank <= ncpus; rank++) {
		snprintf(want, sizeof(want), "rank %d: bound to CPU %d\n", rank,
			 cpus[rank % ncpus]);
		cr_expect(strstr(r.out, want), "no \"%.*s\" in:\n%s",
			  (int)strlen(want) - 1, want, r.out);
	}
}

Test(tools, bad_arguments_fail, .timeout = 60)
{
	static const char *const root[] = {"-r", "2", "-b", "8",
					   "-e", "8", NULL};
	static const char *const dtype[] = {"-d", "fp128", NULL};
	static const char *const bind[] = {"--bind", "socket", NULL};
	static struct run r;

	ohc_test_fork_settle();
	run_tool("broadcast_test", "2", root, &r);
	cr_expect_neq(r.status, 0, "%s", r.out);
	cr_expect(strstr(r.out, "root 2 out of range"), "%s", r.out);
	run_tool("all_reduce_test", "2", dtype, &r);
	cr_expect_neq(r.status, 0, "%s", r.out);
	cr_expect_eq(r.nrows, 0);
	run_tool("all_reduce_test", "2", bind, &r);
	cr_expect_neq(r.status, 0, "%s", r.out);
	cr_expect(strstr(r.out, "bad --bind socket: core or none"), "%s",
		  r.out);
}

/* Under mpirun: root info by MPI_Bcast, one output, same verdicts. */
Test(tools, under_mpirun, .timeout = 300)
{
	char path[4096];
	const char *argv[] = {"mpirun",
			      "--allow-run-as-root",
			      "--oversubscribe",
			      "--mca",
			      "btl",
			      "self,vader",
			      "-np",
			      "2",
			      path,
			      "-b",
			      "8",
			      "-e",
			      "64K",
			      "-f",
			      "8",
			      "-n",
			      "2",
			      "-w",
			      "1",
			      NULL,
			      NULL,
			      NULL};
	static struct run run;
	struct run *r = &run;

	if (system("command -v mpirun >/dev/null 2>&1") != 0)
		cr_skip_test("mpirun is not installed");
	/* Open MPI's own allocations are not ours to account for */
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
	ohc_test_fork_settle();
	for (size_t k = 0; k < NTOOLS; k += 3) {
		snprintf(path, sizeof(path), "%s/%s", tools_dir(),
			 tools[k].name);
		run_argv(argv, r);
		if (strstr(r->out, "built without MPI"))
			cr_skip_test("the tools were built without MPI");
		cr_expect_eq(r->status, 0, "%s:\n%s", tools[k].name, r->out);
		expect_sweep(&tools[k], r, 2, 4, tools[k].busbw2, "success");
	}
	argv[19] = "--corrupt_rank";
	argv[20] = "1";
	snprintf(path, sizeof(path), "%s/all_reduce_test", tools_dir());
	run_argv(argv, r);
	cr_expect_neq(r->status, 0, "%s", r->out);
	cr_expect(strstr(r->out, "local rank_id 1, check result failed"), "%s",
		  r->out);
}

/*
 * Under MPICH's mpirun (Hydra), whatever MPI the tools were built with:
 * they speak PMI-1 on Hydra's PMI_FD (tools/hccl_test/ht_pmi.c) to hand
 * out the root info. A failed check exits non-zero.
 */
Test(tools, under_mpich_mpirun, .timeout = 300)
{
	char path[4096];
	const char *argv[] = {"mpirun.mpich", "-np", "3",  path, "-b", "8",
			      "-e",	      "64K", "-f", "8",	 "-n", "2",
			      "-w",	      "1",   NULL, NULL, NULL};
	static struct run r;

	if (system("command -v mpirun.mpich >/dev/null 2>&1") != 0)
		cr_skip_test("MPICH's mpirun is not installed");
	ohc_test_fork_settle();
	for (size_t k = 0; k < NTOOLS; k += 4) {
		double f = tools[k].busbw2 == 1.0 ? 1.0 : 2.0 / 3;

		if (!strcmp(tools[k].name, "all_reduce_test"))
			f = 4.0 / 3;
		snprintf(path, sizeof(path), "%s/%s", tools_dir(),
			 tools[k].name);
		run_argv(argv, &r);
		cr_expect_eq(r.status, 0, "%s:\n%s", tools[k].name, r.out);
		expect_sweep(&tools[k], &r, 3, 4, f, "success");
	}
	argv[14] = "--corrupt_rank";
	argv[15] = "2";
	snprintf(path, sizeof(path), "%s/all_reduce_test", tools_dir());
	run_argv(argv, &r);
	cr_expect_neq(r.status, 0, "%s", r.out);
	cr_expect(strstr(r.out, "local rank_id 2, check result failed"), "%s",
		  r.out);
}
