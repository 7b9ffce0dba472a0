/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rank table loader, the entry points: ohc_ranktable_load checks the path
 * and reads the file (util/file.c: regular files only, never blocking on
 * a FIFO, at most OHC_RANKTABLE_MAX_BYTES), ohc_ranktable_parse hands the
 * text to jansson and the result to the walk (ranktable_fields.c) and the
 * checks (ranktable_build.c), and hashes the bytes. Also the error text:
 * every failure of the loader is logged once and kept, per thread, for
 * ohc_ranktable_last_error(), with the line and column of the field when
 * it has one.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ranktable_int.h"
#include "util/file.h"
#include "util/log.h"

#define RT_ERR_MAX (OHC_RANKTABLE_PATH_MAX + 1024)

static _Thread_local char rt_last_error[RT_ERR_MAX];

const char *ohc_ranktable_last_error(void)
{
	return rt_last_error;
}

/* ---- errors ---- */

static ohc_status_t rt_fail_at(int line, int col, const char *path,
			       const char *field, const char *what)
{
	snprintf(rt_last_error, sizeof(rt_last_error),
		 "rank table %s:%d:%d: %s: %s", path, line, col,
		 *field ? field : "(top level)", what);
	OHC_ERROR(OHC_SS_BOOT, "%s", rt_last_error);
	return OHC_ERR_INVALID;
}

/* Log a field error at the position of field in the text. */
ohc_status_t ohc_ranktable_fail(const struct rt_ctx *c, const char *field,
				const char *fmt, ...)
{
	char what[768];
	int line, col;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	ohc_ranktable_locate(c->text, c->len, field, &line, &col);
	return rt_fail_at(line, col, c->path, field, what);
}

/* Log an error that has no position in the text. */
ohc_status_t ohc_ranktable_fail_file(ohc_status_t st, const char *path,
				     const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(rt_last_error, sizeof(rt_last_error), "rank table %s: %s",
		 path, what);
	OHC_ERROR(OHC_SS_BOOT, "%s", rt_last_error);
	return st;
}

/* ---- file ---- */

/* Regular files only, never blocking on a FIFO (util/file.c). */
static ohc_status_t rt_read_file(const char *path, char **text_p, size_t *len_p)
{
	char why[256];
	ohc_status_t st;

	st = ohc_file_read(path, OHC_RANKTABLE_MAX_BYTES, text_p, len_p, why,
			   sizeof(why));
	if (st < 0)
		return ohc_ranktable_fail_file(st, path, "%s", why);
	return OHC_OK;
}

/* FNV-1a, 64 bit: identical bytes give the identical hash on every rank. */
static uint64_t rt_hash(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

ohc_status_t ohc_ranktable_parse(const char *text, size_t len, const char *name,
				 struct ohc_ranktable **rt_p)
{
	struct rt_ctx c = {.path = name, .text = text, .len = len};
	struct ohc_ranktable *rt;
	json_error_t jerr;
	ohc_status_t st;
	json_t *root;

	rt_last_error[0] = '\0';
	if (!name || !rt_p || (!text && len)) {
		snprintf(rt_last_error, sizeof(rt_last_error),
			 "rank table: %s is NULL",
			 !name	 ? "name"
			 : !rt_p ? "rt_p"
				 : "text");
		OHC_ERROR(OHC_SS_BOOT, "%s", rt_last_error);
		return OHC_ERR_NULL;
	}
	if (len == 0)
		return ohc_ranktable_fail(&c, "", "file is empty");
	if (len > OHC_RANKTABLE_MAX_BYTES)
		return ohc_ranktable_fail_file(OHC_ERR_INVALID, name,
					       "%zu bytes; at most %u allowed",
					       len, OHC_RANKTABLE_MAX_BYTES);
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return rt_fail_at(jerr.line > 0 ? jerr.line : 1,
				  jerr.column > 0 ? jerr.column : 1, name,
				  "json", jerr.text);
	rt = calloc(1, sizeof(*rt));
	if (!rt) {
		st = ohc_ranktable_fail_file(OHC_ERR_NO_MEMORY, name,
					     "out of memory");
		goto out_root;
	}
	c.rt = rt;
	st = ohc_ranktable_build(&c, root);
	if (st != OHC_OK) {
		ohc_ranktable_free(rt);
		goto out_build;
	}
	rt->content_hash = rt_hash(text, len);
	*rt_p = rt;
out_build:
	free(c.server_order);
	free(c.devs);
out_root:
	json_decref(root);
	return st;
}

ohc_status_t ohc_ranktable_load(const char *path, struct ohc_ranktable **rt_p)
{
	ohc_status_t st;
	char *text = NULL;
	size_t len = 0;

	rt_last_error[0] = '\0';
	if (!path || !rt_p) {
		snprintf(rt_last_error, sizeof(rt_last_error),
			 "rank table: %s is NULL", path ? "rt_p" : "path");
		OHC_ERROR(OHC_SS_BOOT, "%s", rt_last_error);
		return OHC_ERR_NULL;
	}
	if (strnlen(path, OHC_RANKTABLE_PATH_MAX) >= OHC_RANKTABLE_PATH_MAX) {
		snprintf(rt_last_error, sizeof(rt_last_error),
			 "rank table path is %d bytes or longer; at most %d "
			 "allowed",
			 OHC_RANKTABLE_PATH_MAX, OHC_RANKTABLE_PATH_MAX - 1);
		OHC_ERROR(OHC_SS_BOOT, "%s", rt_last_error);
		return OHC_ERR_INVALID;
	}
	OHC_CHECK(rt_read_file(path, &text, &len));
	st = ohc_ranktable_parse(text, len, path, rt_p);
	free(text);
	return st;
}

void ohc_ranktable_free(struct ohc_ranktable *rt)
{
	if (!rt)
		return;
	free(rt->ranks);
	free(rt->servers);
	free(rt);
}
