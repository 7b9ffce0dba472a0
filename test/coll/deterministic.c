/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Deterministic mode (hcclDeterministic / HCCL_DETERMINISTIC): every
 * reducing operation, every algorithm that reduces, several dtypes and
 * reduce ops, inputs whose floating-point sums depend on the order of
 * additions. Each case runs REPS times; before each run every rank sleeps
 * a random time of its own (so arrivals come in a different order each
 * time) and one rank runs with the executor's spinning disabled. The
 * outputs of every repetition must be bitwise identical to the first,
 * and for AllReduce identical on every rank.
 *
 * Runs: 5 processes (not a power of two: the halving-doubling and
 * recursive-doubling folds), 4 processes, and 4 thread ranks.
 * OHC_TEST_SEED fixes the seed (printed on failure).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

#define MAX_RANKS 8
#define REPS 4
#define MAX_CASES 64

/* The algorithm settings whose reductions differ (see hccl_algo.c). */
static const char *const algos[] = {
	"level0:NA;level1:ring",    /* ring allreduce / reduce-scatter */
	"level0:NA;level1:H-D_R",   /* halving-doubling, recursive halving */
	"allreduce=level0:NA;level1:recursive_doubling",
};
#define NALGOS (sizeof(algos) / sizeof(algos[0]))

enum opk { K_ALLREDUCE, K_REDUCE_SCATTER, K_REDUCE, K_NOPS };
static const char *const op_name[] = {"allreduce", "reduce_scatter",
				      "reduce"};

struct dcase {
	enum opk op;
	HcclDataType dtype;
	HcclReduceOp redop;
	uint64_t count; /* per rank block for reduce-scatter */
};

static const struct dcase cases[] = {
	{K_ALLREDUCE, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 1},
	{K_ALLREDUCE, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 1003},
	{K_ALLREDUCE, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 300001},
	{K_ALLREDUCE, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_PROD, 1003},
	{K_ALLREDUCE, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX, 1003},
	{K_ALLREDUCE, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MIN, 1003},
	{K_ALLREDUCE, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_SUM, 4099},
	{K_ALLREDUCE, HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_SUM, 4099},
	{K_ALLREDUCE, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_SUM, 777},
	{K_REDUCE_SCATTER, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 1001},
	{K_REDUCE_SCATTER, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_PROD, 257},
	{K_REDUCE_SCATTER, HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_SUM, 50001},
	{K_REDUCE, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 100003},
	{K_REDUCE, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_SUM, 999},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

struct shared {
	HcclRootInfo roots[NALGOS];
	int roots_ready;
	uint64_t seed;
	/* output hash per (algorithm, case, repetition, rank) */
	uint64_t hash[NALGOS][NCASES][REPS][MAX_RANKS];
	int status[NALGOS][NCASES][REPS][MAX_RANKS];
};

static struct shared *sh;

static size_t dsize(HcclDataType t)
{
	switch (t) {
	case HCCL_DATA_TYPE_FP16:
	case HCCL_DATA_TYPE_BFP16:
		return 2;
	case HCCL_DATA_TYPE_FP64:
		return 8;
	default:
		return 4;
	}
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* bfloat16/fp16 bit patterns of f (truncation is fine for inputs). */
static uint16_t to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);
}

static uint16_t to_fp16(float f)
{
	_Float16 h = (_Float16)f;
	uint16_t u;

	memcpy(&u, &h, 2);
	return u;
}

/*
 * Inputs with wildly different magnitudes, so the rounding of a sum
 * depends on the order of additions; near 1 for products.
 */
static void fill(void *buf, const struct dcase *c, uint64_t n, int rank,
		 int ci)
{
	uint64_t s = 0x9e3779b97f4a7c15ull ^ ((uint64_t)rank << 32) ^
		     (uint64_t)(ci + 1);

	for (uint64_t i = 0; i < n; i++) {
		double m = (double)(xorshift(&s) % 2001) / 1000.0 - 1.0;
		int e = (int)(xorshift(&s) % 24) - 12;
		double v = c->redop == HCCL_REDUCE_PROD ? 1.0 + m / 64.0
							: m * (double)(1 << 12) /
								  (double)(1 << (e + 12));

		switch (c->dtype) {
		case HCCL_DATA_TYPE_FP16:
			((uint16_t *)buf)[i] = to_fp16((float)v);
			break;
		case HCCL_DATA_TYPE_BFP16:
			((uint16_t *)buf)[i] = to_bf16((float)v);
			break;
		case HCCL_DATA_TYPE_FP64:
			((double *)buf)[i] = v;
			break;
		default:
			((float *)buf)[i] = (float)v;
			break;
		}
	}
}

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static HcclResult run_case(HcclComm comm, const struct dcase *c, int rank,
			   int nranks, void *in, void *out, size_t *out_bytes)
{
	size_t es = dsize(c->dtype);

	switch (c->op) {
	case K_ALLREDUCE:
		*out_bytes = c->count * es;
		return HcclAllReduce(in, out, c->count, c->dtype, c->redop,
				     comm, NULL);
	case K_REDUCE_SCATTER:
		*out_bytes = c->count * es;
		return HcclReduceScatter(in, out, c->count, c->dtype, c->redop,
					 comm, NULL);
	case K_REDUCE:
		*out_bytes = rank == 1 % nranks ? c->count * es : 0;
		return HcclReduce(in, out, c->count, c->dtype, c->redop,
				  1 % nranks, comm, NULL);
	default:
		return HCCL_E_INTERNAL;
	}
}

/* Every (algorithm, case, repetition) on one rank's communicators. */
static int det_body(int rank, int nranks, HcclComm *comms)
{
	uint64_t rng = sh->seed * 2654435761u + (uint64_t)rank * 97 + 1;
	size_t max = 0;
	void *in, *out;

	for (size_t ci = 0; ci < NCASES; ci++) {
		size_t b = cases[ci].count * dsize(cases[ci].dtype) *
			   (cases[ci].op == K_REDUCE_SCATTER ? nranks : 1);

		max = b > max ? b : max;
	}
	in = malloc(max);
	out = malloc(max);
	if (!in || !out)
		return 1;
	for (size_t a = 0; a < NALGOS; a++) {
		for (size_t ci = 0; ci < NCASES; ci++) {
			const struct dcase *c = &cases[ci];
			uint64_t n = c->count *
				     (c->op == K_REDUCE_SCATTER ? nranks : 1);

			for (int rep = 0; rep < REPS; rep++) {
				size_t ob = 0;
				HcclResult ret;

				fill(in, c, n, rank, (int)ci);
				memset(out, 0xa5, max);
				/* a different arrival order every time */
				usleep((useconds_t)(xorshift(&rng) % 3000));
				ret = run_case(comms[a], c, rank, nranks, in,
					       out, &ob);
				sh->status[a][ci][rep][rank] = ret;
				sh->hash[a][ci][rep][rank] = fnv1a(out, ob);
			}
		}
	}
	free(in);
	free(out);
	return 0;
}

static int det_process(int rank, int nranks, void *arg)
{
	HcclComm comms[NALGOS];
	int rc;

	(void)arg;
	if (ohc_test_share_roots(sh->roots, (int)NALGOS, &sh->roots_ready,
				 rank, 60))
		return 1;
	for (size_t a = 0; a < NALGOS; a++) {
		HcclCommConfig conf;

		HcclCommConfigInit(&conf);
		snprintf(conf.hcclAlgo, sizeof(conf.hcclAlgo), "%s", algos[a]);
		conf.hcclDeterministic = 1;
		if (HcclCommInitRootInfoConfig((uint32_t)nranks, &sh->roots[a],
					       (uint32_t)rank, &conf,
					       &comms[a]))
			return 1;
	}
	rc = det_body(rank, nranks, comms);
	for (size_t a = 0; a < NALGOS; a++)
		rc |= HcclCommDestroy(comms[a]) != HCCL_SUCCESS;
	return rc;
}

static void check(int nranks, const char *how)
{
	int bad = 0;

	for (size_t a = 0; a < NALGOS; a++) {
		for (size_t ci = 0; ci < NCASES; ci++) {
			const struct dcase *c = &cases[ci];

			for (int r = 0; r < nranks; r++) {
				for (int rep = 0; rep < REPS; rep++) {
					uint64_t h = sh->hash[a][ci][rep][r];
					uint64_t want =
						c->op == K_ALLREDUCE
							? sh->hash[a][ci][0][0]
							: sh->hash[a][ci][0][r];

					if (sh->status[a][ci][rep][r] ||
					    h != want) {
						if (bad++ < 10)
							fprintf(stderr,
								"%s, seed %llu: "
								"%s %s dtype %d "
								"op %d count "
								"%llu rank %d "
								"rep %d: status "
								"%d, %s\n",
								how,
								(unsigned long long)
									sh->seed,
								algos[a],
								op_name[c->op],
								c->dtype,
								c->redop,
								(unsigned long long)
									c->count,
								r, rep,
								sh->status[a][ci]
									  [rep][r],
								h != want
									? "output "
									  "differs"
									: "failed");
					}
				}
			}
		}
	}
	cr_assert_eq(bad, 0, "%s: %d results were not reproduced bitwise",
		     how, bad);
}

static void setup_shared(void)
{
	const char *s = getenv("OHC_TEST_SEED");

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(sh, MAP_FAILED);
	sh->seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
	for (size_t a = 0; a < NALGOS; a++)
		for (size_t ci = 0; ci < NCASES; ci++)
			for (int rep = 0; rep < REPS; rep++)
				for (int r = 0; r < MAX_RANKS; r++)
					sh->status[a][ci][rep][r] = -1;
}

static void processes(int nranks)
{
	char how[32];

	setup_shared();
	snprintf(how, sizeof(how), "%d processes", nranks);
	cr_assert_eq(ohc_test_fork_ranks(nranks, det_process, NULL, 240), 0,
		     "%s: ranks failed (seed %llu)", how,
		     (unsigned long long)sh->seed);
	check(nranks, how);
	cr_expect_eq(ohc_test_shm_leftovers(), 0);
	munmap(sh, sizeof(*sh));
}

Test(deterministic, five_processes, .timeout = 300)
{
	processes(5);
}

Test(deterministic, four_processes, .timeout = 300)
{
	processes(4);
}

/* Thread ranks: the same code; root info works between threads too. */
Test(deterministic, four_threads, .timeout = 300)
{
	setup_shared();
	cr_assert_eq(ohc_test_thread_ranks(4, det_process, NULL), 0,
		     "thread ranks failed (seed %llu)",
		     (unsigned long long)sh->seed);
	check(4, "4 thread ranks");
	munmap(sh, sizeof(*sh));
}
