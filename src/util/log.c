/* SPDX-License-Identifier: Apache-2.0 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/config.h"
#include "util/log.h"

int ohc_log_level_cur = -1;
static unsigned log_subsys = OHC_SS_ALL;
static char log_host[64];
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static const struct {
	const char *name;
	unsigned bit;
} subsys_names[] = {
	{"init", OHC_SS_INIT}, {"boot", OHC_SS_BOOT}, {"shm", OHC_SS_SHM},
	{"verbs", OHC_SS_VERBS}, {"coll", OHC_SS_COLL}, {"algo", OHC_SS_ALGO},
	{"rt", OHC_SS_RT}, {"env", OHC_SS_ENV}, {"api", OHC_SS_API},
	{"mem", OHC_SS_MEM}, {"all", OHC_SS_ALL},
};

static const char *level_names[] = {"NONE", "ERROR", "WARN", "INFO", "DEBUG",
				    "TRACE"};

static unsigned parse_subsys(const char *s)
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
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		bit = 0;
		for (size_t i = 0; i < OHC_ARRAY_SIZE(subsys_names); i++)
			if (!strcasecmp(tok, subsys_names[i].name))
				bit = subsys_names[i].bit;
		if (!bit)
			fprintf(stderr,
				"[openhccl] warning: OPENHCCL_DEBUG_SUBSYS: "
				"unknown subsystem '%s' ignored\n",
				tok);
		mask |= bit;
	}
	return exclude ? (OHC_SS_ALL & ~mask) : mask;
}

static void log_init(void)
{
	const char *lv = ohc_config_raw("OPENHCCL_DEBUG");
	int level = OHC_LOG_WARN;

	if (lv && *lv) {
		level = -1;
		for (int i = 0; i < (int)OHC_ARRAY_SIZE(level_names); i++)
			if (!strcasecmp(lv, level_names[i]))
				level = i;
		if (!strcasecmp(lv, "WARNING"))
			level = OHC_LOG_WARN;
		if (level < 0) {
			fprintf(stderr,
				"[openhccl] warning: OPENHCCL_DEBUG='%s' is not "
				"one of NONE, ERROR, WARN, INFO, DEBUG, TRACE; "
				"using WARN\n",
				lv);
			level = OHC_LOG_WARN;
		}
	}
	log_subsys = parse_subsys(ohc_config_raw("OPENHCCL_DEBUG_SUBSYS"));
	if (gethostname(log_host, sizeof(log_host)) != 0)
		snprintf(log_host, sizeof(log_host), "?");
	log_host[sizeof(log_host) - 1] = '\0';
	__atomic_store_n(&ohc_log_level_cur, level, __ATOMIC_RELEASE);
}

void ohc_log_reload(void)
{
	log_init();
}

int ohc_log_enabled(enum ohc_log_level level, unsigned subsys)
{
	if (OHC_UNLIKELY(__atomic_load_n(&ohc_log_level_cur, __ATOMIC_ACQUIRE) <
			 0))
		pthread_once(&log_once, log_init);
	return (int)level <= ohc_log_level_cur && (subsys & log_subsys);
}

void ohc_log(enum ohc_log_level level, unsigned subsys, const char *file,
	     int line, const char *fmt, ...)
{
	char msg[1024];
	const char *base = strrchr(file, '/');
	va_list ap;

	(void)subsys;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One write per line so concurrent ranks do not interleave. */
	fprintf(stderr, "[openhccl %s:%d] %s %s (%s:%d)\n", log_host,
		(int)getpid(), level_names[level], msg, base ? base + 1 : file,
		line);
}
