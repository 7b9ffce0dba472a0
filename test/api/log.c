/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The log as a user reads it, through the shipped libraries: every line
 * with a timestamp, host and pid, and the rank and communicator where a
 * call has them; a version banner first at INFO; HCCL_ENTRY_LOG_ENABLE
 * lines with the call's arguments (names, not enum numbers), the first
 * of them complete; OPENHCCL_LOG_FILE's file per rank; bad log settings
 * refused at init, naming the variable.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include "helpers/ohc_test.h"

#define NR 2

static HcclComm comms[NR];

static void *rank_main(void *arg)
{
	int r = (int)(long)arg;
	float buf[256];

	for (int i = 0; i < 256; i++)
		buf[i] = (float)r;
	aclrtSetDevice(r);
	if (HcclAllReduce(buf, buf, 256, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
			  comms[r], NULL) != HCCL_SUCCESS ||
	    buf[0] != 1.0f)
		return (void *)1;
	aclrtResetDevice(r);
	return NULL;
}

/* Two thread ranks and one AllReduce each; 0 on success. */
static int two_ranks(void)
{
	int32_t devs[NR] = {0, 1};
	pthread_t t[NR];
	void *ret;
	int bad = 0;

	if (aclInit(NULL) != ACL_SUCCESS ||
	    HcclCommInitAll(NR, devs, comms) != HCCL_SUCCESS)
		return 1;
	for (long r = 0; r < NR; r++)
		pthread_create(&t[r], NULL, rank_main, (void *)r);
	for (int r = 0; r < NR; r++) {
		pthread_join(t[r], &ret);
		bad |= ret != NULL;
		HcclCommDestroy(comms[r]);
	}
	aclFinalize();
	return bad;
}

/*
 * Run two_ranks() in a child with env (NULL-terminated "NAME=VALUE"), its
 * stderr into err (a malloc'd string); the child's pid into *pid_p.
 */
static int run_child(char *const env[], char **err, pid_t *pid_p)
{
	char path[] = "/tmp/ohc_log_err_XXXXXX";
	int fd = mkstemp(path), st;
	pid_t pid;
	FILE *f;
	long len;

	cr_assert(fd >= 0);
	unlink(path);
	fflush(NULL);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		for (; env && *env; env++)
			putenv(*env);
		dup2(fd, 2);
		_exit(two_ranks());
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	f = fdopen(fd, "r");
	cr_assert(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	*err = calloc(1, (size_t)len + 1);
	cr_assert(*err);
	cr_assert_eq(fread(*err, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*pid_p = pid;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Whether line matches the extended regular expression re. */
static int matches(const char *line, const char *re)
{
	regex_t rx;
	int ok;

	cr_assert_eq(regcomp(&rx, re, REG_EXTENDED | REG_NOSUB), 0, "%s", re);
	ok = regexec(&rx, line, 0, NULL, 0) == 0;
	regfree(&rx);
	return ok;
}

/* "[openhccl <UTC time> <host>:<pid>" */
static void prefix_re(char *buf, size_t len, pid_t pid)
{
	char host[256];

	cr_assert_eq(gethostname(host, sizeof(host)), 0);
	snprintf(buf, len,
		 "^\\[openhccl [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:"
		 "[0-9]{2}\\.[0-9]{6}Z %s:%d",
		 host, (int)pid);
}

Test(log, lines_name_time_host_pid_rank_and_comm)
{
	char *env[] = {"OPENHCCL_DEBUG=INFO", "HCCL_ENTRY_LOG_ENABLE=1", NULL};
	char *err, *line, *save = NULL, pre[512], re[1024];
	int n = 0, ranked[NR] = {0}, entry[NR] = {0};
	pid_t pid;

	cr_assert_eq(run_child(env, &err, &pid), 0, "%s", err);
	prefix_re(pre, sizeof(pre), pid);
	for (line = strtok_r(err, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), n++) {
		cr_expect(matches(line, pre), "line %d: %s", n, line);
		if (n == 0) {
			snprintf(re, sizeof(re),
				 "%s\\] INFO OpenHCCL [0-9]+\\.[0-9]+\\.[0-9]+ "
				 "\\(.*libascendcl\\.so.*\\): log level INFO",
				 pre);
			cr_expect(matches(line, re), "first line: %s", line);
		}
		for (int r = 0; r < NR; r++) {
			snprintf(re, sizeof(re), "%s rank %d comm '[^']+'\\] ",
				 pre, r);
			if (!matches(line, re))
				continue;
			ranked[r]++;
			snprintf(re, sizeof(re),
				 "\\] INFO call "
				 "HcclAllReduce\\(sendBuf=0x[0-9a-f]+, "
				 "recvBuf=0x[0-9a-f]+, count=256, "
				 "dataType=float32, op=sum, comm=0x[0-9a-f]+, "
				 "stream=\\(nil\\)\\) "
				 "\\(api_coll\\.c:[0-9]+\\)$");
			entry[r] += matches(line, re);
		}
	}
	cr_expect_gt(n, 4);
	for (int r = 0; r < NR; r++) {
		cr_expect_gt(ranked[r], 1, "rank %d has no lines of its own",
			     r);
		cr_expect_eq(entry[r], 1, "rank %d: its AllReduce call", r);
	}
	free(err);
}

/* The first line of a process, an entry line at WARN, is complete. */
Test(log, first_entry_line_is_complete)
{
	char *env[] = {"HCCL_ENTRY_LOG_ENABLE=1", NULL};
	char *err, pre[512], re[1024];
	pid_t pid;

	cr_assert_eq(run_child(env, &err, &pid), 0, "%s", err);
	prefix_re(pre, sizeof(pre), pid);
	*strchrnul(err, '\n') = '\0';
	snprintf(re, sizeof(re),
		 "%s\\] INFO call HcclCommInitAll\\(ndev=2, devices=0x", pre);
	cr_expect(matches(err, re), "first line: %s", err);
	free(err);
}

/* OPENHCCL_LOG_FILE with %r: a file per rank, nothing on stderr. */
Test(log, file_per_rank)
{
	char dir[] = "/tmp/ohc_log_dir_XXXXXX", pat[512], path[600];
	char *err, *env[] = {"OPENHCCL_DEBUG=INFO", pat, NULL};
	int banners = 0, files = 0;
	struct dirent *e;
	pid_t pid;
	DIR *d;

	cr_assert(mkdtemp(dir));
	snprintf(pat, sizeof(pat), "OPENHCCL_LOG_FILE=%s/ohc.%%h.%%p.%%r.log",
		 dir);
	cr_assert_eq(run_child(env, &err, &pid), 0, "%s", err);
	cr_expect_str_eq(err, "", "nothing on stderr");
	free(err);
	for (int r = 0; r < NR; r++) {
		char host[256], line[2048];
		int mine = 0, other = 0;
		FILE *f;

		gethostname(host, sizeof(host));
		snprintf(path, sizeof(path), "%s/ohc.%s.%d.%d.log", dir, host,
			 (int)pid, r);
		f = fopen(path, "r");
		cr_assert(f, "%s missing", path);
		while (fgets(line, sizeof(line), f)) {
			int lr;

			/* the rank in the line's prefix, if any */
			if (sscanf(line, "[openhccl %*s %*s rank %d", &lr) ==
			    1) {
				mine += lr == r;
				other += lr != r;
			}
			banners += strstr(line, "INFO OpenHCCL ") != NULL;
		}
		fclose(f);
		cr_expect_gt(mine, 0, "%s has no rank %d lines", path, r);
		cr_expect_eq(other, 0, "%s has another rank's lines", path);
	}
	/* the banner, written before any rank was known, went to one */
	cr_expect_eq(banners, 1);
	d = opendir(dir);
	cr_assert(d);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		files++;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
	cr_expect_eq(files, NR, "one file per rank, no 'none' file");
}

/* A bad log setting: init refuses with HCCL_E_PARA, naming it. */
static void expect_refused(const char *env, const char *want)
{
	char path[] = "/tmp/ohc_log_bad_XXXXXX", buf[8192] = "";
	int fd = mkstemp(path), saved = dup(2);
	HcclRootInfo root;
	ssize_t len;

	cr_assert(fd >= 0 && saved >= 0);
	unlink(path);
	putenv((char *)env);
	cr_assert_eq(dup2(fd, 2), 2);
	cr_expect_eq(HcclGetRootInfo(&root), HCCL_E_PARA, "%s", env);
	cr_assert_eq(dup2(saved, 2), 2);
	close(saved);
	len = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	cr_assert_gt(len, 0, "%s: nothing said", env);
	buf[len] = '\0';
	cr_expect(strstr(buf, want), "%s: want '%s' in:\n%s", env, want, buf);
}

Test(log, bad_level_refused)
{
	expect_refused("OPENHCCL_DEBUG=LOUD",
		       "OPENHCCL_DEBUG='LOUD' is not a log level: NONE, ERROR, "
		       "WARN, INFO, DEBUG or TRACE");
}

Test(log, bad_subsystem_refused)
{
	expect_refused("OPENHCCL_DEBUG_SUBSYS=coll,bogus",
		       "OPENHCCL_DEBUG_SUBSYS='coll,bogus' names an unknown "
		       "subsystem 'bogus'");
}

Test(log, bad_file_pattern_refused)
{
	expect_refused("OPENHCCL_LOG_FILE=/tmp/ohc.%x.log",
		       "OPENHCCL_LOG_FILE='/tmp/ohc.%x.log' has '%x'");
}

Test(log, file_in_missing_directory_refused)
{
	expect_refused("OPENHCCL_LOG_FILE=/no/such/dir/ohc.log",
		       "OPENHCCL_LOG_FILE='/no/such/dir/ohc.log' is in "
		       "/no/such/dir, which is not a directory");
}
