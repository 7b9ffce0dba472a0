/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"

enum field_kind {
	F_INT,	  /* decimal integer in [min, max] */
	F_INT0,	  /* 0 (auto), or a decimal integer in [min, max] */
	F_BOOL,	  /* 0/1, true/false (case-insensitive) */
	F_STR,	  /* free string, length-checked */
	F_DETERM, /* false/true/strict */
	F_FAMILY, /* AF_INET/AF_INET6 */
	F_LOG,	  /* owned by util/log.c (its parsers validate), listed here */
	F_SECRET, /* a string never printed (dumps show that it is set) */
	F_SIGNAL, /* a signal a user may send: USR1, SIGUSR2, 10; "" = none */
};

struct field {
	const char *name;
	const char *def;
	const char *doc;
	enum field_kind kind;
	size_t offset;
	size_t size; /* F_STR: buffer size */
	int64_t min, max;
};

#define INT_F(n, d, doc, f, lo, hi)                                            \
	{n, d, doc, F_INT, offsetof(struct ohc_env, f), 0, lo, hi}
#define INT0_F(n, d, doc, f, lo, hi)                                           \
	{                                                                      \
		n, d, doc, F_INT0, offsetof(struct ohc_env, f), 0, lo, hi      \
	}
#define BOOL_F(n, d, doc, f)                                                   \
	{n, d, doc, F_BOOL, offsetof(struct ohc_env, f), 0, 0, 1}
#define STR_F(n, doc, f)                                                       \
	{n, "", doc, F_STR, offsetof(struct ohc_env, f),                      \
	 sizeof(((struct ohc_env *)0)->f), 0, 0}

static const struct field fields[] = {
	INT_F("HCCL_CONNECT_TIMEOUT", "120",
	      "seconds to wait for all ranks during communicator init",
	      connect_timeout_s, 1, 7200),
	STR_F("HCCL_IF_IP", "host IP address the bootstrap listens on", if_ip),
	STR_F("HCCL_SOCKET_IFNAME",
	      "interfaces for the bootstrap: eth,enp / ^eth / =eth0 / ^=eth0",
	      socket_ifname),
	{"HCCL_SOCKET_FAMILY", "AF_INET",
	 "address family of the bootstrap: AF_INET or AF_INET6", F_FAMILY,
	 offsetof(struct ohc_env, socket_family), 0, 0, 0},
	INT_F("HCCL_IF_BASE_PORT", "60000",
	      "first port the root-info listener tries (32 ports, then any)",
	      if_base_port, 1024, 65520),
	STR_F("HCCL_HOST_SOCKET_PORT_RANGE",
	      "ports for root-info listeners, e.g. 60000,60050-60100 or auto",
	      host_port_range),
	BOOL_F("HCCL_WHITELIST_DISABLE", "1",
	       "0 = accept bootstrap peers only from HCCL_WHITELIST_FILE",
	       whitelist_disable),
	STR_F("HCCL_WHITELIST_FILE",
	      "JSON {\"host_ip\": [...]} of allowed peers", whitelist_file),
	{"OPENHCCL_BOOTSTRAP_SECRET", "",
	 "shared secret the bootstrap's session tokens are derived from; "
	 "without it anyone holding the root info or able to read the rank "
	 "table can join (never printed)",
	 F_SECRET, offsetof(struct ohc_env, bootstrap_secret),
	 sizeof(((struct ohc_env *)0)->bootstrap_secret), 0, 0},
	STR_F("OPENHCCL_BOOTSTRAP_SECRET_FILE",
	      "file holding that secret instead (a regular file, best mode "
	      "0600)",
	      bootstrap_secret_file),
	INT_F("HCCL_EXEC_TIMEOUT", "1836",
	      "seconds a rank waits for peers inside an operation (0 = never)",
	      exec_timeout_s, 0, 2147483647),
	INT_F("HCCL_BUFFSIZE", "200",
	      "MB of staging buffer per communicator (bounds pipeline chunks)",
	      buffsize_mb, 1, 1048576),
	{"HCCL_DETERMINISTIC", "false",
	 "false/true/strict: fixed reduction order, bitwise reproducible",
	 F_DETERM, offsetof(struct ohc_env, deterministic), 0, 0, 0},
	STR_F("HCCL_ALGO",
	      "algorithm override, e.g. level0:NA;level1:ring or "
	      "allreduce=level0:NA;level1:H-D_R",
	      algo),
	BOOL_F("HCCL_ENTRY_LOG_ENABLE", "0", "1 = log every operation call",
	       entry_log),
	BOOL_F("HCCL_INTRA_ROCE_ENABLE", "0",
	       "1 = same-host peers use RDMA instead of shared memory",
	       intra_roce_enable),
	BOOL_F("HCCL_INTRA_PCIE_ENABLE", "1",
	       "1 = same-host peers use shared memory", intra_pcie_enable),
	INT_F("HCCL_RDMA_TC", "132", "RoCE traffic class (multiple of 4)",
	      rdma_tc, 0, 255),
	INT_F("HCCL_RDMA_SL", "4", "RoCE service level", rdma_sl, 0, 7),
	INT_F("HCCL_RDMA_TIMEOUT", "20",
	      "QP retransmit timeout exponent (4.096 us * 2^v)", rdma_timeout,
	      5, 24),
	INT_F("HCCL_RDMA_RETRY_CNT", "7",
	      "QP retry count (7 is capped to 6 on rxe, where 7 is forever)",
	      rdma_retry_cnt, 1, 7),
	INT_F("HCCL_RDMA_QPS_PER_CONNECTION", "1", "RC QPs per rank pair",
	      rdma_qps_per_conn, 1, 32),
	STR_F("OPENHCCL_RDMA_DEVICE",
	      "RDMA device to use (default: the one holding the rank's IP)",
	      rdma_device),
	INT_F("OPENHCCL_RDMA_GID_INDEX", "-1",
	      "GID index to use (-1 = the RoCE v2 GID of the rank's IP)",
	      rdma_gid_index, -1, 1023),
	INT_F("OPENHCCL_RDMA_SLOTS", "32",
	      "receive slots per RDMA connection and direction (credits)",
	      rdma_slots, 4, 1024),
	INT_F("OPENHCCL_RDMA_SLOT_KB", "64",
	      "KiB of payload per RDMA slot (largest fragment; a 64-byte "
	      "header comes on top)",
	      rdma_slot_kb, 4, 16384),
	INT_F("OPENHCCL_RDMA_RNDV_KB", "256",
	      "messages of this many KiB and more go by rendezvous: RDMA "
	      "writes straight into the receiver's buffer; unset: only on "
	      "RDMA NICs, never on software devices (Soft-RoCE, siw) "
	      "(0: never)",
	      rdma_rndv_kb, 0, 1048576),
	INT_F("OPENHCCL_RDMA_GATHER_KB", "32",
	      "slot fragments with at least this many KiB of payload are "
	      "RDMA-written straight from the registered send buffer, no "
	      "staging copy; the send completes when the write did (0: "
	      "always copy)",
	      rdma_gather_kb, 0, 16384),
	INT_F("OPENHCCL_RDMA_PULL_KB", "64",
	      "slot-path messages of at least this many KiB (below the "
	      "rendezvous) go in halves, every second one RDMA-read by the "
	      "receiver from the sender's staging slot into its buffer; "
	      "unset: only on software RDMA devices (Soft-RoCE, siw) (0: "
	      "never)",
	      rdma_pull_kb, 0, 1048576),
	INT_F("OPENHCCL_RDMA_MR_CACHE", "64",
	      "unused user-buffer registrations kept for reuse, each checked "
	      "against /proc/self/pagemap when reused (0: released when the "
	      "message completes); unset: 64 where that check works "
	      "(CAP_SYS_ADMIN), else 0",
	      rdma_mr_cache, 0, 4096),
	INT_F("OPENHCCL_RDMA_REPLAY_MS", "10000",
	      "milliseconds an RDMA connection whose link failed (retries "
	      "exhausted, port down) is given to come back: its QPs are "
	      "rebuilt and what the peer did not receive is sent again; only "
	      "then the operation fails (0 = fail at once)",
	      rdma_replay_ms, 0, 600000),
	INT_F("OPENHCCL_RDMA_LAZY_RANKS", "16",
	      "on a communicator of more than this many ranks each RDMA "
	      "connection (QPs, rings, registrations, the TCP handshake) is "
	      "made on its first use instead of at init, so a rank holds "
	      "only the connections it uses (0 = always on first use); must "
	      "be the same on every rank",
	      rdma_lazy_ranks, 0, 1048576),
	INT_F("OPENHCCL_RDMA_WRITE_KB", "0",
	      "KiB per RDMA WRITE work request (0 = a whole slot); small "
	      "writes survive packet loss on Soft-RoCE (go-back-N)",
	      rdma_write_kb, 0, 16384),
	STR_F("OPENHCCL_HOSTID",
	      "overrides the host identity (boot id + hostname) used to find "
	      "same-host peers",
	      hostid),
	INT0_F("OPENHCCL_SHM_RING_KB", "0",
	       "KiB of each per-pair shared-memory ring; 0 = auto: 1024, "
	       "less where a rank has more peers on its host, so that the "
	       "rings it reads and writes fit its core's L2 cache (at least "
	       "128)",
	       shm_ring_kb, 64, 1048576),
	INT_F("OPENHCCL_SHM_PREFAULT", "8",
	      "rings are faulted in at init when the host runs at most this "
	      "many ranks (the first messages then take no page faults); "
	      "beyond, a ring's pages are faulted in when first used, so "
	      "memory per process grows with the peers it exchanges with, "
	      "not with the rank count (0 = never)",
	      shm_prefault, 0, 1048576),
	INT_F("OPENHCCL_SHM_CMA_KB", "0",
	      "messages of this many KiB and more are read straight out of "
	      "the sending process (process_vm_readv, one copy) instead of "
	      "through the ring (two copies, pipelined); 0 = never",
	      shm_cma_kb, 0, 16777216),
	INT_F("OPENHCCL_MALLOC_SHARED_KB", "256",
	      "aclrtMalloc allocations of this many KiB and more are shared "
	      "memory (a memfd) that peer processes on the node read "
	      "messages straight out of (one copy instead of the ring's "
	      "two); 0 = never",
	      malloc_shared_kb, 0, 1073741824),
	INT_F("OPENHCCL_SHM_ZC_KB", "256",
	      "messages of this many KiB and more out of shared aclrtMalloc "
	      "memory are read by the receiving process straight out of the "
	      "sender's buffer, mapped once; 0 = never",
	      shm_zc_kb, 0, 16777216),
	INT_F("OPENHCCL_SPIN_US", "-1",
	      "microseconds a waiting rank polls before it sleeps, at least "
	      "(the clock is read at doubling poll counts, so up to twice "
	      "that); -1 = auto: 50; ranks that outnumber this host's "
	      "CPUs yield while they poll, and sleep at once where busy "
	      "processes share the CPUs",
	      spin_us, -1, 1000000),
	INT_F("OPENHCCL_PIPELINE_SLICES", "0",
	      "slices of pipelined schedules (chain broadcast/reduce): 0 = "
	      "the cost model's choice, 1 = never slice, N = N slices; must "
	      "be the same on every rank",
	      pipeline_slices, 0, 256),
	INT_F("OPENHCCL_SYNC_RUNS_TASKS", "1",
	      "1: a thread synchronizing a stream runs its queued tasks "
	      "itself while the stream's worker is idle; 0: it sleeps",
	      sync_runs_tasks, 0, 1),
	{"OPENHCCL_FLIGHT_SIGNAL", "",
	 "a signal (USR1, USR2, HUP, QUIT, URG, WINCH, PWR or a number) "
	 "that makes every communicator of the process dump its flight "
	 "recorder, the last 64 operations, to the log; unset: none",
	 F_SIGNAL, offsetof(struct ohc_env, flight_signal), 0, 0, 0},
	STR_F("OPENHCCL_PROFILE",
	      "directory: profile the whole process (every HCCL operation "
	      "and runtime task, aclInit to aclFinalize) into a Chrome trace "
	      "JSON file there, as aclprofStart/aclprofStop would",
	      profile_dir),
	INT_F("OPENHCCL_DEVICE_COUNT", "0",
	      "number of logical devices the host runtime reports; 0 = auto: "
	      "this host's online CPUs, at least 16",
	      device_count, 0, 65536),
	{"OPENHCCL_DEBUG", "WARN",
	 "log level: NONE, ERROR, WARN, INFO, DEBUG, TRACE", F_LOG, 0, 0, 0, 0},
	{"OPENHCCL_DEBUG_SUBSYS", "all",
	 "log subsystems: init,boot,shm,verbs,coll,algo,rt,env,api,mem (^ "
	 "excludes)",
	 F_LOG, 0, 0, 0, 0},
	{"OPENHCCL_LOG_FILE", "",
	 "log to this file instead of stderr; %h host, %p pid, %r rank (a file "
	 "per rank), %% a percent sign",
	 F_LOG, 0, 0, 0, 0},
};

static struct ohc_env env;
static ohc_status_t env_status = OHC_OK;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;

const char *ohc_config_raw(const char *name)
{
	return getenv(name);
}

int ohc_config_is_set(const char *name)
{
	const char *val = ohc_config_raw(name);

	return val && *val;
}

ohc_status_t ohc_parse_signal(const char *s, int64_t *sig_p)
{
	static const struct {
		const char *name;
		int sig;
	} ok[] = {
		{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP},
		{"QUIT", SIGQUIT}, {"URG", SIGURG},   {"WINCH", SIGWINCH},
		{"PWR", SIGPWR},
	};
	int64_t n;

	if (!*s) {
		*sig_p = 0;
		return OHC_OK;
	}
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < OHC_ARRAY_SIZE(ok); i++) {
		if (!strcasecmp(s, ok[i].name)) {
			*sig_p = ok[i].sig;
			return OHC_OK;
		}
	}
	if (ohc_parse_int(s, 1, 64, &n) != OHC_OK)
		return OHC_ERR_INVALID;
	for (size_t i = 0; i < OHC_ARRAY_SIZE(ok); i++) {
		if (ok[i].sig == n) {
			*sig_p = n;
			return OHC_OK;
		}
	}
	return OHC_ERR_INVALID;
}

ohc_status_t ohc_parse_int(const char *s, int64_t min, int64_t max,
			   int64_t *out_p)
{
	char *end;
	long long v;

	if (!s || !*s)
		return OHC_ERR_INVALID;
	while (*s == ' ')
		s++;
	errno = 0;
	v = strtoll(s, &end, 10);
	while (*end == ' ')
		end++;
	if (errno || *end != '\0' || end == s || v < min || v > max)
		return OHC_ERR_INVALID;
	*out_p = v;
	return OHC_OK;
}

/*
 * Parse val for f into e; quiet: no log line (validation for tools).
 */
static ohc_status_t parse_field_into(const struct field *f, const char *val,
				     struct ohc_env *e, int quiet)
{
#define FIELD_ERROR(...)                                                       \
	do {                                                                   \
		if (!quiet)                                                    \
			OHC_ERROR(OHC_SS_ENV, __VA_ARGS__);                    \
	} while (0)
	char *dst = (char *)e + f->offset;
	int64_t *ip = (int64_t *)dst;
	char why[160];

	switch (f->kind) {
	case F_INT:
	case F_INT0:
		if (ohc_parse_int(val, f->kind == F_INT0 ? 0 : f->min, f->max,
				  ip) != OHC_OK ||
		    (f->kind == F_INT0 && *ip && *ip < f->min)) {
			FIELD_ERROR("%s='%s' is not %san integer in [%lld, "
				    "%lld]",
				    f->name, val,
				    f->kind == F_INT0 ? "0 or " : "",
				    (long long)f->min, (long long)f->max);
			return OHC_ERR_INVALID;
		}
		if (!strcmp(f->name, "HCCL_RDMA_TC") && *ip % 4) {
			FIELD_ERROR("HCCL_RDMA_TC='%s' must be a multiple of 4",
				    val);
			return OHC_ERR_INVALID;
		}
		return OHC_OK;
	case F_BOOL:
		if (!strcmp(val, "1") || !strcasecmp(val, "true"))
			*ip = 1;
		else if (!strcmp(val, "0") || !strcasecmp(val, "false"))
			*ip = 0;
		else {
			FIELD_ERROR("%s='%s' must be 0 or 1", f->name, val);
			return OHC_ERR_INVALID;
		}
		return OHC_OK;
	case F_STR:
	case F_SECRET:
		if (strlen(val) >= f->size) {
			FIELD_ERROR("%s is longer than %zu characters", f->name,
				    f->size - 1);
			return OHC_ERR_INVALID;
		}
		strcpy(dst, val);
		return OHC_OK;
	case F_DETERM:
		if (!strcasecmp(val, "false") || !strcmp(val, "0"))
			*ip = OHC_DETERMINISTIC_OFF;
		else if (!strcasecmp(val, "true") || !strcmp(val, "1"))
			*ip = OHC_DETERMINISTIC_ON;
		else if (!strcasecmp(val, "strict") || !strcmp(val, "2"))
			*ip = OHC_DETERMINISTIC_STRICT;
		else {
			FIELD_ERROR(
				"HCCL_DETERMINISTIC='%s' must be false, true "
				"or strict",
				val);
			return OHC_ERR_INVALID;
		}
		return OHC_OK;
	case F_FAMILY:
		if (!strcmp(val, "AF_INET"))
			*ip = AF_INET;
		else if (!strcmp(val, "AF_INET6"))
			*ip = AF_INET6;
		else {
			FIELD_ERROR(
				"HCCL_SOCKET_FAMILY='%s' must be AF_INET or "
				"AF_INET6",
				val);
			return OHC_ERR_INVALID;
		}
		return OHC_OK;
	case F_LOG:
		if (ohc_log_setting_check(f->name, val, why, sizeof(why)) !=
		    OHC_OK) {
			FIELD_ERROR("%s='%s' %s", f->name, val, why);
			return OHC_ERR_INVALID;
		}
		return OHC_OK;
	case F_SIGNAL:
		if (ohc_parse_signal(val, ip) != OHC_OK) {
			FIELD_ERROR("%s='%s' is not a signal a user may send "
				    "(USR1, USR2, HUP, QUIT, URG, WINCH, PWR "
				    "or a number of one)",
				    f->name, val);
			return OHC_ERR_INVALID;
		}
		return OHC_OK;
	}
	return OHC_ERR_INTERNAL;
#undef FIELD_ERROR
}

static ohc_status_t parse_field(const struct field *f, const char *val)
{
	return parse_field_into(f, val, &env, 0);
}

static void env_parse_locked(void)
{
	ohc_status_t status = OHC_OK;

	memset(&env, 0, sizeof(env));
	for (size_t i = 0; i < OHC_ARRAY_SIZE(fields); i++) {
		const struct field *f = &fields[i];
		const char *val = ohc_config_raw(f->name);

		if (f->kind == F_LOG) {
			if (val && *val && parse_field(f, val) != OHC_OK)
				status = OHC_ERR_INVALID;
			continue;
		}
		if (parse_field(f, f->def) != OHC_OK)
			status = OHC_ERR_INTERNAL;
		if (val && *val && parse_field(f, val) != OHC_OK)
			status = OHC_ERR_INVALID;
	}
	if (env.intra_roce_enable && env.intra_pcie_enable &&
	    ohc_config_raw("HCCL_INTRA_PCIE_ENABLE")) {
		OHC_ERROR(OHC_SS_ENV, "HCCL_INTRA_ROCE_ENABLE=1 and "
				      "HCCL_INTRA_PCIE_ENABLE=1 cannot both be "
				      "set");
		status = OHC_ERR_INVALID;
	}
	env_status = status;
}

static void env_once_fn(void)
{
	env_parse_locked();
}

const struct ohc_env *ohc_env(void)
{
	pthread_once(&env_once, env_once_fn);
	return &env;
}

ohc_status_t ohc_env_status(void)
{
	ohc_env();
	return env_status;
}

void ohc_env_reload(void)
{
	ohc_env();
	pthread_mutex_lock(&env_lock);
	env_parse_locked();
	pthread_mutex_unlock(&env_lock);
	ohc_log_reload();
}

void ohc_env_dump(FILE *out)
{
	ohc_env();
	for (size_t i = 0; i < OHC_ARRAY_SIZE(fields); i++) {
		const struct field *f = &fields[i];
		const char *val = ohc_config_raw(f->name);
		int set = ohc_config_is_set(f->name);

		if (set && f->kind == F_SECRET)
			val = "(set, not shown)";
		fprintf(out, "%-30s = %-16s (%s)  # %s\n", f->name,
			set ? val : f->def, set ? "environment" : "default",
			f->doc);
	}
}

/* The values f accepts, for fix lines: "an integer in [1, 7200]". */
static void range_text(const struct field *f, char *buf, size_t len)
{
	switch (f->kind) {
	case F_INT:
	case F_INT0:
		snprintf(buf, len, "%san integer in [%lld, %lld]%s",
			 f->kind == F_INT0 ? "0 (auto) or " : "",
			 (long long)f->min, (long long)f->max,
			 strcmp(f->name, "HCCL_RDMA_TC") ? ""
							 : ", a multiple of 4");
		break;
	case F_BOOL:
		snprintf(buf, len, "0 or 1 (or false, true)");
		break;
	case F_STR:
		if (!strcmp(f->name, "HCCL_ALGO"))
			snprintf(buf, len,
				 "level0:NA;level1:<algo>, or per op "
				 "<op>=level0:NA;level1:<algo>/..., <algo> one "
				 "of ring, H-D_R, NHR, NHR_V1, NB, AHC, "
				 "pipeline, pairwise");
		else
			snprintf(buf, len, "a string of at most %zu characters",
				 f->size - 1);
		break;
	case F_DETERM:
		snprintf(buf, len, "false, true or strict");
		break;
	case F_FAMILY:
		snprintf(buf, len, "AF_INET or AF_INET6");
		break;
	case F_LOG:
		ohc_log_setting_range(f->name, buf, len);
		break;
	case F_SECRET:
		snprintf(buf, len, "a secret of at most %zu characters",
			 f->size - 1);
		break;
	case F_SIGNAL:
		snprintf(buf, len,
			 "USR1, USR2, HUP, QUIT, URG, WINCH, PWR or its number");
		break;
	}
}

size_t ohc_config_count(void)
{
	return OHC_ARRAY_SIZE(fields);
}

ohc_status_t ohc_config_get(size_t i, struct ohc_config_var *var_p)
{
	const struct field *f;
	struct ohc_env *scratch;
	const char *val;
	int valid = 1;

	if (i >= OHC_ARRAY_SIZE(fields))
		return OHC_ERR_INVALID;
	f = &fields[i];
	val = ohc_config_raw(f->name);
	if (val && !*val)
		val = NULL;
	if (val) {
		scratch = malloc(sizeof(*scratch));
		if (!scratch)
			return OHC_ERR_NO_MEMORY;
		valid = parse_field_into(f, val, scratch, 1) == OHC_OK;
		free(scratch);
	}
	var_p->name = f->name;
	var_p->def = f->def;
	var_p->doc = f->doc;
	var_p->value = val && f->kind == F_SECRET ? "(set, not shown)" : val;
	var_p->valid = valid;
	range_text(f, var_p->range, sizeof(var_p->range));
	return OHC_OK;
}

int ohc_config_device_count(void)
{
	int64_t n = ohc_env()->device_count;
	long cpus;

	if (n > 0)
		return (int)n;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return cpus > OHC_DEVICE_COUNT_MIN ? (int)(cpus < 65536 ? cpus : 65536)
					   : OHC_DEVICE_COUNT_MIN;
}
