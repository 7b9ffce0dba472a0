/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reduction kernel throughput: GB/s of output (bytes written to dst per
 * second, 1 GB = 1e9 B) for fp32/bf16/fp16/int32 sum, per ISA this CPU
 * runs. Modes: "inplace" dst = dst + src (what a ring step does), "3buf"
 * dst = a + b, and "n-way" dst = s0 + ... + s(n-1) in one pass. Memory
 * traffic is 3x the output for the pairwise modes and (n+1)x for n-way.
 * A memcpy of the same size is printed first as the machine's yardstick.
 *
 *   ohc_reduce_bench [--mib N | --kib N] [--iters N] [--isa NAME] [--n N]
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/dtype.h"
#include "algo/reduce.h"
#include "util/time.h"

#define MAX_N 16

struct bench_opts {
	size_t bytes;
	unsigned iters;
	unsigned n;
	const char *isa;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: ohc_reduce_bench [--mib N | --kib N] [--iters N] "
		"[--isa generic|avx2|avx512] [--n N]\n"
		"  --mib N    output buffer size in MiB (default 64)\n"
		"  --kib N    output buffer size in KiB (cache-resident "
		"runs)\n"
		"  --iters N  timed repetitions, best and median shown "
		"(default 10)\n"
		"  --isa NAME only this ISA (default: every one this CPU "
		"runs)\n"
		"  --n N      inputs of the n-way kernel, 2..%d "
		"(default 4)\n",
		MAX_N);
}

static int parse_uint(const char *s, unsigned long lo, unsigned long hi,
		      unsigned long *out_p)
{
	char *end;
	unsigned long v;

	v = strtoul(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < lo || v > hi)
		return -1;
	*out_p = v;
	return 0;
}

static int parse_args(int argc, char **argv, struct bench_opts *o)
{
	static const struct option longopts[] = {
		{"mib", required_argument, NULL, 'm'},
		{"kib", required_argument, NULL, 'k'},
		{"iters", required_argument, NULL, 'i'},
		{"isa", required_argument, NULL, 'a'},
		{"n", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	unsigned long v;
	int c;

	o->bytes = 64ul << 20;
	o->iters = 10;
	o->n = 4;
	o->isa = NULL;
	while ((c = getopt_long(argc, argv, "m:k:i:a:n:h", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'm':
			if (parse_uint(optarg, 1, 16384, &v))
				goto bad;
			o->bytes = v << 20;
			break;
		case 'k':
			if (parse_uint(optarg, 1, 16ul << 20, &v))
				goto bad;
			o->bytes = v << 10;
			break;
		case 'i':
			if (parse_uint(optarg, 1, 100000, &v))
				goto bad;
			o->iters = (unsigned)v;
			break;
		case 'n':
			if (parse_uint(optarg, 2, MAX_N, &v))
				goto bad;
			o->n = (unsigned)v;
			break;
		case 'a':
			o->isa = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			goto bad_usage;
		}
	}
	if (optind != argc)
		goto bad_usage;
	return 0;
bad:
	fprintf(stderr, "ohc_reduce_bench: bad value '%s' for -%c\n", optarg,
		c);
bad_usage:
	usage(stderr);
	return -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Fill with small values so sums stay finite and no NaN slows anything. */
static void fill(int dtype, void *buf, size_t count, unsigned seed)
{
	size_t i;

	for (i = 0; i < count; i++) {
		float f = (float)((i * 7 + seed) % 97) * 0.01f;

		switch (dtype) {
		case OHC_FP32:
			((float *)buf)[i] = f;
			break;
		case OHC_FP16:
			((uint16_t *)buf)[i] = ohc_fp32_to_fp16(f);
			break;
		case OHC_BF16:
			((uint16_t *)buf)[i] = ohc_fp32_to_bf16(f);
			break;
		default:
			((int32_t *)buf)[i] = (int32_t)(i * 7 + seed) % 97;
			break;
		}
	}
}

struct bench_bufs {
	void *dst;
	void *src[MAX_N];
};

enum mode { MODE_INPLACE, MODE_3BUF, MODE_NWAY, MODE_MEMCPY };

static const char *const mode_names[] = {"inplace", "3buf", "n-way", "memcpy"};

static void run_once(enum mode m, int dtype, struct bench_bufs *b, unsigned n,
		     size_t count)
{
	if (m == MODE_MEMCPY) {
		memcpy(b->dst, b->src[0], count * ohc_dtype_size(dtype));
	} else if (m == MODE_INPLACE) {
		ohc_reduce_get(dtype, OHC_SUM)(b->dst, b->dst, b->src[0],
					       count);
	} else if (m == MODE_3BUF) {
		ohc_reduce_get(dtype, OHC_SUM)(b->dst, b->src[0], b->src[1],
					       count);
	} else {
		ohc_reduce_n_get(dtype, OHC_SUM)(
			b->dst, (const void *const *)b->src, n, count);
	}
}

static void bench_one(const struct bench_opts *o, const char *isa, int dtype,
		      enum mode m, struct bench_bufs *b, uint64_t *ns)
{
	size_t count = o->bytes / ohc_dtype_size(dtype);
	unsigned it;
	double best, median;

	run_once(m, dtype, b, o->n, count); /* warm up, fault in */
	for (it = 0; it < o->iters; it++) {
		uint64_t t0 = ohc_time_ns();

		run_once(m, dtype, b, o->n, count);
		ns[it] = ohc_time_ns() - t0;
	}
	qsort(ns, o->iters, sizeof(ns[0]), cmp_u64);
	best = (double)o->bytes / (double)ns[0];
	median = (double)o->bytes / (double)ns[o->iters / 2];
	printf("%-8s %-9s %-8s %3u %8zu %10.2f %10.2f\n", isa,
	       ohc_dtype_name(dtype), mode_names[m],
	       m == MODE_NWAY	  ? o->n
	       : m == MODE_MEMCPY ? 1
				  : 2,
	       o->bytes >> 10, best, median);
}

int main(int argc, char **argv)
{
	static const char *const isas[] = {"generic", "avx2", "avx512"};
	static const int dtypes[] = {OHC_FP32, OHC_BF16, OHC_FP16, OHC_INT32};
	struct bench_opts o;
	struct bench_bufs b;
	uint64_t *ns = NULL;
	unsigned k, nbuf;
	size_t ii, di;
	int ret = 1, m;

	memset(&b, 0, sizeof(b));
	if (parse_args(argc, argv, &o))
		return 2;
	if (o.isa && !ohc_reduce_isa_available(o.isa)) {
		fprintf(stderr,
			"ohc_reduce_bench: isa '%s' unknown or not "
			"supported by this cpu\n",
			o.isa);
		return 1;
	}
	nbuf = o.n;
	ns = calloc(o.iters, sizeof(*ns));
	b.dst = aligned_alloc(4096, o.bytes);
	for (k = 0; k < nbuf; k++)
		b.src[k] = aligned_alloc(4096, o.bytes);
	if (!ns || !b.dst)
		goto out_free;
	for (k = 0; k < nbuf; k++)
		if (!b.src[k])
			goto out_free;

	printf("# reduce sum, GB/s of output (1e9 B/s); %u iterations; "
	       "default isa here: %s\n",
	       o.iters, ohc_reduce_isa());
	printf("%-8s %-9s %-8s %3s %8s %10s %10s\n", "isa", "dtype", "mode",
	       "in", "KiB", "best", "median");
	memset(b.dst, 0, o.bytes);
	memset(b.src[0], 1, o.bytes);
	bench_one(&o, "-", OHC_UINT8, MODE_MEMCPY, &b, ns);
	for (ii = 0; ii < 3; ii++) {
		if (o.isa ? strcmp(o.isa, isas[ii]) != 0
			  : !ohc_reduce_isa_available(isas[ii]))
			continue;
		if (ohc_reduce_force_isa(isas[ii]) != OHC_OK)
			goto out_free;
		for (di = 0; di < 4; di++) {
			size_t count = o.bytes / ohc_dtype_size(dtypes[di]);

			fill(dtypes[di], b.dst, count, 1);
			for (k = 0; k < nbuf; k++)
				fill(dtypes[di], b.src[k], count, k + 2);
			for (m = MODE_INPLACE; m <= MODE_NWAY; m++)
				bench_one(&o, isas[ii], dtypes[di],
					  (enum mode)m, &b, ns);
		}
	}
	ret = 0;
out_free:
	if (ret)
		fprintf(stderr, "ohc_reduce_bench: out of memory or bad isa\n");
	for (k = 0; k < nbuf; k++)
		free(b.src[k]);
	free(b.dst);
	free(ns);
	return ret;
}
