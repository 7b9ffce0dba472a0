/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the bootstrap's messages prove, and what names may show.
 *
 * A job's raw token is the root info's random 64 bits (root-info mode,
 * drawn by bs_random64 below) or the rank table's content hash (rank-table
 * mode). It never travels or appears in a log line or a name itself;
 * everything is derived from it with SipHash-2-4 under the job key:
 * - join token = H(key, "ohc-join" | raw): presented in JOIN and HELLO;
 * - welcome = H(key, "ohc-welc" | raw | rank): the root's answer to a
 *   JOIN, so a rank can tell its root from whatever else holds the port;
 * - public id = H(fixed, "ohc-name" | raw): the identifier in names.
 * The job key is derived from OPENHCCL_BOOTSTRAP_SECRET (or the contents
 * of OPENHCCL_BOOTSTRAP_SECRET_FILE) when one is set, else it is a fixed
 * constant: then whoever holds the root info or can read the rank table
 * can compute the tokens, as in HCCL. The bootstrap is not encrypted; the
 * secret keeps strangers out, not eavesdroppers on the wire.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "comm/bootstrap/bs_internal.h"
#include "util/config.h"
#include "util/file.h"
#include "util/log.h"
#include "util/siphash.h"

#define SECRET_FILE_MAX 4096

/* Arbitrary constants: the key without a secret, and the key that turns a
 * secret into a job key. */
static const uint64_t key_public[2] = {0x6f70656e6863636cull,
				       0x2d626f6f74737472ull};
static const uint64_t key_derive[2] = {0x6b65792d66726f6dull,
				       0x2d7365637265742eull};

static uint64_t derive(const uint64_t key[2], const char tag[8], uint64_t raw,
		       uint32_t extra)
{
	uint8_t msg[20];

	memcpy(msg, tag, 8);
	ohc_be_put64(msg + 8, raw);
	ohc_be_put32(msg + 16, extra);
	return ohc_siphash24(key, msg, sizeof(msg));
}

static void key_from_secret(const char *s, size_t len, uint64_t key[2])
{
	uint8_t buf[8 + SECRET_FILE_MAX];

	memcpy(buf + 8, s, len);
	memcpy(buf, "ohc-key0", 8);
	key[0] = ohc_siphash24(key_derive, buf, 8 + len);
	memcpy(buf, "ohc-key1", 8);
	key[1] = ohc_siphash24(key_derive, buf, 8 + len);
	memset(buf, 0, sizeof(buf));
}

/* The secret file's contents, without one trailing newline. */
static ohc_status_t secret_file_key(const char *path, uint64_t key[2])
{
	char why[256], *text = NULL;
	struct stat st;
	size_t len;
	ohc_status_t status;

	status = ohc_file_read(path, SECRET_FILE_MAX, &text, &len, why,
			       sizeof(why));
	if (status < 0) {
		OHC_ERROR(OHC_SS_BOOT, "OPENHCCL_BOOTSTRAP_SECRET_FILE %s: %s",
			  path, why);
		return status;
	}
	if (len && text[len - 1] == '\n')
		len--;
	if (len && text[len - 1] == '\r')
		len--;
	if (len == 0) {
		OHC_ERROR(OHC_SS_BOOT,
			  "OPENHCCL_BOOTSTRAP_SECRET_FILE %s is empty", path);
		free(text);
		return OHC_ERR_INVALID;
	}
	if (stat(path, &st) == 0 && (st.st_mode & 077))
		OHC_WARN(OHC_SS_BOOT,
			 "OPENHCCL_BOOTSTRAP_SECRET_FILE %s is readable by "
			 "other users (mode %03o); whoever reads it can join "
			 "this job (chmod 600 it)",
			 path, (unsigned)(st.st_mode & 0777));
	key_from_secret(text, len, key);
	memset(text, 0, len);
	free(text);
	return OHC_OK;
}

ohc_status_t bs_auth_init(uint64_t raw, struct bs_auth *auth_p)
{
	const struct ohc_env *env = ohc_env();
	const char *secret = env->bootstrap_secret;
	const char *path = env->bootstrap_secret_file;
	ohc_status_t status;

	auth_p->raw = raw;
	auth_p->keyed = 0;
	if (secret[0] && path[0]) {
		OHC_ERROR(OHC_SS_BOOT,
			  "OPENHCCL_BOOTSTRAP_SECRET and "
			  "OPENHCCL_BOOTSTRAP_SECRET_FILE are both set; set "
			  "one");
		return OHC_ERR_INVALID;
	}
	if (path[0]) {
		status = secret_file_key(path, auth_p->key);
		if (status < 0)
			return status;
		auth_p->keyed = 1;
	} else if (secret[0]) {
		key_from_secret(secret, strlen(secret), auth_p->key);
		auth_p->keyed = 1;
	} else {
		memcpy(auth_p->key, key_public, sizeof(key_public));
	}
	return OHC_OK;
}

uint64_t bs_auth_join(const struct bs_auth *auth)
{
	return derive(auth->key, "ohc-join", auth->raw, 0);
}

uint64_t bs_auth_welcome(const struct bs_auth *auth, uint32_t rank)
{
	return derive(auth->key, "ohc-welc", auth->raw, rank);
}

uint64_t bs_auth_public_id(uint64_t raw)
{
	return derive(key_public, "ohc-name", raw, 0);
}

ohc_status_t bs_random64(uint64_t *v_p)
{
	uint64_t v = 0;
	size_t got = 0;

	while (got < sizeof(v)) {
		ssize_t n = getrandom((char *)&v + got, sizeof(v) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			OHC_ERROR(OHC_SS_BOOT, "getrandom failed: %s",
				  strerror(errno));
			return OHC_ERR_SYSCALL;
		}
		got += (size_t)n;
	}
	*v_p = v ? v : 0x9e3779b97f4a7c15ull;
	return OHC_OK;
}
