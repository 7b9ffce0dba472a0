/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPUs a host gives the process (util/cpus.c): the online CPUs, capped
 * by its cgroup's CPU time at its level or any above, in cgroup v2 and v1
 * layouts built under a temporary root; malformed or missing files cap
 * nothing.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cpus.h"
#include "util/file.h"

static char root[256];

static void setup(void)
{
	char tmpl[] = "/tmp/ohc_cpus.XXXXXX";

	cr_assert(mkdtemp(tmpl));
	snprintf(root, sizeof(root), "%s", tmpl);
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_expect_eq(system(cmd), 0);
}

/* Write text to root/rel, making its folders. */
static void put(const char *rel, const char *text)
{
	char path[PATH_MAX], dir[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	cr_assert_eq(ohc_mkdir_p(dir, sizeof(dir)), 0, "%s", dir);
	f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

TestSuite(cpus, .init = setup, .fini = teardown);

Test(cpus, no_cgroup_files_leave_the_online_count)
{
	cr_assert_eq(ohc_host_cpus_at(root, 16), 16);
	put("proc/self/cgroup", "0::/job\n");
	cr_assert_eq(ohc_host_cpus_at(root, 16), 16, "no cpu.max");
	cr_assert_eq(ohc_host_cpus_at(root, 0), 1, "at least one");
}

Test(cpus, v2_quota_caps_rounded_up)
{
	put("proc/self/cgroup", "0::/slice/job\n");
	put("sys/fs/cgroup/slice/job/cpu.max", "150000 100000\n");
	cr_assert_eq(ohc_host_cpus_at(root, 64), 2, "1.5 CPUs' time: 2");
	cr_assert_eq(ohc_host_cpus_at(root, 1), 1, "never above online");
	put("sys/fs/cgroup/slice/job/cpu.max", "max 100000\n");
	cr_assert_eq(ohc_host_cpus_at(root, 64), 64, "max: no limit");
	/* a tighter limit above counts too */
	put("sys/fs/cgroup/slice/cpu.max", "400000 100000\n");
	cr_assert_eq(ohc_host_cpus_at(root, 64), 4);
	put("sys/fs/cgroup/cpu.max", "300000 100000\n");
	cr_assert_eq(ohc_host_cpus_at(root, 64), 3, "the mount's root");
}

Test(cpus, v2_container_root)
{
	/* a cgroup namespace: the process sees its own cgroup as / */
	put("proc/self/cgroup", "0::/\n");
	put("sys/fs/cgroup/cpu.max", "200000 100000\n");
	cr_assert_eq(ohc_host_cpus_at(root, 64), 2);
}

Test(cpus, v1_cfs_quota)
{
	put("proc/self/cgroup", "4:memory:/x\n2:cpu,cpuacct:/docker/abc\n"
				"0::/\n");
	put("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us",
	    "250000\n");
	put("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us",
	    "100000\n");
	cr_assert_eq(ohc_host_cpus_at(root, 32), 3);
	put("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n");
	cr_assert_eq(ohc_host_cpus_at(root, 32), 32, "-1: no limit");
	/* cpuacct alone is not the cpu controller */
	put("proc/self/cgroup", "2:cpuacct:/docker/abc\n");
	put("sys/fs/cgroup/cpuacct/docker/abc/cpu.cfs_quota_us", "100000\n");
	put("sys/fs/cgroup/cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
	cr_assert_eq(ohc_host_cpus_at(root, 32), 32);
}

Test(cpus, malformed_files_cap_nothing)
{
	put("proc/self/cgroup", "garbage\n0:no-path\n0::relative\n0::/j\n");
	put("sys/fs/cgroup/j/cpu.max", "lots of time\n");
	cr_assert_eq(ohc_host_cpus_at(root, 8), 8);
	put("sys/fs/cgroup/j/cpu.max", "-5 100000\n");
	cr_assert_eq(ohc_host_cpus_at(root, 8), 8, "negative quota");
	put("sys/fs/cgroup/j/cpu.max", "100000 0\n");
	cr_assert_eq(ohc_host_cpus_at(root, 8), 8, "zero period");
}

Test(cpus, this_host)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	cr_assert_geq(ohc_host_cpus(), 1);
	cr_assert_leq(ohc_host_cpus(), (unsigned)online);
}
