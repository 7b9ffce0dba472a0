/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_COMM_RANKTABLE_H
#define OHC_COMM_RANKTABLE_H

/*
 * The rank table of HcclCommInitClusterInfo (spec section 5): a JSON file
 * in format version "1.0" or "1.2", all scalars strings. The loader reads
 * the whole file, parses it with jansson and validates every field; the
 * result is a flat, rank-sorted description of the cluster. Nothing here
 * touches the network or the environment.
 *
 * Checked: status is "completed"; version "1.0" or "1.2"; server_count
 * (required in 1.0, optional in 1.2) equals the length of server_list;
 * every scalar is a string; ids and ports are plain decimal; rank ids are
 * exactly 0..n-1 and each server's ranks form one contiguous block;
 * server_id is non-empty, at most 64 bytes and unique; device lists are
 * non-empty; device_ip, backup_device_ip and host_ip are IPv4/IPv6
 * addresses (inet_pton); every device has a device_ip or none has, and
 * with several servers all must; ports are in [1, 65535]; host_port is
 * distinct within a server; in 1.2 super_pod_list entries have a unique
 * non-empty super_pod_id (at most 128 bytes) and name known servers, each
 * server in at most one pod, a pod's servers contiguous in server_list.
 * Unknown keys are ignored; duplicate keys are a syntax error.
 *
 * Version notes: in "1.0" the keys super_device_id and super_pod_list are
 * not part of the format and are ignored like any unknown key;
 * backup_device_ip and backup_device_port are validated in both versions
 * when present.
 */
#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#define OHC_RANKTABLE_PATH_MAX 4096	    /* incl. NUL, as HCCL */
#define OHC_RANKTABLE_MAX_BYTES (64u << 20) /* larger files refused */
#define OHC_RANKTABLE_SERVER_ID_MAX 64
#define OHC_RANKTABLE_SUPER_POD_ID_MAX 128

/* One device entry, i.e. one rank. */
struct ohc_rt_rank {
	uint32_t rank_id;
	uint32_t device_id;
	int32_t super_device_id;    /* -1 when absent (or version 1.0) */
	char device_ip[64];	    /* "" when absent */
	int32_t device_port;	    /* -1 when absent */
	char backup_device_ip[64];  /* "" when absent */
	int32_t backup_device_port; /* -1 when absent */
	int32_t host_port;	    /* -1 when absent */
	uint32_t server_index;	    /* index into servers[] */
	uint32_t local_index;	    /* position in its server's rank block */
};

/* One server, in the order of the file's server_list. */
struct ohc_rt_server {
	char server_id[OHC_RANKTABLE_SERVER_ID_MAX + 1];
	char host_ip[64];	     /* "" when absent */
	uint32_t first_rank, nranks; /* its ranks: first_rank .. +nranks-1 */
	char super_pod_id[OHC_RANKTABLE_SUPER_POD_ID_MAX + 1]; /* "" if none */
};

struct ohc_ranktable {
	int version; /* 10 for "1.0", 12 for "1.2" */
	uint32_t nranks, nservers;
	/* sorted by rank_id: ranks[i].rank_id == i */
	struct ohc_rt_rank *ranks;
	struct ohc_rt_server *servers;
	uint32_t nsuper_pods;  /* entries of super_pod_list (1.2), or 0 */
	uint64_t content_hash; /* FNV-1a 64 of the file bytes */
};

/*
 * Parse and validate the file at path. On success *rt_p owns a table to be
 * released with ohc_ranktable_free(). On error *rt_p is untouched, one
 * line is logged (OHC_SS_BOOT) and the same text is kept for
 * ohc_ranktable_last_error():
 *   "rank table <path>:<line>:<col>: <field path>: <what is wrong>"
 * where <field path> is e.g. server_list[1].device[0].rank_id, or
 * "(top level)" for the document itself, or "json" for a syntax error
 * (line:col as jansson reports it, at the end of the offending token).
 * For a wrong value the position is the value's first character; for a
 * missing key, the opening brace of the object that lacks it. Lines and
 * columns are 1-based; a column counts characters (UTF-8 sequences), not
 * bytes. Errors that have no position (open, read, size) read
 * "rank table <path>: <what is wrong>".
 * Returns OHC_ERR_NULL (path or rt_p NULL), OHC_ERR_OPEN_FILE (cannot
 * open or read, or path is a directory), OHC_ERR_INVALID (path too long,
 * file empty or too large, syntax or field error), OHC_ERR_NO_MEMORY.
 */
ohc_status_t ohc_ranktable_load(const char *path, struct ohc_ranktable **rt_p);

/*
 * The same from len bytes of JSON text in memory (need not be
 * NUL-terminated; at most OHC_RANKTABLE_MAX_BYTES), with `name` in place
 * of the path in the error text. ohc_ranktable_load reads the file and
 * calls this. OHC_ERR_NULL when name or rt_p is NULL (or text is NULL
 * with len > 0); otherwise as ohc_ranktable_load.
 */
ohc_status_t ohc_ranktable_parse(const char *text, size_t len, const char *name,
				 struct ohc_ranktable **rt_p);

/* Release a table from ohc_ranktable_load/parse(); NULL is a no-op. */
void ohc_ranktable_free(struct ohc_ranktable *rt);

/*
 * The text of this thread's last ohc_ranktable_load/parse() error, without the
 * log prefix; "" when the last load succeeded. Never NULL.
 */
const char *ohc_ranktable_last_error(void);

/*
 * The locator behind the positions above, exposed for tests: walk the JSON
 * text (len bytes, need not be NUL-terminated) along field, a path like
 * "server_list[1].device[0].rank_id" ("" is the document's root value),
 * and give the 1-based line and column of the value. Returns OHC_OK when
 * the value exists; OHC_ERR_NOT_FOUND when a key or index is missing, with
 * the position of the last value reached: the object or array that lacks
 * it, or a value of the wrong kind (e.g. an array where a key is asked);
 * OHC_ERR_INVALID for a malformed field path (position of the last value
 * reached) or text with no value at all (1:1). Always sets both outputs.
 */
ohc_status_t ohc_ranktable_locate(const char *text, size_t len,
				  const char *field, int *line_p, int *col_p);

#endif
