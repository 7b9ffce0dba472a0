/* SPDX-License-Identifier: Apache-2.0 */
#include "api/api.h"

/*
 * Entry points whose capability arrives with a later issue. Each returns
 * HCCL_E_NOT_SUPPORT and logs its name; test/api/not_supported.c keeps
 * the list, which may only shrink.
 */
static HcclResult not_supported(const char *fn)
{
	OHC_ERROR(OHC_SS_API, "%s is not supported yet by OpenHCCL", fn);
	return HCCL_E_NOT_SUPPORT;
}

OHC_API HcclResult HcclCommSuspend(HcclComm comm)
{
	(void)comm;
	return not_supported(__func__);
}

OHC_API HcclResult HcclCommResume(HcclComm comm)
{
	(void)comm;
	return not_supported(__func__);
}

OHC_API HcclResult HcclCommRegCommStateCallback(const char *regName,
						HcclCommStateCallback cb,
						void *args)
{
	(void)regName;
	(void)cb;
	(void)args;
	return not_supported(__func__);
}

OHC_API HcclResult HcclCommGetStatus(const char *commId, HcclCommStatus *status)
{
	(void)commId;
	(void)status;
	return not_supported(__func__);
}
