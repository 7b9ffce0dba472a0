/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hccl_doctor run as a user runs it: the exit status and the report. On a
 * host without RDMA it must say so with a fix line; where devices exist
 * (the Soft-RoCE VM) it must list them with their ports and a RoCEv2 IPv4
 * GID. --config shows where each value comes from and flags malformed
 * ones; the rank-table ping names an unreachable peer, and two doctors of
 * one rank table reach each other.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/ohc_test.h"

struct run {
	int status; /* exit status, or -1 */
	char out[65536];
};

static const char *doctor_path(void)
{
	return ohc_test_tool_path("doctor/hccl_doctor");
}

static const char *data_path(const char *name)
{
	static char buf[PATH_MAX];
	const char *slash = strrchr(__FILE__, '/');

	cr_assert(__FILE__[0] == '/' && slash);
	snprintf(buf, sizeof(buf), "%.*s/../data/ranktables/%s",
		 (int)(slash - __FILE__), __FILE__, name);
	return buf;
}

/* Start the doctor with args and NULL-terminated "NAME=VALUE" env. */
static pid_t start(char *const args[], char *const env[], int *fd_p)
{
	int p[2];
	pid_t pid;

	cr_assert(pipe(p) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		char *argv[16] = {(char *)doctor_path()};
		int n = 1;

		for (; args && args[n - 1] && n < 15; n++)
			argv[n] = args[n - 1];
		argv[n] = NULL;
		for (; env && *env; env++)
			putenv(*env);
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	*fd_p = p[0];
	return pid;
}

static void finish(pid_t pid, int fd, struct run *r)
{
	size_t len = 0;
	ssize_t n;
	int st;

	while ((n = read(fd, r->out + len, sizeof(r->out) - 1 - len)) > 0)
		len += (size_t)n;
	r->out[len] = '\0';
	close(fd);
	cr_assert(waitpid(pid, &st, 0) == pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void run_doctor(char *const args[], char *const env[], struct run *r)
{
	int fd;
	pid_t pid = start(args, env, &fd);

	finish(pid, fd, r);
}

/* RDMA device names under /sys/class/infiniband; 0 when none. */
static int rdma_devices(char names[][64], int max)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max)
		if (e->d_name[0] != '.')
			snprintf(names[n++], 64, "%.63s", e->d_name);
	closedir(d);
	return n;
}

/* A TCP port that was free a moment ago. */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	cr_assert(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	cr_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

Test(doctor, reports_rdma_devices_or_their_absence)
{
	static struct run r;
	char names[8][64];
	int ndev = rdma_devices(names, 8);

	run_doctor(NULL, NULL, &r);
	cr_assert(strstr(r.out, "== RDMA devices =="), "%s", r.out);
	cr_assert(strstr(r.out, "== locked memory"), "%s", r.out);
	cr_assert(strstr(r.out, "pagemap shows page frames") ||
			  strstr(r.out, "pagemap hides page frames") ||
			  strstr(r.out, "OPENHCCL_RDMA_MR_CACHE=0: no RDMA"),
		  "the registration cache's line:\n%s", r.out);
	cr_assert(strstr(r.out, "== cross-memory attach"), "%s", r.out);
	cr_assert(strstr(r.out, "== hugepages"), "%s", r.out);
	cr_assert(strstr(r.out, "== NUMA"), "%s", r.out);
	cr_assert(strstr(r.out, "== bootstrap"), "%s", r.out);
	if (ndev == 0) {
		const char *p;

		/* shared memory is all this host needs: said, and fine */
		cr_assert(strstr(r.out, "[ok]    no RDMA devices"),
			  "no RDMA device here, the report must say so:\n%s",
			  r.out);
		cr_assert(strstr(r.out, "shared memory is all ranks on this "
					"host need"),
			  "%s", r.out);
		cr_assert(!strstr(r.out, "[FAIL]  no RDMA"), "%s", r.out);
		/* ranks on other hosts need RDMA: a problem with a fix */
		run_doctor((char *[]){"--multi-host", NULL}, NULL, &r);
		p = strstr(r.out, "[FAIL]  no RDMA devices, but --multi-host");
		cr_assert(p, "%s", r.out);
		cr_assert(!strncmp(strchr(p, '\n') + 1, "        fix: ", 13),
			  "the problem line needs a fix line:\n%s", r.out);
		cr_assert_eq(r.status, 1, "problems found must exit 1:\n%s",
			     r.out);
		/* so do same-host ranks over RDMA */
		run_doctor(NULL, (char *[]){"HCCL_INTRA_ROCE_ENABLE=1", NULL},
			   &r);
		cr_assert(strstr(r.out, "[FAIL]  no RDMA devices, but "
					"HCCL_INTRA_ROCE_ENABLE=1"),
			  "%s", r.out);
		cr_assert_eq(r.status, 1, "%s", r.out);
		return;
	}
	/* the Soft-RoCE VM: every device listed, with a port and RoCEv2 */
	for (int i = 0; i < ndev; i++) {
		char want[128];

		snprintf(want, sizeof(want), "device  %.63s:", names[i]);
		cr_assert(strstr(r.out, want), "%s not listed:\n%s", names[i],
			  r.out);
	}
	cr_assert(strstr(r.out, "        port 1: "), "%s", r.out);
	cr_assert(strstr(r.out, "GID["), "%s", r.out);
	cr_assert(strstr(r.out, "<- RoCEv2 IPv4"), "%s", r.out);
	cr_assert(!strstr(r.out, "no RDMA devices"), "%s", r.out);
}

/* First line of a sysfs file, without the newline; "" if unreadable. */
static void sysfs_read(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* Whether ip (dotted) is an IPv4 address of interface ifname. */
static int ifname_has_ip(const char *ifname, const char *ip)
{
	struct ifaddrs *ifs, *i;
	char a[INET_ADDRSTRLEN];
	int found = 0;

	cr_assert(getifaddrs(&ifs) == 0);
	for (i = ifs; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    strcmp(i->ifa_name, ifname))
			continue;
		inet_ntop(AF_INET,
			  &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a,
			  sizeof(a));
		found = !strcmp(a, ip);
	}
	freeifaddrs(ifs);
	return found;
}

static void expect_memlock(const struct run *r);

/*
 * On RDMA (the Soft-RoCE VM): each device's port 1 as the kernel shows
 * it in sysfs, read here independently of libibverbs: the state, the
 * first RoCE v2 GID that maps an IPv4 address (index and address, which
 * must be an address of the GID's netdev), and for rxe the active MTU
 * the driver derives from the netdev MTU (the largest IB MTU that fits
 * after its 80 header bytes); and the memlock line. One doctor run: the
 * VM stage runs this test alone (api.doctor_rdma), a run costs seconds
 * there.
 */
Test(doctor, rdma_report_matches_sysfs)
{
	static struct run r;
	char names[8][64];
	int ndev = rdma_devices(names, 8);

	if (ndev == 0)
		cr_skip_test("no RDMA device here (the Soft-RoCE VM stage "
			     "runs this)");
	run_doctor(NULL, NULL, &r);
	expect_memlock(&r);
	for (int d = 0; d < ndev; d++) {
		char path[512], state[64], gid[64], type[64], nd[64], mtu[32];
		char want[256], ip[INET_ADDRSTRLEN] = "";
		int idx = -1;

		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%.63s/ports/1/state", names[d]);
		sysfs_read(path, state, sizeof(state));
		cr_assert(state[0], "no %s", path);
		if (!strstr(state, "ACTIVE")) {
			snprintf(want, sizeof(want), "%.63s port 1 is ",
				 names[d]);
			cr_assert(strstr(r.out, want), "%s is %s:\n%s",
				  names[d], state, r.out);
			continue;
		}
		for (int i = 0; i < 256 && idx < 0; i++) {
			unsigned a, b, c, e;

			snprintf(path, sizeof(path),
				 "/sys/class/infiniband/%.63s/ports/1/gids/%d",
				 names[d], i);
			sysfs_read(path, gid, sizeof(gid));
			snprintf(
				path, sizeof(path),
				"/sys/class/infiniband/%.63s/ports/1/gid_attrs/"
				"types/%d",
				names[d], i);
			sysfs_read(path, type, sizeof(type));
			if (!strstr(type, "v2") ||
			    strncmp(gid,
				    "0000:0000:0000:0000:0000:ffff:", 30) ||
			    sscanf(gid + 30, "%2x%2x:%2x%2x", &a, &b, &c, &e) !=
				    4)
				continue;
			idx = i;
			snprintf(ip, sizeof(ip), "%u.%u.%u.%u", a, b, c, e);
		}
		cr_assert(idx >= 0, "%s has no RoCE v2 IPv4 GID in sysfs",
			  names[d]);
		snprintf(want, sizeof(want),
			 "[ok]    %.63s port 1 usable, RoCEv2 IPv4 %s (GID "
			 "index "
			 "%d)",
			 names[d], ip, idx);
		cr_assert(strstr(r.out, want), "want \"%s\":\n%s", want, r.out);
		snprintf(want, sizeof(want), "IPv4 %s  <- RoCEv2 IPv4", ip);
		cr_assert(strstr(r.out, want), "want \"%s\":\n%s", want, r.out);
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%.63s/ports/1/gid_attrs/ndevs/"
			 "%d",
			 names[d], idx);
		sysfs_read(path, nd, sizeof(nd));
		cr_assert(ifname_has_ip(nd, ip),
			  "GID %d of %s: %s is not on %s", idx, names[d], ip,
			  nd);
		snprintf(path, sizeof(path), "/sys/class/net/%.63s/mtu", nd);
		sysfs_read(path, mtu, sizeof(mtu));
		if (!strncmp(names[d], "rxe", 3) && atoi(mtu) > 0) {
			int m = atoi(mtu) - 80, ib = 4096;

			while (ib > 256 && ib > m)
				ib /= 2;
			snprintf(want, sizeof(want),
				 "        port 1: active, active MTU %d ", ib);
			cr_assert(strstr(r.out, want),
				  "netdev %s MTU %s: want \"%s\":\n%s", nd, mtu,
				  want, r.out);
		}
	}
}

/* The memlock line is this process's limit (the doctor inherits it). */
static void expect_memlock(const struct run *r)
{
	struct rlimit rl;
	char want[128];

	cr_assert(getrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	if (rl.rlim_cur == RLIM_INFINITY)
		snprintf(want, sizeof(want), "memlock: unlimited");
	else
		snprintf(want, sizeof(want), "memlock: %llu KiB",
			 (unsigned long long)rl.rlim_cur >> 10);
	cr_assert(strstr(r->out, want), "want \"%s\":\n%s", want, r->out);
}

Test(doctor, memlock_is_the_rlimit)
{
	static struct run r;

	run_doctor((char *[]){"--shm-only", NULL}, NULL, &r);
	expect_memlock(&r);
}

Test(doctor, config_shows_sources_and_flags_malformed_values)
{
	static struct run r;
	char *env[] = {"HCCL_BUFFSIZE=64", "HCCL_RDMA_TC=13", NULL};
	char line[512];
	const char *p;

	run_doctor((char *[]){"--config", NULL}, env, &r);
	p = strstr(r.out, "HCCL_BUFFSIZE ");
	cr_assert(p, "%s", r.out);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
	cr_assert(strstr(line, "= 64 ") && strstr(line, "(env)"), "%s", line);
	cr_assert(!strstr(line, "MALFORMED"), "%s", line);
	p = strstr(r.out, "HCCL_CONNECT_TIMEOUT ");
	cr_assert(p, "%s", r.out);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
	cr_assert(strstr(line, "= 120 ") && strstr(line, "(default)"), "%s",
		  line);
	p = strstr(r.out, "HCCL_RDMA_TC ");
	cr_assert(p, "%s", r.out);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
	cr_assert(strstr(line, "(env)") && strstr(line, "MALFORMED"), "%s",
		  line);
	cr_assert(strstr(r.out, "[FAIL]  HCCL_RDMA_TC='13' is malformed"), "%s",
		  r.out);
	cr_assert(strstr(r.out, "fix: set HCCL_RDMA_TC to an integer in [0, "
				"255], a multiple of 4 (default 132), or "
				"unset it"),
		  "%s", r.out);
	cr_assert_eq(r.status, 1, "%s", r.out);

	/* every variable valid: exit 0, nothing flagged */
	run_doctor((char *[]){"--config", NULL},
		   (char *[]){"HCCL_RDMA_TC=12", NULL}, &r);
	cr_assert(!strstr(r.out, "MALFORMED"), "%s", r.out);
	cr_assert_eq(r.status, 0, "%s", r.out);
}

/*
 * On a host without RDMA whose ranks all stay on it, a healthy
 * environment passes: exit 0, no problem (warnings allowed).
 */
Test(doctor, shm_only_host_passes)
{
	static struct run r;
	char names[8][64];

	if (rdma_devices(names, 8))
		cr_skip_test("this host has RDMA devices");
	run_doctor(NULL, NULL, &r);
	cr_assert(strstr(r.out, "\n0 problem(s), "), "%s", r.out);
	cr_assert_eq(r.status, 0, "%s", r.out);
}

/*
 * OPENHCCL_DEBUG, OPENHCCL_DEBUG_SUBSYS, OPENHCCL_LOG_FILE and HCCL_ALGO
 * are checked by the library's own parsers (the log's, selection's), and
 * each fix line gives the values the variable takes.
 */
Test(doctor, log_and_algo_settings_validated)
{
	static const struct {
		const char *env, *fail, *fix;
	} bad[] = {
		{"OPENHCCL_DEBUG=LOUD", "[FAIL]  OPENHCCL_DEBUG='LOUD'",
		 "fix: set OPENHCCL_DEBUG to NONE, ERROR, WARN, INFO, DEBUG or "
		 "TRACE (default WARN), or unset it"},
		{"OPENHCCL_DEBUG_SUBSYS=coll,nope",
		 "[FAIL]  OPENHCCL_DEBUG_SUBSYS='coll,nope'",
		 "fix: set OPENHCCL_DEBUG_SUBSYS to a comma list of init, "
		 "boot, "
		 "shm, verbs, coll, algo, rt, env, api, mem, all"},
		{"OPENHCCL_LOG_FILE=/tmp/ohc.%q.log",
		 "[FAIL]  OPENHCCL_LOG_FILE='/tmp/ohc.%q.log'",
		 "fix: set OPENHCCL_LOG_FILE to a file path in an existing "
		 "directory; %h host, %p pid, %r rank"},
		{"OPENHCCL_LOG_FILE=/nonexistent-dir/ohc.log",
		 "[FAIL]  OPENHCCL_LOG_FILE='/nonexistent-dir/ohc.log'",
		 "fix: set OPENHCCL_LOG_FILE to a file path"},
		{"HCCL_ALGO=level0:NA;level1:fastest",
		 "[FAIL]  HCCL_ALGO='level0:NA;level1:fastest'",
		 "fix: set HCCL_ALGO to level0:NA;level1:<algo>"},
		{"HCCL_ALGO=allreduce=level0:NA;level1:ring/gossip=level0:NA",
		 "[FAIL]  HCCL_ALGO='allreduce=level0:NA;level1:ring/gossip=",
		 "<algo> one of ring, H-D_R, NHR, NHR_V1, NB, AHC, pipeline, "
		 "pairwise"},
	};
	static const char *const good[] = {
		"OPENHCCL_DEBUG=info",
		"OPENHCCL_DEBUG=WARNING",
		"OPENHCCL_DEBUG_SUBSYS=^shm,verbs",
		"OPENHCCL_LOG_FILE=/tmp/ohc.%h.%p.%r.log",
		"HCCL_ALGO=level0:NA;level1:H-D_R",
		"HCCL_ALGO=allreduce=level0:NA;level1:ring/others=level0:NA;"
		"level1:NHR",
	};
	static struct run r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char *env[] = {(char *)bad[i].env, NULL};

		run_doctor((char *[]){"--shm-only", NULL}, env, &r);
		cr_expect(strstr(r.out, bad[i].fail), "%s:\n%s", bad[i].env,
			  r.out);
		cr_expect(strstr(r.out, bad[i].fix), "%s: want '%s':\n%s",
			  bad[i].env, bad[i].fix, r.out);
		cr_expect_eq(r.status, 1, "%s", bad[i].env);
		run_doctor((char *[]){"--config", NULL}, env, &r);
		cr_expect(strstr(r.out, "MALFORMED"), "%s:\n%s", bad[i].env,
			  r.out);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		char *env[] = {(char *)good[i], NULL};

		run_doctor((char *[]){"--config", NULL}, env, &r);
		cr_expect(!strstr(r.out, "MALFORMED"), "%s:\n%s", good[i],
			  r.out);
		cr_expect_eq(r.status, 0, "%s:\n%s", good[i], r.out);
	}
	run_doctor((char *[]){"--version", NULL}, NULL, &r);
	cr_expect_eq(r.status, 0);
	cr_expect(strstr(r.out, "hccl_doctor (OpenHCCL) "), "%s", r.out);
}

Test(doctor, unreachable_peer_is_named)
{
	static struct run r;
	char *args[] = {"--shm-only",
			"--ranktable",
			(char *)data_path("doctor_closed_port.json"),
			"--rank",
			"1",
			"--timeout",
			"1",
			NULL};

	run_doctor(args, NULL, &r);
	cr_assert(strstr(r.out, "[FAIL]  rank 0 at 127.0.0.1:1 is "
				"unreachable: Connection refused"),
		  "%s", r.out);
	cr_assert(strstr(r.out, "fix: run `hccl_doctor --ranktable <file> "
				"--rank 0` on 127.0.0.1"),
		  "%s", r.out);
	cr_assert_eq(r.status, 1, "%s", r.out);
}

Test(doctor, two_ranks_of_a_table_reach_each_other)
{
	static struct run r0, r1;
	char path[] = "/tmp/ohc_doctor_rt_XXXXXX";
	char *args[3][9];
	int fd = mkstemp(path), p0 = free_port(), p1 = free_port(), f0, f1;
	pid_t a, b;
	FILE *f;

	cr_assert(fd >= 0);
	f = fdopen(fd, "w");
	cr_assert(f);
	fprintf(f,
		"{\"status\":\"completed\",\"version\":\"1.0\","
		"\"server_count\":\"1\",\"server_list\":[{\"server_id\":"
		"\"127.0.0.1\",\"host_ip\":\"127.0.0.1\",\"device\":["
		"{\"device_id\":\"0\",\"rank_id\":\"0\",\"host_port\":"
		"\"%d\"},{\"device_id\":\"1\",\"rank_id\":\"1\","
		"\"host_port\":\"%d\"}]}]}\n",
		p0, p1);
	fclose(f);
	for (int i = 0; i < 2; i++) {
		char **v = args[i];

		v[0] = "--shm-only";
		v[1] = "--ranktable";
		v[2] = path;
		v[3] = "--rank";
		v[4] = i ? "1" : "0";
		v[5] = "--timeout";
		v[6] = "20";
		v[7] = NULL;
	}
	a = start(args[0], NULL, &f0);
	b = start(args[1], NULL, &f1);
	finish(a, f0, &r0);
	finish(b, f1, &r1);
	unlink(path);
	cr_assert(strstr(r0.out, "[ok]    rank 1 at 127.0.0.1:"), "%s", r0.out);
	cr_assert(strstr(r1.out, "[ok]    rank 0 at 127.0.0.1:"), "%s", r1.out);
	cr_assert(!strstr(r0.out, "[FAIL]") && r0.status == 0, "%s", r0.out);
	cr_assert(!strstr(r1.out, "[FAIL]") && r1.status == 0, "%s", r1.out);
}

Test(doctor, bad_arguments_are_usage_errors)
{
	static struct run r;

	run_doctor((char *[]){"--rank", "1", NULL}, NULL, &r);
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "--ranktable and --rank go together"), "%s",
		  r.out);
	run_doctor((char *[]){"--timeout", "soon", NULL}, NULL, &r);
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "--timeout 'soon'"), "%s", r.out);
	run_doctor((char *[]){"--ranktable", "/nonexistent.json", "--rank", "0",
			      "--shm-only", "--timeout", "1", NULL},
		   NULL, &r);
	cr_assert_eq(r.status, 1, "%s", r.out);
	cr_assert(strstr(r.out, "/nonexistent.json"), "%s", r.out);
	run_doctor((char *[]){"--bogus", NULL}, NULL, &r);
	cr_assert_eq(r.status, 2, "%s", r.out);
	cr_assert(strstr(r.out, "usage:"), "%s", r.out);
}
