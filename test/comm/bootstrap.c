/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The out-of-band bootstrap, white box: root info, the socket bootstrap
 * over real processes (fork) and threads, the in-process bootstrap, the
 * root's refusals, timeouts naming the missing ranks, a peer killed with
 * SIGKILL, abort, sub-groups, the whitelist, rank-table mode, the address
 * and port parsers, and fd/thread leaks. Timeouts are set through the API
 * (seconds at most) so every case is bounded.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm/bootstrap/bootstrap.h"
#include "comm/bootstrap/bs_internal.h"
#include "helpers/ohc_test.h"
#include "util/config.h"
#include "util/log.h"

#define TMO_MS 10000 /* generous: only failure tests wait for it */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static int count_tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 2;
}

/*
 * The task count once it has settled at want (bounded, 2 s): a joined
 * thread's task can stay listed in /proc/self/task for a moment after
 * pthread_join returns.
 */
static int count_tasks_settled(int want)
{
	int n = count_tasks();

	for (int i = 0; i < 200 && n != want; i++) {
		sleep_ms(10);
		n = count_tasks();
	}
	return n;
}

/* Wait (bounded) until no root listener of this process runs. */
static unsigned listeners_settle(void)
{
	unsigned left = ohc_root_listeners_reap();

	for (int i = 0; i < 200 && left; i++) {
		sleep_ms(10);
		left = ohc_root_listeners_reap();
	}
	return left;
}

static void set_env(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
	ohc_env_reload();
}

/*
 * Fork nranks children running fn(rank, nranks, arg), all released at
 * once after the last fork (no thread of ours is busy while we fork: a
 * sanitizer allocator locked by a running thread at fork() would
 * deadlock the child). Returns how many failed, crashed or hung (killed
 * after timeout_s).
 */
static int fork_ranks(int nranks, ohc_test_rank_fn fn, void *arg, int timeout_s)
{
	int *go = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pids[64];
	int failed = 0, left = nranks;
	double t0;

	cr_assert(go != MAP_FAILED && nranks <= 64);
	*go = 0;
	fflush(NULL);
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		/* No cr_assert in children: it talks to the runner. */
		if (pids[r] == 0) {
			for (int i = 0; i < 30000 &&
					!__atomic_load_n(go, __ATOMIC_ACQUIRE);
			     i++)
				usleep(1000);
			_exit(fn(r, nranks, arg) ? 1 : 0);
		}
		cr_assert_geq(pids[r], 0);
	}
	__atomic_store_n(go, 1, __ATOMIC_RELEASE);
	t0 = now_ms();
	while (left > 0) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		for (int r = 0; p > 0 && r < nranks; r++) {
			if (pids[r] != p)
				continue;
			pids[r] = 0;
			left--;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "rank %d failed (0x%x)\n", r,
					st);
				failed++;
			}
		}
		if (p > 0)
			continue;
		if (now_ms() - t0 > timeout_s * 1000.0) {
			failed += ohc_test_kill_hung(pids, nranks);
			break;
		}
		sleep_ms(2);
	}
	munmap(go, sizeof(int));
	return failed;
}

/* ---------------------------------------------------------------------- */
/* stderr capture (log lines of this process and its children)            */

static int cap_fd = -1, cap_saved = -1;

static void capture_begin(void)
{
	char path[] = "/tmp/ohc_bs_test_XXXXXX";

	fflush(stderr);
	cap_fd = mkstemp(path);
	cr_assert_geq(cap_fd, 0);
	unlink(path);
	fcntl(cap_fd, F_SETFL, O_APPEND);
	cap_saved = dup(2);
	dup2(cap_fd, 2);
}

/* The captured text (caller frees); also echoed to the real stderr. */
static char *capture_end(void)
{
	off_t size;
	char *buf;

	fflush(stderr);
	dup2(cap_saved, 2);
	close(cap_saved);
	size = lseek(cap_fd, 0, SEEK_END);
	buf = calloc(1, (size_t)size + 1);
	cr_assert(buf);
	cr_assert_eq(pread(cap_fd, buf, (size_t)size, 0), size);
	close(cap_fd);
	fputs(buf, stderr);
	return buf;
}

/* ---------------------------------------------------------------------- */
/* The data exercise every bootstrap kind goes through                    */

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "rank check failed: %s (%s:%d)\n", #c, \
				__FILE__, __LINE__);                           \
			return __LINE__;                                       \
		}                                                              \
	} while (0)

static uint8_t pat(uint32_t r, size_t i)
{
	return (uint8_t)(r * 131u + i * 7u + (i >> 9));
}

static int exercise_allgather(struct ohc_bootstrap *bs, size_t bytes)
{
	uint32_t r = ohc_bootstrap_rank(bs), n = ohc_bootstrap_nranks(bs);
	uint8_t *buf = calloc(n, bytes);
	int bad = 0;

	CHECK(buf);
	for (size_t i = 0; i < bytes; i++)
		buf[r * bytes + i] = pat(r, i);
	if (ohc_bootstrap_allgather(bs, buf, bytes) != OHC_OK)
		bad = __LINE__;
	for (uint32_t k = 0; k < n && !bad; k++)
		for (size_t i = 0; i < bytes && !bad; i++)
			if (buf[k * bytes + i] != pat(k, i))
				bad = __LINE__;
	free(buf);
	if (bad)
		fprintf(stderr, "allgather of %zu bytes failed (line %d)\n",
			bytes, bad);
	return bad;
}

static int exercise_bcast(struct ohc_bootstrap *bs, size_t bytes, uint32_t root)
{
	uint32_t r = ohc_bootstrap_rank(bs);
	uint8_t *buf = calloc(1, bytes ? bytes : 1);
	int bad = 0;

	CHECK(buf);
	if (r == root)
		for (size_t i = 0; i < bytes; i++)
			buf[i] = pat(root + 7, i);
	if (ohc_bootstrap_bcast(bs, buf, bytes, root) != OHC_OK)
		bad = __LINE__;
	for (size_t i = 0; i < bytes && !bad; i++)
		if (buf[i] != pat(root + 7, i))
			bad = __LINE__;
	free(buf);
	if (bad)
		fprintf(stderr, "bcast of %zu bytes failed (line %d)\n", bytes,
			bad);
	return bad;
}

static int exercise_p2p(struct ohc_bootstrap *bs, size_t big)
{
	uint32_t r = ohc_bootstrap_rank(bs), n = ohc_bootstrap_nranks(bs);
	uint32_t next = (r + 1) % n, prev = (r + n - 1) % n;
	uint64_t v, w;
	uint8_t *out = malloc(big), *in = malloc(big);
	int bad = 0;

	CHECK(out && in);
	/* Both neighbours send first, then receive; tags out of order. */
	v = r * 10 + 1;
	CHECK(ohc_bootstrap_send(bs, next, 5, &v, sizeof(v)) == OHC_OK);
	v = r * 10 + 2;
	CHECK(ohc_bootstrap_send(bs, prev, 6, &v, sizeof(v)) == OHC_OK);
	CHECK(ohc_bootstrap_recv(bs, next, 6, &w, sizeof(w)) == OHC_OK);
	CHECK(w == next * 10 + 2);
	CHECK(ohc_bootstrap_recv(bs, prev, 5, &w, sizeof(w)) == OHC_OK);
	CHECK(w == prev * 10 + 1);
	/* Large messages both ways at once. */
	for (size_t i = 0; i < big; i++)
		out[i] = pat(r + 100, i);
	CHECK(ohc_bootstrap_send(bs, next, 7, out, big) == OHC_OK);
	CHECK(ohc_bootstrap_recv(bs, prev, 7, in, big) == OHC_OK);
	for (size_t i = 0; i < big && !bad; i++)
		if (in[i] != pat(prev + 100, i))
			bad = __LINE__;
	/* To self. */
	v = 4242 + r;
	CHECK(ohc_bootstrap_send(bs, r, 9, &v, sizeof(v)) == OHC_OK);
	CHECK(ohc_bootstrap_recv(bs, r, 9, &w, sizeof(w)) == OHC_OK);
	CHECK(w == 4242 + r);
	free(out);
	free(in);
	return bad;
}

/* allgather (small and large), barriers, bcasts (chunked and tiny),
 * send/recv; 0 when every byte arrived right. */
static int exercise(struct ohc_bootstrap *bs, size_t scale)
{
	uint32_t n = ohc_bootstrap_nranks(bs);
	int bad;

	if ((bad = exercise_allgather(bs, 64)))
		return bad;
	if ((bad = exercise_allgather(bs, 64 * 1024 * scale + 3)))
		return bad;
	for (int i = 0; i < 3; i++)
		CHECK(ohc_bootstrap_barrier(bs) == OHC_OK);
	if ((bad = exercise_bcast(bs, (1u << 20) * scale + 17, n - 1)))
		return bad;
	if ((bad = exercise_bcast(bs, 8, 0)))
		return bad;
	if ((bad = exercise_bcast(bs, 0, n / 2)))
		return bad;
	if ((bad = exercise_p2p(bs, (1u << 20) * scale)))
		return bad;
	for (uint32_t k = 0; k < n; k++)
		CHECK(ohc_bootstrap_hostid(bs, k) &&
		      ohc_bootstrap_hostid(bs, k)[0]);
	CHECK(ohc_bootstrap_hostid(bs, n) == NULL);
	return exercise_allgather(bs, 1);
}

/* ---------------------------------------------------------------------- */
/* Thread ranks                                                           */

struct trank {
	pthread_t th;
	const uint8_t *info;
	uint32_t rank, nranks;
	uint64_t timeout_ms;
	int (*body)(struct trank *t, struct ohc_bootstrap *bs);
	ohc_status_t status; /* of init */
	int result;	     /* of body */
	double took_ms;	     /* of init */
	int done;	     /* atomic */
	void *arg;
};

static void *trank_main(void *p)
{
	struct trank *t = p;
	struct ohc_bootstrap *bs = NULL;
	double t0 = now_ms();

	t->status = ohc_bootstrap_init_root(t->info, t->nranks, t->rank,
					    t->timeout_ms, &bs);
	t->took_ms = now_ms() - t0;
	if (t->status == OHC_OK && t->body)
		t->result = t->body(t, bs);
	ohc_bootstrap_destroy(bs);
	__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void trank_start(struct trank *t, const uint8_t *info, uint32_t rank,
			uint32_t nranks, uint64_t timeout_ms,
			int (*body)(struct trank *, struct ohc_bootstrap *))
{
	t->info = info;
	t->rank = rank;
	t->nranks = nranks;
	t->timeout_ms = timeout_ms;
	t->body = body;
	cr_assert_eq(pthread_create(&t->th, NULL, trank_main, t), 0);
}

static void trank_join(struct trank *t)
{
	pthread_join(t->th, NULL);
}

static int body_exercise(struct trank *t, struct ohc_bootstrap *bs)
{
	(void)t;
	return exercise(bs, 1);
}

/* ---------------------------------------------------------------------- */
/* Root info                                                              */

Test(root_info, round_trip, .timeout = 30)
{
	uint8_t a[OHC_ROOT_INFO_BYTES], b[OHC_ROOT_INFO_BYTES];
	uint8_t *moved = malloc(OHC_ROOT_INFO_BYTES + 3);
	char ip[64], hex[32], want[160];
	unsigned port;
	uint64_t tok;
	struct in6_addr tmp;

	cr_assert_eq(ohc_root_info_create(a), OHC_OK);
	cr_assert_eq(ohc_root_info_check(a), OHC_OK);
	tok = ohc_root_info_session(a);
	cr_assert_neq(tok, 0);
	/* "<ip>_<port>_<public id hex>": the id, never the token (names
	 * show up in logs and HcclGetCommName; the token lets one join) */
	cr_assert_eq(sscanf(ohc_root_info_name(a), "%63[^_]_%u_%31s", ip, &port,
			    hex),
		     3, "name '%s'", ohc_root_info_name(a));
	cr_assert(inet_pton(AF_INET, ip, &tmp) == 1 ||
		  inet_pton(AF_INET6, ip, &tmp) == 1);
	cr_assert(port > 0 && port < 65536);
	snprintf(want, sizeof(want), "%016" PRIx64, bs_auth_public_id(tok));
	cr_assert_str_eq(hex, want);
	snprintf(want, sizeof(want), "%" PRIx64, tok);
	cr_assert_null(strstr(ohc_root_info_name(a), want),
		       "the name shows the token");
	/* Position independent: a copy at an odd address is the same. */
	memcpy(moved + 3, a, OHC_ROOT_INFO_BYTES);
	cr_assert_eq(ohc_root_info_check(moved + 3), OHC_OK);
	cr_assert_str_eq(ohc_root_info_name(moved + 3), ohc_root_info_name(a));
	cr_assert_eq(ohc_root_info_session(moved + 3), tok);
	/* The listener runs and holds nobody yet. */
	cr_assert_eq(ohc_root_info_joined(a), 0);
	/* A second one: another token, another port. */
	cr_assert_eq(ohc_root_info_create(b), OHC_OK);
	cr_assert_neq(ohc_root_info_session(b), tok);
	cr_assert_str_neq(ohc_root_info_name(a), ohc_root_info_name(b));
	free(moved);
	cr_assert_eq(ohc_root_info_create(NULL), OHC_ERR_NULL);
}

static void garble_expect(const uint8_t *good, size_t off, const void *bytes,
			  size_t len, const char *what_in_log)
{
	uint8_t bad[OHC_ROOT_INFO_BYTES];
	struct ohc_bootstrap *bs = NULL;
	double t0;
	char *log;

	memcpy(bad, good, sizeof(bad));
	memcpy(bad + off, bytes, len);
	capture_begin();
	cr_assert_eq(ohc_root_info_check(bad), OHC_ERR_INVALID);
	cr_assert_null(ohc_root_info_name(bad));
	cr_assert_eq(ohc_root_info_session(bad), 0);
	t0 = now_ms();
	cr_assert_eq(ohc_bootstrap_init_root(bad, 2, 0, 5000, &bs),
		     OHC_ERR_INVALID);
	cr_assert_lt(now_ms() - t0, 1000);
	cr_assert_null(bs);
	log = capture_end();
	cr_assert(strstr(log, what_in_log), "log lacks '%s': %s", what_in_log,
		  log);
	free(log);
}

Test(root_info, garbled, .timeout = 30)
{
	uint8_t good[OHC_ROOT_INFO_BYTES];
	uint8_t ones[256];
	uint8_t zero[8] = {0};
	const char *ip;
	size_t ip_off, name_off;

	memset(ones, 'A', sizeof(ones));
	cr_assert_eq(ohc_root_info_create(good), OHC_OK);
	/* Find the strings where they are (the layout is private). */
	ip = ohc_root_info_name(good);
	name_off = (size_t)((const uint8_t *)ip - good);
	{
		char first[64];

		sscanf(ip, "%63[^_]", first);
		ip_off = (size_t)((uint8_t *)memmem(good, name_off, first,
						    strlen(first) + 1) -
				  good);
	}
	garble_expect(good, 0, "\x12\x34", 2, "bad magic");
	garble_expect(good, 4, "\x00\x09", 2, "format version 9");
	garble_expect(good, 6, "\x00\x07", 2, "family code 7");
	garble_expect(good, 8, zero, 2, "port is 0");
	garble_expect(good, ip_off, ones, name_off - ip_off,
		      "address is not NUL-terminated");
	garble_expect(good, ip_off, "999.1.2.3", 10, "is not an IPv");
	garble_expect(good, name_off, ones, 128,
		      "identifier is empty or not NUL-terminated");
	garble_expect(good, name_off, zero, 1, "identifier is empty");
	cr_assert_eq(ohc_root_info_check(NULL), OHC_ERR_NULL);
	cr_assert_null(ohc_root_info_name(NULL));
	/* A blob of noise */
	{
		uint8_t noise[OHC_ROOT_INFO_BYTES];

		for (size_t i = 0; i < sizeof(noise); i++)
			noise[i] = (uint8_t)(i * 2654435761u >> 13);
		cr_assert_eq(ohc_root_info_check(noise), OHC_ERR_INVALID);
	}
}

static int have_non_lo_ipv4(void)
{
	struct ifaddrs *ifa, *i;
	int found = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK))
			found = 1;
	freeifaddrs(ifa);
	return found;
}

static uint16_t free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

Test(root_info, environment, .timeout = 30)
{
	uint8_t a[OHC_ROOT_INFO_BYTES], b[OHC_ROOT_INFO_BYTES];
	char range[32];
	uint16_t port;

	set_env("HCCL_IF_IP", "127.0.0.1");
	cr_assert_eq(ohc_root_info_create(a), OHC_OK);
	cr_assert(!strncmp(ohc_root_info_name(a), "127.0.0.1_", 10));
	set_env("HCCL_IF_IP", "not-an-ip");
	cr_assert_eq(ohc_root_info_create(a), OHC_ERR_INVALID);
	set_env("HCCL_IF_IP", NULL);

	set_env("HCCL_SOCKET_IFNAME", "=lo");
	cr_assert_eq(ohc_root_info_create(a), OHC_OK);
	cr_assert(!strncmp(ohc_root_info_name(a), "127.0.0.1_", 10));
	set_env("HCCL_SOCKET_IFNAME", "nosuchif");
	cr_assert_eq(ohc_root_info_create(a), OHC_ERR_NOT_FOUND);
	set_env("HCCL_SOCKET_IFNAME", "^=lo");
	if (have_non_lo_ipv4()) {
		cr_assert_eq(ohc_root_info_create(a), OHC_OK);
		cr_assert(strncmp(ohc_root_info_name(a), "127.", 4));
	}
	set_env("HCCL_SOCKET_IFNAME", NULL);
	/* Automatic: loopback only when nothing else is up. */
	cr_assert_eq(ohc_root_info_create(a), OHC_OK);
	if (have_non_lo_ipv4())
		cr_assert(strncmp(ohc_root_info_name(a), "127.", 4));

	/* A single-port range: the second listener finds it taken. */
	set_env("HCCL_IF_IP", "127.0.0.1");
	port = free_port();
	snprintf(range, sizeof(range), "%u", port);
	set_env("HCCL_HOST_SOCKET_PORT_RANGE", range);
	cr_assert_eq(ohc_root_info_create(a), OHC_OK);
	snprintf(range, sizeof(range), "127.0.0.1_%u_", port);
	cr_assert(!strncmp(ohc_root_info_name(a), range, strlen(range)));
	cr_assert_eq(ohc_root_info_create(b), OHC_ERR_UNAVAILABLE);
	set_env("HCCL_HOST_SOCKET_PORT_RANGE", "auto");
	cr_assert_eq(ohc_root_info_create(b), OHC_OK);
	set_env("HCCL_HOST_SOCKET_PORT_RANGE", "70000");
	cr_assert_eq(ohc_root_info_create(b), OHC_ERR_INVALID);
	set_env("HCCL_HOST_SOCKET_PORT_RANGE", NULL);
}

Test(root_info, ipv6, .timeout = 30)
{
	uint8_t info[OHC_ROOT_INFO_BYTES];
	struct trank t[2] = {0};

	set_env("HCCL_SOCKET_FAMILY", "AF_INET6");
	set_env("HCCL_SOCKET_IFNAME", "=lo");
	if (ohc_root_info_create(info) != OHC_OK)
		cr_skip_test("no IPv6 loopback here");
	cr_assert(!strncmp(ohc_root_info_name(info), "::1_", 4), "%s",
		  ohc_root_info_name(info));
	for (uint32_t r = 0; r < 2; r++)
		trank_start(&t[r], info, r, 2, TMO_MS, body_exercise);
	for (uint32_t r = 0; r < 2; r++) {
		trank_join(&t[r]);
		cr_assert_eq(t[r].status, OHC_OK);
		cr_assert_eq(t[r].result, 0);
	}
}

/* ---------------------------------------------------------------------- */
/* Parsers and helpers                                                    */

Test(parse, ports)
{
	struct bs_ports p;

	cr_assert_eq(bs_ports_parse("60000,60050-60100", &p), OHC_OK);
	cr_assert_eq(p.n, 2);
	cr_assert_eq(p.lo[0], 60000);
	cr_assert_eq(p.hi[0], 60000);
	cr_assert_eq(p.lo[1], 60050);
	cr_assert_eq(p.hi[1], 60100);
	cr_assert_eq(p.ephemeral, 0);
	cr_assert_eq(bs_ports_parse(" 1 - 3 , 5 ", &p), OHC_OK);
	cr_assert_eq(p.n, 2);
	cr_assert_eq(p.hi[0], 3);
	cr_assert_eq(bs_ports_parse("AUTO", &p), OHC_OK);
	cr_assert_eq(p.n, 0);
	cr_assert_eq(p.ephemeral, 1);
	cr_assert_eq(bs_ports_parse("", &p), OHC_ERR_INVALID);
	cr_assert_eq(bs_ports_parse("0", &p), OHC_ERR_INVALID);
	cr_assert_eq(bs_ports_parse("65536", &p), OHC_ERR_INVALID);
	cr_assert_eq(bs_ports_parse("200-100", &p), OHC_ERR_INVALID);
	cr_assert_eq(bs_ports_parse("1,,2", &p), OHC_ERR_INVALID);
	cr_assert_eq(bs_ports_parse("1-", &p), OHC_ERR_INVALID);
	cr_assert_eq(bs_ports_parse("auto,1", &p), OHC_ERR_INVALID);
	cr_assert_eq(bs_ports_parse("12x", &p), OHC_ERR_INVALID);
}

Test(parse, ifname_rules)
{
	struct bs_ifrule r;

	cr_assert_eq(bs_ifrule_parse("eth,enp", &r), OHC_OK);
	cr_assert(!r.exclude && !r.exact && r.n == 2);
	cr_assert(bs_ifrule_match(&r, "eth0") && bs_ifrule_match(&r, "enp3s0"));
	cr_assert(!bs_ifrule_match(&r, "lo"));
	cr_assert_eq(bs_ifrule_parse("^=eth0", &r), OHC_OK);
	cr_assert(r.exclude && r.exact && r.n == 1);
	cr_assert(bs_ifrule_match(&r, "eth0") && !bs_ifrule_match(&r, "eth01"));
	cr_assert_eq(bs_ifrule_parse("=lo", &r), OHC_OK);
	cr_assert(r.exact && !r.exclude);
	cr_assert_eq(bs_ifrule_parse("^docker", &r), OHC_OK);
	cr_assert(r.exclude && !r.exact && bs_ifrule_match(&r, "docker0"));
	cr_assert_eq(bs_ifrule_parse("", &r), OHC_ERR_INVALID);
	cr_assert_eq(bs_ifrule_parse("eth,", &r), OHC_ERR_INVALID);
	cr_assert_eq(bs_ifrule_parse("a-very-long-interface-name", &r),
		     OHC_ERR_INVALID);
	cr_assert_eq(bs_ifrule_parse("^^eth", &r), OHC_ERR_INVALID);
}

Test(parse, addresses_and_frames)
{
	struct bs_addr a, b;
	uint8_t wire[BS_WIRE_ADDR_BYTES], hdr[OHC_FRAME_HDR_BYTES];
	struct ohc_frame_hdr h = {.type = BS_T_DATA,
				  .ctx = 7,
				  .tag = 99,
				  .len = 5},
			     g;
	char s[BS_ADDR_STRLEN];

	cr_assert_eq(bs_addr_from_ip("10.1.2.3", 4000, &a), OHC_OK);
	cr_assert_str_eq(bs_addr_str(&a, s, sizeof(s)), "10.1.2.3:4000");
	bs_addr_encode(&a, wire);
	cr_assert_eq(bs_addr_decode(wire, &b), OHC_OK);
	cr_assert(bs_addr_same_ip(&a, &b));
	cr_assert_eq(bs_addr_port(&b), 4000);
	cr_assert_eq(bs_addr_from_ip("::ffff:10.1.2.3", 1, &b), OHC_OK);
	cr_assert(bs_addr_same_ip(&a, &b), "v4-mapped equals v4");
	cr_assert_eq(bs_addr_from_ip("fd00::2", 5, &b), OHC_OK);
	cr_assert_str_eq(bs_addr_str(&b, s, sizeof(s)), "[fd00::2]:5");
	cr_assert_eq(bs_addr_from_ip("1.2.3", 5, &b), OHC_ERR_INVALID);
	cr_assert_eq(bs_addr_from_ip("fe80::1%nosuchif0", 5, &b),
		     OHC_ERR_INVALID);
	wire[1] = 5; /* family code 5 */
	cr_assert_eq(bs_addr_decode(wire, &b), OHC_ERR_INVALID);

	ohc_frame_hdr_encode(&bs_proto, &h, hdr);
	cr_assert_eq(ohc_frame_hdr_decode(&bs_proto, hdr, UINT64_MAX, &g, NULL),
		     OHC_OK);
	cr_assert(g.type == h.type && g.ctx == 7 && g.tag == 99 && g.len == 5);
	hdr[3] = 77; /* unknown type */
	cr_assert_eq(ohc_frame_hdr_decode(&bs_proto, hdr, UINT64_MAX, &g, NULL),
		     OHC_ERR_INVALID);
	ohc_frame_hdr_encode(&bs_proto, &h, hdr);
	hdr[0] ^= 1; /* magic */
	cr_assert_eq(ohc_frame_hdr_decode(&bs_proto, hdr, UINT64_MAX, &g, NULL),
		     OHC_ERR_INVALID);
}

/* A peer sending a frame whose length exceeds what the reader allows, or
 * a garbage header, is refused before anything is allocated. */
Test(parse, frame_reader_bounds)
{
	int sv[2];
	struct ohc_frame_rx rx;
	struct ohc_frame_hdr h = {.type = BS_T_JOIN, .len = 1ull << 40};
	uint8_t hdr[OHC_FRAME_HDR_BYTES];
	int err = 0;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv),
		     0);
	ohc_frame_hdr_encode(&bs_proto, &h, hdr);
	cr_assert_eq(write(sv[0], hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	ohc_frame_rx_init(&rx, &bs_proto, sv[1]);
	cr_assert_eq(ohc_frame_rx_read(&rx, BS_JOIN_BYTES, &err),
		     OHC_ERR_INVALID);
	cr_assert_null(rx.payload);
	ohc_frame_rx_reset(&rx);
	/* Half a header, then EOF: end of stream. */
	cr_assert_eq(write(sv[0], hdr, 10), 10);
	close(sv[0]);
	ohc_frame_rx_init(&rx, &bs_proto, sv[1]);
	cr_assert_eq(ohc_frame_rx_read(&rx, BS_JOIN_BYTES, &err),
		     OHC_ERR_REMOTE);
	ohc_frame_rx_reset(&rx);
	close(sv[1]);
}

/* A frame within the limit holds memory only for the bytes that came: a
 * peer announcing 256 MiB and sending 100 bytes costs 64 KiB, not 256
 * MiB; the whole frame still arrives intact. */
Test(parse, frame_reader_grows_with_data)
{
	int sv[2];
	struct ohc_frame_rx rx;
	struct ohc_frame_hdr h = {.type = BS_T_DATA,
				  .len = OHC_BOOTSTRAP_MAX_MSG};
	uint8_t hdr[OHC_FRAME_HDR_BYTES], body[100], *big;
	size_t len = (size_t)3 << 20, sent = 0;
	int err = 0;

	memset(body, 0x5a, sizeof(body));
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv),
		     0);
	ohc_frame_hdr_encode(&bs_proto, &h, hdr);
	cr_assert_eq(write(sv[0], hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	cr_assert_eq(write(sv[0], body, sizeof(body)), (ssize_t)sizeof(body));
	ohc_frame_rx_init(&rx, &bs_proto, sv[1]);
	cr_assert_eq(ohc_frame_rx_read(&rx, OHC_BOOTSTRAP_MAX_MSG, &err),
		     OHC_INPROGRESS);
	cr_expect_eq(rx.pgot, sizeof(body));
	cr_expect_leq(rx.pcap, (size_t)64 << 10,
		      "%zu bytes held for a frame 100 bytes into", rx.pcap);
	ohc_frame_rx_reset(&rx);
	close(sv[0]);
	close(sv[1]);

	/* A 3 MiB frame through the growing buffer, byte for byte. */
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv),
		     0);
	big = malloc(len);
	cr_assert_not_null(big);
	for (size_t i = 0; i < len; i++)
		big[i] = (uint8_t)(i * 7 + (i >> 12));
	h.len = len;
	ohc_frame_hdr_encode(&bs_proto, &h, hdr);
	cr_assert_eq(write(sv[0], hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	ohc_frame_rx_init(&rx, &bs_proto, sv[1]);
	for (;;) {
		ssize_t n =
			sent < len ? write(sv[0], big + sent, len - sent) : 0;
		ohc_status_t st;

		if (n > 0)
			sent += (size_t)n;
		st = ohc_frame_rx_read(&rx, OHC_BOOTSTRAP_MAX_MSG, &err);
		if (st == OHC_OK)
			break;
		cr_assert_eq(st, OHC_INPROGRESS, "status %d", st);
	}
	cr_assert_eq(rx.pgot, len);
	cr_assert_eq(memcmp(rx.payload, big, len), 0);
	free(ohc_frame_rx_take(&rx, &h));
	cr_expect_eq(h.len, len);
	free(big);
	close(sv[0]);
	close(sv[1]);
}

Test(hostid, basic)
{
	char a[OHC_HOSTID_MAX], host[256], tiny[4];

	cr_assert_eq(ohc_hostid_get(a, sizeof(a)), OHC_OK);
	gethostname(host, sizeof(host));
	cr_assert(!strncmp(a, host, strlen(host)) && a[strlen(host)] == ':',
		  "%s", a);
	cr_assert_gt(strlen(a), strlen(host) + 30, "boot id missing: %s", a);
	cr_assert_eq(ohc_hostid_get(tiny, sizeof(tiny)), OHC_ERR_INVALID);
	set_env("OPENHCCL_HOSTID", "node-7");
	cr_assert_eq(ohc_hostid_get(a, sizeof(a)), OHC_OK);
	cr_assert_str_eq(a, "node-7");
}

/* ---------------------------------------------------------------------- */
/* Processes                                                              */

struct proc_arg {
	uint8_t info[OHC_ROOT_INFO_BYTES];
	int ready; /* info is written */
	int use_hostid;
	int ring; /* allgathers round the ring, not Bruck's */
};

/*
 * The root info, created by rank 0 as a program does with
 * HcclGetRootInfo. Not by the test before it forks the ranks: the root
 * listener thread it starts could then hold the sanitizer allocator's
 * lock at a fork, and the child would hang at a later malloc or free
 * (seen under ASan: rank 0 stuck in free() in its last allgather).
 */
static int root_info_of_rank0(struct proc_arg *a, int rank)
{
	if (rank == 0) {
		if (ohc_root_info_create(a->info) != OHC_OK)
			return -1;
		__atomic_store_n(&a->ready, 1, __ATOMIC_RELEASE);
		return 0;
	}
	for (int i = 0;
	     i < 30000 && !__atomic_load_n(&a->ready, __ATOMIC_ACQUIRE); i++)
		sleep_ms(1);
	return __atomic_load_n(&a->ready, __ATOMIC_ACQUIRE) ? 0 : -1;
}

static int proc_rank(int rank, int nranks, void *p)
{
	struct proc_arg *a = p;
	struct ohc_bootstrap *bs = NULL;
	char hid[32];
	int bad;

	if (a->use_hostid) {
		/* Look like two hosts: even and odd ranks. */
		snprintf(hid, sizeof(hid), "node-%d", rank % 2);
		set_env("OPENHCCL_HOSTID", hid);
	}
	if (a->ring)
		ohc_bs_bruck_max_bytes = 0;
	if (root_info_of_rank0(a, rank))
		return 1;
	if (ohc_bootstrap_init_root(a->info, (uint32_t)nranks, (uint32_t)rank,
				    TMO_MS, &bs) != OHC_OK)
		return 1;
	bad = exercise(bs, 1);
	for (int k = 0; k < nranks && !bad && a->use_hostid; k++) {
		snprintf(hid, sizeof(hid), "node-%d", k % 2);
		if (strcmp(ohc_bootstrap_hostid(bs, (uint32_t)k), hid))
			bad = __LINE__;
	}
	ohc_bootstrap_destroy(bs);
	if (!bad && rank == 0 && listeners_settle())
		bad = __LINE__; /* the root listener still runs */
	if (bad)
		fprintf(stderr, "rank %d failed at line %d\n", rank, bad);
	return bad;
}

static void run_procs(int nranks, int use_hostid, int ring)
{
	struct proc_arg *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(a, MAP_FAILED);
	a->use_hostid = use_hostid;
	a->ring = ring;
	cr_assert_eq(fork_ranks(nranks, proc_rank, a, 60), 0);
	munmap(a, sizeof(*a));
}

Test(procs, four, .timeout = 90)
{
	run_procs(4, 0, 0);
}

Test(procs, eight_two_hosts, .timeout = 120)
{
	run_procs(8, 1, 0);
}

/* Bruck's allgather and the dissemination barrier at counts that are not
 * powers of two (the last step sends only what its peer lacks). */
Test(procs, seven, .timeout = 90)
{
	run_procs(7, 0, 0);
}

/* Allgathers too large for one buffer go round the ring. */
Test(procs, six_round_the_ring, .timeout = 90)
{
	run_procs(6, 0, 1);
}

/* A rank that the scheduler keeps off the CPU between its connect and
 * its first frame is still let in: rank 1 writes its JOIN 6 s after its
 * connect, past the 5 s the gates used to allow (2,048 ranks on 2 cores
 * went that long without a turn). */
static int late_rank(int rank, int nranks, void *p)
{
	struct proc_arg *a = p;
	struct ohc_bootstrap *bs = NULL;
	int bad;

	if (rank == 1)
		ohc_bs_test_join_delay_ms = 6000;
	if (root_info_of_rank0(a, rank))
		return 1;
	if (ohc_bootstrap_init_root(a->info, (uint32_t)nranks, (uint32_t)rank,
				    20000, &bs) != OHC_OK)
		return 1;
	bad = ohc_bootstrap_barrier(bs) != OHC_OK;
	ohc_bootstrap_destroy(bs);
	return bad;
}

Test(procs, first_frame_after_six_seconds, .timeout = 60)
{
	struct proc_arg *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(a, MAP_FAILED);
	cr_assert_eq(fork_ranks(2, late_rank, a, 40), 0);
	munmap(a, sizeof(*a));
}

/* The table tree: the root sends the table to rank 0 only, ranks 1-4 get
 * it from rank 0, 5-8 from rank 1, 9-12 from rank 2 (three levels); every
 * rank checks every host id (even and odd ranks on two hosts). */
Test(procs, thirteen_down_the_table_tree, .timeout = 120)
{
	uint32_t direct = ohc_bs_table_direct;

	ohc_bs_table_direct = 1; /* the forked ranks inherit it */
	cr_assert_eq(bs_table_parent(13, 0), BS_NO_RANK);
	cr_assert_eq(bs_table_parent(13, 4), 0);
	cr_assert_eq(bs_table_parent(13, 12), 2);
	cr_assert_eq(bs_table_child(13, 1, 3), 8);
	cr_assert_eq(bs_table_child(13, 3, 0), BS_NO_RANK);
	run_procs(13, 1, 0);
	ohc_bs_table_direct = direct;
}

/* Rank-table mode: rank 0 runs the root at a given address; the others
 * start first and retry until it listens. */
struct addr_arg {
	uint16_t port;
};

static int addr_rank(int rank, int nranks, void *p)
{
	struct addr_arg *a = p;
	struct ohc_bootstrap *bs = NULL;
	int bad;

	if (rank == 0)
		sleep_ms(300);
	if (ohc_bootstrap_init_addr("127.0.0.1", a->port, 1, 0xfeedbeefull,
				    (uint32_t)nranks, (uint32_t)rank, TMO_MS,
				    &bs) != OHC_OK)
		return 1;
	bad = exercise(bs, 0);
	ohc_bootstrap_destroy(bs);
	if (rank == 0 && listeners_settle())
		bad = __LINE__;
	return bad;
}

Test(procs, rank_table_mode, .timeout = 60)
{
	struct addr_arg *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	a->port = free_port();
	cr_assert_eq(fork_ranks(3, addr_rank, a, 40), 0);
	munmap(a, sizeof(*a));
}

/* ---------------------------------------------------------------------- */
/* Threads                                                                */

Test(threads, four_over_root_info, .timeout = 60)
{
	uint8_t info[OHC_ROOT_INFO_BYTES];
	struct trank t[4] = {0};

	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	for (uint32_t r = 0; r < 4; r++)
		trank_start(&t[r], info, r, 4, TMO_MS, body_exercise);
	for (uint32_t r = 0; r < 4; r++) {
		trank_join(&t[r]);
		cr_assert_eq(t[r].status, OHC_OK, "rank %u: %d", r,
			     t[r].status);
		cr_assert_eq(t[r].result, 0, "rank %u failed at line %d", r,
			     t[r].result);
	}
	cr_assert_eq(listeners_settle(), 0);
	cr_assert_eq(ohc_root_info_joined(info), -1);
}

/* A communicator of one: everything works without a peer. */
Test(threads, single_rank, .timeout = 30)
{
	uint8_t info[OHC_ROOT_INFO_BYTES];
	struct ohc_bootstrap *bs = NULL, *sub = NULL, *ip[1];
	uint32_t me = 0;

	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	cr_assert_eq(ohc_bootstrap_init_root(info, 1, 0, TMO_MS, &bs), OHC_OK);
	cr_assert_eq(exercise(bs, 0), 0);
	cr_assert_eq(ohc_bootstrap_split(bs, 1, &me, 3, &sub), OHC_OK);
	cr_assert_eq(exercise(sub, 0), 0);
	ohc_bootstrap_destroy(sub);
	ohc_bootstrap_destroy(bs);
	cr_assert_eq(ohc_bootstrap_inproc_create(1, ip), OHC_OK);
	cr_assert_eq(exercise(ip[0], 0), 0);
	ohc_bootstrap_destroy(ip[0]);
}

/* Two communicators at once in one process; their data never mixes. */
static int body_group(struct trank *t, struct ohc_bootstrap *bs)
{
	uint32_t salt = *(uint32_t *)t->arg, n = ohc_bootstrap_nranks(bs);
	uint32_t v[8];

	for (int it = 0; it < 20; it++) {
		v[t->rank] = salt * 1000 + t->rank * 10 + (uint32_t)it;
		if (ohc_bootstrap_allgather(bs, v, sizeof(v[0])) != OHC_OK)
			return __LINE__;
		for (uint32_t k = 0; k < n; k++)
			if (v[k] != salt * 1000 + k * 10 + (uint32_t)it)
				return __LINE__;
	}
	return 0;
}

Test(threads, concurrent_root_infos, .timeout = 60)
{
	uint8_t info[2][OHC_ROOT_INFO_BYTES];
	uint32_t salt[2] = {1, 2};
	struct trank t[2][3];

	memset(t, 0, sizeof(t));
	cr_assert_eq(ohc_root_info_create(info[0]), OHC_OK);
	cr_assert_eq(ohc_root_info_create(info[1]), OHC_OK);
	for (uint32_t r = 0; r < 3; r++)
		for (int g = 0; g < 2; g++) {
			t[g][r].arg = &salt[g];
			trank_start(&t[g][r], info[g], r, 3, TMO_MS,
				    body_group);
		}
	for (int g = 0; g < 2; g++)
		for (uint32_t r = 0; r < 3; r++) {
			trank_join(&t[g][r]);
			cr_assert_eq(t[g][r].status, OHC_OK);
			cr_assert_eq(t[g][r].result, 0, "group %d rank %u: %d",
				     g, r, t[g][r].result);
		}
}

/* ---------------------------------------------------------------------- */
/* In-process                                                             */

struct ip_rank {
	pthread_t th;
	struct ohc_bootstrap *bs;
	int result;
};

static void *ip_main(void *p)
{
	struct ip_rank *x = p;

	x->result = exercise(x->bs, 1);
	return NULL;
}

Test(inproc, exercise, .timeout = 60)
{
	struct ohc_bootstrap *bss[4];
	struct ip_rank x[4];
	char hid[OHC_HOSTID_MAX];

	cr_assert_eq(ohc_bootstrap_inproc_create(4, bss), OHC_OK);
	cr_assert_eq(ohc_hostid_get(hid, sizeof(hid)), OHC_OK);
	for (int r = 0; r < 4; r++) {
		cr_assert_eq(ohc_bootstrap_rank(bss[r]), (uint32_t)r);
		cr_assert_eq(ohc_bootstrap_nranks(bss[r]), 4);
		cr_assert_str_eq(ohc_bootstrap_hostid(bss[r], 3), hid);
		x[r].bs = bss[r];
		pthread_create(&x[r].th, NULL, ip_main, &x[r]);
	}
	for (int r = 0; r < 4; r++) {
		pthread_join(x[r].th, NULL);
		cr_assert_eq(x[r].result, 0, "rank %d failed at line %d", r,
			     x[r].result);
	}
	for (int r = 0; r < 4; r++)
		ohc_bootstrap_destroy(bss[r]);
	cr_assert_eq(ohc_bootstrap_inproc_create(0, bss), OHC_ERR_INVALID);
	cr_assert_eq(ohc_bootstrap_inproc_create(2, NULL), OHC_ERR_NULL);
}

Test(inproc, peer_gone_and_timeouts, .timeout = 30)
{
	struct ohc_bootstrap *bss[3];
	uint64_t v = 0;
	double t0;

	cr_assert_eq(ohc_bootstrap_inproc_create(3, bss), OHC_OK);
	/* A receive that times out does not poison the bootstrap. */
	ohc_bootstrap_set_timeout(bss[0], 200);
	t0 = now_ms();
	cr_assert_eq(ohc_bootstrap_recv(bss[0], 1, 3, &v, sizeof(v)),
		     OHC_ERR_TIMEOUT);
	cr_assert(now_ms() - t0 >= 190 && now_ms() - t0 < 2000);
	/* A message of the wrong size is refused and dropped. */
	cr_assert_eq(ohc_bootstrap_send(bss[1], 0, 4, &v, 4), OHC_OK);
	cr_assert_eq(ohc_bootstrap_recv(bss[0], 1, 4, &v, sizeof(v)),
		     OHC_ERR_INVALID);
	/* A rank that left: sending to it and waiting for it fail. */
	ohc_bootstrap_destroy(bss[2]);
	ohc_bootstrap_set_timeout(bss[0], 5000);
	t0 = now_ms();
	cr_assert_eq(ohc_bootstrap_recv(bss[0], 2, 1, &v, sizeof(v)),
		     OHC_ERR_REMOTE);
	cr_assert_eq(ohc_bootstrap_send(bss[1], 2, 1, &v, sizeof(v)),
		     OHC_ERR_REMOTE);
	cr_assert_lt(now_ms() - t0, 1000);
	/* A collective that fails poisons everyone: rank 1 finds out at once */
	cr_assert_eq(ohc_bootstrap_barrier(bss[0]), OHC_ERR_REMOTE);
	cr_assert_eq(ohc_bootstrap_barrier(bss[1]), OHC_ERR_REMOTE);
	cr_assert_lt(now_ms() - t0, 1000);
	ohc_bootstrap_destroy(bss[0]);
	ohc_bootstrap_destroy(bss[1]);
}

/* ---------------------------------------------------------------------- */
/* Refusals                                                               */

static void wait_joined(const uint8_t *info, int n)
{
	for (int i = 0; i < 500 && ohc_root_info_joined(info) < n; i++)
		sleep_ms(10);
	cr_assert_eq(ohc_root_info_joined(info), n);
}

/* Start good rank 0 of 2, try `bad`, then good rank 1: the bad one is
 * refused at once with the log naming why, the good ones complete. */
static void refusal_case(const uint8_t *bad_info, uint32_t bad_nranks,
			 uint32_t bad_rank, const uint8_t *info,
			 ohc_status_t want, const char *log_says)
{
	struct trank good[2] = {0}, bad = {0};
	char *log;

	capture_begin();
	trank_start(&good[0], info, 0, 2, TMO_MS, body_exercise);
	wait_joined(info, 1);
	trank_start(&bad, bad_info, bad_rank, bad_nranks, TMO_MS, NULL);
	trank_join(&bad);
	cr_assert_eq(bad.status, want, "got %d", bad.status);
	cr_assert_lt(bad.took_ms, 2000, "refusal took %.0f ms", bad.took_ms);
	trank_start(&good[1], info, 1, 2, TMO_MS, body_exercise);
	for (int r = 0; r < 2; r++) {
		trank_join(&good[r]);
		cr_assert_eq(good[r].status, OHC_OK);
		cr_assert_eq(good[r].result, 0);
	}
	log = capture_end();
	cr_assert(strstr(log, log_says), "log lacks '%s'", log_says);
	cr_assert(strstr(log, "refused"));
	free(log);
}

Test(refuse, wrong_token, .timeout = 60)
{
	uint8_t info[OHC_ROOT_INFO_BYTES], forged[OHC_ROOT_INFO_BYTES];
	uint8_t be[8];
	uint64_t tok;
	uint8_t *at;

	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	memcpy(forged, info, sizeof(forged));
	tok = ohc_root_info_session(info);
	for (int i = 0; i < 8; i++)
		be[i] = (uint8_t)(tok >> (56 - 8 * i));
	at = memmem(forged, sizeof(forged), be, sizeof(be));
	cr_assert(at, "token not found in the blob");
	at[7] ^= 0x5a;
	cr_assert_eq(ohc_root_info_check(forged), OHC_OK);
	cr_assert_neq(ohc_root_info_session(forged), tok);
	refusal_case(forged, 2, 1, info, OHC_ERR_INVALID,
		     "wrong session token");
}

Test(refuse, nranks_mismatch, .timeout = 60)
{
	uint8_t info[OHC_ROOT_INFO_BYTES];

	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	refusal_case(info, 3, 2, info, OHC_ERR_INVALID,
		     "nranks 3 does not match the 2");
}

Test(refuse, duplicate_rank, .timeout = 60)
{
	uint8_t info[OHC_ROOT_INFO_BYTES];

	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	refusal_case(info, 2, 0, info, OHC_ERR_INVALID, "duplicate rank 0");
}

/* Strangers on the root's port (junk, silence) change nothing. */
Test(refuse, junk_connections, .timeout = 60)
{
	uint8_t info[OHC_ROOT_INFO_BYTES], junk[64];
	struct trank t[2] = {0};
	struct bs_addr root;
	char ip[64];
	unsigned port;
	int fd[2];
	char *log;

	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	cr_assert_eq(sscanf(ohc_root_info_name(info), "%63[^_]_%u", ip, &port),
		     2);
	cr_assert_eq(bs_addr_from_ip(ip, (uint16_t)port, &root), OHC_OK);
	memset(junk, 0xa5, sizeof(junk));
	capture_begin();
	for (int i = 0; i < 2; i++) {
		struct ohc_hs hs;

		ohc_hs_init(&hs, &bs_proto, "the root", 0,
			    ohc_deadline_after_ms(2000));
		hs.once = 1;
		cr_assert_eq(ohc_hs_connect(&hs, &root.u.sa, root.len,
					    SOCK_STREAM, &fd[i]),
			     OHC_OK, "%s", hs.why);
	}
	cr_assert_eq(write(fd[0], junk, sizeof(junk)), (ssize_t)sizeof(junk));
	for (uint32_t r = 0; r < 2; r++)
		trank_start(&t[r], info, r, 2, TMO_MS, body_exercise);
	for (uint32_t r = 0; r < 2; r++) {
		trank_join(&t[r]);
		cr_assert_eq(t[r].status, OHC_OK);
		cr_assert_eq(t[r].result, 0);
	}
	log = capture_end();
	cr_assert(strstr(log, "not a bootstrap peer"), "%s", log);
	free(log);
	close(fd[0]);
	close(fd[1]);
}

/*
 * A flood on the root's port: 2000 connections that stay silent, send
 * junk or half a frame, held open while two real ranks join. The ranks
 * must get through well within their timeout (the listener used to keep
 * 128 strangers for 10 s each and let the rest wait in the backlog), the
 * root must hold no more than its gate's bound, and the log must stay
 * short: a few lines, then counts.
 */
#define FLOOD 2000

Test(refuse, flood_of_strangers, .timeout = 120)
{
	uint8_t info[OHC_ROOT_INFO_BYTES], junk[64], half[OHC_FRAME_HDR_BYTES];
	struct ohc_frame_hdr h = {.type = BS_T_JOIN, .len = BS_JOIN_BYTES};
	struct trank t[2] = {0};
	struct rlimit rl;
	struct bs_addr root;
	char ip[64], *log, *p;
	unsigned port, lines = 0;
	int *fds, err, opened = 0;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < FLOOD + 1024 && rl.rlim_max >= FLOOD + 1024) {
		rl.rlim_cur = FLOOD + 1024;
		cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	cr_assert_geq(rl.rlim_cur, FLOOD + 1024,
		      "the test needs %d fds (hard limit %llu)", FLOOD + 1024,
		      (unsigned long long)rl.rlim_max);
	fds = calloc(FLOOD, sizeof(*fds));
	cr_assert(fds);
	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	cr_assert_eq(sscanf(ohc_root_info_name(info), "%63[^_]_%u", ip, &port),
		     2);
	cr_assert_eq(bs_addr_from_ip(ip, (uint16_t)port, &root), OHC_OK);
	memset(junk, 0xa5, sizeof(junk));
	ohc_frame_hdr_encode(
		&bs_proto, &h,
		half); /* a JOIN header whose payload never comes */
	capture_begin();
	for (int i = 0; i < FLOOD; i++) {
		ohc_status_t st = ohc_hs_connect_start(
			&root.u.sa, root.len, SOCK_STREAM, &fds[i], &err);

		cr_assert(st == OHC_OK || st == OHC_INPROGRESS,
			  "connect %d: %s", i, strerror(err));
		opened++;
	}
	/* Wait until most are connected, then make some of them talk. */
	for (int i = 0; i < FLOOD; i++) {
		if (ohc_hs_wait_fd(fds[i], POLLOUT,
				   ohc_deadline_after_ms(20)) == OHC_OK) {
			if (i % 3 == 1)
				(void)!write(fds[i], junk, sizeof(junk));
			else if (i % 3 == 2)
				(void)!write(fds[i], half, sizeof(half));
		}
	}
	for (uint32_t r = 0; r < 2; r++)
		trank_start(&t[r], info, r, 2, TMO_MS, body_exercise);
	for (uint32_t r = 0; r < 2; r++) {
		trank_join(&t[r]);
		cr_assert_eq(t[r].status, OHC_OK, "rank %u: status %d", r,
			     t[r].status);
		cr_assert_eq(t[r].result, 0);
	}
	for (int i = 0; i < opened; i++)
		close(fds[i]);
	free(fds);
	log = capture_end();
	for (p = log; (p = strstr(p, "refused")); p++)
		lines++;
	cr_assert_leq(lines, 10, "%u lines say 'refused'", lines);
	free(log);
}

/* ---------------------------------------------------------------------- */
/* Shared secret, impostors, squatted ports                               */

static void set_secret(const char *secret)
{
	set_env("OPENHCCL_BOOTSTRAP_SECRET", secret);
}

/*
 * With OPENHCCL_BOOTSTRAP_SECRET set, holding the root info is not enough:
 * a rank without the secret (or with another one) is refused as having
 * the wrong token, the real ranks complete, and the secret appears in no
 * log line.
 */
Test(secret, root_info_impostor_refused, .timeout = 60)
{
	uint8_t info[OHC_ROOT_INFO_BYTES];
	struct trank good[2] = {0}, bad = {0}, other = {0};
	char *log;

	capture_begin();
	set_secret("correct horse battery staple");
	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	trank_start(&good[0], info, 0, 2, TMO_MS, body_exercise);
	wait_joined(info, 1);
	set_secret(NULL);
	trank_start(&bad, info, 1, 2, TMO_MS, NULL);
	trank_join(&bad);
	set_secret("correct horse battery stapler");
	trank_start(&other, info, 1, 2, TMO_MS, NULL);
	trank_join(&other);
	set_secret("correct horse battery staple");
	trank_start(&good[1], info, 1, 2, TMO_MS, body_exercise);
	for (int r = 0; r < 2; r++)
		trank_join(&good[r]);
	set_secret(NULL);
	log = capture_end();
	cr_expect_eq(bad.status, OHC_ERR_INVALID, "no secret: %d", bad.status);
	cr_expect_eq(other.status, OHC_ERR_INVALID, "other secret: %d",
		     other.status);
	for (int r = 0; r < 2; r++) {
		cr_expect_eq(good[r].status, OHC_OK, "rank %d", r);
		cr_expect_eq(good[r].result, 0, "rank %d", r);
	}
	cr_expect(strstr(log, "wrong session token"), "%s", log);
	cr_expect_null(strstr(log, "battery"), "the secret was logged");
	free(log);
}

/* The secret from a file: same key as from the variable; special,
 * empty and doubly configured secrets refused; never dumped. */
Test(secret, file_and_checks, .timeout = 30)
{
	char dir[] = "/tmp/ohc_secret_XXXXXX", path[64], fifo[64], *dump;
	struct bs_auth from_env, from_file;
	size_t dump_len;
	FILE *f;
	char *log;

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/secret", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	f = fopen(path, "w");
	cr_assert(f);
	fputs("xyzzy-plugh\n", f);
	fclose(f);
	chmod(path, 0644);
	cr_assert_eq(mkfifo(fifo, 0600), 0);

	set_secret("xyzzy-plugh");
	cr_assert_eq(bs_auth_init(42, &from_env), OHC_OK);
	cr_expect(from_env.keyed);
	f = open_memstream(&dump, &dump_len);
	ohc_env_dump(f);
	fclose(f);
	cr_expect_null(strstr(dump, "xyzzy"), "the secret was dumped");
	cr_expect(strstr(dump, "(set, not shown)"));
	free(dump);
	set_secret(NULL);

	capture_begin();
	set_env("OPENHCCL_BOOTSTRAP_SECRET_FILE", path);
	cr_assert_eq(bs_auth_init(42, &from_file), OHC_OK);
	cr_expect_eq(bs_auth_join(&from_file), bs_auth_join(&from_env));
	cr_expect_eq(bs_auth_welcome(&from_file, 3),
		     bs_auth_welcome(&from_env, 3));
	set_secret("xyzzy-plugh"); /* both set */
	cr_expect_eq(bs_auth_init(42, &from_file), OHC_ERR_INVALID);
	set_secret(NULL);
	set_env("OPENHCCL_BOOTSTRAP_SECRET_FILE", fifo);
	cr_expect_eq(bs_auth_init(42, &from_file), OHC_ERR_INVALID);
	f = fopen(path, "w");
	fclose(f);
	set_env("OPENHCCL_BOOTSTRAP_SECRET_FILE", path);
	cr_expect_eq(bs_auth_init(42, &from_file), OHC_ERR_INVALID);
	set_env("OPENHCCL_BOOTSTRAP_SECRET_FILE", NULL);
	log = capture_end();
	cr_expect(strstr(log, "readable by other users"), "%s", log);
	cr_expect(strstr(log, "are both set"), "%s", log);
	cr_expect(strstr(log, "is a FIFO, not a regular file"), "%s", log);
	cr_expect(strstr(log, "is empty"), "%s", log);
	cr_expect_null(strstr(log, "xyzzy"), "the secret was logged");
	free(log);
	/* without a secret the tokens differ from the keyed ones */
	cr_assert_eq(bs_auth_init(42, &from_file), OHC_OK);
	cr_expect(!from_file.keyed);
	cr_expect_neq(bs_auth_join(&from_file), bs_auth_join(&from_env));
	unlink(path);
	unlink(fifo);
	rmdir(dir);
}

/* Rank-table mode: the file's hash alone no longer admits a rank. */
struct table_rank {
	pthread_t th;
	uint16_t port;
	unsigned nports;
	uint32_t rank, nranks;
	uint64_t hash;
	ohc_status_t status;
	int result;
};

static void *table_rank_main(void *p)
{
	struct table_rank *t = p;
	struct ohc_bootstrap *bs = NULL;

	t->status = ohc_bootstrap_init_addr("127.0.0.1", t->port, t->nports,
					    t->hash, t->nranks, t->rank, TMO_MS,
					    &bs);
	if (t->status == OHC_OK)
		t->result = exercise(bs, 0);
	ohc_bootstrap_destroy(bs);
	return NULL;
}

static void table_start(struct table_rank *t, uint16_t port, unsigned nports,
			uint32_t rank, uint32_t nranks, uint64_t hash)
{
	t->port = port;
	t->nports = nports;
	t->rank = rank;
	t->nranks = nranks;
	t->hash = hash;
	cr_assert_eq(pthread_create(&t->th, NULL, table_rank_main, t), 0);
}

Test(secret, rank_table_impostor_refused, .timeout = 60)
{
	struct table_rank t[2] = {0}, bad = {0};
	uint16_t port = free_port();

	set_secret("s3cret");
	table_start(&t[0], port, 1, 0, 2, 0x5eed);
	sleep_ms(200); /* rank 0's root is up */
	set_secret(NULL);
	table_start(&bad, port, 1, 1, 2, 0x5eed);
	pthread_join(bad.th, NULL);
	set_secret("s3cret");
	table_start(&t[1], port, 1, 1, 2, 0x5eed);
	for (int r = 0; r < 2; r++) {
		pthread_join(t[r].th, NULL);
		cr_expect_eq(t[r].status, OHC_OK, "rank %d: %d", r,
			     t[r].status);
		cr_expect_eq(t[r].result, 0);
	}
	set_secret(NULL);
	cr_expect_eq(bad.status, OHC_ERR_INVALID, "impostor: %d", bad.status);
}

/* What may hold the port a rank-table job starts at. */
enum squat {
	SQUAT_BACKLOG, /* listens, never accepts */
	SQUAT_CLOSE,   /* accepts and closes */
	SQUAT_OTHER,   /* another rank-table job's root (other token) */
};

struct squatter {
	pthread_t th;
	int fd, stop;
};

static void *squat_close_main(void *p)
{
	struct squatter *q = p;

	while (!__atomic_load_n(&q->stop, __ATOMIC_ACQUIRE)) {
		int c = accept4(q->fd, NULL, NULL, SOCK_NONBLOCK);

		if (c >= 0)
			close(c);
		else
			sleep_ms(5);
	}
	return NULL;
}

static void squat_case(enum squat kind)
{
	struct table_rank t[3] = {0}, other = {0};
	struct squatter q = {.fd = -1};
	struct sockaddr_in a = {.sin_family = AF_INET};
	uint16_t port = free_port();

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	if (kind == SQUAT_OTHER) {
		/* a job of 2 whose second rank never comes: its root holds
		 * the port for the whole test */
		table_start(&other, port, 1, 0, 2, 0x0123);
		sleep_ms(200);
	} else {
		q.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		cr_assert_eq(bind(q.fd, (struct sockaddr *)&a, sizeof(a)), 0);
		cr_assert_eq(listen(q.fd, 16), 0);
		if (kind == SQUAT_CLOSE)
			pthread_create(&q.th, NULL, squat_close_main, &q);
	}
	/* ranks 1 and 2 first: they find the squatter before rank 0 is up */
	for (uint32_t r = 3; r-- > 0;) {
		table_start(&t[r], port, 8, r, 3, 0x5eed);
		if (r)
			sleep_ms(50);
	}
	for (int r = 0; r < 3; r++) {
		pthread_join(t[r].th, NULL);
		cr_expect_eq(t[r].status, OHC_OK, "rank %d: %d", r,
			     t[r].status);
		cr_expect_eq(t[r].result, 0);
	}
	if (kind == SQUAT_OTHER) {
		pthread_join(other.th, NULL);
		cr_expect_neq(other.status, OHC_OK);
	} else {
		__atomic_store_n(&q.stop, 1, __ATOMIC_RELEASE);
		if (kind == SQUAT_CLOSE)
			pthread_join(q.th, NULL);
		close(q.fd);
	}
}

/* Rank-table roots move to the next free port; the ranks find them there
 * and not the squatter (which once made init fail with E_UNAVAIL). */
Test(squat, listener_that_never_accepts, .timeout = 60)
{
	squat_case(SQUAT_BACKLOG);
}

Test(squat, listener_that_closes, .timeout = 60)
{
	squat_case(SQUAT_CLOSE);
}

Test(squat, another_jobs_root, .timeout = 60)
{
	squat_case(SQUAT_OTHER);
}

/* One rank needs no root at all: a taken port is no obstacle. */
Test(squat, single_rank_needs_no_port, .timeout = 30)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct ohc_bootstrap *bs = NULL;
	uint16_t port = free_port();
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(fd, 4), 0);
	cr_assert_eq(ohc_bootstrap_init_addr("127.0.0.1", port, 1, 7, 1, 0,
					     TMO_MS, &bs),
		     OHC_OK);
	cr_expect_eq(exercise(bs, 0), 0);
	ohc_bootstrap_destroy(bs);
	close(fd);
}

Test(refuse, bad_arguments, .timeout = 30)
{
	uint8_t info[OHC_ROOT_INFO_BYTES];
	struct ohc_bootstrap *bs = NULL;

	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	cr_assert_eq(ohc_bootstrap_init_root(info, 2, 2, 1000, &bs),
		     OHC_ERR_INVALID);
	cr_assert_eq(ohc_bootstrap_init_root(info, 0, 0, 1000, &bs),
		     OHC_ERR_INVALID);
	cr_assert_eq(ohc_bootstrap_init_root(info, 2, 0, 1000, NULL),
		     OHC_ERR_NULL);
	cr_assert_eq(ohc_bootstrap_init_addr(NULL, 1, 1, 1, 2, 0, 1000, &bs),
		     OHC_ERR_NULL);
	cr_assert_eq(ohc_bootstrap_init_addr("x.y", 1, 1, 1, 2, 0, 1000, &bs),
		     OHC_ERR_INVALID);
	cr_assert_null(bs);
}

/* ---------------------------------------------------------------------- */
/* Whitelist                                                              */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f);
	fputs(text, f);
	fclose(f);
}

Test(whitelist, enforced, .timeout = 60)
{
	char path[] = "/tmp/ohc_bs_white_XXXXXX";
	uint8_t info[OHC_ROOT_INFO_BYTES];
	struct trank t[2] = {0};
	char *log;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	set_env("HCCL_IF_IP", "127.0.0.1");
	set_env("HCCL_WHITELIST_DISABLE", "0");
	set_env("HCCL_WHITELIST_FILE", path);

	/* Not listed: refused at once. */
	write_file(path, "{\"host_ip\": [\"10.9.8.7\", \"fd00::99\"]}");
	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	capture_begin();
	trank_start(&t[0], info, 0, 2, TMO_MS, NULL);
	trank_join(&t[0]);
	log = capture_end();
	cr_assert_eq(t[0].status, OHC_ERR_TCP_CONNECT);
	cr_assert_lt(t[0].took_ms, 2000);
	cr_assert(strstr(log, "127.0.0.1 is not in HCCL_WHITELIST_FILE"));
	free(log);

	/* Listed: accepted. */
	write_file(path, "{\"host_ip\": [\"10.9.8.7\", \"127.0.0.1\"]}");
	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	for (uint32_t r = 0; r < 2; r++)
		trank_start(&t[r], info, r, 2, TMO_MS, body_exercise);
	for (uint32_t r = 0; r < 2; r++) {
		trank_join(&t[r]);
		cr_assert_eq(t[r].status, OHC_OK);
		cr_assert_eq(t[r].result, 0);
	}

	/* Broken files fail HcclGetRootInfo, naming the place. */
	write_file(path, "{\"host_ip\": [\"10.9.8.7\",\n  oops]}");
	capture_begin();
	cr_assert_eq(ohc_root_info_create(info), OHC_ERR_INVALID);
	log = capture_end();
	cr_assert(strstr(log, path) && strstr(log, ":2:"), "%s", log);
	free(log);
	write_file(path, "{\"host_ip\": [\"10.9.8.7\", 12]}");
	cr_assert_eq(ohc_root_info_create(info), OHC_ERR_INVALID);
	write_file(path, "[\"127.0.0.1\"]");
	cr_assert_eq(ohc_root_info_create(info), OHC_ERR_INVALID);
	unlink(path);
	cr_assert_eq(ohc_root_info_create(info), OHC_ERR_OPEN_FILE);
	set_env("HCCL_WHITELIST_FILE", NULL);
	cr_assert_eq(ohc_root_info_create(info), OHC_ERR_INVALID);
}

/* ---------------------------------------------------------------------- */
/* Timeouts and failures                                                  */

#define ABSENT_N 8
#define ABSENT_TMO 1500

struct absent {
	uint8_t info[OHC_ROOT_INFO_BYTES];
	int status[ABSENT_N];
	double took[ABSENT_N];
};

static int absent_rank(int idx, int nranks, void *p)
{
	static const int present[] = {0, 1, 3, 4, 6, 7};
	struct absent *a = p;
	struct ohc_bootstrap *bs = NULL;
	int rank = present[idx];
	double t0 = now_ms();

	(void)nranks;
	a->status[rank] = ohc_bootstrap_init_root(
		a->info, ABSENT_N, (uint32_t)rank, ABSENT_TMO, &bs);
	a->took[rank] = now_ms() - t0;
	ohc_bootstrap_destroy(bs);
	return 0;
}

Test(timeout, ranks_never_arrive, .timeout = 60)
{
	struct absent *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double longest = 0;
	char *log;

	cr_assert_eq(ohc_root_info_create(a->info), OHC_OK);
	capture_begin();
	/* ranks 2 and 5 of 8 never start */
	cr_assert_eq(fork_ranks(6, absent_rank, a, 40), 0);
	cr_assert_eq(listeners_settle(), 0);
	log = capture_end();
	for (int r = 0; r < ABSENT_N; r++) {
		if (r == 2 || r == 5)
			continue;
		cr_assert_eq(a->status[r], OHC_ERR_TIMEOUT, "rank %d: %d", r,
			     a->status[r]);
		/* The root gives up when the first rank's timeout expires;
		 * ranks that started later hear it a little sooner. */
		cr_assert_geq(a->took[r], ABSENT_TMO / 2);
		cr_assert_lt(a->took[r], ABSENT_TMO + 3000, "rank %d: %.0f ms",
			     r, a->took[r]);
		if (a->took[r] > longest)
			longest = a->took[r];
	}
	cr_assert_geq(longest, ABSENT_TMO - 100);
	cr_assert(strstr(log, "ranks 2, 5 of 8 never arrived"),
		  "the root did not name the missing ranks");
	free(log);
	munmap(a, sizeof(*a));
}

#define KILL_N 4
#define KILL_VICTIM 2
#define KILL_TMO 3000

struct killed {
	uint8_t info[OHC_ROOT_INFO_BYTES];
	int start; /* all forked: join */
	int ready[KILL_N];
	int go; /* victim killed: allgather */
	int status[KILL_N];
	int later[KILL_N];
	double took[KILL_N];
	double later_took[KILL_N];
};

static int killed_rank(int rank, struct killed *k)
{
	struct ohc_bootstrap *bs = NULL;
	uint64_t v[KILL_N];
	double t0;

	for (int i = 0;
	     i < 30000 && !__atomic_load_n(&k->start, __ATOMIC_ACQUIRE); i++)
		sleep_ms(1);
	if (ohc_bootstrap_init_root(k->info, KILL_N, (uint32_t)rank, TMO_MS,
				    &bs) != OHC_OK)
		return 1;
	if (ohc_bootstrap_barrier(bs) != OHC_OK)
		return 2;
	ohc_bootstrap_set_timeout(bs, KILL_TMO);
	__atomic_store_n(&k->ready[rank], 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 30000 && !__atomic_load_n(&k->go, __ATOMIC_ACQUIRE);
	     i++)
		sleep_ms(1);
	if (!k->go)
		_exit(4); /* the parent gave up */
	t0 = now_ms();
	v[rank] = (uint64_t)rank;
	k->status[rank] = ohc_bootstrap_allgather(bs, v, sizeof(v[0]));
	k->took[rank] = now_ms() - t0;
	/* A poisoned bootstrap fails later operations at once. */
	t0 = now_ms();
	k->later[rank] = ohc_bootstrap_barrier(bs);
	k->later_took[rank] = now_ms() - t0;
	ohc_bootstrap_destroy(bs);
	return 0;
}

Test(failure, peer_killed, .timeout = 60)
{
	struct killed *k = mmap(NULL, sizeof(*k), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid[KILL_N];

	cr_assert_eq(ohc_root_info_create(k->info), OHC_OK);
	fflush(NULL);
	for (int r = 0; r < KILL_N; r++) {
		pid[r] = fork();
		if (pid[r] == 0)
			_exit(killed_rank(r, k));
	}
	__atomic_store_n(&k->start, 1, __ATOMIC_RELEASE);
	for (int r = 0; r < KILL_N; r++)
		for (int i = 0; i < 2000 && !__atomic_load_n(&k->ready[r],
							     __ATOMIC_ACQUIRE);
		     i++)
			sleep_ms(5);
	for (int r = 0; r < KILL_N; r++)
		cr_assert(k->ready[r], "rank %d never got ready", r);
	kill(pid[KILL_VICTIM], SIGKILL);
	waitpid(pid[KILL_VICTIM], NULL, 0);
	__atomic_store_n(&k->go, 1, __ATOMIC_RELEASE);
	for (int r = 0; r < KILL_N; r++) {
		int st;

		if (r == KILL_VICTIM)
			continue;
		cr_assert_eq(waitpid(pid[r], &st, 0), pid[r]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "rank %d exit 0x%x", r, st);
		cr_assert(k->status[r] == OHC_ERR_REMOTE ||
				  k->status[r] == OHC_ERR_TIMEOUT,
			  "rank %d got %d", r, k->status[r]);
		cr_assert_lt(k->took[r], KILL_TMO + 2000, "rank %d: %.0f ms", r,
			     k->took[r]);
		cr_assert_lt(k->status[r], 0);
		cr_assert_lt(k->later[r], 0);
		cr_assert_lt(k->later_took[r], 500);
		fprintf(stderr, "rank %d saw the dead peer in %.0f ms (%s)\n",
			r, k->took[r], ohc_status_str(k->status[r]));
	}
	munmap(k, sizeof(*k));
}

/* p2p timeouts and size mismatches are local: the bootstrap goes on. */
static int body_p2p_errors(struct trank *t, struct ohc_bootstrap *bs)
{
	uint64_t v = 1;
	uint32_t w = 0;

	if (t->rank == 0) {
		ohc_bootstrap_set_timeout(bs, 200);
		CHECK(ohc_bootstrap_recv(bs, 1, 77, &v, sizeof(v)) ==
		      OHC_ERR_TIMEOUT);
		ohc_bootstrap_set_timeout(bs, TMO_MS);
		CHECK(ohc_bootstrap_recv(bs, 1, 78, &v, sizeof(v)) ==
		      OHC_ERR_INVALID);
		CHECK(ohc_bootstrap_recv(bs, 1, 79, &w, sizeof(w)) == OHC_OK);
		CHECK(w == 79);
	} else {
		CHECK(ohc_bootstrap_send(bs, 0, 78, &w, sizeof(w)) == OHC_OK);
		w = 79;
		CHECK(ohc_bootstrap_send(bs, 0, 79, &w, sizeof(w)) == OHC_OK);
	}
	CHECK(ohc_bootstrap_send(bs, 2, 1, &v, sizeof(v)) == OHC_ERR_INVALID);
	CHECK(ohc_bootstrap_bcast(bs, &v, sizeof(v), 2) == OHC_ERR_INVALID);
	return exercise(bs, 0);
}

Test(failure, p2p_errors_are_local, .timeout = 60)
{
	uint8_t info[OHC_ROOT_INFO_BYTES];
	struct trank t[2] = {0};

	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	for (uint32_t r = 0; r < 2; r++)
		trank_start(&t[r], info, r, 2, TMO_MS, body_p2p_errors);
	for (uint32_t r = 0; r < 2; r++) {
		trank_join(&t[r]);
		cr_assert_eq(t[r].status, OHC_OK);
		cr_assert_eq(t[r].result, 0, "rank %u: line %d", r,
			     t[r].result);
	}
}

/* ---------------------------------------------------------------------- */
/* Abort                                                                  */

struct blocked {
	struct ohc_bootstrap *bs;
	ohc_status_t status;
	int started; /* atomic */
	double end;
	pthread_t th;
};

static void *blocked_recv(void *p)
{
	struct blocked *b = p;
	uint64_t v;

	__atomic_store_n(&b->started, 1, __ATOMIC_RELEASE);
	b->status = ohc_bootstrap_recv(b->bs, 1, 5, &v, sizeof(v));
	b->end = now_ms();
	return NULL;
}

/* Abort rank 0 while it waits for rank 1, which sends nothing. */
static int abort_case(struct ohc_bootstrap *bs0)
{
	struct blocked b = {.bs = bs0};
	uint64_t v = 0;
	double t_abort;

	ohc_bootstrap_set_timeout(bs0, 20000);
	pthread_create(&b.th, NULL, blocked_recv, &b);
	while (!__atomic_load_n(&b.started, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	sleep_ms(200); /* it is blocked by now */
	t_abort = now_ms();
	ohc_bootstrap_abort(bs0);
	pthread_join(b.th, NULL);
	CHECK(b.status == OHC_ERR_CANCELED);
	CHECK(b.end - t_abort < 1000);
	CHECK(ohc_bootstrap_barrier(bs0) == OHC_ERR_CANCELED);
	CHECK(ohc_bootstrap_send(bs0, 1, 1, &v, sizeof(v)) == OHC_ERR_CANCELED);
	return 0;
}

static int body_abort(struct trank *t, struct ohc_bootstrap *bs)
{
	int *done = t->arg, bad = 0;

	if (t->rank == 0) {
		bad = abort_case(bs);
		__atomic_store_n(done, 1, __ATOMIC_RELEASE);
		return bad;
	}
	/* Stay connected until rank 0 is through. */
	for (int i = 0; i < 1000 && !__atomic_load_n(done, __ATOMIC_ACQUIRE);
	     i++)
		sleep_ms(10);
	return 0;
}

Test(abort, socket, .timeout = 60)
{
	uint8_t info[OHC_ROOT_INFO_BYTES];
	struct trank t[2] = {0};
	int done = 0;

	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	for (uint32_t r = 0; r < 2; r++) {
		t[r].arg = &done;
		trank_start(&t[r], info, r, 2, TMO_MS, body_abort);
	}
	for (uint32_t r = 0; r < 2; r++) {
		trank_join(&t[r]);
		cr_assert_eq(t[r].status, OHC_OK);
		cr_assert_eq(t[r].result, 0, "rank %u: line %d", r,
			     t[r].result);
	}
}

Test(abort, inproc, .timeout = 60)
{
	struct ohc_bootstrap *bss[2];

	cr_assert_eq(ohc_bootstrap_inproc_create(2, bss), OHC_OK);
	cr_assert_eq(abort_case(bss[0]), 0);
	ohc_bootstrap_destroy(bss[0]);
	ohc_bootstrap_destroy(bss[1]);
}

/* ---------------------------------------------------------------------- */
/* Sub-groups                                                             */

struct split_side {
	struct ohc_bootstrap *bs;
	int result;
};

static void *parent_barriers(void *p)
{
	struct split_side *s = p;

	for (int i = 0; i < 20 && !s->result; i++)
		if (ohc_bootstrap_barrier(s->bs) != OHC_OK)
			s->result = __LINE__;
	return NULL;
}

/* Even and odd ranks form sub-groups (the odd ones listed in descending
 * order: sub-group ranks follow the list); each rank runs sub-group
 * allgathers in one thread while another runs parent barriers. */
static int split_body(struct ohc_bootstrap *bs)
{
	uint32_t r = ohc_bootstrap_rank(bs), n = ohc_bootstrap_nranks(bs);
	uint32_t members[8], m = 0, v[8], me;
	struct ohc_bootstrap *sub = NULL;
	struct split_side side = {.bs = bs};
	pthread_t th;
	int bad = 0;

	for (uint32_t k = r % 2; k < n; k += 2)
		members[m++] = k;
	for (uint32_t k = 0; r % 2 && k < m / 2; k++) {
		uint32_t x = members[k];

		members[k] = members[m - 1 - k];
		members[m - 1 - k] = x;
	}
	me = r % 2 ? m - 1 - r / 2 : r / 2;
	CHECK(ohc_bootstrap_split(bs, m, members, 100 + r % 2, &sub) == OHC_OK);
	CHECK(ohc_bootstrap_rank(sub) == me);
	CHECK(ohc_bootstrap_nranks(sub) == m);
	CHECK(!strcmp(ohc_bootstrap_hostid(sub, 0),
		      ohc_bootstrap_hostid(bs, members[0])));
	pthread_create(&th, NULL, parent_barriers, &side);
	for (int it = 0; it < 20 && !bad; it++) {
		v[me] = r * 100 + (uint32_t)it;
		if (ohc_bootstrap_allgather(sub, v, sizeof(v[0])) != OHC_OK)
			bad = __LINE__;
		for (uint32_t k = 0; k < m && !bad; k++)
			if (v[k] != members[k] * 100 + (uint32_t)it)
				bad = __LINE__;
	}
	pthread_join(th, NULL);
	CHECK(!bad && !side.result);
	/* The sub-group outlives its parent's handle. */
	ohc_bootstrap_destroy(bs);
	bad = exercise(sub, 0);
	ohc_bootstrap_destroy(sub);
	return bad;
}

static int body_split(struct trank *t, struct ohc_bootstrap *bs)
{
	uint32_t bad[2] = {0, 5}, dup[2];
	struct ohc_bootstrap *sub;

	if (ohc_bootstrap_split(bs, 2, bad, 1, &sub) != OHC_ERR_INVALID)
		return __LINE__;
	dup[0] = dup[1] = (uint32_t)t->rank; /* any order, but each once */
	if (ohc_bootstrap_split(bs, 2, dup, 1, &sub) != OHC_ERR_INVALID)
		return __LINE__;
	return split_body(bs);
}

/* trank_main destroys the parent itself: hand it a spare handle. */
static void *split_thread(void *p)
{
	struct trank *t = p;
	struct ohc_bootstrap *bs = NULL;

	t->status = ohc_bootstrap_init_root(t->info, t->nranks, t->rank,
					    t->timeout_ms, &bs);
	if (t->status == OHC_OK)
		t->result = body_split(t, bs);
	return NULL;
}

Test(split, socket, .timeout = 60)
{
	uint8_t info[OHC_ROOT_INFO_BYTES];
	struct trank t[4] = {0};

	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	for (uint32_t r = 0; r < 4; r++) {
		t[r].info = info;
		t[r].rank = r;
		t[r].nranks = 4;
		t[r].timeout_ms = TMO_MS;
		pthread_create(&t[r].th, NULL, split_thread, &t[r]);
	}
	for (uint32_t r = 0; r < 4; r++) {
		trank_join(&t[r]);
		cr_assert_eq(t[r].status, OHC_OK);
		cr_assert_eq(t[r].result, 0, "rank %u: line %d", r,
			     t[r].result);
	}
}

static void *split_inproc_thread(void *p)
{
	struct ip_rank *x = p;

	x->result = split_body(x->bs);
	return NULL;
}

Test(split, inproc, .timeout = 60)
{
	struct ohc_bootstrap *bss[4];
	struct ip_rank x[4];

	cr_assert_eq(ohc_bootstrap_inproc_create(4, bss), OHC_OK);
	for (int r = 0; r < 4; r++) {
		x[r].bs = bss[r];
		pthread_create(&x[r].th, NULL, split_inproc_thread, &x[r]);
	}
	for (int r = 0; r < 4; r++) {
		pthread_join(x[r].th, NULL);
		cr_assert_eq(x[r].result, 0, "rank %d: line %d", r,
			     x[r].result);
	}
}

/* ---------------------------------------------------------------------- */
/* Leaks                                                                  */

Test(leaks, fds_and_threads, .timeout = 60)
{
	uint8_t info[OHC_ROOT_INFO_BYTES], unused[OHC_ROOT_INFO_BYTES];
	struct ohc_bootstrap *bss[3];
	struct trank t[4] = {0};
	int fds, tasks;

	/* Warm up lazily created process state (logging, env, atfork). */
	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	for (uint32_t r = 0; r < 2; r++)
		trank_start(&t[r], info, r, 2, TMO_MS, NULL);
	for (uint32_t r = 0; r < 2; r++)
		trank_join(&t[r]);
	cr_assert_eq(listeners_settle(), 0);

	fds = ohc_test_count_fds();
	tasks = count_tasks();
	cr_assert_eq(ohc_root_info_create(info), OHC_OK);
	for (uint32_t r = 0; r < 4; r++)
		trank_start(&t[r], info, r, 4, TMO_MS, body_exercise);
	for (uint32_t r = 0; r < 4; r++) {
		trank_join(&t[r]);
		cr_assert_eq(t[r].status, OHC_OK);
		cr_assert_eq(t[r].result, 0);
	}
	cr_assert_eq(ohc_bootstrap_inproc_create(3, bss), OHC_OK);
	for (int r = 0; r < 3; r++)
		ohc_bootstrap_destroy(bss[r]);
	cr_assert_eq(listeners_settle(), 0);
	cr_assert_eq(ohc_test_count_fds(), fds);
	cr_assert_eq(count_tasks_settled(tasks), tasks);

	/* A listener nobody uses runs until the connect timeout or exit;
	 * it must not hold the process (exit joins it, under LSan too). */
	cr_assert_eq(ohc_root_info_create(unused), OHC_OK);
	cr_assert_eq(count_tasks_settled(tasks + 1), tasks + 1);
	cr_assert_eq(ohc_test_count_fds(), fds + 2);
}
