/* SPDX-License-Identifier: Apache-2.0 */
/* The CPUs this host gives the process, and its L2 cache (cpus.h). */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/cpus.h"

/* The first line of path, NUL-terminated without its newline; 0 if none. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return 0;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* CPUs' worth of time quota / period allows (rounded up); 0: no limit. */
static unsigned quota_cpus(long long quota, long long period)
{
	if (quota <= 0 || period <= 0)
		return 0;
	return (unsigned)((quota + period - 1) / period);
}

/* The limit one level's files set; 0: none (or unreadable). */
static unsigned level_limit(const char *dir, int v2)
{
	char path[PATH_MAX], buf[64], max[32];
	long long q, p;

	if (v2) {
		if (snprintf(path, sizeof(path), "%s/cpu.max", dir) >=
			    (int)sizeof(path) ||
		    !read_line(path, buf, sizeof(buf)) ||
		    sscanf(buf, "%31s %lld", max, &p) != 2 ||
		    !strcmp(max, "max") || sscanf(max, "%lld", &q) != 1)
			return 0;
		return quota_cpus(q, p);
	}
	if (snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir) >=
		    (int)sizeof(path) ||
	    !read_line(path, buf, sizeof(buf)) || sscanf(buf, "%lld", &q) != 1)
		return 0;
	if (snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir) >=
		    (int)sizeof(path) ||
	    !read_line(path, buf, sizeof(buf)) || sscanf(buf, "%lld", &p) != 1)
		return 0;
	return quota_cpus(q, p);
}

/*
 * The tightest limit on cgroup cg (under mount) and its ancestors, the
 * mount's root included: "/a/b", then "/a", then "".
 */
static unsigned path_limit(const char *mount, const char *cg, int v2)
{
	char dir[PATH_MAX], rel[PATH_MAX];
	unsigned best = 0;

	if (snprintf(rel, sizeof(rel), "%s", strcmp(cg, "/") ? cg : "") >=
	    (int)sizeof(rel))
		return 0;
	for (;;) {
		char *slash = strrchr(rel, '/');

		if (snprintf(dir, sizeof(dir), "%s%s", mount, rel) <
		    (int)sizeof(dir)) {
			unsigned l = level_limit(dir, v2);

			if (l && (!best || l < best))
				best = l;
		}
		if (!slash)
			return best;
		*slash = '\0';
	}
}

/* Whether the comma-separated list names the cpu controller. */
static int names_cpu(const char *list)
{
	size_t n = strlen("cpu");

	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");

		if (len == n && !strncmp(p, "cpu", n))
			return 1;
		p += len + (p[len] == ',');
	}
	return 0;
}

unsigned ohc_host_cpus_at(const char *root, long online)
{
	char path[PATH_MAX], line[PATH_MAX + 64], mount[PATH_MAX];
	unsigned cpus = online > 0 && online < 65536 ? (unsigned)online : 1;
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/proc/self/cgroup", root) >=
		    (int)sizeof(path) ||
	    !(f = fopen(path, "re")))
		return cpus;
	while (fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *cg;
		unsigned l = 0;

		if (!ctl || !(cg = strchr(++ctl, ':')))
			continue;
		*cg++ = '\0';
		cg[strcspn(cg, "\n")] = '\0';
		if (cg[0] != '/')
			continue;
		if (!*ctl) { /* v2: the unified hierarchy */
			if (snprintf(mount, sizeof(mount), "%s/sys/fs/cgroup",
				     root) < (int)sizeof(mount))
				l = path_limit(mount, cg, 1);
		} else if (names_cpu(ctl)) { /* v1: mounted by its list */
			if (snprintf(mount, sizeof(mount),
				     "%s/sys/fs/cgroup/%s", root,
				     ctl) < (int)sizeof(mount))
				l = path_limit(mount, cg, 0);
		}
		if (l && l < cpus)
			cpus = l;
	}
	fclose(f);
	return cpus;
}

static unsigned host_cpus;
static pthread_once_t host_cpus_once = PTHREAD_ONCE_INIT;

static void host_cpus_read(void)
{
	host_cpus = ohc_host_cpus_at("", sysconf(_SC_NPROCESSORS_ONLN));
}

unsigned ohc_host_cpus(void)
{
	pthread_once(&host_cpus_once, host_cpus_read);
	return host_cpus;
}

size_t ohc_l2_cache_bytes(void)
{
	long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);

	return l2 > 0 ? (size_t)l2 : 0;
}
