/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HcclCommInitClusterInfo[Config] end to end: real rank-table files (1.0
 * and 1.2), real processes bootstrapping through rank 0's host_ip and
 * host_port, then an AllReduce over the communicator they built.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

#define NR 4

static char table_path[256];

/* port 0: no host_port (the root takes HCCL_IF_BASE_PORT or after). */
static void write_table_n(const char *version, int port, int nr)
{
	FILE *f;

	snprintf(table_path, sizeof(table_path), "/tmp/ohc_rt_%d.json",
		 (int)getpid());
	f = fopen(table_path, "w");
	cr_assert_not_null(f);
	fprintf(f,
		"{\n  \"status\": \"completed\",\n  \"version\": \"%s\",\n"
		"  \"server_count\": \"1\",\n  \"server_list\": [\n"
		"    { \"server_id\": \"node0\", \"host_ip\": \"127.0.0.1\",\n"
		"      \"device\": [\n",
		version);
	for (int r = 0; r < nr; r++) {
		fprintf(f,
			"        { \"device_id\": \"%d\", \"device_ip\": "
			"\"127.0.0.1\", ",
			r);
		if (port)
			fprintf(f, "\"host_port\": \"%d\", ", port + r);
		fprintf(f, "\"rank_id\": \"%d\" }%s\n", r,
			r + 1 < nr ? "," : "");
	}
	fprintf(f, "      ]\n    }\n  ]\n}\n");
	fclose(f);
}

static void write_table(const char *version, int port)
{
	write_table_n(version, port, NR);
}

static int rank_body(int rank, int nranks, void *arg)
{
	HcclCommConfig *cfg = arg;
	HcclComm comm;
	char name[128];
	int32_t v = rank + 1, sum = 0;
	uint32_t n = 0;
	HcclResult r;

	r = cfg ? HcclCommInitClusterInfoConfig(table_path, rank, cfg, &comm)
		: HcclCommInitClusterInfo(table_path, rank, &comm);
	if (r != HCCL_SUCCESS) {
		fprintf(stderr, "rank %d: init from rank table: %d\n", rank, r);
		return 1;
	}
	HcclGetRankSize(comm, &n);
	HcclGetCommName(comm, name);
	if (HcclAllReduce(&v, &sum, 1, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
			  comm, NULL) != HCCL_SUCCESS ||
	    sum != nranks * (nranks + 1) / 2 || n != (uint32_t)nranks ||
	    strcmp(name, cfg ? "from_table" : "hccl_world_group")) {
		fprintf(stderr, "rank %d: sum %d n %u name %s\n", rank, sum, n,
			name);
		return 1;
	}
	return HcclCommDestroy(comm) != HCCL_SUCCESS;
}

static int port_base(void)
{
	return 20000 + (int)(getpid() % 20000);
}

Test(ranktable_init, v10_four_processes, .timeout = 120)
{
	write_table("1.0", port_base());
	cr_assert_eq(ohc_test_fork_ranks(NR, rank_body, NULL, 100), 0);
	unlink(table_path);
}

Test(ranktable_init, v12_with_config, .timeout = 120)
{
	static HcclCommConfig cfg;

	HcclCommConfigInit(&cfg);
	snprintf(cfg.hcclCommName, sizeof(cfg.hcclCommName), "from_table");
	write_table("1.2", port_base());
	cr_assert_eq(ohc_test_fork_ranks(NR, rank_body, &cfg, 100), 0);
	unlink(table_path);
}

Test(ranktable_init, bad_rank_and_bad_file)
{
	HcclComm comm;
	FILE *f;

	write_table("1.0", port_base());
	cr_expect_eq(HcclCommInitClusterInfo(table_path, NR, &comm),
		     HCCL_E_PARA);
	f = fopen(table_path, "w");
	fprintf(f, "{ \"status\": \"completed\", \"version\": \"1.0\", ");
	fclose(f);
	cr_expect_eq(HcclCommInitClusterInfo(table_path, 0, &comm),
		     HCCL_E_PARA);
	unlink(table_path);
}

/* A listener that never accepts on the port the root would take. */
static int squat(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0,
		     "port %d: %s", port, strerror(errno));
	cr_assert_eq(listen(fd, 16), 0);
	return fd;
}

/*
 * Someone else holds the base port: the job still starts (it used to fail
 * with HCCL_E_UNAVAIL, even for a single rank); the root takes the next
 * free port and the ranks find it there.
 */
Test(ranktable_init, base_port_taken, .timeout = 120)
{
	char v[16];
	int fd, port = port_base();

	snprintf(v, sizeof(v), "%d", port);
	setenv("HCCL_IF_BASE_PORT", v, 1);
	fd = squat(port);
	write_table("1.0", 0);
	cr_expect_eq(ohc_test_fork_ranks(NR, rank_body, NULL, 100), 0);
	write_table_n("1.0", 0, 1);
	cr_expect_eq(ohc_test_fork_ranks(1, rank_body, NULL, 60), 0);
	close(fd);
	unlink(table_path);
	unsetenv("HCCL_IF_BASE_PORT");
}
