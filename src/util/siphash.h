/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_SIPHASH_H
#define OHC_UTIL_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit pseudorandom
 * function. Without the 128-bit key its output cannot be predicted or
 * forged, and from outputs the key cannot be recovered; it is not a
 * cipher and gives no secrecy to what it is computed over.
 */
uint64_t ohc_siphash24(const uint64_t key[2], const void *data, size_t len);

#endif
