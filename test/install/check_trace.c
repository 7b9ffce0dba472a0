/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_trace: the acceptance checks of profile traces (Chrome trace JSON
 * written by aclprofStop or OPENHCCL_PROFILE, or merged by
 * hccl_prof_merge). Every file parses; on every lane (pid, tid) the "X"
 * events follow each other without overlapping, each starting after its
 * enqueue; every HCCL event names its algorithm, bytes and peers; every
 * rank 0..NRANKS-1 ran each named operation; every file holds each
 * "rt:"-prefixed runtime task.
 *
 * usage: check_trace [-n FILES] PATH NRANKS NAME...
 *   PATH   a trace file, or a directory of openhccl_*.json files
 *   -n     the number of files PATH must hold
 * Exit status 0 when every check passes, 1 otherwise (each failure named).
 */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILES 256
#define MAX_RANKS 256
#define MAX_NAMES 32
#define MAX_LANES 4096
#define EPS_US 0.0015 /* ts and dur are rounded to 0.001 us */

static int failures;

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "check_trace: " __VA_ARGS__);                  \
		fputc('\n', stderr);                                           \
		failures++;                                                    \
	} while (0)

struct lane {
	long long pid, tid;
	double end;
};

static const char *names[MAX_NAMES];
static int nnames;
static unsigned char seen[MAX_NAMES][MAX_RANKS]; /* hccl name x rank */

static const char *str(json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : "";
}

static void check_file(const char *path, int nranks, size_t *nevents_p)
{
	static struct lane lanes[MAX_LANES];
	unsigned char rt_seen[MAX_NAMES] = {0};
	json_error_t jerr;
	json_t *root, *events, *e;
	size_t nlanes = 0, i;

	root = json_load_file(path, 0, &jerr);
	if (!root) {
		FAIL("%s:%d:%d: not JSON: %s", path, jerr.line, jerr.column,
		     jerr.text);
		return;
	}
	events = json_object_get(root, "traceEvents");
	if (!json_is_array(events)) {
		FAIL("%s: no traceEvents array", path);
		json_decref(root);
		return;
	}
	json_array_foreach(events, i, e)
	{
		json_t *args = json_object_get(e, "args");
		const char *name = str(e, "name"), *cat = str(e, "cat");
		long long pid = json_integer_value(json_object_get(e, "pid"));
		long long tid = json_integer_value(json_object_get(e, "tid"));
		double ts = json_number_value(json_object_get(e, "ts"));
		double dur = json_number_value(json_object_get(e, "dur"));
		json_t *enq = json_object_get(args, "enqueue_ts");
		size_t l;

		if (strcmp(str(e, "ph"), "X"))
			continue;
		(*nevents_p)++;
		if (!json_is_number(json_object_get(e, "ts")) ||
		    !json_is_number(json_object_get(e, "dur")) || dur < 0)
			FAIL("%s: event %zu (%s): bad ts/dur", path, i, name);
		if (enq && json_number_value(enq) > ts + EPS_US)
			FAIL("%s: event %zu (%s) starts at %.3f us, before its "
			     "enqueue at %.3f us",
			     path, i, name, ts, json_number_value(enq));
		for (l = 0; l < nlanes; l++)
			if (lanes[l].pid == pid && lanes[l].tid == tid)
				break;
		if (l == nlanes) {
			if (nlanes == MAX_LANES) {
				FAIL("%s: more than %d lanes", path, MAX_LANES);
				break;
			}
			lanes[nlanes++] = (struct lane){pid, tid, -1e300};
		}
		if (ts + EPS_US < lanes[l].end)
			FAIL("%s: event %zu (%s) at %.3f us overlaps the "
			     "previous one on lane %lld/%lld (ends %.3f us)",
			     path, i, name, ts, pid, tid, lanes[l].end);
		lanes[l].end = ts + dur;

		if (!strcmp(cat, "runtime")) {
			for (int k = 0; k < nnames; k++)
				if (!strncmp(names[k], "rt:", 3) &&
				    !strcmp(names[k] + 3, name))
					rt_seen[k] = 1;
			continue;
		}
		if (strcmp(cat, "hccl")) {
			FAIL("%s: event %zu (%s): category '%s'", path, i, name,
			     cat);
			continue;
		}
		{
			long long rank = json_integer_value(
				json_object_get(args, "rank"));
			long long n = json_integer_value(
				json_object_get(args, "nranks"));
			json_t *peers = json_object_get(args, "peers");

			if (!json_is_string(json_object_get(args, "algorithm")))
				FAIL("%s: %s of rank %lld: no algorithm", path,
				     name, rank);
			if (!json_is_integer(json_object_get(args, "bytes")))
				FAIL("%s: %s of rank %lld: no bytes", path,
				     name, rank);
			if (!json_is_array(peers) ||
			    (n > 1 && json_array_size(peers) == 0))
				FAIL("%s: %s of rank %lld: no peers", path,
				     name, rank);
			if (n != nranks)
				FAIL("%s: %s of rank %lld: nranks %lld, want "
				     "%d",
				     path, name, rank, n, nranks);
			if (rank < 0 || rank >= nranks)
				FAIL("%s: %s: rank %lld", path, name, rank);
			else
				for (int k = 0; k < nnames; k++)
					if (!strcmp(names[k], name))
						seen[k][rank] = 1;
		}
	}
	for (int k = 0; k < nnames; k++)
		if (!strncmp(names[k], "rt:", 3) && !rt_seen[k])
			FAIL("%s: no runtime task %s", path, names[k] + 3);
	json_decref(root);
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	char *files[MAX_FILES];
	int nfiles = 0, want_files = -1, nranks, opt;
	size_t nevents = 0;
	struct stat st;
	const char *path;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n') {
			fprintf(stderr, "usage: check_trace [-n FILES] PATH "
					"NRANKS NAME...\n");
			return 2;
		}
		want_files = atoi(optarg);
	}
	if (argc - optind < 3) {
		fprintf(stderr,
			"usage: check_trace [-n FILES] PATH NRANKS NAME...\n");
		return 2;
	}
	path = argv[optind];
	nranks = atoi(argv[optind + 1]);
	if (nranks < 1 || nranks > MAX_RANKS) {
		fprintf(stderr, "check_trace: NRANKS %s outside 1..%d\n",
			argv[optind + 1], MAX_RANKS);
		return 2;
	}
	for (int i = optind + 2; i < argc && nnames < MAX_NAMES; i++)
		names[nnames++] = argv[i];

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;

		while (d && (e = readdir(d)) && nfiles < MAX_FILES) {
			size_t len = strlen(e->d_name);

			if (strncmp(e->d_name, "openhccl_", 9) || len < 5 ||
			    strcmp(e->d_name + len - 5, ".json"))
				continue;
			files[nfiles] = malloc(strlen(path) + len + 2);
			if (!files[nfiles])
				break;
			sprintf(files[nfiles++], "%s/%s", path, e->d_name);
		}
		if (d)
			closedir(d);
	} else {
		files[nfiles] = strdup(path);
		if (files[nfiles])
			nfiles++;
	}
	qsort(files, (size_t)nfiles, sizeof(files[0]), cmp);
	if (want_files >= 0 && nfiles != want_files)
		FAIL("%s: %d trace files, want %d", path, nfiles, want_files);
	for (int f = 0; f < nfiles; f++) {
		check_file(files[f], nranks, &nevents);
		free(files[f]);
	}
	for (int k = 0; k < nnames; k++) {
		if (!strncmp(names[k], "rt:", 3))
			continue;
		for (int r = 0; r < nranks; r++)
			if (!seen[k][r])
				FAIL("%s: rank %d ran no %s", path, r,
				     names[k]);
	}
	if (!nevents)
		FAIL("%s: no events", path);
	if (failures) {
		fprintf(stderr, "check_trace: %d failure(s)\n", failures);
		return 1;
	}
	printf("check_trace: %s: %d file(s), %zu events; ranks 0..%d ran "
	       "every named op, lanes in order\n",
	       path, nfiles, nevents, nranks - 1);
	return 0;
}
