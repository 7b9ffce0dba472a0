/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Environment values: every row of the configuration table (util/config.c)
 * set to the fuzzer's text, validated quietly (ohc_config_get) and parsed
 * for real (ohc_env_reload); the two must agree. Then whatever parses the
 * value further: the log settings (OPENHCCL_DEBUG, OPENHCCL_DEBUG_SUBSYS,
 * util/log.c), HCCL_ALGO (algo/hccl_algo.c, for every operation),
 * HCCL_SOCKET_IFNAME (bs_iface.c) and HCCL_HOST_SOCKET_PORT_RANGE
 * (bs_ports.c), HCCL_IF_IP, OPENHCCL_HOSTID, and the bootstrap secret
 * (bs_auth.c; for OPENHCCL_BOOTSTRAP_SECRET_FILE the text is the file's
 * content).
 *
 * Input: the row, then the value (up to the first NUL).
 */
#include <fcntl.h>
#include <unistd.h>

#include "algo/algo.h"
#include "comm/bootstrap/bs_internal.h"
#include "util/config.h"
#include "util/log.h"
#include "fuzz.h"

static char secret_path[64];

static void remove_secret(void)
{
	unlink(secret_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int fd;

	(void)argc;
	(void)argv;
	fz_quiet();
	snprintf(secret_path, sizeof(secret_path), "/tmp/ohc-fuzz-env-%d",
		 (int)getpid());
	fd = open(secret_path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	FZ_ASSERT(fd >= 0);
	close(fd);
	atexit(remove_secret);
	return 0;
}

static void check_algo(const char *spec)
{
	static const enum ohc_coll_op ops[] = {
		OHC_COLL_BROADCAST,	 OHC_COLL_ALLREDUCE,
		OHC_COLL_REDUCE,	 OHC_COLL_ALLGATHER,
		OHC_COLL_REDUCE_SCATTER, OHC_COLL_ALLTOALLV,
		OHC_COLL_ALLTOALL,	 OHC_COLL_SCATTER,
		OHC_COLL_ALLGATHER_V,	 OHC_COLL_REDUCE_SCATTER_V,
		OHC_COLL_BARRIER,	 OHC_COLL_SEND,
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		int unknown = -1;
		const struct ohc_algo *a =
			ohc_algo_override_find(spec, ops[i], &unknown);

		FZ_ASSERT(unknown == 0 || unknown == 1);
		if (a)
			FZ_ASSERT(a->op == ops[i]);
	}
}

static void check_ifname(const char *spec)
{
	static const char *const names[] = {"eth0",   "lo",  "docker0",
					    "enp1s0", "ib0", ""};
	struct bs_ifrule rule;

	if (bs_ifrule_parse(spec, &rule) != OHC_OK)
		return;
	FZ_ASSERT(rule.n <= BS_IFRULE_MAX);
	for (unsigned i = 0; i < rule.n; i++)
		FZ_ASSERT(memchr(rule.names[i], '\0', sizeof(rule.names[i])));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int m = bs_ifrule_match(&rule, names[i]);

		FZ_ASSERT(m == 0 || m == 1);
	}
}

static void check_ports(const char *spec)
{
	struct bs_ports p;

	if (bs_ports_parse(spec, &p) != OHC_OK)
		return;
	FZ_ASSERT(p.n <= BS_PORT_RANGES_MAX);
	FZ_ASSERT(p.n || p.ephemeral);
	for (unsigned i = 0; i < p.n; i++)
		FZ_ASSERT(p.lo[i] <= p.hi[i]);
	FZ_ASSERT(memchr(p.desc, '\0', sizeof(p.desc)));
}

static void check_log(void)
{
	ohc_log_reload();
	/* levels nest: a level on for a subsystem means every more severe
	 * level is on for it too */
	for (int l = OHC_LOG_ERROR; l <= OHC_LOG_TRACE; l++)
		for (unsigned ss = 1; ss <= OHC_SS_MEM; ss <<= 1) {
			int on = ohc_log_enabled((enum ohc_log_level)l, ss);

			FZ_ASSERT(on == 0 || on == 1);
			if (on && l > OHC_LOG_ERROR)
				FZ_ASSERT(ohc_log_enabled(
					(enum ohc_log_level)(l - 1), ss));
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = fz_init(data, size);
	size_t row = fz_u8(&f) % ohc_config_count();
	struct ohc_config_var var;
	char *value = fz_str(&f, 0);
	const char *name, *set = value;
	ohc_status_t st;
	int is_log;

	FZ_ASSERT(ohc_config_get(row, &var) == OHC_OK);
	name = var.name;
	is_log = !strncmp(name, "OPENHCCL_DEBUG", 14);
	if (!strcmp(name, "OPENHCCL_BOOTSTRAP_SECRET_FILE")) {
		/* the file's content is what the library parses */
		FILE *fp = fopen(secret_path, "w");

		FZ_ASSERT(fp);
		if (size > 1)
			fwrite(data + 1, 1, size - 1, fp);
		fclose(fp);
		set = secret_path;
	}
	FZ_ASSERT(setenv(name, set, 1) == 0);

	FZ_ASSERT(ohc_config_get(row, &var) == OHC_OK);
	FZ_ASSERT(!strcmp(var.name, name));
	FZ_ASSERT(var.valid == 0 || var.valid == 1);
	if (!set[0])
		FZ_ASSERT(!var.value && var.valid);
	FZ_ASSERT(ohc_config_get(ohc_config_count(), &var) == OHC_ERR_INVALID);
	ohc_env_reload();
	st = ohc_env_status();
	FZ_ASSERT(ohc_config_get(row, &var) == OHC_OK);
	if (!is_log)
		FZ_ASSERT((st == OHC_OK) == (var.valid == 1));

	if (is_log)
		check_log();
	else if (!strcmp(name, "HCCL_ALGO"))
		check_algo(value);
	else if (!strcmp(name, "HCCL_SOCKET_IFNAME"))
		check_ifname(value);
	else if (!strcmp(name, "HCCL_HOST_SOCKET_PORT_RANGE"))
		check_ports(value);
	if (!strcmp(name, "HCCL_IF_IP")) {
		struct bs_addr a;

		if (bs_addr_from_ip(value, 1, &a) == OHC_OK)
			FZ_ASSERT(bs_addr_family(&a) == AF_INET ||
				  bs_addr_family(&a) == AF_INET6);
	}
	if (!strcmp(name, "OPENHCCL_HOSTID") && st == OHC_OK) {
		char id[OHC_HOSTID_MAX];

		if (ohc_hostid_get(id, sizeof(id)) == OHC_OK)
			FZ_ASSERT(id[0] && memchr(id, '\0', sizeof(id)));
	}
	if (!strncmp(name, "OPENHCCL_BOOTSTRAP_SECRET", 25) && st == OHC_OK) {
		struct bs_auth auth;

		if (bs_auth_init(42, &auth) == OHC_OK)
			FZ_ASSERT(auth.keyed == (set[0] != 0));
	}

	unsetenv(name);
	if (is_log)
		setenv("OPENHCCL_DEBUG", "NONE", 1);
	ohc_env_reload();
	FZ_ASSERT(ohc_env_status() == OHC_OK);
	free(value);
	return 0;
}
