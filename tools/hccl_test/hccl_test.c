/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include <getopt.h>
#include <sched.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hccl_test.h"

#ifdef OHC_HT_MPI
#include <mpi.h>
#endif

static const struct {
	const char *name;
	HcclDataType t;
} dtypes[] = {
	{"int8", HCCL_DATA_TYPE_INT8},	   {"int16", HCCL_DATA_TYPE_INT16},
	{"int32", HCCL_DATA_TYPE_INT32},   {"fp16", HCCL_DATA_TYPE_FP16},
	{"fp32", HCCL_DATA_TYPE_FP32},	   {"int64", HCCL_DATA_TYPE_INT64},
	{"uint64", HCCL_DATA_TYPE_UINT64}, {"uint8", HCCL_DATA_TYPE_UINT8},
	{"uint16", HCCL_DATA_TYPE_UINT16}, {"uint32", HCCL_DATA_TYPE_UINT32},
	{"fp64", HCCL_DATA_TYPE_FP64},	   {"bfp16", HCCL_DATA_TYPE_BFP16},
};

size_t ht_dtype_size(HcclDataType t)
{
	switch (t) {
	case HCCL_DATA_TYPE_INT8:
	case HCCL_DATA_TYPE_UINT8:
		return 1;
	case HCCL_DATA_TYPE_INT16:
	case HCCL_DATA_TYPE_UINT16:
	case HCCL_DATA_TYPE_FP16:
	case HCCL_DATA_TYPE_BFP16:
		return 2;
	case HCCL_DATA_TYPE_INT32:
	case HCCL_DATA_TYPE_UINT32:
	case HCCL_DATA_TYPE_FP32:
		return 4;
	default:
		return 8;
	}
}

static uint16_t fp16_from(double v)
{
	float f = (float)v;
	uint32_t u, man;
	int e;

	memcpy(&u, &f, 4);
	e = (int)((u >> 23) & 0xff) - 127 + 15;
	man = u & 0x7fffff;
	if (f == 0)
		return (uint16_t)((u >> 16) & 0x8000);
	if (e >= 31)
		return (uint16_t)(((u >> 16) & 0x8000) | 0x7c00);
	if (e <= 0)
		return (uint16_t)((u >> 16) & 0x8000);
	return (uint16_t)(((u >> 16) & 0x8000) | (e << 10) | (man >> 13));
}

static double fp16_to(uint16_t h)
{
	int e = (h >> 10) & 0x1f;
	double m = (h & 0x3ff) / 1024.0;
	double v = e ? ldexp(1.0 + m, e - 15) : ldexp(m, -14);

	return (h & 0x8000) ? -v : v;
}

void ht_store(void *buf, HcclDataType t, uint64_t i, double v)
{
	float f = (float)v;
	uint32_t u;

	switch (t) {
	case HCCL_DATA_TYPE_INT8:
		((int8_t *)buf)[i] = (int8_t)v;
		break;
	case HCCL_DATA_TYPE_UINT8:
		((uint8_t *)buf)[i] = (uint8_t)v;
		break;
	case HCCL_DATA_TYPE_INT16:
		((int16_t *)buf)[i] = (int16_t)v;
		break;
	case HCCL_DATA_TYPE_UINT16:
		((uint16_t *)buf)[i] = (uint16_t)v;
		break;
	case HCCL_DATA_TYPE_INT32:
		((int32_t *)buf)[i] = (int32_t)v;
		break;
	case HCCL_DATA_TYPE_UINT32:
		((uint32_t *)buf)[i] = (uint32_t)v;
		break;
	case HCCL_DATA_TYPE_INT64:
		((int64_t *)buf)[i] = (int64_t)v;
		break;
	case HCCL_DATA_TYPE_UINT64:
		((uint64_t *)buf)[i] = (uint64_t)v;
		break;
	case HCCL_DATA_TYPE_FP32:
		((float *)buf)[i] = f;
		break;
	case HCCL_DATA_TYPE_FP64:
		((double *)buf)[i] = v;
		break;
	case HCCL_DATA_TYPE_FP16:
		((uint16_t *)buf)[i] = fp16_from(v);
		break;
	case HCCL_DATA_TYPE_BFP16:
		memcpy(&u, &f, 4);
		((uint16_t *)buf)[i] = (uint16_t)(u >> 16);
		break;
	default:
		break;
	}
}

double ht_load(const void *buf, HcclDataType t, uint64_t i)
{
	uint32_t u;
	float f;

	switch (t) {
	case HCCL_DATA_TYPE_INT8:
		return ((const int8_t *)buf)[i];
	case HCCL_DATA_TYPE_UINT8:
		return ((const uint8_t *)buf)[i];
	case HCCL_DATA_TYPE_INT16:
		return ((const int16_t *)buf)[i];
	case HCCL_DATA_TYPE_UINT16:
		return ((const uint16_t *)buf)[i];
	case HCCL_DATA_TYPE_INT32:
		return ((const int32_t *)buf)[i];
	case HCCL_DATA_TYPE_UINT32:
		return ((const uint32_t *)buf)[i];
	case HCCL_DATA_TYPE_INT64:
		return (double)((const int64_t *)buf)[i];
	case HCCL_DATA_TYPE_UINT64:
		return (double)((const uint64_t *)buf)[i];
	case HCCL_DATA_TYPE_FP32:
		return ((const float *)buf)[i];
	case HCCL_DATA_TYPE_FP64:
		return ((const double *)buf)[i];
	case HCCL_DATA_TYPE_FP16:
		return fp16_to(((const uint16_t *)buf)[i]);
	case HCCL_DATA_TYPE_BFP16:
		u = (uint32_t)((const uint16_t *)buf)[i] << 16;
		memcpy(&f, &u, 4);
		return f;
	default:
		return 0;
	}
}

double ht_pattern(int src, uint64_t i)
{
	return (double)(((uint64_t)src * 37 + i) % 97 + 1);
}

static double input_own(const struct ht_ctx *c, uint64_t i)
{
	return ht_pattern(c->rank, i);
}

double ht_input_root(const struct ht_ctx *c, uint64_t i)
{
	return c->rank == (int)c->o->root ? ht_pattern(c->rank, i) : 0;
}

double ht_expect_reduced(const struct ht_ctx *c, uint64_t i)
{
	(void)i;
	switch (c->o->op) {
	case HCCL_REDUCE_SUM:
		return 2.0 * c->nranks;
	case HCCL_REDUCE_PROD:
		return ldexp(1.0, c->nranks);
	default:
		return 2.0;
	}
}

static double expect_gathered(const struct ht_ctx *c, uint64_t i)
{
	return ht_pattern((int)(i / c->block), i % c->block);
}

static double expect_exchanged(const struct ht_ctx *c, uint64_t i)
{
	return ht_pattern((int)(i / c->block),
			  (uint64_t)c->rank * c->block + i % c->block);
}

void ht_uniform_v(struct ht_ctx *c)
{
	for (int j = 0; j < c->nranks; j++) {
		c->counts[j] = c->block;
		c->displs[j] = (uint64_t)j * c->block;
	}
}

/* Whether v is exact in type t (else the tool cannot check, as hccl_test) */
static int representable(HcclDataType t, double v)
{
	double lim;

	switch (t) {
	case HCCL_DATA_TYPE_INT8:
		lim = 127;
		break;
	case HCCL_DATA_TYPE_UINT8:
		lim = 255;
		break;
	case HCCL_DATA_TYPE_INT16:
		lim = 32767;
		break;
	case HCCL_DATA_TYPE_UINT16:
		lim = 65535;
		break;
	case HCCL_DATA_TYPE_INT32:
		lim = 2147483647.0;
		break;
	case HCCL_DATA_TYPE_UINT32:
		lim = 4294967295.0;
		break;
	case HCCL_DATA_TYPE_FP16:
		lim = 2048;
		break;
	case HCCL_DATA_TYPE_BFP16:
		lim = 256;
		break;
	case HCCL_DATA_TYPE_FP32:
		lim = 16777216.0;
		break;
	default:
		lim = 9007199254740992.0;
		break;
	}
	return v <= lim && v == floor(v);
}

static uint64_t parse_bytes(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024;
		break;
	case 'm':
	case 'M':
		v *= 1024 * 1024;
		break;
	case 'g':
	case 'G':
		v *= 1024.0 * 1024 * 1024;
		break;
	default:
		break;
	}
	return (uint64_t)v;
}

static void usage(const char *prog)
{
	printf("usage: %s [-np N] [options]   (or under mpirun)\n"
	       "  -np N             run N local ranks (built-in launcher)\n"
	       "  -b, --minbytes    start size, K/M/G suffixes (64M)\n"
	       "  -e, --maxbytes    end size (64M)\n"
	       "  -i, --stepbytes   additive step ((max-min)/10)\n"
	       "  -f, --stepfactor  multiplicative step, wins over -i\n"
	       "  -o, --op          sum/prod/max/min (sum)\n"
	       "  -r, --root        root rank (0)\n"
	       "  -d, --datatype    int8,int16,int32,fp16,fp32,int64,uint64,"
	       "uint8,uint16,uint32,fp64,bfp16 (fp32)\n"
	       "  -n, --iters       timed iterations (20)\n"
	       "  -w, --warmup_iters  warm-up iterations (10)\n"
	       "  -c, --check       0 off, 1 check, 2 verbose (1)\n"
	       "  -p, --npus        devices per node\n"
	       "  -z, --zero_copy   1: buffers in VMM memory activated for "
	       "zero copy\n"
	       "                    (AllReduce, AllGather, ReduceScatter, "
	       "Broadcast) (0)\n"
	       "  -m, --symmetric_memory  1: buffers registered as symmetric "
	       "windows (0)\n"
	       "  --bind core|none  -np: rank r runs on the r-th CPU it may "
	       "use\n"
	       "                    when the ranks fit those CPUs, as mpirun\n"
	       "                    binds 2 ranks (core)\n"
	       "  --corrupt_rank R  testing aid: rank R flips one result byte\n"
	       "                    before checking (the check must fail)\n",
	       prog);
}

/* Take "-np N" out of argv (getopt would read it as -n p). */
static int take_np(int *argc_p, char **argv)
{
	int argc = *argc_p;

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "-np") && strcmp(argv[i], "--np"))
			continue;
		int n = atoi(argv[i + 1]);

		memmove(&argv[i], &argv[i + 2],
			(size_t)(argc - i - 2) * sizeof(char *));
		*argc_p = argc - 2;
		return n;
	}
	return 0;
}

static int parse_dtype(const char *s, HcclDataType *t_p)
{
	for (size_t k = 0; k < sizeof(dtypes) / sizeof(*dtypes); k++) {
		if (!strcasecmp(s, dtypes[k].name)) {
			*t_p = dtypes[k].t;
			return 0;
		}
	}
	fprintf(stderr, "bad -d %s\n", s);
	return -1;
}

static int parse_op(const char *s, HcclReduceOp *op_p)
{
	static const char *const names[] = {"sum", "prod", "max", "min"};
	static const HcclReduceOp ops[] = {HCCL_REDUCE_SUM, HCCL_REDUCE_PROD,
					   HCCL_REDUCE_MAX, HCCL_REDUCE_MIN};

	for (size_t k = 0; k < 4; k++) {
		if (!strcasecmp(s, names[k])) {
			*op_p = ops[k];
			return 0;
		}
	}
	fprintf(stderr, "bad -o %s\n", s);
	return -1;
}

/* 0: run, 1: done (help), -1: bad arguments */
static int parse(int argc, char **argv, struct ht_opts *o)
{
	static const struct option longs[] = {{"minbytes", 1, 0, 'b'},
					      {"maxbytes", 1, 0, 'e'},
					      {"stepbytes", 1, 0, 'i'},
					      {"stepfactor", 1, 0, 'f'},
					      {"op", 1, 0, 'o'},
					      {"root", 1, 0, 'r'},
					      {"datatype", 1, 0, 'd'},
					      {"iters", 1, 0, 'n'},
					      {"warmup_iters", 1, 0, 'w'},
					      {"check", 1, 0, 'c'},
					      {"npus", 1, 0, 'p'},
					      {"zero_copy", 1, 0, 'z'},
					      {"symmetric_memory", 1, 0, 'm'},
					      {"accelerator", 1, 0, 'a'},
					      {"nslb", 1, 0, 's'},
					      {"onlydevicetime", 1, 0, 't'},
					      {"corrupt_rank", 1, 0, 'X'},
					      {"bind", 1, 0, 'B'},
					      {"help", 0, 0, 'h'},
					      {0, 0, 0, 0}};
	int c, step_set = 0;

	*o = (struct ht_opts){.minbytes = 64u << 20,
			      .maxbytes = 64u << 20,
			      .op = HCCL_REDUCE_SUM,
			      .dtype = HCCL_DATA_TYPE_FP32,
			      .iters = 20,
			      .warmup = 10,
			      .check = 1,
			      .corrupt_rank = -1};
	o->nranks = take_np(&argc, argv);
	while ((c = getopt_long(argc, argv, "b:e:i:f:o:r:d:n:w:c:p:z:m:a:s:t:h",
				longs, NULL)) != -1) {
		switch (c) {
		case 'b':
			o->minbytes = parse_bytes(optarg);
			break;
		case 'e':
			o->maxbytes = parse_bytes(optarg);
			break;
		case 'i':
			o->stepbytes = parse_bytes(optarg);
			step_set = 1;
			break;
		case 'f':
			o->stepfactor = atof(optarg);
			break;
		case 'r':
			o->root = (uint32_t)atoi(optarg);
			break;
		case 'n':
			o->iters = atoi(optarg);
			break;
		case 'w':
			o->warmup = atoi(optarg);
			break;
		case 'c':
			o->check = atoi(optarg);
			break;
		case 'p':
			o->npus = atoi(optarg);
			break;
		case 'X':
			o->corrupt_rank = atoi(optarg);
			break;
		case 'B':
			if (strcmp(optarg, "core") && strcmp(optarg, "none")) {
				fprintf(stderr, "bad --bind %s: core or none\n",
					optarg);
				return -1;
			}
			o->no_bind = !strcmp(optarg, "none");
			break;
		case 'o':
			if (parse_op(optarg, &o->op))
				return -1;
			break;
		case 'd':
			if (parse_dtype(optarg, &o->dtype))
				return -1;
			break;
		case 'z':
		case 'm':
			if (strcmp(optarg, "0") && strcmp(optarg, "1")) {
				fprintf(stderr, "bad -%c %s: 0 or 1\n", c,
					optarg);
				return -1;
			}
			*(c == 'z' ? &o->zero_copy : &o->symmetric) =
				atoi(optarg);
			break;
		case 'a':
		case 's':
		case 't':
			break;
		case 'h':
			usage(argv[0]);
			return 1;
		default:
			usage(argv[0]);
			return -1;
		}
	}
	if (o->minbytes > o->maxbytes || o->iters < 1 || o->warmup < 0 ||
	    o->nranks < 0 || (o->stepfactor != 0 && o->stepfactor <= 1.0)) {
		fprintf(stderr, "invalid arguments: need minbytes <= maxbytes, "
				"iters >= 1, -f > 1.0, -np >= 1\n");
		return -1;
	}
	if (!step_set)
		o->stepbytes = o->maxbytes == o->minbytes
				       ? 1
				       : (o->maxbytes - o->minbytes) / 10;
	return 0;
}

static uint64_t next_size(const struct ht_opts *o, uint64_t b)
{
	if (o->stepfactor > 1.0)
		return (uint64_t)ceil((double)b * o->stepfactor);
	if (o->stepbytes == 0)
		return o->maxbytes + 1;
	return b + o->stepbytes;
}

static void size_counts(const struct ht_test *t, struct ht_ctx *c,
			uint64_t bytes)
{
	uint64_t es = ht_dtype_size(c->o->dtype), n = (uint64_t)c->nranks;
	uint64_t count = (bytes + es - 1) / es;

	switch (t->sizing) {
	case HT_SIZE_SAME:
		c->send_count = c->recv_count = c->block = count;
		break;
	case HT_SIZE_GATHER:
		c->block = c->send_count = (count + n - 1) / n;
		c->recv_count = c->block * n;
		break;
	case HT_SIZE_SCATTER:
		c->block = c->recv_count = (count + n - 1) / n;
		c->send_count = c->block * n;
		break;
	case HT_SIZE_ALLTOALL:
		c->block = (count + n - 1) / n;
		c->send_count = c->recv_count = c->block * n;
		break;
	}
}

static double busbw_factor(const struct ht_test *t, int n)
{
	if (n <= 1)
		return 1.0;
	if (t->busbw == HT_BUS_ALLREDUCE)
		return 2.0 * (n - 1) / n;
	return t->sizing == HT_SIZE_SAME ? 1.0 : (double)(n - 1) / n;
}

static double input_two(const struct ht_ctx *c, uint64_t i)
{
	(void)c;
	(void)i;
	return 2.0;
}

/* The test with its NULL hooks filled in (see hccl_test.h). */
static struct ht_test with_defaults(const struct ht_test *t)
{
	struct ht_test d = *t;

	if (!d.input)
		d.input = d.reduce ? input_two : input_own;
	if (!d.expect && d.reduce)
		d.expect = ht_expect_reduced;
	else if (!d.expect && d.sizing == HT_SIZE_GATHER)
		d.expect = expect_gathered;
	else if (!d.expect)
		d.expect = expect_exchanged;
	return d;
}

/* Elements of the result that differ from t->expect; reports a few. */
static uint64_t count_wrong(const struct ht_test *t, const struct ht_ctx *c,
			    const void *res, uint64_t n)
{
	uint64_t wrong = 0;

	for (uint64_t i = 0; i < n; i++) {
		double want = t->expect(c, i), got;

		if (isnan(want))
			continue;
		got = ht_load(res, c->o->dtype, i);
		if (got == want)
			continue;
		if (c->o->check > 1 && wrong < 8)
			printf("local rank_id %d, element %llu is %g, "
			       "expected %g\n",
			       c->rank, (unsigned long long)i, got, want);
		wrong++;
	}
	return wrong;
}

/*
 * One correctness round: fresh input, a poisoned output, one call, then the
 * result compared on every rank and the verdict agreed by all.
 * 1 all good, 0 some rank wrong, -1 error.
 */
static int check_size(const struct ht_test *t, struct ht_ctx *c, const void *in,
		      uint64_t bytes)
{
	size_t es = ht_dtype_size(c->o->dtype);
	uint64_t n = t->in_place ? c->send_count : c->recv_count;
	void *res = t->in_place ? c->send : c->recv, *host = NULL;
	int bad, all_bad = 0, ret = -1;

	if (aclrtMallocHost(&host, n * es + 1) != ACL_SUCCESS)
		return -1;
	if (c->send_count &&
	    aclrtMemcpy(c->send, c->send_count * es, in, c->send_count * es,
			ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS)
		goto free_host;
	if (!t->in_place && n &&
	    aclrtMemset(c->recv, n * es, 0xa5, n * es) != ACL_SUCCESS)
		goto free_host;
	if (t->run(c) != HCCL_SUCCESS ||
	    aclrtSynchronizeStream(c->stream) != ACL_SUCCESS)
		goto free_host;
	if (n && aclrtMemcpy(host, n * es, res, n * es,
			     ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS)
		goto free_host;
	if (c->rank == c->o->corrupt_rank && n)
		((unsigned char *)host)[n * es / 2] ^= 0x40;
	bad = count_wrong(t, c, host, n) != 0;
	if (bad) {
		printf("local rank_id %d, check result failed, data_size "
		       "%llu\n",
		       c->rank, (unsigned long long)bytes);
		fflush(stdout);
	}
	if (HcclAllReduce(&bad, &all_bad, 1, HCCL_DATA_TYPE_INT32,
			  HCCL_REDUCE_SUM, c->comm, NULL) != HCCL_SUCCESS)
		goto free_host;
	ret = all_bad ? 0 : 1;
free_host:
	aclrtFreeHost(host);
	return ret;
}

static void print_header(const struct ht_opts *o)
{
	printf("the minbytes is %llu, maxbytes is %llu, iters is %d, "
	       "warmup_iters is %d\n",
	       (unsigned long long)o->minbytes, (unsigned long long)o->maxbytes,
	       o->iters, o->warmup);
	printf("%-15s | %-12s | %-18s | %-13s | %s\n",
	       "data_size(Bytes):", "aveg_time(us):", "alg_bandwidth(GB/s):",
	       "check_result:", "bus_bandwidth(GB/s):");
	fflush(stdout);
}

/* Average microseconds of o->iters back-to-back calls (rank 0's events). */
static int time_calls(const struct ht_test *t, struct ht_ctx *c, double *us_p)
{
	aclrtEvent start, end;
	float ms = 0;
	int ret = -1;

	if (aclrtCreateEvent(&start) != ACL_SUCCESS)
		return -1;
	if (aclrtCreateEvent(&end) != ACL_SUCCESS)
		goto destroy_start;
	for (int i = 0; i < c->o->warmup; i++)
		if (t->run(c) != HCCL_SUCCESS)
			goto destroy_end;
	if (aclrtRecordEvent(start, c->stream) != ACL_SUCCESS)
		goto destroy_end;
	for (int i = 0; i < c->o->iters; i++)
		if (t->run(c) != HCCL_SUCCESS)
			goto destroy_end;
	if (aclrtRecordEvent(end, c->stream) != ACL_SUCCESS ||
	    aclrtSynchronizeStream(c->stream) != ACL_SUCCESS ||
	    aclrtEventElapsedTime(&ms, start, end) != ACL_SUCCESS)
		goto destroy_end;
	*us_p = (double)ms * 1000.0 / c->o->iters;
	ret = 0;
destroy_end:
	aclrtDestroyEvent(end);
destroy_start:
	aclrtDestroyEvent(start);
	return ret;
}

/*
 * The buffers of one size in VMM memory (-z 1, -m 1): one reserved range,
 * a mapped block per buffer (each a whole number of granules, so every
 * rank's blocks have the same size), then either the range set and the
 * blocks activated (zero copy) or each block a symmetric window.
 */
struct vmm_bufs {
	char *range;
	size_t blk;
	int nblk, nmapped, nactive, nwin, range_set;
	aclrtDrvMemHandle h[2];
	HcclCommSymWindow win[2];
};

static void vmm_free(struct ht_ctx *c, struct vmm_bufs *v)
{
	for (int k = 0; k < v->nwin; k++)
		HcclCommSymWinDeregister(v->win[k]);
	for (int k = 0; k < v->nactive; k++)
		HcclCommDeactivateCommMemory(c->comm, v->range + k * v->blk);
	if (v->range_set)
		HcclCommUnsetMemoryRange(c->comm, v->range);
	for (int k = 0; k < v->nmapped; k++) {
		aclrtUnmapMem(v->range + k * v->blk);
		aclrtFreePhysical(v->h[k]);
	}
	if (v->range)
		aclrtReleaseMemAddress(v->range);
	memset(v, 0, sizeof(*v));
}

/* c->send (and c->recv unless in place) in VMM memory; 0 or -1 */
static int vmm_alloc(const struct ht_test *t, struct ht_ctx *c,
		     struct vmm_bufs *v, size_t send_b, size_t recv_b)
{
	aclrtPhysicalMemProp prop;
	size_t g = 0, need = send_b > recv_b ? send_b : recv_b;
	HcclResult r;

	memset(&prop, 0, sizeof(prop));
	prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
	prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
	prop.memAttr = ACL_HBM_MEM_NORMAL;
	prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
	if (aclrtMemGetAllocationGranularity(
		    &prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g) ||
	    !g)
		g = 4096;
	v->blk = (need + g - 1) / g * g;
	v->nblk = t->in_place ? 1 : 2;
	if (aclrtReserveMemAddress((void **)&v->range, v->blk * v->nblk, 0,
				   NULL, 1) != ACL_SUCCESS) {
		v->range = NULL;
		fprintf(stderr,
			"%s: aclrtReserveMemAddress of %zu bytes "
			"failed\n",
			t->name, v->blk * v->nblk);
		return -1;
	}
	for (int k = 0; k < v->nblk; k++) {
		if (aclrtMallocPhysical(&v->h[k], v->blk, &prop, 0) !=
		    ACL_SUCCESS) {
			fprintf(stderr,
				"%s: aclrtMallocPhysical of %zu bytes "
				"failed\n",
				t->name, v->blk);
			return -1;
		}
		if (aclrtMapMem(v->range + k * v->blk, v->blk, 0, v->h[k], 0) !=
		    ACL_SUCCESS) {
			aclrtFreePhysical(v->h[k]);
			fprintf(stderr, "%s: aclrtMapMem failed\n", t->name);
			return -1;
		}
		v->nmapped++;
	}
	if (c->o->zero_copy) {
		r = HcclCommSetMemoryRange(c->comm, v->range, v->blk * v->nblk,
					   0, 0);
		if (r != HCCL_SUCCESS) {
			fprintf(stderr, "%s: HcclCommSetMemoryRange: %s\n",
				t->name, HcclGetErrorString(r));
			return -1;
		}
		v->range_set = 1;
	}
	for (int k = 0; k < v->nblk; k++) {
		char *va = v->range + k * v->blk;

		if (c->o->zero_copy)
			r = HcclCommActivateCommMemory(c->comm, va, v->blk, 0,
						       v->h[k], 0);
		else
			r = HcclCommSymWinRegister(c->comm, va, v->blk,
						   &v->win[k], 1);
		if (r != HCCL_SUCCESS) {
			fprintf(stderr, "%s: %s: %s\n", t->name,
				c->o->zero_copy ? "HcclCommActivateCommMemory"
						: "HcclCommSymWinRegister",
				HcclGetErrorString(r));
			return -1;
		}
		if (c->o->zero_copy)
			v->nactive++;
		else
			v->nwin++;
	}
	c->send = v->range;
	if (!t->in_place)
		c->recv = v->range + v->blk;
	return 0;
}

/* One size of the sweep: 0 done, 1 check failed, -1 error. */
static int run_size(const struct ht_test *t, struct ht_ctx *c, uint64_t bytes)
{
	const struct ht_opts *o = c->o;
	size_t es = ht_dtype_size(o->dtype);
	struct vmm_bufs vmm = {0};
	int use_vmm = o->zero_copy || o->symmetric;
	void *in = NULL;
	double us = 0, algbw, want;
	const char *verdict = "NULL";
	int ret = -1, ok = 1;

	size_counts(t, c, bytes);
	c->send = c->recv = NULL;
	if (aclrtMallocHost(&in, c->send_count * es + 1) != ACL_SUCCESS)
		return -1;
	if (use_vmm) {
		if (vmm_alloc(t, c, &vmm, c->send_count * es + 1,
			      c->recv_count * es + 1))
			goto free_recv;
	} else if (aclrtMalloc(&c->send, c->send_count * es + 1,
			       ACL_MEM_MALLOC_HUGE_ONLY) != ACL_SUCCESS) {
		goto free_in;
	} else if (!t->in_place &&
		   aclrtMalloc(&c->recv, c->recv_count * es + 1,
			       ACL_MEM_MALLOC_HUGE_ONLY) != ACL_SUCCESS) {
		goto free_send;
	}
	for (uint64_t i = 0; i < c->send_count; i++)
		ht_store(in, o->dtype, i, t->input(c, i));
	if (c->send_count &&
	    aclrtMemcpy(c->send, c->send_count * es, in, c->send_count * es,
			ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS)
		goto free_recv;
	if (time_calls(t, c, &us))
		goto free_recv;
	want = t->reduce ? ht_expect_reduced(c, 0) : 0;
	if (o->check && representable(o->dtype, want)) {
		ok = check_size(t, c, in, bytes);
		if (ok < 0)
			goto free_recv;
		verdict = ok ? "success" : "failed";
	}
	algbw = us > 0 ? (double)(es * (c->send_count > c->recv_count
						? c->send_count
						: c->recv_count)) /
				 us * 1e-3
		       : 0;
	if (c->rank == 0) {
		printf("%-17llu | %-14.2f | %-20.5f | %-13s | %.5f\n",
		       (unsigned long long)bytes, us, algbw, verdict,
		       algbw * busbw_factor(t, c->nranks));
		fflush(stdout);
	}
	ret = ok ? 0 : 1;
free_recv:
	if (use_vmm) {
		vmm_free(c, &vmm);
		goto free_in;
	}
	if (c->recv)
		aclrtFree(c->recv);
free_send:
	aclrtFree(c->send);
free_in:
	aclrtFreeHost(in);
	return ret;
}

#define CHECK_ACL(call, label)                                                 \
	do {                                                                   \
		aclError _e = (call);                                          \
		if (_e != ACL_SUCCESS) {                                       \
			fprintf(stderr, "%s failed: acl error %d\n", #call,    \
				_e);                                           \
			goto label;                                            \
		}                                                              \
	} while (0)

/* Everything one rank does; its exit status. */
static int run_rank(const struct ht_opts *o, const struct ht_test *t, int rank,
		    const HcclRootInfo *root)
{
	struct ht_ctx c = {.o = o, .rank = rank, .nranks = o->nranks};
	int dev = rank % o->npus, ret = 1;
	HcclResult r;

	c.counts = calloc((size_t)o->nranks * (size_t)o->nranks + 1,
			  sizeof(*c.counts));
	c.displs = calloc((size_t)o->nranks + 1, sizeof(*c.displs));
	if (!c.counts || !c.displs)
		goto free_scratch;
	CHECK_ACL(aclInit(NULL), free_scratch);
	CHECK_ACL(aclrtSetDevice(dev), finalize);
	CHECK_ACL(aclrtCreateStream(&c.stream), reset_device);
	r = HcclCommInitRootInfo((uint32_t)o->nranks, root, (uint32_t)rank,
				 &c.comm);
	if (r != HCCL_SUCCESS) {
		fprintf(stderr, "HcclCommInitRootInfo failed: %s (%d)\n",
			HcclGetErrorString(r), r);
		goto destroy_stream;
	}
	if (rank == 0)
		print_header(o);
	for (uint64_t b = o->minbytes; b <= o->maxbytes; b = next_size(o, b)) {
		int s = run_size(t, &c, b);

		if (s < 0)
			fprintf(stderr,
				"%s: rank %d: %s failed at %llu bytes\n",
				t->name, rank, t->name, (unsigned long long)b);
		if (s)
			goto destroy_comm;
		if (b == o->maxbytes)
			break;
	}
	/* no rank leaves while another still runs (-c 0 has no sync) */
	r = HcclBarrier(c.comm, c.stream);
	if (r == HCCL_SUCCESS &&
	    aclrtSynchronizeStream(c.stream) == ACL_SUCCESS)
		ret = 0;
	else
		fprintf(stderr, "%s: rank %d: final barrier failed\n", t->name,
			rank);
destroy_comm:
	HcclCommDestroy(c.comm);
destroy_stream:
	aclrtDestroyStream(c.stream);
reset_device:
	aclrtResetDevice(dev);
finalize:
	aclFinalize();
free_scratch:
	free(c.counts);
	free(c.displs);
	return ret;
}

/*
 * --bind core: rank r on the r-th CPU this process may use, when the
 * ranks fit them (mpirun's default for two ranks, and for more with
 * --bind-to core). Unbound, ranks that sleep and wake each other end up
 * stacked on one CPU whenever the other is busy (the scheduler places a
 * woken thread beside its waker when no CPU is idle), and wait for each
 * other's time slices: 8-byte ops took 2-7x as long beside two
 * niced busy loops and a niced ping-pong (measured, README).
 */
static void bind_rank(const struct ht_opts *o, int r)
{
	cpu_set_t allowed, one;
	int seen = 0;

	if (o->no_bind || sched_getaffinity(0, sizeof(allowed), &allowed) ||
	    o->nranks > CPU_COUNT(&allowed))
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || seen++ != r)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			perror("sched_setaffinity");
		return;
	}
}

/*
 * Rank r of the local launcher: rank 0 makes the root info in shared
 * memory and opens the gate (one byte per other rank), as hccl_test's rank
 * 0 does before MPI_Bcast; the others wait at the gate.
 */
static int local_rank(const struct ht_opts *o, const struct ht_test *t, int r,
		      HcclRootInfo *root, const int gate[2])
{
	char ch = 0;

	bind_rank(o, r);
	if (r == 0) {
		close(gate[0]);
		if (HcclGetRootInfo(root) != HCCL_SUCCESS) {
			fprintf(stderr, "%s: cannot create root info\n",
				t->name);
			return 1;
		}
		for (int k = 1; k < o->nranks; k++)
			if (write(gate[1], &ch, 1) != 1)
				return 1;
		close(gate[1]);
	} else {
		close(gate[1]);
		if (read(gate[0], &ch, 1) != 1)
			return 1; /* rank 0 failed */
		close(gate[0]);
	}
	return run_rank(o, t, r, root);
}

/*
 * Ranks as forked processes of this one, which calls nothing of the
 * library itself: forking a process with library threads running could
 * leave a child stuck on a lock one of them held (seen under ASan).
 */
static int local_main(struct ht_opts *o, const struct ht_test *t)
{
	HcclRootInfo *root;
	pid_t *pids;
	int failed = 0, gate[2];

	root = mmap(NULL, sizeof(*root), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (root == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	pids = calloc((size_t)o->nranks, sizeof(*pids));
	if (!pids)
		goto unmap;
	if (pipe(gate)) {
		perror("pipe");
		goto free_pids;
	}
	fflush(NULL);
	for (int r = 0; r < o->nranks; r++) {
		pids[r] = fork();
		if (pids[r] == 0)
			_exit(local_rank(o, t, r, root, gate));
	}
	close(gate[0]);
	close(gate[1]);
	for (int r = 0; r < o->nranks; r++) {
		int st;

		if (pids[r] < 0) {
			failed++;
			continue;
		}
		waitpid(pids[r], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "%s: rank %d failed (status 0x%x)\n",
				t->name, r, st);
			failed++;
		}
	}
free_pids:
	free(pids);
unmap:
	munmap(root, sizeof(*root));
	return failed ? 1 : 0;
}

/* Defaults and checks that need the rank count. */
static int finish_opts(struct ht_opts *o, const struct ht_test *t)
{
	if (o->npus <= 0)
		o->npus = o->nranks;
	if (o->root >= (uint32_t)o->nranks) {
		fprintf(stderr, "%s: root %u out of range for %d ranks\n",
			t->name, o->root, o->nranks);
		return -1;
	}
	if (o->zero_copy && strcmp(t->name, "all_reduce_test") &&
	    strcmp(t->name, "all_gather_test") &&
	    strcmp(t->name, "reduce_scatter_test") &&
	    strcmp(t->name, "broadcast_test")) {
		fprintf(stderr,
			"%s: -z 1: zero copy covers all_reduce_test, "
			"all_gather_test, reduce_scatter_test and "
			"broadcast_test only\n",
			t->name);
		return -1;
	}
	if (o->zero_copy && o->symmetric) {
		fprintf(stderr,
			"%s: -z 1 and -m 1 exclude each other (a "
			"buffer is either an activated block or a "
			"window)\n",
			t->name);
		return -1;
	}
	return 0;
}

/* Ranks in an MPI launcher's world, if it started us (else 0). */
static int launcher_size(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
					   "PMIX_SIZE"};

	for (size_t k = 0; k < sizeof(vars) / sizeof(*vars); k++) {
		const char *s = getenv(vars[k]);

		if (s && atoi(s) > 0)
			return atoi(s);
	}
	return 0;
}

#ifdef OHC_HT_MPI
/* hccl_test's flow: rank 0 makes the root info, MPI_Bcast, MPI_Barrier. */
static int mpi_main(struct ht_opts *o, const struct ht_test *t, int world)
{
	HcclRootInfo root;
	int rank, size, ok = 1, ret;

	MPI_Init(NULL, NULL);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	o->nranks = size;
	if (size != world) {
		/* e.g. MPICH's mpirun starting an Open MPI build: singletons */
		fprintf(stderr,
			"%s: the launcher started %d ranks but MPI "
			"sees %d: is this tool built with the MPI of "
			"this mpirun?\n",
			t->name, world, size);
		MPI_Finalize();
		return 1;
	}
	if (finish_opts(o, t)) {
		MPI_Finalize();
		return 1;
	}
	memset(&root, 0, sizeof(root));
	if (rank == 0 && HcclGetRootInfo(&root) != HCCL_SUCCESS) {
		fprintf(stderr, "%s: cannot create root info\n", t->name);
		ok = 0;
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (!ok) {
		MPI_Finalize();
		return 1;
	}
	MPI_Bcast(&root, (int)sizeof(root), MPI_BYTE, 0, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	ret = run_rank(o, t, rank, &root);
	MPI_Finalize();
	return ret;
}
#endif

int ht_main(int argc, char **argv, const struct ht_test *tool)
{
	struct ht_test test = with_defaults(tool), *t = &test;
	struct ht_opts o;
	int ret = parse(argc, argv, &o), world = launcher_size();

	if (ret)
		return ret < 0 ? 1 : 0;
	if (world > 0 && o.nranks == 0) {
#ifdef OHC_HT_MPI
		return mpi_main(&o, t, world);
#else
		if (world > 1) {
			fprintf(stderr,
				"%s: started by an MPI launcher but "
				"built without MPI; use -np N\n",
				t->name);
			return 1;
		}
#endif
	}
	if (o.nranks == 0)
		o.nranks = 2;
	if (finish_opts(&o, t))
		return 1;
	return local_main(&o, t);
}
