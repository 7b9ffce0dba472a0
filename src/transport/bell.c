/* SPDX-License-Identifier: Apache-2.0 */
/* The doorbell of transports whose peers write where the owner polls. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "transport/bell.h"

static long futex(_Atomic uint32_t *word, int op, bool shared, uint32_t val,
		  const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)word,
		       shared ? op : op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

void ohc_bell_ring(struct ohc_bell *bell, int fd, bool shared)
{
	uint32_t mode;

	/* no fence (bell.h): the owner's second look covers a ring lost to
	 * our store buffer; the compiler still reads the mode after the
	 * publishing stores */
	atomic_signal_fence(memory_order_seq_cst);
	mode = atomic_load_explicit(&bell->sleeping, memory_order_relaxed);
	if (mode == OHC_BELL_AWAKE)
		return;
	atomic_fetch_add_explicit(&bell->seq, 1, memory_order_seq_cst);
	if (mode == OHC_BELL_FD && fd >= 0)
		(void)!eventfd_write(fd, 1);
	else
		futex(&bell->seq, FUTEX_WAKE, shared, INT_MAX, NULL);
}

/* Sleep on seq until rung, us microseconds (< 0: no limit) or a signal;
 * whether the time ran out. */
static bool bell_sleep(struct ohc_bell *bell, uint32_t seq, long us,
		       bool shared)
{
	struct timespec ts, *tsp = NULL;

	if (us >= 0) {
		ts.tv_sec = us / 1000000;
		ts.tv_nsec = (us % 1000000) * 1000;
		tsp = &ts;
	}
	/* EAGAIN (rung meanwhile), EINTR, ETIMEDOUT: all fine */
	return futex(&bell->seq, FUTEX_WAIT, shared, seq, tsp) < 0 &&
	       errno == ETIMEDOUT;
}

void ohc_bell_wait(struct ohc_bell *bell, int timeout_ms, bool shared,
		   int (*look)(void *arg), void *arg)
{
	/* after the settle: the rest of the timeout (< 0: none) */
	long rest_us = timeout_ms < 0 ? -1
				      : (long)timeout_ms * 1000 - OHC_TP_SETTLE_US;
	uint32_t seq;

	if (!timeout_ms)
		return;
	/* seq before each look: a ring after the look fails the wait; the
	 * first sleep is the settle (shorter than any timeout, tp.h) */
	seq = atomic_load_explicit(&bell->seq, memory_order_acquire);
	if (!look(arg) && bell_sleep(bell, seq, OHC_TP_SETTLE_US, shared)) {
		seq = atomic_load_explicit(&bell->seq, memory_order_acquire);
		if (!look(arg))
			bell_sleep(bell, seq, rest_us, shared);
	}
	ohc_bell_disarm(bell, -1);
}

void ohc_bell_disarm(struct ohc_bell *bell, int fd)
{
	eventfd_t v;

	atomic_store_explicit(&bell->sleeping, OHC_BELL_AWAKE,
			      memory_order_relaxed);
	if (fd >= 0)
		(void)!eventfd_read(fd, &v);
}
