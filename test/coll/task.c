/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The task API (hccl_task.h) end to end: processes over shared memory
 * (and over verbs in the Soft-RoCE VM, HCCL_INTRA_ROCE_ENABLE=1) and
 * thread ranks. repeat and strideCount layouts of every prepare type
 * against a reference simulated round by round; Query before, during and
 * after; the dependency of an AllGather on an AlltoAll of another
 * communicator proven by data and by the rounds' recorded times; prepare
 * order whatever the commit order; independent contexts; the 63 limit;
 * every misuse (nothing lost: the communicators keep working); a peer
 * killed during a committed task.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_task.h>

#include "helpers/ohc_test.h"

#define SENT ((int32_t)-7)

/* Rank k's input element x (int32; sums over 8 ranks stay exact). */
static int32_t in_val(int k, uint64_t x)
{
	return (int32_t)(k * 100000 + (int)(x % 90000) + 1);
}

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			OHC_RANK_FAIL(__VA_ARGS__);                            \
	} while (0)

/* ---- layouts: every prepare type against a reference ---- */

enum kind { K_AR, K_AG, K_RS, K_A2A, K_A2AV };

static const char *const kind_name[] = {
	"AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "AlltoAllV"};

struct layout {
	enum kind kind;
	uint64_t count, stride;
	unsigned repeat;
	bool commit; /* commit the first round with the prepare */
	const char *algo;
};

static const struct layout layouts[] = {
	{K_AR, 5, 0, 3, false, NULL},
	{K_AR, 1, 0, 1, true, "level0:ring"},
	{K_AR, 1031, 0, 2, true, "AllReduce=level0:H-D_R"},
	{K_AG, 5, 15, 3, false, NULL}, /* tiled: stride = repeat * count */
	{K_AG, 5, 0, 3, false, NULL},  /* rounds overlap, as in HCCL */
	{K_AG, 4, 11, 2, true, "level0:ring"}, /* gaps between blocks */
	{K_AG, 3, 0, 1, true, NULL},
	{K_RS, 5, 15, 3, false, NULL},
	{K_RS, 5, 0, 3, false, NULL},
	{K_RS, 4, 11, 2, true, NULL},
	{K_RS, 777, 0, 1, true, "ReduceScatter=level0:ring"},
	{K_A2A, 5, 15, 3, false, NULL},
	{K_A2A, 5, 0, 3, false, NULL},
	{K_A2A, 4, 11, 2, true, "AlltoAll=level0:pairwise"},
	{K_A2A, 3, 3, 1, true, NULL},
	{K_A2AV, 0, 0, 3, false, NULL},
	{K_A2AV, 0, 0, 1, true, NULL},
};

/* AlltoAllV: rank i sends m(i, k) elements to rank k per round. */
static uint64_t m(int i, int k)
{
	return 1 + (uint64_t)(i + 2 * k) % 3;
}

/* Rank i's send (or, with recv, receive) displacements and length. */
static uint64_t v_layout(int i, int n, unsigned repeat, bool recv,
			 uint64_t *counts, uint64_t *displs)
{
	uint64_t at = 0;

	for (int k = 0; k < n; k++) {
		uint64_t c = recv ? m(k, i) : m(i, k);

		counts[k] = c;
		displs[k] = at;
		at += c * repeat + 1; /* a gap after each peer's rounds */
	}
	return at;
}

/* Element counts of the input and output buffers of layout L. */
static void lens(const struct layout *L, int rank, int n, uint64_t *in_p,
		 uint64_t *out_p)
{
	uint64_t c = L->count, r = L->repeat, b = L->stride ? L->stride : c;
	uint64_t span = (r - 1) * c + (uint64_t)(n - 1) * b + c;
	uint64_t tmp[2][8];

	switch (L->kind) {
	case K_AR:
		*in_p = *out_p = r * c;
		break;
	case K_AG:
		*in_p = r * c;
		*out_p = span;
		break;
	case K_RS:
		*in_p = span;
		*out_p = r * c;
		break;
	case K_A2A:
		*in_p = *out_p = span;
		break;
	case K_A2AV:
		*in_p = v_layout(rank, n, L->repeat, false, tmp[0], tmp[1]);
		*out_p = v_layout(rank, n, L->repeat, true, tmp[0], tmp[1]);
		break;
	}
}

/* The output of rank `rank` after round r, applied onto ref (spec 7). */
static void ref_round(const struct layout *L, int rank, int n, unsigned r,
		      int32_t *ref)
{
	uint64_t c = L->count, b = L->stride ? L->stride : c, off = r * c;

	switch (L->kind) {
	case K_AR:
		for (uint64_t j = 0; j < c; j++) {
			int32_t s = 0;

			for (int k = 0; k < n; k++)
				s += in_val(k, off + j);
			ref[off + j] = s;
		}
		break;
	case K_AG:
		for (int i = 0; i < n; i++)
			for (uint64_t j = 0; j < c; j++)
				ref[off + i * b + j] = in_val(i, off + j);
		break;
	case K_RS:
		for (uint64_t j = 0; j < c; j++) {
			int32_t s = 0;

			for (int k = 0; k < n; k++)
				s += in_val(k, off + (uint64_t)rank * b + j);
			ref[off + j] = s;
		}
		break;
	case K_A2A:
		for (int i = 0; i < n; i++)
			for (uint64_t j = 0; j < c; j++)
				ref[off + i * b + j] =
					in_val(i, off + (uint64_t)rank * b + j);
		break;
	case K_A2AV: {
		uint64_t rc[8], rd[8], sc[8], sd[8];

		v_layout(rank, n, L->repeat, true, rc, rd);
		for (int k = 0; k < n; k++) {
			v_layout(k, n, L->repeat, false, sc, sd);
			for (uint64_t j = 0; j < rc[k]; j++)
				ref[rd[k] + r * rc[k] + j] =
					in_val(k, sd[rank] + r * sc[rank] + j);
		}
		break;
	}
	}
}

static HcclHandle prepare_layout(HcclTaskCtx ctx, const struct layout *L,
				 int rank, int n, int32_t *in, int32_t *out)
{
	uint64_t sc[8], sd[8], rc[8], rd[8];

	switch (L->kind) {
	case K_AR:
		return HcclTaskAllReduce(ctx, in, out, L->count,
					 HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
					 (uint8_t)L->repeat, L->commit);
	case K_AG:
		return HcclTaskAllGather(ctx, in, out, L->count,
					 HCCL_DATA_TYPE_INT32, L->stride,
					 (uint8_t)L->repeat, L->commit);
	case K_RS:
		return HcclTaskReduceScatter(ctx, in, out, L->count,
					     HCCL_DATA_TYPE_INT32,
					     HCCL_REDUCE_SUM, L->stride,
					     (uint8_t)L->repeat, L->commit);
	case K_A2A:
		return HcclTaskAlltoAll(ctx, in, out, L->count,
					HCCL_DATA_TYPE_INT32, L->stride,
					(uint8_t)L->repeat, L->commit);
	case K_A2AV:
		v_layout(rank, n, L->repeat, false, sc, sd);
		v_layout(rank, n, L->repeat, true, rc, rd);
		return HcclTaskAlltoAllV(ctx, in, sc, sd, HCCL_DATA_TYPE_INT32,
					 out, rc, rd, HCCL_DATA_TYPE_INT32,
					 (uint8_t)L->repeat, L->commit);
	}
	return -1;
}

/*
 * One layout on ctx: Query 0 before any commit, exactly 1 after the
 * first round was waited with the others not committed yet ("during"),
 * repeat at the end; the output equal to the reference everywhere
 * (untouched elements keep the sentinel).
 */
static int check_layout(HcclTaskCtx ctx, const struct layout *L, int rank,
			int n)
{
	uint64_t in_len = 0, out_len = 0;
	int32_t *in, *out, *ref;
	HcclHandle h;
	int bad = 0;

	lens(L, rank, n, &in_len, &out_len);
	in = malloc(in_len * sizeof(*in));
	out = malloc(out_len * sizeof(*out));
	ref = malloc(out_len * sizeof(*ref));
	if (!in || !out || !ref)
		return 1;
	for (uint64_t x = 0; x < in_len; x++)
		in[x] = in_val(rank, x);
	for (uint64_t x = 0; x < out_len; x++)
		out[x] = ref[x] = SENT;
	for (unsigned r = 0; r < L->repeat; r++)
		ref_round(L, rank, n, r, ref);

	CHECK(HcclTaskSetCcTiling(ctx, L->algo) == HCCL_SUCCESS,
	      "rank %d: SetCcTiling(%s)", rank, L->algo);
	h = prepare_layout(ctx, L, rank, n, in, out);
	CHECK(h >= 0, "rank %d: %s prepare failed", rank, kind_name[L->kind]);
	if (!L->commit) {
		CHECK(HcclTaskQuery(ctx, h) == 0, "rank %d: %s: query before",
		      rank, kind_name[L->kind]);
		CHECK(HcclTaskCommit(ctx, h) == HCCL_SUCCESS, "rank %d: commit",
		      rank);
	}
	CHECK(HcclTaskWait(ctx, h) == HCCL_SUCCESS, "rank %d: %s: wait 0", rank,
	      kind_name[L->kind]);
	CHECK(HcclTaskQuery(ctx, h) == 1,
	      "rank %d: %s: query during = %d, want 1", rank,
	      kind_name[L->kind], HcclTaskQuery(ctx, h));
	for (unsigned r = 1; r < L->repeat; r++)
		CHECK(HcclTaskCommit(ctx, h) == HCCL_SUCCESS,
		      "rank %d: commit %u", rank, r);
	for (unsigned r = 1; r < L->repeat; r++)
		CHECK(HcclTaskWait(ctx, h) == HCCL_SUCCESS, "rank %d: wait %u",
		      rank, r);
	CHECK(HcclTaskQuery(ctx, h) == (int32_t)L->repeat,
	      "rank %d: query after", rank);
	for (uint64_t x = 0; x < out_len; x++) {
		if (out[x] == ref[x])
			continue;
		fprintf(stderr,
			"rank %d: %s count %llu stride %llu repeat %u: "
			"out[%llu] = %d, want %d\n",
			rank, kind_name[L->kind], (unsigned long long)L->count,
			(unsigned long long)L->stride, L->repeat,
			(unsigned long long)x, out[x], ref[x]);
		bad = 1;
		break;
	}
	free(in);
	free(out);
	free(ref);
	return bad;
}

struct shared {
	HcclRootInfo roots[2];
	int ready;
	double detect_s[8];
	int wait_ret[8], dep_ret[8];
	int round0_done; /* survivors whose first round ended */
};

static struct shared *shared_new(void)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(sh, MAP_FAILED);
	return sh;
}

/* Two communicators over the same ranks (root infos shared by rank 0). */
static int two_comms(struct shared *sh, int rank, int n, HcclComm *a,
		     HcclComm *b)
{
	if (aclInit(NULL) || aclrtSetDevice(rank))
		return 1;
	if (ohc_test_share_roots(sh->roots, 2, &sh->ready, rank, 60))
		return 1;
	if (HcclCommInitRootInfo((uint32_t)n, &sh->roots[0], (uint32_t)rank, a))
		return 1;
	if (b &&
	    HcclCommInitRootInfo((uint32_t)n, &sh->roots[1], (uint32_t)rank, b))
		return 1;
	return 0;
}

static int layouts_rank(int rank, int n, void *p)
{
	HcclComm comm;
	HcclTaskCtx ctx;
	int bad = 0;

	if (two_comms(p, rank, n, &comm, NULL))
		return 1;
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(comm, &ctx), HCCL_SUCCESS);
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		bad += check_layout(ctx, &layouts[i], rank, n);
	OHC_RANK_CHECK_RET(rank, HcclTaskFinalize(ctx, true), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(ctx), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclCommDestroy(comm), HCCL_SUCCESS);
	return bad;
}

static void run_procs(int n, ohc_test_rank_fn fn, int timeout_s)
{
	struct shared *sh = shared_new();

	cr_assert_eq(ohc_test_fork_ranks(n, fn, sh, timeout_s), 0);
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(sh, sizeof(*sh));
}

Test(task, layouts_procs2, .timeout = 300)
{
	run_procs(2, layouts_rank, 240);
}

Test(task, layouts_procs3, .timeout = 300)
{
	run_procs(3, layouts_rank, 240);
}

Test(task, layouts_procs8, .timeout = 600)
{
	run_procs(8, layouts_rank, 500);
}

/* ---- the spec's fusion: AlltoAll on comm A feeding AllGather on B ---- */

#define SLICES 4

/*
 * A2A (repeat SLICES, tiled: slice r is column r of a rank-major
 * [n][SLICES * c] matrix) on context A; on context B, after
 * InterHcclGroupSync on it, an AllGather of the whole A2A output,
 * committed at once. The compute loop makes slice r, commits it, and
 * sleeps a little so an AllGather that ignored the dependency would run
 * on the sentinel-filled output. Proofs: the gathered data equals every
 * rank's finished A2A output; the AllGather started no earlier than the
 * A2A's last round ended (and slices ran in order), by their recorded
 * times; it had not finished before the last slice was committed.
 */
static int dependency_rank(int rank, int n, void *p)
{
	uint64_t c = 4099, row = SLICES * c, tot = (uint64_t)n * row;
	int32_t *in = malloc(tot * 4), *mid = malloc(tot * 4),
		*out = malloc(tot * (uint64_t)n * 4);
	uint64_t s, e, prev_end = 0, a2a_end = 0;
	HcclTaskCtx ca, cb;
	HcclComm a, b;
	HcclHandle ha, hb;

	if (!in || !mid || !out || two_comms(p, rank, n, &a, &b))
		return 1;
	for (uint64_t x = 0; x < tot; x++)
		mid[x] = SENT;
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(a, &ca), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(b, &cb), HCCL_SUCCESS);
	ha = HcclTaskAlltoAll(ca, in, mid, c, HCCL_DATA_TYPE_INT32, row, SLICES,
			      false);
	CHECK(ha == 0, "rank %d: AlltoAll prepare", rank);
	OHC_RANK_CHECK_RET(rank, HcclTaskInterHcclGroupSync(cb, ca, ha),
			   HCCL_SUCCESS);
	hb = HcclTaskAllGather(cb, mid, out, tot, HCCL_DATA_TYPE_INT32, 0, 1,
			       true);
	CHECK(hb == 0, "rank %d: AllGather prepare", rank);
	for (unsigned r = 0; r < SLICES; r++) {
		/* "compute" slice r: column r of every destination row */
		for (int k = 0; k < n; k++)
			for (uint64_t j = 0; j < c; j++)
				in[k * row + r * c + j] = in_val(
					rank, (uint64_t)k * row + r * c + j);
		usleep(20000);
		CHECK(HcclTaskQuery(cb, hb) == 0,
		      "rank %d: the AllGather finished before slice %u of the "
		      "AlltoAll it depends on was committed",
		      rank, r);
		OHC_RANK_CHECK_RET(rank, HcclTaskCommit(ca, ha), HCCL_SUCCESS);
	}
	for (unsigned r = 0; r < SLICES; r++)
		OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, ha), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(cb, hb), HCCL_SUCCESS);

	/* data: out = every rank's A2A output, i.e. in_val of the senders */
	for (int q = 0; q < n; q++)
		for (int i = 0; i < n; i++)
			for (uint64_t x = 0; x < row; x++) {
				int32_t got = out[(uint64_t)q * tot + i * row +
						  x],
					want = in_val(i, (uint64_t)q * row + x);

				CHECK(got == want,
				      "rank %d: gathered block %d of rank %d "
				      "[%llu] = %d, want %d",
				      rank, i, q, (unsigned long long)x, got,
				      want);
			}
	/* times: slices in order, the AllGather after the last slice */
	for (unsigned r = 0; r < SLICES; r++) {
		OHC_RANK_CHECK_RET(rank,
				   HcclTaskGetRoundTimes(ca, ha, r, &s, &e),
				   HCCL_SUCCESS);
		CHECK(s && e >= s && s >= prev_end,
		      "rank %d: slice %u ran %llu..%llu, the previous ended "
		      "%llu",
		      rank, r, (unsigned long long)s, (unsigned long long)e,
		      (unsigned long long)prev_end);
		prev_end = a2a_end = e;
	}
	OHC_RANK_CHECK_RET(rank, HcclTaskGetRoundTimes(cb, hb, 0, &s, &e),
			   HCCL_SUCCESS);
	CHECK(s >= a2a_end && e >= s,
	      "rank %d: the AllGather started at %llu, before the AlltoAll "
	      "ended (%llu)",
	      rank, (unsigned long long)s, (unsigned long long)a2a_end);
	OHC_RANK_CHECK_RET(rank, HcclTaskFinalize(ca, true), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskFinalize(cb, true), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(cb), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(ca), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclCommDestroy(a), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclCommDestroy(b), HCCL_SUCCESS);
	free(in);
	free(mid);
	free(out);
	return 0;
}

Test(task, dependency_procs2, .timeout = 300)
{
	run_procs(2, dependency_rank, 240);
}

Test(task, dependency_procs4, .timeout = 300)
{
	run_procs(4, dependency_rank, 240);
}

/* ---- thread ranks: order, independence, the limit, misuse ---- */

#define NT 2

static HcclRootInfo troots[2];

/* Run fn on NT thread ranks, each with two communicators. */
typedef int (*trank_fn)(int rank, HcclComm a, HcclComm b);
static trank_fn tfn;

static int thread_rank(int rank, int n, void *p)
{
	HcclComm a, b;
	int bad;

	(void)p;
	if (aclrtSetDevice(rank) ||
	    HcclCommInitRootInfo((uint32_t)n, &troots[0], (uint32_t)rank, &a) ||
	    HcclCommInitRootInfo((uint32_t)n, &troots[1], (uint32_t)rank, &b))
		return 1;
	bad = tfn(rank, a, b);
	bad += HcclCommDestroy(a) != HCCL_SUCCESS;
	bad += HcclCommDestroy(b) != HCCL_SUCCESS;
	return bad;
}

static void run_threads(trank_fn fn)
{
	cr_assert_eq(aclInit(NULL), 0);
	cr_assert_eq(HcclGetRootInfo(&troots[0]), HCCL_SUCCESS);
	cr_assert_eq(HcclGetRootInfo(&troots[1]), HCCL_SUCCESS);
	tfn = fn;
	cr_assert_eq(ohc_test_thread_ranks(NT, thread_rank, NULL), 0);
	aclFinalize();
}

/* One AllReduce of 1 int32 on comm, checked (the comm still works). */
static int comm_works(HcclComm comm, int rank)
{
	int32_t v = rank + 1;

	if (HcclAllReduce(&v, &v, 1, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
			  comm, NULL) != HCCL_SUCCESS)
		OHC_RANK_FAIL("rank %d: AllReduce on the comm failed", rank);
	CHECK(v == NT * (NT + 1) / 2, "rank %d: AllReduce gave %d", rank, v);
	return 0;
}

/*
 * Commit order does not change execution order: the AllGather (handle 1)
 * committed before both rounds of the AllReduce (handle 0) starts after
 * the AllReduce's last round ended. Independence: context B's task
 * completes while A's first task waits for a commit.
 */
static int order_body(int rank, HcclComm a, HcclComm b)
{
	int32_t ar[2 * 64], ag_in[64], ag_out[64 * NT], x = rank, y;
	uint64_t s0, e0, s1, e1, s, e;
	HcclTaskCtx ca, cb;
	HcclHandle h0, h1, hb;

	for (int i = 0; i < 128; i++)
		ar[i] = rank;
	for (int i = 0; i < 64; i++)
		ag_in[i] = rank * 64 + i;
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(a, &ca), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(b, &cb), HCCL_SUCCESS);
	h0 = HcclTaskAllReduce(ca, ar, ar, 64, HCCL_DATA_TYPE_INT32,
			       HCCL_REDUCE_SUM, 2, false);
	h1 = HcclTaskAllGather(ca, ag_in, ag_out, 64, HCCL_DATA_TYPE_INT32, 0,
			       1, true);
	CHECK(h0 == 0 && h1 == 1, "rank %d: handles %d %d", rank, h0, h1);
	OHC_RANK_CHECK_RET(rank, HcclTaskCommit(ca, h0), HCCL_SUCCESS);
	/* context B runs while A waits for h0's second commit */
	hb = HcclTaskAllReduce(cb, &x, &y, 1, HCCL_DATA_TYPE_INT32,
			       HCCL_REDUCE_SUM, 1, true);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(cb, hb), HCCL_SUCCESS);
	CHECK(y == NT * (NT - 1) / 2, "rank %d: B gave %d", rank, y);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h0), HCCL_SUCCESS);
	CHECK(HcclTaskQuery(ca, h1) == 0,
	      "rank %d: handle 1 ran before handle 0's second round", rank);
	OHC_RANK_CHECK_RET(rank, HcclTaskCommit(ca, h0), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h0), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h1), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskGetRoundTimes(ca, h0, 0, &s0, &e0),
			   HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskGetRoundTimes(ca, h0, 1, &s1, &e1),
			   HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskGetRoundTimes(ca, h1, 0, &s, &e),
			   HCCL_SUCCESS);
	CHECK(s1 >= e0 && s >= e1,
	      "rank %d: rounds out of prepare order: h0 %llu..%llu, "
	      "%llu..%llu, h1 from %llu",
	      rank, (unsigned long long)s0, (unsigned long long)e0,
	      (unsigned long long)s1, (unsigned long long)e1,
	      (unsigned long long)s);
	for (int i = 0; i < 128; i++)
		CHECK(ar[i] == NT * (NT - 1) / 2, "rank %d: ar[%d] = %d", rank,
		      i, ar[i]);
	for (int i = 0; i < 64 * NT; i++)
		CHECK(ag_out[i] == i, "rank %d: ag_out[%d] = %d", rank, i,
		      ag_out[i]);
	OHC_RANK_CHECK_RET(rank, HcclTaskFinalize(ca, true), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskFinalize(cb, false), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(ca), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(cb), HCCL_SUCCESS);
	return 0;
}

Test(task, order_and_independence_threads, .timeout = 120)
{
	run_threads(order_body);
}

/*
 * 63 prepares plus syncs per session: 62 prepares and one sync fill it,
 * the 64th entry (a prepare or a sync) is refused and changes nothing;
 * then all 62 run and are waited in order.
 */
static int limit_body(int rank, HcclComm a, HcclComm b)
{
	int32_t v[62], w[62], x = 1, y;
	HcclTaskCtx ca, cb;
	HcclHandle hb;

	OHC_RANK_CHECK_RET(rank, HcclTaskInit(a, &ca), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(b, &cb), HCCL_SUCCESS);
	hb = HcclTaskAllReduce(cb, &x, &y, 1, HCCL_DATA_TYPE_INT32,
			       HCCL_REDUCE_SUM, 1, true);
	CHECK(hb == 0, "rank %d: B prepare", rank);
	for (int i = 0; i < 62; i++) {
		HcclHandle h;

		v[i] = i + rank;
		h = HcclTaskAllReduce(ca, &v[i], &w[i], 1, HCCL_DATA_TYPE_INT32,
				      HCCL_REDUCE_SUM, 1, false);
		CHECK(h == i, "rank %d: prepare %d gave %d", rank, i, h);
	}
	OHC_RANK_CHECK_RET(rank, HcclTaskInterHcclGroupSync(ca, cb, hb),
			   HCCL_SUCCESS);
	CHECK(HcclTaskAllReduce(ca, &x, &y, 1, HCCL_DATA_TYPE_INT32,
				HCCL_REDUCE_SUM, 1, false) == -1,
	      "rank %d: a 64th entry (prepare) was taken", rank);
	OHC_RANK_CHECK_RET(rank, HcclTaskInterHcclGroupSync(ca, cb, hb),
			   HCCL_E_PARA);
	for (int i = 61; i >= 0; i--) /* commit order does not matter */
		OHC_RANK_CHECK_RET(rank, HcclTaskCommit(ca, (HcclHandle)i),
				   HCCL_SUCCESS);
	for (int i = 0; i < 62; i++) {
		OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, (HcclHandle)i),
				   HCCL_SUCCESS);
		CHECK(w[i] == 2 * i + NT * (NT - 1) / 2, "rank %d: w[%d] = %d",
		      rank, i, w[i]);
	}
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(cb, hb), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskFinalize(ca, true), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskFinalize(cb, true), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(ca), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(cb), HCCL_SUCCESS);
	return 0;
}

Test(task, limit63_threads, .timeout = 120)
{
	run_threads(limit_body);
}

/* Bad arguments: -1 or the error, and nothing prepared. */
static int bad_args(int rank, HcclTaskCtx ctx)
{
	int32_t buf[64] = {0}, out[64 * NT];
	uint64_t cnt[NT] = {0}, dsp[NT] = {0};

	OHC_RANK_CHECK_RET(rank, HcclTaskCommit(NULL, 0), HCCL_E_PTR);
	OHC_RANK_CHECK_RET(rank,
			   HcclTaskWait((HcclTaskCtx)(uintptr_t)0x1234, 0),
			   HCCL_E_PARA);
	CHECK(HcclTaskQuery(NULL, 0) == -1, "rank %d: query NULL", rank);
	CHECK(HcclTaskAllReduce(ctx, buf, out, 0, HCCL_DATA_TYPE_INT32,
				HCCL_REDUCE_SUM, 1, false) == -1,
	      "rank %d: count 0 accepted", rank);
	CHECK(HcclTaskAllReduce(ctx, NULL, out, 4, HCCL_DATA_TYPE_INT32,
				HCCL_REDUCE_SUM, 1, false) == -1,
	      "rank %d: NULL sendBuf accepted", rank);
	CHECK(HcclTaskAllReduce(ctx, buf, out, 4, HCCL_DATA_TYPE_INT32,
				HCCL_REDUCE_SUM, 0, false) == -1,
	      "rank %d: repeat 0 accepted", rank);
	CHECK(HcclTaskAllReduce(ctx, buf, out, 4, (HcclDataType)99,
				HCCL_REDUCE_SUM, 1, false) == -1,
	      "rank %d: data type 99 accepted", rank);
	CHECK(HcclTaskAllReduce(ctx, buf, out, 4, HCCL_DATA_TYPE_INT32,
				(HcclReduceOp)9, 1, false) == -1,
	      "rank %d: op 9 accepted", rank);
	CHECK(HcclTaskAllGather(ctx, buf, out, 8, HCCL_DATA_TYPE_INT32, 5, 1,
				false) == -1,
	      "rank %d: stride below the count accepted", rank);
	CHECK(HcclTaskAlltoAll(ctx, buf, buf, 8, HCCL_DATA_TYPE_INT32, 0, 1,
			       false) == -1,
	      "rank %d: in-place AlltoAll accepted", rank);
	CHECK(HcclTaskReduceScatter(ctx, buf, out, 8, HCCL_DATA_TYPE_INT32,
				    HCCL_REDUCE_SUM, 0x7FFFFFFFFull, 2,
				    false) == -1,
	      "rank %d: a layout past the maximum count accepted", rank);
	CHECK(HcclTaskAlltoAllV(ctx, buf, NULL, dsp, HCCL_DATA_TYPE_INT32, out,
				cnt, dsp, HCCL_DATA_TYPE_INT32, 1, false) == -1,
	      "rank %d: NULL sendCounts accepted", rank);
	CHECK(HcclTaskAlltoAllV(ctx, buf, cnt, dsp, HCCL_DATA_TYPE_INT32, out,
				cnt, dsp, HCCL_DATA_TYPE_FP32, 1, false) == -1,
	      "rank %d: differing AlltoAllV types accepted", rank);
	OHC_RANK_CHECK_RET(rank, HcclTaskSetCcTiling(ctx, "AllReduce=bogus"),
			   HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskSetCcTiling(ctx, "level7=ring"),
			   HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskGetRoundTimes(ctx, 0, 0, NULL, NULL),
			   HCCL_E_PTR);
	return 0;
}

/*
 * Every misuse of one session: errors, and nothing lost (the rounds
 * still run right, the communicator still works).
 */
static int misuse_body(int rank, HcclComm a, HcclComm b)
{
	int32_t v[2] = {rank, rank + 10}, w[2], g[NT], h3v[2] = {1, 2}, h3w[2];
	HcclTaskCtx ca, cb, other;
	HcclHandle h, h2, h3;

	OHC_RANK_CHECK_RET(rank, HcclTaskInit(NULL, &ca), HCCL_E_PTR);
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(a, &ca), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(a, &other), HCCL_E_AGAIN);
	OHC_RANK_CHECK_RET(rank, HcclCommDestroy(a), HCCL_E_AGAIN);
	if (bad_args(rank, ca))
		return 1;
	CHECK(HcclTaskQuery(ca, 0) == -1, "rank %d: bad args prepared", rank);

	h = HcclTaskAllReduce(ca, v, w, 1, HCCL_DATA_TYPE_INT32,
			      HCCL_REDUCE_SUM, 2, false);
	h2 = HcclTaskAllGather(ca, &v[0], g, 1, HCCL_DATA_TYPE_INT32, 0, 1,
			       false);
	CHECK(h == 0 && h2 == 1, "rank %d: handles %d %d", rank, h, h2);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h), HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, 5), HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, -1), HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskCommit(ca, 7), HCCL_E_PARA);
	CHECK(HcclTaskQuery(ca, 9) == -1, "rank %d: query of handle 9", rank);
	OHC_RANK_CHECK_RET(rank, HcclTaskCommit(ca, h2), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskCommit(ca, h), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h2), HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskCommit(ca, h), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskCommit(ca, h), HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h), HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h2), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h2), HCCL_E_PARA);
	CHECK(w[0] == NT * (NT - 1) / 2 && w[1] == NT * (NT - 1) / 2 + 10 * NT,
	      "rank %d: AllReduce gave %d %d", rank, w[0], w[1]);
	for (int i = 0; i < NT; i++)
		CHECK(g[i] == i, "rank %d: AllGather gave g[%d] = %d", rank, i,
		      g[i]);
	/* dependencies: on itself, on an unknown handle */
	OHC_RANK_CHECK_RET(rank, HcclTaskInterHcclGroupSync(ca, ca, 0),
			   HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(b, &cb), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskInterHcclGroupSync(cb, ca, 9),
			   HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskInterHcclGroupSync(cb, NULL, 0),
			   HCCL_E_PTR);

	/* a synchronous Finalize with an uncommitted round: refused */
	h3 = HcclTaskAllReduce(ca, h3v, h3w, 1, HCCL_DATA_TYPE_INT32,
			       HCCL_REDUCE_SUM, 2, true);
	CHECK(h3 == 2, "rank %d: h3 = %d", rank, h3);
	OHC_RANK_CHECK_RET(rank, HcclTaskFinalize(ca, true), HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskCommit(ca, h3), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskFinalize(ca, true), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskFinalize(ca, true), HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h3), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h3), HCCL_SUCCESS);
	CHECK(h3w[0] == NT && h3w[1] == 2 * NT, "rank %d: h3 gave %d %d", rank,
	      h3w[0], h3w[1]);
	/* after Finalize: prepares, commits and syncs refused */
	CHECK(HcclTaskAllReduce(ca, v, w, 1, HCCL_DATA_TYPE_INT32,
				HCCL_REDUCE_SUM, 1, false) == -1,
	      "rank %d: prepare after Finalize", rank);
	OHC_RANK_CHECK_RET(rank, HcclTaskCommit(ca, h), HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskInterHcclGroupSync(ca, cb, 0),
			   HCCL_E_PARA);
	CHECK(HcclTaskQuery(ca, h3) == 2, "rank %d: query after Finalize",
	      rank);
	/* a dependency on a finalized context, then on a destroyed one */
	OHC_RANK_CHECK_RET(rank, HcclTaskInterHcclGroupSync(cb, ca, h),
			   HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(ca), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskInterHcclGroupSync(cb, ca, h),
			   HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskCommit(ca, h), HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(ca), HCCL_E_PARA);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(cb), HCCL_SUCCESS);
	/* both communicators are intact */
	if (comm_works(a, rank) || comm_works(b, rank))
		return 1;
	return 0;
}

Test(task, misuse_threads, .timeout = 120)
{
	run_threads(misuse_body);
}

/*
 * Finalize without sync discards rounds never committed; a context that
 * depends on a discarded task, or on a task of a context destroyed
 * before it ran, fails without running (its communicator stays usable);
 * destroying a context with pending tasks is allowed.
 */
static int discard_body(int rank, HcclComm a, HcclComm b)
{
	int32_t v[3] = {1, 2, 3}, w[3], x = rank, y = -1;
	HcclTaskCtx ca, cb;
	HcclHandle h, hb;

	OHC_RANK_CHECK_RET(rank, HcclTaskInit(a, &ca), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(b, &cb), HCCL_SUCCESS);
	h = HcclTaskAllReduce(ca, v, w, 1, HCCL_DATA_TYPE_INT32,
			      HCCL_REDUCE_SUM, 3, true);
	OHC_RANK_CHECK_RET(rank, HcclTaskInterHcclGroupSync(cb, ca, h),
			   HCCL_SUCCESS);
	hb = HcclTaskAllReduce(cb, &x, &y, 1, HCCL_DATA_TYPE_INT32,
			       HCCL_REDUCE_SUM, 1, true);
	CHECK(h == 0 && hb == 0, "rank %d: handles", rank);
	OHC_RANK_CHECK_RET(rank, HcclTaskFinalize(ca, false), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h), HCCL_E_INTERNAL);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(ca, h), HCCL_E_INTERNAL);
	CHECK(HcclTaskQuery(ca, h) == -1, "rank %d: query of a discarded task",
	      rank);
	CHECK(w[0] == NT, "rank %d: round 0 gave %d", rank, w[0]);
	/* B's task depended on the discarded one: it failed, unrun */
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(cb, hb), HCCL_E_INTERNAL);
	CHECK(y == -1, "rank %d: the dependent task ran (y = %d)", rank, y);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(cb), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(ca), HCCL_SUCCESS);

	/* a source destroyed before its task was ever committed */
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(a, &ca), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(b, &cb), HCCL_SUCCESS);
	h = HcclTaskAllReduce(ca, v, w, 3, HCCL_DATA_TYPE_INT32,
			      HCCL_REDUCE_SUM, 1, false);
	OHC_RANK_CHECK_RET(rank, HcclTaskInterHcclGroupSync(cb, ca, h),
			   HCCL_SUCCESS);
	hb = HcclTaskAllReduce(cb, &x, &y, 1, HCCL_DATA_TYPE_INT32,
			       HCCL_REDUCE_SUM, 1, true);
	CHECK(HcclTaskQuery(cb, hb) == 0, "rank %d: ran before its source",
	      rank);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(ca), HCCL_SUCCESS);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(cb, hb), HCCL_E_INTERNAL);
	CHECK(y == -1, "rank %d: the dependent task ran (y = %d)", rank, y);
	/* what is prepared after the failed dependency fails too, unrun */
	hb = HcclTaskAllReduce(cb, &x, &y, 1, HCCL_DATA_TYPE_INT32,
			       HCCL_REDUCE_SUM, 1, true);
	CHECK(hb == 1, "rank %d: prepare after the failure gave %d", rank, hb);
	OHC_RANK_CHECK_RET(rank, HcclTaskWait(cb, hb), HCCL_E_INTERNAL);
	CHECK(y == -1, "rank %d: a later task ran (y = %d)", rank, y);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(cb), HCCL_SUCCESS);
	/* a context destroyed with a task pending (never committed) */
	OHC_RANK_CHECK_RET(rank, HcclTaskInit(b, &cb), HCCL_SUCCESS);
	hb = HcclTaskAllReduce(cb, &x, &y, 1, HCCL_DATA_TYPE_INT32,
			       HCCL_REDUCE_SUM, 1, false);
	CHECK(hb == 0, "rank %d: prepare", rank);
	OHC_RANK_CHECK_RET(rank, HcclTaskDestroy(cb), HCCL_SUCCESS);
	if (comm_works(a, rank) || comm_works(b, rank))
		return 1;
	return 0;
}

Test(task, discard_and_dead_sources_threads, .timeout = 120)
{
	run_threads(discard_body);
}

/* ---- a peer killed during a committed task ---- */

#define NP 4
#define VICTIM 2
#define EXEC_TIMEOUT_S 20

/*
 * Every rank commits all rounds of a large AllReduce (context A) and an
 * AllGather on B that depends on it; the victim dies after the first
 * round. The survivors' waits return an error within the exec timeout
 * (the dependent task's wait too, without it running), and finalize,
 * destroy and the communicators' destroy all return.
 */
static int victim_rank(int rank, int n, void *p)
{
	struct shared *sh = p;
	size_t cnt = 1u << 20;
	float *buf = malloc(4 * cnt * sizeof(float));
	int32_t x = rank, g[NP];
	HcclTaskCtx ca, cb;
	HcclHandle h, hb;
	HcclComm a, b;
	HcclResult r = HCCL_SUCCESS;
	double t0;

	if (!buf || two_comms(sh, rank, n, &a, &b))
		return 1;
	for (size_t i = 0; i < 4 * cnt; i++)
		buf[i] = 1.0f;
	if (HcclTaskInit(a, &ca) || HcclTaskInit(b, &cb))
		return 1;
	h = HcclTaskAllReduce(ca, buf, buf, cnt, HCCL_DATA_TYPE_FP32,
			      HCCL_REDUCE_SUM, 4, false);
	if (h < 0 || HcclTaskInterHcclGroupSync(cb, ca, h))
		return 1;
	hb = HcclTaskAllGather(cb, &x, g, 1, HCCL_DATA_TYPE_INT32, 0, 1, true);
	if (hb < 0 || HcclTaskCommit(ca, h) || HcclTaskWait(ca, h))
		return 1;
	/* The victim dies only once every survivor has its first round: its
	 * own round can end while a peer still takes the last piece out of
	 * its ring, and a peer that sees the death first fails that round. */
	if (rank == VICTIM) {
		for (int i = 0;
		     i < 60000 && __atomic_load_n(&sh->round0_done,
						  __ATOMIC_ACQUIRE) < n - 1;
		     i++)
			usleep(1000);
		raise(SIGKILL);
	}
	__atomic_add_fetch(&sh->round0_done, 1, __ATOMIC_RELEASE);
	for (int k = 1; k < 4; k++)
		if (HcclTaskCommit(ca, h))
			return 1;
	t0 = ohc_test_now_s();
	for (int k = 1; k < 4 && r == HCCL_SUCCESS; k++)
		r = HcclTaskWait(ca, h);
	sh->detect_s[rank] = ohc_test_now_s() - t0;
	sh->wait_ret[rank] = r;
	sh->dep_ret[rank] = HcclTaskWait(cb, hb);
	HcclTaskFinalize(ca, false);
	HcclTaskFinalize(cb, false);
	HcclTaskDestroy(cb);
	HcclTaskDestroy(ca);
	HcclCommDestroy(a);
	HcclCommDestroy(b);
	free(buf);
	return 0;
}

Test(task, peer_dies_during_committed_task, .timeout = 240)
{
	struct shared *sh = shared_new();
	char v[16];

	snprintf(v, sizeof(v), "%d", EXEC_TIMEOUT_S);
	setenv("HCCL_EXEC_TIMEOUT", v, 1);
	cr_assert_eq(ohc_test_fork_ranks(NP, victim_rank, sh, 170), 1,
		     "only the victim may fail");
	for (int r = 0; r < NP; r++) {
		if (r == VICTIM)
			continue;
		cr_expect(sh->wait_ret[r] == HCCL_E_REMOTE ||
				  sh->wait_ret[r] == HCCL_E_TIMEOUT,
			  "rank %d: wait returned %d", r, sh->wait_ret[r]);
		cr_expect_neq(sh->dep_ret[r], HCCL_SUCCESS,
			      "rank %d: the dependent task succeeded", r);
		cr_expect_lt(sh->detect_s[r], EXEC_TIMEOUT_S + 5.0,
			     "rank %d: the wait took %.1f s", r,
			     sh->detect_s[r]);
		fprintf(stderr, "rank %d: wait failed with %d after %.2f s\n",
			r, sh->wait_ret[r], sh->detect_s[r]);
	}
	cr_assert_eq(ohc_test_shm_leftovers(), 0);
	munmap(sh, sizeof(*sh));
}
