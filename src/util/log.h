/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_LOG_H
#define OHC_UTIL_LOG_H

#include "util/compiler.h"

/*
 * Logging. Level from OPENHCCL_DEBUG (ERROR, WARN, INFO, DEBUG, TRACE;
 * default WARN), subsystems from OPENHCCL_DEBUG_SUBSYS (comma list of the
 * names below, "^" prefix excludes; default all). Log once, where the
 * failure is detected; callers propagate silently. Messages are lowercase
 * and name rank/peer/qp where they apply. Output goes to stderr, one line
 * per call, prefixed with host:pid.
 */
enum ohc_log_level {
	OHC_LOG_NONE = 0,
	OHC_LOG_ERROR,
	OHC_LOG_WARN,
	OHC_LOG_INFO,
	OHC_LOG_DEBUG,
	OHC_LOG_TRACE,
};

enum ohc_log_subsys {
	OHC_SS_INIT = 1u << 0,  /* communicator lifecycle */
	OHC_SS_BOOT = 1u << 1,  /* bootstrap, root info, rank table */
	OHC_SS_SHM = 1u << 2,   /* shared-memory transport */
	OHC_SS_VERBS = 1u << 3, /* RDMA verbs transport */
	OHC_SS_COLL = 1u << 4,  /* collectives, executor */
	OHC_SS_ALGO = 1u << 5,  /* algorithm selection */
	OHC_SS_RT = 1u << 6,    /* acl host runtime */
	OHC_SS_ENV = 1u << 7,   /* configuration */
	OHC_SS_API = 1u << 8,   /* argument checks */
	OHC_SS_MEM = 1u << 9,   /* zero-copy, windows, registration */
	OHC_SS_ALL = 0xffffu,
};

extern int ohc_log_level_cur;

int ohc_log_enabled(enum ohc_log_level level, unsigned subsys);
void ohc_log(enum ohc_log_level level, unsigned subsys, const char *file,
	     int line, const char *fmt, ...) OHC_PRINTF(5, 6);
/* Re-read OPENHCCL_DEBUG*; for tests. */
void ohc_log_reload(void);

#define OHC_LOG(level, ss, ...)                                                \
	do {                                                                   \
		if (ohc_log_enabled(level, ss))                                \
			ohc_log(level, ss, __FILE__, __LINE__, __VA_ARGS__);   \
	} while (0)

#define OHC_ERROR(ss, ...) OHC_LOG(OHC_LOG_ERROR, ss, __VA_ARGS__)
#define OHC_WARN(ss, ...) OHC_LOG(OHC_LOG_WARN, ss, __VA_ARGS__)
#define OHC_INFO(ss, ...) OHC_LOG(OHC_LOG_INFO, ss, __VA_ARGS__)
#define OHC_DEBUG(ss, ...) OHC_LOG(OHC_LOG_DEBUG, ss, __VA_ARGS__)
#define OHC_TRACE(ss, ...) OHC_LOG(OHC_LOG_TRACE, ss, __VA_ARGS__)

#endif
