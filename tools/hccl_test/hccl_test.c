/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hccl_test.h"
#include "ht_pmi.h"

#ifndef OHC_HT_VERSION
#define OHC_HT_VERSION "unknown"
#endif

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

/* The tool's name, for messages ("all_reduce_test"). */
static const char *ht_name = "hccl_test";
/* Where the hccl_test table goes: stdout, or stderr when --json - or
 * --csv - take stdout. */
static FILE *ht_txt;

/*
 * Strict number parsing: the whole argument or an error naming the option
 * and what it takes.
 */
static int bad_opt(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "%s: bad %s '%s': %s\n", ht_name, opt, val, want);
	return -1;
}

static int parse_int(const char *opt, const char *s, long long min,
		     long long max, int *v_p)
{
	char *end, want[96];
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		snprintf(want, sizeof(want), "an integer from %lld to %lld",
			 min, max);
		return bad_opt(opt, s, want);
	}
	*v_p = (int)v;
	return 0;
}

/* A byte count: digits and one optional K, M or G (powers of 1024). */
static int parse_bytes(const char *opt, const char *s, uint64_t *v_p)
{
	static const char want[] = "a byte count, digits with an optional K, "
				   "M or G suffix (e.g. 8, 64K, 64M, 1G)";
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!isdigit((unsigned char)*s))
		return bad_opt(opt, s, want);
	errno = 0;
	v = strtoull(s, &end, 10);
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	default:
		return bad_opt(opt, s, want);
	}
	if (errno || *end || (shift && v > (UINT64_MAX >> shift)))
		return bad_opt(opt, s, want);
	*v_p = (uint64_t)v << shift;
	return 0;
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s [-np N] [options]   (or under mpirun / srun)\n"
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
		"  -c, --check       0 off, 1 check, 2 verbose: also each "
		"wrong\n"
		"                    element and where -np bound each rank "
		"(1)\n"
		"  -p, --npus        devices per node: local rank r uses "
		"device "
		"r %% npus\n"
		"                    (the runtime's device count)\n"
		"  -z, --zero_copy   1: buffers in VMM memory activated for "
		"zero copy\n"
		"                    (AllReduce, AllGather, ReduceScatter, "
		"Broadcast) (0)\n"
		"  -m, --symmetric_memory  1: buffers registered as symmetric "
		"windows (0)\n"
		"  --touch_input 1   write the send buffer again before each "
		"call (a copy\n"
		"                    on the stream, timed): inputs fresh from "
		"the CPU,\n"
		"                    as an application's are (0)\n"
		"  --json FILE       also write the rows as JSON (- for "
		"stdout)\n"
		"  --csv FILE        also write the rows as CSV (- for "
		"stdout)\n"
		"  --bind core|none  -np: rank r runs on CPU r mod N of the N "
		"it may\n"
		"                    use, as mpirun binds 2 ranks, or more\n"
		"                    with --bind-to core:overload-allowed "
		"(core)\n"
		"  --version         print the version and exit\n"
		"  --corrupt_rank R  testing aid: rank R flips one result "
		"byte\n"
		"                    before checking (the check must fail)\n"
		"  --kill_rank R     testing aid: rank R kills itself after "
		"init\n",
		prog);
}

/* Take "-np N" out of argv (getopt would read it as -n p); 0 or -1. */
static int take_np(int *argc_p, char **argv, int *np_p)
{
	int argc = *argc_p;

	*np_p = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-np") && strcmp(argv[i], "--np"))
			continue;
		if (i + 1 >= argc) {
			fprintf(stderr, "%s: %s needs a rank count\n", ht_name,
				argv[i]);
			return -1;
		}
		if (parse_int(argv[i], argv[i + 1], 1, 65536, np_p))
			return -1;
		memmove(&argv[i], &argv[i + 2],
			(size_t)(argc - i - 2) * sizeof(char *));
		*argc_p = argc - 2;
		return 0;
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
	return bad_opt("-d", s,
		       "int8, int16, int32, fp16, fp32, int64, uint64, uint8, "
		       "uint16, uint32, fp64 or bfp16");
}

static const char *dtype_name(HcclDataType t)
{
	for (size_t k = 0; k < sizeof(dtypes) / sizeof(*dtypes); k++)
		if (dtypes[k].t == t)
			return dtypes[k].name;
	return "?";
}

static const char *const op_names[] = {"sum", "prod", "max", "min"};
static const HcclReduceOp op_values[] = {HCCL_REDUCE_SUM, HCCL_REDUCE_PROD,
					 HCCL_REDUCE_MAX, HCCL_REDUCE_MIN};

static int parse_op(const char *s, HcclReduceOp *op_p)
{
	for (size_t k = 0; k < 4; k++) {
		if (!strcasecmp(s, op_names[k])) {
			*op_p = op_values[k];
			return 0;
		}
	}
	return bad_opt("-o", s, "sum, prod, max or min");
}

static const char *op_name(HcclReduceOp op)
{
	for (size_t k = 0; k < 4; k++)
		if (op_values[k] == op)
			return op_names[k];
	return "?";
}

/* 0: run, 1: done (help, version), -1: bad arguments */
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
					      {"kill_rank", 1, 0, 'K'},
					      {"bind", 1, 0, 'B'},
					      {"json", 1, 0, 'J'},
					      {"touch_input", 1, 0, 'U'},
					      {"csv", 1, 0, 'C'},
					      {"version", 0, 0, 'V'},
					      {"help", 0, 0, 'h'},
					      {0, 0, 0, 0}};
	int c, step_set = 0, root = 0, bad = 0;
	char *end;

	*o = (struct ht_opts){.minbytes = 64u << 20,
			      .maxbytes = 64u << 20,
			      .op = HCCL_REDUCE_SUM,
			      .dtype = HCCL_DATA_TYPE_FP32,
			      .iters = 20,
			      .warmup = 10,
			      .check = 1,
			      .corrupt_rank = -1,
			      .kill_rank = -1};
	if (take_np(&argc, argv, &o->nranks))
		return -1;
	opterr = 0;
	while ((c = getopt_long(argc, argv,
				":b:e:i:f:o:r:d:n:w:c:p:z:m:a:s:t:hV", longs,
				NULL)) != -1) {
		switch (c) {
		case 'b':
			bad |= parse_bytes("-b", optarg, &o->minbytes);
			break;
		case 'e':
			bad |= parse_bytes("-e", optarg, &o->maxbytes);
			break;
		case 'i':
			bad |= parse_bytes("-i", optarg, &o->stepbytes);
			step_set = 1;
			break;
		case 'f':
			errno = 0;
			o->stepfactor = strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !(o->stepfactor > 1.0 && o->stepfactor <= 1024))
				bad |= bad_opt("-f", optarg,
					       "a factor above 1 (e.g. 2)");
			break;
		case 'r':
			bad |= parse_int("-r", optarg, 0, 65535, &root);
			o->root = (uint32_t)root;
			break;
		case 'n':
			bad |= parse_int("-n", optarg, 1, 1 << 30, &o->iters);
			break;
		case 'w':
			bad |= parse_int("-w", optarg, 0, 1 << 30, &o->warmup);
			break;
		case 'c':
			bad |= parse_int("-c", optarg, 0, 2, &o->check);
			break;
		case 'p':
			bad |= parse_int("-p", optarg, 1, 65536, &o->npus);
			break;
		case 'X':
			bad |= parse_int("--corrupt_rank", optarg, 0, 65535,
					 &o->corrupt_rank);
			break;
		case 'K':
			bad |= parse_int("--kill_rank", optarg, 0, 65535,
					 &o->kill_rank);
			break;
		case 'J':
			o->json_path = optarg;
			break;
		case 'U':
			bad |= parse_int("--touch_input", optarg, 0, 1,
					 &o->touch);
			break;
		case 'C':
			o->csv_path = optarg;
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
			bad |= parse_op(optarg, &o->op);
			break;
		case 'd':
			bad |= parse_dtype(optarg, &o->dtype);
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
		case 'V':
			printf("%s (OpenHCCL) %s\n", ht_name, OHC_HT_VERSION);
			return 1;
		case 'h':
			usage(stdout, argv[0]);
			return 1;
		case ':':
			fprintf(stderr, "%s: option %s needs a value\n",
				ht_name, argv[optind - 1]);
			return -1;
		default:
			fprintf(stderr,
				"%s: unknown option '%s' (--help lists "
				"them)\n",
				ht_name, argv[optind - 1]);
			return -1;
		}
	}
	if (bad)
		return -1;
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", ht_name,
			argv[optind]);
		return -1;
	}
	if (o->minbytes > o->maxbytes) {
		fprintf(stderr,
			"%s: -b %llu is larger than -e %llu: the start size "
			"must not exceed the end size\n",
			ht_name, (unsigned long long)o->minbytes,
			(unsigned long long)o->maxbytes);
		return -1;
	}
	if (o->json_path && o->csv_path && !strcmp(o->json_path, "-") &&
	    !strcmp(o->csv_path, "-")) {
		fprintf(stderr,
			"%s: --json - and --csv - cannot both take "
			"stdout\n",
			ht_name);
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
			fprintf(ht_txt,
				"local rank_id %d, element %llu is %g, "
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
		fprintf(ht_txt,
			"local rank_id %d, check result failed, data_size "
			"%llu\n",
			c->rank, (unsigned long long)bytes);
		fflush(ht_txt);
	}
	if (HcclAllReduce(&bad, &all_bad, 1, HCCL_DATA_TYPE_INT32,
			  HCCL_REDUCE_SUM, c->comm, NULL) != HCCL_SUCCESS)
		goto free_host;
	ret = all_bad ? 0 : 1;
free_host:
	aclrtFreeHost(host);
	return ret;
}

/*
 * Failure reporting. A rank's errors go to stderr with its rank, and the
 * first one also into its slot of the local launcher's shared memory (-np),
 * so the launcher's last line can name the rank and its error.
 */
struct ht_slot {
	char msg[512];
};

static struct ht_slot *my_slot; /* this rank's (-np), else NULL */
static int my_rank = -1;
/* an error (not a failed check, which every rank sees and reports):
 * the other ranks may wait for this one, so mpirun and srun are asked to
 * end the job */
static int hard_failure;

static void note_v(int print, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (print) {
		if (my_rank >= 0)
			fprintf(stderr, "%s: rank %d: %s\n", ht_name, my_rank,
				msg);
		else
			fprintf(stderr, "%s: %s\n", ht_name, msg);
	}
	if (my_slot && !my_slot->msg[0])
		snprintf(my_slot->msg, sizeof(my_slot->msg), "%s", msg);
}

/* An error of this rank: printed, and kept for the launcher. */
static void ht_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ht_fail(const char *fmt, ...)
{
	va_list ap;

	hard_failure = 1;
	va_start(ap, fmt);
	note_v(1, fmt, ap);
	va_end(ap);
}

/* A failure already shown (a failed check): kept for the launcher only. */
static void ht_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ht_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	note_v(0, fmt, ap);
	va_end(ap);
}

/*
 * Rank 0's output: the hccl_test table (ht_txt), and the same rows as
 * JSON and CSV on request. The JSON is one object, written as the sweep
 * goes and closed at the end (ht_out_close), so a run that dies half way
 * leaves an unterminated file, not a plausible one.
 */
static FILE *out_json, *out_csv;
static int out_rows;

static FILE *out_open(const char *opt, const char *path)
{
	FILE *f;

	if (!path)
		return NULL;
	if (!strcmp(path, "-"))
		return stdout;
	f = fopen(path, "w");
	if (!f)
		ht_fail("%s %s: %s", opt, path, strerror(errno));
	return f;
}

/* JSON string contents: printable ASCII, escaped. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static int ht_out_open(const struct ht_opts *o, const struct ht_test *t)
{
	char host[256] = "?";

	gethostname(host, sizeof(host) - 1);
	out_json = out_open("--json", o->json_path);
	out_csv = out_open("--csv", o->csv_path);
	if ((o->json_path && !out_json) || (o->csv_path && !out_csv))
		return -1;
	if (out_json) {
		fprintf(out_json, "{\"tool\": ");
		json_str(out_json, t->name);
		fprintf(out_json, ", \"version\": ");
		json_str(out_json, OHC_HT_VERSION);
		fprintf(out_json, ", \"host\": ");
		json_str(out_json, host);
		fprintf(out_json,
			", \"launcher\": \"%s\", \"ranks\": %d, "
			"\"datatype\": \"%s\", \"op\": \"%s\", \"root\": %u, "
			"\"iters\": %d, \"warmup_iters\": %d, "
			"\"zero_copy\": %d, \"symmetric_memory\": %d, "
			"\"touch_input\": %d,\n"
			" \"rows\": [",
			o->launcher, o->nranks, dtype_name(o->dtype),
			op_name(o->op), o->root, o->iters, o->warmup,
			o->zero_copy, o->symmetric, o->touch);
		fflush(out_json);
	}
	if (out_csv) {
		fprintf(out_csv, "tool,ranks,datatype,op,bytes,time_us,"
				 "algbw_GBps,busbw_GBps,check\n");
		fflush(out_csv);
	}
	return 0;
}

static void ht_out_row(const struct ht_test *t, const struct ht_opts *o,
		       uint64_t bytes, double us, double algbw, double busbw,
		       const char *verdict)
{
	fprintf(ht_txt, "%-17llu | %-14.2f | %-20.5f | %-13s | %.5f\n",
		(unsigned long long)bytes, us, algbw, verdict, busbw);
	fflush(ht_txt);
	if (out_json) {
		fprintf(out_json,
			"%s\n  {\"bytes\": %llu, \"time_us\": %.3f, "
			"\"algbw_GBps\": %.6f, \"busbw_GBps\": %.6f, "
			"\"check\": \"%s\"}",
			out_rows ? "," : "", (unsigned long long)bytes, us,
			algbw, busbw, verdict);
		fflush(out_json);
	}
	if (out_csv) {
		fprintf(out_csv, "%s,%d,%s,%s,%llu,%.3f,%.6f,%.6f,%s\n",
			t->name, o->nranks, dtype_name(o->dtype),
			op_name(o->op), (unsigned long long)bytes, us, algbw,
			busbw, verdict);
		fflush(out_csv);
	}
	out_rows++;
}

/* Close the outputs; ok: the whole sweep passed. */
static void ht_out_close(int ok)
{
	if (out_json) {
		fprintf(out_json, "\n ],\n \"result\": \"%s\"}\n",
			ok ? "success" : "failed");
		if (out_json != stdout)
			fclose(out_json);
		else
			fflush(stdout);
	}
	if (out_csv && out_csv != stdout)
		fclose(out_csv);
	else if (out_csv)
		fflush(stdout);
	out_json = out_csv = NULL;
}

static void print_header(const struct ht_opts *o)
{
	fprintf(ht_txt,
		"the minbytes is %llu, maxbytes is %llu, iters is %d, "
		"warmup_iters is %d\n",
		(unsigned long long)o->minbytes,
		(unsigned long long)o->maxbytes, o->iters, o->warmup);
	fprintf(ht_txt, "%-15s | %-12s | %-18s | %-13s | %s\n",
		"data_size(Bytes):", "aveg_time(us):", "alg_bandwidth(GB/s):",
		"check_result:", "bus_bandwidth(GB/s):");
	fflush(ht_txt);
}

/* One call, the send buffer written again first (--touch_input). */
static int touch_run(const struct ht_test *t, struct ht_ctx *c)
{
	size_t n = c->send_count * ht_dtype_size(c->o->dtype);

	if (c->touch_src &&
	    aclrtMemcpyAsync(c->send, n, c->touch_src, n,
			     ACL_MEMCPY_HOST_TO_DEVICE,
			     c->stream) != ACL_SUCCESS)
		return -1;
	return t->run(c) == HCCL_SUCCESS ? 0 : -1;
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
		if (touch_run(t, c))
			goto destroy_end;
	if (aclrtRecordEvent(start, c->stream) != ACL_SUCCESS)
		goto destroy_end;
	for (int i = 0; i < c->o->iters; i++)
		if (touch_run(t, c))
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
	c->touch_src = o->touch ? in : NULL;
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
	if (c->rank == 0)
		ht_out_row(t, o, bytes, us, algbw,
			   algbw * busbw_factor(t, c->nranks), verdict);
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
			const char *_m = aclGetRecentErrMsg();                 \
			ht_fail("%s failed: acl error %d%s%s", #call, _e,      \
				_m &&*_m ? ": " : "", _m ? _m : "");           \
			goto label;                                            \
		}                                                              \
	} while (0)

/*
 * Everything one rank does; its exit status. local_rank (the rank's index
 * on its host) picks the device: local_rank % -p, or % the runtime's
 * device count.
 */
static int run_rank(const struct ht_opts *o, const struct ht_test *t, int rank,
		    int local_rank, const HcclRootInfo *root)
{
	struct ht_ctx c = {.o = o, .rank = rank, .nranks = o->nranks};
	uint32_t ndev = 0;
	int dev, ret = 1;
	HcclResult r;

	my_rank = rank;
	if (o->npus > 0)
		ndev = (uint32_t)o->npus;
	else if (aclrtGetDeviceCount(&ndev) != ACL_SUCCESS || !ndev)
		ndev = 1;
	dev = (int)((uint32_t)local_rank % ndev);
	c.counts = calloc((size_t)o->nranks * (size_t)o->nranks + 1,
			  sizeof(*c.counts));
	c.displs = calloc((size_t)o->nranks + 1, sizeof(*c.displs));
	if (!c.counts || !c.displs) {
		ht_fail("out of memory");
		goto free_scratch;
	}
	CHECK_ACL(aclInit(NULL), free_scratch);
	CHECK_ACL(aclrtSetDevice(dev), finalize);
	CHECK_ACL(aclrtCreateStream(&c.stream), reset_device);
	r = HcclCommInitRootInfo((uint32_t)o->nranks, root, (uint32_t)rank,
				 &c.comm);
	if (r != HCCL_SUCCESS) {
		ht_fail("HcclCommInitRootInfo failed: %s (%d)",
			HcclGetErrorString(r), r);
		goto destroy_stream;
	}
	if (rank == 0)
		print_header(o);
	if (rank == o->kill_rank) {
		fflush(NULL);
		raise(SIGKILL);
	}
	for (uint64_t b = o->minbytes; b <= o->maxbytes; b = next_size(o, b)) {
		int s = run_size(t, &c, b);

		if (s < 0)
			ht_fail("%s failed at %llu bytes", t->name,
				(unsigned long long)b);
		else if (s)
			ht_note("check result failed at %llu bytes",
				(unsigned long long)b);
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
		ht_fail("final barrier failed");
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
	ht_out_close(ret == 0);
	return ret;
}

/*
 * --bind core: rank r on the (r mod N)-th of the N CPUs this process may
 * use (mpirun's default for two ranks, and for more with --bind-to core,
 * or core:overload-allowed where they outnumber the CPUs, as
 * bench/scaling.sh runs Open MPI). Unbound, ranks that sleep and wake
 * each other end up stacked on one CPU whenever the other is busy (the
 * scheduler places a woken thread beside its waker when no CPU is idle),
 * and wait for each other's time slices: 8-byte ops took 2-7x as long
 * beside two niced busy loops and a niced ping-pong (measured, README).
 * Ranks that outnumber the CPUs were left unbound once; where the
 * scheduler put them decided the run: 4 ranks on 2 CPUs, AllReduce of
 * 8 B-4 KiB, 4.1-14.2 us a call unbound (half the sizes near 10),
 * 3.9-8.0 bound round-robin (4 alternating sweeps each).
 */
static void bind_rank(const struct ht_opts *o, int r)
{
	cpu_set_t allowed, one;
	int seen = 0, nth;

	if (o->no_bind || sched_getaffinity(0, sizeof(allowed), &allowed) ||
	    CPU_COUNT(&allowed) < 1)
		return;
	nth = r % CPU_COUNT(&allowed);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || seen++ != nth)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			perror("sched_setaffinity");
		else if (o->check > 1) /* -c 2: say where */
			fprintf(stderr, "rank %d: bound to CPU %d\n", r, cpu);
		return;
	}
}

/* What the local launcher shares with its ranks. */
struct ht_shared {
	HcclRootInfo root;
	struct ht_slot slot[];
};

/*
 * Rank r of the local launcher: rank 0 makes the root info in shared
 * memory and opens the gate (one byte per other rank), as hccl_test's rank
 * 0 does before MPI_Bcast; the others wait at the gate.
 */
static int local_rank(const struct ht_opts *o, const struct ht_test *t, int r,
		      struct ht_shared *sh, const int gate[2])
{
	char ch = 0;

	my_rank = r;
	my_slot = &sh->slot[r];
	bind_rank(o, r);
	if (r == 0) {
		close(gate[0]);
		if (ht_out_open(o, t))
			return 1;
		if (HcclGetRootInfo(&sh->root) != HCCL_SUCCESS) {
			ht_fail("cannot create root info");
			return 1;
		}
		for (int k = 1; k < o->nranks; k++)
			if (write(gate[1], &ch, 1) != 1)
				return 1;
		close(gate[1]);
	} else {
		close(gate[1]);
		if (read(gate[0], &ch, 1) != 1) {
			ht_note("rank 0 made no root info");
			return 1;
		}
		close(gate[0]);
	}
	return run_rank(o, t, r, r, &sh->root);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Send sig to every rank not reaped yet. */
static void signal_ranks(const pid_t *pids, int n, int sig)
{
	for (int r = 0; r < n; r++)
		if (pids[r] > 0)
			kill(pids[r], sig);
}

/*
 * Reap the ranks. The first that fails (a nonzero exit or a signal) stops
 * the others: they get 300 ms to finish by themselves (a failed check ends
 * every rank at once), then SIGTERM, then SIGKILL at 800 ms. The exit
 * status is the first failed rank's (128 + signal when killed), and the
 * last line names it and its error.
 */
static int reap_ranks(const struct ht_test *t, pid_t *pids, int n,
		      const struct ht_shared *sh)
{
	int left = 0, first = -1, first_st = 0, termed = 0, killed = 0;
	double t_fail = 0, t_done = 0;

	for (int r = 0; r < n; r++)
		left += pids[r] > 0;
	while (left > 0) {
		int st, r;
		pid_t pid = waitpid(-1, &st, first < 0 ? 0 : WNOHANG);

		if (pid == 0) {
			double ms = now_ms() - t_fail;

			if (ms > 300 && !termed) {
				signal_ranks(pids, n, SIGTERM);
				termed = 1;
			}
			if (ms > 800 && !killed) {
				signal_ranks(pids, n, SIGKILL);
				killed = 1;
			}
			usleep(2000);
			continue;
		}
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (r = 0; r < n && pids[r] != pid; r++)
			;
		if (r == n)
			continue;
		pids[r] = 0;
		left--;
		t_done = now_ms();
		if (first < 0 && (!WIFEXITED(st) || WEXITSTATUS(st))) {
			first = r;
			first_st = st;
			t_fail = t_done;
		}
	}
	if (first < 0)
		return 0;
	if (WIFSIGNALED(first_st))
		fprintf(stderr,
			"%s: rank %d of %d was killed by signal %d (%s)%s%s; "
			"stopped the other %d ranks in %.0f ms\n",
			t->name, first, n, WTERMSIG(first_st),
			strsignal(WTERMSIG(first_st)),
			sh->slot[first].msg[0] ? ": " : "", sh->slot[first].msg,
			n - 1, t_done - t_fail);
	else
		fprintf(stderr,
			"%s: rank %d of %d failed (exit status %d): %s; "
			"stopped the other %d ranks in %.0f ms\n",
			t->name, first, n, WEXITSTATUS(first_st),
			sh->slot[first].msg[0] ? sh->slot[first].msg
					       : "(no message)",
			n - 1, t_done - t_fail);
	return WIFSIGNALED(first_st) ? 128 + WTERMSIG(first_st)
				     : WEXITSTATUS(first_st);
}

/*
 * Ranks as forked processes of this one, which calls nothing of the
 * library itself: forking a process with library threads running could
 * leave a child stuck on a lock one of them held (seen under ASan).
 */
static int local_main(struct ht_opts *o, const struct ht_test *t)
{
	size_t shsize = sizeof(struct ht_shared) +
			(size_t)o->nranks * sizeof(struct ht_slot);
	struct ht_shared *sh;
	pid_t *pids;
	int ret = 1, gate[2];

	sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
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
			_exit(local_rank(o, t, r, sh, gate));
		if (pids[r] < 0) {
			fprintf(stderr, "%s: cannot start rank %d: %s\n",
				t->name, r, strerror(errno));
			close(gate[0]);
			close(gate[1]);
			signal_ranks(pids, r, SIGKILL);
			reap_ranks(t, pids, r, sh);
			goto free_pids;
		}
	}
	close(gate[0]);
	close(gate[1]);
	ret = reap_ranks(t, pids, o->nranks, sh);
free_pids:
	free(pids);
unmap:
	munmap(sh, shsize);
	return ret;
}

/* Defaults and checks that need the rank count. */
static int finish_opts(struct ht_opts *o, const struct ht_test *t)
{
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

static int env_count(const char *name)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	v = strtol(s, &end, 10);
	return *end || v < 0 || v > 1 << 30 ? -1 : (int)v;
}

/* This process's index among its host's ranks, from the launcher. */
static int env_local_rank(int rank)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK",
					   "SLURM_LOCALID", "MPI_LOCALRANKID",
					   "PMI_LOCAL_RANK"};

	for (size_t k = 0; k < sizeof(vars) / sizeof(*vars); k++)
		if (env_count(vars[k]) >= 0)
			return env_count(vars[k]);
	return rank;
}

/*
 * Under srun --mpi=pmi2 or MPICH's mpirun: rank and size from PMI, the
 * root info from rank 0 to the others through PMI's key-value space, as
 * hccl_test does with MPI_Bcast. No MPI needed.
 */
static int pmi_main(struct ht_opts *o, const struct ht_test *t)
{
	struct ht_pmi p;
	HcclRootInfo root;
	char err[512];
	int ok = 1, ret;

	if (ht_pmi_init(&p, err, sizeof(err))) {
		ht_fail("%s", err);
		return 1;
	}
	my_rank = p.rank;
	o->nranks = p.size;
	o->launcher = "pmi";
	if (finish_opts(o, t)) {
		ht_pmi_finalize(&p);
		return 1;
	}
	memset(&root, 0, sizeof(root));
	if (p.rank == 0 && ht_out_open(o, t))
		ok = 0;
	else if (p.rank == 0 && HcclGetRootInfo(&root) != HCCL_SUCCESS) {
		ht_fail("cannot create root info");
		ok = 0;
	}
	if (ht_pmi_bcast(&p, "ohc-root", ok ? &root : NULL, sizeof(root), err,
			 sizeof(err))) {
		if (ok)
			ht_fail("%s", err);
		ht_pmi_abort(&p, 1);
		return 1;
	}
	ret = run_rank(o, t, p.rank, env_local_rank(p.rank), &root);
	if (ret && hard_failure)
		ht_pmi_abort(&p, ret);
	else
		ht_pmi_finalize(&p);
	return ret;
}

#ifdef OHC_HT_MPI
/* hccl_test's flow: rank 0 makes the root info, MPI_Bcast, MPI_Barrier. */
static int mpi_main(struct ht_opts *o, const struct ht_test *t, int world)
{
	HcclRootInfo root;
	MPI_Comm node;
	int rank, size, lrank = 0, ok = 1, ret;

	MPI_Init(NULL, NULL);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	my_rank = rank;
	o->nranks = size;
	o->launcher = "mpi";
	if (world > 0 && size != world) {
		/* e.g. MPICH's mpirun starting an Open MPI build: singletons */
		ht_fail("the launcher started %d ranks but MPI sees %d: is "
			"this tool built with the MPI of this mpirun?",
			world, size);
		MPI_Finalize();
		return 1;
	}
	if (finish_opts(o, t)) {
		MPI_Finalize();
		return 1;
	}
	/* the rank's index on its host picks its device */
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
				MPI_INFO_NULL, &node) == MPI_SUCCESS) {
		MPI_Comm_rank(node, &lrank);
		MPI_Comm_free(&node);
	} else {
		lrank = env_local_rank(rank);
	}
	memset(&root, 0, sizeof(root));
	if (rank == 0 && ht_out_open(o, t))
		ok = 0;
	else if (rank == 0 && HcclGetRootInfo(&root) != HCCL_SUCCESS) {
		ht_fail("cannot create root info");
		ok = 0;
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (!ok) {
		MPI_Finalize();
		return 1;
	}
	MPI_Bcast(&root, (int)sizeof(root), MPI_BYTE, 0, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	ret = run_rank(o, t, rank, lrank, &root);
	if (ret && hard_failure)
		MPI_Abort(MPI_COMM_WORLD, ret);
	MPI_Finalize();
	return ret;
}
#endif

/*
 * Which launcher started us: -np N wins; Open MPI's mpirun (its
 * environment) runs through MPI; a PMI-1 channel (srun --mpi=pmi2, MPICH's
 * mpirun) through ht_pmi.c; PMIx alone (srun --mpi=pmix) through MPI
 * (Open MPI speaks it); a Slurm step of several tasks with none of these
 * cannot share the root info (refused, with advice); else the local
 * launcher with 2 ranks.
 */
int ht_main(int argc, char **argv, const struct ht_test *tool)
{
	struct ht_test test = with_defaults(tool), *t = &test;
	struct ht_opts o;
	int ret, world = env_count("OMPI_COMM_WORLD_SIZE");
	int step = env_count("SLURM_STEP_NUM_TASKS");

	ht_name = tool->name;
	ht_txt = stdout;
	ret = parse(argc, argv, &o);
	if (ret)
		return ret < 0 ? 1 : 0;
	if ((o.json_path && !strcmp(o.json_path, "-")) ||
	    (o.csv_path && !strcmp(o.csv_path, "-")))
		ht_txt = stderr;
	o.launcher = "local";
	if (o.nranks == 0 && world > 0) {
#ifdef OHC_HT_MPI
		return mpi_main(&o, t, world);
#else
		fprintf(stderr,
			"%s: started by Open MPI's mpirun but built without "
			"MPI; use -np N, or srun --mpi=pmi2\n",
			t->name);
		return 1;
#endif
	}
	if (o.nranks == 0 && ht_pmi_available())
		return pmi_main(&o, t);
	if (o.nranks == 0 && getenv("PMIX_RANK")) {
#ifdef OHC_HT_MPI
		/* srun --mpi=pmix: Open MPI's MPI_Init speaks PMIx */
		return mpi_main(&o, t, step > 1 ? step : 0);
#else
		fprintf(stderr,
			"%s: started with PMIx but built without MPI: run "
			"srun --mpi=pmi2, or use -np N\n",
			t->name);
		return 1;
#endif
	}
	if (o.nranks == 0 && step > 1) {
		fprintf(stderr,
			"%s: started by srun as one of %d tasks without a PMI "
			"channel (PMI_FD) to share the root info: run srun "
			"--mpi=pmi2%s\n",
			t->name, step,
#ifdef OHC_HT_MPI
			" (or --mpi=pmix)"
#else
			""
#endif
		);
		return 1;
	}
	if (o.nranks == 0)
		o.nranks = 2;
	if (finish_opts(&o, t))
		return 1;
	return local_main(&o, t);
}
