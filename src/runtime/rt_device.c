/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logical devices: the per-thread current device, per-device reference
 * counts (aclrtSetDevice/aclrtResetDevice), the default stream and the
 * streams created on a device, the NUMA node serving each device, and the
 * minimal context objects.
 */
#include <errno.h>
#include <numa.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"
#include "util/config.h"

static pthread_once_t dev_once = PTHREAD_ONCE_INIT;
static int dev_count;
static _Atomic(struct ohc_rt_device *) *devs; /* dev_count slots */
static pthread_mutex_t devs_lock = PTHREAD_MUTEX_INITIALIZER;

#define MAX_NUMA_NODES 1024
static bool numa_ok;
static int numa_nodes[MAX_NUMA_NODES];
static int numa_count;

/* Current device of this thread (-1: none) and its explicitly made
 * context (NULL: the device's default context). */
static __thread int tls_dev = -1;
static __thread struct ohc_rt_context *tls_ctx;

static void numa_discover(void)
{
	int max;

	numa_count = 0;
	numa_ok = numa_available() >= 0;
	if (numa_ok) {
		max = numa_max_node();
		for (int n = 0; n <= max && numa_count < MAX_NUMA_NODES; n++)
			if (numa_bitmask_isbitset(numa_all_nodes_ptr,
						  (unsigned)n))
				numa_nodes[numa_count++] = n;
	}
	if (numa_count == 0) {
		numa_nodes[0] = 0;
		numa_count = 1;
	}
}

static void dev_init_once(void)
{
	dev_count = ohc_config_device_count();
	devs = calloc((size_t)dev_count, sizeof(*devs));
	if (!devs)
		OHC_ERROR(OHC_SS_RT, "cannot allocate the table of %d devices",
			  dev_count);
	numa_discover();
}

int ohc_rt_device_count(void)
{
	pthread_once(&dev_once, dev_init_once);
	return dev_count;
}

OHC_API int ohc_rt_device_total(void)
{
	return ohc_rt_device_count();
}

bool ohc_rt_numa_usable(void)
{
	pthread_once(&dev_once, dev_init_once);
	return numa_ok;
}

int ohc_rt_numa_node_count(void)
{
	pthread_once(&dev_once, dev_init_once);
	return numa_count;
}

OHC_API int ohc_rt_device_numa_node(int dev)
{
	pthread_once(&dev_once, dev_init_once);
	if (dev < 0)
		dev = 0;
	return numa_nodes[dev % numa_count];
}

struct ohc_rt_device *ohc_rt_device_get(int dev)
{
	struct ohc_rt_device *d;

	if (dev < 0 || dev >= ohc_rt_device_count() || !devs)
		return NULL;
	d = atomic_load_explicit(&devs[dev], memory_order_acquire);
	if (d)
		return d;
	pthread_mutex_lock(&devs_lock);
	d = atomic_load_explicit(&devs[dev], memory_order_relaxed);
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (d) {
			pthread_mutex_init(&d->lock, NULL);
			d->id = dev;
			ohc_list_init(&d->streams);
			d->sat_mode = ACL_RT_OVERFLOW_MODE_INFNAN;
			d->default_ctx.dev = dev;
			d->default_ctx.is_default = true;
			pthread_mutex_lock(&ohc_rt_reg_lock);
			ohc_rt_reg_add_locked(&d->default_ctx.super,
					      OHC_RT_KIND_CONTEXT);
			pthread_mutex_unlock(&ohc_rt_reg_lock);
			atomic_store_explicit(&devs[dev], d,
					      memory_order_release);
		}
	}
	pthread_mutex_unlock(&devs_lock);
	return d;
}

struct ohc_rt_device *ohc_rt_device_current(void)
{
	struct ohc_rt_device *d;

	if (tls_dev < 0)
		return NULL;
	d = ohc_rt_device_get(tls_dev);
	if (!d || atomic_load_explicit(&d->refs, memory_order_acquire) <= 0)
		return NULL;
	return d;
}

OHC_API int ohc_rt_current_device(void)
{
	struct ohc_rt_device *d = ohc_rt_device_current();

	return d ? d->id : -1;
}

int ohc_rt_current_numa_node(void)
{
	struct ohc_rt_device *d = ohc_rt_device_current();

	return d ? ohc_rt_device_numa_node(d->id) : -1;
}

static aclError check_dev_id(const char *fn, int32_t deviceId)
{
	int n = ohc_rt_device_count();

	if (deviceId < 0)
		return OHC_RT_FAIL(ACL_ERROR_RT_INVALID_DEVICEID,
				   "%s: device id %d is negative", fn,
				   (int)deviceId);
	if (deviceId >= n)
		return OHC_RT_FAIL(ACL_ERROR_RT_INVALID_DEVICEID,
				   "%s: device id %d out of range [0, %d): set "
				   "OPENHCCL_DEVICE_COUNT=%d or more for more "
				   "devices",
				   fn, (int)deviceId, n, (int)deviceId + 1);
	return ACL_SUCCESS;
}

/* The device of a valid id, made on first use. */
static aclError device_lookup(const char *fn, int32_t deviceId,
			      struct ohc_rt_device **d_p)
{
	aclError ret = check_dev_id(fn, deviceId);

	if (ret)
		return ret;
	*d_p = ohc_rt_device_get(deviceId);
	if (!*d_p)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "%s: out of memory creating device %d", fn,
				   (int)deviceId);
	return ACL_SUCCESS;
}

/* Take one reference on device id for the calling thread. */
static aclError device_acquire(const char *fn, int32_t deviceId,
			       struct ohc_rt_device **d_p)
{
	struct ohc_rt_device *d;
	aclError ret;

	ret = device_lookup(fn, deviceId, &d);
	if (ret)
		return ret;
	pthread_mutex_lock(&d->lock);
	atomic_fetch_add_explicit(&d->refs, 1, memory_order_acq_rel);
	pthread_mutex_unlock(&d->lock);
	*d_p = d;
	return ACL_SUCCESS;
}

/*
 * Drop one reference (all with force). At zero the default stream and every
 * stream created on the device are shut down after their pending work.
 * Returns 107002 if the device had no reference (unless force).
 */
static aclError device_release(const char *fn, struct ohc_rt_device *d,
			       bool force)
{
	struct ohc_list gone;
	struct ohc_rt_stream *def = NULL, *s;

	ohc_list_init(&gone);
	pthread_mutex_lock(&d->lock);
	if (atomic_load(&d->refs) <= 0) {
		pthread_mutex_unlock(&d->lock);
		if (force)
			return ACL_SUCCESS;
		return OHC_RT_FAIL(ACL_ERROR_RT_CONTEXT_NULL,
				   "%s: device %d was reset more often than "
				   "set",
				   fn, d->id);
	}
	if (force)
		atomic_store(&d->refs, 0);
	else
		atomic_fetch_sub(&d->refs, 1);
	if (atomic_load(&d->refs) == 0) {
		def = d->default_stream;
		d->default_stream = NULL;
		while (!ohc_list_empty(&d->streams)) {
			s = ohc_list_first(&d->streams, struct ohc_rt_stream,
					   dev_node);
			ohc_list_del(&s->dev_node);
			ohc_list_add_tail(&gone, &s->dev_node);
		}
	}
	pthread_mutex_unlock(&d->lock);

	while (!ohc_list_empty(&gone)) {
		s = ohc_list_first(&gone, struct ohc_rt_stream, dev_node);
		ohc_list_del(&s->dev_node);
		ohc_rt_stream_shutdown(s, false);
	}
	if (def)
		ohc_rt_stream_shutdown(def, false);
	return ACL_SUCCESS;
}

void ohc_rt_device_reset_all(void)
{
	struct ohc_rt_device *d;
	int n = ohc_rt_device_count();

	for (int i = 0; devs && i < n; i++) {
		d = atomic_load_explicit(&devs[i], memory_order_acquire);
		if (d)
			device_release("aclFinalize", d, true);
	}
}

OHC_API aclError aclrtSetDevice(int32_t deviceId)
{
	struct ohc_rt_device *d;
	aclError ret;

	ret = device_acquire("aclrtSetDevice", deviceId, &d);
	if (ret)
		return ret;
	tls_dev = deviceId;
	tls_ctx = NULL;
	return ACL_SUCCESS;
}

static aclError reset_device(const char *fn, int32_t deviceId, bool force)
{
	struct ohc_rt_device *d;
	aclError ret;

	ret = device_lookup(fn, deviceId, &d);
	if (ret)
		return ret;
	return device_release(fn, d, force);
}

OHC_API aclError aclrtResetDevice(int32_t deviceId)
{
	return reset_device("aclrtResetDevice", deviceId, false);
}

OHC_API aclError aclrtResetDeviceForce(int32_t deviceId)
{
	return reset_device("aclrtResetDeviceForce", deviceId, true);
}

OHC_API aclError aclrtGetDevice(int32_t *deviceId)
{
	struct ohc_rt_device *d;

	if (!deviceId)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtGetDevice: deviceId is NULL");
	d = ohc_rt_device_current();
	if (!d)
		return OHC_RT_FAIL(ACL_ERROR_RT_CONTEXT_NULL,
				   "aclrtGetDevice: no device set on this "
				   "thread (call aclrtSetDevice first)");
	*deviceId = d->id;
	return ACL_SUCCESS;
}

/* Works before aclInit (tools ask for the count first). */
OHC_API aclError aclrtGetDeviceCount(uint32_t *count)
{
	if (!count)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtGetDeviceCount: count is NULL");
	*count = (uint32_t)ohc_rt_device_count();
	return ACL_SUCCESS;
}

/* Deliberately matches none of the chip prefixes hccl_test branches on. */
OHC_API const char *aclrtGetSocName(void)
{
	return "OpenHCCL-CPU";
}

OHC_API aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode)
{
	struct ohc_rt_device *d;

	if (mode != ACL_RT_OVERFLOW_MODE_SATURATION &&
	    mode != ACL_RT_OVERFLOW_MODE_INFNAN)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtSetDeviceSatMode: mode %d is neither "
				   "SATURATION (0) nor INFNAN (1)",
				   (int)mode);
	d = ohc_rt_device_current();
	if (!d)
		return OHC_RT_FAIL(ACL_ERROR_RT_CONTEXT_NULL,
				   "aclrtSetDeviceSatMode: no device set on "
				   "this thread");
	pthread_mutex_lock(&d->lock);
	d->sat_mode = mode;
	pthread_mutex_unlock(&d->lock);
	return ACL_SUCCESS;
}

OHC_API aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode *mode)
{
	struct ohc_rt_device *d;

	if (!mode)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtGetDeviceSatMode: mode is NULL");
	d = ohc_rt_device_current();
	if (!d)
		return OHC_RT_FAIL(ACL_ERROR_RT_CONTEXT_NULL,
				   "aclrtGetDeviceSatMode: no device set on "
				   "this thread");
	pthread_mutex_lock(&d->lock);
	*mode = d->sat_mode;
	pthread_mutex_unlock(&d->lock);
	return ACL_SUCCESS;
}

/* Waits for every stream of the current device; the first error wins. */
OHC_API aclError aclrtSynchronizeDevice(void)
{
	struct ohc_rt_device *d;
	struct ohc_rt_stream **v = NULL, *s;
	struct ohc_list *pos;
	size_t n = 0, cap = 1;
	aclError ret = ACL_SUCCESS, r;

	d = ohc_rt_device_current();
	if (!d)
		return OHC_RT_FAIL(ACL_ERROR_RT_CONTEXT_NULL,
				   "aclrtSynchronizeDevice: no device set on "
				   "this thread");
	pthread_mutex_lock(&d->lock);
	ohc_list_for_each(pos, &d->streams) cap++;
	v = calloc(cap, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&d->lock);
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "aclrtSynchronizeDevice: out of memory");
	}
	if (d->default_stream)
		v[n++] = d->default_stream;
	ohc_list_for_each(pos, &d->streams) v[n++] =
		ohc_container_of(pos, struct ohc_rt_stream, dev_node);
	for (size_t i = 0; i < n; i++)
		atomic_fetch_add(&v[i]->refs, 1);
	pthread_mutex_unlock(&d->lock);

	for (size_t i = 0; i < n; i++) {
		s = v[i];
		r = ohc_rt_stream_sync(s, -1);
		if (r && !ret)
			ret = r;
		ohc_rt_stream_put(s);
	}
	free(v);
	return ret;
}

OHC_API aclError aclrtGetRunMode(aclrtRunMode *runMode)
{
	if (!runMode)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtGetRunMode: runMode is NULL");
	*runMode = ACL_HOST;
	return ACL_SUCCESS;
}

/* ---- contexts: a context names a device and holds one reference on it */

OHC_API aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId)
{
	struct ohc_rt_context *c;
	struct ohc_rt_device *d;
	aclError ret;

	if (!context)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtCreateContext: context is NULL");
	ret = check_dev_id("aclrtCreateContext", deviceId);
	if (ret)
		return ret;
	c = calloc(1, sizeof(*c));
	if (!c)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "aclrtCreateContext: out of memory");
	ret = device_acquire("aclrtCreateContext", deviceId, &d);
	if (ret) {
		free(c);
		return ret;
	}
	c->dev = deviceId;
	pthread_mutex_lock(&ohc_rt_reg_lock);
	ohc_rt_reg_add_locked(&c->super, OHC_RT_KIND_CONTEXT);
	pthread_mutex_unlock(&ohc_rt_reg_lock);
	tls_dev = deviceId;
	tls_ctx = c;
	*context = c;
	return ACL_SUCCESS;
}

OHC_API aclError aclrtDestroyContext(aclrtContext context)
{
	struct ohc_rt_obj *o;
	struct ohc_rt_context *c;
	struct ohc_rt_device *d;

	pthread_mutex_lock(&ohc_rt_reg_lock);
	o = ohc_rt_reg_find_locked(context, OHC_RT_KIND_CONTEXT);
	c = o ? ohc_derived_of(o, struct ohc_rt_context) : NULL;
	if (c && !c->is_default)
		ohc_rt_reg_del_locked(o);
	pthread_mutex_unlock(&ohc_rt_reg_lock);
	if (!c || c->is_default)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtDestroyContext: %p is not a context "
				   "made by aclrtCreateContext",
				   context);
	if (tls_ctx == c)
		tls_ctx = NULL;
	d = ohc_rt_device_get(c->dev);
	free(c);
	if (d && atomic_load(&d->refs) > 0)
		device_release("aclrtDestroyContext", d, false);
	return ACL_SUCCESS;
}

OHC_API aclError aclrtSetCurrentContext(aclrtContext context)
{
	struct ohc_rt_obj *o;
	struct ohc_rt_context *c = NULL;
	int dev = -1;

	pthread_mutex_lock(&ohc_rt_reg_lock);
	o = ohc_rt_reg_find_locked(context, OHC_RT_KIND_CONTEXT);
	if (o) {
		c = ohc_derived_of(o, struct ohc_rt_context);
		dev = c->dev;
	}
	pthread_mutex_unlock(&ohc_rt_reg_lock);
	if (!c)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtSetCurrentContext: %p is not a live "
				   "context",
				   context);
	tls_dev = dev;
	tls_ctx = c->is_default ? NULL : c;
	return ACL_SUCCESS;
}

OHC_API aclError aclrtGetCurrentContext(aclrtContext *context)
{
	struct ohc_rt_device *d;
	bool live = false;

	if (!context)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "aclrtGetCurrentContext: context is NULL");
	if (tls_ctx) {
		pthread_mutex_lock(&ohc_rt_reg_lock);
		live = ohc_rt_reg_find_locked(tls_ctx, OHC_RT_KIND_CONTEXT);
		pthread_mutex_unlock(&ohc_rt_reg_lock);
		if (live) {
			*context = tls_ctx;
			return ACL_SUCCESS;
		}
		tls_ctx = NULL;
	}
	d = ohc_rt_device_current();
	if (!d)
		return OHC_RT_FAIL(ACL_ERROR_RT_CONTEXT_NULL,
				   "aclrtGetCurrentContext: no device or "
				   "context set on this thread");
	*context = &d->default_ctx;
	return ACL_SUCCESS;
}
