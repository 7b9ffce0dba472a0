/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_LOG_H
#define OHC_UTIL_LOG_H

#include <stddef.h>

#include "util/compiler.h"
#include "util/status.h"

/*
 * Logging. Level from OPENHCCL_DEBUG (NONE, ERROR, WARN, INFO, DEBUG,
 * TRACE; default WARN), subsystems from OPENHCCL_DEBUG_SUBSYS (comma list
 * of the names below, "^" prefix excludes; default all), destination from
 * OPENHCCL_LOG_FILE (a pattern: %h host, %p pid, %r rank, %% percent;
 * default stderr). Malformed values fall back to the defaults here and
 * are reported by the configuration table (util/config.c), which makes
 * communicator init fail naming them.
 *
 * Log once, where the failure is detected; callers propagate silently.
 * Messages are lowercase and name rank/peer/qp where they apply. Each line
 * is one write(2):
 *
 *   [openhccl 2026-12-04T16:20:01.123456Z host:1234 rank 3 comm 'name']
 *   WARN message (file.c:12)
 *
 * (on one line) with the rank and communicator of the log context (below)
 * when the calling thread has one. At INFO and above the first line of a
 * process is a banner with the version.
 *
 * One copy of the state per process: libascendcl exports these functions
 * (version OHC_PRIVATE) and libhccl uses that copy.
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
	OHC_SS_INIT = 1u << 0,	/* communicator lifecycle */
	OHC_SS_BOOT = 1u << 1,	/* bootstrap, root info, rank table */
	OHC_SS_SHM = 1u << 2,	/* shared-memory transport */
	OHC_SS_VERBS = 1u << 3, /* RDMA verbs transport */
	OHC_SS_COLL = 1u << 4,	/* collectives, executor */
	OHC_SS_ALGO = 1u << 5,	/* algorithm selection */
	OHC_SS_RT = 1u << 6,	/* acl host runtime */
	OHC_SS_ENV = 1u << 7,	/* configuration */
	OHC_SS_API = 1u << 8,	/* argument checks */
	OHC_SS_MEM = 1u << 9,	/* zero-copy, windows, registration */
	OHC_SS_ALL = 0xffffu,
};

OHC_API int ohc_log_enabled(enum ohc_log_level level, unsigned subsys);
OHC_API void ohc_log(enum ohc_log_level level, unsigned subsys,
		     const char *file, int line, const char *fmt, ...)
	OHC_PRINTF(5, 6);
/* Re-read OPENHCCL_DEBUG*; for tests. */
OHC_API void ohc_log_reload(void);

/*
 * The rank and communicator a thread's log lines concern. Set for a scope
 * with OHC_LOG_SCOPE(comm_name, rank) (comm_name may be NULL or "", rank
 * -1 when unknown); the previous context comes back when the scope ends.
 * The name is not copied (a collective's entry and execution set it on
 * every call): it must outlive the scope, as a communicator's name does
 * while a call on it runs.
 */
struct ohc_log_ctx {
	int rank;
	const char *comm;
};

OHC_API void ohc_log_ctx_push(const char *comm, int rank,
			      struct ohc_log_ctx *saved_p);
OHC_API void ohc_log_ctx_pop(struct ohc_log_ctx *saved);

#define OHC_LOG_CONCAT_(a, b) a##b
#define OHC_LOG_CONCAT(a, b) OHC_LOG_CONCAT_(a, b)
#define OHC_LOG_SCOPE(comm, rank)                                              \
	struct ohc_log_ctx OHC_LOG_CONCAT(ohc_log_saved_, __LINE__)            \
		__attribute__((cleanup(ohc_log_ctx_pop)));                     \
	ohc_log_ctx_push(comm, rank, &OHC_LOG_CONCAT(ohc_log_saved_, __LINE__))

/*
 * Validation of the logging variables, shared with the configuration
 * table: OHC_OK, or OHC_ERR_INVALID with why (a phrase following
 * "NAME='value' ") filled. name is OPENHCCL_DEBUG, OPENHCCL_DEBUG_SUBSYS
 * or OPENHCCL_LOG_FILE.
 */
OHC_API ohc_status_t ohc_log_setting_check(const char *name, const char *val,
					   char *why, size_t len);
/* The values a logging variable accepts, one line. */
OHC_API void ohc_log_setting_range(const char *name, char *buf, size_t len);
/* The name of a log level ("WARN"). */
OHC_API const char *ohc_log_level_name(enum ohc_log_level level);

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
