/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"

static const char *kind_of(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "a special file";
}

ohc_status_t ohc_file_read(const char *path, size_t max, char **buf_p,
			   size_t *len_p, char *why, size_t why_len)
{
	ohc_status_t status = OHC_OK;
	size_t len = 0, cap;
	struct stat st;
	char *buf = NULL;
	int fd;

	/* O_NONBLOCK: opening a FIFO with no writer returns at once. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		snprintf(why, why_len, "cannot open: %s", strerror(errno));
		return OHC_ERR_OPEN_FILE;
	}
	if (fstat(fd, &st) != 0) {
		snprintf(why, why_len, "cannot stat: %s", strerror(errno));
		status = OHC_ERR_OPEN_FILE;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_len, "is %s, not a regular file",
			 kind_of(st.st_mode));
		status = S_ISDIR(st.st_mode) ? OHC_ERR_OPEN_FILE
					     : OHC_ERR_INVALID;
		goto out;
	}
	if ((uint64_t)st.st_size > max)
		goto too_large;
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap + 1);
	if (!buf) {
		snprintf(why, why_len, "out of memory");
		status = OHC_ERR_NO_MEMORY;
		goto out;
	}
	/* To the end, one byte past the size seen: it may have grown. */
	for (;;) {
		ssize_t n = read(fd, buf + len, cap - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(why, why_len, "cannot read: %s",
				 strerror(errno));
			status = OHC_ERR_OPEN_FILE;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == cap) {
			if (len > max)
				goto too_large;
			snprintf(why, why_len, "changed while being read");
			status = OHC_ERR_INVALID;
			goto out;
		}
	}
	buf[len] = '\0';
	*buf_p = buf;
	*len_p = len;
	buf = NULL;
	goto out;

too_large:
	snprintf(why, why_len, "file is larger than the limit of %zu bytes",
		 max);
	status = OHC_ERR_INVALID;
out:
	free(buf);
	close(fd);
	return status;
}

int ohc_mkdir_p(const char *dir, size_t max)
{
	char p[PATH_MAX + 1];
	size_t len = strlen(dir);

	if (len == 0 || len > max || len >= sizeof(p))
		return ENAMETOOLONG;
	memcpy(p, dir, len + 1);
	for (char *q = p + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return errno;
		*q = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		return errno;
	return 0;
}

int ohc_fd_room(unsigned long more, unsigned long *soft_p)
{
	struct rlimit rl;
	unsigned long open_now = 0, want;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -1;
	*soft_p = (unsigned long)rl.rlim_cur;
	if (!d)
		return 0; /* no procfs: nothing known, nothing raised */
	while ((e = readdir(d)))
		open_now += e->d_name[0] != '.';
	closedir(d);
	want = open_now + more;
	if (rl.rlim_cur == RLIM_INFINITY || want <= rl.rlim_cur)
		return 0;
	rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max
			      ? rl.rlim_max
			      : want;
	if (rl.rlim_cur > *soft_p && !setrlimit(RLIMIT_NOFILE, &rl))
		*soft_p = (unsigned long)rl.rlim_cur;
	return *soft_p >= want ? 1 : -1;
}
