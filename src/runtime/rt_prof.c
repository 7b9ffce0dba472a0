/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profile recorder: while a session runs, every task a stream runs
 * (and every HCCL operation run without a stream) becomes one record in
 * a buffer of the thread that ran it; stopping a session writes the
 * records of its devices and time span as a Chrome trace JSON file.
 *
 * Buffers. A thread's buffer is a list of chunks it appends to without a
 * lock: it fills a record, then publishes it by a release store of the
 * chunk's count (and a new chunk by a release store of the link to it).
 * A reader (a stop, under sess_lock) loads counts and links with acquire
 * and reads only published records, while the owners go on appending.
 * Records are dropped, all at once, only when no session runs any more:
 * then the reader clears ohc_rt_prof_active and waits until no owner is
 * inside an append. An owner marks itself (writing = 1) and then reads
 * ohc_rt_prof_active, the reader clears ohc_rt_prof_active and then reads
 * writing, both sequentially consistent, so either the owner sees the
 * profile stopped and touches nothing, or the reader sees it appending
 * and waits. A thread that exits leaves its buffer behind (orphan) until
 * its records are dropped: stream workers end at aclrtDestroyStream,
 * before programs stop their profile.
 *
 * Memory: chunks of 4096 records, touched before use (a pool filled when
 * a session starts); up to 16 MiB of them stay for the next profile.
 *
 * Sessions (sess_lock) are either the aclprof* API's (libmsprofiler, one
 * per device set, devices not shared between running sessions) or the
 * one OPENHCCL_PROFILE runs from aclInit to aclFinalize (all devices).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hccl/hccl_version.h"
#include "runtime/rt_internal.h"
#include "util/config.h"

OHC_API int ohc_rt_prof_active; /* atomic: running sessions > 0 */

/* 4096 records of 128 bytes: 512 KiB, mapped with its pages populated */
#define CHUNK_RECS 4096u
/* Per thread and session span: 1 Mi records (128 MiB); later ones are
 * counted as dropped and reported. */
#define THREAD_MAX_RECS (1024u * 1024u)
/* Chunks a thread keeps for its next profile when the records go. */
#define THREAD_SPARE_CHUNKS 4
#define MAX_SESSIONS 64
/* Lane ids ("tid" in the trace) of work run without a stream. */
#define INLINE_LANE_BASE 0x40000000u

_Static_assert(sizeof(struct ohc_rt_prof_rec) == 128, "record size");

struct prof_chunk {
	struct prof_chunk *next; /* atomic: set once by the owner (release) */
	uint32_t n;		 /* atomic: published records (release) */
	struct ohc_rt_prof_rec recs[CHUNK_RECS] __attribute__((aligned(64)));
};

struct prof_buf {
	struct prof_buf *next;	  /* every buffer; sess_lock */
	struct prof_chunk *head;  /* atomic: set by the owner (release) */
	struct prof_chunk *tail;  /* owner (and a quiesced reset) */
	struct prof_chunk *spare; /* owner (and a quiesced reset) */
	uint64_t nrecs;		  /* owner (and a quiesced reset) */
	uint64_t dropped;	  /* atomic: owner adds, stop reads */
	int writing;		  /* atomic: the owner is inside an append */
	bool orphan;		  /* its thread exited; sess_lock */
};

struct prof_session {
	int id;			/* 0: free slot */
	bool env;		/* OPENHCCL_PROFILE's */
	char *dir;		/* where the trace goes */
	uint8_t *devs;		/* device bitmap; NULL: every device */
	uint32_t kinds;		/* enum ohc_rt_prof_kind mask */
	uint64_t start_ns;	/* CLOCK_MONOTONIC at start */
	uint64_t start_real_ns; /* CLOCK_REALTIME at start */
};

static pthread_mutex_t sess_lock = PTHREAD_MUTEX_INITIALIZER;
static struct prof_session sessions[MAX_SESSIONS]; /* sess_lock */
static int nactive;				   /* sess_lock */
static int next_id;				   /* sess_lock */
static unsigned file_serial;			   /* sess_lock */
static int env_id;				   /* sess_lock */
static struct prof_buf *bufs;			   /* sess_lock */

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t buf_key;
static bool key_ok;
static __thread struct prof_buf *my_buf;
static __thread uint32_t my_tid;

/* ---- interned names ---- */

struct interned {
	struct interned *next;
	char s[];
};

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static struct interned *interned; /* intern_lock; kept until exit */

OHC_API const char *ohc_rt_prof_intern(const char *s)
{
	struct interned *i;
	size_t len;

	if (!s)
		return NULL;
	pthread_mutex_lock(&intern_lock);
	for (i = interned; i; i = i->next)
		if (!strcmp(i->s, s))
			goto out;
	len = strlen(s);
	i = malloc(sizeof(*i) + len + 1);
	if (i) {
		memcpy(i->s, s, len + 1);
		i->next = interned;
		interned = i;
	}
out:
	pthread_mutex_unlock(&intern_lock);
	return i ? i->s : NULL;
}

/* ---- recording (any thread) ---- */

/*
 * Chunks. Writing memory for the first time can cost far more than the
 * record itself (a page fault every 32 records; 5 us per page in some
 * VMs), so a session's start touches POOL_READY chunks ahead of use, and
 * chunks of dropped records go back to the pool (up to POOL_MAX) or stay
 * with their thread (THREAD_SPARE_CHUNKS) instead of being unmapped.
 * pool_lock is a leaf: a writer takes it inside an append, so nothing
 * that waits for writers may hold it.
 */
#define POOL_READY 16 /* 8 MiB touched when a session starts */
#define POOL_MAX 32

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct prof_chunk *pool; /* pool_lock */
static int pool_n;		/* pool_lock */

static struct prof_chunk *chunk_new(void)
{
	void *p = mmap(NULL, sizeof(struct prof_chunk), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0, sizeof(struct prof_chunk)); /* first touch: here */
	return p;
}

/* A ready chunk from the pool, else a new one; NULL when out of memory. */
static struct prof_chunk *chunk_get(void)
{
	struct prof_chunk *c;

	pthread_mutex_lock(&pool_lock);
	c = pool;
	if (c) {
		pool = c->next;
		pool_n--;
	}
	pthread_mutex_unlock(&pool_lock);
	return c ? c : chunk_new();
}

/* Give chunks back: to the pool while it has room, else unmapped. */
static void chunks_free(struct prof_chunk *c)
{
	struct prof_chunk *next;

	pthread_mutex_lock(&pool_lock);
	for (; c; c = next) {
		next = c->next;
		if (pool_n < POOL_MAX) {
			c->next = pool;
			pool = c;
			pool_n++;
		} else {
			munmap(c, sizeof(*c));
		}
	}
	pthread_mutex_unlock(&pool_lock);
}

/* Touch chunks ahead of a session (no lock held but the caller's). */
static void pool_fill(void)
{
	struct prof_chunk *c;

	for (;;) {
		pthread_mutex_lock(&pool_lock);
		if (pool_n >= POOL_READY) {
			pthread_mutex_unlock(&pool_lock);
			return;
		}
		pthread_mutex_unlock(&pool_lock);
		c = chunk_new();
		if (!c)
			return;
		c->next = NULL;
		chunks_free(c);
	}
}

static void buf_free(struct prof_buf *b)
{
	chunks_free(b->head);
	chunks_free(b->spare);
	free(b);
}

static void buf_thread_exit(void *arg)
{
	struct prof_buf *b = arg, **pp;

	pthread_mutex_lock(&sess_lock);
	if (__atomic_load_n(&b->head, __ATOMIC_ACQUIRE)) {
		b->orphan = true; /* the next reset frees it */
	} else {
		for (pp = &bufs; *pp; pp = &(*pp)->next) {
			if (*pp == b) {
				*pp = b->next;
				break;
			}
		}
		buf_free(b);
	}
	pthread_mutex_unlock(&sess_lock);
	my_buf = NULL;
}

static void key_init(void)
{
	key_ok = pthread_key_create(&buf_key, buf_thread_exit) == 0;
}

static uint32_t thread_id(void)
{
	if (!my_tid)
		my_tid = (uint32_t)syscall(SYS_gettid);
	return my_tid;
}

/* The calling thread's buffer, registered on first use; NULL on OOM. */
static struct prof_buf *buf_get(void)
{
	struct prof_buf *b = my_buf;

	if (OHC_LIKELY(b))
		return b;
	pthread_once(&key_once, key_init);
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	pthread_mutex_lock(&sess_lock);
	b->next = bufs;
	bufs = b;
	pthread_mutex_unlock(&sess_lock);
	if (key_ok)
		pthread_setspecific(buf_key, b);
	my_buf = b;
	return b;
}

/*
 * Open an append on b (the calling thread's buffer): the slot to fill,
 * or NULL when the profile stopped meanwhile or the record is dropped.
 * Whatever it returns, prof_close(b) must follow, after filling the slot
 * and prof_publish. The reader waits for prof_close before it drops
 * records, so only short work belongs between the two.
 */
static struct ohc_rt_prof_rec *prof_open(struct prof_buf *b)
{
	struct prof_chunk *c;

	__atomic_store_n(&b->writing, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&ohc_rt_prof_active, __ATOMIC_SEQ_CST))
		return NULL; /* stopped meanwhile: a reset may be under way */
	c = b->tail;
	if (!c || __atomic_load_n(&c->n, __ATOMIC_RELAXED) == CHUNK_RECS) {
		if (b->nrecs >= THREAD_MAX_RECS)
			goto drop;
		if (b->spare) {
			c = b->spare;
			b->spare = c->next;
		} else if (!(c = chunk_get())) {
			goto drop;
		}
		c->next = NULL;
		c->n = 0;
		if (b->tail)
			__atomic_store_n(&b->tail->next, c, __ATOMIC_RELEASE);
		else
			__atomic_store_n(&b->head, c, __ATOMIC_RELEASE);
		b->tail = c;
	}
	return &c->recs[c->n];
drop:
	__atomic_fetch_add(&b->dropped, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* The slot prof_open returned is filled: readers may see it. */
static void prof_publish(struct prof_buf *b)
{
	struct prof_chunk *c = b->tail;

	__atomic_store_n(&c->n, c->n + 1, __ATOMIC_RELEASE);
	b->nrecs++;
}

static void prof_close(struct prof_buf *b)
{
	__atomic_store_n(&b->writing, 0, __ATOMIC_RELEASE);
}

int ohc_rt_prof_run(struct ohc_rt_task *t, uint32_t stream_id, int dev)
{
	struct prof_buf *b = buf_get();
	struct ohc_rt_prof_rec *rec;
	uint64_t start, end;
	int rc;

	start = ohc_time_ns();
	rc = t->run(t);
	end = ohc_time_ns();
	if (!b)
		return rc;
	rec = prof_open(b);
	if (rec) {
		rec->name = t->name ? t->name : "task";
		rec->algo = NULL;
		rec->comm = NULL;
		rec->enq_ns = t->enq_ns;
		rec->start_ns = start;
		rec->end_ns = end;
		rec->bytes = 0;
		rec->seq = 0;
		rec->stream_id = stream_id;
		rec->dev = dev;
		rec->tid = thread_id();
		rec->status = rc;
		rec->rank = -1;
		rec->nranks = 0;
		rec->kind = OHC_RT_PROF_RUNTIME;
		rec->npeers = 0;
		if (t->describe)
			t->describe(t, rec);
		prof_publish(b);
	}
	prof_close(b);
	return rc;
}

OHC_API void ohc_rt_prof_record(struct ohc_rt_prof_rec *rec)
{
	struct prof_buf *b = buf_get();
	struct ohc_rt_prof_rec *slot;

	if (!b)
		return;
	rec->tid = thread_id();
	if (rec->dev < 0)
		rec->dev = ohc_rt_current_device();
	slot = prof_open(b);
	if (slot) {
		*slot = *rec;
		prof_publish(b);
	}
	prof_close(b);
}

/* ---- the trace file (sess_lock held) ---- */

struct lane {
	uint32_t id; /* "tid" in the trace */
	uint32_t stream_id;
	int32_t dev;
	/* the thread of an inline lane, and the first HCCL record (rank) */
	uint32_t tid;
	const struct ohc_rt_prof_rec *first_hccl;
};

struct trace {
	const struct prof_session *s;
	uint64_t stop_ns;
	const struct ohc_rt_prof_rec **recs;
	size_t n, cap;
	struct lane *lanes;
	size_t nlanes, lanes_cap;
	uint64_t dropped;
};

static bool rec_wanted(const struct prof_session *s, uint64_t stop_ns,
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

	for (struct prof_buf *b = bufs; b; b = b->next) {
		struct prof_chunk *c =
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
	const struct prof_session *s = t->s;
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

/* mkdir -p; 0 or an errno value. */
static int make_dirs(const char *dir)
{
	char p[PATH_MAX];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(p))
		return ENAMETOOLONG;
	memcpy(p, dir, len + 1);
	for (char *q = p + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return errno;
		*q = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		return errno;
	return 0;
}

/* Write session s's trace; 0 or an aclError (logged). */
static int session_write_locked(const struct prof_session *s, char *path_p,
				size_t path_len)
{
	struct trace t = {.s = s, .stop_ns = ohc_time_ns()};
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
	err = make_dirs(s->dir);
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
			 s->id, (unsigned long long)t.dropped, THREAD_MAX_RECS);
	OHC_INFO(OHC_SS_RT, "profile session %d: %zu events written to %s",
		 s->id, t.n, path);
	if (path_p && path_len)
		snprintf(path_p, path_len, "%s", path);
out:
	free(t.recs);
	free(t.lanes);
	return ret;
}

/*
 * No session runs: drop every record (sess_lock held). A live thread
 * keeps up to THREAD_SPARE_CHUNKS chunks for its next profile.
 */
static void bufs_reset_locked(void)
{
	struct prof_buf **pp = &bufs, *b;

	while ((b = *pp)) {
		struct prof_chunk *c, *next;
		int kept = 0;

		while (__atomic_load_n(&b->writing, __ATOMIC_SEQ_CST))
			sched_yield();
		if (b->orphan) {
			*pp = b->next;
			buf_free(b);
			continue;
		}
		for (c = b->spare; c; c = c->next)
			kept++;
		for (c = b->head; c; c = next) {
			next = c->next;
			if (kept < THREAD_SPARE_CHUNKS) {
				c->next = b->spare;
				b->spare = c;
				kept++;
			} else {
				c->next = NULL;
				chunks_free(c);
			}
		}
		b->head = b->tail = NULL;
		b->nrecs = 0;
		__atomic_store_n(&b->dropped, 0, __ATOMIC_RELAXED);
		pp = &b->next;
	}
}

/* ---- sessions ---- */

static bool devs_overlap(const uint8_t *a, const uint8_t *b, size_t bytes)
{
	if (!a || !b)
		return true;
	for (size_t i = 0; i < bytes; i++)
		if (a[i] & b[i])
			return true;
	return false;
}

/* dir made absolute (a later chdir must not move the trace); malloc'd. */
static char *dir_absolute(const char *dir)
{
	char cwd[PATH_MAX], *out;

	if (dir[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return strdup(dir);
	out = malloc(strlen(cwd) + strlen(dir) + 2);
	if (out)
		sprintf(out, "%s/%s", cwd, dir);
	return out;
}

static int session_start_locked(const char *dir, uint8_t *devs, uint32_t kinds,
				bool env, int *id_p)
{
	size_t bytes = ((size_t)ohc_rt_device_count() + 7) / 8;
	struct prof_session *s = NULL;
	struct timespec real;

	for (int i = 0; i < MAX_SESSIONS; i++) {
		if (!sessions[i].id) {
			if (!s)
				s = &sessions[i];
			continue;
		}
		if (devs_overlap(sessions[i].devs, devs, bytes))
			return OHC_RT_FAIL(
				ACL_ERROR_PROF_ALREADY_RUN,
				"profile: session %d%s already "
				"records %s of these devices",
				sessions[i].id,
				sessions[i].env ? " (OPENHCCL_PROFILE)" : "",
				sessions[i].devs ? "some" : "all");
	}
	if (!s)
		return OHC_RT_FAIL(ACL_ERROR_PROF_ALREADY_RUN,
				   "profile: %d sessions already run",
				   MAX_SESSIONS);
	s->dir = dir_absolute(dir);
	if (!s->dir)
		return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
				   "profile: out of memory");
	s->devs = devs;
	s->kinds = kinds;
	s->env = env;
	s->id = ++next_id;
	if (nactive++ == 0)
		__atomic_store_n(&ohc_rt_prof_active, 1, __ATOMIC_SEQ_CST);
	s->start_ns = ohc_time_ns();
	clock_gettime(CLOCK_REALTIME, &real);
	s->start_real_ns =
		(uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec;
	*id_p = s->id;
	OHC_INFO(OHC_SS_RT, "profile session %d started (%s, into %s)", s->id,
		 devs ? "listed devices" : "all devices", dir);
	return ACL_SUCCESS;
}

static int session_stop_locked(int id, char *path_p, size_t path_len)
{
	struct prof_session *s = NULL;
	int ret;

	for (int i = 0; i < MAX_SESSIONS && !s; i++)
		if (id > 0 && sessions[i].id == id)
			s = &sessions[i];
	if (!s)
		return OHC_RT_FAIL(ACL_ERROR_PROF_NOT_RUN,
				   "profile: no session %d runs", id);
	ret = session_write_locked(s, path_p, path_len);
	free(s->dir);
	free(s->devs);
	memset(s, 0, sizeof(*s));
	if (--nactive == 0) {
		__atomic_store_n(&ohc_rt_prof_active, 0, __ATOMIC_SEQ_CST);
		bufs_reset_locked();
	}
	return ret;
}

OHC_API int ohc_rt_prof_start(const char *dir, const uint32_t *devs,
			      uint32_t ndevs, uint32_t kinds, int *id_p)
{
	int total = ohc_rt_device_count();
	uint8_t *map = NULL;
	int ret;

	if (!dir || !dir[0] || !id_p)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "profile start: NULL or empty %s",
				   !id_p ? "id pointer" : "directory");
	if (strlen(dir) >= PATH_MAX - 64)
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "profile start: directory name of %zu "
				   "bytes is too long",
				   strlen(dir));
	if (!kinds ||
	    (kinds & ~(uint32_t)(OHC_RT_PROF_RUNTIME | OHC_RT_PROF_HCCL)))
		return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
				   "profile start: kinds 0x%x", kinds);
	if (ndevs) {
		if (!devs)
			return OHC_RT_FAIL(ACL_ERROR_INVALID_PARAM,
					   "profile start: %u devices and a "
					   "NULL list",
					   ndevs);
		map = calloc(((size_t)total + 7) / 8, 1);
		if (!map)
			return OHC_RT_FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION,
					   "profile start: out of memory");
		for (uint32_t i = 0; i < ndevs; i++) {
			if (devs[i] >= (uint32_t)total ||
			    map[devs[i] / 8] & (1u << (devs[i] % 8))) {
				free(map);
				return OHC_RT_FAIL(
					ACL_ERROR_INVALID_PARAM,
					"profile start: device %u %s", devs[i],
					devs[i] >= (uint32_t)total
						? "is out of range"
						: "is listed twice");
			}
			map[devs[i] / 8] |= (uint8_t)(1u << (devs[i] % 8));
		}
	}
	pool_fill();
	pthread_mutex_lock(&sess_lock);
	ret = session_start_locked(dir, map, kinds, false, id_p);
	pthread_mutex_unlock(&sess_lock);
	if (ret)
		free(map);
	return ret;
}

OHC_API int ohc_rt_prof_stop(int id, char *path_p, size_t path_len)
{
	int ret;

	pthread_mutex_lock(&sess_lock);
	if (id == env_id && id) {
		pthread_mutex_unlock(&sess_lock);
		return OHC_RT_FAIL(ACL_ERROR_PROF_API_CONFLICT,
				   "profile: session %d is OPENHCCL_PROFILE's; "
				   "aclFinalize stops it",
				   id);
	}
	ret = session_stop_locked(id, path_p, path_len);
	pthread_mutex_unlock(&sess_lock);
	return ret;
}

OHC_API int ohc_rt_prof_env_session(void)
{
	int on;

	pthread_mutex_lock(&sess_lock);
	on = env_id != 0;
	pthread_mutex_unlock(&sess_lock);
	return on;
}

void ohc_rt_prof_env_begin(void)
{
	const char *dir = ohc_env()->profile_dir;
	int id = 0;

	if (!dir[0])
		return;
	if (ohc_env_status() != OHC_OK) {
		OHC_WARN(OHC_SS_RT,
			 "OPENHCCL_PROFILE=%s not started: a "
			 "malformed variable (logged above)",
			 dir);
		return;
	}
	pool_fill();
	pthread_mutex_lock(&sess_lock);
	if (!env_id &&
	    session_start_locked(dir, NULL,
				 OHC_RT_PROF_RUNTIME | OHC_RT_PROF_HCCL, true,
				 &id) == ACL_SUCCESS)
		env_id = id;
	pthread_mutex_unlock(&sess_lock);
}

void ohc_rt_prof_env_end(void)
{
	pthread_mutex_lock(&sess_lock);
	if (env_id) {
		session_stop_locked(env_id, NULL, 0);
		env_id = 0;
	}
	pthread_mutex_unlock(&sess_lock);
}

/*
 * fork(): the child profiles nothing of its parent's sessions (their
 * traces are the parent's to write); its copies of the other threads'
 * buffers are orphans (those threads do not exist there), dropped with
 * the records at the child's next reset.
 */
static void prof_prepare(void)
{
	pthread_mutex_lock(&sess_lock);
	pthread_mutex_lock(&pool_lock);
	pthread_mutex_lock(&intern_lock);
}

static void prof_parent(void)
{
	pthread_mutex_unlock(&intern_lock);
	pthread_mutex_unlock(&pool_lock);
	pthread_mutex_unlock(&sess_lock);
}

static void prof_child(void)
{
	for (int i = 0; i < MAX_SESSIONS; i++) {
		free(sessions[i].dir);
		free(sessions[i].devs);
		memset(&sessions[i], 0, sizeof(sessions[i]));
	}
	nactive = 0;
	env_id = 0;
	__atomic_store_n(&ohc_rt_prof_active, 0, __ATOMIC_SEQ_CST);
	for (struct prof_buf *b = bufs; b; b = b->next) {
		b->writing = 0;
		if (b != my_buf)
			b->orphan = true;
	}
	prof_parent();
}

__attribute__((constructor)) static void prof_init(void)
{
	pthread_atfork(prof_prepare, prof_parent, prof_child);
}

/* A process that exits without aclFinalize still gets its trace. */
__attribute__((destructor)) static void prof_fini(void)
{
	ohc_rt_prof_env_end();
}
