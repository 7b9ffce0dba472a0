/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host identity: two ranks are on the same host when their identities are
 * equal. OPENHCCL_HOSTID overrides it (tests make one machine look like
 * several); otherwise hostname plus the kernel's boot id, which also tells
 * apart containers that share a hostname across machines.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "comm/bootstrap/bootstrap.h"
#include "util/config.h"
#include "util/log.h"

#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"

/* The boot id without trailing whitespace; 0 on success. */
static int read_boot_id(char *buf, size_t len)
{
	ssize_t n;
	int fd = open(BOOT_ID_PATH, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	do {
		n = read(fd, buf, len - 1);
	} while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return -1;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return n > 0 ? 0 : -1;
}

ohc_status_t ohc_hostid_get(char *buf, size_t len)
{
	const struct ohc_env *env = ohc_env();
	char host[HOST_NAME_MAX + 1], boot[64];
	int n;

	if (!buf) {
		OHC_ERROR(OHC_SS_BOOT, "host id buffer is NULL");
		return OHC_ERR_NULL;
	}
	if (env->hostid[0]) {
		n = snprintf(buf, len, "%s", env->hostid);
	} else {
		if (gethostname(host, sizeof(host)) != 0) {
			OHC_ERROR(OHC_SS_BOOT, "gethostname failed: %s",
				  strerror(errno));
			return OHC_ERR_SYSCALL;
		}
		host[sizeof(host) - 1] = '\0';
		if (read_boot_id(boot, sizeof(boot)) != 0) {
			static int warned;

			if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
				OHC_WARN(OHC_SS_BOOT,
					 "cannot read %s; host identity is the "
					 "hostname '%s' alone (set "
					 "OPENHCCL_HOSTID to override)",
					 BOOT_ID_PATH, host);
			n = snprintf(buf, len, "%s", host);
		} else {
			n = snprintf(buf, len, "%s:%s", host, boot);
		}
	}
	if (n < 0 || (size_t)n >= len) {
		OHC_ERROR(OHC_SS_BOOT,
			  "host id needs %d bytes, the buffer has %zu", n + 1,
			  len);
		return OHC_ERR_INVALID;
	}
	return OHC_OK;
}
