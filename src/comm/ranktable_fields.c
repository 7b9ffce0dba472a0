/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rank table walk: the document's objects in file order (top level,
 * server_list entries, their devices), every field validated on its own
 * (kind, plain decimal in range, IPv4/IPv6 address, identifier length)
 * and named by its field path in the error; host ports distinct within a
 * server; unknown keys ignored with a warning (and a "did you mean" when a
 * known key is close). The message helpers (field paths, quoted values,
 * kinds) live here too. What needs the whole table is ranktable_build.c.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "comm/ranktable_int.h"
#include "util/log.h"

/* A user string made safe and short for a message (printable ASCII). */
const char *ohc_ranktable_quote(char *buf, size_t size, const char *s)
{
	size_t i, n = strlen(s), max = OHC_MIN(size - 4, (size_t)RT_QUOTE_MAX);

	for (i = 0; i < n && i < max; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	buf[i] = '\0';
	if (n > max)
		strcpy(buf + i, "...");
	return buf;
}

const char *ohc_ranktable_kind(const json_t *v)
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

/* Format a field path into buf[RT_FIELD_MAX]. */
void ohc_ranktable_path(char *buf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, RT_FIELD_MAX, fmt, ap);
	va_end(ap);
}

const char *ohc_ranktable_field(char *buf, const char *prefix, const char *key)
{
	ohc_ranktable_path(buf, "%s%s%s", prefix, *prefix ? "." : "", key);
	return buf;
}

/* obj[key] as a string; *s_p = NULL when absent and not required. */
ohc_status_t ohc_ranktable_get_str(const struct rt_ctx *c, json_t *obj,
				   const char *prefix, const char *key,
				   bool required, const char **s_p)
{
	json_t *v = json_object_get(obj, key);
	char f[RT_FIELD_MAX];

	ohc_ranktable_field(f, prefix, key);
	if (!v) {
		if (required)
			return ohc_ranktable_fail(c, f, "missing (required)");
		*s_p = NULL;
		return OHC_OK;
	}
	if (!json_is_string(v))
		return ohc_ranktable_fail(c, f, "must be a string, not %s",
					  ohc_ranktable_kind(v));
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

	OHC_CHECK(ohc_ranktable_get_str(c, obj, prefix, key, required, &s));
	if (!s) {
		*v_p = -1;
		return OHC_OK;
	}
	if (!rt_parse_dec(s, &v) || v < min || v > max)
		return ohc_ranktable_fail(
			c, ohc_ranktable_field(f, prefix, key),
			"\"%s\" is not a decimal integer in [%llu, %llu]",
			ohc_ranktable_quote(q, sizeof(q), s),
			(unsigned long long)min, (unsigned long long)max);
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

	OHC_CHECK(ohc_ranktable_get_str(c, obj, prefix, key, false, &s));
	if (!s) {
		out[0] = '\0';
		return OHC_OK;
	}
	if (strlen(s) >= 64 || (inet_pton(AF_INET, s, addr) != 1 &&
				inet_pton(AF_INET6, s, addr) != 1))
		return ohc_ranktable_fail(
			c, ohc_ranktable_field(f, prefix, key),
			"\"%s\" is not an IPv4 or IPv6 address",
			ohc_ranktable_quote(q, sizeof(q), s));
	strcpy(out, s);
	return OHC_OK;
}

/* obj[key] as an identifier: non-empty, at most max bytes. */
ohc_status_t ohc_ranktable_get_id(const struct rt_ctx *c, json_t *obj,
				  const char *prefix, const char *key,
				  size_t max, char *out)
{
	char f[RT_FIELD_MAX];
	const char *s = NULL;
	size_t n;

	OHC_CHECK(ohc_ranktable_get_str(c, obj, prefix, key, true, &s));
	n = strlen(s);
	if (n == 0)
		return ohc_ranktable_fail(c,
					  ohc_ranktable_field(f, prefix, key),
					  "must not be empty");
	if (n > max)
		return ohc_ranktable_fail(
			c, ohc_ranktable_field(f, prefix, key),
			"is %zu bytes long; at most %zu allowed", n, max);
	memcpy(out, s, n + 1);
	return OHC_OK;
}

/* A member of obj that must be an array (non-empty unless may_be_empty). */
ohc_status_t ohc_ranktable_get_array(const struct rt_ctx *c, json_t *obj,
				     const char *prefix, const char *key,
				     bool may_be_empty, json_t **arr_p)
{
	json_t *v = json_object_get(obj, key);
	char f[RT_FIELD_MAX];

	ohc_ranktable_field(f, prefix, key);
	if (!v)
		return ohc_ranktable_fail(c, f, "missing (required)");
	if (!json_is_array(v))
		return ohc_ranktable_fail(c, f, "must be an array, not %s",
					  ohc_ranktable_kind(v));
	if (!may_be_empty && json_array_size(v) == 0)
		return ohc_ranktable_fail(c, f, "must not be empty");
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
void ohc_ranktable_warn_unknown(const struct rt_ctx *c, json_t *obj,
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
		ohc_ranktable_field(f, prefix, key);
		ohc_ranktable_locate(c->text, c->len, f, &line, &col);
		OHC_WARN(OHC_SS_BOOT,
			 "rank table %s:%d:%d: %s: unknown key \"%s\" "
			 "ignored%s%s%s",
			 c->path, line, col, *prefix ? prefix : "(top level)",
			 ohc_ranktable_quote(q, sizeof(q), key),
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

ohc_status_t ohc_ranktable_parse_top(struct rt_ctx *c, json_t *root,
				     json_t **servers_p)
{
	char q[RT_QUOTE_MAX + 4];
	json_t *servers;
	const char *s = NULL;
	int64_t count;

	if (!json_is_object(root))
		return ohc_ranktable_fail(c, "",
					  "must be a JSON object, not %s",
					  ohc_ranktable_kind(root));
	OHC_CHECK(ohc_ranktable_get_str(c, root, "", "status", true, &s));
	if (strcmp(s, "completed"))
		return ohc_ranktable_fail(c, "status",
					  "\"%s\" is not \"completed\"",
					  ohc_ranktable_quote(q, sizeof(q), s));
	OHC_CHECK(ohc_ranktable_get_str(c, root, "", "version", true, &s));
	if (!strcmp(s, "1.0"))
		c->version = 10;
	else if (!strcmp(s, "1.2"))
		c->version = 12;
	else
		return ohc_ranktable_fail(
			c, "version",
			"\"%s\" is not a supported version (\"1.0\" or "
			"\"1.2\")",
			ohc_ranktable_quote(q, sizeof(q), s));
	/* required in 1.0, optional in 1.2 */
	OHC_CHECK(rt_get_dec(c, root, "", "server_count", c->version == 10, 1,
			     UINT32_MAX, &count));
	OHC_CHECK(ohc_ranktable_get_array(c, root, "", "server_list", false,
					  &servers));
	if (json_array_size(servers) > UINT32_MAX / 2)
		return ohc_ranktable_fail(c, "server_list", "too many servers");
	if (count >= 0 && (size_t)count != json_array_size(servers))
		return ohc_ranktable_fail(
			c, "server_count",
			"\"%lld\" does not match server_list, which has "
			"%zu servers",
			(long long)count, json_array_size(servers));
	ohc_ranktable_warn_unknown(c, root, "", rt_top_keys);
	*servers_p = servers;
	return OHC_OK;
}

static ohc_status_t rt_parse_device(struct rt_ctx *c, json_t *dev, uint32_t si,
				    uint32_t di)
{
	struct rt_dev *d = &c->devs[c->ndevs];
	char pre[RT_FIELD_MAX];
	int64_t v;

	ohc_ranktable_path(pre, "server_list[%u].device[%u]", si, di);
	if (!json_is_object(dev))
		return ohc_ranktable_fail(c, pre, "must be an object, not %s",
					  ohc_ranktable_kind(dev));
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
	ohc_ranktable_warn_unknown(c, dev, pre, rt_device_keys);
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
			ohc_ranktable_path(
				f, "server_list[%u].device[%u].host_port", si,
				c->devs[a].index);
			return ohc_ranktable_fail(
				c, f,
				"\"%d\" is also the host_port of "
				"server_list[%u].device[%u]; host ports "
				"must be distinct within a server",
				c->devs[a].r.host_port, si, c->devs[b].index);
		}
	}
	return OHC_OK;
}

ohc_status_t ohc_ranktable_parse_server(struct rt_ctx *c, json_t *srv,
					uint32_t si)
{
	struct ohc_rt_server *s = &c->rt->servers[si];
	uint32_t first = c->ndevs;
	char pre[RT_FIELD_MAX];
	json_t *devs;

	ohc_ranktable_path(pre, "server_list[%u]", si);
	if (!json_is_object(srv))
		return ohc_ranktable_fail(c, pre, "must be an object, not %s",
					  ohc_ranktable_kind(srv));
	OHC_CHECK(ohc_ranktable_get_id(c, srv, pre, "server_id",
				       OHC_RANKTABLE_SERVER_ID_MAX,
				       s->server_id));
	OHC_CHECK(rt_get_ip(c, srv, pre, "host_ip", s->host_ip));
	OHC_CHECK(ohc_ranktable_get_array(c, srv, pre, "device", false, &devs));
	ohc_ranktable_warn_unknown(c, srv, pre, rt_server_keys);
	for (size_t di = 0; di < json_array_size(devs); di++)
		OHC_CHECK(rt_parse_device(c, json_array_get(devs, di), si,
					  (uint32_t)di));
	s->nranks = c->ndevs - first;
	return rt_check_host_ports(c, first, si);
}
