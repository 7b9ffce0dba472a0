/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SipHash-2-4 against the reference test vectors (key 00..0f, message
 * 00..len-1), for the lengths that exercise every tail size.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "util/siphash.h"

Test(siphash, reference_vectors)
{
	/* The reference implementation's vectors, read as little-endian. */
	static const struct {
		size_t len;
		uint64_t want;
	} v[] = {
		{0, 0x726fdb47dd0e0e31ull},  {1, 0x74f839c593dc67fdull},
		{7, 0xab0200f58b01d137ull},  {8, 0x93f5f5799a932462ull},
		{15, 0xa129ca6149be45e5ull}, {63, 0x958a324ceb064572ull},
	};
	uint64_t key[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
	uint8_t msg[64];

	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++)
		cr_expect_eq(
			ohc_siphash24(key, msg, v[i].len), v[i].want,
			"length %zu: %016llx", v[i].len,
			(unsigned long long)ohc_siphash24(key, msg, v[i].len));
}
