/* SPDX-License-Identifier: Apache-2.0 */
#include "util/siphash.h"

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

#define SIPROUND(v0, v1, v2, v3)                                               \
	do {                                                                   \
		v0 += v1;                                                      \
		v1 = rotl(v1, 13);                                             \
		v1 ^= v0;                                                      \
		v0 = rotl(v0, 32);                                             \
		v2 += v3;                                                      \
		v3 = rotl(v3, 16);                                             \
		v3 ^= v2;                                                      \
		v0 += v3;                                                      \
		v3 = rotl(v3, 21);                                             \
		v3 ^= v0;                                                      \
		v2 += v1;                                                      \
		v1 = rotl(v1, 17);                                             \
		v1 ^= v2;                                                      \
		v2 = rotl(v2, 32);                                             \
	} while (0)

uint64_t ohc_siphash24(const uint64_t key[2], const void *data, size_t len)
{
	const uint8_t *p = data, *end = p + (len & ~(size_t)7);
	uint64_t v0 = key[0] ^ 0x736f6d6570736575ull;
	uint64_t v1 = key[1] ^ 0x646f72616e646f6dull;
	uint64_t v2 = key[0] ^ 0x6c7967656e657261ull;
	uint64_t v3 = key[1] ^ 0x7465646279746573ull;
	uint64_t m;

	for (; p != end; p += 8) {
		m = load_le64(p);
		v3 ^= m;
		SIPROUND(v0, v1, v2, v3);
		SIPROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	/* The last block: the remaining bytes and the length's low byte. */
	m = (uint64_t)len << 56;
	for (size_t i = 0; i < (len & 7); i++)
		m |= (uint64_t)p[i] << (8 * i);
	v3 ^= m;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= m;
	v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}
