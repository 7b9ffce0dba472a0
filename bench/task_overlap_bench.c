/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The task API's point: compute and communication overlapped. N ranks
 * (processes over shared memory) each produce a buffer of BYTES with a
 * compute kernel and reduce it (AllReduce, fp32 sum) or exchange it
 * (AlltoAll):
 *
 *   blocking   compute the whole buffer, then one blocking collective
 *   pipelined  compute slice s, HcclTaskCommit it (one task of repeat =
 *              SLICES rounds), the next slice while s is on the wire;
 *              then wait for every round
 *
 * The kernel's cost per element is calibrated once per size so that
 * compute and communication take about the same time (-r changes the
 * ratio), where overlap matters most. Each iteration starts after a
 * barrier; its time is the slowest rank's; the median of -i iterations
 * is reported, with the blocking run's compute and collective parts.
 * Never run by ctest (bench/README.md has the command and the numbers).
 *
 * usage: ohc_task_overlap_bench [-n RANKS] [-b MIN] [-e MAX] [-s SLICES]
 *                               [-i ITERS] [-r RATIO] [-o allreduce|alltoall]
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_task.h>

#define MAX_SIZES 32
#define MAX_ITERS 64

struct opts {
	int nranks, slices, iters;
	size_t min, max;
	double ratio;
	int alltoall;
};

struct row {
	size_t bytes;
	int work;	 /* kernel passes per element */
	double comp_ms;	 /* compute alone (blocking run) */
	double coll_ms;	 /* collective alone (blocking run) */
	double block_ms; /* blocking: compute + collective */
	double pipe_ms;	 /* pipelined */
	int wrong;	 /* ranks whose results differed */
};

struct shared {
	HcclRootInfo root;
	int ready;
	struct row rows[MAX_SIZES];
	int nrows;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * The compute kernel: element x of the output is a function of (rank, x)
 * costing `work` dependent multiply-adds (independent across elements,
 * so it vectorizes). The result is exact and the same for any slicing.
 */
static void compute(float *out, size_t first, size_t n, int rank, int work)
{
	for (size_t x = first; x < first + n; x++) {
		float v = (float)((x + (size_t)rank) & 1023);

		for (int k = 0; k < work; k++)
			v = v * 0.5f + 1.0f;
		/* integers: sums exact in any reduction order */
		out[x] = (float)(int)v + (float)((x + (size_t)rank) & 1023);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The slowest rank's value. */
static double max_over_ranks(HcclComm comm, double v)
{
	double out = v;

	HcclAllReduce(&v, &out, 1, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_MAX, comm,
		      NULL);
	return out;
}

static HcclResult blocking_coll(const struct opts *o, HcclComm comm, float *in,
				float *out, size_t n)
{
	if (o->alltoall)
		return HcclAlltoAll(
			in, n / (size_t)o->nranks, HCCL_DATA_TYPE_FP32, out,
			n / (size_t)o->nranks, HCCL_DATA_TYPE_FP32, comm, NULL);
	return HcclAllReduce(in, out, n, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
			     comm, NULL);
}

/*
 * Pipelined: slice s of every destination block computed, then its
 * round committed. AlltoAll uses the tiled layout (strideCount = the
 * block) so that a round carries slice s of each block.
 */
static int pipelined(const struct opts *o, HcclTaskCtx ctx, int rank, float *in,
		     float *out, size_t n, int work)
{
	size_t block = o->alltoall ? n / (size_t)o->nranks : n;
	size_t slice = block / (size_t)o->slices;
	HcclHandle h;

	if (o->alltoall)
		h = HcclTaskAlltoAll(ctx, in, out, slice, HCCL_DATA_TYPE_FP32,
				     block, (uint8_t)o->slices, false);
	else
		h = HcclTaskAllReduce(ctx, in, out, slice, HCCL_DATA_TYPE_FP32,
				      HCCL_REDUCE_SUM, (uint8_t)o->slices,
				      false);
	if (h < 0)
		return 1;
	for (int s = 0; s < o->slices; s++) {
		if (o->alltoall)
			for (int k = 0; k < o->nranks; k++)
				compute(in, (size_t)k * block + s * slice,
					slice, rank, work);
		else
			compute(in, (size_t)s * slice, slice, rank, work);
		if (HcclTaskCommit(ctx, h))
			return 1;
	}
	for (int s = 0; s < o->slices; s++)
		if (HcclTaskWait(ctx, h))
			return 1;
	return 0;
}

static int rank_main(int rank, const struct opts *o, struct shared *sh)
{
	HcclComm comm;
	HcclTaskCtx ctx;
	int r = 0;

	if (rank == 0) {
		if (HcclGetRootInfo(&sh->root))
			return 1;
		__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
	}
	while (!__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (aclInit(NULL) || aclrtSetDevice(rank) ||
	    HcclCommInitRootInfo((uint32_t)o->nranks, &sh->root, (uint32_t)rank,
				 &comm))
		return 1;
	for (size_t bytes = o->min; bytes <= o->max; bytes *= 2, r++) {
		size_t n = bytes / sizeof(float);
		float *in = malloc(bytes), *out = malloc(bytes),
		      *ref = malloc(bytes);
		double comp[MAX_ITERS], coll[MAX_ITERS], blk[MAX_ITERS],
			pip[MAX_ITERS], t0, t1, t2, c1;
		int work;

		if (!in || !out || !ref)
			return 1;
		/* warm up, then calibrate: compute ~ ratio x collective */
		compute(in, 0, n, rank, 1);
		blocking_coll(o, comm, in, out, n);
		t0 = now_ms();
		for (int k = 0; k < 3; k++)
			blocking_coll(o, comm, in, out, n);
		t1 = max_over_ranks(comm, (now_ms() - t0) / 3);
		/* compute = a + b * work: fit it on two work counts */
		t0 = now_ms();
		compute(in, 0, n, rank, 2);
		t2 = now_ms();
		compute(in, 0, n, rank, 34);
		c1 = (now_ms() - t2 - (t2 - t0)) / 32;
		c1 = max_over_ranks(comm, c1 > 1e-9 ? c1 : 1e-9);
		t0 = max_over_ranks(comm, t2 - t0) - 2 * c1;
		work = (int)((o->ratio * t1 - t0) / c1 + 0.5);
		work = (int)max_over_ranks(comm, work < 1 ? 1 : work);

		if (HcclTaskInit(comm, &ctx))
			return 1;
		for (int it = 0; it < o->iters; it++) {
			/* blocking: compute everything, one collective */
			HcclBarrier(comm, NULL);
			t0 = now_ms();
			compute(in, 0, n, rank, work);
			t1 = now_ms();
			if (blocking_coll(o, comm, in, out, n))
				return 1;
			t2 = now_ms();
			comp[it] = max_over_ranks(comm, t1 - t0);
			coll[it] = max_over_ranks(comm, t2 - t1);
			blk[it] = max_over_ranks(comm, t2 - t0);
			memcpy(ref, out, bytes);
			memset(out, 0, bytes);
			memset(in, 0, bytes);
			/* pipelined: compute a slice, commit it */
			HcclBarrier(comm, NULL);
			t0 = now_ms();
			if (pipelined(o, ctx, rank, in, out, n, work))
				return 1;
			pip[it] = max_over_ranks(comm, now_ms() - t0);
			if (memcmp(ref, out, bytes))
				sh->rows[r].wrong++;
		}
		if (HcclTaskFinalize(ctx, true) || HcclTaskDestroy(ctx))
			return 1;
		if (rank == 0) {
			struct row *w = &sh->rows[r];

			w->bytes = bytes;
			w->work = work;
			w->comp_ms = median(comp, o->iters);
			w->coll_ms = median(coll, o->iters);
			w->block_ms = median(blk, o->iters);
			w->pipe_ms = median(pip, o->iters);
			sh->nrows = r + 1;
		}
		free(in);
		free(out);
		free(ref);
	}
	HcclCommDestroy(comm);
	aclFinalize();
	return 0;
}

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'G':
	case 'g':
		v *= 1024;
		/* fall through */
	case 'M':
	case 'm':
		v *= 1024;
		/* fall through */
	case 'K':
	case 'k':
		v *= 1024;
		break;
	case '\0':
		break;
	default:
		fprintf(stderr, "bad size '%s' (use e.g. 1M, 64M)\n", s);
		exit(2);
	}
	return (size_t)v;
}

int main(int argc, char **argv)
{
	struct opts o = {.nranks = 2,
			 .slices = 8,
			 .iters = 5,
			 .min = 1 << 20,
			 .max = 64 << 20,
			 .ratio = 1.0};
	struct shared *sh;
	pid_t pids[64];
	int c, failed = 0;

	while ((c = getopt(argc, argv, "n:b:e:s:i:r:o:h")) != -1) {
		switch (c) {
		case 'n':
			o.nranks = atoi(optarg);
			break;
		case 'b':
			o.min = parse_size(optarg);
			break;
		case 'e':
			o.max = parse_size(optarg);
			break;
		case 's':
			o.slices = atoi(optarg);
			break;
		case 'i':
			o.iters = atoi(optarg);
			break;
		case 'r':
			o.ratio = atof(optarg);
			break;
		case 'o':
			o.alltoall = !strcmp(optarg, "alltoall");
			if (!o.alltoall && strcmp(optarg, "allreduce")) {
				fprintf(stderr, "-o: allreduce or alltoall\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr,
				"usage: %s [-n RANKS] [-b MIN] [-e MAX] [-s "
				"SLICES] [-i ITERS] [-r RATIO] [-o "
				"allreduce|alltoall]\n",
				argv[0]);
			return 2;
		}
	}
	if (o.nranks < 1 || o.nranks > 64 || o.slices < 1 || o.slices > 255 ||
	    o.iters < 1 || o.iters > MAX_ITERS || o.ratio <= 0 || !o.min ||
	    o.min > o.max ||
	    o.min % (sizeof(float) * (size_t)o.slices * (size_t)o.nranks)) {
		fprintf(stderr,
			"bad options: 1-64 ranks, 1-255 slices, 1-%d "
			"iterations, sizes multiples of 4 x slices x "
			"ranks bytes\n",
			MAX_ITERS);
		return 2;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	memset(sh, 0, sizeof(*sh));
	fflush(NULL);
	for (int r = 0; r < o.nranks; r++) {
		pids[r] = fork();
		if (pids[r] == 0)
			_exit(rank_main(r, &o, sh));
	}
	for (int r = 0; r < o.nranks; r++) {
		int st;

		while (waitpid(pids[r], &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			failed++;
	}
	printf("%s, %d ranks, %d slices, compute:collective %.2g, median of "
	       "%d\n\n",
	       o.alltoall ? "AlltoAll" : "AllReduce", o.nranks, o.slices,
	       o.ratio, o.iters);
	printf("| bytes | work/elem | compute ms | collective ms | blocking ms "
	       "| pipelined ms | speedup |\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int r = 0; r < sh->nrows; r++) {
		const struct row *w = &sh->rows[r];

		printf("| %zu%s | %d | %.2f | %.2f | %.2f | %.2f | %.2fx |%s\n",
		       w->bytes >= (1 << 20) ? w->bytes >> 20 : w->bytes >> 10,
		       w->bytes >= (1 << 20) ? " MiB" : " KiB", w->work,
		       w->comp_ms, w->coll_ms, w->block_ms, w->pipe_ms,
		       w->block_ms / w->pipe_ms,
		       w->wrong ? " WRONG RESULTS" : "");
	}
	if (failed)
		fprintf(stderr, "%d ranks failed\n", failed);
	return failed != 0;
}
