/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rank table locator: jansson knows the position of syntax errors only,
 * so ohc_ranktable_locate walks the raw JSON text along a field path
 * (server_list[1].device[0].rank_id) to put a line and column on every
 * field error. It needs well-formed text only as far as the path goes and
 * never reads past len bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ranktable.h"

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
