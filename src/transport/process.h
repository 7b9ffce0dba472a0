/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TRANSPORT_PROCESS_H
#define OHC_TRANSPORT_PROCESS_H

/*
 * Which process is this? A pid alone does not say: processes in different
 * pid namespaces on one host (containers sharing the host network, each
 * rank being pid 1) have equal pids. The token mixes the pid, the process
 * start time and an address that ASLR places anew for every exec, so a
 * forked child and an unrelated process with the same pid both differ.
 * Deterministic within a process: no state, no locking, fork-safe. Each
 * file including this has its own anchor: compare only tokens made by the
 * same transport.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline uint64_t ohc_process_token(void)
{
	static const char anchor; /* its address is per-exec under ASLR */
	unsigned long long start = 0;
	char line[1024], *p;
	uint64_t h = 0xcbf29ce484222325ull;
	uint64_t parts[3];
	FILE *f = fopen("/proc/self/stat", "r");

	/* Field 22 (starttime) counts from the last ')' (field 2 ends). */
	if (f) {
		if (fgets(line, sizeof(line), f) && (p = strrchr(line, ')')))
			sscanf(p + 1,
			       " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			       "%*u %*u %*d %*d %*d %*d %*d %*d %llu",
			       &start);
		fclose(f);
	}
	parts[0] = (uint64_t)getpid();
	parts[1] = (uint64_t)(uintptr_t)&anchor;
	parts[2] = start;
	for (unsigned i = 0; i < 3; i++) {
		for (unsigned b = 0; b < 8; b++) {
			h ^= (parts[i] >> (8 * b)) & 0xff;
			h *= 0x100000001b3ull;
		}
	}
	return h;
}

#endif
