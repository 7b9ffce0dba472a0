/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_CPUS_H
#define OHC_UTIL_CPUS_H

#include <stddef.h>

/*
 * The CPUs this host gives the process: its online CPUs, capped by the CPU
 * time its cgroup may use (cgroup v2 cpu.max, v1 cpu.cfs_quota_us over
 * cpu.cfs_period_us, at its own level and every one above), rounded up:
 * a container given 2 CPUs' time on a 64-core host has 2. Not the
 * affinity mask: a launcher that binds each rank to a CPU of its own
 * (srun --cpu-bind) leaves every rank a mask of one CPU, which is not
 * ranks sharing one. At least 1; read once.
 */
unsigned ohc_host_cpus(void);

/* The same, the files read under root ("" for "/") and online given: the
 * tests' entry. */
unsigned ohc_host_cpus_at(const char *root, long online);

/*
 * Bytes of a core's L2 cache (sysconf), 0 where the system does not say:
 * what the cost model's cache-resident zero copy (algo/cost.c) and the
 * shm rings' automatic size (transport/shm) are sized to.
 */
size_t ohc_l2_cache_bytes(void);

#endif
