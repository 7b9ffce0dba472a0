/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/config.h"
#include "util/log.h"

#ifndef OHC_VERSION_STRING
#define OHC_VERSION_STRING "unknown"
#endif

static int log_level = -1; /* -1: not read yet */
static unsigned log_subsys = OHC_SS_ALL;
static char log_host[256];
static char log_pattern[1024]; /* OPENHCCL_LOG_FILE, "" = stderr */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static __thread struct ohc_log_ctx tls_ctx = {.rank = -1};
/* The last rank a thread of this process took (file names for lines
 * without one); -1 before any. */
static int proc_rank = -1;

/*
 * Log files (OPENHCCL_LOG_FILE), under files_lock: one per rank with %r
 * (else one), reopened after a fork (pid). Lines for no known rank wait in
 * pending until a rank's file opens (or go to the "none" file at exit).
 */
#define LOG_MAX_FILES 16
#define LOG_PENDING_MAX 65536
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int rank, fd;
	pid_t pid;
} files[LOG_MAX_FILES];
static int nfiles;
static char *pending;
static size_t pending_len;
static pid_t pending_pid;
static int file_failed; /* reported once: then stderr */

static const struct {
	const char *name;
	unsigned bit;
} subsys_names[] = {
	{"init", OHC_SS_INIT},	 {"boot", OHC_SS_BOOT}, {"shm", OHC_SS_SHM},
	{"verbs", OHC_SS_VERBS}, {"coll", OHC_SS_COLL}, {"algo", OHC_SS_ALGO},
	{"rt", OHC_SS_RT},	 {"env", OHC_SS_ENV},	{"api", OHC_SS_API},
	{"mem", OHC_SS_MEM},	 {"all", OHC_SS_ALL},
};

static const char *const level_names[] = {"NONE", "ERROR", "WARN",
					  "INFO", "DEBUG", "TRACE"};

const char *ohc_log_level_name(enum ohc_log_level level)
{
	if ((int)level < 0 || (size_t)level >= OHC_ARRAY_SIZE(level_names))
		return "?";
	return level_names[level];
}

/* ---- parsing (shared with the configuration table) ---- */

static int parse_level(const char *s)
{
	if (!s || !*s)
		return OHC_LOG_WARN;
	for (int i = 0; i < (int)OHC_ARRAY_SIZE(level_names); i++)
		if (!strcasecmp(s, level_names[i]))
			return i;
	if (!strcasecmp(s, "WARNING"))
		return OHC_LOG_WARN;
	return -1;
}

/* The mask of a subsystem list; 0 with the bad name in bad when invalid. */
static unsigned parse_subsys(const char *s, char *bad, size_t len)
{
	unsigned mask = 0, bit;
	int exclude = 0;
	char buf[256], *tok, *save = NULL;

	if (!s || !*s)
		return OHC_SS_ALL;
	if (*s == '^') {
		exclude = 1;
		s++;
	}
	if (strlen(s) >= sizeof(buf)) {
		snprintf(bad, len, "(the list is longer than %zu characters)",
			 sizeof(buf) - 1);
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		bit = 0;
		for (size_t i = 0; i < OHC_ARRAY_SIZE(subsys_names); i++)
			if (!strcasecmp(tok, subsys_names[i].name))
				bit = subsys_names[i].bit;
		if (!bit) {
			snprintf(bad, len, "'%s'", tok);
			return 0;
		}
		mask |= bit;
	}
	if (!mask) {
		snprintf(bad, len, "(no subsystem named)");
		return 0;
	}
	return exclude ? (OHC_SS_ALL & ~mask) : mask;
}

/* A file pattern's problem into why; 0 when usable. */
static int check_pattern(const char *p, char *why, size_t len)
{
	char dir[1024];
	const char *slash;
	struct stat st;

	for (const char *c = p; *c; c++) {
		if (*c != '%')
			continue;
		c++;
		if (*c != 'h' && *c != 'p' && *c != 'r' && *c != '%') {
			snprintf(why, len,
				 "has '%%%.1s': only %%h (host), %%p (pid), "
				 "%%r (rank) and %%%% may follow a %%",
				 *c ? c : "");
			return -1;
		}
	}
	if (strlen(p) >= sizeof(log_pattern) - 1) {
		snprintf(why, len, "is longer than %zu characters",
			 sizeof(log_pattern) - 2);
		return -1;
	}
	slash = strrchr(p, '/');
	if (slash && slash[1] == '\0') {
		snprintf(why, len, "names a directory, not a file");
		return -1;
	}
	if (slash && slash != p && !memchr(p, '%', (size_t)(slash - p))) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - p), p);
		if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
			snprintf(why, len, "is in %s, which is not a directory",
				 dir);
			return -1;
		}
	}
	return 0;
}

ohc_status_t ohc_log_setting_check(const char *name, const char *val, char *why,
				   size_t len)
{
	char bad[96];

	if (!strcmp(name, "OPENHCCL_DEBUG")) {
		if (parse_level(val) >= 0)
			return OHC_OK;
		snprintf(
			why, len,
			"is not a log level: NONE, ERROR, WARN, INFO, DEBUG or "
			"TRACE");
		return OHC_ERR_INVALID;
	}
	if (!strcmp(name, "OPENHCCL_DEBUG_SUBSYS")) {
		if (parse_subsys(val, bad, sizeof(bad)))
			return OHC_OK;
		snprintf(why, len,
			 "names an unknown subsystem %s: a comma list of init, "
			 "boot, shm, verbs, coll, algo, rt, env, api, mem, all "
			 "(^ first excludes them)",
			 bad);
		return OHC_ERR_INVALID;
	}
	if (!strcmp(name, "OPENHCCL_LOG_FILE"))
		return check_pattern(val, why, len) ? OHC_ERR_INVALID : OHC_OK;
	snprintf(why, len, "is not a logging variable");
	return OHC_ERR_INVALID;
}

void ohc_log_setting_range(const char *name, char *buf, size_t len)
{
	if (!strcmp(name, "OPENHCCL_DEBUG"))
		snprintf(buf, len, "NONE, ERROR, WARN, INFO, DEBUG or TRACE");
	else if (!strcmp(name, "OPENHCCL_DEBUG_SUBSYS"))
		snprintf(buf, len,
			 "a comma list of init, boot, shm, verbs, coll, algo, "
			 "rt, env, api, mem, all; ^ first excludes them");
	else
		snprintf(buf, len,
			 "a file path in an existing directory; %%h host, %%p "
			 "pid, %%r rank, %%%% a percent sign");
}

/* ---- state ---- */

static void banner(void)
{
	Dl_info dl;
	const char *lib = "?";
	char line[2048];

	if (dladdr((void *)banner, &dl) && dl.dli_fname)
		lib = dl.dli_fname;
	snprintf(line, sizeof(line),
		 "OpenHCCL %s (%s): log level %s, subsystems %s, to %s",
		 OHC_VERSION_STRING, lib, level_names[log_level],
		 ohc_config_raw("OPENHCCL_DEBUG_SUBSYS") &&
				 *ohc_config_raw("OPENHCCL_DEBUG_SUBSYS")
			 ? ohc_config_raw("OPENHCCL_DEBUG_SUBSYS")
			 : "all",
		 log_pattern[0] ? log_pattern : "stderr");
	ohc_log(OHC_LOG_INFO, OHC_SS_INIT, __FILE__, __LINE__, "%.1200s", line);
}

static void log_read_env(void)
{
	const char *file = ohc_config_raw("OPENHCCL_LOG_FILE");
	char why[256], bad[96];
	int level = parse_level(ohc_config_raw("OPENHCCL_DEBUG"));
	unsigned mask = parse_subsys(ohc_config_raw("OPENHCCL_DEBUG_SUBSYS"),
				     bad, sizeof(bad));

	/* malformed values are reported by util/config.c */
	if (gethostname(log_host, sizeof(log_host)) != 0)
		snprintf(log_host, sizeof(log_host), "?");
	log_host[sizeof(log_host) - 1] = '\0';
	log_subsys = mask ? mask : OHC_SS_ALL;
	pthread_mutex_lock(&files_lock);
	for (int i = 0; i < nfiles; i++)
		if (files[i].pid == getpid())
			close(files[i].fd);
	nfiles = 0;
	file_failed = 0;
	if (file && *file && !check_pattern(file, why, sizeof(why)))
		snprintf(log_pattern, sizeof(log_pattern), "%s", file);
	else
		log_pattern[0] = '\0';
	pthread_mutex_unlock(&files_lock);
	__atomic_store_n(&log_level, level < 0 ? OHC_LOG_WARN : level,
			 __ATOMIC_RELEASE);
}

static void log_init(void)
{
	log_read_env();
	if (log_level >= OHC_LOG_INFO)
		banner();
}

void ohc_log_reload(void)
{
	pthread_once(&log_once, log_init);
	log_read_env();
}

int ohc_log_enabled(enum ohc_log_level level, unsigned subsys)
{
	if (OHC_UNLIKELY(__atomic_load_n(&log_level, __ATOMIC_ACQUIRE) < 0))
		pthread_once(&log_once, log_init);
	return (int)level <= log_level && (subsys & log_subsys);
}

void ohc_log_ctx_push(const char *comm, int rank, struct ohc_log_ctx *saved_p)
{
	*saved_p = tls_ctx;
	tls_ctx.rank = rank;
	tls_ctx.comm = comm;
	if (rank >= 0 && __atomic_load_n(&proc_rank, __ATOMIC_RELAXED) != rank)
		__atomic_store_n(&proc_rank, rank, __ATOMIC_RELAXED);
}

void ohc_log_ctx_pop(struct ohc_log_ctx *saved)
{
	tls_ctx = *saved;
}

/* ---- output ---- */

static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/* The pattern with %h, %p, %r (rank < 0: "none") expanded. */
static void expand(char *out, size_t len, int rank)
{
	size_t o = 0;
	char tmp[64];

	for (const char *c = log_pattern; *c && o + 1 < len; c++) {
		const char *add = tmp;

		if (*c != '%' || !c[1]) {
			out[o++] = *c;
			continue;
		}
		c++;
		if (*c == 'h')
			add = log_host;
		else if (*c == 'p')
			snprintf(tmp, sizeof(tmp), "%d", (int)getpid());
		else if (*c == 'r' && rank >= 0)
			snprintf(tmp, sizeof(tmp), "%d", rank);
		else if (*c == 'r')
			add = "none";
		else
			add = "%";
		o += (size_t)snprintf(out + o, len - o, "%s", add);
		if (o >= len)
			o = len - 1;
	}
	out[o] = '\0';
}

/* The fd of rank's file (-1: the file cannot be opened), files_lock held. */
static int file_fd_locked(int rank)
{
	char path[1200];
	pid_t pid = getpid();
	int fd;

	if (!strstr(log_pattern, "%r"))
		rank = -1;
	for (int i = 0; i < nfiles; i++)
		if (files[i].rank == rank && files[i].pid == pid)
			return files[i].fd;
	expand(path, sizeof(path), rank);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		if (!file_failed) {
			char msg[1400];
			int n = snprintf(msg, sizeof(msg),
					 "[openhccl %s:%d] ERROR "
					 "OPENHCCL_LOG_FILE: cannot open "
					 "'%s': %s; logging to stderr\n",
					 log_host, (int)pid, path,
					 strerror(errno));

			write_all(2, msg, OHC_MIN((size_t)n, sizeof(msg) - 1));
		}
		file_failed = 1;
		return -1;
	}
	if (nfiles == LOG_MAX_FILES) {
		close(files[0].fd);
		memmove(&files[0], &files[1], sizeof(files[0]) * --nfiles);
	}
	files[nfiles].rank = rank;
	files[nfiles].fd = fd;
	files[nfiles].pid = pid;
	nfiles++;
	if (pending_len && pending_pid == pid)
		write_all(fd, pending, pending_len);
	pending_len = 0;
	return fd;
}

static void emit(const char *line, size_t len, int rank)
{
	int fd = 2;

	if (!log_pattern[0]) {
		write_all(2, line, len);
		return;
	}
	pthread_mutex_lock(&files_lock);
	if (rank < 0)
		rank = __atomic_load_n(&proc_rank, __ATOMIC_RELAXED);
	if (file_failed) {
		fd = 2;
	} else if (rank < 0 && strstr(log_pattern, "%r")) {
		/* no rank yet: keep the line for the first rank's file */
		if (pending_pid != getpid()) {
			pending_len = 0;
			pending_pid = getpid();
		}
		if (!pending)
			pending = malloc(LOG_PENDING_MAX);
		if (pending && pending_len + len <= LOG_PENDING_MAX) {
			memcpy(pending + pending_len, line, len);
			pending_len += len;
			pthread_mutex_unlock(&files_lock);
			return;
		}
		fd = file_fd_locked(-1);
	} else {
		fd = file_fd_locked(rank);
	}
	write_all(fd < 0 ? 2 : fd, line, len);
	pthread_mutex_unlock(&files_lock);
}

/* Lines that never learnt their rank go to the "none" file. */
__attribute__((destructor)) static void log_flush_pending(void)
{
	int fd;

	pthread_mutex_lock(&files_lock);
	if (pending_len && pending_pid == getpid() && log_pattern[0]) {
		fd = file_fd_locked(-1);
		if (fd < 0)
			write_all(2, pending, pending_len);
	}
	pending_len = 0;
	pthread_mutex_unlock(&files_lock);
}

void ohc_log(enum ohc_log_level level, unsigned subsys, const char *file,
	     int line, const char *fmt, ...)
{
	char buf[1536], when[40];
	const char *base = strrchr(file, '/');
	struct timespec ts;
	struct tm tm;
	size_t n, max = sizeof(buf) - 2;
	va_list ap;
	int r;

	(void)subsys;
	/* the first line of a process (HCCL_ENTRY_LOG_ENABLE) is complete;
	 * (log_init's banner comes here with the level already set) */
	if (__atomic_load_n(&log_level, __ATOMIC_ACQUIRE) < 0)
		pthread_once(&log_once, log_init);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	r = snprintf(buf, max, "[openhccl %s.%06ldZ %s:%d", when,
		     ts.tv_nsec / 1000, log_host, (int)getpid());
	n = OHC_MIN((size_t)r, max);
	if (tls_ctx.rank >= 0)
		n += (size_t)snprintf(buf + n, max - n, " rank %d",
				      tls_ctx.rank);
	n = OHC_MIN(n, max);
	if (tls_ctx.comm && tls_ctx.comm[0])
		n += (size_t)snprintf(buf + n, max - n, " comm '%s'",
				      tls_ctx.comm);
	n = OHC_MIN(n, max);
	n += (size_t)snprintf(buf + n, max - n, "] %s ",
			      ohc_log_level_name(level));
	n = OHC_MIN(n, max);
	va_start(ap, fmt);
	n += (size_t)vsnprintf(buf + n, max - n, fmt, ap);
	va_end(ap);
	n = OHC_MIN(n, max);
	n += (size_t)snprintf(buf + n, max - n, " (%s:%d)",
			      base ? base + 1 : file, line);
	n = OHC_MIN(n, max);
	buf[n++] = '\n';
	emit(buf, n, tls_ctx.rank);
}
