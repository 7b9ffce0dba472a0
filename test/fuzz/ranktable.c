/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rank-table parser (ohc_ranktable_parse: jansson plus every field
 * check of spec section 5) on arbitrary text, and the locator that puts a
 * line:col on its errors. A table that parses must be what the header
 * promises: ranks sorted by id, each server's ranks one contiguous block,
 * every string NUL-terminated inside its field. Seeds: the sample tables
 * of test/data/ranktables and small variants.
 */
#include <string.h>

#include "comm/ranktable.h"
#include "fuzz.h"

/* Field paths the locator is asked for on every input. */
static const char *const fields[] = {
	"",
	"version",
	"server_list",
	"server_list[0]",
	"server_list[0].device[0].rank_id",
	"server_list[1].device[1].device_ip",
	"super_pod_list[0].server_list[0].server_id",
	"server_list[99999999999999999999]",
	"server_list[0]..x",
	"[0]",
	".status",
};

static void check_table(const struct ohc_ranktable *rt)
{
	uint32_t seen = 0;

	FZ_ASSERT(rt->version == 10 || rt->version == 12);
	FZ_ASSERT(rt->nranks > 0 && rt->nservers > 0);
	for (uint32_t r = 0; r < rt->nranks; r++) {
		const struct ohc_rt_rank *k = &rt->ranks[r];
		const struct ohc_rt_server *s;

		FZ_ASSERT(k->rank_id == r);
		FZ_ASSERT(k->server_index < rt->nservers);
		s = &rt->servers[k->server_index];
		FZ_ASSERT(r >= s->first_rank && r - s->first_rank < s->nranks);
		FZ_ASSERT(k->local_index == r - s->first_rank);
		FZ_ASSERT(memchr(k->device_ip, '\0', sizeof(k->device_ip)));
		FZ_ASSERT(memchr(k->backup_device_ip, '\0',
				 sizeof(k->backup_device_ip)));
		FZ_ASSERT(k->device_port == -1 ||
			  (k->device_port >= 1 && k->device_port <= 65535));
		FZ_ASSERT(k->host_port == -1 ||
			  (k->host_port >= 1 && k->host_port <= 65535));
	}
	for (uint32_t i = 0; i < rt->nservers; i++) {
		const struct ohc_rt_server *s = &rt->servers[i];

		FZ_ASSERT(s->nranks > 0);
		FZ_ASSERT(s->first_rank <= rt->nranks &&
			  s->nranks <= rt->nranks - s->first_rank);
		FZ_ASSERT(s->server_id[0] &&
			  memchr(s->server_id, '\0', sizeof(s->server_id)));
		FZ_ASSERT(memchr(s->host_ip, '\0', sizeof(s->host_ip)));
		FZ_ASSERT(
			memchr(s->super_pod_id, '\0', sizeof(s->super_pod_id)));
		seen += s->nranks;
	}
	FZ_ASSERT(seen == rt->nranks);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ohc_ranktable *rt = NULL;
	/* an exact-size copy: ASan sees any read past the text */
	char *text = malloc(size ? size : 1);
	ohc_status_t st;
	int line, col;

	if (!text)
		return 0;
	memcpy(text, data, size);
	st = ohc_ranktable_parse(text, size, "fuzz.json", &rt);
	if (st == OHC_OK) {
		FZ_ASSERT(rt);
		FZ_ASSERT(ohc_ranktable_last_error()[0] == '\0');
		check_table(rt);
		ohc_ranktable_free(rt);
	} else {
		FZ_ASSERT(st == OHC_ERR_INVALID || st == OHC_ERR_NO_MEMORY);
		FZ_ASSERT(!strncmp(ohc_ranktable_last_error(),
				   "rank table fuzz.json", 20));
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		line = col = 0;
		st = ohc_ranktable_locate(text, size, fields[i], &line, &col);
		FZ_ASSERT(st == OHC_OK || st == OHC_ERR_NOT_FOUND ||
			  st == OHC_ERR_INVALID);
		FZ_ASSERT(line >= 1 && col >= 1);
		FZ_ASSERT((size_t)line <= size + 1 && (size_t)col <= size + 1);
	}
	free(text);
	return 0;
}
