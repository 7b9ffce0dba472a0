/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_CORE_EXEC_H
#define OHC_CORE_EXEC_H

/*
 * The executor: runs one rank's schedule over the transports' endpoints,
 * step after step, driving progress and sleeping when idle. Every wait is
 * bounded by the deadline; dead peers (ep_check), mismatched operations
 * (message signatures) and aborts end the run with an error that names
 * the peer. The executor knows no HCCL names and no concrete transport.
 */
#include <stdint.h>

#include "core/flight.h"
#include "core/req.h"
#include "core/sched.h"
#include "core/tp.h"

/* Bytes received per path (enum ohc_path), summed by the executor. */
struct ohc_xfer_stats {
	uint64_t bytes[OHC_PATH_N];
	uint64_t msgs[OHC_PATH_N];
};

/*
 * Zero-copy hook: if [src, src+len) lies in memory exported to peers,
 * fill *desc_p and return 1, else 0. Called for each send of a schedule
 * when set (the comm layer sets it only for ops on exported memory).
 */
typedef int (*ohc_exec_mem_fn)(void *ctx, const void *src, size_t len,
			       struct ohc_mem_desc *desc_p);

struct ohc_exec {
	uint32_t rank, nranks;
	struct ohc_ep **eps;          /* per rank; NULL for ourselves */
	struct ohc_iface *const *ifaces;
	unsigned nifaces;
	uint64_t deadline;            /* absolute, OHC_DEADLINE_NEVER */
	uint64_t spin_ns;             /* idle time polled before sleeping */
	bool yield_first;	      /* its waiter starts yielding */
	const int *abort_flag;        /* non-zero: stop with OHC_ERR_CANCELED */
	ohc_reduce_fn reduce;         /* for RECV reduce kinds and REDUCE */
	unsigned esize;               /* element size for reduce */
	struct ohc_sig sig;           /* step and len are filled per message */
	const char *what;             /* operation name for logs */
	ohc_exec_mem_fn mem_lookup;   /* NULL: no exported memory involved */
	void *mem_ctx;
	struct ohc_xfer_stats *stats; /* NULL: not counted */
	struct ohc_flight_op *flight; /* step and waits noted; NULL: not */
	/* results */
	uint32_t err_peer;            /* peer blamed for the error, if any */
};

/*
 * Run schedule s. Returns OHC_OK, or the first error: OHC_ERR_DESYNC,
 * OHC_ERR_REMOTE, OHC_ERR_TIMEOUT, OHC_ERR_CANCELED, or a transport error.
 * The error is logged here, once. After an error the endpoints involved
 * are canceled and must not carry data again.
 */
ohc_status_t ohc_exec_run(struct ohc_exec *x, const struct ohc_sched *s);

#endif
