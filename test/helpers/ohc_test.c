/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <acl/acl.h>

#include "helpers/ohc_test.h"

void ohc_test_fork_settle(void)
{
	/*
	 * Criterion's messaging threads allocate right after a test starts;
	 * a fork that lands while one of them holds the (ASan) allocator
	 * lock leaves the child deadlocked in its first malloc. Let them
	 * settle first. The real cure is fork + exec of rank processes.
	 */
	usleep(200000);
}

/*
 * The signal OPENHCCL_FLIGHT_SIGNAL names for the library's flight
 * recorder dump ("USR1", "SIGUSR2" or a number), 0 if none.
 */
static int flight_signal(void)
{
	const char *s = getenv("OPENHCCL_FLIGHT_SIGNAL");

	if (!s || !*s)
		return 0;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	if (!strcasecmp(s, "USR1"))
		return SIGUSR1;
	if (!strcasecmp(s, "USR2"))
		return SIGUSR2;
	return atoi(s);
}

/* OHC_TEST_HANG_BT set: every thread's stack of a hung rank, by gdb. */
static void hang_backtrace(int rank, pid_t pid)
{
	char cmd[160];

	fprintf(stderr, "rank %d (pid %d) hung; its threads:\n", rank,
		(int)pid);
	fflush(stderr);
	snprintf(cmd, sizeof(cmd),
		 "gdb -q -batch -p %d -ex 'thread apply all bt' 1>&2 "
		 "</dev/null",
		 (int)pid);
	if (system(cmd))
		fprintf(stderr, "rank %d: gdb could not attach\n", rank);
}

int ohc_test_kill_hung(pid_t *pids, int nranks)
{
	int sig = flight_signal(), killed = 0;

	/* the stacks first, while every rank is as the hang left it */
	for (int r = 0; r < nranks && getenv("OHC_TEST_HANG_BT"); r++)
		if (pids[r])
			hang_backtrace(r, pids[r]);
	/* what each hung rank was waiting for, to the log */
	for (int r = 0; r < nranks && sig; r++)
		if (pids[r])
			kill(pids[r], sig);
	if (sig)
		sleep(2);
	for (int r = 0; r < nranks; r++) {
		if (!pids[r])
			continue;
		fprintf(stderr, "rank %d hung: killed\n", r);
		kill(pids[r], SIGKILL);
		waitpid(pids[r], NULL, 0);
		pids[r] = 0;
		killed++;
	}
	return killed;
}

int ohc_test_fork_ranks(int nranks, ohc_test_rank_fn fn, void *arg,
			int timeout_s)
{
	pid_t *pids = calloc(nranks, sizeof(*pids));
	int failed = 0, left = nranks;
	struct timespec start, now;

	int gate[2];

	/*
	 * Children wait at a gate until every fork is done: forking while a
	 * thread of ours (a root listener serving an earlier child) holds
	 * the allocator lock would deadlock the next child under ASan.
	 */
	if (pipe(gate))
		return nranks;
	ohc_test_fork_settle();
	fflush(NULL);
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			char c;

			close(gate[1]);
			while (read(gate[0], &c, 1) < 0 && errno == EINTR)
				;
			close(gate[0]);
			_exit(fn(r, nranks, arg) ? 1 : 0);
		}
	}
	close(gate[0]);
	close(gate[1]);
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (left > 0) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p > 0) {
			for (int r = 0; r < nranks; r++) {
				if (pids[r] != p)
					continue;
				pids[r] = 0;
				left--;
				if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
					fprintf(stderr,
						"rank %d failed (status "
						"0x%x)\n",
						r, st);
					failed++;
				}
			}
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > timeout_s) {
			failed += ohc_test_kill_hung(pids, nranks);
			break;
		}
		usleep(2000);
	}
	free(pids);
	return failed;
}

struct thread_arg {
	ohc_test_rank_fn fn;
	void *arg;
	int rank, nranks, result;
};

static void *thread_main(void *p)
{
	struct thread_arg *t = p;

	t->result = t->fn(t->rank, t->nranks, t->arg);
	return NULL;
}

int ohc_test_thread_ranks(int nranks, ohc_test_rank_fn fn, void *arg)
{
	struct thread_arg *ts = calloc(nranks, sizeof(*ts));
	pthread_t *th = calloc(nranks, sizeof(*th));
	int failed = 0;

	for (int r = 0; r < nranks; r++) {
		ts[r] = (struct thread_arg){fn, arg, r, nranks, 0};
		pthread_create(&th[r], NULL, thread_main, &ts[r]);
	}
	for (int r = 0; r < nranks; r++) {
		pthread_join(th[r], NULL);
		if (ts[r].result) {
			fprintf(stderr, "thread rank %d failed\n", r);
			failed++;
		}
	}
	free(ts);
	free(th);
	return failed;
}

const struct ohc_test_pair ohc_test_reduce_pairs[] = {
#define ALL4(t)                                                                \
	{t, HCCL_REDUCE_SUM}, {t, HCCL_REDUCE_MAX},                            \
	{                                                                      \
		t, HCCL_REDUCE_MIN                                             \
	}
	ALL4(HCCL_DATA_TYPE_INT8),
	{HCCL_DATA_TYPE_INT8, HCCL_REDUCE_PROD},
	ALL4(HCCL_DATA_TYPE_INT16),
	ALL4(HCCL_DATA_TYPE_INT32),
	{HCCL_DATA_TYPE_INT32, HCCL_REDUCE_PROD},
	ALL4(HCCL_DATA_TYPE_INT64),
	{HCCL_DATA_TYPE_INT64, HCCL_REDUCE_PROD},
	ALL4(HCCL_DATA_TYPE_UINT64),
	{HCCL_DATA_TYPE_UINT64, HCCL_REDUCE_PROD},
	ALL4(HCCL_DATA_TYPE_FP16),
	{HCCL_DATA_TYPE_FP16, HCCL_REDUCE_PROD},
	ALL4(HCCL_DATA_TYPE_FP32),
	{HCCL_DATA_TYPE_FP32, HCCL_REDUCE_PROD},
	ALL4(HCCL_DATA_TYPE_FP64),
	{HCCL_DATA_TYPE_FP64, HCCL_REDUCE_PROD},
	ALL4(HCCL_DATA_TYPE_BFP16),
#undef ALL4
};
const size_t ohc_test_nreduce_pairs =
	sizeof(ohc_test_reduce_pairs) / sizeof(ohc_test_reduce_pairs[0]);

size_t ohc_test_dtype_size(HcclDataType t)
{
	switch (t) {
	case HCCL_DATA_TYPE_INT8:
	case HCCL_DATA_TYPE_UINT8:
	case HCCL_DATA_TYPE_HIF8:
	case HCCL_DATA_TYPE_FP8E4M3:
	case HCCL_DATA_TYPE_FP8E5M2:
	case HCCL_DATA_TYPE_FP8E8M0:
		return 1;
	case HCCL_DATA_TYPE_INT16:
	case HCCL_DATA_TYPE_UINT16:
	case HCCL_DATA_TYPE_FP16:
	case HCCL_DATA_TYPE_BFP16:
		return 2;
	case HCCL_DATA_TYPE_INT32:
	case HCCL_DATA_TYPE_UINT32:
	case HCCL_DATA_TYPE_FP32:
		return 4;
	case HCCL_DATA_TYPE_INT64:
	case HCCL_DATA_TYPE_UINT64:
	case HCCL_DATA_TYPE_FP64:
		return 8;
	default:
		return 0;
	}
}

const char *ohc_test_dtype_name(HcclDataType t)
{
	static const char *names[] = {
		"int8",	  "int16", "int32",  "fp16",	"fp32",	   "int64",
		"uint64", "uint8", "uint16", "uint32",	"fp64",	   "bf16",
		"int128", "?",	   "hif8",   "fp8e4m3", "fp8e5m2", "fp8e8m0"};
	return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

/* The small integer every element starts from: exact in every type. */
static int64_t base_value(HcclReduceOp op, int rank, size_t i, uint64_t salt)
{
	uint64_t h = (i + 1) * 2654435761u + (uint64_t)rank * 40503u + salt;

	h ^= h >> 13;
	switch (op) {
	case HCCL_REDUCE_PROD:
		return (h % 3 == 0) ? 2 : ((h % 3 == 1) ? 1 : -1);
	case HCCL_REDUCE_SUM:
		return (int64_t)(h % 15) - 3; /* [-3, 11] */
	default:
		return (int64_t)(h % 201) - 100; /* [-100, 100] */
	}
}

static uint16_t to_fp16(double v)
{
	/* exact small integers only (|v| <= 2048) */
	uint16_t sign = v < 0 ? 0x8000 : 0;
	double a = fabs(v);
	int e = 0;

	if (a == 0)
		return sign;
	while (a >= 2.0) {
		a /= 2;
		e++;
	}
	return sign | (uint16_t)((e + 15) << 10) |
	       (uint16_t)lround((a - 1.0) * 1024.0);
}

static uint16_t to_bf16(double v)
{
	float f = (float)v;
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);
}

static void store(void *buf, HcclDataType t, size_t i, int64_t v)
{
	switch (t) {
	case HCCL_DATA_TYPE_INT8:
		((int8_t *)buf)[i] = (int8_t)(uint8_t)v;
		break;
	case HCCL_DATA_TYPE_INT16:
		((int16_t *)buf)[i] = (int16_t)(uint16_t)v;
		break;
	case HCCL_DATA_TYPE_INT32:
		((int32_t *)buf)[i] = (int32_t)(uint32_t)v;
		break;
	case HCCL_DATA_TYPE_INT64:
		((int64_t *)buf)[i] = v;
		break;
	case HCCL_DATA_TYPE_UINT64:
		((uint64_t *)buf)[i] = (uint64_t)v;
		break;
	case HCCL_DATA_TYPE_FP16:
		((uint16_t *)buf)[i] = to_fp16((double)v);
		break;
	case HCCL_DATA_TYPE_BFP16:
		((uint16_t *)buf)[i] = to_bf16((double)v);
		break;
	case HCCL_DATA_TYPE_FP32:
		((float *)buf)[i] = (float)v;
		break;
	case HCCL_DATA_TYPE_FP64:
		((double *)buf)[i] = (double)v;
		break;
	default:
		break;
	}
}

void ohc_test_fill(void *buf, HcclDataType dtype, HcclReduceOp op, int rank,
		   size_t count, uint64_t salt)
{
	for (size_t i = 0; i < count; i++)
		store(buf, dtype, i, base_value(op, rank, i, salt));
}

/* Wrap an exact result into the type's range, as the library must. */
static int64_t wrap(HcclDataType t, int64_t v, int is_unsigned_max)
{
	(void)is_unsigned_max;
	switch (t) {
	case HCCL_DATA_TYPE_INT8:
		return (int8_t)(uint8_t)v;
	case HCCL_DATA_TYPE_INT16:
		return (int16_t)(uint16_t)v;
	case HCCL_DATA_TYPE_INT32:
		return (int32_t)(uint32_t)v;
	default:
		return v;
	}
}

void ohc_test_expect(void *buf, HcclDataType dtype, HcclReduceOp op, int nranks,
		     size_t count, uint64_t salt)
{
	ohc_test_expect_at(buf, dtype, op, nranks, 0, count, salt);
}

void ohc_test_expect_at(void *buf, HcclDataType dtype, HcclReduceOp op,
			int nranks, size_t first, size_t count, uint64_t salt)
{
	int is_uns = dtype == HCCL_DATA_TYPE_UINT64;

	for (size_t k = 0; k < count; k++) {
		size_t i = first + k;
		int64_t acc = base_value(op, 0, i, salt);
		uint64_t uacc = (uint64_t)acc;

		for (int r = 1; r < nranks; r++) {
			int64_t v = base_value(op, r, i, salt);

			switch (op) {
			case HCCL_REDUCE_SUM:
				uacc += (uint64_t)v;
				acc = (int64_t)uacc;
				break;
			case HCCL_REDUCE_PROD:
				uacc *= (uint64_t)v;
				acc = (int64_t)uacc;
				break;
			case HCCL_REDUCE_MAX:
				if (is_uns ? (uint64_t)v > (uint64_t)acc
					   : v > acc)
					acc = v;
				break;
			case HCCL_REDUCE_MIN:
				if (is_uns ? (uint64_t)v < (uint64_t)acc
					   : v < acc)
					acc = v;
				break;
			default:
				break;
			}
		}
		store(buf, dtype, k, wrap(dtype, acc, 0));
	}
}

long ohc_test_compare(const void *got, const void *want, HcclDataType dtype,
		      size_t count)
{
	size_t es = ohc_test_dtype_size(dtype);

	for (size_t i = 0; i < count; i++)
		if (memcmp((const char *)got + i * es,
			   (const char *)want + i * es, es))
			return (long)i;
	return -1;
}

uint64_t ohc_test_big_count(void)
{
	const char *env = getenv("OHC_TEST_BIG_COUNT");
	uint64_t n = env && *env ? strtoull(env, NULL, 0) : 0;

	return n ? n : (1u << 20) + 3;
}

uint64_t ohc_test_seed(const char *what)
{
	const char *env = getenv("OHC_TEST_SEED");
	uint64_t seed;

	if (env && *env) {
		seed = strtoull(env, NULL, 0);
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec ^
		       ((uint64_t)getpid() << 32);
		seed &= 0xffffffffffffull; /* short enough to retype */
	}
	fprintf(stderr, "%s: seed %llu (rerun with OHC_TEST_SEED=%llu)\n", what,
		(unsigned long long)seed, (unsigned long long)seed);
	return seed;
}

int ohc_test_shm_leftovers(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (strcasestr(e->d_name, "ohc") ||
		    strcasestr(e->d_name, "hccl")) {
			fprintf(stderr, "left in /dev/shm: %s\n", e->d_name);
			n++;
		}
	}
	closedir(d);
	return n;
}

long ohc_test_smaps_kb(const void *addr, const char *field)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	size_t flen = strlen(field);
	char line[512];
	int in = 0;
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
			continue;
		}
		if (in && !strncmp(line, field, flen) && line[flen] == ':' &&
		    sscanf(line + flen + 1, "%ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

int ohc_test_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ., .. and the DIR's own fd */
}

int ohc_test_share_roots(HcclRootInfo *roots, int nroots, int *ready, int rank,
			 int timeout_s)
{
	struct timespec start, now;

	if (rank == 0) {
		for (int k = 0; k < nroots; k++)
			if (HcclGetRootInfo(&roots[k]) != HCCL_SUCCESS)
				return 1;
		__atomic_store_n(ready, 1, __ATOMIC_RELEASE);
		return 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!__atomic_load_n(ready, __ATOMIC_ACQUIRE)) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > timeout_s)
			return 1;
		usleep(1000);
	}
	return 0;
}

const char *ohc_test_tool_path(const char *rel)
{
	static char buf[PATH_MAX];
	const char *dir = getenv("OHC_TEST_BIN_DIR");

	cr_assert(dir, "OHC_TEST_BIN_DIR is not set (run through ctest)");
	snprintf(buf, sizeof(buf), "%s/../tools/%s", dir, rel);
	cr_assert(access(buf, X_OK) == 0, "%s: %s", buf, strerror(errno));
	return buf;
}

double ohc_test_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int ohc_test_sh(const char *fmt, ...)
{
	const char *vm = getenv("OHC_VM_INDEX");
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fprintf(stderr, "vm%s: $ %s\n", vm ? vm : "0", cmd);
	return system(cmd);
}

HcclResult ohc_test_ring_round(HcclComm comm, int rank, int nranks,
			       size_t count)
{
	int32_t *s = malloc(count * 4 + 4), *r = malloc(count * 4 + 4);
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
	size_t base = 1000 * (size_t)(nranks * (nranks - 1) / 2);
	HcclResult ret = s && r ? HCCL_SUCCESS : HCCL_E_MEMORY;

	for (size_t i = 0; i < count && ret == HCCL_SUCCESS; i++)
		s[i] = (int32_t)(i * 3 + (size_t)rank * 1000);
	if (ret == HCCL_SUCCESS)
		ret = HcclAllReduce(s, r, count, HCCL_DATA_TYPE_INT32,
				    HCCL_REDUCE_SUM, comm, NULL);
	for (size_t i = 0; i < count && ret == HCCL_SUCCESS; i++)
		if (r[i] != (int32_t)((size_t)nranks * i * 3 + base)) {
			fprintf(stderr, "rank %d: allreduce %zu: [%zu] wrong\n",
				rank, count, i);
			ret = HCCL_E_INTERNAL;
		}
	if (ret == HCCL_SUCCESS && rank % 2 == 0) {
		ret = HcclSend(s, count, HCCL_DATA_TYPE_INT32, right, comm,
			       NULL);
		if (ret == HCCL_SUCCESS)
			ret = HcclRecv(r, count, HCCL_DATA_TYPE_INT32, left,
				       comm, NULL);
	} else if (ret == HCCL_SUCCESS) {
		ret = HcclRecv(r, count, HCCL_DATA_TYPE_INT32, left, comm,
			       NULL);
		if (ret == HCCL_SUCCESS)
			ret = HcclSend(s, count, HCCL_DATA_TYPE_INT32, right,
				       comm, NULL);
	}
	for (size_t i = 0; i < count && ret == HCCL_SUCCESS; i++)
		if (r[i] != (int32_t)(i * 3 + (size_t)left * 1000)) {
			fprintf(stderr, "rank %d: ring %zu: [%zu] wrong\n",
				rank, count, i);
			ret = HCCL_E_INTERNAL;
		}
	free(s);
	free(r);
	return ret;
}

int ohc_test_vm_ips(const char *ip_var, const char *peer_var,
		    const char *ips[2])
{
	const char *count = getenv("OHC_VM_COUNT"),
		   *idx = getenv("OHC_VM_INDEX");
	const char *ip = getenv(ip_var), *peer = getenv(peer_var);
	int vm;

	if (!count || strcmp(count, "2") || !ip || !*ip || !peer || !*peer)
		return -1;
	vm = idx && !strcmp(idx, "1") ? 1 : 0;
	ips[vm] = ip;
	ips[1 - vm] = peer;
	return vm;
}

int ohc_test_write_vm_table(const char *path, int per_vm, int port,
			    const char *const host_ip[2],
			    const char *const *device_ip,
			    const char *const *backup_ip)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "{ \"status\": \"completed\", \"version\": \"1.0\", "
		   "\"server_count\": \"2\", \"server_list\": [\n");
	for (int s = 0; s < 2; s++) {
		fprintf(f,
			"  { \"server_id\": \"vm%d\", \"host_ip\": \"%s\", "
			"\"device\": [\n",
			s, host_ip[s]);
		for (int d = 0; d < per_vm; d++) {
			int r = s * per_vm + d;

			fprintf(f,
				"    { \"device_id\": \"%d\", \"device_ip\": "
				"\"%s\", ",
				d, device_ip[r]);
			if (backup_ip)
				fprintf(f, "\"backup_device_ip\": \"%s\", ",
					backup_ip[r]);
			fprintf(f,
				"\"host_port\": \"%d\", \"rank_id\": \"%d\" "
				"}%s\n",
				port + r, r, d + 1 < per_vm ? "," : "");
		}
		fprintf(f, "  ] }%s\n", s ? "" : ",");
	}
	fprintf(f, "] }\n");
	return fclose(f) ? -1 : 0;
}

int ohc_test_two_vm_table(const char *path, int per_vm, int port)
{
	const char *ips[2], **dev;
	int vm = ohc_test_vm_ips("OHC_VM_IP", "OHC_VM_PEER_IP", ips);

	if (vm < 0)
		return -1;
	dev = calloc(2 * (size_t)per_vm, sizeof(*dev));
	if (!dev)
		return -1;
	for (int r = 0; r < 2 * per_vm; r++)
		dev[r] = ips[r / per_vm];
	if (ohc_test_write_vm_table(path, per_vm, port, ips, dev, NULL))
		vm = -1;
	free(dev);
	return vm;
}

int ohc_test_slot_allreduces(HcclComm comm, int rank, int nranks, int nops,
			     int mult)
{
	int32_t *send = malloc((size_t)nops * sizeof(int32_t)),
		*recv = calloc((size_t)nops, sizeof(int32_t));
	aclrtStream stream = NULL;
	int bad = 0;

	if (!send || !recv || aclrtSetDevice(rank) ||
	    aclrtCreateStream(&stream)) {
		free(send);
		free(recv);
		return 1;
	}
	for (int i = 0; i < nops; i++)
		send[i] = i * mult + rank;
	for (int i = 0; i < nops && !bad; i++)
		bad = HcclAllReduce(&send[i], &recv[i], 1, HCCL_DATA_TYPE_INT32,
				    HCCL_REDUCE_SUM, comm,
				    stream) != HCCL_SUCCESS;
	if (aclrtSynchronizeStream(stream) != ACL_SUCCESS)
		bad++;
	/* sum over ranks r of (i * mult + r) */
	for (int i = 0; i < nops && !bad; i++)
		if (recv[i] != i * mult * nranks + nranks * (nranks - 1) / 2) {
			fprintf(stderr, "rank %d: op %d gave %d\n", rank, i,
				recv[i]);
			bad++;
		}
	aclrtDestroyStream(stream);
	aclrtResetDevice(rank);
	free(send);
	free(recv);
	return bad;
}
