/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rank table loader: the sample files under test/data/ranktables parse to
 * the expected tables; every field broken in turn is refused with the
 * field path and its line:col; syntax, file and path errors; the locator
 * on its own, checked against jansson as an independent oracle.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/ranktable.h"
#include "util/log.h"

/* ---- helpers ---- */

/* test/data/ranktables/<name>, found from this file's absolute path. */
static const char *data_path(const char *name)
{
	static char buf[PATH_MAX];
	const char *slash = strrchr(__FILE__, '/');

	cr_assert(__FILE__[0] == '/' && slash, "__FILE__ is not absolute: %s",
		  __FILE__);
	snprintf(buf, sizeof(buf), "%.*s/../data/ranktables/%s",
		 (int)(slash - __FILE__), __FILE__, name);
	return buf;
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert(f, "cannot open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	cr_assert(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static char *read_data(const char *name)
{
	return read_all(data_path(name));
}

/* Write len bytes to a fresh temp file; path into path[64]. */
static void write_temp(const char *text, size_t len, char path[64])
{
	int fd;

	snprintf(path, 64, "/tmp/ohc_rt_test_XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
}

/* Copy of text with the nth (0-based) occurrence of find replaced. */
static char *replace(const char *text, const char *find, int nth,
		     const char *repl, size_t *at_p)
{
	const char *p = text;
	size_t fl = strlen(find), rl = strlen(repl), tl = strlen(text);
	char *out;

	for (int i = 0;; i++) {
		p = strstr(p, find);
		cr_assert(p, "'%s' (occurrence %d) not in the base text", find,
			  nth);
		if (i == nth)
			break;
		p++;
	}
	out = malloc(tl - fl + rl + 1);
	cr_assert(out);
	memcpy(out, text, (size_t)(p - text));
	memcpy(out + (p - text), repl, rl);
	strcpy(out + (p - text) + rl, p + fl);
	*at_p = (size_t)(p - text);
	return out;
}

/* Independent oracle: 1-based line:col of byte offset off (ASCII text). */
static void offset_to_line_col(const char *text, size_t off, int *line,
			       int *col)
{
	const char *nl = text, *q;

	*line = 1;
	for (q = text; q < text + off; q++)
		if (*q == '\n') {
			(*line)++;
			nl = q + 1;
		}
	*col = (int)(text + off - nl) + 1;
}

/* Byte offset of line:col in ASCII text (inverse of the above). */
static size_t line_col_to_offset(const char *text, int line, int col)
{
	const char *q = text;

	for (int l = 1; l < line; l++) {
		q = strchr(q, '\n');
		cr_assert(q, "line %d beyond the text", line);
		q++;
	}
	return (size_t)(q - text) + (size_t)(col - 1);
}

/* Load text from a temp file; returns the status, table freed. */
static ohc_status_t load_text(const char *text, size_t len, char path_out[64])
{
	struct ohc_ranktable *rt = NULL;
	char path[64];
	ohc_status_t st;

	write_temp(text, len, path);
	st = ohc_ranktable_load(path, &rt);
	if (st == OHC_OK)
		ohc_ranktable_free(rt);
	if (path_out)
		strcpy(path_out, path);
	unlink(path);
	return st;
}

/* The "<line>:<col>: " of the last error, after the temp path. */
static void last_error_pos(const char *path, int *line, int *col)
{
	const char *e = ohc_ranktable_last_error();
	const char *p = strstr(e, path);

	*line = *col = -1;
	cr_assert(p, "error text lacks the path: %s", e);
	cr_assert_eq(sscanf(p + strlen(path), ":%d:%d:", line, col), 2,
		     "no line:col in: %s", e);
}

static void silence_log(void)
{
	setenv("OPENHCCL_DEBUG", "NONE", 1);
	ohc_log_reload();
}

/* ---- valid files ---- */

Test(ranktable, v10_two_servers)
{
	struct ohc_ranktable *rt = NULL;
	static const char *ips[] = {"192.168.10.1", "192.168.10.2",
				    "192.168.20.1", "192.168.20.2"};

	cr_assert_eq(ohc_ranktable_load(data_path("v10_two_servers.json"), &rt),
		     OHC_OK, "%s", ohc_ranktable_last_error());
	cr_expect_str_empty(ohc_ranktable_last_error());
	cr_expect_eq(rt->version, 10);
	cr_assert_eq(rt->nranks, 4);
	cr_assert_eq(rt->nservers, 2);
	cr_expect_eq(rt->nsuper_pods, 0);
	cr_expect_str_eq(rt->servers[0].server_id, "10.0.0.11");
	cr_expect_str_eq(rt->servers[0].host_ip, "10.0.0.11");
	cr_expect_str_eq(rt->servers[1].server_id, "10.0.0.12");
	cr_expect_str_eq(rt->servers[1].host_ip, "10.0.0.12");
	for (uint32_t s = 0; s < 2; s++) {
		cr_expect_eq(rt->servers[s].first_rank, 2 * s);
		cr_expect_eq(rt->servers[s].nranks, 2);
		cr_expect_str_empty(rt->servers[s].super_pod_id);
	}
	for (uint32_t r = 0; r < 4; r++) {
		const struct ohc_rt_rank *k = &rt->ranks[r];

		cr_expect_eq(k->rank_id, r);
		cr_expect_eq(k->device_id, r % 2);
		cr_expect_eq(k->server_index, r / 2);
		cr_expect_eq(k->local_index, r % 2);
		cr_expect_str_eq(k->device_ip, ips[r]);
		cr_expect_eq(k->device_port, 16666);
		cr_expect_eq(k->super_device_id, -1);
		cr_expect_str_empty(k->backup_device_ip);
		cr_expect_eq(k->backup_device_port, -1);
		cr_expect_eq(k->host_port, -1);
	}
	ohc_ranktable_free(rt);
}

Test(ranktable, v12_superpod)
{
	struct ohc_ranktable *rt = NULL;
	const struct ohc_rt_rank *k;

	cr_assert_eq(ohc_ranktable_load(data_path("v12_superpod.json"), &rt),
		     OHC_OK, "%s", ohc_ranktable_last_error());
	cr_expect_eq(rt->version, 12);
	cr_assert_eq(rt->nranks, 4);
	cr_assert_eq(rt->nservers, 2);
	cr_expect_eq(rt->nsuper_pods, 1);
	cr_expect_str_eq(rt->servers[0].server_id, "node_0");
	cr_expect_str_eq(rt->servers[0].host_ip, "172.16.0.10");
	cr_expect_str_eq(rt->servers[1].server_id, "node_1");
	cr_expect_str_eq(rt->servers[1].host_ip, "172.16.0.11");
	cr_expect_str_eq(rt->servers[0].super_pod_id, "0");
	cr_expect_str_eq(rt->servers[1].super_pod_id, "0");
	for (uint32_t r = 0; r < 4; r++) {
		cr_expect_eq(rt->ranks[r].rank_id, r);
		cr_expect_eq(rt->ranks[r].super_device_id, (int32_t)r);
		cr_expect_eq(rt->ranks[r].device_port, 16666);
	}
	k = &rt->ranks[0];
	cr_expect_str_eq(k->device_ip, "192.168.1.6");
	cr_expect_str_eq(k->backup_device_ip, "192.168.1.7");
	cr_expect_eq(k->backup_device_port, 16667);
	cr_expect_eq(k->host_port, 16665);
	k = &rt->ranks[1];
	cr_expect_str_eq(k->backup_device_ip, "192.168.1.6");
	cr_expect_eq(k->host_port, 16666);
	k = &rt->ranks[3];
	cr_expect_str_eq(k->device_ip, "192.168.2.7");
	cr_expect_str_empty(k->backup_device_ip);
	cr_expect_eq(k->backup_device_port, -1);
	cr_expect_eq(k->host_port, -1);
	cr_expect_eq(k->server_index, 1);
	ohc_ranktable_free(rt);
}

Test(ranktable, single_server_without_device_ip)
{
	struct ohc_ranktable *rt = NULL;

	cr_assert_eq(
		ohc_ranktable_load(data_path("v10_single_server.json"), &rt),
		OHC_OK, "%s", ohc_ranktable_last_error());
	cr_assert_eq(rt->nranks, 4);
	cr_assert_eq(rt->nservers, 1);
	cr_expect_str_eq(rt->servers[0].server_id, "localhost");
	cr_expect_str_empty(rt->servers[0].host_ip);
	for (uint32_t r = 0; r < 4; r++) {
		cr_expect_eq(rt->ranks[r].device_id, r);
		cr_expect_str_empty(rt->ranks[r].device_ip);
		cr_expect_eq(rt->ranks[r].device_port, -1);
		cr_expect_eq(rt->ranks[r].server_index, 0);
	}
	ohc_ranktable_free(rt);
}

/* Ranks unsorted within and across servers, keys in any order, unknown
 * keys of every type, IPv6 addresses. */
Test(ranktable, unsorted_ranks_are_sorted)
{
	struct ohc_ranktable *rt = NULL;
	static const uint32_t dev_of_rank[] = {0, 7, 1, 0, 1, 2};
	static const char *ip_of_rank[] = {"10.1.0.1",	"10.1.0.8",
					   "10.1.0.2",	"fd00::2:0",
					   "fd00::2:1", "fd00::2:2"};

	cr_assert_eq(ohc_ranktable_load(data_path("v10_unsorted.json"), &rt),
		     OHC_OK, "%s", ohc_ranktable_last_error());
	cr_assert_eq(rt->nranks, 6);
	cr_assert_eq(rt->nservers, 2);
	/* servers stay in file order; node-b holds ranks 3..5 */
	cr_expect_str_eq(rt->servers[0].server_id, "node-b");
	cr_expect_eq(rt->servers[0].first_rank, 3);
	cr_expect_eq(rt->servers[0].nranks, 3);
	cr_expect_str_eq(rt->servers[1].server_id, "node-a");
	cr_expect_str_eq(rt->servers[1].host_ip, "::1");
	cr_expect_eq(rt->servers[1].first_rank, 0);
	cr_expect_eq(rt->servers[1].nranks, 3);
	for (uint32_t r = 0; r < 6; r++) {
		const struct ohc_rt_rank *k = &rt->ranks[r];

		cr_expect_eq(k->rank_id, r);
		cr_expect_eq(k->device_id, dev_of_rank[r]);
		cr_expect_str_eq(k->device_ip, ip_of_rank[r]);
		cr_expect_eq(k->server_index, r < 3 ? 1u : 0u);
		cr_expect_eq(k->local_index, r % 3);
		cr_expect_eq(k->device_port, r < 3 ? -1 : 17000 + (int)r - 3);
	}
	ohc_ranktable_free(rt);
}

/* Variants that must be accepted. */
Test(ranktable, accepted_variants)
{
	static const struct {
		const char *base, *find, *repl;
	} ok[] = {
		/* server_count is optional in 1.2 */
		{"v12_superpod.json", "\"server_count\": \"2\",", ""},
		/* super_pod_list is optional, and may be empty */
		{"v12_superpod.json", "\"super_pod_list\"", "\"x\""},
		{"v12_superpod.json",
		 "{ \"super_pod_id\": \"0\", \"server_list\": [ { "
		 "\"server_id\": \"node_0\" }, { \"server_id\": \"node_1\" } "
		 "] }",
		 ""},
		/* a server_id of exactly 64 characters */
		{"v10_two_servers.json", "\"server_id\": \"10.0.0.12\"",
		 "\"server_id\": \"0123456789012345678901234567890123456789"
		 "012345678901234567890123\""},
		/* IPv6 host_ip and device_ip; ports at the range ends */
		{"v10_two_servers.json", "\"host_ip\": \"10.0.0.12\"",
		 "\"host_ip\": \"2001:db8::12\""},
		{"v10_two_servers.json", "\"192.168.20.2\"",
		 "\"::ffff:192.168.20.2\""},
		{"v10_two_servers.json",
		 "\"192.168.20.1\", \"device_port\": \"16666\"",
		 "\"192.168.20.1\", \"device_port\": \"65535\""},
		{"v10_two_servers.json",
		 "\"192.168.20.1\", \"device_port\": \"16666\"",
		 "\"192.168.20.1\", \"device_port\": \"1\""},
		/* in 1.0, super_device_id and super_pod_list are ignored */
		{"v10_two_servers.json", "\"rank_id\": \"3\"",
		 "\"rank_id\": \"3\", \"super_device_id\": \"junk\""},
		{"v10_two_servers.json", "\"server_list\"",
		 "\"super_pod_list\": 7, \"server_list\""},
		/* leading zeros are still decimal */
		{"v10_two_servers.json", "\"rank_id\": \"3\"",
		 "\"rank_id\": \"003\""},
		/* an escaped key is the same key */
		{"v10_two_servers.json", "\"rank_id\": \"3\"",
		 "\"rank\\u005fid\": \"3\""},
	};

	for (size_t i = 0; i < OHC_ARRAY_SIZE(ok); i++) {
		char *base = read_data(ok[i].base), *text;
		size_t at;

		text = replace(base, ok[i].find, 0, ok[i].repl, &at);
		cr_expect_eq(load_text(text, strlen(text), NULL), OHC_OK,
			     "variant %zu refused: %s", i,
			     ohc_ranktable_last_error());
		free(text);
		free(base);
	}
}

Test(ranktable, content_hash)
{
	struct ohc_ranktable *a = NULL, *b = NULL, *c = NULL;
	char *text = read_data("v10_two_servers.json");
	char p1[64], p2[64];

	write_temp(text, strlen(text), p1);
	text[strlen(text) - 1] = ' '; /* last newline -> blank */
	write_temp(text, strlen(text), p2);
	cr_assert_eq(ohc_ranktable_load(data_path("v10_two_servers.json"), &a),
		     OHC_OK);
	cr_assert_eq(ohc_ranktable_load(p1, &b), OHC_OK);
	cr_assert_eq(ohc_ranktable_load(p2, &c), OHC_OK);
	cr_expect_eq(a->content_hash, b->content_hash,
		     "same bytes at another path must hash the same");
	cr_expect_neq(a->content_hash, c->content_hash,
		      "one byte changed must change the hash");
	cr_expect_neq(a->content_hash, 0);
	ohc_ranktable_free(a);
	ohc_ranktable_free(b);
	ohc_ranktable_free(c);
	unlink(p1);
	unlink(p2);
	free(text);
}

/* ---- every field broken in turn ---- */

/*
 * base: a sample file name to apply find -> repl (and find2 -> repl2) to,
 * or, when find is NULL, the whole document inline.
 * Expected position: line/col when line > 0; else the first occurrence of
 * mark in the final text when mark is set; else the replacement start
 * plus at.
 */
struct bad_case {
	const char *base, *find, *repl;
	const char *find2, *repl2;
	const char *field, *what;
	int line, col;
	const char *mark;
	int at;
};

#define V10 "v10_two_servers.json"
#define V12 "v12_superpod.json"
#define TOP10 "{\"status\": \"completed\", \"version\": \"1.0\", "
#define TOP12 "{\"status\": \"completed\", \"version\": \"1.2\", "

static const struct bad_case bad_cases[] = {
	/* status */
	{V10, "\"status\": \"completed\",", "", .field = "status",
	 .what = "missing", .line = 1, .col = 1},
	{V10, "\"completed\"", "1", .field = "status",
	 .what = "must be a string, not a number"},
	{V10, "\"completed\"", "null", .field = "status",
	 .what = "must be a string, not null"},
	{V10, "\"completed\"", "\"initializing\"", .field = "status",
	 .what = "is not \"completed\"", .line = 2, .col = 13},
	/* version */
	{V10, "\"version\": \"1.0\",", "", .field = "version",
	 .what = "missing", .line = 1, .col = 1},
	{V10, "\"1.0\"", "\"2.0\"", .field = "version",
	 .what = "not a supported version", .line = 3, .col = 14},
	{V10, "\"1.0\"", "1.0", .field = "version",
	 .what = "must be a string, not a number"},
	{V12, "\"1.2\"", "\"1.1\"", .field = "version",
	 .what = "not a supported version"},
	/* server_count */
	{V10, "\"server_count\": \"2\",", "", .field = "server_count",
	 .what = "missing", .line = 1, .col = 1},
	{V10, "\"server_count\": \"2\"", "\"server_count\": \"3\"",
	 .field = "server_count", .what = "does not match server_list",
	 .line = 4, .col = 19},
	{V10, "\"server_count\": \"2\"", "\"server_count\": \"two\"",
	 .field = "server_count", .what = "not a decimal integer", .at = 16},
	{V10, "\"server_count\": \"2\"", "\"server_count\": \"-2\"",
	 .field = "server_count", .what = "not a decimal integer", .at = 16},
	{V10, "\"server_count\": \"2\"", "\"server_count\": 2",
	 .field = "server_count", .what = "must be a string", .at = 16},
	{V12, "\"server_count\": \"2\"", "\"server_count\": \"1\"",
	 .field = "server_count", .what = "does not match", .line = 4,
	 .col = 19},
	{TOP10 "\"server_count\": \"0\", \"server_list\": []}",
	 .field = "server_count", .what = "not a decimal integer",
	 .mark = "\"0\""},
	/* server_list */
	{V10, "\"server_list\"", "\"servers\"", .field = "server_list",
	 .what = "missing", .line = 1, .col = 1},
	{TOP10 "\"server_count\": \"1\", \"server_list\": {}}",
	 .field = "server_list", .what = "must be an array, not an object",
	 .mark = "{}"},
	{TOP12 "\"server_list\": []}", .field = "server_list",
	 .what = "must not be empty", .mark = "[]"},
	{TOP12 "\"server_list\": [\"s\"]}", .field = "server_list[0]",
	 .what = "must be an object, not a string", .mark = "\"s\""},
	/* server_id */
	{V10, "\"server_id\": \"10.0.0.12\",", "",
	 .field = "server_list[1].server_id", .what = "missing", .line = 14,
	 .col = 5},
	{V10, "\"server_id\": \"10.0.0.12\"", "\"server_id\": \"10.0.0.11\"",
	 .field = "server_list[1].server_id",
	 .what = "also the server_id of server_list[0]", .line = 15, .col = 20},
	{V10, "\"server_id\": \"10.0.0.12\"", "\"server_id\": \"\"",
	 .field = "server_list[1].server_id", .what = "must not be empty",
	 .at = 13},
	{V10, "\"server_id\": \"10.0.0.12\"",
	 "\"server_id\": \"0123456789012345678901234567890123456789"
	 "0123456789012345678901234\"",
	 .field = "server_list[1].server_id", .what = "at most 64", .at = 13},
	{V10, "\"server_id\": \"10.0.0.11\"", "\"server_id\": 11",
	 .field = "server_list[0].server_id",
	 .what = "must be a string, not a number", .line = 7, .col = 20},
	/* host_ip */
	{V10, "\"host_ip\": \"10.0.0.12\"", "\"host_ip\": \"10.0.0.300\"",
	 .field = "server_list[1].host_ip",
	 .what = "not an IPv4 or IPv6 address", .line = 16, .col = 18},
	{V10, "\"host_ip\": \"10.0.0.12\"", "\"host_ip\": \"\"",
	 .field = "server_list[1].host_ip", .what = "not an IPv4", .at = 11},
	{V10, "\"host_ip\": \"10.0.0.12\"", "\"host_ip\": [\"10.0.0.12\"]",
	 .field = "server_list[1].host_ip",
	 .what = "must be a string, not an array", .at = 11},
	/* device list */
	{V10, "\"device\": [", "\"devices\": [",
	 .field = "server_list[0].device", .what = "missing", .line = 6,
	 .col = 5},
	{TOP10 "\"server_count\": \"1\", \"server_list\": [{\"server_id\": "
	       "\"a\", \"device\": {}}]}",
	 .field = "server_list[0].device", .what = "must be an array",
	 .mark = "{}"},
	{TOP10 "\"server_count\": \"1\", \"server_list\": [{\"server_id\": "
	       "\"a\", \"device\": []}]}",
	 .field = "server_list[0].device", .what = "must not be empty",
	 .mark = "[]"},
	{TOP10 "\"server_count\": \"1\", \"server_list\": [{\"server_id\": "
	       "\"a\", \"device\": [{\"device_id\": \"0\", \"rank_id\": "
	       "\"0\"}, 7]}]}",
	 .field = "server_list[0].device[1]",
	 .what = "must be an object, not a number", .mark = "7"},
	/* device_id */
	{V10, "{ \"device_id\": \"1\", \"device_ip\": \"192.168.20.2\"",
	 "{ \"device_ip\": \"192.168.20.2\"",
	 .field = "server_list[1].device[1].device_id", .what = "missing",
	 .line = 19, .col = 9},
	{V10, "{ \"device_id\": \"1\", \"device_ip\": \"192.168.20.2\"",
	 "{ \"device_id\": \"x\", \"device_ip\": \"192.168.20.2\"",
	 .field = "server_list[1].device[1].device_id",
	 .what = "not a decimal integer", .line = 19, .col = 24},
	{V10, "{ \"device_id\": \"1\", \"device_ip\": \"192.168.20.2\"",
	 "{ \"device_id\": \"-1\", \"device_ip\": \"192.168.20.2\"",
	 .field = "server_list[1].device[1].device_id",
	 .what = "not a decimal integer", .at = 15},
	{V10, "{ \"device_id\": \"1\", \"device_ip\": \"192.168.20.2\"",
	 "{ \"device_id\": \" 1\", \"device_ip\": \"192.168.20.2\"",
	 .field = "server_list[1].device[1].device_id",
	 .what = "not a decimal integer", .at = 15},
	{V10, "{ \"device_id\": \"1\", \"device_ip\": \"192.168.20.2\"",
	 "{ \"device_id\": \"99999999999\", \"device_ip\": \"192.168.20.2\"",
	 .field = "server_list[1].device[1].device_id",
	 .what = "not a decimal integer", .at = 15},
	{V10, "{ \"device_id\": \"1\", \"device_ip\": \"192.168.20.2\"",
	 "{ \"device_id\": 1, \"device_ip\": \"192.168.20.2\"",
	 .field = "server_list[1].device[1].device_id",
	 .what = "must be a string, not a number", .at = 15},
	/* device_ip */
	{V10, "\"192.168.20.1\"", "\"192.168.20.256\"",
	 .field = "server_list[1].device[0].device_ip",
	 .what = "not an IPv4 or IPv6 address", .line = 18, .col = 42},
	{V10, "\"192.168.20.1\"", "\"fe80::1%eth0\"",
	 .field = "server_list[1].device[0].device_ip",
	 .what = "not an IPv4 or IPv6 address"},
	{V10, "\"192.168.20.1\"", "\"192.168.20\"",
	 .field = "server_list[1].device[0].device_ip",
	 .what = "not an IPv4 or IPv6 address"},
	{V10, "\"192.168.20.1\"", "true",
	 .field = "server_list[1].device[0].device_ip",
	 .what = "must be a string, not a boolean"},
	{V10, "\"device_ip\": \"192.168.10.2\", ", "",
	 .field = "server_list[0].device[1].device_ip",
	 .what = "required when there are several servers", .line = 11,
	 .col = 9},
	/* no device_ip at all: still required with several servers */
	{TOP10 "\"server_count\": \"2\", \"server_list\": [{\"server_id\": "
	       "\"a\", \"host_ip\": \"10.0.0.1\", \"device\": [{\"device_id\":"
	       " \"0\", \"rank_id\": \"0\"}]}, {\"server_id\": \"b\", "
	       "\"host_ip\": \"10.0.0.2\", \"device\": [{\"device_id\": \"0\","
	       " \"rank_id\": \"1\"}]}]}",
	 .field = "server_list[0].device[0].device_ip",
	 .what = "required when there are several servers",
	 .mark = "{\"device_id\""},
	/* one server: all devices have a device_ip or none */
	{TOP10 "\"server_count\": \"1\", \"server_list\": [{\"server_id\": "
	       "\"a\", \"device\": [{\"device_id\": \"0\", \"rank_id\": \"0\"},"
	       " {\"device_id\": \"1\", \"rank_id\": \"1\", \"device_ip\": "
	       "\"10.0.0.1\"}]}]}",
	 .field = "server_list[0].device[1].device_ip",
	 .what = "present, but server_list[0].device[0] has none",
	 .mark = "\"10.0.0.1\""},
	{TOP10 "\"server_count\": \"1\", \"server_list\": [{\"server_id\": "
	       "\"a\", \"device\": [{\"device_id\": \"0\", \"rank_id\": \"0\","
	       " \"device_ip\": \"10.0.0.1\"}, {\"device_id\": \"1\", "
	       "\"rank_id\": \"1\"}]}]}",
	 .field = "server_list[0].device[1].device_ip",
	 .what = "missing, but server_list[0].device[0] has one",
	 .mark = "{\"device_id\": \"1\""},
	/* ports */
	{V10, "\"192.168.20.1\", \"device_port\": \"16666\"",
	 "\"192.168.20.1\", \"device_port\": \"0\"",
	 .field = "server_list[1].device[0].device_port",
	 .what = "not a decimal integer in [1, 65535]", .line = 18, .col = 73},
	{V10, "\"192.168.20.1\", \"device_port\": \"16666\"",
	 "\"192.168.20.1\", \"device_port\": \"65536\"",
	 .field = "server_list[1].device[0].device_port",
	 .what = "in [1, 65535]", .at = 31},
	{V10, "\"192.168.20.1\", \"device_port\": \"16666\"",
	 "\"192.168.20.1\", \"device_port\": \"16666 \"",
	 .field = "server_list[1].device[0].device_port",
	 .what = "not a decimal integer", .at = 31},
	{V10, "\"192.168.20.1\", \"device_port\": \"16666\"",
	 "\"192.168.20.1\", \"device_port\": \"\"",
	 .field = "server_list[1].device[0].device_port",
	 .what = "not a decimal integer", .at = 31},
	{V10, "\"192.168.20.1\", \"device_port\": \"16666\"",
	 "\"192.168.20.1\", \"device_port\": 16666",
	 .field = "server_list[1].device[0].device_port",
	 .what = "must be a string, not a number", .at = 31},
	{V10, "\"rank_id\": \"3\" }",
	 "\"rank_id\": \"3\", \"host_port\": \"0\" }",
	 .field = "server_list[1].device[1].host_port", .what = "in [1, 65535]",
	 .at = 29},
	{V10, "\"rank_id\": \"3\" }",
	 "\"rank_id\": \"3\", \"host_port\": \"abc\" }",
	 .field = "server_list[1].device[1].host_port",
	 .what = "not a decimal integer", .at = 29},
	{V10, "\"rank_id\": \"0\" }",
	 "\"rank_id\": \"0\", \"host_port\": \"7\" }", "\"rank_id\": \"1\" }",
	 "\"rank_id\": \"1\", \"host_port\": \"7\" }",
	 .field = "server_list[0].device[1].host_port",
	 .what = "also the host_port of server_list[0].device[0]", .line = 11,
	 .col = 111},
	{V12, "\"host_port\": \"16666\"", "\"host_port\": \"16665\"",
	 .field = "server_list[0].device[1].host_port",
	 .what = "also the host_port of server_list[0].device[0]", .at = 13},
	{V12, "\"backup_device_port\": \"16667\", \"host_port\": \"16666\"",
	 "\"backup_device_port\": \"70000\", \"host_port\": \"16666\"",
	 .field = "server_list[0].device[1].backup_device_port",
	 .what = "in [1, 65535]", .line = 11, .col = 68},
	{V12, "\"backup_device_ip\": \"192.168.1.6\"",
	 "\"backup_device_ip\": \"192.168.1\"",
	 .field = "server_list[0].device[1].backup_device_ip",
	 .what = "not an IPv4 or IPv6 address", .line = 11, .col = 31},
	{V10, "\"rank_id\": \"3\" }",
	 "\"rank_id\": \"3\", \"backup_device_ip\": \"x\" }",
	 .field = "server_list[1].device[1].backup_device_ip",
	 .what = "not an IPv4", .at = 36},
	/* rank_id */
	{V10, ", \"rank_id\": \"2\" }", " }",
	 .field = "server_list[1].device[0].rank_id", .what = "missing",
	 .line = 18, .col = 9},
	{V10, "\"rank_id\": \"0\"", "\"rank_id\": \"x\"",
	 .field = "server_list[0].device[0].rank_id",
	 .what = "not a decimal integer", .line = 10, .col = 93},
	{V10, "\"rank_id\": \"0\"", "\"rank_id\": \"-1\"",
	 .field = "server_list[0].device[0].rank_id",
	 .what = "not a decimal integer", .line = 10, .col = 93},
	{V10, "\"rank_id\": \"0\"", "\"rank_id\": 0",
	 .field = "server_list[0].device[0].rank_id",
	 .what = "must be a string, not a number", .line = 10, .col = 93},
	{V10, "\"rank_id\": \"1\"", "\"rank_id\": \"0\"",
	 .field = "server_list[0].device[1].rank_id",
	 .what = "also the rank_id of server_list[0].device[0]", .line = 11,
	 .col = 93},
	{V10, "\"rank_id\": \"3\"", "\"rank_id\": \"4\"",
	 .field = "server_list[1].device[1].rank_id", .what = "out of range",
	 .line = 19, .col = 93},
	{V10, "\"rank_id\": \"3\"", "\"rank_id\": \"4294967295\"",
	 .field = "server_list[1].device[1].rank_id",
	 .what = "not a decimal integer", .at = 11},
	/* ranks 0,2 on the first server, 1,3 on the second: interleaved */
	{V10, "\"rank_id\": \"1\"", "\"rank_id\": \"2\"",
	 "\"192.168.20.1\", \"device_port\": \"16666\", \"rank_id\": \"2\"",
	 "\"192.168.20.1\", \"device_port\": \"16666\", \"rank_id\": \"1\"",
	 .field = "server_list[0].device[1].rank_id", .what = "interleave",
	 .line = 11, .col = 93},
	/* 1.2: super_device_id */
	{V12, "\"super_device_id\": \"2\"", "\"super_device_id\": \"x\"",
	 .field = "server_list[1].device[0].super_device_id",
	 .what = "not a decimal integer", .line = 14, .col = 48},
	{V12, "\"super_device_id\": \"2\"", "\"super_device_id\": 2",
	 .field = "server_list[1].device[0].super_device_id",
	 .what = "must be a string", .at = 19},
	/* 1.2: super_pod_list */
	{V12, "\"super_pod_list\"", "\"super_pod_list\": \"none\", \"x\"",
	 .field = "super_pod_list", .what = "must be an array, not a string",
	 .at = 18},
	{V12, "{ \"super_pod_id\": \"0\"", "5, { \"super_pod_id\": \"0\"",
	 .field = "super_pod_list[0]",
	 .what = "must be an object, not a number", .line = 18, .col = 5},
	{V12, "{ \"super_pod_id\": \"0\", \"server_list\"", "{ \"server_list\"",
	 .field = "super_pod_list[0].super_pod_id", .what = "missing",
	 .line = 18, .col = 5},
	{V12, "\"super_pod_id\": \"0\"", "\"super_pod_id\": \"\"",
	 .field = "super_pod_list[0].super_pod_id", .what = "must not be empty",
	 .at = 16},
	{V12, "\"super_pod_id\": \"0\"", "\"super_pod_id\": 0",
	 .field = "super_pod_list[0].super_pod_id", .what = "must be a string",
	 .at = 16},
	{V12, "\"node_1\" } ] }",
	 "\"node_1\" } ] },\n    "
	 "{ \"super_pod_id\": \"0\", \"server_list\": "
	 "[] }",
	 .field = "super_pod_list[1].super_pod_id",
	 .what = "also the super_pod_id of super_pod_list[0]", .line = 19,
	 .col = 23},
	{V12,
	 "[ { \"server_id\": \"node_0\" }, { \"server_id\": \"node_1\" } ]",
	 "[ ]", .field = "super_pod_list[0].server_list",
	 .what = "must not be empty", .line = 18, .col = 43},
	{V12, "{ \"server_id\": \"node_1\" } ]",
	 "{ \"server_id\": \"node_9\" } ]",
	 .field = "super_pod_list[0].server_list[1].server_id",
	 .what = "not a server_id of the top-level server_list", .at = 15},
	{V12, "{ \"server_id\": \"node_1\" } ]",
	 "{ \"server_id\": \"node_0\" } ]",
	 .field = "super_pod_list[0].server_list[1].server_id",
	 .what = "already listed in super_pod_list[0].server_list[0]",
	 .at = 15},
	{V12, "\"node_1\" } ] }",
	 "\"node_1\" } ] },\n    "
	 "{ \"super_pod_id\": \"1\", \"server_list\": "
	 "[ { \"server_id\": \"node_1\" } ] }",
	 .field = "super_pod_list[1].server_list[0].server_id",
	 .what = "already listed in super_pod_list[0].server_list[1]",
	 .line = 19, .col = 60},
	{V12, "{ \"server_id\": \"node_0\" },", "\"node_0\",",
	 .field = "super_pod_list[0].server_list[0]",
	 .what = "must be an object, not a string", .at = 0},
	{V12, "{ \"server_id\": \"node_0\" },", "{ \"id\": \"node_0\" },",
	 .field = "super_pod_list[0].server_list[0].server_id",
	 .what = "missing", .at = 0},
	/* pod "p" holds servers a and c, but b sits between them */
	{TOP12 "\"server_list\": [{\"server_id\": \"a\", \"device\": "
	       "[{\"device_id\": \"0\", \"rank_id\": \"0\", \"device_ip\": "
	       "\"10.0.0.1\"}]}, {\"server_id\": \"b\", \"device\": "
	       "[{\"device_id\": \"0\", \"rank_id\": \"1\", \"device_ip\": "
	       "\"10.0.0.2\"}]}, {\"server_id\": \"c\", \"device\": "
	       "[{\"device_id\": \"0\", \"rank_id\": \"2\", \"device_ip\": "
	       "\"10.0.0.3\"}]}], \"super_pod_list\": [{\"super_pod_id\": "
	       "\"p\", \"server_list\": [{\"server_id\": \"a\"}, "
	       "{\"server_id\": \"c\"}]}, {\"super_pod_id\": \"q\", "
	       "\"server_list\": [{\"server_id\": \"b\"}]}]}",
	 .field = "super_pod_list[0].server_list[1].server_id",
	 .what = "listed contiguously", .mark = "\"c\"}]}"},
	/* the document itself */
	{"[1, 2]", .field = "", .what = "(top level): must be a JSON object",
	 .line = 1, .col = 1},
	{"  \n\n  [ ]", .field = "",
	 .what = "(top level): must be a JSON "
		 "object, not an array",
	 .line = 3, .col = 3},
};

static void check_bad_case(size_t i, const struct bad_case *c)
{
	char *base = NULL, *t1, *text, path[64], needle[256];
	int line, col, eline, ecol;
	const char *err;
	size_t at = 0, at2;

	if (c->find) {
		base = read_data(c->base);
		t1 = replace(base, c->find, 0, c->repl, &at);
		if (c->find2) {
			text = replace(t1, c->find2, 0, c->repl2, &at2);
			free(t1);
		} else {
			text = t1;
		}
	} else {
		text = strdup(c->base);
	}
	cr_expect_eq(load_text(text, strlen(text), path), OHC_ERR_INVALID,
		     "case %zu (%s): not refused", i, c->field);
	err = ohc_ranktable_last_error();
	snprintf(needle, sizeof(needle),
		 ": %s: ", *c->field ? c->field : "(top level)");
	cr_expect(strstr(err, needle), "case %zu: no '%s' in: %s", i, needle,
		  err);
	cr_expect(strstr(err, c->what), "case %zu: no '%s' in: %s", i, c->what,
		  err);
	if (c->line > 0) {
		eline = c->line;
		ecol = c->col;
	} else if (c->mark) {
		const char *m = strstr(text, c->mark);

		cr_assert(m, "case %zu: mark not found", i);
		offset_to_line_col(text, (size_t)(m - text), &eline, &ecol);
	} else {
		offset_to_line_col(text, at + (size_t)c->at, &eline, &ecol);
	}
	last_error_pos(path, &line, &col);
	cr_expect(line == eline && col == ecol,
		  "case %zu (%s): at %d:%d, expected %d:%d: %s", i, c->field,
		  line, col, eline, ecol, err);
	free(text);
	free(base);
}

Test(ranktable, every_field_broken)
{
	for (size_t i = 0; i < OHC_ARRAY_SIZE(bad_cases); i++)
		check_bad_case(i, &bad_cases[i]);
}

/* The error is logged once, and *rt_p is left alone. */
Test(ranktable, error_logged_once_output_untouched)
{
	struct ohc_ranktable *rt = (struct ohc_ranktable *)0x1;
	char *base = read_data(V10), *text, path[64], logp[64], *log;
	int saved, fd, lines = 0;
	size_t at;

	text = replace(base, "\"rank_id\": \"3\"", 0, "\"rank_id\": \"9\"",
		       &at);
	write_temp(text, strlen(text), path);
	write_temp("", 0, logp);
	fflush(stderr);
	saved = dup(2);
	fd = open(logp, O_WRONLY | O_TRUNC);
	cr_assert(saved >= 0 && fd >= 0);
	dup2(fd, 2);
	close(fd);
	cr_expect_eq(ohc_ranktable_load(path, &rt), OHC_ERR_INVALID);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	cr_expect_eq(rt, (struct ohc_ranktable *)0x1);
	log = read_all(logp);
	for (char *p = log; *p; p++)
		lines += *p == '\n';
	cr_expect_eq(lines, 1, "log: %s", log);
	cr_expect(strstr(log, ohc_ranktable_last_error()),
		  "log lacks the error text: %s", log);
	cr_expect(strstr(log, "server_list[1].device[1].rank_id"));
	unlink(path);
	unlink(logp);
	free(log);
	free(text);
	free(base);
}

/* ---- syntax, file and path errors ---- */

Test(ranktable, syntax_errors)
{
	char *base = read_data(V10), *text, path[64];
	const char *err;
	int line, col;
	size_t at;

	/* a missing comma between two devices: jansson stops at the '{' */
	text = replace(base, "\"rank_id\": \"0\" },", 0, "\"rank_id\": \"0\" }",
		       &at);
	cr_expect_eq(load_text(text, strlen(text), path), OHC_ERR_INVALID);
	err = ohc_ranktable_last_error();
	cr_expect(strstr(err, ": json: "), "%s", err);
	last_error_pos(path, &line, &col);
	cr_expect(line == 11 && col == 9, "at %d:%d: %s", line, col, err);
	free(text);

	/* a duplicate key is refused (jansson's position: the key's end) */
	text = replace(base, "\"status\": \"completed\",", 0,
		       "\"status\": \"completed\", \"status\": \"completed\",",
		       &at);
	cr_expect_eq(load_text(text, strlen(text), path), OHC_ERR_INVALID);
	err = ohc_ranktable_last_error();
	cr_expect(strstr(err, ": json: ") && strstr(err, "duplicate"), "%s",
		  err);
	last_error_pos(path, &line, &col);
	cr_expect(line == 2 && col == 33, "at %d:%d: %s", line, col, err);
	free(text);

	/* truncated right after "device_port": on line 11 */
	text = strdup(base);
	at = (size_t)(strstr(text, "\"192.168.10.2\", \"device_port\":") -
		      text);
	text[at + strlen("\"192.168.10.2\", \"device_port\":")] = '\0';
	cr_expect_eq(load_text(text, strlen(text), path), OHC_ERR_INVALID);
	err = ohc_ranktable_last_error();
	cr_expect(strstr(err, ": json: ") && strstr(err, "end of file"), "%s",
		  err);
	last_error_pos(path, &line, &col);
	cr_expect(line == 11 && col == 71, "at %d:%d: %s", line, col, err);
	free(text);

	/* garbage after the document (jansson: the end of the token) */
	text = malloc(strlen(base) + 8);
	sprintf(text, "%sxyz", base);
	cr_expect_eq(load_text(text, strlen(text), path), OHC_ERR_INVALID);
	last_error_pos(path, &line, &col);
	cr_expect(line == 24 && col == 3, "at %d:%d: %s", line, col,
		  ohc_ranktable_last_error());
	free(text);

	/* a bare scalar, whitespace only, a NUL byte inside */
	cr_expect_eq(load_text("\"x\"", 3, path), OHC_ERR_INVALID);
	cr_expect(strstr(ohc_ranktable_last_error(), ": json: "));
	cr_expect_eq(load_text(" \n ", 3, path), OHC_ERR_INVALID);
	cr_expect(strstr(ohc_ranktable_last_error(), ": json: "));
	cr_expect_eq(load_text("{\"a\":\0}", 7, path), OHC_ERR_INVALID);
	cr_expect(strstr(ohc_ranktable_last_error(), ": json: "));
	free(base);
}

/* Every proper prefix of a valid file is refused, never accepted. */
Test(ranktable, every_truncation_refused)
{
	char *base = read_data(V12);
	size_t n = strlen(base);

	silence_log();
	cr_assert(n > 2 && base[n - 1] == '\n' && base[n - 2] == '}');
	for (size_t len = 0; len < n - 1; len++) {
		ohc_status_t st = load_text(base, len, NULL);

		cr_expect_eq(st, OHC_ERR_INVALID, "prefix of %zu bytes: %d",
			     len, st);
		if (st != OHC_ERR_INVALID)
			break;
	}
	cr_expect_eq(load_text(base, n - 1, NULL), OHC_OK);
	free(base);
}

Test(ranktable, empty_file)
{
	char path[64];
	int line, col;

	cr_expect_eq(load_text("", 0, path), OHC_ERR_INVALID);
	cr_expect(strstr(ohc_ranktable_last_error(), "file is empty"));
	last_error_pos(path, &line, &col);
	cr_expect(line == 1 && col == 1);
}

Test(ranktable, file_errors)
{
	struct ohc_ranktable *rt = (struct ohc_ranktable *)0x1;
	char dir[] = "/tmp/ohc_rt_dir_XXXXXX", big[64], *longp;
	int fd;

	cr_expect_eq(ohc_ranktable_load("/nonexistent/rank_table.json", &rt),
		     OHC_ERR_OPEN_FILE);
	cr_expect(strstr(ohc_ranktable_last_error(),
			 "/nonexistent/rank_table.json: cannot open: No such "
			 "file"),
		  "%s", ohc_ranktable_last_error());

	cr_assert(mkdtemp(dir));
	cr_expect_eq(ohc_ranktable_load(dir, &rt), OHC_ERR_OPEN_FILE);
	cr_expect(strstr(ohc_ranktable_last_error(), "is a directory"), "%s",
		  ohc_ranktable_last_error());
	rmdir(dir);

	/* a sparse file one byte over the limit is refused unread */
	write_temp("", 0, big);
	fd = open(big, O_WRONLY);
	cr_assert(fd >= 0);
	cr_assert_eq(ftruncate(fd, (off_t)OHC_RANKTABLE_MAX_BYTES + 1), 0);
	close(fd);
	cr_expect_eq(ohc_ranktable_load(big, &rt), OHC_ERR_INVALID);
	cr_expect(strstr(ohc_ranktable_last_error(), "larger than"), "%s",
		  ohc_ranktable_last_error());
	unlink(big);

	/* path length: 4096 bytes refused as such; 4095 goes to open() */
	longp = malloc(OHC_RANKTABLE_PATH_MAX + 1);
	memset(longp, 'a', OHC_RANKTABLE_PATH_MAX);
	longp[0] = '/';
	longp[OHC_RANKTABLE_PATH_MAX] = '\0';
	cr_expect_eq(ohc_ranktable_load(longp, &rt), OHC_ERR_INVALID);
	cr_expect(strstr(ohc_ranktable_last_error(), "path"));
	longp[OHC_RANKTABLE_PATH_MAX - 1] = '\0';
	cr_expect_eq(ohc_ranktable_load(longp, &rt), OHC_ERR_OPEN_FILE);
	free(longp);

	cr_expect_eq(ohc_ranktable_load(NULL, &rt), OHC_ERR_NULL);
	cr_expect_eq(ohc_ranktable_load(data_path(V10), NULL), OHC_ERR_NULL);
	cr_expect_eq(rt, (struct ohc_ranktable *)0x1);
	ohc_ranktable_free(NULL);
}

/*
 * Only regular files: a FIFO nobody writes to used to block the open
 * forever (ignoring HCCL_CONNECT_TIMEOUT); a FIFO, a pipe or a device is
 * now refused at once, naming what it is.
 */
Test(ranktable, special_files_refused, .timeout = 10)
{
	struct ohc_ranktable *rt = (struct ohc_ranktable *)0x1;
	char dir[] = "/tmp/ohc_rt_fifo_XXXXXX", fifo[64], path[64];
	int fds[2];

	cr_assert(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/table.json", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_expect_eq(ohc_ranktable_load(fifo, &rt), OHC_ERR_INVALID);
	cr_expect(strstr(ohc_ranktable_last_error(),
			 "is a FIFO, not a regular file"),
		  "%s", ohc_ranktable_last_error());
	unlink(fifo);
	rmdir(dir);

	cr_assert_eq(pipe(fds), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
	cr_expect_eq(ohc_ranktable_load(path, &rt), OHC_ERR_INVALID);
	close(fds[0]);
	close(fds[1]);

	cr_expect_eq(ohc_ranktable_load("/dev/null", &rt), OHC_ERR_INVALID);
	cr_expect(strstr(ohc_ranktable_last_error(), "is a device"), "%s",
		  ohc_ranktable_last_error());
	cr_expect_eq(rt, (struct ohc_ranktable *)0x1);
}

/* Unknown keys are ignored, as in HCCL, but each is warned about with
 * its line:col and the nearest known key. */
Test(ranktable, unknown_keys_warned)
{
	char *base = read_data(V10), *text, path[64], *log;
	struct ohc_ranktable *rt = NULL;
	int line, col, saved = dup(2), cap;
	char want[256], capture[] = "/tmp/ohc_rt_log_XXXXXX";
	size_t at, n;

	/* the second device's "device_port" misspelled */
	text = replace(base, "\"device_port\"", 1, "\"device_prot\"", &at);
	/* the position given is the key's value, as for field errors */
	offset_to_line_col(text, (size_t)(strchr(text + at, ':') + 2 - text),
			   &line, &col);
	setenv("OPENHCCL_DEBUG", "WARN", 1);
	ohc_log_reload();
	cap = mkstemp(capture);
	cr_assert(cap >= 0);
	fflush(stderr);
	dup2(cap, 2);
	write_temp(text, strlen(text), path);
	cr_expect_eq(ohc_ranktable_load(path, &rt), OHC_OK, "%s",
		     ohc_ranktable_last_error());
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = (size_t)lseek(cap, 0, SEEK_END);
	log = calloc(1, n + 1);
	cr_assert(log);
	cr_assert_eq(pread(cap, log, n, 0), (ssize_t)n);
	close(cap);
	unlink(capture);
	snprintf(want, sizeof(want),
		 "%s:%d:%d: server_list[0].device[1]: unknown key "
		 "\"device_prot\" ignored (did you mean \"device_port\"?)",
		 path, line, col);
	cr_expect(strstr(log, want), "log lacks '%s':\n%s", want, log);
	if (rt) {
		/* and the rank really has no device_port */
		cr_expect_eq(rt->ranks[1].device_port, -1);
		ohc_ranktable_free(rt);
	}
	unlink(path);
	free(log);
	free(text);
	free(base);
}

static int count_fds(void)
{
	char path[64];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

/* No descriptor is left open on any path, success or error. */
Test(ranktable, no_fd_leaks)
{
	struct ohc_ranktable *rt = NULL;
	char *base = read_data(V10), *text;
	int before = count_fds();
	size_t at;

	silence_log();
	cr_assert_eq(ohc_ranktable_load(data_path(V10), &rt), OHC_OK);
	ohc_ranktable_free(rt);
	cr_expect_eq(ohc_ranktable_load("/nonexistent", &rt),
		     OHC_ERR_OPEN_FILE);
	cr_expect_eq(ohc_ranktable_load("/tmp", &rt), OHC_ERR_OPEN_FILE);
	text = replace(base, "\"rank_id\": \"3\"", 0, "\"rank_id\": 3", &at);
	cr_expect_eq(load_text(text, strlen(text), NULL), OHC_ERR_INVALID);
	cr_expect_eq(load_text(base, strlen(base) / 2, NULL), OHC_ERR_INVALID);
	cr_expect_eq(count_fds(), before);
	free(text);
	free(base);
}

/* ---- the locator ---- */

static void expect_loc(const char *text, const char *field, ohc_status_t want,
		       int line, int col)
{
	/* an exact-size heap copy, so ASan sees any read past len */
	size_t n = strlen(text);
	char *buf = malloc(n ? n : 1);
	int l = -1, c = -1;
	ohc_status_t st;

	memcpy(buf, text, n);
	st = ohc_ranktable_locate(buf, n, field, &l, &c);
	cr_expect(st == want && l == line && c == col,
		  "locate '%s': got %d at %d:%d, expected %d at %d:%d", field,
		  st, l, c, want, line, col);
	free(buf);
}

Test(ranktable, locator_basics)
{
	const char *t = "{\n"
			"  \"a\": {\"b\": [10, {\"c\": \"x\"}, [1, [2]]]},\n"
			"  \"d\": \"},{]\\\"[\", \"e\": true\n"
			"}";

	expect_loc(t, "", OHC_OK, 1, 1);
	expect_loc(t, "a", OHC_OK, 2, 8);
	expect_loc(t, "a.b", OHC_OK, 2, 14);
	expect_loc(t, "a.b[0]", OHC_OK, 2, 15);
	expect_loc(t, "a.b[1]", OHC_OK, 2, 19);
	expect_loc(t, "a.b[1].c", OHC_OK, 2, 25);
	expect_loc(t, "a.b[2]", OHC_OK, 2, 31);
	expect_loc(t, "a.b[2][1][0]", OHC_OK, 2, 36);
	/* the value before e is a string full of brackets and an escape */
	expect_loc(t, "d", OHC_OK, 3, 8);
	expect_loc(t, "e", OHC_OK, 3, 24);
	/* missing key: the enclosing object's brace */
	expect_loc(t, "zz", OHC_ERR_NOT_FOUND, 1, 1);
	expect_loc(t, "a.zz", OHC_ERR_NOT_FOUND, 2, 8);
	expect_loc(t, "a.b[1].zz", OHC_ERR_NOT_FOUND, 2, 19);
	/* index out of range: the array's bracket */
	expect_loc(t, "a.b[3]", OHC_ERR_NOT_FOUND, 2, 14);
	expect_loc(t, "a.b[2][1][1]", OHC_ERR_NOT_FOUND, 2, 35);
	/* wrong kind of container: the value reached */
	expect_loc(t, "a[0]", OHC_ERR_NOT_FOUND, 2, 8);
	expect_loc(t, "a.b.c", OHC_ERR_NOT_FOUND, 2, 14);
	expect_loc(t, "e.f", OHC_ERR_NOT_FOUND, 3, 24);
	/* malformed paths */
	expect_loc(t, ".a", OHC_ERR_INVALID, 1, 1);
	expect_loc(t, "a..b", OHC_ERR_INVALID, 2, 8);
	expect_loc(t, "a.b[x]", OHC_ERR_INVALID, 2, 14);
	expect_loc(t, "a.b[1", OHC_ERR_INVALID, 2, 14);
	/* no value at all */
	expect_loc("", "", OHC_ERR_INVALID, 1, 1);
	expect_loc(" \n ", "a", OHC_ERR_INVALID, 1, 1);
	/* empty containers */
	expect_loc("{}", "a", OHC_ERR_NOT_FOUND, 1, 1);
	expect_loc(" [ ]", "[0]", OHC_ERR_NOT_FOUND, 1, 2);
}

Test(ranktable, locator_keys_and_columns)
{
	/* escaped keys match their decoded form; a key that only looks
	 * like the target inside a string value does not */
	expect_loc("{\"x\": \"\\\"k\\\": 1\", \"\\u006b\": 2}", "k", OHC_OK, 1,
		   29);
	expect_loc("{\"k\\n\": 1, \"k\": 2}", "k", OHC_OK, 1, 17);
	/* a non-ASCII escape never matches an ASCII key */
	expect_loc("{\"\\u00e9\": 1}", "e", OHC_ERR_NOT_FOUND, 1, 1);
	/* columns count characters: two 2-byte and one 3-byte sequence */
	expect_loc("{\"\xc3\xa9\xc3\xa9\xe2\x82\xac\": 1, \"k\": 2}", "k",
		   OHC_OK, 1, 17);
	/* tabs and CRLF */
	expect_loc("{\r\n\t\"k\":\t[\r\n\t\t7]}", "k[0]", OHC_OK, 3, 3);
	/* unterminated text: stops at len, never beyond */
	expect_loc("{\"a\": [1, 2", "a[5]", OHC_ERR_NOT_FOUND, 1, 7);
	expect_loc("{\"a\": \"abc", "b", OHC_ERR_NOT_FOUND, 1, 1);
	expect_loc("{\"a\\", "a", OHC_ERR_NOT_FOUND, 1, 1);
	expect_loc("{\"a\\u00", "a", OHC_ERR_NOT_FOUND, 1, 1);
	expect_loc("{\"a\": {\"b\": [[[", "a.b[0][0][0]", OHC_ERR_NOT_FOUND, 1,
		   15);
}

/*
 * Oracle: for every value of every sample file, the locator's position
 * must be where jansson, decoding from that offset, reads the same value.
 */
static void check_all_paths(const char *text, json_t *v, char *path,
			    size_t plen, int *count)
{
	size_t n = strlen(path), off, i;
	json_error_t jerr;
	const char *key;
	int line, col;
	json_t *got, *sub;

	cr_assert_eq(
		ohc_ranktable_locate(text, strlen(text), path, &line, &col),
		OHC_OK, "locate '%s'", path);
	off = line_col_to_offset(text, line, col);
	got = json_loads(text + off, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK,
			 &jerr);
	cr_assert(got, "'%s' at %d:%d: %s", path, line, col, jerr.text);
	cr_expect(json_equal(got, v), "'%s' at %d:%d is another value", path,
		  line, col);
	json_decref(got);
	(*count)++;
	if (json_is_object(v)) {
		json_object_foreach(v, key, sub)
		{
			snprintf(path + n, plen - n, "%s%s", n ? "." : "", key);
			check_all_paths(text, sub, path, plen, count);
			path[n] = '\0';
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, sub)
		{
			snprintf(path + n, plen - n, "[%zu]", i);
			check_all_paths(text, sub, path, plen, count);
			path[n] = '\0';
		}
	}
}

Test(ranktable, locator_agrees_with_jansson)
{
	static const char *files[] = {V10, V12, "v10_single_server.json",
				      "v10_unsorted.json"};

	for (size_t f = 0; f < OHC_ARRAY_SIZE(files); f++) {
		char *text = read_data(files[f]), path[512] = "";
		json_error_t jerr;
		json_t *root = json_loads(text, 0, &jerr);
		int count = 0;

		cr_assert(root, "%s: %s", files[f], jerr.text);
		check_all_paths(text, root, path, sizeof(path), &count);
		cr_expect_gt(count, 15, "%s: only %d values", files[f], count);
		json_decref(root);
		free(text);
	}
}

/* The locator never fails hard on any prefix of a file, any path. */
Test(ranktable, locator_on_every_prefix)
{
	static const char *paths[] = {
		"", "status", "server_list[1].device[1].rank_id",
		"super_pod_list[0].server_list[1].server_id", "x[3].y"};
	char *text = read_data(V12);
	size_t n = strlen(text);

	for (size_t len = 0; len <= n; len++) {
		char *buf = malloc(len ? len : 1);

		memcpy(buf, text, len);
		for (size_t p = 0; p < OHC_ARRAY_SIZE(paths); p++) {
			int line = 0, col = 0;
			ohc_status_t st = ohc_ranktable_locate(
				buf, len, paths[p], &line, &col);

			cr_expect(st == OHC_OK || st == OHC_ERR_NOT_FOUND ||
					  st == OHC_ERR_INVALID,
				  "len %zu '%s': %d", len, paths[p], st);
			cr_expect(line >= 1 && col >= 1);
		}
		free(buf);
	}
	free(text);
}
