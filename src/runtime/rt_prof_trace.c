/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profile's trace writer: a stop collects the records of its session
 * (its devices, its kinds, its time span) from every thread's buffer
 * (rt_prof.c), sorts them by start and writes them as one Chrome trace
 * JSON file under the session's directory. Runs under the session lock,
 * while the owners of the buffers go on appending (they publish with
 * release stores; this side reads counts and links with acquire).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hccl/hccl_version.h"
#include "runtime/rt_internal.h"
#include "util/file.h"

/* Lane ids ("tid" in the trace) of work run without a stream. */
#define INLINE_LANE_BASE 0x40000000u

static unsigned file_serial; /* sess_lock */

struct lane {
	uint32_t id; /* "tid" in the trace */
	uint32_t stream_id;
	int32_t dev;
	/* the thread of an inline lane, and the first HCCL record (rank) */
	uint32_t tid;
	const struct ohc_rt_prof_rec *first_hccl;
};

struct trace {
	const struct ohc_rt_prof_session *s;
	const struct ohc_rt_prof_buf *bufs; /* every thread's buffer */
	uint64_t stop_ns;
	const struct ohc_rt_prof_rec **recs;
	size_t n, cap;
	struct lane *lanes;
	size_t nlanes, lanes_cap;
	uint64_t dropped;
};

static bool rec_wanted(const struct ohc_rt_prof_session *s, uint64_t stop_ns,
		       const struct ohc_rt_prof_rec *r, uint32_t dev_total)
{
	if (r->start_ns < s->start_ns || r->end_ns > stop_ns ||
	    !(s->kinds & r->kind))
		return false;
	if (!s->devs || r->dev < 0)
		return true; /* work of no device belongs to every session */
	if ((uint32_t)r->dev >= dev_total)
		return false;
	return s->devs[r->dev / 8] & (1u << (r->dev % 8));
}

static int lane_add(struct trace *t, const struct ohc_rt_prof_rec *r)
{
	uint32_t id = r->stream_id ? r->stream_id : INLINE_LANE_BASE + r->tid;
	struct lane *l;

	for (size_t i = 0; i < t->nlanes; i++) {
		l = &t->lanes[i];
		if (l->id == id) {
			if (!l->first_hccl && r->kind == OHC_RT_PROF_HCCL)
				l->first_hccl = r;
			return 0;
		}
	}
	if (t->nlanes == t->lanes_cap) {
		size_t cap = t->lanes_cap ? 2 * t->lanes_cap : 16;
		struct lane *nl = realloc(t->lanes, cap * sizeof(*nl));

		if (!nl)
			return -1;
		t->lanes = nl;
		t->lanes_cap = cap;
	}
	l = &t->lanes[t->nlanes++];
	l->id = id;
	l->stream_id = r->stream_id;
	l->dev = r->dev;
	l->tid = r->tid;
	l->first_hccl = r->kind == OHC_RT_PROF_HCCL ? r : NULL;
	return 0;
}

/* Collect the session's records (and lanes) from every buffer. */
static int trace_collect(struct trace *t)
{
	uint32_t dev_total = (uint32_t)ohc_rt_device_count();

	for (const struct ohc_rt_prof_buf *b = t->bufs; b; b = b->next) {
		struct ohc_rt_prof_chunk *c =
			__atomic_load_n(&b->head, __ATOMIC_ACQUIRE);

		t->dropped += __atomic_load_n(&b->dropped, __ATOMIC_RELAXED);
		for (; c; c = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE)) {
			uint32_t n = __atomic_load_n(&c->n, __ATOMIC_ACQUIRE);

			for (uint32_t i = 0; i < n; i++) {
				const struct ohc_rt_prof_rec *r = &c->recs[i];

				if (!rec_wanted(t->s, t->stop_ns, r, dev_total))
					continue;
				if (t->n == t->cap) {
					size_t cap = t->cap ? 2 * t->cap : 1024;
					const struct ohc_rt_prof_rec **nr =
						realloc(t->recs,
							cap * sizeof(*nr));

					if (!nr)
						return -1;
					t->recs = nr;
					t->cap = cap;
				}
				t->recs[t->n++] = r;
				if (lane_add(t, r))
					return -1;
			}
		}
	}
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct ohc_rt_prof_rec *x =
		*(const struct ohc_rt_prof_rec *const *)a;
	const struct ohc_rt_prof_rec *y =
		*(const struct ohc_rt_prof_rec *const *)b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->end_ns != y->end_ns)
		return x->end_ns < y->end_ns ? -1 : 1;
	return (x->stream_id > y->stream_id) - (x->stream_id < y->stream_id);
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* The communicator of a record ("" when its name could not be kept). */
static const char *rec_comm(const struct ohc_rt_prof_rec *r)
{
	return r->comm ? r->comm : "";
}

/*
 * Microseconds of t after base (negative allowed) as exact decimal text,
 * "12.345": a slice's ts + dur is then exactly where it ends, so slices
 * that follow each other on a lane never overlap by a rounding.
 */
#define US_LEN 32
static const char *us_after(char buf[US_LEN], uint64_t t, uint64_t base)
{
	uint64_t ns = t >= base ? t - base : base - t;

	snprintf(buf, US_LEN, "%s%llu.%03llu", t >= base ? "" : "-",
		 (unsigned long long)(ns / 1000),
		 (unsigned long long)(ns % 1000));
	return buf;
}

static void write_lane_meta(FILE *f, int pid, const struct lane *l)
{
	const struct ohc_rt_prof_rec *h = l->first_hccl;
	char name[160];
	int len;

	if (l->stream_id)
		len = snprintf(name, sizeof(name), "device %d stream %u",
			       (int)l->dev, l->stream_id);
	else
		len = snprintf(name, sizeof(name),
			       "device %d thread %u (no stream)", (int)l->dev,
			       l->tid);
	if (h && len > 0 && (size_t)len < sizeof(name))
		snprintf(name + len, sizeof(name) - (size_t)len,
			 ": rank %d of %s", (int)h->rank, rec_comm(h));
	fprintf(f,
		"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,"
		"\"tid\":%u,\"args\":{\"name\":",
		pid, l->id);
	json_str(f, name);
	fprintf(f,
		"}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\","
		"\"pid\":%d,\"tid\":%u,\"args\":{\"sort_index\":%lld}},\n",
		pid, l->id,
		(long long)(l->dev + 1) * 1000000ll +
			(l->stream_id ? (long long)l->stream_id : 999999ll));
}

static void write_event(FILE *f, int pid, uint64_t base,
			const struct ohc_rt_prof_rec *r)
{
	uint32_t lane = r->stream_id ? r->stream_id : INLINE_LANE_BASE + r->tid;
	bool hccl = r->kind == OHC_RT_PROF_HCCL;
	char a[US_LEN], b[US_LEN];

	fputs("{\"name\":", f);
	json_str(f, r->name);
	fprintf(f,
		",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%u,"
		"\"ts\":%s,\"dur\":%s,\"args\":{",
		hccl ? "hccl" : "runtime", pid, lane,
		us_after(a, r->start_ns, base),
		us_after(b, r->end_ns, r->start_ns));
	if (hccl) {
		fputs("\"comm\":", f);
		json_str(f, rec_comm(r));
		fprintf(f, ",\"rank\":%d,\"nranks\":%d,", (int)r->rank,
			(int)r->nranks);
		if (r->algo) {
			fputs("\"algorithm\":", f);
			json_str(f, r->algo);
			fputc(',', f);
		}
		fprintf(f, "\"seq\":%llu,\"npeers\":%u,\"peers\":[",
			(unsigned long long)r->seq, r->npeers);
		for (uint32_t i = 0; i < r->npeers && i < OHC_RT_PROF_PEERS;
		     i++)
			fprintf(f, "%s%u", i ? "," : "", r->peers[i]);
		fputs("],", f);
	}
	fprintf(f, "\"bytes\":%llu,\"device\":%d,\"stream\":%u,",
		(unsigned long long)r->bytes, (int)r->dev, r->stream_id);
	if (r->enq_ns && r->enq_ns <= r->start_ns)
		fprintf(f, "\"enqueue_ts\":%s,\"queued_us\":%s,",
			us_after(a, r->enq_ns, base),
			us_after(b, r->start_ns, r->enq_ns));
	fprintf(f, "\"thread\":%u,\"status\":%d}}", r->tid, (int)r->status);
}

/* The ranks seen (distinct communicator, rank), for otherData. */
static void write_ranks(FILE *f, const struct trace *t)
{
	bool first = true;

	fputc('[', f);
	for (size_t i = 0; i < t->n; i++) {
		const struct ohc_rt_prof_rec *r = t->recs[i];
		bool seen = false;

		if (r->kind != OHC_RT_PROF_HCCL)
			continue;
		for (size_t j = 0; j < i && !seen; j++) {
			const struct ohc_rt_prof_rec *q = t->recs[j];

			seen = q->kind == OHC_RT_PROF_HCCL &&
			       q->rank == r->rank &&
			       !strcmp(rec_comm(q), rec_comm(r));
		}
		if (seen)
			continue;
		fprintf(f, "%s{\"comm\":", first ? "" : ",");
		json_str(f, rec_comm(r));
		fprintf(f, ",\"rank\":%d,\"nranks\":%d,\"device\":%d}",
			(int)r->rank, (int)r->nranks, (int)r->dev);
		first = false;
	}
	fputc(']', f);
}

static int trace_write(const struct trace *t, const char *path,
		       const char *host)
{
	const struct ohc_rt_prof_session *s = t->s;
	int pid = (int)getpid();
	uint32_t dev_total = (uint32_t)ohc_rt_device_count();
	FILE *f = fopen(path, "w");
	char dur[US_LEN];
	bool first = true;
	int err;

	if (!f)
		return errno;
	fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{", f);
	fprintf(f, "\"producer\":\"OpenHCCL %s\",\"host\":",
		OPENHCCL_VERSION_STRING);
	json_str(f, host);
	fprintf(f,
		",\"pid\":%d,\"session\":%d,\"clock\":\"CLOCK_REALTIME\","
		"\"base_realtime_ns\":%llu,\"duration_us\":%s,"
		"\"events\":%zu,\"dropped\":%llu,\"devices\":",
		pid, s->id, (unsigned long long)s->start_real_ns,
		us_after(dur, t->stop_ns, s->start_ns), t->n,
		(unsigned long long)t->dropped);
	if (!s->devs) {
		fputs("\"all\"", f);
	} else {
		fputc('[', f);
		for (uint32_t d = 0; d < dev_total; d++) {
			if (!(s->devs[d / 8] & (1u << (d % 8))))
				continue;
			fprintf(f, "%s%u", first ? "" : ",", d);
			first = false;
		}
		fputc(']', f);
	}
	fputs(",\"ranks\":", f);
	write_ranks(f, t);
	fputs("},\n\"traceEvents\":[\n", f);
	fprintf(f,
		"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
		"\"args\":{\"name\":",
		pid);
	{
		char pname[320];

		snprintf(pname, sizeof(pname), "OpenHCCL %s pid %d", host, pid);
		json_str(f, pname);
	}
	fputs("}},\n", f);
	for (size_t i = 0; i < t->nlanes; i++)
		write_lane_meta(f, pid, &t->lanes[i]);
	for (size_t i = 0; i < t->n; i++) {
		write_event(f, pid, s->start_ns, t->recs[i]);
		fputs(i + 1 < t->n ? ",\n" : "\n", f);
	}
	if (!t->n) /* the metadata lines end with a comma */
		fprintf(f,
			"{\"name\":\"session\",\"ph\":\"i\",\"s\":\"p\","
			"\"pid\":%d,\"tid\":0,\"ts\":0}\n",
			pid);
	fputs("]}\n", f);
	err = ferror(f) ? EIO : 0;
	if (fclose(f) && !err)
		err = errno ? errno : EIO;
	return err;
}

int ohc_rt_prof_write_locked(const struct ohc_rt_prof_session *s,
			     const struct ohc_rt_prof_buf *bufs, char *path_p,
			     size_t path_len)
{
	struct trace t = {.s = s, .bufs = bufs, .stop_ns = ohc_time_ns()};
	char host[256] = "localhost";
	char path[PATH_MAX];
	int err, ret = ACL_SUCCESS;

	if (gethostname(host, sizeof(host) - 1) == 0)
		host[sizeof(host) - 1] = '\0';
	for (char *c = host; *c; c++)
		if (*c == '/')
			*c = '_';
	if (trace_collect(&t)) {
		ret = OHC_RT_FAIL(ACL_ERROR_PROFILING_FAILURE,
				  "profile session %d: out of memory while "
				  "collecting %zu records",
				  s->id, t.n);
		goto out;
	}
	if (t.n)
		qsort(t.recs, t.n, sizeof(*t.recs), rec_cmp);
	if ((size_t)snprintf(path, sizeof(path), "%s/openhccl_%s_%d_%u.json",
			     s->dir, host, (int)getpid(),
			     ++file_serial) >= sizeof(path)) {
		ret = OHC_RT_FAIL(ACL_ERROR_PROFILING_FAILURE,
				  "profile session %d: trace path under '%s' "
				  "is too long",
				  s->id, s->dir);
		goto out;
	}
	err = ohc_mkdir_p(s->dir, PATH_MAX - 1);
	if (err) {
		ret = OHC_RT_FAIL(ACL_ERROR_PROFILING_FAILURE,
				  "profile session %d: cannot create the "
				  "directory %s: %s",
				  s->id, s->dir, strerror(err));
		goto out;
	}
	err = trace_write(&t, path, host);
	if (err) {
		ret = OHC_RT_FAIL(ACL_ERROR_PROFILING_FAILURE,
				  "profile session %d: cannot write the trace "
				  "%s: %s",
				  s->id, path, strerror(err));
		goto out;
	}
	if (t.dropped)
		OHC_WARN(OHC_SS_RT,
			 "profile session %d: %llu records dropped (more than "
			 "%u per thread, or out of memory)",
			 s->id, (unsigned long long)t.dropped,
			 OHC_RT_PROF_THREAD_MAX);
	OHC_INFO(OHC_SS_RT, "profile session %d: %zu events written to %s",
		 s->id, t.n, path);
	if (path_p && path_len)
		snprintf(path_p, path_len, "%s", path);
out:
	free(t.recs);
	free(t.lanes);
	return ret;
}
