/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_STATUS_H
#define OHC_UTIL_STATUS_H

/*
 * The one internal status type. OHC_OK and OHC_INPROGRESS are not errors;
 * every error is negative. src/api/status_map.c maps it to HcclResult in
 * exactly one place; nothing else converts.
 */
typedef enum {
	OHC_OK = 0,
	OHC_INPROGRESS = 1,
	OHC_ERR_INVALID = -1,	   /* bad argument or value */
	OHC_ERR_NULL = -2,	   /* required pointer is NULL */
	OHC_ERR_NO_MEMORY = -3,	   /* allocation failed */
	OHC_ERR_INTERNAL = -4,	   /* a bug: invariant broken */
	OHC_ERR_UNSUPPORTED = -5,  /* valid but not implemented / not allowed */
	OHC_ERR_NOT_FOUND = -6,	   /* lookup failed */
	OHC_ERR_UNAVAILABLE = -7,  /* resource exists but cannot be used now */
	OHC_ERR_SYSCALL = -8,	   /* a system call failed */
	OHC_ERR_TIMEOUT = -9,	   /* a bounded wait expired */
	OHC_ERR_OPEN_FILE = -10,   /* a file could not be opened or read */
	OHC_ERR_TCP_CONNECT = -11, /* bootstrap connect/accept failed */
	OHC_ERR_ROCE_CONNECT = -12,
	OHC_ERR_TCP_TRANSFER = -13, /* bootstrap socket lost mid-transfer */
	OHC_ERR_ROCE_TRANSFER = -14,
	OHC_ERR_REMOTE = -21,	   /* peer died or link error (sticky) */
	OHC_ERR_BUSY = -30,	   /* object has live children / in use */
	OHC_ERR_NO_RESOURCE = -31, /* back-pressure: retry from progress */
	OHC_ERR_DESYNC = -32,	   /* ranks called mismatched operations */
	OHC_ERR_CANCELED = -33,	   /* aborted by destroy or an earlier error */
	OHC_ERR_SUSPENDING = -34,  /* the communicator is suspended */
} ohc_status_t;

/* Static string naming the status; never NULL. */
const char *ohc_status_str(ohc_status_t status);

#define OHC_IS_ERR(s) ((s) < 0)

/* Propagate an error without logging again (the detector logged it). */
#define OHC_CHECK(call)                                                        \
	do {                                                                   \
		ohc_status_t _s = (call);                                      \
		if (_s < 0)                                                    \
			return _s;                                             \
	} while (0)

#define OHC_CHECK_GOTO(call, status, label)                                    \
	do {                                                                   \
		(status) = (call);                                             \
		if ((status) < 0)                                              \
			goto label;                                            \
	} while (0)

#endif
