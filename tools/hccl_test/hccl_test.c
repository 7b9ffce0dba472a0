/* SPDX-License-Identifier: Apache-2.0 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hccl_test.h"

#define CHECK_ACL(call)                                                        \
	do {                                                                   \
		aclError _e = (call);                                          \
		if (_e != ACL_SUCCESS) {                                       \
			fprintf(stderr, "%s failed: acl error %d (%s:%d)\n",   \
				#call, _e, __FILE__, __LINE__);                \
			return 1;                                              \
		}                                                              \
	} while (0)

#define CHECK_HCCL(call)                                                       \
	do {                                                                   \
		HcclResult _r = (call);                                        \
		if (_r != HCCL_SUCCESS) {                                      \
			fprintf(stderr, "%s failed: %s (%d)\n", #call,         \
				HcclGetErrorString(_r), _r);                   \
			return 1;                                              \
		}                                                              \
	} while (0)

static const struct {
	const char *name;
	HcclDataType t;
} dtypes[] = {
	{"int8", HCCL_DATA_TYPE_INT8},     {"int16", HCCL_DATA_TYPE_INT16},
	{"int32", HCCL_DATA_TYPE_INT32},   {"fp16", HCCL_DATA_TYPE_FP16},
	{"fp32", HCCL_DATA_TYPE_FP32},     {"int64", HCCL_DATA_TYPE_INT64},
	{"uint64", HCCL_DATA_TYPE_UINT64}, {"uint8", HCCL_DATA_TYPE_UINT8},
	{"uint16", HCCL_DATA_TYPE_UINT16}, {"uint32", HCCL_DATA_TYPE_UINT32},
	{"fp64", HCCL_DATA_TYPE_FP64},     {"bfp16", HCCL_DATA_TYPE_BFP16},
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
	case HCCL_DATA_TYPE_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
	case HCCL_DATA_TYPE_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
	case HCCL_DATA_TYPE_INT16: ((int16_t *)buf)[i] = (int16_t)v; break;
	case HCCL_DATA_TYPE_UINT16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
	case HCCL_DATA_TYPE_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case HCCL_DATA_TYPE_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
	case HCCL_DATA_TYPE_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
	case HCCL_DATA_TYPE_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
	case HCCL_DATA_TYPE_FP32: ((float *)buf)[i] = f; break;
	case HCCL_DATA_TYPE_FP64: ((double *)buf)[i] = v; break;
	case HCCL_DATA_TYPE_FP16: ((uint16_t *)buf)[i] = fp16_from(v); break;
	case HCCL_DATA_TYPE_BFP16:
		memcpy(&u, &f, 4);
		((uint16_t *)buf)[i] = (uint16_t)(u >> 16);
		break;
	default: break;
	}
}

double ht_load(const void *buf, HcclDataType t, uint64_t i)
{
	uint32_t u;
	float f;

	switch (t) {
	case HCCL_DATA_TYPE_INT8: return ((const int8_t *)buf)[i];
	case HCCL_DATA_TYPE_UINT8: return ((const uint8_t *)buf)[i];
	case HCCL_DATA_TYPE_INT16: return ((const int16_t *)buf)[i];
	case HCCL_DATA_TYPE_UINT16: return ((const uint16_t *)buf)[i];
	case HCCL_DATA_TYPE_INT32: return ((const int32_t *)buf)[i];
	case HCCL_DATA_TYPE_UINT32: return ((const uint32_t *)buf)[i];
	case HCCL_DATA_TYPE_INT64: return (double)((const int64_t *)buf)[i];
	case HCCL_DATA_TYPE_UINT64: return (double)((const uint64_t *)buf)[i];
	case HCCL_DATA_TYPE_FP32: return ((const float *)buf)[i];
	case HCCL_DATA_TYPE_FP64: return ((const double *)buf)[i];
	case HCCL_DATA_TYPE_FP16: return fp16_to(((const uint16_t *)buf)[i]);
	case HCCL_DATA_TYPE_BFP16:
		u = (uint32_t)((const uint16_t *)buf)[i] << 16;
		memcpy(&f, &u, 4);
		return f;
	default: return 0;
	}
}

static uint64_t parse_bytes(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1024 * 1024; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
	default: break;
	}
	return (uint64_t)v;
}

static void usage(const char *prog)
{
	printf("usage: %s [-np N] [options]\n"
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
	       "  -p, --npus        devices per node\n",
	       prog);
}

static int parse(int argc, char **argv, struct ht_opts *o)
{
	static const struct option longs[] = {
		{"minbytes", 1, 0, 'b'},   {"maxbytes", 1, 0, 'e'},
		{"stepbytes", 1, 0, 'i'},  {"stepfactor", 1, 0, 'f'},
		{"op", 1, 0, 'o'},         {"root", 1, 0, 'r'},
		{"datatype", 1, 0, 'd'},   {"iters", 1, 0, 'n'},
		{"warmup_iters", 1, 0, 'w'}, {"check", 1, 0, 'c'},
		{"npus", 1, 0, 'p'},       {"zero_copy", 1, 0, 'z'},
		{"symmetric_memory", 1, 0, 'm'}, {"help", 0, 0, 'h'},
		{0, 0, 0, 0}};
	int c, step_set = 0, found;

	*o = (struct ht_opts){.minbytes = 64u << 20, .maxbytes = 64u << 20,
			      .op = HCCL_REDUCE_SUM, .dtype = HCCL_DATA_TYPE_FP32,
			      .iters = 20, .warmup = 10, .check = 1,
			      .npus = 0, .nranks = 2};
	/* the local launcher's -np N (getopt would read it as -n p) */
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "-np") || !strcmp(argv[i], "--np")) &&
		    i + 1 < argc) {
			o->nranks = atoi(argv[i + 1]);
			memmove(&argv[i], &argv[i + 2],
				(size_t)(argc - i - 2) * sizeof(char *));
			argc -= 2;
			break;
		}
	}
	while ((c = getopt_long(argc, argv, "b:e:i:f:o:r:d:n:w:c:p:z:m:a:s:t:h",
				longs, NULL)) != -1) {
		switch (c) {
		case 'b': o->minbytes = parse_bytes(optarg); break;
		case 'e': o->maxbytes = parse_bytes(optarg); break;
		case 'i': o->stepbytes = parse_bytes(optarg); step_set = 1; break;
		case 'f': o->stepfactor = atof(optarg); break;
		case 'r': o->root = (uint32_t)atoi(optarg); break;
		case 'n': o->iters = atoi(optarg); break;
		case 'w': o->warmup = atoi(optarg); break;
		case 'c': o->check = atoi(optarg); break;
		case 'p': o->npus = atoi(optarg); break;
		case 'o':
			if (!strcasecmp(optarg, "sum")) o->op = HCCL_REDUCE_SUM;
			else if (!strcasecmp(optarg, "prod")) o->op = HCCL_REDUCE_PROD;
			else if (!strcasecmp(optarg, "max")) o->op = HCCL_REDUCE_MAX;
			else if (!strcasecmp(optarg, "min")) o->op = HCCL_REDUCE_MIN;
			else { fprintf(stderr, "bad -o %s\n", optarg); return -1; }
			break;
		case 'd':
			found = 0;
			for (size_t k = 0; k < sizeof(dtypes) / sizeof(*dtypes); k++)
				if (!strcasecmp(optarg, dtypes[k].name)) {
					o->dtype = dtypes[k].t;
					found = 1;
				}
			if (!found) {
				fprintf(stderr, "bad -d %s\n", optarg);
				return -1;
			}
			break;
		case 'z':
		case 'm':
			if (atoi(optarg)) {
				fprintf(stderr, "-%c 1 is not supported yet\n", c);
				return -1;
			}
			break;
		case 'a': case 's': case 't': break;
		case 'h': usage(argv[0]); return 1;
		default: usage(argv[0]); return -1;
		}
	}
	if (o->minbytes > o->maxbytes || o->iters < 1 || o->warmup < 0 ||
	    o->nranks < 1 || (o->stepfactor != 0 && o->stepfactor <= 1.0)) {
		fprintf(stderr, "invalid arguments: need minbytes <= maxbytes, "
				"iters >= 1, -f > 1.0, -np >= 1\n");
		return -1;
	}
	if (!step_set)
		o->stepbytes = o->maxbytes == o->minbytes
				       ? 1
				       : (o->maxbytes - o->minbytes) / 10;
	if (o->npus <= 0)
		o->npus = o->nranks;
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

static int run_rank(const struct ht_opts *o, const struct ht_test *t,
		    int rank, const HcclRootInfo *root)
{
	size_t es = ht_dtype_size(o->dtype);
	aclrtStream stream;
	aclrtEvent start, end;
	HcclComm comm;
	int dev = rank % o->npus;

	CHECK_ACL(aclInit(NULL));
	CHECK_ACL(aclrtSetDevice(dev));
	CHECK_ACL(aclrtCreateEvent(&start));
	CHECK_ACL(aclrtCreateEvent(&end));
	CHECK_ACL(aclrtCreateStream(&stream));
	CHECK_HCCL(HcclCommInitRootInfo((uint32_t)o->nranks, root,
					(uint32_t)rank, &comm));
	if (rank == 0) {
		printf("the minbytes is %llu, maxbytes is %llu, iters is %d, "
		       "warmup_iters is %d\n",
		       (unsigned long long)o->minbytes,
		       (unsigned long long)o->maxbytes, o->iters, o->warmup);
		printf("%-15s | %-12s | %-18s | %-13s | %s\n",
		       "data_size(Bytes):", "aveg_time(us):",
		       "alg_bandwidth(GB/s):", "check_result:",
		       "bus_bandwidth(GB/s):");
		fflush(stdout);
	}
	for (uint64_t bytes = o->minbytes; bytes <= o->maxbytes;
	     bytes = next_size(o, bytes)) {
		uint64_t sc, rc;
		void *send = NULL, *recv = NULL, *host, *rhost;
		float ms = 0;
		double us, algbw;
		int bad = 0, all_bad = 0;
		const char *verdict = "NULL";

		t->counts(o, bytes, &sc, &rc);
		if (sc)
			CHECK_ACL(aclrtMalloc(&send, sc * es,
					      ACL_MEM_MALLOC_HUGE_ONLY));
		if (rc)
			CHECK_ACL(aclrtMalloc(&recv, rc * es,
					      ACL_MEM_MALLOC_HUGE_ONLY));
		CHECK_ACL(aclrtMallocHost(&host, sc * es + 8));
		CHECK_ACL(aclrtMallocHost(&rhost, rc * es + 8));
		t->fill(o, rank, host, sc);
		if (sc)
			CHECK_ACL(aclrtMemcpy(send, sc * es, host, sc * es,
					      ACL_MEMCPY_HOST_TO_DEVICE));
		for (int i = 0; i < o->warmup; i++)
			CHECK_HCCL(t->run(o, send, recv, sc, comm, stream));
		CHECK_ACL(aclrtRecordEvent(start, stream));
		for (int i = 0; i < o->iters; i++)
			CHECK_HCCL(t->run(o, send, recv, sc, comm, stream));
		CHECK_ACL(aclrtRecordEvent(end, stream));
		CHECK_ACL(aclrtSynchronizeStream(stream));
		CHECK_ACL(aclrtEventElapsedTime(&ms, start, end));
		us = (double)ms * 1000.0 / o->iters;
		if (o->check) {
			if (sc)
				CHECK_ACL(aclrtMemcpy(send, sc * es, host,
						      sc * es,
						      ACL_MEMCPY_HOST_TO_DEVICE));
			CHECK_HCCL(t->run(o, send, recv, sc, comm, stream));
			CHECK_ACL(aclrtSynchronizeStream(stream));
			if (rc)
				CHECK_ACL(aclrtMemcpy(rhost, rc * es, recv,
						      rc * es,
						      ACL_MEMCPY_DEVICE_TO_HOST));
			bad = t->check(o, rank, rhost, rc) != 0;
			if (bad)
				printf("local rank_id %d, check result failed, "
				       "data_size %llu\n",
				       rank, (unsigned long long)bytes);
			CHECK_HCCL(HcclAllReduce(&bad, &all_bad, 1,
						 HCCL_DATA_TYPE_INT32,
						 HCCL_REDUCE_SUM, comm, NULL));
			verdict = all_bad ? "failed" : "success";
		}
		algbw = us > 0 ? (double)t->alg_bytes(o, sc, rc) / us * 1e-3
			       : 0;
		if (rank == 0) {
			printf("%-17llu | %-14.2f | %-20.5f | %-13s | %.5f\n",
			       (unsigned long long)bytes, us, algbw, verdict,
			       algbw * t->busbw_factor(o->nranks));
			fflush(stdout);
		}
		aclrtFree(send);
		aclrtFree(recv);
		aclrtFreeHost(host);
		aclrtFreeHost(rhost);
		if (all_bad)
			return 1;
		if (bytes == o->maxbytes)
			break;
	}
	CHECK_HCCL(HcclCommDestroy(comm));
	aclrtDestroyStream(stream);
	aclrtDestroyEvent(start);
	aclrtDestroyEvent(end);
	aclrtResetDevice(dev);
	return aclFinalize();
}

int ht_main(int argc, char **argv, const struct ht_test *t)
{
	struct ht_opts o;
	HcclRootInfo *root;
	pid_t *pids;
	int ret = parse(argc, argv, &o), failed = 0, gate[2];

	if (ret)
		return ret < 0 ? 1 : 0;
	root = mmap(NULL, sizeof(*root), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (root == MAP_FAILED || HcclGetRootInfo(root) != HCCL_SUCCESS) {
		fprintf(stderr, "%s: cannot create root info\n", t->name);
		return 1;
	}
	pids = calloc((size_t)o.nranks, sizeof(*pids));
	if (pipe(gate)) {
		perror("pipe");
		return 1;
	}
	fflush(NULL);
	for (int r = 0; r < o.nranks; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			char c;

			/* start once every rank is forked (see ohc_test.c) */
			close(gate[1]);
			(void)!read(gate[0], &c, 1);
			_exit(run_rank(&o, t, r, root));
		}
	}
	close(gate[0]);
	close(gate[1]);
	for (int r = 0; r < o.nranks; r++) {
		int st;

		waitpid(pids[r], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "%s: rank %d failed (status 0x%x)\n",
				t->name, r, st);
			failed++;
		}
	}
	free(pids);
	munmap(root, sizeof(*root));
	return failed ? 1 : 0;
}
