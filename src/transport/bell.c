/* SPDX-License-Identifier: Apache-2.0 */
/* The doorbell of transports whose peers write where the owner polls. */
#define _GNU_SOURCE
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

	atomic_thread_fence(memory_order_seq_cst);
	mode = atomic_load_explicit(&bell->sleeping, memory_order_relaxed);
	if (mode == OHC_BELL_AWAKE)
		return;
	atomic_fetch_add_explicit(&bell->seq, 1, memory_order_seq_cst);
	if (mode == OHC_BELL_FD && fd >= 0)
		(void)!eventfd_write(fd, 1);
	else
		futex(&bell->seq, FUTEX_WAKE, shared, INT_MAX, NULL);
}

void ohc_bell_sleep(struct ohc_bell *bell, uint32_t seq, int timeout_ms,
		    bool shared)
{
	struct timespec ts, *tsp = NULL;

	if (timeout_ms == 0)
		return;
	if (timeout_ms > 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
		tsp = &ts;
	}
	/* EAGAIN (rung meanwhile), EINTR, ETIMEDOUT: all fine */
	futex(&bell->seq, FUTEX_WAIT, shared, seq, tsp);
}

void ohc_bell_disarm(struct ohc_bell *bell, int fd)
{
	eventfd_t v;

	atomic_store_explicit(&bell->sleeping, OHC_BELL_AWAKE,
			      memory_order_relaxed);
	if (fd >= 0)
		(void)!eventfd_read(fd, &v);
}
