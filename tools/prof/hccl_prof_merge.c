/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hccl_prof_merge: merge the Chrome trace files that profiled ranks wrote
 * (aclprofStop or OPENHCCL_PROFILE, one per process and session) into one
 * timeline for Perfetto or chrome://tracing.
 *
 * Each file's times count from its own session start, whose wall-clock
 * time (CLOCK_REALTIME, ns) is otherData.base_realtime_ns; the merged file
 * counts from the earliest of them, so ranks line up as far as the hosts'
 * clocks agree (NTP: tens of microseconds between hosts; exact on one).
 * Process ids that two hosts share are renumbered.
 *
 * usage: hccl_prof_merge [-o OUT] FILE|DIR...
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct input {
	char *path;
	json_t *root;
	long long base; /* otherData.base_realtime_ns */
	const char *host;
	long long pid, new_pid;
};

static struct input *inputs;
static size_t ninputs, cap;

static void usage(FILE *f)
{
	fprintf(f, "usage: hccl_prof_merge [-o OUT] FILE|DIR...\n"
		   "Merge OpenHCCL profile traces (Chrome trace JSON, one per "
		   "process and\nsession; a DIR means every openhccl_*.json in "
		   "it) into one timeline,\nwritten to OUT (default: standard "
		   "output).\n");
}

static int add_file(const char *path)
{
	json_error_t jerr;
	json_t *root, *other, *base, *events;
	struct input *in;

	root = json_load_file(path, 0, &jerr);
	if (!root) {
		fprintf(stderr, "hccl_prof_merge: %s:%d:%d: %s\n", path,
			jerr.line, jerr.column, jerr.text);
		return -1;
	}
	other = json_object_get(root, "otherData");
	base = json_object_get(other, "base_realtime_ns");
	events = json_object_get(root, "traceEvents");
	if (!json_is_integer(base) || !json_is_array(events)) {
		fprintf(stderr,
			"hccl_prof_merge: %s: not an OpenHCCL trace (no "
			"otherData.base_realtime_ns or traceEvents)\n",
			path);
		json_decref(root);
		return -1;
	}
	if (ninputs == cap) {
		size_t ncap = cap ? 2 * cap : 16;
		struct input *n = realloc(inputs, ncap * sizeof(*n));

		if (!n) {
			fprintf(stderr, "hccl_prof_merge: out of memory\n");
			json_decref(root);
			return -1;
		}
		inputs = n;
		cap = ncap;
	}
	in = &inputs[ninputs];
	in->path = strdup(path);
	if (!in->path) {
		fprintf(stderr, "hccl_prof_merge: out of memory\n");
		json_decref(root);
		return -1;
	}
	in->root = root;
	in->base = (long long)json_integer_value(base);
	in->host = json_string_value(json_object_get(other, "host"));
	if (!in->host)
		in->host = "";
	in->pid = (long long)json_integer_value(json_object_get(other, "pid"));
	ninputs++;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every openhccl_*.json of dir, in name order. */
static int add_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, ncap = 0;
	int ret = 0;

	if (!d) {
		fprintf(stderr, "hccl_prof_merge: %s: %s\n", dir,
			strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char *p;

		if (strncmp(e->d_name, "openhccl_", 9) || len < 5 ||
		    strcmp(e->d_name + len - 5, ".json"))
			continue;
		if (n == ncap) {
			char **nn;

			ncap = ncap ? 2 * ncap : 16;
			nn = realloc(names, ncap * sizeof(*nn));
			if (!nn) {
				ret = -1;
				break;
			}
			names = nn;
		}
		p = malloc(strlen(dir) + len + 2);
		if (!p) {
			ret = -1;
			break;
		}
		sprintf(p, "%s/%s", dir, e->d_name);
		names[n++] = p;
	}
	closedir(d);
	if (ret)
		fprintf(stderr, "hccl_prof_merge: out of memory\n");
	else if (n == 0)
		fprintf(stderr, "hccl_prof_merge: %s: no openhccl_*.json\n",
			dir);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		if (!ret && add_file(names[i]))
			ret = -1;
		free(names[i]);
	}
	free(names);
	return ret || n == 0 ? -1 : 0;
}

/* Renumber a pid that another host already uses. */
static void assign_pids(void)
{
	long long next = 0;

	for (size_t i = 0; i < ninputs; i++)
		if (inputs[i].pid >= next)
			next = inputs[i].pid + 1;
	for (size_t i = 0; i < ninputs; i++) {
		inputs[i].new_pid = inputs[i].pid;
		for (size_t j = 0; j < i; j++) {
			if (inputs[j].pid != inputs[i].pid ||
			    !strcmp(inputs[j].host, inputs[i].host))
				continue;
			inputs[i].new_pid = next++;
			break;
		}
	}
}

static void shift_number(json_t *obj, const char *key, double by)
{
	json_t *v = json_object_get(obj, key);

	if (json_is_number(v))
		json_object_set_new(obj, key,
				    json_real(json_number_value(v) + by));
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	const char *out = "-";
	json_t *merged, *events, *meta, *list;
	long long base;
	size_t nevents = 0;
	struct stat st;
	int c, ret = 1;

	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "hccl_prof_merge: no input files\n");
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		int rc = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)
				 ? add_dir(argv[i])
				 : add_file(argv[i]);

		if (rc)
			goto out;
	}
	assign_pids();
	base = inputs[0].base;
	for (size_t i = 1; i < ninputs; i++)
		if (inputs[i].base < base)
			base = inputs[i].base;

	merged = json_object();
	events = json_array();
	list = json_array();
	meta = json_object();
	if (!merged || !events || !list || !meta) {
		fprintf(stderr, "hccl_prof_merge: out of memory\n");
		goto out;
	}
	json_object_set_new(merged, "displayTimeUnit", json_string("ns"));
	json_object_set_new(meta, "producer",
			    json_string("OpenHCCL hccl_prof_merge"));
	json_object_set_new(meta, "clock", json_string("CLOCK_REALTIME"));
	json_object_set_new(meta, "base_realtime_ns", json_integer(base));
	for (size_t i = 0; i < ninputs; i++) {
		struct input *in = &inputs[i];
		json_t *ev = json_object_get(in->root, "traceEvents");
		json_t *other = json_object_get(in->root, "otherData");
		double by = (double)(in->base - base) / 1000.0;
		size_t k;
		json_t *e;

		json_array_foreach(ev, k, e)
		{
			if (!json_is_object(e))
				continue;
			if (json_object_get(e, "pid"))
				json_object_set_new(e, "pid",
						    json_integer(in->new_pid));
			if (by != 0.0) {
				shift_number(e, "ts", by);
				shift_number(json_object_get(e, "args"),
					     "enqueue_ts", by);
			}
			json_array_append(events, e);
			nevents++;
		}
		json_object_set_new(other, "file", json_string(in->path));
		json_object_set_new(other, "merged_pid",
				    json_integer(in->new_pid));
		json_array_append(list, other);
	}
	json_object_set_new(meta, "inputs", list);
	json_object_set_new(merged, "otherData", meta);
	json_object_set_new(merged, "traceEvents", events);
	if (strcmp(out, "-") == 0)
		c = json_dumpf(merged, stdout,
			       JSON_COMPACT | JSON_REAL_PRECISION(16));
	else
		c = json_dump_file(merged, out,
				   JSON_COMPACT | JSON_REAL_PRECISION(16));
	json_decref(merged);
	if (c) {
		fprintf(stderr, "hccl_prof_merge: cannot write %s\n", out);
		goto out;
	}
	fprintf(stderr, "hccl_prof_merge: %zu files, %zu events -> %s\n",
		ninputs, nevents, out);
	ret = 0;
out:
	for (size_t i = 0; i < ninputs; i++) {
		json_decref(inputs[i].root);
		free(inputs[i].path);
	}
	free(inputs);
	return ret;
}
