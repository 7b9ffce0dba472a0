/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TEST_FUZZ_FUZZ_H
#define OHC_TEST_FUZZ_FUZZ_H

/*
 * Shared by the libFuzzer targets of test/fuzz: reading fields off the
 * fuzzer's input, and the checks a target asserts (a failed one aborts,
 * which libFuzzer reports as a crash with the input that caused it).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The input, consumed from the front; past its end every read gives 0. */
struct fz {
	const uint8_t *p;
	size_t n;
};

static inline struct fz fz_init(const uint8_t *data, size_t size)
{
	struct fz f = {.p = data, .n = size};

	return f;
}

/* Copy up to len bytes into out, zero-filling what the input lacks. */
static inline void fz_bytes(struct fz *f, void *out, size_t len)
{
	size_t k = len < f->n ? len : f->n;

	memcpy(out, f->p, k);
	memset((uint8_t *)out + k, 0, len - k);
	f->p += k;
	f->n -= k;
}

static inline uint8_t fz_u8(struct fz *f)
{
	uint8_t v;

	fz_bytes(f, &v, 1);
	return v;
}

static inline uint16_t fz_u16(struct fz *f)
{
	uint8_t b[2];

	fz_bytes(f, b, 2);
	return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t fz_u32(struct fz *f)
{
	return fz_u16(f) | (uint32_t)fz_u16(f) << 16;
}

static inline uint64_t fz_u64(struct fz *f)
{
	return fz_u32(f) | (uint64_t)fz_u32(f) << 32;
}

/* Take the next len bytes (fewer at the end) in place. */
static inline const uint8_t *fz_take(struct fz *f, size_t len, size_t *got_p)
{
	const uint8_t *p = f->p;

	*got_p = len < f->n ? len : f->n;
	f->p += *got_p;
	f->n -= *got_p;
	return p;
}

/* A NUL-terminated copy of the next len bytes (the rest when len is 0),
 * cut at the first NUL; free() it. */
static inline char *fz_str(struct fz *f, size_t len)
{
	size_t got;
	const uint8_t *p = fz_take(f, len ? len : f->n, &got);
	const uint8_t *nul = memchr(p, '\0', got);
	size_t n = nul ? (size_t)(nul - p) : got;
	char *s = malloc(n + 1);

	if (!s)
		abort();
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* A property of the code under test that must hold. */
#define FZ_ASSERT(cond)                                                        \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: fuzz check failed: %s\n",      \
				__FILE__, __LINE__, #cond);                    \
			abort();                                               \
		}                                                              \
	} while (0)

/* Quiet library logging: OPENHCCL_DEBUG=NONE unless the caller set it
 * (ci/fuzz.sh does not; OPENHCCL_DEBUG=DEBUG shows what a target hits). */
static inline void fz_quiet(void)
{
	setenv("OPENHCCL_DEBUG", "NONE", 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#endif
