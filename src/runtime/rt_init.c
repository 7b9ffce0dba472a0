/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Process-wide runtime state: aclInit/aclFinalize reference counting, the
 * handle registry and the per-thread "recent error" message.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/rt_internal.h"

/* ---- recent error message ---- */

static __thread char errmsg[256];

void ohc_rt_set_errmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
}

/* The last error this thread met in an acl* call ("" if none); clears it. */
OHC_API const char *aclGetRecentErrMsg(void)
{
	static __thread char out[sizeof(errmsg)];

	memcpy(out, errmsg, sizeof(out));
	errmsg[0] = '\0';
	return out;
}

/* ---- handle registry ---- */

#define REG_BUCKETS 1024u

pthread_mutex_t ohc_rt_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ohc_rt_obj *reg_table[REG_BUCKETS];

static unsigned reg_hash(const void *p)
{
	uint64_t v = (uint64_t)(uintptr_t)p;

	v = (v >> 4) * 0x9e3779b97f4a7c15ull;
	return (unsigned)(v >> 54) % REG_BUCKETS;
}

void ohc_rt_reg_add_locked(struct ohc_rt_obj *obj, enum ohc_rt_kind kind)
{
	unsigned b = reg_hash(obj);

	obj->kind = kind;
	obj->hnext = reg_table[b];
	reg_table[b] = obj;
}

struct ohc_rt_obj *ohc_rt_reg_find_locked(const void *handle,
					  enum ohc_rt_kind kind)
{
	struct ohc_rt_obj *o;

	if (!handle)
		return NULL;
	for (o = reg_table[reg_hash(handle)]; o; o = o->hnext)
		if ((const void *)o == handle)
			return o->kind == kind ? o : NULL;
	return NULL;
}

void ohc_rt_reg_del_locked(struct ohc_rt_obj *obj)
{
	struct ohc_rt_obj **pp = &reg_table[reg_hash(obj)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == obj) {
			*pp = obj->hnext;
			obj->hnext = NULL;
			return;
		}
	}
}

/* ---- init / finalize ---- */

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t init_refs;  /* aclInit calls not yet finalized; init_lock */
static bool init_finalized; /* finalized since the last aclInit; init_lock */

/*
 * configPath may be NULL or "" (no options) or name a readable file; its
 * dump/profiling options are not used by a host runtime.
 */
OHC_API aclError aclInit(const char *configPath)
{
	aclError ret = ACL_SUCCESS;

	pthread_mutex_lock(&init_lock);
	if (init_refs > 0) {
		init_refs++;
		ret = ACL_ERROR_REPEAT_INITIALIZE;
		goto out_unlock;
	}
	if (configPath && configPath[0] && access(configPath, R_OK) != 0) {
		ret = OHC_RT_FAIL(ACL_ERROR_INVALID_FILE,
				  "aclInit: config file '%s' is not readable: "
				  "%s",
				  configPath, strerror(errno));
		goto out_unlock;
	}
	init_refs = 1;
	init_finalized = false;
	ohc_rt_prof_env_begin();
out_unlock:
	pthread_mutex_unlock(&init_lock);
	return ret;
}

static void finalize_locked(void)
{
	init_refs = 0;
	init_finalized = true;
	/* Streams go (after their pending work); memory and events stay
	 * valid until the program frees them. */
	ohc_rt_device_reset_all();
	/* after the streams' last tasks, which it records */
	ohc_rt_prof_env_end();
}

OHC_API int ohc_rt_initialized(void)
{
	int on;

	pthread_mutex_lock(&init_lock);
	on = init_refs > 0;
	pthread_mutex_unlock(&init_lock);
	return on;
}

OHC_API aclError aclFinalize(void)
{
	aclError ret = ACL_SUCCESS;

	pthread_mutex_lock(&init_lock);
	if (init_refs == 0) {
		/* Never initialised: success (hccl_test's --help path). */
		if (init_finalized)
			ret = ACL_ERROR_REPEAT_FINALIZE;
		goto out_unlock;
	}
	finalize_locked();
out_unlock:
	pthread_mutex_unlock(&init_lock);
	return ret;
}

OHC_API aclError aclFinalizeReference(uint64_t *refCount)
{
	aclError ret = ACL_SUCCESS;

	pthread_mutex_lock(&init_lock);
	if (init_refs == 0) {
		ret = ACL_ERROR_REPEAT_FINALIZE;
		goto out_unlock;
	}
	if (--init_refs == 0)
		finalize_locked();
	if (refCount)
		*refCount = init_refs;
out_unlock:
	pthread_mutex_unlock(&init_lock);
	return ret;
}

OHC_API aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion,
				 int32_t *patchVersion)
{
	if (!majorVersion || !minorVersion || !patchVersion)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtGetVersion: NULL output pointer");
	*majorVersion = ACL_MAJOR_VERSION;
	*minorVersion = ACL_MINOR_VERSION;
	*patchVersion = ACL_PATCH_VERSION;
	return ACL_SUCCESS;
}
