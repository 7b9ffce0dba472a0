/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profile recorder: while a session runs, every task a stream runs
 * (and every HCCL operation run without a stream) becomes one record in
 * a buffer of the thread that ran it; stopping a session writes the
 * records of its devices and time span as a Chrome trace JSON file
 * (rt_prof_trace.c).
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
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/rt_internal.h"
#include "util/config.h"

OHC_API int ohc_rt_prof_active; /* atomic: running sessions > 0 */

/* Chunks a thread keeps for its next profile when the records go. */
#define THREAD_SPARE_CHUNKS 4
#define MAX_SESSIONS 64

_Static_assert(sizeof(struct ohc_rt_prof_rec) == 128, "record size");

static pthread_mutex_t sess_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ohc_rt_prof_session sessions[MAX_SESSIONS]; /* sess_lock */
static int nactive;				   /* sess_lock */
static int next_id;				   /* sess_lock */
static int env_id;				   /* sess_lock */
static struct ohc_rt_prof_buf *bufs;		   /* sess_lock */

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t buf_key;
static bool key_ok;
static __thread struct ohc_rt_prof_buf *my_buf;
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
static struct ohc_rt_prof_chunk *pool; /* pool_lock */
static int pool_n;		/* pool_lock */

static struct ohc_rt_prof_chunk *chunk_new(void)
{
	void *p = mmap(NULL, sizeof(struct ohc_rt_prof_chunk),
		       PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0, sizeof(struct ohc_rt_prof_chunk)); /* first touch: here */
	return p;
}

/* A ready chunk from the pool, else a new one; NULL when out of memory. */
static struct ohc_rt_prof_chunk *chunk_get(void)
{
	struct ohc_rt_prof_chunk *c;

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
static void chunks_free(struct ohc_rt_prof_chunk *c)
{
	struct ohc_rt_prof_chunk *next;

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
	struct ohc_rt_prof_chunk *c;

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

static void buf_free(struct ohc_rt_prof_buf *b)
{
	chunks_free(b->head);
	chunks_free(b->spare);
	free(b);
}

static void buf_thread_exit(void *arg)
{
	struct ohc_rt_prof_buf *b = arg, **pp;

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
static struct ohc_rt_prof_buf *buf_get(void)
{
	struct ohc_rt_prof_buf *b = my_buf;

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
static struct ohc_rt_prof_rec *prof_open(struct ohc_rt_prof_buf *b)
{
	struct ohc_rt_prof_chunk *c;

	__atomic_store_n(&b->writing, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&ohc_rt_prof_active, __ATOMIC_SEQ_CST))
		return NULL; /* stopped meanwhile: a reset may be under way */
	c = b->tail;
	if (!c || __atomic_load_n(&c->n, __ATOMIC_RELAXED) ==
			  OHC_RT_PROF_CHUNK_RECS) {
		if (b->nrecs >= OHC_RT_PROF_THREAD_MAX)
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
static void prof_publish(struct ohc_rt_prof_buf *b)
{
	struct ohc_rt_prof_chunk *c = b->tail;

	__atomic_store_n(&c->n, c->n + 1, __ATOMIC_RELEASE);
	b->nrecs++;
}

static void prof_close(struct ohc_rt_prof_buf *b)
{
	__atomic_store_n(&b->writing, 0, __ATOMIC_RELEASE);
}

int ohc_rt_prof_run(struct ohc_rt_task *t, uint32_t stream_id, int dev)
{
	struct ohc_rt_prof_buf *b = buf_get();
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
	struct ohc_rt_prof_buf *b = buf_get();
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

/*
 * No session runs: drop every record (sess_lock held). A live thread
 * keeps up to THREAD_SPARE_CHUNKS chunks for its next profile.
 */
static void bufs_reset_locked(void)
{
	struct ohc_rt_prof_buf **pp = &bufs, *b;

	while ((b = *pp)) {
		struct ohc_rt_prof_chunk *c, *next;
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
	struct ohc_rt_prof_session *s = NULL;
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
	struct ohc_rt_prof_session *s = NULL;
	int ret;

	for (int i = 0; i < MAX_SESSIONS && !s; i++)
		if (id > 0 && sessions[i].id == id)
			s = &sessions[i];
	if (!s)
		return OHC_RT_FAIL(ACL_ERROR_PROF_NOT_RUN,
				   "profile: no session %d runs", id);
	ret = ohc_rt_prof_write_locked(s, bufs, path_p, path_len);
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
	for (struct ohc_rt_prof_buf *b = bufs; b; b = b->next) {
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
