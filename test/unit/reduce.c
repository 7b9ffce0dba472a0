/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reduction kernels against a scalar reference written here, for every
 * dtype x op, every ISA this CPU runs, many lengths, offsets and aliasing;
 * fp16/bf16 via a reference conversion of this file's own (value search in
 * double, no bit tricks shared with the implementation).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/dtype.h"
#include "algo/reduce.h"

/*
 * Hot loops check with these instead of cr_expect/cr_assert: ctest runs
 * with --full-stats, which ships every passing assertion to the runner.
 */
#define EXPECT(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond))                                                   \
			cr_expect_fail(__VA_ARGS__);                           \
	} while (0)
#define REQUIRE(cond, ...)                                                     \
	do {                                                                   \
		if (!(cond))                                                   \
			cr_assert_fail(__VA_ARGS__);                           \
	} while (0)

static const char *const all_isas[] = {"generic", "avx2", "avx512"};
static const size_t lengths[] = {0, 1, 7, 15, 16, 17, 63, 64, 65, 1000, 4097};
#define NLEN (sizeof(lengths) / sizeof(lengths[0]))

/* ---- deterministic random numbers ---- */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* ---- reference half-precision conversions (by value, in double) ---- */

struct half_fmt {
	int ebits, mbits; /* exponent and mantissa widths */
	uint16_t inf;	  /* bit pattern of +infinity */
};

static const struct half_fmt fmt_fp16 = {5, 10, 0x7c00};
static const struct half_fmt fmt_bf16 = {8, 7, 0x7f80};

static const struct half_fmt *fmt_of(int dtype)
{
	return dtype == OHC_FP16 ? &fmt_fp16 : &fmt_bf16;
}

/* Magnitude of a finite non-negative pattern h (h < inf). */
static double half_mag(const struct half_fmt *f, uint16_t h)
{
	int bias = (1 << (f->ebits - 1)) - 1;
	int e = h >> f->mbits;
	int m = h & ((1 << f->mbits) - 1);

	if (e == 0)
		return ldexp(m, 1 - bias - f->mbits);
	return ldexp((1 << f->mbits) + m, e - bias - f->mbits);
}

static bool half_isnan(const struct half_fmt *f, uint16_t h)
{
	return (h & 0x7fff) > f->inf;
}

static double ref_half_to_double(const struct half_fmt *f, uint16_t h)
{
	double v;

	if (half_isnan(f, h))
		return NAN;
	v = (h & 0x7fff) == f->inf ? INFINITY : half_mag(f, h & 0x7fff);
	return (h & 0x8000) ? -v : v;
}

/*
 * Round a double (holding an fp32 value) to the format: largest pattern
 * whose magnitude is <= |v| by binary search, then nearest of it and the
 * next one, ties to the even pattern; beyond the largest finite value the
 * "next" magnitude is 2^(emax+1), which rounds to infinity.
 */
static uint16_t ref_double_to_half(const struct half_fmt *f, double v)
{
	uint16_t sign = signbit(v) ? 0x8000 : 0;
	uint16_t lo = 0, hi = f->inf - 1, h;
	double av = fabs(v), below, above;
	int bias = (1 << (f->ebits - 1)) - 1;

	if (isnan(v))
		return sign | f->inf | (1 << (f->mbits - 1));
	if (isinf(v))
		return sign | f->inf;
	while (lo < hi) {
		uint16_t mid = (uint16_t)(lo + (hi - lo + 1) / 2);

		if (half_mag(f, mid) <= av)
			lo = mid;
		else
			hi = (uint16_t)(mid - 1);
	}
	h = lo;
	below = half_mag(f, h);
	above = h + 1 == f->inf ? ldexp(1, bias + 1) : half_mag(f, h + 1);
	if (av - below > above - av || (av - below == above - av && (h & 1)))
		h++;
	return sign | h;
}

static float ref_half_to_float(int dtype, uint16_t h)
{
	return (float)ref_half_to_double(fmt_of(dtype), h);
}

static uint16_t ref_float_to_half(int dtype, float v)
{
	return ref_double_to_half(fmt_of(dtype), v);
}

/* ---- scalar reference of one element ---- */

static bool is_half(int dtype)
{
	return dtype == OHC_FP16 || dtype == OHC_BF16;
}

/* IEEE 754-2019 maximum / minimum, written plainly. */
static double ref_fop(int op, double a, double b)
{
	switch (op) {
	case OHC_SUM:
		return a + b;
	case OHC_PROD:
		return a * b;
	case OHC_MAX:
		if (isnan(a) || isnan(b))
			return NAN;
		if (a == 0 && b == 0)
			return signbit(a) && signbit(b) ? -0.0 : 0.0;
		return a > b ? a : b;
	default:
		if (isnan(a) || isnan(b))
			return NAN;
		if (a == 0 && b == 0)
			return signbit(a) || signbit(b) ? -0.0 : 0.0;
		return a < b ? a : b;
	}
}

/* fp32 arithmetic must round in fp32, so sum/prod are done in float. */
static float ref_fop32(int op, float a, float b)
{
	if (op == OHC_SUM)
		return a + b;
	if (op == OHC_PROD)
		return a * b;
	return (float)ref_fop(op, a, b);
}

static int int_bits(int dtype)
{
	return (int)ohc_dtype_size(dtype) * 8;
}

static __int128 int_load(int dtype, const void *p)
{
	switch (dtype) {
	case OHC_INT8:
		return *(const int8_t *)p;
	case OHC_INT16:
		return *(const int16_t *)p;
	case OHC_INT32:
		return *(const int32_t *)p;
	case OHC_INT64:
		return *(const int64_t *)p;
	default:
		return *(const uint64_t *)p;
	}
}

/* Store the low bits of v (two's complement wrap-around). */
static void int_store(int dtype, void *p, __int128 v)
{
	unsigned __int128 u = (unsigned __int128)v;
	uint64_t low =
		(uint64_t)(u & (((unsigned __int128)1 << int_bits(dtype)) - 1));
	uint8_t bytes[8];
	int i;

	for (i = 0; i < 8; i++)
		bytes[i] = (uint8_t)(low >> (8 * i)); /* little endian */
	memcpy(p, bytes, ohc_dtype_size(dtype));
}

static __int128 ref_iop(int op, __int128 a, __int128 b)
{
	switch (op) {
	case OHC_SUM:
		return a + b;
	case OHC_PROD:
		/* |a*b| < 2^127 for 64-bit operands; wrap happens on store. */
		return (__int128)((unsigned __int128)a * (unsigned __int128)b);
	case OHC_MAX:
		return a > b ? a : b;
	default:
		return a < b ? a : b;
	}
}

/* Reference fold of n inputs element i, into out (one element). */
static void ref_fold(int dtype, int op, const void *const *srcs, unsigned n,
		     size_t i, void *out)
{
	size_t es = ohc_dtype_size(dtype);
	unsigned k;

	if (dtype == OHC_FP64) {
		double acc = ((const double *)srcs[0])[i];

		for (k = 1; k < n; k++)
			acc = ref_fop(op, acc, ((const double *)srcs[k])[i]);
		memcpy(out, &acc, es);
	} else if (dtype == OHC_FP32) {
		float acc = ((const float *)srcs[0])[i];

		for (k = 1; k < n; k++)
			acc = ref_fop32(op, acc, ((const float *)srcs[k])[i]);
		memcpy(out, &acc, es);
	} else if (is_half(dtype)) {
		/* Widen, fold in fp32, round once. */
		float acc = ref_half_to_float(dtype,
					      ((const uint16_t *)srcs[0])[i]);
		uint16_t h;

		for (k = 1; k < n; k++)
			acc = ref_fop32(
				op, acc,
				ref_half_to_float(
					dtype, ((const uint16_t *)srcs[k])[i]));
		h = ref_float_to_half(dtype, acc);
		memcpy(out, &h, es);
	} else {
		__int128 acc = int_load(dtype, (const char *)srcs[0] + i * es);

		for (k = 1; k < n; k++)
			acc = ref_iop(op, acc,
				      int_load(dtype,
					       (const char *)srcs[k] + i * es));
		/* Wrap each step like the kernels would (same result mod 2^w).
		 */
		int_store(dtype, out, acc);
	}
}

/* Equal bits, or both NaN for float types. */
static bool elem_match(int dtype, const void *want, const void *got)
{
	size_t es = ohc_dtype_size(dtype);

	if (memcmp(want, got, es) == 0)
		return true;
	if (dtype == OHC_FP32) {
		float w, g;

		memcpy(&w, want, 4);
		memcpy(&g, got, 4);
		return isnan(w) && isnan(g);
	}
	if (dtype == OHC_FP64) {
		double w, g;

		memcpy(&w, want, 8);
		memcpy(&g, got, 8);
		return isnan(w) && isnan(g);
	}
	if (is_half(dtype)) {
		uint16_t w, g;

		memcpy(&w, want, 2);
		memcpy(&g, got, 2);
		return half_isnan(fmt_of(dtype), w) &&
		       half_isnan(fmt_of(dtype), g);
	}
	return false;
}

static void elem_hex(int dtype, const void *p, char *buf, size_t len)
{
	uint64_t v = 0;
	uint8_t bytes[8];
	size_t es = ohc_dtype_size(dtype), i;

	memcpy(bytes, p, es);
	for (i = 0; i < es; i++)
		v |= (uint64_t)bytes[i] << (8 * i);
	snprintf(buf, len, "0x%0*llx", (int)(2 * es), (unsigned long long)v);
}

/* ---- input generation ---- */

static void fill_random(int dtype, void *buf, size_t cnt, uint64_t *rng)
{
	static const uint16_t sp16[] = {0x7e00, 0x7c01, 0xfe00, 0x7c00, 0xfc00,
					0x0000, 0x8000, 0x0001, 0x03ff, 0x0400,
					0x7bff, 0xfbff, 0x8001, 0x3c00};
	static const uint16_t spbf[] = {0x7fc0, 0x7f81, 0xffc0, 0x7f80, 0xff80,
					0x0000, 0x8000, 0x0001, 0x007f, 0x0080,
					0x7f7f, 0xff7f, 0x8001, 0x3f80};
	static const uint32_t sp32[] = {0x7fc00000, 0x7f800001, 0xffc00000,
					0x7f800000, 0xff800000, 0x00000000,
					0x80000000, 0x00000001, 0x007fffff,
					0x00800000, 0x7f7fffff, 0xff7fffff};
	static const uint64_t sp64[] = {
		0x7ff8000000000000ull, 0x7ff0000000000001ull,
		0xfff8000000000000ull, 0x7ff0000000000000ull,
		0xfff0000000000000ull, 0x0000000000000000ull,
		0x8000000000000000ull, 0x0000000000000001ull,
		0x000fffffffffffffull, 0x7fefffffffffffffull};
	static const int64_t spint[] = {
		0,	   1,	      -1,	 2,    -2,
		INT64_MAX, INT64_MIN, 127,	 -128, 32767,
		-32768,	   INT32_MAX, INT32_MIN, 255,  65535};
	size_t es = ohc_dtype_size(dtype), i;

	for (i = 0; i < cnt; i++) {
		uint64_t r = rng_next(rng), v;
		unsigned cls = r & 15;
		char *p = (char *)buf + i * es;

		r >>= 4;
		if (dtype == OHC_FP16 || dtype == OHC_BF16) {
			const struct half_fmt *f = fmt_of(dtype);
			int bias = (1 << (f->ebits - 1)) - 1;
			const uint16_t *sp = dtype == OHC_FP16 ? sp16 : spbf;
			uint16_t h;

			if (cls == 0)
				h = sp[r % 14];
			else if (cls == 1)
				h = (uint16_t)r;
			else /* moderate: exponent within +-6 of 1.0 */
				h = (uint16_t)(((r & 1) << 15) |
					       ((uint64_t)(bias - 6 +
							   (r >> 1) % 13)
						<< f->mbits) |
					       ((r >> 8) &
						((1u << f->mbits) - 1)));
			memcpy(p, &h, 2);
		} else if (dtype == OHC_FP32) {
			uint32_t u;

			if (cls == 0)
				u = sp32[r % 12];
			else if (cls == 1)
				u = (uint32_t)r;
			else
				u = (uint32_t)(((r & 1) << 31) |
					       ((117 + (r >> 1) % 21) << 23) |
					       ((r >> 8) & 0x7fffff));
			memcpy(p, &u, 4);
		} else if (dtype == OHC_FP64) {
			if (cls == 0)
				v = sp64[r % 10];
			else if (cls == 1)
				v = rng_next(rng);
			else
				v = ((r & 1) << 63) |
				    ((1013 + (r >> 1) % 21) << 52) |
				    (rng_next(rng) & 0xfffffffffffffull);
			memcpy(p, &v, 8);
		} else {
			if (cls == 0)
				int_store(dtype, p, spint[r % 15]);
			else
				int_store(dtype, p, (__int128)rng_next(rng));
		}
	}
}

/* ---- ISA selection ---- */

/* Independent of the implementation: what /proc/cpuinfo says. */
static bool cpu_has(const char *flag)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *tok;

		if (strncmp(line, "flags", 5) != 0)
			continue;
		for (tok = strtok(strchr(line, ':') + 1, " \n"); tok;
		     tok = strtok(NULL, " \n"))
			if (strcmp(tok, flag) == 0)
				found = true;
		break;
	}
	fclose(f);
	return found;
}

static bool cpu_runs(const char *isa)
{
	if (strcmp(isa, "generic") == 0)
		return true;
	if (strcmp(isa, "avx2") == 0)
		return cpu_has("avx2") && cpu_has("f16c") && cpu_has("fma");
	return cpu_has("avx512f") && cpu_has("avx512bw");
}

/* Select `isa` or skip the test when this CPU cannot run it. */
static void use_isa(const char *isa)
{
	if (!cpu_runs(isa)) {
		cr_expect_eq(ohc_reduce_force_isa(isa), OHC_ERR_UNSUPPORTED);
		cr_skip_test("cpu lacks %s", isa);
	}
	cr_assert_eq(ohc_reduce_force_isa(isa), OHC_OK, "force %s", isa);
	cr_assert_str_eq(ohc_reduce_isa(), isa);
}

/* ---- pairwise kernels against the reference ---- */

static void *xalloc(size_t bytes)
{
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);

	REQUIRE(p, "out of memory");
	return p;
}

/*
 * offmode 0: everything aligned; 1: a, b, dst one element off; 2: a one
 * element off, b and dst aligned. alias 0: separate dst; 1: dst == a;
 * 2: dst == b.
 */
static bool pair_case(const char *isa, int dtype, int op, size_t len,
		      int offmode, int alias, uint64_t *rng)
{
	size_t es = ohc_dtype_size(dtype), cap = len + 4, i;
	size_t bytes = cap * es;
	ohc_reduce_fn fn = ohc_reduce_get(dtype, op);
	char *abuf = xalloc(bytes), *bbuf = xalloc(bytes);
	char *dbuf = xalloc(bytes), *want = xalloc(bytes);
	char *snap = xalloc(bytes), *ain = xalloc(bytes), *bin = xalloc(bytes);
	size_t aoff = offmode ? 1 : 0, boff = offmode == 1 ? 1 : 0;
	char *a = abuf + aoff * es, *b = bbuf + boff * es, *d, *dholder;
	bool ok = true;

	REQUIRE(fn, "no kernel");
	fill_random(dtype, abuf, cap, rng);
	fill_random(dtype, bbuf, cap, rng);
	memcpy(ain, a, len * es);
	memcpy(bin, b, len * es);
	for (i = 0; i < len; i++) {
		const void *srcs[2] = {a, b};

		ref_fold(dtype, op, srcs, 2, i, want + i * es);
	}
	if (alias == 1) {
		d = a;
		dholder = abuf;
	} else if (alias == 2) {
		d = b;
		dholder = bbuf;
	} else {
		memset(dbuf, 0xa5, bytes);
		d = dbuf + boff * es;
		dholder = dbuf;
	}
	memcpy(snap, dholder, bytes);
	fn(d, a, b, len);
	for (i = 0; i < len && ok; i++) {
		if (!elem_match(dtype, want + i * es, d + i * es)) {
			char w[24], g[24], x[24], y[24];

			elem_hex(dtype, want + i * es, w, sizeof(w));
			elem_hex(dtype, d + i * es, g, sizeof(g));
			elem_hex(dtype, ain + i * es, x, sizeof(x));
			elem_hex(dtype, bin + i * es, y, sizeof(y));
			cr_expect_fail("%s %s %s len %zu off %d alias %d: "
				       "[%zu] %s op %s: got %s want %s",
				       isa, ohc_dtype_name(dtype),
				       ohc_redop_name(op), len, offmode, alias,
				       i, x, y, g, w);
			ok = false;
		}
	}
	/* Nothing outside [d, d + len) may change. */
	if (memcmp(dholder, snap, (size_t)(d - dholder)) != 0 ||
	    memcmp(d + len * es, snap + (size_t)(d - dholder) + len * es,
		   bytes - (size_t)(d - dholder) - len * es) != 0) {
		cr_expect_fail("%s %s %s len %zu off %d alias %d: wrote "
			       "outside dst",
			       isa, ohc_dtype_name(dtype), ohc_redop_name(op),
			       len, offmode, alias);
		ok = false;
	}
	free(abuf);
	free(bbuf);
	free(dbuf);
	free(want);
	free(snap);
	free(ain);
	free(bin);
	return ok;
}

static void pairwise_all(const char *isa)
{
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	int dt, op, offmode, alias;
	size_t li;
	unsigned cases = 0;

	use_isa(isa);
	for (dt = 0; dt < OHC_DTYPE_COUNT; dt++) {
		for (op = 0; op < OHC_REDOP_COUNT; op++) {
			bool ok = true;

			if (!ohc_reduce_supported(dt, op))
				continue;
			for (li = 0; li < NLEN && ok; li++)
				for (offmode = 0; offmode < 3 && ok; offmode++)
					for (alias = 0; alias < 3 && ok;
					     alias++, cases++)
						ok = pair_case(isa, dt, op,
							       lengths[li],
							       offmode, alias,
							       &rng);
		}
	}
	cr_expect_gt(cases, 30u * NLEN * 9, "ran %u cases", cases);
}

Test(reduce, pairwise_generic)
{
	pairwise_all("generic");
}

Test(reduce, pairwise_avx2)
{
	pairwise_all("avx2");
}

Test(reduce, pairwise_avx512)
{
	pairwise_all("avx512");
}

/* ---- n-way kernels ---- */

static bool nway_case(const char *isa, int dtype, int op, size_t len,
		      unsigned n, int offmode, bool alias, uint64_t *rng)
{
	size_t es = ohc_dtype_size(dtype), cap = len + 4, bytes = cap * es, i;
	ohc_reduce_n_fn nfn = ohc_reduce_n_get(dtype, op);
	ohc_reduce_fn fn = ohc_reduce_get(dtype, op);
	char *bufs[8], *want = xalloc(bytes), *fold = xalloc(bytes);
	char *dbuf = xalloc(bytes), *d;
	const void *srcs[8];
	bool ok = true;
	unsigned k;

	REQUIRE(nfn && n >= 1 && n <= 8, "no kernel / bad n");
	for (k = 0; k < n; k++) {
		bufs[k] = xalloc(bytes);
		fill_random(dtype, bufs[k], cap, rng);
		/* mode 1: every other source one element off */
		srcs[k] = bufs[k] + (offmode && (k & 1) ? es : 0);
	}
	for (i = 0; i < len; i++)
		ref_fold(dtype, op, srcs, n, i, want + i * es);
	/* Pairwise fold in index order with the same ISA's kernel. */
	memcpy(fold, srcs[0], len * es);
	for (k = 1; k < n; k++)
		fn(fold, fold, srcs[k], len);
	d = alias ? (char *)srcs[0] : dbuf + (offmode ? es : 0);
	nfn(d, srcs, n, len);
	for (i = 0; i < len && ok; i++) {
		char w[24], g[24], f[24];
		/*
		 * Exact fold: bitwise (up to which NaN comes out of two NaN
		 * inputs: hardware picks an operand, compilers may commute);
		 * halves' sum/prod round once instead.
		 */
		bool exact = !is_half(dtype) || op == OHC_MAX ||
			     op == OHC_MIN || n <= 2;

		elem_hex(dtype, want + i * es, w, sizeof(w));
		elem_hex(dtype, d + i * es, g, sizeof(g));
		elem_hex(dtype, fold + i * es, f, sizeof(f));
		if (!elem_match(dtype, want + i * es, d + i * es)) {
			cr_expect_fail("%s %s %s n %u len %zu off %d alias %d:"
				       " [%zu] got %s want %s",
				       isa, ohc_dtype_name(dtype),
				       ohc_redop_name(op), n, len, offmode,
				       alias, i, g, w);
			ok = false;
		} else if (exact &&
			   !elem_match(dtype, fold + i * es, d + i * es)) {
			cr_expect_fail("%s %s %s n %u len %zu: [%zu] n-way %s "
				       "!= pairwise fold %s",
				       isa, ohc_dtype_name(dtype),
				       ohc_redop_name(op), n, len, i, g, f);
			ok = false;
		}
	}
	for (k = 0; k < n; k++)
		free(bufs[k]);
	free(want);
	free(fold);
	free(dbuf);
	return ok;
}

static void nway_all(const char *isa)
{
	static const unsigned ns[] = {1, 2, 3, 5, 8};
	uint64_t rng = 0x1234567887654321ull;
	int dt, op, offmode, alias;
	size_t li, ni;

	use_isa(isa);
	for (dt = 0; dt < OHC_DTYPE_COUNT; dt++) {
		for (op = 0; op < OHC_REDOP_COUNT; op++) {
			bool ok = true;

			if (!ohc_reduce_supported(dt, op))
				continue;
			for (ni = 0; ni < 5 && ok; ni++)
				for (li = 0; li < NLEN && ok; li++)
					for (offmode = 0; offmode < 2 && ok;
					     offmode++)
						for (alias = 0; alias < 2 && ok;
						     alias++)
							ok = nway_case(
								isa, dt, op,
								lengths[li],
								ns[ni], offmode,
								alias, &rng);
		}
	}
}

Test(reduce, nway_generic)
{
	nway_all("generic");
}

Test(reduce, nway_avx2)
{
	nway_all("avx2");
}

Test(reduce, nway_avx512)
{
	nway_all("avx512");
}

/* A half-precision n-way sum really rounds once (differs from pairwise). */
Test(reduce, nway_half_rounds_once)
{
	size_t ii;

	for (ii = 0; ii < 3; ii++) {
		/* 1 + 2^-11 + 2^-11: pairwise ties to 1 twice; once: 1+2^-10 */
		uint16_t s0[20], s1[20], s2[20], d[20], p[20];
		const void *srcs[3] = {s0, s1, s2};
		int i;

		if (!cpu_runs(all_isas[ii]))
			continue;
		cr_assert_eq(ohc_reduce_force_isa(all_isas[ii]), OHC_OK);
		for (i = 0; i < 20; i++) {
			s0[i] = 0x3c00; /* 1.0 */
			s1[i] = 0x1000; /* 2^-11 */
			s2[i] = 0x1000;
		}
		ohc_reduce_n_get(OHC_FP16, OHC_SUM)(d, srcs, 3, 20);
		memcpy(p, s0, sizeof(p));
		ohc_reduce_get(OHC_FP16, OHC_SUM)(p, p, s1, 20);
		ohc_reduce_get(OHC_FP16, OHC_SUM)(p, p, s2, 20);
		for (i = 0; i < 20; i++) {
			cr_expect_eq(d[i], 0x3c01, "%s [%d] %#x", all_isas[ii],
				     i, d[i]);
			cr_expect_eq(p[i], 0x3c00, "%s [%d] %#x", all_isas[ii],
				     i, p[i]);
		}
	}
}

/* ---- special values, hand-derived ---- */

/* Apply (dtype, op) to L copies of the pair (x, y); every result equal. */
#define SPECIAL_LEN 67
static void check_pair(int dtype, int op, const void *x, const void *y,
		       const void *want, bool want_nan, const char *what)
{
	size_t es = ohc_dtype_size(dtype), i, ii;
	uint64_t abuf[SPECIAL_LEN], bbuf[SPECIAL_LEN], dbuf[SPECIAL_LEN];
	char *a = (char *)abuf, *b = (char *)bbuf, *d = (char *)dbuf;

	for (ii = 0; ii < 3; ii++) {
		if (!cpu_runs(all_isas[ii]))
			continue;
		cr_assert_eq(ohc_reduce_force_isa(all_isas[ii]), OHC_OK);
		for (i = 0; i < SPECIAL_LEN; i++) {
			memcpy(a + i * es, x, es);
			memcpy(b + i * es, y, es);
		}
		ohc_reduce_get(dtype, op)(d, a, b, SPECIAL_LEN);
		for (i = 0; i < SPECIAL_LEN; i++) {
			bool ok;
			char g[24], w[24];

			if (want_nan) {
				double v;

				if (dtype == OHC_FP32)
					v = ((float *)d)[i];
				else if (dtype == OHC_FP64)
					v = ((double *)d)[i];
				else
					v = ref_half_to_double(
						fmt_of(dtype),
						((uint16_t *)d)[i]);
				ok = isnan(v);
			} else {
				ok = memcmp(d + i * es, want, es) == 0;
			}
			elem_hex(dtype, d + i * es, g, sizeof(g));
			elem_hex(dtype, want, w, sizeof(w));
			EXPECT(ok, "%s %s %s: %s: [%zu] got %s want %s",
			       all_isas[ii], ohc_dtype_name(dtype),
			       ohc_redop_name(op), what, i, g,
			       want_nan ? "NaN" : w);
			if (!ok)
				break;
		}
	}
}

static void f32_case(int op, uint32_t x, uint32_t y, uint32_t want,
		     const char *what)
{
	bool nan = (want & 0x7fffffffu) > 0x7f800000u;

	check_pair(OHC_FP32, op, &x, &y, &want, nan, what);
}

static void f64_case(int op, uint64_t x, uint64_t y, uint64_t want,
		     const char *what)
{
	bool nan = (want & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;

	check_pair(OHC_FP64, op, &x, &y, &want, nan, what);
}

static void h_case(int dtype, int op, uint16_t x, uint16_t y, uint16_t want,
		   const char *what)
{
	check_pair(dtype, op, &x, &y, &want, half_isnan(fmt_of(dtype), want),
		   what);
}

#define QNAN32 0x7fc00000u
#define SNAN32 0x7f800001u
#define INF32 0x7f800000u
#define NINF32 0xff800000u
#define NZERO32 0x80000000u
#define ONE32 0x3f800000u

Test(reduce, fp32_special_values)
{
	f32_case(OHC_SUM, QNAN32, ONE32, QNAN32, "nan + 1");
	f32_case(OHC_SUM, ONE32, SNAN32, QNAN32, "1 + snan");
	f32_case(OHC_SUM, INF32, NINF32, QNAN32, "inf + -inf");
	f32_case(OHC_SUM, INF32, ONE32, INF32, "inf + 1");
	f32_case(OHC_SUM, NZERO32, NZERO32, NZERO32, "-0 + -0");
	f32_case(OHC_SUM, NZERO32, 0, 0, "-0 + +0");
	f32_case(OHC_SUM, 1, 1, 2, "subnormal + subnormal");
	f32_case(OHC_SUM, 0x7f7fffffu, 0x7f7fffffu, INF32, "max + max");
	f32_case(OHC_PROD, INF32, 0, QNAN32, "inf * 0");
	f32_case(OHC_PROD, NZERO32, ONE32, NZERO32, "-0 * 1");
	f32_case(OHC_PROD, 0x00800000u, 0x3f000000u, 0x00400000u,
		 "min normal * 0.5");
	f32_case(OHC_MAX, QNAN32, ONE32, QNAN32, "max(nan, 1)");
	f32_case(OHC_MAX, ONE32, QNAN32, QNAN32, "max(1, nan)");
	f32_case(OHC_MIN, QNAN32, ONE32, QNAN32, "min(nan, 1)");
	f32_case(OHC_MIN, ONE32, QNAN32, QNAN32, "min(1, nan)");
	f32_case(OHC_MAX, NZERO32, 0, 0, "max(-0, +0)");
	f32_case(OHC_MAX, 0, NZERO32, 0, "max(+0, -0)");
	f32_case(OHC_MIN, NZERO32, 0, NZERO32, "min(-0, +0)");
	f32_case(OHC_MIN, 0, NZERO32, NZERO32, "min(+0, -0)");
	f32_case(OHC_MAX, NINF32, INF32, INF32, "max(-inf, inf)");
	f32_case(OHC_MIN, NINF32, INF32, NINF32, "min(-inf, inf)");
	f32_case(OHC_MAX, 1, 0x80000001u, 1, "max(subnormals)");
}

Test(reduce, fp64_special_values)
{
	const uint64_t qnan = 0x7ff8000000000000ull,
		       one = 0x3ff0000000000000ull;
	const uint64_t inf = 0x7ff0000000000000ull, nzero = 1ull << 63;

	f64_case(OHC_SUM, qnan, one, qnan, "nan + 1");
	f64_case(OHC_SUM, inf, inf | nzero, qnan, "inf + -inf");
	f64_case(OHC_SUM, nzero, nzero, nzero, "-0 + -0");
	f64_case(OHC_SUM, 1, 1, 2, "subnormal + subnormal");
	f64_case(OHC_PROD, inf, 0, qnan, "inf * 0");
	f64_case(OHC_MAX, one, qnan, qnan, "max(1, nan)");
	f64_case(OHC_MIN, qnan, one, qnan, "min(nan, 1)");
	f64_case(OHC_MAX, nzero, 0, 0, "max(-0, +0)");
	f64_case(OHC_MIN, 0, nzero, nzero, "min(+0, -0)");
}

Test(reduce, fp16_special_values)
{
	const int F = OHC_FP16;

	h_case(F, OHC_SUM, 0x7bff, 0x7bff, 0x7c00, "65504 + 65504 -> inf");
	h_case(F, OHC_SUM, 0x7bff, 0x4c00, 0x7c00, "65504 + 16: tie -> inf");
	h_case(F, OHC_SUM, 0x7bff, 0x4800, 0x7bff, "65504 + 8 -> 65504");
	h_case(F, OHC_SUM, 0xfbff, 0xfbff, 0xfc00, "-65504 - 65504 -> -inf");
	h_case(F, OHC_PROD, 0x5c00, 0x5c00, 0x7c00, "256 * 256 -> inf");
	h_case(F, OHC_SUM, 0x0001, 0x0001, 0x0002, "subnormal sum");
	h_case(F, OHC_SUM, 0x03ff, 0x0001, 0x0400, "subnormal -> normal");
	h_case(F, OHC_SUM, 0x0400, 0x8001, 0x03ff, "normal -> subnormal");
	h_case(F, OHC_PROD, 0x0001, 0x3800, 0x0000, "2^-25: tie -> 0");
	h_case(F, OHC_PROD, 0x0003, 0x3800, 0x0002, "1.5*2^-24: tie -> 2");
	h_case(F, OHC_PROD, 0x0001, 0x3a00, 0x0001, "0.75*2^-24 -> 2^-24");
	h_case(F, OHC_SUM, 0x3c00, 0x1000, 0x3c00, "1 + 2^-11: tie -> 1");
	h_case(F, OHC_SUM, 0x3c01, 0x1000, 0x3c02, "tie -> even up");
	h_case(F, OHC_SUM, 0x8000, 0x8000, 0x8000, "-0 + -0");
	h_case(F, OHC_SUM, 0x7c00, 0xfc00, 0x7e00, "inf - inf");
	h_case(F, OHC_SUM, 0xfc00, 0x3c00, 0xfc00, "-inf + 1");
	h_case(F, OHC_SUM, 0x7e00, 0x3c00, 0x7e00, "nan + 1");
	h_case(F, OHC_MAX, 0x3c00, 0x7e00, 0x7e00, "max(1, nan)");
	h_case(F, OHC_MIN, 0xfe00, 0x3c00, 0x7e00, "min(-nan, 1)");
	h_case(F, OHC_MAX, 0x8000, 0x0000, 0x0000, "max(-0, +0)");
	h_case(F, OHC_MIN, 0x0000, 0x8000, 0x8000, "min(+0, -0)");
	h_case(F, OHC_MIN, 0x0001, 0x8001, 0x8001, "min(subnormals)");
}

Test(reduce, bf16_special_values)
{
	const int B = OHC_BF16;

	h_case(B, OHC_SUM, 0x3f80, 0x3b80, 0x3f80, "1 + 2^-8: tie -> 1");
	h_case(B, OHC_SUM, 0x3f81, 0x3b80, 0x3f82, "tie -> even up");
	h_case(B, OHC_SUM, 0x3f80, 0x3b81, 0x3f81, "above tie -> up");
	h_case(B, OHC_SUM, 0xbf80, 0xbb80, 0xbf80, "negative tie");
	h_case(B, OHC_SUM, 0x7f7f, 0x7f7f, 0x7f80, "max + max -> inf");
	h_case(B, OHC_SUM, 0x7f7f, 0x7300, 0x7f7f, "max + small");
	h_case(B, OHC_SUM, 0x0001, 0x0001, 0x0002, "subnormal sum");
	h_case(B, OHC_SUM, 0x007f, 0x0001, 0x0080, "subnormal -> normal");
	h_case(B, OHC_SUM, 0x7f80, 0xff80, 0x7fc0, "inf - inf");
	h_case(B, OHC_SUM, 0x7fc0, 0x3f80, 0x7fc0, "nan + 1");
	h_case(B, OHC_MAX, 0x3f80, 0x7fc0, 0x7fc0, "max(1, nan)");
	h_case(B, OHC_MIN, 0x7fc0, 0x3f80, 0x7fc0, "min(nan, 1)");
	h_case(B, OHC_MAX, 0x8000, 0x0000, 0x0000, "max(-0, +0)");
	h_case(B, OHC_MIN, 0x0000, 0x8000, 0x8000, "min(+0, -0)");
	h_case(B, OHC_MAX, 0xff80, 0x7f80, 0x7f80, "max(-inf, inf)");
}

/* NaN quieting keeps the payload on every ISA (F16C's rule). */
Test(reduce, half_nan_payload)
{
	h_case(OHC_FP16, OHC_MAX, 0x7c01, 0x3c00, 0x7e01, "snan quieted");
	h_case(OHC_FP16, OHC_MIN, 0x3c00, 0xfd55, 0xff55, "snan quieted");
	h_case(OHC_BF16, OHC_MAX, 0x7f81, 0x3f80, 0x7fc1, "snan quieted");
	h_case(OHC_BF16, OHC_MIN, 0x3f80, 0xff95, 0xffd5, "snan quieted");
	/* Bitwise, not just "is NaN": compare the raw results. */
	{
		size_t ii;

		for (ii = 0; ii < 3; ii++) {
			uint16_t a[33], b[33], d[33];
			int i;

			if (!cpu_runs(all_isas[ii]))
				continue;
			cr_assert_eq(ohc_reduce_force_isa(all_isas[ii]),
				     OHC_OK);
			for (i = 0; i < 33; i++) {
				a[i] = (uint16_t)(0x7c01 + i);
				b[i] = 0x3c00;
			}
			ohc_reduce_get(OHC_FP16, OHC_MAX)(d, a, b, 33);
			for (i = 0; i < 33; i++)
				EXPECT(d[i] == (a[i] | 0x0200), "%s %#x",
				       all_isas[ii], a[i]);
			for (i = 0; i < 33; i++)
				a[i] = (uint16_t)(0xff81 + i);
			ohc_reduce_get(OHC_BF16, OHC_MIN)(d, b, a, 33);
			for (i = 0; i < 33; i++)
				EXPECT(d[i] == (a[i] | 0x0040), "%s %#x",
				       all_isas[ii], a[i]);
		}
	}
}

/* ---- integer wrap-around ---- */

static void int_case(int dtype, int op, int64_t x, int64_t y, int64_t want,
		     const char *what)
{
	char bx[8], by[8], bw[8];

	int_store(dtype, bx, x);
	int_store(dtype, by, y);
	int_store(dtype, bw, want);
	check_pair(dtype, op, bx, by, bw, false, what);
}

Test(reduce, integer_wraparound)
{
	int_case(OHC_INT8, OHC_SUM, 127, 1, -128, "int8 127 + 1");
	int_case(OHC_INT8, OHC_SUM, -128, -1, 127, "int8 -128 - 1");
	int_case(OHC_INT8, OHC_PROD, 16, 16, 0, "int8 16 * 16");
	int_case(OHC_INT8, OHC_PROD, -128, -1, -128, "int8 -128 * -1");
	int_case(OHC_INT8, OHC_PROD, 11, 13, -113, "int8 11 * 13 = 143");
	int_case(OHC_INT8, OHC_PROD, -7, 9, -63, "int8 -7 * 9");
	int_case(OHC_INT8, OHC_MAX, -128, 127, 127, "int8 max");
	int_case(OHC_INT8, OHC_MIN, -128, 127, -128, "int8 min");
	int_case(OHC_INT16, OHC_SUM, 32767, 1, -32768, "int16 max + 1");
	int_case(OHC_INT16, OHC_MIN, -1, 1, -1, "int16 min signed");
	int_case(OHC_INT32, OHC_SUM, INT32_MAX, 1, INT32_MIN, "int32 max+1");
	int_case(OHC_INT32, OHC_PROD, 65536, 65536, 0, "int32 2^16 * 2^16");
	int_case(OHC_INT32, OHC_PROD, INT32_MIN, -1, INT32_MIN,
		 "int32 min * -1");
	int_case(OHC_INT32, OHC_MAX, -5, -6, -5, "int32 max");
	int_case(OHC_INT64, OHC_SUM, INT64_MAX, 1, INT64_MIN, "int64 max+1");
	int_case(OHC_INT64, OHC_PROD, INT64_MIN, -1, INT64_MIN,
		 "int64 min * -1");
	int_case(OHC_INT64, OHC_PROD, 0x100000001ll, 0x100000001ll,
		 0x200000001ll, "int64 (2^32+1)^2");
	int_case(OHC_INT64, OHC_PROD, -3, 0x5555555555555556ll, -2,
		 "int64 -3 * 0x5555..56");
	int_case(OHC_INT64, OHC_MAX, -1, 1, 1, "int64 max signed");
	int_case(OHC_INT64, OHC_MIN, INT64_MIN, INT64_MAX, INT64_MIN,
		 "int64 min signed");
	/* uint64 via bit patterns: -1 is UINT64_MAX. */
	int_case(OHC_UINT64, OHC_SUM, -1, 1, 0, "uint64 max + 1");
	int_case(OHC_UINT64, OHC_PROD, -1, -1, 1, "uint64 max * max");
	int_case(OHC_UINT64, OHC_MAX, INT64_MIN, 1, INT64_MIN,
		 "uint64 max(2^63, 1) unsigned");
	int_case(OHC_UINT64, OHC_MIN, -1, 0, 0, "uint64 min(max, 0)");
	int_case(OHC_UINT64, OHC_MIN, INT64_MAX, INT64_MIN, INT64_MAX,
		 "uint64 min(2^63-1, 2^63)");
}

/* ---- getters, dispatch ---- */

Test(reduce, unsupported_pairs_are_null)
{
	int dt, op;
	size_t ii;

	for (ii = 0; ii < 3; ii++) {
		if (!cpu_runs(all_isas[ii]))
			continue;
		cr_assert_eq(ohc_reduce_force_isa(all_isas[ii]), OHC_OK);
		for (dt = -3; dt < 22; dt++) {
			for (op = -2; op < 6; op++) {
				bool sup = ohc_reduce_supported(dt, op);

				cr_expect_eq(ohc_reduce_get(dt, op) != NULL,
					     sup, "%s dtype %d op %d",
					     all_isas[ii], dt, op);
				cr_expect_eq(ohc_reduce_n_get(dt, op) != NULL,
					     sup, "%s n dtype %d op %d",
					     all_isas[ii], dt, op);
			}
		}
		cr_expect_null(ohc_reduce_get(OHC_INT16, OHC_PROD));
		cr_expect_null(ohc_reduce_get(OHC_BF16, OHC_PROD));
		cr_expect_null(ohc_reduce_get(OHC_UINT8, OHC_SUM));
		cr_expect_null(ohc_reduce_get(OHC_UINT32, OHC_MIN));
		cr_expect_null(ohc_reduce_n_get(OHC_BF16, OHC_PROD));
		for (op = 0; op < 4; op++) {
			cr_expect_null(ohc_reduce_get(OHC_INT128, op));
			cr_expect_null(ohc_reduce_get(13, op));
			cr_expect_null(ohc_reduce_get(OHC_FP8E5M2, op));
		}
		cr_expect_not_null(ohc_reduce_get(OHC_UINT64, OHC_PROD));
	}
}

Test(reduce, isa_dispatch)
{
	const char *best = cpu_runs("avx512") ? "avx512"
			   : cpu_runs("avx2") ? "avx2"
					      : "generic";
	ohc_reduce_fn g, v;
	size_t ii;

	cr_expect_str_eq(ohc_reduce_isa(), best);
	for (ii = 0; ii < 3; ii++) {
		cr_expect_eq(ohc_reduce_isa_available(all_isas[ii]),
			     cpu_runs(all_isas[ii]), "%s", all_isas[ii]);
		cr_expect_eq(ohc_reduce_force_isa(all_isas[ii]),
			     cpu_runs(all_isas[ii]) ? OHC_OK
						    : OHC_ERR_UNSUPPORTED,
			     "%s", all_isas[ii]);
	}
	cr_expect_eq(ohc_reduce_force_isa("sse9"), OHC_ERR_INVALID);
	cr_expect_not(ohc_reduce_isa_available("sse9"));
	cr_expect_not(ohc_reduce_isa_available(NULL));
	cr_assert_eq(ohc_reduce_force_isa("generic"), OHC_OK);
	cr_expect_str_eq(ohc_reduce_isa(), "generic");
	g = ohc_reduce_get(OHC_FP32, OHC_SUM);
	cr_assert_eq(ohc_reduce_force_isa(NULL), OHC_OK);
	cr_expect_str_eq(ohc_reduce_isa(), best);
	v = ohc_reduce_get(OHC_FP32, OHC_SUM);
	/* A vector ISA really swaps in a different kernel. */
	if (strcmp(best, "generic") != 0)
		cr_expect_neq((void *)g, (void *)v);
}

/* Every ISA gives the generic kernel's bits on all fp16/bf16 patterns. */
Test(reduce, half_isas_agree_bitwise)
{
	static const int dts[] = {OHC_FP16, OHC_BF16};
	uint16_t *a = xalloc(65536 * 2), *b = xalloc(65536 * 2);
	uint16_t *ref = xalloc(65536 * 2), *got = xalloc(65536 * 2);
	uint64_t rng = 77;
	int di, op, i;
	size_t ii;

	for (i = 0; i < 65536; i++) {
		a[i] = (uint16_t)i;
		b[i] = (uint16_t)rng_next(&rng);
	}
	for (di = 0; di < 2; di++) {
		for (op = 0; op < 4; op++) {
			if (!ohc_reduce_supported(dts[di], op))
				continue;
			cr_assert_eq(ohc_reduce_force_isa("generic"), OHC_OK);
			ohc_reduce_get(dts[di], op)(ref, a, b, 65536);
			for (ii = 1; ii < 3; ii++) {
				if (!cpu_runs(all_isas[ii]))
					continue;
				cr_assert_eq(ohc_reduce_force_isa(all_isas[ii]),
					     OHC_OK);
				ohc_reduce_get(dts[di], op)(got, a, b, 65536);
				for (i = 0; i < 65536; i++) {
					bool both_nan_in =
						half_isnan(fmt_of(dts[di]),
							   a[i]) &&
						half_isnan(fmt_of(dts[di]),
							   b[i]);
					/* Which of two NaN inputs a hardware
					 * add returns is not specified. */
					if (got[i] == ref[i] ||
					    (both_nan_in && op < 2))
						continue;
					cr_expect_fail("%s %s %s: %#06x, %#06x"
						       " -> %#06x, generic "
						       "%#06x",
						       all_isas[ii],
						       ohc_dtype_name(dts[di]),
						       ohc_redop_name(op), a[i],
						       b[i], got[i], ref[i]);
					break;
				}
			}
		}
	}
	free(a);
	free(b);
	free(ref);
	free(got);
}

/* ---- scalar conversions in dtype.h against the reference ---- */

static void check_widen(int dtype, float (*conv)(uint16_t))
{
	const struct half_fmt *f = fmt_of(dtype);
	uint32_t h;

	for (h = 0; h < 65536; h++) {
		float got = conv((uint16_t)h);
		double want = ref_half_to_double(f, (uint16_t)h);

		if (isnan(want)) {
			/* Same sign and payload; fp16 (like F16C) quiets
			 * signalling NaNs, bf16 widening is a plain shift. */
			uint32_t bits, exp;
			int shift = 23 - f->mbits;

			memcpy(&bits, &got, 4);
			exp = (h & 0x8000u) << 16 | 0x7f800000u |
			      (h & ((1u << f->mbits) - 1)) << shift;
			if (dtype == OHC_FP16)
				exp |= 0x00400000u;
			EXPECT(bits == exp, "%s %#x -> %#x want %#x",
			       ohc_dtype_name(dtype), h, bits, exp);
		} else {
			EXPECT(got == want && !signbit(got) == !signbit(want),
			       "%s %#x -> %a want %a", ohc_dtype_name(dtype), h,
			       got, want);
		}
	}
}

Test(conv, widen_exhaustive)
{
	check_widen(OHC_FP16, ohc_fp16_to_fp32);
	check_widen(OHC_BF16, ohc_bf16_to_fp32);
}

static void check_narrow(int dtype, uint16_t (*conv)(float))
{
	const struct half_fmt *f = fmt_of(dtype);
	int low_bits = 23 - f->mbits; /* fp32 bits below the half's lsb */
	uint32_t lows[7], top, fails = 0;
	uint64_t rng = 5;
	int k;

	lows[0] = 0;
	lows[1] = 1;
	lows[2] = (1u << (low_bits - 1)) - 1; /* just below a tie */
	lows[3] = 1u << (low_bits - 1);	      /* tie */
	lows[4] = (1u << (low_bits - 1)) + 1; /* just above */
	lows[5] = (1u << low_bits) - 1;
	for (top = 0; top < (1u << (32 - low_bits)); top++) {
		lows[6] = (uint32_t)rng_next(&rng) & ((1u << low_bits) - 1);
		for (k = 0; k < 7; k++) {
			uint32_t bits = top << low_bits | lows[k];
			float v;
			uint16_t got, want;

			memcpy(&v, &bits, 4);
			got = conv(v);
			if (isnan(v))
				want = (uint16_t)(bits >> 16 & 0x8000) |
				       f->inf | (1u << (f->mbits - 1)) |
				       (uint16_t)((bits & 0x7fffff) >>
						  low_bits);
			else
				want = ref_double_to_half(f, v);
			if (got != want && fails++ < 10)
				cr_expect_fail("%s %#010x -> %#06x want %#06x",
					       ohc_dtype_name(dtype), bits, got,
					       want);
		}
	}
	cr_expect_eq(fails, 0);
}

Test(conv, fp16_narrow)
{
	check_narrow(OHC_FP16, ohc_fp32_to_fp16);
}

Test(conv, bf16_narrow)
{
	check_narrow(OHC_BF16, ohc_fp32_to_bf16);
}
