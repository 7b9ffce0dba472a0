/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_COMM_RANKTABLE_INT_H
#define OHC_COMM_RANKTABLE_INT_H

/*
 * Internals shared by the files of the rank-table loader
 * (ranktable_load.c, ranktable_fields.c, ranktable_build.c;
 * ranktable_locate.c needs none of it); not installed, not for other
 * files. What the rest of the library uses is in ranktable.h.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/ranktable.h"
#include "util/compiler.h"
#include "util/status.h"

#define RT_FIELD_MAX 160
#define RT_QUOTE_MAX 48
#define RT_NONE UINT32_MAX

struct rt_dev {
	struct ohc_rt_rank r;
	uint32_t server, index; /* server_list[server].device[index] */
	bool has_ip;
};

/* A server_id with its server_list index, for sorting and lookup. */
struct rt_sid {
	const char *id;
	uint32_t index;
};

struct rt_ctx {
	const char *path;
	const char *text;
	size_t len;
	int version;
	struct ohc_ranktable *rt;
	struct rt_dev *devs; /* in file order */
	uint32_t ndevs;
	struct rt_sid *server_order; /* sorted by server_id, then index */
};

/*
 * Errors (ranktable_load.c), logged and kept for
 * ohc_ranktable_last_error(). ohc_ranktable_fail: a field error at the
 * position of field in the text, OHC_ERR_INVALID. ohc_ranktable_fail_file:
 * an error that has no position in the text; returns st.
 */
ohc_status_t ohc_ranktable_fail(const struct rt_ctx *c, const char *field,
				const char *fmt, ...) OHC_PRINTF(3, 4);
ohc_status_t ohc_ranktable_fail_file(ohc_status_t st, const char *path,
				     const char *fmt, ...) OHC_PRINTF(3, 4);

/*
 * Message helpers (ranktable_fields.c). ohc_ranktable_quote: s made safe
 * and short for a message, in buf. ohc_ranktable_kind: "an object", "a
 * string", ... ohc_ranktable_path: a formatted field path into
 * buf[RT_FIELD_MAX]. ohc_ranktable_field: prefix.key into buf (key alone
 * when prefix is ""), returned.
 */
const char *ohc_ranktable_quote(char *buf, size_t size, const char *s);
const char *ohc_ranktable_kind(const json_t *v);
void ohc_ranktable_path(char *buf, const char *fmt, ...) OHC_PRINTF(2, 3);
const char *ohc_ranktable_field(char *buf, const char *prefix, const char *key);

/*
 * Field checks (ranktable_fields.c), each failing with the field's path
 * (prefix.key). get_str: obj[key] as a string, *s_p = NULL when absent
 * and not required. get_id: a required non-empty string of at most max
 * bytes, copied to out. get_array: a required array, non-empty unless
 * may_be_empty. warn_unknown: a warning for each key of obj not in known
 * (NULL-terminated).
 */
ohc_status_t ohc_ranktable_get_str(const struct rt_ctx *c, json_t *obj,
				   const char *prefix, const char *key,
				   bool required, const char **s_p);
ohc_status_t ohc_ranktable_get_id(const struct rt_ctx *c, json_t *obj,
				  const char *prefix, const char *key,
				  size_t max, char *out);
ohc_status_t ohc_ranktable_get_array(const struct rt_ctx *c, json_t *obj,
				     const char *prefix, const char *key,
				     bool may_be_empty, json_t **arr_p);
void ohc_ranktable_warn_unknown(const struct rt_ctx *c, json_t *obj,
				const char *prefix, const char *const *known);

/*
 * The walk (ranktable_fields.c). parse_top: the top-level object (status,
 * version into c->version, server_count), *servers_p its server_list.
 * parse_server: server_list[si] into c->rt->servers[si] and its devices
 * appended to c->devs.
 */
ohc_status_t ohc_ranktable_parse_top(struct rt_ctx *c, json_t *root,
				     json_t **servers_p);
ohc_status_t ohc_ranktable_parse_server(struct rt_ctx *c, json_t *srv,
					uint32_t si);

/*
 * Build c->rt from the parsed document root (ranktable_build.c): walk,
 * check, sort. c->devs and c->server_order are allocated here and freed
 * by the caller, as is c->rt on failure.
 */
ohc_status_t ohc_ranktable_build(struct rt_ctx *c, json_t *root);

#endif
