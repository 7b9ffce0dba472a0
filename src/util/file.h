/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_UTIL_FILE_H
#define OHC_UTIL_FILE_H

#include <stddef.h>

#include "util/status.h"

/*
 * Read a whole regular file named by configuration or by the user (rank
 * table, whitelist, secret). The open never blocks: a FIFO without a
 * writer, a device, a socket or a directory is refused, as is a file of
 * more than max bytes. On success *buf_p holds the bytes plus a
 * terminating NUL (caller frees) and *len_p their count. On failure
 * nothing is logged: why (why_len bytes) says what went wrong, for the
 * caller's own message. OHC_ERR_OPEN_FILE (cannot open or read),
 * OHC_ERR_INVALID (not a regular file, too large), OHC_ERR_NO_MEMORY.
 */
ohc_status_t ohc_file_read(const char *path, size_t max, char **buf_p,
			   size_t *len_p, char *why, size_t why_len);

/*
 * mkdir -p dir (mode 0755; a part that exists already is fine). 0 or an
 * errno value: ENAMETOOLONG when dir is empty or longer than max bytes
 * (max at most PATH_MAX), else that of the mkdir that failed.
 */
int ohc_mkdir_p(const char *dir, size_t max);

/*
 * Room for more file descriptors than are open now (a transport that
 * keeps some per peer): the soft RLIMIT_NOFILE is raised, up to the hard
 * limit, when it would not hold them. 0: room enough as it was; 1: raised
 * to make room; -1: no room (the hard limit is lower, or raising failed;
 * raised as far as it went). *soft_p: the soft limit in force after.
 */
int ohc_fd_room(unsigned long more, unsigned long *soft_p);

#endif
