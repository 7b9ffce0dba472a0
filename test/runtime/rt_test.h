/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TEST_RUNTIME_RT_TEST_H
#define OHC_TEST_RUNTIME_RT_TEST_H

/* Helpers shared by the runtime tests (black box: acl.h + ohc_rt.h). */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl.h"
#include "runtime/ohc_rt.h"

/* Entries of a /proc directory (threads in /proc/self/task, fds in
 * /proc/self/fd), not counting . and .. */
static inline int rt_count_dir(const char *path)
{
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(path);

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static inline int rt_thread_count(void)
{
	return rt_count_dir("/proc/self/task");
}

/*
 * Thread count once it settles at want (or after 2 s). A joined thread can
 * linger in /proc/self/task for a moment after pthread_join returns (the
 * kernel wakes the joiner before it unhashes the task).
 */
static inline int rt_thread_count_settled(int want)
{
	int n = rt_thread_count();

	for (int i = 0; i < 2000 && n != want; i++) {
		struct timespec ts = {0, 1000000L};

		nanosleep(&ts, NULL);
		n = rt_thread_count();
	}
	return n;
}

/* Open fds, minus the one opendir itself holds while counting. */
static inline int rt_fd_count(void)
{
	return rt_count_dir("/proc/self/fd") - 1;
}

static inline double rt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline void rt_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/*
 * A test task: records the order it ran in, the thread it ran on, and how
 * often run/release were called. Heap-allocated; release does not free it
 * (the test inspects it afterwards and frees it).
 */
struct rt_probe {
	struct ohc_rt_task super;
	int id;
	int ret;	       /* what run returns */
	int sleep_ms;	       /* run sleeps this long first */
	atomic_int *gate;      /* if set, run waits (<= 5 s) until *gate != 0 */
	atomic_int *order_ctr; /* run stores ++*order_ctr in order */
	atomic_int *active;    /* run counts itself in while it runs */
	atomic_int *max_active; /* highest *active seen */
	atomic_int started; /* run has begun */
	atomic_int runs;
	atomic_int releases;
	int order;
	int gate_seen;
	pthread_t ran_on;
};

static inline int rt_probe_run(struct ohc_rt_task *t)
{
	struct rt_probe *p = (struct rt_probe *)t;

	atomic_fetch_add(&p->started, 1);
	if (p->active) {
		int now = atomic_fetch_add(p->active, 1) + 1;
		int max = atomic_load(p->max_active);

		while (now > max &&
		       !atomic_compare_exchange_weak(p->max_active, &max, now))
			;
	}
	if (p->sleep_ms)
		rt_sleep_ms(p->sleep_ms);
	if (p->gate) {
		for (int i = 0; i < 5000 && !atomic_load(p->gate); i++)
			rt_sleep_ms(1);
		p->gate_seen = atomic_load(p->gate);
	}
	if (p->order_ctr)
		p->order = atomic_fetch_add(p->order_ctr, 1) + 1;
	p->ran_on = pthread_self();
	atomic_fetch_add(&p->runs, 1);
	if (p->active)
		atomic_fetch_sub(p->active, 1);
	return p->ret;
}

static inline void rt_probe_release(struct ohc_rt_task *t)
{
	atomic_fetch_add(&((struct rt_probe *)t)->releases, 1);
}

static inline struct rt_probe *rt_probe_new(int id, int ret, int sleep_ms)
{
	struct rt_probe *p = calloc(1, sizeof(*p));

	if (!p)
		abort();
	p->super.run = rt_probe_run;
	p->super.release = rt_probe_release;
	p->super.name = "probe";
	p->id = id;
	p->ret = ret;
	p->sleep_ms = sleep_ms;
	return p;
}

#endif
