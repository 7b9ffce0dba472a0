/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rank table loader: read the file, parse it with jansson, validate every
 * field of spec section 5, build the rank-sorted table. jansson knows the
 * position of syntax errors only, so a small locator walks the raw text
 * along a field path to put a line and column on every field error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm/ranktable.h"
#include "util/compiler.h"
#include "util/file.h"
#include "util/log.h"

#define RT_ERR_MAX (OHC_RANKTABLE_PATH_MAX + 1024)
#define RT_FIELD_MAX 160
#define RT_QUOTE_MAX 48
#define RT_NONE UINT32_MAX

static _Thread_local char rt_last_error[RT_ERR_MAX];

const char *ohc_ranktable_last_error(void)
{
	return rt_last_error;
}

/* ---- locator: field path -> line:col in the raw JSON text ---- */

static bool loc_is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t loc_skip_ws(const char *t, size_t n, size_t p)
{
	while (p < n && loc_is_ws(t[p]))
		p++;
	return p;
}

/* p at an opening quote; returns the offset just past the closing one. */
static size_t loc_skip_string(const char *t, size_t n, size_t p)
{
	for (p++; p < n; p++) {
		if (t[p] == '\\')
			p++;
		else if (t[p] == '"')
			return p + 1;
	}
	return n;
}

/* p at the first character of a value; returns the offset past its end. */
static size_t loc_skip_value(const char *t, size_t n, size_t p)
{
	size_t depth = 0;

	if (p >= n)
		return n;
	if (t[p] == '"')
		return loc_skip_string(t, n, p);
	if (t[p] != '{' && t[p] != '[') {
		/* number or literal; always make progress */
		for (p++; p < n; p++)
			if (loc_is_ws(t[p]) || t[p] == ',' || t[p] == '}' ||
			    t[p] == ']')
				break;
		return p;
	}
	while (p < n) {
		if (t[p] == '"') {
			p = loc_skip_string(t, n, p);
			continue;
		}
		if (t[p] == '{' || t[p] == '[')
			depth++;
		else if (t[p] == '}' || t[p] == ']')
			depth--;
		p++;
		if (depth == 0)
			return p;
	}
	return n;
}

static int loc_hex4(const char *s)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/*
 * Compare the JSON string at p (opening quote), escapes decoded, with the
 * klen bytes of key; *end_p is set past the closing quote. A \u escape of
 * a non-ASCII code point never matches (field paths are ASCII).
 */
static bool loc_key_equals(const char *t, size_t n, size_t p, const char *key,
			   size_t klen, size_t *end_p)
{
	size_t k = 0;
	bool eq = true;
	int c;

	for (p++; p < n && t[p] != '"';) {
		if (t[p] != '\\') {
			c = (unsigned char)t[p++];
		} else if (p + 1 >= n) {
			break;
		} else if (t[p + 1] == 'u') {
			if (p + 6 > n)
				break;
			c = loc_hex4(t + p + 2);
			if (c >= 0x80)
				c = -1;
			p += 6;
		} else {
			switch (t[p + 1]) {
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'n':
				c = '\n';
				break;
			case 'r':
				c = '\r';
				break;
			case 't':
				c = '\t';
				break;
			default:
				c = (unsigned char)t[p + 1];
				break;
			}
			p += 2;
		}
		if (eq && k < klen && c == (unsigned char)key[k])
			k++;
		else
			eq = false;
	}
	*end_p = p < n ? p + 1 : n;
	return eq && k == klen;
}

static void loc_line_col(const char *t, size_t p, int *line_p, int *col_p)
{
	int line = 1, col = 1;

	for (size_t i = 0; i < p; i++) {
		if (t[i] == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)t[i] & 0xc0) != 0x80) {
			/* characters, not UTF-8 continuation bytes */
			col++;
		}
	}
	*line_p = line;
	*col_p = col;
}

/* Step from the array at p to its element idx; false if there is none. */
static bool loc_step_index(const char *t, size_t n, size_t *p_io,
			   unsigned long idx)
{
	size_t p = loc_skip_ws(t, n, *p_io + 1);

	if (p >= n || t[p] == ']')
		return false;
	for (unsigned long i = 0; i < idx; i++) {
		p = loc_skip_ws(t, n, loc_skip_value(t, n, p));
		if (p >= n || t[p] != ',')
			return false;
		p = loc_skip_ws(t, n, p + 1);
		if (p >= n || t[p] == ']')
			return false;
	}
	*p_io = p;
	return true;
}

/* Step from the object at p to the value of key; false if absent. */
static bool loc_step_key(const char *t, size_t n, size_t *p_io, const char *key,
			 size_t klen)
{
	size_t p = loc_skip_ws(t, n, *p_io + 1), end;
	bool eq;

	while (p < n && t[p] == '"') {
		eq = loc_key_equals(t, n, p, key, klen, &end);
		p = loc_skip_ws(t, n, end);
		if (p >= n || t[p] != ':')
			return false;
		p = loc_skip_ws(t, n, p + 1);
		if (eq) {
			if (p >= n)
				return false;
			*p_io = p;
			return true;
		}
		p = loc_skip_ws(t, n, loc_skip_value(t, n, p));
		if (p >= n || t[p] != ',')
			return false;
		p = loc_skip_ws(t, n, p + 1);
	}
	return false;
}

ohc_status_t ohc_ranktable_locate(const char *text, size_t len,
				  const char *field, int *line_p, int *col_p)
{
	ohc_status_t st = OHC_OK;
	const char *f = field;
	size_t p = 0, klen;
	unsigned long idx;
	char *end;

	if (!text || !field) {
		text = "";
		len = 0;
		st = OHC_ERR_INVALID;
		goto out;
	}
	p = loc_skip_ws(text, len, 0);
	if (p >= len) {
		p = 0;
		st = OHC_ERR_INVALID;
		goto out;
	}
	while (*f) {
		if (*f == '[') {
			if (f[1] < '0' || f[1] > '9') {
				st = OHC_ERR_INVALID;
				break;
			}
			errno = 0;
			idx = strtoul(f + 1, &end, 10);
			if (errno || *end != ']') {
				st = OHC_ERR_INVALID;
				break;
			}
			f = end + 1;
			if (text[p] != '[' ||
			    !loc_step_index(text, len, &p, idx)) {
				st = OHC_ERR_NOT_FOUND;
				break;
			}
			continue;
		}
		if (*f == '.') {
			if (f == field) {
				st = OHC_ERR_INVALID;
				break;
			}
			f++;
		}
		klen = strcspn(f, ".[");
		if (klen == 0) {
			st = OHC_ERR_INVALID;
			break;
		}
		if (text[p] != '{' || !loc_step_key(text, len, &p, f, klen)) {
			st = OHC_ERR_NOT_FOUND;
			break;
		}
		f += klen;
	}
out:
	loc_line_col(text, p, line_p, col_p);
	return st;
}

/* ---- validation ---- */

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

static ohc_status_t rt_fail_at(int line, int col, const char *path,
			       const char *field, const char *what)
{
	snprintf(rt_last_error, sizeof(rt_last_error),
		 "rank table %s:%d:%d: %s: %s", path, line, col,
		 *field ? field : "(top level)", what);
	OHC_ERROR(OHC_SS_BOOT, "%s", rt_last_error);
	return OHC_ERR_INVALID;
}

static ohc_status_t rt_fail(const struct rt_ctx *c, const char *field,
			    const char *fmt, ...) OHC_PRINTF(3, 4);

/* Log a field error at the position of field in the text. */
static ohc_status_t rt_fail(const struct rt_ctx *c, const char *field,
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

static ohc_status_t rt_fail_file(ohc_status_t st, const char *path,
				 const char *fmt, ...) OHC_PRINTF(3, 4);

/* Log an error that has no position in the text. */
static ohc_status_t rt_fail_file(ohc_status_t st, const char *path,
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

/* A user string made safe and short for a message (printable ASCII). */
static const char *rt_quote(char *buf, size_t size, const char *s)
{
	size_t i, n = strlen(s), max = OHC_MIN(size - 4, (size_t)RT_QUOTE_MAX);

	for (i = 0; i < n && i < max; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	buf[i] = '\0';
	if (n > max)
		strcpy(buf + i, "...");
	return buf;
}

static const char *rt_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

static void rt_path(char *buf, const char *fmt, ...) OHC_PRINTF(2, 3);

/* Format a field path into buf[RT_FIELD_MAX]. */
static void rt_path(char *buf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, RT_FIELD_MAX, fmt, ap);
	va_end(ap);
}

static const char *rt_field(char *buf, const char *prefix, const char *key)
{
	rt_path(buf, "%s%s%s", prefix, *prefix ? "." : "", key);
	return buf;
}

/* obj[key] as a string; *s_p = NULL when absent and not required. */
static ohc_status_t rt_get_str(const struct rt_ctx *c, json_t *obj,
			       const char *prefix, const char *key,
			       bool required, const char **s_p)
{
	json_t *v = json_object_get(obj, key);
	char f[RT_FIELD_MAX];

	rt_field(f, prefix, key);
	if (!v) {
		if (required)
			return rt_fail(c, f, "missing (required)");
		*s_p = NULL;
		return OHC_OK;
	}
	if (!json_is_string(v))
		return rt_fail(c, f, "must be a string, not %s", rt_kind(v));
	*s_p = json_string_value(v);
	return OHC_OK;
}

/* Plain decimal: digits only, no sign, no blanks, no overflow. */
static bool rt_parse_dec(const char *s, uint64_t *v_p)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*v_p = v;
	return true;
}

/* obj[key] as a decimal string in [min, max]; *v_p = -1 when absent. */
static ohc_status_t rt_get_dec(const struct rt_ctx *c, json_t *obj,
			       const char *prefix, const char *key,
			       bool required, uint64_t min, uint64_t max,
			       int64_t *v_p)
{
	char f[RT_FIELD_MAX], q[RT_QUOTE_MAX + 4];
	const char *s = NULL;
	uint64_t v;

	OHC_CHECK(rt_get_str(c, obj, prefix, key, required, &s));
	if (!s) {
		*v_p = -1;
		return OHC_OK;
	}
	if (!rt_parse_dec(s, &v) || v < min || v > max)
		return rt_fail(
			c, rt_field(f, prefix, key),
			"\"%s\" is not a decimal integer in [%llu, %llu]",
			rt_quote(q, sizeof(q), s), (unsigned long long)min,
			(unsigned long long)max);
	*v_p = (int64_t)v;
	return OHC_OK;
}

/* obj[key] as an IPv4/IPv6 address into out[64]; "" when absent. */
static ohc_status_t rt_get_ip(const struct rt_ctx *c, json_t *obj,
			      const char *prefix, const char *key, char out[64])
{
	unsigned char addr[sizeof(struct in6_addr)];
	char f[RT_FIELD_MAX], q[RT_QUOTE_MAX + 4];
	const char *s = NULL;

	OHC_CHECK(rt_get_str(c, obj, prefix, key, false, &s));
	if (!s) {
		out[0] = '\0';
		return OHC_OK;
	}
	if (strlen(s) >= 64 || (inet_pton(AF_INET, s, addr) != 1 &&
				inet_pton(AF_INET6, s, addr) != 1))
		return rt_fail(c, rt_field(f, prefix, key),
			       "\"%s\" is not an IPv4 or IPv6 address",
			       rt_quote(q, sizeof(q), s));
	strcpy(out, s);
	return OHC_OK;
}

/* obj[key] as an identifier: non-empty, at most max bytes. */
static ohc_status_t rt_get_id(const struct rt_ctx *c, json_t *obj,
			      const char *prefix, const char *key, size_t max,
			      char *out)
{
	char f[RT_FIELD_MAX];
	const char *s = NULL;
	size_t n;

	OHC_CHECK(rt_get_str(c, obj, prefix, key, true, &s));
	n = strlen(s);
	if (n == 0)
		return rt_fail(c, rt_field(f, prefix, key),
			       "must not be empty");
	if (n > max)
		return rt_fail(c, rt_field(f, prefix, key),
			       "is %zu bytes long; at most %zu allowed", n,
			       max);
	memcpy(out, s, n + 1);
	return OHC_OK;
}

/* A member of obj that must be an array (non-empty unless may_be_empty). */
static ohc_status_t rt_get_array(const struct rt_ctx *c, json_t *obj,
				 const char *prefix, const char *key,
				 bool may_be_empty, json_t **arr_p)
{
	json_t *v = json_object_get(obj, key);
	char f[RT_FIELD_MAX];

	rt_field(f, prefix, key);
	if (!v)
		return rt_fail(c, f, "missing (required)");
	if (!json_is_array(v))
		return rt_fail(c, f, "must be an array, not %s", rt_kind(v));
	if (!may_be_empty && json_array_size(v) == 0)
		return rt_fail(c, f, "must not be empty");
	*arr_p = v;
	return OHC_OK;
}

/* Edit distance of two short keys (for "did you mean"). */
static unsigned rt_distance(const char *a, const char *b)
{
	unsigned row[RT_FIELD_MAX], prev, tmp;
	size_t la = strlen(a), lb = strlen(b);

	if (la >= RT_FIELD_MAX || lb >= RT_FIELD_MAX)
		return UINT32_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned best = prev + (a[i - 1] != b[j - 1]);

			tmp = row[j];
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

/*
 * Keys of obj that this level does not know are ignored, as HCCL does,
 * but each gets a warning with its position, and the nearest known key
 * when one is close (a misspelled "device_ip" is otherwise a silently
 * missing one). known is NULL-terminated.
 */
static void rt_warn_unknown(const struct rt_ctx *c, json_t *obj,
			    const char *prefix, const char *const *known)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		const char *near = NULL;
		unsigned best = 3; /* suggest at distance 1 or 2 */
		char f[RT_FIELD_MAX], q[RT_QUOTE_MAX + 4];
		int line, col, k;

		(void)v;
		for (k = 0; known[k] && strcmp(known[k], key); k++) {
			unsigned d = rt_distance(key, known[k]);

			if (d < best) {
				best = d;
				near = known[k];
			}
		}
		if (known[k])
			continue;
		rt_field(f, prefix, key);
		ohc_ranktable_locate(c->text, c->len, f, &line, &col);
		OHC_WARN(OHC_SS_BOOT,
			 "rank table %s:%d:%d: %s: unknown key \"%s\" "
			 "ignored%s%s%s",
			 c->path, line, col, *prefix ? prefix : "(top level)",
			 rt_quote(q, sizeof(q), key),
			 near ? " (did you mean \"" : "", near ? near : "",
			 near ? "\"?)" : "");
	}
}

static const char *const rt_top_keys[] = {"status",	    "version",
					  "server_count",   "server_list",
					  "super_pod_list", NULL};
static const char *const rt_server_keys[] = {
	"server_id", "host_ip", "device", "net_position", "net_protocol", NULL};
static const char *const rt_device_keys[] = {
	"device_id",   "rank_id",	   "device_ip",
	"device_port", "backup_device_ip", "backup_device_port",
	"host_port",   "super_device_id",  NULL};
static const char *const rt_pod_keys[] = {"super_pod_id", "server_list", NULL};
static const char *const rt_pod_member_keys[] = {"server_id", NULL};

static ohc_status_t rt_parse_top(struct rt_ctx *c, json_t *root,
				 json_t **servers_p)
{
	char q[RT_QUOTE_MAX + 4];
	json_t *servers;
	const char *s = NULL;
	int64_t count;

	if (!json_is_object(root))
		return rt_fail(c, "", "must be a JSON object, not %s",
			       rt_kind(root));
	OHC_CHECK(rt_get_str(c, root, "", "status", true, &s));
	if (strcmp(s, "completed"))
		return rt_fail(c, "status", "\"%s\" is not \"completed\"",
			       rt_quote(q, sizeof(q), s));
	OHC_CHECK(rt_get_str(c, root, "", "version", true, &s));
	if (!strcmp(s, "1.0"))
		c->version = 10;
	else if (!strcmp(s, "1.2"))
		c->version = 12;
	else
		return rt_fail(c, "version",
			       "\"%s\" is not a supported version (\"1.0\" or "
			       "\"1.2\")",
			       rt_quote(q, sizeof(q), s));
	/* required in 1.0, optional in 1.2 */
	OHC_CHECK(rt_get_dec(c, root, "", "server_count", c->version == 10, 1,
			     UINT32_MAX, &count));
	OHC_CHECK(rt_get_array(c, root, "", "server_list", false, &servers));
	if (json_array_size(servers) > UINT32_MAX / 2)
		return rt_fail(c, "server_list", "too many servers");
	if (count >= 0 && (size_t)count != json_array_size(servers))
		return rt_fail(c, "server_count",
			       "\"%lld\" does not match server_list, which has "
			       "%zu servers",
			       (long long)count, json_array_size(servers));
	rt_warn_unknown(c, root, "", rt_top_keys);
	*servers_p = servers;
	return OHC_OK;
}

static ohc_status_t rt_parse_device(struct rt_ctx *c, json_t *dev, uint32_t si,
				    uint32_t di)
{
	struct rt_dev *d = &c->devs[c->ndevs];
	char pre[RT_FIELD_MAX];
	int64_t v;

	rt_path(pre, "server_list[%u].device[%u]", si, di);
	if (!json_is_object(dev))
		return rt_fail(c, pre, "must be an object, not %s",
			       rt_kind(dev));
	d->server = si;
	d->index = di;
	d->r.server_index = si;
	OHC_CHECK(rt_get_dec(c, dev, pre, "device_id", true, 0, INT32_MAX, &v));
	d->r.device_id = (uint32_t)v;
	OHC_CHECK(rt_get_dec(c, dev, pre, "rank_id", true, 0, UINT32_MAX - 1,
			     &v));
	d->r.rank_id = (uint32_t)v;
	OHC_CHECK(rt_get_ip(c, dev, pre, "device_ip", d->r.device_ip));
	d->has_ip = d->r.device_ip[0] != '\0';
	OHC_CHECK(rt_get_dec(c, dev, pre, "device_port", false, 1, 65535, &v));
	d->r.device_port = (int32_t)v;
	OHC_CHECK(rt_get_ip(c, dev, pre, "backup_device_ip",
			    d->r.backup_device_ip));
	OHC_CHECK(rt_get_dec(c, dev, pre, "backup_device_port", false, 1, 65535,
			     &v));
	d->r.backup_device_port = (int32_t)v;
	OHC_CHECK(rt_get_dec(c, dev, pre, "host_port", false, 1, 65535, &v));
	d->r.host_port = (int32_t)v;
	d->r.super_device_id = -1;
	if (c->version == 12) {
		OHC_CHECK(rt_get_dec(c, dev, pre, "super_device_id", false, 0,
				     INT32_MAX, &v));
		d->r.super_device_id = (int32_t)v;
	}
	rt_warn_unknown(c, dev, pre, rt_device_keys);
	c->ndevs++;
	return OHC_OK;
}

/* host_port is per rank and must be distinct within a server. */
static ohc_status_t rt_check_host_ports(struct rt_ctx *c, uint32_t first,
					uint32_t si)
{
	char f[RT_FIELD_MAX];

	for (uint32_t a = first + 1; a < c->ndevs; a++) {
		if (c->devs[a].r.host_port < 0)
			continue;
		for (uint32_t b = first; b < a; b++) {
			if (c->devs[b].r.host_port != c->devs[a].r.host_port)
				continue;
			rt_path(f, "server_list[%u].device[%u].host_port", si,
				c->devs[a].index);
			return rt_fail(c, f,
				       "\"%d\" is also the host_port of "
				       "server_list[%u].device[%u]; host ports "
				       "must be distinct within a server",
				       c->devs[a].r.host_port, si,
				       c->devs[b].index);
		}
	}
	return OHC_OK;
}

static ohc_status_t rt_parse_server(struct rt_ctx *c, json_t *srv, uint32_t si)
{
	struct ohc_rt_server *s = &c->rt->servers[si];
	uint32_t first = c->ndevs;
	char pre[RT_FIELD_MAX];
	json_t *devs;

	rt_path(pre, "server_list[%u]", si);
	if (!json_is_object(srv))
		return rt_fail(c, pre, "must be an object, not %s",
			       rt_kind(srv));
	OHC_CHECK(rt_get_id(c, srv, pre, "server_id",
			    OHC_RANKTABLE_SERVER_ID_MAX, s->server_id));
	OHC_CHECK(rt_get_ip(c, srv, pre, "host_ip", s->host_ip));
	OHC_CHECK(rt_get_array(c, srv, pre, "device", false, &devs));
	rt_warn_unknown(c, srv, pre, rt_server_keys);
	for (size_t di = 0; di < json_array_size(devs); di++)
		OHC_CHECK(rt_parse_device(c, json_array_get(devs, di), si,
					  (uint32_t)di));
	s->nranks = c->ndevs - first;
	return rt_check_host_ports(c, first, si);
}

static int rt_cmp_server(const void *a, const void *b)
{
	const struct rt_sid *x = a, *y = b;
	int r = strcmp(x->id, y->id);

	if (r)
		return r;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Index of the server named id, or RT_NONE (binary search). */
static uint32_t rt_find_server(const struct rt_ctx *c, const char *id)
{
	size_t lo = 0, hi = c->rt->nservers;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rt_sid *e = &c->server_order[mid];
		int r = strcmp(e->id, id);

		if (r == 0)
			return e->index;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return RT_NONE;
}

/* server_id must be unique; also builds the lookup order. */
static ohc_status_t rt_check_server_ids(struct rt_ctx *c)
{
	const struct ohc_rt_server *srv = c->rt->servers;
	struct rt_sid *o = c->server_order;
	uint32_t n = c->rt->nservers, dup = RT_NONE, orig = 0;
	char f[RT_FIELD_MAX], q[RT_QUOTE_MAX + 4];

	for (uint32_t i = 0; i < n; i++) {
		o[i].id = srv[i].server_id;
		o[i].index = i;
	}
	qsort(o, n, sizeof(*o), rt_cmp_server);
	/*
	 * Report the earliest repeat in file order; after the sort by (id,
	 * index) the first of each run of equal ids is the original.
	 */
	for (uint32_t i = 1, first = 0; i < n; i++) {
		if (strcmp(o[i].id, o[first].id)) {
			first = i;
			continue;
		}
		if (o[i].index < dup) {
			dup = o[i].index;
			orig = o[first].index;
		}
	}
	if (dup == RT_NONE)
		return OHC_OK;
	rt_path(f, "server_list[%u].server_id", dup);
	return rt_fail(c, f, "\"%s\" is also the server_id of server_list[%u]",
		       rt_quote(q, sizeof(q), srv[dup].server_id), orig);
}

/*
 * Rank ids: each < ndevs and unique (hence exactly 0..ndevs-1), and the
 * ranks of a server one contiguous block. Fills rt->ranks sorted.
 */
static ohc_status_t rt_check_ranks(struct rt_ctx *c)
{
	struct ohc_ranktable *rt = c->rt;
	uint32_t n = c->ndevs, *owner, prev;
	ohc_status_t st = OHC_OK;
	char f[RT_FIELD_MAX];
	bool *closed;

	owner = malloc(n * sizeof(*owner));
	closed = calloc(rt->nservers, sizeof(*closed));
	if (!owner || !closed) {
		st = rt_fail_file(OHC_ERR_NO_MEMORY, c->path,
				  "out of memory for %u ranks", n);
		goto out_free;
	}
	for (uint32_t r = 0; r < n; r++)
		owner[r] = RT_NONE;
	for (uint32_t i = 0; i < n; i++) {
		const struct rt_dev *d = &c->devs[i];
		uint32_t r = d->r.rank_id;

		rt_path(f, "server_list[%u].device[%u].rank_id", d->server,
			d->index);
		if (r >= n) {
			st = rt_fail(c, f,
				     "\"%u\" is out of range: the table lists "
				     "%u devices, so rank ids are 0..%u",
				     r, n, n - 1);
			goto out_free;
		}
		if (owner[r] != RT_NONE) {
			st = rt_fail(c, f,
				     "\"%u\" is also the rank_id of "
				     "server_list[%u].device[%u]",
				     r, c->devs[owner[r]].server,
				     c->devs[owner[r]].index);
			goto out_free;
		}
		owner[r] = i;
	}
	prev = c->devs[owner[0]].server;
	for (uint32_t r = 1; r < n; r++) {
		const struct rt_dev *d = &c->devs[owner[r]];

		if (d->server == prev)
			continue;
		closed[prev] = true;
		if (closed[d->server]) {
			rt_path(f, "server_list[%u].device[%u].rank_id",
				d->server, d->index);
			st = rt_fail(c, f,
				     "rank %u is on server_list[%u], which "
				     "also holds lower ranks, but rank %u is "
				     "on server_list[%u]; the ranks of one "
				     "server must form one contiguous block, "
				     "not interleave with another server's",
				     r, d->server, r - 1, prev);
			goto out_free;
		}
		prev = d->server;
	}
	for (uint32_t r = 0; r < n; r++) {
		struct ohc_rt_server *s;

		rt->ranks[r] = c->devs[owner[r]].r;
		s = &rt->servers[rt->ranks[r].server_index];
		if (r == 0 ||
		    rt->ranks[r - 1].server_index != rt->ranks[r].server_index)
			s->first_rank = r;
		rt->ranks[r].local_index = r - s->first_rank;
	}
out_free:
	free(closed);
	free(owner);
	return st;
}

/* All devices have a device_ip or none; several servers need them. */
static ohc_status_t rt_check_device_ips(struct rt_ctx *c)
{
	const struct rt_dev *d0 = &c->devs[0];
	char f[RT_FIELD_MAX];

	for (uint32_t i = 0; i < c->ndevs; i++) {
		const struct rt_dev *d = &c->devs[i];

		rt_path(f, "server_list[%u].device[%u].device_ip", d->server,
			d->index);
		if (!d->has_ip && c->rt->nservers > 1)
			return rt_fail(c, f,
				       "missing; device_ip is required when "
				       "there are several servers");
		if (d->has_ip != d0->has_ip)
			return rt_fail(c, f,
				       "%s, but server_list[%u].device[%u] "
				       "has %s; all devices must have the "
				       "same number of device_ip entries",
				       d->has_ip ? "present" : "missing",
				       d0->server, d0->index,
				       d0->has_ip ? "one" : "none");
	}
	return OHC_OK;
}

/* One super_pod_list entry: id unique, members known and not shared. */
static ohc_status_t rt_parse_super_pod(struct rt_ctx *c, json_t *pods,
				       uint32_t pi, uint32_t *pod_of,
				       uint32_t *slot_of)
{
	char pre[RT_FIELD_MAX], f[RT_FIELD_MAX], q[RT_QUOTE_MAX + 4];
	char id[OHC_RANKTABLE_SUPER_POD_ID_MAX + 1];
	json_t *pod = json_array_get(pods, pi), *list;
	const char *sid;

	rt_path(pre, "super_pod_list[%u]", pi);
	if (!json_is_object(pod))
		return rt_fail(c, pre, "must be an object, not %s",
			       rt_kind(pod));
	OHC_CHECK(rt_get_id(c, pod, pre, "super_pod_id",
			    OHC_RANKTABLE_SUPER_POD_ID_MAX, id));
	for (uint32_t pj = 0; pj < pi; pj++) {
		json_t *o = json_object_get(json_array_get(pods, pj),
					    "super_pod_id");

		if (strcmp(json_string_value(o), id))
			continue;
		return rt_fail(c, rt_field(f, pre, "super_pod_id"),
			       "\"%s\" is also the super_pod_id of "
			       "super_pod_list[%u]",
			       rt_quote(q, sizeof(q), id), pj);
	}
	OHC_CHECK(rt_get_array(c, pod, pre, "server_list", false, &list));
	rt_warn_unknown(c, pod, pre, rt_pod_keys);
	for (size_t k = 0; k < json_array_size(list); k++) {
		json_t *m = json_array_get(list, k);
		char mpre[RT_FIELD_MAX];
		uint32_t s;

		rt_path(mpre, "%s.server_list[%zu]", pre, k);
		if (!json_is_object(m))
			return rt_fail(c, mpre, "must be an object, not %s",
				       rt_kind(m));
		OHC_CHECK(rt_get_str(c, m, mpre, "server_id", true, &sid));
		rt_warn_unknown(c, m, mpre, rt_pod_member_keys);
		rt_field(f, mpre, "server_id");
		s = rt_find_server(c, sid);
		if (s == RT_NONE)
			return rt_fail(c, f,
				       "\"%s\" is not a server_id of the "
				       "top-level server_list",
				       rt_quote(q, sizeof(q), sid));
		if (pod_of[s] != RT_NONE)
			return rt_fail(
				c, f,
				"server \"%s\" is already listed in "
				"super_pod_list[%u].server_list[%u]; a "
				"server belongs to at most one super pod",
				rt_quote(q, sizeof(q), sid), pod_of[s],
				slot_of[s]);
		pod_of[s] = pi;
		slot_of[s] = (uint32_t)k;
		memcpy(c->rt->servers[s].super_pod_id, id, sizeof(id));
	}
	return OHC_OK;
}

/* 1.2 super_pod_list (optional); servers of a pod listed contiguously. */
static ohc_status_t rt_parse_super_pods(struct rt_ctx *c, json_t *root)
{
	uint32_t n = c->rt->nservers, *pod_of, *slot_of, prev = RT_NONE;
	ohc_status_t st = OHC_OK;
	json_t *pods;
	bool *closed;
	char f[RT_FIELD_MAX];

	if (c->version != 12 || !json_object_get(root, "super_pod_list"))
		return OHC_OK;
	OHC_CHECK(rt_get_array(c, root, "", "super_pod_list", true, &pods));
	if (json_array_size(pods) > UINT32_MAX / 2)
		return rt_fail(c, "super_pod_list", "too many super pods");
	pod_of = malloc(n * sizeof(*pod_of));
	slot_of = malloc(n * sizeof(*slot_of));
	closed = calloc(json_array_size(pods) + 1, sizeof(*closed));
	if (!pod_of || !slot_of || !closed) {
		st = rt_fail_file(OHC_ERR_NO_MEMORY, c->path, "out of memory");
		goto out_free;
	}
	for (uint32_t s = 0; s < n; s++)
		pod_of[s] = RT_NONE;
	for (uint32_t pi = 0; pi < json_array_size(pods); pi++)
		OHC_CHECK_GOTO(rt_parse_super_pod(c, pods, pi, pod_of, slot_of),
			       st, out_free);
	c->rt->nsuper_pods = (uint32_t)json_array_size(pods);
	for (uint32_t s = 0; s < n; s++) {
		uint32_t p = pod_of[s];

		if (p == prev)
			continue;
		if (prev != RT_NONE)
			closed[prev] = true;
		prev = p;
		if (p == RT_NONE || !closed[p])
			continue;
		rt_path(f, "super_pod_list[%u].server_list[%u].server_id", p,
			slot_of[s]);
		st = rt_fail(c, f,
			     "server_list[%u] is separated from the other "
			     "servers of super pod \"%s\"; the servers of one "
			     "super pod must be listed contiguously in "
			     "server_list",
			     s, c->rt->servers[s].super_pod_id);
		goto out_free;
	}
out_free:
	free(closed);
	free(slot_of);
	free(pod_of);
	return st;
}

static ohc_status_t rt_build(struct rt_ctx *c, json_t *root)
{
	struct ohc_ranktable *rt = c->rt;
	json_t *servers, *srv, *devs;
	size_t ndevs = 0, i;

	OHC_CHECK(rt_parse_top(c, root, &servers));
	rt->version = c->version;
	rt->nservers = (uint32_t)json_array_size(servers);
	/* size the device array; structure is checked in order below */
	json_array_foreach(servers, i, srv)
	{
		devs = json_object_get(srv, "device");
		if (json_is_array(devs))
			ndevs += json_array_size(devs);
	}
	if (ndevs > UINT32_MAX / 2)
		return rt_fail(c, "server_list", "too many devices");
	rt->servers = calloc(rt->nservers, sizeof(*rt->servers));
	c->server_order = calloc(rt->nservers, sizeof(*c->server_order));
	c->devs = calloc(ndevs ? ndevs : 1, sizeof(*c->devs));
	if (!rt->servers || !c->server_order || !c->devs) {
		return rt_fail_file(OHC_ERR_NO_MEMORY, c->path,
				    "out of memory for %u servers, %zu devices",
				    rt->nservers, ndevs);
	}
	for (uint32_t si = 0; si < rt->nservers; si++)
		OHC_CHECK(rt_parse_server(c, json_array_get(servers, si), si));
	OHC_CHECK(rt_check_server_ids(c));
	rt->nranks = c->ndevs;
	rt->ranks = calloc(rt->nranks, sizeof(*rt->ranks));
	if (!rt->ranks) {
		return rt_fail_file(OHC_ERR_NO_MEMORY, c->path,
				    "out of memory for %u ranks", rt->nranks);
	}
	OHC_CHECK(rt_check_ranks(c));
	OHC_CHECK(rt_check_device_ips(c));
	return rt_parse_super_pods(c, root);
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
		return rt_fail_file(st, path, "%s", why);
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

ohc_status_t ohc_ranktable_load(const char *path, struct ohc_ranktable **rt_p)
{
	struct rt_ctx c = {.path = path};
	struct ohc_ranktable *rt;
	json_error_t jerr;
	ohc_status_t st;
	json_t *root;
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
	c.text = text;
	c.len = len;
	if (len == 0) {
		st = rt_fail(&c, "", "file is empty");
		goto out_text;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		st = rt_fail_at(jerr.line > 0 ? jerr.line : 1,
				jerr.column > 0 ? jerr.column : 1, path, "json",
				jerr.text);
		goto out_text;
	}
	rt = calloc(1, sizeof(*rt));
	if (!rt) {
		st = rt_fail_file(OHC_ERR_NO_MEMORY, path, "out of memory");
		goto out_root;
	}
	c.rt = rt;
	st = rt_build(&c, root);
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
out_text:
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
