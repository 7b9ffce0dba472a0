/* SPDX-License-Identifier: Apache-2.0 */
/* aclInit/aclFinalize codes, devices, contexts (each test is its own
 * process under Criterion, so runtime state starts fresh). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_test.h"

Test(init, finalize_without_init_succeeds)
{
	cr_assert_eq(aclFinalize(), ACL_SUCCESS);
	cr_assert_eq(aclFinalize(), ACL_SUCCESS);
}

Test(init, repeat_codes)
{
	cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
	cr_assert_eq(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
	cr_assert_eq(aclInit(""), ACL_ERROR_REPEAT_INITIALIZE);
	cr_assert_eq(aclFinalize(), ACL_SUCCESS);
	cr_assert_eq(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
	/* init -> finalize -> init is allowed */
	cr_assert_eq(aclInit(""), ACL_SUCCESS);
	cr_assert_eq(aclFinalize(), ACL_SUCCESS);
	cr_assert_eq(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
}

Test(init, config_file)
{
	char path[] = "/tmp/ohc_rt_cfgXXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "{}\n", 3), 3);
	close(fd);
	cr_assert_eq(aclInit("/nonexistent/ohc/acl.json"),
		     ACL_ERROR_INVALID_FILE);
	cr_assert_str_neq(aclGetRecentErrMsg(), "");
	cr_assert_str_eq(aclGetRecentErrMsg(), "", "message is cleared");
	cr_assert_eq(aclInit(path), ACL_SUCCESS);
	cr_assert_eq(aclFinalize(), ACL_SUCCESS);
	unlink(path);
}

Test(init, finalize_reference)
{
	uint64_t ref = 99;

	cr_assert_eq(aclFinalizeReference(&ref), ACL_ERROR_REPEAT_FINALIZE);
	cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
	cr_assert_eq(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
	cr_assert_eq(aclFinalizeReference(&ref), ACL_SUCCESS);
	cr_assert_eq(ref, 1);
	cr_assert_eq(aclFinalizeReference(&ref), ACL_SUCCESS);
	cr_assert_eq(ref, 0);
	cr_assert_eq(aclFinalizeReference(&ref), ACL_ERROR_REPEAT_FINALIZE);
	cr_assert_eq(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
}

Test(init, finalize_destroys_streams)
{
	aclrtStream s;
	int before = rt_thread_count();

	cr_assert_eq(aclInit(NULL), ACL_SUCCESS);
	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
	cr_assert_eq(aclrtSynchronizeStream(NULL), ACL_SUCCESS);
	cr_assert_eq(rt_thread_count_settled(before + 2), before + 2);
	cr_assert_eq(aclFinalize(), ACL_SUCCESS);
	cr_assert_eq(rt_thread_count_settled(before), before);
	cr_assert_eq(ohc_rt_stream_valid(s), 0);
	cr_assert_eq(aclrtDestroyStream(s), ACL_ERROR_INVALID_PARAM);
}

Test(init, version)
{
	int32_t a, b, c;

	cr_assert_eq(aclrtGetVersion(&a, &b, &c), ACL_SUCCESS);
	cr_assert_eq(a, ACL_MAJOR_VERSION);
	cr_assert_eq(b, ACL_MINOR_VERSION);
	cr_assert_eq(c, ACL_PATCH_VERSION);
	cr_assert_eq(aclrtGetVersion(NULL, &b, &c), ACL_ERROR_INVALID_PARAM);
}

Test(device, count_default_before_init)
{
	uint32_t n = 0;

	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	/* the host's online CPUs, at least an NPU server's 16 */
	unsetenv("OPENHCCL_DEVICE_COUNT");
	cr_assert_eq(aclrtGetDeviceCount(&n), ACL_SUCCESS);
	cr_assert_eq(n, cpus > 16 ? (uint32_t)cpus : 16u, "count %u, %ld CPUs",
		     n, cpus);
	cr_assert_eq(aclrtGetDeviceCount(NULL), ACL_ERROR_INVALID_PARAM);
}

Test(device, count_auto_is_zero)
{
	uint32_t n = 0;

	setenv("OPENHCCL_DEVICE_COUNT", "0", 1);
	cr_assert_eq(aclrtGetDeviceCount(&n), ACL_SUCCESS);
	cr_assert_geq(n, 16u);
	cr_assert_geq(n, (uint32_t)sysconf(_SC_NPROCESSORS_ONLN));
}

/* A device past the count: the error says which variable to set. */
Test(device, beyond_count_names_the_variable)
{
	char path[] = "/tmp/ohc_devlog_XXXXXX", buf[4096] = "";
	int fd = mkstemp(path), saved = dup(2);
	ssize_t len;

	cr_assert(fd >= 0 && saved >= 0);
	setenv("OPENHCCL_DEVICE_COUNT", "3", 1);
	cr_assert_eq(dup2(fd, 2), 2);
	cr_expect_eq(aclrtSetDevice(3), ACL_ERROR_RT_INVALID_DEVICEID);
	cr_assert_eq(dup2(saved, 2), 2);
	close(saved);
	len = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	unlink(path);
	cr_assert_gt(len, 0);
	buf[len] = '\0';
	cr_expect(strstr(buf, "device id 3 out of range [0, 3): set "
			      "OPENHCCL_DEVICE_COUNT=4 or more"),
		  "%s", buf);
}

Test(device, count_from_env)
{
	uint32_t n = 0;

	setenv("OPENHCCL_DEVICE_COUNT", "5", 1);
	cr_assert_eq(aclrtGetDeviceCount(&n), ACL_SUCCESS);
	cr_assert_eq(n, 5);
	cr_assert_eq(aclrtSetDevice(5), ACL_ERROR_RT_INVALID_DEVICEID);
	cr_assert_eq(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
	cr_assert_eq(aclrtSetDevice(4), ACL_SUCCESS);
	cr_assert_eq(aclrtResetDevice(7), ACL_ERROR_RT_INVALID_DEVICEID);
}

struct thr_dev {
	int set;	 /* device to set, -1: none */
	int got;	 /* aclrtGetDevice result */
	aclError ret;	 /* aclrtGetDevice return */
	int private_dev; /* ohc_rt_current_device() */
};

static void *thr_device(void *arg)
{
	struct thr_dev *t = arg;
	int32_t d = -1;

	if (t->set >= 0 && aclrtSetDevice(t->set) != ACL_SUCCESS)
		return NULL;
	t->ret = aclrtGetDevice(&d);
	t->got = d;
	t->private_dev = ohc_rt_current_device();
	if (t->set >= 0)
		aclrtResetDevice(t->set);
	return NULL;
}

Test(device, current_device_is_per_thread)
{
	struct thr_dev a = {.set = 3}, b = {.set = -1};
	pthread_t ta, tb;
	int32_t d = -1;

	cr_assert_eq(aclrtGetDevice(&d), ACL_ERROR_RT_CONTEXT_NULL);
	cr_assert_eq(ohc_rt_current_device(), -1);
	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(pthread_create(&ta, NULL, thr_device, &a), 0);
	cr_assert_eq(pthread_create(&tb, NULL, thr_device, &b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	cr_assert_eq(a.ret, ACL_SUCCESS);
	cr_assert_eq(a.got, 3);
	cr_assert_eq(a.private_dev, 3);
	cr_assert_eq(b.ret, ACL_ERROR_RT_CONTEXT_NULL);
	cr_assert_eq(b.private_dev, -1);
	cr_assert_eq(aclrtGetDevice(&d), ACL_SUCCESS);
	cr_assert_eq(d, 0);
	cr_assert_eq(ohc_rt_current_device(), 0);
	cr_assert_eq(aclrtGetDevice(NULL), ACL_ERROR_INVALID_PARAM);
}

Test(device, reset_is_reference_counted)
{
	int32_t d = -1;
	aclrtStream s;
	int before = rt_thread_count();

	cr_assert_eq(aclrtSetDevice(1), ACL_SUCCESS);
	cr_assert_eq(aclrtSetDevice(1), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateStream(&s), ACL_SUCCESS);
	cr_assert_eq(aclrtResetDevice(1), ACL_SUCCESS);
	cr_assert_eq(aclrtGetDevice(&d), ACL_SUCCESS);
	cr_assert_eq(d, 1);
	cr_assert_eq(ohc_rt_stream_valid(s), 1);
	/* Last reset: streams of the device go, their threads joined. */
	cr_assert_eq(aclrtResetDevice(1), ACL_SUCCESS);
	cr_assert_eq(ohc_rt_stream_valid(s), 0);
	cr_assert_eq(rt_thread_count_settled(before), before);
	cr_assert_eq(aclrtGetDevice(&d), ACL_ERROR_RT_CONTEXT_NULL);
	cr_assert_eq(aclrtResetDevice(1), ACL_ERROR_RT_CONTEXT_NULL);
	/* Force reset drops every reference at once. */
	cr_assert_eq(aclrtSetDevice(2), ACL_SUCCESS);
	cr_assert_eq(aclrtSetDevice(2), ACL_SUCCESS);
	cr_assert_eq(aclrtResetDeviceForce(2), ACL_SUCCESS);
	cr_assert_eq(aclrtGetDevice(&d), ACL_ERROR_RT_CONTEXT_NULL);
}

Test(device, soc_name_and_run_mode)
{
	const char *soc = aclrtGetSocName();
	aclrtRunMode m = ACL_DEVICE;

	cr_assert_not_null(soc);
	cr_assert(strncmp(soc, "Ascend", 6) != 0, "soc %s", soc);
	cr_assert_eq(aclrtGetRunMode(&m), ACL_SUCCESS);
	cr_assert_eq(m, ACL_HOST);
	cr_assert_eq(aclrtGetRunMode(NULL), ACL_ERROR_INVALID_PARAM);
}

Test(device, sat_mode)
{
	aclrtFloatOverflowMode m;

	cr_assert_eq(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_INFNAN),
		     ACL_ERROR_RT_CONTEXT_NULL);
	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtGetDeviceSatMode(&m), ACL_SUCCESS);
	cr_assert_eq(m, ACL_RT_OVERFLOW_MODE_INFNAN);
	cr_assert_eq(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_SATURATION),
		     ACL_SUCCESS);
	cr_assert_eq(aclrtGetDeviceSatMode(&m), ACL_SUCCESS);
	cr_assert_eq(m, ACL_RT_OVERFLOW_MODE_SATURATION);
	cr_assert_eq(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_UNDEF),
		     ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtGetDeviceSatMode(NULL), ACL_ERROR_INVALID_PARAM);
}

Test(device, contexts)
{
	aclrtContext c = NULL, cur = NULL, def = NULL;
	int32_t d = -1;

	cr_assert_eq(aclrtGetCurrentContext(&cur), ACL_ERROR_RT_CONTEXT_NULL);
	cr_assert_eq(aclrtCreateContext(&c, 99), ACL_ERROR_RT_INVALID_DEVICEID);
	cr_assert_eq(aclrtCreateContext(NULL, 0), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtSetDevice(0), ACL_SUCCESS);
	cr_assert_eq(aclrtGetCurrentContext(&def), ACL_SUCCESS);
	cr_assert_eq(aclrtCreateContext(&c, 2), ACL_SUCCESS);
	cr_assert_eq(aclrtGetDevice(&d), ACL_SUCCESS);
	cr_assert_eq(d, 2);
	cr_assert_eq(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
	cr_assert_eq(cur, c);
	cr_assert_eq(aclrtSetCurrentContext(def), ACL_SUCCESS);
	cr_assert_eq(aclrtGetDevice(&d), ACL_SUCCESS);
	cr_assert_eq(d, 0);
	cr_assert_eq(aclrtSetCurrentContext(c), ACL_SUCCESS);
	cr_assert_eq(aclrtGetDevice(&d), ACL_SUCCESS);
	cr_assert_eq(d, 2);
	cr_assert_eq(aclrtDestroyContext(def), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtDestroyContext(c), ACL_SUCCESS);
	cr_assert_eq(aclrtDestroyContext(c), ACL_ERROR_INVALID_PARAM);
	cr_assert_eq(aclrtSetCurrentContext(c), ACL_ERROR_INVALID_PARAM);
	/* The context held the only reference on device 2. */
	cr_assert_eq(aclrtResetDevice(2), ACL_ERROR_RT_CONTEXT_NULL);
}

/* Parse a kernel node list ("0-1,3") into a bitmap of up to 1024 nodes. */
static void parse_node_list(const char *s, unsigned char *set)
{
	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long n = a; n <= b && n < 1024; n++)
			set[n] = 1;
		s = *end == ',' ? end + 1 : end;
	}
}

Test(device, numa_round_robin_over_memory_nodes)
{
	unsigned char mem[1024] = {0}, allowed[1024] = {0};
	int nodes[1024], n = 0;
	char line[4096];
	FILE *f;

	f = fopen("/sys/devices/system/node/has_memory", "r");
	if (!f)
		cr_skip_test("no /sys/devices/system/node (no NUMA in kernel)");
	cr_assert_not_null(fgets(line, sizeof(line), f));
	fclose(f);
	parse_node_list(line, mem);
	f = fopen("/proc/self/status", "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Mems_allowed_list:", 18))
			parse_node_list(line + 18 + strspn(line + 18, " \t"),
					allowed);
	fclose(f);
	for (int i = 0; i < 1024; i++)
		if (mem[i] && allowed[i])
			nodes[n++] = i;
	cr_assert_gt(n, 0);
	for (int d = 0; d < 16; d++)
		cr_assert_eq(ohc_rt_device_numa_node(d), nodes[d % n],
			     "device %d", d);
}
