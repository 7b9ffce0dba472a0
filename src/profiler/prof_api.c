/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libmsprofiler: the aclprof* calls of acl/acl_prof.h. This file keeps the
 * API's state (the directory of aclprofInit, live configs, which device
 * sets are being profiled) and checks every argument; the recording and
 * the trace files are the runtime's (src/runtime/rt_prof.c), reached
 * through the private ohc_rt_prof_* interface. libhccl knows nothing of
 * this library.
 *
 * Error codes (the spec leaves most unconfirmed): a NULL or unknown
 * config, a bad path or device 100000 (ACL_ERROR_INVALID_PARAM); a call
 * before aclInit, or Start/Stop/Finalize before aclprofInit, 100001
 * (ACL_ERROR_UNINITIALIZE); aclprofInit twice 100002; Start of devices
 * already profiled 100042 (ACL_ERROR_PROF_ALREADY_RUN); Stop of devices
 * not profiled 100043 (ACL_ERROR_PROF_NOT_RUN); a config of nothing this
 * library records 200007 (ACL_ERROR_PROF_MODULES_UNSUPPORTED); a trace
 * that cannot be written 500005 (ACL_ERROR_PROFILING_FAILURE).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_prof.h"
#include "runtime/ohc_rt.h"
#include "util/file.h"
#include "util/log.h"

#define PROF_PATH_MAX 4096 /* aclprofInit's length limit */
#define MAX_RUNNING 64

/* Log one error line and evaluate to code. */
#define PROF_FAIL(code, ...)                                                   \
	({                                                                     \
		OHC_ERROR(OHC_SS_RT, __VA_ARGS__);                             \
		(aclError)(code);                                              \
	})

/* Data types that record HCCL operations, and runtime tasks. */
#define TASK_TIME_TYPES                                                        \
	(ACL_PROF_TASK_TIME | ACL_PROF_TASK_TIME_L0 | ACL_PROF_TASK_TIME_L2 |  \
	 ACL_PROF_TASK_TIME_L3 | ACL_PROF_OP_ATTR)
#define HCCL_TYPES (TASK_TIME_TYPES | ACL_PROF_HCCL_TRACE)
#define RUNTIME_TYPES (TASK_TIME_TYPES | ACL_PROF_RUNTIME_API)

struct aclprofConfig {
	struct aclprofConfig *next; /* live configs; lock */
	uint32_t *devs;		    /* sorted, no repeats */
	uint32_t ndevs;		    /* 0: every device */
	uint64_t types;		    /* dataTypeConfig */
	aclprofAicoreMetrics metrics;
};

/* A device set being profiled, and the runtime's session for it. */
struct running {
	uint32_t *devs; /* sorted copy; NULL when ndevs is 0 */
	uint32_t ndevs;
	int session;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *result_dir;		    /* aclprofInit's path; lock */
static struct aclprofConfig *configs;	    /* lock */
static struct running running[MAX_RUNNING]; /* session 0: free; lock */
static bool env_noted;			    /* lock */

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static bool config_live_locked(const aclprofConfig *cfg)
{
	for (const struct aclprofConfig *c = configs; c; c = c->next)
		if (c == cfg)
			return true;
	return false;
}

/* The recording kinds (enum ohc_rt_prof_kind) a config asks for. */
static uint32_t config_kinds(const aclprofConfig *cfg)
{
	uint32_t kinds = 0;

	if (cfg->types & HCCL_TYPES)
		kinds |= OHC_RT_PROF_HCCL;
	if (cfg->types & RUNTIME_TYPES)
		kinds |= OHC_RT_PROF_RUNTIME;
	return kinds;
}

static struct running *running_find_locked(const aclprofConfig *cfg)
{
	for (int i = 0; i < MAX_RUNNING; i++) {
		struct running *r = &running[i];

		if (r->session && r->ndevs == cfg->ndevs &&
		    (!cfg->ndevs || !memcmp(r->devs, cfg->devs,
					    cfg->ndevs * sizeof(cfg->devs[0]))))
			return r;
	}
	return NULL;
}

OHC_API aclError aclprofInit(const char *profilerResultPath, size_t length)
{
	size_t len;
	char *dir;
	int err;

	if (!profilerResultPath)
		return PROF_FAIL(ACL_ERROR_INVALID_PARAM,
				 "aclprofInit: profilerResultPath is NULL");
	if (length == 0 || length > PROF_PATH_MAX)
		return PROF_FAIL(ACL_ERROR_INVALID_PARAM,
				 "aclprofInit: length %zu outside 1..%d",
				 length, PROF_PATH_MAX);
	len = strnlen(profilerResultPath, length);
	if (len == 0)
		return PROF_FAIL(ACL_ERROR_INVALID_PARAM,
				 "aclprofInit: the path is empty");
	if (!ohc_rt_initialized())
		return PROF_FAIL(ACL_ERROR_UNINITIALIZE,
				 "aclprofInit: call aclInit first");
	dir = strndup(profilerResultPath, len);
	if (!dir)
		return PROF_FAIL(ACL_ERROR_BAD_ALLOC,
				 "aclprofInit: out of memory");
	pthread_mutex_lock(&lock);
	if (result_dir) {
		pthread_mutex_unlock(&lock);
		free(dir);
		return PROF_FAIL(ACL_ERROR_REPEAT_INITIALIZE,
				 "aclprofInit: already initialized (into %s); "
				 "call aclprofFinalize first",
				 result_dir);
	}
	result_dir = dir;
	pthread_mutex_unlock(&lock);
	/* A directory that cannot be made now may be by the time a trace is
	 * written (aclprofStop tries again and fails then). */
	err = ohc_mkdir_p(dir, PROF_PATH_MAX);
	if (err)
		OHC_WARN(OHC_SS_RT,
			 "aclprofInit: cannot create %s (%s); aclprofStop will "
			 "fail unless it exists by then",
			 dir, strerror(err));
	return ACL_SUCCESS;
}

/* Stop r's session (lock held); 0 or the stop's error. */
static aclError running_stop_locked(struct running *r)
{
	aclError ret = ohc_rt_prof_stop(r->session, NULL, 0);

	free(r->devs);
	memset(r, 0, sizeof(*r));
	return ret;
}

OHC_API aclError aclprofFinalize(void)
{
	aclError ret = ACL_SUCCESS, err;

	pthread_mutex_lock(&lock);
	if (!result_dir) {
		pthread_mutex_unlock(&lock);
		return PROF_FAIL(ACL_ERROR_UNINITIALIZE,
				 "aclprofFinalize: aclprofInit was not called");
	}
	for (int i = 0; i < MAX_RUNNING; i++) {
		if (!running[i].session)
			continue;
		OHC_WARN(OHC_SS_RT,
			 "aclprofFinalize: a profile of %u device(s) still "
			 "runs; stopping it (its trace is written)",
			 running[i].ndevs);
		err = running_stop_locked(&running[i]);
		if (err && !ret)
			ret = err;
	}
	free(result_dir);
	result_dir = NULL;
	env_noted = false;
	pthread_mutex_unlock(&lock);
	return ret;
}

OHC_API aclprofConfig *
aclprofCreateConfig(uint32_t *deviceIdList, uint32_t deviceNums,
		    aclprofAicoreMetrics aicoreMetrics,
		    const aclprofAicoreEvents *aicoreEvents,
		    uint64_t dataTypeConfig)
{
	int total = ohc_rt_device_total();
	struct aclprofConfig *cfg;

	if (deviceNums && !deviceIdList) {
		OHC_ERROR(OHC_SS_RT,
			  "aclprofCreateConfig: deviceNums %u and "
			  "deviceIdList NULL",
			  deviceNums);
		return NULL;
	}
	if (aicoreEvents) {
		OHC_ERROR(OHC_SS_RT,
			  "aclprofCreateConfig: aicoreEvents must be NULL");
		return NULL;
	}
	if (deviceNums > (uint32_t)total) {
		OHC_ERROR(OHC_SS_RT,
			  "aclprofCreateConfig: deviceNums %u is more than "
			  "the %d devices",
			  deviceNums, total);
		return NULL;
	}
	if (deviceNums == 0 && !(dataTypeConfig & ACL_PROF_MSPROFTX)) {
		OHC_ERROR(OHC_SS_RT,
			  "aclprofCreateConfig: deviceNums 0 needs "
			  "ACL_PROF_MSPROFTX in dataTypeConfig (0x%llx)",
			  (unsigned long long)dataTypeConfig);
		return NULL;
	}
	if ((unsigned)aicoreMetrics > ACL_AICORE_MEMORY_ACCESS &&
	    aicoreMetrics != ACL_AICORE_NONE) {
		OHC_ERROR(OHC_SS_RT,
			  "aclprofCreateConfig: aicoreMetrics %d is not an "
			  "aclprofAicoreMetrics value",
			  (int)aicoreMetrics);
		return NULL;
	}
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg || (deviceNums &&
		     !(cfg->devs = malloc(deviceNums * sizeof(uint32_t))))) {
		OHC_ERROR(OHC_SS_RT, "aclprofCreateConfig: out of memory");
		free(cfg);
		return NULL;
	}
	if (deviceNums) {
		memcpy(cfg->devs, deviceIdList, deviceNums * sizeof(uint32_t));
		qsort(cfg->devs, deviceNums, sizeof(uint32_t), u32_cmp);
	}
	for (uint32_t i = 0; i < deviceNums; i++) {
		if (cfg->devs[i] >= (uint32_t)total ||
		    (i && cfg->devs[i] == cfg->devs[i - 1])) {
			OHC_ERROR(OHC_SS_RT,
				  "aclprofCreateConfig: device id %u %s",
				  cfg->devs[i],
				  cfg->devs[i] >= (uint32_t)total
					  ? "is not below the device count"
					  : "is listed twice");
			free(cfg->devs);
			free(cfg);
			return NULL;
		}
	}
	cfg->ndevs = deviceNums;
	cfg->types = dataTypeConfig;
	cfg->metrics = aicoreMetrics;
	pthread_mutex_lock(&lock);
	cfg->next = configs;
	configs = cfg;
	pthread_mutex_unlock(&lock);
	return cfg;
}

OHC_API aclError aclprofDestroyConfig(const aclprofConfig *profilerConfig)
{
	struct aclprofConfig **pp, *c = NULL;

	if (!profilerConfig)
		return PROF_FAIL(ACL_ERROR_INVALID_PARAM,
				 "aclprofDestroyConfig: profilerConfig is "
				 "NULL");
	pthread_mutex_lock(&lock);
	for (pp = &configs; *pp; pp = &(*pp)->next) {
		if (*pp == profilerConfig) {
			c = *pp;
			*pp = c->next;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	if (!c)
		return PROF_FAIL(ACL_ERROR_INVALID_PARAM,
				 "aclprofDestroyConfig: %p is not a live "
				 "config (destroyed already?)",
				 (const void *)profilerConfig);
	free(c->devs);
	free(c);
	return ACL_SUCCESS;
}

/*
 * The checks Start and Stop share (lock held): 0, or the error (logged).
 * *env_p: OPENHCCL_PROFILE already profiles everything.
 */
static aclError start_stop_check_locked(const char *fn,
					const aclprofConfig *cfg, bool *env_p)
{
	*env_p = false;
	if (!cfg)
		return PROF_FAIL(ACL_ERROR_INVALID_PARAM,
				 "%s: profilerConfig is NULL", fn);
	if (!config_live_locked(cfg))
		return PROF_FAIL(ACL_ERROR_INVALID_PARAM,
				 "%s: %p is not a live config (from "
				 "aclprofCreateConfig, not destroyed)",
				 fn, (const void *)cfg);
	if (!result_dir)
		return PROF_FAIL(ACL_ERROR_UNINITIALIZE,
				 "%s: call aclprofInit first", fn);
	if (ohc_rt_prof_env_session()) {
		if (!env_noted)
			OHC_WARN(OHC_SS_RT,
				 "%s: OPENHCCL_PROFILE profiles the whole "
				 "process; aclprofStart/aclprofStop do nothing",
				 fn);
		env_noted = true;
		*env_p = true;
	}
	return ACL_SUCCESS;
}

OHC_API aclError aclprofStart(const aclprofConfig *profilerConfig)
{
	struct running *slot = NULL;
	uint32_t kinds;
	aclError ret;
	bool env;

	pthread_mutex_lock(&lock);
	ret = start_stop_check_locked("aclprofStart", profilerConfig, &env);
	if (ret || env)
		goto out;
	kinds = config_kinds(profilerConfig);
	if (!kinds) {
		ret = PROF_FAIL(ACL_ERROR_PROF_MODULES_UNSUPPORTED,
				"aclprofStart: dataTypeConfig 0x%llx asks for "
				"nothing recorded here (ACL_PROF_HCCL_TRACE, "
				"ACL_PROF_TASK_TIME*, ACL_PROF_RUNTIME_API)",
				(unsigned long long)profilerConfig->types);
		goto out;
	}
	if (running_find_locked(profilerConfig)) {
		ret = PROF_FAIL(ACL_ERROR_PROF_ALREADY_RUN,
				"aclprofStart: these %u device(s) are already "
				"profiled",
				profilerConfig->ndevs);
		goto out;
	}
	for (int i = 0; i < MAX_RUNNING && !slot; i++)
		if (!running[i].session)
			slot = &running[i];
	if (!slot) {
		ret = PROF_FAIL(ACL_ERROR_PROF_ALREADY_RUN,
				"aclprofStart: %d profiles already run",
				MAX_RUNNING);
		goto out;
	}
	if (profilerConfig->ndevs) {
		slot->devs = malloc(profilerConfig->ndevs * sizeof(uint32_t));
		if (!slot->devs) {
			ret = PROF_FAIL(ACL_ERROR_BAD_ALLOC,
					"aclprofStart: out of memory");
			goto out;
		}
		memcpy(slot->devs, profilerConfig->devs,
		       profilerConfig->ndevs * sizeof(uint32_t));
	}
	ret = ohc_rt_prof_start(result_dir, profilerConfig->devs,
				profilerConfig->ndevs, kinds, &slot->session);
	if (ret) {
		free(slot->devs);
		memset(slot, 0, sizeof(*slot));
		goto out;
	}
	slot->ndevs = profilerConfig->ndevs;
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

OHC_API aclError aclprofStop(const aclprofConfig *profilerConfig)
{
	struct running *r;
	aclError ret;
	bool env;

	pthread_mutex_lock(&lock);
	ret = start_stop_check_locked("aclprofStop", profilerConfig, &env);
	if (ret || env)
		goto out;
	r = running_find_locked(profilerConfig);
	if (!r) {
		ret = PROF_FAIL(ACL_ERROR_PROF_NOT_RUN,
				"aclprofStop: no profile of these %u "
				"device(s) runs (aclprofStart first)",
				profilerConfig->ndevs);
		goto out;
	}
	ret = running_stop_locked(r);
out:
	pthread_mutex_unlock(&lock);
	return ret;
}
