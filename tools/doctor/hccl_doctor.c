/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hccl_doctor: preflight checks for OpenHCCL on this host (RDMA devices,
 * memlock, CMA, hugepages, NUMA, the bootstrap's interface and ports, the
 * configuration), and optionally a reachability test of every peer of a
 * rank table. Exit status: 0 no problem, 1 problems found, 2 bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <net/if.h>
#include <numa.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "algo/algo.h"
#include "comm/bootstrap/bs_internal.h"
#include "comm/ranktable.h"
#include "doctor.h"
#include "util/config.h"
#include "util/pagemap.h"

#ifndef OHC_DR_VERSION
#define OHC_DR_VERSION "unknown"
#endif

/* ---- printing ---- */

void dr_section(const char *title)
{
	printf("\n== %s ==\n", title);
}

static void vline(const char *tag, const char *fmt, va_list ap)
{
	printf("%-8s", tag);
	vprintf(fmt, ap);
	putchar('\n');
}

void dr_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("", fmt, ap);
	va_end(ap);
}

void dr_ok(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("[ok]", fmt, ap);
	va_end(ap);
}

void dr_warn(struct dr_report *rep, const char *fix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("[warn]", fmt, ap);
	va_end(ap);
	if (fix)
		printf("        fix: %s\n", fix);
	rep->warnings++;
}

void dr_problem(struct dr_report *rep, const char *fix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("[FAIL]", fmt, ap);
	va_end(ap);
	printf("        fix: %s\n", fix);
	rep->problems++;
}

/* ---- memlock ---- */

/* Whether the effective capabilities hold CAP_IPC_LOCK (bit 14). */
static int has_ipc_lock(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long cap = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &cap) == 1)
			break;
	fclose(f);
	return (cap >> 14) & 1;
}

static void check_memlock(struct dr_report *rep, int have_rdma)
{
	struct rlimit rl;
	/* staging buffers: HCCL_BUFFSIZE per communicator, both directions */
	uint64_t need = (uint64_t)ohc_env()->buffsize_mb * 2 << 20;
	char msg[160];

	dr_section("locked memory (RDMA registration)");
	if (getrlimit(RLIMIT_MEMLOCK, &rl)) {
		dr_warn(rep, NULL, "getrlimit(RLIMIT_MEMLOCK): %s",
			strerror(errno));
		return;
	}
	if (rl.rlim_cur == RLIM_INFINITY) {
		dr_ok("memlock: unlimited");
		return;
	}
	if (has_ipc_lock()) {
		dr_ok("memlock: %llu KiB, but this process has CAP_IPC_LOCK "
		      "(root): the limit does not apply",
		      (unsigned long long)rl.rlim_cur >> 10);
		return;
	}
	if (rl.rlim_cur >= need) {
		dr_ok("memlock: %llu KiB (>= %llu KiB for two HCCL_BUFFSIZE "
		      "staging buffers)",
		      (unsigned long long)rl.rlim_cur >> 10,
		      (unsigned long long)need >> 10);
		return;
	}
	snprintf(msg, sizeof(msg),
		 "memlock %llu KiB is too small to register %llu KiB of "
		 "staging memory",
		 (unsigned long long)rl.rlim_cur >> 10,
		 (unsigned long long)need >> 10);
	if (have_rdma)
		dr_problem(rep,
			   "run `ulimit -l unlimited` or set memlock in "
			   "/etc/security/limits.conf (LimitMEMLOCK= for "
			   "systemd units, --ulimit memlock=-1 for docker)",
			   "%s", msg);
	else
		dr_warn(rep,
			"only matters for RDMA: `ulimit -l unlimited` or "
			"memlock in /etc/security/limits.conf",
			"%s", msg);
}

/*
 * The verbs registration cache is on by default only where a cached
 * entry can be checked at reuse: /proc/self/pagemap shows PFNs.
 */
static void check_mr_cache(void)
{
	long long n = (long long)ohc_env()->rdma_mr_cache;
	int set = ohc_config_is_set("OPENHCCL_RDMA_MR_CACHE");

	if (set && !n)
		dr_info("OPENHCCL_RDMA_MR_CACHE=0: no RDMA registration "
			"cache, each large message registers its buffers");
	else if (ohc_pagemap_usable())
		dr_ok("/proc/self/pagemap shows page frames: up to %lld "
		      "unused RDMA registrations stay cached, each checked "
		      "when reused",
		      n);
	else if (!set)
		dr_info("/proc/self/pagemap hides page frames (no "
			"CAP_SYS_ADMIN): no RDMA registration cache, each "
			"large message registers its buffers");
	else
		dr_info("/proc/self/pagemap hides page frames (no "
			"CAP_SYS_ADMIN): the %lld cached RDMA registrations "
			"are reused unchecked; keep buffers alive",
			n);
}

/*
 * Slot fragments gather their payload from the send buffer only where
 * its registration can be cached (or for exported memory).
 */
static void check_gather(void)
{
	long long kb = (long long)ohc_env()->rdma_gather_kb;
	int cache = ohc_env()->rdma_mr_cache &&
		    (ohc_pagemap_usable() ||
		     ohc_config_is_set("OPENHCCL_RDMA_MR_CACHE"));

	if (!kb)
		dr_info("OPENHCCL_RDMA_GATHER_KB=0: RDMA slot fragments are "
			"copied into the staging slots");
	else if (cache)
		dr_ok("RDMA slot fragments of %lld KiB and more are written "
		      "straight from the send buffer (no staging copy)",
		      kb);
	else
		dr_info("no RDMA registration cache: slot fragments of "
			"ordinary memory are copied into the staging slots "
			"(OPENHCCL_RDMA_GATHER_KB=%lld applies to exported "
			"memory only)",
			kb);
}

/* ---- CMA ---- */

/*
 * A child reads its parent's memory with process_vm_readv: the direction
 * that sibling ranks need (Yama scope 1 allows only ancestor->descendant).
 */
static int cma_probe(int *err_p)
{
	static const char pattern[] = "openhccl-cma-probe";
	char buf[sizeof(pattern)];
	int pfd[2], status, rc = -1;
	pid_t pid;

	if (pipe(pfd))
		goto out;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		goto out;
	}
	if (pid == 0) {
		struct iovec l = {buf, sizeof(buf)};
		struct iovec r = {(void *)pattern, sizeof(pattern)};
		ssize_t n = process_vm_readv(getppid(), &l, 1, &r, 1, 0);
		int e = n == (ssize_t)sizeof(buf) &&
					!memcmp(buf, pattern, sizeof(buf))
				? 0
				: (n < 0 ? errno : EIO);

		if (write(pfd[1], &e, sizeof(e)) != sizeof(e))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], err_p, sizeof(*err_p)) == sizeof(*err_p))
		rc = *err_p ? -1 : 0;
	else
		*err_p = EIO;
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return rc;
out:
	*err_p = errno;
	return -1;
}

static void check_cma(struct dr_report *rep)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = -1, err = 0;

	dr_section("cross-memory attach (single-copy shared memory)");
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = -1;
		fclose(f);
		dr_info("kernel.yama.ptrace_scope = %d", scope);
	} else {
		dr_info("no Yama LSM: ordinary ptrace rules (same user)");
	}
	if (cma_probe(&err) == 0) {
		dr_ok("process_vm_readv between processes works: large "
		      "same-host messages are copied once");
		return;
	}
	dr_warn(rep,
		scope >= 1 ? "`sysctl -w kernel.yama.ptrace_scope=0` (or "
			     "run the ranks with CAP_SYS_PTRACE)"
			   : "allow ptrace between the ranks (seccomp or "
			     "container profile: permit process_vm_readv, "
			     "e.g. docker --cap-add SYS_PTRACE)",
		"process_vm_readv from a child to its parent failed: %s; "
		"shared memory falls back to two copies",
		strerror(err));
}

/* ---- hugepages, NUMA ---- */

static void check_hugepages(struct dr_report *rep)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256], thp[128] = "";
	long total = -1, freep = -1, size_kb = 0;

	(void)rep;
	dr_section("hugepages");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "HugePages_Total: %ld", &total);
			sscanf(line, "HugePages_Free: %ld", &freep);
			sscanf(line, "Hugepagesize: %ld", &size_kb);
		}
		fclose(f);
	}
	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f) {
		if (!fgets(thp, sizeof(thp), f))
			thp[0] = '\0';
		thp[strcspn(thp, "\n")] = '\0';
		fclose(f);
	}
	if (total < 0)
		dr_info("/proc/meminfo has no HugePages lines");
	else
		dr_info("hugepages: %ld of %ld free, %ld KiB each", freep,
			total, size_kb);
	if (thp[0])
		dr_info("transparent hugepages: %s", thp);
	if (total <= 0)
		dr_info("no reserved hugepages: buffers use normal pages "
			"(fine; `sysctl vm.nr_hugepages=N` reserves some)");
}

static void check_numa(struct dr_report *rep)
{
	(void)rep;
	dr_section("NUMA");
	if (numa_available() < 0) {
		dr_info("libnuma: NUMA not available (one memory node)");
		return;
	}
	dr_info("%d configured node(s), %d CPU(s)", numa_num_configured_nodes(),
		numa_num_configured_cpus());
	for (int n = 0; n <= numa_max_node(); n++) {
		long long freeb = 0, size = numa_node_size64(n, &freeb);
		struct bitmask *cpus = numa_allocate_cpumask();
		int ncpu = 0;

		if (size <= 0) {
			numa_free_cpumask(cpus);
			continue;
		}
		if (cpus && numa_node_to_cpus(n, cpus) == 0)
			for (unsigned c = 0; c < cpus->size; c++)
				ncpu += numa_bitmask_isbitset(cpus, c);
		dr_info("node %d: %d CPU(s), %lld MiB, %lld MiB free", n, ncpu,
			size >> 20, freeb >> 20);
		if (cpus)
			numa_free_cpumask(cpus);
	}
}

/* ---- bootstrap ---- */

/* Whether TCP port p of a's address is taken (bind says EADDRINUSE). */
static int port_busy(const struct bs_addr *a, uint16_t p)
{
	struct bs_addr b = *a;
	int fd = socket(bs_addr_family(a), SOCK_STREAM, 0), one = 1, busy;

	if (fd < 0)
		return 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	bs_addr_set_port(&b, p);
	busy = bind(fd, &b.u.sa, b.len) != 0 && errno == EADDRINUSE;
	close(fd);
	return busy;
}

static void check_bootstrap(struct dr_report *rep)
{
	const struct ohc_env *env = ohc_env();
	struct bs_addr a;
	struct bs_ports root, rank;
	char ip[BS_ADDR_STRLEN], ifname[IF_NAMESIZE] = "";
	struct bs_ifrule rule;
	const char *why;
	int local;

	dr_section("bootstrap (HCCL_IF_IP / HCCL_SOCKET_IFNAME / "
		   "HCCL_IF_BASE_PORT)");
	if (bs_local_addr(&a) != OHC_OK) {
		dr_problem(rep,
			   "set HCCL_IF_IP to an address of this host, or "
			   "HCCL_SOCKET_IFNAME to an interface that is up "
			   "(see `ip -br addr`)",
			   "the bootstrap finds no address to listen on "
			   "(see the log line above)");
		return;
	}
	if (env->if_ip[0]) {
		why = "HCCL_IF_IP";
	} else {
		int has_rule =
			env->socket_ifname[0] &&
			bs_ifrule_parse(env->socket_ifname, &rule) == OHC_OK;

		why = has_rule ? "HCCL_SOCKET_IFNAME" : "first interface up";
		if (bs_addr_select((int)env->socket_family,
				   has_rule ? &rule : NULL, &a, ifname,
				   sizeof(ifname)) != OHC_OK)
			ifname[0] = '\0';
	}
	bs_addr_ip_str(&a, ip, sizeof(ip));
	dr_info("address %s%s%s%s (%s)", ip, ifname[0] ? " on " : "", ifname,
		"", why);
	local = bs_addr_is_local(&a);
	if (env->if_ip[0] && !local)
		dr_problem(rep,
			   "set HCCL_IF_IP to one of this host's addresses "
			   "(`ip -br addr`) or unset it",
			   "HCCL_IF_IP=%s is not an address of this host",
			   env->if_ip);
	else if (!strncmp(ip, "127.", 4) || !strcmp(ip, "::1"))
		dr_warn(rep,
			"set HCCL_SOCKET_IFNAME=<nic> or HCCL_IF_IP=<address> "
			"for ranks on other hosts",
			"the bootstrap would use loopback %s: only ranks of "
			"this host can reach it",
			ip);
	if (bs_ports_for_root(&root) == OHC_OK)
		dr_info("root-info listener ports: %s", root.desc);
	if (bs_ports_for_rank(&rank) == OHC_OK)
		dr_info("rank listener ports: %s", rank.desc);
	if (!local || !root.n)
		return;
	if (port_busy(&a, root.lo[0]))
		dr_warn(rep,
			"free the port or set HCCL_IF_BASE_PORT / "
			"HCCL_HOST_SOCKET_PORT_RANGE",
			"port %u is in use: the root listener takes the next "
			"free one (rank-table jobs need exactly this port)",
			root.lo[0]);
	else
		dr_ok("port %u is free on %s", root.lo[0], ip);
}

/* ---- configuration ---- */

/*
 * HCCL_ALGO as the library reads it (src/algo/hccl_algo.c, for every
 * collective): 0 when an entry names an unknown algorithm or operation, or
 * is malformed (the library then warns once and chooses automatically).
 */
static int algo_valid(const char *spec)
{
	static const enum ohc_coll_op ops[] = {
		OHC_COLL_ALLREDUCE, OHC_COLL_ALLGATHER, OHC_COLL_REDUCE_SCATTER,
		OHC_COLL_BROADCAST, OHC_COLL_REDUCE,	OHC_COLL_SCATTER,
		OHC_COLL_ALLTOALL,
	};
	int unknown = 0;

	for (size_t i = 0; i < sizeof(ops) / sizeof(*ops); i++) {
		ohc_algo_override_find(spec, ops[i], &unknown);
		if (unknown)
			return 0;
	}
	return 1;
}

static void check_config(struct dr_report *rep, int dump)
{
	size_t n = ohc_config_count();
	struct ohc_config_var v;
	unsigned bad = 0;
	char fix[512];

	if (dump)
		dr_section("configuration (environment variables)");
	for (size_t i = 0; i < n; i++) {
		if (ohc_config_get(i, &v) != OHC_OK)
			continue;
		if (v.valid && v.value && !strcmp(v.name, "HCCL_ALGO"))
			v.valid = algo_valid(v.value);
		if (dump)
			printf("%-28s = %-16s (%s)%s  # %s\n", v.name,
			       v.value ? v.value : v.def,
			       v.value ? "env" : "default",
			       v.valid ? "" : "  MALFORMED", v.doc);
		if (!v.valid) {
			snprintf(fix, sizeof(fix),
				 "set %s to %s (default %s), or unset it",
				 v.name, v.range, v.def[0] ? v.def : "empty");
			dr_problem(rep, fix, "%s='%s' is malformed: %s", v.name,
				   v.value, v.doc);
			bad++;
		}
	}
	if (!dump && !bad)
		dr_ok("every HCCL_* / OPENHCCL_* variable that is set parses");
}

/*
 * What needs an RDMA device here (NULL: shared memory is all): ranks on
 * other hosts (--multi-host, or a rank table with several servers), or
 * same-host ranks over RDMA (HCCL_INTRA_ROCE_ENABLE=1).
 */
static const char *rdma_need(int shm_only, int multi_host,
			     const char *ranktable, char *buf, size_t len)
{
	struct ohc_ranktable *rt = NULL;

	if (shm_only)
		return NULL;
	if (multi_host)
		return "--multi-host (ranks on other hosts)";
	if (ohc_env()->intra_roce_enable)
		return "HCCL_INTRA_ROCE_ENABLE=1 (same-host ranks over RDMA)";
	if (ranktable && ohc_ranktable_load(ranktable, &rt) == OHC_OK) {
		const char *need = NULL;

		if (rt->nservers > 1) {
			snprintf(buf, len, "the rank table's %u servers",
				 rt->nservers);
			need = buf;
		}
		ohc_ranktable_free(rt);
		return need;
	}
	return NULL;
}

/* ---- main ---- */

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s [--config] [--shm-only | --multi-host] [--ranktable "
		"FILE --rank N\n"
		"       [--timeout S]] [--version]\n"
		"  checks this host for OpenHCCL: RDMA devices, ports, GIDs, "
		"memlock,\n"
		"  cross-memory attach, hugepages, NUMA, the bootstrap's "
		"interface and\n"
		"  ports, the environment. Exit status 0: no problem, 1: "
		"problems found.\n"
		"  With no RDMA device, shared memory serves the ranks of this "
		"host: that\n"
		"  passes unless ranks on other hosts need RDMA (below) or "
		"HCCL_INTRA_ROCE_ENABLE=1.\n"
		"  --config          print every configuration variable with "
		"its value\n"
		"                    and source (env or default), flag "
		"malformed ones\n"
		"  --multi-host      ranks on other hosts too: an RDMA device "
		"is needed\n"
		"  --shm-only        ranks stay on this host, whatever the "
		"rank table says\n"
		"  --ranktable FILE  with --rank N: reach every peer of the "
		"rank table\n"
		"                    (TCP, and one RDMA message when devices "
		"exist);\n"
		"                    run it for every rank at the same time; "
		"several\n"
		"                    servers in it need RDMA\n"
		"  --timeout S       seconds to wait for peers (default 30)\n"
		"  --version         print the version and exit\n",
		prog);
}

static int parse_uint(const char *s, unsigned long max, unsigned long *v_p)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -1;
	*v_p = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", no_argument, NULL, 'c'},
		{"shm-only", no_argument, NULL, 's'},
		{"multi-host", no_argument, NULL, 'm'},
		{"version", no_argument, NULL, 'V'},
		{"ranktable", required_argument, NULL, 'r'},
		{"rank", required_argument, NULL, 'n'},
		{"timeout", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct dr_report rep = {0};
	struct dr_port ports[DR_MAX_DEVS];
	unsigned nports = 0, ndevs;
	const char *ranktable = NULL;
	unsigned long rank = ULONG_MAX, timeout = 30;
	int c, dump = 0, shm_only = 0, multi_host = 0;
	char needbuf[128];

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			dump = 1;
			break;
		case 's':
			shm_only = 1;
			break;
		case 'm':
			multi_host = 1;
			break;
		case 'V':
			printf("hccl_doctor (OpenHCCL) %s\n", OHC_DR_VERSION);
			return 0;
		case 'r':
			ranktable = optarg;
			break;
		case 'n':
			if (parse_uint(optarg, UINT32_MAX - 1, &rank)) {
				fprintf(stderr,
					"%s: --rank '%s' is not a rank "
					"number\n",
					argv[0], optarg);
				return 2;
			}
			break;
		case 't':
			if (parse_uint(optarg, 3600, &timeout) || !timeout) {
				fprintf(stderr,
					"%s: --timeout '%s' must be 1..3600 "
					"seconds\n",
					argv[0], optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0],
			argv[optind]);
		usage(stderr, argv[0]);
		return 2;
	}
	if (shm_only && multi_host) {
		fprintf(stderr,
			"%s: --shm-only and --multi-host exclude each "
			"other\n",
			argv[0]);
		return 2;
	}
	if (!ranktable != (rank == ULONG_MAX)) {
		fprintf(stderr, "%s: --ranktable and --rank go together\n",
			argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (dump) {
		check_config(&rep, 1);
		goto done;
	}
	printf("hccl_doctor: OpenHCCL preflight checks\n");
	ndevs = dr_rdma_scan(&rep,
			     rdma_need(shm_only, multi_host, ranktable, needbuf,
				       sizeof(needbuf)),
			     ports, DR_MAX_DEVS, &nports);
	check_memlock(&rep, ndevs > 0);
	check_mr_cache();
	check_gather();
	check_cma(&rep);
	check_hugepages(&rep);
	check_numa(&rep);
	check_bootstrap(&rep);
	dr_section("environment");
	check_config(&rep, 0);
	if (ranktable)
		dr_ranktable_ping(&rep, ranktable, (uint32_t)rank,
				  (unsigned)timeout, ports, nports);
done:
	printf("\n%u problem(s), %u warning(s)\n", rep.problems, rep.warnings);
	return rep.problems ? 1 : 0;
}
