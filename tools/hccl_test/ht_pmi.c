/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PMI-1 wire protocol (see ht_pmi.h): "cmd=NAME key=value ...\n" lines,
 * each request answered by one line. The commands used and their answers:
 *   init pmi_version=1 pmi_subversion=1 -> response_to_init rc=0
 *   get_maxes                           -> maxes vallen_max=N ...
 *   get_my_kvsname                      -> my_kvsname kvsname=K
 *   put kvsname=K key=A value=V          -> put_result rc=0
 *   barrier_in                          -> barrier_out
 *   get kvsname=K key=A                 -> get_result rc=0 value=V
 *   finalize                            -> finalize_ack
 *   abort exitcode=N                    (the launcher ends the job)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ht_pmi.h"

#define PMI_LINE 4096

static int env_int(const char *name, int *v_p)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > 1 << 30)
		return -1;
	*v_p = (int)v;
	return 0;
}

int ht_pmi_available(void)
{
	int v;

	return !env_int("PMI_FD", &v) && !env_int("PMI_RANK", &v) &&
	       !env_int("PMI_SIZE", &v);
}

static int send_line(struct ht_pmi *p, const char *line, char *err, size_t len)
{
	size_t n = strlen(line), off = 0;

	while (off < n) {
		ssize_t w = write(p->fd, line + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(err, len, "PMI: cannot write to PMI_FD %d: %s",
				 p->fd, w < 0 ? strerror(errno) : "closed");
			return -1;
		}
		off += (size_t)w;
	}
	return 0;
}

/* One answer line (without the newline) into buf. */
static int recv_line(struct ht_pmi *p, char *buf, size_t blen, char *err,
		     size_t len)
{
	size_t n = 0;

	for (;;) {
		char c;
		ssize_t r = read(p->fd, &c, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(err, len,
				 "PMI: the launcher closed PMI_FD %d%s%s",
				 p->fd, r < 0 ? ": " : "",
				 r < 0 ? strerror(errno) : "");
			return -1;
		}
		if (c == '\n')
			break;
		if (n + 1 < blen)
			buf[n++] = c;
	}
	buf[n] = '\0';
	return 0;
}

/* The value of key in an answer line ("" when absent). */
static void field(const char *line, const char *key, char *out, size_t olen)
{
	size_t kl = strlen(key);
	const char *s = line;

	out[0] = '\0';
	while ((s = strstr(s, key))) {
		if ((s == line || s[-1] == ' ') && s[kl] == '=') {
			const char *v = s + kl + 1;
			size_t n = strcspn(v, " \n");

			snprintf(out, olen, "%.*s", (int)n, v);
			return;
		}
		s += kl;
	}
}

/* Send req, read the answer, check it is cmd=want with rc 0 (or none). */
static int call(struct ht_pmi *p, const char *req, const char *want, char *ans,
		size_t alen, char *err, size_t len)
{
	char cmd[64], rc[16], what[32];

	if (send_line(p, req, err, len) || recv_line(p, ans, alen, err, len))
		return -1;
	field(ans, "cmd", cmd, sizeof(cmd));
	field(ans, "rc", rc, sizeof(rc));
	snprintf(what, sizeof(what), "%.*s", (int)strcspn(req, " \n"), req);
	if (strcmp(cmd, want)) {
		snprintf(err, len, "PMI: '%s' got '%.200s', not cmd=%s", what,
			 ans, want);
		return -1;
	}
	if (rc[0] && strcmp(rc, "0")) {
		snprintf(err, len, "PMI: '%s' failed: %.200s", what, ans);
		return -1;
	}
	return 0;
}

int ht_pmi_init(struct ht_pmi *p, char *err, size_t len)
{
	char ans[PMI_LINE], v[64];

	memset(p, 0, sizeof(*p));
	if (env_int("PMI_FD", &p->fd) || env_int("PMI_RANK", &p->rank) ||
	    env_int("PMI_SIZE", &p->size) || p->size < 1 ||
	    p->rank >= p->size) {
		snprintf(err, len,
			 "PMI: PMI_FD, PMI_RANK and PMI_SIZE do not describe a "
			 "rank of a job");
		return -1;
	}
	if (call(p, "cmd=init pmi_version=1 pmi_subversion=1\n",
		 "response_to_init", ans, sizeof(ans), err, len) ||
	    call(p, "cmd=get_maxes\n", "maxes", ans, sizeof(ans), err, len))
		return -1;
	field(ans, "vallen_max", v, sizeof(v));
	p->vallen_max = atoi(v);
	if (p->vallen_max < 64) {
		snprintf(err, len, "PMI: vallen_max '%s' is too small", v);
		return -1;
	}
	if (call(p, "cmd=get_my_kvsname\n", "my_kvsname", ans, sizeof(ans), err,
		 len))
		return -1;
	field(ans, "kvsname", p->kvs, sizeof(p->kvs));
	if (!p->kvs[0]) {
		snprintf(err, len, "PMI: no kvsname in '%.200s'", ans);
		return -1;
	}
	return 0;
}

int ht_pmi_put(struct ht_pmi *p, const char *key, const char *val, char *err,
	       size_t len)
{
	char req[PMI_LINE], ans[PMI_LINE];

	if ((size_t)snprintf(req, sizeof(req),
			     "cmd=put kvsname=%s key=%s value=%s\n", p->kvs,
			     key, val) >= sizeof(req)) {
		snprintf(err, len, "PMI: value of %s too long", key);
		return -1;
	}
	return call(p, req, "put_result", ans, sizeof(ans), err, len);
}

int ht_pmi_barrier(struct ht_pmi *p, char *err, size_t len)
{
	char ans[PMI_LINE];

	return call(p, "cmd=barrier_in\n", "barrier_out", ans, sizeof(ans), err,
		    len);
}

int ht_pmi_get(struct ht_pmi *p, const char *key, char *val, size_t vlen,
	       char *err, size_t len)
{
	char req[PMI_LINE], ans[PMI_LINE];

	snprintf(req, sizeof(req), "cmd=get kvsname=%s key=%s\n", p->kvs, key);
	if (call(p, req, "get_result", ans, sizeof(ans), err, len))
		return -1;
	field(ans, "value", val, vlen);
	return 0;
}

/*
 * Rank 0's data as hex in keys <name>-0, -1, ... (trailing zero bytes
 * left out), with "<name>-n" = "<significant bytes>:<keys>" ("fail" when
 * rank 0 passed data NULL); then a barrier and every other rank's gets.
 */
int ht_pmi_bcast(struct ht_pmi *p, const char *name, void *data, size_t n,
		 char *err, size_t len)
{
	size_t chunk = (size_t)(p->vallen_max - 1) / 2 * 2, used = n;
	unsigned char *b = data;
	char key[64], val[PMI_LINE];
	unsigned long long total;
	unsigned nkeys;

	if (chunk > sizeof(val) - 1)
		chunk = (sizeof(val) - 1) / 2 * 2;
	if (p->rank == 0) {
		while (b && used && !b[used - 1])
			used--;
		nkeys = (unsigned)((used * 2 + chunk - 1) / chunk);
		for (unsigned k = 0; b && k < nkeys; k++) {
			size_t from = k * chunk / 2, to = from + chunk / 2;

			if (to > used)
				to = used;
			for (size_t i = from; i < to; i++)
				sprintf(val + 2 * (i - from), "%02x", b[i]);
			snprintf(key, sizeof(key), "%s-%u", name, k);
			if (ht_pmi_put(p, key, val, err, len))
				return -1;
		}
		if (b)
			snprintf(val, sizeof(val), "%zu:%u", used, nkeys);
		else
			snprintf(val, sizeof(val), "fail");
		snprintf(key, sizeof(key), "%s-n", name);
		if (ht_pmi_put(p, key, val, err, len))
			return -1;
	}
	if (ht_pmi_barrier(p, err, len))
		return -1;
	if (p->rank == 0)
		return b ? 0 : -1;
	snprintf(key, sizeof(key), "%s-n", name);
	if (ht_pmi_get(p, key, val, sizeof(val), err, len))
		return -1;
	if (!strcmp(val, "fail")) {
		snprintf(err, len, "rank 0 could not make the %s", name);
		return -1;
	}
	if (sscanf(val, "%llu:%u", &total, &nkeys) != 2 || total > n) {
		snprintf(err, len, "PMI: bad %s size '%s'", name, val);
		return -1;
	}
	memset(b, 0, n);
	for (unsigned k = 0; k < nkeys; k++) {
		size_t from = k * chunk / 2, vl;

		snprintf(key, sizeof(key), "%s-%u", name, k);
		if (ht_pmi_get(p, key, val, sizeof(val), err, len))
			return -1;
		vl = strlen(val);
		if (vl % 2 || from + vl / 2 > total) {
			snprintf(err, len, "PMI: %s has a malformed value",
				 key);
			return -1;
		}
		for (size_t i = 0; i < vl / 2; i++) {
			unsigned x;

			if (sscanf(val + 2 * i, "%2x", &x) != 1) {
				snprintf(err, len, "PMI: %s is not hex", key);
				return -1;
			}
			b[from + i] = (unsigned char)x;
		}
	}
	return 0;
}

void ht_pmi_abort(struct ht_pmi *p, int code)
{
	char req[64];

	/* no answer comes: the launcher ends the job */
	snprintf(req, sizeof(req), "cmd=abort exitcode=%d\n", code);
	if (p->fd > 0)
		(void)!write(p->fd, req, strlen(req));
}

void ht_pmi_finalize(struct ht_pmi *p)
{
	char ans[PMI_LINE], err[256];

	if (p->fd > 0)
		call(p, "cmd=finalize\n", "finalize_ack", ans, sizeof(ans), err,
		     sizeof(err));
}
