/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Communicator state (hccl_comm.h): HcclCommSuspend, HcclCommResume,
 * HcclCommGetStatus and the process-wide state callbacks, called with
 * HCCL_COMM_STATE_PHASE_{DESTROY,RESUME}_{PRE,POST} around
 * HcclCommDestroy and HcclCommResume in the calling thread, in
 * registration order. A callback's result is logged when it is not
 * HCCL_SUCCESS and changes nothing: a destroy or a resume is collective
 * or already under way, and one rank backing out would leave the others
 * waiting. The callbacks may call any query; they must not destroy or
 * resume the communicator they are called for.
 */
#include <pthread.h>
#include <string.h>

#include "api/api.h"

#define CALLBACK_NAME_MAX 160
#define CALLBACKS_MAX 64

struct state_cb {
	char name[CALLBACK_NAME_MAX + 1];
	HcclCommStateCallback cb;
	void *args;
};

static struct state_cb cbs[CALLBACKS_MAX];
static unsigned ncbs;
static pthread_mutex_t cbs_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *phase_name(HcclCommStatePhase phase)
{
	switch (phase) {
	case HCCL_COMM_STATE_PHASE_DESTROY_PRE:
		return "DESTROY_PRE";
	case HCCL_COMM_STATE_PHASE_DESTROY_POST:
		return "DESTROY_POST";
	case HCCL_COMM_STATE_PHASE_RESUME_PRE:
		return "RESUME_PRE";
	case HCCL_COMM_STATE_PHASE_RESUME_POST:
		return "RESUME_POST";
	default:
		return "INVALID";
	}
}

void ohc_api_state_notify(HcclComm comm, HcclCommStatePhase phase)
{
	struct state_cb now[CALLBACKS_MAX];
	unsigned n;

	pthread_mutex_lock(&cbs_lock);
	n = ncbs;
	memcpy(now, cbs, n * sizeof(*now));
	pthread_mutex_unlock(&cbs_lock);
	for (unsigned i = 0; i < n; i++) {
		HcclResult r = now[i].cb(comm, phase, now[i].args);

		if (r != HCCL_SUCCESS)
			OHC_WARN(OHC_SS_API,
				 "state callback '%s' returned %s for %s "
				 "(ignored)",
				 now[i].name, HcclGetErrorString(r),
				 phase_name(phase));
	}
}

OHC_API HcclResult HcclCommRegCommStateCallback(const char *regName,
						HcclCommStateCallback cb,
						void *args)
{
	size_t len;
	unsigned i;
	HcclResult r = HCCL_SUCCESS;

	OHC_API_ENTRY(NULL,
		      "HcclCommRegCommStateCallback(regName=%.160s, cb=%s, "
		      "args=%p)",
		      regName ? regName : "(null)", cb ? "set" : "NULL", args);
	if (!regName) {
		OHC_ERROR(OHC_SS_API, "%s: regName is NULL", __func__);
		return HCCL_E_PTR;
	}
	len = strnlen(regName, CALLBACK_NAME_MAX + 1);
	if (len == 0 || len > CALLBACK_NAME_MAX) {
		OHC_ERROR(OHC_SS_API, "%s: regName is %s (1 to %d characters)",
			  __func__, len ? "too long" : "empty",
			  CALLBACK_NAME_MAX);
		return HCCL_E_PARA;
	}
	pthread_mutex_lock(&cbs_lock);
	for (i = 0; i < ncbs && strcmp(cbs[i].name, regName); i++)
		;
	if (!cb) { /* NULL: unregister */
		if (i < ncbs) {
			memmove(&cbs[i], &cbs[i + 1],
				(ncbs - i - 1) * sizeof(*cbs));
			ncbs--;
		}
	} else if (i < ncbs) { /* same name: replaced in place */
		cbs[i].cb = cb;
		cbs[i].args = args;
	} else if (ncbs == CALLBACKS_MAX) {
		OHC_ERROR(OHC_SS_API,
			  "%s: %d callbacks are registered already; "
			  "unregister one (cb = NULL) first",
			  __func__, CALLBACKS_MAX);
		r = HCCL_E_UNAVAIL;
	} else {
		memcpy(cbs[ncbs].name, regName, len + 1);
		cbs[ncbs].cb = cb;
		cbs[ncbs].args = args;
		ncbs++;
	}
	pthread_mutex_unlock(&cbs_lock);
	return r;
}

/* Suspend and Resume: the entry line and the communicator, then the call
 * (Resume only outside a group, between its state callbacks). */
static HcclResult suspend_resume(const char *fn, HcclComm comm, bool resume)
{
	struct ohc_comm *c;
	HcclResult r;

	OHC_API_ENTRY(comm, "%s(comm=%p)", fn, comm);
	r = resume ? ohc_api_live_comm_ungrouped(fn, comm, &c)
		   : ohc_api_live_comm(fn, comm, &c);
	if (r != HCCL_SUCCESS)
		return r;
	if (!resume)
		return ohc_status_to_hccl(ohc_comm_suspend(c));
	ohc_api_state_notify(comm, HCCL_COMM_STATE_PHASE_RESUME_PRE);
	r = ohc_status_to_hccl(ohc_comm_resume(c));
	ohc_api_state_notify(comm, HCCL_COMM_STATE_PHASE_RESUME_POST);
	return r;
}

OHC_API HcclResult HcclCommSuspend(HcclComm comm)
{
	return suspend_resume(__func__, comm, false);
}

OHC_API HcclResult HcclCommResume(HcclComm comm)
{
	return suspend_resume(__func__, comm, true);
}

OHC_API HcclResult HcclCommGetStatus(const char *commId, HcclCommStatus *status)
{
	struct ohc_comm *c;

	OHC_API_ENTRY(NULL, "HcclCommGetStatus(commId=%.128s, status=%p)",
		      commId ? commId : "(null)", (void *)status);
	if (!commId || !status) {
		OHC_ERROR(OHC_SS_API, "%s: %s is NULL", __func__,
			  !commId ? "commId" : "status");
		return HCCL_E_PTR;
	}
	c = ohc_comm_find(commId, ohc_rt_current_device());
	if (!c) {
		OHC_ERROR(OHC_SS_API, "%s: no communicator named '%.128s'",
			  __func__, commId);
		return HCCL_E_NOT_FOUND;
	}
	*status = __atomic_load_n(&c->suspended, __ATOMIC_ACQUIRE)
			  ? HCCL_COMM_STATUS_SUSPENDING
			  : HCCL_COMM_STATUS_READY;
	return HCCL_SUCCESS;
}
