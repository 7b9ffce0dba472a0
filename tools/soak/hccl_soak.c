/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hccl_soak: randomized mixed collectives on several communicators for a
 * given time, every result checked, while the caller injects faults.
 *
 * Every rank draws the same sequence of operations from the seed: which
 * communicator (the world, a sub-communicator of the lower or the upper
 * half of the ranks, a sub-communicator of every rank in reverse order),
 * which collective (AllReduce, Broadcast, Reduce, AllGather,
 * ReduceScatter, AlltoAll, a Send/Recv ring, Barrier), data type, count
 * and root; inputs are functions of (seed, operation, rank), so each rank
 * computes the exact expected output and compares it. Every 16 operations
 * the world agrees whether time is up. A watchdog ends a rank that makes
 * no progress for longer than the exec timeout allows: a hang is a bug.
 *
 * Exit status (each rank's, and the launcher's: the worst):
 *   0 every operation ran and was right;
 *   3 a failure ended the run cleanly: an operation returned an error
 *     (a peer died, a link stayed down); what and after how long is in
 *     the report;
 *   1 a wrong result (or a tool error);
 *   2 a hang (the watchdog fired).
 * One JSON line per rank at the end: ops, bytes, seconds, outcome, the
 * first error, how long after the last good operation it came and when
 * (wall clock, for the time from an injected fault).
 *
 *   hccl_soak -np 4 -t 60                    4 local ranks (root info)
 *   hccl_soak --rank-table T --ranks 2,3 -t 60   ranks 2 and 3 of table T
 *
 * Options: -t seconds (10), -s seed (time), -c max count (65536), -v.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#define MAX_RANKS 64
#define NCOMMS 4 /* world, lower half, upper half, reversed */

enum outcome {
	OUT_OK = 0,
	OUT_WRONG = 1,
	OUT_HANG = 2,
	OUT_FAILED = 3,
};

enum sop {
	S_ALLREDUCE,
	S_BROADCAST,
	S_REDUCE,
	S_ALLGATHER,
	S_REDUCE_SCATTER,
	S_ALLTOALL,
	S_RING,
	S_BARRIER,
	S_COUNT
};

static const char *const sop_names[S_COUNT] = {
	"allreduce",	  "broadcast", "reduce",	"allgather",
	"reduce_scatter", "alltoall",  "sendrecv_ring", "barrier",
};

struct opts {
	int np;
	double seconds;
	uint64_t seed;
	uint64_t max_count;
	const char *table;
	int ranks[MAX_RANKS];
	int nlocal;
	int verbose;
};

static struct opts o = {.seconds = 10, .max_count = 65536};

/* Shared with the launcher (MAP_SHARED before fork). */
struct shared {
	HcclRootInfo root;
	volatile int root_ready;
	double last_progress[MAX_RANKS]; /* watchdog */
};

static struct shared *sh;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* splitmix64: the same numbers on every rank for the same input. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct sop_case {
	int comm; /* index into the rank's communicators */
	enum sop op;
	int fp; /* float (1) or int32 (0) */
	HcclReduceOp redop;
	uint64_t count;
	uint32_t root;
};

static struct sop_case draw(uint64_t seed, uint64_t i)
{
	uint64_t r = mix(seed ^ mix(i));
	struct sop_case c;
	/* mostly small, sometimes large: the paths differ by size */
	uint64_t big = (r >> 40) % 8 == 0;
	uint64_t max =
		big ? o.max_count : (o.max_count < 256 ? o.max_count : 256);

	c.comm = (int)(r % NCOMMS);
	c.op = (enum sop)((r >> 8) % S_COUNT);
	c.fp = (int)((r >> 16) & 1);
	c.redop =
		c.fp ? ((r >> 17) % 3 == 0 ? HCCL_REDUCE_MAX : HCCL_REDUCE_SUM)
		     : (HcclReduceOp)((r >> 17) % 4 == 1 ? HCCL_REDUCE_SUM
							 : (r >> 17) % 4);
	if (c.redop == HCCL_REDUCE_PROD)
		c.redop = HCCL_REDUCE_SUM; /* products overflow: not exact */
	c.count = 1 + (r >> 24) % max;
	c.root = (uint32_t)(r >> 48);
	return c;
}

/* Input element k of group rank g for operation i: small integers, exact
 * in fp32 for sums over up to 64 ranks. */
static int32_t val(uint64_t i, uint32_t g, uint64_t k)
{
	return (int32_t)(mix(i * 131 + g * 7 + k) % 1001) - 500;
}

static int32_t reduce2(HcclReduceOp op, int32_t a, int32_t b)
{
	switch (op) {
	case HCCL_REDUCE_MAX:
		return a > b ? a : b;
	case HCCL_REDUCE_MIN:
		return a < b ? a : b;
	default:
		return a + b;
	}
}

static int32_t reduced(HcclReduceOp op, uint64_t i, uint32_t n, uint64_t k)
{
	int32_t acc = val(i, 0, k);

	for (uint32_t g = 1; g < n; g++)
		acc = reduce2(op, acc, val(i, g, k));
	return acc;
}

struct rank_state {
	int rank, nranks;
	HcclComm comms[NCOMMS];
	uint32_t grank[NCOMMS], gsize[NCOMMS];
	aclrtStream stream;
	void *a, *b; /* buffers of max_count * nranks elements */
	uint64_t ops, bytes;
	double t0, last_ok;
	HcclResult first_err;
	uint64_t err_op;
	double err_after; /* since the last good operation */
	double err_at;	  /* wall clock (epoch seconds) of the error */
};

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void put(void *buf, int fp, uint64_t k, int32_t v)
{
	if (fp)
		((float *)buf)[k] = (float)v;
	else
		((int32_t *)buf)[k] = v;
}

static int32_t get(const void *buf, int fp, uint64_t k)
{
	return fp ? (int32_t)((const float *)buf)[k]
		  : ((const int32_t *)buf)[k];
}

static int wrong(struct rank_state *s, uint64_t i, const struct sop_case *c,
		 uint64_t k, int32_t got, int32_t want)
{
	fprintf(stderr,
		"hccl_soak: rank %d: WRONG RESULT: op %" PRIu64
		" %s on comm %d (%s, count %" PRIu64
		", root %u): element %" PRIu64
		" is %d, expected %d (seed %" PRIu64 ")\n",
		s->rank, i, sop_names[c->op], c->comm, c->fp ? "fp32" : "int32",
		c->count, c->root, k, got, want, o.seed);
	return OUT_WRONG;
}

/* Run operation i on its communicator and check the result. Returns an
 * outcome; on OUT_FAILED s->first_err says why. */
static int run_one(struct rank_state *s, uint64_t i)
{
	struct sop_case c = draw(o.seed, i);
	HcclComm comm = s->comms[c.comm];
	uint32_t g, n;
	HcclDataType dt;
	HcclResult r = HCCL_SUCCESS;
	uint64_t cnt = c.count;

	if (!comm) /* not a member of this sub-communicator: skip */
		return OUT_OK;
	g = s->grank[c.comm];
	n = s->gsize[c.comm];
	c.root %= n;
	dt = c.fp ? HCCL_DATA_TYPE_FP32 : HCCL_DATA_TYPE_INT32;
	switch (c.op) {
	case S_ALLREDUCE:
	case S_REDUCE:
		for (uint64_t k = 0; k < cnt; k++)
			put(s->a, c.fp, k, val(i, g, k));
		r = c.op == S_ALLREDUCE
			    ? HcclAllReduce(s->a, s->b, cnt, dt, c.redop, comm,
					    s->stream)
			    : HcclReduce(s->a, s->b, cnt, dt, c.redop, c.root,
					 comm, s->stream);
		break;
	case S_BROADCAST:
		for (uint64_t k = 0; k < cnt; k++)
			put(s->a, c.fp, k, g == c.root ? val(i, g, k) : 0);
		r = HcclBroadcast(s->a, cnt, dt, c.root, comm, s->stream);
		break;
	case S_ALLGATHER:
		for (uint64_t k = 0; k < cnt; k++)
			put(s->a, c.fp, k, val(i, g, k));
		r = HcclAllGather(s->a, s->b, cnt, dt, comm, s->stream);
		break;
	case S_REDUCE_SCATTER:
		for (uint64_t k = 0; k < cnt * n; k++)
			put(s->a, c.fp, k, val(i, g, k));
		r = HcclReduceScatter(s->a, s->b, cnt, dt, c.redop, comm,
				      s->stream);
		break;
	case S_ALLTOALL:
		for (uint64_t k = 0; k < cnt * n; k++)
			put(s->a, c.fp, k, val(i, g, k));
		r = HcclAlltoAll(s->a, cnt, dt, s->b, cnt, dt, comm, s->stream);
		break;
	case S_RING:
		for (uint64_t k = 0; k < cnt; k++)
			put(s->a, c.fp, k, val(i, g, k));
		if (n < 2)
			break;
		HcclGroupStart();
		HcclSend(s->a, cnt, dt, (g + 1) % n, comm, s->stream);
		HcclRecv(s->b, cnt, dt, (g + n - 1) % n, comm, s->stream);
		r = HcclGroupEnd();
		break;
	case S_BARRIER:
		r = HcclBarrier(comm, s->stream);
		break;
	default:
		break;
	}
	if (r == HCCL_SUCCESS) {
		aclError e = aclrtSynchronizeStream(s->stream);

		if (e != ACL_SUCCESS)
			HcclGetCommAsyncError(comm, &r);
		if (e != ACL_SUCCESS && r == HCCL_SUCCESS)
			r = HCCL_E_INTERNAL;
	}
	if (r != HCCL_SUCCESS) {
		s->first_err = r;
		s->err_op = i;
		s->err_after = now_s() - s->last_ok;
		s->err_at = wall_s();
		return OUT_FAILED;
	}
	/* check */
	switch (c.op) {
	case S_ALLREDUCE:
		for (uint64_t k = 0; k < cnt; k++)
			if (get(s->b, c.fp, k) != reduced(c.redop, i, n, k))
				return wrong(s, i, &c, k, get(s->b, c.fp, k),
					     reduced(c.redop, i, n, k));
		break;
	case S_REDUCE:
		for (uint64_t k = 0; g == c.root && k < cnt; k++)
			if (get(s->b, c.fp, k) != reduced(c.redop, i, n, k))
				return wrong(s, i, &c, k, get(s->b, c.fp, k),
					     reduced(c.redop, i, n, k));
		break;
	case S_BROADCAST:
		for (uint64_t k = 0; k < cnt; k++)
			if (get(s->a, c.fp, k) != val(i, c.root, k))
				return wrong(s, i, &c, k, get(s->a, c.fp, k),
					     val(i, c.root, k));
		break;
	case S_ALLGATHER:
		for (uint32_t q = 0; q < n; q++)
			for (uint64_t k = 0; k < cnt; k++)
				if (get(s->b, c.fp, q * cnt + k) !=
				    val(i, q, k))
					return wrong(
						s, i, &c, q * cnt + k,
						get(s->b, c.fp, q * cnt + k),
						val(i, q, k));
		break;
	case S_REDUCE_SCATTER:
		for (uint64_t k = 0; k < cnt; k++) {
			int32_t want = val(i, 0, g * cnt + k);

			for (uint32_t q = 1; q < n; q++)
				want = reduce2(c.redop, want,
					       val(i, q, g * cnt + k));
			if (get(s->b, c.fp, k) != want)
				return wrong(s, i, &c, k, get(s->b, c.fp, k),
					     want);
		}
		break;
	case S_ALLTOALL:
		for (uint32_t q = 0; q < n; q++)
			for (uint64_t k = 0; k < cnt; k++)
				if (get(s->b, c.fp, q * cnt + k) !=
				    val(i, q, g * cnt + k))
					return wrong(
						s, i, &c, q * cnt + k,
						get(s->b, c.fp, q * cnt + k),
						val(i, q, g * cnt + k));
		break;
	case S_RING:
		for (uint64_t k = 0; n > 1 && k < cnt; k++)
			if (get(s->b, c.fp, k) != val(i, (g + n - 1) % n, k))
				return wrong(s, i, &c, k, get(s->b, c.fp, k),
					     val(i, (g + n - 1) % n, k));
		break;
	default:
		break;
	}
	if (s->ops++ == 0) { /* for a harness that waits to inject */
		fprintf(stderr, "hccl_soak: rank %d running\n", s->rank);
		fflush(stderr);
	}
	s->bytes += cnt * 4;
	s->last_ok = now_s();
	sh->last_progress[s->rank] = s->last_ok;
	if (o.verbose)
		fprintf(stderr, "hccl_soak: rank %d: op %" PRIu64 " %s ok\n",
			s->rank, i, sop_names[c.op]);
	return OUT_OK;
}

/* Watchdog: no progress for this long is a hang. */
static double hang_after_s(void)
{
	const char *t = getenv("HCCL_EXEC_TIMEOUT");
	double exec = t && *t ? atof(t) : 1836;

	return (exec > 0 ? exec : 1836) + 30;
}

static void *watchdog(void *arg)
{
	struct rank_state *s = arg;
	double limit = hang_after_s();

	for (;;) {
		sleep(1);
		if (now_s() - sh->last_progress[s->rank] > limit) {
			fprintf(stderr,
				"hccl_soak: rank %d: HANG: no operation ended "
				"for %.0f s (op %" PRIu64 ")\n",
				s->rank, limit, s->ops);
			fflush(stderr);
			_exit(OUT_HANG);
		}
	}
	return NULL;
}

static int make_comms(struct rank_state *s)
{
	static const char *const names[NCOMMS] = {"", "soak_low", "soak_high",
						  "soak_rev"};
	uint32_t n = (uint32_t)s->nranks, half = n / 2 ? n / 2 : 1;
	uint32_t ids[MAX_RANKS];

	for (int c = 1; c < NCOMMS; c++) {
		HcclCommConfig cfg;
		uint32_t num = 0, me = 0xFFFFFFFFu;

		HcclCommConfigInit(&cfg);
		snprintf(cfg.hcclCommName, sizeof(cfg.hcclCommName), "%s",
			 names[c]);
		for (uint32_t r = 0; r < n; r++) {
			uint32_t w = c == 3 ? n - 1 - r : r;

			if ((c == 1 && w >= half) || (c == 2 && w < half))
				continue;
			if (w == (uint32_t)s->rank)
				me = num;
			ids[num++] = w;
		}
		/* list order must be ascending world ranks for HCCL: the
		 * reversed one is a full copy in ascending order then */
		if (c == 3)
			for (uint32_t r = 0; r < n; r++)
				ids[r] = r;
		if (c == 3)
			me = (uint32_t)s->rank;
		if (num == 0 || (c == 2 && n < 2))
			continue;
		if (HcclCreateSubCommConfig(&s->comms[0], num,
					    me == 0xFFFFFFFFu ? NULL : ids,
					    (uint64_t)c, me, &cfg,
					    &s->comms[c]) != HCCL_SUCCESS) {
			fprintf(stderr,
				"hccl_soak: rank %d: sub-communicator %s "
				"failed\n",
				s->rank, names[c]);
			return 1;
		}
		if (s->comms[c]) {
			HcclGetRankId(s->comms[c], &s->grank[c]);
			HcclGetRankSize(s->comms[c], &s->gsize[c]);
		}
	}
	return 0;
}

static int rank_main(int rank, int nranks)
{
	struct rank_state s = {.rank = rank, .nranks = nranks};
	size_t bytes = (size_t)o.max_count * (size_t)nranks * 4;
	int outcome = OUT_OK, stop = 0;
	pthread_t wd;
	HcclResult r;

	aclError e = aclInit(NULL);

	if ((e != ACL_SUCCESS && e != ACL_ERROR_REPEAT_INITIALIZE) ||
	    aclrtSetDevice(rank % 16) || aclrtCreateStream(&s.stream)) {
		fprintf(stderr, "hccl_soak: rank %d: runtime setup failed\n",
			rank);
		return OUT_WRONG;
	}
	s.a = malloc(bytes);
	s.b = malloc(bytes);
	if (!s.a || !s.b)
		return OUT_WRONG;
	r = o.table ? HcclCommInitClusterInfo(o.table, (uint32_t)rank,
					      &s.comms[0])
		    : HcclCommInitRootInfo((uint32_t)nranks, &sh->root,
					   (uint32_t)rank, &s.comms[0]);
	if (r != HCCL_SUCCESS) {
		fprintf(stderr, "hccl_soak: rank %d: init failed: %s\n", rank,
			HcclGetErrorString(r));
		return OUT_FAILED;
	}
	s.gsize[0] = (uint32_t)nranks;
	s.grank[0] = (uint32_t)rank;
	if (make_comms(&s))
		return OUT_FAILED;
	s.t0 = s.last_ok = now_s();
	sh->last_progress[rank] = s.t0;
	pthread_create(&wd, NULL, watchdog, &s);
	pthread_detach(wd);
	for (uint64_t i = 0; !stop; i++) {
		outcome = run_one(&s, i);
		if (outcome != OUT_OK)
			break;
		if (i % 16 == 15) { /* does everyone go on? */
			int32_t go = now_s() - s.t0 < o.seconds, all = 0;

			r = HcclAllReduce(&go, &all, 1, HCCL_DATA_TYPE_INT32,
					  HCCL_REDUCE_MIN, s.comms[0], NULL);
			if (r != HCCL_SUCCESS) {
				s.first_err = r;
				s.err_op = i;
				s.err_after = now_s() - s.last_ok;
				s.err_at = wall_s();
				outcome = OUT_FAILED;
				break;
			}
			stop = !all;
		}
	}
	printf("{\"rank\": %d, \"ops\": %" PRIu64 ", \"bytes\": %" PRIu64
	       ", \"seconds\": %.2f, \"outcome\": \"%s\", \"error\": \"%s\", "
	       "\"error_op\": %" PRIu64 ", \"error_after_s\": %.3f, "
	       "\"error_at\": %.3f, \"seed\": %" PRIu64 "}\n",
	       rank, s.ops, s.bytes, now_s() - s.t0,
	       outcome == OUT_OK       ? "ok"
	       : outcome == OUT_WRONG  ? "wrong"
	       : outcome == OUT_FAILED ? "failed"
				       : "hang",
	       outcome == OUT_FAILED ? HcclGetErrorString(s.first_err) : "",
	       s.err_op, s.err_after, s.err_at, o.seed);
	fflush(stdout);
	for (int c = NCOMMS; c-- > 0;)
		if (s.comms[c])
			HcclCommDestroy(s.comms[c]);
	aclrtDestroyStream(s.stream);
	free(s.a);
	free(s.b);
	return outcome;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: hccl_soak -np N [-t SECONDS] [-s SEED] [-c MAXCOUNT] "
		"[-v]\n"
		"       hccl_soak --rank-table FILE --ranks R[,R...] "
		"--nranks N [-t ...]\n");
	exit(OUT_WRONG);
}

static long num(const char *opt, const char *v, long lo, long hi)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v ? v : "", &end, 10);
	if (!v || errno || *end || end == v || x < lo || x > hi) {
		fprintf(stderr,
			"hccl_soak: %s '%s' is not a number in "
			"[%ld, %ld]\n",
			opt, v ? v : "", lo, hi);
		exit(OUT_WRONG);
	}
	return x;
}

int main(int argc, char **argv)
{
	pid_t pids[MAX_RANKS];
	int worst = OUT_OK, nranks = 0;

	o.seed = (uint64_t)time(NULL);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-np"))
			o.np = (int)num(a, v, 1, MAX_RANKS), i++;
		else if (!strcmp(a, "-t"))
			o.seconds = (double)num(a, v, 1, 1000000), i++;
		else if (!strcmp(a, "-s"))
			o.seed = (uint64_t)num(a, v, 0, 0x7fffffffffffffffl),
			i++;
		else if (!strcmp(a, "-c"))
			o.max_count = (uint64_t)num(a, v, 1, 1 << 24), i++;
		else if (!strcmp(a, "--rank-table") && v)
			o.table = v, i++;
		else if (!strcmp(a, "--nranks"))
			nranks = (int)num(a, v, 1, MAX_RANKS), i++;
		else if (!strcmp(a, "--ranks") && v) {
			char *dup = strdup(v), *tok, *save = NULL;

			for (tok = strtok_r(dup, ",", &save);
			     tok && o.nlocal < MAX_RANKS;
			     tok = strtok_r(NULL, ",", &save))
				o.ranks[o.nlocal++] = (int)num(
					"--ranks", tok, 0, MAX_RANKS - 1);
			free(dup);
			i++;
		} else if (!strcmp(a, "-v"))
			o.verbose = 1;
		else
			usage();
	}
	if (o.table) {
		if (!o.nlocal || !nranks)
			usage();
	} else {
		if (!o.np)
			usage();
		nranks = o.np;
		o.nlocal = o.np;
		for (int r = 0; r < o.np; r++)
			o.ranks[r] = r;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return OUT_WRONG;
	fprintf(stderr,
		"hccl_soak: %d of %d ranks here, %.0f s, seed %" PRIu64 "\n",
		o.nlocal, nranks, o.seconds, o.seed);
	for (int k = 0; k < o.nlocal; k++) {
		pids[k] = fork();
		if (pids[k] == 0) {
			int rank = o.ranks[k];

			if (!o.table && rank == 0) {
				if (HcclGetRootInfo(&sh->root) != HCCL_SUCCESS)
					_exit(OUT_WRONG);
				__atomic_store_n(&sh->root_ready, 1,
						 __ATOMIC_RELEASE);
			} else if (!o.table) {
				while (!__atomic_load_n(&sh->root_ready,
							__ATOMIC_ACQUIRE))
					usleep(1000);
			}
			_exit(rank_main(rank, nranks));
		}
	}
	for (int k = 0; k < o.nlocal; k++) {
		int st, rc;

		if (waitpid(pids[k], &st, 0) != pids[k])
			continue;
		rc = WIFEXITED(st) ? WEXITSTATUS(st) : OUT_FAILED;
		if (!WIFEXITED(st))
			fprintf(stderr,
				"hccl_soak: rank %d ended by signal %d\n",
				o.ranks[k], WTERMSIG(st));
		/* worst first: wrong, hang, failed, ok */
		if (rc == OUT_WRONG || (rc == OUT_HANG && worst != OUT_WRONG) ||
		    (rc == OUT_FAILED && worst == OUT_OK))
			worst = rc;
	}
	return worst;
}
